//! `aa-sort`: time to communicate the sorted results of a 1 GB sample sort with fault-tolerant
//! (logged) gets: AA vs AM vs RMA vs no FT; bytes moved, and NIC/router energy from bytes with
//! per-byte energies as parameters (spec "Experiments").

use serde_json::json;
use unpinned_aa::sort::SortPlan;
use unpinned_report::{PlotSpec, Table};
use unpinned_sim::aa::loggets::LogGetsScheme;
use unpinned_sim::aa::sort::SortWorkload;
use unpinned_sim::aa::{AaWorld, Scheme, WorldConfig};

use super::{list, profile};
use crate::part::harness::par_map;
use crate::{ExperimentError, ExperimentOutput, ExperimentSpec, RunContext};

pub static SPEC: ExperimentSpec = ExperimentSpec {
    name: "aa-sort",
    system: "aa",
    description:
        "Fault-tolerant sort of 1 GB: exchange time and bytes moved, AA vs AM vs RMA vs no FT",
    run,
};

const SCHEMES: [LogGetsScheme; 4] = [
    LogGetsScheme::Aa(Scheme::AaPoll),
    LogGetsScheme::Am,
    LogGetsScheme::Rma,
    LogGetsScheme::NoFt,
];

fn run(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
    let prof = profile(ctx)?;
    let nodes: Vec<u32> = list(ctx, "nodes", "1,2,4,8,16")?;
    let total: u64 = ctx.param("total_bytes", 1u64 << 30)?;
    let chunk: u32 = ctx.param("chunk_bytes", 65536)?;
    // Per-byte energies (parameters, spec): NIC (inject + eject) and per router hop.
    let nic_pj: f64 = ctx.param("nic_pj_per_byte", 20.0)?;
    let router_pj: f64 = ctx.param("router_pj_per_byte", 10.0)?;
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
