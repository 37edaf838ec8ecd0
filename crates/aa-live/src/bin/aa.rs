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
//! - `loggets NOTIFY OPS SEED`: logging of gets for fault tolerance: every rank's region logs
//!   the gets it serves with their data; every rank makes OPS random gets (folded into its
//!   state, per target) and plain puts (which change the data behind later gets) to other
//!   ranks; then every target replays each source's logged gets and the folds must equal the
//!   sources' states. Exits 1 otherwise.
//! - `sort NOTIFY KEYS_PER_RANK SEED`: the fault-tolerant parallel sort: every rank sorts
//!   its seeded random keys and fetches its bucket from every other rank with gets that the
//!   targets log with their data; outputs are checked sorted, in range and a permutation of
//!   the input; then the last rank drops its output, every rank zeroes its key region, and
//!   the last rank rebuilds its output from the targets' logs (and its own seeded input): it
//!   must be identical. Exits 1 otherwise.
//! - `checkpoint NOTIFY EPOCHS SEED`: incremental checkpointing of remotely written pages:
//!   every rank checkpoints its 64-page region (a full base, then one increment per epoch)
//!   while the other ranks write random ranges of a few hot pages into it; after every
//!   epoch the base plus the increments must restore the region byte for byte. Prints the
//!   bytes copied against full checkpoints. Exits 1 otherwise.
//! - `reply NOTIFY OPS DELAY_US SEED`: the reply-based active flush: every rank issues OPS
//!   active puts (`write_active`) to random other ranks and `reply_flush`es every peer; each
//!   handler (DELAY_US per entry) must by then have processed exactly what each source issued.
//!   Exits 1 otherwise.

use std::process::ExitCode;

use unpinned_aa::dht::{DhtMap, Volume, VolumeLayout};
use unpinned_aa_live::dht::{Dht, Scheme};
use unpinned_aa_live::ActiveRuntime;
use unpinned_aa_live::Notify;

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
    v.contents().expect("the reference volume has no cycle")
}

fn dht(args: &[String]) -> Result<(), String> {
    let [scheme, notify, n, seed] = args else {
        return Err("usage: dht aa|rma poll|sleep KEYS_PER_RANK SEED".into());
    };
    let scheme: Scheme = scheme.parse()?;
    let notify: Notify = notify.parse()?;
    let n: u32 = n.parse().map_err(|e| format!("KEYS_PER_RANK: {e}"))?;
    let seed: u64 = seed.parse().map_err(|e| format!("SEED: {e}"))?;
    let rt = ActiveRuntime::from_env().map_err(|e| e.to_string())?;
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
    let got = d
        .volume()
        .contents()
        .map_err(|e| format!("rank {me}: {e}"))?;
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
    // Every rank's lookups end before any delete starts. A delete of the key in a slot's
    // first word moves the chain's first cell into the slot (crates/aa's `local_delete`:
    // key, then next pointer); an RMA lookup reads the slot's key and then its next pointer,
    // so one that reads the old key and the new pointer skips the moved key: "not found"
    // for a key that is there (3 of 300 runs before this barrier). Lookups are not atomic
    // against concurrent deletes of the same slot; this program checks each phase on its own.
    rt.barrier().map_err(|e| e.to_string())?;
    if scheme == Scheme::Aa {
        let del: Vec<u64> = mine.iter().copied().step_by(2).collect();
        d.delete(&del).map_err(|e| e.to_string())?;
        rt.barrier().map_err(|e| e.to_string())?;
        let all_del: Vec<u64> = (0..size)
            .flat_map(|r| keys_of(map, r, n, seed).into_iter().step_by(2))
            .collect();
        let want = reference(map, layout, me, n, seed, &all_del);
        if d.volume()
            .contents()
            .map_err(|e| format!("rank {me}: {e}"))?
            != want
        {
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
    use unpinned_aa_live::{ActiveAccess, EntryKind, PageBits};
    use unpinned_live::Perms;
    use unpinned_os::mapping::Mapping;
    let [notify, ops, seed] = args else {
        return Err("usage: counter poll|sleep OPS SEED".into());
    };
    let notify: Notify = notify.parse()?;
    let ops: u32 = ops.parse().map_err(|e| format!("OPS: {e}"))?;
    let seed: u64 = seed.parse().map_err(|e| format!("SEED: {e}"))?;
    let rt = ActiveRuntime::from_env().map_err(|e| e.to_string())?;
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

const LOGGETS_REGION_BYTES: u64 = 4 * 4096;

/// The reader's state: a fold over the bytes its gets returned, in order.
fn fold(state: u64, data: &[u8]) -> u64 {
    data.iter()
        .fold(state, |s, &b| s.wrapping_mul(31).wrapping_add(b as u64))
}

fn loggets(args: &[String]) -> Result<(), String> {
    use unpinned_aa_live::loggets::GetLogger;
    use unpinned_live::Perms;
    use unpinned_os::mapping::Mapping;
    let [notify, ops, seed] = args else {
        return Err("usage: loggets poll|sleep OPS SEED".into());
    };
    let notify: Notify = notify.parse()?;
    let ops: u32 = ops.parse().map_err(|e| format!("OPS: {e}"))?;
    let seed: u64 = seed.parse().map_err(|e| format!("SEED: {e}"))?;
    let rt = ActiveRuntime::from_env().map_err(|e| e.to_string())?;
    let (me, size) = (rt.rank(), rt.size());
    let e = |e: &dyn std::fmt::Display| e.to_string();
    let mem = Mapping::anon(LOGGETS_REGION_BYTES as usize).map_err(|x| e(&x))?;
    // SAFETY: fresh private mapping, not yet exposed.
    unsafe {
        for i in 0..mem.len() {
            *mem.ptr().add(i) = (i as u8).wrapping_mul(7).wrapping_add(me as u8);
        }
    }
    // SAFETY: the mapping lives until the end of this function, after the last barrier; we
    // read it only after the barrier that follows every rank's accesses.
    let key = unsafe { rt.expose(mem.ptr(), mem.len(), Perms::RW) }.map_err(|x| e(&x))?;
    let logger = GetLogger::start(
        rt.active(),
        3,
        1 << 16,
        mem.addr(),
        mem.len() as u64,
        notify,
    )
    .map_err(|x| e(&x))?;
    let regions = rt
        .exchange(mem.addr(), mem.len() as u64, key)
        .map_err(|x| e(&x))?;
    // Per target: (state, gets).
    let mut states = vec![(0u64, 0u64); size as usize];
    let mut rng = Rng(seed ^ (me as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut buf = vec![0u8; 512];
    let mut puts = 0u64;
    for _ in 0..ops {
        let mut t = rng.below(size as u64) as u32;
        if t == me {
            t = (t + 1) % size;
        }
        let len = 1 + rng.below(512);
        let off = rng.below(LOGGETS_REGION_BYTES - len);
        let r = regions[t as usize];
        let b = &mut buf[..len as usize];
        if rng.below(2) == 0 {
            rt.read_blocking(t, b, r.addr + off, r.key)
                .map_err(|x| e(&x))?;
            let s = &mut states[t as usize];
            *s = (fold(s.0, b), s.1 + 1);
        } else {
            for x in b.iter_mut() {
                *x = rng.next() as u8;
            }
            rt.write_blocking(t, b, r.addr + off, r.key)
                .map_err(|x| e(&x))?;
            puts += 1;
        }
    }
    // Every rank's accesses are complete: replay the log of every source.
    rt.barrier().map_err(|x| e(&x))?;
    let (replayed, stale, kept_bytes) = logger
        .with_store(|st| {
            let mut out = Vec::with_capacity(16 * size as usize);
            let mut stale = 0u64;
            for s in 0..size {
                let (mut f, mut n) = (0u64, 0u64);
                for (_, addr, data) in st.replay(s) {
                    f = fold(f, data);
                    n += 1;
                    // SAFETY: a logged get lies inside our exposed region; every access
                    // is complete (barrier above), so nobody writes it now.
                    let now = unsafe {
                        std::slice::from_raw_parts(*addr as usize as *const u8, data.len())
                    };
                    stale += u64::from(now != data.as_slice());
                }
                out.extend_from_slice(&f.to_le_bytes());
                out.extend_from_slice(&n.to_le_bytes());
            }
            (out, stale, st.bytes())
        })
        .ok_or_else(|| format!("rank {me}: the handler did not drain its log"))?;
    let all = rt.all_gather(&replayed).map_err(|x| e(&x))?;
    let mut gets = 0u64;
    for t in (0..size).filter(|&t| t != me) {
        let d = &all[t as usize];
        let at = 16 * me as usize;
        let f = u64::from_le_bytes(d[at..at + 8].try_into().expect("8"));
        let n = u64::from_le_bytes(d[at + 8..at + 16].try_into().expect("8"));
        let (want_f, want_n) = states[t as usize];
        if (f, n) != (want_f, want_n) {
            return Err(format!(
                "rank {me}: replay of rank {t}'s log gives {n} gets, state {f:#x}; the reader saw {want_n} gets, state {want_f:#x}"
            ));
        }
        gets += n;
    }
    rt.barrier().map_err(|x| e(&x))?;
    let rep = logger.stop().ok_or("the handler panicked")?;
    println!(
        "rank {me}: {gets} gets (and {puts} puts) replayed from the targets' logs to the same state; this rank's log kept {kept_bytes} bytes in {} entries, {stale} of which differ from its memory now",
        rep.entries
    );
    rt.barrier().map_err(|x| e(&x))?;
    Ok(())
}

/// (count, wrapping sum, xor) of keys: a permutation check across ranks.
fn digest(keys: &[u64]) -> [u64; 3] {
    keys.iter().fold([0, 0, 0], |d, &k| {
        [
            d[0] + 1,
            d[1].wrapping_add(k),
            d[2] ^ k.rotate_left((k % 64) as u32),
        ]
    })
}

fn sort(args: &[String]) -> Result<(), String> {
    use unpinned_aa_live::loggets::GetLogger;
    use unpinned_aa_live::sort::{
        bucket_bounds, bucket_of, keys_from_bytes, merge_runs, splitters,
    };
    use unpinned_live::Perms;
    use unpinned_os::mapping::Mapping;
    let [notify, n, seed] = args else {
        return Err("usage: sort poll|sleep KEYS_PER_RANK SEED".into());
    };
    let notify: Notify = notify.parse()?;
    let n: u64 = n.parse().map_err(|e| format!("KEYS_PER_RANK: {e}"))?;
    let seed: u64 = seed.parse().map_err(|e| format!("SEED: {e}"))?;
    if n == 0 || n > 1 << 24 {
        return Err("KEYS_PER_RANK must be 1..=16777216".into());
    }
    let rt = ActiveRuntime::from_env().map_err(|e| e.to_string())?;
    let (me, size) = (rt.rank(), rt.size());
    let e = |e: &dyn std::fmt::Display| e.to_string();
    // The input of rank r: reproducible from the seed (a restarted rank reads it again).
    let input = |r: u32| -> Vec<u64> {
        let mut rng = Rng(seed ^ (r as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let mut k: Vec<u64> = (0..n).map(|_| rng.next()).collect();
        k.sort_unstable();
        k
    };
    let keys = input(me);
    let region_bytes = (n * 8).div_ceil(4096) * 4096;
    let mem = Mapping::anon(region_bytes as usize).map_err(|x| e(&x))?;
    // SAFETY: fresh private mapping of `region_bytes` >= 8 n bytes, not yet exposed.
    unsafe { std::ptr::copy_nonoverlapping(keys.as_ptr() as *const u8, mem.ptr(), keys.len() * 8) };
    // SAFETY: the mapping lives until the end of this function, after the last barrier; we
    // write it again only after the barrier that follows every rank's gets.
    let key = unsafe { rt.expose(mem.ptr(), mem.len(), Perms::RW) }.map_err(|x| e(&x))?;
    // The log holds at least the largest get (a whole bucket) with its header.
    let log_bytes = u32::try_from((n * 8 + 4096).next_power_of_two().max(1 << 16))
        .map_err(|_| "KEYS_PER_RANK too large for one access log")?;
    let logger = GetLogger::start(rt.active(), 4, log_bytes, mem.addr(), region_bytes, notify)
        .map_err(|x| e(&x))?;
    let regions = rt
        .exchange(mem.addr(), mem.len() as u64, key)
        .map_err(|x| e(&x))?;
    let sp = splitters(size);
    let bounds: Vec<u8> = bucket_bounds(&keys, &sp)
        .into_iter()
        .flat_map(|(o, l)| [o.to_le_bytes(), l.to_le_bytes()])
        .flatten()
        .collect();
    let all_bounds = rt.all_gather(&bounds).map_err(|x| e(&x))?;
    let bound = |src: u32, b: u32| -> (u64, u64) {
        let d = &all_bounds[src as usize][16 * b as usize..16 * b as usize + 16];
        let w = |i: usize| u64::from_le_bytes(d[i..i + 8].try_into().expect("8"));
        (w(0), w(8))
    };
    // The exchange: my bucket from every rank, with gets (logged at the targets).
    let t0 = std::time::Instant::now();
    let mut runs = Vec::with_capacity(size as usize);
    let mut fetched_bytes = 0u64;
    for src in 0..size {
        let (off, len) = bound(src, me);
        if src == me {
            runs.push(keys[off as usize / 8..(off + len) as usize / 8].to_vec());
        } else if len > 0 {
            let r = regions[src as usize];
            let mut buf = vec![0u8; len as usize];
            rt.read_blocking(src, &mut buf, r.addr + off, r.key)
                .map_err(|x| e(&x))?;
            fetched_bytes += len;
            runs.push(keys_from_bytes(&buf));
        }
    }
    let out = merge_runs(&runs);
    let secs = t0.elapsed().as_secs_f64();
    if !out.windows(2).all(|w| w[0] <= w[1])
        || out.iter().any(|&k| bucket_of(&sp, k) != me as usize)
    {
        return Err(format!(
            "rank {me}: output not sorted or outside its bucket"
        ));
    }
    let pack = |d: [u64; 3]| -> Vec<u8> { d.iter().flat_map(|v| v.to_le_bytes()).collect() };
    let mut mine = pack(digest(&keys));
    mine.extend(pack(digest(&out)));
    let all = rt.all_gather(&mine).map_err(|x| e(&x))?;
    let sum = |at: usize| -> [u64; 3] {
        all.iter().fold([0, 0, 0], |s, d| {
            let w =
                |i: usize| u64::from_le_bytes(d[at + 8 * i..at + 8 * i + 8].try_into().expect("8"));
            [s[0] + w(0), s[1].wrapping_add(w(1)), s[2] ^ w(2)]
        })
    };
    if sum(0) != sum(24) {
        return Err(format!(
            "rank {me}: the outputs are not a permutation of the inputs"
        ));
    }
    // Recovery: the last rank loses its output; every rank reuses (zeroes) its key region,
    // so only the logs still hold the data the lost rank fetched.
    let lost = size - 1;
    rt.barrier().map_err(|x| e(&x))?;
    // SAFETY: every rank's gets are complete (barrier above) and none follows.
    unsafe { std::ptr::write_bytes(mem.ptr(), 0, mem.len()) };
    let replay: Vec<u8> = if me == lost {
        Vec::new()
    } else {
        logger
            .with_store(|st| {
                st.replay(lost)
                    .flat_map(|(_, _, d)| d.iter().copied())
                    .collect()
            })
            .ok_or_else(|| format!("rank {me}: the handler did not drain its log"))?
    };
    let logged = rt.all_gather(&replay).map_err(|x| e(&x))?;
    if me == lost {
        let own = input(me);
        let (off, len) = bound(me, me);
        let mut runs = vec![own[off as usize / 8..(off + len) as usize / 8].to_vec()];
        runs.extend(
            logged
                .iter()
                .enumerate()
                .filter(|&(t, _)| t as u32 != me)
                .map(|(_, d)| keys_from_bytes(d)),
        );
        let rebuilt = merge_runs(&runs);
        if rebuilt != out {
            return Err(format!(
                "rank {me}: output rebuilt from the logs differs ({} keys vs {})",
                rebuilt.len(),
                out.len()
            ));
        }
        println!(
            "rank {me}: output of {} keys rebuilt from {} bytes of the other ranks' logs = the lost output",
            rebuilt.len(),
            logged.iter().map(Vec::len).sum::<usize>()
        );
    }
    rt.barrier().map_err(|x| e(&x))?;
    let rep = logger.stop().ok_or("the handler panicked")?;
    println!(
        "rank {me}: sorted {} keys of {} ({fetched_bytes} bytes fetched with logged gets, exchange + merge {secs:.4} s); {} gets logged here",
        out.len(),
        n * size as u64,
        rep.entries
    );
    rt.barrier().map_err(|x| e(&x))?;
    Ok(())
}

const CHECKPOINT_PAGES: u64 = 64;

fn checkpoint(args: &[String]) -> Result<(), String> {
    use unpinned_aa_live::checkpoint::{restore_into, Checkpointer};
    use unpinned_live::Perms;
    use unpinned_os::mapping::Mapping;
    let [notify, epochs, seed] = args else {
        return Err("usage: checkpoint poll|sleep EPOCHS SEED".into());
    };
    let notify: Notify = notify.parse()?;
    let epochs: u32 = epochs.parse().map_err(|e| format!("EPOCHS: {e}"))?;
    let seed: u64 = seed.parse().map_err(|e| format!("SEED: {e}"))?;
    let rt = ActiveRuntime::from_env().map_err(|e| e.to_string())?;
    let (me, size) = (rt.rank(), rt.size());
    let e = |e: &dyn std::fmt::Display| e.to_string();
    let region = CHECKPOINT_PAGES * 4096;
    let mem = Mapping::anon(region as usize).map_err(|x| e(&x))?;
    // SAFETY: the mapping lives until the end of this function, after the last barrier; we
    // read it only between barriers, while no peer writes it.
    let key = unsafe { rt.expose(mem.ptr(), mem.len(), Perms::RW) }.map_err(|x| e(&x))?;
    // SAFETY: as above: the mapping outlives the checkpointer.
    let mut cp =
        unsafe { Checkpointer::start(rt.active(), 6, 1 << 16, mem.addr(), region, notify) }
            .map_err(|x| e(&x))?;
    let regions = rt
        .exchange(mem.addr(), mem.len() as u64, key)
        .map_err(|x| e(&x))?;
    let mut deltas = vec![cp.full().map_err(|x| e(&x))?];
    let mut rng = Rng(seed ^ (me as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut incremental = 0u64;
    for epoch in 0..epochs {
        rt.barrier().map_err(|x| e(&x))?;
        // Every rank writes 1..4 hot pages of every other rank's region.
        for t in (0..size).filter(|&t| t != me) {
            let r = regions[t as usize];
            let hot: Vec<u64> = (0..1 + rng.below(4))
                .map(|_| rng.below(CHECKPOINT_PAGES))
                .collect();
            for _ in 0..10 {
                let p = hot[rng.below(hot.len() as u64) as usize];
                let len = 1 + rng.below(6000);
                let off = (p * 4096 + rng.below(4096)).min(region - len);
                let data: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
                rt.write_blocking(t, &data, r.addr + off, r.key)
                    .map_err(|x| e(&x))?;
            }
        }
        // Every write into every region is complete.
        rt.barrier().map_err(|x| e(&x))?;
        let d = cp.checkpoint().map_err(|x| e(&x))?;
        incremental += d.pages.len() as u64 * 4096;
        deltas.push(d);
        let mut restored = vec![0xeeu8; region as usize];
        restore_into(&deltas, mem.addr(), &mut restored).map_err(|x| e(&x))?;
        // SAFETY: no peer writes the region until the next barrier.
        let now = unsafe { std::slice::from_raw_parts(mem.ptr(), mem.len()) };
        if restored != now {
            return Err(format!(
                "rank {me} epoch {epoch}: base + increments do not restore the region"
            ));
        }
    }
    rt.barrier().map_err(|x| e(&x))?;
    let rep = cp.stop().ok_or("the handler panicked")?;
    let full = region * epochs as u64;
    println!(
        "rank {me}: {epochs} incremental checkpoints restore the region exactly; copied {incremental} bytes vs {full} for full checkpoints ({:.1} %), {} put entries",
        100.0 * incremental as f64 / full.max(1) as f64,
        rep.entries
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
    use unpinned_aa_live::PageBits;
    use unpinned_live::Perms;
    use unpinned_os::mapping::Mapping;
    let [notify, ops, delay_us, seed] = args else {
        return Err("usage: reply poll|sleep OPS DELAY_US SEED".into());
    };
    let notify: Notify = notify.parse()?;
    let ops: u32 = ops.parse().map_err(|e| format!("OPS: {e}"))?;
    let delay_us: u64 = delay_us.parse().map_err(|e| format!("DELAY_US: {e}"))?;
    let seed: u64 = seed.parse().map_err(|e| format!("SEED: {e}"))?;
    let rt = ActiveRuntime::from_env().map_err(|e| e.to_string())?;
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
        Some("loggets") => loggets(&args[1..]),
        Some("sort") => sort(&args[1..]),
        Some("checkpoint") => checkpoint(&args[1..]),
        Some("reply") => reply(&args[1..]),
        _ => Err("usage: unpinned-live-aa dht aa|rma poll|sleep KEYS_PER_RANK SEED | counter poll|sleep OPS SEED | loggets poll|sleep OPS SEED | sort poll|sleep KEYS_PER_RANK SEED | checkpoint poll|sleep EPOCHS SEED | reply poll|sleep OPS DELAY_US SEED".into()),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("unpinned-live-aa: {e}");
            ExitCode::FAILURE
        }
    }
}
