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

use unpinned_report::Cell;
use unpinned_sim::aa::RunStats;

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

/// The receive-side CPU accounting columns of the DHT experiments, per insert (spec "Where the
/// schemes' costs come from", docs/aa-receive-side.md): all receive-side CPU time, the part
/// taken from the computing processes, its components (polls, taking entries / messages out,
/// handlers, interrupts), and network messages per insert (requests, responses, acks).
pub(crate) const RECV_COLUMNS: [&str; 7] = [
    "recv_cpu_ns_per_insert",
    "recv_app_cpu_ns_per_insert",
    "recv_poll_ns_per_insert",
    "recv_extract_ns_per_insert",
    "recv_handler_ns_per_insert",
    "recv_interrupt_ns_per_insert",
    "msgs_per_insert",
];

/// `columns` followed by [`RECV_COLUMNS`].
pub(crate) fn with_recv_columns(columns: &[&'static str]) -> Vec<&'static str> {
    columns.iter().chain(RECV_COLUMNS.iter()).copied().collect()
}

/// The [`RECV_COLUMNS`] cells of a run of `inserts` inserts.
pub(crate) fn recv_cells(st: &RunStats, inserts: u64) -> Vec<Cell> {
    let per = |ns: u64| Cell::from(ns as f64 / inserts.max(1) as f64);
    let r = st.recv;
    vec![
        per(r.total_ns()),
        per(r.app_ns),
        per(r.poll_ns),
        per(r.extract_ns),
        per(r.handler_ns),
        per(r.interrupt_ns),
        per(st.platform.messages),
    ]
}
