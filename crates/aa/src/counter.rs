//! Access counter (spec "Use cases"): count the puts and gets to a data structure with
//! metadata-only logging (`W=1,WL=1,WLD=0` / `R=1,RL=1,RLD=0`): the handler reads each entry
//! and increments the count of the object it touched. The baselines (remote atomic counters,
//! an active key-value store, counting at the source plus an allreduce) are protocols of the
//! simulator; [`SourceCounts`] is the allreduce's local half.

use rustc_hash::FxHashMap;

use crate::log::{EntryHeader, EntryKind};

/// Per-object access counts kept by the target's handler.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AccessCounter {
    object_bytes: u64,
    base: u64,
    counts: FxHashMap<u64, u64>,
}

impl AccessCounter {
    /// Count accesses to objects of `object_bytes` starting at `base`.
    pub fn new(base: u64, object_bytes: u64) -> AccessCounter {
        AccessCounter {
            object_bytes: object_bytes.max(1),
            base,
            counts: FxHashMap::default(),
        }
    }

    /// The handler processes one metadata entry. Returns whether it counted (only accesses,
    /// not faults or active accesses, are counted).
    pub fn on_entry(&mut self, h: &EntryHeader) -> bool {
        if !matches!(
            h.kind,
            EntryKind::PutMeta | EntryKind::GetMeta | EntryKind::PutData | EntryKind::GetData
        ) {
            return false;
        }
        let obj = h.addr.saturating_sub(self.base) / self.object_bytes;
        *self.counts.entry(obj).or_default() += 1;
        true
    }

    /// Accesses counted for object `obj`.
    pub fn count(&self, obj: u64) -> u64 {
        self.counts.get(&obj).copied().unwrap_or(0)
    }

    /// All accesses counted.
    pub fn total(&self) -> u64 {
        self.counts.values().sum()
    }
}

/// Counting at the source: a vector of counts per (target, object), summed by an allreduce.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceCounts {
    /// Counts, `objects` per target, targets in order.
    pub counts: Vec<u64>,
    objects: usize,
}

impl SourceCounts {
    /// Zero counts for `targets` x `objects`.
    pub fn new(targets: usize, objects: usize) -> SourceCounts {
        SourceCounts {
            counts: vec![0; targets * objects],
            objects,
        }
    }

    /// Count one access of ours.
    pub fn count(&mut self, target: usize, obj: usize) {
        self.counts[target * self.objects + obj] += 1;
    }

    /// The reduction step of the allreduce (element-wise sum).
    pub fn reduce(&mut self, other: &SourceCounts) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
    }

    /// Bytes one process contributes to the allreduce.
    pub fn bytes(&self) -> u64 {
        self.counts.len() as u64 * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iommu::{AaIommu, PutPacket};
    use crate::memory::SparseMemory;
    use crate::pte::{Iuid, PageBits};

    #[test]
    fn counts_equal_true_count() {
        let mut io = AaIommu::new();
        let mut mem = SparseMemory::new();
        let i = Iuid::new(2).unwrap();
        io.create_log(i, 1, 0, 1 << 12);
        io.assoc_pages(1, 0x40_0000, 1 << 16, PageBits::count_all(i));
        let mut truth = [0u64; 16];
        let mut c = AccessCounter::new(0x40_0000, 4096);
        for n in 0..5000u32 {
            let obj = (n.wrapping_mul(2654435761) >> 7) as u64 % 16;
            let addr = 0x40_0000 + obj * 4096 + 8;
            truth[obj as usize] += 1;
            if n % 2 == 0 {
                io.put(
                    PutPacket {
                        pdid: 1,
                        source: 1,
                        txn: n,
                        addr,
                        total_len: 8,
                        offset: 0,
                        data: &[1; 8],
                    },
                    &mut mem,
                );
            } else {
                io.get(1, 1, n, addr, 8, &mem);
            }
            // The handler drains whenever it runs; here, every 50 accesses.
            if n % 50 == 49 {
                while let Some(e) = io.pop(i) {
                    c.on_entry(&e.header);
                }
            }
        }
        while let Some(e) = io.pop(i) {
            c.on_entry(&e.header);
        }
        for (o, &t) in truth.iter().enumerate() {
            assert_eq!(c.count(o as u64), t);
        }
        assert_eq!(c.total(), 5000);
    }
}
