//! The standard load of `unpinned bench sim` with random source bytes instead of the zeros of
//! never-written sources (every destination page then stores its 4 KiB): how much of the
//! simulator's speed and memory depends on zero payloads.
//!
//! `cargo run --release -p unpinned-sim --example bench_payload [-- ROUNDS]`

use unpinned_core::profile::Profile;
use unpinned_sim::bench::{run_load_with, LoadOptions, LoadSpec};

fn main() {
    let rounds = std::env::args()
        .nth(1)
        .and_then(|r| r.parse().ok())
        .unwrap_or(10);
    let spec = LoadSpec {
        nodes: 8,
        concurrent: 4,
        transfer_bytes: 4 << 20,
        rounds,
    };
    for random_sources in [false, true] {
        let opts = LoadOptions {
            check_invariants: false,
            random_sources,
        };
        match run_load_with(&Profile::forth_arm(), 1, &spec, opts, |_| {}) {
            Ok(r) => println!(
                "random_sources={random_sources}: {} events, {:.3} M events per CPU second ({:.2} s CPU), peak RSS {:.1} MiB, RSS after round 1 {:.1} MiB, after the last {:.1} MiB",
                r.events,
                r.events_per_cpu_s / 1e6,
                r.cpu_s,
                r.peak_rss_bytes as f64 / 1048576.0,
                r.rss_after_first_round_bytes as f64 / 1048576.0,
                r.rss_after_last_round_bytes as f64 / 1048576.0
            ),
            Err(e) => {
                eprintln!("load failed: {e}");
                std::process::exit(1);
            }
        }
    }
}
