//! The event queue: events in (time, insertion sequence) order, the total order that makes
//! runs deterministic.
//!
//! An entry is the event time and one word holding the insertion sequence number above the
//! event's packed payload ([`Packed`], at most [`PAYLOAD_BITS`] bits); compared as one `u128`,
//! that is exactly (time, sequence) order, since sequence numbers are unique. Entries live in
//! 4-ary heaps of 16-byte entries ([`crate::heap`]).
//!
//! A pop costs a walk from the root to a leaf, a level per four-fold of the heap's size, so
//! the queue keeps its main heap small without changing the order:
//!
//! - **Lanes.** Events that are queued in their own (time, sequence) order per some key (a
//!   node's packet arrivals: its input port serializes them, so each is later than the one
//!   before) can be pushed into a lane ([`EventQueue::push_lane`]): a FIFO of which only the
//!   first entry stands in the heap, as a reference to the lane. Popping it puts the lane's
//!   next entry in its place (one sift instead of a pop and a push). An entry that would not
//!   be last in its lane goes into the heap like any other.
//! - **Far events.** Events that are usually far ahead (timeouts) can be pushed into a second
//!   heap ([`EventQueue::push_far`]); a pop takes the smaller of the two heaps' first entries.
//!   The main heap then holds the near events only (at the standard load of `bench sim` a
//!   pop sifts through 1.9 levels on average instead of 2.9).
//!
//! Every entry keeps its time and sequence number wherever it waits, and a pop returns the
//! smallest of all, so the pop order is exactly that of one heap of everything.
//!
//! The sequence field has [`SEQ_BITS`] bits. When it runs out, the queued entries are
//! renumbered 0, 1, 2, ... in their (time, sequence) order and numbering continues after
//! them: every queued entry keeps its place relative to the others and to every later one, so
//! the order is the same as with unbounded numbers.
//!
//! Alternatives that did not pay off (their measurements: docs/performance.md): a
//! radix heap (entries are redistributed more often than a heap sifts them at these queue
//! lengths), a front slot for an event earlier than the whole heap (it almost never is: every
//! event is scheduled at least one NI or link delay ahead), a calendar queue of 32 ns
//! buckets in front of the heap (as many instructions per event), a branch-free choice of the
//! smallest child (slower), and leaving the popped root vacant for the next push to fill
//! (no fewer instructions: the pushed event rarely belongs near the root).

use std::collections::VecDeque;

use unpinned_core::time::Instant;

use crate::heap::{Entry, Heap};

/// Bits of an entry's second word that hold the payload.
pub const PAYLOAD_BITS: u32 = 35;
/// Bits of an entry's second word that hold the sequence number (above the payload and the
/// lane flag).
pub const SEQ_BITS: u32 = 64 - PAYLOAD_BITS - 1;
/// The payload bits of an entry's second word.
const PAYLOAD_MASK: u64 = (1 << PAYLOAD_BITS) - 1;
/// Set in a heap entry that stands for the first entry of a lane: its payload bits are the
/// lane's number, the payload is in the lane.
const LANE_FLAG: u64 = 1 << PAYLOAD_BITS;
/// The sequence bits of an entry's second word.
const SEQ_SHIFT: u32 = PAYLOAD_BITS + 1;

/// An event payload that packs into [`PAYLOAD_BITS`] bits.
pub trait Packed: Copy {
    /// The payload as an integer below `1 << PAYLOAD_BITS`.
    fn pack(self) -> u64;
    /// The inverse of [`Packed::pack`].
    fn unpack(bits: u64) -> Self;
}

/// Events ordered by (time, insertion order).
pub struct EventQueue<T> {
    /// Near events and the lanes' stand-ins.
    near: Heap,
    /// Far events.
    far: Heap,
    /// Lanes: entries in (time, sequence) order; the first of a non-empty lane stands in
    /// `near`.
    lanes: Vec<VecDeque<Entry>>,
    /// Entries in the lanes.
    in_lanes: usize,
    /// Lanes with entries (each has a stand-in in `near`).
    active_lanes: usize,
    next_seq: u64,
    /// Renumber when `next_seq` reaches this (`1 << SEQ_BITS`; lower in tests).
    seq_limit: u64,
    _payload: std::marker::PhantomData<T>,
}

impl<T: Packed> Default for EventQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Packed> EventQueue<T> {
    /// An empty queue.
    pub fn new() -> EventQueue<T> {
        EventQueue {
            near: Heap::default(),
            far: Heap::default(),
            lanes: Vec::new(),
            in_lanes: 0,
            active_lanes: 0,
            next_seq: 0,
            seq_limit: 1 << SEQ_BITS,
            _payload: std::marker::PhantomData,
        }
    }

    /// Events queued.
    #[inline]
    pub fn len(&self) -> usize {
        // A non-empty lane has one stand-in in the heap and all of its entries in the lane.
        self.near.len() + self.far.len() - self.active_lanes + self.in_lanes
    }

    /// True when nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.near.len() + self.far.len() == 0
    }

    /// The entry of `ev` at `at`, with the next sequence number.
    #[inline(always)]
    fn entry(&mut self, at: Instant, ev: T) -> Entry {
        if self.next_seq == self.seq_limit {
            self.renumber();
        }
        let payload = ev.pack();
        debug_assert!(
            payload >> PAYLOAD_BITS == 0,
            "payload wider than PAYLOAD_BITS"
        );
        let e = Entry {
            at: at.0,
            lo: (self.next_seq << SEQ_SHIFT) | payload,
        };
        self.next_seq += 1;
        e
    }

    /// Queue `ev` at time `at`, after every event queued before it at the same time.
    #[inline]
    pub fn push(&mut self, at: Instant, ev: T) {
        let e = self.entry(at, ev);
        self.near.push(e);
    }

    /// [`EventQueue::push`] for an event that is usually far ahead of the others (a timeout):
    /// the same order, kept out of the heap of near events.
    #[inline]
    pub fn push_far(&mut self, at: Instant, ev: T) {
        let e = self.entry(at, ev);
        self.far.push(e);
    }

    /// [`EventQueue::push`] into lane `lane`: the same order, cheaper when the events of a
    /// lane are pushed in their time order (each at or after the lane's last one). One that is
    /// not goes into the heap like any other event.
    #[inline]
    pub fn push_lane(&mut self, lane: u32, at: Instant, ev: T) {
        let e = self.entry(at, ev);
        let l = lane as usize;
        if l >= self.lanes.len() {
            self.lanes.resize_with(l + 1, VecDeque::new);
        }
        let fifo = &mut self.lanes[l];
        match fifo.back() {
            Some(last) if e.key() < last.key() => self.near.push(e),
            Some(_) => {
                fifo.push_back(e);
                self.in_lanes += 1;
            }
            None => {
                fifo.push_back(e);
                self.in_lanes += 1;
                self.active_lanes += 1;
                self.near.push(Entry {
                    at: e.at,
                    lo: (e.lo & !PAYLOAD_MASK) | LANE_FLAG | lane as u64,
                });
            }
        }
    }

    /// Time of the earliest event.
    #[inline]
    pub fn peek_at(&self) -> Option<Instant> {
        match (self.near.top(), self.far.top()) {
            (Some(n), Some(f)) => Some(Instant(n.at.min(f.at))),
            (Some(e), None) | (None, Some(e)) => Some(Instant(e.at)),
            (None, None) => None,
        }
    }

    /// Remove the earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<(Instant, T)> {
        self.pop_not_after(Instant(u64::MAX))
    }

    /// Remove the earliest event if it is not later than `limit` (a run loop's peek and pop
    /// in one).
    #[inline]
    pub fn pop_not_after(&mut self, limit: Instant) -> Option<(Instant, T)> {
        let near = match (self.near.top(), self.far.top()) {
            (Some(n), Some(f)) if f.key() < n.key() => None,
            (Some(n), _) => Some(n),
            (None, Some(_)) => None,
            (None, None) => return None,
        };
        let Some(top) = near else {
            let f = self.far.top().expect("checked");
            if f.at > limit.0 {
                return None;
            }
            self.far.remove_top();
            return Some((Instant(f.at), T::unpack(f.lo & PAYLOAD_MASK)));
        };
        if top.at > limit.0 {
            return None;
        }
        if top.lo & LANE_FLAG == 0 {
            self.near.remove_top();
            return Some((Instant(top.at), T::unpack(top.lo & PAYLOAD_MASK)));
        }
        // The first entry of a lane: its next one (if any) takes its place in the heap.
        let lane = top.lo & PAYLOAD_MASK;
        let fifo = &mut self.lanes[lane as usize];
        let first = fifo.pop_front().expect("a lane in the heap has entries");
        self.in_lanes -= 1;
        match fifo.front() {
            Some(next) => {
                let head = Entry {
                    at: next.at,
                    lo: (next.lo & !PAYLOAD_MASK) | LANE_FLAG | lane,
                };
                self.near.replace_top(head);
            }
            None => {
                self.active_lanes -= 1;
                self.near.remove_top();
            }
        }
        Some((Instant(first.at), T::unpack(first.lo & PAYLOAD_MASK)))
    }

    /// The sequence numbers ran out: renumber the queued entries (heaps and lanes) in their
    /// order and continue after them. Nothing changes place: each heap stays a heap, every
    /// lane stays in order, and a lane's stand-in takes its first entry's new number.
    #[cold]
    fn renumber(&mut self) {
        // Every entry's key and its new number, in order.
        let mut keys: Vec<u128> = Vec::with_capacity(self.len());
        keys.extend(
            self.near
                .entries()
                .filter(|e| e.lo & LANE_FLAG == 0)
                .map(|e| e.key()),
        );
        keys.extend(self.far.entries().map(|e| e.key()));
        keys.extend(self.lanes.iter().flatten().map(|e| e.key()));
        keys.sort_unstable();
        let n = keys.len() as u64;
        assert!(
            n < self.seq_limit,
            "more than 2^{SEQ_BITS} events queued at once"
        );
        let renumber = |e: &mut Entry| {
            let seq = keys.binary_search(&e.key()).expect("a queued key") as u64;
            e.lo = (seq << SEQ_SHIFT) | (e.lo & !(u64::MAX << SEQ_SHIFT));
        };
        self.far.entries_mut().for_each(renumber);
        self.lanes.iter_mut().flatten().for_each(renumber);
        for e in self.near.entries_mut() {
            if e.lo & LANE_FLAG == 0 {
                renumber(e);
            } else {
                let first = self.lanes[(e.lo & PAYLOAD_MASK) as usize][0];
                e.lo = (first.lo & (u64::MAX << SEQ_SHIFT)) | (e.lo & !(u64::MAX << SEQ_SHIFT));
            }
        }
        self.next_seq = n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    use unpinned_core::rng::splitmix64;

    impl Packed for u32 {
        fn pack(self) -> u64 {
            self as u64
        }
        fn unpack(bits: u64) -> u32 {
            bits as u32
        }
    }

    /// Against a binary min-heap of (time, seq), over pushes like the simulator's: mostly a
    /// little ahead of the last popped time, some at it, some far ahead; `seq_limit` small
    /// enough to renumber many times in some runs.
    /// With `lanes`, half of the pushes go into one of 5 lanes, mostly in the lane's time
    /// order (like a port's arrivals), sometimes not, and an eighth into the far heap.
    fn against_model(seq_limit: u64, lanes: bool) {
        for seed in 0..20u64 {
            let mut q = EventQueue::new();
            q.seq_limit = seq_limit;
            let mut h = BinaryHeap::new();
            let (mut now, mut seq, mut x) = (0u64, 0u64, seed);
            let mut lane_last = [0u64; 5];
            for step in 0..20_000u32 {
                x = splitmix64(x);
                if x % 3 != 0 || h.is_empty() {
                    seq += 1;
                    let at = now
                        + match (x >> 8) % 10 {
                            0 => 0,
                            1 => (x >> 16) % 5_000_000,
                            _ => (x >> 16) % 500,
                        };
                    let lane = (x >> 40) % 10;
                    if lanes && lane < 5 {
                        // Mostly after the lane's last push (its port serializes), 1 in 8 not.
                        let last = &mut lane_last[lane as usize];
                        let at = if (x >> 50) % 8 == 0 {
                            at
                        } else {
                            at.max(*last)
                        };
                        *last = at;
                        q.push_lane(lane as u32, Instant(at), step);
                        h.push(Reverse((at, seq, step)));
                    } else if lanes && (x >> 56) % 4 == 0 {
                        // Far or not, the order is the same.
                        q.push_far(Instant(at), step);
                        h.push(Reverse((at, seq, step)));
                    } else {
                        q.push(Instant(at), step);
                        h.push(Reverse((at, seq, step)));
                    }
                } else {
                    assert_eq!(
                        q.peek_at(),
                        h.peek().map(|Reverse((at, _, _))| Instant(*at)),
                        "seed {seed} step {step}"
                    );
                    // Every other pop through `pop_not_after`, with a limit just before or
                    // at the earliest time (nothing popped, or the earliest).
                    if step % 2 == 0 {
                        if let Some(Reverse((at, _, _))) = h.peek() {
                            if *at > 0 {
                                assert_eq!(q.pop_not_after(Instant(at - 1)), None);
                            }
                        }
                    }
                    let want = h.pop().map(|Reverse((at, _, s))| (Instant(at), s));
                    let got = match (step % 2, want) {
                        (0, Some((at, _))) => q.pop_not_after(at),
                        _ => q.pop(),
                    };
                    assert_eq!(got, want, "seed {seed} step {step}");
                    now = got.map_or(now, |(at, _)| at.0);
                }
                assert_eq!(q.len(), h.len());
            }
            while let Some(Reverse((at, _, s))) = h.pop() {
                assert_eq!(q.pop(), Some((Instant(at), s)));
            }
            assert!(q.pop().is_none() && q.is_empty() && q.peek_at().is_none());
        }
    }

    #[test]
    fn pops_in_time_then_sequence_order() {
        against_model(1 << SEQ_BITS, false);
    }

    #[test]
    fn lanes_keep_the_order() {
        against_model(1 << SEQ_BITS, true);
    }

    #[test]
    fn renumbering_with_lanes_keeps_the_order() {
        against_model(10_000, true);
    }

    #[test]
    fn renumbering_keeps_the_order() {
        // ~7 000 entries queued at the peak: every few thousand pushes renumber them.
        against_model(10_000, false);
    }

    #[test]
    fn many_events_at_one_time_pop_in_insertion_order() {
        // Rounds of 30 pushes at one time and 20 pops, numbers renumbered every few rounds;
        // and earlier events pushed later still come first.
        let mut q = EventQueue::new();
        q.seq_limit = 128;
        let mut popped = Vec::new();
        let mut early = Vec::new();
        for round in 0..8u32 {
            for i in 0..30 {
                q.push(Instant(7), round * 30 + i);
            }
            q.push(Instant(3), 100_000 + round);
            early.push(q.pop().unwrap());
            for _ in 0..19 {
                popped.push(q.pop().unwrap().1);
            }
        }
        popped.extend(std::iter::from_fn(|| q.pop().map(|(_, e)| e)));
        assert_eq!(popped, (0..240).collect::<Vec<_>>());
        assert_eq!(
            early,
            (0..8)
                .map(|r| (Instant(3), 100_000 + r))
                .collect::<Vec<_>>()
        );
    }
}
