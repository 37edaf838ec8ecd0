//! Trace recording (optional): per worker thread, the computation between DSM events and the
//! events themselves (faults with minipage and access, barriers, locks), in the crates/dsm
//! JSON-lines format ([`unpinned_dsm::trace`]) for replay in the simulator.
//!
//! Computation is the time a worker spent outside the DSM: from the end of one event (a fault
//! resolved, a barrier passed, a lock granted) to the start of the next.

use std::cell::Cell;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use unpinned_dsm::trace::{TraceHeader, TraceOp, TraceRecord};

use crate::error::DsmLiveError;

thread_local! {
    /// (rank, thread) of a worker, and when it last left the DSM.
    static WORKER: Cell<Option<(u32, u32, Instant)>> = const { Cell::new(None) };
}

/// The records of one rank.
pub struct Tracer {
    path: PathBuf,
    records: Mutex<Vec<TraceRecord>>,
}

impl Tracer {
    /// Record into `path` (rank parts are `PATH.rankN`, merged by rank 0 at the end).
    pub fn new(path: PathBuf) -> Tracer {
        Tracer {
            path,
            records: Mutex::new(Vec::new()),
        }
    }

    /// The calling thread is worker `thread` of `rank` from now on.
    pub fn start_worker(rank: u32, thread: u32) {
        WORKER.with(|w| w.set(Some((rank, thread, Instant::now()))));
    }

    /// The calling thread stops being a worker; its last computation is recorded.
    pub fn end_worker(&self) {
        if let Some((rank, thread, last)) = WORKER.with(|w| w.take()) {
            let ns = last.elapsed().as_nanos() as u64;
            if ns > 0 {
                self.records.lock().expect("trace").push(TraceRecord {
                    rank,
                    thread,
                    op: TraceOp::Compute { ns },
                });
            }
        }
    }

    /// A worker enters the DSM with `op` (no-op on other threads).
    pub fn enter(&self, op: TraceOp) {
        let Some((rank, thread, last)) = WORKER.with(|w| w.get()) else {
            return;
        };
        let ns = last.elapsed().as_nanos() as u64;
        let mut r = self.records.lock().expect("trace");
        if ns > 0 {
            r.push(TraceRecord {
                rank,
                thread,
                op: TraceOp::Compute { ns },
            });
        }
        r.push(TraceRecord { rank, thread, op });
    }

    /// A worker leaves the DSM (its computation restarts now).
    pub fn exit(&self) {
        WORKER.with(|w| {
            if let Some((r, t, _)) = w.get() {
                w.set(Some((r, t, Instant::now())));
            }
        });
    }

    /// The part file of `rank`.
    pub fn part_path(&self, rank: u32) -> PathBuf {
        let mut s = self.path.clone().into_os_string();
        s.push(format!(".rank{rank}"));
        PathBuf::from(s)
    }

    /// Write this rank's records to its part file.
    pub fn write_part(&self, rank: u32) -> Result<(), DsmLiveError> {
        let recs = std::mem::take(&mut *self.records.lock().expect("trace"));
        let mut out = String::new();
        for r in &recs {
            out.push_str(&serde_json::to_string(r).map_err(|e| DsmLiveError::Os(e.to_string()))?);
            out.push('\n');
        }
        std::fs::write(self.part_path(rank), out)
            .map_err(|e| DsmLiveError::Os(format!("writing trace part: {e}")))
    }

    /// Merge the part files of every rank (by rank, each in thread program order) behind
    /// `header` into the trace file, and remove the parts.
    pub fn merge(&self, header: &TraceHeader) -> Result<(), DsmLiveError> {
        let io =
            |e: std::io::Error| DsmLiveError::Os(format!("trace {}: {e}", self.path.display()));
        let mut f = std::io::BufWriter::new(std::fs::File::create(&self.path).map_err(io)?);
        writeln!(
            f,
            "{}",
            serde_json::to_string(header).map_err(|e| DsmLiveError::Os(e.to_string()))?
        )
        .map_err(io)?;
        for r in 0..header.ranks {
            let p = self.part_path(r);
            let s = std::fs::read_to_string(&p).map_err(io)?;
            f.write_all(s.as_bytes()).map_err(io)?;
            let _ = std::fs::remove_file(&p);
        }
        f.flush().map_err(io)
    }

    /// The trace file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}
