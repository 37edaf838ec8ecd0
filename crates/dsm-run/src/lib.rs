//! Runs a named DSM application ([`unpinned_dsm_apps`]) on the live Multiview DSM
//! ([`unpinned_dsm_live::LiveSpace`]) on every rank of a job started by `unpinned run`:
//!
//! ```text
//! unpinned run -n 4 -- unpinned-dsm-run sor --threads 2 --context progress
//! ```
//!
//! Every rank builds the space, runs the app's collective `setup` (rank 0 initialises), meets
//! the others at a bootstrap barrier, then runs `threads` workers of the app's parallel phase.
//! Rank 0 times the parallel phase (barrier release to its workers' end; the apps end with a
//! DSM barrier, so every rank is done by then up to the skew of that last barrier), checks the
//! result against the app's sequential reference (its reads fault like any other access and
//! are served by the other ranks, which wait in a collective meanwhile), gathers every rank's
//! counters and prints one line; `--result FILE` also writes it as JSON ([`RunResult`]).
//! `--trace FILE` records the run's trace (crates/dsm format) for the simulator's replay.
//!
//! Exit codes: 0 correct, 1 wrong answer or app/space error, 2 usage, 75 a peer rank died
//! ([`unpinned_dsm_live::space::EXIT_PEER_FAILED`]).
//!
//! # Live traces vs TracingSpace traces
//!
//! Both record the same apps in the same format, but they are not the same measurement:
//! - **Computation** in a live trace is wall time between DSM events of a worker (it includes
//!   time the worker was descheduled and the cost of handlers that ran on its CPU); the
//!   tracing space uses the thread's CPU clock. With more threads than CPUs, live computation
//!   is therefore larger.
//! - **Faults** in a live trace are real protection faults of the workers; the tracing space
//!   records a fault when a rank touches, through a range the app announces with
//!   `SharedSpace::access`, a 4 KiB minipage it has no valid copy of in its software
//!   emulation. The two start from different states: the emulation starts every minipage
//!   writable at its manager (`mp % ranks`) and ignores setup, while live, rank 0's untraced
//!   setup writes really fault and move the minipages it initialised to rank 0, so the first
//!   parallel touches of other ranks fault where the emulation says the data is already
//!   theirs (and vice versa). Announced ranges that are wider or narrower than the real
//!   accesses make further differences.
//! - **Barriers and locks** are the app's own calls in both and agree exactly.
//!
//! The test `trace_totals_of_live_and_tracing_runs_agree_on_synchronisation` (tests/live.rs)
//! prints both totals and asserts equal barrier and lock records and fault counts within a
//! factor of 4 (one run's numbers: docs/performance.md, "Live DSM").

#![warn(missing_docs)]

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use unpinned_dsm::space::SharedSpace;
use unpinned_dsm_apps::{create, names, Input};
use unpinned_dsm_live::{launch_space, HandlerContext, ProtectMode, SpaceConfig};

/// Exit code: the app's answer differs from the sequential one, or the app / space failed.
pub const EXIT_WRONG: i32 = 1;
/// Exit code: bad command line.
pub const EXIT_USAGE: i32 = 2;

static BINARY: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Run ranks with this `unpinned-dsm-run` binary instead of the one [`command`] finds (a test
/// harness passes its `CARGO_BIN_EXE_unpinned-dsm-run`). The first call wins.
pub fn set_binary(path: impl Into<PathBuf>) {
    let _ = BINARY.set(path.into());
}

/// The command line of a rank.
#[derive(Clone, Debug, PartialEq)]
pub struct RunArgs {
    /// Registry name of the app.
    pub app: String,
    /// Input size.
    pub input: Input,
    /// Worker threads per rank.
    pub threads: usize,
    /// Handler context.
    pub context: HandlerContext,
    /// Protection mechanism.
    pub protect: ProtectMode,
    /// Record the trace into this file.
    pub trace: Option<PathBuf>,
    /// Write rank 0's [`RunResult`] as JSON into this file.
    pub result: Option<PathBuf>,
    /// Test of failure handling: this rank exits right after setup, without a word.
    pub die_rank: Option<usize>,
}

/// Usage text.
pub const USAGE: &str = "usage: unpinned-dsm-run APP [--input small|medium|spec] [--threads T] \
[--context progress|deferred|signal|polling] [--protect batched|per-page] [--trace FILE] \
[--result FILE] [--die-rank R]   (run under `unpinned run -n N --`)";

impl RunArgs {
    /// Parses the arguments after the program name. Defaults: small input, 1 thread,
    /// `progress`, batched protection.
    pub fn parse(args: &[String]) -> Result<RunArgs, String> {
        let mut it = args.iter();
        let app = it.next().ok_or("missing APP")?.clone();
        if !names().contains(&app.as_str()) {
            return Err(format!(
                "unknown application {app:?} (known: {})",
                names().join(", ")
            ));
        }
        let mut a = RunArgs {
            app,
            input: Input::Small,
            threads: 1,
            context: HandlerContext::Progress,
            protect: ProtectMode::Batched,
            trace: None,
            result: None,
            die_rank: None,
        };
        while let Some(flag) = it.next() {
            let v = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
            match flag.as_str() {
                "--input" => a.input = v.parse()?,
                "--threads" => {
                    a.threads = v
                        .parse()
                        .map_err(|_| format!("--threads {v:?}: not a number"))?;
                    if a.threads == 0 || a.threads > 64 {
                        return Err(format!("--threads {v}: use 1..=64"));
                    }
                }
                "--context" => a.context = v.parse()?,
                "--protect" => a.protect = v.parse().map_err(|e| format!("--protect: {e}"))?,
                "--trace" => a.trace = Some(v.into()),
                "--result" => a.result = Some(v.into()),
                "--die-rank" => {
                    a.die_rank = Some(
                        v.parse()
                            .map_err(|_| format!("--die-rank {v:?}: not a number"))?,
                    )
                }
                _ => return Err(format!("unknown option {flag:?}")),
            }
        }
        Ok(a)
    }

    /// The arguments that [`RunArgs::parse`] turns back into `self`.
    pub fn to_args(&self) -> Vec<String> {
        let mut v = vec![
            self.app.clone(),
            "--input".into(),
            format!("{:?}", self.input).to_lowercase(),
            "--threads".into(),
            self.threads.to_string(),
            "--context".into(),
            self.context.name().into(),
            "--protect".into(),
            match self.protect {
                ProtectMode::Batched => "batched".into(),
                ProtectMode::PerPage => "per-page".into(),
            },
        ];
        for (flag, p) in [("--trace", &self.trace), ("--result", &self.result)] {
            if let Some(p) = p {
                v.push(flag.into());
                v.push(p.display().to_string());
            }
        }
        if let Some(r) = self.die_rank {
            v.push("--die-rank".into());
            v.push(r.to_string());
        }
        v
    }
}

/// What rank 0 reports about a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// App name.
    pub app: String,
    /// Input size (`small`, `medium`, `spec`).
    pub input: String,
    /// Handler context.
    pub context: String,
    /// Ranks (nodes).
    pub ranks: u32,
    /// Worker threads per rank.
    pub threads_per_rank: u32,
    /// Parallel phase on rank 0, seconds.
    pub time_s: f64,
    /// The answer equals the sequential reference.
    pub correct: bool,
    /// The check's complaint, if any.
    pub error: Option<String>,
    /// Read faults, all ranks.
    pub read_faults: u64,
    /// Write faults, all ranks.
    pub write_faults: u64,
    /// Barrier episodes (as counted by rank 0).
    pub barriers: u64,
    /// Lock acquisitions, all ranks.
    pub locks: u64,
    /// Control messages sent, all ranks.
    pub messages: u64,
    /// Minipage RDMA writes + reads, all ranks.
    pub data_transfers: u64,
    /// Bytes moved by them.
    pub data_bytes: u64,
}

impl RunResult {
    /// Faults of all ranks.
    pub fn faults(&self) -> u64 {
        self.read_faults + self.write_faults
    }

    /// One human-readable line.
    pub fn line(&self) -> String {
        format!(
            "{} ({}) on {} ranks x {} threads, context {}: {} in {:.4} s; faults {} (r {} / w {}), barriers {}, locks {}, messages {}, data transfers {} ({} KiB)",
            self.app,
            self.input,
            self.ranks,
            self.threads_per_rank,
            self.context,
            if self.correct { "correct".to_string() } else { format!("WRONG ({})", self.error.as_deref().unwrap_or("?")) },
            self.time_s,
            self.faults(),
            self.read_faults,
            self.write_faults,
            self.barriers,
            self.locks,
            self.messages,
            self.data_transfers,
            self.data_bytes / 1024,
        )
    }
}

/// File name of a run's trace in a trace directory: `APP-NODESxTHREADS.jsonl` (what
/// `unpinned live dsm-apps` writes and `unpinned sim dsm-apps --set exp.traces=DIR` reads).
pub fn trace_file(dir: &Path, app: &str, ranks: u32, threads: u32) -> PathBuf {
    dir.join(format!("{app}-{ranks}x{threads}.jsonl"))
}

/// The run's result next to its trace: `APP-NODESxTHREADS.json`.
pub fn result_file(dir: &Path, app: &str, ranks: u32, threads: u32) -> PathBuf {
    dir.join(format!("{app}-{ranks}x{threads}.json"))
}

/// The program and leading arguments a launcher starts on every rank to run `unpinned-dsm-run`
/// (followed by [`RunArgs::to_args`]): the one given to [`set_binary`], if any; the current
/// executable with `dsm-run` if it is the `unpinned` tool (`unpinned dsm-run` is the same program); else the
/// `unpinned-dsm-run` binary next to the current executable or one directory up (test
/// binaries live in `target/*/deps`).
pub fn command() -> Result<(PathBuf, Vec<String>), String> {
    if let Some(p) = BINARY.get() {
        return Ok((p.clone(), Vec::new()));
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    if exe.file_name().is_some_and(|n| n == "unpinned") {
        return Ok((exe, vec!["dsm-run".into()]));
    }
    let dir = exe
        .parent()
        .ok_or("no directory of the current executable")?;
    for d in [Some(dir), dir.parent()].into_iter().flatten() {
        let p = d.join("unpinned-dsm-run");
        if p.is_file() {
            return Ok((p, Vec::new()));
        }
    }
    Err(format!(
        "unpinned-dsm-run not found next to {} (build it: cargo build -p unpinned-dsm-run)",
        exe.display()
    ))
}

/// The whole program of a rank (`unpinned-dsm-run ARGS` and `unpinned dsm-run ARGS`): parse,
/// run, print rank 0's line, write `--result`; returns the exit code.
pub fn main_with(args: &[String]) -> i32 {
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        return 0;
    }
    if args.first().map(String::as_str) == Some("--burn") {
        match args
            .get(1)
            .and_then(|v| v.parse::<f64>().ok())
            .filter(|s| *s > 0.0)
        {
            Some(s) => {
                burn(s);
                return 0;
            }
            None => {
                eprintln!("unpinned-dsm-run: --burn SECONDS (positive)");
                return EXIT_USAGE;
            }
        }
    }
    let a = match RunArgs::parse(args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("unpinned-dsm-run: {e}\n{USAGE}");
            return EXIT_USAGE;
        }
    };
    match run_rank(&a) {
        Ok(None) => 0,
        Ok(Some(r)) => {
            println!("{}", r.line());
            if let Some(p) = &a.result {
                let text = serde_json::to_string_pretty(&r).expect("a result serialises");
                if let Err(e) = std::fs::write(p, text) {
                    eprintln!("unpinned-dsm-run: writing {}: {e}", p.display());
                    return EXIT_WRONG;
                }
            }
            if r.correct {
                0
            } else {
                EXIT_WRONG
            }
        }
        Err(e) => {
            eprintln!("unpinned-dsm-run ({}): {e}", a.app);
            EXIT_WRONG
        }
    }
}

/// `--burn SECONDS`: a CPU-bound process (the extra load of `dsm-load`), spinning until
/// killed, for at most SECONDS, or until its parent is gone (an interrupted experiment must
/// not leave spinning orphans).
pub fn burn(seconds: f64) {
    let t0 = Instant::now();
    let parent = std::os::unix::process::parent_id();
    let mut x = 1u64;
    while t0.elapsed().as_secs_f64() < seconds && std::os::unix::process::parent_id() == parent {
        for _ in 0..100_000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
}

/// Per-rank counters, as gathered (fixed little-endian layout).
const STAT_WORDS: usize = 8;

fn encode(v: [u64; STAT_WORDS]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn decode(b: &[u8]) -> Result<[u64; STAT_WORDS], String> {
    if b.len() != STAT_WORDS * 8 {
        return Err(format!(
            "a rank sent {} bytes of counters, expected {}",
            b.len(),
            STAT_WORDS * 8
        ));
    }
    let mut v = [0u64; STAT_WORDS];
    for (i, c) in b.chunks_exact(8).enumerate() {
        v[i] = u64::from_le_bytes(c.try_into().expect("8 bytes"));
    }
    Ok(v)
}

/// The program of one rank (inside `unpinned run`): `Ok(Some(result))` on rank 0,
/// `Ok(None)` elsewhere; `Err` for setup or space failures. A wrong answer is a result with
/// `correct == false`, not an error. A dead peer ends the process with exit code 75 inside
/// the DSM.
pub fn run_rank(a: &RunArgs) -> Result<Option<RunResult>, String> {
    // The flags first; `dsm.*` overrides of the job (`--set`, `UNPINNED_SET`) go on top.
    let mut cfg = SpaceConfig::new(a.threads);
    cfg.context = a.context;
    cfg.protect = a.protect;
    if a.trace.is_some() {
        cfg.trace = a.trace.clone();
    }
    cfg.app = a.app.clone();
    let space = launch_space(cfg).map_err(|e| e.to_string())?;
    let mut app = create(&a.app, a.input).map_err(|e| e.to_string())?;
    // Collective and deterministic: every rank gets the same error for an impossible input.
    app.setup(&space).map_err(|e| e.to_string())?;
    // Nobody starts before rank 0 has initialised the data (the apps' work assumes it).
    space.runtime().barrier().map_err(|e| e.to_string())?;
    if a.die_rank == Some(space.rank()) {
        // A crash after setup: no finish, no goodbye (the others must fail, not hang).
        std::process::exit(3);
    }
    let t0 = Instant::now();
    let app_ref: &dyn unpinned_dsm_apps::App = app.as_ref();
    space
        .spawn_workers(|s, w| app_ref.work(s, w))
        .map_err(|e| e.0)?;
    let time_s = t0.elapsed().as_secs_f64();
    // Counters of the parallel phase only (the check below faults too).
    let st = space.stats();
    let verdict = if space.rank() == 0 {
        app.check(&space)
    } else {
        Ok(())
    };
    let mine = encode([
        st.read_faults,
        st.write_faults,
        st.barriers,
        st.locks,
        st.endpoint.sent,
        st.endpoint.data_writes + st.endpoint.data_reads,
        st.endpoint.data_bytes,
        0,
    ]);
    let all = space
        .runtime()
        .all_gather(&mine)
        .map_err(|e| e.to_string())?;
    let rank = space.rank();
    let (ranks, threads) = (space.ranks() as u32, space.threads_per_rank() as u32);
    space.finish().map_err(|e| e.0)?;
    if rank != 0 {
        return Ok(None);
    }
    let mut sum = [0u64; STAT_WORDS];
    for b in &all {
        let v = decode(b)?;
        for (s, x) in sum.iter_mut().zip(v) {
            *s += x;
        }
    }
    let r0 = decode(&all[0])?;
    Ok(Some(RunResult {
        app: a.app.clone(),
        input: format!("{:?}", a.input).to_lowercase(),
        context: a.context.name().into(),
        ranks,
        threads_per_rank: threads,
        time_s,
        correct: verdict.is_ok(),
        error: verdict.err(),
        read_faults: sum[0],
        write_faults: sum[1],
        barriers: r0[2],
        locks: sum[3],
        messages: sum[4],
        data_transfers: sum[5],
        data_bytes: sum[6],
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn arguments_round_trip_and_bad_ones_are_errors() {
        let a = RunArgs::parse(&s(&[
            "lu",
            "--threads",
            "2",
            "--context",
            "signal",
            "--trace",
            "/tmp/t",
            "--input",
            "medium",
        ]))
        .unwrap();
        assert_eq!(
            (a.threads, a.context, a.input),
            (2, HandlerContext::Signal, Input::Medium)
        );
        assert_eq!(RunArgs::parse(&a.to_args()).unwrap(), a);
        for bad in [
            &["nope"][..],
            &[],
            &["sor", "--threads"],
            &["sor", "--threads", "0"],
            &["sor", "--context", "isr"],
            &["sor", "--frob", "1"],
            &["sor", "--input", "huge"],
        ] {
            assert!(RunArgs::parse(&s(bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn counters_decode_only_from_the_right_length() {
        let v = [1, 2, 3, 4, 5, 6, 7, 8];
        assert_eq!(decode(&encode(v)).unwrap(), v);
        assert!(decode(&[0; 9]).is_err());
    }
}
