//! The Active Access experiments of spec active-access.md ("Experiments"), on the AA model of
//! `unpinned_sim::aa` with the `cray-xe6` profile (`profiles/cray-xe6.toml`, built in;
//! `--profile FILE` loads another AA profile, `--set notify.int_threshold=8` overrides a field).
//!
//! Each point is one seeded simulation; every run checks its workload's correctness (DHT
//! content against the sequential reference, exact counts, replayable gets) before its rate is
//! reported, so a number never comes from a broken run.

mod counter;
mod dht_compute;
mod dht_iotlb;
pub mod dht_link;
mod dht_scale;
mod iommu_stream;
mod log_gets;
mod sort;
pub mod testbed;

use crate::ExperimentSpec;

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

/// Rate per second of `ops` over `ns`.
pub(crate) fn per_s(ops: u64, ns: u64) -> f64 {
    ops as f64 / ns.max(1) as f64 * 1e9
}
