//! `part-latency`: no network faults; latency vs size for Transfer-Only, Touch-Pres,
//! Touch-NoPres, Pin-Pres and Pin-NoPres. Written once over a [`Testbed`].

use serde_json::json;
use unpinned_report::{PlotSpec, Table};

use super::sim_testbed::SimTestbed;
use crate::testbed::{Scheme, Testbed, Write};
use crate::{ExperimentError, ExperimentOutput, ExperimentSpec, RunContext};

/// One line for `--list`.
pub const DESCRIPTION: &str =
    "Latency vs size without network faults: Transfer-Only, Touch-Pres/NoPres, Pin-Pres/NoPres";

/// `part-latency` on the simulator.
pub static SPEC: ExperimentSpec = ExperimentSpec {
    name: "part-latency",
    system: "part",
    description: DESCRIPTION,
    profile: crate::ProfileKind::Part,
    backends: crate::Backends::Both,
    params: Some(<Params as crate::Declared>::PARAMS),
    fixed: &[],
    every_builtin_by_default: false,
    run: |ctx| run(ctx, &mut SimTestbed::new(&ctx.profile)),
};

crate::declare_params! {
    /// Parameters of `part-latency`.
    pub struct Params {
        sizes: Vec<u64> {
            default: "64,256,1024,4096,16384,65536,262144,1048576,4194304",
            unit: "bytes",
            check: crate::params::int(1, 1 << 30),
            doc: "Write sizes (the spec's sweep: 64 B .. 4 MiB)",
        },
        reps: usize {
            default: "11",
            unit: "",
            check: crate::params::int(1, 10_000),
            doc: "Repetitions per point, median (live; the simulator is deterministic and runs one)",
        },
    }
}

const SCHEMES: [Scheme; 5] = [
    Scheme::TransferOnly,
    Scheme::TouchPres,
    Scheme::TouchNoPres,
    Scheme::PinPres,
    Scheme::PinNoPres,
];

/// Run `part-latency` on `tb`.
pub fn run(ctx: &RunContext, tb: &mut dyn Testbed) -> Result<ExperimentOutput, ExperimentError> {
    let Params { sizes, reps } = ctx.params()?;
    let writes: Vec<Write> = sizes
        .iter()
        .flat_map(|&size| {
            SCHEMES.map(|scheme| Write {
                reps,
                ..Write::new(scheme, size, ctx.seed)
            })
        })
        .collect();
    let results = tb.measure(&writes, ctx.progress)?;
    let mut table = Table::new(&[
        "scheme",
        "size_bytes",
        "latency_us",
        "cpu_us",
        "transfer_us",
    ]);
    for (w, r) in writes.iter().zip(&results) {
        table.push(vec![
            w.scheme.name().into(),
            w.size.into(),
            r.latency_us.into(),
            r.cpu_us.into(),
            r.transfer_us.into(),
        ]);
    }
    let mut meta = json!({
        "sizes_bytes": sizes,
        "note": "Touch/Pin costs are charged at the destination buffer (the side that would fault) before the transfer; Pin adds munlock after. The transfer itself finds every page present.",
    });
    super::extend(&mut meta, tb.meta(&writes));
    Ok(ExperimentOutput {
        table,
        plots: vec![PlotSpec::line(
            "Latency without network faults",
            "size_bytes",
            "latency_us",
            Some("scheme"),
        )
        .log(true, true)],
        sim_events: results.iter().map(|r| r.events).sum(),
        meta,
    })
}
