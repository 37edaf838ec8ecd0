//! The access-counter workload (spec "Use cases: Access counter").
//!
//! Every process makes `ops` accesses (half 64-byte gets, half 64-byte puts) to objects of a
//! shared data structure spread over all processes, and every access must be counted per
//! object. Schemes:
//! - `aa-poll`: pages marked count-all (`WL=1,WLD=0`, `RL=1,RLD=0`): the IOMMU logs metadata,
//!   the owner's handler (polling) counts with `unpinned_aa::counter::AccessCounter`;
//! - `rma`: each access is followed by a remote fetch-and-add on the object's counter word;
//! - `akv`: an application-level active key-value store: each access is an active message
//!   whose handler performs the access and counts it (gets wait for the reply);
//! - `allreduce`: each process counts its own accesses locally and all counts are summed by
//!   an allreduce at the end;
//! - `no-count`: the accesses alone.

use rand::Rng;
use unpinned_aa::atomics::AtomicOp;
use unpinned_aa::counter::{AccessCounter, SourceCounts};
use unpinned_aa::log::{EntryHeader, EntryKind};
use unpinned_core::rng::rng_for;

use super::world::{AppOp, Handled, LogMode, Workload};
use super::Scheme;

/// Base address of the counted data structure in every process.
pub const DATA_BASE: u64 = 0x20_0000_0000;
/// Base of the counter words (RMA scheme).
pub const COUNTER_BASE: u64 = 0x30_0000_0000;
/// Bytes per object.
pub const OBJECT_BYTES: u64 = 4096;
/// Bytes per access.
pub const ACCESS_BYTES: u32 = 64;

/// The counter schemes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CounterScheme {
    /// AA with a polling handler.
    AaPoll,
    /// Remote atomic counters.
    Rma,
    /// Active key-value store.
    Akv,
    /// Count at the source, allreduce at the end.
    Allreduce,
    /// No counting.
    NoCount,
}

impl CounterScheme {
    /// CSV name.
    pub fn name(self) -> &'static str {
        match self {
            CounterScheme::AaPoll => "aa-poll",
            CounterScheme::Rma => "rma",
            CounterScheme::Akv => "akv",
            CounterScheme::Allreduce => "allreduce",
            CounterScheme::NoCount => "no-count",
        }
    }

    /// The model scheme that carries it.
    pub fn model(self) -> Scheme {
        match self {
            CounterScheme::AaPoll => Scheme::AaPoll,
            CounterScheme::Akv => Scheme::Am,
            _ => Scheme::Rma,
        }
    }
}

struct ProcState {
    ops: Vec<(u32, u64, bool)>,
    next: usize,
    phase: u8,
    done: bool,
}

/// The workload.
pub struct CounterWorkload {
    scheme: CounterScheme,
    objects: u32,
    procs: Vec<ProcState>,
    /// Allreduce scheme: the result of the allreduce, the element-wise sum of every source's
    /// local count vector (accumulated directly: holding 2048 vectors of 32768 counts would
    /// only cost memory, the model charges the allreduce's messages separately).
    reduced: SourceCounts,
    /// Per target: the AA handler's counters.
    pub aa: Vec<AccessCounter>,
    /// Per target: counter words of the RMA scheme / AKV handler, per object.
    pub words: Vec<Vec<u64>>,
    /// The true count per (target, object).
    pub truth: Vec<Vec<u64>>,
}

impl CounterWorkload {
    /// `procs` processes, `ops` accesses each over `objects` objects per process.
    pub fn new(
        procs: u32,
        scheme: CounterScheme,
        ops: u32,
        objects: u32,
        seed: u64,
    ) -> CounterWorkload {
        let mut truth = vec![vec![0u64; objects as usize]; procs as usize];
        let state = (0..procs)
            .map(|i| {
                let mut rng = rng_for(seed, &format!("aa.counter.{i}"));
                let ops = (0..ops)
                    .map(|_| {
                        let (t, o) = (rng.gen_range(0..procs), rng.gen_range(0..objects));
                        truth[t as usize][o as usize] += 1;
                        (
                            t,
                            DATA_BASE
                                + o as u64 * OBJECT_BYTES
                                + rng.gen_range(0..OBJECT_BYTES / 64) * 64,
                            rng.gen_bool(0.5),
                        )
                    })
                    .collect();
                ProcState {
                    ops,
                    next: 0,
                    phase: 0,
                    done: false,
                }
            })
            .collect();
        CounterWorkload {
            scheme,
            objects,
            procs: state,
            reduced: SourceCounts::new(
                if scheme == CounterScheme::Allreduce {
                    procs as usize
                } else {
                    0
                },
                objects as usize,
            ),
            aa: (0..procs)
                .map(|_| AccessCounter::new(DATA_BASE, OBJECT_BYTES))
                .collect(),
            words: vec![vec![0; objects as usize]; procs as usize],
            truth,
        }
    }

    /// The counts the scheme produced, per (target, object) (None for `no-count`).
    pub fn counted(&self) -> Option<Vec<Vec<u64>>> {
        let p = self.procs.len();
        let o = self.objects as usize;
        match self.scheme {
            CounterScheme::NoCount => None,
            CounterScheme::AaPoll => Some(
                (0..p)
                    .map(|t| (0..o).map(|j| self.aa[t].count(j as u64)).collect())
                    .collect(),
            ),
            CounterScheme::Rma | CounterScheme::Akv => Some(self.words.clone()),
            CounterScheme::Allreduce => {
                let sum = &self.reduced;
                Some(
                    (0..p)
                        .map(|t| sum.counts[t * o..(t + 1) * o].to_vec())
                        .collect(),
                )
            }
        }
    }

    /// Total accesses.
    pub fn total_ops(&self) -> u64 {
        self.procs.iter().map(|p| p.ops.len() as u64).sum()
    }
}

impl Workload for CounterWorkload {
    fn next(&mut self, p: u32, _result: Option<u64>) -> Option<AppOp> {
        let objects = self.objects;
        let st = &mut self.procs[p as usize];
        if st.done {
            return None;
        }
        if st.next == st.ops.len() {
            if self.scheme == CounterScheme::Allreduce && st.phase == 0 {
                st.phase = 1;
                return Some(AppOp::Allreduce(self.procs.len() as u32 * objects * 8));
            }
            st.done = true;
            return Some(AppOp::FlushAll);
        }
        let (target, addr, is_get) = st.ops[st.next];
        let obj = ((addr - DATA_BASE) / OBJECT_BYTES) as usize;
        // RMA: the access, then the remote fetch-and-add (phase 1).
        if self.scheme == CounterScheme::Rma && st.phase == 1 {
            st.phase = 0;
            st.next += 1;
            return Some(AppOp::Atomic {
                target,
                addr: COUNTER_BASE + obj as u64 * 8,
                op: AtomicOp::FetchAdd(1),
            });
        }
        if self.scheme == CounterScheme::Rma {
            st.phase = 1;
        } else {
            st.next += 1;
        }
        if self.scheme == CounterScheme::Allreduce {
            self.reduced.count(target as usize, obj);
        }
        Some(match (self.scheme, is_get) {
            (CounterScheme::Akv, true) => AppOp::AmSend {
                target,
                addr,
                value: 0,
                bytes: 16,
                reply_bytes: Some(ACCESS_BYTES),
            },
            (CounterScheme::Akv, false) => AppOp::AmSend {
                target,
                addr,
                value: 1,
                bytes: ACCESS_BYTES + 16,
                reply_bytes: None,
            },
            (_, true) => AppOp::Get {
                target,
                addr,
                bytes: ACCESS_BYTES,
            },
            (_, false) => AppOp::Put {
                target,
                addr,
                value: 1,
                bytes: ACCESS_BYTES,
            },
        })
    }

    fn atomic(&mut self, target: u32, addr: u64, op: AtomicOp) -> u64 {
        let w = &mut self.words[target as usize][((addr - COUNTER_BASE) / 8) as usize];
        op.apply(w)
    }

    fn log_mode(&self, _target: u32, addr: u64, _is_put: bool) -> LogMode {
        if self.scheme == CounterScheme::AaPoll && addr >= DATA_BASE {
            LogMode::Meta
        } else {
            LogMode::None
        }
    }

    fn handle(
        &mut self,
        target: u32,
        source: u32,
        kind: EntryKind,
        addr: u64,
        _value: u64,
    ) -> Handled {
        let obj = ((addr - DATA_BASE) / OBJECT_BYTES) as usize;
        match self.scheme {
            CounterScheme::AaPoll => {
                let h = EntryHeader {
                    kind,
                    source,
                    txn: 0,
                    addr,
                    access_len: 0,
                    data_len: 0,
                };
                self.aa[target as usize].on_entry(&h);
                Handled::accesses(1)
            }
            // AKV: perform the access (copy 64 bytes in or out) and count it.
            _ => {
                self.words[target as usize][obj] += 1;
                Handled {
                    accesses: 1,
                    copy_bytes: ACCESS_BYTES as u64,
                    reply: 0,
                }
            }
        }
    }
}
