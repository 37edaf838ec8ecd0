//! Remote atomics (issue 5: "compare-and-swap, fetch-and-op in the engine, needed by the RMA
//! baselines" of Active Access): CAS, fetch-and-add and swap on a 64-bit word of the target.
//!
//! One request packet, one response packet. Unlike writes, an atomic is not idempotent, so
//! reliability needs care:
//!
//! - the initiator resends the request when its timer fires ([`EngineConfig::backoff_timeout`]:
//!   the ack timeout, doubled per silent period when the backoff is on), at most
//!   `max_timeouts` times, then completes with `RetryExceeded`;
//! - the target executes each `(initiator, id)` at most once and remembers the outcome; a
//!   resent request is answered from that memory. Outcomes are kept for
//!   [`EngineConfig::silence_span`]`(max_timeouts + 2)` (`ack_timeout * (max_timeouts + 2)`
//!   without backoff): the initiator resends for at most `silence_span(max_timeouts)` after
//!   its first send, and the target executes no earlier than that first send arrives;
//! - a missing target page is the PART fault path: the target logs a destination
//!   [`FaultRecord`] (block [`ATOMIC_BLOCK`]) and does not answer; the host's page-in task
//!   brings the page in and calls `post_err`, whose ERR makes the initiator resend at once.
//!
//! The old value lands at the initiator's `local_addr` (8 bytes, little-endian) through its
//! `Memory`, as an RDMA atomic's result does; the completion is reported as an 8-byte
//! [`Op::Read`].
//!
//! [`EngineConfig::backoff_timeout`]: crate::EngineConfig::backoff_timeout
//! [`EngineConfig::silence_span`]: crate::EngineConfig::silence_span

use unpinned_core::api::{
    AtomicOp, CompletionError, FaultRecord, FaultSide, NodeId, Op, Perms, RemoteKey, TransferKey,
    WrId,
};
use unpinned_core::memory::{MemError, Memory, Pdid};
use unpinned_core::time::Instant;
use unpinned_wire::{AtomicKind, AtomicStatus, PartRepr};

use crate::engine::{Ctrl, Event, PartEngine, PostError};
use crate::timers::TimerKind;

/// The block id that names an atomic in fault records and ERRs (no transfer has this many
/// blocks: `post` refuses them).
pub const ATOMIC_BLOCK: u32 = u32::MAX;

/// A remote atomic to post with [`PartEngine::post_atomic`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AtomicRequest {
    /// The caller's id (in the completion).
    pub wr_id: WrId,
    /// Target node.
    pub peer: NodeId,
    /// The operation.
    pub op: AtomicOp,
    /// PDID at the target.
    pub remote_pdid: Pdid,
    /// Word address at the target (8-byte aligned, inside a range exposed read-write).
    pub remote_addr: u64,
    /// Key of that range.
    pub rkey: RemoteKey,
    /// PDID of the result buffer.
    pub local_pdid: Pdid,
    /// Where the old value is written (8 bytes).
    pub local_addr: u64,
}

/// An atomic we initiated, waiting for its response.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PendingAtomic {
    pub req: AtomicRequest,
    pub deadline: Instant,
    pub silent: u32,
}

/// An atomic we executed as target (for resent requests).
#[derive(Clone, Copy, Debug)]
pub(crate) struct DoneAtomic {
    pub status: AtomicStatus,
    pub old: u64,
    pub at: Instant,
}

fn encode(op: AtomicOp) -> (AtomicKind, u64, u64) {
    match op {
        AtomicOp::Cas { expected, new } => (AtomicKind::Cas, new, expected),
        AtomicOp::FetchAdd(d) => (AtomicKind::FetchAdd, d, 0),
        AtomicOp::Swap(v) => (AtomicKind::Swap, v, 0),
    }
}

fn decode(kind: AtomicKind, operand: u64, compare: u64) -> AtomicOp {
    match kind {
        AtomicKind::Cas => AtomicOp::Cas {
            expected: compare,
            new: operand,
        },
        AtomicKind::FetchAdd => AtomicOp::FetchAdd(operand),
        AtomicKind::Swap => AtomicOp::Swap(operand),
    }
}

impl PartEngine {
    /// Post a remote atomic. On `Ok`, exactly one completion with `req.wr_id` follows; on
    /// success the old value is at `req.local_addr`.
    pub fn post_atomic(&mut self, now: Instant, req: AtomicRequest) -> Result<(), PostError> {
        if req.peer == self.node {
            return Err(PostError::SelfPeer);
        }
        if !req.remote_addr.is_multiple_of(8)
            || req.remote_addr.checked_add(8).is_none()
            || req.local_addr.checked_add(8).is_none()
        {
            return Err(PostError::InvalidRange);
        }
        let id = self.alloc_id();
        let deadline = now + self.cfg.ack_timeout();
        self.atomics.insert(
            id,
            PendingAtomic {
                req,
                deadline,
                silent: 0,
            },
        );
        self.timers.push(deadline, TimerKind::Atomic { id });
        self.ctrl.push_back((req.peer, Ctrl::AtomicReq { id }));
        Ok(())
    }

    pub(crate) fn emit_atomic_req(&self, id: u32) -> Option<PartRepr<'static>> {
        let p = self.atomics.get(&id)?;
        let (kind, operand, compare) = encode(p.req.op);
        Some(PartRepr::AtomicReq {
            pdid: p.req.remote_pdid,
            rkey: p.req.rkey,
            transfer_id: id,
            kind,
            addr: p.req.remote_addr,
            operand,
            compare,
        })
    }

    /// Target side: execute (once) and answer.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn on_atomic_request<M: Memory>(
        &mut self,
        now: Instant,
        src: NodeId,
        pdid: Pdid,
        rkey: RemoteKey,
        id: u32,
        kind: AtomicKind,
        addr: u64,
        operand: u64,
        compare: u64,
        mem: &mut M,
    ) {
        if let Some(d) = self.atomics_done.get(&(src, id)) {
            self.stats.stale_dropped += 1;
            self.ctrl.push_back((
                src,
                Ctrl::AtomicResp {
                    id,
                    status: d.status,
                    old: d.old,
                },
            ));
            return;
        }
        let allowed =
            addr.is_multiple_of(8) && self.exposures.allows(pdid, rkey, addr, 8, Perms::RW);
        let (status, old) = if !allowed {
            (AtomicStatus::Refused, 0)
        } else {
            match mem.atomic(pdid, addr, decode(kind, operand, compare)) {
                Ok(old) => (AtomicStatus::Done, old),
                Err(MemError::NotPresent { page_addr }) => {
                    let transfer = TransferKey {
                        data_src: src,
                        data_dst: self.node,
                        id,
                        read_response: false,
                    };
                    self.events.push_back(Event::Fault(FaultRecord {
                        side: FaultSide::Destination,
                        transfer,
                        block: ATOMIC_BLOCK,
                        block_seq: 0,
                        pdid,
                        page_addr,
                        block_range: (addr, addr + 8),
                        transfer_range: (addr, addr + 8),
                    }));
                    return;
                }
                Err(MemError::Unmapped { .. }) | Err(MemError::NoSuchDomain(_)) => {
                    (AtomicStatus::Refused, 0)
                }
            }
        };
        self.expire_done_atomics(now);
        self.atomics_done.insert(
            (src, id),
            DoneAtomic {
                status,
                old,
                at: now,
            },
        );
        self.atomics_done_order.push_back((now, src, id));
        self.ctrl
            .push_back((src, Ctrl::AtomicResp { id, status, old }));
    }

    /// Forget the outcomes older than the initiators can still resend for
    /// (`silence_span(max_timeouts + 2)`: two periods more than the longest resend span, with
    /// the backoff's longer periods when it is on), oldest first. A sweep of the whole table once it
    /// held some thousand outcomes cost one pass over every outcome of that window per atomic
    /// (hundreds of thousands at a few microseconds per atomic and a window of seconds).
    fn expire_done_atomics(&mut self, now: Instant) {
        let keep = self
            .cfg
            .silence_span(self.cfg.max_timeouts.saturating_add(2))
            .as_ns();
        while let Some(&(at, src, id)) = self.atomics_done_order.front() {
            if now.as_ns().saturating_sub(at.as_ns()) < keep {
                break;
            }
            self.atomics_done_order.pop_front();
            // The key may have been executed again since (ids wrap): only this outcome goes.
            if self
                .atomics_done
                .get(&(src, id))
                .is_some_and(|d| d.at == at)
            {
                self.atomics_done.remove(&(src, id));
            }
        }
    }

    /// Initiator side: the response.
    pub(crate) fn on_atomic_response<M: Memory>(
        &mut self,
        now: Instant,
        src: NodeId,
        id: u32,
        status: AtomicStatus,
        old: u64,
        mem: &mut M,
    ) {
        match self.atomics.get(&id) {
            Some(p) if p.req.peer == src => {}
            _ => {
                self.stats.stale_dropped += 1;
                return;
            }
        }
        let p = self.atomics.remove(&id).expect("checked above");
        let r = match status {
            AtomicStatus::Refused => Err(CompletionError::RemoteAccess),
            AtomicStatus::Done => mem
                .write(p.req.local_pdid, p.req.local_addr, &old.to_le_bytes())
                .map_err(|_| CompletionError::LocalAccess),
        };
        self.complete(now, p.req.wr_id, Op::Read, r, 8);
    }

    /// An ERR for an atomic: the target paged the word in; resend at once. Returns false if
    /// the ERR is not for one of our atomics.
    pub(crate) fn on_atomic_err(&mut self, now: Instant, src: NodeId, id: u32) -> bool {
        let ack = self.cfg.ack_timeout();
        let Some(p) = self.atomics.get_mut(&id) else {
            return false;
        };
        if p.req.peer != src {
            return false;
        }
        p.silent = 0;
        p.deadline = now + ack;
        let (peer, deadline) = (p.req.peer, p.deadline);
        self.timers.push(deadline, TimerKind::Atomic { id });
        self.ctrl.push_back((peer, Ctrl::AtomicReq { id }));
        true
    }

    pub(crate) fn on_atomic_timer(&mut self, now: Instant, at: Instant, id: u32) {
        let max = self.cfg.max_timeouts;
        let Some(p) = self.atomics.get_mut(&id) else {
            return;
        };
        if p.deadline != at {
            return;
        }
        p.silent += 1;
        if p.silent > max {
            let wr_id = p.req.wr_id;
            self.atomics.remove(&id);
            self.complete(now, wr_id, Op::Read, Err(CompletionError::RetryExceeded), 0);
            return;
        }
        // The next period is longer with the backoff on (the ack timeout without).
        p.deadline = now + self.cfg.backoff_timeout(p.silent);
        let (peer, deadline) = (p.req.peer, p.deadline);
        self.timers.push(deadline, TimerKind::Atomic { id });
        self.ctrl.push_back((peer, Ctrl::AtomicReq { id }));
    }

    pub(crate) fn atomic_deadline(&self, id: u32) -> Option<Instant> {
        self.atomics.get(&id).map(|p| p.deadline)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use unpinned_core::profile::Profile;
    use unpinned_core::time::Duration;

    /// A word memory for the target: every address present, zero until written.
    #[derive(Default)]
    struct Words(rustc_hash::FxHashMap<u64, u8>);
    impl Memory for Words {
        fn write(&mut self, _: Pdid, addr: u64, data: &[u8]) -> Result<(), MemError> {
            for (i, b) in data.iter().enumerate() {
                self.0.insert(addr + i as u64, *b);
            }
            Ok(())
        }
        fn read(&mut self, _: Pdid, addr: u64, out: &mut [u8]) -> Result<(), MemError> {
            for (i, b) in out.iter_mut().enumerate() {
                *b = *self.0.get(&(addr + i as u64)).unwrap_or(&0);
            }
            Ok(())
        }
    }

    #[test]
    fn outcomes_expire_oldest_first_and_duplicates_in_the_window_are_answered() {
        let mut cfg = crate::EngineConfig::from_profile(&Profile::forth_arm().engine);
        cfg.block_timeout = Some(Duration::from_us(100));
        cfg.max_timeouts = 3;
        // Outcomes live 100 us * (3 + 2) = 500 us.
        let mut e = PartEngine::new(1, cfg);
        let key = e.expose(1, 0x1000, 4096, Perms::RW).unwrap();
        let mut mem = Words::default();
        let add = |e: &mut PartEngine, mem: &mut Words, t_us: u64, id: u32| {
            let now = Instant(t_us * 1000);
            e.on_atomic_request(now, 0, 1, key, id, AtomicKind::FetchAdd, 0x1000, 1, 0, mem);
            match e.ctrl.pop_back() {
                Some((0, Ctrl::AtomicResp { old, .. })) => old,
                other => panic!("no response: {other:?}"),
            }
        };
        // One atomic per microsecond for 2 ms: at most ~500 outcomes are remembered.
        for i in 0..2000u32 {
            assert_eq!(add(&mut e, &mut mem, i as u64, i + 1), i as u64);
            assert!(
                e.atomics_done.len() <= 501,
                "{} outcomes",
                e.atomics_done.len()
            );
            assert_eq!(e.atomics_done.len(), e.atomics_done_order.len());
        }
        // A resend within the window is answered from memory, not executed again.
        assert_eq!(add(&mut e, &mut mem, 2000, 1900), 1899);
        assert_eq!(add(&mut e, &mut mem, 2000, 2001), 2000);
        // One from before the window is gone (executed anew: the initiator gave up long ago).
        assert!(!e.atomics_done.contains_key(&(0, 1)));
    }

    #[test]
    fn with_backoff_outcomes_are_kept_as_long_as_the_backed_off_resends_last() {
        let mut cfg = crate::EngineConfig::from_profile(&Profile::forth_arm().engine);
        cfg.block_timeout = Some(Duration::from_us(100));
        cfg.max_timeouts = 3;
        cfg.timeout_backoff_max = 4;
        // Periods of 100, 200, 400, 400 us: the initiator resends until 700 us after its first
        // send and fails at 1100 us; outcomes live silence_span(5) = 1500 us (500 us without
        // the backoff, which a resend at 700 us would outlive).
        assert_eq!(cfg.silence_span(5), Duration::from_us(1500));
        let mut e = PartEngine::new(1, cfg);
        let key = e.expose(1, 0x1000, 4096, Perms::RW).unwrap();
        let mut mem = Words::default();
        let mut add = |t_us: u64, id: u32| {
            let now = Instant(t_us * 1000);
            e.on_atomic_request(
                now,
                0,
                1,
                key,
                id,
                AtomicKind::FetchAdd,
                0x1000,
                1,
                0,
                &mut mem,
            );
            e.atomics_done.contains_key(&(0, 1))
        };
        assert!(add(0, 1));
        assert!(
            add(700, 2),
            "a resend at the end of the span is still answered"
        );
        assert!(add(1499, 3));
        assert!(!add(1500, 4), "forgotten once no initiator can resend it");
    }
}
