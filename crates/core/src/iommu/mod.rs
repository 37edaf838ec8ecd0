//! IOMMU model (spec part.md, "Calibration: IOMMU"): L1/L2 TLBs with configurable size,
//! associativity and replacement, page-table walk cost, faults on non-present pages (no TLB
//! fill), hit-under-previous-fault (a fault never blocks later translations), invalidation.
//!
//! Residency itself (which pages are present) is the page table's business and lives with the
//! memory model; [`Iommu::translate`] is told whether the walked entry is present.

mod huge;
mod index;
mod tlb;
pub use huge::{HUGE_KEY, WALK_LEVELS};
pub use tlb::{Replacement, Tlb};

use crate::memory::Pdid;
use crate::profile::IommuProfile;
use crate::rng::derive_seed;
use crate::time::Duration;

/// Where a translation was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TranslationResult {
    /// L1 TLB hit.
    L1Hit,
    /// L2 TLB hit (L1 filled).
    L2Hit,
    /// Page-table walk, page present (both TLBs filled).
    Walk,
    /// Page-table walk found the page not present: an IOMMU fault (nothing cached).
    Fault,
}

/// Result and latency of one translation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Translation {
    /// Outcome.
    pub result: TranslationResult,
    /// Time the translation took.
    pub latency: Duration,
}

/// Counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IommuStats {
    /// L1 hits.
    pub l1_hits: u64,
    /// L2 hits.
    pub l2_hits: u64,
    /// Walks (including those that faulted).
    pub walks: u64,
    /// Faults (walks that found the page not present).
    pub faults: u64,
    /// Entries invalidated.
    pub invalidations: u64,
}

/// The IOMMU of one node: a two-level TLB in front of the process page tables.
pub struct Iommu {
    l1: Tlb,
    l2: Tlb,
    l2_hit: Duration,
    walk: Duration,
    cfg: IommuProfile,
    stats: IommuStats,
}

impl Iommu {
    /// Build from a profile; `seed` drives random replacement.
    ///
    /// Each TLB gets its own sub-seed so that resizing one does not change the victims chosen
    /// by the other. The profile is assumed validated (entries a multiple of ways, policy
    /// `lru` or `random`); an unknown policy panics.
    pub fn new(cfg: &IommuProfile, seed: u64) -> Iommu {
        let policy: Replacement = cfg
            .policy
            .parse()
            .unwrap_or_else(|e| panic!("iommu.policy: {e}"));
        Iommu {
            l1: Tlb::new(
                cfg.l1_entries as usize,
                cfg.l1_ways as usize,
                policy,
                derive_seed(seed, "iommu.l1"),
            ),
            l2: Tlb::new(
                cfg.l2_entries as usize,
                cfg.l2_ways as usize,
                policy,
                derive_seed(seed, "iommu.l2"),
            ),
            l2_hit: Duration::from_ns(cfg.l2_hit_ns),
            walk: Duration::from_ns(cfg.walk_ns),
            cfg: cfg.clone(),
            stats: IommuStats::default(),
        }
    }

    /// The profile this IOMMU was built from (the simulator reads `parallel_walks` and
    /// `outstanding` from it: concurrency limits are the driver's business, not the TLB's).
    pub fn config(&self) -> &IommuProfile {
        &self.cfg
    }

    /// Translate page `vpn` (page number, not address) of context `pdid`; `present` says
    /// whether the page table maps it present.
    ///
    /// A TLB hit is trusted without consulting `present`: the OS invalidates entries when it
    /// changes the page table (spec, "TLB entries are invalidated when the OS changes the page
    /// table"), so a stale hit is the driver's missing [`Iommu::invalidate`], as on hardware.
    /// A fault caches nothing and leaves no state behind, so later translations (of this or
    /// any other transfer) proceed normally: hit under previous fault (mechanism 4).
    #[inline]
    pub fn translate(&mut self, pdid: Pdid, vpn: u64, present: bool) -> Translation {
        // An L1 hit (almost every packet: 16 per page) stays inline in the caller.
        if self.l1.lookup(pdid, vpn) {
            self.stats.l1_hits += 1;
            return Translation {
                result: TranslationResult::L1Hit,
                latency: Duration::ZERO,
            };
        }
        self.translate_l1_miss(pdid, vpn, present)
    }

    /// [`Iommu::translate`] after an L1 miss: L2, then the walk.
    #[inline(never)]
    fn translate_l1_miss(&mut self, pdid: Pdid, vpn: u64, present: bool) -> Translation {
        if self.l2.lookup(pdid, vpn) {
            self.stats.l2_hits += 1;
            self.l1.insert_absent(pdid, vpn);
            return Translation {
                result: TranslationResult::L2Hit,
                latency: self.l2_hit,
            };
        }
        self.stats.walks += 1;
        if present {
            self.l2.insert_absent(pdid, vpn);
            self.l1.insert_absent(pdid, vpn);
            Translation {
                result: TranslationResult::Walk,
                latency: self.walk,
            }
        } else {
            self.stats.faults += 1;
            Translation {
                result: TranslationResult::Fault,
                latency: self.walk,
            }
        }
    }

    /// The OS changed the page-table entry of `vpn`: drop it from both TLBs.
    pub fn invalidate(&mut self, pdid: Pdid, vpn: u64) {
        let n = self.l1.invalidate(pdid, vpn) as u64 + self.l2.invalidate(pdid, vpn) as u64;
        self.stats.invalidations += n;
    }

    /// Drop every entry of a context.
    pub fn invalidate_context(&mut self, pdid: Pdid) {
        let n = self.l1.invalidate_context(pdid) + self.l2.invalidate_context(pdid);
        self.stats.invalidations += n as u64;
    }

    /// Counters so far. `invalidations` counts TLB entries actually dropped (an entry cached in
    /// both levels counts twice), not invalidation requests.
    pub fn stats(&self) -> IommuStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Profile;

    fn iommu() -> Iommu {
        Iommu::new(&Profile::forth_arm().iommu, 1)
    }

    #[test]
    fn walk_then_l1_hit() {
        let mut m = iommu();
        let t = m.translate(1, 100, true);
        assert_eq!(
            t,
            Translation {
                result: TranslationResult::Walk,
                latency: Duration::from_ns(600)
            }
        );
        let t = m.translate(1, 100, true);
        assert_eq!(
            t,
            Translation {
                result: TranslationResult::L1Hit,
                latency: Duration::ZERO
            }
        );
        let s = m.stats();
        assert_eq!((s.walks, s.l1_hits, s.l2_hits, s.faults), (1, 1, 0, 0));
    }

    #[test]
    fn l2_hit_after_l1_eviction_refills_l1() {
        let mut m = iommu();
        // 129 distinct pages overflow the 128-entry L1 (LRU): page 0 falls out of L1 only.
        for v in 0..129 {
            assert_eq!(m.translate(1, v, true).result, TranslationResult::Walk);
        }
        let t = m.translate(1, 0, true);
        assert_eq!(
            t,
            Translation {
                result: TranslationResult::L2Hit,
                latency: Duration::from_ns(20)
            }
        );
        assert_eq!(m.translate(1, 0, true).result, TranslationResult::L1Hit);
        assert_eq!(m.stats().l2_hits, 1);
    }

    #[test]
    fn fault_caches_nothing_and_does_not_block() {
        let mut m = iommu();
        let t = m.translate(1, 7, false);
        assert_eq!(
            t,
            Translation {
                result: TranslationResult::Fault,
                latency: Duration::from_ns(600)
            }
        );
        // Hit under previous fault: other pages translate normally meanwhile.
        assert_eq!(m.translate(1, 8, true).result, TranslationResult::Walk);
        assert_eq!(m.translate(1, 8, true).result, TranslationResult::L1Hit);
        // The faulted page faults again until it is present, then walks.
        assert_eq!(m.translate(1, 7, false).result, TranslationResult::Fault);
        assert_eq!(m.translate(1, 7, true).result, TranslationResult::Walk);
        assert_eq!(m.translate(1, 7, true).result, TranslationResult::L1Hit);
        let s = m.stats();
        assert_eq!((s.walks, s.faults), (4, 2));
    }

    #[test]
    fn invalidation_forces_a_walk() {
        let mut m = iommu();
        m.translate(1, 5, true);
        m.translate(2, 5, true);
        m.invalidate(1, 5);
        assert_eq!(m.stats().invalidations, 2); // L1 and L2
        assert_eq!(m.translate(1, 5, false).result, TranslationResult::Fault);
        assert_eq!(m.translate(2, 5, false).result, TranslationResult::L1Hit);
        m.invalidate_context(2);
        assert_eq!(m.stats().invalidations, 4);
        assert_eq!(m.translate(2, 5, true).result, TranslationResult::Walk);
    }

    #[test]
    fn random_policy_builds_and_is_reproducible() {
        let mut p = Profile::forth_arm().iommu;
        p.policy = "random".into();
        let run = || {
            let mut m = Iommu::new(&p, 9);
            let mut v = 0u64;
            let mut out = Vec::new();
            for i in 0..5000u64 {
                v = (v * 31 + i) % 3000;
                out.push(m.translate(0, v, true).result);
            }
            out
        };
        assert_eq!(run(), run());
    }
}
