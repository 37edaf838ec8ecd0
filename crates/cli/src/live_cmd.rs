//! `unpinned live EXPERIMENT`: the live experiments (real memory, real faults, two ranks in
//! this process over the shared-memory transport; no launcher needed), with the simulator's
//! names and CSV columns for the PART ones. Also used by `unpinned reproduce` (unless `--no-live`).

use std::path::{Path, PathBuf};

use clap::Args;
use unpinned_livebench::exp;
use unpinned_report::ReportEntry;

use crate::args::ProfileArgs;
use crate::error::CliError;
use crate::run::{close_names, run_experiment, setup, Setup};

/// Arguments of `unpinned live`.
#[derive(Args, Debug)]
pub struct LiveArgs {
    /// Experiment name (see --list).
    #[arg(required_unless_present = "list", conflicts_with = "list")]
    pub experiment: Option<String>,
    /// List the live experiments and exit.
    #[arg(long)]
    pub list: bool,
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

/// The profile arguments with the live runtime's defaults in front of the user's overrides.
pub fn live_setup(p: &ProfileArgs) -> Result<Setup, CliError> {
    let mut sets: Vec<String> = unpinned_live::api::LIVE_DEFAULTS
        .iter()
        .map(|s| s.to_string())
        .collect();
    sets.extend(p.sets.iter().cloned());
    setup(&ProfileArgs {
        profile: p.profile.clone(),
        sets,
        seed: p.seed,
    })
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
}

/// Run `unpinned live`.
pub fn run(a: &LiveArgs) -> Result<(), CliError> {
    if a.list {
        list();
        return Ok(());
    }
    let name = a
        .experiment
        .as_deref()
        .ok_or_else(|| CliError::Usage("name a live experiment or use --list".into()))?;
    let spec = exp::find(name).ok_or_else(|| {
        let close = close_names(name, exp::specs().iter().map(|e| e.name));
        let mut msg = format!("no live experiment named {name:?}");
        if !close.is_empty() {
            msg.push_str(&format!("; did you mean {}?", close.join(", ")));
        }
        msg.push_str("\nsee `unpinned live --list`");
        CliError::Usage(msg)
    })?;
    let s = live_setup(&a.profile)?;
    run_experiment(spec, &s, &a.out, a.quiet)?.print();
    Ok(())
}

/// Failed experiments: (name, message).
pub type Failures = Vec<(String, String)>;

/// Run every live experiment into `out` (for `unpinned reproduce`); report entries are
/// named `live/NAME`. Failures are returned beside the entries.
pub fn run_all(
    p: &ProfileArgs,
    out: &Path,
    quiet: bool,
) -> Result<(Vec<ReportEntry>, Failures), CliError> {
    let s = live_setup(p)?;
    let mut entries = Vec::new();
    let mut failures = Vec::new();
    let all = exp::specs();
    for (i, spec) in all.iter().enumerate() {
        if !quiet {
            eprintln!("[live {}/{}] {} ...", i + 1, all.len(), spec.name);
        }
        match run_experiment(spec, &s, out, quiet) {
            Ok(o) => {
                o.print();
                let mut e = o.into_entry(spec);
                e.name = format!("live/{}", spec.name);
                entries.push(e);
            }
            Err(e) => {
                eprintln!("error: {e}");
                failures.push((format!("live/{}", spec.name), e.to_string()));
            }
        }
    }
    Ok((entries, failures))
}
