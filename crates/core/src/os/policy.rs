//! Page-in policies (spec part.md, mechanism 8).

use crate::api::FaultRecord;
use crate::memory::{page_of, PAGE_BYTES};

/// Which pages to bring in when a fault is seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PageInPolicy {
    /// The faulting page only.
    Pio,
    /// The whole block of the faulting page.
    Pi4,
    /// All remaining pages of the transfer, from the faulting page on.
    Pia,
    /// PIO or PIA (or PIA up to a lookahead under memory pressure) per fault, from the fault
    /// density observed so far and the profile's costs: [`super::adaptive`]. Needs the
    /// planner's state ([`super::PageInPlan`]); alone, [`PageInPolicy::pages`] gives the
    /// faulting page.
    Adaptive,
}

/// The end of the page holding the last byte before `end` (page-rounded up). Saturates at the
/// last page start for ranges reaching the top of the address space (not a real user VA).
fn page_end(end: u64) -> u64 {
    page_of(end.saturating_add(PAGE_BYTES - 1))
}

impl PageInPolicy {
    /// Every policy: the fixed ones in increasing eagerness, then the adaptive one.
    pub const ALL: [PageInPolicy; 4] = [
        PageInPolicy::Pio,
        PageInPolicy::Pi4,
        PageInPolicy::Pia,
        PageInPolicy::Adaptive,
    ];

    /// Lower-case name as used in CSVs (`pio`, `pi4`, `pia`, `adaptive`).
    pub fn name(self) -> &'static str {
        match self {
            PageInPolicy::Pio => "pio",
            PageInPolicy::Pi4 => "pi4",
            PageInPolicy::Pia => "pia",
            PageInPolicy::Adaptive => "adaptive",
        }
    }

    /// Page-aligned range `[start, end)` of pages to bring in for `rec`.
    ///
    /// - PIO: the faulting page.
    /// - PI4: every page overlapping the faulting block's range (4 for an aligned 16 KiB block;
    ///   5 when the block straddles pages, since all its bytes must be present).
    /// - PIA: from the faulting page to the end of the transfer; earlier pages of the transfer
    ///   are not included (they were written already or will fault on their own).
    ///
    /// - Adaptive: the faulting page here; the planner ([`super::PageInPlan`]) widens it from
    ///   what it has seen.
    ///
    /// Whatever the ranges in the record say, the faulting page is always included: a record
    /// whose ranges do not cover its own page must still make progress.
    pub fn pages(self, rec: &FaultRecord) -> (u64, u64) {
        let fault = page_of(rec.page_addr);
        let fault_end = fault.saturating_add(PAGE_BYTES);
        match self {
            PageInPolicy::Pio | PageInPolicy::Adaptive => (fault, fault_end),
            PageInPolicy::Pi4 => {
                let (s, e) = rec.block_range;
                (page_of(s).min(fault), page_end(e).max(fault_end))
            }
            PageInPolicy::Pia => (fault, page_end(rec.transfer_range.1).max(fault_end)),
        }
    }
}

impl std::fmt::Display for PageInPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for PageInPolicy {
    type Err = String;
    /// Accepts `pio`, `pi4`, `pia`, `adaptive` (case-insensitive, so the spec's upper-case
    /// names work too).
    fn from_str(s: &str) -> Result<Self, String> {
        let l = s.trim().to_ascii_lowercase();
        PageInPolicy::ALL
            .into_iter()
            .find(|p| p.name() == l)
            .ok_or_else(|| format!("unknown page-in policy {s:?} (valid: pio, pi4, pia, adaptive)"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{FaultSide, TransferKey};

    fn rec(page_addr: u64, block: (u64, u64), transfer: (u64, u64)) -> FaultRecord {
        FaultRecord {
            side: FaultSide::Destination,
            transfer: TransferKey {
                data_src: 0,
                data_dst: 1,
                id: 1,
                read_response: false,
            },
            block: 0,
            block_seq: 0,
            pdid: 1,
            page_addr,
            block_range: block,
            transfer_range: transfer,
        }
    }

    #[test]
    fn aligned_transfer() {
        // 64 KiB transfer at 0x10000, fault in block 1 (0x14000..0x18000), page 0x15000.
        let r = rec(0x15000, (0x14000, 0x18000), (0x10000, 0x20000));
        assert_eq!(PageInPolicy::Pio.pages(&r), (0x15000, 0x16000));
        assert_eq!(PageInPolicy::Pi4.pages(&r), (0x14000, 0x18000));
        assert_eq!(PageInPolicy::Pia.pages(&r), (0x15000, 0x20000));
    }

    #[test]
    fn unaligned_ranges_round_outwards() {
        // A 100-byte transfer straddling a page boundary, fault on its second page.
        let r = rec(0x2000, (0x1fc0, 0x2024), (0x1fc0, 0x2024));
        assert_eq!(PageInPolicy::Pio.pages(&r), (0x2000, 0x3000));
        assert_eq!(PageInPolicy::Pi4.pages(&r), (0x1000, 0x3000));
        assert_eq!(PageInPolicy::Pia.pages(&r), (0x2000, 0x3000));
        // An unaligned 16 KiB block touches 5 pages.
        let r = rec(0x1000, (0x800, 0x4800), (0x800, 0x8800));
        assert_eq!(PageInPolicy::Pi4.pages(&r), (0x0, 0x5000));
        assert_eq!(PageInPolicy::Pia.pages(&r), (0x1000, 0x9000));
    }

    #[test]
    fn faulting_page_always_included() {
        let r = rec(0x9000, (0, 0), (0, 0));
        for p in PageInPolicy::ALL {
            let (s, e) = p.pages(&r);
            assert!(s <= 0x9000 && e >= 0xa000, "{p}");
        }
    }

    #[test]
    fn names_round_trip() {
        for p in PageInPolicy::ALL {
            assert_eq!(p.name().parse::<PageInPolicy>(), Ok(p));
        }
        assert_eq!("PIA".parse::<PageInPolicy>(), Ok(PageInPolicy::Pia));
        let e = "pi8".parse::<PageInPolicy>().unwrap_err();
        assert!(e.contains("pio, pi4, pia, adaptive"), "{e}");
    }
}
