//! `unpinned bench`: benchmarks of the implementation itself, reported as measured.

use clap::{Args, Subcommand};
use unpinned_sim::bench::{run_load, LoadSpec};

use crate::args::ProfileArgs;
use crate::run::setup;

/// What to benchmark.
#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// Speed and memory of the simulator on its standard load: many concurrent 4 MiB transfers
    /// whose destination pages are all missing, at the profile's packet granularity (256 B).
    /// Reports simulated events per wall second (one core), wall time, and resident memory
    /// after the first and the last round (flat = memory does not grow with completed
    /// transfers). Target of the foundation issue: >= 10 million events/s.
    Sim(BenchSimArgs),
}

/// Arguments of `unpinned bench sim`.
#[derive(Args, Debug)]
pub struct BenchSimArgs {
    /// Profile, overrides and seed.
    #[command(flatten)]
    pub profile: ProfileArgs,
    /// Nodes in the ring (node i writes to node i+1).
    #[arg(long, default_value_t = 8)]
    pub nodes: u32,
    /// Concurrent transfers per node per round.
    #[arg(long, default_value_t = 4)]
    pub concurrent: u32,
    /// Bytes per transfer.
    #[arg(long, default_value_t = 4 << 20)]
    pub transfer_bytes: u64,
    /// Rounds; memory after the first and the last is compared.
    #[arg(long, default_value_t = 10)]
    pub rounds: u32,
    /// Repetitions; the median events/s is reported.
    #[arg(long, default_value_t = 3)]
    pub repeat: u32,
    /// Also write the reports as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<std::path::PathBuf>,
}

/// Run `unpinned bench sim`.
pub fn run_sim(args: &BenchSimArgs) -> Result<(), String> {
    let s = setup(&args.profile).map_err(|e| e.to_string())?;
    if args.nodes < 2 || args.concurrent == 0 || args.rounds == 0 || args.repeat == 0 || args.transfer_bytes == 0 {
        return Err("bench sim: --nodes must be >= 2 and --concurrent, --rounds, --repeat, --transfer-bytes >= 1".into());
    }
    let spec = LoadSpec { nodes: args.nodes, concurrent: args.concurrent, transfer_bytes: args.transfer_bytes, rounds: args.rounds };
    eprintln!(
        "bench sim: {} nodes x {} concurrent {} B all-fault writes, {} rounds, {} repetitions (profile {}, seed {})",
        spec.nodes, spec.concurrent, spec.transfer_bytes, spec.rounds, args.repeat, s.profile.name, s.seed
    );
    let mut reports = Vec::new();
    for rep in 0..args.repeat {
        let r = run_load(&s.profile, s.seed + rep as u64, &spec, |round| {
            if round % 5 == 0 || round == spec.rounds {
                eprint!("\r  repetition {}/{}: round {round}/{}", rep + 1, args.repeat, spec.rounds);
            }
        })
        .map_err(|e| e.to_string())?;
        eprintln!();
        println!(
            "  run {}: {} events ({} superseded timer entries not counted, queue <= {}) in {:.2} s wall = {:.2} M events/s ({:.2} M per CPU second of the simulating thread); {} transfers; {:.3} s simulated; RSS {:.1} MiB after round 1, {:.1} MiB after round {}; peak {:.1} MiB",
            rep + 1,
            r.events,
            r.stale_timer_entries,
            r.max_queue,
            r.wall_s,
            r.events_per_s / 1e6,
            r.events_per_cpu_s / 1e6,
            r.transfers,
            r.simulated_s,
            r.rss_after_first_round_bytes as f64 / 1048576.0,
            r.rss_after_last_round_bytes as f64 / 1048576.0,
            spec.rounds,
            r.peak_rss_bytes as f64 / 1048576.0
        );
        reports.push(r);
    }
    let med = |f: fn(&unpinned_sim::bench::LoadReport) -> f64| {
        let mut v: Vec<f64> = reports.iter().map(f).collect();
        v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
        v[v.len() / 2]
    };
    let median = med(|r| r.events_per_s);
    let median_cpu = med(|r| r.events_per_cpu_s);
    let last = reports.last().expect("at least one run");
    let growth = last.rss_after_last_round_bytes as f64 / last.rss_after_first_round_bytes.max(1) as f64;
    println!(
        "median: {:.2} M events/s wall, {:.2} M events per CPU second (target >= 10 on one core); memory growth first -> last round: x{growth:.3}",
        median / 1e6,
        median_cpu / 1e6
    );
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&reports).map_err(|e| e.to_string())?;
        std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}
