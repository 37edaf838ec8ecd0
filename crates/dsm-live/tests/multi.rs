//! End-to-end tests of the live DSM: real processes launched like `unpinned run`, real page
//! faults, the PART runtime moving pages.
//!
//! Litmus iterations per run: `UNPINNED_TEST_LITMUS_ITERS` (default 60; each iteration is a
//! fresh pair of variables, two barriers and a few faults). The litmus programs' seed follows
//! the workspace convention ([`unpinned_testkit`]: `UNPINNED_TEST_SEED`, default 1).

use std::time::Duration;

use unpinned_live::launch::{launch, LaunchOptions, LaunchReport};

/// Launch `ranks` selftests with `args` and the configuration overrides `sets` (`dsm.KEY=V`).
fn run(ranks: u32, args: &[&str], sets: &[&str]) -> LaunchReport {
    let mut o = LaunchOptions::new(ranks, env!("CARGO_BIN_EXE_dsm-live-selftest"));
    o.args = args.iter().map(|s| s.to_string()).collect();
    o.sets = sets.iter().map(|s| s.to_string()).collect();
    o.timeout = Duration::from_secs(90);
    o.grace = Duration::from_secs(10);
    launch(&o).expect("launch")
}

fn ok(r: &LaunchReport, what: &str) {
    assert!(r.success(), "{what}: {:?}", r.failures());
}

fn litmus_iters() -> String {
    unpinned_testkit::number_or("UNPINNED_TEST_LITMUS_ITERS", 60).to_string()
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
    for (kind, ctx) in [
        ("mp", "progress"),
        ("sb", "deferred"),
        ("iriw", "signal"),
        ("mp", "polling"),
        ("sb", "progress"),
        ("iriw", "polling"),
    ] {
        let s = unpinned_testkit::seed(
            1,
            "cargo test -p unpinned-dsm-live --test multi litmus_tests",
        )
        .to_string();
        let r = run(
            2,
            &["litmus", kind, &iters, &s],
            &[&format!("dsm.context={ctx}")],
        );
        ok(&r, &format!("litmus {kind} in context {ctx} (seed {s})"));
    }
}

#[test]
fn per_page_protection_works_too() {
    let r = run(
        2,
        &["counter", "1", "30"],
        &["dsm.protect=per-page", "dsm.context=signal"],
    );
    ok(&r, "counter with per-page mprotect");
}

/// DSM page faults and the runtime's fault-safe copies of unmapped or inaccessible buffers in
/// one process: each SIGSEGV handler passes on the faults that are not its own.
#[test]
fn dsm_faults_and_fault_safe_copies_share_sigsegv() {
    let r = run(2, &["safecopy"], &[]);
    ok(
        &r,
        "DSM faults between fault-safe copies of unmapped buffers",
    );
}

#[test]
fn a_dead_rank_makes_the_others_fail_clearly_not_hang() {
    let r = run(2, &["die"], &[]);
    assert!(!r.timed_out, "the job hung");
    let r0 = &r.ranks[0];
    assert!(
        !r0.killed_by_launcher,
        "rank 0 was still waiting after the grace period: {:?}",
        r.failures()
    );
    assert_eq!(
        r0.status.code(),
        Some(75),
        "rank 0 must exit with the peer-failure code: {:?}",
        r.failures()
    );
    assert_eq!(r.ranks[1].status.code(), Some(3));
}

#[test]
fn trace_records_every_workers_faults_barriers_and_locks() {
    use unpinned_dsm::trace::{TraceHeader, TraceOp, TraceRecord};
    let path = std::env::temp_dir().join(format!("dsm-live-trace-{}.jsonl", std::process::id()));
    let p = path.display().to_string();
    let r = run(2, &["counter", "2", "10"], &[&format!("dsm.trace={p}")]);
    ok(&r, "counter with a trace");
    let text = std::fs::read_to_string(&path).expect("the merged trace file");
    let _ = std::fs::remove_file(&path);
    let mut lines = text.lines();
    let h: TraceHeader =
        serde_json::from_str(lines.next().expect("header")).expect("header parses");
    assert_eq!(
        (h.app.as_str(), h.ranks, h.threads_per_rank),
        ("counter", 2, 2)
    );
    assert!(h.minipages >= 1);
    let recs: Vec<TraceRecord> = lines
        .map(|l| serde_json::from_str(l).expect("record parses"))
        .collect();
    for rank in 0..2 {
        for thread in 0..2 {
            let mine: Vec<&TraceOp> = recs
                .iter()
                .filter(|r| r.rank == rank && r.thread == thread)
                .map(|r| &r.op)
                .collect();
            let count = |f: &dyn Fn(&TraceOp) -> bool| mine.iter().filter(|o| f(o)).count();
            assert_eq!(
                count(&|o| matches!(o, TraceOp::Lock { id: 0 })),
                10,
                "rank {rank} thread {thread}"
            );
            assert_eq!(count(&|o| matches!(o, TraceOp::Unlock { id: 0 })), 10);
            assert_eq!(count(&|o| matches!(o, TraceOp::Barrier)), 3);
            assert!(mine
                .iter()
                .all(|o| !matches!(o, TraceOp::Compute { ns: 0 })));
            assert!(
                count(&|o| matches!(o, TraceOp::Fault { mp: 0, .. })) <= 20,
                "at most a read and a write fault per increment"
            );
        }
        let faults = recs
            .iter()
            .filter(|r| r.rank == rank && matches!(r.op, TraceOp::Fault { .. }))
            .count();
        if rank == 1 {
            assert!(
                faults > 0,
                "rank 1 does not manage the counter: it must fault"
            );
        }
    }
}

#[test]
fn shared_reads_are_pulled_by_rdma_read_from_a_non_manager_copy() {
    ok(
        &run(3, &["readshare", "20"], &[]),
        "readshare with RDMA reads",
    );
    ok(
        &run(3, &["readshare", "10"], &["dsm.rdma_read_shared=false"]),
        "readshare with transfer notices only",
    );
}
