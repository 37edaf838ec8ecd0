//! The named experiments of the specs, run on the simulator.
//!
//! Each experiment is an [`ExperimentSpec`] in the registry returned by [`all`]. It turns a
//! profile, a seed and parameters into a tidy [`Table`] plus plot specifications; the CLI
//! writes the files (`unpinned_report::write_experiment`). The registry entry declares what the
//! experiment accepts: its profile kind ([`ProfileKind`]), its parameters ([`params`], a typed
//! struct per experiment), the profile fields it sets itself, and where it runs ([`Backends`]).

#![warn(missing_docs)]

use std::collections::BTreeMap;

use unpinned_aa::profile::AaProfile;
use unpinned_core::profile::Profile;
use unpinned_ib::VendorProfile;
pub use unpinned_report::{Cell, PlotKind, PlotSpec, Table};
use unpinned_sim::dsm::DsmProfile;

pub use params::{Declared, Param};
pub use profiles::{AnyProfile, Backends, FixedField, ProfileKind};

/// Everything an experiment run gets.
pub struct RunContext<'a> {
    /// The PART cost profile (after `--set` overrides). Experiments of another kind get the
    /// built-in `forth-arm` here (`odp-vs-part` uses it for its PART side).
    pub profile: Profile,
    /// The profile of an IB, AA or DSM experiment (after `--set` overrides); `None`: the
    /// kind's built-in. Read it with [`RunContext::vendor_profile`] and its siblings.
    pub kind_profile: Option<AnyProfile>,
    /// Master seed; sub-seeds are derived from it.
    pub seed: u64,
    /// Experiment parameters (`--set exp.NAME=VALUE`), as text.
    pub params: BTreeMap<String, String>,
    /// Progress callback: (points done, points total).
    pub progress: &'a (dyn Fn(u64, u64) + Sync),
}

impl RunContext<'_> {
    /// The experiment's declared parameters: unknown keys, values that do not parse and
    /// values out of range are refused (see [`params`]).
    pub fn params<P: Declared>(&self) -> Result<P, ExperimentError> {
        P::from_map(&self.params)
    }

    /// The IB vendor profile: the one given, or the built-in `connectx4`.
    pub fn vendor_profile(&self) -> Result<VendorProfile, ExperimentError> {
        match self.kind_of(ProfileKind::Ib)? {
            AnyProfile::Ib(p) => Ok(p),
            _ => unreachable!("kind_of checked the kind"),
        }
    }

    /// The Active Access profile: the one given, or the built-in `cray-xe6`.
    pub fn aa_profile(&self) -> Result<AaProfile, ExperimentError> {
        match self.kind_of(ProfileKind::Aa)? {
            AnyProfile::Aa(p) => Ok(p),
            _ => unreachable!("kind_of checked the kind"),
        }
    }

    /// The DSM profile: the one given, or the built-in `dsm-ib1`.
    pub fn dsm_profile(&self) -> Result<DsmProfile, ExperimentError> {
        match self.kind_of(ProfileKind::Dsm)? {
            AnyProfile::Dsm(p) => Ok(p),
            _ => unreachable!("kind_of checked the kind"),
        }
    }

    fn kind_of(&self, kind: ProfileKind) -> Result<AnyProfile, ExperimentError> {
        match &self.kind_profile {
            None => Ok(AnyProfile::builtin(kind)),
            Some(p) if p.kind() == kind => Ok(p.clone()),
            Some(p) => Err(ExperimentError::Profile(format!(
                "profile {:?} is {} {} profile; this experiment uses {}",
                p.name(),
                p.kind().article(),
                p.kind().name(),
                kind.describe()
            ))),
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
    /// An unknown parameter, or a value out of its declared range; the message names the key
    /// and what it accepts.
    #[error("{0}")]
    Param(String),
    /// A profile of the wrong kind, or an override the experiment does not use.
    #[error("{0}")]
    Profile(String),
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
    /// The kind of cost profile it uses.
    pub profile: ProfileKind,
    /// Where it runs.
    pub backends: Backends,
    /// Its declared parameters (`Params::PARAMS` of its [`declare_params!`] struct). Every
    /// registered experiment, simulated or live, declares them (tests check it); `None` only
    /// in [`ExperimentSpec::LIVE`], the template, and test doubles.
    pub params: Option<&'static [Param]>,
    /// Profile fields it sets itself at every point (a `--set` of one is refused).
    pub fixed: &'static [FixedField],
    /// Without `--profile` or a profile `--set` it runs every built-in profile of its kind
    /// (`odp-timeout-floor`: one curve per vendor floor), and its metadata records them all;
    /// with one, it runs that profile only.
    pub every_builtin_by_default: bool,
    /// Run it.
    pub run: fn(&RunContext) -> Result<ExperimentOutput, ExperimentError>,
}

impl ExperimentSpec {
    /// The registry fields of a live experiment of crates/livebench (PART profile, live
    /// backend, no fixed fields): `ExperimentSpec { name, system, description, params, run,
    /// ..ExperimentSpec::LIVE }`.
    pub const LIVE: ExperimentSpec = ExperimentSpec {
        name: "",
        system: "live",
        description: "",
        profile: ProfileKind::Part,
        backends: Backends::Live,
        params: None,
        fixed: &[],
        every_builtin_by_default: false,
        run: |_| {
            Err(ExperimentError::Sim(
                "ExperimentSpec::LIVE is a template".into(),
            ))
        },
    };
}

pub mod aa;
pub mod dsm;
mod odp;
pub mod params;
pub mod part;
pub mod profiles;
pub mod testbed;

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
