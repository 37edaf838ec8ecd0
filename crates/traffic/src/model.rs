//! The application models' common interface.

use std::ops::Range;

use crate::program::{Op, Program, Totals};

/// An application: per rank, a set of buffers and a program of iterations.
pub trait AppModel: Send + Sync {
    /// Short name (`lammps`, `hpl`, `hpcg`).
    fn name(&self) -> &'static str;
    /// Ranks (one per node; each rank computes with the node's threads).
    fn ranks(&self) -> u32;
    /// Iterations of the whole calibrated run (time steps, panels, CG iterations).
    fn iterations(&self) -> u64;
    /// The rank's buffers (sizes), reused by every iteration.
    fn buffers(&self, rank: u32) -> Vec<u64>;
    /// Append iteration `it` of `rank` to `out`.
    fn iteration(&self, rank: u32, it: u64, out: &mut Vec<Op>);
    /// Model parameters, for the metadata.
    fn params(&self) -> serde_json::Value;
    /// Every rank `rank` sends to or receives from during the run (the message layer sets up
    /// slots for them). The default generates the whole run; models answer from their
    /// decomposition.
    fn peers(&self, rank: u32) -> Vec<u32> {
        let mut ops = Vec::new();
        let mut v = Vec::new();
        for it in 0..self.iterations() {
            ops.clear();
            self.iteration(rank, it, &mut ops);
            v.extend(ops.iter().filter_map(op_peer));
            v.sort_unstable();
            v.dedup();
        }
        v
    }
}

/// The peer of a message operation.
pub fn op_peer(op: &Op) -> Option<u32> {
    match *op {
        Op::Send { peer, .. } | Op::Recv { peer, .. } => Some(peer),
        _ => None,
    }
}

/// Peers of the operations in `ops`, sorted, without duplicates.
pub fn peers_of(ops: &[Op]) -> Vec<u32> {
    let mut v: Vec<u32> = ops.iter().filter_map(op_peer).collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// The program of `rank` for iterations `iters`.
pub fn program(model: &dyn AppModel, rank: u32, iters: Range<u64>) -> Program {
    let mut p = Program {
        buffers: model.buffers(rank),
        ops: Vec::new(),
    };
    for it in iters {
        model.iteration(rank, it, &mut p.ops);
    }
    p
}

/// Totals of the whole run over every rank, generated iteration by iteration (nothing is
/// kept in memory).
pub fn totals(model: &dyn AppModel, iters: Range<u64>) -> Totals {
    let mut t = Totals::default();
    let mut ops = Vec::new();
    for rank in 0..model.ranks() {
        for it in iters.clone() {
            ops.clear();
            model.iteration(rank, it, &mut ops);
            ops.iter().for_each(|o| t.add(o));
        }
    }
    t
}
