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
//! The run directory is removed at the end.

use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

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
}

impl RankOutcome {
    /// Exited with code 0.
    pub fn success(&self) -> bool {
        self.status.success() && !self.killed_by_launcher
    }

    /// A one-line description.
    pub fn describe(&self) -> String {
        use std::os::unix::process::ExitStatusExt;
        let how = match (self.status.code(), self.status.signal()) {
            (Some(c), _) => format!("exited with code {c}"),
            (None, Some(s)) => format!("died of signal {s}"),
            _ => "ended".to_string(),
        };
        if self.killed_by_launcher {
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

struct RunDir(PathBuf);

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Run a job and wait for it (see the module docs).
pub fn launch(opts: &LaunchOptions) -> Result<LaunchReport, LaunchError> {
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
    let dir = RunDir(dir);
    let mut env: Vec<(String, String)> = vec![
        (ENV_SIZE.into(), opts.ranks.to_string()),
        (ENV_DIR.into(), dir.0.display().to_string()),
        (ENV_SET.into(), opts.sets.join(",")),
    ];
    match opts.transport {
        LaunchTransport::Shm => {
            let seg = dir.0.join("segment");
            create_segment(
                &seg,
                ShmGeometry::new(opts.ranks, cfg.max_packet(), cfg.transport.ring_slots),
            )
            .map_err(|e| LaunchError::Setup(e.to_string()))?;
            env.push((ENV_TRANSPORT.into(), "shm".into()));
            env.push((ENV_SHM.into(), seg.display().to_string()));
        }
        LaunchTransport::Udp => {
            let addrs = free_local_addrs(opts.ranks)
                .map_err(|e| LaunchError::Setup(format!("finding free UDP ports: {e}")))?;
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
    let mut children: Vec<Option<Child>> = Vec::new();
    for rank in 0..opts.ranks {
        let mut c = Command::new(&opts.program);
        c.args(&opts.args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .env(ENV_RANK, rank.to_string());
        match c.spawn() {
            Ok(ch) => children.push(Some(ch)),
            Err(e) => {
                for ch in children.iter_mut().flatten() {
                    let _ = ch.kill();
                    let _ = ch.wait();
                }
                return Err(LaunchError::Setup(format!(
                    "starting rank {rank} ({}): {e}",
                    opts.program.display()
                )));
            }
        }
    }
    let mut outcomes: Vec<Option<RankOutcome>> = vec![None; opts.ranks as usize];
    let mut first_failure: Option<(u32, Instant)> = None;
    let mut timed_out = false;
    let mut sleep = Duration::from_millis(1);
    loop {
        for (rank, slot) in children.iter_mut().enumerate() {
            let Some(ch) = slot else { continue };
            if let Ok(Some(status)) = ch.try_wait() {
                let o = RankOutcome {
                    rank: rank as u32,
                    status,
                    killed_by_launcher: false,
                };
                if !o.success() && first_failure.is_none() {
                    first_failure = Some((rank as u32, Instant::now()));
                    eprintln!(
                        "unpinned run: {}; the other ranks get {:.1} s to finish",
                        o.describe(),
                        opts.grace.as_secs_f64()
                    );
                }
                outcomes[rank] = Some(o);
                *slot = None;
            }
        }
        if children.iter().all(Option::is_none) {
            break;
        }
        let kill_now = if start.elapsed() >= opts.timeout {
            timed_out = true;
            true
        } else {
            first_failure.is_some_and(|(_, t)| t.elapsed() >= opts.grace)
        };
        if kill_now {
            for (rank, slot) in children.iter_mut().enumerate() {
                if let Some(mut ch) = slot.take() {
                    let _ = ch.kill();
                    if let Ok(status) = ch.wait() {
                        outcomes[rank] = Some(RankOutcome {
                            rank: rank as u32,
                            status,
                            killed_by_launcher: true,
                        });
                    }
                }
            }
            break;
        }
        std::thread::sleep(sleep);
        sleep = (sleep * 2).min(Duration::from_millis(20));
    }
    let ranks = outcomes.into_iter().flatten().collect();
    Ok(LaunchReport {
        ranks,
        elapsed: start.elapsed(),
        timed_out,
        first_failure: first_failure.map(|f| f.0),
    })
}
