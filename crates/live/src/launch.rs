//! The launcher behind `unpinned run -n N [--transport shm|udp] -- PROGRAM ARGS`.
//!
//! It creates a run directory under `/dev/shm` (bootstrap files, and the shared-memory segment
//! for the shm transport) or picks free UDP ports on 127.0.0.1, spawns the N ranks with the
//! environment that [`crate::edge`] reads (`UNPINNED_RANK`, `UNPINNED_SIZE`,
//! `UNPINNED_TRANSPORT`, `UNPINNED_SHM` / `UNPINNED_PEERS`, `UNPINNED_DIR`, and the
//! configuration overrides in `UNPINNED_SET`), and watches them:
//!
//! - a rank that exits non-zero or dies of a signal is reported by rank; the others get
//!   [`LaunchOptions::grace`] to finish (their transfers to the dead rank end in
//!   `RetryExceeded` completions, which they may report), then are killed;
//! - the whole job is killed after [`LaunchOptions::timeout`]: nothing hangs.
//!
//! Failure detection and cleanup (issue 18):
//!
//! - every rank is the leader of its own process group, killed as a group (whatever it
//!   started goes with it), and dies with the launcher (`PR_SET_PDEATHSIG`; `launch/rank.rs`);
//! - when a rank exits, dies or is stopped, the launcher writes `ended-R` into the run
//!   directory ([`crate::bootstrap::write_ended`]): ranks waiting for it in a bootstrap
//!   collective fail at once, naming it;
//! - the run directory is removed and the ranks' groups killed on every exit path: normal end,
//!   error or panic (a guard), SIGINT / SIGTERM / SIGHUP (`launch/signals.rs`: cleanup, then the process
//!   ends as the signal asked), timeout, and a launcher killed with SIGKILL (`launch/reaper.rs`, a small
//!   forked process that notices the launcher is gone).

mod netns;
mod rank;
mod reaper;
mod signals;
pub mod veth;

use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use crate::bootstrap::write_ended;
use crate::config::Config;
use crate::edge::{
    ENV_DIR, ENV_PEERS, ENV_RANK, ENV_SET, ENV_SHM, ENV_SIZE, ENV_TRANSPORT, LAYER_SECTIONS,
};
use crate::transport::shm::{create_segment, ShmGeometry};
use crate::transport::udp::free_local_addrs;

/// Which transport the ranks use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LaunchTransport {
    /// Shared-memory rings (one host).
    Shm,
    /// UDP on 127.0.0.1.
    Udp,
}

impl std::str::FromStr for LaunchTransport {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "shm" => Ok(LaunchTransport::Shm),
            "udp" => Ok(LaunchTransport::Udp),
            _ => Err(format!("unknown transport {s:?} (valid: shm, udp)")),
        }
    }
}

/// What to launch.
#[derive(Clone, Debug)]
pub struct LaunchOptions {
    /// Number of ranks.
    pub ranks: u32,
    /// Transport.
    pub transport: LaunchTransport,
    /// Program to run in every rank.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Configuration overrides passed to every rank (`UNPINNED_SET`), e.g.
    /// `engine.packet_bytes=1024`; checked here first (unknown keys refused), except those of
    /// the `dsm` section, which the DSM space checks in the ranks.
    pub sets: Vec<String>,
    /// Extra environment variables for every rank.
    pub env: Vec<(String, String)>,
    /// Kill the whole job after this long.
    pub timeout: Duration,
    /// After a rank failed, let the others run this long before killing them.
    pub grace: Duration,
    /// Network namespaces to run the ranks in (empty: the launcher's): rank `r` in
    /// `netns[r % len]`, each named as `ip netns` names it (a file under `/run/netns`) or
    /// by a path. Over UDP a rank's address is its namespace's first IPv4 address (of an
    /// interface that is up, not loopback). Entering a namespace needs root.
    pub netns: Vec<String>,
}

impl LaunchOptions {
    /// `ranks` copies of `program` over shared memory, 120 s timeout, 10 s grace.
    pub fn new(ranks: u32, program: impl Into<PathBuf>) -> LaunchOptions {
        LaunchOptions {
            ranks,
            transport: LaunchTransport::Shm,
            program: program.into(),
            args: Vec::new(),
            sets: Vec::new(),
            env: Vec::new(),
            timeout: Duration::from_secs(120),
            grace: Duration::from_secs(10),
            netns: Vec::new(),
        }
    }
}

/// How one rank ended.
#[derive(Clone, Debug)]
pub struct RankOutcome {
    /// The rank.
    pub rank: u32,
    /// Exit status.
    pub status: ExitStatus,
    /// The launcher killed it (timeout or after another rank failed).
    pub killed_by_launcher: bool,
    /// It was stopped by this signal (SIGSTOP, ...), which counts as a failure.
    pub stopped_by: Option<i32>,
}

impl RankOutcome {
    /// Exited with code 0.
    pub fn success(&self) -> bool {
        self.status.success() && !self.killed_by_launcher && self.stopped_by.is_none()
    }

    /// A one-line description.
    pub fn describe(&self) -> String {
        use std::os::unix::process::ExitStatusExt;
        let how = match (self.status.code(), self.status.signal()) {
            (Some(c), _) => format!("exited with code {c}"),
            (None, Some(s)) => format!("died of signal {s} ({})", rank::signal_name(s)),
            _ => "ended".to_string(),
        };
        if let Some(s) = self.stopped_by {
            format!(
                "rank {} was stopped by signal {s} ({}), then killed by the launcher",
                self.rank,
                rank::signal_name(s)
            )
        } else if self.killed_by_launcher {
            format!("rank {} was killed by the launcher ({how})", self.rank)
        } else {
            format!("rank {} {how}", self.rank)
        }
    }
}

/// The outcome of a job.
#[derive(Clone, Debug)]
pub struct LaunchReport {
    /// Per rank, by rank.
    pub ranks: Vec<RankOutcome>,
    /// Wall time.
    pub elapsed: Duration,
    /// The job hit the timeout.
    pub timed_out: bool,
    /// The first rank to fail, if any.
    pub first_failure: Option<u32>,
    /// The run directory the job used (removed when `launch` returns).
    pub run_dir: PathBuf,
}

impl LaunchReport {
    /// Every rank exited with code 0.
    pub fn success(&self) -> bool {
        self.ranks.iter().all(RankOutcome::success)
    }

    /// Human-readable summary of the failures (empty on success).
    pub fn failures(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .ranks
            .iter()
            .filter(|r| !r.success())
            .map(RankOutcome::describe)
            .collect();
        if self.timed_out {
            v.push(format!(
                "the job timed out after {:.1} s",
                self.elapsed.as_secs_f64()
            ));
        }
        if let Some(r) = self.first_failure {
            v.push(format!("rank {r} failed first"));
        }
        v
    }
}

/// The launcher could not start the job.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// Bad options.
    #[error("{0}")]
    Usage(String),
    /// Setting up the job failed.
    #[error("{0}")]
    Setup(String),
}

static RUN_COUNTER: AtomicU32 = AtomicU32::new(0);

/// A running job: whatever is still alive of it is killed and its run directory removed when
/// it is dropped (normal end, error, panic).
struct Job {
    dir: PathBuf,
    /// The rank processes not reaped yet, by rank.
    children: Vec<Option<Child>>,
    reaper: Option<reaper::Reaper>,
}

impl Job {
    /// Kill `rank`'s process group and reap the rank.
    fn kill(&mut self, rank: usize) -> Option<ExitStatus> {
        let mut ch = self.children[rank].take()?;
        rank::kill_group(ch.id());
        ch.wait().ok()
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        for r in 0..self.children.len() {
            self.kill(r);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
        if let Some(r) = self.reaper.take() {
            r.disarm();
        }
    }
}

/// Run a job and wait for it (see the module docs). If the launching process receives SIGINT,
/// SIGTERM or SIGHUP meanwhile, the job is killed and cleaned up and the process then ends by
/// that signal (this function does not return).
pub fn launch(opts: &LaunchOptions) -> Result<LaunchReport, LaunchError> {
    let signals = signals::Signals::install()
        .map_err(|e| LaunchError::Setup(format!("installing signal handlers: {e}")))?;
    let r = run(opts, &signals);
    if let Some(sig) = signals.received() {
        eprintln!(
            "unpinned run: {} received: ranks killed, run directory removed",
            rank::signal_name(sig)
        );
        signals.die(sig);
    }
    r
}

fn run(opts: &LaunchOptions, signals: &signals::Signals) -> Result<LaunchReport, LaunchError> {
    if opts.ranks == 0 || opts.ranks > 64 {
        return Err(LaunchError::Usage(format!(
            "-n {}: the number of ranks must be 1..=64",
            opts.ranks
        )));
    }
    let sets: Vec<&str> = opts
        .sets
        .iter()
        .map(|s| s.trim())
        .filter(|s| {
            !LAYER_SECTIONS
                .iter()
                .any(|l| s.split('.').next() == Some(*l))
        })
        .collect();
    let cfg = Config::new(0, opts.ranks)
        .with_overrides(&sets)
        .map_err(|e| LaunchError::Usage(format!("--set / {ENV_SET}: {e}")))?;
    let spaces = opts
        .netns
        .iter()
        .map(|n| netns::Netns::open(n))
        .collect::<Result<Vec<_>, _>>()
        .map_err(LaunchError::Setup)?;
    let base = if std::path::Path::new("/dev/shm").is_dir() {
        PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    let dir = base.join(format!(
        "unpinned-{}-{}",
        std::process::id(),
        RUN_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).map_err(|e| {
        LaunchError::Setup(format!("creating run directory {}: {e}", dir.display()))
    })?;
    let mut job = Job {
        dir: dir.clone(),
        children: Vec::new(),
        reaper: None,
    };
    job.reaper = Some(reaper::Reaper::start(&dir).map_err(|e| {
        LaunchError::Setup(format!("starting the launcher's cleanup process: {e}"))
    })?);
    let mut env: Vec<(String, String)> = vec![
        (ENV_SIZE.into(), opts.ranks.to_string()),
        (ENV_DIR.into(), dir.display().to_string()),
        (ENV_SET.into(), opts.sets.join(",")),
    ];
    match opts.transport {
        LaunchTransport::Shm => {
            let seg = dir.join("segment");
            create_segment(
                &seg,
                ShmGeometry::new(opts.ranks, cfg.max_packet(), cfg.transport.ring_slots),
            )
            .map_err(|e| LaunchError::Setup(e.to_string()))?;
            env.push((ENV_TRANSPORT.into(), "shm".into()));
            env.push((ENV_SHM.into(), seg.display().to_string()));
        }
        LaunchTransport::Udp => {
            let addrs = if spaces.is_empty() {
                free_local_addrs(opts.ranks)
                    .map_err(|e| LaunchError::Setup(format!("finding free UDP ports: {e}")))?
            } else {
                netns::udp_addrs(&spaces, opts.ranks).map_err(LaunchError::Setup)?
            };
            env.push((ENV_TRANSPORT.into(), "udp".into()));
            env.push((
                ENV_PEERS.into(),
                addrs
                    .iter()
                    .map(|a| a.to_string())
                    .collect::<Vec<_>>()
                    .join(","),
            ));
        }
    }
    env.extend(opts.env.iter().cloned());
    let start = Instant::now();
    for rank in 0..opts.ranks {
        let mut c = Command::new(&opts.program);
        c.args(&opts.args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .env(ENV_RANK, rank.to_string());
        let ns = (!spaces.is_empty()).then(|| &spaces[rank as usize % spaces.len()]);
        let ch = rank::spawn(&mut c, ns.map(netns::Netns::fd)).map_err(|e| {
            let place = ns
                .map(|n| format!(" in network namespace {:?}", n.name))
                .unwrap_or_default();
            LaunchError::Setup(format!(
                "starting rank {rank} ({}){place}: {e}",
                opts.program.display()
            ))
        })?;
        if let Some(r) = &job.reaper {
            r.watch(ch.id());
        }
        job.children.push(Some(ch));
    }
    let mut outcomes: Vec<Option<RankOutcome>> = vec![None; opts.ranks as usize];
    let mut stopped: Vec<Option<i32>> = vec![None; opts.ranks as usize];
    let mut first_failure: Option<(u32, Instant)> = None;
    let mut timed_out = false;
    let mut sleep = Duration::from_millis(1);
    let ended = |o: &RankOutcome, first_failure: &mut Option<(u32, Instant)>| {
        let how = o.describe();
        let _ = write_ended(&dir, o.rank, &how);
        if !o.success() && first_failure.is_none() {
            *first_failure = Some((o.rank, Instant::now()));
            eprintln!(
                "unpinned run: {how}; the other ranks get {:.1} s to finish",
                opts.grace.as_secs_f64()
            );
        }
    };
    loop {
        if signals.received().is_some() {
            break;
        }
        for rank in 0..job.children.len() {
            let Some(ch) = &job.children[rank] else {
                continue;
            };
            match rank::peek(ch.id()) {
                Ok(Some(rank::Change::Ended)) | Err(_) => {
                    // Kill what the rank left in its group before reaping it (its process id is
                    // its group's id: not reusable until then).
                    let Some(status) = job.kill(rank) else {
                        continue;
                    };
                    let o = RankOutcome {
                        rank: rank as u32,
                        status,
                        killed_by_launcher: false,
                        stopped_by: stopped[rank],
                    };
                    ended(&o, &mut first_failure);
                    outcomes[rank] = Some(o);
                }
                Ok(Some(rank::Change::Stopped(sig))) if stopped[rank].is_none() => {
                    stopped[rank] = Some(sig);
                    let how = format!(
                        "rank {rank} was stopped by signal {sig} ({})",
                        rank::signal_name(sig)
                    );
                    let _ = write_ended(&dir, rank as u32, &how);
                    if first_failure.is_none() {
                        first_failure = Some((rank as u32, Instant::now()));
                        eprintln!(
                            "unpinned run: {how}; the other ranks get {:.1} s to finish",
                            opts.grace.as_secs_f64()
                        );
                    }
                }
                Ok(_) => {}
            }
        }
        if job.children.iter().all(Option::is_none) {
            break;
        }
        let kill_now = if start.elapsed() >= opts.timeout {
            timed_out = true;
            true
        } else {
            first_failure.is_some_and(|(_, t)| t.elapsed() >= opts.grace)
        };
        if kill_now {
            for rank in 0..job.children.len() {
                if let Some(status) = job.kill(rank) {
                    outcomes[rank] = Some(RankOutcome {
                        rank: rank as u32,
                        status,
                        killed_by_launcher: true,
                        stopped_by: stopped[rank],
                    });
                }
            }
            break;
        }
        std::thread::sleep(sleep);
        sleep = (sleep * 2).min(Duration::from_millis(20));
    }
    drop(job);
    let ranks = outcomes.into_iter().flatten().collect();
    Ok(LaunchReport {
        ranks,
        elapsed: start.elapsed(),
        timed_out,
        first_failure: first_failure.map(|f| f.0),
        run_dir: dir,
    })
}
