//! `unpinned vopr [--protocol P] [--seeds A..B | --seed S] [--jobs N]`: the simulation
//! harness of every protocol (docs/vopr.md). Each seed picks a swarm, runs a safety phase with
//! faults on and a liveness phase with faults off, and the kernel's checkers judge it.
//! Failures are collected; each failing seed is printed with the command that reruns it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::Instant as WallClock;

use clap::Args;
use unpinned_sim::vopr::{self, Protocol, SeedReport, Summary};

use crate::error::CliError;

/// Arguments of `unpinned vopr`.
#[derive(Args, Debug)]
pub struct VoprArgs {
    /// Protocol to test: a name of the registry (part, rc, ...; an unknown name prints the
    /// list), or `all`.
    #[arg(long, default_value = "all")]
    pub protocol: String,
    /// Seeds `A..B` (B excluded); default `0..100`.
    #[arg(long, value_name = "A..B", conflicts_with = "seed")]
    pub seeds: Option<String>,
    /// One seed: prints its swarm, its outcome and every violation.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Seeds run in parallel (threads).
    #[arg(long, default_value_t = 1)]
    pub jobs: usize,
    /// No progress lines.
    #[arg(long, short)]
    pub quiet: bool,
}

fn parse_range(s: &str) -> Result<std::ops::Range<u64>, CliError> {
    let bad = || {
        CliError::Usage(format!(
            "--seeds {s:?}: expected A..B, e.g. --seeds 0..1000"
        ))
    };
    let (a, b) = s.split_once("..").ok_or_else(bad)?;
    let (a, b): (u64, u64) = (
        a.trim().parse().map_err(|_| bad())?,
        b.trim().parse().map_err(|_| bad())?,
    );
    if a >= b {
        return Err(bad());
    }
    Ok(a..b)
}

/// Run `unpinned vopr`.
pub fn run(a: &VoprArgs) -> Result<(), CliError> {
    let selected: Vec<&'static Protocol> = if a.protocol == "all" {
        vopr::protocols().iter().collect()
    } else {
        let names: Vec<_> = vopr::protocols().iter().map(|p| p.name).collect();
        vec![vopr::protocol(&a.protocol).ok_or_else(|| {
            CliError::Usage(format!(
                "unknown protocol {:?}: use one of {} or all",
                a.protocol,
                names.join(", ")
            ))
        })?]
    };
    if a.jobs == 0 {
        return Err(CliError::Usage("--jobs must be at least 1".into()));
    }
    if let Some(seed) = a.seed {
        let mut failed = 0;
        for p in &selected {
            let r = (p.run)(seed);
            print_one(&r);
            failed += u64::from(!r.passed());
        }
        return if failed == 0 {
            Ok(())
        } else {
            Err(CliError::Run(format!(
                "seed {seed} failed ({failed} protocol(s))"
            )))
        };
    }
    let range = match &a.seeds {
        Some(s) => parse_range(s)?,
        None => 0..100,
    };
    let mut failing = 0;
    for p in &selected {
        let started = WallClock::now();
        let s = run_parallel(p, range.clone(), a.jobs, a.quiet);
        let minutes = started.elapsed().as_secs_f64() / 60.0;
        print_summary(p, &s, minutes);
        failing += s.failures.len();
    }
    if failing > 0 {
        Err(CliError::Run(format!(
            "{failing} failing seed(s); rerun each with the command printed above"
        )))
    } else {
        Ok(())
    }
}

/// Seeds of one protocol over `jobs` threads; progress on stderr about once a second, each
/// failure at once with its rerun command.
fn run_parallel(p: &Protocol, range: std::ops::Range<u64>, jobs: usize, quiet: bool) -> Summary {
    let next = AtomicU64::new(range.start);
    let (tx, rx) = mpsc::channel::<SeedReport>();
    let total = range.end - range.start;
    let started = WallClock::now();
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            let tx = tx.clone();
            let next = &next;
            let end = range.end;
            scope.spawn(move || loop {
                let seed = next.fetch_add(1, Ordering::Relaxed);
                if seed >= end {
                    break;
                }
                if tx.send((p.run)(seed)).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        let mut last = WallClock::now();
        let mut done = 0u64;
        let mut failures = 0u64;
        let reports = std::iter::from_fn(|| rx.recv().ok()).inspect(|r| {
            done += 1;
            if !r.passed() {
                failures += 1;
                eprintln!(
                    "{} seed {} FAILED ({} violation(s)): {}\n  rerun: {}",
                    p.name,
                    r.seed,
                    r.violation_count,
                    r.violations
                        .first()
                        .map(|v| v.to_string())
                        .unwrap_or_default(),
                    vopr::rerun_command(p.name, r.seed)
                );
            }
            if !quiet && (last.elapsed().as_secs_f64() >= 1.0 || done == total) {
                last = WallClock::now();
                let rate = done as f64 / started.elapsed().as_secs_f64().max(1e-9) * 60.0;
                eprintln!(
                    "{}: {done}/{total} seeds, {failures} failing, {rate:.0} seeds/min",
                    p.name
                );
            }
        });
        let mut s = vopr::summarize(reports);
        s.failures.sort_by_key(|r| r.seed);
        s
    })
}

fn print_summary(p: &Protocol, s: &Summary, minutes: f64) {
    let t = &s.tally;
    let f = &s.faults;
    println!(
        "{}: {} seeds, {} failing; requests {} (ok {}, failed by design {}, transport {}, other {}); \
         faults {} of {} packets (lost {}, duplicated {}, delayed {}, corrupted {}); evictions {}; \
         events {}; {:.0} seeds/min",
        p.name,
        s.seeds,
        s.failures.len(),
        t.posted,
        t.ok,
        t.failed_by_design,
        t.failed_transport,
        t.failed_other,
        f.faults(),
        f.packets,
        f.lost,
        f.duplicated,
        f.delayed,
        f.corrupted,
        s.evictions,
        s.events,
        s.seeds as f64 / minutes.max(1e-9)
    );
    for r in &s.failures {
        println!(
            "  seed {}: rerun: {}",
            r.seed,
            vopr::rerun_command(p.name, r.seed)
        );
    }
}

fn print_one(r: &SeedReport) {
    let t = &r.tally;
    println!("{} seed {}: {}", r.protocol, r.seed, r.swarm);
    println!(
        "  requests {} (ok {}, failed by design {}, transport {}, other {}); {} faults of {} packets; {} evictions; {} events; trace hash {:016x}",
        t.posted,
        t.ok,
        t.failed_by_design,
        t.failed_transport,
        t.failed_other,
        r.faults.faults(),
        r.faults.packets,
        r.evictions,
        r.events,
        r.trace_hash
    );
    if r.passed() {
        println!("  passed");
    } else {
        println!("  {} violation(s):", r.violation_count);
        for v in &r.violations {
            println!("  {v}");
        }
    }
}
