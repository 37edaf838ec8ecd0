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
        "{name}: {} seeds, {} failing, requests {} ({} failed for a transport reason), faults {} of {} packets (lost {}, duplicated {}, delayed {}, corrupted {}), evictions {}",
        reports.len(),
        failing.len(),
        reports.iter().map(|r| r.tally.posted).sum::<u64>(),
        reports.iter().map(|r| r.tally.failed_transport).sum::<u64>(),
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

/// Beside the transport's checks: the adaptive page-in policy and early / kernel-sent ERRs
/// are in the swarm (they had randomized tests of their own before the VOPR).
#[test]
fn part() {
    let reports = run_protocol("part");
    assert_exercised(&reports);
    if reports.len() >= 50 {
        for what in ["Adaptive", "early err true", "err from kernel"] {
            let n = reports.iter().filter(|r| r.swarm.contains(what)).count();
            assert!(n >= 10, "only {n} seeds with {what:?}");
        }
    }
}

/// Beside the transport's checks: retries run out now and then (RETRY_EXC_ERR, then the
/// queue pair's flushes, which the `flush` checker judges).
#[test]
fn rc() {
    let reports = run_protocol("rc");
    assert_exercised(&reports);
    let transport: u64 = reports.iter().map(|r| r.tally.failed_transport).sum();
    assert!(
        reports.len() < 50 || transport > 10,
        "{transport} requests failed for a transport reason"
    );
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

/// The simulator's speed work must not change a single event: fixed swarms on the PART world
/// (its engines, links with loss, duplication, reordering, corruption and delay, page
/// evictions during transfers, both retransmission policies, the page-in policies) keep the
/// event counts and trace hashes (every packet's bytes, checksums included) recorded here.
///
/// The swarms are given in full (the AA and DSM drivers' `run_config`), not drawn from a
/// seed, so a change of what a seed draws leaves them alone. A change of the model (a protocol
/// or cost change) or of those drivers legitimately changes them: then record the new values
/// (`cargo test -p unpinned-sim --test vopr golden -- --nocapture` prints them) and say so in
/// the commit. A change meant only to be faster must leave them alone.
#[test]
fn golden_swarms_keep_their_trace_hashes() {
    use unpinned_core::os::PageInPolicy;
    use unpinned_core::profile::RetransmitPolicy;
    use unpinned_sim::vopr::aa::{self, AaSwarmConfig};
    use unpinned_sim::vopr::dsm::{self, DsmSwarmConfig};
    use unpinned_sim::FaultConfig;

    let policies = [PageInPolicy::Pio, PageInPolicy::Pi4, PageInPolicy::Pia];
    let mut got = Vec::new();
    let (mut faults, mut evictions) = (0, 0);
    for (i, retransmit) in RetransmitPolicy::ALL.into_iter().enumerate() {
        for (j, rate) in [0.0, 0.01, 0.03].into_iter().enumerate() {
            let seed = (i * 3 + j) as u64;
            let policy = policies[(i + j) % 3];
            let r = aa::run_config(AaSwarmConfig {
                seed,
                nodes: 2 + (seed % 3) as u32,
                pages: 10,
                requests: 40,
                log_bytes: [4096, 1 << 16],
                drain_every_us: 10,
                faults: FaultConfig::uniform(rate),
                safety_us: 600,
                evictions: 8,
                retransmit,
                policy,
            });
            assert!(r.passed(), "aa {seed}: {:?}", r.violations);
            (faults, evictions) = (faults + r.faults.faults(), evictions + r.evictions);
            got.push(("aa", seed, r.events, r.trace_hash));
            let r = dsm::run_config(DsmSwarmConfig {
                seed,
                nodes: 2 + (seed % 3) as u32,
                minipages: 3,
                mp_bytes: [64, 4096][j % 2],
                threads: 3,
                ops_per_thread: 24,
                slots: 8,
                rdma_read: j != 1,
                faults: FaultConfig::uniform(rate),
                safety_us: 1_000,
                evictions: 8,
                retransmit,
                policy,
            });
            assert!(r.passed(), "dsm {seed}: {:?}", r.violations);
            (faults, evictions) = (faults + r.faults.faults(), evictions + r.evictions);
            got.push(("dsm", seed, r.events, r.trace_hash));
        }
    }
    assert!(
        faults > 0 && evictions > 0,
        "{faults} faults, {evictions} evictions"
    );
    for g in &got {
        println!("(\"{}\", {}, {}, {:#018x}),", g.0, g.1, g.2, g.3);
    }
    assert_eq!(
        got, GOLDEN,
        "a fixed swarm changed its event count or trace hash (see this test's doc)"
    );
}

/// (swarm, seed, events, trace hash).
const GOLDEN: [(&str, u64, u64, u64); 12] = [
    ("aa", 0, 579, 0x5440763aa66036fb),
    ("dsm", 0, 1556, 0x1a1cc486c52d8740),
    ("aa", 1, 606, 0x4098cf35839ecf9f),
    ("dsm", 1, 5478, 0x4c38ed3469d2f633),
    ("aa", 2, 594, 0xd3a2e4c7dfa049cb),
    ("dsm", 2, 5655, 0xf65541364db69187),
    ("aa", 3, 484, 0xd9744742b7275688),
    ("dsm", 3, 1675, 0xc950c6f91af8bc19),
    ("aa", 4, 661, 0x25bf8c7d2f9246ca),
    ("dsm", 4, 5156, 0x4e1eaacfc54fc9a0),
    ("aa", 5, 779, 0xf149d86b9ff155a2),
    ("dsm", 5, 4878, 0x065f4161df853f7e),
];

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
