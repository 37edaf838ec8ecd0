//! The DSM experiments of spec dsm.md ("Experiments"): `dsm-apps` and `dsm-load`, on the
//! simulator's trace replay (`unpinned_sim::dsm`) with the reference cluster's calibration
//! (`profiles/dsm-ib1.toml`, built in; `--profile FILE` loads another DSM profile,
//! `--set cpu.cpu_scale=X` overrides its CPU factor).
//!
//! Traces come from running the applications (`unpinned_dsm_apps`) on its tracing space: real
//! runs of the apps in this process, checked against their sequential references, with the
//! coherence state emulated in software per (rank, minipage). Each (app, nodes, threads per
//! node) is traced `exp.repeats` times (default 1; the 1 x 1 baseline of the speedups at least
//! 3 times) and the run that computed least is replayed in every handler context. Computation in a trace is measured with thread CPU clocks, so
//! times vary between runs on a busy machine (the replay itself is deterministic); the trace
//! of a live run can be replayed the same way.

mod apps;

use crate::ExperimentSpec;

/// The DSM experiments, in report order.
pub fn specs() -> Vec<&'static ExperimentSpec> {
    vec![&apps::SPEC_APPS, &apps::SPEC_LOAD]
}
