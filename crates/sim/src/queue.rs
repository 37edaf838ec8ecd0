//! The event queue: events in (time, insertion sequence) order, the total order that makes
//! runs deterministic.
//!
//! A 4-ary heap of 24-byte entries keyed by one `u128` (time in the high half, sequence in the
//! low half). Measured alternatives that did not pay off (see the perf notes in
//! docs/ARCHITECTURE.md): a radix heap (entries are redistributed more often than a heap sifts
//! them at these queue lengths) and a front slot for an event earlier than the whole heap (it
//! almost never is: every event is scheduled at least one NI or link delay ahead), and a
//! calendar queue of 32 ns buckets in front of the heap (as many instructions per event).

use std::cmp::{Ordering, Reverse};

use dary_heap::QuaternaryHeap;
use unpinned_core::time::Instant;

struct Entry<T> {
    at: u64,
    seq: u64,
    ev: T,
}

impl<T> Entry<T> {
    /// (time, seq) as one integer: one wide compare.
    #[inline(always)]
    fn key(&self) -> u128 {
        ((self.at as u128) << 64) | self.seq as u128
    }
}
impl<T> PartialEq for Entry<T> {
    fn eq(&self, o: &Self) -> bool {
        self.key() == o.key()
    }
}
impl<T> Eq for Entry<T> {}
impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<T> Ord for Entry<T> {
    #[inline(always)]
    fn cmp(&self, o: &Self) -> Ordering {
        self.key().cmp(&o.key())
    }
}

/// Events ordered by (time, sequence). Sequence numbers must be unique.
pub struct EventQueue<T> {
    heap: QuaternaryHeap<Reverse<Entry<T>>>,
}

impl<T> Default for EventQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> EventQueue<T> {
    /// An empty queue.
    pub fn new() -> EventQueue<T> {
        EventQueue { heap: QuaternaryHeap::new() }
    }

    /// Events queued.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// True when nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Queue `ev` at time `at` with sequence number `seq`.
    #[inline]
    pub fn push(&mut self, at: Instant, seq: u64, ev: T) {
        self.heap.push(Reverse(Entry { at: at.0, seq, ev }));
    }

    /// Time of the earliest event.
    #[inline]
    pub fn peek_at(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse(e)| Instant(e.at))
    }

    /// Remove the earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<(Instant, T)> {
        let Reverse(e) = self.heap.pop()?;
        Some((Instant(e.at), e.ev))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BinaryHeap;
    use unpinned_core::rng::splitmix64;

    /// Against a binary min-heap of (time, seq), over pushes like the simulator's: mostly a
    /// little ahead of the last popped time, some at it, some far ahead.
    #[test]
    fn pops_in_time_then_sequence_order() {
        for seed in 0..20u64 {
            let mut q = EventQueue::new();
            let mut h = BinaryHeap::new();
            let (mut now, mut seq, mut x) = (0u64, 0u64, seed);
            for step in 0..20_000u32 {
                x = splitmix64(x);
                if x % 3 != 0 || h.is_empty() {
                    seq += 1;
                    let at = now + match (x >> 8) % 10 {
                        0 => 0,
                        1 => (x >> 16) % 5_000_000,
                        _ => (x >> 16) % 500,
                    };
                    q.push(Instant(at), seq, step);
                    h.push(Reverse((at, seq, step)));
                } else {
                    assert_eq!(q.peek_at(), h.peek().map(|Reverse((at, _, _))| Instant(*at)), "seed {seed} step {step}");
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
            assert!(q.pop().is_none() && q.is_empty());
        }
    }
}
