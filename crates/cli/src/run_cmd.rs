//! `unpinned run -n N [--transport shm|udp] [--netns A,B] -- PROGRAM ARGS`: launch a live job
//! (issue 3).
//!
//! Thin wrapper over [`unpinned_live::launch`]: the live runtime creates the shared-memory
//! segment (or picks UDP ports on 127.0.0.1), spawns the ranks with the launcher's
//! environment variables (`crates/live/src/edge.rs`; the knobs of `UNPINNED_SET` and of
//! `--set` travel in `UNPINNED_SET`), and reports which rank failed. Exit code 1 if any rank failed or the job timed
//! out, 2 for usage errors. Each rank runs in its own process group and dies with the launcher;
//! on Ctrl-C / SIGTERM / SIGHUP the ranks are killed and the run directory removed, then this
//! process ends by that signal.

use std::time::Duration;

use clap::Args;
use unpinned_live::launch::{launch, LaunchError, LaunchOptions, LaunchTransport};

use crate::error::CliError;

/// Arguments of `unpinned run`.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// Number of ranks (processes).
    #[arg(short = 'n', long = "ranks", default_value_t = 2)]
    pub ranks: u32,
    /// Transport between the ranks: shm (shared-memory rings) or udp (127.0.0.1).
    #[arg(long, default_value = "shm")]
    pub transport: String,
    /// Run rank r in the (r mod K)-th of these K network namespaces, comma-separated (names of
    /// `ip netns`; over udp a rank's address is its namespace's first IPv4 address; needs root).
    #[arg(long, value_delimiter = ',', value_name = "NS[,NS...]")]
    pub netns: Vec<String>,
    /// Page-in policy of every rank: pio, pi4 or pia (the knob handler.policy).
    #[arg(long)]
    pub policy: Option<String>,
    /// Override a knob of every rank, e.g. engine.block_timeout_us=100 or dsm.context=signal
    /// (repeatable; several per flag separated by commas; after those of UNPINNED_SET; every
    /// knob: `unpinned config --list`). Unknown keys are refused.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Kill the whole job (every rank's process group) after this many seconds.
    #[arg(long, default_value_t = 300.0)]
    pub timeout: f64,
    /// After a rank fails, give the others this many seconds to finish.
    #[arg(long, default_value_t = 10.0)]
    pub grace: f64,
    /// The program and its arguments (after `--`).
    #[arg(required = true, last = true, value_name = "PROGRAM ARGS")]
    pub command: Vec<String>,
}

/// Run the job; Ok only if every rank exited with code 0.
pub fn run(a: &RunArgs) -> Result<(), CliError> {
    let transport: LaunchTransport = a.transport.parse().map_err(CliError::Usage)?;
    if let Some(p) = &a.policy {
        p.parse::<unpinned_live::PageInPolicy>()
            .map_err(CliError::Usage)?;
    }
    if !(a.timeout > 0.0 && a.grace >= 0.0) {
        return Err(CliError::Usage(
            "--timeout must be > 0 and --grace >= 0".into(),
        ));
    }
    let (program, args) = a
        .command
        .split_first()
        .ok_or_else(|| CliError::Usage("name a program after --".into()))?;
    let mut o = LaunchOptions::new(a.ranks, program);
    o.transport = transport;
    o.netns = a.netns.clone();
    o.args = args.to_vec();
    o.sets = crate::config_cmd::overrides(&a.sets);
    o.timeout = Duration::from_secs_f64(a.timeout);
    o.grace = Duration::from_secs_f64(a.grace);
    if let Some(p) = &a.policy {
        o.sets.push(format!("handler.policy={p}"));
    }
    // The launcher checks the runtime's knobs; the DSM space's are checked here too, so that a
    // typo fails before any rank starts.
    let mut dsm = unpinned_live::edge::Edge {
        rank: 0,
        size: a.ranks.max(1),
        transport: unpinned_live::TransportKind::Udp(Vec::new()),
        bootstrap_dir: None,
        sets: o.sets.clone(),
        pmix: false,
    };
    unpinned_dsm_live::SpaceConfig::default()
        .with_overrides(&dsm.take_section("dsm"))
        .map_err(|e| CliError::Usage(format!("--set / UNPINNED_SET: {e}")))?;
    let report = launch(&o).map_err(|e| match e {
        LaunchError::Usage(m) => CliError::Usage(m),
        LaunchError::Setup(m) => CliError::Run(m),
    })?;
    if report.success() {
        Ok(())
    } else {
        Err(CliError::Run(format!(
            "job failed: {}",
            report.failures().join("; ")
        )))
    }
}
