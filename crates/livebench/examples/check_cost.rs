//! Residency check cost on present memory: PART vs Transfer-Only, alternating single writes of
//! one size in one process (so that load drift hits both alike), with PART's pagemap reads.
//! `cargo run --release -p unpinned-livebench --example check_cost -- SIZE_BYTES [ROUNDS]`
use unpinned_live::MemoryMode;
use unpinned_livebench::exp::{live_profile, median, pattern, present, Pair};

fn main() {
    let mut args = std::env::args().skip(1);
    let size: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(4 << 20);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(30);
    let prof = live_profile();
    let dst = present(size).unwrap();
    let part = Pair::new(&prof, MemoryMode::Part, Default::default()).unwrap();
    let to = Pair::new(&prof, MemoryMode::TransferOnly, Default::default()).unwrap();
    // SAFETY: dst outlives both pairs' use.
    let (kp, kt) = unsafe {
        (
            part.expose(dst.ptr(), size).unwrap(),
            to.expose(dst.ptr(), size).unwrap(),
        )
    };
    let src = pattern(5, size);
    let (mut p, mut t) = (Vec::new(), Vec::new());
    let reads0 = part.stats().unwrap();
    for _ in 0..rounds {
        p.push(part.write_us(&src, dst.addr(), kp).unwrap());
        t.push(to.write_us(&src, dst.addr(), kt).unwrap());
    }
    let reads1 = part.stats().unwrap();
    let (pm, tm) = (median(p), median(t));
    println!(
        "{size} B: PART {pm:.1} us, Transfer-Only {tm:.1} us, ratio {:.3}; per write: pagemap reads sender {:.1}, target {:.1}; range scans sender {:.1}, target {:.1}",
        pm / tm,
        (reads1.0.memory.pagemap_reads - reads0.0.memory.pagemap_reads) as f64 / rounds as f64,
        (reads1.1.memory.pagemap_reads - reads0.1.memory.pagemap_reads) as f64 / rounds as f64,
        (reads1.0.memory.range_scans - reads0.0.memory.range_scans) as f64 / rounds as f64,
        (reads1.1.memory.range_scans - reads0.1.memory.range_scans) as f64 / rounds as f64
    );
    if std::env::var_os("VERBOSE").is_some() {
        println!("{:?}", unpinned_live::memory::bench_residency(1024));
        println!("sender {:?}\ntarget {:?}", reads1.0, reads1.1);
        let ts = to.stats().unwrap();
        println!("TO sender {:?}\nTO target {:?}", ts.0, ts.1);
    }
}
