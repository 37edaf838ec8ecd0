//! `unpinned bench`: benchmarks of the implementation itself, reported as measured.

use clap::{Args, Subcommand};
use unpinned_sim::bench::{run_load_with, LoadOptions, LoadSpec, TARGET_EVENTS_PER_S};

use crate::args::ProfileArgs;
use crate::run::setup;

/// What to benchmark.
#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// Speed and memory of the simulator on its standard load: many concurrent 4 MiB transfers
    /// whose destination pages are all missing, at the profile's packet granularity (256 B).
    /// Reports simulated events and packets per wall second and per CPU second (one core),
    /// wall time, peak resident memory and resident memory after the first and the last round
    /// (flat = memory does not grow with completed transfers), and the ratio to the target of
    /// the foundation issue: >= 10 million events/s.
    Sim(BenchSimArgs),
    /// Speed of the live runtime (issue 3 targets), side by side in one run: two ranks in this
    /// process over shared memory. 8 B write latency, 4 MiB bandwidth, pin per transfer vs
    /// PART, residency check cost (PART vs Transfer-Only), 4 KiB write into a missing page,
    /// and live-hol (other transfers' latency with a major-faulting one, PART and blocking).
    Live(BenchLiveArgs),
    /// OpenSHMEM side by side (issue 16): bench/shmem/osu_shmem.c built with unpinned's oshcc
    /// and Open MPI's, 2 PEs; (a) defaults vs Open MPI (target: within 1.5x), (b) every
    /// transfer through PART vs Open MPI over TCP (target: ahead); medians of rounds, ratios.
    Shmem(crate::bench_shmem::BenchShmemArgs),
}

/// Arguments of `unpinned bench live`.
#[derive(Args, Debug)]
pub struct BenchLiveArgs {
    /// Engine profile and overrides (`--set engine.packet_bytes=4096`), on top of the live
    /// defaults.
    #[command(flatten)]
    pub profile: ProfileArgs,
    /// Repetition rounds (medians over all).
    #[arg(long, default_value_t = 5)]
    pub repeat: usize,
    /// Also write the report as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<std::path::PathBuf>,
}

/// Run `unpinned bench live`.
pub fn run_live(args: &BenchLiveArgs) -> Result<(), String> {
    let s = crate::live_cmd::live_setup(&args.profile).map_err(|e| e.to_string())?;
    let progress = |_: u64, _: u64| {};
    let ctx = unpinned_experiments::RunContext {
        profile: s.profile.clone(),
        kind_profile: None,
        seed: s.seed,
        params: s.params.clone(),
        progress: &progress,
    };
    eprintln!(
        "bench live: 2 ranks in one process over shm; engine: {} B blocks, {} B packets, {} outstanding; {} rounds",
        s.profile.engine.block_bytes, s.profile.engine.packet_bytes, s.profile.engine.max_outstanding_blocks, args.repeat
    );
    let r = unpinned_livebench::bench::run(&ctx, args.repeat, |step| eprintln!("  {step} ..."))
        .map_err(|e| e.to_string())?;
    let verdict = |ok: bool| if ok { "met" } else { "NOT met" };
    println!(
        "8 B write latency (median)            {:>10.2} us      target <= 0.5 us   {}",
        r.write_8b_us,
        verdict(r.write_8b_us <= 0.5)
    );
    println!(
        "4 MiB write bandwidth (median)        {:>10.3} GB/s    target >= 20 GB/s  {}",
        r.write_4mib_gbytes_s,
        verdict(r.write_4mib_gbytes_s >= 20.0)
    );
    println!(
        "  bound: 4 MiB memcpy on this machine {:>10.3} GB/s    (live = {:.0}% of it)",
        r.memcpy_4mib_gbytes_s,
        100.0 * r.write_4mib_gbytes_s / r.memcpy_4mib_gbytes_s
    );
    println!(
        "  bound: two copies pipelined, 2 thr. {:>10.3} GB/s    (live = {:.0}% of it)",
        r.pipelined_copy_4mib_gbytes_s,
        100.0 * r.write_4mib_gbytes_s / r.pipelined_copy_4mib_gbytes_s
    );
    println!(
        "  floor: ring hand-off one way        {:>10.2} us      (8 B write = {:.1} hand-offs)",
        r.ring_one_way_us,
        r.write_8b_us / r.ring_one_way_us
    );
    println!(
        "pin-per-transfer / PART, 4 MiB        {:>10.2} x       target >= 3x       {}",
        r.pin_over_part_4mib,
        verdict(r.pin_over_part_4mib >= 3.0)
    );
    for (size, ratio) in &r.part_over_transfer_only {
        println!(
            "PART / Transfer-Only, {:>7} B      {:>10.3} x       target <= 1.05x    {}",
            size,
            ratio,
            verdict(*ratio <= 1.05)
        );
    }
    println!("  check cost of a 4 MiB write         {:>10.3}         ({:.1} scans x {:.2} us over the write's time; target <= 0.05)", r.check_cost_4mib_fraction, r.checks_per_4mib_write, r.scan_us);
    println!(
        "4 KiB write into a missing page       {:>10.1} us      target <= 10 us    {}",
        r.write_4k_missing_us,
        verdict(r.write_4k_missing_us <= 10.0)
    );
    println!("  of which page-in of the page (mean) {:>10.1} us      (+ 2 round trips ~ 8 B write each; {} NACKs)", r.missing_page_in_us, r.missing_nacks);
    println!(
        "  opt-in page-in on access (no NACK)  {:>10.1} us      (progress.fill_on_access_max_pages={})",
        r.write_4k_missing_fill_us,
        unpinned_livebench::bench::FILL_OPT_IN_PAGES
    );
    // The live-hol lines, at the top level (`indent` "") or under the small-ring heading ("  ").
    let hol_lines = |indent: &str, part: f64, blocking: f64, nofault_us: f64| {
        let label = |l: &str| format!("{indent}{l:<w$}", w = 38 - indent.len());
        println!(
            "{}{part:>10.2} x       target <= 1.2x     {}",
            label("live-hol others, PART / no-fault"),
            verdict(part <= 1.2)
        );
        println!(
            "{}{blocking:>10.2} x       expected > 1.2x    {}",
            label("live-hol others, blocking / no-fault"),
            verdict(blocking > 1.2)
        );
        // Indented by two at either level, as it always was.
        println!("  others without the faulting one     {nofault_us:>10.1} us");
    };
    let dedicated = |d: &Option<unpinned_livebench::bench::DedicatedCores>, w8: f64, miss: f64| {
        match d {
            Some(d) => {
                println!("dedicated cores: caller pinned to CPU {}, target's progress thread to CPU {}, both spin {} us, rings of {} slots", d.caller_cpu, d.target_cpu, d.spin_us, d.ring_slots);
                println!("  (progress.cpu, progress.spin_us, progress.wait_spin_us; the lines above are the defaults: no pinning, no spin)");
                println!("  8 B write latency (median)          {:>10.2} us      target <= 0.5 us   {}   (default {:.2} us)", d.write_8b_us, verdict(d.write_8b_us <= 0.5), w8);
                println!("  4 KiB write into a missing page     {:>10.1} us      target <= 10 us    {}   (default {:.1} us)", d.write_4k_missing_us, verdict(d.write_4k_missing_us <= 10.0), miss);
            }
            None => println!("dedicated cores: not measured (fewer than two CPUs available)"),
        }
    };
    println!(
        "(rings of {} slots per direction: transport.ring_slots, as `unpinned run`)",
        r.ring_slots
    );
    dedicated(&r.dedicated, r.write_8b_us, r.write_4k_missing_us);
    hol_lines(
        "",
        r.hol_part_over_nofault,
        r.hol_blocking_over_nofault,
        r.hol_nofault_us,
    );
    let sr = &r.small_ring;
    println!(
        "small rings: the same with {} slots per ring (transport.ring_slots={}), defaults otherwise",
        sr.ring_slots, sr.ring_slots
    );
    println!(
        "  8 B write latency (median)          {:>10.2} us      target <= 0.5 us   {}",
        sr.write_8b_us,
        verdict(sr.write_8b_us <= 0.5)
    );
    println!(
        "  4 KiB write into a missing page     {:>10.1} us      target <= 10 us    {}",
        sr.write_4k_missing_us,
        verdict(sr.write_4k_missing_us <= 10.0)
    );
    hol_lines(
        "  ",
        sr.hol_part_over_nofault,
        sr.hol_blocking_over_nofault,
        sr.hol_nofault_us,
    );
    dedicated(&sr.dedicated, sr.write_8b_us, sr.write_4k_missing_us);
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&r).map_err(|e| e.to_string())?;
        std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
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
    /// `transfers` (the standard load above) or an application: `lammps`, `hpl`, `hpcg`
    /// (then `--nodes` ranks, one per node, for `--window-s` of the application's compute).
    #[arg(long, default_value = "transfers")]
    pub workload: String,
    /// Applications: topology, `torus` or `fattree`.
    #[arg(long, default_value = "torus")]
    pub topology: String,
    /// Applications: `part` (first use faults) or `pretouch`.
    #[arg(long, default_value = "part")]
    pub mode: String,
    /// Applications: packet size, the scale knob (the reference NI's is 256 B).
    #[arg(long, default_value_t = 16384)]
    pub packet_bytes: u32,
    /// Applications: simulated seconds of compute to cover.
    #[arg(long, default_value_t = 1.0)]
    pub window_s: f64,
    /// Applications: threads of the parallel simulation (0: the available cores, capped by the
    /// nodes). The result is the same for every count.
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Standard load: source bytes. `zero` (never-written sources, the standard load: the
    /// simulator stores no bytes for pages that only ever received zeros), `random` (seeded
    /// random bytes: every destination page stores its 4 KiB and every packet's bytes are
    /// moved), or `both` (the default: the standard load, then the same load with random
    /// bytes side by side, so the cost of real payloads is never hidden).
    #[arg(long, default_value = "both", value_parser = ["zero", "random", "both"])]
    pub payload: String,
}

/// Run `unpinned bench sim`.
pub fn run_sim(args: &BenchSimArgs) -> Result<(), String> {
    if args.workload != "transfers" {
        let r = crate::bench_apps::run(
            &args.profile,
            &args.workload,
            args.nodes,
            &args.topology,
            &args.mode,
            args.packet_bytes,
            args.window_s,
            args.threads,
        )?;
        println!(
            "{} on {} nodes ({}, {}): {} iterations, {:.3} s simulated, {} events in {:.1} s wall ({:.1} s CPU) = {:.2} M events/s ({:.2} M per CPU second); {} threads, {} windows ({:.0} events per window), {} parks; peak RSS {:.1} MiB = {:.1} KiB per simulated node; {} sends, {} fault interrupts; event queue up to {} entries, {} stale timer entries",
            r.workload, r.nodes, r.topology, r.mode, r.iterations, r.simulated_s, r.events, r.wall_s, r.cpu_s, r.events_per_s / 1e6, r.events_per_cpu_s / 1e6,
            r.threads, r.windows, r.events as f64 / r.windows.max(1) as f64, r.parks,
            r.peak_rss_bytes as f64 / 1048576.0, r.peak_bytes_per_node / 1024.0, r.sends, r.fault_interrupts, r.queue_max, r.stale_timers
        );
        if let Some(path) = &args.json {
            let text = serde_json::to_string_pretty(&r).map_err(|e| e.to_string())?;
            std::fs::write(path, text)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
        return Ok(());
    }
    let s = setup(&args.profile).map_err(|e| e.to_string())?;
    if args.nodes < 2
        || args.concurrent == 0
        || args.rounds == 0
        || args.repeat == 0
        || args.transfer_bytes == 0
    {
        return Err("bench sim: --nodes must be >= 2 and --concurrent, --rounds, --repeat, --transfer-bytes >= 1".into());
    }
    // Each node maps a source and a destination region of `concurrent` transfers; random
    // payloads store the bytes of both.
    let region = args
        .transfer_bytes
        .checked_mul(args.concurrent as u64)
        .and_then(|r| r.checked_mul(2))
        .ok_or_else(|| {
            format!(
                "bench sim: --concurrent {} x --transfer-bytes {} overflows 64 bits: lower them",
                args.concurrent, args.transfer_bytes
            )
        })?;
    let stored = if args.payload == "zero" { 0 } else { region };
    crate::memcheck::check_nodes(
        "bench sim",
        if stored > 0 {
            "--nodes (or --concurrent, --transfer-bytes; --payload zero stores no page bytes)"
        } else {
            "--nodes (or --concurrent, --transfer-bytes)"
        },
        args.nodes as u64,
        region,
        stored,
    )?;
    let spec = LoadSpec {
        nodes: args.nodes,
        concurrent: args.concurrent,
        transfer_bytes: args.transfer_bytes,
        rounds: args.rounds,
    };
    eprintln!(
        "bench sim: {} nodes x {} concurrent {} B all-fault writes, {} rounds, {} repetitions (profile {}, seed {})",
        spec.nodes, spec.concurrent, spec.transfer_bytes, spec.rounds, args.repeat, s.profile.name, s.seed
    );
    let variants: &[(bool, &str)] = match args.payload.as_str() {
        "zero" => &[(false, "zero source bytes (the standard load)")],
        "random" => &[(true, "random source bytes")],
        _ => &[
            (false, "zero source bytes (the standard load)"),
            (
                true,
                "random source bytes (same load, every payload byte stored and moved)",
            ),
        ],
    };
    let mut all_reports = Vec::new();
    for &(random_sources, label) in variants {
        eprintln!("{label}:");
        let reports = run_sim_variant(
            &s,
            &spec,
            args.repeat,
            LoadOptions {
                check_invariants: false,
                random_sources,
            },
        )?;
        print_sim_summary(label, &reports);
        all_reports.extend(reports);
    }
    let reports = all_reports;
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&reports).map_err(|e| e.to_string())?;
        std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}

/// `repeat` runs of the standard load with `opts`, one line per run.
fn run_sim_variant(
    s: &crate::run::Setup,
    spec: &LoadSpec,
    repeat: u32,
    opts: LoadOptions,
) -> Result<Vec<unpinned_sim::bench::LoadReport>, String> {
    let mut reports = Vec::new();
    for rep in 0..repeat {
        let r = run_load_with(&s.profile, s.seed + rep as u64, spec, opts, |round| {
            if round % 5 == 0 || round == spec.rounds {
                eprint!(
                    "\r  repetition {}/{}: round {round}/{}",
                    rep + 1,
                    repeat,
                    spec.rounds
                );
            }
        })
        .map_err(|e| e.to_string())?;
        eprintln!();
        println!(
            "  run {}: {} events ({} superseded timer entries not counted, queue <= {}) in {:.2} s wall ({:.2} s CPU) = {:.2} M events/s ({:.2} M per CPU second of the simulating thread); {} packets ({} data) = {:.2} M packets/s ({:.2} M per CPU second); {} transfers; {:.3} s simulated; RSS {:.1} MiB after round 1, {:.1} MiB after round {}; peak {:.1} MiB",
            rep + 1,
            r.events,
            r.stale_timer_entries,
            r.max_queue,
            r.wall_s,
            r.cpu_s,
            r.events_per_s / 1e6,
            r.events_per_cpu_s / 1e6,
            r.packets,
            r.data_packets,
            r.packets_per_s / 1e6,
            r.packets_per_cpu_s / 1e6,
            r.transfers,
            r.simulated_s,
            r.rss_after_first_round_bytes as f64 / 1048576.0,
            r.rss_after_last_round_bytes as f64 / 1048576.0,
            spec.rounds,
            r.peak_rss_bytes as f64 / 1048576.0
        );
        reports.push(r);
    }
    Ok(reports)
}

/// Medians of one variant's runs and the verdict against the target.
fn print_sim_summary(label: &str, reports: &[unpinned_sim::bench::LoadReport]) {
    let med = |f: fn(&unpinned_sim::bench::LoadReport) -> f64| {
        let mut v: Vec<f64> = reports.iter().map(f).collect();
        v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
        v[v.len() / 2]
    };
    let median = med(|r| r.events_per_s);
    let median_cpu = med(|r| r.events_per_cpu_s);
    let last = reports.last().expect("at least one run");
    let growth =
        last.rss_after_last_round_bytes as f64 / last.rss_after_first_round_bytes.max(1) as f64;
    let peak = reports.iter().map(|r| r.peak_rss_bytes).max().unwrap_or(0);
    println!(
        "{label}: median {:.2} M events/s wall, {:.2} M events per CPU second; {:.2} M packets/s wall, {:.2} M per CPU second; wall {:.2} s per run; peak RSS {:.1} MiB; memory growth first -> last round: x{growth:.3}",
        median / 1e6,
        median_cpu / 1e6,
        med(|r| r.packets_per_s) / 1e6,
        med(|r| r.packets_per_cpu_s) / 1e6,
        med(|r| r.wall_s),
        peak as f64 / 1048576.0
    );
    let verdict = |ratio: f64| if ratio >= 1.0 { "met" } else { "NOT met" };
    println!(
        "  target >= {:.0} M events/s on one core: x{:.2} of it (wall, {}), x{:.2} per CPU second ({})",
        TARGET_EVENTS_PER_S / 1e6,
        median / TARGET_EVENTS_PER_S,
        verdict(median / TARGET_EVENTS_PER_S),
        median_cpu / TARGET_EVENTS_PER_S,
        verdict(median_cpu / TARGET_EVENTS_PER_S)
    );
}
