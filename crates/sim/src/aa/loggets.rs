//! The logged-gets workload (spec "Use cases: Logging gets for fault tolerance").
//!
//! Every process makes `ops` blocking gets of `bytes` from random processes. To replay a get
//! after a crash, the target must keep the data it returned:
//! - `aa-*`: the pages are `R=1, RL=1, RLD=1`: the target IOMMU logs a copy as it reads; the
//!   handler files the entries into `unpinned_aa::loggets::ReplayStore`;
//! - `rma`: the source puts the fetched data back to a log area at the target (a second
//!   transfer of the same bytes);
//! - `am`: the source sends the fetched data back to the target as an active message after
//!   the get (spec "Where the schemes' costs come from": without AA the data to be logged is
//!   sent back, a put for RMA, a send for AM); the target's computing process copies the
//!   payload out of its receive buffer and its handler files it;
//! - `no-ft`: plain gets.

use rand::Rng;
use unpinned_aa::log::{EntryHeader, EntryKind, LogEntry};
use unpinned_aa::loggets::ReplayStore;
use unpinned_core::rng::{rng_for, splitmix64};

use super::world::{AppOp, Handled, LogMode, Workload};
use super::Scheme;

/// Base of the data read by gets.
pub const DATA_BASE: u64 = 0x40_0000_0000;
/// Base of the RMA scheme's log area at the target.
pub const RMA_LOG_BASE: u64 = 0x50_0000_0000;

/// The log-gets schemes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogGetsScheme {
    /// AA (logging by the IOMMU) with the given handler notification.
    Aa(Scheme),
    /// The source puts the data back.
    Rma,
    /// Active messages.
    Am,
    /// No fault tolerance.
    NoFt,
}

impl LogGetsScheme {
    /// CSV name.
    pub fn name(self) -> &'static str {
        match self {
            LogGetsScheme::Aa(s) => s.name(),
            LogGetsScheme::Rma => "rma",
            LogGetsScheme::Am => "am",
            LogGetsScheme::NoFt => "no-ft",
        }
    }

    /// Model scheme.
    pub fn model(self) -> Scheme {
        match self {
            LogGetsScheme::Aa(s) => s,
            LogGetsScheme::Am => Scheme::Am,
            _ => Scheme::Rma,
        }
    }
}

struct ProcState {
    ops: Vec<(u32, u64)>,
    next: usize,
    put_back: bool,
    /// AM: the fetched word to send back once the get's result is in.
    send_back: bool,
    /// Address of the get whose data is awaited.
    awaiting: Option<u64>,
    received: Vec<(u64, u64)>,
    done: bool,
}

/// The workload.
pub struct LogGetsWorkload {
    scheme: LogGetsScheme,
    bytes: u32,
    procs: Vec<ProcState>,
    /// Per target: what its handler kept (AA, AM).
    pub stores: Vec<ReplayStore>,
    /// Bytes the RMA scheme put back, per target.
    pub put_back: Vec<u64>,
}

/// The word a get of `addr` at `target` returns (the data is a function of its address).
pub fn word(target: u32, addr: u64) -> u64 {
    splitmix64(addr ^ ((target as u64) << 48))
}

impl LogGetsWorkload {
    /// `procs` processes, `ops` gets of `bytes` each.
    pub fn new(
        procs: u32,
        scheme: LogGetsScheme,
        ops: u32,
        bytes: u32,
        seed: u64,
    ) -> LogGetsWorkload {
        let state = (0..procs)
            .map(|i| {
                let mut rng = rng_for(seed, &format!("aa.loggets.{i}"));
                let ops = (0..ops)
                    .map(|_| {
                        (
                            rng.gen_range(0..procs),
                            DATA_BASE + rng.gen_range(0..1u64 << 20) * 64,
                        )
                    })
                    .collect();
                ProcState {
                    ops,
                    next: 0,
                    put_back: false,
                    send_back: false,
                    awaiting: None,
                    received: Vec::new(),
                    done: false,
                }
            })
            .collect();
        LogGetsWorkload {
            scheme,
            bytes,
            procs: state,
            stores: (0..procs).map(|_| ReplayStore::new()).collect(),
            put_back: vec![0; procs as usize],
        }
    }

    /// Total gets.
    pub fn total_ops(&self) -> u64 {
        self.procs.iter().map(|p| p.ops.len() as u64).sum()
    }

    /// Replay check: for every source, the data kept by the targets (AA, AM) is exactly the
    /// data the source received, get for get (as multisets of (address, word)).
    pub fn check_replay(&self) -> Result<(), String> {
        if !matches!(self.scheme, LogGetsScheme::Aa(_) | LogGetsScheme::Am) {
            return Ok(());
        }
        for (s, st) in self.procs.iter().enumerate() {
            let mut got: Vec<(u64, u64)> = st.received.clone();
            let mut kept: Vec<(u64, u64)> = self
                .stores
                .iter()
                .flat_map(|store| {
                    store.replay(s as u32).map(|(_, a, d)| {
                        (*a, u64::from_le_bytes(d[..8].try_into().expect("8 bytes")))
                    })
                })
                .collect();
            got.sort_unstable();
            kept.sort_unstable();
            if got != kept {
                return Err(format!(
                    "source {s}: {} gets received, {} replayable, or data differs",
                    got.len(),
                    kept.len()
                ));
            }
        }
        Ok(())
    }
}

impl Workload for LogGetsWorkload {
    fn next(&mut self, p: u32, result: Option<u64>) -> Option<AppOp> {
        let st = &mut self.procs[p as usize];
        let mut fetched = None;
        if let (Some(v), Some(addr)) = (result, st.awaiting) {
            st.received.push((addr, v));
            st.awaiting = None;
            fetched = Some(v);
        }
        if st.done {
            return None;
        }
        if st.send_back {
            // AM: send the fetched data back to the target, whose handler keeps it.
            st.send_back = false;
            let (target, addr) = st.ops[st.next - 1];
            return Some(AppOp::AmSend {
                target,
                addr,
                value: fetched.expect("the get's result comes before the send-back"),
                bytes: self.bytes,
                reply_bytes: None,
            });
        }
        if st.put_back {
            // RMA: send the fetched data back to the target's log area.
            st.put_back = false;
            let (target, addr) = st.ops[st.next - 1];
            return Some(AppOp::Put {
                target,
                addr: RMA_LOG_BASE + (addr - DATA_BASE),
                value: 0,
                bytes: self.bytes,
            });
        }
        let Some(&(target, addr)) = st.ops.get(st.next) else {
            st.done = true;
            return Some(AppOp::FlushAll);
        };
        st.next += 1;
        st.awaiting = Some(addr);
        Some(match self.scheme {
            LogGetsScheme::Am => {
                st.send_back = true;
                AppOp::Get {
                    target,
                    addr,
                    bytes: self.bytes,
                }
            }
            LogGetsScheme::Rma => {
                st.put_back = true;
                AppOp::Get {
                    target,
                    addr,
                    bytes: self.bytes,
                }
            }
            _ => AppOp::Get {
                target,
                addr,
                bytes: self.bytes,
            },
        })
    }

    fn get(&mut self, target: u32, addr: u64) -> u64 {
        word(target, addr)
    }

    fn put(&mut self, target: u32, _addr: u64, _value: u64) {
        self.put_back[target as usize] += self.bytes as u64;
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
        source: u32,
        _kind: EntryKind,
        addr: u64,
        value: u64,
    ) -> Handled {
        // AA: the IOMMU logged the data as it was read; AM: the source sent it back. Either
        // way the entry / message carries the word.
        let v = value;
        let header = EntryHeader {
            kind: EntryKind::GetData,
            source,
            txn: 0,
            addr,
            access_len: self.bytes,
            data_len: 8,
        };
        self.stores[target as usize].on_entry(LogEntry {
            header,
            data: v.to_le_bytes().to_vec(),
        });
        // File the entry (one access): AA's data is already in the log, AM's was copied out
        // of the receive buffer when the message was taken out (the world charges both).
        Handled::accesses(1)
    }
}
