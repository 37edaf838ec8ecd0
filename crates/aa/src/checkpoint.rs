//! Incremental checkpointing for RMA (spec "Use cases"): a checkpoint copies only the pages
//! modified since the previous one. Local writes are tracked by dirty bits; writes by remote
//! puts never touch the CPU's dirty bits, so the pages are marked `W=1, WL=1, WLD=0` and the
//! handler reads the metadata entries the IOMMU logs for them.

use std::collections::BTreeSet;

use unpinned_core::memory::PAGE_BYTES;

use crate::log::{EntryHeader, EntryKind};
use crate::memory::{ByteMemory, SparseMemory};

/// Pages dirtied since the last checkpoint, from both sources.
#[derive(Clone, Debug, Default)]
pub struct CheckpointTracker {
    dirty: BTreeSet<u64>,
}

/// One incremental checkpoint: the full bytes of every page modified since the previous one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Delta {
    /// (page number, page bytes), sorted by page.
    pub pages: Vec<(u64, Vec<u8>)>,
}

impl CheckpointTracker {
    /// Nothing dirty.
    pub fn new() -> CheckpointTracker {
        CheckpointTracker::default()
    }

    /// A local write through the CPU: performs it and sets the dirty bits (the MMU does this
    /// on hardware).
    pub fn local_write(&mut self, mem: &mut dyn ByteMemory, addr: u64, bytes: &[u8]) {
        mem.write(addr, bytes);
        self.mark(addr, bytes.len() as u64);
    }

    fn mark(&mut self, addr: u64, len: u64) {
        if len == 0 {
            return;
        }
        for p in addr / PAGE_BYTES..=(addr + len - 1) / PAGE_BYTES {
            self.dirty.insert(p);
        }
    }

    /// The handler processes one access-log entry (metadata of a remote put).
    pub fn on_entry(&mut self, h: &EntryHeader) {
        if matches!(h.kind, EntryKind::PutMeta | EntryKind::PutData) {
            self.mark(h.addr, h.access_len as u64);
        }
    }

    /// Pages that the next checkpoint will copy.
    pub fn dirty_pages(&self) -> usize {
        self.dirty.len()
    }

    /// Take an incremental checkpoint of `mem` and clear the dirty set.
    pub fn checkpoint(&mut self, mem: &SparseMemory) -> Delta {
        let pages = std::mem::take(&mut self.dirty)
            .into_iter()
            .map(|p| (p, mem.page(p)))
            .collect();
        Delta { pages }
    }
}

/// Restore an image from a chain of deltas (the first being a full checkpoint or empty).
pub fn restore(deltas: &[Delta]) -> SparseMemory {
    let mut m = SparseMemory::new();
    for d in deltas {
        for (p, bytes) in &d.pages {
            m.set_page(*p, bytes);
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iommu::{AaIommu, PutPacket};
    use crate::pte::{Iuid, PageBits};
    use rand::{Rng, SeedableRng};
    use unpinned_core::rng::SimRng;

    #[test]
    fn checkpoints_restore_the_exact_image_and_copy_only_dirty_pages() {
        for seed in 0..10 {
            let mut rng = SimRng::seed_from_u64(seed);
            let mut io = AaIommu::new();
            let mut mem = SparseMemory::new();
            let i = Iuid::new(9).unwrap();
            io.create_log(i, 1, 0, 1 << 12);
            let (base, pages) = (0x100_0000u64, 64u64);
            io.assoc_pages(1, base, pages * PAGE_BYTES, PageBits::track_puts(i));
            let mut t = CheckpointTracker::new();
            let mut deltas = Vec::new();
            for epoch in 0..8 {
                // Each epoch touches a few pages only.
                let hot: Vec<u64> = (0..rng.gen_range(1..6))
                    .map(|_| rng.gen_range(0..pages))
                    .collect();
                for n in 0..40u32 {
                    let p = hot[rng.gen_range(0..hot.len())];
                    let addr = base + p * PAGE_BYTES + rng.gen_range(0..PAGE_BYTES - 300);
                    let data: Vec<u8> = (0..rng.gen_range(1..300)).map(|_| rng.gen()).collect();
                    if rng.gen_bool(0.5) {
                        t.local_write(&mut mem, addr, &data);
                    } else {
                        // A remote put: multi-packet, logged as one metadata entry.
                        for (k, chunk) in data.chunks(64).enumerate() {
                            let pkt = PutPacket {
                                pdid: 1,
                                source: 3,
                                txn: epoch * 1000 + n,
                                addr,
                                total_len: data.len() as u32,
                                offset: (k * 64) as u32,
                                data: chunk,
                            };
                            io.put(pkt, &mut mem);
                        }
                    }
                }
                while let Some(e) = io.pop(i) {
                    t.on_entry(&e.header);
                }
                assert!(
                    t.dirty_pages() <= hot.len() + hot.len(),
                    "only touched pages are copied"
                );
                deltas.push(t.checkpoint(&mem));
                assert!(
                    restore(&deltas).same_image(&mem),
                    "seed {seed} epoch {epoch}"
                );
            }
        }
    }
}
