//! `part-early-err` (spec part.md, "Beyond the reference design"): the page-in task sends the
//! ERR before all pages are in, at a point chosen from the transfer and its faults
//! (`os.early_err`, `unpinned_core::os::early_err`), so that the resend overlaps the rest of
//! the page-in without a block timeout. All destination pages missing, PIA, over
//! part-timeout's sizes; compared with PIA + TO = 100 us (`exp.timeout_us`) and PIA + NTO.

use serde_json::json;
use unpinned_report::{PlotSpec, Table};

use super::sim_testbed::SimTestbed;
use crate::testbed::{Measured, Missing, Scheme, Testbed, Write};
use crate::{ExperimentError, ExperimentOutput, ExperimentSpec, RunContext};

/// One line for `--list`.
pub const DESCRIPTION: &str =
    "All pages missing, PIA: early ERR (no timeout) vs TO=100us vs NTO, speedup over NTO";

/// Profile fields it sets at every point.
pub const FIXED: &[crate::FixedField] = &[
    crate::FixedField {
        field: "engine.block_timeout_us",
        instead: "exp.timeout_us (the early-ERR and NTO rows run without a timeout)",
    },
    crate::FixedField {
        field: "os.early_err",
        instead: "the scheme column (early-err on, the others off)",
    },
];

/// `part-early-err` on the simulator.
pub static SPEC: ExperimentSpec = ExperimentSpec {
    name: "part-early-err",
    system: "part",
    description: DESCRIPTION,
    profile: crate::ProfileKind::Part,
    backends: crate::Backends::Sim,
    params: Some(<Params as crate::Declared>::PARAMS),
    fixed: FIXED,
    every_builtin_by_default: false,
    run,
};

crate::declare_params! {
    /// Parameters of `part-early-err`.
    pub struct Params {
        timeout_us: f64 {
            default: "100",
            unit: "us",
            check: crate::params::positive(1e9),
            doc: "Block timeout of the timeout-driven comparison (PIA+TO)",
        },
        sizes: Vec<u64> {
            default: "4096,16384,65536,262144,1048576,4194304",
            unit: "bytes",
            check: crate::params::int(1, 1 << 30),
            doc: "Write sizes (part-timeout's sweep: 4 KiB .. 4 MiB)",
        },
    }
}

/// The three ways a faulted block is resent, in table order: name, block timeout (0 = none),
/// early ERR.
fn schemes(timeout_us: f64) -> [(String, f64, bool); 3] {
    [
        ("early-err".to_string(), 0.0, true),
        (format!("to-{timeout_us}us"), timeout_us, false),
        ("nto".to_string(), 0.0, false),
    ]
}

fn run(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
    let Params { timeout_us, sizes } = ctx.params()?;
    let schemes = schemes(timeout_us);
    let write = |size: u64, timeout_us: f64| Write {
        missing: Missing::All,
        timeout_us: Some(timeout_us),
        ..Write::new(Scheme::Part, size, ctx.seed)
    };
    let mut by_scheme: Vec<Vec<Measured>> = Vec::new();
    let mut events = 0;
    for (_, t, early) in &schemes {
        let mut profile = ctx.profile.clone();
        profile.os.early_err = *early;
        let writes: Vec<Write> = sizes.iter().map(|&s| write(s, *t)).collect();
        let r = SimTestbed::new(&profile).measure(&writes, ctx.progress)?;
        events += r.iter().map(|m| m.events).sum::<u64>();
        by_scheme.push(r);
    }
    let mut table = Table::new(&[
        "scheme",
        "size_bytes",
        "latency_us",
        "speedup_vs_nto",
        "errs",
        "retransmits_err",
        "retransmits_timeout",
        "resent_bytes",
    ]);
    let nto = by_scheme.len() - 1;
    for (s, (name, _, _)) in schemes.iter().enumerate() {
        for (i, &size) in sizes.iter().enumerate() {
            let r = &by_scheme[s][i];
            table.push(vec![
                name.clone().into(),
                size.into(),
                r.latency_us.into(),
                (by_scheme[nto][i].latency_us / r.latency_us).into(),
                r.errs.into(),
                r.retransmits_err.into(),
                r.retransmits_timeout.into(),
                r.resent_bytes.into(),
            ]);
        }
    }
    let meta = json!({
        "sizes_bytes": sizes,
        "policy": "pia",
        "missing": "all",
        "timeout_us": timeout_us,
    });
    Ok(ExperimentOutput {
        table,
        plots: vec![
            PlotSpec::line(
                "Speedup over NTO: early ERR vs a block timeout (all pages missing, PIA)",
                "size_bytes",
                "speedup_vs_nto",
                Some("scheme"),
            )
            .log(true, false),
            PlotSpec::line(
                "Latency by resend trigger",
                "size_bytes",
                "latency_us",
                Some("scheme"),
            )
            .log(true, true)
            .suffix("latency"),
        ],
        sim_events: events,
        meta,
    })
}
