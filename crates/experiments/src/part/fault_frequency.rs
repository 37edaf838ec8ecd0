//! `part-fault-frequency`: each destination page independently missing with probability f;
//! PIO and PIA; mean over seeds; latency and slowdown vs f = 0.

use serde_json::json;
use unpinned_core::os::PageInPolicy;
use unpinned_core::rng::derive_seed;
use unpinned_report::{PlotSpec, Table};

use super::sim_testbed::SimTestbed;
use crate::testbed::{Measured, Missing, Scheme, Testbed, Write};
use crate::{ExperimentError, ExperimentOutput, ExperimentSpec, RunContext};

/// One line for `--list`.
pub const DESCRIPTION: &str =
    "Destination pages missing with probability f (0..100%): PIO vs PIA, mean of seeds, slowdown";

/// `part-fault-frequency` on the simulator.
pub static SPEC: ExperimentSpec = ExperimentSpec {
    name: "part-fault-frequency",
    system: "part",
    description: DESCRIPTION,
    profile: crate::ProfileKind::Part,
    backends: crate::Backends::Both,
    params: Some(<Params as crate::Declared>::PARAMS),
    fixed: &[],
    every_builtin_by_default: false,
    run: |ctx| run(ctx, &mut SimTestbed::new(&ctx.profile)),
};

/// The fault rates, %.
pub const FAULT_PCT: [u32; 9] = [0, 1, 5, 10, 20, 40, 60, 80, 100];
const POLICIES: [PageInPolicy; 2] = [PageInPolicy::Pio, PageInPolicy::Pia];

crate::declare_params! {
    /// Parameters of `part-fault-frequency`.
    pub struct Params {
        seeds: u64 {
            default: "5",
            unit: "",
            check: crate::params::int(1, 10_000),
            doc: "Seeds per (policy, size, fault rate); the table shows their mean",
        },
        sizes: Vec<u64> {
            default: "4096,16384,65536,262144,1048576,4194304",
            unit: "bytes",
            check: crate::params::int(1, 1 << 30),
            doc: "Write sizes (the spec's sweep: 4 KiB .. 4 MiB)",
        },
    }
}

/// The grid's writes and their results: one write per (policy, size, fault rate, seed),
/// the seed's missing pages drawn by [`crate::testbed::missing_pages`]. The seeds are
/// `part-fault-frequency`'s whatever the experiment: the same point has the same missing
/// pages under every policy (`part-adaptive` compares policies on it).
pub(crate) struct Grid {
    /// (index into the policies, size, fault rate, seed), one per write.
    points: Vec<(usize, u64, u32, u64)>,
    /// The writes, in the order of `points`.
    pub(crate) writes: Vec<Write>,
    /// Their results.
    pub(crate) results: Vec<Measured>,
}

impl Grid {
    /// Measure the grid of `policies` x `sizes` x [`FAULT_PCT`] x `seeds` on `tb`.
    pub(crate) fn measure(
        ctx: &RunContext,
        tb: &mut dyn Testbed,
        policies: &[PageInPolicy],
        sizes: &[u64],
        seeds: u64,
    ) -> Result<Grid, ExperimentError> {
        let mut points = Vec::new();
        for pi in 0..policies.len() {
            for &size in sizes {
                for &f in &FAULT_PCT {
                    for s in 0..seeds {
                        points.push((pi, size, f, s));
                    }
                }
            }
        }
        let writes: Vec<Write> = points
            .iter()
            .map(|&(pi, size, f, s)| Write {
                missing: Missing::Fraction(f as f64 / 100.0),
                policy: policies[pi],
                ..Write::new(
                    Scheme::Part,
                    size,
                    derive_seed(ctx.seed, &format!("part-fault-frequency/{s}")),
                )
            })
            .collect();
        let results = tb.measure(&writes, ctx.progress)?;
        Ok(Grid {
            points,
            writes,
            results,
        })
    }

    /// Simulated events of every write.
    pub(crate) fn events(&self) -> u64 {
        self.results.iter().map(|r| r.events).sum()
    }

    /// The mean of `get` over the seeds of (policy `pi`, `size`, fault rate `f`).
    pub(crate) fn mean(&self, pi: usize, size: u64, f: u32, get: impl Fn(&Measured) -> f64) -> f64 {
        let v: Vec<f64> = self
            .points
            .iter()
            .zip(&self.results)
            .filter(|(p, _)| (p.0, p.1, p.2) == (pi, size, f))
            .map(|(_, r)| get(r))
            .collect();
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// Run `part-fault-frequency` on `tb`: the [`Grid`] of PIO and PIA.
pub fn run(ctx: &RunContext, tb: &mut dyn Testbed) -> Result<ExperimentOutput, ExperimentError> {
    let Params { seeds, sizes } = ctx.params()?;
    let grid = Grid::measure(ctx, tb, &POLICIES, &sizes, seeds)?;
    let mut table = Table::new(&[
        "policy",
        "size_bytes",
        "fault_pct",
        "latency_us",
        "slowdown",
        "seeds",
    ]);
    let mean = |pi: usize, size: u64, f: u32| grid.mean(pi, size, f, |r| r.latency_us);
    for (pi, policy) in POLICIES.iter().enumerate() {
        for &size in &sizes {
            let base = mean(pi, size, 0);
            for &f in &FAULT_PCT {
                let m = mean(pi, size, f);
                table.push(vec![
                    policy.name().into(),
                    size.into(),
                    f.into(),
                    m.into(),
                    (m / base).into(),
                    seeds.into(),
                ]);
            }
        }
    }
    let mut plots = vec![PlotSpec::line(
        "Slowdown vs fault frequency, 4 MiB",
        "fault_pct",
        "slowdown",
        Some("policy"),
    )
    .only("size_bytes", "4194304")];
    for (size, label) in [(4096u64, "4k"), (65536, "64k"), (1 << 20, "1m")] {
        plots.push(
            PlotSpec::line(
                &format!("Slowdown vs fault frequency, {label}B"),
                "fault_pct",
                "slowdown",
                Some("policy"),
            )
            .only("size_bytes", &size.to_string())
            .suffix(label),
        );
    }
    plots.push(
        PlotSpec::line(
            "Latency vs size at each fault frequency, PIA",
            "size_bytes",
            "latency_us",
            Some("fault_pct"),
        )
        .log(true, true)
        .only("policy", "pia")
        .suffix("pia-latency"),
    );
    let mut meta = json!({ "fault_pct": FAULT_PCT, "sizes_bytes": sizes, "seeds": seeds, "retransmission": "ERR or the profile's block timeout" });
    super::extend(&mut meta, tb.meta(&grid.writes));
    Ok(ExperimentOutput {
        table,
        plots,
        sim_events: grid.events(),
        meta,
    })
}
