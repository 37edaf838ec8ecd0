//! `aa-dht-iotlb`: AA-Poll insert rate vs IOTLB size, associativity (direct, 2-way, 4-way,
//! fully associative) and eviction (LRU, random) (spec "Experiments"). Every active put is
//! translated twice by the target's IOMMU (the slot's page, for its bits and IUID, and the
//! access-log page); a miss costs a page walk inside the IOMMU, whose slots are shared by all
//! the node's traffic.

use serde_json::json;
use unpinned_core::iommu::Replacement;
use unpinned_report::{PlotSpec, Table};
use unpinned_sim::aa::dht::{run_dht, DhtParams};
use unpinned_sim::aa::platform::IotlbConfig;
use unpinned_sim::aa::{Scheme, WorldConfig};

use super::per_s;
use crate::part::harness::par_map;
use crate::{ExperimentError, ExperimentOutput, ExperimentSpec, RunContext};

pub static SPEC: ExperimentSpec = ExperimentSpec {
    name: "aa-dht-iotlb",
    system: "aa",
    description: "AA-Poll DHT inserts/s vs IOTLB entries, associativity and replacement policy",
    profile: crate::ProfileKind::Aa,
    backends: crate::Backends::Sim,
    params: Some(<Params as crate::Declared>::PARAMS),
    fixed: &[],
    every_builtin_by_default: false,
    run,
};

crate::declare_params! {
    /// Parameters of `aa-dht-iotlb`.
    pub struct Params {
        entries: Vec<u32> {
            default: "8,32,128,512,2048,8192",
            unit: "entries",
            check: crate::params::int(1, 1 << 30),
            doc: "IOTLB sizes",
        },
        nodes: u32 {
            default: "4",
            unit: "nodes",
            check: crate::params::int(1, 65536),
            doc: "Node count",
        },
        ops: u32 {
            default: "128",
            unit: "inserts per process",
            check: crate::params::int(1, 100_000_000),
            doc: "Inserts per process",
        },
        collision_pct: f64 {
            default: "25.0",
            unit: "%",
            check: crate::params::num(0.0, 100.0),
            doc: "Share of inserts that collide",
        },
    }
}

fn run(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
    let Params {
        entries,
        nodes,
        ops,
        collision_pct: collision,
    } = ctx.params()?;
    let prof = ctx.aa_profile()?;
    let mut points = Vec::new();
    for &e in &entries {
        for ways in [1u32, 2, 4, e] {
            for policy in [Replacement::Lru, Replacement::Random] {
                if ways == 1 && policy == Replacement::Random {
                    continue; // one way: nothing to choose
                }
                points.push((e, ways, policy));
            }
        }
    }
    let results = par_map(&points, ctx.progress, |&(e, ways, policy)| {
        let mut cfg = WorldConfig::new(&prof, nodes, Scheme::AaPoll, ctx.seed);
        cfg.iotlb = IotlbConfig {
            entries: e,
            ways,
            policy,
        };
        run_dht(&prof, cfg, DhtParams::new(ops, collision / 100.0, ctx.seed))
            .map_err(ExperimentError::Sim)
    });
    let mut table = Table::new(&super::with_recv_columns(&[
        "iotlb_entries",
        "associativity",
        "policy",
        "inserts_per_s",
        "iotlb_hit_rate",
        "makespan_us",
    ]));
    let mut events = 0;
    for (&(e, ways, policy), r) in points.iter().zip(results) {
        let (st, wl) = r?;
        events += st.events;
        let assoc = if ways == e {
            "full".to_string()
        } else {
            format!("{ways}-way")
        };
        let t = st.platform.tlb_hits + st.platform.tlb_misses;
        let mut row = vec![
            e.into(),
            assoc.into(),
            policy.name().into(),
            per_s(wl.total_ops(), st.makespan_ns).into(),
            (st.platform.tlb_hits as f64 / t.max(1) as f64).into(),
            (st.makespan_ns as f64 / 1e3).into(),
        ];
        row.extend(super::recv_cells(&st, wl.total_ops()));
        table.push(row);
    }
    Ok(ExperimentOutput {
        table,
        plots: vec![
            PlotSpec::line(
                "AA-Poll inserts/s vs IOTLB size (LRU)",
                "iotlb_entries",
                "inserts_per_s",
                Some("associativity"),
            )
            .log(true, false)
            .only("policy", "lru"),
            PlotSpec::line(
                "AA-Poll inserts/s vs IOTLB size (random)",
                "iotlb_entries",
                "inserts_per_s",
                Some("associativity"),
            )
            .log(true, false)
            .only("policy", "random")
            .suffix("random"),
            PlotSpec::line(
                "IOTLB hit rate (LRU)",
                "iotlb_entries",
                "iotlb_hit_rate",
                Some("associativity"),
            )
            .log(true, false)
            .only("policy", "lru")
            .suffix("hits"),
        ],
        sim_events: events,
        meta: json!({ "profile": prof.name, "nodes": nodes, "ops_per_process": ops, "collision_pct": collision }),
    })
}
