//! Per-thread traces of a DSM run, recorded by the live DSM and replayed by the simulator
//! (issue: "record per-run traces of faults, messages, barriers and locks from live runs;
//! replay them in the simulator with the reference cluster calibration").
//!
//! File format (documented for users): JSON lines. The first line is a [`TraceHeader`]; every
//! further line is one [`TraceRecord`] of one worker thread, in that thread's program order.
//! Times between records are the thread's own computation (`compute_ns`), so a replay on
//! another platform can scale it.

use serde::{Deserialize, Serialize};

/// The first line of a trace file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceHeader {
    /// Application name (`sor`, `lu`, ...).
    pub app: String,
    /// Ranks (nodes) of the recorded run.
    pub ranks: u32,
    /// Worker threads per rank.
    pub threads_per_rank: u32,
    /// Minipage size in bytes.
    pub minipage_bytes: u64,
    /// Number of minipages.
    pub minipages: u32,
}

/// What a worker did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TraceOp {
    /// Computation of the thread since its previous record.
    Compute {
        /// Duration in ns.
        ns: u64,
    },
    /// A page fault on a minipage (read or write access).
    Fault {
        /// Minipage id.
        mp: u32,
        /// Write access.
        write: bool,
    },
    /// A barrier.
    Barrier,
    /// Acquire of a lock.
    Lock {
        /// Lock id.
        id: u32,
    },
    /// Release of a lock.
    Unlock {
        /// Lock id.
        id: u32,
    },
}

/// One line of a trace: a worker's operation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceRecord {
    /// Rank of the worker.
    pub rank: u32,
    /// Thread index within its rank.
    pub thread: u32,
    /// The operation.
    #[serde(flatten)]
    pub op: TraceOp,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_as_json_lines() {
        let r = TraceRecord { rank: 1, thread: 0, op: TraceOp::Fault { mp: 7, write: true } };
        let line = serde_json::to_string(&r).unwrap();
        assert_eq!(line, r#"{"rank":1,"thread":0,"kind":"fault","mp":7,"write":true}"#);
        assert_eq!(serde_json::from_str::<TraceRecord>(&line).unwrap(), r);
    }
}
