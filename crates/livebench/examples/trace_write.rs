//! Where the microseconds of one write go: the live path's trace points
//! ([`unpinned_live::trace`]) for 8 B writes into present memory and 4 KiB writes into a
//! missing page, medians of each point's offset from the post, in the dedicated-core
//! configuration of `bench live` (`DEDICATED=0` for the defaults).
//!
//! `cargo run --release -p unpinned-livebench --example trace_write [N]`
use std::collections::BTreeMap;

use unpinned_live::trace::{self, Point, Record};
use unpinned_livebench::bench::DEDICATED_SPIN_US;
use unpinned_livebench::exp::{live_profile, pattern, present, Pair};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    if v.is_empty() {
        f64::NAN
    } else {
        v[v.len() / 2]
    }
}

/// Per write (records from one rank-0 `Post` to the next), the first time each
/// (rank, point, occurrence) was passed, relative to the post; medians over writes.
fn report(what: &str, recs: &[Record]) {
    let mut per: BTreeMap<(u32, usize, Point), Vec<f64>> = BTreeMap::new();
    let mut total = Vec::new();
    let mut i = 0;
    while i < recs.len() {
        if !(recs[i].rank == 0 && recs[i].point == Point::Post) {
            i += 1;
            continue;
        }
        let t0 = recs[i].at_ns;
        let mut seen: BTreeMap<(u32, Point), usize> = BTreeMap::new();
        let mut j = i + 1;
        while j < recs.len() && !(recs[j].rank == 0 && recs[j].point == Point::Post) {
            let r = recs[j];
            let n = seen.entry((r.rank, r.point)).or_insert(0);
            if *n < 3 {
                per.entry((r.rank, *n, r.point))
                    .or_default()
                    .push((r.at_ns - t0) as f64 / 1e3);
            }
            *n += 1;
            if r.rank == 0 && r.point == Point::WaitReturn {
                total.push((r.at_ns - t0) as f64 / 1e3);
            }
            j += 1;
        }
        i = j;
    }
    println!(
        "{what}: {} writes, post -> wait return median {:.3} us",
        total.len(),
        median(total.clone())
    );
    let mut rows: Vec<(f64, u32, Point, usize)> = per
        .iter()
        .filter(|(_, v)| v.len() * 2 >= total.len())
        .map(|(&(rank, _, p), v)| (median(v.clone()), rank, p, v.len()))
        .collect();
    rows.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap());
    for (t, rank, p, n) in rows {
        println!("  {t:8.3} us  rank {rank}  {p:?}  (in {n})");
    }
}

/// (voluntary, involuntary) context switches of the calling thread so far.
fn switches() -> (u64, u64) {
    let s = std::fs::read_to_string("/proc/thread-self/status").unwrap_or_default();
    let f = |k: &str| {
        s.lines()
            .find_map(|l| l.strip_prefix(k))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    };
    (
        f("voluntary_ctxt_switches:"),
        f("nonvoluntary_ctxt_switches:"),
    )
}

/// Involuntary context switches of this process's thread named `name`.
fn thread_switches(name: &str) -> u64 {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    dir.flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("status")).ok())
        .filter(|s| {
            s.lines()
                .next()
                .is_some_and(|l| l.trim_start_matches("Name:").trim() == name)
        })
        .filter_map(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("nonvoluntary_ctxt_switches:"))
                .and_then(|v| v.trim().parse::<u64>().ok())
        })
        .sum()
}

/// CLOCK_MONOTONIC now, s (to line phases up with `perf record -k mono`).
fn mono_s() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into `t`.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}

fn main() {
    if std::env::var_os("PHASES").is_some() {
        eprintln!("start {:.6}", mono_s());
    }
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000);
    let dedicated = std::env::var("DEDICATED").map(|v| v != "0").unwrap_or(true);
    let cpus = unpinned_os::affinity::allowed_cpus().unwrap();
    let (cc, tc) = (cpus[0], cpus[1]);
    let pair = Pair::with_loop(
        &live_profile(),
        unpinned_live::MemoryMode::Part,
        Default::default(),
        0,
        |r, o| {
            if dedicated {
                if r == 0 {
                    o.progress.cpu = Some(cc);
                    o.progress.wait_spin_us = DEDICATED_SPIN_US;
                } else {
                    o.progress.cpu = Some(tc);
                    o.progress.spin_us = DEDICATED_SPIN_US;
                }
            }
        },
    )
    .unwrap();
    if dedicated {
        unpinned_os::affinity::pin_current_thread(&[cc]).unwrap();
    }
    println!("dedicated cores: {dedicated}");
    if std::env::var_os("PHASES").is_some() {
        eprintln!("pair ready {:.6}", mono_s());
    }
    let dst = present(4096).unwrap();
    // SAFETY: dst outlives the pair's use of it.
    let k = unsafe { pair.expose(dst.ptr(), 4096).unwrap() };
    let s8 = pattern(1, 8);
    let t = std::time::Instant::now();
    let turns = 1_000_000;
    for _ in 0..turns {
        pair.rts[0].progress().unwrap();
    }
    println!(
        "idle turn (rank 0, nothing to do): {:.1} ns",
        t.elapsed().as_nanos() as f64 / turns as f64
    );
    for _ in 0..200 {
        pair.write_us(&s8, dst.addr(), k).unwrap();
    }
    let (a0, b0) = pair.stats().unwrap();
    if std::env::var_os("PHASES").is_some() {
        eprintln!("traced writes {:.6}", mono_s());
    }
    trace::enable();
    let mut lat = Vec::new();
    for _ in 0..n {
        lat.push(pair.write_us(&s8, dst.addr(), k).unwrap());
    }
    trace::disable();
    let (a1, b1) = pair.stats().unwrap();
    println!("8 B write_us median {:.3} (traced)", median(lat));
    println!(
        "  scans per write: sender {:.3} target {:.3}; pagemap reads {:.3} {:.3}",
        (a1.memory.range_scans - a0.memory.range_scans) as f64 / n as f64,
        (b1.memory.range_scans - b0.memory.range_scans) as f64 / n as f64,
        (a1.memory.pagemap_reads - a0.memory.pagemap_reads) as f64 / n as f64,
        (b1.memory.pagemap_reads - b0.memory.pagemap_reads) as f64 / n as f64,
    );
    report("8 B write", &trace::take());
    let mut lat = Vec::new();
    if std::env::var_os("PHASES").is_some() {
        eprintln!("untraced writes {:.6}", mono_s());
    }
    let sw0 = switches();
    for _ in 0..n {
        lat.push(pair.write_us(&s8, dst.addr(), k).unwrap());
    }
    let sw1 = switches();
    println!("8 B write_us median {:.3} (untraced)", median(lat));
    println!(
        "  caller context switches per 8 B write: voluntary {:.3}, involuntary {:.3}",
        (sw1.0 - sw0.0) as f64 / n as f64,
        (sw1.1 - sw0.1) as f64 / n as f64
    );
    pair.revoke(k);

    if std::env::var_os("PHASES").is_some() {
        eprintln!("missing {:.6}", mono_s());
    }
    let s4 = pattern(4, 4096);
    let m = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or((n / 10).max(20));
    let mut lat = Vec::new();
    let mut recs = Vec::new();
    let sw0 = switches();
    let tsw0 = thread_switches("unpinned-engine");
    for _ in 0..m {
        let fresh = unpinned_os::mapping::Mapping::anon(4096).unwrap();
        // SAFETY: fresh outlives the exposure (revoked below).
        let k = unsafe { pair.expose(fresh.ptr(), 4096).unwrap() };
        trace::enable();
        lat.push(pair.write_us(&s4, fresh.addr(), k).unwrap());
        trace::disable();
        recs.extend(trace::take());
        pair.revoke(k);
    }
    let sw1 = switches();
    let tsw1 = thread_switches("unpinned-engine");
    println!("4 KiB missing write_us median {:.3} (traced)", median(lat));
    println!(
        "  progress threads' involuntary context switches per missing-page write: {:.2}",
        (tsw1 - tsw0) as f64 / m as f64
    );
    println!(
        "  caller context switches per missing-page write: voluntary {:.2}, involuntary {:.2}",
        (sw1.0 - sw0.0) as f64 / m as f64,
        (sw1.1 - sw0.1) as f64 / m as f64
    );
    report("4 KiB into a missing page", &recs);
}
