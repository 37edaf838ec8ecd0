//! The PART experiments on the live runtime: the simulator's experiments
//! (`unpinned_experiments::part`), written once over a [`Testbed`](unpinned_experiments::testbed::Testbed), run on a
//! [`LiveTestbed`]. Same names, parameters, grid and columns as `unpinned sim NAME`.

use unpinned_experiments::part::{fault_all, fault_frequency, fault_small, latency, timeout};
use unpinned_experiments::{Backends, Declared, ExperimentSpec, ProfileKind};

use super::testbed::LiveTestbed;

/// The live registry entry of the simulator's experiment module `$m`.
///
/// Its `fixed` list is empty: the live defaults (`unpinned_live::api::LIVE_DEFAULTS`) are
/// profile overrides too, and the experiments that set the block timeout per point
/// (part-fault-small, part-timeout) override it on the live runtime as on the simulator.
macro_rules! live_spec {
    ($spec:ident, $name:literal, $m:ident) => {
        #[doc = concat!("`", $name, "` on the live runtime.")]
        pub static $spec: ExperimentSpec = ExperimentSpec {
            name: $name,
            system: "live",
            description: $m::DESCRIPTION,
            profile: ProfileKind::Part,
            backends: Backends::Both,
            params: Some(<$m::Params as Declared>::PARAMS),
            fixed: &[],
            every_builtin_by_default: false,
            run: |ctx| $m::run(ctx, &mut LiveTestbed::new(&ctx.profile)),
        };
    };
}

live_spec!(LATENCY, "part-latency", latency);
live_spec!(FAULT_SMALL, "part-fault-small", fault_small);
live_spec!(FAULT_ALL, "part-fault-all", fault_all);
live_spec!(FAULT_FREQUENCY, "part-fault-frequency", fault_frequency);
live_spec!(TIMEOUT, "part-timeout", timeout);
