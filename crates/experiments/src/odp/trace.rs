//! `odp-trace` (odp.md): packet traces of one and two READs with remote, local and remote+local
//! ODP (minimal RNR delay 1.28 ms; interval 3 ms for remote and both, 0.5 ms for local), and of
//! three READs with remote+local ODP, interval 3 ms. Two-READ scenarios are also run with the
//! loss model off (`-pure`) to show what the protocol alone does.

use serde_json::json;
use unpinned_sim::rc::bench::{run_reads, OdpSide, ReadBench};

use crate::{Cell, ExperimentError, ExperimentOutput, ExperimentSpec, PlotSpec, RunContext, Table};

pub(crate) static SPEC: ExperimentSpec = ExperimentSpec {
    name: "odp-trace",
    system: "odp",
    description: "Packet-level traces of 1, 2 and 3 READs with remote, local and remote+local ODP",
    profile: crate::ProfileKind::Ib,
    backends: crate::Backends::Sim,
    params: Some(<Params as crate::Declared>::PARAMS),
    fixed: &[],
    every_builtin_by_default: false,
    run,
};

/// (scenario, odp, READs, interval us, loss model on).
const SCENARIOS: [(&str, OdpSide, u32, u64, bool); 10] = [
    ("remote-1", OdpSide::Remote, 1, 3000, true),
    ("remote-2", OdpSide::Remote, 2, 3000, true),
    ("remote-2-pure", OdpSide::Remote, 2, 3000, false),
    ("local-1", OdpSide::Local, 1, 500, true),
    ("local-2", OdpSide::Local, 2, 500, true),
    ("local-2-pure", OdpSide::Local, 2, 500, false),
    ("both-1", OdpSide::Both, 1, 3000, true),
    ("both-2", OdpSide::Both, 2, 3000, true),
    ("both-2-pure", OdpSide::Both, 2, 3000, false),
    ("both-3", OdpSide::Both, 3, 3000, true),
];

crate::declare_params! {
    /// Parameters: none (the scenarios are the spec's).
    pub struct Params {}
}

fn run(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
    let Params {} = ctx.params()?;
    let profile = ctx.vendor_profile()?;
    let mut t = Table::new(&["scenario", "time_us", "direction", "packet", "psn", "op"]);
    let mut plots = Vec::new();
    let mut events = 0;
    let mut summary = serde_json::Map::new();
    for (i, (name, odp, n, iv, lm)) in SCENARIOS.iter().enumerate() {
        let mut b = ReadBench::new(
            profile.clone(),
            *odp,
            *n,
            super::us(*iv),
            super::seed(ctx, &format!("trace/{name}")),
        );
        b.loss_model = Some(*lm && profile.odp.loss_model.enabled);
        b.trace = true;
        let r = run_reads(&b);
        events += r.events;
        for rec in &r.trace {
            let rel = rec.psn.wrapping_sub(r.first_psn) & 0x00ff_ffff;
            let op = if rel < *n {
                format!("READ {}", rel + 1)
            } else {
                "other".into()
            };
            let dir = if rec.src == 0 {
                "client->server"
            } else {
                "server->client"
            };
            t.push(vec![
                Cell::from(*name),
                Cell::from(rec.at.as_us_f64()),
                Cell::from(dir),
                Cell::from(rec.packet),
                Cell::from(u64::from(rel)),
                Cell::from(op),
            ]);
        }
        summary.insert(
            name.to_string(),
            json!({ "exec_time_us": r.exec_time.as_us_f64(), "timed_out": r.timed_out, "loss_model_discards": r.server.loss_model_discards }),
        );
        plots.push(
            PlotSpec::line(
                &format!("Packet trace: {name} (PSN relative to READ 1)"),
                "direction",
                "time_us",
                Some("packet"),
            )
            .ladder()
            .only("scenario", name)
            .suffix(name),
        );
        (ctx.progress)(i as u64 + 1, SCENARIOS.len() as u64);
    }
    Ok(ExperimentOutput {
        table: t,
        plots,
        sim_events: events,
        meta: json!({
            "vendor": profile.name,
            "min_rnr_delay_ms": 1.28,
            "psn": "relative to the first READ's PSN (the initial PSN is random per run)",
            "time_us": "when the packet left its sender; t = 0 is the first post",
            "scenarios": summary,
        }),
    })
}
