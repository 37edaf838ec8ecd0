//! `live-hol` with the live path's trace ([`unpinned_live::trace`]) on: per repetition, when
//! each transfer completed, when the page-in thread worked, and the longest silences of the
//! target's receive path, to see what holds the other transfers back.
//!
//! `cargo run --release -p unpinned-livebench --example trace_hol [part|blocking|no-fault] [reps]`
use unpinned_live::trace::{self, Point, PAGE_IN_THREAD};
use unpinned_livebench::exp::hol::{hol, HolParams};
use unpinned_livebench::exp::{live_profile, RunContext};

fn main() {
    let engine = std::env::args().nth(1).unwrap_or_else(|| "part".into());
    let reps: usize = std::env::args().nth(2).and_then(|s| s.parse().ok()).unwrap_or(3);
    let progress = |_: u64, _: u64| {};
    let ctx = RunContext {
        profile: live_profile(),
        seed: 1,
        params: Default::default(),
        progress: &progress,
    };
    let p = HolParams {
        others: 3,
        other_bytes: 256 << 10,
        fault_bytes: 1 << 20,
        reps,
        anon_fault: std::env::var("ANON").is_ok(),
    };
    trace::enable();
    let out = hol(&ctx, &engine, p).unwrap();
    trace::disable();
    println!("{engine}: {out:?}");
    let recs = trace::take();
    // Repetitions start at a burst of rank-0 posts; print each one's landmarks.
    let mut t0 = 0;
    let mut last_rx1 = 0u64;
    let mut rx1 = 0u32;
    let mut gaps: Vec<(u64, u64)> = Vec::new();
    for r in &recs {
        let rel = |t: u64| (t - t0) as f64 / 1e3;
        match (r.rank, r.point) {
            (0, Point::Post) if r.at_ns > t0 + 1_000_000 || t0 == 0 => {
                if t0 != 0 {
                    gaps.sort();
                    println!("  target rx packets {rx1}, longest rx gaps (us, at): {:?}", gaps.iter().rev().take(4).map(|&(g, a)| (g as f64 / 1e3, (a - t0) as f64 / 1e3)).collect::<Vec<_>>());
                }
                t0 = r.at_ns;
                last_rx1 = t0;
                rx1 = 0;
                gaps.clear();
                println!("rep at {:.3} ms", t0 as f64 / 1e6);
            }
            (0, Point::Completion) => println!("  {:9.1} us completion of {} B", rel(r.at_ns), r.arg),
            (1, Point::Fault) => {}
            (1, Point::RxStart) => {
                rx1 += 1;
                gaps.push((r.at_ns - last_rx1, r.at_ns));
                last_rx1 = r.at_ns;
            }
            (PAGE_IN_THREAD, Point::HandlerStart) => println!("  {:9.1} us page-in batch of {} records", rel(r.at_ns), r.arg),
            (PAGE_IN_THREAD, Point::HandlerEnd) => println!("  {:9.1} us page-in done, {} outputs", rel(r.at_ns), r.arg),
            _ => {}
        }
    }
    gaps.sort();
    println!("  target rx packets {rx1}, longest rx gaps (us, at): {:?}", gaps.iter().rev().take(4).map(|&(g, a)| (g as f64 / 1e3, (a - t0) as f64 / 1e3)).collect::<Vec<_>>());
}
