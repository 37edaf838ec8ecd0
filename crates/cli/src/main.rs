//! `unpinned`: run the simulated experiments, reproduce the report, inspect profiles.

mod args;
mod bench;
mod bench_apps;
mod calibrate_cmd;
mod error;
mod live_cmd;
mod profile_cmd;
mod progress;
mod replay_cmd;
mod run;
mod run_cmd;
mod sweep;
mod thp;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::SystemTime;

use clap::{Args, Parser, Subcommand};

use args::ProfileArgs;
use bench::BenchCommand;
use error::CliError;
use unpinned_report::{rfc3339_utc, write_index, ReportInfo};

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
    /// Output directory (gets every experiment's files and index.html).
    #[arg(long, default_value = "results")]
    out: PathBuf,
    /// Only the experiments of this system (part, odp, aa, dsm).
    #[arg(long, value_name = "SYSTEM")]
    only: Option<String>,
    /// No progress display.
    #[arg(long, short)]
    quiet: bool,
    /// Skip the live experiments. By default `reproduce` also runs every live experiment
    /// (`unpinned live`: real processes, real memory, real faults on this machine) into
    /// OUT/live and adds them to the report as live/NAME; they use the live runtime's engine
    /// parameters (forth-arm with the live defaults), not --profile / --set.
    #[arg(long, conflicts_with = "live")]
    no_live: bool,
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

fn reproduce(a: &ReproduceArgs) -> Result<(), CliError> {
    let setup = run::setup(&a.profile)?;
    let all = unpinned_experiments::all();
    let chosen: Vec<_> = all
        .iter()
        .filter(|e| match a.only.as_deref() {
            Some(s) => e.system == s,
            None => true,
        })
        .copied()
        .collect();
    if let Some(sys) = &a.only {
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
    }
    let mut entries = Vec::new();
    let mut failures = Vec::new();
    let mut usage_failures = 0;
    for (i, spec) in chosen.iter().enumerate() {
        if !a.quiet {
            eprintln!("[{}/{}] {} ...", i + 1, chosen.len(), spec.name);
        }
        match run::run_experiment(spec, &setup, &a.out, a.quiet) {
            Ok(o) => {
                o.print();
                entries.push(o.into_entry(spec));
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
    let live = !a.no_live;
    if live {
        let p = args::ProfileArgs {
            profile: "forth-arm".into(),
            sets: Vec::new(),
            seed: a.profile.seed,
        };
        let (live_entries, live_failures) = live_cmd::run_all(&p, &a.out.join("live"), a.quiet)?;
        entries.extend(live_entries);
        failures.extend(live_failures);
    }
    let info = ReportInfo {
        version: unpinned_report::VERSION.to_string(),
        profile_name: setup.profile.name.clone(),
        seed: setup.seed,
        overrides: setup.sets.clone(),
        created: rfc3339_utc(SystemTime::now()),
        command: std::env::args().collect(),
        failures: failures.clone(),
    };
    let index = write_index(&a.out, "unpinned results", &info, &entries).map_err(|e| {
        CliError::Run(format!(
            "writing {}: {e}",
            a.out.join("index.html").display()
        ))
    })?;
    println!("{}", index.display());
    if failures.is_empty() {
        Ok(())
    } else {
        let names: Vec<&str> = failures.iter().map(|f| f.0.as_str()).collect();
        let ran = chosen.len()
            + if live {
                unpinned_livebench::exp::specs().len()
            } else {
                0
            };
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
    // The long simulations: their heap on huge pages (see thp.rs). Anything that runs live
    // processes keeps the allocator as users' programs have it: the live experiments measure
    // real page faults, which huge pages would change.
    let simulation_only = match &cli.command {
        Command::Sim(_) | Command::Bench(BenchCommand::Sim(_)) | Command::RunPoint(_) => true,
        Command::Reproduce(a) => a.no_live,
        _ => false,
    };
    if simulation_only {
        thp::reexec_with_huge_pages();
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
        Command::Calibrate(a) => calibrate_cmd::run(a),
        Command::Live(a) => live_cmd::run(a),
        Command::Replay(a) => replay_cmd::run(a),
        Command::Sweep(a) => sweep::run(a),
        Command::RunPoint(a) => sweep::run_point_cmd(a),
        Command::DsmRun(a) => std::process::exit(unpinned_dsm_run::main_with(&a.args)),
        Command::Bench(BenchCommand::Live(a)) => bench::run_live(a).map_err(CliError::Run),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            e.exit_code()
        }
    }
}
