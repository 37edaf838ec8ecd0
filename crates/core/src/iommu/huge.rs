//! 2 MiB translations (transparent huge pages) in the IOMMU model.
//!
//! The ARM SMMU caches block entries in the same TLBs as page entries. The model keys a huge
//! page's entry by its 2 MiB frame number with [`HUGE_KEY`] set, so it shares the L1 / L2 sets
//! and replacement with 4 KiB entries but never collides with one. A walk that ends at a
//! level-2 block entry reads one level fewer than a full walk: with the spec's 3 levels for
//! 39-bit VAs and equal cost per level, `walk_ns * 2 / 3`.

use super::{Iommu, Translation, TranslationResult};
use crate::memory::Pdid;
use crate::time::Duration;

/// Levels of a full walk (spec part.md: 3 levels for 39-bit VAs).
pub const WALK_LEVELS: u64 = 3;

/// Set in the TLB key of a 2 MiB entry (user VAs have far fewer bits).
pub const HUGE_KEY: u64 = 1 << 62;

impl Iommu {
    /// Translate the huge page with 2 MiB frame number `hpn` (address >> 21) of `pdid`;
    /// `present` says whether the page table maps it present. One TLB entry covers its 512
    /// pages; otherwise as [`Iommu::translate`] (a fault caches nothing).
    pub fn translate_huge(&mut self, pdid: Pdid, hpn: u64, present: bool) -> Translation {
        let key = HUGE_KEY | hpn;
        if self.l1.lookup(pdid, key) {
            self.stats.l1_hits += 1;
            return Translation {
                result: TranslationResult::L1Hit,
                latency: Duration::ZERO,
            };
        }
        if self.l2.lookup(pdid, key) {
            self.stats.l2_hits += 1;
            self.l1.insert_absent(pdid, key);
            return Translation {
                result: TranslationResult::L2Hit,
                latency: self.l2_hit,
            };
        }
        self.stats.walks += 1;
        let latency = Duration::from_ns(self.walk.as_ns() * (WALK_LEVELS - 1) / WALK_LEVELS);
        if present {
            self.l2.insert_absent(pdid, key);
            self.l1.insert_absent(pdid, key);
            Translation {
                result: TranslationResult::Walk,
                latency,
            }
        } else {
            self.stats.faults += 1;
            Translation {
                result: TranslationResult::Fault,
                latency,
            }
        }
    }

    /// The OS changed the block entry of huge page `hpn`: drop it from both TLBs.
    pub fn invalidate_huge(&mut self, pdid: Pdid, hpn: u64) {
        self.invalidate(pdid, HUGE_KEY | hpn);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Profile;

    #[test]
    fn one_entry_per_huge_page_and_a_shorter_walk() {
        let mut m = Iommu::new(&Profile::forth_arm().iommu, 1);
        let t = m.translate_huge(1, 5, true);
        assert_eq!(t.result, TranslationResult::Walk);
        assert_eq!(t.latency, Duration::from_ns(400));
        assert_eq!(
            m.translate_huge(1, 5, true).result,
            TranslationResult::L1Hit
        );
        // The 4 KiB page with the same number is another entry.
        assert_eq!(m.translate(1, 5, true).result, TranslationResult::Walk);
        assert_eq!(
            m.translate_huge(1, 6, false).result,
            TranslationResult::Fault
        );
        assert_eq!(m.translate_huge(1, 6, true).result, TranslationResult::Walk);
        m.invalidate_huge(1, 5);
        assert_eq!(
            m.translate_huge(1, 5, false).result,
            TranslationResult::Fault
        );
        assert_eq!(m.translate(1, 5, true).result, TranslationResult::L1Hit);
        let s = m.stats();
        assert_eq!((s.walks, s.faults), (5, 2));
    }
}
