//! `aa-sort`: time to communicate the sorted results of a 1 GB sample sort with fault-tolerant
//! (logged) gets: AA vs AM vs RMA vs no FT; bytes moved, and NIC/router energy from bytes with
//! per-byte energies as parameters (spec "Experiments").

use serde_json::json;
use unpinned_aa::sort::SortPlan;
use unpinned_report::{PlotSpec, Table};
use unpinned_sim::aa::loggets::LogGetsScheme;
use unpinned_sim::aa::sort::SortWorkload;
use unpinned_sim::aa::{AaWorld, Scheme, WorldConfig};

use crate::part::harness::par_map;
use crate::{ExperimentError, ExperimentOutput, ExperimentSpec, RunContext};

pub static SPEC: ExperimentSpec = ExperimentSpec {
    name: "aa-sort",
    system: "aa",
    description:
        "Fault-tolerant sort of 1 GB: exchange time and bytes moved, AA vs AM vs RMA vs no FT",
    profile: crate::ProfileKind::Aa,
    backends: crate::Backends::Sim,
    params: Some(<Params as crate::Declared>::PARAMS),
    fixed: &[],
    every_builtin_by_default: false,
    run,
};

const SCHEMES: [LogGetsScheme; 4] = [
    LogGetsScheme::Aa(Scheme::AaPoll),
    LogGetsScheme::Am,
    LogGetsScheme::Rma,
    LogGetsScheme::NoFt,
];

crate::declare_params! {
    /// Parameters of `aa-sort`.
    pub struct Params {
        nodes: Vec<u32> {
            default: "1,2,4,8,16",
            unit: "nodes",
            check: crate::params::int(1, 65536),
            doc: "Node counts",
        },
        total_bytes: u64 {
            default: "1073741824",
            unit: "bytes",
            check: crate::params::int(1, 1 << 50),
            doc: "Bytes sorted",
        },
        chunk_bytes: u32 {
            default: "65536",
            unit: "bytes",
            check: crate::params::int(1, 1 << 30),
            doc: "Bytes per get",
        },
        nic_pj_per_byte: f64 {
            default: "20.0",
            unit: "pJ/byte",
            check: crate::params::num(0.0, 1e9),
            doc: "NIC energy (inject + eject)",
        },
        router_pj_per_byte: f64 {
            default: "10.0",
            unit: "pJ/byte",
            check: crate::params::num(0.0, 1e9),
            doc: "Energy per router hop",
        },
    }
}

fn run(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
    let Params {
        nodes,
        total_bytes: total,
        chunk_bytes: chunk,
        nic_pj_per_byte: nic_pj,
        router_pj_per_byte: router_pj,
    } = ctx.params()?;
    let prof = ctx.aa_profile()?;
    // Per-byte energies (parameters, spec): NIC (inject + eject) and per router hop.
    let points: Vec<(u32, LogGetsScheme)> = nodes
        .iter()
        .flat_map(|&n| SCHEMES.iter().map(move |&s| (n, s)))
        .collect();
    let results = par_map(&points, ctx.progress, |&(n, s)| {
        let cfg = WorldConfig::new(&prof, n, s.model(), ctx.seed);
        let procs = n * cfg.app_per_node(&prof);
        let plan = SortPlan::new(total, procs, 256, ctx.seed);
        let wl = SortWorkload::new(&plan, s, chunk);
        let mut w = AaWorld::new(&prof, cfg, wl);
        let st = w.run().map_err(ExperimentError::Sim)?;
        if w.wl.fetched != SortWorkload::expected(&plan) {
            return Err(ExperimentError::Sim(format!(
                "{}: a bucket was not fetched completely (seed {})",
                s.name(),
                ctx.seed
            )));
        }
        if s != LogGetsScheme::NoFt && w.wl.kept.iter().sum::<u64>() != plan.remote_bytes() {
            return Err(ExperimentError::Sim(format!(
                "{}: replay log does not hold every fetched byte (seed {})",
                s.name(),
                ctx.seed
            )));
        }
        Ok(st)
    });
    let mut table = Table::new(&[
        "scheme",
        "processes",
        "comm_time_s",
        "bytes_moved",
        "energy_j",
    ]);
    let mut events = 0;
    for (&(n, s), r) in points.iter().zip(results) {
        let st = r?;
        events += st.events;
        let energy =
            (st.platform.bytes as f64 * nic_pj + st.platform.byte_hops as f64 * router_pj) * 1e-12;
        table.push(vec![
            s.name().into(),
            (n * prof.cpu.cores_per_node).into(),
            (st.makespan_ns as f64 / 1e9).into(),
            st.platform.bytes.into(),
            energy.into(),
        ]);
    }
    Ok(ExperimentOutput {
        table,
        plots: vec![
            PlotSpec::line(
                "Fault-tolerant sort of 1 GB: exchange time",
                "processes",
                "comm_time_s",
                Some("scheme"),
            )
            .log(true, true),
            PlotSpec::line("Bytes moved", "processes", "bytes_moved", Some("scheme"))
                .log(true, true)
                .suffix("bytes"),
            PlotSpec::line(
                "NIC + router energy",
                "processes",
                "energy_j",
                Some("scheme"),
            )
            .log(true, true)
            .suffix("energy"),
        ],
        sim_events: events,
        meta: json!({ "profile": prof.name, "total_bytes": total, "chunk_bytes": chunk, "nic_pj_per_byte": nic_pj, "router_pj_per_byte": router_pj }),
    })
}
