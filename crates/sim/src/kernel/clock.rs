//! The event queue and the clock of a world: events of any payload type in (time, insertion
//! sequence) order, the total order that makes runs deterministic.
//!
//! The order is [`crate::queue::EventQueue`]'s (the PART world's queue): the payloads wait in
//! a slab and the queue carries their slot numbers, so a payload may be any type (a packet's
//! bytes, a work request) while the order stays exactly (time, sequence).

use unpinned_core::time::Instant;

use crate::queue::{EventQueue, Packed};

/// A payload's slot in the slab.
#[derive(Clone, Copy)]
struct Slot(u32);

impl Packed for Slot {
    #[inline(always)]
    fn pack(self) -> u64 {
        self.0 as u64
    }
    #[inline(always)]
    fn unpack(bits: u64) -> Slot {
        Slot(bits as u32)
    }
}

/// Events of type `E` ordered by (time, insertion order), and the simulated clock.
pub struct Kernel<E> {
    queue: EventQueue<Slot>,
    slots: Vec<Option<E>>,
    free: Vec<u32>,
    now: Instant,
    events: u64,
}

impl<E> Default for Kernel<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> Kernel<E> {
    /// An empty queue at time zero.
    pub fn new() -> Kernel<E> {
        Kernel {
            queue: EventQueue::new(),
            slots: Vec::new(),
            free: Vec::new(),
            now: Instant::ZERO,
            events: 0,
        }
    }

    /// Current simulated time: that of the last event popped (or of [`Kernel::advance_to`]).
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Events popped so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Events queued.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// True when nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Queue `ev` at `at`, after every event queued before it at the same time.
    pub fn schedule(&mut self, at: Instant, ev: E) {
        let slot = match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = Some(ev);
                s
            }
            None => {
                self.slots.push(Some(ev));
                u32::try_from(self.slots.len() - 1).expect("fewer than 2^32 events queued")
            }
        };
        self.queue.push(at, Slot(slot));
    }

    /// Time of the earliest queued event.
    pub fn peek_at(&self) -> Option<Instant> {
        self.queue.peek_at()
    }

    /// Pop the earliest event if it is not later than `limit`: the clock moves to its time
    /// and it counts as processed.
    pub fn pop_not_after(&mut self, limit: Instant) -> Option<(Instant, E)> {
        let (at, Slot(s)) = self.queue.pop_not_after(limit)?;
        let ev = self.slots[s as usize]
            .take()
            .expect("a queued slot holds its event");
        self.free.push(s);
        debug_assert!(at >= self.now, "time never goes back");
        self.now = at;
        self.events += 1;
        Some((at, ev))
    }

    /// Pop the earliest event.
    pub fn pop(&mut self) -> Option<(Instant, E)> {
        self.pop_not_after(Instant(u64::MAX))
    }

    /// Move the clock to `t` if it is later (a run up to `t` that found no more events).
    pub fn advance_to(&mut self, t: Instant) {
        self.now = self.now.max(t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use unpinned_core::rng::{rng_for, Rng};

    /// Against a sort by (time, push order), with payloads that own memory.
    #[test]
    fn pops_in_time_then_push_order() {
        let mut rng = rng_for(5, "kernel-test");
        let mut k = Kernel::new();
        let mut want = Vec::new();
        let mut pushed = 0u64;
        for round in 0..50 {
            for _ in 0..rng.gen_range(0..20) {
                let at = k.now() + unpinned_core::time::Duration(rng.gen_range(0..5));
                k.schedule(at, vec![pushed as u8; 3]);
                want.push((at, pushed));
                pushed += 1;
            }
            want.sort();
            for _ in 0..rng.gen_range(0..10) {
                let Some((at, ev)) = k.pop() else { break };
                let (wat, wseq) = want.remove(0);
                assert_eq!((at, ev[0]), (wat, wseq as u8), "round {round}");
            }
        }
        assert_eq!(k.len(), want.len());
        assert_eq!(k.events(), pushed - want.len() as u64);
    }
}
