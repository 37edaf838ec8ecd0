//! Shared-memory transport between the ranks of one host.
//!
//! # Layout of the segment (a file under `/dev/shm`, i.e. what `shm_open` creates)
//!
//! ```text
//! page 0     header: magic, version, ranks n, slots per ring, slot bytes
//!            per rank r: doorbell[r] (u32 futex word), sleeping[r] (u32), 64-byte spaced
//! page 1..   n * n rings, ring (i -> j) at index i * n + j (the diagonal is unused):
//!              +0    head: u64, byte index, written by the producer i only
//!              +64   tail: u64, byte index, written by the consumer j only
//!              +128  data: `slots * slot_bytes` bytes of records
//! ```
//!
//! # Records: a byte ring, not a slot ring
//!
//! A packet is a *record*: a u32 length, then the packet, padded to a multiple of 64 bytes.
//! An ACK takes one 64-byte line, a 16 KiB data packet 257 lines. The geometry's `slots` is the
//! ring's capacity counted in largest packets. A record never wraps: when the largest packet
//! would not fit before the end of the data area, the producer writes a *skip* record (length
//! [`SKIP`]) to the end and starts again at offset 0 (the consumer jumps over it).
//!
//! Why records: with one fixed 16 KiB slot per packet, control packets (ACK, NACK, ERR: 19-28
//! bytes) took whole slots, so a ring needed many slots (512, 8 MiB per direction) not to fill
//! with the NACKs and ERRs of a faulting transfer; and with 512 slots a slot came back into use
//! 512 packets later, its lines long gone from both cores' caches (`bench live` measured an
//! 8 B write and a missing page faster over 64-slot rings). Records keep control packets
//! in a line each (a 1 MiB ring holds 16,384 of them) so the ring can be small and warm.
//!
//! # Synchronization
//!
//! Each ring is single-producer / single-consumer and lock-free. The producer writes a record,
//! then publishes it with a `Release` store of `head`; the consumer loads `head` with `Acquire`
//! (so the record's bytes are visible), reads the record in place, then frees it with a
//! `Release` store of `tail`; the producer loads `tail` with `Acquire` before reusing bytes.
//! Indices are byte counts that grow without wrapping (u64); a record is at `index % capacity`.
//!
//! An idle engine does not spin forever: it announces `sleeping[r] = 1`, re-checks its rings,
//! and sleeps on `doorbell[r]` with `FUTEX_WAIT` (a shared, not private, futex: the word lives
//! in a shared mapping). A producer bumps `doorbell[dst]` after publishing and calls
//! `FUTEX_WAKE` only when the consumer announced it sleeps. `SeqCst` fences on both sides order
//! "publish, then read `sleeping`" against "announce, then re-check": one of the two sides sees
//! the other, so no wake-up is lost (the wait also has a timeout, as a second safety net).
//!
//! A dead rank stops consuming: its rings fill and `send` answers [`SendError::Full`]; the
//! engine loop drops packets to a destination that stays full, and the engine's timers turn the
//! silence into `RetryExceeded` completions.

use std::fs::OpenOptions;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use unpinned_core::api::NodeId;

use super::{Fill, InPlace, SendError, Sleeper, Transport, Waker};

const MAGIC: u64 = 0x554e_5049_4e53_484d; // "UNPINSHM"
const VERSION: u32 = 2;
const PAGE: usize = 4096;
const LINE: usize = 64;
const HDR_DOORBELLS: usize = 64;
const RING_HDR: usize = 128;
/// Length of a skip record: the rest of the data area up to its end is unused.
const SKIP: u32 = u32::MAX;

/// Bytes of the record holding a packet of `len` bytes: length word plus packet, in lines.
#[inline]
fn record_bytes(len: usize) -> u64 {
    ((4 + len).div_ceil(LINE) * LINE) as u64
}

/// Geometry of a segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShmGeometry {
    /// Ranks.
    pub ranks: u32,
    /// Capacity of a ring, counted in largest packets (a small packet takes one 64-byte line).
    pub slots: u32,
    /// Bytes of the record of a largest packet (4-byte length + the packet), a multiple of 64.
    pub slot_bytes: u32,
}

impl ShmGeometry {
    /// A geometry for `ranks` ranks and packets of up to `max_packet` bytes, `slots` (at least
    /// 2) slots per ring.
    ///
    /// A packet takes the lines it needs (see the module doc), so control packets (ACK, NACK,
    /// ERR: 19-28 bytes) take one line each. With whole 16 KiB slots per packet, a cap of
    /// 2 MiB per ring (127 slots) made the reverse ring of a faulting transfer's NACKs and
    /// ERRs fill whenever the sender was descheduled for a few milliseconds (`live-hol`
    /// counted 929 dropped control packets); with records 2 MiB hold 32,768 of them.
    pub fn new(ranks: u32, max_packet: usize, slots: u32) -> ShmGeometry {
        let slot_bytes = (4 + max_packet).div_ceil(LINE) * LINE;
        ShmGeometry {
            ranks,
            slots: slots.max(2),
            slot_bytes: slot_bytes as u32,
        }
    }

    fn ring_bytes(&self) -> usize {
        RING_HDR + self.data_bytes()
    }

    /// Bytes of a ring's data area (its capacity).
    fn data_bytes(&self) -> usize {
        self.slots as usize * self.slot_bytes as usize
    }

    fn ring_offset(&self, src: u32, dst: u32) -> usize {
        PAGE + (src as usize * self.ranks as usize + dst as usize) * self.ring_bytes()
    }

    /// Bytes of the whole segment.
    pub fn total_bytes(&self) -> usize {
        PAGE + (self.ranks as usize * self.ranks as usize) * self.ring_bytes()
    }

    /// Largest packet a record holds.
    pub fn max_packet(&self) -> usize {
        self.slot_bytes as usize - 4
    }
}

/// Errors creating or opening a segment.
#[derive(Debug, thiserror::Error)]
pub enum ShmError {
    /// File or mapping error.
    #[error("shared-memory segment {path}: {err}")]
    Io {
        /// The segment file.
        path: String,
        /// What failed.
        err: std::io::Error,
    },
    /// The file is not a segment of this version, or its geometry does not fit.
    #[error("shared-memory segment {path} is not a valid unpinned segment ({why}); was it created by `unpinned run`?")]
    Invalid {
        /// The segment file.
        path: String,
        /// What is wrong.
        why: String,
    },
    /// The rank is outside the segment.
    #[error("rank {rank} is out of range for a segment of {ranks} ranks")]
    BadRank {
        /// Rank asked.
        rank: u32,
        /// Ranks in the segment.
        ranks: u32,
    },
}

/// A mapping of the segment (unmapped on drop).
struct Mapping {
    base: *mut u8,
    len: usize,
}

// SAFETY: the mapping is plain shared memory; every access to it goes through atomics (indices,
// doorbells) or through slots whose ownership is handed over by the ring protocol (acquire /
// release on head and tail), so sharing the pointer between threads is sound.
unsafe impl Send for Mapping {}
// SAFETY: as above: all shared accesses are atomic or protocol-owned.
unsafe impl Sync for Mapping {}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: base/len are exactly the mapping created in `map`, unmapped once here; no
        // reference into it outlives `self` (transports and wakers hold an Arc to it).
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.len) };
    }
}

impl Mapping {
    fn map(path: &Path, len: usize) -> Result<Mapping, ShmError> {
        let io = |err| ShmError::Io {
            path: path.display().to_string(),
            err,
        };
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(io)?;
        let flen = f.metadata().map_err(io)?.len() as usize;
        if flen < len {
            return Err(ShmError::Invalid {
                path: path.display().to_string(),
                why: format!("file is {flen} bytes, geometry needs {len}"),
            });
        }
        // SAFETY: mapping an open file read-write and shared; the result is checked. The file
        // stays mapped after `f` is closed.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                f.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io(std::io::Error::last_os_error()));
        }
        Ok(Mapping {
            base: p as *mut u8,
            len,
        })
    }

    fn u64_at(&self, off: usize) -> &AtomicU64 {
        assert!(off + 8 <= self.len && off.is_multiple_of(8));
        // SAFETY: in bounds and 8-aligned (asserted; the base is page aligned); the word lives
        // as long as the mapping (`&self`) and is only ever accessed atomically.
        unsafe { AtomicU64::from_ptr(self.base.add(off) as *mut u64) }
    }

    fn u32_at(&self, off: usize) -> &AtomicU32 {
        assert!(off + 4 <= self.len && off.is_multiple_of(4));
        // SAFETY: in bounds and 4-aligned (asserted); only ever accessed atomically.
        unsafe { AtomicU32::from_ptr(self.base.add(off) as *mut u32) }
    }

    fn doorbell(&self, r: u32) -> &AtomicU32 {
        self.u32_at(HDR_DOORBELLS + r as usize * LINE)
    }

    fn sleeping(&self, r: u32) -> &AtomicU32 {
        self.u32_at(HDR_DOORBELLS + r as usize * LINE + 4)
    }
}

fn futex_wake(word: &AtomicU32) {
    // SAFETY: FUTEX_WAKE on a valid, aligned u32 in a shared mapping; it only reads the address.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE,
            i32::MAX,
            0usize,
            0usize,
            0u32,
        )
    };
}

fn futex_wait(word: &AtomicU32, expected: u32, timeout: Duration) {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: FUTEX_WAIT on a valid, aligned u32 in a shared mapping with a relative timeout;
    // it returns at once if the word no longer holds `expected`.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            &ts as *const libc::timespec,
            0usize,
            0u32,
        )
    };
}

/// Create (or replace) the segment file at `path` with `geometry`, zero-filled, header written.
pub fn create_segment(path: &Path, geometry: ShmGeometry) -> Result<(), ShmError> {
    let io = |err| ShmError::Io {
        path: path.display().to_string(),
        err,
    };
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .map_err(io)?;
    f.set_len(geometry.total_bytes() as u64).map_err(io)?;
    drop(f);
    let m = Mapping::map(path, PAGE)?;
    m.u32_at(8).store(VERSION, Ordering::Relaxed);
    m.u32_at(12).store(geometry.ranks, Ordering::Relaxed);
    m.u32_at(16).store(geometry.slots, Ordering::Relaxed);
    m.u32_at(20).store(geometry.slot_bytes, Ordering::Relaxed);
    m.u64_at(0).store(MAGIC, Ordering::Release);
    Ok(())
}

/// One rank's end of a shared-memory segment.
pub struct ShmTransport {
    map: Arc<Mapping>,
    geo: ShmGeometry,
    rank: u32,
    /// Next source to poll (round-robin fairness).
    next_src: u32,
    /// Per destination: the consumer's `tail` as last loaded (acquired). Bytes below it are
    /// free, so `tail` is loaded again only when the ring looks full: the line of `tail` is
    /// written by the consumer at every packet, and loading it at every send cost a transfer
    /// of that line between the cores per packet.
    tails: Vec<u64>,
    /// Per source: the producer's `head` as last loaded (acquired); loaded again only when
    /// the ring looks empty (the same saving on the consumer's side).
    heads: Vec<u64>,
}

impl ShmTransport {
    /// Open the segment at `path` as rank `rank`.
    pub fn open(path: &Path, rank: u32) -> Result<ShmTransport, ShmError> {
        let bad = |why: String| ShmError::Invalid {
            path: path.display().to_string(),
            why,
        };
        let hdr = Mapping::map(path, PAGE)?;
        if hdr.u64_at(0).load(Ordering::Acquire) != MAGIC
            || hdr.u32_at(8).load(Ordering::Relaxed) != VERSION
        {
            return Err(bad("bad magic or version".into()));
        }
        let geo = ShmGeometry {
            ranks: hdr.u32_at(12).load(Ordering::Relaxed),
            slots: hdr.u32_at(16).load(Ordering::Relaxed),
            slot_bytes: hdr.u32_at(20).load(Ordering::Relaxed),
        };
        drop(hdr);
        if geo.ranks == 0
            || geo.ranks > 1024
            || geo.slots < 2
            || geo.slot_bytes < 64
            || geo.ranks > 64
        {
            return Err(bad(format!("impossible geometry {geo:?}")));
        }
        if rank >= geo.ranks {
            return Err(ShmError::BadRank {
                rank,
                ranks: geo.ranks,
            });
        }
        let map = Arc::new(Mapping::map(path, geo.total_bytes())?);
        // Start from the indices as they are (a segment is normally fresh: all zero).
        let n = geo.ranks;
        let tails = (0..n)
            .map(|d| {
                map.u64_at(geo.ring_offset(rank, d) + LINE)
                    .load(Ordering::Acquire)
            })
            .collect();
        let heads = (0..n)
            .map(|s| map.u64_at(geo.ring_offset(s, rank)).load(Ordering::Acquire))
            .collect();
        Ok(ShmTransport {
            map,
            geo,
            rank,
            next_src: 0,
            tails,
            heads,
        })
    }

    /// After publishing towards `dst`: if it announced that it sleeps, bump its doorbell and
    /// wake it.
    ///
    /// The bump is needed only then: a consumer that has not announced yet re-checks its rings
    /// after announcing (the `SeqCst` fences order our publish-then-read against its
    /// announce-then-check: one of the two sees the other), and one that announced compares
    /// the doorbell with the value it read before announcing, so a bump after our read of
    /// `sleeping` still stops its wait. Bumping at every packet was an atomic read-modify-write
    /// on a line the consumer also uses, once per packet.
    fn ring_doorbell(&self, dst: NodeId) {
        fence(Ordering::SeqCst);
        if self.map.sleeping(dst).load(Ordering::Relaxed) != 0 {
            let bell = self.map.doorbell(dst);
            bell.fetch_add(1, Ordering::Release);
            futex_wake(bell);
        }
    }

    /// Where a record of up to `need` bytes goes in the ring towards `dst` whose producer index
    /// is `head`: `Some((at, start))`, `at` the byte index of the record (past a skip record
    /// from `head` to the end of the data area when the record would not fit before it) and
    /// `start` its offset in the segment; `None` when the ring has no room. Loads the
    /// consumer's `tail` only when the cached one says full.
    #[inline]
    fn reserve(&mut self, off: usize, dst: NodeId, head: u64, need: u64) -> Option<(u64, usize)> {
        let cap = self.geo.data_bytes() as u64;
        let pos = head % cap;
        let at = if cap - pos < need {
            head + (cap - pos)
        } else {
            head
        };
        let end = at + need;
        let d = dst as usize;
        if end - self.tails[d] > cap {
            self.tails[d] = self.map.u64_at(off + LINE).load(Ordering::Acquire);
            if end.wrapping_sub(self.tails[d]) > cap {
                return None;
            }
        }
        if at != head {
            // SAFETY: `pos` is a 64-aligned offset inside this ring's data area (head and every
            // record size are multiples of 64, the capacity too) and the bytes from `head` to
            // `end` are free (the consumer's tail is at most `cap` behind `end`), so the
            // producer owns them until its release store of head.
            unsafe { (self.map.base.add(off + RING_HDR + pos as usize) as *mut u32).write(SKIP) };
        }
        Some((at, off + RING_HDR + (at % cap) as usize))
    }

    /// The segment's geometry.
    pub fn geometry(&self) -> ShmGeometry {
        self.geo
    }
}

fn rings_have_data(map: &Mapping, geo: &ShmGeometry, rank: u32) -> bool {
    (0..geo.ranks).any(|src| {
        let off = geo.ring_offset(src, rank);
        src != rank
            && map.u64_at(off).load(Ordering::Acquire)
                != map.u64_at(off + LINE).load(Ordering::Relaxed)
    })
}

/// Announce that `rank` sleeps, re-check its rings, and sleep on its doorbell.
fn sleep_on_doorbell(map: &Mapping, geo: &ShmGeometry, rank: u32, timeout: Duration) {
    let bell = map.doorbell(rank);
    let seen = bell.load(Ordering::Acquire);
    let sleeping = map.sleeping(rank);
    sleeping.store(1, Ordering::Relaxed);
    fence(Ordering::SeqCst);
    if !rings_have_data(map, geo, rank) {
        futex_wait(bell, seen, timeout);
    }
    sleeping.store(0, Ordering::Relaxed);
}

impl Transport for ShmTransport {
    fn rank(&self) -> NodeId {
        self.rank
    }
    fn size(&self) -> u32 {
        self.geo.ranks
    }
    fn max_packet(&self) -> usize {
        self.geo.max_packet()
    }

    /// Shared memory does not corrupt bytes in flight: no software checksum (the ring protocol
    /// hands each slot over whole, see the module doc).
    fn reliable(&self) -> bool {
        true
    }

    fn send_in_place(&mut self, hint: NodeId, spill: &mut [u8], fill: &mut Fill<'_>) -> InPlace {
        if hint >= self.geo.ranks || hint == self.rank {
            return InPlace::Unavailable;
        }
        let off = self.geo.ring_offset(self.rank, hint);
        let head = self.map.u64_at(off).load(Ordering::Relaxed);
        let max = self.geo.max_packet();
        // The packet's length is known only once `fill` wrote it: room for the largest.
        let Some((at, rec)) = self.reserve(off, hint, head, self.geo.slot_bytes as u64) else {
            return InPlace::Unavailable;
        };
        let head_w = self.map.u64_at(off);
        // SAFETY: `reserve` returned bytes in bounds (a record of the largest size fits before
        // the end of the data area) and owned by us (the consumer released them) until our
        // release store of head, which happens only below. Only this thread (it holds
        // `&mut self`) writes the producer side of the ring.
        let buf = unsafe { std::slice::from_raw_parts_mut(self.map.base.add(rec + 4), max) };
        let Some((dst, len)) = fill(buf) else {
            return InPlace::Empty;
        };
        let len = len.min(max);
        if dst != hint {
            // Not published: the bytes stay ours and are simply reused (a skip record written
            // by `reserve` is rewritten identically next time).
            let n = len.min(spill.len());
            spill[..n].copy_from_slice(&buf[..n]);
            return InPlace::Misdirected(dst, n);
        }
        // SAFETY: the 4-byte length prefix of the same owned record (64-aligned).
        unsafe { (self.map.base.add(rec) as *mut u32).write(len as u32) };
        head_w.store(at + record_bytes(len), Ordering::Release);
        self.ring_doorbell(dst);
        InPlace::Sent(dst)
    }

    fn recv_with(&mut self, buf: &mut [u8], f: &mut dyn FnMut(NodeId, &[u8])) -> bool {
        let _ = buf;
        let n = self.geo.ranks;
        for k in 0..n {
            let src = (self.next_src + k) % n;
            if src == self.rank {
                continue;
            }
            let off = self.geo.ring_offset(src, self.rank);
            let tail_w = self.map.u64_at(off + LINE);
            let tail = tail_w.load(Ordering::Relaxed);
            if self.heads[src as usize] == tail {
                // Looks empty: load the producer's head (it is written at every packet, so it
                // is loaded only when the cached one is used up).
                self.heads[src as usize] = self.map.u64_at(off).load(Ordering::Acquire);
                if self.heads[src as usize] == tail {
                    continue;
                }
            }
            let cap = self.geo.data_bytes() as u64;
            let head = self.heads[src as usize];
            let mut at = tail;
            // SAFETY: `at % cap` is a 64-aligned offset inside this ring's data area and the
            // record there was published (head, acquired now or earlier, is past it).
            let mut len = unsafe {
                (self.map.base.add(off + RING_HDR + (at % cap) as usize) as *const u32).read()
            };
            if len == SKIP {
                // The rest of the data area is unused: the record is at offset 0.
                at += cap - at % cap;
                len = if at < head {
                    // SAFETY: offset 0 of the data area, published (head is past it).
                    unsafe { (self.map.base.add(off + RING_HDR) as *const u32).read() }
                } else {
                    SKIP
                };
            }
            let len = len as usize;
            let room = cap - at % cap;
            let handled = if at < head && len <= self.geo.max_packet() && record_bytes(len) <= room
            {
                // SAFETY: head > at: the producer published this record and, keeping to the
                // ring protocol, does not write it before our release store of tail below, so
                // the bytes are stable while `f` reads them in place; the record lies inside
                // the data area (checked above). A producer that broke the protocol could
                // change bytes under `f`: the engine parses and checksums what it reads, so the
                // worst is a packet with garbled payload, as a peer could send anyway.
                unsafe {
                    let p = self.map.base.add(off + RING_HDR + (at % cap) as usize + 4);
                    f(src, std::slice::from_raw_parts(p, len));
                }
                at += record_bytes(len);
                true
            } else {
                // A length no producer writes (only a corrupt segment has one): everything
                // published is dropped unread, since where the next record begins is unknown.
                at = head;
                false
            };
            tail_w.store(at, Ordering::Release);
            self.next_src = (src + 1) % n;
            if handled {
                return true;
            }
        }
        false
    }

    fn send(&mut self, dst: NodeId, bytes: &[u8]) -> Result<(), SendError> {
        if dst >= self.geo.ranks || dst == self.rank || bytes.len() > self.geo.max_packet() {
            return Err(SendError::Unreachable);
        }
        let off = self.geo.ring_offset(self.rank, dst);
        // We are the only writer of head: a relaxed load sees our own last store.
        let head = self.map.u64_at(off).load(Ordering::Relaxed);
        let need = record_bytes(bytes.len());
        let Some((at, rec)) = self.reserve(off, dst, head, need) else {
            return Err(SendError::Full);
        };
        // SAFETY: `reserve` returned `need` bytes in bounds and owned by the producer (the
        // consumer released them and will not read them before our release store of head
        // below). The length prefix is 64-aligned.
        unsafe {
            let p = self.map.base.add(rec);
            (p as *mut u32).write(bytes.len() as u32);
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), p.add(4), bytes.len());
        }
        self.map.u64_at(off).store(at + need, Ordering::Release);
        self.ring_doorbell(dst);
        Ok(())
    }

    fn recv(&mut self, buf: &mut [u8]) -> Option<(NodeId, usize)> {
        // The ring walk is `recv_with`'s; this only copies out. A packet longer than `buf` is
        // dropped, not truncated (see `Transport::recv`), and the walk goes on.
        loop {
            let mut got = None;
            let consumed = self.recv_with(&mut [], &mut |src, bytes| {
                if let Some(dst) = buf.get_mut(..bytes.len()) {
                    dst.copy_from_slice(bytes);
                    got = Some((src, bytes.len()));
                }
            });
            if got.is_some() || !consumed {
                return got;
            }
        }
    }

    fn wait(&mut self, timeout: Duration) {
        sleep_on_doorbell(&self.map, &self.geo, self.rank, timeout);
    }

    fn sleeper(&self) -> Sleeper {
        let (map, geo, rank) = (self.map.clone(), self.geo, self.rank);
        Box::new(move |timeout| sleep_on_doorbell(&map, &geo, rank, timeout))
    }

    fn waker(&self) -> Waker {
        let map = self.map.clone();
        let rank = self.rank;
        Arc::new(move || {
            let bell = map.doorbell(rank);
            bell.fetch_add(1, Ordering::Release);
            fence(Ordering::SeqCst);
            if map.sleeping(rank).load(Ordering::Relaxed) != 0 {
                futex_wake(bell);
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_round_trip_and_full() {
        let _map_lock = crate::MAP_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let path = std::env::temp_dir().join(format!("unpinned-shm-test-{}", std::process::id()));
        create_segment(&path, ShmGeometry::new(3, 100, 4)).unwrap();
        let mut a = ShmTransport::open(&path, 0).unwrap();
        let mut b = ShmTransport::open(&path, 2).unwrap();
        let mut buf = [0u8; 200];
        assert_eq!(b.recv(&mut buf), None);
        // Capacity: 4 largest packets (4 records of 128 bytes) = 8 records of a small packet.
        for i in 0..8u8 {
            a.send(2, &[i; 10]).unwrap();
        }
        assert_eq!(a.send(2, &[9; 10]), Err(SendError::Full));
        assert_eq!(a.send(2, &[0; 125]), Err(SendError::Unreachable));
        for i in 0..8u8 {
            assert_eq!(b.recv(&mut buf), Some((0, 10)));
            assert_eq!(buf[..10], [i; 10]);
        }
        assert_eq!(b.recv(&mut buf), None);
        a.send(2, &[7; 3]).unwrap();
        b.wait(Duration::from_millis(100));
        assert_eq!(b.recv(&mut buf), Some((0, 3)));
        // In place: written into the slot, read from the slot.
        let mut spill = [0u8; 200];
        let sent = a.send_in_place(2, &mut spill, &mut |s: &mut [u8]| {
            s[..5].copy_from_slice(&[5; 5]);
            Some((2, 5))
        });
        assert_eq!(sent, InPlace::Sent(2));
        // A packet for another destination than the hint is spilled, not published.
        let mis = a.send_in_place(2, &mut spill, &mut |s: &mut [u8]| {
            s[..4].copy_from_slice(&[4; 4]);
            Some((1, 4))
        });
        assert_eq!(mis, InPlace::Misdirected(1, 4));
        assert_eq!(spill[..4], [4; 4]);
        assert_eq!(
            a.send_in_place(2, &mut spill, &mut |_: &mut [u8]| None),
            InPlace::Empty
        );
        let mut got = Vec::new();
        assert!(b.recv_with(&mut buf, &mut |src, p| got.push((src, p.to_vec()))));
        assert!(!b.recv_with(&mut buf, &mut |src, p| got.push((src, p.to_vec()))));
        assert_eq!(got, vec![(0, vec![5; 5])]);
        std::fs::remove_file(&path).unwrap();
    }

    /// Packets of every size from 0 to the largest, in place and copied, through a small ring
    /// that wraps (skip records) thousands of times: every packet arrives once, in order, with
    /// its bytes, and the ring is never reported full while the consumer keeps up.
    #[test]
    fn records_of_mixed_sizes_wrap_in_order() {
        let _map_lock = crate::MAP_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let path = std::env::temp_dir().join(format!("unpinned-shm-wrap-{}", std::process::id()));
        let max = 300;
        create_segment(&path, ShmGeometry::new(2, max, 3)).unwrap();
        let mut a = ShmTransport::open(&path, 0).unwrap();
        let mut b = ShmTransport::open(&path, 1).unwrap();
        // A small xorshift: this crate has no random-number dependency, and the sequence only
        // has to be fixed.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let mut sent = std::collections::VecDeque::new();
        let mut buf = vec![0u8; 512];
        let mut spill = vec![0u8; 512];
        for n in 0..20_000u32 {
            let len = if next(2) == 0 {
                next(40)
            } else {
                next(max as u64 + 1)
            } as usize;
            let p: Vec<u8> = (0..len).map(|i| (n as usize * 31 + i) as u8).collect();
            let ok = if next(2) == 0 {
                a.send(1, &p).is_ok()
            } else {
                let q = p.clone();
                a.send_in_place(1, &mut spill, &mut |s: &mut [u8]| {
                    s[..q.len()].copy_from_slice(&q);
                    Some((1, q.len()))
                }) == InPlace::Sent(1)
            };
            if ok {
                sent.push_back(p);
            } else {
                // Full: the consumer must have something to take.
                assert!(!sent.is_empty(), "packet {n} refused by an empty ring");
            }
            // The consumer lags behind by a random amount.
            while !sent.is_empty() && (next(5) < 2 || !ok) {
                let (src, l) = b.recv(&mut buf).expect("a published packet");
                assert_eq!(src, 0);
                assert_eq!(
                    &buf[..l],
                    &sent.pop_front().unwrap()[..],
                    "packet order or bytes"
                );
            }
        }
        while let Some(p) = sent.pop_front() {
            let (_, l) = b.recv(&mut buf).unwrap();
            assert_eq!(&buf[..l], &p[..]);
        }
        assert_eq!(b.recv(&mut buf), None);
        std::fs::remove_file(&path).unwrap();
    }
}
