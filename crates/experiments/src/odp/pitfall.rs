//! `odp-pitfall` (odp.md): execution time of the READ benchmark vs the post interval
//! (0 .. 10 ms) and whether the hardware ACK timeout fired, over `trials` trials (default 10),
//! for remote, local and remote+local ODP, minimal RNR delay 0.01, 0.64 and 1.28 ms, and 2, 3
//! and 4 READs.

use serde_json::json;
use unpinned_ib::{FixConfig, VendorProfile};
use unpinned_sim::rc::bench::{run_reads, ReadBench};

use super::{INTERVALS_US, ODP_SIDES, RNR_DELAYS_US};
use crate::{Cell, ExperimentError, ExperimentOutput, ExperimentSpec, PlotSpec, RunContext, Table};

pub(crate) static SPEC: ExperimentSpec = ExperimentSpec {
    name: "odp-pitfall",
    system: "odp",
    description: "READ benchmark with ODP: execution time and timeout probability vs post interval",
    profile: crate::ProfileKind::Ib,
    backends: crate::Backends::Sim,
    params: Some(<Params as crate::Declared>::PARAMS),
    fixed: &[],
    every_builtin_by_default: false,
    run,
};

/// READ counts of the benchmark.
pub(crate) const NUM_OPS: [u32; 3] = [2, 3, 4];

/// The pitfall grid for each fix period (None: fix off). Returns the rows (pitfall columns,
/// then `fix_period_us` if `with_fix_column`) and simulated events.
pub(crate) fn grid(
    ctx: &RunContext,
    profile: &VendorProfile,
    fix_periods_us: &[Option<u64>],
    threshold_factor: f64,
    with_fix_column: bool,
    trials: u64,
) -> Result<(Table, u64), ExperimentError> {
    let mut cols = vec![
        "odp",
        "num_ops",
        "rnr_delay_ms",
        "interval_us",
        "trial",
        "exec_time_us",
        "timed_out",
    ];
    if with_fix_column {
        cols.push("fix_period_us");
    }
    let mut t = Table::new(&cols);
    let total = (fix_periods_us.len()
        * ODP_SIDES.len()
        * RNR_DELAYS_US.len()
        * NUM_OPS.len()
        * INTERVALS_US.len()) as u64
        * trials;
    let (mut done, mut events) = (0u64, 0u64);
    for fp in fix_periods_us {
        for odp in ODP_SIDES {
            for rnr in RNR_DELAYS_US {
                for n in NUM_OPS {
                    for iv in INTERVALS_US {
                        for trial in 0..trials {
                            let label =
                                format!("pitfall/{fp:?}/{}/{rnr}/{n}/{iv}/{trial}", odp.name());
                            let mut b = ReadBench::new(
                                profile.clone(),
                                odp,
                                n,
                                super::us(iv),
                                super::seed(ctx, &label),
                            );
                            b.min_rnr_delay = super::us(rnr);
                            b.fix = fp.map(|p| FixConfig {
                                period: super::us(p),
                                threshold: unpinned_core::time::Duration(
                                    (p as f64 * 1e3 * threshold_factor) as u64,
                                ),
                            });
                            let r = run_reads(&b);
                            if !r.all_ok {
                                return Err(ExperimentError::Sim(format!(
                                    "{label}: a READ failed or delivered wrong bytes"
                                )));
                            }
                            events += r.events;
                            let mut row = vec![
                                Cell::from(odp.name()),
                                Cell::from(n),
                                Cell::from(rnr as f64 / 1e3),
                                Cell::from(iv),
                                Cell::from(trial),
                                Cell::from(r.exec_time.as_us_f64()),
                                Cell::from(u64::from(r.timed_out)),
                            ];
                            if with_fix_column {
                                row.push(Cell::from(fp.unwrap_or(0)));
                            }
                            t.push(row);
                            done += 1;
                            (ctx.progress)(done, total);
                        }
                    }
                }
            }
        }
    }
    Ok((t, events))
}

/// The plots of the pitfall grid, optionally restricted to one fix period.
pub(crate) fn plots(prefix: &str, filter: Option<(&str, &str)>) -> Vec<PlotSpec> {
    let f = |p: PlotSpec| match filter {
        Some((c, v)) => p.only(c, v),
        None => p,
    };
    let mut v = Vec::new();
    for (i, rnr) in ["0.01", "0.64", "1.28"].iter().enumerate() {
        let exec = PlotSpec::line(
            &format!("{prefix}2 READs, min RNR delay {rnr} ms: execution time vs interval"),
            "interval_us",
            "exec_time_us",
            Some("odp"),
        )
        .points()
        .log(false, true)
        .only("num_ops", "2")
        .only("rnr_delay_ms", rnr);
        let prob = PlotSpec::line(
            &format!("{prefix}2 READs, min RNR delay {rnr} ms: timeout probability vs interval"),
            "interval_us",
            "timed_out",
            Some("odp"),
        )
        .bars()
        .only("num_ops", "2")
        .only("rnr_delay_ms", rnr);
        let exec = if i == 2 {
            exec
        } else {
            exec.suffix(&format!("exec-rnr{rnr}"))
        };
        v.push(f(exec));
        v.push(f(prob.suffix(&format!("timeout-rnr{rnr}"))));
    }
    for odp in ["remote", "local", "both"] {
        v.push(f(PlotSpec::line(
            &format!("{prefix}{odp} ODP, min RNR delay 1.28 ms: timeout probability vs interval by READ count"),
            "interval_us",
            "timed_out",
            Some("num_ops"),
        )
        .bars()
        .only("odp", odp)
        .only("rnr_delay_ms", "1.28")
        .suffix(&format!("ops-{odp}"))));
    }
    // The main plot (no suffix) first.
    v.swap(0, 4);
    v
}

crate::declare_params! {
    /// Parameters of `odp-pitfall`.
    pub struct Params {
        trials: u64 {
            default: "10",
            unit: "",
            check: crate::params::int(1, 1_000_000),
            doc: "Seeded repetitions of every grid point",
        },
    }
}

fn run(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
    let Params { trials } = ctx.params()?;
    let profile = ctx.vendor_profile()?;
    let (table, events) = grid(ctx, &profile, &[None], 1.0, false, trials)?;
    Ok(ExperimentOutput {
        table,
        plots: plots("", None),
        sim_events: events,
        meta: json!({
            "vendor": profile.name,
            "loss_model": profile.odp.loss_model.enabled,
            "trials": trials,
            "intervals_us": INTERVALS_US,
            "read_bytes": 100,
            "timed_out": "1 if the client's hardware ACK timer expired at least once",
        }),
    })
}
