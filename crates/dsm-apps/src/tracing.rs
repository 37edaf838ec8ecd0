//! [`TracingSpace`]: a [`LocalSpace`] that emulates the DSM's coherence state per (rank,
//! minipage) in software and records the trace a live run would (see the crate doc).
//!
//! Minipages: every allocation starts on a fresh minipage and covers
//! `ceil(bytes / MINIPAGE_BYTES)` of them (Multiview: small objects get their own minipage,
//! large ones are split into page-sized ones). The emulation is the protocol's
//! (`unpinned_dsm::Node`): single writer, shared reads, invalidation; initially each minipage
//! is writable at its manager, `mp % ranks` only.

use std::sync::Mutex;

use unpinned_dsm::space::{SharedSpace, SpaceError, Worker};
use unpinned_dsm::trace::{TraceHeader, TraceOp};

pub use unpinned_dsm::trace::Trace;

use crate::cputime::thread_cpu_ns;
use crate::LocalSpace;

/// Minipage size of the emulated DSM (one 4 KiB page).
pub const MINIPAGE_BYTES: usize = 4096;

/// Coherence of one minipage: the writer (if any) and the ranks with a valid copy.
#[derive(Clone, Copy)]
struct MpState {
    owner: Option<u8>,
    copies: u64,
}

struct Coherence {
    /// (start address, bytes, first minipage) per allocation, sorted by address.
    allocs: Vec<(usize, usize, u32)>,
    mps: Vec<MpState>,
}

struct WorkerLog {
    ops: Vec<TraceOp>,
    /// CPU clock at the end of the last traced operation (None: no record yet; the apps'
    /// first shared access or synchronisation comes right at the start of `work`, so the
    /// computation before it is a few local initialisations, not recorded).
    last_ns: Option<u64>,
}

impl WorkerLog {
    /// Records the computation since the last operation (tracing overhead excluded).
    fn flush_compute(&mut self, now_ns: u64) {
        if let Some(last) = self.last_ns {
            let ns = now_ns.saturating_sub(last);
            if ns > 0 {
                match self.ops.last_mut() {
                    Some(TraceOp::Compute { ns: prev }) => *prev += ns,
                    _ => self.ops.push(TraceOp::Compute { ns }),
                }
            }
        }
    }
}

/// Local threads over plain memory plus a software coherence emulation that records a trace.
pub struct TracingSpace {
    app: String,
    local: LocalSpace,
    coherence: Mutex<Coherence>,
    logs: Vec<Mutex<WorkerLog>>,
}

impl TracingSpace {
    /// A tracing space of `ranks x threads_per_rank` workers for application `app`.
    pub fn new(
        app: &str,
        ranks: usize,
        threads_per_rank: usize,
    ) -> Result<TracingSpace, SpaceError> {
        let local = LocalSpace::new(ranks, threads_per_rank)?;
        let logs = (0..ranks * threads_per_rank)
            .map(|_| {
                Mutex::new(WorkerLog {
                    ops: Vec::new(),
                    last_ns: None,
                })
            })
            .collect();
        Ok(TracingSpace {
            app: app.to_string(),
            local,
            coherence: Mutex::new(Coherence {
                allocs: Vec::new(),
                mps: Vec::new(),
            }),
            logs,
        })
    }

    /// See [`LocalSpace::poison`].
    pub fn poison(&self) {
        self.local.poison();
    }

    fn rank_of(&self, worker: Worker) -> usize {
        worker.id / self.local.threads_per_rank()
    }

    fn log(&self, worker: Worker) -> std::sync::MutexGuard<'_, WorkerLog> {
        self.logs[worker.id].lock().expect("worker log lock")
    }

    /// Records `op` for `worker` after its computation since the previous record.
    fn record(&self, worker: Worker, op: TraceOp) {
        let now = thread_cpu_ns();
        let mut log = self.log(worker);
        log.flush_compute(now);
        log.ops.push(op);
        log.last_ns = Some(thread_cpu_ns());
    }

    /// The recorded trace (call after every worker finished).
    pub fn finish(self) -> Trace {
        let minipages = self.coherence.lock().expect("coherence lock").mps.len() as u32;
        let header = TraceHeader {
            app: self.app.clone(),
            ranks: self.local.ranks() as u32,
            threads_per_rank: self.local.threads_per_rank() as u32,
            minipage_bytes: MINIPAGE_BYTES as u64,
            minipages,
        };
        let mut trace = Trace::new(header);
        for (w, log) in self.logs.into_iter().enumerate() {
            trace.threads[w] = log.into_inner().expect("worker log lock").ops;
        }
        trace
    }
}

impl SharedSpace for TracingSpace {
    fn rank(&self) -> usize {
        0
    }
    fn ranks(&self) -> usize {
        self.local.ranks()
    }
    fn threads_per_rank(&self) -> usize {
        self.local.threads_per_rank()
    }
    fn alloc(&self, bytes: usize, align: usize) -> Result<*mut u8, SpaceError> {
        let ptr = self.local.alloc(bytes, align)?;
        let mut c = self.coherence.lock().expect("coherence lock");
        let first = c.mps.len() as u32;
        let ranks = self.local.ranks() as u32;
        for mp in first..first + bytes.div_ceil(MINIPAGE_BYTES) as u32 {
            let m = (mp % ranks) as u8;
            c.mps.push(MpState {
                owner: Some(m),
                copies: 1 << m,
            });
        }
        let at = c.allocs.partition_point(|a| a.0 < ptr as usize);
        c.allocs.insert(at, (ptr as usize, bytes, first));
        Ok(ptr)
    }
    fn barrier(&self, worker: Worker) {
        self.record(worker, TraceOp::Barrier);
        self.local.barrier(worker);
        self.log(worker).last_ns = Some(thread_cpu_ns());
    }
    fn lock(&self, worker: Worker, id: u32) {
        self.record(worker, TraceOp::Lock { id });
        self.local.lock(worker, id);
        self.log(worker).last_ns = Some(thread_cpu_ns());
    }
    fn unlock(&self, worker: Worker, id: u32) {
        self.record(worker, TraceOp::Unlock { id });
        self.local.unlock(worker, id);
        self.log(worker).last_ns = Some(thread_cpu_ns());
    }
    fn access(&self, worker: Worker, ptr: *const u8, len: usize, write: bool) {
        if len == 0 {
            return;
        }
        let now = thread_cpu_ns();
        let rank = self.rank_of(worker);
        let bit = 1u64 << rank;
        let mut faults = Vec::new();
        {
            let mut c = self.coherence.lock().expect("coherence lock");
            let addr = ptr as usize;
            // The allocation holding `addr`: the last one starting at or below it (allocations
            // do not overlap).
            let k = c.allocs.partition_point(|a| a.0 <= addr);
            let found = k
                .checked_sub(1)
                .map(|k| c.allocs[k])
                .filter(|(a, b, _)| addr < a + b);
            let Some((base, bytes, first)) = found else {
                // Not shared memory: nothing to emulate (the live DSM would not fault either).
                return;
            };
            let end = (addr + len).min(base + bytes);
            let lo = first + ((addr - base) / MINIPAGE_BYTES) as u32;
            let hi = first + ((end - 1 - base) / MINIPAGE_BYTES) as u32;
            for mp in lo..=hi {
                let s = &mut c.mps[mp as usize];
                if write {
                    if s.owner == Some(rank as u8) && s.copies == bit {
                        continue;
                    }
                    *s = MpState {
                        owner: Some(rank as u8),
                        copies: bit,
                    };
                } else {
                    if s.copies & bit != 0 {
                        continue;
                    }
                    // A writer that serves a read keeps a read copy.
                    s.owner = None;
                    s.copies |= bit;
                }
                faults.push(TraceOp::Fault { mp, write });
            }
        }
        let mut log = self.log(worker);
        log.flush_compute(now);
        log.ops.extend(faults);
        log.last_ns = Some(thread_cpu_ns());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn faults(t: &Trace, w: usize) -> Vec<(u32, bool)> {
        t.threads[w]
            .iter()
            .filter_map(|o| match o {
                TraceOp::Fault { mp, write } => Some((*mp, *write)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn emulated_coherence_follows_the_protocol() {
        // 2 ranks x 1 thread. Allocation a: minipages 0, 1 (5000 bytes); b: minipage 2.
        let s = TracingSpace::new("t", 2, 1).unwrap();
        let a = s.alloc(5000, 8).unwrap();
        let b = s.alloc(8, 8).unwrap();
        let (w0, w1) = (Worker { id: 0, count: 2 }, Worker { id: 1, count: 2 });
        // Managers: mp 0 -> rank 0, mp 1 -> rank 1, mp 2 -> rank 0.
        s.access(w1, a, 5000, false); // reads mp 0 (fault), mp 1 (its own: none)
        s.access(w1, a, 10, false); // valid copy now
        s.access(w0, a, 10, true); // rank 0 shares mp 0 with rank 1: upgrade fault
        s.access(w1, a.wrapping_add(4096), 4, true); // mp 1, writable at rank 1 already
        s.access(w1, b, 8, true); // mp 2 from rank 0
        s.access(w0, b, 8, false); // back to rank 0 for reading
        s.access(w0, std::ptr::null(), 8, true); // not shared memory: ignored
        let t = s.finish();
        assert_eq!(t.header.minipages, 3);
        assert_eq!(faults(&t, 1), vec![(0, false), (2, true)]);
        assert_eq!(faults(&t, 0), vec![(0, true), (2, false)]);
    }
}
