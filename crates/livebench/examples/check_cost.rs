//! Residency check cost on present memory: PART vs Transfer-Only, in blocks of writes of one
//! size in one process, the engine that goes first alternating between rounds (whichever ran
//! second was measured faster) and a pause before each block (the other pair's threads fall
//! asleep), with PART's scans and pagemap reads per write on each side.
//! `cargo run --release -p unpinned-livebench --example check_cost -- SIZE_BYTES[,SIZE..] [ROUNDS]`
//! (`SETS="engine.max_outstanding_blocks=16"`: engine overrides).
use unpinned_live::MemoryMode;
use unpinned_livebench::exp::{live_profile, median, pattern, present, Pair};

fn main() {
    let mut args = std::env::args().skip(1);
    let sizes: Vec<usize> = args
        .next()
        .map(|a| a.split(',').filter_map(|s| s.parse().ok()).collect())
        .unwrap_or_else(|| vec![4 << 20]);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(30);
    let block = 5;
    let max = sizes.iter().copied().max().unwrap_or(4 << 20);
    // `SETS="engine.max_outstanding_blocks=16 engine.packet_bytes=32768"`: profile overrides.
    let mut prof = live_profile();
    for set in std::env::var("SETS").unwrap_or_default().split_whitespace() {
        prof = prof.with_override(set).expect("a valid profile override");
    }
    let dst = present(max).unwrap();
    let part = Pair::new(&prof, MemoryMode::Part, Default::default()).unwrap();
    let to = Pair::new(&prof, MemoryMode::TransferOnly, Default::default()).unwrap();
    // SAFETY: dst outlives both pairs' use.
    let (kp, kt) = unsafe {
        (
            part.expose(dst.ptr(), max).unwrap(),
            to.expose(dst.ptr(), max).unwrap(),
        )
    };
    for size in sizes {
        let src = pattern(5, size);
        let (mut p, mut t) = (Vec::new(), Vec::new());
        // Warm-up (registrations of the translation cache happen here).
        for _ in 0..4 {
            part.write_us(&src, dst.addr(), kp).unwrap();
            to.write_us(&src, dst.addr(), kt).unwrap();
        }
        let s0 = part.stats().unwrap();
        for r in 0..rounds {
            for k in 0..2 {
                std::thread::sleep(std::time::Duration::from_millis(3));
                if (r + k) % 2 == 0 {
                    part.write_us(&src, dst.addr(), kp).unwrap();
                    for _ in 0..block {
                        p.push(part.write_us(&src, dst.addr(), kp).unwrap());
                    }
                } else {
                    to.write_us(&src, dst.addr(), kt).unwrap();
                    for _ in 0..block {
                        t.push(to.write_us(&src, dst.addr(), kt).unwrap());
                    }
                }
            }
        }
        let s1 = part.stats().unwrap();
        let n = (rounds * (block + 1)) as f64;
        let (pm, tm) = (median(p), median(t));
        println!(
            "{size} B: PART {pm:.1} us, Transfer-Only {tm:.1} us, ratio {:.3}; per write: scans sender {:.2}, target {:.2}; pagemap reads sender {:.2}, target {:.2}",
            pm / tm,
            (s1.0.memory.range_scans - s0.0.memory.range_scans) as f64 / n,
            (s1.1.memory.range_scans - s0.1.memory.range_scans) as f64 / n,
            (s1.0.memory.pagemap_reads - s0.0.memory.pagemap_reads) as f64 / n,
            (s1.1.memory.pagemap_reads - s0.1.memory.pagemap_reads) as f64 / n,
        );
        if std::env::var_os("VERBOSE").is_some() {
            println!("sender {:?}\ntarget {:?}", s1.0.memory, s1.1.memory);
        }
    }
}
