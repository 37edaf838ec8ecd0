//! `unpinned bench`: benchmarks of the implementation itself (to be filled in).

use clap::{Args, Subcommand};

use crate::args::ProfileArgs;

/// What to benchmark.
#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// Speed of the simulator (events per second).
    Sim(BenchSimArgs),
}

/// Arguments of `unpinned bench sim`.
#[derive(Args, Debug)]
pub struct BenchSimArgs {
    /// Profile, overrides and seed.
    #[command(flatten)]
    pub profile: ProfileArgs,
}

/// Run `unpinned bench sim`.
pub fn run_sim(_args: &BenchSimArgs) -> Result<(), String> {
    Err("bench sim: not yet implemented".to_string())
}
