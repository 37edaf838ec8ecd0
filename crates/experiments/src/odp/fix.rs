//! `odp-fix` (odp.md): the pitfall grid with the software-timer fix on, for a few timer
//! periods (`exp.fix_periods_us`, default 100, 1000, 10000; threshold = period times
//! `exp.threshold_factor`, default 1).

use serde_json::json;

use crate::{ExperimentError, ExperimentOutput, ExperimentSpec, RunContext};

pub(crate) static SPEC: ExperimentSpec = ExperimentSpec {
    name: "odp-fix",
    system: "odp",
    description: "The READ benchmark with the software-timer fix (dummy request on a stalled QP)",
    profile: crate::ProfileKind::Ib,
    backends: crate::Backends::Sim,
    params: Some(<Params as crate::Declared>::PARAMS),
    fixed: &[],
    every_builtin_by_default: false,
    run,
};

crate::declare_params! {
    /// Parameters of `odp-fix`.
    pub struct Params {
        trials: u64 {
            default: "10",
            unit: "",
            check: crate::params::int(1, 1_000_000),
            doc: "Seeded repetitions of every grid point",
        },
        fix_periods_us: Vec<u64> {
            default: "100,1000,10000",
            unit: "us",
            check: crate::params::int(1, 1_000_000_000),
            doc: "Periods of the software timer",
        },
        threshold_factor: f64 {
            default: "1.0",
            unit: "",
            check: crate::params::positive(1e6),
            doc: "Stall threshold = period x this factor",
        },
    }
}

fn run(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
    let Params {
        trials,
        fix_periods_us,
        threshold_factor: factor,
    } = ctx.params()?;
    let profile = ctx.vendor_profile()?;
    let periods: Vec<Option<u64>> = fix_periods_us.into_iter().map(Some).collect();
    let (table, events) = super::pitfall::grid(ctx, &profile, &periods, factor, true, trials)?;
    let mut plots = Vec::new();
    for (i, p) in periods.iter().flatten().enumerate() {
        let all = super::pitfall::plots(
            &format!("fix period {p} us: "),
            Some(("fix_period_us", &p.to_string())),
        );
        // Per period: execution time and timeout probability at 1.28 ms and 0.01 ms.
        let mut ps: Vec<_> = [0usize, 5, 4, 1].iter().map(|&k| all[k].clone()).collect();
        for (j, x) in ps.iter_mut().enumerate() {
            let s = if x.suffix.is_empty() {
                format!("p{p}")
            } else {
                format!("p{p}-{}", x.suffix)
            };
            if !(i == 0 && j == 0) {
                x.suffix = s;
            }
        }
        plots.extend(ps);
    }
    Ok(ExperimentOutput {
        table,
        plots,
        sim_events: events,
        meta: json!({
            "vendor": profile.name,
            "loss_model": profile.odp.loss_model.enabled,
            "fix_periods_us": periods,
            "threshold": format!("{factor} x period"),
            "dummy": "zero-length RDMA READ on the stalled QP; its completion is hidden",
            "timed_out": "1 if the client's hardware ACK timer expired at least once",
        }),
    })
}
