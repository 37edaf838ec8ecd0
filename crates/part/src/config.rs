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
    /// Retransmission-timeout backoff cap, a multiple of [`EngineConfig::ack_timeout`] (1 =
    /// off). See [`EngineConfig::backoff_timeout`].
    pub timeout_backoff_max: u32,
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
            timeout_backoff_max: p.timeout_backoff_max,
        }
    }

    /// The timer armed when a block has been sent completely.
    pub fn ack_timeout(&self) -> Duration {
        self.block_timeout.unwrap_or(self.recovery_timeout)
    }

    /// The timer armed after `silent` consecutive silent periods of a peer: the ack timeout
    /// doubled per period, at most `timeout_backoff_max` times the ack timeout (TCP's and
    /// InfiniBand RC's exponential retransmission backoff). An answer from the peer resets
    /// `silent` to 0. With the backoff off (1) it is always the ack timeout.
    pub fn backoff_timeout(&self, silent: u32) -> Duration {
        let cap = self.timeout_backoff_max.max(1) as u64;
        let factor = if silent >= 63 {
            cap
        } else {
            (1u64 << silent).min(cap)
        };
        Duration(self.ack_timeout().as_ns().saturating_mul(factor))
    }

    /// The silence that `periods` consecutive timeouts span: the sum of
    /// [`EngineConfig::backoff_timeout`] for 0..periods. A peer silent for
    /// `silence_span(max_timeouts + 1)` fails a transfer with `RetryExceeded`; a request is
    /// resent at most until `silence_span(max_timeouts)` after it was first sent.
    pub fn silence_span(&self, periods: u32) -> Duration {
        let cap = self.timeout_backoff_max.max(1) as u64;
        let ack = self.ack_timeout().as_ns();
        // The doubling phase: periods 0..k with 2^k <= cap; then the capped ones.
        let doubling = (64 - cap.leading_zeros()).min(periods);
        let first = ack.saturating_mul((1u64 << doubling) - 1);
        let rest = ack
            .saturating_mul(cap)
            .saturating_mul((periods - doubling) as u64);
        Duration(first.saturating_add(rest))
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

    fn backoff_config(cap: u32) -> EngineConfig {
        let mut c =
            EngineConfig::from_profile(&unpinned_core::profile::Profile::forth_arm().engine);
        c.block_timeout = Some(Duration::from_us(1000));
        c.timeout_backoff_max = cap;
        c
    }

    #[test]
    fn backoff_doubles_per_silent_period_up_to_its_cap() {
        let ms = |n: u64| Duration::from_us(1000 * n);
        let c = backoff_config(16);
        let got: Vec<Duration> = (0..8).map(|k| c.backoff_timeout(k)).collect();
        let want = [1, 2, 4, 8, 16, 16, 16, 16].map(ms);
        assert_eq!(got, want);
        assert_eq!(
            c.backoff_timeout(u32::MAX),
            ms(16),
            "no overflow far past the cap"
        );
        // A cap that is not a power of two is reached exactly.
        let c = backoff_config(6);
        let got: Vec<Duration> = (0..5).map(|k| c.backoff_timeout(k)).collect();
        assert_eq!(got, [1, 2, 4, 6, 6].map(ms));
        // Off: the fixed timer of the spec, whatever the silence.
        let c = backoff_config(1);
        assert!((0..40).all(|k| c.backoff_timeout(k) == ms(1)));
        // NTO: the periods are the recovery timeout's.
        let mut c = backoff_config(4);
        c.block_timeout = None;
        assert_eq!(c.backoff_timeout(5), Duration(c.recovery_timeout.0 * 4));
    }

    #[test]
    fn silence_span_is_the_sum_of_the_periods() {
        for cap in [1u32, 2, 3, 6, 16, 64, 1000, u32::MAX] {
            let c = backoff_config(cap);
            let mut sum = Duration(0);
            for n in 0..70u32 {
                assert_eq!(c.silence_span(n), sum, "cap {cap}, {n} periods");
                sum = Duration(sum.0.saturating_add(c.backoff_timeout(n).0));
            }
        }
        // Off: `periods` ack timeouts, the formula the engine used before the backoff.
        let c = backoff_config(1);
        assert_eq!(c.silence_span(32), Duration::from_us(32_000));
    }

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
