//! IOMMU model (spec part.md, "Calibration: IOMMU"): L1/L2 TLBs with configurable size,
//! associativity and replacement, page-table walk cost, faults on non-present pages (no TLB
//! fill), hit-under-previous-fault (a fault never blocks later translations), invalidation.
//!
//! Residency itself (which pages are present) is the page table's business and lives with the
//! memory model; [`Iommu::translate`] is told whether the walked entry is present.

mod tlb;
pub use tlb::{Replacement, Tlb};

use crate::memory::Pdid;
use crate::profile::IommuProfile;
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

/// The IOMMU of one node.
pub struct Iommu {
    _todo: (),
}

impl Iommu {
    /// Build from a profile; `seed` drives random replacement.
    pub fn new(_cfg: &IommuProfile, _seed: u64) -> Iommu {
        todo!("iommu helper")
    }
    /// Translate page `vpn` (page number, not address) of context `pdid`; `present` says
    /// whether the page table maps it present.
    pub fn translate(&mut self, _pdid: Pdid, _vpn: u64, _present: bool) -> Translation {
        todo!("iommu helper")
    }
    /// The OS changed the page-table entry of `vpn`: drop it from both TLBs.
    pub fn invalidate(&mut self, _pdid: Pdid, _vpn: u64) {
        todo!("iommu helper")
    }
    /// Drop every entry of a context.
    pub fn invalidate_context(&mut self, _pdid: Pdid) {
        todo!("iommu helper")
    }
    /// Counters so far.
    pub fn stats(&self) -> IommuStats {
        todo!("iommu helper")
    }
}
