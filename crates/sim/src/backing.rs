//! What backs ranges of simulated memory beyond anonymous 4 KiB pages: files or swap (major
//! faults) and transparent huge pages (spec part.md, "Beyond the reference design").
//!
//! A range keeps its kind whatever its residency: a page of a file-backed range that is
//! evicted faults majorly again, as a page dropped from the page cache does. Huge ranges are
//! 2 MiB-aligned; the IOMMU translates their pages with one 2 MiB entry per huge page
//! ([`Iommu::translate_huge`]), and the fault handler brings a whole huge page in at once.
//! With no range registered (every existing run) nothing here is consulted on the packet path.

use unpinned_core::iommu::{Iommu, Translation};
use unpinned_core::memory::{Pdid, PAGE_BYTES};
use unpinned_core::os::source::{huge_of, HUGE_PAGE_BYTES};
use unpinned_core::os::PageSource;

/// The non-default backing of ranges of one node's memory.
#[derive(Clone, Debug, Default)]
pub struct Backing {
    /// `(pdid, start, end, source)`, later registrations first.
    ranges: Vec<(Pdid, u64, u64, PageSource)>,
    /// Whether any range is huge (the packet path checks only this flag otherwise).
    any_huge: bool,
}

impl Backing {
    /// Back `[base, base + len)` of `pdid` by `source` (page-rounded outwards; huge ranges
    /// must be 2 MiB-aligned). A later registration overrides earlier ones where they overlap.
    pub fn set(&mut self, pdid: Pdid, base: u64, len: u64, source: PageSource) {
        let start = base - base % PAGE_BYTES;
        let end = (base + len).div_ceil(PAGE_BYTES) * PAGE_BYTES;
        if let PageSource::Huge { .. } = source {
            assert!(
                start.is_multiple_of(HUGE_PAGE_BYTES) && end.is_multiple_of(HUGE_PAGE_BYTES),
                "huge range [{start:#x}, {end:#x}) is not 2 MiB-aligned: align it"
            );
            self.any_huge = true;
        }
        self.ranges.insert(0, (pdid, start, end, source));
    }

    /// How page `addr` of `pdid` is brought in when missing.
    pub fn source(&self, pdid: Pdid, addr: u64) -> PageSource {
        self.ranges
            .iter()
            .find(|&&(d, s, e, _)| d == pdid && addr >= s && addr < e)
            .map_or(PageSource::Minor, |r| r.3)
    }

    /// Whether page `addr` of `pdid` lies in a huge page.
    #[inline]
    pub fn is_huge(&self, pdid: Pdid, addr: u64) -> bool {
        self.any_huge && matches!(self.source(pdid, addr), PageSource::Huge { .. })
    }

    /// Translate page `page` of `pdid` through `iommu`: one 2 MiB entry for a page of a huge
    /// page, a 4 KiB entry otherwise.
    #[inline]
    pub fn translate(
        &self,
        iommu: &mut Iommu,
        pdid: Pdid,
        page: u64,
        present: bool,
    ) -> Translation {
        if self.is_huge(pdid, page) {
            iommu.translate_huge(pdid, huge_of(page) / HUGE_PAGE_BYTES, present)
        } else {
            iommu.translate(pdid, page / PAGE_BYTES, present)
        }
    }

    /// The OS changed page `page`'s entry: drop what the IOMMU caches for it.
    pub fn invalidate(&self, iommu: &mut Iommu, pdid: Pdid, page: u64) {
        iommu.invalidate(pdid, page / PAGE_BYTES);
        if self.is_huge(pdid, page) {
            iommu.invalidate_huge(pdid, huge_of(page) / HUGE_PAGE_BYTES);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use unpinned_core::iommu::TranslationResult;
    use unpinned_core::profile::Profile;
    use unpinned_core::time::Duration;

    #[test]
    fn ranges_choose_the_source_and_the_entry_size() {
        let mut b = Backing::default();
        let major = PageSource::Major {
            io: Duration::from_us(100),
            readahead_pages: 8,
        };
        let huge = PageSource::Huge {
            cost: Duration::from_us(50),
        };
        b.set(1, 0x1000, 0x3000, major);
        b.set(1, 0x20_0000, 0x40_0000, huge);
        assert_eq!(b.source(1, 0x0), PageSource::Minor);
        assert_eq!(b.source(1, 0x3fff), major);
        assert_eq!(b.source(2, 0x3000), PageSource::Minor);
        assert_eq!(b.source(1, 0x5f_f000), huge);
        assert!(b.is_huge(1, 0x20_0000) && !b.is_huge(1, 0x1000));
        let mut m = Iommu::new(&Profile::forth_arm().iommu, 1);
        // Two pages of one huge page: one walk.
        let r = |t: Translation| t.result;
        assert_eq!(
            r(b.translate(&mut m, 1, 0x20_0000, true)),
            TranslationResult::Walk
        );
        assert_eq!(
            r(b.translate(&mut m, 1, 0x3f_f000, true)),
            TranslationResult::L1Hit
        );
        b.invalidate(&mut m, 1, 0x21_0000);
        assert_eq!(
            r(b.translate(&mut m, 1, 0x20_0000, false)),
            TranslationResult::Fault
        );
    }
}
