//! Shared-memory transport between the ranks of one host.
//!
//! # Layout of the segment (a file under `/dev/shm`, i.e. what `shm_open` creates)
//!
//! ```text
//! pages 0-1  header: magic, version, ranks n, slots per ring, slot bytes, descriptors per ring
//!            per rank r from +64: doorbell[r] (u32 futex word), sleeping[r] (u32), pid[r]
//!            (u32, set at open), left[r] (u32, set when r closes its transport), 64-byte
//!            spaced (64 ranks need 64 + 64 * 64 bytes: more than a page)
//! page 2..   n * n rings, ring (i -> j) at index i * n + j (the diagonal is unused):
//!              +0    head: u64, written by the producer i only
//!              +64   tail: u64, written by the consumer j only
//!              +128  returned: u64, written by the consumer j only (payload slots given back)
//!              +192  descriptors: `descs` entries of 512 bytes, walked in order:
//!                    u8 tag: 0 free; `TAG_INLINE | length`: the packet (up to 127
//!                    bytes) follows at +1; `TAG_LONG`: u16 length at +2, the packet
//!                    (up to 508 bytes) at +4; `TAG_SLOT`: u32 length at +4, u32
//!                    payload slot at +8
//!              then  return ring: `slots` u32 slot indices (consumer -> producer)
//!              then  payload slots: `slots` slots of `slot_bytes` (64-byte aligned)
//! ```
//!
//! # Why descriptors and a stack of payload slots
//!
//! Every packet used to take the ring's next 16 KiB slot, so with the launcher's 512 slots a
//! slot came back into use 512 packets (8 MiB) later, its lines gone from both cores' caches,
//! and a 4 KiB packet's copies into and out of its slot cost many times what they cost
//! through a small ring (measurements: docs/performance.md, "Live runtime: waiting, spinning
//! and rings"). Now small packets (ACK, NACK, ERR, an 8 B write, a broadcast of up to 256 B:
//! <= 508 bytes) travel inline in a 512-byte descriptor, and a larger one takes a payload slot
//! from the producer's private stack of free slots, most recently freed first: the consumer
//! gives each slot back through the return ring once the packet is handled, and the producer
//! moves returned slots onto its stack before it takes one. A lightly loaded ring thus reuses
//! the same one or two warm slots, a busy one still has every slot, and the descriptor walk
//! covers at most `descs * 512` bytes (256 KiB at 512), of which a small packet touches one or
//! two lines.
//!
//! # Synchronization
//!
//! Each ring is single-producer / single-consumer and lock-free. The producer writes the
//! descriptor's bytes (and the payload slot it names), then publishes it with a `Release`
//! store of its tag, and then stores `head`; the consumer loads the tag of the descriptor at
//! `tail` with `Acquire` (so the descriptor and slot bytes are visible), reads the packet in
//! place, then gives the slot back (writes its index into the return ring, `Release` store of
//! `returned`), clears the tag and frees the descriptor (`Release` store of `tail`). The
//! consumer thus polls the line it reads the packet from, and a packet of up to 63 bytes
//! (an ACK, an 8 B write) lies in that one line with its one-byte tag: polling `head` and a
//! 4-byte length word before the packet cost up to two more transfers of a line between the
//! cores per packet. `head` is read only by a rank about to sleep (does a ring hold data?)
//! and when a transport opens. The producer loads `tail` with `Acquire` before reusing a
//! descriptor and `returned` with `Acquire` before taking back a slot. Indices grow without
//! wrapping (u64); the entry is `index % count`. A slot is given back at most once per use,
//! so the return ring (one entry per slot) never overflows for a producer that keeps to the
//! protocol; the producer's private read position of it is never published.
//!
//! An idle engine does not spin forever: it announces `sleeping[r] = 1`, re-checks its rings,
//! and sleeps on `doorbell[r]` with `FUTEX_WAIT` (a shared, not private, futex: the word lives
//! in a shared mapping). A producer bumps `doorbell[dst]` after publishing and calls
//! `FUTEX_WAKE` only when the consumer announced it sleeps. `SeqCst` fences on both sides order
//! "publish, then read `sleeping`" against "announce, then re-check": one of the two sides sees
//! the other, so no wake-up is lost (the wait also has a timeout, as a second safety net).
//! (An asymmetric barrier, `membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED)` on the sleeping side
//! and none on the producer's, does not pay here: its inter-processor interrupts, one per
//! sleep, stall the busy peer longer than the fences it saves; docs/performance.md.)
//!
//! A dead rank stops consuming: its rings fill and `send` answers [`SendError::Full`]; the
//! engine loop drops packets to a destination that stays full, and the engine's timers turn the
//! silence into `RetryExceeded` completions, unless the engine loop asks first
//! ([`Transport::gone`]): a rank whose `left` word is set, or whose process has ended (a
//! `pidfd` of its `pid` polls readable, zombies included), is gone, and the requests towards
//! it fail with `PeerGone` naming it.

use std::fs::OpenOptions;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::atomic::{fence, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use unpinned_core::api::NodeId;

use super::{Fill, InPlace, SendError, Sleeper, Transport, Waker};

const MAGIC: u64 = 0x554e_5049_4e53_484d; // "UNPINSHM"
/// Layout version: 1 was a ring of whole slots, 2 the reverted ring of records (c45ff38),
/// 3 descriptors and a stack of payload slots.
/// 4 the same, published by a one-byte tag that inline packets follow; 5 512-byte
/// descriptors and a two-page header (the lines of 64 ranks do not fit in one).
const VERSION: u32 = 5;
const PAGE: usize = 4096;
/// Bytes of the header: the fields and one line per rank, rounded up to pages.
const HDR_BYTES: usize = (HDR_DOORBELLS + MAX_RANKS as usize * LINE).next_multiple_of(PAGE);
// The last rank's line ends before the first ring starts.
const _: () = assert!(HDR_DOORBELLS + MAX_RANKS as usize * LINE <= HDR_BYTES);
const LINE: usize = 64;
const HDR_DOORBELLS: usize = 64;
/// head, tail, returned: one line each.
const RING_HDR: usize = 3 * LINE;
/// Bytes of one descriptor: eight lines. A packet in a payload slot costs its consumer two
/// more shared lines than one inline (the return ring's entry and `returned`) and its
/// producer the walk of the returns; a small packet only touches the descriptor's first lines.
const DESC_BYTES: usize = 512;
/// Largest packet carried inline after the one-byte tag alone (in the tag's line: 63 bytes).
const SHORT_MAX: usize = 127;
/// Where a longer inline packet starts (after the tag and its u16 length).
const LONG_AT: usize = 4;
/// Largest packet carried inline in its descriptor.
pub const INLINE_MAX: usize = DESC_BYTES - LONG_AT;
/// Tag of a descriptor holding an inline packet of up to [`SHORT_MAX`] bytes, or'ed with its
/// length.
const TAG_INLINE: u8 = 0x80;
/// Tag of a descriptor holding a longer inline packet (u16 length at +2, bytes at +4).
const TAG_LONG: u8 = 0x02;
/// Tag of a descriptor naming a payload slot (u32 length at +4, u32 slot at +8).
const TAG_SLOT: u8 = 0x01;

/// Write the inline packet `[src, src + len)` into the descriptor at `p`; returns the tag that
/// publishes it.
///
/// # Safety
/// `p` is a descriptor the producer owns (not yet published), `len <= INLINE_MAX`, `src`
/// readable for `len` bytes and not overlapping the descriptor.
unsafe fn write_inline(p: *mut u8, src: *const u8, len: usize) -> u8 {
    debug_assert!(len <= INLINE_MAX);
    // SAFETY: the caller's; the u16 at +2 is 2-aligned (descriptors are 64-aligned).
    unsafe {
        if len <= SHORT_MAX {
            std::ptr::copy_nonoverlapping(src, p.add(1), len);
            TAG_INLINE | len as u8
        } else {
            (p.add(2) as *mut u16).write(len as u16);
            std::ptr::copy_nonoverlapping(src, p.add(LONG_AT), len);
            TAG_LONG
        }
    }
}
/// Descriptors per ring at least: control packets (ACK, NACK, ERR) take no payload slot, so a
/// small payload pool still absorbs a faulting transfer's NACK / ERR floods.
pub const MIN_DESCS: u32 = 512;
/// Bounds of a geometry read from a segment (far above any real one; they keep the layout
/// arithmetic far from overflow).
const MAX_RANKS: u32 = 64;
const MAX_SLOTS: u32 = 1 << 16;
const MAX_SLOT_BYTES: u32 = 1 << 24;

/// Geometry of a segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShmGeometry {
    /// Ranks.
    pub ranks: u32,
    /// Payload slots per ring.
    pub slots: u32,
    /// Bytes per payload slot (the largest packet, rounded up to a multiple of 64).
    pub slot_bytes: u32,
    /// Descriptors per ring: packets in flight on the ring, of any size.
    pub descs: u32,
}

impl ShmGeometry {
    /// A geometry for `ranks` ranks and packets of up to `max_packet` bytes, `slots` (at least
    /// 2) payload slots per ring and `max(slots, MIN_DESCS)` descriptors.
    ///
    /// Packets of up to [`INLINE_MAX`] bytes (control packets: 19-28 bytes) travel inline in
    /// a descriptor and take no slot. A cap of 2 MiB per ring (127 slots of 16 KiB, tried for
    /// cache footprint when every packet took a slot) made the reverse ring of a faulting
    /// transfer's NACKs and ERRs fill whenever the sender was descheduled for a few
    /// milliseconds: `live-hol` counted 929 dropped control packets and 1423 timeout
    /// retransmissions, hence [`MIN_DESCS`]. The slot count is the caller's (`unpinned run`:
    /// 512).
    pub fn new(ranks: u32, max_packet: usize, slots: u32) -> ShmGeometry {
        let slot_bytes = (4 + max_packet).div_ceil(LINE) * LINE;
        let slots = slots.max(2);
        ShmGeometry {
            ranks,
            slots,
            slot_bytes: slot_bytes as u32,
            descs: slots.max(MIN_DESCS),
        }
    }

    fn returns_offset(&self) -> usize {
        RING_HDR + self.descs as usize * DESC_BYTES
    }

    fn slots_offset(&self) -> usize {
        self.returns_offset() + (self.slots as usize * 4).div_ceil(LINE) * LINE
    }

    fn ring_bytes(&self) -> usize {
        self.slots_offset() + self.slots as usize * self.slot_bytes as usize
    }

    fn ring_offset(&self, src: u32, dst: u32) -> usize {
        HDR_BYTES + (src as usize * self.ranks as usize + dst as usize) * self.ring_bytes()
    }

    /// Bytes of the whole segment.
    pub fn total_bytes(&self) -> usize {
        HDR_BYTES + (self.ranks as usize * self.ranks as usize) * self.ring_bytes()
    }

    /// Largest packet a slot holds.
    pub fn max_packet(&self) -> usize {
        self.slot_bytes as usize - 4
    }

    /// Whether a geometry read from a segment is one [`ShmGeometry::new`] could have made
    /// (within bounds that keep the layout's arithmetic exact).
    fn plausible(&self) -> bool {
        (1..=MAX_RANKS).contains(&self.ranks)
            && (2..=MAX_SLOTS).contains(&self.slots)
            && (64..=MAX_SLOT_BYTES).contains(&self.slot_bytes)
            && (self.slot_bytes as usize).is_multiple_of(LINE)
            && self.descs == self.slots.max(MIN_DESCS)
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
// release on descriptor tags and tail), so sharing the pointer between threads is sound.
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

    fn u8_at(&self, off: usize) -> &AtomicU8 {
        assert!(off < self.len);
        // SAFETY: in bounds (asserted); the byte lives as long as the mapping. A descriptor's
        // tag byte is only ever accessed atomically.
        unsafe { AtomicU8::from_ptr(self.base.add(off)) }
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

    /// The process id of rank `r` (0 until it opened the segment).
    fn pid(&self, r: u32) -> &AtomicU32 {
        self.u32_at(HDR_DOORBELLS + r as usize * LINE + 8)
    }

    /// Rank `r` closed its transport (left the job).
    fn left(&self, r: u32) -> &AtomicU32 {
        self.u32_at(HDR_DOORBELLS + r as usize * LINE + 12)
    }
}

/// Whether process `pid` has ended (exited or killed, reaped or not). `fd` caches its pidfd.
fn process_ended(pid: u32, fd: &mut Option<std::os::fd::OwnedFd>) -> bool {
    use std::os::fd::FromRawFd;
    if fd.is_none() {
        // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
        let r = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
        if r < 0 {
            let e = std::io::Error::last_os_error().raw_os_error();
            if e == Some(libc::ESRCH) {
                return true;
            }
            // No pidfds (old kernel, seccomp): a signal 0 tells whether the pid exists
            // (a zombie still does, until the launcher reaps it).
            // SAFETY: kill with signal 0 only checks for existence and permission.
            let k = unsafe { libc::kill(pid as libc::pid_t, 0) };
            return k != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        }
        // SAFETY: `r` is a new descriptor we own.
        *fd = Some(unsafe { std::os::fd::OwnedFd::from_raw_fd(r as i32) });
    }
    let Some(f) = fd else { return false };
    let mut p = libc::pollfd {
        fd: f.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd, no wait; a pidfd polls readable once the process ended.
    let n = unsafe { libc::poll(&mut p, 1, 0) };
    n > 0 && p.revents & libc::POLLIN != 0
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
    if !geometry.plausible() {
        return Err(ShmError::Invalid {
            path: path.display().to_string(),
            why: format!("impossible geometry {geometry:?}"),
        });
    }
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
    m.u32_at(24).store(geometry.descs, Ordering::Relaxed);
    m.u64_at(0).store(MAGIC, Ordering::Release);
    Ok(())
}

/// The producer's side of one ring (private to the sending thread).
struct Producer {
    /// The consumer's `tail` as last loaded (acquired). Descriptors below it are free, so
    /// `tail` is loaded again only when the ring looks full: the line of `tail` is written by
    /// the consumer at every packet, and loading it at every send cost a transfer of that line
    /// between the cores per packet.
    tail: u64,
    /// Read position in the return ring (never published: the ring cannot overflow).
    returned: u64,
    /// Free payload slots; the top (last) is the most recently given back, the warmest.
    free: Vec<u32>,
}

/// One rank's end of a shared-memory segment.
pub struct ShmTransport {
    map: Arc<Mapping>,
    geo: ShmGeometry,
    rank: u32,
    /// Next source to poll (round-robin fairness).
    next_src: u32,
    /// Per destination: our producer side of the ring towards it.
    out: Vec<Producer>,
    /// Per source: slots given back so far (our own `returned`, kept here to avoid reading
    /// the shared word back).
    returned: Vec<u64>,
    /// Per rank: a pidfd of its process, once looked at ([`Transport::gone`]).
    pidfds: Vec<Option<std::os::fd::OwnedFd>>,
}

impl ShmTransport {
    /// Open the segment at `path` as rank `rank`.
    pub fn open(path: &Path, rank: u32) -> Result<ShmTransport, ShmError> {
        let bad = |why: String| ShmError::Invalid {
            path: path.display().to_string(),
            why,
        };
        let hdr = Mapping::map(path, PAGE)?;
        if hdr.u64_at(0).load(Ordering::Acquire) != MAGIC {
            return Err(bad("bad magic".into()));
        }
        let version = hdr.u32_at(8).load(Ordering::Relaxed);
        if version != VERSION {
            return Err(bad(format!(
                "layout version {version}, this build reads {VERSION}"
            )));
        }
        let geo = ShmGeometry {
            ranks: hdr.u32_at(12).load(Ordering::Relaxed),
            slots: hdr.u32_at(16).load(Ordering::Relaxed),
            slot_bytes: hdr.u32_at(20).load(Ordering::Relaxed),
            descs: hdr.u32_at(24).load(Ordering::Relaxed),
        };
        drop(hdr);
        if !geo.plausible() {
            return Err(bad(format!("impossible geometry {geo:?}")));
        }
        if rank >= geo.ranks {
            return Err(ShmError::BadRank {
                rank,
                ranks: geo.ranks,
            });
        }
        let map = Arc::new(Mapping::map(path, geo.total_bytes())?);
        // Start from the indices as they are (a segment is normally fresh: all zero). The
        // consumer gives a slot back before it frees the descriptor that named it, so on a
        // drained ring (tail == head, tail loaded before `returned`) every slot is back and
        // no return is to come: all are free. On a ring with packets in flight only the
        // slots given back from now on are ours (the others are lost to this producer; its
        // small packets still go inline).
        let n = geo.ranks;
        let out = (0..n)
            .map(|d| {
                let off = geo.ring_offset(rank, d);
                let head = map.u64_at(off).load(Ordering::Acquire);
                let tail = map.u64_at(off + LINE).load(Ordering::Acquire);
                let returned = map.u64_at(off + 2 * LINE).load(Ordering::Acquire);
                let free = if head == tail {
                    (0..geo.slots).rev().collect()
                } else {
                    Vec::new()
                };
                Producer {
                    tail,
                    returned,
                    free,
                }
            })
            .collect();
        let returned = (0..n)
            .map(|s| {
                map.u64_at(geo.ring_offset(s, rank) + 2 * LINE)
                    .load(Ordering::Acquire)
            })
            .collect();
        map.pid(rank).store(std::process::id(), Ordering::Release);
        map.left(rank).store(0, Ordering::Release);
        Ok(ShmTransport {
            map,
            geo,
            rank,
            next_src: 0,
            out,
            returned,
            pidfds: (0..n).map(|_| None).collect(),
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

    /// Whether the ring towards `dst` has a free descriptor for `head`, loading the
    /// consumer's `tail` only when the cached one says full.
    #[inline]
    fn has_room(&mut self, off: usize, dst: NodeId, head: u64) -> bool {
        let descs = self.geo.descs as u64;
        let p = &mut self.out[dst as usize];
        if head.wrapping_sub(p.tail) < descs {
            return true;
        }
        p.tail = self.map.u64_at(off + LINE).load(Ordering::Acquire);
        head.wrapping_sub(p.tail) < descs
    }

    /// Move the slots the consumer gave back on the ring at `off` (towards `dst`) onto the
    /// free stack, in the order they were given back (the last one ends on top), and return
    /// the top without taking it.
    fn warmest_slot(&mut self, off: usize, dst: NodeId) -> Option<u32> {
        let slots = self.geo.slots;
        let rets = off + self.geo.returns_offset();
        let returned = self.map.u64_at(off + 2 * LINE).load(Ordering::Acquire);
        let p = &mut self.out[dst as usize];
        // More than `slots` outstanding returns means a consumer that broke the protocol:
        // read only the last `slots` of them.
        if returned.wrapping_sub(p.returned) > slots as u64 {
            p.returned = returned.wrapping_sub(slots as u64);
        }
        while p.returned != returned {
            let at = rets + (p.returned % slots as u64) as usize * 4;
            let s = self.map.u32_at(at).load(Ordering::Relaxed);
            // A slot index out of range, or one more than the pool holds, comes only from a
            // broken consumer: ignored (our own slots are what we lose).
            if s < slots && p.free.len() < slots as usize {
                p.free.push(s);
            }
            p.returned += 1;
        }
        p.free.last().copied()
    }

    /// Byte offset of payload slot `s` of the ring at `off`.
    #[inline]
    fn slot_at(&self, off: usize, s: u32) -> usize {
        off + self.geo.slots_offset() + s as usize * self.geo.slot_bytes as usize
    }

    /// Byte offset of the descriptor for index `i` of the ring at `off`.
    #[inline]
    fn desc_at(&self, off: usize, i: u64) -> usize {
        off + RING_HDR + (i % self.geo.descs as u64) as usize * DESC_BYTES
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

impl Drop for ShmTransport {
    fn drop(&mut self) {
        self.leave();
    }
}

impl Transport for ShmTransport {
    fn rank(&self) -> NodeId {
        self.rank
    }
    fn gone(&mut self, peer: NodeId) -> Option<&'static str> {
        if peer >= self.geo.ranks || peer == self.rank {
            return None;
        }
        if self.map.left(peer).load(Ordering::Acquire) != 0 {
            return Some("left the job (closed its runtime)");
        }
        let pid = self.map.pid(peer).load(Ordering::Acquire);
        // Ranks of one process (tests) share the pid: only `left` tells then.
        if pid == 0 || pid == std::process::id() {
            return None;
        }
        process_ended(pid, &mut self.pidfds[peer as usize]).then_some("exited or was killed")
    }
    fn leave(&mut self) {
        self.map.left(self.rank).store(1, Ordering::Release);
    }
    fn size(&self) -> u32 {
        self.geo.ranks
    }
    fn max_packet(&self) -> usize {
        self.geo.max_packet()
    }

    /// Shared memory does not corrupt bytes in flight: no software checksum (the ring protocol
    /// hands each descriptor and slot over whole, see the module doc).
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
        // Without a free slot a large packet has nowhere to go in place; `send` still
        // carries small ones inline.
        let Some(s) = self.warmest_slot(off, hint) else {
            return InPlace::Unavailable;
        };
        let head_w = self.map.u64_at(off);
        let max = self.geo.max_packet();
        let slot = self.slot_at(off, s);
        // SAFETY: the slot is in bounds (s < slots) and ours: it is on the free stack, so the
        // consumer gave it back (its release store of `returned`, acquired in
        // `warmest_slot`) and no descriptor of ours names it until the release store of
        // its tag below. Only this thread (it holds `&mut self`) writes the producer side of
        // the ring.
        let buf = unsafe { std::slice::from_raw_parts_mut(self.map.base.add(slot), max) };
        let Some((dst, len)) = fill(buf) else {
            return InPlace::Empty;
        };
        let len = len.min(max);
        if dst != hint {
            // Not published: the slot stays free and is simply reused.
            let n = len.min(spill.len());
            spill[..n].copy_from_slice(&buf[..n]);
            return InPlace::Misdirected(dst, n);
        }
        let d = self.desc_at(off, head);
        // SAFETY: the descriptor is in bounds and ours (has_room: the consumer freed it) until
        // the release store of its tag; 4-aligned words. An inline copy reads the slot we own.
        let tag = unsafe {
            let p = self.map.base.add(d);
            if len <= INLINE_MAX {
                write_inline(p, buf.as_ptr(), len)
            } else {
                (p.add(4) as *mut u32).write(len as u32);
                (p.add(8) as *mut u32).write(s);
                self.out[hint as usize].free.pop();
                TAG_SLOT
            }
        };
        self.map.u8_at(d).store(tag, Ordering::Release);
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
            let d = self.desc_at(off, tail);
            let tag_w = self.map.u8_at(d);
            let tag = tag_w.load(Ordering::Acquire);
            if tag == 0 {
                continue;
            }
            // SAFETY: the producer published this descriptor and the slot it names (the
            // acquire load of its tag above) and, keeping to the ring protocol, writes
            // neither before our release stores below (of `returned` for the slot, of tail for
            // the descriptor), so the bytes are stable while `f` reads them in place. A length
            // or slot out of range (only a corrupt segment has one) is dropped without reading.
            // A producer that broke the protocol could change bytes under `f`: the engine
            // parses what it reads, so the worst is a packet with garbled payload, as a peer
            // could send anyway.
            let (handled, slot) = unsafe {
                let p = self.map.base.add(d);
                let len = (p.add(4) as *const u32).read() as usize;
                let s = (p.add(8) as *const u32).read();
                if tag & TAG_INLINE != 0 {
                    f(
                        src,
                        std::slice::from_raw_parts(p.add(1), (tag & !TAG_INLINE) as usize),
                    );
                    (true, None)
                } else if tag == TAG_LONG {
                    let len = (p.add(2) as *const u16).read() as usize;
                    if len <= INLINE_MAX {
                        f(src, std::slice::from_raw_parts(p.add(LONG_AT), len));
                        (true, None)
                    } else {
                        (false, None)
                    }
                } else if tag != TAG_SLOT {
                    (false, None)
                } else if s < self.geo.slots {
                    if len <= self.geo.max_packet() {
                        let q = self.map.base.add(self.slot_at(off, s));
                        f(src, std::slice::from_raw_parts(q, len));
                        (true, Some(s))
                    } else {
                        (false, Some(s))
                    }
                } else {
                    (false, None)
                }
            };
            if let Some(s) = slot {
                let r = self.returned[src as usize];
                let at = off + self.geo.returns_offset() + (r % self.geo.slots as u64) as usize * 4;
                self.map.u32_at(at).store(s, Ordering::Relaxed);
                self.returned[src as usize] = r + 1;
                self.map
                    .u64_at(off + 2 * LINE)
                    .store(r + 1, Ordering::Release);
            }
            // Free again: the descriptor's next use is `descs` packets on, published anew.
            tag_w.store(0, Ordering::Relaxed);
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
        let slot = if bytes.len() <= INLINE_MAX {
            None
        } else {
            match self.warmest_slot(off, dst) {
                Some(s) => Some(s),
                None => return Err(SendError::Full),
            }
        };
        let d = self.desc_at(off, head);
        // SAFETY: the descriptor is in bounds and ours (has_room: the consumer freed it, a
        // tail acquired now or earlier is past it) and so is the slot (on the free stack: the
        // consumer gave it back); the consumer reads neither before our release store of the
        // tag below. Words are 4-aligned; the copy fits (len <= INLINE_MAX inline,
        // <= max_packet in a slot).
        let tag = unsafe {
            let p = self.map.base.add(d);
            match slot {
                None => write_inline(p, bytes.as_ptr(), bytes.len()),
                Some(s) => {
                    (p.add(4) as *mut u32).write(bytes.len() as u32);
                    (p.add(8) as *mut u32).write(s);
                    let q = self.map.base.add(self.slot_at(off, s));
                    std::ptr::copy_nonoverlapping(bytes.as_ptr(), q, bytes.len());
                    TAG_SLOT
                }
            }
        };
        if slot.is_some() {
            self.out[dst as usize].free.pop();
        }
        self.map.u8_at(d).store(tag, Ordering::Release);
        self.map.u64_at(off).store(head + 1, Ordering::Release);
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

    fn segment(name: &str, geo: ShmGeometry) -> std::path::PathBuf {
        let path =
            std::env::temp_dir().join(format!("unpinned-shm-test-{name}-{}", std::process::id()));
        create_segment(&path, geo).unwrap();
        path
    }

    #[test]
    fn ring_round_trip_and_full() {
        let _map_lock = crate::MAP_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let path = segment("rt", ShmGeometry::new(3, 1000, 4));
        let mut a = ShmTransport::open(&path, 0).unwrap();
        let mut b = ShmTransport::open(&path, 2).unwrap();
        let mut buf = [0u8; 1100];
        assert_eq!(b.recv(&mut buf), None);
        // Large packets take payload slots: four fit, whatever the descriptors.
        for i in 0..4u8 {
            a.send(2, &[i; 600]).unwrap();
        }
        assert_eq!(a.send(2, &[9; 600]), Err(SendError::Full));
        let big = vec![0; a.geometry().max_packet() + 1];
        assert_eq!(a.send(2, &big), Err(SendError::Unreachable));
        // Small ones still go inline while the slots are taken.
        a.send(2, &[7; 10]).unwrap();
        for i in 0..4u8 {
            assert_eq!(b.recv(&mut buf), Some((0, 600)));
            assert_eq!(buf[..600], [i; 600]);
        }
        assert_eq!(b.recv(&mut buf), Some((0, 10)));
        assert_eq!(buf[..10], [7; 10]);
        assert_eq!(b.recv(&mut buf), None);
        a.send(2, &[7; 3]).unwrap();
        b.wait(Duration::from_millis(100));
        assert_eq!(b.recv(&mut buf), Some((0, 3)));
        // In place: written into the slot, read from the slot (or inline when small).
        let mut spill = [0u8; 1100];
        for len in [5usize, 180] {
            let sent = a.send_in_place(2, &mut spill, &mut |s: &mut [u8]| {
                s[..len].fill(len as u8);
                Some((2, len))
            });
            assert_eq!(sent, InPlace::Sent(2));
        }
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
        assert!(b.recv_with(&mut buf, &mut |src, p| got.push((src, p.to_vec()))));
        assert!(!b.recv_with(&mut buf, &mut |src, p| got.push((src, p.to_vec()))));
        assert_eq!(got, vec![(0, vec![5; 5]), (0, vec![180; 180])]);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn descriptors_fill_with_small_packets() {
        let _map_lock = crate::MAP_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let geo = ShmGeometry::new(2, 200, 4);
        let path = segment("descs", geo);
        let mut a = ShmTransport::open(&path, 0).unwrap();
        let mut b = ShmTransport::open(&path, 1).unwrap();
        for i in 0..geo.descs {
            a.send(1, &i.to_le_bytes()).unwrap();
        }
        assert_eq!(a.send(1, &[1; 8]), Err(SendError::Full));
        let mut buf = [0u8; 300];
        for i in 0..geo.descs {
            assert_eq!(b.recv(&mut buf), Some((0, 4)));
            assert_eq!(buf[..4], i.to_le_bytes());
        }
        assert_eq!(b.recv(&mut buf), None);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn a_given_back_slot_is_reused_first() {
        let _map_lock = crate::MAP_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let path = segment("lifo", ShmGeometry::new(2, 1000, 64));
        let mut a = ShmTransport::open(&path, 0).unwrap();
        let mut b = ShmTransport::open(&path, 1).unwrap();
        let mut buf = [0u8; 1100];
        let mut used = std::collections::BTreeSet::new();
        // Ping-pong of large packets: one slot serves them all.
        for i in 0..500u32 {
            let top = *a.out[1].free.last().unwrap();
            used.insert(top);
            a.send(1, &[i as u8; 900]).unwrap();
            assert_eq!(b.recv(&mut buf), Some((0, 900)));
            assert!(buf[..900].iter().all(|&x| x == i as u8));
        }
        assert!(used.len() <= 2, "slots used: {used:?}");
        // A burst takes distinct slots; given back, the last one returned is taken first.
        for i in 0..10u8 {
            a.send(1, &[i; 600]).unwrap();
        }
        for _ in 0..10 {
            assert_eq!(b.recv(&mut buf), Some((0, 600)));
        }
        let last = {
            let off = a.geo.ring_offset(0, 1);
            let r = a.map.u64_at(off + 2 * LINE).load(Ordering::Acquire);
            a.map
                .u32_at(off + a.geo.returns_offset() + ((r - 1) % 64) as usize * 4)
                .load(Ordering::Relaxed)
        };
        let off = a.geo.ring_offset(0, 1);
        assert_eq!(a.warmest_slot(off, 1), Some(last));
        assert_eq!(a.out[1].free.len(), 64);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn a_reopened_producer_gets_its_slots_back() {
        let _map_lock = crate::MAP_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let path = segment("reopen", ShmGeometry::new(2, 1000, 4));
        let mut a = ShmTransport::open(&path, 0).unwrap();
        let mut b = ShmTransport::open(&path, 1).unwrap();
        let mut buf = [0u8; 1100];
        for i in 0..6u8 {
            a.send(1, &[i; 600]).unwrap();
            assert_eq!(b.recv(&mut buf), Some((0, 600)));
        }
        // Drained: a new producer has every slot.
        drop(a);
        let mut a = ShmTransport::open(&path, 0).unwrap();
        for i in 0..4u8 {
            a.send(1, &[i; 600]).unwrap();
        }
        assert_eq!(a.send(1, &[9; 600]), Err(SendError::Full));
        // In flight: a new producer gets slots as the consumer gives them back.
        drop(a);
        let mut a = ShmTransport::open(&path, 0).unwrap();
        assert_eq!(a.send(1, &[9; 600]), Err(SendError::Full));
        a.send(1, &[8; 8]).unwrap();
        for i in 0..4u8 {
            assert_eq!(b.recv(&mut buf), Some((0, 600)));
            assert_eq!(buf[..600], [i; 600]);
        }
        assert_eq!(b.recv(&mut buf), Some((0, 8)));
        for i in 0..8u8 {
            a.send(1, &[i; 700]).unwrap();
            assert_eq!(b.recv(&mut buf), Some((0, 700)));
            assert_eq!(buf[..700], [i; 700]);
        }
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn mixed_sizes_wrap_in_order() {
        let _map_lock = crate::MAP_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let path = segment("mixed", ShmGeometry::new(2, 3000, 8));
        let mut a = ShmTransport::open(&path, 0).unwrap();
        let mut b = ShmTransport::open(&path, 1).unwrap();
        let mut buf = vec![0u8; 4000];
        let mut rng = 0x1234_5678_u64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let (mut sent, mut recvd) = (0u64, 0u64);
        let size = |i: u64| [1usize, 19, 63, 120, 121, 500, 2996][(i * 7 % 11 % 7) as usize];
        while recvd < 5000 {
            // Send a random burst (until full), receive a random number.
            for _ in 0..next() % 40 {
                let len = size(sent);
                let p: Vec<u8> = (0..len).map(|k| (sent as usize + k) as u8).collect();
                match a.send(1, &p) {
                    Ok(()) => sent += 1,
                    Err(SendError::Full) => break,
                    Err(e) => panic!("{e}"),
                }
            }
            for _ in 0..next() % 40 {
                let Some((src, len)) = b.recv(&mut buf) else {
                    break;
                };
                assert_eq!((src, len), (0, size(recvd)));
                assert!(buf[..len]
                    .iter()
                    .enumerate()
                    .all(|(k, &x)| x == (recvd as usize + k) as u8));
                recvd += 1;
            }
        }
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn corrupt_descriptors_are_dropped_and_bad_segments_refused() {
        let _map_lock = crate::MAP_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let path = segment("corrupt", ShmGeometry::new(2, 200, 4));
        let mut a = ShmTransport::open(&path, 0).unwrap();
        let mut b = ShmTransport::open(&path, 1).unwrap();
        let off = a.geo.ring_offset(0, 1);
        // (tag, inline length, length, slot) that no producer keeping to the protocol writes.
        for (tag, long, len, slot) in [
            (0x04u8, 0u16, 8u32, 0u32),
            (0x7f, 0, 8, 0),
            (TAG_LONG, INLINE_MAX as u16 + 1, 8, 0),
            (TAG_SLOT, 0, 100, 4),
            (TAG_SLOT, 0, 100, 1000),
            (TAG_SLOT, 0, 300, 0),
        ] {
            a.send(1, &[1; 8]).unwrap();
            let d = a.desc_at(off, a.map.u64_at(off).load(Ordering::Relaxed) - 1);
            a.map.u8_at(d + 2).store(long as u8, Ordering::Relaxed);
            a.map
                .u8_at(d + 3)
                .store((long >> 8) as u8, Ordering::Relaxed);
            a.map.u32_at(d + 4).store(len, Ordering::Relaxed);
            a.map.u32_at(d + 8).store(slot, Ordering::Relaxed);
            a.map.u8_at(d).store(tag, Ordering::Relaxed);
        }
        a.send(1, &[2; 8]).unwrap();
        let mut buf = [0u8; 300];
        // A dropped packet ends a receive walk (as on any transport, the next one goes on).
        let got = (0..10).find_map(|_| b.recv(&mut buf));
        assert_eq!(got, Some((0, 8)));
        assert_eq!(buf[..8], [2; 8]);
        assert_eq!(b.recv(&mut buf), None);
        // Only the in-range slot 0 came back (a slot it held twice is ignored).
        let _ = a.warmest_slot(off, 1);
        assert_eq!(a.out[1].free.len(), 4);
        // Another layout version is refused with a clear error.
        a.map.u32_at(8).store(1, Ordering::Relaxed);
        let e = ShmTransport::open(&path, 0).err().expect("refused");
        assert!(e.to_string().contains("layout version 1"), "{e}");
        a.map.u32_at(8).store(VERSION, Ordering::Relaxed);
        a.map.u32_at(16).store(0, Ordering::Relaxed);
        let e = ShmTransport::open(&path, 0).err().expect("refused");
        assert!(e.to_string().contains("impossible geometry"), "{e}");
        assert!(create_segment(&path, ShmGeometry { descs: 3, ..a.geo }).is_err());
        std::fs::remove_file(&path).unwrap();
    }
}
