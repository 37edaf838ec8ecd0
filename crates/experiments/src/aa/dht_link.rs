//! `aa-dht-link`: one process inserting into a remote table over one link, AA vs RMA vs
//! collision rate (spec "Calibration: small-scale check"). The inserter keeps a window of
//! inserts in flight, so both schemes run at the link rate: RMA's collision path puts four
//! more operations per insert on the link, AA's insert stays one active put.
//!
//! Written once over a [`DhtTestbed`]: `unpinned sim aa-dht-link` runs it on the simulator's
//! AA world (the profile's 1 Gb/s Ethernet pair), `unpinned live aa-dht-link` on the live
//! Active Access runtime (two ranks over shared memory). Same parameters, grid, inserts
//! (drawn once from the seed) and columns; each backend leaves empty what it does not count
//! (the simulator does not time handler notification, the live runtime does not count link
//! payload bytes). Every run checks the table against the sequential reference, so a rate
//! never comes from a broken run.

use serde_json::json;
use unpinned_report::{Cell, PlotSpec, Table};

use super::testbed::{single_target_draws, DhtTestbed, LinkPoint, LinkScheme, SimDhtTestbed};
use crate::{ExperimentError, ExperimentOutput, ExperimentSpec, RunContext};

/// One line for `--list`.
pub const DESCRIPTION: &str =
    "One inserter into a remote DHT volume: AA (poll, sleep, batch) vs RMA inserts/s vs collision rate";

/// `aa-dht-link` on the simulator.
pub static SPEC: ExperimentSpec = ExperimentSpec {
    name: "aa-dht-link",
    system: "aa",
    description: DESCRIPTION,
    profile: crate::ProfileKind::Aa,
    backends: crate::Backends::Both,
    params: Some(<Params as crate::Declared>::PARAMS),
    fixed: FIXED,
    every_builtin_by_default: false,
    run: |ctx| run(ctx, &mut SimDhtTestbed::new(&ctx.aa_profile()?)),
};

/// The AA profile fields the simulated points set themselves.
pub const FIXED: &[crate::FixedField] = &[
    crate::FixedField {
        field: "cpu.cores_per_node",
        instead: "exp.window (the inserter's window is modelled as that many processes on node 0)",
    },
    crate::FixedField {
        field: "notify.int_threshold",
        instead: "nothing: the aa-sleep rows wake the handler at every entry, the aa-batch rows at 16 entries",
    },
    crate::FixedField {
        field: "notify.int_period_us",
        instead: "nothing: the aa-batch rows wake the handler 100 us after the first waiting entry",
    },
];

crate::declare_params! {
    /// Parameters of `aa-dht-link`.
    pub struct Params {
        collision_pct: Vec<u32> {
            default: "0,5,10,25,50",
            unit: "%",
            check: crate::params::int(0, 100),
            doc: "Shares of inserts aimed at an occupied slot",
        },
        ops: u32 {
            default: "4000",
            unit: "inserts",
            check: crate::params::int(1, 1 << 20),
            doc: "Inserts over the link (rounded up to a multiple of the window: each of the window's flows inserts ops/window keys)",
        },
        window: u32 {
            default: "0",
            unit: "inserts",
            check: crate::params::int(0, 4096),
            doc: "Inserts in flight (0: the AA profile's ethernet.window, 64 in cray-xe6)",
        },
        log_bytes: u32 {
            default: "0",
            unit: "bytes",
            check: crate::params::int(0, 1 << 30),
            doc: "Bytes of the table owner's access log (0: the AA profile's iommu.log_bytes, 16 KiB in cray-xe6: fewer entries than the inserts, so a handler that falls behind meets back-pressure)",
        },
        reps: usize {
            default: "5",
            unit: "",
            check: crate::params::int(1, 10_000),
            doc: "Repetitions per point, median (live; the simulator is deterministic and runs one)",
        },
    }
}

/// log2 of the volume's table slots (the spec's 2^21).
pub const SLOT_BITS: u32 = 21;

/// The table's columns, in order.
pub const COLUMNS: [&str; 8] = [
    "driver",
    "scheme",
    "collision_pct",
    "inserts_per_s",
    "link_bytes",
    "remote_ops_per_insert",
    "log_stalls",
    "notify_median_us",
];

/// The points: every scheme at every collision share, the inserts drawn from the seed.
fn grid(p: &Params, window: u32, log_bytes: u32, seed: u64) -> Vec<LinkPoint> {
    let per_flow = p.ops.div_ceil(window);
    let mut points = Vec::new();
    for &c in &p.collision_pct {
        let flows = single_target_draws(seed, window, per_flow, c as f64 / 100.0, 1 << SLOT_BITS);
        for scheme in LinkScheme::ALL {
            points.push(LinkPoint {
                scheme,
                collision_pct: c,
                flows: flows.clone(),
                slot_bits: SLOT_BITS,
                // Enough cells for every insert to collide.
                heap_cells: (1 << 16).max(window * per_flow),
                log_bytes,
                seed,
                reps: p.reps,
            });
        }
    }
    points
}

/// Run `aa-dht-link` on `tb`.
pub fn run(ctx: &RunContext, tb: &mut dyn DhtTestbed) -> Result<ExperimentOutput, ExperimentError> {
    let p: Params = ctx.params()?;
    let prof = ctx.aa_profile()?;
    let window = match p.window {
        0 => prof.ethernet.window,
        w => w,
    };
    let log_bytes = match p.log_bytes {
        0 => prof.iommu.log_bytes,
        b => b,
    };
    let points = grid(&p, window, log_bytes, ctx.seed);
    let results = tb.measure(&points, ctx.progress)?;
    let mut table = Table::new(&COLUMNS);
    let opt = |v: Option<f64>| v.map_or(Cell::from(""), Cell::from);
    for (pt, r) in points.iter().zip(&results) {
        table.push(vec![
            tb.backend().into(),
            pt.scheme.name().into(),
            pt.collision_pct.into(),
            r.inserts_per_s.into(),
            r.link_bytes.map_or(Cell::from(""), Cell::from),
            r.remote_ops_per_insert.into(),
            r.log_stalls.into(),
            opt(r.notify_median_us),
        ]);
    }
    let mut meta = json!({
        "aa_profile": prof.name,
        "ops": p.ops,
        "window": window,
        "log_bytes": log_bytes,
        "slot_bits": SLOT_BITS,
        "prefilled_slots": super::testbed::PREFILL,
    });
    crate::part::extend(&mut meta, tb.meta(&points));
    Ok(ExperimentOutput {
        table,
        plots: vec![PlotSpec::line(
            "One inserter into a remote DHT volume",
            "collision_pct",
            "inserts_per_s",
            Some("scheme"),
        )],
        sim_events: results.iter().map(|r| r.events).sum(),
        meta,
    })
}
