//! End-to-end tests of the live DSM: real processes launched like `unpinned run`, real page
//! faults, the PART runtime moving pages.
//!
//! Litmus iterations per run: `DSM_LIVE_LITMUS_ITERS` (default 60; each iteration is a fresh
//! pair of variables, two barriers and a few faults).

use std::time::Duration;

use unpinned_live::launch::{launch, LaunchOptions, LaunchReport};

fn run(ranks: u32, args: &[&str], env: &[(&str, &str)]) -> LaunchReport {
    let mut o = LaunchOptions::new(ranks, env!("CARGO_BIN_EXE_dsm-live-selftest"));
    o.args = args.iter().map(|s| s.to_string()).collect();
    o.env = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    o.timeout = Duration::from_secs(90);
    o.grace = Duration::from_secs(10);
    launch(&o).expect("launch")
}

fn ok(r: &LaunchReport, what: &str) {
    assert!(r.success(), "{what}: {:?}", r.failures());
}

fn litmus_iters() -> String {
    std::env::var("DSM_LIVE_LITMUS_ITERS").unwrap_or_else(|_| "60".into())
}

fn seed() -> String {
    let s = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64;
    let s = std::env::var("DSM_LIVE_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(s);
    eprintln!("seed {s} (rerun with DSM_LIVE_SEED={s})");
    s.to_string()
}

#[test]
fn counter_under_a_lock_is_exact_on_1_2_and_4_ranks() {
    for (ranks, threads) in [(1, 2), (2, 2), (4, 1)] {
        let r = run(ranks, &["counter", &threads.to_string(), "40"], &[]);
        ok(&r, &format!("counter on {ranks} ranks x {threads} threads"));
    }
}

#[test]
fn litmus_tests_never_show_a_forbidden_outcome_in_any_context() {
    let iters = litmus_iters();
    for (kind, ctx) in [("mp", "progress"), ("sb", "deferred"), ("iriw", "signal"), ("mp", "polling"), ("sb", "progress"), ("iriw", "polling")] {
        let s = seed();
        let r = run(2, &["litmus", kind, &iters, &s], &[("DSM_LIVE_CONTEXT", ctx)]);
        ok(&r, &format!("litmus {kind} in context {ctx} (seed {s})"));
    }
}

#[test]
fn per_page_protection_works_too() {
    let r = run(2, &["counter", "1", "30"], &[("DSM_LIVE_PROTECT", "per-page"), ("DSM_LIVE_CONTEXT", "signal")]);
    ok(&r, "counter with per-page mprotect");
}

#[test]
fn a_dead_rank_makes_the_others_fail_clearly_not_hang() {
    let r = run(2, &["die"], &[]);
    assert!(!r.timed_out, "the job hung");
    let r0 = &r.ranks[0];
    assert!(!r0.killed_by_launcher, "rank 0 was still waiting after the grace period: {:?}", r.failures());
    assert_eq!(r0.status.code(), Some(75), "rank 0 must exit with the peer-failure code: {:?}", r.failures());
    assert_eq!(r.ranks[1].status.code(), Some(3));
}
