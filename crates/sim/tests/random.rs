//! Randomized runs with packet faults over many seeds; determinism.
//!
//! Seeds: the workspace convention ([`unpinned_testkit`]): 200 by default,
//! `UNPINNED_TEST_SEEDS=N` for a soak, `UNPINNED_TEST_SEED=S` to rerun the one a failure names.

use unpinned_sim::scenario::random_run;

#[test]
fn random_runs_with_packet_faults_keep_every_invariant() {
    let mut total = 0;
    unpinned_testkit::for_each_seed("cargo test -p unpinned-sim --test random", 200, |seed| {
        // Per-packet rates up to 1% of each kind: a 64-packet block then survives an attempt
        // about half the time. (Much higher rates make whole-block retransmission, which the
        // spec prescribes, take hundreds of attempts: slow, but not wrong.)
        let fault_rate = if seed % 4 == 0 { 0.0 } else { 0.01 };
        match random_run(seed, fault_rate) {
            Ok(r) => total += r.posted,
            Err(e) => panic!("randomized run failed (seed {seed}): {e}"),
        }
    });
    assert!(total > 0);
}

#[test]
fn same_seed_same_trace() {
    for seed in [3, 17, 101] {
        let a = random_run(seed, 0.01).unwrap();
        let b = random_run(seed, 0.01).unwrap();
        assert_eq!(a, b, "seed {seed} is not deterministic");
    }
    assert_ne!(
        random_run(3, 0.01).unwrap().trace_hash,
        random_run(4, 0.01).unwrap().trace_hash
    );
}

/// The selective retransmission policy at five times the packet-fault rate above (each kind:
/// loss, duplication, reordering, corruption, delay): every invariant holds, and no run hits
/// the liveness limit.
#[test]
fn selective_runs_at_high_fault_rates_keep_every_invariant() {
    use unpinned_core::profile::RetransmitPolicy;
    use unpinned_sim::scenario::random_run_with;
    let mut ok = 0;
    unpinned_testkit::for_each_seed(
        "cargo test -p unpinned-sim --test random selective",
        100,
        |seed| match random_run_with(seed, 0.05, RetransmitPolicy::Selective) {
            Ok(r) => ok += r.ok,
            Err(e) => panic!("selective run failed (seed {seed}): {e}"),
        },
    );
    assert!(ok > 0);
}

/// The adaptive page-in policy (`unpinned_core::os::adaptive`) in the same randomized
/// scenarios (packet faults, reads and writes, source and destination faults, several
/// transfers per node): every invariant holds. Fewer seeds than above: it is one more policy.
#[test]
fn random_runs_under_the_adaptive_page_in_policy_keep_every_invariant() {
    use unpinned_core::os::PageInPolicy;
    use unpinned_sim::scenario::random_run_page_in;
    unpinned_testkit::for_each_seed("cargo test -p unpinned-sim --test random", 40, |seed| {
        let fault_rate = if seed % 4 == 0 { 0.0 } else { 0.01 };
        let retransmit = unpinned_core::profile::RetransmitPolicy::ALL[(seed % 2) as usize];
        if let Err(e) =
            random_run_page_in(seed, fault_rate, retransmit, Some(PageInPolicy::Adaptive))
        {
            panic!("randomized run under the adaptive policy failed (seed {seed}): {e}");
        }
    });
}
