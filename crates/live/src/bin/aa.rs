//! `unpinned-live-aa`: Active Access across real processes, run by the launcher
//! (`unpinned run -n N -- unpinned-live-aa SCENARIO ...`); the multi-process tests use it.
//!
//! - `dht SCHEME NOTIFY KEYS_PER_RANK SEED`: every rank inserts its keys (all owned by other
//!   ranks) concurrently; every rank then compares its volume with a sequential reference
//!   (crates/aa's `Volume::local_insert` of every rank's keys in issue order), looks keys up
//!   with RMA gets, and (AA) deletes half of them with active puts and checks again.
//!   Exits 1 on any difference.

use std::process::ExitCode;

use unpinned_aa::dht::{DhtMap, Volume, VolumeLayout};
use unpinned_live::active::dht::{Dht, Scheme};
use unpinned_live::active::Notify;
use unpinned_live::Runtime;

/// xorshift64*, deterministic per seed.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const SLOT_BITS: u32 = 8;

/// The keys rank `r` inserts: unique, owned by other ranks, slots from a small table so that
/// chains form.
fn keys_of(map: DhtMap, r: u32, n: u32, seed: u64) -> Vec<u64> {
    let mut rng = Rng(seed ^ (0x9e37_79b9_7f4a_7c15u64.wrapping_mul(r as u64 + 1)) | 1);
    (0..n)
        .map(|i| {
            let mut t = rng.below(map.procs as u64) as u32;
            if t == r {
                t = (t + 1) % map.procs;
            }
            let slot = rng.below(1 << SLOT_BITS) as u32;
            map.make_key(r * n + i + 1, t, slot)
        })
        .collect()
}

fn reference(
    map: DhtMap,
    layout: VolumeLayout,
    me: u32,
    n: u32,
    seed: u64,
    deleted: &[u64],
) -> std::collections::BTreeMap<u32, Vec<u64>> {
    let mut v = Volume::new(layout);
    for r in 0..map.procs {
        for k in keys_of(map, r, n, seed) {
            let (t, slot) = map.locate(k);
            if t == me {
                v.local_insert(k, slot).expect("reference heap");
            }
        }
    }
    for &k in deleted {
        let (t, slot) = map.locate(k);
        if t == me {
            assert!(v.local_delete(k, slot).0);
        }
    }
    v.contents()
}

fn dht(args: &[String]) -> Result<(), String> {
    let [scheme, notify, n, seed] = args else {
        return Err("usage: dht aa|rma poll|sleep KEYS_PER_RANK SEED".into());
    };
    let scheme: Scheme = scheme.parse()?;
    let notify: Notify = notify.parse()?;
    let n: u32 = n.parse().map_err(|e| format!("KEYS_PER_RANK: {e}"))?;
    let seed: u64 = seed.parse().map_err(|e| format!("SEED: {e}"))?;
    let rt = Runtime::from_env().map_err(|e| e.to_string())?;
    let (me, size) = (rt.rank(), rt.size());
    let heap = n * size + 16;
    let mut d = Dht::create(&rt, SLOT_BITS, heap, scheme, notify, 1 << 14).map_err(|e| e.to_string())?;
    let map = d.map();
    let mine = keys_of(map, me, n, seed);
    rt.barrier().map_err(|e| e.to_string())?;
    let t0 = std::time::Instant::now();
    let st = d.insert(&mine).map_err(|e| e.to_string())?;
    let secs = t0.elapsed().as_secs_f64();
    rt.barrier().map_err(|e| e.to_string())?;
    let layout = d.volume().layout();
    let want = reference(map, layout, me, n, seed, &[]);
    let got = d.volume().contents();
    if got != want {
        return Err(format!(
            "rank {me}: volume differs from the sequential reference after concurrent inserts: {} slots vs {} expected",
            got.len(),
            want.len()
        ));
    }
    let total: usize = got.values().map(Vec::len).sum();
    println!(
        "rank {me}: {} {} inserted {} keys in {secs:.3} s ({:.0} inserts/s, {} remote ops, {} collisions); volume holds {total} keys = reference",
        scheme.name(),
        notify.name(),
        st.inserts,
        st.inserts as f64 / secs,
        st.remote_ops,
        st.collisions
    );
    // RMA lookups: every own key found, absent keys not.
    for &k in mine.iter().step_by(3) {
        if !d.lookup(k).map_err(|e| e.to_string())? {
            return Err(format!("rank {me}: key {k:#x} not found"));
        }
    }
    for i in 0..20 {
        let t = (me + 1) % size;
        let absent = map.make_key(size * n + 1000 + i, t, i % (1 << SLOT_BITS));
        if d.lookup(absent).map_err(|e| e.to_string())? {
            return Err(format!("rank {me}: absent key {absent:#x} found"));
        }
    }
    if scheme == Scheme::Aa {
        let del: Vec<u64> = mine.iter().copied().step_by(2).collect();
        d.delete(&del).map_err(|e| e.to_string())?;
        rt.barrier().map_err(|e| e.to_string())?;
        let all_del: Vec<u64> = (0..size)
            .flat_map(|r| keys_of(map, r, n, seed).into_iter().step_by(2))
            .collect();
        let want = reference(map, layout, me, n, seed, &all_del);
        if d.volume().contents() != want {
            return Err(format!("rank {me}: volume differs from the reference after AA deletes"));
        }
        for (i, &k) in mine.iter().enumerate().step_by(5) {
            let found = d.lookup(k).map_err(|e| e.to_string())?;
            if found == (i % 2 == 0) {
                return Err(format!("rank {me}: key {k:#x} found={found} after deletes"));
            }
        }
        println!("rank {me}: deleted {} keys with active puts; volume = reference", del.len());
    }
    rt.barrier().map_err(|e| e.to_string())?;
    let rejected = d.volume().rejected.load(std::sync::atomic::Ordering::Relaxed);
    if let Some(rep) = d.stop_handler() {
        println!(
            "rank {me}: handler ({}) processed {} entries, {} wake-ups, notification median {} ns p90 {} ns",
            notify.name(),
            rep.entries,
            rep.notify_ns.len(),
            rep.notify_quantile_ns(0.5).unwrap_or(0),
            rep.notify_quantile_ns(0.9).unwrap_or(0)
        );
    }
    if rejected != 0 {
        return Err(format!("rank {me}: handler rejected {rejected} entries"));
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let r = match args.first().map(String::as_str) {
        Some("dht") => dht(&args[1..]),
        _ => Err("usage: unpinned-live-aa dht aa|rma poll|sleep KEYS_PER_RANK SEED".into()),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("unpinned-live-aa: {e}");
            ExitCode::FAILURE
        }
    }
}
