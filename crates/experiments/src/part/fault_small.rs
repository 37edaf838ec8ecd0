//! `part-fault-small`: small writes whose destination page is missing; retransmission by ERR
//! vs by a 100 us or 1 ms block timeout alone. Written once over a [`Testbed`].

use serde_json::json;
use unpinned_report::{PlotSpec, Table};

use super::sim_testbed::SimTestbed;
use crate::testbed::{Missing, Scheme, Testbed, Write};
use crate::{ExperimentError, ExperimentOutput, ExperimentSpec, RunContext};

/// One line for `--list`.
pub const DESCRIPTION: &str =
    "Small writes with a destination fault: retransmission by ERR vs TO=100us vs TO=1ms";

/// Profile fields it sets at every point.
pub const FIXED: &[crate::FixedField] = &[crate::FixedField {
    field: "engine.block_timeout_us",
    instead: "its three modes (err: NTO, to100us, to1ms)",
}];

/// `part-fault-small` on the simulator.
pub static SPEC: ExperimentSpec = ExperimentSpec {
    name: "part-fault-small",
    system: "part",
    description: DESCRIPTION,
    profile: crate::ProfileKind::Part,
    backends: crate::Backends::Both,
    params: Some(<Params as crate::Declared>::PARAMS),
    fixed: FIXED,
    every_builtin_by_default: false,
    run: |ctx| run(ctx, &mut SimTestbed::new(&ctx.profile)),
};

/// (name, send ERR, block timeout us; 0 = NTO).
const MODES: [(&str, bool, f64); 3] = [
    ("err", true, 0.0),
    ("to100us", false, 100.0),
    ("to1ms", false, 1000.0),
];

crate::declare_params! {
    /// Parameters of `part-fault-small`.
    pub struct Params {
        sizes: Vec<u64> {
            default: "64,256,1024,4096,16384",
            unit: "bytes",
            check: crate::params::int(1, 1 << 30),
            doc: "Write sizes (the spec's: 64 B .. 16 KiB)",
        },
        reps: usize {
            default: "9",
            unit: "",
            check: crate::params::int(1, 10_000),
            doc: "Repetitions per point, median (live; the simulator is deterministic and runs one)",
        },
    }
}

/// Run `part-fault-small` on `tb`.
pub fn run(ctx: &RunContext, tb: &mut dyn Testbed) -> Result<ExperimentOutput, ExperimentError> {
    let Params { sizes, reps } = ctx.params()?;
    let points: Vec<(u64, usize)> = sizes
        .iter()
        .flat_map(|&s| (0..MODES.len()).map(move |m| (s, m)))
        .collect();
    let writes: Vec<Write> = points
        .iter()
        .map(|&(size, m)| Write {
            missing: Missing::All,
            send_err: MODES[m].1,
            timeout_us: Some(MODES[m].2),
            reps,
            ..Write::new(Scheme::Part, size, ctx.seed)
        })
        .collect();
    let results = tb.measure(&writes, ctx.progress)?;
    let mut table = Table::new(&["size_bytes", "retransmit", "latency_us", "retransmissions"]);
    for (&(size, m), r) in points.iter().zip(&results) {
        table.push(vec![
            size.into(),
            MODES[m].0.into(),
            r.latency_us.into(),
            (r.retransmits_err + r.retransmits_timeout).into(),
        ]);
    }
    let mut meta = json!({ "sizes_bytes": sizes, "policy": "pia", "modes": "err = ERR, no timeout (NTO); toX = no ERR, block timeout X" });
    super::extend(&mut meta, tb.meta(&writes));
    Ok(ExperimentOutput {
        table,
        plots: vec![PlotSpec::line(
            "Small writes with a destination fault",
            "size_bytes",
            "latency_us",
            Some("retransmit"),
        )
        .bars()],
        sim_events: results.iter().map(|r| r.events).sum(),
        meta,
    })
}
