//! `unpinned`: run the simulated experiments, reproduce the report, inspect profiles.

mod args;
mod bench;
mod bench_apps;
mod bench_shmem;
mod calibrate_cmd;
mod config_cmd;
mod error;
mod live_cmd;
mod memcheck;
mod profile_cmd;
mod progress;
mod replay_cmd;
mod run;
mod run_cmd;
mod sweep;
mod thp;
mod vopr_cmd;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::SystemTime;

use clap::{Args, Parser, Subcommand};

use args::ProfileArgs;
use bench::BenchCommand;
use error::CliError;
use unpinned_report::{rfc3339_utc, write_index, ReportInfo, ReportSection};

const ABOUT: &str = "Simulator and runtime for page-fault-tolerant RDMA.";

const LONG_ABOUT: &str = "\
Simulator and runtime for page-fault-tolerant RDMA.

PART lets RDMA use any virtual address without pinning memory: the network interface
translates through the process's page table via the IOMMU, and a page that is not present
is handled like a transmission error. The receiver answers the block with a page-fault
NACK, the host pages it in, and the sender retransmits only that block when asked.

The experiments of the specs (PART, ODP, Active Access, DSM) run on a discrete-event
simulator driven by a cost profile (default: the built-in forth-arm). Each run writes a
tidy CSV table, JSON metadata and SVG plots.

Main commands:
  unpinned sim --list                 list the experiments
  unpinned sim EXPERIMENT --help      its parameters, defaults and profile kind
  unpinned sim EXPERIMENT             run one experiment
  unpinned reproduce                  run them all and write results/index.html
  unpinned profile show               print the profile (with --set overrides)
  unpinned replay TRACE               replay a trace (.jsonl or GOAL .goal), PART vs pre-touch
  unpinned sweep SPEC.toml            parameter sweep, locally or --cluster tcp://HOST:PORT (Dask)

Example:
  unpinned sim part-fault-all --set engine.block_timeout_us=100 --seed 7 --out results/";

/// The unpinned command-line tool.
#[derive(Parser, Debug)]
#[command(name = "unpinned", version, about = ABOUT, long_about = LONG_ABOUT)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run one experiment on the simulator (or list them with --list).
    Sim(SimArgs),
    /// Run every experiment and write the HTML report.
    Reproduce(ReproduceArgs),
    /// Show or check cost profiles.
    #[command(subcommand)]
    Profile(ProfileCommand),
    /// Benchmarks of the implementation itself.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Launch a live job: N processes running PART over real memory (shm or udp).
    Run(run_cmd::RunArgs),
    /// Show the live runtime's configuration, or list every knob (--list [--markdown]).
    Config(config_cmd::ConfigArgs),
    /// Measure this machine's component costs (faults, page-in, mlock, wake-ups, ring) and
    /// write them as a simulator profile.
    Calibrate(calibrate_cmd::CalibrateArgs),
    /// Run a live experiment: two ranks of the live runtime in this process, real memory and
    /// faults (or list them with --list).
    Live(live_cmd::LiveArgs),
    /// Replay a communication trace (JSON lines or a LogGOPSim GOAL schedule) on the
    /// simulator, PART against pre-touch.
    Replay(replay_cmd::ReplayArgs),
    /// Sweep an experiment over a parameter grid (TOML spec), locally or on a Dask cluster
    /// (`--cluster tcp://HOST:PORT`), merged into one tidy table.
    Sweep(sweep::SweepArgs),
    /// One point of a sweep: run an experiment and print its table as JSON (used by the
    /// cluster workers).
    #[command(hide = true)]
    RunPoint(sweep::RunPointArgs),
    /// One rank of a DSM application on the live DSM (run it under `unpinned run -n N --`):
    /// `unpinned dsm-run APP [--threads T] [--context progress|deferred|signal|polling]
    /// [--input small|medium|spec] [--protect batched|per-page] [--trace FILE] [--result FILE]`
    /// (the same program as `unpinned-dsm-run`).
    DsmRun(DsmRunArgs),
    /// Seeded swarms of every simulated protocol, each with a safety phase (faults on) and a
    /// liveness phase (faults off), judged by the kernel's checkers (docs/vopr.md).
    Vopr(vopr_cmd::VoprArgs),
}

#[derive(Args, Debug)]
struct DsmRunArgs {
    /// APP and its options (passed to unpinned-dsm-run as they are).
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "APP ARGS"
    )]
    args: Vec<String>,
}

#[derive(Args, Debug)]
#[command(disable_help_flag = true)]
struct SimArgs {
    /// Experiment name (see --list).
    #[arg(required_unless_present_any = ["list", "help"], conflicts_with = "list")]
    experiment: Option<String>,
    /// List the experiments and exit.
    #[arg(long)]
    list: bool,
    /// Print help; with an experiment, its parameters (type, default, unit, allowed values),
    /// its profile kind and where it runs.
    #[arg(short = 'h', long)]
    help: bool,
    #[command(flatten)]
    profile: ProfileArgs,
    /// Output directory.
    #[arg(long, default_value = "results")]
    out: PathBuf,
    /// No progress display.
    #[arg(long, short)]
    quiet: bool,
}

#[derive(Args, Debug)]
struct ReproduceArgs {
    #[command(flatten)]
    profile: ProfileArgs,
    /// Output directory (gets every experiment's files and index.html; the live part goes to
    /// OUT/live, its logs to OUT/live/logs).
    #[arg(long, default_value = "results")]
    out: PathBuf,
    /// Only the simulated experiments of this system (part, odp, aa, dsm); no live part.
    #[arg(long, value_name = "SYSTEM", conflicts_with = "live_only")]
    only: Option<String>,
    /// No progress display.
    #[arg(long, short)]
    quiet: bool,
    /// Only the simulated part. By default `reproduce` runs the simulated experiments
    /// (deterministic: the same seed gives the same bytes), then every live experiment
    /// (`unpinned live`: real processes, real memory, real faults, measured on this machine)
    /// into OUT/live; the live part uses the live runtime's engine parameters (forth-arm with
    /// the live defaults), not --profile / --set.
    #[arg(long, conflicts_with_all = ["live", "live_only"])]
    no_live: bool,
    /// Only the live part (measured on this machine).
    #[arg(long)]
    live_only: bool,
    /// Run the live experiments too (the default; kept for scripts written when it was not).
    #[arg(long, hide = true)]
    live: bool,
}

#[derive(Subcommand, Debug)]
enum ProfileCommand {
    /// Print a profile of any kind as TOML, after --set overrides.
    Show {
        /// Built-in name (forth-arm, connectx3..6, cray-xe6, dsm-ib1) or TOML file.
        #[arg(value_name = "NAME|FILE", default_value = "forth-arm")]
        profile: String,
        /// Override a field, e.g. engine.block_timeout_us=100 (repeatable).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
    },
    /// Parse and validate a profile file of any kind (PART, IB, AA, DSM); says which
    /// experiments use it.
    Check {
        /// TOML file (or a built-in name).
        file: String,
    },
}

fn list() {
    let all = unpinned_experiments::all();
    if all.is_empty() {
        println!("No experiments are registered yet.");
        return;
    }
    let w = all
        .iter()
        .map(|e| e.name.len())
        .max()
        .unwrap_or(0)
        .max("EXPERIMENT".len());
    let s = all
        .iter()
        .map(|e| e.system.len())
        .max()
        .unwrap_or(0)
        .max("SYSTEM".len());
    println!(
        "{:w$}  {:s$}  PROFILE  RUNS ON   DESCRIPTION",
        "EXPERIMENT", "SYSTEM"
    );
    for e in all {
        println!(
            "{:w$}  {:s$}  {:7}  {:8}  {}",
            e.name,
            e.system,
            e.profile.name(),
            e.backends.name(),
            e.description
        );
    }
    println!("\n`unpinned sim EXPERIMENT --help`: its parameters and profile. Profiles by kind:");
    println!("{}", run::kinds_help());
}

fn sim(a: &SimArgs) -> Result<(), CliError> {
    if a.list {
        list();
        return Ok(());
    }
    if a.help {
        match a.experiment.as_deref() {
            Some(name) => print!("{}", run::experiment_help(run::find_experiment(name)?)),
            None => {
                let mut cli = <Cli as clap::CommandFactory>::command();
                cli.build();
                let sim = cli.find_subcommand_mut("sim").expect("sim is a subcommand");
                sim.print_long_help()
                    .map_err(|e| CliError::Run(e.to_string()))?;
            }
        }
        return Ok(());
    }
    let name = a
        .experiment
        .as_deref()
        .ok_or_else(|| CliError::Usage("name an experiment or use --list".into()))?;
    let spec = run::find_experiment(name)?;
    let setup = run::setup_for(spec, &a.profile)?;
    let outcome = run::run_experiment(spec, &setup, &a.out, a.quiet)?;
    outcome.print();
    Ok(())
}

/// The simulated experiments `reproduce` runs: all, or those of `--only`'s system.
fn chosen_simulated(
    only: Option<&str>,
) -> Result<Vec<&'static unpinned_experiments::ExperimentSpec>, CliError> {
    let all = unpinned_experiments::all();
    let Some(sys) = only else {
        return Ok(all);
    };
    let chosen: Vec<_> = all.iter().filter(|e| e.system == sys).copied().collect();
    if chosen.is_empty() && !all.is_empty() {
        let mut systems: Vec<&str> = Vec::new();
        for e in &all {
            if !systems.contains(&e.system) {
                systems.push(e.system);
            }
        }
        return Err(CliError::Usage(format!(
            "no experiments of system {sys:?} (systems: {})",
            systems.join(", ")
        )));
    }
    Ok(chosen)
}

/// `unpinned reproduce`: the simulated part, then the live part, each under its own header on
/// the terminal and in its own section of the report.
/// `reproduce` runs experiments of every kind, each with its own parameters: a `--set` or
/// `--profile` that some of them would refuse is refused before anything runs (a partial
/// report, with some experiments changed and others failed, helps nobody).
fn refuse_settings_not_for_all(
    chosen: &[&'static unpinned_experiments::ExperimentSpec],
    setup: &run::Setup,
) -> Result<(), CliError> {
    if !setup.params.is_empty() {
        let keys: Vec<String> = setup.params.keys().map(|k| format!("exp.{k}")).collect();
        return Err(CliError::Usage(format!(
            "reproduce runs every experiment with its own default parameters; {} would be \
             read by some and refused by others: run `unpinned sim EXPERIMENT --set \
             exp.KEY=VALUE` (`unpinned sim EXPERIMENT --help` lists its parameters)",
            keys.join(", ")
        )));
    }
    let refused: Vec<String> = chosen
        .iter()
        .filter_map(|spec| {
            run::resolve(spec, setup).err().map(|e| {
                format!(
                    "  {}: {}",
                    spec.name,
                    e.to_string().lines().next().unwrap_or("")
                )
            })
        })
        .collect();
    if refused.is_empty() {
        return Ok(());
    }
    Err(CliError::Usage(format!(
        "--profile / --set do not apply to every experiment reproduce would run; narrow the \
         run with --only SYSTEM, or run one experiment with `unpinned sim EXPERIMENT`. \
         Refused by:\n{}",
        refused.join("\n")
    )))
}

fn reproduce(a: &ReproduceArgs) -> Result<(), CliError> {
    let setup = run::setup(&a.profile)?;
    let run_sim = !a.live_only;
    let run_live = !a.no_live && a.only.is_none();
    let chosen = if run_sim {
        chosen_simulated(a.only.as_deref())?
    } else {
        Vec::new()
    };
    refuse_settings_not_for_all(&chosen, &setup)?;
    let header = |text: &str| {
        if !a.quiet {
            println!("\n== {text} ==");
        }
    };
    let mut sim_entries = Vec::new();
    let mut failures = Vec::new();
    let mut usage_failures = 0;
    let sim_start = std::time::Instant::now();
    if run_sim {
        header(&format!(
            "Simulated experiments ({}): deterministic, the same seed gives the same files",
            chosen.len()
        ));
    }
    for (i, spec) in chosen.iter().enumerate() {
        if !a.quiet {
            eprintln!("[{}/{}] {} ...", i + 1, chosen.len(), spec.name);
        }
        match run::run_experiment(spec, &setup, &a.out, a.quiet) {
            Ok(o) => {
                o.print();
                sim_entries.push(o.into_entry(spec));
            }
            Err(e) => {
                eprintln!("error: {e}");
                if matches!(e, CliError::Usage(_)) {
                    usage_failures += 1;
                }
                failures.push((spec.name.to_string(), e.to_string()));
            }
        }
    }
    let sim_s = sim_start.elapsed().as_secs_f64();
    // The published results beside ours, read back from the CSVs just written.
    let validation = if run_sim {
        match unpinned_report::validation::write_section(&a.out) {
            Ok(s) => Some(s),
            Err(e) => {
                eprintln!("error: validation section: {e}");
                failures.push(("validation".to_string(), e.to_string()));
                None
            }
        }
    } else {
        None
    };
    let live_out = a.out.join("live");
    let live = if run_live {
        header(&format!(
            "Live experiments ({}): measured on this machine, not deterministic; \
             their output goes to {}",
            unpinned_livebench::exp::specs().len(),
            live_out.join("logs").display()
        ));
        let p = args::ProfileArgs {
            profile: "forth-arm".into(),
            sets: Vec::new(),
            seed: a.profile.seed,
        };
        let part = live_cmd::run_all(&p, &live_out, a.quiet)?;
        failures.extend(part.failures.iter().cloned());
        Some(part)
    } else {
        None
    };
    let sim_note = if run_sim {
        format!(
            "Discrete-event simulation with the profile and seed above: the same command gives \
             the same CSV files on every machine. {} experiments, {sim_s:.0} s wall time.",
            chosen.len()
        )
    } else {
        "Not run (--live-only).".to_string()
    };
    let live_note = match &live {
        Some(p) => format!(
            "Real processes, real memory and real page faults on the machine that wrote this \
             report ({} CPUs, load average {} at the start): the numbers vary from run to run \
             and from machine to machine. Each experiment's output (its ranks' included) is in \
             live/logs/NAME.log. {} experiments, {:.0} s wall time.{}",
            std::thread::available_parallelism().map_or(0, |n| n.get()),
            p.load_at_start
                .map_or("unknown".to_string(), |l| format!("{l:.2}")),
            p.entries.len() + p.failures.len(),
            p.wall_s,
            if p.skipped.is_empty() {
                String::new()
            } else {
                format!(
                    " Skipped parts: {}.",
                    p.skipped
                        .iter()
                        .map(|(n, w)| format!("{n}: {w}"))
                        .collect::<Vec<_>>()
                        .join("; ")
                )
            }
        ),
        None if a.only.is_some() => "Not run (--only runs simulated experiments only).".into(),
        None => "Not run (--no-live).".into(),
    };
    let live_ran = live
        .as_ref()
        .map_or(0, |p| p.entries.len() + p.failures.len());
    let mut sections = vec![ReportSection {
        id: "simulated".into(),
        title: "Simulated experiments (deterministic)".into(),
        note: sim_note,
        entries: sim_entries,
    }];
    sections.extend(validation);
    sections.push(ReportSection {
        id: "live".into(),
        title: "Live experiments: measured on this machine (not deterministic)".into(),
        note: live_note,
        entries: live.map(|p| p.entries).unwrap_or_default(),
    });
    let info = ReportInfo {
        version: unpinned_report::VERSION.to_string(),
        profile_name: setup.profile.name.clone(),
        seed: setup.seed,
        overrides: setup.sets.clone(),
        created: rfc3339_utc(SystemTime::now()),
        command: std::env::args().collect(),
        failures: failures.clone(),
    };
    let index = write_index(&a.out, "unpinned results", &info, &sections).map_err(|e| {
        CliError::Run(format!(
            "writing {}: {e}",
            a.out.join("index.html").display()
        ))
    })?;
    header("Report");
    println!("{}", index.display());
    if failures.is_empty() {
        Ok(())
    } else {
        let names: Vec<&str> = failures.iter().map(|f| f.0.as_str()).collect();
        let ran = chosen.len() + live_ran;
        let msg = format!(
            "{} of {ran} experiments failed: {}",
            failures.len(),
            names.join(", ")
        );
        Err(if usage_failures == failures.len() {
            CliError::Usage(msg)
        } else {
            CliError::Run(msg)
        })
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Output piped into `head` and closed early: end quietly, as Unix tools do, instead of
    // panicking on the failed write. Only for commands that open no sockets or pipes of their
    // own (live runtimes, PMIx, the launcher), which must see EPIPE as an error, not die.
    let output_only = matches!(
        &cli.command,
        Command::Sim(_)
            | Command::Profile(_)
            | Command::Config(_)
            | Command::Replay(_)
            | Command::Vopr(_)
            | Command::Bench(BenchCommand::Sim(_))
    );
    if output_only {
        // SAFETY: called before any thread is started; SIG_DFL is a valid disposition.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    }
    // The long simulations: their heap on huge pages (see thp.rs). Anything that runs live
    // processes keeps the allocator as users' programs have it: the live experiments measure
    // real page faults, which huge pages would change.
    let simulation_only = match &cli.command {
        Command::Sim(_) | Command::Bench(BenchCommand::Sim(_)) | Command::RunPoint(_) => true,
        Command::Reproduce(a) => a.no_live || a.only.is_some(),
        _ => false,
    };
    if simulation_only {
        thp::reexec_with_huge_pages();
    }
    // The runtimes these commands start in this process take the knobs of `UNPINNED_SET`
    // (the programs under `unpinned run` read theirs through the runtime's edge).
    let in_process_live = matches!(
        &cli.command,
        Command::Live(_)
            | Command::Bench(BenchCommand::Live(_))
            | Command::Calibrate(_)
            | Command::Reproduce(_)
            | Command::Sweep(_)
            | Command::RunPoint(_)
    );
    if in_process_live {
        if let Err(e) = unpinned_livebench::exp::set_base_overrides(&config_cmd::overrides(&[])) {
            eprintln!("error: {}: {e}", unpinned_live::edge::ENV_SET);
            return ExitCode::from(2);
        }
    }
    let result = match &cli.command {
        Command::Sim(a) => sim(a),
        Command::Reproduce(a) => reproduce(a),
        Command::Profile(ProfileCommand::Show { profile, sets }) => {
            profile_cmd::show(profile, sets)
        }
        Command::Profile(ProfileCommand::Check { file }) => profile_cmd::check(file),
        Command::Bench(BenchCommand::Sim(a)) => bench::run_sim(a).map_err(CliError::Run),
        Command::Run(a) => run_cmd::run(a),
        Command::Config(a) => config_cmd::run(a),
        Command::Calibrate(a) => calibrate_cmd::run(a),
        Command::Live(a) => live_cmd::run(a),
        Command::Replay(a) => replay_cmd::run(a),
        Command::Sweep(a) => sweep::run(a),
        Command::RunPoint(a) => sweep::run_point_cmd(a),
        Command::DsmRun(a) => std::process::exit(unpinned_dsm_run::main_with(&a.args)),
        Command::Bench(BenchCommand::Live(a)) => bench::run_live(a).map_err(CliError::Run),
        Command::Bench(BenchCommand::Shmem(a)) => bench_shmem::run(a).map_err(CliError::Run),
        Command::Vopr(a) => vopr_cmd::run(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            e.exit_code()
        }
    }
}
