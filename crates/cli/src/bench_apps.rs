//! `unpinned bench sim --workload lammps|hpl|hpcg`: one application run on the simulator,
//! measured: simulated events per second (wall and CPU of the simulating threads), wall time,
//! and peak memory per simulated node.

use unpinned_experiments::part::apps::{app_config, iterations_for, Point, MAX_PACKET_BYTES};
use unpinned_sim::apps::{run_app, BufferMode};
use unpinned_sim::bench::{process_cpu_s, rss_bytes};
use unpinned_traffic::{model, NodeRates};

use crate::run::setup;

/// What one application benchmark measured.
#[derive(Debug, serde::Serialize)]
pub struct AppBenchReport {
    /// Application.
    pub workload: String,
    /// Simulated nodes.
    pub nodes: u32,
    /// Topology.
    pub topology: String,
    /// Buffer mode.
    pub mode: String,
    /// Packet size (the scale knob).
    pub packet_bytes: u32,
    /// Iterations simulated.
    pub iterations: u64,
    /// Simulated time, s.
    pub simulated_s: f64,
    /// Simulator events.
    pub events: u64,
    /// Wall time, s.
    pub wall_s: f64,
    /// CPU time of the process (every simulating thread), s.
    pub cpu_s: f64,
    /// Events per wall second.
    pub events_per_s: f64,
    /// Events per CPU second (all threads).
    pub events_per_cpu_s: f64,
    /// Peak resident memory of the process, bytes.
    pub peak_rss_bytes: u64,
    /// (Peak RSS - RSS before the run) / nodes, bytes.
    pub peak_bytes_per_node: f64,
    /// Send calls.
    pub sends: u64,
    /// IOMMU fault interrupts.
    pub fault_interrupts: u64,
    /// Largest number of entries in the event queue at once.
    pub queue_max: u64,
    /// Superseded timer entries popped from the queue (not counted as events).
    pub stale_timers: u64,
    /// Threads (partitions) of the simulation.
    pub threads: u32,
    /// Windows of simulated time the partitions advanced through.
    pub windows: u64,
    /// Times a thread parked at a window barrier.
    pub parks: u64,
}

/// Run one application benchmark.
#[allow(clippy::too_many_arguments)]
pub fn run(
    profile: &crate::args::ProfileArgs,
    workload: &str,
    nodes: u32,
    topology: &str,
    mode: &str,
    packet_bytes: u32,
    window_s: f64,
    threads: usize,
) -> Result<AppBenchReport, String> {
    let s = setup(profile).map_err(|e| e.to_string())?;
    if nodes == 0 || packet_bytes == 0 || packet_bytes > MAX_PACKET_BYTES || !(window_s > 0.0) {
        return Err(format!(
            "bench sim: --nodes >= 1, --packet-bytes in 1..={MAX_PACKET_BYTES}, --window-s > 0"
        ));
    }
    let topology: &'static str = match topology {
        "torus" => "torus",
        "fattree" => "fattree",
        t => {
            return Err(format!(
                "bench sim: unknown topology {t:?} (torus, fattree)"
            ))
        }
    };
    let mode = match mode {
        "part" => BufferMode::Part,
        "pretouch" => BufferMode::PreTouch,
        m => return Err(format!("bench sim: unknown mode {m:?} (part, pretouch)")),
    };
    // Node state first (cheap, before the model's per-rank tables), then with the buffers.
    crate::memcheck::check_nodes("bench sim", "--nodes", nodes as u64, 0, 0)?;
    let m = model(workload, nodes, NodeRates::default()).map_err(|e| e.to_string())?;
    crate::memcheck::check_app("bench sim", "--nodes", m.as_ref())?;
    let iterations = iterations_for(m.as_ref(), window_s);
    let p = Point {
        app: workload.to_string(),
        nodes,
        topology,
        seed: 0,
        iterations,
        packet_bytes,
    };
    let mut cfg = app_config(&s.profile, &p, mode, s.seed);
    cfg.threads = threads;
    eprintln!("bench sim: {workload} on {nodes} nodes ({topology}), {} mode, {iterations} iterations (~{window_s} s of compute), {packet_bytes} B packets", mode.name());
    let rss0 = rss_bytes().0;
    // Setup (models, memory maps) runs on this thread before the run; the process's CPU
    // time then covers the worker threads too.
    let (cpu0, wall0) = (process_cpu_s(), std::time::Instant::now());
    let r = run_app(&cfg, m.as_ref(), 0..iterations).map_err(|e| e.to_string())?;
    let (cpu, wall) = (process_cpu_s() - cpu0, wall0.elapsed().as_secs_f64());
    let peak = rss_bytes().1;
    Ok(AppBenchReport {
        workload: workload.to_string(),
        nodes,
        topology: topology.to_string(),
        mode: mode.name().to_string(),
        packet_bytes,
        iterations,
        simulated_s: r.time_s,
        events: r.events,
        wall_s: wall,
        cpu_s: cpu,
        events_per_s: r.events as f64 / wall,
        // The CPU clock ticks every 10 ms: a shorter run has no meaningful rate.
        events_per_cpu_s: if cpu >= 0.1 {
            r.events as f64 / cpu
        } else {
            f64::NAN
        },
        peak_rss_bytes: peak,
        peak_bytes_per_node: peak.saturating_sub(rss0) as f64 / nodes as f64,
        sends: r.sends,
        fault_interrupts: r.fault_interrupts,
        queue_max: r.queue_max,
        stale_timers: r.stale_timers,
        threads: r.threads,
        windows: r.windows,
        parks: r.parks,
    })
}
