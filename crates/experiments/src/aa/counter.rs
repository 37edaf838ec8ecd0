//! `aa-counter`: accesses per second while counting every access (spec "Use cases: Access
//! counter"): AA-Poll (metadata logging), RMA (remote fetch-and-add per access), an active
//! key-value store (akv), counting at the source plus an allreduce, and no counting.

use serde_json::json;
use unpinned_report::{PlotSpec, Table};
use unpinned_sim::aa::counter::{CounterScheme, CounterWorkload};
use unpinned_sim::aa::{AaWorld, WorldConfig};

use super::per_s;
use crate::part::harness::par_map;
use crate::{ExperimentError, ExperimentOutput, ExperimentSpec, RunContext};

pub static SPEC: ExperimentSpec = ExperimentSpec {
    name: "aa-counter",
    system: "aa",
    description: "Access counter: accesses/s for AA-Poll, RMA atomics, active KV store, allreduce, no counting",
    profile: crate::ProfileKind::Aa,
    backends: crate::Backends::Sim,
    params: Some(<Params as crate::Declared>::PARAMS),
    fixed: &[],
    every_builtin_by_default: false,
    run,
};

const SCHEMES: [CounterScheme; 5] = [
    CounterScheme::AaPoll,
    CounterScheme::Rma,
    CounterScheme::Akv,
    CounterScheme::Allreduce,
    CounterScheme::NoCount,
];

crate::declare_params! {
    /// Parameters of `aa-counter`.
    pub struct Params {
        nodes: Vec<u32> {
            default: "1,4,16,64",
            unit: "nodes",
            check: crate::params::int(1, 65536),
            doc: "Node counts",
        },
        ops: u32 {
            default: "128",
            unit: "operations per process",
            check: crate::params::int(1, 100_000_000),
            doc: "Counter updates per process",
        },
        objects: u32 {
            default: "16",
            unit: "",
            check: crate::params::int(1, 100_000_000),
            doc: "Counted objects",
        },
    }
}

fn run(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
    let Params {
        nodes,
        ops,
        objects,
    } = ctx.params()?;
    let prof = ctx.aa_profile()?;
    let points: Vec<(u32, CounterScheme)> = nodes
        .iter()
        .flat_map(|&n| SCHEMES.iter().map(move |&s| (n, s)))
        .collect();
    let results = par_map(&points, ctx.progress, |&(n, s)| {
        let cfg = WorldConfig::new(&prof, n, s.model(), ctx.seed);
        let procs = n * cfg.app_per_node(&prof);
        let wl = CounterWorkload::new(procs, s, ops, objects, ctx.seed);
        let mut w = AaWorld::new(&prof, cfg, wl);
        let st = w.run().map_err(ExperimentError::Sim)?;
        if let Some(c) = w.wl.counted() {
            if c != w.wl.truth {
                return Err(ExperimentError::Sim(format!(
                    "{}: counts differ from the true counts (seed {})",
                    s.name(),
                    ctx.seed
                )));
            }
        }
        Ok((st, w.wl.total_ops()))
    });
    let mut table = Table::new(&[
        "scheme",
        "processes",
        "accesses_per_s",
        "accesses",
        "makespan_us",
    ]);
    let mut events = 0;
    for (&(n, s), r) in points.iter().zip(results) {
        let (st, total) = r?;
        events += st.events;
        table.push(vec![
            s.name().into(),
            (n * prof.cpu.cores_per_node).into(),
            per_s(total, st.makespan_ns).into(),
            total.into(),
            (st.makespan_ns as f64 / 1e3).into(),
        ]);
    }
    Ok(ExperimentOutput {
        table,
        plots: vec![PlotSpec::line(
            "Counted accesses per second",
            "processes",
            "accesses_per_s",
            Some("scheme"),
        )
        .log(true, true)],
        sim_events: events,
        meta: json!({ "profile": prof.name, "ops_per_process": ops, "objects_per_process": objects, "get_share": 0.5, "access_bytes": 64 }),
    })
}
