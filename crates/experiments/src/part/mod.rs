//! The PART experiments of spec part.md ("Experiments the project must be able to run").
//!
//! Every point is one simulated transfer between two nodes of the profile (fresh simulator per
//! point, seeded), with all invariants checked. Touch and Pin schemes add the CPU cost models of
//! `unpinned_core::os::cpu` at the faulting (destination) side before the transfer, and the
//! transfer then finds the pages present.

pub mod harness;
pub mod sim_testbed;

pub mod adaptive;
pub mod apps;
mod breakdown;
pub mod early_err;
pub mod fault_all;
pub mod fault_frequency;
pub mod fault_patterns;
pub mod fault_small;
pub mod huge_pages;
mod isend;
pub mod kernel_err;
pub mod latency;
pub mod major_faults;
pub mod timeout;

use crate::ExperimentSpec;

/// The PART experiments, in report order.
pub fn specs() -> Vec<&'static ExperimentSpec> {
    vec![
        &latency::SPEC,
        &breakdown::SPEC,
        &fault_small::SPEC,
        &fault_all::SPEC,
        &fault_frequency::SPEC,
        &timeout::SPEC,
        &early_err::SPEC,
        &kernel_err::SPEC,
        &isend::SPEC,
        &major_faults::SPEC,
        &huge_pages::SPEC,
        &apps::SPEC,
        &adaptive::SPEC,
        &fault_patterns::SPEC,
    ]
}

/// Collect per-point results, failing on the first error.
pub(crate) fn collect<R>(
    results: Vec<Result<R, crate::ExperimentError>>,
) -> Result<Vec<R>, crate::ExperimentError> {
    results.into_iter().collect()
}

/// Add a backend's metadata ([`crate::testbed::Testbed::meta`]) to an experiment's.
pub(crate) fn extend(
    meta: &mut serde_json::Value,
    more: serde_json::Map<String, serde_json::Value>,
) {
    if let Some(m) = meta.as_object_mut() {
        m.extend(more);
    }
}
