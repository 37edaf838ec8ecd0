//! `part-latency`: no network faults; latency vs size for Transfer-Only, Touch-Pres,
//! Touch-NoPres, Pin-Pres and Pin-NoPres.

use serde_json::json;
use unpinned_core::os::cpu;
use unpinned_core::time::Duration;
use unpinned_report::{PlotSpec, Table};

use super::harness::{one_write, pages, par_map, WriteSetup};
use crate::{ExperimentError, ExperimentOutput, ExperimentSpec, RunContext};

pub static SPEC: ExperimentSpec = ExperimentSpec {
    name: "part-latency",
    system: "part",
    description:
        "Latency vs size without network faults: Transfer-Only, Touch-Pres/NoPres, Pin-Pres/NoPres",
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

const SCHEMES: [&str; 5] = [
    "transfer-only",
    "touch-pres",
    "touch-nopres",
    "pin-pres",
    "pin-nopres",
];

fn run(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
    let Params {} = ctx.params()?;
    let sizes: Vec<u64> = (0..=8).map(|i| 64u64 << (2 * i)).collect(); // 64 B .. 4 MiB
    let results = par_map(&sizes, ctx.progress, |&size| {
        one_write(&ctx.profile, &WriteSetup::new(size, ctx.seed))
    });
    let results = super::collect(results)?;
    let cpu = &ctx.profile.cpu;
    let mut table = Table::new(&[
        "scheme",
        "size_bytes",
        "latency_us",
        "cpu_us",
        "transfer_us",
    ]);
    let mut events = 0;
    for (size, r) in sizes.iter().zip(&results) {
        events += r.events;
        let n = pages(*size);
        for scheme in SCHEMES {
            let cpu_cost = match scheme {
                "transfer-only" => Duration::ZERO,
                "touch-pres" => cpu::touch(cpu, n, true),
                "touch-nopres" => cpu::touch(cpu, n, false),
                "pin-pres" => cpu::mlock(cpu, n, true) + cpu::munlock(cpu, n),
                _ => cpu::mlock(cpu, n, false) + cpu::munlock(cpu, n),
            };
            let total = cpu_cost + r.latency;
            table.push(vec![
                scheme.into(),
                (*size).into(),
                total.as_us_f64().into(),
                cpu_cost.as_us_f64().into(),
                r.latency_us().into(),
            ]);
        }
    }
    Ok(ExperimentOutput {
        table,
        plots: vec![PlotSpec::line(
            "Latency without network faults",
            "size_bytes",
            "latency_us",
            Some("scheme"),
        )
        .log(true, true)],
        sim_events: events,
        meta: json!({
            "sizes_bytes": sizes,
            "note": "Touch/Pin costs are charged at the destination buffer (the side that would fault) before the transfer; Pin adds munlock after. The transfer itself finds every page present.",
        }),
    })
}
