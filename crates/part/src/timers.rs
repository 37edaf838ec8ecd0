//! Deadlines with lazy invalidation.
//!
//! Every deadline the engine sets is pushed here with what it is for; cancelling is free
//! (the owner forgets its deadline). When an entry reaches the head, the engine checks it is
//! still the owner's current deadline and discards it if not.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

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

/// The timer table: a min-heap of (deadline, insertion order, kind).
#[derive(Default)]
pub struct Timers {
    heap: BinaryHeap<Reverse<(Instant, u64, TimerKind)>>,
    order: u64,
    /// Entries were pushed since the owner last validated the head.
    pub(crate) dirty: bool,
}

impl Timers {
    /// Schedule `kind` at `at`.
    pub fn push(&mut self, at: Instant, kind: TimerKind) {
        self.order += 1;
        self.dirty = true;
        self.heap.push(Reverse((at, self.order, kind)));
    }
    /// The earliest entry, valid or not.
    #[inline]
    pub fn peek(&self) -> Option<(Instant, TimerKind)> {
        self.heap.peek().map(|Reverse((at, _, k))| (*at, *k))
    }
    /// Remove the earliest entry.
    pub fn pop(&mut self) -> Option<(Instant, TimerKind)> {
        self.heap.pop().map(|Reverse((at, _, k))| (at, k))
    }
    /// Entries held (valid or stale).
    pub fn len(&self) -> usize {
        self.heap.len()
    }
    /// True when no entry is held.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}
