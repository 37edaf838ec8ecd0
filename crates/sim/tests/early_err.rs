//! Early ERR and kernel-context ERRs (`os.early_err`, `os.err_from`) under the randomized
//! scenarios of `random.rs`: 2 to 4 nodes, concurrent writes and reads, faults on both sides,
//! any page-in policy, window and block size, with packet loss, duplication, reordering,
//! corruption and delay; every invariant checked after every event.

use unpinned_core::profile::{ErrFrom, RetransmitPolicy};
use unpinned_sim::scenario::random_run_tweaked;

#[test]
fn random_runs_with_early_err_keep_every_invariant() {
    let mut total = 0;
    unpinned_testkit::for_each_seed("cargo test -p unpinned-sim --test early_err", 40, |seed| {
        let fault_rate = if seed % 4 == 0 { 0.0 } else { 0.01 };
        let from = ErrFrom::ALL[(seed % 2) as usize];
        let retransmit = RetransmitPolicy::ALL[(seed / 2 % 2) as usize];
        let tweak = |p: &mut unpinned_core::profile::Profile| {
            p.os.early_err = true;
            p.os.err_from = from;
        };
        match random_run_tweaked(seed, fault_rate, retransmit, &tweak) {
            Ok(r) => total += r.posted,
            Err(e) => panic!("randomized early-ERR run failed (seed {seed}): {e}"),
        }
    });
    assert!(total > 0);
}
