//! The message-layer conformance scenarios on the simulator give the outcome computed from the
//! scenario alone (the live runtime's test runs the same scenarios against the same
//! expectation), with and without packet faults.

use unpinned_conformance::msg::{differences, expected};
use unpinned_core::profile::Profile;
use unpinned_sim::apps::conformance::{run_sim, scenarios};
use unpinned_sim::{FaultConfig, SimConfig};

#[test]
fn simulator_matches_the_expected_message_outcome() {
    for s in scenarios() {
        for seed in [1, 2] {
            let cfg = SimConfig::two_nodes(Profile::forth_arm(), seed);
            let got = run_sim(&s, &cfg).unwrap_or_else(|e| panic!("scenario {}: {e}", s.name));
            let diff = differences(&got, &expected(&s));
            assert!(
                diff.is_empty(),
                "scenario {} seed {seed}:\n{}",
                s.name,
                diff.join("\n")
            );
        }
    }
}

#[test]
fn message_outcomes_do_not_depend_on_packet_faults() {
    for s in scenarios() {
        let mut cfg = SimConfig::two_nodes(Profile::forth_arm(), 7);
        cfg.faults = FaultConfig::uniform(0.02);
        cfg.profile.engine.max_timeouts = 30;
        let got = run_sim(&s, &cfg).unwrap_or_else(|e| panic!("scenario {}: {e}", s.name));
        let diff = differences(&got, &expected(&s));
        assert!(
            diff.is_empty(),
            "scenario {} under packet faults:\n{}",
            s.name,
            diff.join("\n")
        );
    }
}
