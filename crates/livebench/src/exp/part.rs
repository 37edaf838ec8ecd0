//! The PART experiments on the live runtime: the simulator's experiments
//! (`unpinned_experiments::part`), written once over a [`Testbed`](unpinned_experiments::testbed::Testbed), run on a
//! [`LiveTestbed`]. Same names, parameters, grid and columns as `unpinned sim NAME`.

use unpinned_experiments::part::{fault_all, fault_frequency, fault_small, latency, timeout};
use unpinned_experiments::{Backends, Declared, ExperimentSpec, FixedField, ProfileKind};

use super::testbed::LiveTestbed;

/// The live registry entry of the simulator's experiment module `$m`, with the profile
/// fields it sets itself at every point (`$fixed`, the simulator's list): a user's `--set` of
/// one is refused, while the live defaults the CLI applies under the user's overrides
/// (`unpinned_live::api::LIVE_DEFAULTS`, e.g. the 10 ms block timeout) are not the user's
/// and are not checked.
macro_rules! live_spec {
    ($spec:ident, $name:literal, $m:ident, $fixed:expr) => {
        #[doc = concat!("`", $name, "` on the live runtime.")]
        pub static $spec: ExperimentSpec = ExperimentSpec {
            name: $name,
            system: "live",
            description: $m::DESCRIPTION,
            profile: ProfileKind::Part,
            backends: Backends::Both,
            params: Some(<$m::Params as Declared>::PARAMS),
            fixed: $fixed,
            every_builtin_by_default: false,
            run: |ctx| $m::run(ctx, &mut LiveTestbed::new(&ctx.profile)),
        };
    };
}

/// The live testbed's own field at the points with a block timeout
/// (`LiveTestbed`'s pair): no peer is declared dead by timeouts that fire before the page is in.
const MAX_TIMEOUTS: FixedField = FixedField {
    field: "engine.max_timeouts",
    instead: "the experiment's own value (1000 at every point on the live runtime, so that timeouts that fire before the page is in do not declare the peer dead)",
};

/// part-fault-small's fields: the simulator's, and [`MAX_TIMEOUTS`].
const FAULT_SMALL_FIXED: &[FixedField] = &[fault_small::FIXED[0], MAX_TIMEOUTS];

/// part-timeout's fields: the simulator's, and [`MAX_TIMEOUTS`].
const TIMEOUT_FIXED: &[FixedField] = &[timeout::FIXED[0], MAX_TIMEOUTS];

live_spec!(LATENCY, "part-latency", latency, &[]);
live_spec!(
    FAULT_SMALL,
    "part-fault-small",
    fault_small,
    FAULT_SMALL_FIXED
);
live_spec!(FAULT_ALL, "part-fault-all", fault_all, &[]);
live_spec!(
    FAULT_FREQUENCY,
    "part-fault-frequency",
    fault_frequency,
    &[]
);
live_spec!(TIMEOUT, "part-timeout", timeout, TIMEOUT_FIXED);
