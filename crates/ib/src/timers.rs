//! Deadlines with lazy invalidation (the same design as the PART engine's timer table).
//!
//! Every deadline is pushed with what it is for and the owner's generation at the time;
//! cancelling is free (the owner bumps its generation). A popped entry whose generation is
//! stale is ignored by the engine.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use unpinned_core::time::Instant;

/// What a deadline is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum TimerKind {
    /// An ACK-timer scan of a QP (QP index, scan generation).
    AckScan {
        /// QP index in the engine.
        qp: u32,
        /// Generation of the QP's scan chain.
        gen: u32,
    },
    /// The end of a QP's RNR wait (QP index, RNR generation).
    RnrDone {
        /// QP index in the engine.
        qp: u32,
        /// Generation of the QP's RNR wait.
        gen: u32,
    },
}

/// The timer table: a min-heap of (deadline, insertion order, kind).
#[derive(Default, Debug)]
pub struct Timers {
    heap: BinaryHeap<Reverse<(Instant, u64, TimerKind)>>,
    order: u64,
}

impl Timers {
    /// Schedule `kind` at `at`.
    pub fn push(&mut self, at: Instant, kind: TimerKind) {
        self.order += 1;
        self.heap.push(Reverse((at, self.order, kind)));
    }
    /// The earliest deadline, valid or not.
    pub fn peek(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse((at, _, _))| *at)
    }
    /// Remove and return the earliest entry if it is due at `now`.
    pub fn pop_due(&mut self, now: Instant) -> Option<TimerKind> {
        match self.heap.peek() {
            Some(Reverse((at, _, _))) if *at <= now => self.heap.pop().map(|Reverse((_, _, k))| k),
            _ => None,
        }
    }
    /// Entries held (valid or stale).
    pub fn len(&self) -> usize {
        self.heap.len()
    }
    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn pops_in_deadline_then_insertion_order() {
        let mut t = Timers::default();
        t.push(Instant(20), TimerKind::RnrDone { qp: 1, gen: 0 });
        t.push(Instant(10), TimerKind::AckScan { qp: 2, gen: 0 });
        t.push(Instant(10), TimerKind::AckScan { qp: 1, gen: 0 });
        assert_eq!(t.peek(), Some(Instant(10)));
        assert_eq!(t.pop_due(Instant(9)), None);
        assert_eq!(
            t.pop_due(Instant(10)),
            Some(TimerKind::AckScan { qp: 2, gen: 0 })
        );
        assert_eq!(
            t.pop_due(Instant(10)),
            Some(TimerKind::AckScan { qp: 1, gen: 0 })
        );
        assert_eq!(
            t.pop_due(Instant(30)),
            Some(TimerKind::RnrDone { qp: 1, gen: 0 })
        );
        assert!(t.is_empty());
    }
}
