//! An in-memory latency trace of the live path, off unless asked for: timestamps of the
//! points one transfer passes (post, turn start, packet handled, packet in the ring,
//! completion queued, wait returned), so that where the microseconds of a write go can be
//! read from the real runtime rather than guessed.
//!
//! [`enable`] (or a runtime started with the knob `trace.enabled = true`) turns it on for the
//! whole process; [`take`] returns the records so far in time order. Off, a [`mark`] costs one
//! relaxed atomic load. On, one `Instant::now()` (a clock read) and three
//! relaxed stores into a fixed buffer of [`CAPACITY`] records; records past it are dropped
//! (counted by [`take`]'s caller from the returned length), never reallocated on the hot path.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::Instant as StdInstant;

/// The "rank" the page-in threads record under (they do not know their rank).
pub const PAGE_IN_THREAD: u32 = 0xffff;

/// Records kept at most (later ones are dropped).
pub const CAPACITY: usize = 1 << 16;

/// A point of the live path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Point {
    /// `Runtime::write` / `read` entered.
    Post = 0,
    /// The poster holds the core's lock.
    PostLocked,
    /// The engine accepted the work request.
    PostQueued,
    /// The posting thread's inline turn ended.
    PostTurnEnd,
    /// A turn began (any thread).
    TurnStart,
    /// A received packet is about to be handed to the engine.
    RxStart,
    /// The engine handled it (residency verdict, memory write, responses queued).
    RxEnd,
    /// A packet was written into the transport (arg: its length).
    TxSent,
    /// A completion was pushed onto the completion queue.
    Completion,
    /// A destination fault record left the engine.
    Fault,
    /// An inline page-in began.
    PageInStart,
    /// An inline page-in ended (its ERR is queued).
    PageInEnd,
    /// The page-in thread received a fault record.
    HandlerStart,
    /// The page-in thread's output was sent to the engine.
    HandlerEnd,
    /// `Runtime::wait` returned the completion.
    WaitReturn,
    /// The progress thread goes to sleep in the transport (arg: for at most this many us).
    Sleep,
    /// It woke up.
    Woken,
    /// It sleeps because a caller drives the engine.
    DrivenSleep,
    /// A waiting caller stopped driving and sleeps on the completion queue.
    WaitSleep,
}

impl Point {
    const ALL: [Point; 19] = [
        Point::Post,
        Point::PostLocked,
        Point::PostQueued,
        Point::PostTurnEnd,
        Point::TurnStart,
        Point::RxStart,
        Point::RxEnd,
        Point::TxSent,
        Point::Completion,
        Point::Fault,
        Point::PageInStart,
        Point::PageInEnd,
        Point::HandlerStart,
        Point::HandlerEnd,
        Point::WaitReturn,
        Point::Sleep,
        Point::Woken,
        Point::DrivenSleep,
        Point::WaitSleep,
    ];

    fn from_u8(v: u8) -> Option<Point> {
        Point::ALL.get(v as usize).copied()
    }
}

/// One trace record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    /// Nanoseconds since the trace's origin (the first use in this process).
    pub at_ns: u64,
    /// The rank whose code recorded it.
    pub rank: u32,
    /// The point passed.
    pub point: Point,
    /// A detail: packet length, bytes, or 0.
    pub arg: u32,
}

static ENABLED: AtomicBool = AtomicBool::new(false);
static NEXT: AtomicUsize = AtomicUsize::new(0);
static ORIGIN: OnceLock<StdInstant> = OnceLock::new();

struct Buf {
    at_ns: Vec<AtomicU64>,
    tag: Vec<AtomicU64>,
}

static BUF: OnceLock<Buf> = OnceLock::new();

fn buf() -> &'static Buf {
    BUF.get_or_init(|| Buf {
        at_ns: (0..CAPACITY).map(|_| AtomicU64::new(0)).collect(),
        tag: (0..CAPACITY).map(|_| AtomicU64::new(0)).collect(),
    })
}

/// Start recording (process-wide); clears what was recorded.
pub fn enable() {
    ORIGIN.get_or_init(StdInstant::now);
    buf();
    NEXT.store(0, Ordering::SeqCst);
    ENABLED.store(true, Ordering::SeqCst);
}

/// Stop recording.
pub fn disable() {
    ENABLED.store(false, Ordering::SeqCst);
}

/// Whether recording is on.
#[inline]
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Record that `rank` passed `point` now.
#[inline]
pub fn mark(rank: u32, point: Point, arg: u32) {
    if enabled() {
        mark_slow(rank, point, arg);
    }
}

#[cold]
fn mark_slow(rank: u32, point: Point, arg: u32) {
    let Some(origin) = ORIGIN.get() else { return };
    let i = NEXT.fetch_add(1, Ordering::Relaxed);
    if i >= CAPACITY {
        return;
    }
    let b = buf();
    let at = origin.elapsed().as_nanos() as u64;
    // Tag 0 means "not written yet": the point is stored plus one.
    let tag = ((rank as u64) << 40) | ((arg as u64) << 8) | (point as u64 + 1);
    b.at_ns[i].store(at, Ordering::Relaxed);
    b.tag[i].store(tag, Ordering::Release);
}

/// The records so far, in time order (recording goes on; call [`disable`] first for a
/// consistent cut).
pub fn take() -> Vec<Record> {
    let n = NEXT.load(Ordering::SeqCst).min(CAPACITY);
    let Some(b) = BUF.get() else {
        return Vec::new();
    };
    let mut v: Vec<Record> = (0..n)
        .filter_map(|i| {
            let tag = b.tag[i].load(Ordering::Acquire);
            let point = Point::from_u8(((tag & 0xff) as u8).checked_sub(1)?)?;
            Some(Record {
                at_ns: b.at_ns[i].load(Ordering::Relaxed),
                rank: (tag >> 40) as u32,
                point,
                arg: ((tag >> 8) & 0xffff_ffff) as u32,
            })
        })
        .collect();
    v.sort_by_key(|r| r.at_ns);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_in_order_and_only_when_enabled() {
        // One test touches the global switch, so no other test races with it.
        disable();
        mark(0, Point::Post, 0);
        enable();
        mark(3, Point::Post, 7);
        mark(1, Point::WaitReturn, 0);
        disable();
        mark(2, Point::Completion, 0);
        let v = take();
        assert_eq!(v.len(), 2);
        assert_eq!((v[0].rank, v[0].point, v[0].arg), (3, Point::Post, 7));
        assert_eq!((v[1].rank, v[1].point), (1, Point::WaitReturn));
        assert!(v[0].at_ns <= v[1].at_ns);
    }
}
