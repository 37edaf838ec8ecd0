//! Shared-memory transport between the ranks of one host.
//!
//! # Layout of the segment (a file under `/dev/shm`, i.e. what `shm_open` creates)
//!
//! ```text
//! page 0     header: magic, version, ranks n, slots per ring, slot bytes
//!            per rank r: doorbell[r] (u32 futex word), sleeping[r] (u32), 64-byte spaced
//! page 1..   n * n rings, ring (i -> j) at index i * n + j (the diagonal is unused):
//!              +0    head: u64, written by the producer i only
//!              +64   tail: u64, written by the consumer j only
//!              +128  slots: `slots` slots of `slot_bytes`: u32 length, then the packet
//! ```
//!
//! # Synchronization
//!
//! Each ring is single-producer / single-consumer and lock-free. The producer writes the slot,
//! then publishes it with a `Release` store of `head`; the consumer loads `head` with `Acquire`
//! (so the slot bytes are visible), copies the slot out, then frees it with a `Release` store of
//! `tail`; the producer loads `tail` with `Acquire` before reusing a slot. Indices grow without
//! wrapping (u64); the slot is `index % slots`.
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
const VERSION: u32 = 1;
const PAGE: usize = 4096;
const LINE: usize = 64;
const HDR_DOORBELLS: usize = 64;
const RING_HDR: usize = 128;

/// Geometry of a segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShmGeometry {
    /// Ranks.
    pub ranks: u32,
    /// Slots per ring.
    pub slots: u32,
    /// Bytes per slot (4-byte length + the largest packet), a multiple of 64.
    pub slot_bytes: u32,
}

impl ShmGeometry {
    /// A geometry for `ranks` ranks and packets of up to `max_packet` bytes, `slots` (at least
    /// 2) slots per ring.
    ///
    /// Every packet takes a whole slot, control packets (ACK, NACK, ERR: 19-28 bytes) too. A
    /// cap of 2 MiB per ring (127 slots of 16 KiB, tried for cache footprint) made the reverse
    /// ring of a faulting transfer's NACKs and ERRs fill whenever the sender was descheduled
    /// for a few milliseconds: `live-hol` counted 929 dropped control packets and 1423 timeout
    /// retransmissions, and the other transfers took ~2 ms instead of ~0.2 ms. So the count is
    /// the caller's (`unpinned run`: 512).
    pub fn new(ranks: u32, max_packet: usize, slots: u32) -> ShmGeometry {
        let slot_bytes = (4 + max_packet).div_ceil(LINE) * LINE;
        ShmGeometry {
            ranks,
            slots: slots.max(2),
            slot_bytes: slot_bytes as u32,
        }
    }

    fn ring_bytes(&self) -> usize {
        RING_HDR + self.slots as usize * self.slot_bytes as usize
    }

    fn ring_offset(&self, src: u32, dst: u32) -> usize {
        PAGE + (src as usize * self.ranks as usize + dst as usize) * self.ring_bytes()
    }

    /// Bytes of the whole segment.
    pub fn total_bytes(&self) -> usize {
        PAGE + (self.ranks as usize * self.ranks as usize) * self.ring_bytes()
    }

    /// Largest packet a slot holds.
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
    /// Per destination: the consumer's `tail` as last loaded (acquired). Slots below it are
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

    /// Whether the ring towards `dst` has a free slot for `head`, loading the consumer's
    /// `tail` only when the cached one says full.
    #[inline]
    fn has_room(&mut self, off: usize, dst: NodeId, head: u64) -> bool {
        let slots = self.geo.slots as u64;
        let d = dst as usize;
        if head.wrapping_sub(self.tails[d]) < slots {
            return true;
        }
        self.tails[d] = self.map.u64_at(off + LINE).load(Ordering::Acquire);
        head.wrapping_sub(self.tails[d]) < slots
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
        if !self.has_room(off, hint, head) {
            return InPlace::Unavailable;
        }
        let head_w = self.map.u64_at(off);
        let max = self.geo.max_packet();
        let slot =
            off + RING_HDR + (head % self.geo.slots as u64) as usize * self.geo.slot_bytes as usize;
        // SAFETY: as in `send`: the slot is in bounds and owned by us (the consumer released it:
        // a tail acquired now or earlier is past it) until our release store of head, which
        // happens only below. Only
        // this thread (it holds `&mut self`) writes the producer side of the ring.
        let buf = unsafe { std::slice::from_raw_parts_mut(self.map.base.add(slot + 4), max) };
        let Some((dst, len)) = fill(buf) else {
            return InPlace::Empty;
        };
        let len = len.min(max);
        if dst != hint {
            // Not published: the slot stays ours and is simply reused.
            let n = len.min(spill.len());
            spill[..n].copy_from_slice(&buf[..n]);
            return InPlace::Misdirected(dst, n);
        }
        // SAFETY: the 4-byte length prefix of the same owned slot (4-aligned).
        unsafe { (self.map.base.add(slot) as *mut u32).write(len as u32) };
        head_w.store(head + 1, Ordering::Release);
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
            let slot = off
                + RING_HDR
                + (tail % self.geo.slots as u64) as usize * self.geo.slot_bytes as usize;
            // SAFETY: head (acquired now or earlier) > tail: the producer published this slot and, keeping to
            // the ring protocol, does not write it before our release store of tail below, so
            // the bytes are stable while `f` reads them in place. A length past the slot (only
            // a corrupt segment has one) is dropped without reading. A producer that broke the
            // protocol could change bytes under `f`: the engine parses and checksums what it
            // reads, so the worst is a packet with garbled payload, as a peer could send anyway.
            let handled = unsafe {
                let p = self.map.base.add(slot);
                let len = (p as *const u32).read() as usize;
                if len <= self.geo.max_packet() {
                    f(src, std::slice::from_raw_parts(p.add(4), len));
                    true
                } else {
                    false
                }
            };
            tail_w.store(tail + 1, Ordering::Release);
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
        if !self.has_room(off, dst, head) {
            return Err(SendError::Full);
        }
        let head_w = self.map.u64_at(off);
        let slot =
            off + RING_HDR + (head % self.geo.slots as u64) as usize * self.geo.slot_bytes as usize;
        // SAFETY: the slot is in bounds (slot index < slots, the mapping covers all rings) and
        // owned by the producer: the consumer released it (a tail acquired now or earlier is
        // past it) and will not
        // read it before our release store of head below. The length prefix is 4-aligned.
        unsafe {
            let p = self.map.base.add(slot);
            (p as *mut u32).write(bytes.len() as u32);
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), p.add(4), bytes.len());
        }
        head_w.store(head + 1, Ordering::Release);
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
        for i in 0..4u8 {
            a.send(2, &[i; 10]).unwrap();
        }
        assert_eq!(a.send(2, &[9; 10]), Err(SendError::Full));
        assert_eq!(a.send(2, &[0; 125]), Err(SendError::Unreachable));
        for i in 0..4u8 {
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
}
