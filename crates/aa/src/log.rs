//! The access log (spec "Access log", "Back-pressure"): a ring buffer in the owning process's
//! memory, written by the IOMMU, read by the handler.
//!
//! Three positions, all monotonically increasing byte counters (the ring index is `pos % size`):
//! - `head`: the handler has consumed everything before it;
//! - `published`: the tail the handler sees; everything before it is complete;
//! - `reserved`: space handed out to entries still being written.
//!
//! The IOMMU [`AccessLog::reserve`]s a whole entry when the first bus transaction of an access
//! arrives, writes the data of later transactions into it (in any order, interleaved with other
//! entries), and the published tail only moves over a prefix of complete entries, so the
//! handler never sees a hole. A reservation that does not fit fails with [`Backpressure`]:
//! an entry is never overwritten and never dropped; the caller stalls and retries.

use std::collections::VecDeque;

/// Bytes of an encoded entry header.
pub const HEADER_BYTES: u32 = 32;

/// What an entry records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum EntryKind {
    /// An active put (metadata + data; the page was not written).
    ActivePut = 1,
    /// A put that was written; metadata only.
    PutMeta = 2,
    /// A put that was written; metadata + data.
    PutData = 3,
    /// A get that was served; metadata only.
    GetMeta = 4,
    /// A get that was served; metadata + a copy of the returned data.
    GetData = 5,
    /// An active get (e.g. on the flushing page).
    ActiveGet = 6,
    /// A fault recorded in the access log (E=1).
    Fault = 7,
}

impl EntryKind {
    fn from_u8(v: u8) -> EntryKind {
        match v {
            1 => EntryKind::ActivePut,
            2 => EntryKind::PutMeta,
            3 => EntryKind::PutData,
            4 => EntryKind::GetMeta,
            5 => EntryKind::GetData,
            6 => EntryKind::ActiveGet,
            _ => EntryKind::Fault,
        }
    }
}

/// Metadata of one logged access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntryHeader {
    /// What was logged.
    pub kind: EntryKind,
    /// Source of the access (a global process id).
    pub source: u32,
    /// Transaction id at the source (with `source`, names the access).
    pub txn: u32,
    /// Target virtual address of the access.
    pub addr: u64,
    /// Bytes the access touched.
    pub access_len: u32,
    /// Bytes of data carried in the entry (0 for metadata-only entries).
    pub data_len: u32,
}

impl EntryHeader {
    /// Total bytes of the entry in the ring: header + data padded to 8 bytes.
    pub fn entry_bytes(&self) -> u32 {
        HEADER_BYTES + self.data_len.div_ceil(8) * 8
    }

    fn encode(&self) -> [u8; HEADER_BYTES as usize] {
        let mut b = [0u8; HEADER_BYTES as usize];
        b[0] = self.kind as u8;
        b[4..8].copy_from_slice(&self.source.to_le_bytes());
        b[8..12].copy_from_slice(&self.txn.to_le_bytes());
        b[12..16].copy_from_slice(&self.access_len.to_le_bytes());
        b[16..24].copy_from_slice(&self.addr.to_le_bytes());
        b[24..28].copy_from_slice(&self.data_len.to_le_bytes());
        b
    }

    fn decode(b: &[u8]) -> EntryHeader {
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        EntryHeader {
            kind: EntryKind::from_u8(b[0]),
            source: u32_at(4),
            txn: u32_at(8),
            access_len: u32_at(12),
            addr: u64::from_le_bytes(b[16..24].try_into().expect("8 bytes")),
            data_len: u32_at(24),
        }
    }
}

/// One entry as the handler reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogEntry {
    /// Metadata.
    pub header: EntryHeader,
    /// Logged data (empty for metadata-only entries).
    pub data: Vec<u8>,
}

/// The log has no room for an entry: the IOMMU must stall (or the sender retry).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("access log full: entry needs {needed} bytes, {free} free")]
pub struct Backpressure {
    /// Bytes the entry needs.
    pub needed: u32,
    /// Bytes free now.
    pub free: u64,
}

/// Space handed out for one entry being written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reservation {
    /// Ring position of the header.
    pub start: u64,
    /// Entry bytes (header + padded data).
    pub bytes: u32,
    /// Data bytes expected.
    pub data_len: u32,
}

#[derive(Clone, Copy, Debug)]
struct Pending {
    start: u64,
    bytes: u32,
    /// Data bytes still to be written; 0 = complete.
    missing: u32,
}

/// Counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LogStats {
    /// Entries reserved.
    pub reserved: u64,
    /// Entries published.
    pub published: u64,
    /// Entries consumed by the handler.
    pub consumed: u64,
    /// Reservations refused for lack of space (each is a stall, never a loss).
    pub backpressure: u64,
}

/// The ring buffer of one access log.
pub struct AccessLog {
    buf: Vec<u8>,
    head: u64,
    published: u64,
    reserved: u64,
    /// Reservations not yet published, in ring order.
    pending: VecDeque<Pending>,
    /// Entries between head and published (so the handler can ask "how many" cheaply).
    ready_entries: u64,
    stats: LogStats,
}

impl AccessLog {
    /// A log of `size_bytes` (rounded up to a multiple of 8, at least one header).
    pub fn new(size_bytes: u32) -> AccessLog {
        let size = size_bytes.max(HEADER_BYTES).div_ceil(8) * 8;
        AccessLog {
            buf: vec![0; size as usize],
            head: 0,
            published: 0,
            reserved: 0,
            pending: VecDeque::new(),
            ready_entries: 0,
            stats: LogStats::default(),
        }
    }

    /// Ring size in bytes.
    pub fn size(&self) -> u64 {
        self.buf.len() as u64
    }

    /// Bytes not reserved by anyone.
    pub fn free_bytes(&self) -> u64 {
        self.size() - (self.reserved - self.head)
    }

    /// Consumer position (bytes consumed since creation).
    pub fn head(&self) -> u64 {
        self.head
    }

    /// Published tail (what the handler may read up to).
    pub fn published(&self) -> u64 {
        self.published
    }

    /// Reservation tail (where the next entry will go).
    pub fn reserved(&self) -> u64 {
        self.reserved
    }

    /// Complete entries waiting for the handler.
    pub fn ready_entries(&self) -> u64 {
        self.ready_entries
    }

    /// Reservations not yet complete.
    pub fn in_flight(&self) -> usize {
        self.pending.len()
    }

    /// Counters.
    pub fn stats(&self) -> LogStats {
        self.stats
    }

    /// Reserve a whole entry and write its header. Refused (nothing changes) if it does not
    /// fit: the spec's back-pressure, never an overwrite.
    pub fn reserve(&mut self, header: EntryHeader) -> Result<Reservation, Backpressure> {
        let bytes = header.entry_bytes();
        if bytes as u64 > self.free_bytes() {
            self.stats.backpressure += 1;
            return Err(Backpressure {
                needed: bytes,
                free: self.free_bytes(),
            });
        }
        let r = Reservation {
            start: self.reserved,
            bytes,
            data_len: header.data_len,
        };
        self.reserved += bytes as u64;
        self.copy_in(r.start, &header.encode());
        self.pending.push_back(Pending {
            start: r.start,
            bytes,
            missing: header.data_len,
        });
        self.stats.reserved += 1;
        if header.data_len == 0 {
            self.complete(r.start);
        }
        Ok(r)
    }

    /// Write `data` at `offset` of a reservation's data. Returns true when this completed the
    /// entry. The caller (the reassembler) writes each byte once.
    pub fn write(&mut self, r: &Reservation, offset: u32, data: &[u8]) -> bool {
        assert!(
            offset as u64 + data.len() as u64 <= r.data_len as u64,
            "write beyond the reserved entry"
        );
        self.copy_in(r.start + HEADER_BYTES as u64 + offset as u64, data);
        let i = self
            .pending_index(r.start)
            .expect("writing into a live reservation");
        let p = &mut self.pending[i];
        p.missing -= data.len() as u32;
        if p.missing == 0 {
            self.complete(r.start);
            true
        } else {
            false
        }
    }

    /// Reserve and fill a single-transaction entry at once.
    pub fn append(&mut self, header: EntryHeader, data: &[u8]) -> Result<(), Backpressure> {
        debug_assert_eq!(header.data_len as usize, data.len());
        let r = self.reserve(header)?;
        if !data.is_empty() {
            self.write(&r, 0, data);
        }
        Ok(())
    }

    fn pending_index(&self, start: u64) -> Option<usize> {
        // Reservations are handed out in ring order, so the deque is sorted by start.
        let (a, b) = self.pending.as_slices();
        match a.binary_search_by_key(&start, |p| p.start) {
            Ok(i) => Some(i),
            Err(_) => b
                .binary_search_by_key(&start, |p| p.start)
                .ok()
                .map(|i| i + a.len()),
        }
    }

    /// Mark an entry complete and publish the longest complete prefix (no holes visible).
    fn complete(&mut self, start: u64) {
        if let Some(i) = self.pending_index(start) {
            self.pending[i].missing = 0;
        }
        while let Some(p) = self.pending.front() {
            if p.missing != 0 {
                break;
            }
            self.published = p.start + p.bytes as u64;
            self.ready_entries += 1;
            self.stats.published += 1;
            self.pending.pop_front();
        }
    }

    /// The handler takes the oldest published entry, freeing its space.
    pub fn pop(&mut self) -> Option<LogEntry> {
        if self.head == self.published {
            return None;
        }
        let mut hb = [0u8; HEADER_BYTES as usize];
        self.copy_out(self.head, &mut hb);
        let header = EntryHeader::decode(&hb);
        let mut data = vec![0u8; header.data_len as usize];
        self.copy_out(self.head + HEADER_BYTES as u64, &mut data);
        self.head += header.entry_bytes() as u64;
        self.ready_entries -= 1;
        self.stats.consumed += 1;
        Some(LogEntry { header, data })
    }

    fn copy_in(&mut self, pos: u64, src: &[u8]) {
        let n = self.buf.len();
        let at = (pos % n as u64) as usize;
        let first = src.len().min(n - at);
        self.buf[at..at + first].copy_from_slice(&src[..first]);
        self.buf[..src.len() - first].copy_from_slice(&src[first..]);
    }

    fn copy_out(&self, pos: u64, dst: &mut [u8]) {
        let n = self.buf.len();
        let at = (pos % n as u64) as usize;
        let first = dst.len().min(n - at);
        dst[..first].copy_from_slice(&self.buf[at..at + first]);
        let rest = dst.len() - first;
        dst[first..].copy_from_slice(&self.buf[..rest]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hdr(source: u32, txn: u32, data_len: u32) -> EntryHeader {
        EntryHeader {
            kind: EntryKind::ActivePut,
            source,
            txn,
            addr: 0x1000 + txn as u64,
            access_len: data_len,
            data_len,
        }
    }

    #[test]
    fn roundtrip_and_wraparound() {
        let mut log = AccessLog::new(256);
        for i in 0..100u32 {
            let data: Vec<u8> = (0..(i % 20) as u8).collect();
            log.append(hdr(1, i, data.len() as u32), &data).unwrap();
            let e = log.pop().unwrap();
            assert_eq!(e.header, hdr(1, i, data.len() as u32));
            assert_eq!(e.data, data);
        }
        assert!(log.pop().is_none());
    }

    #[test]
    fn no_hole_is_ever_visible() {
        let mut log = AccessLog::new(1024);
        let a = log.reserve(hdr(1, 1, 16)).unwrap();
        let b = log.reserve(hdr(2, 1, 16)).unwrap();
        // b completes first: still nothing visible, because a (before it) is incomplete.
        assert!(!log.write(&b, 0, &[2; 8]));
        assert!(log.write(&b, 8, &[2; 8]));
        assert_eq!(log.ready_entries(), 0);
        assert!(log.pop().is_none());
        log.write(&a, 8, &[1; 8]);
        assert!(log.pop().is_none());
        log.write(&a, 0, &[1; 8]);
        assert_eq!(log.ready_entries(), 2);
        assert_eq!(log.pop().unwrap().data, vec![1; 16]);
        assert_eq!(log.pop().unwrap().data, vec![2; 16]);
    }

    #[test]
    fn backpressure_never_overwrites_or_loses() {
        // A tiny log and a producer much faster than the consumer: every refused entry is
        // retried later; the consumer sees every entry exactly once, in order.
        let mut log = AccessLog::new(200);
        let total = 1000u32;
        let (mut next, mut seen, mut refused) = (0u32, 0u32, 0u32);
        while seen < total {
            // Producer: up to 5 attempts per round.
            for _ in 0..5 {
                if next == total {
                    break;
                }
                let data = next.to_le_bytes().repeat(((next % 5) + 1) as usize);
                match log.append(hdr(7, next, data.len() as u32), &data) {
                    Ok(()) => next += 1,
                    Err(bp) => {
                        assert!(bp.needed as u64 > bp.free);
                        refused += 1;
                        break;
                    }
                }
            }
            // Consumer: one entry per round.
            if let Some(e) = log.pop() {
                assert_eq!(e.header.txn, seen);
                assert_eq!(&e.data[..4], &seen.to_le_bytes());
                seen += 1;
            }
            assert!(log.free_bytes() <= log.size());
        }
        assert!(refused > 0, "the test must exercise back-pressure");
        assert_eq!(log.stats().backpressure, refused as u64);
        assert_eq!(log.stats().consumed, total as u64);
    }
}
