//! `part-fault-small`: small writes whose destination page is missing; retransmission by ERR
//! vs by a 100 us or 1 ms block timeout alone.

use serde_json::json;
use unpinned_report::{PlotSpec, Table};
use unpinned_sim::Residence;

use super::harness::{one_write, par_map, WriteSetup};
use crate::{ExperimentError, ExperimentOutput, ExperimentSpec, RunContext};

pub static SPEC: ExperimentSpec = ExperimentSpec {
    name: "part-fault-small",
    system: "part",
    description:
        "Small writes with a destination fault: retransmission by ERR vs TO=100us vs TO=1ms",
    profile: crate::ProfileKind::Part,
    backends: crate::Backends::Both,
    params: Some(<Params as crate::Declared>::PARAMS),
    fixed: &[crate::FixedField {
        field: "engine.block_timeout_us",
        instead: "its three modes (err: NTO, to100us, to1ms)",
    }],
    every_builtin_by_default: false,
    run,
};

const SIZES: [u64; 5] = [64, 256, 1 << 10, 4 << 10, 16 << 10];
/// (name, send ERR, block timeout us; 0 = NTO).
const MODES: [(&str, bool, f64); 3] = [
    ("err", true, 0.0),
    ("to100us", false, 100.0),
    ("to1ms", false, 1000.0),
];

crate::declare_params! {
    /// Parameters: none (the sizes and modes are the spec's).
    pub struct Params {}
}

fn run(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
    let Params {} = ctx.params()?;
    let points: Vec<(u64, usize)> = SIZES
        .iter()
        .flat_map(|&s| (0..MODES.len()).map(move |m| (s, m)))
        .collect();
    let results = par_map(&points, ctx.progress, |&(size, m)| {
        let mut w = WriteSetup::new(size, ctx.seed);
        w.dst = Residence::Absent;
        w.send_err = MODES[m].1;
        w.timeout_us = Some(MODES[m].2);
        one_write(&ctx.profile, &w)
    });
    let results = super::collect(results)?;
    let mut table = Table::new(&["size_bytes", "retransmit", "latency_us", "retransmissions"]);
    let mut events = 0;
    for (&(size, m), r) in points.iter().zip(&results) {
        events += r.events;
        let e = r.src.engine;
        table.push(vec![
            size.into(),
            MODES[m].0.into(),
            r.latency_us().into(),
            (e.retransmits_err + e.retransmits_timeout).into(),
        ]);
    }
    Ok(ExperimentOutput {
        table,
        plots: vec![PlotSpec::line(
            "Small writes with a destination fault",
            "size_bytes",
            "latency_us",
            Some("retransmit"),
        )
        .bars()],
        sim_events: events,
        meta: json!({ "sizes_bytes": SIZES, "policy": "pia", "modes": "err = ERR, no timeout (NTO); toX = no ERR, block timeout X" }),
    })
}
