//! `aa-dht-link`: one process inserting into a remote table over one 1 Gb/s Ethernet link,
//! AA vs RMA vs collision rate (spec "Calibration: small-scale check"). The inserter keeps a
//! window of inserts in flight, so both schemes run at the link rate: RMA's collision path
//! puts five more messages per insert on the link, AA's insert stays one active put.

use serde_json::json;
use unpinned_aa::profile::AaProfile;
use unpinned_report::{PlotSpec, Table};
use unpinned_sim::aa::dht::{DhtParams, DhtWorkload};
use unpinned_sim::aa::{AaWorld, Scheme, WorldConfig};

use super::per_s;
use crate::part::harness::par_map;
use crate::{ExperimentError, ExperimentOutput, ExperimentSpec, RunContext};

pub static SPEC: ExperimentSpec = ExperimentSpec {
    name: "aa-dht-link",
    system: "aa",
    description: "One inserter over a 1 Gb/s link: AA vs RMA inserts/s vs collision rate",
    profile: crate::ProfileKind::Aa,
    backends: crate::Backends::Both,
    params: Some(<Params as crate::Declared>::PARAMS),
    fixed: &[],
    every_builtin_by_default: false,
    run,
};

crate::declare_params! {
    /// Parameters of `aa-dht-link`.
    pub struct Params {
        collision_pct: Vec<u32> {
            default: "0,5,10,25,50",
            unit: "%",
            check: crate::params::int(0, 100),
            doc: "Shares of inserts that collide",
        },
        ops: u32 {
            default: "4000",
            unit: "inserts",
            check: crate::params::int(1, 100_000_000),
            doc: "Inserts over the link",
        },
    }
}

fn run(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
    let Params {
        collision_pct: collisions,
        ops,
    } = ctx.params()?;
    let prof = ctx.aa_profile()?;
    let points: Vec<(u32, Scheme)> = collisions
        .iter()
        .flat_map(|&c| [(c, Scheme::AaPoll), (c, Scheme::Rma)])
        .collect();
    let results = par_map(&points, ctx.progress, |&(c, s)| {
        let mut cfg = WorldConfig::new(&prof, 2, s, ctx.seed);
        cfg.ethernet = true;
        cfg.window = prof.ethernet.window;
        // Node 0's process inserts; node 1's process owns the table and inserts nothing.
        run_link(&prof, cfg, ops, c as f64 / 100.0, ctx.seed)
    });
    // `driver` lets this table be stacked with `unpinned live aa-dht-link` (driver `live`).
    let mut table = Table::new(&[
        "driver",
        "scheme",
        "collision_pct",
        "inserts_per_s",
        "link_bytes",
    ]);
    let mut events = 0;
    for (&(c, s), r) in points.iter().zip(results) {
        let (rate, ev, bytes) = r?;
        events += ev;
        table.push(vec![
            "sim".into(),
            if s == Scheme::Rma { "rma" } else { "aa-poll" }.into(),
            c.into(),
            rate.into(),
            bytes.into(),
        ]);
    }
    Ok(ExperimentOutput {
        table,
        plots: vec![PlotSpec::line(
            "One inserter over 1 Gb/s Ethernet",
            "collision_pct",
            "inserts_per_s",
            Some("scheme"),
        )],
        sim_events: events,
        meta: json!({ "profile": prof.name, "ops": ops, "window": prof.ethernet.window }),
    })
}

/// A single inserter keeping `window` inserts in flight, modelled as `window` logical flows on
/// node 0 (each one insert at a time, one outstanding access) sharing node 0's link; process
/// `window` (first on node 1) owns the table. Posting costs CPU per flow, which does not
/// matter at 1 Gb/s: the link is the bottleneck.
fn run_link(
    prof: &AaProfile,
    cfg: WorldConfig,
    ops: u32,
    collision: f64,
    seed: u64,
) -> Result<(f64, u64, u64), ExperimentError> {
    let flows = cfg.window;
    let mut prof = prof.clone();
    prof.cpu.cores_per_node = flows;
    let mut cfg = cfg;
    cfg.window = 1;
    let mut p = DhtParams::new(ops.div_ceil(flows), collision, seed);
    p.heap_cells = 1 << 16;
    let wl = DhtWorkload::single_target(2 * flows, flows, flows, cfg.scheme, p);
    let mut w = AaWorld::new(&prof, cfg, wl);
    let st = w.run().map_err(ExperimentError::Sim)?;
    w.wl.check().map_err(ExperimentError::Sim)?;
    Ok((
        per_s(w.wl.total_ops(), st.makespan_ns),
        st.events,
        st.platform.bytes,
    ))
}
