//! The VOPR over every registered protocol: a few hundred seeds each (the workspace's seed
//! convention, [`unpinned_testkit`]: `UNPINNED_TEST_SEEDS=N` for a soak, `UNPINNED_TEST_SEED=S`
//! for one seed); every failing seed is listed with its rerun commands, not just the first.

use unpinned_sim::kernel::LinkStats;
use unpinned_sim::vopr::{self, SeedReport};

const SEEDS: u64 = 300;

fn run_protocol(name: &str) -> Vec<SeedReport> {
    let p = vopr::protocol(name).expect("registered");
    let mut reports = Vec::new();
    let mut failing = Vec::new();
    for seed in unpinned_testkit::seeds(SEEDS) {
        let r = (p.run)(seed);
        if !r.passed() {
            failing.push(format!(
                "seed {seed}: {}\n  swarm: {}\n  rerun: {}={seed} cargo test -p unpinned-sim --test vopr {name}, or {}",
                r.violations.iter().map(|v| v.to_string()).collect::<Vec<_>>().join("\n  "),
                r.swarm,
                unpinned_testkit::ENV_SEED,
                vopr::rerun_command(name, seed),
            ));
        }
        reports.push(r);
    }
    // One line per protocol (shown with --nocapture: a soak's totals).
    let mut faults = LinkStats::default();
    for r in &reports {
        faults.add(&r.faults);
    }
    eprintln!(
        "{name}: {} seeds, {} failing, requests {}, faults {} of {} packets (lost {}, duplicated {}, delayed {}, corrupted {}), evictions {}",
        reports.len(),
        failing.len(),
        reports.iter().map(|r| r.tally.posted).sum::<u64>(),
        faults.faults(),
        faults.packets,
        faults.lost,
        faults.duplicated,
        faults.delayed,
        faults.corrupted,
        reports.iter().map(|r| r.evictions).sum::<u64>(),
    );
    assert!(
        failing.is_empty(),
        "{} failing seed(s) of {name}:\n{}",
        failing.len(),
        failing.join("\n")
    );
    reports
}

/// The swarm exercises both sides: requests that succeed, requests that fail by design, and
/// injected faults (a harness whose requests all failed, or that never injected a fault, would
/// pass its checkers vacuously).
fn assert_exercised(reports: &[SeedReport]) {
    if reports.len() < 50 {
        return; // a single-seed rerun
    }
    let ok: u64 = reports.iter().map(|r| r.tally.ok).sum();
    let by_design: u64 = reports.iter().map(|r| r.tally.failed_by_design).sum();
    let posted: u64 = reports.iter().map(|r| r.tally.posted).sum();
    let faults: u64 = reports.iter().map(|r| r.faults.faults()).sum();
    let evictions: u64 = reports.iter().map(|r| r.evictions).sum();
    assert!(ok > posted / 2, "{ok} of {posted} requests succeeded");
    assert!(
        by_design > posted / 10,
        "{by_design} of {posted} failed by design"
    );
    assert!(
        faults > 100 && evictions > 50,
        "{faults} faults, {evictions} evictions"
    );
}

#[test]
fn part() {
    assert_exercised(&run_protocol("part"));
}

#[test]
fn rc() {
    assert_exercised(&run_protocol("rc"));
}

#[test]
fn aa() {
    assert_exercised(&run_protocol("aa"));
}

/// DSM accesses are not designed to fail: every one must complete, under faults too.
#[test]
fn dsm() {
    let reports = run_protocol("dsm");
    if reports.len() < 50 {
        return;
    }
    let posted: u64 = reports.iter().map(|r| r.tally.posted).sum();
    let ok: u64 = reports.iter().map(|r| r.tally.ok).sum();
    let faults: u64 = reports.iter().map(|r| r.faults.faults()).sum();
    let evictions: u64 = reports.iter().map(|r| r.evictions).sum();
    assert_eq!(ok, posted, "every access completes");
    assert!(
        faults > 100 && evictions > 50,
        "{faults} faults, {evictions} evictions"
    );
}

#[test]
fn same_seed_same_trace_hash() {
    for p in vopr::protocols() {
        for seed in [1, 2] {
            let (a, b) = ((p.run)(seed), (p.run)(seed));
            assert_eq!(
                (a.trace_hash, a.events, a.tally),
                (b.trace_hash, b.events, b.tally),
                "{} seed {seed} is not deterministic",
                p.name
            );
        }
        assert_ne!((p.run)(1).trace_hash, (p.run)(2).trace_hash, "{}", p.name);
    }
}

/// Seed 78270 of the RC swarm (ConnectX-6, the software-timer fix on, 7 % packet loss): the
/// fix's dummies piled up without limit (7019 of them, 11 M packets and 1777 s simulated for
/// 16 requests, no progress within a phase's 5 M events) until the fix posted one dummy per
/// silence (crates/ib `fix.rs`). It must pass, and quickly.
#[test]
fn rc_seed_78270_dummies_under_loss() {
    let r = vopr::rc::run(78270);
    assert!(r.swarm.contains("fix true"), "swarm: {}", r.swarm);
    assert!(r.faults.lost > 0, "swarm: {}", r.swarm);
    assert!(
        r.passed(),
        "{}",
        r.violations
            .iter()
            .map(|v| v.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(r.events < 500_000, "{} events", r.events);
}
