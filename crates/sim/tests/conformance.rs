//! The conformance scenarios on the simulator give the outcome computed from the scenario
//! alone (the live runtime's test runs the same scenarios against the same expectation).

use unpinned_core::profile::Profile;
use unpinned_sim::conformance::{expected, run_sim, scenarios};
use unpinned_sim::{FaultConfig, SimConfig};

#[test]
fn simulator_matches_the_reference_outcome() {
    for s in scenarios() {
        for seed in [1, 2, 3] {
            let cfg = SimConfig::two_nodes(Profile::forth_arm(), seed);
            assert_eq!(
                run_sim(&s, seed, &cfg),
                expected(&s, seed),
                "scenario {} seed {seed}",
                s.name
            );
        }
    }
}

#[test]
fn outcomes_do_not_depend_on_packet_faults() {
    for s in scenarios() {
        let mut cfg = SimConfig::two_nodes(Profile::forth_arm(), 5);
        cfg.faults = FaultConfig::uniform(0.01);
        cfg.profile.engine.max_timeouts = 30;
        assert_eq!(
            run_sim(&s, 5, &cfg),
            expected(&s, 5),
            "scenario {} under packet faults",
            s.name
        );
    }
}
