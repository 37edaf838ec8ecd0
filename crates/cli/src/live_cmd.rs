//! `unpinned live EXPERIMENT`: the live experiments (real memory, real faults, two ranks in
//! this process over the shared-memory transport; no launcher needed), with the simulator's
//! names and CSV columns for the PART ones. Also the live part of `unpinned reproduce`
//! ([`run_all`]), which keeps each experiment's output in a log file.

mod capture;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use clap::Args;
use unpinned_experiments::ExperimentSpec;
use unpinned_livebench::exp;
use unpinned_report::{skipped_note, ReportEntry};

use crate::args::ProfileArgs;
use crate::error::CliError;
use crate::progress;
use crate::run::{close_names, experiment_help, run_experiment, setup_with_base, Setup};

/// Arguments of `unpinned live`.
#[derive(Args, Debug)]
#[command(disable_help_flag = true)]
pub struct LiveArgs {
    /// Experiment name (see --list).
    #[arg(required_unless_present_any = ["list", "help"], conflicts_with = "list")]
    pub experiment: Option<String>,
    /// List the live experiments and exit.
    #[arg(long)]
    pub list: bool,
    /// Print help; with an experiment, its parameters (type, default, unit, allowed values),
    /// its profile kind and the profile fields it sets itself.
    #[arg(short = 'h', long)]
    pub help: bool,
    /// Engine profile and overrides (`--set engine.packet_bytes=1024`), experiment parameters
    /// (`--set exp.reps=9`). The live runtime's defaults (10 ms block timeout, 30 timeouts
    /// before a peer is dead) are applied first.
    #[command(flatten)]
    pub profile: ProfileArgs,
    /// Output directory (separate from the simulator's results: the file names are the same).
    #[arg(long, default_value = "results/live")]
    pub out: PathBuf,
    /// No progress display.
    #[arg(long, short)]
    pub quiet: bool,
}

/// The profile arguments with the live runtime's defaults in front of the user's overrides
/// ([`Setup::base`]: an experiment that sets one of those fields itself, like part-timeout's
/// block timeout, refuses the user's `--set` of it, not the default).
pub fn live_setup(p: &ProfileArgs) -> Result<Setup, CliError> {
    let base: Vec<String> = unpinned_live::api::LIVE_DEFAULTS
        .iter()
        .map(|s| s.to_string())
        .collect();
    setup_with_base(p, &base)
}

fn list() {
    let all = exp::specs();
    let w = all
        .iter()
        .map(|e| e.name.len())
        .max()
        .unwrap_or(0)
        .max("EXPERIMENT".len());
    println!("{:w$}  DESCRIPTION", "EXPERIMENT");
    for e in all {
        println!("{:w$}  {}", e.name, e.description);
    }
    println!("\n`unpinned live EXPERIMENT --help`: its parameters and profile.");
}

/// The live experiment called `name`, or a usage error suggesting close names.
fn find(name: &str) -> Result<&'static ExperimentSpec, CliError> {
    exp::find(name).ok_or_else(|| {
        let close = close_names(name, exp::specs().iter().map(|e| e.name));
        let mut msg = format!("no live experiment named {name:?}");
        if !close.is_empty() {
            msg.push_str(&format!("; did you mean {}?", close.join(", ")));
        }
        msg.push_str("\nsee `unpinned live --list`");
        CliError::Usage(msg)
    })
}

/// Run `unpinned live`.
pub fn run(a: &LiveArgs) -> Result<(), CliError> {
    if a.list {
        list();
        return Ok(());
    }
    if a.help {
        match a.experiment.as_deref() {
            Some(name) => print!("{}", experiment_help(find(name)?)),
            None => {
                let mut cli = <crate::Cli as clap::CommandFactory>::command();
                cli.build();
                let live = cli
                    .find_subcommand_mut("live")
                    .expect("live is a subcommand");
                live.print_long_help()
                    .map_err(|e| CliError::Run(e.to_string()))?;
            }
        }
        return Ok(());
    }
    let name = a
        .experiment
        .as_deref()
        .ok_or_else(|| CliError::Usage("name a live experiment or use --list".into()))?;
    let spec = find(name)?;
    let s = live_setup(&a.profile)?;
    run_experiment(spec, &s, &a.out, a.quiet)?.print();
    Ok(())
}

/// Failed experiments: (name, message).
pub type Failures = Vec<(String, String)>;

/// What the live part of `unpinned reproduce` produced.
pub struct LivePart {
    /// Report entries, named `live/NAME`.
    pub entries: Vec<ReportEntry>,
    /// Failed experiments.
    pub failures: Failures,
    /// Experiments that skipped part of their work: (name, why, with the command to fix it).
    pub skipped: Vec<(String, String)>,
    /// Load average (1 minute) when the part started, from /proc/loadavg.
    pub load_at_start: Option<f64>,
    /// Wall time of the whole part, s.
    pub wall_s: f64,
}

/// The 1-minute load average (Linux).
pub fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Run every live experiment into `out` (for `unpinned reproduce`); report entries are named
/// `live/NAME`. While an experiment runs, everything it and its rank processes print goes to
/// `out/logs/NAME.log`; the terminal shows its progress and then one line: rows and elapsed
/// time, or the failure, or what it skipped.
pub fn run_all(p: &ProfileArgs, out: &Path, quiet: bool) -> Result<LivePart, CliError> {
    run_specs(&exp::specs(), &live_setup(p)?, out, quiet)
}

/// [`run_all`] for the experiments `specs`.
fn run_specs(
    all: &[&ExperimentSpec],
    s: &Setup,
    out: &Path,
    quiet: bool,
) -> Result<LivePart, CliError> {
    let logs = out.join("logs");
    std::fs::create_dir_all(&logs)
        .map_err(|e| CliError::Run(format!("creating {}: {e}", logs.display())))?;
    let terminal = capture::terminal()
        .map(Arc::new)
        .map_err(|e| CliError::Run(format!("duplicating stderr: {e}")))?;
    let mut part = LivePart {
        entries: Vec::new(),
        failures: Vec::new(),
        skipped: Vec::new(),
        load_at_start: load_average(),
        wall_s: 0.0,
    };
    let started = Instant::now();
    for (i, spec) in all.iter().enumerate() {
        let name = format!("live/{}", spec.name);
        let log_path = logs.join(format!("{}.log", spec.name));
        let log = std::fs::File::create(&log_path)
            .map_err(|e| CliError::Run(format!("creating {}: {e}", log_path.display())))?;
        let t = Instant::now();
        let result = {
            let _capture = capture::Capture::start(&log).map_err(|e| {
                CliError::Run(format!("redirecting output to {}: {e}", log_path.display()))
            })?;
            progress::set_console(Some(terminal.clone()));
            let r = run_experiment(spec, s, out, quiet);
            progress::set_console(None);
            r
        };
        let secs = t.elapsed().as_secs_f64();
        let head = format!("[live {}/{}] {}", i + 1, all.len(), spec.name);
        match result {
            Ok(o) => {
                let mut line = format!(
                    "{head}: {} rows in {secs:.1} s -> {}",
                    o.table.rows.len(),
                    o.files.csv.display()
                );
                if let Some(skip) = skipped_note(&o.meta) {
                    line.push_str(&format!("\n    skipped: {skip}"));
                    part.skipped.push((name.clone(), skip.to_string()));
                }
                if !quiet {
                    println!("{line}");
                }
                let mut e = o.into_entry(spec);
                e.name = name;
                part.entries.push(e);
            }
            Err(e) => {
                eprintln!(
                    "{head}: failed after {secs:.1} s: {e} (log: {})",
                    log_path.display()
                );
                part.failures.push((name, e.to_string()));
            }
        }
    }
    part.wall_s = started.elapsed().as_secs_f64();
    Ok(part)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use unpinned_experiments::{ExperimentError, ExperimentOutput, RunContext};
    use unpinned_report::Table;

    /// Prints like a job's ranks (a child process and this process), then finds a peer missing.
    fn noisy(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
        let st = std::process::Command::new("sh")
            .args([
                "-c",
                "for i in 1 2 3; do echo rank-line-$i; done; echo rank-warning >&2",
            ])
            .status()
            .map_err(|e| ExperimentError::Sim(e.to_string()))?;
        assert!(st.success());
        // Written to the descriptor (println! would go to the test harness's capture).
        let _ = writeln!(std::io::stdout(), "in-process line");
        let _ = std::io::stdout().flush();
        (ctx.progress)(1, 1);
        let mut table = Table::new(&["x"]);
        table.push(vec![1u64.into()]);
        Ok(ExperimentOutput {
            table,
            plots: Vec::new(),
            sim_events: 0,
            meta: serde_json::json!({"skipped": "peer side: install it with `apt-get install p`"}),
        })
    }
    fn broken(_: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
        let _ = writeln!(std::io::stderr(), "what went wrong, in detail");
        Err(ExperimentError::Sim("live: broken".into()))
    }
    static NOISY: ExperimentSpec = ExperimentSpec {
        name: "live-noisy",
        system: "live",
        description: "d",
        run: noisy,
        ..ExperimentSpec::LIVE
    };
    static BROKEN: ExperimentSpec = ExperimentSpec {
        name: "live-broken",
        system: "live",
        description: "d",
        run: broken,
        ..ExperimentSpec::LIVE
    };

    /// The live defaults set the block timeout too, but they are not the user's: a default run
    /// of an experiment that sets it per point is not refused; the user's `--set` is.
    #[test]
    fn fixed_fields_refuse_the_users_set_but_not_the_live_defaults() {
        let args = |sets: &[&str]| ProfileArgs {
            profile: "forth-arm".into(),
            sets: sets.iter().map(|s| s.to_string()).collect(),
            seed: 1,
        };
        for name in ["part-timeout", "part-fault-small"] {
            let spec = exp::find(name).unwrap();
            let s = live_setup(&args(&[])).unwrap();
            assert!(
                s.base
                    .iter()
                    .any(|b| b.starts_with("engine.block_timeout_us=")),
                "{:?}",
                s.base
            );
            let r = crate::run::resolve(spec, &s).unwrap_or_else(|e| panic!("{name}: {e}"));
            // The live defaults are in the profile the experiment gets.
            assert_eq!(r.profile.engine.block_timeout_us, 10_000.0, "{name}");
            let s = live_setup(&args(&["engine.block_timeout_us=250"])).unwrap();
            match crate::run::resolve(spec, &s) {
                Err(CliError::Usage(m)) => {
                    assert!(m.contains("sets engine.block_timeout_us itself"), "{m}")
                }
                _ => panic!("{name}: the user's block timeout was not refused"),
            }
        }
        // Where nothing is fixed, the user's override wins over the live default.
        let s = live_setup(&args(&["engine.block_timeout_us=250"])).unwrap();
        let r = crate::run::resolve(exp::find("part-fault-all").unwrap(), &s).unwrap();
        assert_eq!(r.profile.engine.block_timeout_us, 250.0);
    }

    #[test]
    fn rank_output_goes_to_one_log_per_experiment_and_skips_are_reported() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let out =
            std::env::temp_dir().join(format!("unpinned-cli-live-{}-{nanos}", std::process::id()));
        let s = live_setup(&ProfileArgs {
            profile: "forth-arm".into(),
            sets: Vec::new(),
            seed: 1,
        })
        .unwrap();
        let part = run_specs(&[&NOISY, &BROKEN], &s, &out, true).unwrap();
        let log = std::fs::read_to_string(out.join("logs/live-noisy.log")).unwrap();
        for l in [
            "rank-line-1",
            "rank-line-3",
            "rank-warning",
            "in-process line",
        ] {
            assert!(log.contains(l), "{l} in {log:?}");
        }
        let log = std::fs::read_to_string(out.join("logs/live-broken.log")).unwrap();
        assert!(log.contains("what went wrong"), "{log:?}");
        assert_eq!(part.entries.len(), 1);
        assert_eq!(part.entries[0].name, "live/live-noisy");
        assert_eq!(part.failures.len(), 1);
        assert_eq!(part.failures[0].0, "live/live-broken");
        assert_eq!(part.skipped.len(), 1);
        assert!(part.skipped[0].1.contains("apt-get install p"));
        assert!(out.join("live-noisy.csv").is_file());
        let _ = std::fs::remove_dir_all(&out);
    }
}
