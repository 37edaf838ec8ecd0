//! Command-line arguments shared by several subcommands.

use clap::Args;

/// Which profile, with which overrides and parameters.
#[derive(Args, Clone, Debug)]
pub struct ProfileArgs {
    /// Cost profile: a built-in name or a TOML file of the experiment's kind (PART: forth-arm,
    /// the default; IB: connectx3..6, default connectx4; AA: cray-xe6; DSM: dsm-ib1). An
    /// experiment refuses a profile of another kind.
    #[arg(
        long,
        value_name = "NAME|FILE",
        default_value = "",
        hide_default_value = true
    )]
    pub profile: String,
    /// Override a field of the experiment's profile (`engine.block_timeout_us=100`,
    /// `timer.c_ack_floor=12`) or set an experiment parameter (`exp.NAME=VALUE`, see
    /// `unpinned sim EXPERIMENT --help`). Repeatable; applied in order. A key the experiment
    /// does not use is refused.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Master seed; every random choice of a run derives from it.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}
