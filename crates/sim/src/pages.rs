//! The page table behind [`SimMemory`](crate::memory::SimMemory): per (PDID, page) whether the
//! page exists (is mapped or was written), whether it is present, and its bytes.
//!
//! Pages live in a few contiguous regions per address space, each a `Vec` indexed by page
//! number: the NI looks a page up on every packet, and an index into a short list of regions
//! (the last one hit is tried first) is cheaper than hashing the key. Regions of one PDID never
//! overlap, so every page has exactly one slot.

use std::cell::Cell;

use unpinned_core::memory::{Pdid, PAGE_BYTES};

/// Pages a region created on demand (a write outside every mapped range) covers at most.
const CHUNK_PAGES: u64 = 512;

/// The bytes of one page.
pub type PageBytes = [u8; PAGE_BYTES as usize];

/// A page's bytes, zeroed (allocated zeroed, not built on the stack and moved).
pub fn zeroed_page() -> Box<PageBytes> {
    let b: Box<[u8]> = vec![0u8; PAGE_BYTES as usize].into_boxed_slice();
    // The length is PAGE_BYTES by construction, so the conversion cannot fail.
    b.try_into()
        .unwrap_or_else(|_| unreachable!("a page-sized allocation"))
}

/// One page of simulated memory.
#[derive(Default)]
pub struct Page {
    /// The page exists: mapped, or written by the host (a lookup of a page that does not exist
    /// finds nothing, as before it was mapped).
    exists: bool,
    /// Present in memory (not swapped out / never touched).
    pub present: bool,
    /// Its bytes, once written (pages never written read as zeros). A thin pointer: an
    /// entry is 16 bytes, and the NI reads one per packet.
    pub data: Option<Box<PageBytes>>,
}

struct Region {
    pdid: Pdid,
    /// First page number (address / PAGE_BYTES).
    first: u64,
    pages: Vec<Page>,
}

impl Region {
    #[inline(always)]
    fn end(&self) -> u64 {
        self.first + self.pages.len() as u64
    }
    #[inline(always)]
    fn holds(&self, pdid: Pdid, vpn: u64) -> bool {
        self.pdid == pdid && vpn >= self.first && vpn < self.end()
    }
}

/// Pages by (PDID, page address).
#[derive(Default)]
pub struct PageTable {
    regions: Vec<Region>,
    /// Regions of the last two lookups that needed a search, most recent first: a node's NI
    /// alternates between its source buffers (transmit) and its destination buffers
    /// (arrivals), two regions.
    hint: [Cell<Hint>; 2],
}

/// A remembered region with its bounds (regions never change once created), so that a hit
/// needs no load from the region list.
#[derive(Clone, Copy, Default)]
struct Hint {
    pdid: Pdid,
    first: u64,
    /// One past the last page number (0 in an unused hint: it holds nothing).
    end: u64,
    region: usize,
}

impl PageTable {
    /// (region, index) of a page's slot, whether or not the page exists.
    #[inline(always)]
    fn slot(&self, pdid: Pdid, vpn: u64) -> Option<(usize, usize)> {
        for hint in &self.hint {
            let h = hint.get();
            if h.pdid == pdid && vpn >= h.first && vpn < h.end {
                return Some((h.region, (vpn - h.first) as usize));
            }
        }
        self.search(pdid, vpn)
    }

    /// [`PageTable::slot`] past the hints: scan the regions, and remember the one found.
    #[inline(never)]
    fn search(&self, pdid: Pdid, vpn: u64) -> Option<(usize, usize)> {
        let i = self.regions.iter().position(|r| r.holds(pdid, vpn))?;
        let r = &self.regions[i];
        self.hint[1].set(self.hint[0].get());
        self.hint[0].set(Hint {
            pdid: r.pdid,
            first: r.first,
            end: r.end(),
            region: i,
        });
        Some((i, (vpn - r.first) as usize))
    }

    /// The page at `page_addr`, if it exists.
    #[inline(always)]
    pub fn get(&self, pdid: Pdid, page_addr: u64) -> Option<&Page> {
        let (r, i) = self.slot(pdid, page_addr / PAGE_BYTES)?;
        let p = &self.regions[r].pages[i];
        p.exists.then_some(p)
    }

    /// The page at `page_addr`, mutably, if it exists.
    #[inline(always)]
    pub fn get_mut(&mut self, pdid: Pdid, page_addr: u64) -> Option<&mut Page> {
        let (r, i) = self.slot(pdid, page_addr / PAGE_BYTES)?;
        let p = &mut self.regions[r].pages[i];
        p.exists.then_some(p)
    }

    /// The page at `page_addr`, created (not present, no bytes) if it does not exist.
    pub fn entry(&mut self, pdid: Pdid, page_addr: u64) -> &mut Page {
        let vpn = page_addr / PAGE_BYTES;
        let (r, i) = match self.slot(pdid, vpn) {
            Some(s) => s,
            None => {
                let start = vpn - vpn % CHUNK_PAGES;
                self.reserve(pdid, start, start.saturating_add(CHUNK_PAGES));
                self.slot(pdid, vpn).expect("reserved")
            }
        };
        let p = &mut self.regions[r].pages[i];
        p.exists = true;
        p
    }

    /// The page at `page_addr` no longer exists (its bytes are dropped).
    pub fn remove(&mut self, pdid: Pdid, page_addr: u64) {
        if let Some((r, i)) = self.slot(pdid, page_addr / PAGE_BYTES) {
            self.regions[r].pages[i] = Page::default();
        }
    }

    /// Make sure slots exist for pages `[first, end)` of `pdid` (none of them is created):
    /// the gaps between existing regions become new regions.
    pub fn reserve(&mut self, pdid: Pdid, first: u64, end: u64) {
        let mut taken: Vec<(u64, u64)> = self
            .regions
            .iter()
            .filter(|r| r.pdid == pdid && r.first < end && r.end() > first)
            .map(|r| (r.first, r.end()))
            .collect();
        taken.sort_unstable();
        let mut at = first;
        for (s, e) in taken.into_iter().chain(std::iter::once((end, end))) {
            if s > at {
                let pages = (at..s).map(|_| Page::default()).collect();
                self.regions.push(Region {
                    pdid,
                    first: at,
                    pages,
                });
            }
            at = at.max(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_exist_once_created_and_regions_do_not_overlap() {
        let mut t = PageTable::default();
        t.reserve(1, 10, 20);
        assert!(
            t.get(1, 12 * PAGE_BYTES).is_none(),
            "reserved is not created"
        );
        t.entry(1, 12 * PAGE_BYTES).present = true;
        assert!(t.get(1, 12 * PAGE_BYTES).is_some_and(|p| p.present));
        assert!(
            t.get(2, 12 * PAGE_BYTES).is_none(),
            "PDID is part of the key"
        );
        // A page outside every region gets a chunk clipped around the existing region.
        t.entry(1, 25 * PAGE_BYTES).present = true;
        t.entry(1, 3 * PAGE_BYTES);
        t.reserve(1, 0, 1000);
        for vpn in 0..1000 {
            assert_eq!(
                t.regions.iter().filter(|r| r.holds(1, vpn)).count(),
                1,
                "page {vpn}"
            );
        }
        assert!(
            t.get(1, 12 * PAGE_BYTES).is_some_and(|p| p.present),
            "kept across reserves"
        );
        assert!(t.get(1, 25 * PAGE_BYTES).is_some_and(|p| p.present));
        t.remove(1, 12 * PAGE_BYTES);
        assert!(t.get(1, 12 * PAGE_BYTES).is_none());
        assert!(!t.entry(1, 12 * PAGE_BYTES).present, "re-created fresh");
        // The top of the address space does not overflow.
        t.entry(3, u64::MAX & !(PAGE_BYTES - 1)).present = true;
        assert!(t.get(3, u64::MAX & !(PAGE_BYTES - 1)).is_some());
    }
}
