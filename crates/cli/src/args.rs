//! Command-line arguments shared by several subcommands.

use clap::Args;

/// Which profile, with which overrides and parameters.
#[derive(Args, Clone, Debug)]
pub struct ProfileArgs {
    /// Cost profile: a built-in name (forth-arm) or a TOML file.
    #[arg(long, value_name = "NAME|FILE", default_value = "forth-arm")]
    pub profile: String,
    /// Override a profile field (`engine.block_timeout_us=100`) or set an experiment
    /// parameter (`exp.NAME=VALUE`). Repeatable; applied in order.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Master seed; every random choice of a run derives from it.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}
