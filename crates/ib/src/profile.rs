//! Vendor profiles (odp.md, "RC transport" and "ODP"): the ACK-timer floor and the fault
//! resolution costs of each ConnectX generation, as TOML files under `profiles/`.
//!
//! A profile holds component costs only (never an expected result); numbers the spec does not
//! give are marked "assumption" in the TOML comments.

use serde::{Deserialize, Serialize};
use unpinned_core::time::Duration;

use crate::loss_model::LossModelConfig;

/// The built-in profiles, by name.
pub const BUILTIN: [(&str, &str); 4] = [
    (
        "connectx3",
        include_str!("../../../profiles/connectx3.toml"),
    ),
    (
        "connectx4",
        include_str!("../../../profiles/connectx4.toml"),
    ),
    (
        "connectx5",
        include_str!("../../../profiles/connectx5.toml"),
    ),
    (
        "connectx6",
        include_str!("../../../profiles/connectx6.toml"),
    ),
];

/// Errors loading a vendor profile.
#[derive(Debug, thiserror::Error)]
pub enum VendorProfileError {
    /// The TOML did not parse or did not match the schema.
    #[error("vendor profile does not parse: {0}")]
    Parse(String),
    /// A value is out of range; the message names the field.
    #[error("invalid vendor profile value: {0}")]
    Invalid(String),
    /// No built-in profile with that name and no such file.
    #[error("no built-in vendor profile {0:?} and no such file (built-in: connectx3..6)")]
    NotFound(String),
}

/// ACK-timer parameters (odp.md, "ACK timeout").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimerProfile {
    /// Smallest C_ACK the NIC honours; a smaller setting silently uses this one.
    pub c_ack_floor: u8,
    /// Scans of the mark-and-sweep ACK timer before a request expires (see [`crate::ack_timer`]).
    pub scans_to_expire: u32,
}

/// ODP fault-path costs (odp.md, "ODP").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OdpProfile {
    /// Resolution of a requester-side (local) fault, us.
    pub local_fault_us: f64,
    /// Resolution of a responder-side (remote) fault, us.
    pub remote_fault_us: f64,
    /// Extra uniform [0, this] us added to every resolution.
    pub fault_jitter_us: f64,
    /// Actual RNR wait / configured minimal RNR delay.
    pub rnr_delay_factor: f64,
    /// The observed loss behaviour of the ODP path.
    pub loss_model: LossModelConfig,
}

/// Link and NIC costs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IbNetProfile {
    /// Link bandwidth, Gb/s.
    pub link_gbps: f64,
    /// One-way latency (wire + switch), ns.
    pub latency_ns: u64,
    /// NIC per-packet processing at each side, ns.
    pub nic_packet_ns: u64,
    /// Link-level bytes per packet besides our packet format.
    pub header_bytes: u32,
    /// Largest message (one packet), bytes.
    pub mtu_bytes: u32,
}

/// A ConnectX profile.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VendorProfile {
    /// Short name (`connectx4`).
    pub name: String,
    /// One line.
    pub description: String,
    /// ACK timer.
    pub timer: TimerProfile,
    /// ODP fault path.
    pub odp: OdpProfile,
    /// Links and NIC.
    pub net: IbNetProfile,
}

impl VendorProfile {
    /// Parse and validate a TOML profile.
    pub fn from_toml(text: &str) -> Result<VendorProfile, VendorProfileError> {
        let p: VendorProfile =
            toml::from_str(text).map_err(|e| VendorProfileError::Parse(e.to_string()))?;
        p.validate()?;
        Ok(p)
    }

    /// A built-in profile by name, or a TOML file by path.
    pub fn load(name_or_path: &str) -> Result<VendorProfile, VendorProfileError> {
        if let Some((_, text)) = BUILTIN.iter().find(|(n, _)| *n == name_or_path) {
            return Self::from_toml(text);
        }
        match std::fs::read_to_string(name_or_path) {
            Ok(text) => Self::from_toml(&text),
            Err(_) => Err(VendorProfileError::NotFound(name_or_path.to_string())),
        }
    }

    /// A built-in profile; panics on an unknown name (a programming error).
    pub fn builtin(name: &str) -> VendorProfile {
        let text = BUILTIN
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, t)| *t)
            .unwrap_or_else(|| panic!("no built-in vendor profile {name}"));
        Self::from_toml(text).expect("built-in vendor profiles are valid")
    }

    /// Every built-in profile, in generation order.
    pub fn all_builtin() -> Vec<VendorProfile> {
        BUILTIN.iter().map(|(n, _)| Self::builtin(n)).collect()
    }

    /// Reject impossible values, naming the field.
    pub fn validate(&self) -> Result<(), VendorProfileError> {
        let bad = |f: &str| Err(VendorProfileError::Invalid(f.to_string()));
        if self.timer.c_ack_floor > 31 {
            return bad("timer.c_ack_floor must be a 5-bit value (0..=31)");
        }
        if self.timer.scans_to_expire == 0 {
            return bad("timer.scans_to_expire must be at least 1");
        }
        for (v, f) in [
            (self.odp.local_fault_us, "odp.local_fault_us"),
            (self.odp.remote_fault_us, "odp.remote_fault_us"),
            (self.odp.fault_jitter_us, "odp.fault_jitter_us"),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return bad(&format!("{f} must be a finite number >= 0"));
            }
        }
        if !(self.odp.rnr_delay_factor.is_finite() && self.odp.rnr_delay_factor >= 1.0) {
            return bad("odp.rnr_delay_factor must be >= 1");
        }
        if !(self.net.link_gbps.is_finite() && self.net.link_gbps > 0.0) {
            return bad("net.link_gbps must be > 0");
        }
        if self.net.mtu_bytes == 0 || self.net.mtu_bytes > 65_535 {
            return bad("net.mtu_bytes must be in 1..=65535");
        }
        Ok(())
    }

    /// Resolution time of a fault on `side` before jitter.
    pub fn fault_cost(&self, side: crate::engine::FaultSide) -> Duration {
        Duration::from_us_f64(match side {
            crate::engine::FaultSide::Requester => self.odp.local_fault_us,
            crate::engine::FaultSide::Responder => self.odp.remote_fault_us,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn builtins_load_with_the_spec_floors() {
        let floors: Vec<u8> = VendorProfile::all_builtin()
            .iter()
            .map(|p| p.timer.c_ack_floor)
            .collect();
        assert_eq!(floors, vec![16, 16, 12, 16]);
        for p in VendorProfile::all_builtin() {
            assert!(
                p.odp.loss_model.enabled,
                "{}: loss model on by default",
                p.name
            );
            assert_eq!(p.odp.rnr_delay_factor, 3.0);
        }
    }
    #[test]
    fn bad_values_are_named() {
        let text = BUILTIN[0].1.replace("c_ack_floor = 16", "c_ack_floor = 40");
        let e = VendorProfile::from_toml(&text).unwrap_err().to_string();
        assert!(e.contains("c_ack_floor"), "{e}");
        assert!(matches!(
            VendorProfile::load("nope"),
            Err(VendorProfileError::NotFound(_))
        ));
    }
}
