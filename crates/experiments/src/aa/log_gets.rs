//! `aa-log-gets`: gets per second vs processes when every get must be replayable after a
//! crash (spec "Use cases: Logging gets"): AA (the target IOMMU logs the data as it reads it),
//! RMA (the source puts the data back), AM (the handler keeps a copy and replies), no FT.

use serde_json::json;
use unpinned_report::{PlotSpec, Table};
use unpinned_sim::aa::loggets::{LogGetsScheme, LogGetsWorkload};
use unpinned_sim::aa::{AaWorld, Scheme, WorldConfig};

use super::per_s;
use crate::part::harness::par_map;
use crate::{ExperimentError, ExperimentOutput, ExperimentSpec, RunContext};

pub static SPEC: ExperimentSpec = ExperimentSpec {
    name: "aa-log-gets",
    system: "aa",
    description: "Logged gets for fault tolerance: gets/s for AA, RMA put-back, AM, no FT",
    profile: crate::ProfileKind::Aa,
    backends: crate::Backends::Sim,
    params: Some(<Params as crate::Declared>::PARAMS),
    fixed: &[],
    every_builtin_by_default: false,
    run,
};

pub(crate) const SCHEMES: [LogGetsScheme; 6] = [
    LogGetsScheme::Aa(Scheme::AaInt),
    LogGetsScheme::Aa(Scheme::AaPoll),
    LogGetsScheme::Aa(Scheme::AaSp),
    LogGetsScheme::Rma,
    LogGetsScheme::Am,
    LogGetsScheme::NoFt,
];

crate::declare_params! {
    /// Parameters of `aa-log-gets`.
    pub struct Params {
        nodes: Vec<u32> {
            default: "1,4,16,64",
            unit: "nodes",
            check: crate::params::int(1, 65536),
            doc: "Node counts",
        },
        ops: u32 {
            default: "64",
            unit: "gets per process",
            check: crate::params::int(1, 100_000_000),
            doc: "Gets per process",
        },
        get_bytes: u32 {
            default: "256",
            unit: "bytes",
            check: crate::params::int(1, 1 << 30),
            doc: "Bytes per get",
        },
    }
}

fn run(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
    let Params {
        nodes,
        ops,
        get_bytes: bytes,
    } = ctx.params()?;
    let prof = ctx.aa_profile()?;
    let points: Vec<(u32, LogGetsScheme)> = nodes
        .iter()
        .flat_map(|&n| SCHEMES.iter().map(move |&s| (n, s)))
        .collect();
    let results = par_map(&points, ctx.progress, |&(n, s)| {
        let cfg = WorldConfig::new(&prof, n, s.model(), ctx.seed);
        let procs = n * cfg.app_per_node(&prof);
        let wl = LogGetsWorkload::new(procs, s, ops, bytes, ctx.seed);
        let mut w = AaWorld::new(&prof, cfg, wl);
        let st = w.run().map_err(ExperimentError::Sim)?;
        w.wl.check_replay()
            .map_err(|e| ExperimentError::Sim(format!("{}: {e} (seed {})", s.name(), ctx.seed)))?;
        Ok((st, w.wl.total_ops()))
    });
    let mut table = Table::new(&[
        "scheme",
        "processes",
        "gets_per_s",
        "gets",
        "bytes_moved",
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
            st.platform.bytes.into(),
            (st.makespan_ns as f64 / 1e3).into(),
        ]);
    }
    Ok(ExperimentOutput {
        table,
        plots: vec![PlotSpec::line(
            "Replayable gets per second",
            "processes",
            "gets_per_s",
            Some("scheme"),
        )
        .log(true, true)],
        sim_events: events,
        meta: json!({ "profile": prof.name, "ops_per_process": ops, "get_bytes": bytes }),
    })
}
