//! Many seeds of one protocol: every seed runs (failures are collected, not fatal), a
//! progress callback sees each report, and each failing seed gets the command that reruns it.

use super::registry::Protocol;
use super::report::{SeedReport, Tally};
use crate::kernel::LinkStats;

/// The result of a range of seeds.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// Seeds run.
    pub seeds: u64,
    /// Request outcomes, summed.
    pub tally: Tally,
    /// Faults injected, summed.
    pub faults: LinkStats,
    /// Evictions / invalidations, summed.
    pub evictions: u64,
    /// Events, summed.
    pub events: u64,
    /// The reports of the failing seeds.
    pub failures: Vec<SeedReport>,
}

/// The command that reruns one seed of a protocol.
pub fn rerun_command(protocol: &str, seed: u64) -> String {
    format!("unpinned vopr --protocol {protocol} --seed {seed}")
}

/// Run `seeds` of protocol `p` one after the other; `progress` sees every report as it
/// comes.
pub fn run_seeds(
    p: &Protocol,
    seeds: impl IntoIterator<Item = u64>,
    mut progress: impl FnMut(&SeedReport),
) -> Summary {
    summarize(seeds.into_iter().map(|seed| {
        let r = (p.run)(seed);
        progress(&r);
        r
    }))
}

/// Sum up reports (from any number of threads), keeping the failing ones.
pub fn summarize(reports: impl IntoIterator<Item = SeedReport>) -> Summary {
    let mut s = Summary::default();
    for r in reports {
        s.seeds += 1;
        s.tally.add(&r.tally);
        s.faults.add(&r.faults);
        s.evictions += r.evictions;
        s.events += r.events;
        if !r.passed() {
            s.failures.push(r);
        }
    }
    s
}
