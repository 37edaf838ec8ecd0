//! The fault-tolerant parallel sort workload (spec "Use cases"): the exchange phase of a
//! sample sort of `total_bytes` (1 GB in the spec), made of gets: process `d` fetches its
//! bucket from every process `s` (plan from `unpinned_aa::sort::SortPlan`), in chunks, staggered
//! (`s = d+1, d+2, ...`) so that no process is everyone's first target. The fault-tolerance
//! schemes are those of the logged gets ([`super::loggets::LogGetsScheme`]).

use unpinned_aa::log::EntryKind;
use unpinned_aa::sort::SortPlan;

use super::loggets::LogGetsScheme;
use super::world::{AppOp, Handled, LogMode, Workload};

/// Base of the sorted data in every process.
pub const DATA_BASE: u64 = 0x60_0000_0000;
/// Base of the RMA scheme's log area.
pub const RMA_LOG_BASE: u64 = 0x70_0000_0000;

struct ProcState {
    /// (source, bytes) chunks to fetch, in order.
    chunks: Vec<(u32, u32)>,
    next: usize,
    put_back: bool,
    /// AM: send the chunk just fetched back to its source.
    send_back: bool,
    done: bool,
}

/// The workload.
pub struct SortWorkload {
    scheme: LogGetsScheme,
    procs: Vec<ProcState>,
    /// Bytes kept for replay at each target (AA / AM) or put back (RMA).
    pub kept: Vec<u64>,
    /// Bytes fetched by each process.
    pub fetched: Vec<u64>,
}

impl SortWorkload {
    /// Exchange per `plan`, in chunks of at most `chunk` bytes.
    pub fn new(plan: &SortPlan, scheme: LogGetsScheme, chunk: u32) -> SortWorkload {
        let p = plan.procs;
        let procs = (0..p)
            .map(|d| {
                let mut chunks = Vec::new();
                for k in 1..p {
                    let s = (d + k) % p;
                    let mut left = plan.get(d, s);
                    while left > 0 {
                        let c = left.min(chunk as u64) as u32;
                        chunks.push((s, c));
                        left -= c as u64;
                    }
                }
                ProcState {
                    chunks,
                    next: 0,
                    put_back: false,
                    send_back: false,
                    done: false,
                }
            })
            .collect();
        SortWorkload {
            scheme,
            procs,
            kept: vec![0; p as usize],
            fetched: vec![0; p as usize],
        }
    }

    /// Bytes each process must fetch (for checking).
    pub fn expected(plan: &SortPlan) -> Vec<u64> {
        (0..plan.procs)
            .map(|d| {
                (0..plan.procs)
                    .filter(|&s| s != d)
                    .map(|s| plan.get(d, s))
                    .sum()
            })
            .collect()
    }
}

impl Workload for SortWorkload {
    fn next(&mut self, p: u32, _result: Option<u64>) -> Option<AppOp> {
        let st = &mut self.procs[p as usize];
        if st.done {
            return None;
        }
        if st.put_back {
            st.put_back = false;
            let (s, c) = st.chunks[st.next - 1];
            return Some(AppOp::Put {
                target: s,
                addr: RMA_LOG_BASE,
                value: c as u64,
                bytes: c,
            });
        }
        if st.send_back {
            st.send_back = false;
            let (s, c) = st.chunks[st.next - 1];
            return Some(AppOp::AmSend {
                target: s,
                addr: DATA_BASE,
                value: c as u64,
                bytes: c,
                reply_bytes: None,
            });
        }
        let Some(&(s, c)) = st.chunks.get(st.next) else {
            st.done = true;
            return Some(AppOp::FlushAll);
        };
        st.next += 1;
        self.fetched[p as usize] += c as u64;
        Some(match self.scheme {
            LogGetsScheme::Am => {
                st.send_back = true;
                AppOp::Get {
                    target: s,
                    addr: DATA_BASE,
                    bytes: c,
                }
            }
            LogGetsScheme::Rma => {
                st.put_back = true;
                AppOp::Get {
                    target: s,
                    addr: DATA_BASE,
                    bytes: c,
                }
            }
            _ => AppOp::Get {
                target: s,
                addr: DATA_BASE + c as u64,
                bytes: c,
            },
        })
    }

    fn get(&mut self, _target: u32, addr: u64) -> u64 {
        addr - DATA_BASE
    }

    fn put(&mut self, target: u32, _addr: u64, value: u64) {
        self.kept[target as usize] += value;
    }

    fn log_mode(&self, _target: u32, addr: u64, is_put: bool) -> LogMode {
        if matches!(self.scheme, LogGetsScheme::Aa(_))
            && !is_put
            && (DATA_BASE..RMA_LOG_BASE).contains(&addr)
        {
            LogMode::Data
        } else {
            LogMode::None
        }
    }

    fn handle(
        &mut self,
        target: u32,
        _source: u32,
        _kind: EntryKind,
        _addr: u64,
        value: u64,
    ) -> Handled {
        // AA: the data was logged by the IOMMU; the entry's word is the chunk size (the get
        // address offset). AM: the fetching process sent the chunk back (a send after the get,
        // spec "Where the schemes' costs come from"); the receiver copied it out of its receive
        // buffer when it took the message out (charged by the world), the handler files it.
        self.kept[target as usize] += value;
        Handled::accesses(1)
    }
}
