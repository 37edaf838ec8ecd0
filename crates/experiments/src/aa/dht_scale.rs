//! `aa-dht-scale`: DHT inserts per second vs number of processes, collision ratios 5% and
//! 25%, all schemes (spec "Experiments"). 32 processes per node, 1 to 64 nodes of a 3-D torus.
//! AM-Onload sweeps its dedicated cores C (those cores run handlers, not inserts: the node
//! has 32 - C inserting processes); AM-Ints interrupts per batch of 10 or 100 messages.

use serde_json::json;
use unpinned_report::{PlotSpec, Table};
use unpinned_sim::aa::dht::{run_dht, DhtParams};
use unpinned_sim::aa::{Scheme, WorldConfig};

use super::per_s;
use crate::part::harness::par_map;
use crate::{ExperimentError, ExperimentOutput, ExperimentSpec, RunContext};

pub static SPEC: ExperimentSpec = ExperimentSpec {
    name: "aa-dht-scale",
    system: "aa",
    description: "DHT inserts/s vs processes (32/node, up to 64 nodes), 5% and 25% collisions, AA vs RMA vs AM schemes",
    profile: crate::ProfileKind::Aa,
    backends: crate::Backends::Sim,
    params: Some(<Params as crate::Declared>::PARAMS),
    fixed: &[],
    every_builtin_by_default: false,
    run,
};

/// The schemes of the sweep, with AM-Onload's cores and AM-Ints' batches.
pub(crate) fn schemes(onload: &[u32]) -> Vec<Scheme> {
    let mut v = vec![
        Scheme::AaInt,
        Scheme::AaPoll,
        Scheme::AaSp,
        Scheme::Rma,
        Scheme::Am,
        Scheme::AmExp,
    ];
    v.extend(onload.iter().map(|&cores| Scheme::AmOnload { cores }));
    v.extend([Scheme::AmInts { batch: 10 }, Scheme::AmInts { batch: 100 }]);
    v
}

crate::declare_params! {
    /// Parameters of `aa-dht-scale`.
    pub struct Params {
        nodes: Vec<u32> {
            default: "1,4,16,64",
            unit: "nodes",
            check: crate::params::int(1, 65536),
            doc: "Node counts",
        },
        collision_pct: Vec<u32> {
            default: "5,25",
            unit: "%",
            check: crate::params::int(0, 100),
            doc: "Shares of inserts that collide",
        },
        onload_cores: Vec<u32> {
            default: "1,2,4,8,16,31",
            unit: "cores",
            check: crate::params::int(1, 4096),
            doc: "Cores per node serving the onload (AM) schemes",
        },
        ops: u32 {
            default: "96",
            unit: "inserts per process",
            check: crate::params::int(1, 100_000_000),
            doc: "Inserts per process",
        },
        compute_ns: u64 {
            default: "0",
            unit: "ns",
            check: crate::params::int(0, u64::MAX),
            doc: "Computation between two inserts",
        },
    }
}

fn run(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
    let Params {
        nodes,
        collision_pct: collisions,
        onload_cores: onload,
        ops,
        compute_ns,
    } = ctx.params()?;
    let prof = ctx.aa_profile()?;
    // Inserts per process: small enough for the whole sweep to run in seconds. At scale a
    // process touches almost as many targets as it inserts, so the end-of-run flush (a request
    // and a response per target) is about one of the ~3 messages per insert; `msgs_per_insert`
    // shows it, and `exp.ops` raises the count when the steady state alone is wanted.
    let mut points = Vec::new();
    for &n in &nodes {
        for &c in &collisions {
            for s in schemes(&onload) {
                points.push((n, c, s));
            }
        }
    }
    let results = par_map(&points, ctx.progress, |&(n, c, s)| {
        let cfg = WorldConfig::new(&prof, n, s, ctx.seed);
        let mut p = DhtParams::new(ops, c as f64 / 100.0, ctx.seed);
        p.compute_ns = compute_ns;
        run_dht(&prof, cfg, p).map_err(ExperimentError::Sim)
    });
    let mut table = Table::new(&super::with_recv_columns(&[
        "scheme",
        "variant",
        "processes",
        "nodes",
        "collision_pct",
        "inserts_per_s",
        "inserts",
        "collided",
        "makespan_us",
        "iotlb_hit_rate",
        "stalls",
        "interrupts",
    ]));
    let mut events = 0;
    for (&(n, c, s), r) in points.iter().zip(results) {
        let (st, wl) = r?;
        events += st.events;
        let t = st.platform.tlb_hits + st.platform.tlb_misses;
        let mut row = vec![
            s.name().into(),
            s.variant().into(),
            (n * prof.cpu.cores_per_node).into(),
            n.into(),
            c.into(),
            per_s(wl.total_ops(), st.makespan_ns).into(),
            wl.total_ops().into(),
            wl.collided.into(),
            (st.makespan_ns as f64 / 1e3).into(),
            (st.platform.tlb_hits as f64 / t.max(1) as f64).into(),
            st.stalls.into(),
            st.interrupts.into(),
        ];
        row.extend(super::recv_cells(&st, wl.total_ops()));
        table.push(row);
    }
    let main = ["aa-int", "aa-poll", "aa-sp", "rma", "am", "am-exp"];
    Ok(ExperimentOutput {
        table,
        plots: vec![
            PlotSpec::line(
                "DHT inserts/s, 25% collisions",
                "processes",
                "inserts_per_s",
                Some("scheme"),
            )
            .log(true, true)
            .only("collision_pct", "25")
            .only_any("scheme", &main),
            PlotSpec::line(
                "DHT inserts/s, 5% collisions",
                "processes",
                "inserts_per_s",
                Some("scheme"),
            )
            .log(true, true)
            .only("collision_pct", "5")
            .only_any("scheme", &main)
            .suffix("5pct"),
            PlotSpec::line(
                "AM-Onload: dedicated cores per node (25% collisions)",
                "processes",
                "inserts_per_s",
                Some("variant"),
            )
            .log(true, true)
            .only("collision_pct", "25")
            .only("scheme", "am-onload")
            .suffix("onload"),
            PlotSpec::line(
                "AM-Ints: messages per interrupt (25% collisions)",
                "processes",
                "inserts_per_s",
                Some("variant"),
            )
            .log(true, true)
            .only("collision_pct", "25")
            .only("scheme", "am-ints")
            .suffix("ints"),
            PlotSpec::line(
                "Receive-side CPU taken from the computing processes per insert (25% collisions)",
                "processes",
                "recv_app_cpu_ns_per_insert",
                Some("scheme"),
            )
            .log(true, false)
            .only("collision_pct", "25")
            .only_any("scheme", &main)
            .suffix("recv"),
        ],
        sim_events: events,
        meta: json!({ "profile": prof.name, "ops_per_process": ops, "compute_ns": compute_ns, "volume_slots": 1u64 << 21, "onload_cores": onload }),
    })
}
