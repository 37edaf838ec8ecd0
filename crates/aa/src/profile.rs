//! The Active Access platform profile (spec "Calibration (reference study)"): a TOML file,
//! `profiles/cray-xe6.toml`, built in. Values the spec gives are used as given; the others are
//! documented assumptions in the file.

use serde::{Deserialize, Serialize};

/// The built-in profile text.
pub const CRAY_XE6: &str = include_str!("../../../profiles/cray-xe6.toml");

/// Errors loading a profile.
#[derive(Debug, thiserror::Error)]
pub enum AaProfileError {
    /// The TOML did not parse or did not match the schema.
    #[error("aa profile does not parse: {0}")]
    Parse(String),
    /// A value is out of range; the message names it.
    #[error("invalid aa profile value: {0}")]
    Invalid(String),
}

/// CPU costs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpuCosts {
    /// Processes (cores) per node.
    pub cores_per_node: u32,
    /// Interrupt latency charged to the interrupted core, ns.
    pub interrupt_ns: u64,
    /// One memory access, ns.
    pub memory_access_ns: u64,
    /// One scratchpad access, ns.
    pub scratchpad_ns: u64,
    /// CPU time to post one operation to the NIC, ns.
    pub post_ns: u64,
    /// Streaming memory copy bandwidth per node, GB/s.
    pub memory_gbps: f64,
}

/// IOMMU costs and geometry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IommuCosts {
    /// Internal processing per access, ns.
    pub base_ns: u64,
    /// Per additional memory access, ns.
    pub extra_access_ns: u64,
    /// Additional memory accesses of a page walk (IOTLB miss).
    pub walk_accesses: u32,
    /// Accesses in flight at once.
    pub concurrency: u32,
    /// IOTLB entries.
    pub iotlb_entries: u32,
    /// IOTLB ways.
    pub iotlb_ways: u32,
    /// IOTLB replacement (`lru` or `random`).
    pub iotlb_policy: String,
    /// Access log size per process, bytes.
    pub log_bytes: u32,
}

/// Network costs (3-D torus).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetCosts {
    /// Link bandwidth, Gb/s.
    pub link_gbps: f64,
    /// Router latency per hop, ns.
    pub hop_ns: u64,
    /// NIC processing at each end, ns.
    pub nic_ns: u64,
    /// NIC time per message (message rate), ns.
    pub nic_msg_ns: u64,
    /// Packet overhead bytes.
    pub header_bytes: u32,
    /// Outstanding non-blocking operations per process.
    pub window: u32,
}

/// Handler notification parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotifyCosts {
    /// AA-Int fill threshold, entries.
    pub int_threshold: u64,
    /// AA-Int period, us.
    pub int_period_us: f64,
}

/// Active-message baseline parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AmCosts {
    /// Memory accesses of an AM send beyond posting.
    pub send_accesses: u32,
    /// Poll interval of a waiting process, ns.
    pub idle_poll_ns: u64,
    /// AM-Exp back-off cap (polls skipped / idle interval multiplier).
    pub exp_max_skip: u32,
    /// Receive mailbox per process, bytes.
    pub mailbox_bytes: u32,
}

/// The 1 Gb/s Ethernet pair of the small-scale check.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EthernetCosts {
    /// Link bandwidth, Gb/s.
    pub link_gbps: f64,
    /// One-way latency, ns.
    pub latency_ns: u64,
    /// Per-frame overhead bytes on the wire.
    pub frame_overhead_bytes: u32,
    /// Smallest frame on the wire, bytes.
    pub min_frame_bytes: u32,
    /// Inserts in flight.
    pub window: u32,
}

/// The whole AA profile.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AaProfile {
    /// Short name.
    pub name: String,
    /// One line.
    pub description: String,
    /// CPU.
    pub cpu: CpuCosts,
    /// IOMMU.
    pub iommu: IommuCosts,
    /// Network.
    pub net: NetCosts,
    /// Notification.
    pub notify: NotifyCosts,
    /// AM baselines.
    pub am: AmCosts,
    /// Ethernet pair.
    pub ethernet: EthernetCosts,
}

/// True for a finite value above zero (NaN is not).
fn positive(x: f64) -> bool {
    x.is_finite() && x > 0.0
}

impl AaProfile {
    /// The built-in Cray XE6 profile.
    pub fn cray_xe6() -> AaProfile {
        AaProfile::from_toml(CRAY_XE6).expect("the built-in profile is valid")
    }

    /// Parse and validate.
    pub fn from_toml(text: &str) -> Result<AaProfile, AaProfileError> {
        let p: AaProfile =
            toml::from_str(text).map_err(|e| AaProfileError::Parse(e.to_string()))?;
        p.validate()?;
        Ok(p)
    }

    /// Check ranges; the message names the field.
    pub fn validate(&self) -> Result<(), AaProfileError> {
        let bad = |m: &str| Err(AaProfileError::Invalid(m.to_string()));
        if self.cpu.cores_per_node == 0 {
            return bad("cpu.cores_per_node must be > 0");
        }
        if !positive(self.cpu.memory_gbps) {
            return bad("cpu.memory_gbps must be > 0");
        }
        if self.iommu.concurrency == 0 {
            return bad("iommu.concurrency must be > 0");
        }
        let (e, w) = (self.iommu.iotlb_entries, self.iommu.iotlb_ways);
        if w == 0 || e == 0 || e % w != 0 {
            return bad("iommu.iotlb_entries must be a positive multiple of iommu.iotlb_ways");
        }
        if self
            .iommu
            .iotlb_policy
            .parse::<unpinned_core::iommu::Replacement>()
            .is_err()
        {
            return bad("iommu.iotlb_policy must be lru or random");
        }
        if self.iommu.log_bytes < 64 || self.am.mailbox_bytes < 64 {
            return bad("iommu.log_bytes and am.mailbox_bytes must be >= 64");
        }
        if !positive(self.net.link_gbps) || !positive(self.ethernet.link_gbps) {
            return bad("link_gbps must be > 0");
        }
        if self.net.window == 0 || self.ethernet.window == 0 {
            return bad("window must be > 0");
        }
        if self.notify.int_threshold == 0 || !positive(self.notify.int_period_us) {
            return bad("notify.int_threshold and notify.int_period_us must be > 0");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_parses_and_has_spec_values() {
        let p = AaProfile::cray_xe6();
        assert_eq!(
            (
                p.cpu.interrupt_ns,
                p.cpu.memory_access_ns,
                p.cpu.scratchpad_ns
            ),
            (3000, 70, 15)
        );
        assert_eq!((p.iommu.base_ns, p.iommu.extra_access_ns), (5, 70));
        assert_eq!(p.cpu.cores_per_node, 32);
    }

    #[test]
    fn validation_names_the_field() {
        let t = CRAY_XE6.replace("iotlb_ways = 4", "iotlb_ways = 3");
        let e = AaProfile::from_toml(&t).unwrap_err().to_string();
        assert!(e.contains("iotlb_entries"), "{e}");
    }
}
