//! 8 B write latency in a loop, for `perf record` and quick A/B runs: `DEDICATED=1` for the
//! dedicated-core configuration of `bench live` (caller pinned to the first allowed CPU and
//! spinning, the target's progress thread pinned to the second and spinning), else the
//! defaults. Prints percentiles of post-to-completion latency, then the process's CPU time
//! over one idle second after the writes (what the idle policy burns).
//!
//! `cargo run --release -p unpinned-livebench --example lat8_loop [WRITES]`
use unpinned_livebench::bench::DEDICATED_SPIN_US;
use unpinned_livebench::exp::{live_profile, pattern, present, Pair};

fn pct(mut v: Vec<f64>) -> String {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let p = |q: f64| v[((v.len() - 1) as f64 * q) as usize];
    format!(
        "min {:.3} p10 {:.3} p50 {:.3} p90 {:.3} p99 {:.3}",
        p(0.0),
        p(0.1),
        p(0.5),
        p(0.9),
        p(0.99)
    )
}

/// User + system CPU time of this process so far, s.
fn cpu_s() -> f64 {
    // SAFETY: getrusage writes one rusage into `u`.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above; RUSAGE_SELF is valid.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(u.ru_utime) + tv(u.ru_stime)
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000);
    let dedicated = std::env::var("DEDICATED").is_ok_and(|v| v != "0");
    let cpus = unpinned_os::affinity::allowed_cpus().unwrap();
    let (cc, tc) = (cpus[0], cpus[cpus.len() - 1]);
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
    let dst = present(4096).unwrap();
    // SAFETY: dst outlives the pair's use of it.
    let k = unsafe { pair.expose(dst.ptr(), 4096).unwrap() };
    let s8 = pattern(1, 8);
    for _ in 0..500 {
        pair.write_us(&s8, dst.addr(), k).unwrap();
    }
    let c0 = cpu_s();
    let t0 = std::time::Instant::now();
    let v: Vec<f64> = (0..n)
        .map(|_| pair.write_us(&s8, dst.addr(), k).unwrap())
        .collect();
    let (wall, cpu) = (t0.elapsed().as_secs_f64(), cpu_s() - c0);
    println!(
        "dedicated {dedicated}: 8 B write us: {} ({n} writes, {:.2} CPUs busy)",
        pct(v),
        cpu / wall
    );
    let c0 = cpu_s();
    std::thread::sleep(std::time::Duration::from_secs(1));
    println!(
        "idle 1 s after the writes: {:.1} ms of CPU",
        (cpu_s() - c0) * 1e3
    );
    let c0 = cpu_s();
    std::thread::sleep(std::time::Duration::from_secs(1));
    println!("idle the next 1 s: {:.1} ms of CPU", (cpu_s() - c0) * 1e3);
}
