//! Deadlines with lazy invalidation.
//!
//! Every deadline the engine sets is pushed here with what it is for; cancelling is free
//! (the owner forgets its deadline). When an entry reaches the head, the engine checks it is
//! still the owner's current deadline and discards it if not.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use unpinned_core::time::Instant;

/// What a deadline is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum TimerKind {
    /// A sent block's timeout (transfer slot, slot generation, block id).
    Block {
        /// Slot of the transfer in the requester.
        slot: u32,
        /// Generation of the slot (slots are reused).
        gen: u32,
        /// Block id.
        block: u32,
    },
    /// A read request's liveness timer (read id).
    Read {
        /// The read's transfer id.
        id: u32,
    },
    /// Sweep of idle receive-side state.
    RxGc,
    /// A remote atomic's response timer (its id).
    Atomic {
        /// The atomic's id.
        id: u32,
    },
}

/// The timer table: entries (deadline, insertion order, kind), taken earliest first, ties in
/// insertion order.
///
/// Block timers, which make almost every entry, go into a queue as long as their deadlines
/// do not decrease (every block gets the same timeout, from a clock that does not go back);
/// every other entry, and a block timer due before the queue's last, goes into a heap. Each
/// holds its entries in (deadline, insertion order) order, and the earlier of the two heads
/// is the table's head: the same order as one heap of everything, at a constant cost per
/// entry. With one heap, a stale block timer (its block acknowledged long ago) cost a sift
/// through thousands of others when it reached the head.
#[derive(Default)]
pub struct Timers {
    queue: VecDeque<Entry>,
    heap: BinaryHeap<Reverse<Entry>>,
    order: u64,
    /// Entries were pushed since the owner last validated the head.
    pub(crate) dirty: bool,
}

/// A deadline, its insertion order (ties) and what it is for.
type Entry = (Instant, u64, TimerKind);

impl Timers {
    /// Schedule `kind` at `at`.
    pub fn push(&mut self, at: Instant, kind: TimerKind) {
        self.order += 1;
        self.dirty = true;
        let e = (at, self.order, kind);
        let queued =
            matches!(kind, TimerKind::Block { .. }) && self.queue.back().is_none_or(|b| at >= b.0);
        if queued {
            self.queue.push_back(e);
        } else {
            self.heap.push(Reverse(e));
        }
    }
    /// Whether the head is the queue's (else the heap's, or there is none).
    #[inline]
    fn head_is_queued(&self) -> bool {
        match (self.queue.front(), self.heap.peek()) {
            (Some(q), Some(Reverse(h))) => (q.0, q.1) < (h.0, h.1),
            (q, _) => q.is_some(),
        }
    }
    /// The earliest entry, valid or not.
    #[inline]
    pub fn peek(&self) -> Option<(Instant, TimerKind)> {
        if self.head_is_queued() {
            self.queue.front().map(|(at, _, k)| (*at, *k))
        } else {
            self.heap.peek().map(|Reverse((at, _, k))| (*at, *k))
        }
    }
    /// Remove the earliest entry.
    pub fn pop(&mut self) -> Option<(Instant, TimerKind)> {
        if self.head_is_queued() {
            self.queue.pop_front().map(|(at, _, k)| (at, k))
        } else {
            self.heap.pop().map(|Reverse((at, _, k))| (at, k))
        }
    }
    /// Entries held (valid or stale).
    pub fn len(&self) -> usize {
        self.queue.len() + self.heap.len()
    }
    /// True when no entry is held.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty() && self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table as it was: one heap of everything.
    #[derive(Default)]
    struct OneHeap {
        heap: BinaryHeap<Reverse<Entry>>,
        order: u64,
    }

    impl OneHeap {
        fn push(&mut self, at: Instant, kind: TimerKind) {
            self.order += 1;
            self.heap.push(Reverse((at, self.order, kind)));
        }
        fn peek(&self) -> Option<(Instant, TimerKind)> {
            self.heap.peek().map(|Reverse((at, _, k))| (*at, *k))
        }
        fn pop(&mut self) -> Option<(Instant, TimerKind)> {
            self.heap.pop().map(|Reverse((at, _, k))| (at, k))
        }
    }

    #[test]
    fn takes_entries_in_the_order_of_one_heap_of_everything() {
        let mut rng = 7u64;
        let mut next = move || {
            rng = unpinned_core::rng::splitmix64(rng);
            rng
        };
        for round in 0..200u64 {
            let (mut t, mut one) = (Timers::default(), OneHeap::default());
            let mut now = 0u64;
            for _ in 0..300 {
                let r = next();
                now += r % 3;
                let kind = match r % 7 {
                    0 => TimerKind::RxGc,
                    1 => TimerKind::Read {
                        id: (r >> 8) as u32 % 5,
                    },
                    _ => TimerKind::Block {
                        slot: (r >> 16) as u32 % 4,
                        gen: 0,
                        block: (r >> 24) as u32 % 4,
                    },
                };
                // Mostly one timeout (ties included); now and then a shorter or longer one.
                let timeout = match (r >> 32) % 10 {
                    0 => 5,
                    1 => 40,
                    _ => 10 + round % 3,
                };
                t.push(Instant(now + timeout), kind);
                one.push(Instant(now + timeout), kind);
                if (r >> 40) % 3 == 0 {
                    assert_eq!(t.peek(), one.peek(), "round {round}");
                    assert_eq!(t.pop(), one.pop(), "round {round}");
                }
                assert_eq!(t.len(), one.heap.len());
            }
            while let Some(e) = one.pop() {
                assert_eq!(t.pop(), Some(e), "round {round}");
            }
            assert!(t.is_empty() && t.pop().is_none());
        }
    }
}
