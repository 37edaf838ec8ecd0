//! Cost profiles: the measured component costs of a platform, as a TOML file.
//!
//! A profile holds inputs only (component costs and sizes), never expected results. The
//! reference platform `forth-arm` is built in; others load from files. `--set key=value`
//! overrides any field by its dotted path, and [`Profile::validate`] rejects impossible values
//! with a message that names the field.

use serde::{Deserialize, Serialize};

/// The built-in reference profile (spec part.md, "Calibration").
pub const FORTH_ARM_TOML: &str = include_str!("../../../profiles/forth-arm.toml");

/// Errors loading or changing a profile.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// The TOML did not parse or did not match the schema.
    #[error("profile does not parse: {0}")]
    Parse(String),
    /// A value is out of range; the message names the field and the rule.
    #[error("invalid profile value: {0}")]
    Invalid(String),
    /// `--set` named no existing field or was not `key=value`.
    #[error("bad override {0:?}: {1}")]
    Override(String, String),
    /// Unknown built-in name and no such file.
    #[error("no built-in profile named {0:?} and no such file (built-in: forth-arm)")]
    NotFound(String),
}

/// Network costs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetProfile {
    /// Link bandwidth between boards, Gb/s.
    pub link_gbps: f64,
    /// Link bandwidth inside a board, Gb/s.
    pub board_link_gbps: f64,
    /// Latency per hop, ns.
    pub hop_latency_ns: u64,
    /// Hops between the two nodes of two-node experiments.
    pub hops: u32,
    /// NI per-packet processing time at each side, ns.
    pub ni_packet_ns: u64,
    /// Link-level bytes per packet besides the payload (header + CRC of the modelled NI).
    pub header_bytes: u32,
}

/// PART engine parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineProfile {
    /// Block size in bytes (unit of acknowledgement and retransmission).
    pub block_bytes: u32,
    /// Packet payload size in bytes.
    pub packet_bytes: u32,
    /// Outstanding (unacknowledged) blocks per transfer.
    pub max_outstanding_blocks: u32,
    /// Block timeout in us; 0 means NTO (a page-fault NACK cancels the timer).
    pub block_timeout_us: f64,
    /// Initiating co-processor time per posted operation, us.
    pub initiation_us: f64,
    /// Consecutive unanswered timeouts before a transfer fails with RetryExceeded.
    pub max_timeouts: u32,
    /// With NTO: how long a faulted block waits for its ERR before retransmitting anyway, us.
    pub fault_recovery_timeout_us: f64,
    /// Receive-side per-block state idle this long is discarded, us.
    pub rx_state_idle_us: f64,
    /// What a retransmission resends: `block` (the whole block, spec part.md mechanism 7; the
    /// reference experiments) or `selective` (only the packets the receiver does not hold).
    /// Absent from a profile file means `block`.
    #[serde(default)]
    pub retransmit: RetransmitPolicy,
    /// Retransmission-timeout backoff cap, as a multiple of the ack timeout (1 = off: every
    /// silent period lasts one ack timeout, the spec's fixed timer). Above 1, each consecutive
    /// silent period of a peer doubles the next timeout (as TCP's and InfiniBand RC's
    /// retransmission timers do), up to this multiple; an answer from the peer resets it. A
    /// transfer then fails with RetryExceeded after `sum(k = 0..=max_timeouts) of timeout *
    /// min(2^k, timeout_backoff_max)` of silence instead of `(max_timeouts + 1) * timeout`.
    /// Absent from a profile file means 1.
    #[serde(default = "backoff_off")]
    pub timeout_backoff_max: u32,
}

/// The default of [`EngineProfile::timeout_backoff_max`]: no backoff.
fn backoff_off() -> u32 {
    1
}

/// What a PART retransmission resends.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RetransmitPolicy {
    /// The whole block, as a new attempt that the receiver takes afresh (spec part.md,
    /// mechanisms 1 and 7). A block of `n` packets needs all `n` to survive one attempt: at a
    /// packet loss rate `p` an attempt succeeds with probability `(1 - p)^n`.
    #[default]
    Block,
    /// Only the packets the receiver does not hold: the receiver keeps a block's packets
    /// across attempts, the last packet of each attempt asks for a selective acknowledgement
    /// (SACK: a bitmap of the packets held), and the next attempt resends the missing ones.
    Selective,
}

impl RetransmitPolicy {
    /// Both policies.
    pub const ALL: [RetransmitPolicy; 2] = [RetransmitPolicy::Block, RetransmitPolicy::Selective];

    /// Lower-case name as in profiles and CSVs (`block`, `selective`).
    pub fn name(self) -> &'static str {
        match self {
            RetransmitPolicy::Block => "block",
            RetransmitPolicy::Selective => "selective",
        }
    }
}

/// IOMMU parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IommuProfile {
    /// L1 TLB entries.
    pub l1_entries: u32,
    /// L1 ways (entries = fully associative).
    pub l1_ways: u32,
    /// L2 TLB entries.
    pub l2_entries: u32,
    /// L2 ways.
    pub l2_ways: u32,
    /// Replacement policy: "lru" or "random".
    pub policy: String,
    /// Full page-table walk, ns.
    pub walk_ns: u64,
    /// L2 TLB hit, ns.
    pub l2_hit_ns: u64,
    /// Concurrent page-table walks.
    pub parallel_walks: u32,
    /// Outstanding transactions.
    pub outstanding: u32,
}

/// Host OS costs of the fault path.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OsProfile {
    /// Fault interrupt handler per faulting transaction, us.
    pub irq_us: f64,
    /// Interrupts closer than this to the previous one are coalesced, us (0 = none).
    pub irq_coalesce_us: f64,
    /// NI fault FIFO capacity.
    pub fifo_entries: u32,
    /// One FIFO register read, ns.
    pub fifo_read_ns: u64,
    /// get_user_pages fixed cost per call, us.
    pub gup_call_us: f64,
    /// get_user_pages cost per page not present, us.
    pub gup_page_us: f64,
    /// Kernel-to-user notification, us.
    pub notify_us: f64,
    /// Other page-in bookkeeping, us.
    pub bookkeeping_us: f64,
    /// Sending one ERR from user space, us.
    pub err_send_us: f64,
    /// Scheduling / context-switch cost per page-in task run, us.
    pub sched_us: f64,
    /// Early ERR (spec part.md, "Beyond the reference design"): the page-in task answers a
    /// faulted block once its pages are in and the resent data cannot overtake the rest of the
    /// page-in, instead of after the whole drain (see `unpinned_core::os::early_err`). Absent
    /// from a profile file means `false` (the reference design).
    #[serde(default)]
    pub early_err: bool,
    /// Where the ERR is sent from: `user` (the reference design: the page-in task notifies a
    /// user-space daemon, `notify_us`, which sends it) or `kernel` (the task sends it itself;
    /// no notification). Absent from a profile file means `user`.
    #[serde(default)]
    pub err_from: ErrFrom,
}

/// Where the page-in task's ERRs are sent from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ErrFrom {
    /// A user-space daemon, after a kernel-to-user notification (netlink, `os.notify_us`).
    #[default]
    User,
    /// The page-in task itself, in kernel context: no notification round trip.
    Kernel,
}

impl ErrFrom {
    /// Both places.
    pub const ALL: [ErrFrom; 2] = [ErrFrom::User, ErrFrom::Kernel];

    /// Lower-case name as in profiles and CSVs (`user`, `kernel`).
    pub fn name(self) -> &'static str {
        match self {
            ErrFrom::User => "user",
            ErrFrom::Kernel => "kernel",
        }
    }
}

/// Host CPU costs of the Touch and Pin schemes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpuProfile {
    /// Touching a present page, ns.
    pub touch_present_ns: u64,
    /// A CPU minor fault (touching a page that is not present), us.
    pub minor_fault_us: f64,
    /// mlock of one present page, us.
    pub mlock_call_us: f64,
    /// Extra start-up per mlock call for a buffer not in memory, us.
    pub mlock_nopres_call_us: f64,
    /// mlock per additional present page, ns.
    pub mlock_page_ns: u64,
    /// munlock per call, us.
    pub munlock_call_us: f64,
    /// User-space cost of one non-blocking post, us.
    pub post_us: f64,
}

/// A complete platform profile.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Short name.
    pub name: String,
    /// One line about the platform.
    pub description: String,
    /// Network.
    pub net: NetProfile,
    /// PART engine.
    pub engine: EngineProfile,
    /// IOMMU.
    pub iommu: IommuProfile,
    /// Host OS fault path.
    pub os: OsProfile,
    /// Host CPU (Touch / Pin schemes).
    pub cpu: CpuProfile,
}

impl Profile {
    /// The built-in `forth-arm` profile.
    pub fn forth_arm() -> Profile {
        Profile::from_toml(FORTH_ARM_TOML).expect("built-in profile parses")
    }

    /// Parse and validate a profile from TOML text.
    pub fn from_toml(text: &str) -> Result<Profile, ProfileError> {
        let p: Profile = toml::from_str(text).map_err(|e| ProfileError::Parse(e.to_string()))?;
        p.validate()?;
        Ok(p)
    }

    /// A built-in profile by name, or a TOML file by path.
    pub fn load(name_or_path: &str) -> Result<Profile, ProfileError> {
        match name_or_path {
            "forth-arm" => Ok(Profile::forth_arm()),
            path => match std::fs::read_to_string(path) {
                Ok(text) => Profile::from_toml(&text),
                Err(_) => Err(ProfileError::NotFound(path.to_string())),
            },
        }
    }

    /// The profile as TOML text.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("profile serializes")
    }

    /// Override one field by dotted path, e.g. `engine.block_timeout_us=100` (see
    /// [`override_field`]). Returns the changed profile, validated.
    pub fn with_override(&self, assignment: &str) -> Result<Profile, ProfileError> {
        let p = override_field(self, assignment)?;
        p.validate()?;
        Ok(p)
    }

    /// Reject impossible values, naming the field.
    pub fn validate(&self) -> Result<(), ProfileError> {
        let bad = |s: String| Err(ProfileError::Invalid(s));
        let e = &self.engine;
        // 32 KiB: the largest power of two under the wire format's 16-bit payload length (the
        // live runtime moves one 16 KiB block per packet over shared memory).
        if e.packet_bytes == 0 || e.packet_bytes > 32768 {
            return bad(format!(
                "engine.packet_bytes = {} (must be 1..=32768)",
                e.packet_bytes
            ));
        }
        if e.block_bytes == 0 || !e.block_bytes.is_multiple_of(e.packet_bytes) {
            return bad(format!(
                "engine.block_bytes = {} (must be a positive multiple of engine.packet_bytes = {})",
                e.block_bytes, e.packet_bytes
            ));
        }
        if e.block_bytes / e.packet_bytes > 4096 {
            return bad(format!(
                "engine.block_bytes / engine.packet_bytes = {} (at most 4096 packets per block)",
                e.block_bytes / e.packet_bytes
            ));
        }
        if e.timeout_backoff_max == 0 {
            return bad(
                "engine.timeout_backoff_max = 0 (must be at least 1; 1 turns the backoff off)"
                    .into(),
            );
        }
        if e.max_outstanding_blocks == 0 {
            return bad("engine.max_outstanding_blocks = 0 (must be at least 1)".into());
        }
        for (name, v) in [
            ("engine.block_timeout_us", e.block_timeout_us),
            ("engine.initiation_us", e.initiation_us),
            (
                "engine.fault_recovery_timeout_us",
                e.fault_recovery_timeout_us,
            ),
            ("engine.rx_state_idle_us", e.rx_state_idle_us),
            ("os.irq_us", self.os.irq_us),
            ("os.irq_coalesce_us", self.os.irq_coalesce_us),
            ("os.gup_call_us", self.os.gup_call_us),
            ("os.gup_page_us", self.os.gup_page_us),
            ("os.notify_us", self.os.notify_us),
            ("os.bookkeeping_us", self.os.bookkeeping_us),
            ("os.err_send_us", self.os.err_send_us),
            ("os.sched_us", self.os.sched_us),
            ("cpu.minor_fault_us", self.cpu.minor_fault_us),
            ("cpu.mlock_call_us", self.cpu.mlock_call_us),
            ("cpu.mlock_nopres_call_us", self.cpu.mlock_nopres_call_us),
            ("cpu.munlock_call_us", self.cpu.munlock_call_us),
            ("cpu.post_us", self.cpu.post_us),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return bad(format!("{name} = {v} (must be a finite number >= 0)"));
            }
        }
        if e.fault_recovery_timeout_us <= 0.0 {
            return bad(
                "engine.fault_recovery_timeout_us must be > 0 (a lost ERR would hang)".into(),
            );
        }
        if !(self.net.link_gbps > 0.0 && self.net.link_gbps.is_finite()) {
            return bad(format!(
                "net.link_gbps = {} (must be > 0)",
                self.net.link_gbps
            ));
        }
        if !(self.net.board_link_gbps > 0.0 && self.net.board_link_gbps.is_finite()) {
            return bad(format!(
                "net.board_link_gbps = {} (must be > 0)",
                self.net.board_link_gbps
            ));
        }
        let i = &self.iommu;
        for (name, entries, ways) in [
            ("l1", i.l1_entries, i.l1_ways),
            ("l2", i.l2_entries, i.l2_ways),
        ] {
            if ways == 0 || entries == 0 || entries % ways != 0 {
                return bad(format!("iommu.{name}_entries = {entries}, iommu.{name}_ways = {ways} (entries must be a positive multiple of ways)"));
            }
        }
        if i.policy != "lru" && i.policy != "random" {
            return bad(format!(
                "iommu.policy = {:?} (must be \"lru\" or \"random\")",
                i.policy
            ));
        }
        if self.os.fifo_entries == 0 {
            return bad("os.fifo_entries = 0 (must be at least 1)".into());
        }
        Ok(())
    }
}

/// Override one field of any serializable profile by dotted path, e.g.
/// `engine.block_timeout_us=100`. The value is parsed as TOML (numbers, booleans, quoted or
/// bare strings); integers given where floats are expected (and exact floats where integers
/// are) are accepted. The result is not validated: the caller runs its profile's checks.
pub fn override_field<T>(value: &T, assignment: &str) -> Result<T, ProfileError>
where
    T: Serialize + serde::de::DeserializeOwned,
{
    let bad = |why: &str| ProfileError::Override(assignment.to_string(), why.to_string());
    let (key, raw) = assignment
        .split_once('=')
        .ok_or_else(|| bad("expected key=value"))?;
    let (key, raw) = (key.trim(), raw.trim());
    let mut doc = toml::Value::try_from(value).map_err(|e| bad(&e.to_string()))?;
    let mut slot = &mut doc;
    for part in key.split('.') {
        slot = slot
            .get_mut(part)
            .ok_or_else(|| bad(&format!("no field {part:?} (see `unpinned profile show`)")))?;
    }
    let parsed: toml::Value = match toml::from_str::<toml::Table>(&format!("v = {raw}")) {
        Ok(mut t) => t.remove("v").expect("key v"),
        Err(_) => toml::Value::String(raw.to_string()),
    };
    *slot = match (&*slot, parsed) {
        (toml::Value::Float(_), toml::Value::Integer(i)) => toml::Value::Float(i as f64),
        (toml::Value::Integer(_), toml::Value::Float(f)) if f.fract() == 0.0 => {
            toml::Value::Integer(f as i64)
        }
        (toml::Value::Table(_), _) => {
            return Err(bad(&format!(
                "{key:?} is a section, not a field (see `unpinned profile show`)"
            )))
        }
        (old, new) if std::mem::discriminant(old) == std::mem::discriminant(&new) => new,
        (old, new) => {
            return Err(bad(&format!(
                "expected a {}, got {}",
                old.type_str(),
                new.type_str()
            )))
        }
    };
    doc.try_into()
        .map_err(|e: toml::de::Error| bad(&e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_parses_and_round_trips() {
        let p = Profile::forth_arm();
        assert_eq!(p.engine.block_bytes, 16384);
        assert_eq!(Profile::from_toml(&p.to_toml()).unwrap(), p);
    }

    #[test]
    fn overrides_apply_and_validate() {
        let p = Profile::forth_arm();
        let q = p.with_override("engine.block_timeout_us=100").unwrap();
        assert_eq!(q.engine.block_timeout_us, 100.0);
        let q = p.with_override("iommu.policy=random").unwrap();
        assert_eq!(q.iommu.policy, "random");
        let q = p.with_override("os.err_from=kernel").unwrap();
        assert_eq!(q.os.err_from, ErrFrom::Kernel);
        assert!(p.with_override("os.err_from=nic").is_err());
        assert!(p.with_override("os.early_err=true").unwrap().os.early_err);
        assert_eq!(
            p.engine.timeout_backoff_max, 1,
            "the reference profile has no backoff"
        );
        let q = p.with_override("engine.timeout_backoff_max=64").unwrap();
        assert_eq!(q.engine.timeout_backoff_max, 64);
        assert!(p.with_override("engine.timeout_backoff_max=0").is_err());
        // A profile file without the field has no backoff.
        let text = FORTH_ARM_TOML.replace("timeout_backoff_max = 1", "");
        assert_eq!(
            Profile::from_toml(&text)
                .unwrap()
                .engine
                .timeout_backoff_max,
            1
        );
        assert!(p.with_override("engine.nope=1").is_err());
        assert!(p.with_override("engine.block_bytes=1000").is_err());
        assert!(p.with_override("engine.block_bytes=abc").is_err());
        assert!(p.with_override("net.link_gbps=-1").is_err());
        assert!(p.with_override("noequals").is_err());
    }

    #[test]
    fn unknown_fields_are_rejected() {
        let text = FORTH_ARM_TOML.replace("[net]", "[net]\nbogus = 1");
        assert!(matches!(
            Profile::from_toml(&text),
            Err(ProfileError::Parse(_))
        ));
    }
}
