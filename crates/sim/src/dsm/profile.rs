//! The DSM reference-cluster calibration (spec dsm.md, "Calibration"): a TOML file,
//! `profiles/dsm-ib1.toml`, built in. Every field is documented in the file, which marks the
//! values the spec does not give as assumptions.

use serde::{Deserialize, Serialize};

/// The built-in profile text.
pub const DSM_IB1: &str = include_str!("../../../../profiles/dsm-ib1.toml");

/// Errors loading a profile.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DsmProfileError {
    /// The TOML did not parse or did not match the schema.
    #[error("dsm profile does not parse: {0}")]
    Parse(String),
    /// A value is out of range; the message names it.
    #[error("invalid dsm profile value: {0}")]
    Invalid(String),
}

/// CPU of a node.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DsmCpu {
    /// Processors per node.
    pub cpus_per_node: u32,
    /// Factor from trace computation time to the reference node's.
    pub cpu_scale: f64,
}

/// Host OS costs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DsmOs {
    /// Interrupt delivery, us.
    pub interrupt_us: f64,
    /// Page fault to the handler, us.
    pub fault_us: f64,
    /// One system call, us.
    pub syscall_us: f64,
    /// One page's protection change with the batched primitive, us.
    pub protect_batched_us: f64,
    /// Extra delay of the deferred (task-queue) context, us.
    pub deferred_delay_us: f64,
}

/// Network and NIC costs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DsmNet {
    /// Posting a work request, us.
    pub post_us: f64,
    /// RDMA write one way, us.
    pub rdma_write_one_way_us: f64,
    /// SEND one way, us.
    pub send_one_way_us: f64,
    /// RDMA read, completion by polling memory, us (not used by the replay).
    pub rdma_read_poll_us: f64,
    /// RDMA read plus completion-queue update, us (not used by the replay).
    pub rdma_read_cq_us: f64,
    /// Polling an empty completion queue, us.
    pub cq_poll_empty_us: f64,
    /// Bandwidth at `bw_small_bytes`, MB/s.
    pub bw_small_mb_s: f64,
    /// Small request size, bytes.
    pub bw_small_bytes: u64,
    /// Bandwidth at `bw_large_bytes`, MB/s.
    pub bw_large_mb_s: f64,
    /// Large request size, bytes.
    pub bw_large_bytes: u64,
    /// Control message size, bytes.
    pub control_bytes: u64,
}

/// The user-level baseline's differences.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DsmUser {
    /// Delay per action that needs a system call at user level, us.
    pub extra_syscall_us: f64,
}

/// A DSM cluster profile.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DsmProfile {
    /// Profile name.
    pub name: String,
    /// CPU.
    pub cpu: DsmCpu,
    /// OS.
    pub os: DsmOs,
    /// Network.
    pub net: DsmNet,
    /// User-level baseline.
    pub user: DsmUser,
}

impl DsmProfile {
    /// The built-in `dsm-ib1` profile.
    pub fn dsm_ib1() -> DsmProfile {
        DsmProfile::from_toml(DSM_IB1).expect("the built-in profile is valid")
    }

    /// Parse and validate a profile.
    pub fn from_toml(text: &str) -> Result<DsmProfile, DsmProfileError> {
        let p: DsmProfile =
            toml::from_str(text).map_err(|e| DsmProfileError::Parse(e.to_string()))?;
        p.validate()?;
        Ok(p)
    }

    /// Check ranges; the message names the field.
    pub fn validate(&self) -> Result<(), DsmProfileError> {
        let bad = |m: String| Err(DsmProfileError::Invalid(m));
        if self.cpu.cpus_per_node == 0 || self.cpu.cpus_per_node > 64 {
            return bad(format!(
                "cpu.cpus_per_node = {} (1..=64)",
                self.cpu.cpus_per_node
            ));
        }
        if !(self.cpu.cpu_scale.is_finite()
            && self.cpu.cpu_scale > 0.0
            && self.cpu.cpu_scale <= 1e3)
        {
            return bad(format!(
                "cpu.cpu_scale = {} (0 < x <= 1000)",
                self.cpu.cpu_scale
            ));
        }
        let costs = [
            ("os.interrupt_us", self.os.interrupt_us),
            ("os.fault_us", self.os.fault_us),
            ("os.syscall_us", self.os.syscall_us),
            ("os.protect_batched_us", self.os.protect_batched_us),
            ("os.deferred_delay_us", self.os.deferred_delay_us),
            ("net.post_us", self.net.post_us),
            ("net.rdma_write_one_way_us", self.net.rdma_write_one_way_us),
            ("net.send_one_way_us", self.net.send_one_way_us),
            ("net.rdma_read_poll_us", self.net.rdma_read_poll_us),
            ("net.rdma_read_cq_us", self.net.rdma_read_cq_us),
            ("net.cq_poll_empty_us", self.net.cq_poll_empty_us),
            ("user.extra_syscall_us", self.user.extra_syscall_us),
        ];
        for (name, v) in costs {
            if !(v.is_finite() && (0.0..=1e6).contains(&v)) {
                return bad(format!("{name} = {v} (0..=1e6 us)"));
            }
        }
        if self.net.cq_poll_empty_us <= 0.0 {
            return bad("net.cq_poll_empty_us must be > 0 (the poll period)".into());
        }
        for (name, v) in [
            ("net.bw_small_mb_s", self.net.bw_small_mb_s),
            ("net.bw_large_mb_s", self.net.bw_large_mb_s),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return bad(format!("{name} = {v} (positive)"));
            }
        }
        if self.net.bw_small_bytes == 0 || self.net.bw_large_bytes <= self.net.bw_small_bytes {
            return bad(format!(
                "net.bw_small_bytes = {} must be > 0 and below net.bw_large_bytes = {}",
                self.net.bw_small_bytes, self.net.bw_large_bytes
            ));
        }
        if self.net.control_bytes == 0 {
            return bad("net.control_bytes must be > 0".into());
        }
        Ok(())
    }

    /// Bandwidth for a request of `bytes`, MB/s: linear in log2(size) between the two
    /// calibrated points, constant outside them.
    pub fn bandwidth_mb_s(&self, bytes: u64) -> f64 {
        let n = &self.net;
        let (lo, hi) = (
            (n.bw_small_bytes as f64).log2(),
            (n.bw_large_bytes as f64).log2(),
        );
        let x = (bytes.max(1) as f64).log2().clamp(lo, hi);
        n.bw_small_mb_s + (n.bw_large_mb_s - n.bw_small_mb_s) * (x - lo) / (hi - lo)
    }

    /// Time to move `bytes` at the size's bandwidth, ns.
    pub fn serialization_ns(&self, bytes: u64) -> u64 {
        (bytes as f64 * 1e3 / self.bandwidth_mb_s(bytes)).round() as u64
    }
}

/// Microseconds to whole nanoseconds.
pub(crate) fn ns(us: f64) -> u64 {
    (us * 1e3).round() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_profile_has_the_spec_table_and_bad_values_are_named() {
        let p = DsmProfile::dsm_ib1();
        assert_eq!(p.os.interrupt_us, 10.0);
        assert_eq!(p.net.cq_poll_empty_us, 7.0);
        assert_eq!(p.bandwidth_mb_s(256), 52.0);
        assert_eq!(p.bandwidth_mb_s(4096), 103.0);
        assert!((p.bandwidth_mb_s(1024) - 77.5).abs() < 1e-9);
        // 4 KiB at 103 MB/s: 39.8 us.
        assert_eq!(p.serialization_ns(4096), 39_767);
        let bad = DSM_IB1.replace("cpu_scale = 3.34", "cpu_scale = -1.0");
        let e = DsmProfile::from_toml(&bad).unwrap_err().to_string();
        assert!(e.contains("cpu.cpu_scale"), "{e}");
        let bad = DSM_IB1.replace("post_us = 2.0", "post_us = nan");
        assert!(DsmProfile::from_toml(&bad)
            .unwrap_err()
            .to_string()
            .contains("net.post_us"));
        assert!(DsmProfile::from_toml("name = 1").is_err());
    }
}
