//! The simulator's conformance scenarios on the live runtime: for every scenario and a few
//! seeds, live outcome == reference outcome == simulator outcome (statuses one to one, final
//! region bytes by hash).

mod conformance_live;

use conformance_live::run_live;
use unpinned_core::profile::Profile;
use unpinned_sim::conformance::{expected, run_sim, scenarios};
use unpinned_sim::SimConfig;

#[test]
fn live_matches_the_reference_and_the_simulator() {
    for s in scenarios() {
        for seed in [1, 2, 3, 0x5eed_0001] {
            println!("scenario {} seed {seed:#x}", s.name);
            let want = expected(&s, seed);
            let sim = run_sim(&s, seed, &SimConfig::two_nodes(Profile::forth_arm(), seed));
            assert_eq!(
                sim, want,
                "simulator vs reference: scenario {} seed {seed:#x}",
                s.name
            );
            let live = run_live(&s, seed);
            assert_eq!(
                live.statuses, want.statuses,
                "live statuses: scenario {} seed {seed:#x}",
                s.name
            );
            assert_eq!(
                live, want,
                "live region bytes: scenario {} seed {seed:#x}",
                s.name
            );
        }
    }
}
