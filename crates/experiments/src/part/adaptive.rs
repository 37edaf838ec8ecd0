//! `part-adaptive`: the adaptive page-in policy (`unpinned_core::os::adaptive`) beside PIO and
//! PIA over the grid of `part-fault-frequency` (each destination page independently missing
//! with probability f; sizes 4 KiB .. 4 MiB; mean of seeds). Per row, the latency and its ratio
//! to the better of PIO and PIA at the same (size, f): the question of issue 17, section 4, is
//! whether one policy that looks at the fault density gets the better fixed policy's latency
//! everywhere.
//!
//! The points are the same writes as `part-fault-frequency`'s (same seeds, so the same missing
//! pages); only the policy differs.

use serde_json::json;
use unpinned_core::os::{AdaptiveCosts, PageInPolicy};
use unpinned_report::{PlotSpec, Table};

use super::fault_frequency::{Grid, FAULT_PCT};
use super::sim_testbed::SimTestbed;
use crate::testbed::Testbed;
use crate::{ExperimentError, ExperimentOutput, ExperimentSpec, RunContext};

/// One line for `--list`.
pub const DESCRIPTION: &str =
    "Adaptive page-in (fault density) vs PIO and PIA over part-fault-frequency's grid";

/// `part-adaptive` on the simulator.
pub static SPEC: ExperimentSpec = ExperimentSpec {
    name: "part-adaptive",
    system: "part",
    description: DESCRIPTION,
    profile: crate::ProfileKind::Part,
    backends: crate::Backends::Sim,
    params: Some(<Params as crate::Declared>::PARAMS),
    fixed: &[],
    every_builtin_by_default: false,
    run: |ctx| run(ctx, &mut SimTestbed::new(&ctx.profile)),
};

/// The policies compared, the adaptive one last.
pub const POLICIES: [PageInPolicy; 3] =
    [PageInPolicy::Pio, PageInPolicy::Pia, PageInPolicy::Adaptive];

crate::declare_params! {
    /// Parameters of `part-adaptive`.
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
            doc: "Write sizes (part-fault-frequency's sweep: 4 KiB .. 4 MiB)",
        },
    }
}

/// Run `part-adaptive` on `tb`.
pub fn run(ctx: &RunContext, tb: &mut dyn Testbed) -> Result<ExperimentOutput, ExperimentError> {
    let Params { seeds, sizes } = ctx.params()?;
    // The writes of part-fault-frequency: the same missing pages, point for point.
    let grid = Grid::measure(ctx, tb, &POLICIES, &sizes, seeds)?;
    let mean = |pi: usize, size: u64, f: u32, get: &dyn Fn(&crate::testbed::Measured) -> f64| {
        grid.mean(pi, size, f, get)
    };
    let lat = |r: &crate::testbed::Measured| r.latency_us;
    let mut table = Table::new(&[
        "policy",
        "size_bytes",
        "fault_pct",
        "latency_us",
        "slowdown",
        "best_fixed",
        "vs_best_fixed",
        "fault_interrupts",
        "errs",
        "resent_bytes",
        "seeds",
    ]);
    let (pio, pia) = (0, 1);
    for (pi, policy) in POLICIES.iter().enumerate() {
        for &size in &sizes {
            let base = mean(pi, size, 0, &lat);
            for &f in &FAULT_PCT {
                let m = mean(pi, size, f, &lat);
                let (a, b) = (mean(pio, size, f, &lat), mean(pia, size, f, &lat));
                let (best_name, best) = if a < b { ("pio", a) } else { ("pia", b) };
                table.push(vec![
                    policy.name().into(),
                    size.into(),
                    f.into(),
                    m.into(),
                    (m / base).into(),
                    best_name.into(),
                    (m / best).into(),
                    mean(pi, size, f, &|r| r.fault_interrupts as f64).into(),
                    mean(pi, size, f, &|r| r.errs as f64).into(),
                    mean(pi, size, f, &|r| r.resent_bytes as f64).into(),
                    seeds.into(),
                ]);
            }
        }
    }
    let mut plots = vec![PlotSpec::line(
        "Latency over the better of PIO and PIA, adaptive, per size",
        "fault_pct",
        "vs_best_fixed",
        Some("size_bytes"),
    )
    .only("policy", "adaptive")];
    for (size, label) in [(65536u64, "64k"), (1 << 20, "1m"), (4 << 20, "4m")] {
        plots.push(
            PlotSpec::line(
                &format!("Slowdown vs fault frequency, {label}B: PIO, PIA, adaptive"),
                "fault_pct",
                "slowdown",
                Some("policy"),
            )
            .only("size_bytes", &size.to_string())
            .suffix(label),
        );
    }
    let costs = AdaptiveCosts::from_profile(&ctx.profile);
    let mut meta = json!({
        "fault_pct": FAULT_PCT,
        "sizes_bytes": sizes,
        "seeds": seeds,
        "retransmission": "ERR or the profile's block timeout",
        "adaptive_fault_round_us": costs.fault_round_us,
        "adaptive_page_us": costs.page_us,
        "adaptive_call_us": costs.call_us,
        "adaptive_present_us": costs.present_us,
        "adaptive_eager_density": costs.eager_density(),
    });
    super::extend(&mut meta, tb.meta(&grid.writes));
    Ok(ExperimentOutput {
        table,
        plots,
        sim_events: grid.events(),
        meta,
    })
}
