//! `part-fault-all`: every destination page missing; Transfer-Only, Touch-NoPres, Pin-NoPres,
//! and PART with PIO, PI4, PIA.

use serde_json::json;
use unpinned_core::os::{cpu, PageInPolicy};
use unpinned_report::{PlotSpec, Table};
use unpinned_sim::Residence;

use super::harness::{one_write, pages, par_map, WriteSetup, FAULT_SIZES};
use crate::{ExperimentError, ExperimentOutput, ExperimentSpec, RunContext};

pub static SPEC: ExperimentSpec = ExperimentSpec {
    name: "part-fault-all",
    system: "part",
    description:
        "All destination pages missing: Transfer-Only, Touch-NoPres, Pin-NoPres vs PART PIO/PI4/PIA",
    profile: crate::ProfileKind::Part,
    backends: crate::Backends::Both,
    params: Some(<Params as crate::Declared>::PARAMS),
    fixed: &[],
    every_builtin_by_default: false,
    run,
};

crate::declare_params! {
    /// Parameters: none (the size sweep is the spec's).
    pub struct Params {}
}

fn run(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
    let Params {} = ctx.params()?;
    // Point = (size, policy or None for the present-memory transfer).
    let mut points = Vec::new();
    for &size in &FAULT_SIZES {
        points.push((size, None));
        for p in [PageInPolicy::Pio, PageInPolicy::Pi4, PageInPolicy::Pia] {
            points.push((size, Some(p)));
        }
    }
    let results = par_map(&points, ctx.progress, |&(size, policy)| {
        let mut w = WriteSetup::new(size, ctx.seed);
        if let Some(p) = policy {
            w.policy = p;
            w.dst = Residence::Absent;
        }
        one_write(&ctx.profile, &w)
    });
    let results = super::collect(results)?;
    let cpu = &ctx.profile.cpu;
    let mut table = Table::new(&[
        "scheme",
        "size_bytes",
        "latency_us",
        "fault_interrupts",
        "errs",
        "retransmitted_bytes",
    ]);
    let mut events = 0;
    for (&(size, policy), r) in points.iter().zip(&results) {
        events += r.events;
        let row = |scheme: &str, lat: f64| {
            vec![
                scheme.into(),
                size.into(),
                lat.into(),
                r.dst.handler.interrupts.into(),
                r.dst.engine.errs_sent.into(),
                r.src.engine.data_bytes_resent.into(),
            ]
        };
        match policy {
            None => {
                let n = pages(size);
                table.push(row("transfer-only", r.latency_us()));
                table.push(row(
                    "touch-nopres",
                    (cpu::touch(cpu, n, false) + r.latency).as_us_f64(),
                ));
                table.push(row(
                    "pin-nopres",
                    (cpu::mlock(cpu, n, false) + cpu::munlock(cpu, n) + r.latency).as_us_f64(),
                ));
            }
            Some(p) => table.push(row(p.name(), r.latency_us())),
        }
    }
    Ok(ExperimentOutput {
        table,
        plots: vec![PlotSpec::line(
            "Every destination page missing",
            "size_bytes",
            "latency_us",
            Some("scheme"),
        )
        .log(true, true)],
        sim_events: events,
        meta: json!({
            "sizes_bytes": FAULT_SIZES,
            "block_timeout_us": ctx.profile.engine.block_timeout_us,
            "note": "PART rows retransmit on ERR or the profile's block timeout, whichever comes first. Touch/Pin rows: CPU cost at the destination, then a transfer into present pages. Counters (interrupts, ERRs, resent bytes) belong to the PART rows; for the other schemes they are those of the fault-free transfer.",
        }),
    })
}
