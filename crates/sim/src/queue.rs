//! The event queue: events in (time, insertion sequence) order, the total order that makes
//! runs deterministic.
//!
//! A 4-ary min-heap of 16-byte entries whose sibling groups each fill one 64-byte cache line.
//! An entry is the event time and one word holding the insertion sequence number above the
//! event's packed payload ([`Packed`], at most [`PAYLOAD_BITS`] bits); compared as one `u128`,
//! that is exactly (time, sequence) order, since sequence numbers are unique. At 4096 simulated
//! nodes the queue holds ~40 000 entries and most of it is out of the L1/L2 caches: a pop walks
//! from the root to a leaf reading every level's four children, and with 24-byte entries (the
//! previous layout) they straddled two lines, with 16-byte ones in aligned groups they are one.
//!
//! The sequence field has [`SEQ_BITS`] bits. When it runs out, the queued entries are
//! renumbered 0, 1, 2, ... in their (time, sequence) order and numbering continues after
//! them: every queued entry keeps its place relative to the others and to every later one, so
//! the order is the same as with unbounded numbers.
//!
//! Measured alternatives that did not pay off (see the perf notes in docs/ARCHITECTURE.md): a
//! radix heap (entries are redistributed more often than a heap sifts them at these queue
//! lengths), a front slot for an event earlier than the whole heap (it almost never is: every
//! event is scheduled at least one NI or link delay ahead), and a calendar queue of 32 ns
//! buckets in front of the heap (as many instructions per event).

use unpinned_core::time::Instant;

/// Bits of an entry's second word that hold the payload.
pub const PAYLOAD_BITS: u32 = 35;
/// Bits of an entry's second word that hold the sequence number.
pub const SEQ_BITS: u32 = 64 - PAYLOAD_BITS;

/// An event payload that packs into [`PAYLOAD_BITS`] bits.
pub trait Packed: Copy {
    /// The payload as an integer below `1 << PAYLOAD_BITS`.
    fn pack(self) -> u64;
    /// The inverse of [`Packed::pack`].
    fn unpack(bits: u64) -> Self;
}

/// One queued event: time, then (sequence << PAYLOAD_BITS | payload).
#[derive(Clone, Copy, Default, PartialEq, Eq)]
struct Entry {
    at: u64,
    lo: u64,
}

impl Entry {
    /// (time, sequence) as one integer: one wide compare.
    #[inline(always)]
    fn key(self) -> u128 {
        ((self.at as u128) << 64) | self.lo as u128
    }
}

/// Four entries: the children of one heap node, in one cache line.
#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
struct Line([Entry; 4]);

/// The first entry's position: the root sits in the last lane of line 0, so that the four
/// children of the entry at position `p` are positions `4p - 8 .. 4p - 4`, all of line `p - 2`.
const ROOT: usize = 3;

/// Events ordered by (time, insertion order).
pub struct EventQueue<T> {
    lines: Vec<Line>,
    len: usize,
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
            lines: Vec::new(),
            len: 0,
            next_seq: 0,
            seq_limit: 1 << SEQ_BITS,
            _payload: std::marker::PhantomData,
        }
    }

    /// Events queued.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline(always)]
    fn get(&self, p: usize) -> Entry {
        self.lines[p >> 2].0[p & 3]
    }

    #[inline(always)]
    fn set(&mut self, p: usize, e: Entry) {
        self.lines[p >> 2].0[p & 3] = e;
    }

    /// Queue `ev` at time `at`, after every event queued before it at the same time.
    #[inline]
    pub fn push(&mut self, at: Instant, ev: T) {
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
            lo: (self.next_seq << PAYLOAD_BITS) | payload,
        };
        self.next_seq += 1;
        let mut p = ROOT + self.len;
        if p >> 2 == self.lines.len() {
            self.lines.push(Line::default());
        }
        self.len += 1;
        // Sift up: the parent of position p is p / 4 + 2.
        while p > ROOT {
            let parent = (p >> 2) + 2;
            let pe = self.get(parent);
            if e.key() >= pe.key() {
                break;
            }
            self.set(p, pe);
            p = parent;
        }
        self.set(p, e);
    }

    /// Time of the earliest event.
    #[inline]
    pub fn peek_at(&self) -> Option<Instant> {
        (self.len > 0).then(|| Instant(self.get(ROOT).at))
    }

    /// Remove the earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<(Instant, T)> {
        if self.len == 0 {
            return None;
        }
        let top = self.get(ROOT);
        self.len -= 1;
        let end = ROOT + self.len;
        if self.len > 0 {
            let last = self.get(end);
            // Floyd: move the hole down to a leaf along the smaller children, then sift the
            // last entry up from there (it usually belongs near the bottom).
            let mut hole = ROOT;
            loop {
                let first = 4 * hole - 8;
                if first >= end {
                    break;
                }
                let line = &self.lines[hole - 2].0;
                let m = if first + 4 <= end {
                    // All four children: a compare tree over one cache line.
                    let a = if line[1].key() < line[0].key() { 1 } else { 0 };
                    let b = if line[3].key() < line[2].key() { 3 } else { 2 };
                    if line[b].key() < line[a].key() {
                        b
                    } else {
                        a
                    }
                } else {
                    let mut m = 0;
                    for c in 1..end - first {
                        if line[c].key() < line[m].key() {
                            m = c;
                        }
                    }
                    m
                };
                let child = line[m];
                self.set(hole, child);
                hole = first + m;
            }
            while hole > ROOT {
                let parent = (hole >> 2) + 2;
                let pe = self.get(parent);
                if last.key() >= pe.key() {
                    break;
                }
                self.set(hole, pe);
                hole = parent;
            }
            self.set(hole, last);
        }
        Some((
            Instant(top.at),
            T::unpack(top.lo & ((1 << PAYLOAD_BITS) - 1)),
        ))
    }

    /// The sequence numbers ran out: renumber the queued entries in their order (a sorted
    /// array is a valid heap) and continue after them.
    #[cold]
    fn renumber(&mut self) {
        let mut all: Vec<Entry> = (ROOT..ROOT + self.len).map(|p| self.get(p)).collect();
        all.sort_unstable_by_key(|e| e.key());
        let n = all.len() as u64;
        assert!(
            n < self.seq_limit,
            "more than 2^{SEQ_BITS} events queued at once"
        );
        for (i, e) in all.iter().enumerate() {
            let payload = e.lo & ((1 << PAYLOAD_BITS) - 1);
            self.set(
                ROOT + i,
                Entry {
                    at: e.at,
                    lo: ((i as u64) << PAYLOAD_BITS) | payload,
                },
            );
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
    fn against_model(seq_limit: u64) {
        for seed in 0..20u64 {
            let mut q = EventQueue::new();
            q.seq_limit = seq_limit;
            let mut h = BinaryHeap::new();
            let (mut now, mut seq, mut x) = (0u64, 0u64, seed);
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
                    q.push(Instant(at), step);
                    h.push(Reverse((at, seq, step)));
                } else {
                    assert_eq!(
                        q.peek_at(),
                        h.peek().map(|Reverse((at, _, _))| Instant(*at)),
                        "seed {seed} step {step}"
                    );
                    let want = h.pop().map(|Reverse((at, _, s))| (Instant(at), s));
                    let got = q.pop();
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
        against_model(1 << SEQ_BITS);
    }

    #[test]
    fn renumbering_keeps_the_order() {
        // ~7 000 entries queued at the peak: every few thousand pushes renumber them.
        against_model(10_000);
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
