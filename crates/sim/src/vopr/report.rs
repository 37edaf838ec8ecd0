//! What one seed of the VOPR gives: the swarm it picked, the outcome of its requests, the
//! faults injected, its trace hash, and every violation the checkers found.

use crate::kernel::{ErrorKind, Expect, LinkStats, Outcome, Phase, Violation};

/// Counts of request outcomes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Requests posted.
    pub posted: u64,
    /// Completed successfully.
    pub ok: u64,
    /// Designed to fail, and failed.
    pub failed_by_design: u64,
    /// Failed for a transport reason in the safety phase (retries exhausted, flushed).
    pub failed_transport: u64,
    /// Any other failure (each one is also a violation).
    pub failed_other: u64,
}

impl Tally {
    /// Count one completion of a request posted in `phase` and designed as `expect`.
    pub fn count(&mut self, phase: Phase, expect: Expect, o: &Outcome) {
        match (expect, o) {
            (_, Outcome::Ok) => self.ok += 1,
            (Expect::Fail(_), Outcome::Err { .. }) => self.failed_by_design += 1,
            (Expect::Succeed, Outcome::Err { kind, .. })
                if phase == Phase::Safety
                    && matches!(kind, ErrorKind::Transport | ErrorKind::Flushed) =>
            {
                self.failed_transport += 1
            }
            _ => self.failed_other += 1,
        }
    }

    /// Add another tally.
    pub fn add(&mut self, o: &Tally) {
        self.posted += o.posted;
        self.ok += o.ok;
        self.failed_by_design += o.failed_by_design;
        self.failed_transport += o.failed_transport;
        self.failed_other += o.failed_other;
    }
}

/// One seed's result.
#[derive(Clone, Debug)]
pub struct SeedReport {
    /// The protocol's name.
    pub protocol: &'static str,
    /// The seed.
    pub seed: u64,
    /// What the seed picked, one line.
    pub swarm: String,
    /// Request outcomes.
    pub tally: Tally,
    /// Events processed.
    pub events: u64,
    /// Faults injected on the links.
    pub faults: LinkStats,
    /// Page evictions / translation invalidations done during transfers.
    pub evictions: u64,
    /// Hash of the run's events (equal for two runs of one seed).
    pub trace_hash: u64,
    /// Violations found (the first [`crate::kernel::check::MAX_KEPT`]).
    pub violations: Vec<Violation>,
    /// Violations found in all.
    pub violation_count: u64,
}

impl SeedReport {
    /// True when no checker found anything.
    pub fn passed(&self) -> bool {
        self.violation_count == 0
    }
}
