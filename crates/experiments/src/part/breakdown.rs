//! `part-breakdown`: where the time of one faulting transfer goes (all destination pages
//! missing, PIA, retransmission by ERR only), per component, beside the measured end-to-end
//! time, measured twice (part.md): `measured` with no timeout (NTO: only the ERR resumes a
//! faulted block, so the components run one after the other) and `measured_timeout` with the
//! profile's block timeout (default 1 ms: the timeout lets retransmission overlap the page-in,
//! so it can be below the sum). The components are those of the NTO run.

use serde_json::json;
use unpinned_core::time::{serialization, Duration};
use unpinned_report::{PlotSpec, Table};
use unpinned_sim::Residence;

use super::harness::{one_write, par_map, WriteSetup, FAULT_SIZES};
use crate::{ExperimentError, ExperimentOutput, ExperimentSpec, RunContext};

pub static SPEC: ExperimentSpec = ExperimentSpec {
    name: "part-breakdown",
    system: "part",
    description: "Per-component time of one all-fault transfer (PIA, ERR) vs the measured latency",
    profile: crate::ProfileKind::Part,
    backends: crate::Backends::Sim,
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
    // Per size: the NTO run (components and `measured`), then the run with the profile's
    // block timeout (`measured_timeout`).
    let points: Vec<(u64, bool)> = FAULT_SIZES
        .iter()
        .flat_map(|&s| [(s, false), (s, true)])
        .collect();
    let runs = par_map(&points, ctx.progress, |&(size, with_timeout)| {
        let mut w = WriteSetup::new(size, ctx.seed);
        w.dst = Residence::Absent;
        if !with_timeout {
            w.timeout_us = Some(0.0); // NTO: only the ERR resumes a faulted block
        }
        one_write(&ctx.profile, &w)
    });
    let mut runs = super::collect(runs)?.into_iter();
    let mut results = Vec::new();
    let mut timed = Vec::new();
    while let (Some(nto), Some(to)) = (runs.next(), runs.next()) {
        results.push(nto);
        timed.push(to);
    }
    let p = &ctx.profile;
    let link = |bytes: u64| {
        let packets = bytes.div_ceil(p.engine.packet_bytes as u64);
        serialization(
            (bytes + packets * p.net.header_bytes as u64) as usize,
            p.net.link_gbps,
        )
    };
    let mut table = Table::new(&["size_bytes", "component", "time_us"]);
    let mut events = 0;
    for ((&size, r), to) in FAULT_SIZES.iter().zip(&results).zip(&timed) {
        events += r.events + to.events;
        let b = r.breakdown();
        let parts: [(&str, Duration); 10] = [
            ("initiation", Duration::from_us_f64(p.engine.initiation_us)),
            ("transmission", link(r.src.engine.data_bytes_sent)),
            ("retransmission", link(r.src.engine.data_bytes_resent)),
            ("interrupts", b.irq),
            ("fifo", b.fifo),
            ("get_user_pages", b.gup),
            ("notification", b.notify),
            ("bookkeeping", b.bookkeeping),
            ("err", b.err),
            ("scheduling", b.sched),
        ];
        let mut sum = Duration::ZERO;
        for (name, d) in parts {
            sum += d;
            table.push(vec![name.into(), d.as_us_f64().into()].into_iter().fold(
                vec![size.into()],
                |mut v, c| {
                    v.push(c);
                    v
                },
            ));
        }
        table.push(vec![size.into(), "sum".into(), sum.as_us_f64().into()]);
        table.push(vec![size.into(), "measured".into(), r.latency_us().into()]);
        table.push(vec![
            size.into(),
            "measured_timeout".into(),
            to.latency_us().into(),
        ]);
    }
    Ok(ExperimentOutput {
        table,
        plots: vec![
            PlotSpec::line(
                "Sum of components vs measured latency",
                "size_bytes",
                "time_us",
                Some("component"),
            )
            .log(true, true)
            .only_any("component", &["sum", "measured", "measured_timeout"]),
            PlotSpec::line(
                "Time per component (all pages missing, PIA, ERR)",
                "size_bytes",
                "time_us",
                Some("component"),
            )
            .log(true, true)
            .suffix("components"),
        ],
        sim_events: events,
        meta: json!({
            "sizes_bytes": FAULT_SIZES,
            "retransmission": "components and `measured`: ERR only (NTO; the recovery timeout guards lost ERRs); `measured_timeout`: ERR or the profile's block timeout, whichever first",
            "block_timeout_us": p.engine.block_timeout_us,
            "note": "transmission/retransmission = link serialization of first/resent payload plus headers; host components are CPU time at both nodes.",
        }),
    })
}
