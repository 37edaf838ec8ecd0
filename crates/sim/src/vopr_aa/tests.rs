use super::*;

/// A few hundred seeds in a few seconds: every seed's bytes, exactly-once, log, protection,
/// counter and success checks hold. `UNPINNED_TEST_SEED=S` reruns one seed,
/// `UNPINNED_TEST_SEEDS=N` soaks N.
#[test]
fn aa_swarm_seeds_pass_every_checker() {
    let (mut faults, mut refused, mut entries) = (0, 0, 0);
    unpinned_testkit::for_each_seed(
        "cargo test -p unpinned-sim --lib vopr_aa::tests::aa_swarm_seeds_pass_every_checker",
        200,
        |seed| {
            let r = run_seed(seed).unwrap_or_else(|e| panic!("{e}"));
            faults += r.faults_injected;
            refused += r.designed_to_fail;
            entries += r.entries;
        },
    );
    if unpinned_testkit::seeds(200).len() >= 50 {
        assert!(faults > 0 && refused > 0 && entries > 0, "the swarm exercised too little: {faults} faults, {refused} refusals, {entries} log entries");
    }
}

#[test]
fn a_seed_is_deterministic() {
    for seed in [3, 11] {
        assert_eq!(run_seed(seed), run_seed(seed));
    }
}
