//! Invariants checked after every step (TigerBeetle's VOPR discipline):
//!
//! 1. every byte a successful completion reports delivered is the byte that was sent (the
//!    source's contents at post time);
//! 2. every work request completes exactly once (the world checks "once"; "at least once" is
//!    checked when the run goes idle);
//! 3. the NI never writes outside an exposed range or a pending read's buffer (checked by the
//!    memory model on every NI write, reported here).

use rustc_hash::FxHashMap;
use unpinned_core::api::{Completion, NodeId, Op, WorkRequest, WrId};

use crate::world::Node;

/// Collects snapshots and violations.
pub struct Checker {
    enabled: bool,
    snapshots: FxHashMap<(NodeId, WrId), Vec<u8>>,
    violation: Option<String>,
    /// Destinations the application rewrites by design before the writer's completion
    /// (mailbox slots, credit words): `(node, pdid, start, end)`; writes there are not compared.
    rewritten: Vec<(NodeId, u16, u64, u64)>,
}

impl Checker {
    /// A checker; when disabled it records nothing (benchmarks).
    pub fn new(enabled: bool) -> Checker {
        Checker {
            enabled,
            snapshots: FxHashMap::default(),
            violation: None,
            rewritten: Vec::new(),
        }
    }

    /// Writes into `[start, end)` of `pdid` at `node` may be overwritten by later writes before
    /// they complete (a mailbox ring or a credit word): check 1 skips them (their consumer checks
    /// their contents itself).
    pub fn rewritten_by_design(&mut self, node: NodeId, pdid: u16, start: u64, end: u64) {
        self.rewritten.push((node, pdid, start, end));
    }

    /// Record a violation (the first one is reported).
    pub fn violation(&mut self, what: String) {
        if self.violation.is_none() {
            self.violation = Some(what);
        }
    }

    /// The first violation since the last call.
    pub fn take_violation(&mut self) -> Option<String> {
        self.violation.take()
    }

    /// Snapshot the bytes a request will move.
    pub fn on_post(&mut self, nodes: &[Node], n: NodeId, wr: &WorkRequest) {
        if !self.enabled {
            return;
        }
        if wr.op == Op::Write
            && self.rewritten.iter().any(|&(node, pdid, s, e)| {
                node == wr.peer
                    && pdid == wr.remote_pdid
                    && wr.remote_addr >= s
                    && wr.remote_addr < e
            })
        {
            return;
        }
        let mut data = vec![0u8; wr.len as usize];
        match wr.op {
            Op::Write => nodes[n as usize]
                .mem
                .host_read(wr.local_pdid, wr.local_addr, &mut data),
            Op::Read => match nodes.get(wr.peer as usize) {
                Some(peer) => peer
                    .mem
                    .host_read(wr.remote_pdid, wr.remote_addr, &mut data),
                None => return,
            },
        }
        self.snapshots.insert((n, wr.wr_id), data);
    }

    /// Compare delivered bytes with the snapshot; memory-model violations are collected too.
    pub fn on_completion(&mut self, nodes: &[Node], n: NodeId, wr: &WorkRequest, c: &Completion) {
        if !self.enabled {
            return;
        }
        let Some(expected) = self.snapshots.remove(&(n, wr.wr_id)) else {
            return;
        };
        if c.status.is_err() {
            return;
        }
        let mut got = vec![0u8; wr.len as usize];
        match wr.op {
            Op::Write => {
                nodes[wr.peer as usize]
                    .mem
                    .host_read(wr.remote_pdid, wr.remote_addr, &mut got)
            }
            Op::Read => nodes[n as usize]
                .mem
                .host_read(wr.local_pdid, wr.local_addr, &mut got),
        }
        if got != expected {
            let first = got
                .iter()
                .zip(&expected)
                .position(|(a, b)| a != b)
                .unwrap_or(0);
            self.violation(format!(
                "{:?} wr_id {} of node {n} completed successfully but byte {first} of {} differs from what was sent",
                wr.op, wr.wr_id, wr.len
            ));
        }
    }
}
