//! `part-timeout`: all destination pages missing, PIA; block timeout 100 us, 500 us, 1 ms
//! (`exp.timeouts_us`), or none (NTO); speedup of each over NTO. A short timeout lets the source resume while PIA is
//! still bringing later pages in (overlap, spec part.md mechanism 9). Written once over a
//! [`Testbed`].

use serde_json::json;
use unpinned_report::{PlotSpec, Table};

use super::sim_testbed::SimTestbed;
use crate::testbed::{Missing, Scheme, Testbed, Write};
use crate::{ExperimentError, ExperimentOutput, ExperimentSpec, RunContext};

/// One line for `--list`.
pub const DESCRIPTION: &str =
    "All pages missing, PIA: block timeout 100us/500us/1ms vs NTO, speedup over NTO";

/// Profile fields it sets at every point.
pub const FIXED: &[crate::FixedField] = &[crate::FixedField {
    field: "engine.block_timeout_us",
    instead: "exp.timeouts_us (NTO is always added)",
}];

/// `part-timeout` on the simulator.
pub static SPEC: ExperimentSpec = ExperimentSpec {
    name: "part-timeout",
    system: "part",
    description: DESCRIPTION,
    profile: crate::ProfileKind::Part,
    backends: crate::Backends::Both,
    params: Some(<Params as crate::Declared>::PARAMS),
    fixed: FIXED,
    every_builtin_by_default: false,
    run: |ctx| run(ctx, &mut SimTestbed::new(&ctx.profile)),
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
        sizes: Vec<u64> {
            default: "4096,16384,65536,262144,1048576,4194304",
            unit: "bytes",
            check: crate::params::int(1, 1 << 30),
            doc: "Write sizes (the spec's sweep: 4 KiB .. 4 MiB)",
        },
        reps: usize {
            default: "5",
            unit: "",
            check: crate::params::int(1, 10_000),
            doc: "Repetitions per point, median (live; the simulator is deterministic and runs one)",
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

/// Run `part-timeout` on `tb`.
pub fn run(ctx: &RunContext, tb: &mut dyn Testbed) -> Result<ExperimentOutput, ExperimentError> {
    let Params {
        timeouts_us,
        sizes,
        reps,
    } = ctx.params()?;
    let timeouts: Vec<(String, f64)> = timeouts_us
        .iter()
        .chain(&[0.0])
        .map(|&t| (label(t), t))
        .collect();
    let points: Vec<(u64, usize)> = sizes
        .iter()
        .flat_map(|&s| (0..timeouts.len()).map(move |t| (s, t)))
        .collect();
    let writes: Vec<Write> = points
        .iter()
        .map(|&(size, t)| Write {
            missing: Missing::All,
            timeout_us: Some(timeouts[t].1),
            reps,
            ..Write::new(Scheme::Part, size, ctx.seed)
        })
        .collect();
    let results = tb.measure(&writes, ctx.progress)?;
    let mut table = Table::new(&[
        "timeout",
        "size_bytes",
        "latency_us",
        "speedup_vs_nto",
        "retransmits_timeout",
        "retransmits_err",
    ]);
    for (i, (&(size, t), r)) in points.iter().zip(&results).enumerate() {
        let nto = &results[i - t + timeouts.len() - 1];
        table.push(vec![
            timeouts[t].0.clone().into(),
            size.into(),
            r.latency_us.into(),
            (nto.latency_us / r.latency_us).into(),
            r.retransmits_timeout.into(),
            r.retransmits_err.into(),
        ]);
    }
    let mut meta = json!({ "sizes_bytes": sizes, "policy": "pia", "err": true });
    super::extend(&mut meta, tb.meta(&writes));
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
        sim_events: results.iter().map(|r| r.events).sum(),
        meta,
    })
}
