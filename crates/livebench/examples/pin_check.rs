//! Pin per transfer (mlock + Transfer-Only write + munlock) of 4 MiB into a destination that a
//! PART pair watches (translation cache registered) or not: does the registration change the
//! baseline `bench live` compares PART with? Alternating, medians of ROUNDS.
//! `cargo run --release -p unpinned-livebench --example pin_check -- [ROUNDS]`
use unpinned_live::MemoryMode;
use unpinned_livebench::exp::{live_profile, median, pattern, present, Pair};
use unpinned_livebench::schemes::mlock_range;

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20);
    let len = 4usize << 20;
    let prof = live_profile();
    let watched = present(len).unwrap();
    let plain = present(len).unwrap();
    let part = Pair::new(&prof, MemoryMode::Part, Default::default()).unwrap();
    let to = Pair::new(&prof, MemoryMode::TransferOnly, Default::default()).unwrap();
    // SAFETY: both buffers outlive the pairs' use.
    let (kp, kw, kn) = unsafe {
        (
            part.expose(watched.ptr(), len).unwrap(),
            to.expose(watched.ptr(), len).unwrap(),
            to.expose(plain.ptr(), len).unwrap(),
        )
    };
    let src = pattern(3, len);
    for _ in 0..5 {
        part.write_us(&src, watched.addr(), kp).unwrap();
    }
    let reg = part.stats().unwrap().1.memory.cache_registrations;
    let (mut w, mut n, mut tw, mut tn) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for r in 0..rounds {
        for k in 0..2 {
            let (buf, key, v, t) = if (r + k) % 2 == 0 {
                (&watched, kw, &mut w, &mut tw)
            } else {
                (&plain, kn, &mut n, &mut tn)
            };
            std::thread::sleep(std::time::Duration::from_millis(3));
            let t0 = std::time::Instant::now();
            mlock_range(buf.ptr(), len, true).unwrap();
            let x = to.write_us(&src, buf.addr(), key).unwrap();
            mlock_range(buf.ptr(), len, false).unwrap();
            v.push(t0.elapsed().as_secs_f64() * 1e6);
            t.push(x);
        }
    }
    println!(
        "target registrations {reg}; pin per transfer into the watched buffer {:.0} us (write {:.0} us), into a plain one {:.0} us (write {:.0} us)",
        median(w),
        median(tw),
        median(n),
        median(tn)
    );
}
