//! `part-timeout`: all destination pages missing, PIA; block timeout 100 us, 500 us, 1 ms
//! (`exp.timeouts_us`), or none (NTO); speedup of each over NTO. A short timeout lets the source resume while PIA is
//! still bringing later pages in (overlap, spec part.md mechanism 9).

use serde_json::json;
use unpinned_report::{PlotSpec, Table};
use unpinned_sim::Residence;

use super::harness::{one_write, par_map, WriteSetup, FAULT_SIZES};
use crate::{ExperimentError, ExperimentOutput, ExperimentSpec, RunContext};

pub static SPEC: ExperimentSpec = ExperimentSpec {
    name: "part-timeout",
    system: "part",
    description: "All pages missing, PIA: block timeout 100us/500us/1ms vs NTO, speedup over NTO",
    profile: crate::ProfileKind::Part,
    backends: crate::Backends::Both,
    params: Some(<Params as crate::Declared>::PARAMS),
    fixed: &[crate::FixedField {
        field: "engine.block_timeout_us",
        instead: "exp.timeouts_us (NTO is always added)",
    }],
    every_builtin_by_default: false,
    run,
};

crate::declare_params! {
    /// Parameters of `part-timeout`.
    pub struct Params {
        timeouts_us: Vec<f64> {
            default: "100,500,1000",
            unit: "us",
            check: crate::params::positive(1e9),
            doc: "Block timeouts compared with NTO (no timeout, always added last)",
        },
    }
}

/// A timeout's label: `100us`, `1ms`, `nto` for none.
fn label(timeout_us: f64) -> String {
    if timeout_us == 0.0 {
        "nto".to_string()
    } else if timeout_us >= 1000.0 && timeout_us % 1000.0 == 0.0 {
        format!("{}ms", timeout_us / 1000.0)
    } else {
        format!("{timeout_us}us")
    }
}

fn run(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
    let Params { timeouts_us } = ctx.params()?;
    let timeouts: Vec<(String, f64)> = timeouts_us
        .iter()
        .chain(&[0.0])
        .map(|&t| (label(t), t))
        .collect();
    let points: Vec<(u64, usize)> = FAULT_SIZES
        .iter()
        .flat_map(|&s| (0..timeouts.len()).map(move |t| (s, t)))
        .collect();
    let results = par_map(&points, ctx.progress, |&(size, t)| {
        let mut w = WriteSetup::new(size, ctx.seed);
        w.dst = Residence::Absent;
        w.timeout_us = Some(timeouts[t].1);
        one_write(&ctx.profile, &w)
    });
    let results = super::collect(results)?;
    let mut table = Table::new(&[
        "timeout",
        "size_bytes",
        "latency_us",
        "speedup_vs_nto",
        "retransmits_timeout",
        "retransmits_err",
    ]);
    let mut events = 0;
    for (i, (&(size, t), r)) in points.iter().zip(&results).enumerate() {
        events += r.events;
        let nto = &results[i - t + timeouts.len() - 1];
        let e = r.src.engine;
        table.push(vec![
            timeouts[t].0.clone().into(),
            size.into(),
            r.latency_us().into(),
            (nto.latency_us() / r.latency_us()).into(),
            e.retransmits_timeout.into(),
            e.retransmits_err.into(),
        ]);
    }
    Ok(ExperimentOutput {
        table,
        plots: vec![
            PlotSpec::line(
                "Speedup of a block timeout over NTO (all pages missing, PIA)",
                "size_bytes",
                "speedup_vs_nto",
                Some("timeout"),
            )
            .log(true, false),
            PlotSpec::line(
                "Latency by timeout",
                "size_bytes",
                "latency_us",
                Some("timeout"),
            )
            .log(true, true)
            .suffix("latency"),
        ],
        sim_events: events,
        meta: json!({ "sizes_bytes": FAULT_SIZES, "policy": "pia", "err": true }),
    })
}
