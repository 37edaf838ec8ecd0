//! `unpinned-live-aa`: Active Access across real processes, run by the launcher
//! (`unpinned run -n N -- unpinned-live-aa SCENARIO ...`); the multi-process tests use it.
//!
//! - `dht SCHEME NOTIFY KEYS_PER_RANK SEED`: every rank inserts its keys (all owned by other
//!   ranks) concurrently; every rank then compares its volume with a sequential reference
//!   (crates/aa's `Volume::local_insert` of every rank's keys in issue order), looks keys up
//!   with RMA gets, and (AA) deletes half of them with active puts and checks again.
//!   Exits 1 on any difference.
//! - `counter NOTIFY OPS SEED`: the access counter: every rank's objects are on pages marked
//!   `count_all` (puts and gets served and their metadata logged); every rank makes OPS
//!   random puts and gets to other ranks' objects, active-flushes, and each rank's handler
//!   counts must equal the true counts gathered from all ranks. Exits 1 otherwise.

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
    let mut d =
        Dht::create(&rt, SLOT_BITS, heap, scheme, notify, 1 << 14).map_err(|e| e.to_string())?;
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
            return Err(format!(
                "rank {me}: volume differs from the reference after AA deletes"
            ));
        }
        for (i, &k) in mine.iter().enumerate().step_by(5) {
            let found = d.lookup(k).map_err(|e| e.to_string())?;
            if found == (i % 2 == 0) {
                return Err(format!("rank {me}: key {k:#x} found={found} after deletes"));
            }
        }
        println!(
            "rank {me}: deleted {} keys with active puts; volume = reference",
            del.len()
        );
    }
    rt.barrier().map_err(|e| e.to_string())?;
    let rejected = d
        .volume()
        .rejected
        .load(std::sync::atomic::Ordering::Relaxed);
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

const OBJECTS: usize = 256;
const OBJECT_BYTES: u64 = 64;

fn counter(args: &[String]) -> Result<(), String> {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    use unpinned_live::active::{ActiveAccess, EntryKind, PageBits};
    use unpinned_live::mapping::Mapping;
    use unpinned_live::Perms;
    let [notify, ops, seed] = args else {
        return Err("usage: counter poll|sleep OPS SEED".into());
    };
    let notify: Notify = notify.parse()?;
    let ops: u32 = ops.parse().map_err(|e| format!("OPS: {e}"))?;
    let seed: u64 = seed.parse().map_err(|e| format!("SEED: {e}"))?;
    let rt = Runtime::from_env().map_err(|e| e.to_string())?;
    let (me, size) = (rt.rank(), rt.size());
    let e = |e: &dyn std::fmt::Display| e.to_string();
    // Objects on 4 pages, then the flushing page.
    let data_len = OBJECTS as u64 * OBJECT_BYTES;
    let mem = Mapping::anon(data_len as usize + 4096).map_err(|x| e(&x))?;
    // SAFETY: the mapping lives until the end of this function, after the last barrier; we
    // never read it (counted puts land there).
    let key = unsafe { rt.expose(mem.ptr(), mem.len(), Perms::RW) }.map_err(|x| e(&x))?;
    let aa = rt.active();
    let iuid = aa.create_log(2, 1 << 16).map_err(|x| e(&x))?;
    aa.assoc_pages(mem.addr(), data_len, PageBits::count_all(iuid))
        .map_err(|x| e(&x))?;
    aa.assoc_pages(
        mem.addr() + data_len,
        4096,
        ActiveAccess::flush_page_bits(iuid),
    )
    .map_err(|x| e(&x))?;
    // counts[2 * obj] = puts, counts[2 * obj + 1] = gets, as the handler sees them.
    let counts: Arc<Vec<AtomicU64>> =
        Arc::new((0..2 * OBJECTS).map(|_| AtomicU64::new(0)).collect());
    let (c, base) = (counts.clone(), mem.addr());
    let h = aa
        .spawn_handler(2, notify, move |en| {
            let obj = ((en.header.addr - base) / OBJECT_BYTES) as usize;
            let i = match en.header.kind {
                EntryKind::PutMeta => 2 * obj,
                _ => 2 * obj + 1,
            };
            c[i].fetch_add(1, Ordering::Relaxed);
        })
        .map_err(|x| e(&x))?;
    let regions = rt
        .exchange(mem.addr(), mem.len() as u64, key)
        .map_err(|x| e(&x))?;
    // truth[target][2 * obj + is_get]
    let mut truth = vec![vec![0u32; 2 * OBJECTS]; size as usize];
    let mut rng = Rng(seed ^ (me as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut word = [0u8; 8];
    for i in 0..ops {
        let mut t = rng.below(size as u64) as u32;
        if t == me {
            t = (t + 1) % size;
        }
        let obj = rng.below(OBJECTS as u64) as usize;
        let addr = regions[t as usize].addr + obj as u64 * OBJECT_BYTES;
        let rkey = regions[t as usize].key;
        if rng.below(2) == 0 {
            rt.write_blocking(t, &(i as u64).to_le_bytes(), addr, rkey)
                .map_err(|x| e(&x))?;
            truth[t as usize][2 * obj] += 1;
        } else {
            rt.read_blocking(t, &mut word, addr, rkey)
                .map_err(|x| e(&x))?;
            truth[t as usize][2 * obj + 1] += 1;
        }
    }
    for t in (0..size).filter(|&t| t != me) {
        let r = regions[t as usize];
        rt.active_flush(t, r.addr + data_len, r.key)
            .map_err(|x| e(&x))?;
    }
    let mine: Vec<u8> = truth
        .iter()
        .flatten()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let all = rt.all_gather(&mine).map_err(|x| e(&x))?;
    let mut want = vec![0u64; 2 * OBJECTS];
    for d in &all {
        let per = 2 * OBJECTS * 4;
        let mine_part = &d[me as usize * per..(me as usize + 1) * per];
        for (i, w) in want.iter_mut().enumerate() {
            *w += u32::from_le_bytes(mine_part[4 * i..4 * i + 4].try_into().expect("4")) as u64;
        }
    }
    let got: Vec<u64> = counts.iter().map(|c| c.load(Ordering::Relaxed)).collect();
    rt.barrier().map_err(|x| e(&x))?;
    let rep = h.stop().ok_or("the handler panicked")?;
    if got != want {
        let bad = got.iter().zip(&want).filter(|(a, b)| a != b).count();
        return Err(format!(
            "rank {me}: {bad} of {} counters differ from the true counts",
            got.len()
        ));
    }
    let (p, g): (u64, u64) = (
        want.iter().step_by(2).sum(),
        want.iter().skip(1).step_by(2).sum(),
    );
    println!(
        "rank {me}: counted {p} puts and {g} gets = true counts ({} handler, {} entries, notification median {} ns)",
        notify.name(),
        rep.entries,
        rep.notify_quantile_ns(0.5).unwrap_or(0)
    );
    rt.barrier().map_err(|x| e(&x))?;
    Ok(())
}

/// The reply-based active flush across processes: every rank issues `ops` active puts to random
/// other ranks, then `reply_flush`es every peer; at the barrier after the flushes each rank's
/// handler (slowed by `delay_us` per entry) must already have processed, per source, exactly
/// the puts that source issued, with the right values.
fn reply(args: &[String]) -> Result<(), String> {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    use unpinned_live::active::PageBits;
    use unpinned_live::mapping::Mapping;
    use unpinned_live::Perms;
    let [notify, ops, delay_us, seed] = args else {
        return Err("usage: reply poll|sleep OPS DELAY_US SEED".into());
    };
    let notify: Notify = notify.parse()?;
    let ops: u32 = ops.parse().map_err(|e| format!("OPS: {e}"))?;
    let delay_us: u64 = delay_us.parse().map_err(|e| format!("DELAY_US: {e}"))?;
    let seed: u64 = seed.parse().map_err(|e| format!("SEED: {e}"))?;
    let rt = Runtime::from_env().map_err(|e| e.to_string())?;
    let (me, size) = (rt.rank(), rt.size());
    let e = |e: &dyn std::fmt::Display| e.to_string();
    let mem = Mapping::anon(4096).map_err(|x| e(&x))?;
    // SAFETY: the mapping lives until the end of this function, after the last barrier; we
    // never read it (active puts are logged, not written).
    let key = unsafe { rt.expose(mem.ptr(), mem.len(), Perms::RW) }.map_err(|x| e(&x))?;
    let aa = rt.active();
    let iuid = aa.create_log(4, 1 << 16).map_err(|x| e(&x))?;
    aa.assoc_pages(mem.addr(), 4096, PageBits::active_put(iuid))
        .map_err(|x| e(&x))?;
    // Per source: entries processed and the sum of their values.
    let seen: Arc<Vec<[AtomicU64; 2]>> = Arc::new(
        (0..size)
            .map(|_| [AtomicU64::new(0), AtomicU64::new(0)])
            .collect(),
    );
    let s = seen.clone();
    let h = aa
        .spawn_handler(4, notify, move |en| {
            std::thread::sleep(std::time::Duration::from_micros(delay_us));
            let v = u64::from_le_bytes(en.data[..8].try_into().expect("8-byte puts"));
            let c = &s[en.header.source as usize];
            c[1].fetch_add(v, Ordering::SeqCst);
            c[0].fetch_add(1, Ordering::SeqCst);
        })
        .map_err(|x| e(&x))?;
    rt.reply_setup().map_err(|x| e(&x))?;
    let regions = rt
        .exchange(mem.addr(), mem.len() as u64, key)
        .map_err(|x| e(&x))?;
    // sent[target] = (count, sum)
    let mut sent = vec![(0u64, 0u64); size as usize];
    let vals: Vec<[u8; 8]> = (0..ops as u64)
        .map(|i| (i + 1 + ((me as u64) << 32)).to_le_bytes())
        .collect();
    let mut rng = Rng(seed ^ (me as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    for (i, v) in vals.iter().enumerate() {
        let mut t = rng.below(size as u64) as u32;
        if t == me {
            t = (t + 1) % size;
        }
        let r = regions[t as usize];
        let addr = r.addr + 8 * (i as u64 % 512);
        // SAFETY: `vals` lives until the reply flushes below, which complete every write.
        unsafe { rt.write_active(t, v.as_ptr(), addr, r.key, 8) }.map_err(|x| e(&x))?;
        sent[t as usize].0 += 1;
        sent[t as usize].1 += u64::from_le_bytes(*v);
    }
    let t0 = std::time::Instant::now();
    for t in (0..size).filter(|&t| t != me) {
        rt.reply_flush(t).map_err(|x| e(&x))?;
    }
    let flush_us = t0.elapsed().as_micros();
    let mine: Vec<u8> = sent
        .iter()
        .flat_map(|&(n, s)| n.to_le_bytes().into_iter().chain(s.to_le_bytes()))
        .collect();
    // Every rank's flushes returned before this collective.
    let all = rt.all_gather(&mine).map_err(|x| e(&x))?;
    for (src, d) in all.iter().enumerate() {
        let at = 16 * me as usize;
        let n = u64::from_le_bytes(d[at..at + 8].try_into().expect("8"));
        let sum = u64::from_le_bytes(d[at + 8..at + 16].try_into().expect("8"));
        let got = [
            seen[src][0].load(Ordering::SeqCst),
            seen[src][1].load(Ordering::SeqCst),
        ];
        if got != [n, sum] {
            return Err(format!(
                "rank {me}: after the reply flushes, source {src} issued {n} puts (sum {sum}) but the handler processed {} (sum {})",
                got[0], got[1]
            ));
        }
    }
    println!(
        "rank {me}: {ops} active puts, reply flushes to {} peers in {flush_us} us, all processed ({} handler, {delay_us} us/entry)",
        size - 1,
        notify.name()
    );
    rt.barrier().map_err(|x| e(&x))?;
    h.stop().ok_or("the handler panicked")?;
    rt.barrier().map_err(|x| e(&x))?;
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let r = match args.first().map(String::as_str) {
        Some("dht") => dht(&args[1..]),
        Some("counter") => counter(&args[1..]),
        Some("reply") => reply(&args[1..]),
        _ => Err("usage: unpinned-live-aa dht aa|rma poll|sleep KEYS_PER_RANK SEED | counter poll|sleep OPS SEED | reply poll|sleep OPS DELAY_US SEED".into()),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("unpinned-live-aa: {e}");
            ExitCode::FAILURE
        }
    }
}
