//! Engine parameters.

use unpinned_core::profile::{EngineProfile, RetransmitPolicy};
use unpinned_core::time::Duration;

/// Parameters of one PART engine. Build with [`EngineConfig::from_profile`].
#[derive(Clone, Debug, PartialEq)]
pub struct EngineConfig {
    /// Block size in bytes (unit of ACK and retransmission; 16 KiB in the spec).
    pub block_bytes: u32,
    /// Packet payload size (256 B in the spec).
    pub packet_bytes: u32,
    /// Outstanding blocks per transfer (2 in the spec).
    pub max_outstanding: u32,
    /// Block timeout; `None` is NTO: a page-fault NACK cancels the timer and only the ERR (or
    /// the recovery timeout) resumes the block.
    pub block_timeout: Option<Duration>,
    /// Loss timer under NTO, and safety net for a lost ERR or a lost source-fault record.
    pub recovery_timeout: Duration,
    /// Consecutive unanswered timeouts before a transfer fails with `RetryExceeded`.
    pub max_timeouts: u32,
    /// Receive-side block state idle this long is discarded (a packet older than this is
    /// assumed gone from the network, like TCP's maximum segment lifetime).
    pub rx_idle: Duration,
    /// Salt for remote keys handed out by `expose` (drivers pass a seeded random value).
    pub key_salt: u64,
    /// What a retransmission resends (the whole block, or the packets the receiver lacks).
    /// Only the sender's policy matters: its data packets tell the receiver which one it uses.
    pub retransmit: RetransmitPolicy,
}

impl EngineConfig {
    /// From a profile's `[engine]` section.
    pub fn from_profile(p: &EngineProfile) -> EngineConfig {
        EngineConfig {
            block_bytes: p.block_bytes,
            packet_bytes: p.packet_bytes,
            max_outstanding: p.max_outstanding_blocks,
            block_timeout: (p.block_timeout_us > 0.0)
                .then(|| Duration::from_us_f64(p.block_timeout_us)),
            recovery_timeout: Duration::from_us_f64(p.fault_recovery_timeout_us),
            max_timeouts: p.max_timeouts,
            rx_idle: Duration::from_us_f64(p.rx_state_idle_us),
            key_salt: 0x5eed,
            retransmit: p.retransmit,
        }
    }

    /// The timer armed when a block has been sent completely.
    pub fn ack_timeout(&self) -> Duration {
        self.block_timeout.unwrap_or(self.recovery_timeout)
    }

    /// Packets in a block of `block_len` bytes.
    pub fn packets_in(&self, block_len: u32) -> u32 {
        let pb = self.packet_bytes as u64;
        // The same value as `block_len.div_ceil(packet_bytes)` (u64: no overflow).
        div_size(block_len as u64 + pb - 1, pb).max(1) as u32
    }
}

/// `x / d` for the engine's sizes: a shift when `d` is a power of two (every profile's packet
/// and block sizes), a division otherwise; the same value either way. Data packets need a few
/// of these each, and a 64-bit division costs tens of cycles.
#[inline(always)]
pub(crate) fn div_size(x: u64, d: u64) -> u64 {
    if d.is_power_of_two() {
        x >> d.trailing_zeros()
    } else {
        x / d
    }
}

/// `x % d`, like [`div_size`].
#[inline(always)]
pub(crate) fn rem_size(x: u64, d: u64) -> u64 {
    if d.is_power_of_two() {
        x & (d - 1)
    } else {
        x % d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_arithmetic_equals_division() {
        for d in [1u64, 2, 3, 7, 64, 100, 256, 4096, 16384, 65535] {
            for x in [0u64, 1, d - 1, d, d + 1, 12_345, u32::MAX as u64, u64::MAX] {
                assert_eq!(div_size(x, d), x / d, "{x} / {d}");
                assert_eq!(rem_size(x, d), x % d, "{x} % {d}");
            }
        }
        let mut c =
            EngineConfig::from_profile(&unpinned_core::profile::Profile::forth_arm().engine);
        for pb in [1u32, 3, 256, 1000, 4096] {
            c.packet_bytes = pb;
            for len in [0u32, 1, pb - 1, pb, pb + 1, 16384, 16385] {
                assert_eq!(
                    c.packets_in(len),
                    len.div_ceil(pb).max(1),
                    "{len} in packets of {pb}"
                );
            }
        }
    }
}
