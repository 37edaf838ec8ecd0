//! `dsm-live-selftest`: programs for `unpinned run -n N -- dsm-live-selftest ...` that check
//! the live DSM end to end (used by the crate's integration tests).
//!
//! - `counter THREADS ITERS`: every worker adds 1 to a shared counter ITERS times under lock
//!   0; every rank then checks the exact total.
//! - `litmus mp|sb|iriw ITERS SEED`: sequential-consistency litmus tests over 2 ranks (IRIW
//!   with 2 threads per rank), random delays; rank 0 counts outcomes and fails on a forbidden
//!   one. Iteration `i` uses variable pair `i % 3` and writes the value `i`, so a read sees
//!   either the new value (`i`) or an old one (`< i`), and stale read copies from earlier
//!   iterations must have been invalidated.
//! - `readshare ITERS`: 3 ranks; rank 1 writes a minipage managed by rank 0, rank 2 reads it,
//!   then rank 0 reads it: a shared copy not at the manager, so rank 0 pulls it with an RDMA
//!   read from rank 1 (unless `--set dsm.rdma_read_shared=false`). Every read must see the value written.
//! - `faultcost ITERS`: 2 ranks alternately write one minipage (each write takes ownership
//!   and data from the other rank) with a barrier after each; prints the median iteration
//!   time minus the median of barriers alone (about a write fault served by the peer, us).
//! - `safecopy`: 2 ranks; DSM faults (each rank writes, then reads, a minipage the other
//!   manages) interleaved with the live runtime's fault-safe copies from and to an unmapped
//!   and an inaccessible page, in the same worker thread: the DSM's SIGSEGV handler must pass
//!   the copies' faults on to the copy's handler (each copy reports where it stopped), and the
//!   DSM faults must still be served.
//! - `die`: rank 1 exits right after setup; rank 0 then faults on a minipage rank 1 manages
//!   and must fail with a clear error (exit code 75), not hang.
//!
//! Exit codes: 0 pass, 1 check failed, 2 usage, 75 a peer died.

use std::sync::Mutex;

use unpinned_dsm::space::{SharedSpace, Worker};
use unpinned_dsm_live::{launch_space, LiveSpace, SpaceConfig};

fn usage() -> ! {
    eprintln!(
        "usage: dsm-live-selftest counter THREADS ITERS | litmus mp|sb|iriw ITERS SEED | readshare ITERS | faultcost ITERS | safecopy | die"
    );
    std::process::exit(2)
}

fn arg<T: std::str::FromStr>(a: &[String], i: usize) -> T {
    a.get(i)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| usage())
}

fn space(threads: usize, app: &str) -> LiveSpace {
    let mut cfg = SpaceConfig::new(threads);
    cfg.app = app.into();
    launch_space(cfg).unwrap_or_else(|e| {
        eprintln!("dsm-live-selftest: {e}");
        std::process::exit(1)
    })
}

fn alloc_u64(s: &LiveSpace) -> usize {
    s.alloc(8, 8).expect("alloc") as usize
}

fn rd(a: usize) -> u64 {
    // SAFETY: `a` is a shared u64 from `alloc`; the DSM makes the access valid (it may fault).
    unsafe { std::ptr::read_volatile(a as *const u64) }
}

fn wr(a: usize, v: u64) {
    // SAFETY: as `rd`.
    unsafe { std::ptr::write_volatile(a as *mut u64, v) }
}

fn counter(threads: usize, iters: u64) -> i32 {
    let s = space(threads, "counter");
    let c = alloc_u64(&s);
    let total = (s.ranks() * threads) as u64 * iters;
    let bad = Mutex::new(None);
    s.spawn_workers(|s, w| {
        s.barrier(w);
        for _ in 0..iters {
            s.lock(w, 0);
            wr(c, rd(c) + 1);
            s.unlock(w, 0);
        }
        s.barrier(w);
        let got = rd(c);
        if got != total {
            *bad.lock().unwrap() = Some(got);
        }
        s.barrier(w);
    })
    .expect("workers");
    let st = s.stats();
    eprintln!(
        "rank {}: counter ok={} faults r/w {}/{} locks {} msgs {}",
        s.rank(),
        bad.lock().unwrap().is_none(),
        st.read_faults,
        st.write_faults,
        st.locks,
        st.endpoint.sent
    );
    s.finish().expect("finish");
    match bad.into_inner().unwrap() {
        None => 0,
        Some(got) => {
            eprintln!("counter: expected {total}, read {got}");
            1
        }
    }
}

fn delay(seed: &mut u64) {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    let spins = *seed % 2000;
    for _ in 0..spins {
        std::hint::spin_loop();
    }
}

fn litmus(kind: &str, iters: usize, seed: u64) -> i32 {
    let threads = if kind == "iriw" { 2 } else { 1 };
    let s = space(threads, kind);
    if s.ranks() != 2 {
        eprintln!("litmus needs 2 ranks");
        return 2;
    }
    let pool: Vec<(usize, usize)> = (0..3).map(|_| (alloc_u64(&s), alloc_u64(&s))).collect();
    let vars: Vec<(usize, usize)> = (0..iters).map(|i| pool[i % 3]).collect();
    // (iteration, worker, first read, second read)
    let results: Mutex<Vec<(u32, u32, u8, u8)>> = Mutex::new(Vec::new());
    s.spawn_workers(|s, w: Worker| {
        let mut rng = seed ^ (w.id as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        for (i, &(x, y)) in vars.iter().enumerate() {
            let v = i as u64 + 1;
            s.barrier(w);
            delay(&mut rng);
            let r = match (kind, w.id) {
                ("mp", 0) => {
                    wr(x, v);
                    wr(y, v);
                    None
                }
                ("mp", _) => {
                    let r1 = rd(y);
                    Some((r1, rd(x)))
                }
                ("sb", 0) => {
                    wr(x, v);
                    Some((rd(y), 0))
                }
                ("sb", _) => {
                    wr(y, v);
                    Some((rd(x), 0))
                }
                ("iriw", 0) => {
                    wr(x, v);
                    None
                }
                ("iriw", 2) => {
                    wr(y, v);
                    None
                }
                ("iriw", 1) => {
                    let r1 = rd(x);
                    Some((r1, rd(y)))
                }
                ("iriw", _) => {
                    let r3 = rd(y);
                    Some((r3, rd(x)))
                }
                _ => None,
            };
            if let Some((a, b)) = r {
                // 1: the new value of this iteration, 0: an older one, 2: impossible garbage.
                let new = |r: u64| {
                    if r == v {
                        1
                    } else if r < v {
                        0
                    } else {
                        2
                    }
                };
                results
                    .lock()
                    .unwrap()
                    .push((i as u32, w.id as u32, new(a), new(b)));
            }
        }
        s.barrier(w);
    })
    .expect("workers");
    let mine: Vec<u8> = results
        .into_inner()
        .unwrap()
        .iter()
        .flat_map(|&(i, w, a, b)| {
            let mut v = i.to_le_bytes().to_vec();
            v.extend_from_slice(&w.to_le_bytes());
            v.push(a);
            v.push(b);
            v
        })
        .collect();
    let all = s.runtime().all_gather(&mine).expect("all_gather");
    let rank = s.rank();
    let st = s.stats();
    s.finish().expect("finish");
    if rank != 0 {
        return 0;
    }
    // per iteration: reads by worker
    let mut per: Vec<std::collections::BTreeMap<u32, (u8, u8)>> = vec![Default::default(); iters];
    for d in &all {
        for c in d.chunks_exact(10) {
            let i = u32::from_le_bytes(c[0..4].try_into().unwrap()) as usize;
            let w = u32::from_le_bytes(c[4..8].try_into().unwrap());
            per[i].insert(w, (c[8], c[9]));
        }
    }
    let mut hist: std::collections::BTreeMap<String, usize> = Default::default();
    let mut forbidden = 0;
    for m in &per {
        let (key, bad) = match kind {
            "mp" => {
                let (r1, r2) = m[&1];
                (format!("r1={r1} r2={r2}"), r1 == 1 && r2 == 0)
            }
            "sb" => {
                let (r1, _) = m[&0];
                let (r2, _) = m[&1];
                (format!("r1={r1} r2={r2}"), r1 == 0 && r2 == 0)
            }
            _ => {
                let (r1, r2) = m[&1];
                let (r3, r4) = m[&3];
                (
                    format!("r1={r1} r2={r2} r3={r3} r4={r4}"),
                    r1 == 1 && r2 == 0 && r3 == 1 && r4 == 0,
                )
            }
        };
        let garbage = m.values().any(|&(a, b)| a == 2 || b == 2);
        forbidden += (bad || garbage) as usize;
        *hist.entry(key).or_default() += 1;
    }
    eprintln!(
        "litmus {kind} (seed {seed}, {iters} runs): {hist:?}; rank 0 faults r/w {}/{}",
        st.read_faults, st.write_faults
    );
    if forbidden > 0 {
        eprintln!("litmus {kind}: {forbidden} forbidden outcomes (not sequentially consistent)");
        return 1;
    }
    0
}

fn readshare(iters: u64) -> i32 {
    let s = space(1, "readshare");
    if s.ranks() != 3 {
        eprintln!("readshare needs 3 ranks");
        return 2;
    }
    let x = alloc_u64(&s); // minipage 0: managed by rank 0
    let bad = Mutex::new(0u64);
    s.spawn_workers(|s, w| {
        for i in 1..=iters {
            s.barrier(w);
            if s.rank() == 1 {
                wr(x, i);
            }
            s.barrier(w);
            if s.rank() == 2 && rd(x) != i {
                *bad.lock().unwrap() += 1;
            }
            s.barrier(w);
            if s.rank() == 0 && rd(x) != i {
                *bad.lock().unwrap() += 1;
            }
        }
        s.barrier(w);
    })
    .expect("workers");
    let st = s.stats();
    let rank = s.rank();
    let want_reads = s.rdma_read_shared();
    s.finish().expect("finish");
    let bad = bad.into_inner().unwrap();
    eprintln!(
        "rank {rank}: readshare wrong reads {bad}, RDMA reads {}, data writes {}",
        st.endpoint.data_reads, st.endpoint.data_writes
    );
    if bad > 0
        || (rank == 0 && want_reads && st.endpoint.data_reads != iters)
        || (!want_reads && st.endpoint.data_reads != 0)
    {
        return 1;
    }
    0
}

fn faultcost(iters: u64) -> i32 {
    let s = space(1, "faultcost");
    let x = alloc_u64(&s);
    let out = Mutex::new((0.0, 0.0));
    s.spawn_workers(|s, w| {
        for _ in 0..20 {
            s.barrier(w);
        }
        // Medians of single iterations: robust to a descheduled rank on a loaded host.
        let med = |mut v: Vec<f64>| {
            v.sort_by(|a, b| a.partial_cmp(b).unwrap());
            v[v.len() / 2]
        };
        let mut bars = Vec::new();
        for _ in 0..iters {
            let t = std::time::Instant::now();
            s.barrier(w);
            bars.push(t.elapsed().as_secs_f64() * 1e6);
        }
        let mut boths = Vec::new();
        for i in 0..iters {
            let t = std::time::Instant::now();
            if i % 2 == s.rank() as u64 {
                wr(x, i);
            }
            s.barrier(w);
            boths.push(t.elapsed().as_secs_f64() * 1e6);
        }
        let (barrier_us, both_us) = (med(bars), med(boths));
        *out.lock().unwrap() = (barrier_us, both_us);
    })
    .expect("workers");
    let st = s.stats();
    let rank = s.rank();
    let context = s.context().name();
    s.finish().expect("finish");
    let (b, both) = out.into_inner().unwrap();
    eprintln!(
        "rank {rank}: context {} barrier {b:.1} us, write+barrier {both:.1} us, write fault ~{:.1} us; faults w {}",
        context,
        both - b,
        st.write_faults
    );
    0
}

/// A fault-safe copy of 64 bytes from `src` to `dst`: `Some(address that faulted)`.
fn safe_copy(dst: *mut u8, src: *const u8) -> Option<u64> {
    // SAFETY: disjoint 64-byte ranges, each live or a hole the copy must report.
    unsafe { unpinned_os::safecopy::copy(dst, src, 64) }
        .err()
        .map(|f| f.addr)
}

fn safecopy() -> i32 {
    let s = space(1, "safecopy");
    if s.ranks() != 2 {
        eprintln!("safecopy needs 2 ranks");
        return 2;
    }
    let a = alloc_u64(&s); // minipage 0: managed by rank 0
    let b = alloc_u64(&s); // minipage 1: managed by rank 1
    let other = if s.rank() == 0 { b } else { a };
    let mine = if s.rank() == 0 { a } else { b };
    let errors = Mutex::new(Vec::<String>::new());
    s.spawn_workers(|s, w| {
        let fail = |m: String| errors.lock().unwrap().push(m);
        let page = unpinned_os::PAGE_BYTES as usize;
        // Two pages: the first made inaccessible, the second unmapped just before its copies.
        let m = unpinned_os::mapping::Mapping::anon(2 * page).expect("map");
        let (none, hole) = (m.ptr(), m.ptr().wrapping_add(page));
        // SAFETY: changing the protection of the first page of our own mapping; nothing
        // references it.
        assert_eq!(
            unsafe { libc::mprotect(none as *mut libc::c_void, page, libc::PROT_NONE) },
            0
        );
        let mut buf = [7u8; 64];
        s.barrier(w);
        wr(other, 10 + s.rank() as u64); // a DSM write fault, served by the peer
        for (name, p) in [("inaccessible", none), ("unmapped", hole)] {
            if name == "unmapped" {
                // SAFETY: unmapping the second page of our own mapping; nothing references it.
                assert_eq!(unsafe { libc::munmap(hole as *mut libc::c_void, page) }, 0);
            }
            if safe_copy(buf.as_mut_ptr(), p) != Some(p as u64) {
                fail(format!("the copy from the {name} page did not report it"));
            }
            if safe_copy(p, buf.as_ptr()) != Some(p as u64) {
                fail(format!("the copy to the {name} page did not report it"));
            }
        }
        s.barrier(w);
        // DSM read faults after the copies: the requestor still serves its faults.
        if rd(other) != 10 + s.rank() as u64 || rd(mine) != 11 - s.rank() as u64 {
            fail(format!("rank {} read wrong values", s.rank()));
        }
        s.barrier(w);
    })
    .expect("workers");
    let st = s.stats();
    let rank = s.rank();
    s.finish().expect("finish");
    let errors = errors.into_inner().unwrap();
    eprintln!(
        "rank {rank}: safecopy: {} write faults, {} read faults, fault-safe copies: {}",
        st.write_faults,
        st.read_faults,
        if errors.is_empty() { "ok" } else { "FAILED" }
    );
    for e in &errors {
        eprintln!("rank {rank}: {e}");
    }
    if !errors.is_empty() || st.write_faults == 0 || st.read_faults == 0 {
        return 1;
    }
    0
}

fn die() -> i32 {
    let s = space(1, "die");
    let _a = alloc_u64(&s);
    let b = alloc_u64(&s); // minipage 1: managed by rank 1
    s.runtime().barrier().expect("barrier");
    if s.rank() == 1 {
        // A crash: no finish, no goodbye.
        // SAFETY: ending this process on purpose.
        unsafe { libc::_exit(3) };
    }
    std::thread::sleep(std::time::Duration::from_millis(50));
    let v = rd(b); // waits for rank 1, which is gone: must fail with exit code 75
    eprintln!("die: read {v} from a dead rank's minipage");
    1
}

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let code = match a.first().map(String::as_str) {
        Some("counter") => counter(arg(&a, 1), arg(&a, 2)),
        Some("litmus") => litmus(
            a.get(1)
                .map(String::as_str)
                .filter(|k| ["mp", "sb", "iriw"].contains(k))
                .unwrap_or_else(|| usage()),
            arg(&a, 2),
            arg(&a, 3),
        ),
        Some("readshare") => readshare(arg(&a, 1)),
        Some("faultcost") => faultcost(arg(&a, 1)),
        Some("safecopy") => safecopy(),
        Some("die") => die(),
        _ => usage(),
    };
    std::process::exit(code);
}
