//! Completer: reads this node initiated (spec part.md, mechanism 11).
//!
//! A read sends a request; the target writes the data back as a transfer of its own, whose
//! blocks arrive through the responder. The read completes when every block has been received
//! in full. A liveness timer resends the request while nothing arrives, and fails the read with
//! `RetryExceeded` after `max_timeouts` silent periods. Each silent period lasts
//! [`EngineConfig::backoff_timeout`] (the ack timeout, doubled per period when the backoff is
//! on); a block received resets the count, and the next period is one ack timeout again.
//!
//! [`EngineConfig::backoff_timeout`]: crate::EngineConfig::backoff_timeout

use unpinned_core::api::{CompletionError, NodeId, Op, RemoteKey, WorkRequest, WrId};
use unpinned_core::memory::Pdid;
use unpinned_core::time::Instant;

use crate::engine::{Ctrl, PartEngine};
use crate::timers::TimerKind;

/// A read waiting for its data.
#[derive(Clone, Debug)]
pub struct PendingRead {
    /// The user's request id.
    pub wr_id: WrId,
    /// Target node.
    pub peer: NodeId,
    /// Where the data lands here.
    pub local_pdid: Pdid,
    /// Local destination address.
    pub local_addr: u64,
    /// Address space at the target.
    pub remote_pdid: Pdid,
    /// Source address at the target.
    pub remote_addr: u64,
    /// Key of the target range.
    pub rkey: RemoteKey,
    /// Length.
    pub len: u64,
    /// Blocks received in full (bit per block).
    pub blocks_done: Vec<u64>,
    /// Count of blocks received.
    pub done: u32,
    /// Blocks in the read.
    pub nblocks: u32,
    /// Liveness deadline.
    pub deadline: Option<Instant>,
    /// Silent periods so far.
    pub silent_timeouts: u32,
}

impl PartEngine {
    pub(crate) fn start_read(&mut self, now: Instant, id: u32, wr: &WorkRequest) {
        let nblocks = wr.len.div_ceil(self.cfg.block_bytes as u64) as u32;
        let at = now + self.cfg.ack_timeout();
        self.reads.insert(
            id,
            PendingRead {
                wr_id: wr.wr_id,
                peer: wr.peer,
                local_pdid: wr.local_pdid,
                local_addr: wr.local_addr,
                remote_pdid: wr.remote_pdid,
                remote_addr: wr.remote_addr,
                rkey: wr.rkey,
                len: wr.len,
                blocks_done: vec![0; nblocks.div_ceil(64) as usize],
                done: 0,
                nblocks,
                deadline: Some(at),
                silent_timeouts: 0,
            },
        );
        self.timers.push(at, TimerKind::Read { id });
        self.ctrl.push_back((wr.peer, Ctrl::ReadReq { id }));
    }

    /// A block of a read response was received in full.
    pub(crate) fn on_read_block_done(&mut self, now: Instant, id: u32, block: u32) {
        let Some(r) = self.reads.get_mut(&id) else {
            return;
        };
        let (w, bit) = ((block / 64) as usize, 1u64 << (block % 64));
        if r.blocks_done[w] & bit == 0 {
            r.blocks_done[w] |= bit;
            r.done += 1;
        }
        r.silent_timeouts = 0;
        if r.done == r.nblocks {
            let r = self.reads.remove(&id).expect("present");
            self.complete(now, r.wr_id, Op::Read, Ok(()), r.len);
        } else {
            // Progress: push the liveness deadline out.
            let at = now + self.cfg.ack_timeout();
            r.deadline = Some(at);
            self.timers.push(at, TimerKind::Read { id });
        }
    }

    /// End a read with an error (the target refused it, or the local buffer is unmapped).
    pub(crate) fn fail_read(&mut self, now: Instant, peer: NodeId, id: u32, err: CompletionError) {
        if self.reads.get(&id).is_some_and(|r| r.peer == peer) {
            let r = self.reads.remove(&id).expect("present");
            self.complete(now, r.wr_id, Op::Read, Err(err), 0);
        }
    }

    pub(crate) fn on_read_timer(&mut self, now: Instant, at: Instant, id: u32) {
        let Some(r) = self.reads.get_mut(&id) else {
            return;
        };
        if r.deadline != Some(at) {
            return;
        }
        r.silent_timeouts += 1;
        if r.silent_timeouts > self.cfg.max_timeouts {
            let r = self.reads.remove(&id).expect("present");
            self.complete(
                now,
                r.wr_id,
                Op::Read,
                Err(CompletionError::RetryExceeded),
                0,
            );
            return;
        }
        // Resend the request: the target ignores it if its response is under way.
        let at = now + self.cfg.backoff_timeout(r.silent_timeouts);
        r.deadline = Some(at);
        let peer = r.peer;
        self.timers.push(at, TimerKind::Read { id });
        self.stats.read_requests_resent += 1;
        self.ctrl.push_back((peer, Ctrl::ReadReq { id }));
    }
}
