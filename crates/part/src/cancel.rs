//! Ending requests from outside the protocol: the host withdraws them (`cancel`) or learns
//! that a peer is gone (`fail_peer`). Both complete each affected request of this node once,
//! at once, and forget it: no later packet, timer or page-in result touches its buffers.
//!
//! What stays: read responses this node serves from its exposures (unless their reader is the
//! peer that is gone) and receive state of blocks (dropped by its idle timer); packets that
//! arrive for a forgotten request are answered as for any finished one (a late read response
//! is refused with a protection NACK and never written).

use unpinned_core::api::{CompletionError, NodeId, Op, WrId};
use unpinned_core::time::Instant;

use crate::engine::PartEngine;

impl PartEngine {
    /// Complete every request this node initiated (writes, reads, atomics) whose id satisfies
    /// `which` with `CompletionError::Cancelled`, now, and forget it. Returns how many.
    /// Afterwards the engine reads no source and writes no destination buffer of those
    /// requests (an atomic's result word included).
    pub fn cancel(&mut self, now: Instant, which: impl Fn(WrId) -> bool) -> usize {
        self.end_requests(now, None, &which, CompletionError::Cancelled)
    }

    /// The host learned that `peer` is gone (its process ended, or it closed its runtime):
    /// complete every request towards it with `err` (typically `CompletionError::PeerGone`),
    /// drop the read responses this node was sending it and the control packets queued for
    /// it. Returns how many requests were completed.
    pub fn fail_peer(&mut self, now: Instant, peer: NodeId, err: CompletionError) -> usize {
        let n = self.end_requests(now, Some(peer), &|_| true, err);
        // Read responses we serve to it: nobody will read them.
        let served: Vec<u32> = (0..self.tx.len() as u32)
            .filter(|&s| {
                self.tx[s as usize]
                    .as_ref()
                    .is_some_and(|t| t.wr_id.is_none() && t.key.data_dst == peer)
            })
            .collect();
        for slot in served {
            self.finish_transfer(now, slot, Ok(()));
        }
        self.ctrl.retain(|(dst, _)| *dst != peer);
        n
    }

    /// Complete the requests we initiated towards `peer` (any peer if `None`) whose id
    /// satisfies `which` with `err`.
    fn end_requests(
        &mut self,
        now: Instant,
        peer: Option<NodeId>,
        which: &dyn Fn(WrId) -> bool,
        err: CompletionError,
    ) -> usize {
        let to = |p: NodeId| peer.is_none_or(|q| q == p);
        let mut n = 0;
        // Writes: transfers whose data we send for a request of ours.
        let writes: Vec<u32> = (0..self.tx.len() as u32)
            .filter(|&s| {
                self.tx[s as usize]
                    .as_ref()
                    .is_some_and(|t| t.wr_id.is_some_and(which) && to(t.key.data_dst))
            })
            .collect();
        for slot in writes {
            self.finish_transfer(now, slot, Err(err));
            n += 1;
        }
        // Reads: their responses are refused from now on (no pending read to land in).
        let mut reads: Vec<(u32, WrId)> = self
            .reads
            .iter()
            .filter(|(_, r)| which(r.wr_id) && to(r.peer))
            .map(|(&id, r)| (id, r.wr_id))
            .collect();
        reads.sort_unstable();
        for (id, wr_id) in reads {
            self.reads.remove(&id);
            self.complete(now, wr_id, Op::Read, Err(err), 0);
            n += 1;
        }
        // Atomics: a late response finds no pending atomic and writes no result.
        let mut atomics: Vec<(u32, WrId)> = self
            .atomics
            .iter()
            .filter(|(_, a)| which(a.req.wr_id) && to(a.req.peer))
            .map(|(&id, a)| (id, a.req.wr_id))
            .collect();
        atomics.sort_unstable();
        for (id, wr_id) in atomics {
            self.atomics.remove(&id);
            self.complete(now, wr_id, Op::Read, Err(err), 0);
            n += 1;
        }
        // Read and atomic requests still queued name ids that are gone: `emit_ctrl` skips them.
        n
    }
}
