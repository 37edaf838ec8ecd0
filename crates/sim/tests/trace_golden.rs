//! The simulator's speed work must not change a single event: randomized runs (loss,
//! duplication, reordering, corruption) keep the event counts and trace hashes (every packet's
//! bytes, checksums included) they had before it.
//!
//! The constants were recorded with the simulator as of the lazy-checksum change. A change
//! of the model itself (a protocol or cost change) legitimately changes them: then record the
//! new values (`cargo test -p unpinned-sim --test trace_golden -- --nocapture` prints them)
//! and say so in the commit. A change meant only to be faster must leave them alone.
//!
//! The scenarios run with the spec's whole-block retransmission (the values predate the
//! selective policy, which left them unchanged) and, separately, with the selective policy.

use unpinned_core::profile::RetransmitPolicy;
use unpinned_sim::scenario::random_run_with;

/// (seed, packet-fault rate, events, trace hash).
const GOLDEN: [(u64, f64, u64, u64); 6] = [
    (0, 0.0, 10235, 0x4375c94792e8d2be),
    (1, 0.01, 9080, 0xa24ec03d7333be3a),
    (2, 0.01, 18702, 0xbebd2e8d8d71f3fc),
    (3, 0.01, 6990, 0x590ec32e57597343),
    (4, 0.0, 6899, 0xe482beb0b139c853),
    (5, 0.01, 4075, 0xd909dfbc86e8baa9),
];

/// The same with the selective retransmission policy (recorded when it was added).
const GOLDEN_SELECTIVE: [(u64, f64, u64, u64); 3] = [
    (1, 0.01, 7181, 0x15f001765faa4053),
    (2, 0.01, 10589, 0x8d781c915663ff9e),
    (3, 0.01, 5756, 0x8081c8fb13da9c4b),
];

#[test]
fn randomized_runs_keep_their_trace_hashes() {
    let mut wrong = Vec::new();
    for (seed, rate, events, hash) in GOLDEN {
        let r = random_run_with(seed, rate, RetransmitPolicy::Block).expect("randomized run");
        println!("({seed}, {rate:?}, {}, {:#018x}),", r.events, r.trace_hash);
        if (r.events, r.trace_hash) != (events, hash) {
            wrong.push(seed);
        }
    }
    for (seed, rate, events, hash) in GOLDEN_SELECTIVE {
        let r = random_run_with(seed, rate, RetransmitPolicy::Selective).expect("randomized run");
        println!(
            "selective ({seed}, {rate:?}, {}, {:#018x}),",
            r.events, r.trace_hash
        );
        if (r.events, r.trace_hash) != (events, hash) {
            wrong.push(seed);
        }
    }
    assert!(
        wrong.is_empty(),
        "seeds {wrong:?} changed their event count or trace hash (see this file's header)"
    );
}
