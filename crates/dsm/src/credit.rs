//! Credit return of a mailbox ring (the drivers' control channel: crates/dsm-live's endpoint
//! and the simulator's DSM swarm): the receiver tells a sender how many of its messages it has
//! consumed by writing that count into the sender's credit word.
//!
//! The word is overwritten by each return, and two RDMA writes in flight at once may land in
//! either order: a smaller count landing after a larger one leaves the sender believing the
//! ring fuller than it is, and with the ring full it stops sending while the receiver, having
//! consumed everything, never writes again (a deadlock the VOPR's DSM swarm found with
//! reordered packets). So at most one return is in flight per sender; returns that come due
//! meanwhile are merged into one write of the latest count when it completes.

/// The credit state of one sender's ring at its receiver.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CreditReturn {
    /// The count last posted (or landed) in the sender's credit word.
    returned: u64,
    /// A return is in flight.
    in_flight: bool,
}

impl CreditReturn {
    /// The receiver has consumed `head` messages of the ring (`batch`: return credits every
    /// `batch` messages). Returns the count to write now, if a write is due and none is in
    /// flight; the caller posts it, then calls [`CreditReturn::completed`] on its completion.
    pub fn consumed(&mut self, head: u64, batch: u64) -> Option<u64> {
        if self.in_flight || head < self.returned + batch.max(1) {
            return None;
        }
        self.in_flight = true;
        self.returned = head;
        Some(head)
    }

    /// The return in flight completed (`head`: messages consumed by now); the count to write
    /// next, if returns came due meanwhile.
    pub fn completed(&mut self, head: u64, batch: u64) -> Option<u64> {
        self.in_flight = false;
        self.consumed(head, batch)
    }

    /// A return is in flight.
    pub fn in_flight(&self) -> bool {
        self.in_flight
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_return_in_flight_and_the_latest_count_follows_it() {
        let mut c = CreditReturn::default();
        assert_eq!(c.consumed(1, 2), None);
        assert_eq!(c.consumed(2, 2), Some(2));
        // Due again while the first is in flight: merged, not posted.
        assert_eq!(c.consumed(4, 2), None);
        assert_eq!(c.consumed(5, 2), None);
        assert!(c.in_flight());
        // On completion the latest count goes out.
        assert_eq!(c.completed(5, 2), Some(5));
        assert_eq!(c.completed(6, 2), None);
        assert!(!c.in_flight());
        assert_eq!(c.consumed(7, 2), Some(7));
        // Batch 1 (rings of fewer than 4 slots) returns every message.
        let mut d = CreditReturn::default();
        assert_eq!(d.consumed(1, 0), Some(1));
        assert_eq!(d.completed(1, 0), None);
    }
}
