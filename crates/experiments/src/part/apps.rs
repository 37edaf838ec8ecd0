//! `part-apps`: application traffic (spec part.md, "Application traffic"): the LAMMPS-,
//! HPL- and HPCG-like models of `unpinned-traffic`, one rank per node with the node's 4
//! threads computing, over the message layer on PART engines. PART (nothing pinned or
//! touched: first use of every buffer faults) against pre-touch (every page present: no
//! network faults). Buffers are reused, so pages fault on first use only.
//!
//! Default: 1, 2, 4, 8, 16 nodes on a 3-D torus, 5 seeds, a window of each calibrated run
//! (`exp.lammps_steps`, `exp.hpl_panels`, `exp.hpcg_iterations`). `exp.scale=full` adds 64,
//! 256, 1024 and 4096 nodes on a torus and on a fat tree, one seed, each run one simulated
//! second of the application's compute (`exp.scale_window_s`); `exp.scale_topologies` picks
//! the topologies of those runs (default `torus,fattree`).
//!
//! Scale knob: packets of `exp.packet_bytes` (default 4 KiB, the live runtime's default;
//! 16 KiB = one packet per block at scale, `exp.scale_packet_bytes`) instead of the
//! reference NI's 256 B. The fault path (per block, per page) is the same; per-packet costs
//! are paid fewer times. Reported in the metadata.

use serde_json::json;
use unpinned_core::os::PageInPolicy;
use unpinned_core::profile::Profile;
use unpinned_core::time::Duration;
use unpinned_msg::MsgConfig;
use unpinned_report::{PlotSpec, Table};
use unpinned_sim::aa::platform::torus_for;
use unpinned_sim::apps::{run_app, AppResult, AppSimConfig, BufferMode};
use unpinned_sim::{FaultConfig, SimConfig, Topology};
use unpinned_traffic::{model, AppModel, NodeRates};

use super::harness::par_map;
use crate::{ExperimentError, ExperimentOutput, ExperimentSpec, RunContext};

/// The registered experiment.
pub static SPEC: ExperimentSpec = ExperimentSpec {
    name: "part-apps",
    system: "part",
    description: "LAMMPS-, HPL-, HPCG-like traffic, 1-16 nodes (exp.scale=full: up to 4096, torus and fat tree), PART vs pre-touch",
    profile: crate::ProfileKind::Part,
    backends: crate::Backends::Sim,
    params: Some(<Params as crate::Declared>::PARAMS),
    fixed: &[crate::FixedField { field: "engine.packet_bytes", instead: "exp.packet_bytes and exp.scale_packet_bytes" }],
    every_builtin_by_default: false,
    run,
};

/// Down ports per switch of the fat tree (a common 32-port switch, 16 down and 16 up).
pub const FAT_TREE_DOWN: u32 = 16;

/// Node rates from the parameters (defaults: `NodeRates::default()`, documented there; a test
/// checks that the declared defaults are the same).
pub fn rates(p: &Params) -> NodeRates {
    NodeRates {
        threads: p.threads,
        core_peak_gflops: p.core_peak_gflops,
        dgemm_efficiency: p.dgemm_efficiency,
        md_efficiency: p.md_efficiency,
        mem_gbps: p.mem_gbps,
    }
}

use crate::params::{int, one_of, positive};

crate::declare_params! {
    /// Parameters of `part-apps`.
    pub struct Params {
        apps: Vec<String> {
            default: "lammps,hpl,hpcg",
            unit: "",
            check: one_of(&["lammps", "hpl", "hpcg"]),
            doc: "Applications",
        },
        nodes: Vec<u32> {
            default: "1,2,4,8,16",
            unit: "nodes",
            check: int(1, 65536),
            doc: "Node counts of the small runs (torus)",
        },
        seeds: u64 {
            default: "5",
            unit: "",
            check: int(1, 10_000),
            doc: "Seeds per small run (seed = --seed + 0..seeds)",
        },
        scale: String {
            default: "small",
            unit: "",
            check: one_of(&["small", "full"]),
            doc: "full adds the scale runs (exp.scale_nodes, one seed, long)",
        },
        packet_bytes: u32 {
            default: "4096",
            unit: "bytes",
            check: int(1, MAX_PACKET_BYTES as u64),
            doc: "Packet payload of the small runs (sets engine.packet_bytes)",
        },
        scale_packet_bytes: u32 {
            default: "16384",
            unit: "bytes",
            check: int(1, MAX_PACKET_BYTES as u64),
            doc: "Packet payload of the scale runs",
        },
        scale_nodes: Vec<u32> {
            default: "64,256,1024,4096",
            unit: "nodes",
            check: int(1, 65536),
            doc: "Node counts of the scale runs (exp.scale=full)",
        },
        scale_window_s: f64 {
            default: "1.0",
            unit: "s",
            check: positive(1e6),
            doc: "Simulated time of each scale run",
        },
        scale_topologies: Vec<String> {
            default: "torus,fattree",
            unit: "",
            check: one_of(&["torus", "fattree"]),
            doc: "Topologies of the scale runs",
        },
        lammps_steps: u64 {
            default: "100",
            unit: "steps",
            check: int(1, u64::MAX),
            doc: "LAMMPS-like time steps of the small runs",
        },
        hpl_panels: u64 {
            default: "24",
            unit: "panels",
            check: int(1, u64::MAX),
            doc: "HPL-like panels of the small runs",
        },
        hpcg_iterations: u64 {
            default: "3",
            unit: "iterations",
            check: int(1, u64::MAX),
            doc: "HPCG-like iterations of the small runs",
        },
        threads: u32 {
            default: "4",
            unit: "threads",
            check: int(1, 4096),
            doc: "Cores per node working on the compute phases",
        },
        core_peak_gflops: f64 {
            default: "2.4",
            unit: "GFLOP/s",
            check: positive(1e6),
            doc: "Peak double-precision rate of one core",
        },
        dgemm_efficiency: f64 {
            default: "0.8",
            unit: "",
            check: positive(1.0),
            doc: "Fraction of peak a dense matrix multiply sustains",
        },
        md_efficiency: f64 {
            default: "0.1",
            unit: "",
            check: positive(1.0),
            doc: "Fraction of peak a pair-force kernel sustains",
        },
        mem_gbps: f64 {
            default: "3.2",
            unit: "GB/s",
            check: positive(1e6),
            doc: "Sustained memory bandwidth of a node",
        },
        evict_every: u64 {
            default: "0",
            unit: "iterations",
            check: int(0, u64::MAX),
            doc: "Memory pressure: reclaim every buffer page every this many iterations (0: never)",
        },
        sim_threads: usize {
            default: "1",
            unit: "threads",
            check: int(0, 1024),
            doc: "Threads of each point's simulation (0: the available cores); the result does not depend on it",
        },
    }
}

/// Iterations of `m` whose compute (rank 0) adds up to at least `seconds`.
pub fn iterations_for(m: &dyn AppModel, seconds: f64) -> u64 {
    let mut ops = Vec::new();
    let mut ns = 0u64;
    for it in 0..m.iterations() {
        m.iteration(0, it, &mut ops);
        ns += ops
            .drain(..)
            .map(|o| {
                if let unpinned_traffic::Op::Compute { ns } = o {
                    ns
                } else {
                    0
                }
            })
            .sum::<u64>();
        if ns as f64 * 1e-9 >= seconds {
            return it + 1;
        }
    }
    m.iterations()
}

/// One configured run.
#[derive(Clone, Debug)]
pub struct Point {
    /// Application.
    pub app: String,
    /// Nodes.
    pub nodes: u32,
    /// Topology name (`torus`, `fattree`).
    pub topology: &'static str,
    /// Seed index.
    pub seed: u64,
    /// Iterations simulated.
    pub iterations: u64,
    /// Packet size.
    pub packet_bytes: u32,
}

/// The simulator set-up of a point.
pub fn app_config(profile: &Profile, p: &Point, mode: BufferMode, seed: u64) -> AppSimConfig {
    app_config_pressure(profile, p, mode, seed, 0)
}

/// [`app_config`] with memory pressure: every buffer page reclaimed every `evict_every`
/// iterations (0: never).
pub fn app_config_pressure(
    profile: &Profile,
    p: &Point,
    mode: BufferMode,
    seed: u64,
    evict_every: u64,
) -> AppSimConfig {
    let mut profile = profile.clone();
    profile.engine.packet_bytes = p.packet_bytes;
    profile.engine.block_bytes = profile.engine.block_bytes.max(p.packet_bytes);
    let topology = match p.topology {
        "fattree" => Topology::FatTree {
            down: FAT_TREE_DOWN,
        },
        _ => torus_for(p.nodes),
    };
    AppSimConfig {
        sim: SimConfig {
            profile,
            policy: PageInPolicy::Pia,
            send_err: true,
            seed,
            nodes: p.nodes,
            topology,
            faults: FaultConfig::NONE,
            check_invariants: false,
            trace: false,
        },
        mode,
        msg: MsgConfig::default(),
        copy_gbps: 2.0,
        copy_bytes: false,
        evict_every,
        time_limit: Duration::from_us(3_600_000_000),
        // One thread per point: the points themselves run in parallel (`par_map`).
        threads: 1,
    }
}

/// Run one point in one mode, on `sim_threads` threads (a parallel simulation: the result is
/// the same for every count).
pub fn run_point(
    profile: &Profile,
    rates: NodeRates,
    p: &Point,
    mode: BufferMode,
    seed: u64,
    evict_every: u64,
    sim_threads: usize,
) -> Result<AppResult, ExperimentError> {
    let m = model(&p.app, p.nodes, rates)
        .map_err(|e| ExperimentError::BadParam("apps".into(), e.to_string()))?;
    let mut cfg = app_config_pressure(profile, p, mode, seed, evict_every);
    cfg.threads = sim_threads;
    run_app(&cfg, m.as_ref(), 0..p.iterations.min(m.iterations()))
        .map_err(|e| ExperimentError::Sim(e.to_string()))
}

fn run(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
    let p: Params = ctx.params()?;
    let rates = rates(&p);
    let Params {
        apps,
        nodes,
        seeds,
        scale,
        packet_bytes,
        scale_packet_bytes,
        scale_nodes,
        scale_window_s,
        scale_topologies,
        evict_every,
        sim_threads,
        ..
    } = p;
    let window = [
        ("lammps", p.lammps_steps),
        ("hpl", p.hpl_panels),
        ("hpcg", p.hpcg_iterations),
    ];
    let mut points = Vec::new();
    for app in &apps {
        let iterations = window
            .iter()
            .find(|w| w.0 == app)
            .map(|w| w.1)
            .ok_or_else(|| ExperimentError::BadParam("apps".into(), app.clone()))?;
        for &n in &nodes {
            for s in 0..seeds {
                points.push(Point {
                    app: app.clone(),
                    nodes: n,
                    topology: "torus",
                    seed: s,
                    iterations,
                    packet_bytes,
                });
            }
        }
        if scale == "full" {
            for &n in &scale_nodes {
                let m = model(app, n, rates)
                    .map_err(|e| ExperimentError::BadParam("apps".into(), e.to_string()))?;
                let iterations = iterations_for(m.as_ref(), scale_window_s);
                for topology in ["torus", "fattree"]
                    .into_iter()
                    .filter(|t| scale_topologies.iter().any(|s| s == t))
                {
                    points.push(Point {
                        app: app.clone(),
                        nodes: n,
                        topology,
                        seed: 0,
                        iterations,
                        packet_bytes: scale_packet_bytes,
                    });
                }
            }
        }
    }
    let jobs: Vec<(usize, BufferMode)> = (0..points.len())
        .flat_map(|i| [(i, BufferMode::Part), (i, BufferMode::PreTouch)])
        .collect();
    let results = par_map(&jobs, ctx.progress, |&(i, mode)| {
        let p = &points[i];
        run_point(
            &ctx.profile,
            rates,
            p,
            mode,
            ctx.seed.wrapping_add(p.seed),
            evict_every,
            sim_threads,
        )
    });
    let mut table = Table::new(&[
        "app",
        "nodes",
        "mode",
        "seed",
        "time_s",
        "slowdown",
        "fault_interrupts",
        "errs",
        "topology",
        "iterations",
        "packet_bytes",
        "sends",
        "total_bytes",
        "minor_faults",
        "sim_events",
    ]);
    let mut events = 0;
    let mut it = results.into_iter();
    for p in &points {
        let part = it.next().expect("part run")?;
        let pre = it.next().expect("pretouch run")?;
        for (mode, r) in [(BufferMode::Part, part), (BufferMode::PreTouch, pre)] {
            events += r.events;
            if r.msg_errors > 0 || r.recvs != r.sends {
                return Err(ExperimentError::Sim(format!(
                    "{} at {} nodes: {} message errors, {} of {} messages received",
                    p.app, p.nodes, r.msg_errors, r.recvs, r.sends
                )));
            }
            table.push(vec![
                p.app.clone().into(),
                p.nodes.into(),
                mode.name().into(),
                ctx.seed.wrapping_add(p.seed).into(),
                r.time_s.into(),
                (r.time_s / pre.time_s).into(),
                r.fault_interrupts.into(),
                r.errs.into(),
                p.topology.into(),
                p.iterations.into(),
                p.packet_bytes.into(),
                r.sends.into(),
                r.bytes.into(),
                r.minor_faults.into(),
                r.events.into(),
            ]);
        }
    }
    let mut plots = vec![
        PlotSpec::line(
            "Application slowdown of PART over pre-touch (torus)",
            "nodes",
            "slowdown",
            Some("app"),
        )
        .only("mode", "part")
        .only("topology", "torus")
        .points(),
        PlotSpec::line("Application time (torus)", "nodes", "time_s", Some("mode"))
            .only("topology", "torus")
            .only("app", "lammps")
            .suffix("lammps-time")
            .points(),
    ];
    if scale == "full" && scale_topologies.iter().any(|t| t == "fattree") {
        plots.push(
            PlotSpec::line(
                "Slowdown at scale, fat tree",
                "nodes",
                "slowdown",
                Some("app"),
            )
            .only("mode", "part")
            .only("topology", "fattree")
            .log(true, false)
            .points()
            .suffix("fattree"),
        );
    }
    let models: serde_json::Value = apps
        .iter()
        .map(|a| {
            (
                a.clone(),
                model(a, 16, rates).map(|m| m.params()).unwrap_or_default(),
            )
        })
        .collect::<serde_json::Map<_, _>>()
        .into();
    Ok(ExperimentOutput {
        table,
        plots,
        sim_events: events,
        meta: json!({
            "scale": scale, "seeds": seeds, "window": { "lammps_steps": window[0].1, "hpl_panels": window[1].1, "hpcg_iterations": window[2].1 },
            "scale_window_s": scale_window_s, "scale_topologies": scale_topologies, "scale_nodes": if scale == "full" { json!(scale_nodes) } else { json!([]) },
            "packet_bytes": packet_bytes, "scale_packet_bytes": scale_packet_bytes,
            "scale_knob": "engine.packet_bytes: packets coarser than the reference NI's 256 B (block_bytes raised to match when smaller)",
            "rates": rates, "models_at_16_nodes": models, "ranks_per_node": 1, "threads_per_node": rates.threads,
            "policy": "PIA with ERR", "msg": { "eager_max_bytes": MsgConfig::default().eager_max_bytes, "slots_per_peer": MsgConfig::default().slots_per_peer },
            "copy_gbps": 2.0, "fat_tree_down_ports": FAT_TREE_DOWN, "evict_every": evict_every,
            "modes": { "part": "buffers and message region not present: first use faults (NI: IOMMU fault + ERR; CPU: minor fault)", "pretouch": "every page present" },
        }),
    })
}

/// Largest packet size accepted: the largest power of two under the wire format's 16-bit
/// payload length.
pub const MAX_PACKET_BYTES: u32 = 32768;
