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

/// A whole trace in memory: the header and each worker's operations in program order,
/// indexed by global worker `rank * threads_per_rank + thread`.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    /// The header line.
    pub header: TraceHeader,
    /// Per worker, its operations.
    pub threads: Vec<Vec<TraceOp>>,
}

/// A trace file that does not parse or does not fit its header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceError {
    /// 1-based line number (0: the file as a whole).
    pub line: usize,
    /// What is wrong.
    pub why: String,
}

impl std::fmt::Display for TraceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "trace line {}: {}", self.line, self.why)
    }
}

impl std::error::Error for TraceError {}

/// Largest ranks x threads a trace may declare (keeps a corrupt header from allocating
/// without bound).
const WORKERS_MAX: u64 = 4096;

impl Trace {
    /// An empty trace for `header`'s workers.
    pub fn new(header: TraceHeader) -> Trace {
        let n = (header.ranks as usize) * (header.threads_per_rank as usize);
        Trace {
            header,
            threads: vec![Vec::new(); n],
        }
    }

    /// Parses JSON lines (header first; blank lines ignored). Records must name a rank and
    /// thread inside the header's geometry and faults a minipage below `minipages`.
    pub fn parse(text: &str) -> Result<Trace, TraceError> {
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty());
        let (_, first) = lines.next().ok_or(TraceError {
            line: 0,
            why: "empty trace".into(),
        })?;
        let header: TraceHeader = serde_json::from_str(first).map_err(|e| TraceError {
            line: 1,
            why: format!("header: {e}"),
        })?;
        let workers = header.ranks as u64 * header.threads_per_rank as u64;
        if workers == 0 || workers > WORKERS_MAX || header.minipage_bytes == 0 {
            return Err(TraceError {
                line: 1,
                why: format!(
                    "header geometry {} ranks x {} threads, {} B minipages",
                    header.ranks, header.threads_per_rank, header.minipage_bytes
                ),
            });
        }
        let mut trace = Trace::new(header);
        for (i, line) in lines {
            let r: TraceRecord = serde_json::from_str(line).map_err(|e| TraceError {
                line: i + 1,
                why: e.to_string(),
            })?;
            let h = &trace.header;
            if r.rank >= h.ranks || r.thread >= h.threads_per_rank {
                return Err(TraceError {
                    line: i + 1,
                    why: format!(
                        "worker {}.{} outside {} x {}",
                        r.rank, r.thread, h.ranks, h.threads_per_rank
                    ),
                });
            }
            if let TraceOp::Fault { mp, .. } = r.op {
                if mp >= h.minipages {
                    return Err(TraceError {
                        line: i + 1,
                        why: format!("minipage {mp} >= {}", h.minipages),
                    });
                }
            }
            let w = (r.rank * h.threads_per_rank + r.thread) as usize;
            trace.threads[w].push(r.op);
        }
        Ok(trace)
    }

    /// The trace as JSON lines: the header, then each worker's records in program order.
    pub fn to_json_lines(&self) -> String {
        let mut out = serde_json::to_string(&self.header).expect("header serializes");
        out.push('\n');
        let tpr = self.header.threads_per_rank.max(1);
        for (w, ops) in self.threads.iter().enumerate() {
            for op in ops {
                let r = TraceRecord {
                    rank: w as u32 / tpr,
                    thread: w as u32 % tpr,
                    op: op.clone(),
                };
                out.push_str(&serde_json::to_string(&r).expect("record serializes"));
                out.push('\n');
            }
        }
        out
    }

    /// Totals over all workers.
    pub fn totals(&self) -> TraceTotals {
        let mut t = TraceTotals::default();
        for op in self.threads.iter().flatten() {
            match op {
                TraceOp::Compute { ns } => t.compute_ns += ns,
                TraceOp::Fault { write, .. } => {
                    t.faults += 1;
                    t.write_faults += u64::from(*write);
                }
                TraceOp::Barrier => t.barriers += 1,
                TraceOp::Lock { .. } => t.locks += 1,
                TraceOp::Unlock { .. } => t.unlocks += 1,
            }
        }
        t
    }
}

/// Counts of a trace's records (what a replay must reproduce).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TraceTotals {
    /// Computation, ns (unscaled).
    pub compute_ns: u64,
    /// Fault records.
    pub faults: u64,
    /// Of which write faults.
    pub write_faults: u64,
    /// Barrier records (one per worker per barrier episode).
    pub barriers: u64,
    /// Lock acquires.
    pub locks: u64,
    /// Lock releases.
    pub unlocks: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_as_json_lines() {
        let r = TraceRecord {
            rank: 1,
            thread: 0,
            op: TraceOp::Fault { mp: 7, write: true },
        };
        let line = serde_json::to_string(&r).unwrap();
        assert_eq!(
            line,
            r#"{"rank":1,"thread":0,"kind":"fault","mp":7,"write":true}"#
        );
        assert_eq!(serde_json::from_str::<TraceRecord>(&line).unwrap(), r);
    }

    #[test]
    fn whole_traces_round_trip_and_bad_lines_are_typed_errors() {
        let header = TraceHeader {
            app: "x".into(),
            ranks: 2,
            threads_per_rank: 1,
            minipage_bytes: 4096,
            minipages: 4,
        };
        let mut t = Trace::new(header);
        t.threads[0] = vec![TraceOp::Compute { ns: 5 }, TraceOp::Barrier];
        t.threads[1] = vec![
            TraceOp::Fault {
                mp: 3,
                write: false,
            },
            TraceOp::Barrier,
        ];
        let text = t.to_json_lines();
        assert_eq!(Trace::parse(&text).unwrap(), t);
        assert_eq!(t.totals().faults, 1);
        assert_eq!(t.totals().barriers, 2);
        let bad_mp = text.replace("\"mp\":3", "\"mp\":4");
        assert_eq!(Trace::parse(&bad_mp).unwrap_err().line, 4);
        let bad_rank = text.replace("\"rank\":1", "\"rank\":2");
        assert!(Trace::parse(&bad_rank).is_err());
        assert!(Trace::parse("").is_err());
        assert!(Trace::parse("{\"app\":1}").is_err());
    }
}
