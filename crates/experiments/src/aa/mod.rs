//! The Active Access experiments of spec active-access.md ("Experiments"), on the AA model of
//! `unpinned_sim::aa` with the `cray-xe6` profile (`profiles/cray-xe6.toml`, built in;
//! `--set exp.aa_profile=PATH` loads another file).
//!
//! Each point is one seeded simulation; every run checks its workload's correctness (DHT
//! content against the sequential reference, exact counts, replayable gets) before its rate is
//! reported, so a number never comes from a broken run.

mod counter;
mod dht_compute;
mod dht_iotlb;
mod dht_link;
mod dht_scale;
mod iommu_stream;
mod log_gets;
mod sort;

use unpinned_aa::profile::AaProfile;

use crate::{ExperimentError, ExperimentSpec, RunContext};

/// The AA experiments, in report order.
pub fn specs() -> Vec<&'static ExperimentSpec> {
    vec![
        &dht_scale::SPEC,
        &dht_compute::SPEC,
        &dht_iotlb::SPEC,
        &dht_link::SPEC,
        &counter::SPEC,
        &log_gets::SPEC,
        &sort::SPEC,
        &iommu_stream::SPEC,
    ]
}

/// The AA profile: built-in `cray-xe6`, or the file named by `exp.aa_profile`.
pub(crate) fn profile(ctx: &RunContext) -> Result<AaProfile, ExperimentError> {
    let path: String = ctx.param("aa_profile", String::new())?;
    if path.is_empty() {
        return Ok(AaProfile::cray_xe6());
    }
    let text = std::fs::read_to_string(&path)
        .map_err(|e| ExperimentError::BadParam("aa_profile".into(), format!("{path}: {e}")))?;
    AaProfile::from_toml(&text)
        .map_err(|e| ExperimentError::BadParam("aa_profile".into(), e.to_string()))
}

/// A comma-separated list parameter.
pub(crate) fn list<T: std::str::FromStr>(
    ctx: &RunContext,
    name: &str,
    default: &str,
) -> Result<Vec<T>, ExperimentError> {
    let text: String = ctx.param(name, default.to_string())?;
    text.split(',')
        .map(|v| {
            v.trim()
                .parse()
                .map_err(|_| ExperimentError::BadParam(name.to_string(), text.clone()))
        })
        .collect()
}

/// Rate per second of `ops` over `ns`.
pub(crate) fn per_s(ops: u64, ns: u64) -> f64 {
    ops as f64 / ns.max(1) as f64 * 1e9
}
