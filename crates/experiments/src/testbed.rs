//! What a PART experiment point needs from a backend, so that the experiment is written once.
//!
//! An experiment turns its parameters into a grid of [`Write`]s, hands them to a [`Testbed`]
//! and turns the [`Measured`] results into its table. The simulator implements the trait in
//! this crate ([`crate::part::sim_testbed::SimTestbed`]); the live runtime in
//! crates/livebench (`unpinned_livebench::exp::testbed::LiveTestbed`). Both ask
//! [`missing_pages`] which destination pages to leave missing, so the same seed asks both
//! backends for the same missing pages.

use unpinned_core::memory::PAGE_BYTES;
use unpinned_core::os::PageInPolicy;
use unpinned_core::rng::{rng_for, Rng};

use crate::ExperimentError;

/// How the destination's memory is handled around the transfer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// A transfer into present memory, no residency check (the fault-free baseline).
    TransferOnly,
    /// The destination's pages touched (already present) before the transfer.
    TouchPres,
    /// Fresh destination pages touched (faulted in by the CPU) before the transfer.
    TouchNoPres,
    /// The present destination pinned (mlock) before and unpinned after the transfer.
    PinPres,
    /// Fresh destination pages pinned before and unpinned after the transfer.
    PinNoPres,
    /// PART: the destination's missing pages are found and paged in by the protocol.
    Part,
}

impl Scheme {
    /// The scheme's name in the tables (`transfer-only`, `touch-nopres`, ...; `part`).
    pub fn name(self) -> &'static str {
        match self {
            Scheme::TransferOnly => "transfer-only",
            Scheme::TouchPres => "touch-pres",
            Scheme::TouchNoPres => "touch-nopres",
            Scheme::PinPres => "pin-pres",
            Scheme::PinNoPres => "pin-nopres",
            Scheme::Part => "part",
        }
    }
}

/// Which destination pages a PART write finds missing: a label that [`missing_pages`] turns
/// into pages, the same way for every backend.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Missing {
    /// Every page present.
    None,
    /// Every page missing (fresh memory).
    All,
    /// Each page independently missing with this probability (0..=1), drawn from the seed.
    Fraction(f64),
    /// Missing pages in runs: on average `fraction` of the pages missing, in runs of
    /// `run_pages` pages on average (a two-state Markov chain over the pages, drawn from the
    /// seed): the pattern of memory reclaimed or never touched in contiguous stretches.
    Clustered {
        /// Mean fraction of pages missing (0..=1).
        fraction: f64,
        /// Mean length of a run of missing pages (>= 1).
        run_pages: f64,
    },
}

/// One write of node/rank 0's source into rank 1's destination.
#[derive(Clone, Debug)]
pub struct Write {
    /// How the destination is handled.
    pub scheme: Scheme,
    /// Bytes written.
    pub size: u64,
    /// Missing destination pages (PART only; the other schemes start from present memory or,
    /// for the `NoPres` ones, from fresh memory they fault in themselves).
    pub missing: Missing,
    /// Page-in policy of the destination.
    pub policy: PageInPolicy,
    /// Whether the page-in task sends ERRs.
    pub send_err: bool,
    /// Block timeout in us (0 = none, NTO); `None`: the profile's.
    pub timeout_us: Option<f64>,
    /// The seed of this write: its missing pages and the simulator's randomness.
    pub seed: u64,
    /// Repetitions; the result is the median one. The simulator is deterministic and runs
    /// one.
    pub reps: usize,
}

impl Write {
    /// A write of `size` bytes under `scheme`: nothing missing, PIA with ERR, the profile's
    /// block timeout, one repetition.
    pub fn new(scheme: Scheme, size: u64, seed: u64) -> Write {
        Write {
            scheme,
            size,
            missing: Missing::None,
            policy: PageInPolicy::Pia,
            send_err: true,
            timeout_us: None,
            seed,
            reps: 1,
        }
    }
}

/// What one write measured (the median repetition's counters).
#[derive(Clone, Debug, Default)]
pub struct Measured {
    /// CPU work plus transfer, us.
    pub latency_us: f64,
    /// CPU work of the scheme (touch, mlock + munlock), us.
    pub cpu_us: f64,
    /// The transfer alone, post to completion, us.
    pub transfer_us: f64,
    /// Faults the destination's page-in task was told about (IOMMU fault interrupts in the
    /// simulator, fault records handed to the page-in thread live).
    pub fault_interrupts: u64,
    /// ERRs the destination sent.
    pub errs: u64,
    /// Data bytes the source sent again.
    pub resent_bytes: u64,
    /// Retransmissions the source started on an ERR.
    pub retransmits_err: u64,
    /// Retransmissions the source started on a block timeout.
    pub retransmits_timeout: u64,
    /// Simulated events (0 live).
    pub events: u64,
}

/// A backend PART experiments measure on.
pub trait Testbed {
    /// `sim` or `live`.
    fn backend(&self) -> &'static str;

    /// Measure every write; results in input order. `progress` gets (done, total).
    fn measure(
        &mut self,
        writes: &[Write],
        progress: &(dyn Fn(u64, u64) + Sync),
    ) -> Result<Vec<Measured>, ExperimentError>;

    /// What the backend adds to an experiment's metadata (transport, repetitions).
    fn meta(&self, writes: &[Write]) -> serde_json::Map<String, serde_json::Value>;
}

/// Pages spanned by a buffer of `size` bytes starting page-aligned (at least one).
pub fn pages(size: u64) -> u64 {
    size.div_ceil(PAGE_BYTES).max(1)
}

/// Which pages of a `size`-byte destination are missing for a write with `seed`: one flag
/// per page, `true` = missing.
///
/// A fraction is drawn from the `setup` stream of `seed`, after the `size` bytes of source
/// data that stream draws first (the order in which the simulator sets a write up, so that
/// seeded tables keep their values): page `p` is missing when its draw is below the
/// fraction.
pub fn missing_pages(seed: u64, size: u64, missing: Missing) -> Vec<bool> {
    let n = pages(size) as usize;
    match missing {
        Missing::None => vec![false; n],
        Missing::All => vec![true; n],
        Missing::Fraction(f) => {
            let mut rng = rng_for(seed, "setup");
            let mut source = vec![0u8; size as usize];
            rng.fill(&mut source[..]);
            (0..n).map(|_| rng.gen::<f64>() < f).collect()
        }
        Missing::Clustered {
            fraction,
            run_pages,
        } => clustered(seed, n, fraction, run_pages),
    }
}

/// `n` page flags from a two-state chain whose stationary share of missing pages is `f` and
/// whose runs of missing pages last `run` pages on average: a missing page is followed by a
/// present one with probability `1 / run`, a present page by a missing one with probability
/// `f / (run (1 - f))` (so that the chain spends `f` of its pages missing); the first page is
/// drawn from the stationary share.
fn clustered(seed: u64, n: usize, f: f64, run: f64) -> Vec<bool> {
    let f = f.clamp(0.0, 1.0);
    if f >= 1.0 {
        return vec![true; n];
    }
    let run = run.max(1.0);
    let (leave, enter) = (1.0 / run, (f / (run * (1.0 - f))).min(1.0));
    let mut rng = rng_for(seed, "clustered");
    let mut missing = rng.gen::<f64>() < f;
    (0..n)
        .map(|_| {
            let m = missing;
            let u = rng.gen::<f64>();
            missing = if missing { u >= leave } else { u < enter };
            m
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_give_pages() {
        assert_eq!(missing_pages(1, 100, Missing::All), [true]);
        assert_eq!(missing_pages(1, 8192, Missing::None), [false, false]);
        assert!(missing_pages(3, 1 << 20, Missing::Fraction(1.0))
            .iter()
            .all(|&m| m));
        assert!(missing_pages(3, 1 << 20, Missing::Fraction(0.0))
            .iter()
            .all(|&m| !m));
        let half = missing_pages(3, 4 << 20, Missing::Fraction(0.5));
        let n = half.iter().filter(|&&m| m).count();
        assert!((400..624).contains(&n), "{n} of 1024 missing at 50%");
        assert_eq!(half, missing_pages(3, 4 << 20, Missing::Fraction(0.5)));
        assert_ne!(half, missing_pages(4, 4 << 20, Missing::Fraction(0.5)));
    }

    #[test]
    fn clustered_pages_keep_the_fraction_in_longer_runs() {
        let c = Missing::Clustered {
            fraction: 0.2,
            run_pages: 16.0,
        };
        let flags = missing_pages(5, 64 << 20, c);
        let n = flags.len() as f64;
        let missing = flags.iter().filter(|&&m| m).count() as f64;
        let runs = flags.windows(2).filter(|w| w[1] && !w[0]).count() as f64 + 1.0;
        assert!((missing / n - 0.2).abs() < 0.03, "fraction {}", missing / n);
        let mean_run = missing / runs;
        assert!((12.0..20.0).contains(&mean_run), "mean run {mean_run}");
        let indep = missing_pages(5, 64 << 20, Missing::Fraction(0.2));
        let indep_runs = indep.windows(2).filter(|w| w[1] && !w[0]).count() as f64;
        assert!(
            indep_runs > 5.0 * runs,
            "independent pages make many more runs"
        );
        assert_eq!(flags, missing_pages(5, 64 << 20, c));
        let all = Missing::Clustered {
            fraction: 1.0,
            run_pages: 4.0,
        };
        assert!(missing_pages(5, 1 << 20, all).iter().all(|&m| m));
    }
}
