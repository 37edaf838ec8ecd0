//! Replay of DSM traces (spec dsm.md) on the reference cluster's calibration.
//!
//! A trace (`unpinned_dsm::trace`, recorded by the live DSM or by the apps' tracing space)
//! lists each worker's computation, faults, barriers and locks. The replay runs them on a
//! dedicated discrete-event loop ([`replay`]; the PART world is not involved: the coherence
//! messages are the sans-IO `unpinned_dsm::Node` protocol's) with the costs of a profile
//! ([`profile`], built-in `profiles/dsm-ib1.toml`) and a handler [`Context`]. Deterministic:
//! the same trace, profile and configuration give the same result (no randomness at all;
//! ties are broken by insertion order).

mod context;
pub mod profile;
mod replay;

pub use context::Context;
pub use profile::{DsmProfile, DsmProfileError};
pub use replay::{replay, ReplayConfig, ReplayError, ReplayStats};

#[cfg(test)]
mod tests;
