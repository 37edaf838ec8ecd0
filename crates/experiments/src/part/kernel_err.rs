//! `part-kernel-err` (spec part.md, "Beyond the reference design"): the ERR sent by the page-in
//! task from kernel context (`os.err_from = "kernel"`) instead of by a user-space daemon after a
//! netlink notification (`os.notify_us`). All destination pages missing, PIA, no block timeout
//! (the ERR alone resends, so its cost is on the critical path), with the reference ERR at the
//! end of the page-in and with early ERR; what kernel context saves at each size.

use serde_json::json;
use unpinned_core::profile::ErrFrom;
use unpinned_report::{PlotSpec, Table};

use super::sim_testbed::SimTestbed;
use crate::testbed::{Measured, Missing, Scheme, Testbed, Write};
use crate::{ExperimentError, ExperimentOutput, ExperimentSpec, RunContext};

/// One line for `--list`.
pub const DESCRIPTION: &str =
    "All pages missing, PIA, NTO: ERR from kernel context (no netlink) vs from user space";

/// Profile fields it sets at every point.
pub const FIXED: &[crate::FixedField] = &[
    crate::FixedField {
        field: "engine.block_timeout_us",
        instead: "nothing: always 0 (NTO), so that only the ERR resends",
    },
    crate::FixedField {
        field: "os.err_from",
        instead: "the user_us / kernel_us columns",
    },
    crate::FixedField {
        field: "os.early_err",
        instead: "the err_point column (end = the reference, early = early ERR)",
    },
];

/// `part-kernel-err` on the simulator.
pub static SPEC: ExperimentSpec = ExperimentSpec {
    name: "part-kernel-err",
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
    /// Parameters of `part-kernel-err`.
    pub struct Params {
        sizes: Vec<u64> {
            default: "4096,16384,65536,262144,1048576,4194304",
            unit: "bytes",
            check: crate::params::int(1, 1 << 30),
            doc: "Write sizes (4 KiB .. 4 MiB, as the fault experiments)",
        },
    }
}

/// When the ERR goes out: after the whole page-in (the reference) or early.
const ERR_POINTS: [(&str, bool); 2] = [("end", false), ("early", true)];

fn run(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
    let Params { sizes } = ctx.params()?;
    let writes: Vec<Write> = sizes
        .iter()
        .map(|&size| Write {
            missing: Missing::All,
            timeout_us: Some(0.0),
            ..Write::new(Scheme::Part, size, ctx.seed)
        })
        .collect();
    let mut events = 0;
    let mut measure = |early: bool, from: ErrFrom| -> Result<Vec<Measured>, ExperimentError> {
        let mut profile = ctx.profile.clone();
        profile.os.early_err = early;
        profile.os.err_from = from;
        let r = SimTestbed::new(&profile).measure(&writes, ctx.progress)?;
        events += r.iter().map(|m| m.events).sum::<u64>();
        Ok(r)
    };
    let mut table = Table::new(&[
        "err_point",
        "size_bytes",
        "user_us",
        "kernel_us",
        "saved_us",
        "saved_pct",
        "errs",
    ]);
    for (name, early) in ERR_POINTS {
        let user = measure(early, ErrFrom::User)?;
        let kernel = measure(early, ErrFrom::Kernel)?;
        for (i, &size) in sizes.iter().enumerate() {
            let (u, k) = (user[i].latency_us, kernel[i].latency_us);
            table.push(vec![
                name.into(),
                size.into(),
                u.into(),
                k.into(),
                (u - k).into(),
                (100.0 * (u - k) / u).into(),
                kernel[i].errs.into(),
            ]);
        }
    }
    let meta = json!({
        "sizes_bytes": sizes,
        "policy": "pia",
        "missing": "all",
        "timeout_us": 0,
        "notify_us": ctx.profile.os.notify_us,
    });
    Ok(ExperimentOutput {
        table,
        plots: vec![
            PlotSpec::line(
                "Saved by sending the ERR from kernel context (all pages missing, PIA, NTO)",
                "size_bytes",
                "saved_pct",
                Some("err_point"),
            )
            .log(true, false),
            PlotSpec::line(
                "Time saved by kernel-context ERRs",
                "size_bytes",
                "saved_us",
                Some("err_point"),
            )
            .log(true, false)
            .suffix("saved"),
        ],
        sim_events: events,
        meta,
    })
}
