use super::*;

/// A few hundred seeds in a few seconds: every seed's coherence, liveness and transport
/// checks hold. `UNPINNED_TEST_SEED=S` reruns one seed, `UNPINNED_TEST_SEEDS=N` soaks N.
#[test]
fn dsm_swarm_seeds_hold_coherence_and_complete() {
    let mut faults = 0;
    unpinned_testkit::for_each_seed(
        "cargo test -p unpinned-sim --lib vopr_dsm::tests::dsm_swarm_seeds_hold_coherence_and_complete",
        200,
        |seed| {
            let r = run_seed(seed).unwrap_or_else(|e| panic!("{e}"));
            assert!(r.reads + r.writes > 0, "seed {seed}: no access performed");
            faults += r.faults_injected;
        },
    );
    let n = unpinned_testkit::seeds(200).len();
    assert!(n < 50 || faults > 0, "no fault injected in {n} seeds");
}

#[test]
fn a_seed_is_deterministic() {
    for seed in [1, 7, 42] {
        assert_eq!(run_seed(seed), run_seed(seed));
    }
}
