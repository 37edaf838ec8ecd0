//! `part-fault-patterns`: PIO, PIA and the adaptive policy under fault patterns other than
//! independent pages (issue 17, section 4; spec part.md, "Beyond the reference design"):
//!
//! - `independent`: each destination page missing with probability f (part-fault-frequency's
//!   pattern, for reference);
//! - `clustered`: the same share f missing, in runs of `run_pages` pages on average
//!   ([`Missing::Clustered`]);
//! - `first-use`: one destination buffer written `uses` times, fresh (every page missing) on
//!   its first use only, as applications reuse their buffers; the row gives the mean over the
//!   uses (`first_us`: the first one);
//! - `reclaim`: the destination present (a buffer in use), while reclaim evicts its pages at
//!   `reclaim_per_ms` pages per ms during the transfer (`unpinned_sim::reclaim`);
//! - `reclaim-fresh`: the same on a fresh destination (every page missing first): pages a
//!   page-in brings in ahead of the data may be taken back before the data gets there.
//!
//! One simulation per (pattern, level, policy, size, seed); rows are means over the seeds.

use serde_json::json;
use unpinned_core::memory::PAGE_BYTES;
use unpinned_core::os::PageInPolicy;
use unpinned_core::rng::derive_seed;
use unpinned_core::time::Duration;
use unpinned_report::{PlotSpec, Table};
use unpinned_sim::reclaim::Reclaim;

use super::harness::{par_map, setup_write, WriteSetup, DST};
use crate::testbed::{missing_pages, pages, Missing};
use crate::{ExperimentError, ExperimentOutput, ExperimentSpec, RunContext};

/// One line for `--list`.
pub const DESCRIPTION: &str =
    "PIO / PIA / adaptive under clustered faults, first use of reused buffers, reclaim";

/// `part-fault-patterns` on the simulator.
pub static SPEC: ExperimentSpec = ExperimentSpec {
    name: "part-fault-patterns",
    system: "part",
    description: DESCRIPTION,
    profile: crate::ProfileKind::Part,
    backends: crate::Backends::Sim,
    params: Some(<Params as crate::Declared>::PARAMS),
    fixed: &[],
    every_builtin_by_default: false,
    run,
};

/// The policies compared.
pub const POLICIES: [PageInPolicy; 3] =
    [PageInPolicy::Pio, PageInPolicy::Pia, PageInPolicy::Adaptive];

crate::declare_params! {
    /// Parameters of `part-fault-patterns`.
    pub struct Params {
        seeds: u64 {
            default: "3",
            unit: "",
            check: crate::params::int(1, 1_000),
            doc: "Seeds per point; the table shows their mean",
        },
        sizes: Vec<u64> {
            default: "65536,1048576,4194304",
            unit: "bytes",
            check: crate::params::int(4096, 1 << 28),
            doc: "Write sizes",
        },
        fault_pct: Vec<u64> {
            default: "10,40",
            unit: "%",
            check: crate::params::int(1, 100),
            doc: "Shares of missing pages of the independent and clustered patterns",
        },
        run_pages: f64 {
            default: "16",
            unit: "pages",
            check: crate::params::num(1.0, 1e6),
            doc: "Mean run of missing pages of the clustered pattern",
        },
        uses: u64 {
            default: "8",
            unit: "",
            check: crate::params::int(2, 1_000),
            doc: "Writes into the same buffer in the first-use pattern",
        },
        reclaim_per_ms: Vec<u64> {
            default: "32,128",
            unit: "pages/ms",
            check: crate::params::int(1, 100_000),
            doc: "Reclaim rates of the reclaim patterns (one page every 1/rate ms)",
        },
    }
}

/// A fault pattern at one level.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Pattern {
    Independent(u64),
    Clustered(u64),
    FirstUse,
    Reclaim(u64),
    ReclaimFresh(u64),
}

impl Pattern {
    fn name(self) -> &'static str {
        match self {
            Pattern::Independent(_) => "independent",
            Pattern::Clustered(_) => "clustered",
            Pattern::FirstUse => "first-use",
            Pattern::Reclaim(_) => "reclaim",
            Pattern::ReclaimFresh(_) => "reclaim-fresh",
        }
    }
    /// The level column: % missing, pages per ms reclaimed, or 100 (every page, first use).
    fn level(self) -> u64 {
        match self {
            Pattern::Independent(l)
            | Pattern::Clustered(l)
            | Pattern::Reclaim(l)
            | Pattern::ReclaimFresh(l) => l,
            Pattern::FirstUse => 100,
        }
    }
}

/// What one simulation measured.
#[derive(Clone, Copy, Debug, Default)]
struct Outcome {
    /// Mean write latency (over the uses for first-use), us.
    latency_us: f64,
    /// The first write's latency, us.
    first_us: f64,
    /// Fault interrupts at the destination.
    fault_interrupts: u64,
    /// ERRs the destination sent.
    errs: u64,
    /// Pages the destination's page-in task brought in.
    pages_in: u64,
    /// Pages the reclaimer evicted.
    evicted: u64,
    /// Refaults the adaptive policy recognized.
    refaults: u64,
    events: u64,
}

fn simulate(
    ctx: &RunContext,
    pattern: Pattern,
    policy: PageInPolicy,
    size: u64,
    seed: u64,
    p: &Params,
) -> Result<Outcome, ExperimentError> {
    let n = pages(size);
    let missing = match pattern {
        Pattern::Independent(pct) => {
            missing_pages(seed, size, Missing::Fraction(pct as f64 / 100.0))
        }
        Pattern::Clustered(pct) => missing_pages(
            seed,
            size,
            Missing::Clustered {
                fraction: pct as f64 / 100.0,
                run_pages: p.run_pages,
            },
        ),
        Pattern::FirstUse | Pattern::ReclaimFresh(_) => vec![true; n as usize],
        Pattern::Reclaim(_) => vec![false; n as usize],
    };
    let mut w = WriteSetup::new(size, seed);
    w.policy = policy;
    let (mut sim, wr) = setup_write(&ctx.profile, &w, &missing);
    let limit = Duration::from_ms(60_000);
    let fail = |e: unpinned_sim::SimError| ExperimentError::Sim(e.to_string());
    let uses = if pattern == Pattern::FirstUse {
        p.uses
    } else {
        1
    };
    let mut evicted = 0;
    for u in 0..uses {
        let wr = unpinned_core::api::WorkRequest { wr_id: u + 1, ..wr };
        sim.post(sim.now(), 0, wr);
        match pattern {
            Pattern::Reclaim(rate) | Pattern::ReclaimFresh(rate) => {
                let period = Duration::from_ns((1_000_000 / rate).max(1));
                let mut r = Reclaim::new(1, 1, DST, size, period, 1, seed);
                r.run_until_idle(&mut sim, limit).map_err(fail)?;
                evicted += r.evicted();
            }
            _ => sim.run_until_idle(limit).map_err(fail)?,
        }
    }
    let mut lat = Vec::new();
    for rec in sim.posts() {
        let c = rec.completion.expect("idle run completed every request");
        if let Err(e) = c.status {
            return Err(ExperimentError::Sim(format!(
                "{} write of {size} bytes failed: {e} (seed {seed})",
                pattern.name()
            )));
        }
        lat.push((rec.wr.wr_id, (c.at - rec.posted_at).as_us_f64()));
    }
    lat.sort_by_key(|l| l.0);
    let dst = sim.stats(1);
    Ok(Outcome {
        latency_us: lat.iter().map(|l| l.1).sum::<f64>() / lat.len() as f64,
        first_us: lat[0].1,
        fault_interrupts: dst.handler.interrupts,
        errs: dst.engine.errs_sent,
        pages_in: dst.handler.pages_in,
        evicted,
        refaults: sim.node(1).handler.adaptive_stats().refaults,
        events: sim.events(),
    })
}

/// Run `part-fault-patterns`.
pub fn run(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
    let p: Params = ctx.params()?;
    let mut patterns = Vec::new();
    patterns.extend(p.fault_pct.iter().map(|&f| Pattern::Independent(f)));
    patterns.extend(p.fault_pct.iter().map(|&f| Pattern::Clustered(f)));
    patterns.push(Pattern::FirstUse);
    patterns.extend(p.reclaim_per_ms.iter().map(|&r| Pattern::Reclaim(r)));
    patterns.extend(p.reclaim_per_ms.iter().map(|&r| Pattern::ReclaimFresh(r)));
    let mut points = Vec::new();
    for &pat in &patterns {
        for &size in &p.sizes {
            for policy in POLICIES {
                for s in 0..p.seeds {
                    points.push((pat, size, policy, s));
                }
            }
        }
    }
    let outcomes = par_map(&points, ctx.progress, |&(pat, size, policy, s)| {
        let seed = derive_seed(ctx.seed, &format!("part-fault-patterns/{s}"));
        simulate(ctx, pat, policy, size, seed, &p)
    });
    let outcomes = super::collect(outcomes)?;
    let mut table = Table::new(&[
        "pattern",
        "level",
        "size_bytes",
        "policy",
        "latency_us",
        "first_us",
        "vs_best_fixed",
        "fault_interrupts",
        "errs",
        "pages_in",
        "evicted",
        "refaults",
        "seeds",
    ]);
    let mean = |pat: Pattern, size: u64, policy: PageInPolicy, get: &dyn Fn(&Outcome) -> f64| {
        let v: Vec<f64> = points
            .iter()
            .zip(&outcomes)
            .filter(|(q, _)| q.0 == pat && q.1 == size && q.2 == policy)
            .map(|(_, o)| get(o))
            .collect();
        v.iter().sum::<f64>() / v.len() as f64
    };
    let lat = |o: &Outcome| o.latency_us;
    for &pat in &patterns {
        for &size in &p.sizes {
            let best = mean(pat, size, PageInPolicy::Pio, &lat).min(mean(
                pat,
                size,
                PageInPolicy::Pia,
                &lat,
            ));
            for policy in POLICIES {
                let m = mean(pat, size, policy, &lat);
                table.push(vec![
                    pat.name().into(),
                    pat.level().into(),
                    size.into(),
                    policy.name().into(),
                    m.into(),
                    mean(pat, size, policy, &|o| o.first_us).into(),
                    (m / best).into(),
                    mean(pat, size, policy, &|o| o.fault_interrupts as f64).into(),
                    mean(pat, size, policy, &|o| o.errs as f64).into(),
                    mean(pat, size, policy, &|o| o.pages_in as f64).into(),
                    mean(pat, size, policy, &|o| o.evicted as f64).into(),
                    mean(pat, size, policy, &|o| o.refaults as f64).into(),
                    p.seeds.into(),
                ]);
            }
        }
    }
    let mut plots = Vec::new();
    for (name, label) in [
        ("independent", "independent"),
        ("clustered", "clustered"),
        ("reclaim", "reclaim"),
        ("reclaim-fresh", "reclaim-fresh"),
    ] {
        let t = format!("Latency over the better of PIO and PIA, {label}, 1 MiB");
        let mut plot = PlotSpec::line(&t, "level", "vs_best_fixed", Some("policy"))
            .only("pattern", name)
            .only("size_bytes", "1048576");
        if name != "independent" {
            plot = plot.suffix(label);
        }
        plots.push(plot);
    }
    plots.push(
        PlotSpec::line(
            "First use of a reused buffer: mean latency per write vs size",
            "size_bytes",
            "latency_us",
            Some("policy"),
        )
        .log(true, true)
        .only("pattern", "first-use")
        .suffix("first-use"),
    );
    let events = outcomes.iter().map(|o| o.events).sum();
    let meta = json!({
        "seeds": p.seeds,
        "sizes_bytes": p.sizes,
        "fault_pct": p.fault_pct,
        "run_pages": p.run_pages,
        "uses": p.uses,
        "reclaim_per_ms": p.reclaim_per_ms,
        "reclaim": "one destination page drawn uniformly every 1/rate ms while the write runs, evicted if present (bytes kept, as in swap)",
        "page_bytes": PAGE_BYTES,
    });
    Ok(ExperimentOutput {
        table,
        plots,
        sim_events: events,
        meta,
    })
}
