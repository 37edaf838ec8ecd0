//! Page-in policies (spec part.md, mechanism 8).

use crate::api::FaultRecord;

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
}

impl PageInPolicy {
    /// Lower-case name as used in CSVs (`pio`, `pi4`, `pia`).
    pub fn name(self) -> &'static str {
        todo!("os helper")
    }
    /// Page-aligned range `[start, end)` of pages to bring in for `rec`.
    pub fn pages(self, _rec: &FaultRecord) -> (u64, u64) {
        todo!("os helper")
    }
}

impl std::str::FromStr for PageInPolicy {
    type Err = String;
    fn from_str(_s: &str) -> Result<Self, String> {
        todo!("os helper")
    }
}
