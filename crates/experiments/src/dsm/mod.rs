//! The DSM experiments of spec dsm.md ("Experiments"): `dsm-apps` and `dsm-load`, on the
//! simulator's trace replay (`unpinned_sim::dsm`) with the reference cluster's calibration
//! (`profiles/dsm-ib1.toml`, built in; `--profile FILE` loads another DSM profile,
//! `--set cpu.cpu_scale=X` overrides its CPU factor).
//!
//! Traces come from running the applications (`unpinned_dsm_apps`) on its tracing space: real
//! runs of the apps, checked against their sequential references, with the coherence state
//! emulated in software per (rank, minipage). By default the experiments replay a set of such
//! traces recorded once and shipped in `bench/traces/dsm/` (`dsm/traces.rs` says why), so their
//! tables are deterministic; the replay itself is deterministic for any trace.

mod apps;
pub mod point;
pub mod row;
mod traces;

pub use point::{grid, DsmPoint};
pub use row::{DsmRow, Shares, COLUMNS};

use crate::ExperimentSpec;

/// The DSM experiments, in report order.
pub fn specs() -> Vec<&'static ExperimentSpec> {
    vec![&apps::SPEC_APPS, &apps::SPEC_LOAD]
}
