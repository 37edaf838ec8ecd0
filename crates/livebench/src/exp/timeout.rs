//! Live `part-timeout`: all destination pages missing, PIA; block timeout 100 us, 500 us, 1 ms
//! or none (NTO), ERR on; speedup of each over NTO.

use serde_json::json;
use unpinned_experiments::{ExperimentError, ExperimentOutput, ExperimentSpec, RunContext};
use unpinned_live::fault_handler::PageInConfig;
use unpinned_live::MemoryMode;
use unpinned_report::{PlotSpec, Table};

use super::fault_all::{fault_point, FaultPoint};
use super::{fail, sizes_param, Pair, FAULT_SIZES};

/// `part-timeout`, live.
pub static SPEC: ExperimentSpec = ExperimentSpec {
    name: "part-timeout",
    system: "live",
    description:
        "Live: all pages missing, PIA: block timeout 100us/500us/1ms vs NTO, speedup over NTO",
    run,
    ..ExperimentSpec::LIVE
};

const TIMEOUTS: [(&str, f64); 4] = [
    ("100us", 100.0),
    ("500us", 500.0),
    ("1ms", 1000.0),
    ("nto", 0.0),
];

fn run(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
    let reps: usize = ctx.param("reps", 5)?;
    let sizes = sizes_param(ctx, &FAULT_SIZES)?;
    let mut res: Vec<Vec<FaultPoint>> = Vec::new();
    let mut done = 0;
    for (_, to) in TIMEOUTS {
        let mut p = ctx.profile.clone();
        p.engine.block_timeout_us = to;
        p = p.with_override("engine.max_timeouts=1000").map_err(fail)?;
        let pair = Pair::new(&p, MemoryMode::Part, PageInConfig::default())?;
        let mut v = Vec::new();
        for &size in &sizes {
            v.push(fault_point(&pair, size, reps, &|_, _| true)?);
            done += 1;
            (ctx.progress)(done, (TIMEOUTS.len() * sizes.len()) as u64);
        }
        res.push(v);
    }
    let mut table = Table::new(&[
        "timeout",
        "size_bytes",
        "latency_us",
        "speedup_vs_nto",
        "retransmits_timeout",
        "retransmits_err",
    ]);
    for (si, &size) in sizes.iter().enumerate() {
        let nto = res[TIMEOUTS.len() - 1][si].latency_us;
        for (ti, (name, _)) in TIMEOUTS.iter().enumerate() {
            let r = &res[ti][si];
            table.push(vec![
                (*name).into(),
                size.into(),
                r.latency_us.into(),
                (nto / r.latency_us).into(),
                r.retransmits_timeout.into(),
                r.retransmits_err.into(),
            ]);
        }
    }
    Ok(ExperimentOutput {
        table,
        plots: vec![
            PlotSpec::line(
                "Live: speedup of a block timeout over NTO (all pages missing, PIA)",
                "size_bytes",
                "speedup_vs_nto",
                Some("timeout"),
            )
            .log(true, false),
            PlotSpec::line(
                "Live: latency by timeout",
                "size_bytes",
                "latency_us",
                Some("timeout"),
            )
            .log(true, true)
            .suffix("latency"),
        ],
        sim_events: 0,
        meta: json!({ "sizes_bytes": sizes, "reps": reps, "policy": "pia", "err": true, "max_timeouts": 1000, "transport": "shm (two runtimes in one process)" }),
    })
}
