//! Logging gets for fault tolerance (spec "Use cases"): to replay a get after a crash of its
//! issuer, the target must keep the data it returned. With AA the target's IOMMU logs a copy
//! as the data is read (`R=1, RL=1, RLD=1`); the handler moves entries into a per-source
//! [`ReplayStore`], from which a restarted source re-reads exactly what it got the first time,
//! even if the target's memory has changed since.

use rustc_hash::FxHashMap;

use crate::log::{EntryKind, LogEntry};

/// Data returned to each source, in the order the gets were served.
#[derive(Clone, Debug, Default)]
pub struct ReplayStore {
    per_source: FxHashMap<u32, Vec<(u32, u64, Vec<u8>)>>,
    bytes: u64,
}

impl ReplayStore {
    /// Empty.
    pub fn new() -> ReplayStore {
        ReplayStore::default()
    }

    /// The handler files one logged get. Returns whether it was a logged get.
    pub fn on_entry(&mut self, e: LogEntry) -> bool {
        if e.header.kind != EntryKind::GetData {
            return false;
        }
        self.bytes += e.data.len() as u64;
        self.per_source.entry(e.header.source).or_default().push((
            e.header.txn,
            e.header.addr,
            e.data,
        ));
        true
    }

    /// Replay the gets of `source`: (txn, address, data) in service order.
    pub fn replay(&self, source: u32) -> impl Iterator<Item = &(u32, u64, Vec<u8>)> {
        self.per_source.get(&source).into_iter().flatten()
    }

    /// Bytes kept.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iommu::{AaIommu, GetOutcome, PutPacket};
    use crate::memory::{ByteMemory, SparseMemory};
    use crate::pte::{Iuid, PageBits};
    use rand::{Rng, SeedableRng};
    use unpinned_core::rng::SimRng;

    /// The source's state: a fold over the data its gets returned.
    fn fold(state: u64, data: &[u8]) -> u64 {
        data.iter()
            .fold(state, |s, &b| s.wrapping_mul(31).wrapping_add(b as u64))
    }

    #[test]
    fn logged_gets_replay_to_the_same_state() {
        for seed in 0..10 {
            let mut rng = SimRng::seed_from_u64(seed);
            let mut io = AaIommu::new();
            let mut mem = SparseMemory::new();
            let i = Iuid::new(0).unwrap();
            io.create_log(i, 1, 0, 2048);
            io.assoc_pages(1, 0x1000, 0x4000, PageBits::log_get_data(i));
            let mut store = ReplayStore::new();
            let mut state = 0u64;
            for txn in 0..500u32 {
                let addr = 0x1000 + rng.gen_range(0..0x3f00u64);
                // Other processes keep writing the data (plain puts), so re-reading memory
                // later would not give the same bytes.
                let noise: Vec<u8> = (0..32).map(|_| rng.gen()).collect();
                io.put(
                    PutPacket {
                        pdid: 1,
                        source: 2,
                        txn,
                        addr: addr & !31,
                        total_len: 32,
                        offset: 0,
                        data: &noise,
                    },
                    &mut mem,
                );
                let len = rng.gen_range(1..64);
                let d = loop {
                    match io.get(1, 1, txn, addr, len, &mem) {
                        GetOutcome::Data(d) => break d,
                        // Back-pressure: the handler runs, then the get is retried.
                        GetOutcome::Stalled(_) => {
                            while let Some(e) = io.pop(i) {
                                store.on_entry(e);
                            }
                        }
                        other => panic!("{other:?}"),
                    }
                };
                state = fold(state, &d);
            }
            while let Some(e) = io.pop(i) {
                store.on_entry(e);
            }
            // Crash: the source restarts from scratch and replays its gets from the log.
            let replayed = store.replay(1).fold(0u64, |s, (_, _, d)| fold(s, d));
            assert_eq!(replayed, state, "seed {seed}");
            assert_eq!(store.replay(1).count(), 500);
            let mut now = vec![0u8; 8];
            mem.read(0x1000, &mut now);
        }
    }
}
