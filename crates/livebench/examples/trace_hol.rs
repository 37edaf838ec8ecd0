//! `live-hol` with the live path's trace ([`unpinned_live::trace`]) on: per repetition, when
//! each transfer completed, when the page-in thread worked, and the longest silences of the
//! target's receive path, to see what holds the other transfers back.
//!
//! `cargo run --release -p unpinned-livebench --example trace_hol [part|blocking|no-fault] [reps]`
use unpinned_live::trace::{self, Point, PAGE_IN_THREAD};
use unpinned_livebench::exp::hol::{hol, HolParams};
use unpinned_livebench::exp::{live_profile, RunContext};

/// CPU time (user + system) of this process so far, us.
fn process_cpu_us() -> f64 {
    // SAFETY: a zeroed rusage is valid; getrusage writes one into it.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF with a valid pointer.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let t = |v: libc::timeval| v.tv_sec as f64 * 1e6 + v.tv_usec as f64;
    t(u.ru_utime) + t(u.ru_stime)
}

fn main() {
    let engine = std::env::args().nth(1).unwrap_or_else(|| "part".into());
    let reps: usize = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let progress = |_: u64, _: u64| {};
    let ctx = RunContext {
        profile: live_profile(),
        kind_profile: None,
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
        ring_slots: unpinned_livebench::exp::ring_slots().unwrap(),
    };
    trace::enable();
    let (cpu0, wall0) = (process_cpu_us(), std::time::Instant::now());
    let out = hol(&ctx, &engine, p).unwrap();
    let (cpu1, wall1) = (process_cpu_us(), wall0.elapsed());
    trace::disable();
    println!("{engine}: {out:?}");
    println!(
        "process CPU per repetition {:.0} us (wall {:.0} us; includes setup, checks and drop_cache)",
        (cpu1 - cpu0) / reps as f64,
        wall1.as_secs_f64() * 1e6 / reps as f64
    );
    let recs = trace::take();
    let count = |p: Point| recs.iter().filter(|r| r.point == p).count();
    println!(
        "{} records (capacity {}): sleeps {}, wakes {}, rx {}",
        recs.len(),
        trace::CAPACITY,
        count(Point::Sleep),
        count(Point::Woken),
        count(Point::RxStart)
    );
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
                    println!(
                        "  target rx packets {rx1}, longest rx gaps (us, at): {:?}",
                        gaps.iter()
                            .rev()
                            .take(4)
                            .map(|&(g, a)| (g as f64 / 1e3, (a - t0) as f64 / 1e3))
                            .collect::<Vec<_>>()
                    );
                }
                t0 = r.at_ns;
                last_rx1 = t0;
                rx1 = 0;
                gaps.clear();
                println!("rep at {:.3} ms", t0 as f64 / 1e6);
            }
            (0, Point::Completion) => {
                println!("  {:9.1} us completion of {} B", rel(r.at_ns), r.arg)
            }
            (1, Point::Fault) => println!("  {:9.1} us target fault record", rel(r.at_ns)),
            (1, Point::RxStart) => {
                rx1 += 1;
                gaps.push((r.at_ns - last_rx1, r.at_ns));
                last_rx1 = r.at_ns;
            }
            (PAGE_IN_THREAD, Point::HandlerStart) => println!(
                "  {:9.1} us page-in batch of {} records",
                rel(r.at_ns),
                r.arg
            ),
            (PAGE_IN_THREAD, Point::HandlerEnd) => {
                println!("  {:9.1} us page-in done, {} outputs", rel(r.at_ns), r.arg)
            }
            _ => {}
        }
    }
    gaps.sort();
    println!(
        "  target rx packets {rx1}, longest rx gaps (us, at): {:?}",
        gaps.iter()
            .rev()
            .take(4)
            .map(|&(g, a)| (g as f64 / 1e3, (a - t0) as f64 / 1e3))
            .collect::<Vec<_>>()
    );
    // Per repetition with a faulting transfer: packets per 250 us bin (data = more than 1000
    // bytes) on each side, to see which side stops while the page-in runs.
    let posts: Vec<u64> = recs
        .iter()
        .filter(|r| r.rank == 0 && r.point == Point::Post && r.arg as usize == p.fault_bytes)
        .map(|r| r.at_ns)
        .collect();
    for &t0 in &posts {
        const BIN: u64 = 250_000;
        let mut rows: Vec<[u32; 6]> = vec![[0; 6]; 40];
        for r in recs
            .iter()
            .filter(|r| r.at_ns >= t0 && r.at_ns < t0 + 40 * BIN)
        {
            let b = ((r.at_ns - t0) / BIN) as usize;
            let k = match (r.rank, r.point, r.arg > 1000) {
                (0, Point::TxSent, true) => 0,
                (1, Point::RxStart, true) => 1,
                (1, Point::TxSent, _) => 2,
                (0, Point::RxStart, _) => 3,
                (0, Point::Completion, _) => 4,
                (PAGE_IN_THREAD, Point::HandlerStart | Point::HandlerEnd, _) => 5,
                _ => continue,
            };
            rows[b][k] += 1;
        }
        let last = rows
            .iter()
            .rposition(|r| r.iter().any(|&x| x > 0))
            .unwrap_or(0);
        let ev: Vec<String> = recs
            .iter()
            .filter(|r| {
                r.rank == 0
                    && r.at_ns >= t0
                    && r.at_ns < t0 + 3_000_000
                    && !matches!(
                        r.point,
                        Point::TxSent
                            | Point::RxStart
                            | Point::RxEnd
                            | Point::Post
                            | Point::PostLocked
                            | Point::PostQueued
                            | Point::PostTurnEnd
                    )
            })
            .map(|r| format!("{:?}@{:.0}", r.point, (r.at_ns - t0) as f64 / 1e3))
            .collect();
        println!("rank 0 events: {ev:?}");
        println!("faulting rep: per 250 us: [sender data tx, target data rx, target ctrl tx, sender rx, completions, page-in marks]");
        for (i, r) in rows.iter().enumerate().take(last + 1) {
            println!("  {:5} us {:?}", i as u64 * 250, r);
        }
    }
    // Over the whole run: the longest silences of each rank's sending, and what each rank
    // recorded during the longest receive gaps of the target.
    let mut all: Vec<(u64, u64)> = Vec::new();
    let mut prev: Option<u64> = None;
    for r in recs
        .iter()
        .filter(|r| r.rank == 1 && r.point == Point::RxStart)
    {
        if let Some(p) = prev {
            all.push((r.at_ns - p, p));
        }
        prev = Some(r.at_ns);
    }
    all.sort();
    for &(g, from) in all.iter().rev().take(5) {
        let inside = |rank: u32, pt: Point| {
            recs.iter()
                .filter(|r| r.rank == rank && r.point == pt && r.at_ns > from && r.at_ns < from + g)
                .count()
        };
        let data_tx = recs
            .iter()
            .filter(|r| {
                r.rank == 0
                    && r.point == Point::TxSent
                    && r.arg > 1000
                    && r.at_ns > from
                    && r.at_ns < from + g
            })
            .count();
        let evs: Vec<String> = recs
            .iter()
            .filter(|r| {
                r.rank == 0
                    && matches!(
                        r.point,
                        Point::Sleep
                            | Point::Woken
                            | Point::DrivenSleep
                            | Point::WaitSleep
                            | Point::WaitReturn
                    )
                    && r.at_ns > from
                    && r.at_ns < from + g
            })
            .take(12)
            .map(|r| {
                format!(
                    "{:?}({})@{:.1}",
                    r.point,
                    r.arg,
                    (r.at_ns - from) as f64 / 1e3
                )
            })
            .collect();
        println!("  rank 0 during it: {evs:?}");
        let evs1: Vec<String> = recs
            .iter()
            .filter(|r| {
                r.rank != 0
                    && !matches!(r.point, Point::RxStart | Point::RxEnd)
                    && r.at_ns > from
                    && r.at_ns < from + g
            })
            .take(16)
            .map(|r| {
                format!(
                    "{}:{:?}({})@{:.1}",
                    r.rank,
                    r.point,
                    r.arg,
                    (r.at_ns - from) as f64 / 1e3
                )
            })
            .collect();
        println!("  others during it: {evs1:?}");
        println!(
            "gap of {:.1} us in the target's receiving: sender tx {} (data {data_tx}), sender rx {}, target tx {}, sender posts {}, page-in batches {}",
            g as f64 / 1e3,
            inside(0, Point::TxSent),
            inside(0, Point::RxStart),
            inside(1, Point::TxSent),
            inside(0, Point::Post),
            inside(PAGE_IN_THREAD, Point::HandlerStart),
        );
    }
}
