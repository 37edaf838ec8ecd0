//! The named experiments of the specs, run on the simulator.
//!
//! Each experiment is an [`ExperimentSpec`] in the registry returned by [`all`]. It turns a
//! profile, a seed and parameters into a tidy [`Table`] plus plot specifications; the CLI
//! writes the files (`unpinned_report::write_experiment`).

#![warn(missing_docs)]

use std::collections::BTreeMap;

use unpinned_core::profile::Profile;
pub use unpinned_report::{Cell, PlotKind, PlotSpec, Table};

/// Everything an experiment run gets.
pub struct RunContext<'a> {
    /// The cost profile (after `--set` overrides).
    pub profile: Profile,
    /// Master seed; sub-seeds are derived from it.
    pub seed: u64,
    /// Experiment parameters (`--set exp.NAME=VALUE`), as text.
    pub params: BTreeMap<String, String>,
    /// Progress callback: (points done, points total).
    pub progress: &'a (dyn Fn(u64, u64) + Sync),
}

impl RunContext<'_> {
    /// A parameter parsed as `T`, or `default` when absent. A parameter that does not parse is
    /// an error naming it.
    pub fn param<T: std::str::FromStr>(
        &self,
        name: &str,
        default: T,
    ) -> Result<T, ExperimentError> {
        match self.params.get(name) {
            None => Ok(default),
            Some(v) => v
                .parse()
                .map_err(|_| ExperimentError::BadParam(name.to_string(), v.clone())),
        }
    }
}

/// What an experiment produced.
pub struct ExperimentOutput {
    /// The tidy table.
    pub table: Table,
    /// How to draw it (the first plot is the main one, `NAME.svg`).
    pub plots: Vec<PlotSpec>,
    /// Simulated events processed (for the metadata).
    pub sim_events: u64,
    /// Experiment-specific metadata (parameters used, notes).
    pub meta: serde_json::Value,
}

/// Errors of an experiment run.
#[derive(Debug, thiserror::Error)]
pub enum ExperimentError {
    /// `--set exp.NAME=VALUE` with a value that does not parse.
    #[error("parameter exp.{0} = {1:?} does not parse")]
    BadParam(String, String),
    /// The simulation broke an invariant (a bug): the message carries the seed.
    #[error("simulation failed: {0}")]
    Sim(String),
}

/// A registered experiment.
pub struct ExperimentSpec {
    /// Name as in the specs (`part-fault-all`).
    pub name: &'static str,
    /// System it belongs to (`part`, `odp`, `aa`, `dsm`).
    pub system: &'static str,
    /// One line for `unpinned sim --list`.
    pub description: &'static str,
    /// Run it.
    pub run: fn(&RunContext) -> Result<ExperimentOutput, ExperimentError>,
}

pub mod aa;
pub mod dsm;
mod odp;
pub mod part;

/// Every experiment, in report order.
pub fn all() -> Vec<&'static ExperimentSpec> {
    part::specs()
        .into_iter()
        .chain(odp::specs())
        .chain(aa::specs())
        .chain(dsm::specs())
        .collect()
}

/// Look up an experiment by name.
pub fn find(name: &str) -> Option<&'static ExperimentSpec> {
    all().into_iter().find(|e| e.name == name)
}
