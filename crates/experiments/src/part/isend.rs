//! `part-isend`: time for a non-blocking send call to return, with and without pre-touching
//! the buffer (pages present). With PART the call only writes a descriptor; a runtime that must
//! guarantee presence touches every page first.

use serde_json::json;
use unpinned_core::os::cpu;
use unpinned_core::rng::{rng_for, Rng};
use unpinned_report::{PlotSpec, Table};

use super::harness::pages;
use crate::{ExperimentError, ExperimentOutput, ExperimentSpec, RunContext};

pub static SPEC: ExperimentSpec = ExperimentSpec {
    name: "part-isend",
    system: "part",
    description:
        "Non-blocking send call time with and without pre-touching, sizes 100 B .. 512 MiB",
    profile: crate::ProfileKind::Part,
    backends: crate::Backends::Sim,
    params: Some(<Params as crate::Declared>::PARAMS),
    fixed: &[],
    every_builtin_by_default: false,
    run,
};

crate::declare_params! {
    /// Parameters of `part-isend`.
    pub struct Params {
        samples: u64 {
            default: "200",
            unit: "",
            check: crate::params::int(1, 10_000_000),
            doc: "Random buffer sizes (100 B .. 512 MiB) drawn",
        },
    }
}

fn run(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
    let Params { samples } = ctx.params()?;
    let mut rng = rng_for(ctx.seed, "part-isend");
    let cpu = &ctx.profile.cpu;
    let mut table = Table::new(&["size_bytes", "pretouch", "call_us"]);
    for i in 0..samples {
        let size: u64 = rng.gen_range(100..=512u64 << 20);
        let post = cpu::post(cpu);
        table.push(vec![size.into(), "no".into(), post.as_us_f64().into()]);
        table.push(vec![
            size.into(),
            "yes".into(),
            (post + cpu::touch(cpu, pages(size), true))
                .as_us_f64()
                .into(),
        ]);
        (ctx.progress)(i + 1, samples);
    }
    Ok(ExperimentOutput {
        table,
        plots: vec![PlotSpec::line(
            "Non-blocking send call time",
            "size_bytes",
            "call_us",
            Some("pretouch"),
        )
        .log(true, true)
        .points()],
        sim_events: 0,
        meta: json!({ "samples": samples, "distribution": "size uniform in [100 B, 512 MiB]", "model": "cpu.post_us + (pretouch: cpu.touch_present_ns per page)" }),
    })
}
