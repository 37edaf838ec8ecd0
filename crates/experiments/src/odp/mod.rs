//! The ODP experiments of spec odp.md ("Experiments the project must be able to run"): the
//! InfiniBand RC transport with on-demand paging on the RC simulator
//! (`unpinned_sim::rc`), with ConnectX vendor profiles (`profiles/connectx*.toml`).
//!
//! Every point is one fresh, seeded simulation. The vendor profile is `--profile connectx4`
//! (the default) or another `connectx*` / file, with `--set` overrides
//! (`--set odp.loss_model.enabled=false`: the pure protocol instead of the observed ODP loss
//! behaviour). Parameters (`--set exp.NAME=VALUE`) are declared per experiment.

mod fix;
mod fix_period;
mod pitfall;
mod timeout_floor;
mod trace;
mod vs_part;

use unpinned_core::rng::derive_seed;
use unpinned_core::time::Duration;
use unpinned_sim::rc::bench::OdpSide;

use crate::{ExperimentSpec, RunContext};

/// The ODP experiments, in report order.
pub fn specs() -> Vec<&'static ExperimentSpec> {
    vec![
        &timeout_floor::SPEC,
        &trace::SPEC,
        &pitfall::SPEC,
        &fix::SPEC,
        &fix_period::SPEC,
        &vs_part::SPEC,
    ]
}

/// ODP placements of the pitfall experiments.
pub(crate) const ODP_SIDES: [OdpSide; 3] = [OdpSide::Remote, OdpSide::Local, OdpSide::Both];

/// Minimal RNR NAK delays of odp.md's pitfall experiments, us.
pub(crate) const RNR_DELAYS_US: [u64; 3] = [10, 640, 1280];

/// Post intervals, us: 0 .. 10 ms, denser below 1 ms where the fault waits end.
pub(crate) const INTERVALS_US: [u64; 22] = [
    0, 50, 100, 200, 300, 400, 500, 600, 700, 800, 1000, 1500, 2000, 2500, 3000, 3500, 4000, 4500,
    5000, 6000, 8000, 10000,
];

/// A per-point seed.
pub(crate) fn seed(ctx: &RunContext, label: &str) -> u64 {
    derive_seed(ctx.seed, label)
}

/// Microseconds to a duration.
pub(crate) fn us(v: u64) -> Duration {
    Duration::from_us(v)
}
