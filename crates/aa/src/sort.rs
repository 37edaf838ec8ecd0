//! The fault-tolerant parallel sort (spec "Use cases"): a sample sort whose exchange phase is
//! made of gets (each process fetches its bucket from every other process), so that a crashed
//! process can replay its gets from the targets' logs.
//!
//! [`SortPlan`] derives the exchange from a seeded sample: every process draws `samples` keys,
//! the global sample gives P-1 splitters, and each process's share of each bucket is estimated
//! from its own sample. Bytes are then scaled to the data size (the spec sorts 1 GB), so the
//! plan carries the natural bucket imbalance without materialising a gigabyte of keys.

use rand::Rng;
use unpinned_core::rng::rng_for;

/// Who fetches how many bytes from whom.
#[derive(Clone, Debug)]
pub struct SortPlan {
    /// Processes.
    pub procs: u32,
    /// `bytes[dst * procs + src]`: bytes process `dst` gets from process `src`.
    pub bytes: Vec<u64>,
}

impl SortPlan {
    /// Plan the exchange of `total_bytes` of 8-byte keys over `procs` processes.
    pub fn new(total_bytes: u64, procs: u32, samples: u32, seed: u64) -> SortPlan {
        let p = procs as usize;
        let per_proc = total_bytes / procs as u64;
        let mut local: Vec<Vec<u64>> = (0..p)
            .map(|i| {
                let mut r = rng_for(seed, &format!("sort.sample.{i}"));
                (0..samples).map(|_| r.gen()).collect()
            })
            .collect();
        let mut all: Vec<u64> = local.iter().flatten().copied().collect();
        all.sort_unstable();
        let splitters: Vec<u64> = (1..p).map(|k| all[k * all.len() / p]).collect();
        let mut bytes = vec![0u64; p * p];
        for (src, keys) in local.iter_mut().enumerate() {
            keys.sort_unstable();
            let mut counts = vec![0u64; p];
            for k in keys.iter() {
                counts[splitters.partition_point(|s| s <= k)] += 1;
            }
            for (dst, c) in counts.iter().enumerate() {
                bytes[dst * p + src] = per_proc * c / samples as u64;
            }
        }
        SortPlan { procs, bytes }
    }

    /// Bytes `dst` fetches from `src`.
    pub fn get(&self, dst: u32, src: u32) -> u64 {
        self.bytes[(dst * self.procs + src) as usize]
    }

    /// Bytes crossing between distinct processes.
    pub fn remote_bytes(&self) -> u64 {
        let p = self.procs;
        (0..p)
            .flat_map(|d| (0..p).filter(move |&s| s != d).map(move |s| (d, s)))
            .map(|(d, s)| self.get(d, s))
            .sum()
    }
}

/// Merge the sorted runs a process fetched (the local half of the exchange).
pub fn merge_runs(runs: &[Vec<u64>]) -> Vec<u64> {
    let mut out: Vec<u64> = runs.iter().flatten().copied().collect();
    out.sort_unstable();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iommu::{AaIommu, GetOutcome};
    use crate::loggets::ReplayStore;
    use crate::memory::{ByteMemory, SparseMemory};
    use crate::pte::{Iuid, PageBits};
    use rand::SeedableRng;
    use unpinned_core::rng::SimRng;

    #[test]
    fn plan_conserves_bytes() {
        let plan = SortPlan::new(1 << 30, 64, 256, 1);
        let total: u64 = plan.bytes.iter().sum();
        let err = (total as f64 - (1u64 << 30) as f64).abs() / (1u64 << 30) as f64;
        assert!(err < 0.01, "{total}");
        assert!(plan.remote_bytes() < total);
    }

    #[test]
    fn fault_tolerant_sort_replays_after_a_crash() {
        // 4 processes with random keys, locally sorted and bucketed by splitters; process 2
        // fetches its bucket from everyone with logged gets, "crashes", and rebuilds its
        // sorted output from the logs alone: identical.
        let p = 4u32;
        let mut rng = SimRng::seed_from_u64(5);
        let splitters = [u64::MAX / 4, u64::MAX / 2, u64::MAX / 4 * 3];
        // Per process: its IOMMU, its memory, and (address, length) of each bucket.
        type Proc = (AaIommu, SparseMemory, Vec<(u64, u32)>);
        let mut ios: Vec<Proc> = Vec::new();
        for _ in 0..p {
            let mut keys: Vec<u64> = (0..200).map(|_| rng.gen()).collect();
            keys.sort_unstable();
            let mut io = AaIommu::new();
            let mut mem = SparseMemory::new();
            let i = Iuid::new(0).unwrap();
            io.create_log(i, 1, 0, 1 << 16);
            io.assoc_pages(1, 0, 200 * 8, PageBits::log_get_data(i));
            let mut bounds = Vec::new();
            let mut start = 0usize;
            for b in 0..p as usize {
                let end = if let Some(sp) = splitters.get(b) {
                    keys.partition_point(|k| k <= sp)
                } else {
                    keys.len()
                };
                bounds.push(((start * 8) as u64, ((end - start) * 8) as u32));
                start = end;
            }
            for (n, k) in keys.iter().enumerate() {
                mem.write(n as u64 * 8, &k.to_le_bytes());
            }
            ios.push((io, mem, bounds));
        }
        let me = 2usize;
        let mut runs = Vec::new();
        for (src, (io, mem, bounds)) in ios.iter_mut().enumerate() {
            let (addr, len) = bounds[me];
            let GetOutcome::Data(d) = io.get(1, me as u32, src as u32, addr, len, mem) else {
                panic!()
            };
            runs.push(
                d.chunks(8)
                    .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
                    .collect::<Vec<_>>(),
            );
        }
        let sorted = merge_runs(&runs);
        assert!(sorted.windows(2).all(|w| w[0] <= w[1]));
        // Crash of `me`; replay from every target's log.
        let mut replayed_runs = Vec::new();
        for (io, _, _) in ios.iter_mut() {
            let mut store = ReplayStore::new();
            while let Some(e) = io.pop(Iuid::new(0).unwrap()) {
                store.on_entry(e);
            }
            for (_, _, d) in store.replay(me as u32) {
                replayed_runs.push(
                    d.chunks(8)
                        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
                        .collect::<Vec<_>>(),
                );
            }
        }
        assert_eq!(merge_runs(&replayed_runs), sorted);
    }
}
