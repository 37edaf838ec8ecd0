use super::*;

/// A few seeds pass every checker (the CI's few hundred run in crates/sim/tests/vopr.rs).
#[test]
fn seeds_pass_every_checker() {
    for seed in 0..40 {
        let r = run(seed);
        assert!(
            r.passed(),
            "seed {seed}: {:?}\n  rerun: {}",
            r.violations,
            crate::vopr::rerun_command("aa", seed)
        );
    }
}

#[test]
fn a_seed_is_deterministic() {
    for seed in [3, 11] {
        let (a, b) = (run(seed), run(seed));
        assert_eq!(
            (a.trace_hash, a.events, a.tally, a.swarm),
            (b.trace_hash, b.events, b.tally, b.swarm)
        );
    }
}
