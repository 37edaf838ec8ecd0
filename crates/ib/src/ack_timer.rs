//! The ACK timeout (odp.md, "ACK timeout"): `T_tr = 4.096 us * 2^C_ACK`, a vendor floor on
//! C_ACK, and detection of a loss within `[T_tr, 4*T_tr]`.
//!
//! Detection is a mechanism, not a constant: the NIC scans its QPs every `T_tr` (a global scan
//! clock whose phase is random per QP, from the engine's seeded generator). A scan that finds a
//! QP with requests in flight and no ACK progress since the previous scan counts one strike;
//! `scans_to_expire` strikes expire the request. With 2 scans, a first timeout takes a time in
//! `(T_tr, 2*T_tr]` (depending on where the send fell between scans) and a timeout right after
//! a retransmission (which happens on a scan) exactly `2*T_tr`.

use unpinned_core::time::{Duration, Instant};

/// `T_tr` for a 5-bit `C_ACK` (IB spec 9.7.6.1.3); `None` when the timer is disabled (0).
pub fn t_tr(c_ack: u8) -> Option<Duration> {
    if c_ack == 0 {
        return None;
    }
    // 4.096 us = 4096 ns.
    Some(Duration(4096u64 << u32::from(c_ack.min(31))))
}

/// The C_ACK the NIC actually uses: a smaller setting silently uses the vendor floor
/// (odp.md). 0 (disabled) is below every non-zero floor, so it is raised too.
pub fn effective_c_ack(c_ack: u8, floor: u8) -> u8 {
    c_ack.max(floor).min(31)
}

/// The scan clock of one QP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScanClock {
    /// Scan period (`T_tr`).
    pub period: Duration,
    /// Offset of the scan grid from time 0, in `[0, period)`.
    pub phase: Duration,
}

impl ScanClock {
    /// The first scan strictly after `now`.
    pub fn next_after(&self, now: Instant) -> Instant {
        let p = self.period.0.max(1);
        let ph = self.phase.0 % p;
        if now.0 < ph {
            return Instant(ph);
        }
        let k = (now.0 - ph) / p + 1;
        Instant(ph + k * p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn spec_values() {
        assert_eq!(t_tr(0), None);
        // C_ACK 16: 4.096 us * 65536 = 268.4 ms; C_ACK 12: 16.8 ms.
        assert_eq!(t_tr(16).unwrap().as_ns(), 268_435_456);
        assert_eq!(t_tr(12).unwrap().as_ns(), 16_777_216);
        assert_eq!(effective_c_ack(3, 16), 16);
        assert_eq!(effective_c_ack(0, 12), 12);
        assert_eq!(effective_c_ack(18, 16), 18);
        assert_eq!(effective_c_ack(0, 0), 0);
    }
    #[test]
    fn scan_grid() {
        let c = ScanClock {
            period: Duration(100),
            phase: Duration(30),
        };
        assert_eq!(c.next_after(Instant(0)), Instant(30));
        assert_eq!(c.next_after(Instant(30)), Instant(130), "strictly after");
        assert_eq!(c.next_after(Instant(129)), Instant(130));
        assert_eq!(c.next_after(Instant(131)), Instant(230));
    }
}
