use super::*;

/// Every seed's coherence, liveness and transport checks hold (the CI's few hundred seeds run
/// in crates/sim/tests/vopr.rs), and the swarm does what it is for.
#[test]
fn seeds_hold_coherence_and_complete() {
    let (mut waits, mut faults, mut moves) = (0, 0, 0);
    for seed in 0..40 {
        let r = run(seed);
        assert!(
            r.passed(),
            "seed {seed}: {:?}\n  rerun: {}",
            r.violations,
            crate::vopr::rerun_command("dsm", seed)
        );
        assert_eq!(
            r.tally.ok, r.tally.posted,
            "seed {seed}: every access completes"
        );
        faults += r.faults.faults();
        let s = Swarm::new(DsmSwarmConfig::from_seed(seed));
        moves += s.cfg.minipages as u64;
        waits += r.swarm.contains(" 0 waits") as u64;
    }
    assert!(
        faults > 0 && moves > 0 && waits < 40,
        "the swarm exercised too little"
    );
}

#[test]
fn a_seed_is_deterministic() {
    for seed in [1, 7] {
        let (a, b) = (run(seed), run(seed));
        assert_eq!(
            (a.trace_hash, a.events, a.swarm),
            (b.trace_hash, b.events, b.swarm)
        );
    }
}
