//! The observed loss behaviour of the ODP path, as a named, switchable model (odp.md, "The
//! pitfall to reproduce").
//!
//! On the wire, ConnectX NICs lose a request that follows a replayed request back-to-back while
//! the QP recovers from a fault wait: no response and no NAK come back, and only the ACK
//! timeout recovers it. The spec asks for this as a parametrized hardware behaviour so it can be
//! switched off to show what the protocol alone would do.
//!
//! The model sits at the responder, before PSN checking. A *replay* is a request whose PSN the
//! responder has already seen: a duplicate (PSN behind the expected one: the requester resent
//! after a local fault or a timeout) or the PSN the responder RNR-NAKed (resent after the RNR
//! wait of a remote fault). A replay opens a *burst*; every request arriving within
//! `back_to_back_ns` of the previous one while the burst is open is discarded silently. The
//! first request after a gap closes the burst and is processed normally. The responder cannot
//! tell a duplicate caused by a fault wait from one caused by packet loss, so duplicates from
//! timeouts open a burst too (this only matters with injected loss).

use serde::{Deserialize, Serialize};
use unpinned_core::time::{Duration, Instant};

/// The model's parameters (profile `[odp.loss_model]`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LossModelConfig {
    /// On: reproduce the hardware; off: the pure RC protocol.
    pub enabled: bool,
    /// Largest gap between two request arrivals that still counts as back-to-back, ns.
    pub back_to_back_ns: u64,
}

impl LossModelConfig {
    /// The pure protocol: nothing is discarded.
    pub const OFF: LossModelConfig = LossModelConfig {
        enabled: false,
        back_to_back_ns: 0,
    };
}

/// Per-QP state of the model at the responder.
#[derive(Clone, Debug)]
pub struct LossModel {
    cfg: LossModelConfig,
    last_arrival: Option<Instant>,
    burst_open: bool,
}

impl LossModel {
    /// Fresh state.
    pub fn new(cfg: LossModelConfig) -> LossModel {
        LossModel {
            cfg,
            last_arrival: None,
            burst_open: false,
        }
    }

    /// A request arrived at `now`; `replay` says whether the responder has seen its PSN before
    /// (see the module docs). Returns true if the hardware discards it without a NAK.
    pub fn discard(&mut self, now: Instant, replay: bool) -> bool {
        let back_to_back = self
            .last_arrival
            .is_some_and(|t| now.saturating_since(t) <= Duration(self.cfg.back_to_back_ns));
        self.last_arrival = Some(now);
        if !self.cfg.enabled {
            return false;
        }
        if self.burst_open && back_to_back {
            // The burst stays open: the next back-to-back request is lost as well.
            return true;
        }
        self.burst_open = replay;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    const ON: LossModelConfig = LossModelConfig {
        enabled: true,
        back_to_back_ns: 1000,
    };

    #[test]
    fn followers_of_a_replay_are_lost_until_a_gap() {
        let mut m = LossModel::new(ON);
        assert!(!m.discard(Instant(0), false));
        assert!(!m.discard(Instant(100), false), "no replay, no loss");
        assert!(
            !m.discard(Instant(10_000), true),
            "the replay itself is served"
        );
        assert!(
            m.discard(Instant(10_300), false),
            "back-to-back follower lost"
        );
        assert!(m.discard(Instant(10_600), false), "the burst continues");
        assert!(!m.discard(Instant(50_000), false), "after a gap: served");
        assert!(!m.discard(Instant(50_100), false));
    }

    #[test]
    fn off_never_discards() {
        let mut m = LossModel::new(LossModelConfig::OFF);
        assert!(!m.discard(Instant(0), true));
        assert!(!m.discard(Instant(1), false));
    }
}
