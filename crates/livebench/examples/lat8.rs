//! Distribution of 8 B and 4 MiB write latencies (diagnostics for `bench live`).
use unpinned_livebench::exp::{live_profile, pattern, present, Pair};
// Run with MODE=to for Transfer-Only.

fn pct(mut v: Vec<f64>) -> String {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let p = |q: f64| v[((v.len() - 1) as f64 * q) as usize];
    format!(
        "min {:.2} p10 {:.2} p50 {:.2} p90 {:.2}",
        p(0.0),
        p(0.1),
        p(0.5),
        p(0.9)
    )
}

fn main() {
    let mut prof = live_profile();
    // Engine overrides from `UNPINNED_SET` (`engine.max_outstanding_blocks=8,...`).
    for o in unpinned_live::edge::overrides_from_env() {
        prof = prof.with_override(&o).unwrap();
    }
    let mode = match std::env::var("MODE").as_deref() {
        Ok("to") => unpinned_live::MemoryMode::TransferOnly,
        _ => unpinned_live::MemoryMode::Part,
    };
    let pair = Pair::new(&prof, mode, Default::default()).unwrap();
    let big = 4 << 20;
    let dst = present(big).unwrap();
    // SAFETY: dst outlives the pair's use.
    let k = unsafe { pair.expose(dst.ptr(), big).unwrap() };
    let s8 = pattern(1, 8);
    let v: Vec<f64> = (0..3000)
        .map(|_| pair.write_us(&s8, dst.addr(), k).unwrap())
        .collect();
    println!("8 B us: {}", pct(v[500..].to_vec()));
    let sb = pattern(2, big);
    let v: Vec<f64> = (0..15)
        .map(|_| pair.write_us(&sb, dst.addr(), k).unwrap())
        .collect();
    println!("4 MiB us: {}", pct(v));
    let s4 = pattern(3, 4096);
    let mut miss = Vec::new();
    for _ in 0..200 {
        let fresh = unpinned_os::mapping::Mapping::anon(4096).unwrap();
        // SAFETY: fresh outlives the exposure (revoked below).
        let k = unsafe { pair.expose(fresh.ptr(), 4096).unwrap() };
        miss.push(pair.write_us(&s4, fresh.addr(), k).unwrap());
        pair.revoke(k);
    }
    println!("4 KiB missing us: {}", pct(miss));
    // The same loop into a fresh mapping touched first: what the loop costs without the fault.
    let mut pres = Vec::new();
    for _ in 0..200 {
        let fresh = unpinned_os::mapping::Mapping::anon(4096).unwrap();
        // SAFETY: our mapping, not exposed yet.
        unsafe { fresh.as_mut_slice()[0] = 1 };
        // SAFETY: fresh outlives the exposure (revoked below).
        let k = unsafe { pair.expose(fresh.ptr(), 4096).unwrap() };
        pres.push(pair.write_us(&s4, fresh.addr(), k).unwrap());
        pair.revoke(k);
    }
    println!("4 KiB present, same loop, us: {}", pct(pres));
    let (a, b) = pair.stats().unwrap();
    println!("sender {:?}\ntarget {:?}", a, b);
}
