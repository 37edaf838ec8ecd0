//! `part-timeout`: all destination pages missing, PIA; block timeout 100 us, 500 us, 1 ms, or
//! none (NTO); speedup of each over NTO. A short timeout lets the source resume while PIA is
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
    run,
};

const TIMEOUTS: [(&str, f64); 4] = [
    ("100us", 100.0),
    ("500us", 500.0),
    ("1ms", 1000.0),
    ("nto", 0.0),
];

fn run(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
    let points: Vec<(u64, usize)> = FAULT_SIZES
        .iter()
        .flat_map(|&s| (0..TIMEOUTS.len()).map(move |t| (s, t)))
        .collect();
    let results = par_map(&points, ctx.progress, |&(size, t)| {
        let mut w = WriteSetup::new(size, ctx.seed);
        w.dst = Residence::Absent;
        w.timeout_us = Some(TIMEOUTS[t].1);
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
        let nto = &results[i - t + TIMEOUTS.len() - 1];
        let e = r.src.engine;
        table.push(vec![
            TIMEOUTS[t].0.into(),
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
