//! Byte-addressed process memory as the Active Access components see it (injected, so the
//! simulator and tests use [`SparseMemory`] and a live runtime can use real memory).

use rustc_hash::FxHashMap;
use unpinned_core::memory::PAGE_BYTES;

/// Memory reached by the IOMMU (puts, gets) and by handlers.
pub trait ByteMemory {
    /// Read `dst.len()` bytes at `addr`.
    fn read(&self, addr: u64, dst: &mut [u8]);
    /// Write `src` at `addr`.
    fn write(&mut self, addr: u64, src: &[u8]);
}

/// A sparse memory image: pages materialise on first write, unwritten bytes read as zero.
#[derive(Clone, Default, PartialEq, Eq, Debug)]
pub struct SparseMemory {
    pages: FxHashMap<u64, Box<[u8]>>,
}

impl SparseMemory {
    /// An empty image.
    pub fn new() -> SparseMemory {
        SparseMemory::default()
    }

    /// Page numbers that have been written, sorted.
    pub fn pages(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self.pages.keys().copied().collect();
        v.sort_unstable();
        v
    }

    /// The bytes of page `vpn` (zeros if never written).
    pub fn page(&self, vpn: u64) -> Vec<u8> {
        self.pages
            .get(&vpn)
            .map(|p| p.to_vec())
            .unwrap_or_else(|| vec![0; PAGE_BYTES as usize])
    }

    /// Replace the bytes of page `vpn`.
    pub fn set_page(&mut self, vpn: u64, bytes: &[u8]) {
        assert_eq!(bytes.len() as u64, PAGE_BYTES);
        self.pages.insert(vpn, bytes.to_vec().into_boxed_slice());
    }

    /// Same content as `other`, treating never-written pages as zero pages.
    pub fn same_image(&self, other: &SparseMemory) -> bool {
        let zero = vec![0u8; PAGE_BYTES as usize];
        let all: std::collections::BTreeSet<u64> = self
            .pages
            .keys()
            .chain(other.pages.keys())
            .copied()
            .collect();
        all.into_iter().all(|p| {
            let a = self.pages.get(&p).map(|b| &b[..]).unwrap_or(&zero);
            let b = other.pages.get(&p).map(|b| &b[..]).unwrap_or(&zero);
            a == b
        })
    }
}

impl ByteMemory for SparseMemory {
    fn read(&self, addr: u64, dst: &mut [u8]) {
        for (i, b) in dst.iter_mut().enumerate() {
            let a = addr + i as u64;
            *b = self
                .pages
                .get(&(a / PAGE_BYTES))
                .map_or(0, |p| p[(a % PAGE_BYTES) as usize]);
        }
    }

    fn write(&mut self, addr: u64, src: &[u8]) {
        for (i, b) in src.iter().enumerate() {
            let a = addr + i as u64;
            let page = self
                .pages
                .entry(a / PAGE_BYTES)
                .or_insert_with(|| vec![0; PAGE_BYTES as usize].into_boxed_slice());
            page[(a % PAGE_BYTES) as usize] = *b;
        }
    }
}
