//! `aa-dht-compute`: DHT inserts per second vs the computation ratio (spec "DHT: ...
//! computation ratio (share of time spent computing) 0 to 95%"). Every process computes
//! between two inserts; the same computation per insert is given to every scheme.
//!
//! The computation per insert for a target ratio `r` is `r / (1 - r)` times the RMA insert
//! time per process measured without computation at the same scale and collision ratio (one
//! extra run), so that `r` is the share of time an RMA process spends computing if
//! computation and communication did not overlap. What each scheme actually spends computing
//! is measured and reported (`computation_pct`: computation per process over the makespan):
//! schemes whose handlers steal the application's cores see less of their time left for it.

use serde_json::json;
use unpinned_report::{PlotSpec, Table};
use unpinned_sim::aa::dht::{run_dht, DhtParams};
use unpinned_sim::aa::{Scheme, WorldConfig};

use super::per_s;
use crate::part::harness::par_map;
use crate::{ExperimentError, ExperimentOutput, ExperimentSpec, RunContext};

pub static SPEC: ExperimentSpec = ExperimentSpec {
    name: "aa-dht-compute",
    system: "aa",
    description: "DHT inserts/s vs computation ratio (0 to 95%), AA vs RMA vs AM schemes",
    profile: crate::ProfileKind::Aa,
    backends: crate::Backends::Sim,
    params: Some(<Params as crate::Declared>::PARAMS),
    fixed: &[],
    every_builtin_by_default: false,
    run,
};

fn schemes() -> Vec<Scheme> {
    vec![
        Scheme::AaInt,
        Scheme::AaPoll,
        Scheme::AaSp,
        Scheme::Rma,
        Scheme::Am,
        Scheme::AmExp,
        Scheme::AmOnload { cores: 4 },
        Scheme::AmInts { batch: 10 },
    ]
}

crate::declare_params! {
    /// Parameters of `aa-dht-compute`.
    pub struct Params {
        nodes: u32 {
            default: "4",
            unit: "nodes",
            check: crate::params::int(1, 65536),
            doc: "Node count",
        },
        collision_pct: u32 {
            default: "25",
            unit: "%",
            check: crate::params::int(0, 100),
            doc: "Share of inserts that collide",
        },
        ratio_pct: Vec<u32> {
            default: "0,25,50,75,90,95",
            unit: "%",
            check: crate::params::int(0, 99),
            doc: "Computation share of the time per insert",
        },
        ops: u32 {
            default: "96",
            unit: "inserts per process",
            check: crate::params::int(1, 100_000_000),
            doc: "Inserts per process",
        },
    }
}

fn run(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
    let Params {
        nodes,
        collision_pct: collision,
        ratio_pct: ratios,
        ops,
    } = ctx.params()?;
    let prof = ctx.aa_profile()?;
    let params = |compute_ns| {
        let mut p = DhtParams::new(ops, collision as f64 / 100.0, ctx.seed);
        p.compute_ns = compute_ns;
        p
    };
    // The RMA insert time per process without computation: the unit of computation.
    let cfg = WorldConfig::new(&prof, nodes, Scheme::Rma, ctx.seed);
    let (base, _) = run_dht(&prof, cfg, params(0)).map_err(ExperimentError::Sim)?;
    let insert_ns = base.makespan_ns as f64 / ops as f64;
    let points: Vec<(u32, Scheme)> = ratios
        .iter()
        .flat_map(|&r| schemes().into_iter().map(move |s| (r, s)))
        .collect();
    let compute_of = |r: u32| (insert_ns * r as f64 / (100 - r) as f64).round() as u64;
    let results = par_map(&points, ctx.progress, |&(r, s)| {
        let cfg = WorldConfig::new(&prof, nodes, s, ctx.seed);
        run_dht(&prof, cfg, params(compute_of(r))).map_err(ExperimentError::Sim)
    });
    let mut table = Table::new(&super::with_recv_columns(&[
        "scheme",
        "variant",
        "ratio_pct",
        "compute_ns",
        "computation_pct",
        "inserts_per_s",
        "processes",
        "collision_pct",
    ]));
    let mut events = base.events;
    for (&(r, s), res) in points.iter().zip(results) {
        let (st, wl) = res?;
        events += st.events;
        let c = compute_of(r);
        let mut row = vec![
            s.name().into(),
            s.variant().into(),
            r.into(),
            c.into(),
            (ops as f64 * c as f64 / st.makespan_ns.max(1) as f64 * 100.0).into(),
            per_s(wl.total_ops(), st.makespan_ns).into(),
            (nodes * prof.cpu.cores_per_node).into(),
            collision.into(),
        ];
        row.extend(super::recv_cells(&st, wl.total_ops()));
        table.push(row);
    }
    Ok(ExperimentOutput {
        table,
        plots: vec![
            PlotSpec::line(
                "DHT inserts/s vs computation ratio",
                "ratio_pct",
                "inserts_per_s",
                Some("scheme"),
            )
            .log(false, true),
            PlotSpec::line(
                "Share of time spent computing, by scheme",
                "ratio_pct",
                "computation_pct",
                Some("scheme"),
            )
            .suffix("share"),
            PlotSpec::line(
                "Receive-side CPU taken from the computing processes, per insert",
                "ratio_pct",
                "recv_app_cpu_ns_per_insert",
                Some("scheme"),
            )
            .suffix("recv"),
        ],
        sim_events: events,
        meta: json!({
            "profile": prof.name, "nodes": nodes, "ops_per_process": ops,
            "collision_pct": collision, "rma_insert_ns_without_compute": insert_ns,
        }),
    })
}
