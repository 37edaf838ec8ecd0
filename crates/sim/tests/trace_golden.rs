//! The simulator's speed work must not change a single event: randomized runs (loss,
//! duplication, reordering, corruption) keep the event counts and trace hashes (every packet's
//! bytes, checksums included) they had before it.
//!
//! The constants were recorded with the simulator as of the lazy-checksum change. A change
//! of the model itself (a protocol or cost change) legitimately changes them: then record the
//! new values (`cargo test -p unpinned-sim --test trace_golden -- --nocapture` prints them)
//! and say so in the commit. A change meant only to be faster must leave them alone.

use unpinned_sim::scenario::random_run;

/// (seed, packet-fault rate, events, trace hash).
const GOLDEN: [(u64, f64, u64, u64); 6] = [
    (0, 0.0, 10235, 0x4375c94792e8d2be),
    (1, 0.01, 9080, 0xa24ec03d7333be3a),
    (2, 0.01, 18702, 0xbebd2e8d8d71f3fc),
    (3, 0.01, 6990, 0x590ec32e57597343),
    (4, 0.0, 6899, 0xe482beb0b139c853),
    (5, 0.01, 4075, 0xd909dfbc86e8baa9),
];

#[test]
fn randomized_runs_keep_their_trace_hashes() {
    let mut wrong = Vec::new();
    for (seed, rate, events, hash) in GOLDEN {
        let r = random_run(seed, rate).expect("randomized run");
        println!("({seed}, {rate:?}, {}, {:#018x}),", r.events, r.trace_hash);
        if (r.events, r.trace_hash) != (events, hash) {
            wrong.push(seed);
        }
    }
    assert!(
        wrong.is_empty(),
        "seeds {wrong:?} changed their event count or trace hash (see this file's header)"
    );
}
