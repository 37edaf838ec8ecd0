//! `unpinned-live-selftest SCENARIO`: a rank program for `unpinned run` that exercises the live
//! runtime across real processes and checks every byte. Scenarios:
//!
//! - `transfers`: every rank writes random sizes (1 B .. 4 MiB) at random offsets into fresh,
//!   partially present and file-backed (page cache dropped) memory of every other rank,
//!   concurrently; targets check the result byte for byte, writers read it back; out-of-range
//!   and wrong-key accesses must fail and write nothing.
//! - `kill`: rank 1 kills itself (SIGKILL) while rank 0's write to it is in flight; rank 0
//!   must get an error completion that says the rank is gone (`PeerGone` where the transport
//!   can tell, as over shared memory; `RetryExceeded` elsewhere), not hang. Rank 1 holds its
//!   engine from before the write is posted until it dies, so the write cannot finish first
//!   however the processes are scheduled.
//! - `lossy`: two ranks, meant for a lossy link (the netns UDP test drops packets with
//!   nftables): each rank writes a set of sizes (1 B .. 1 MiB) at disjoint offsets into the
//!   other's fresh memory, all outstanding at once, reads every range back into fresh memory
//!   (again all at once), and checks that every completion arrived exactly once (none missing,
//!   none duplicated, none unknown, also after a quiet period) and every byte on both sides.
//! - `bench`: rank 0 measures, against rank 1: 8 B write latency, 4 MiB write bandwidth, and a
//!   4 KiB write into a missing page end to end; plus the residency check cost per page.
//!
//! - `barrier`: two bootstrap barriers, then exit 0 (the launcher's normal path).
//! - `die-in-setup` / `stop-in-setup`: the last rank SIGKILLs / SIGSTOPs itself at once, the
//!   others wait for it in a bootstrap barrier, which must fail naming it.
//! - `hang`: every rank starts a `sleep 60` child (in its process group), barriers, then sleeps:
//!   for the launcher's timeout, signal and killed-launcher paths.
//!
//! With `SELFTEST_REPORT_DIR` set, a rank writes its failure message to `rank-R.txt` there, and
//! `hang` writes `pid-R` (the rank's and its child's process ids).
//!
//! `unpinned-live-selftest launch N TIMEOUT_S SCENARIO` is a launcher for the tests: it runs
//! `launch` on N ranks of this program (shm, grace 1 s) and exits 0 only if every rank did.
//!
//! Exit code 0 on success, 1 on a failed check (the message says which). On a failure a
//! scenario leaves the job before its buffers are freed ([`BailOut`]): requests still in
//! flight are cancelled, and peers report this rank as gone.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use unpinned_live::memory::bench_residency;
use unpinned_live::{CompletionError, LiveError, Perms, Region, Runtime};
use unpinned_os::mapping::Mapping;

/// xorshift64, deterministic so a target can replay a writer's sequence.
struct Rng(u64);
impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Revokes an exposure when dropped (before the memory it covers is unmapped).
struct Revoke<'a>(&'a Runtime, unpinned_live::RemoteKey);

impl Drop for Revoke<'_> {
    fn drop(&mut self) {
        let _ = self.0.revoke(self.1);
    }
}

fn fail(msg: String) -> Result<(), String> {
    Err(msg)
}

/// The error path of a scenario: declared after the buffers its requests use (so dropped
/// before them), it leaves the job on an early return ([`Runtime::leave`]: peers are told this
/// rank is gone, and every request still in flight is cancelled, so the engine touches none
/// of the buffers freed next). [`BailOut::done`] disarms it on success.
struct BailOut<'a> {
    rt: &'a Runtime,
    armed: bool,
}

impl<'a> BailOut<'a> {
    fn new(rt: &'a Runtime) -> BailOut<'a> {
        BailOut { rt, armed: true }
    }
    fn done(mut self) {
        self.armed = false;
    }
}

impl Drop for BailOut<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        match self.rt.leave() {
            Ok(0) => {}
            Ok(n) => eprintln!(
                "selftest rank {}: cancelled {n} requests in flight before freeing their buffers",
                self.rt.rank()
            ),
            Err(e) => eprintln!("selftest rank {}: cannot cancel: {e}", self.rt.rank()),
        }
    }
}

/// Size of the slice every writer owns in every target buffer.
const SLICE: usize = 6 << 20;
/// File-backed buffer per rank.
const FILE_LEN: usize = 1 << 20;

/// The writes rank `w` does into slice `w` of rank `t`: (offset in slice, bytes).
fn plan(w: u32, t: u32, count: usize) -> Vec<(usize, Vec<u8>)> {
    let mut r = Rng::new(((w as u64) << 32) | t as u64 | 0x55 << 48);
    let mut sizes = vec![1usize, 8, 4096, 4 << 20];
    while sizes.len() < count {
        // Mostly small and medium, some large.
        let s = match r.below(3) {
            0 => 1 + r.below(512) as usize,
            1 => 1 + r.below(64 << 10) as usize,
            _ => 1 + r.below(4 << 20) as usize,
        };
        sizes.push(s);
    }
    sizes
        .into_iter()
        .map(|len| {
            let off = r.below((SLICE - len) as u64) as usize;
            let bytes = (0..len).map(|_| r.next() as u8).collect();
            (off, bytes)
        })
        .collect()
}

fn expected_slice(w: u32, t: u32, count: usize, base: &[u8]) -> Vec<u8> {
    let mut s = base.to_vec();
    for (off, bytes) in plan(w, t, count) {
        s[off..off + bytes.len()].copy_from_slice(&bytes);
    }
    s
}

fn file_byte(rank: u32, i: usize) -> u8 {
    (i as u64 * 31 + rank as u64 * 7 + (i as u64 >> 12)) as u8
}

fn transfers(rt: &Runtime) -> Result<(), String> {
    let (me, n) = (rt.rank(), rt.size());
    let e = |e: LiveError| e.to_string();
    let writes = 8;
    // Target buffer: one slice per writer, plus a guard slice at the end that nobody may write.
    let target = Mapping::anon((n as usize + 1) * SLICE).map_err(|e| e.to_string())?;
    // Odd ranks make their target partially present: touch every other page.
    let mut base_content = vec![0u8; (n as usize + 1) * SLICE];
    if me % 2 == 1 {
        // SAFETY: not exposed yet.
        let s = unsafe { target.as_mut_slice() };
        for p in (0..s.len()).step_by(8192) {
            s[p] = 0xee;
            base_content[p] = 0xee;
        }
    }
    let present_before = target.present_pages();
    // SAFETY: target lives until the end of this function, after the final barrier; we only
    // read it after the barrier that follows all writes.
    let key = unsafe {
        rt.expose(target.ptr(), n as usize * SLICE, Perms::RW)
            .map_err(e)?
    };
    // Declared after `target`, so dropped before it: on an early error return, peers' writes
    // still in flight must find the key revoked, not write into unmapped memory.
    let _revoke_target = Revoke(rt, key);
    let regions = rt
        .exchange(target.addr(), (n as usize * SLICE) as u64, key)
        .map_err(e)?;
    // File-backed buffer, page cache dropped: major faults.
    let path = std::env::temp_dir().join(format!("unpinned-selftest-{}-{me}", std::process::id()));
    let file = Mapping::file(&path, FILE_LEN, |i| file_byte(me, i))
        .map_err(|e| format!("file mapping: {e}"))?;
    // SAFETY: as for `target`.
    let fkey = unsafe { rt.expose(file.ptr(), FILE_LEN, Perms::RW).map_err(e)? };
    let _revoke_file = Revoke(rt, fkey);
    let files = rt.exchange(file.addr(), FILE_LEN as u64, fkey).map_err(e)?;
    // Dropped before the buffers above (and the exposures' revocations).
    let bail = BailOut::new(rt);
    rt.barrier().map_err(e)?;

    // 1. Writes into every other rank's target (all ranks concurrently).
    let t0 = Instant::now();
    for t in (0..n).filter(|&t| t != me) {
        let reg = regions[t as usize];
        let plan = plan(me, t, writes);
        let mut ids = Vec::new();
        for (off, bytes) in &plan {
            let addr = reg.addr + (me as usize * SLICE + off) as u64;
            // SAFETY: `plan` outlives the flush below.
            ids.push(unsafe {
                rt.write(t, bytes.as_ptr(), addr, reg.key, bytes.len())
                    .map_err(e)?
            });
            // Writes to overlapping ranges must land in order: wait for each one.
            rt.wait(*ids.last().expect("one"))
                .map_err(|x| format!("write to rank {t}: {x}"))?;
        }
        // Read the whole slice back into fresh memory and compare with the plan.
        let back = Mapping::anon(SLICE).map_err(|e| e.to_string())?;
        // SAFETY: `back` is not accessed until the read completed.
        let id = unsafe {
            rt.read(
                t,
                back.ptr(),
                reg.addr + (me as usize * SLICE) as u64,
                reg.key,
                SLICE,
            )
            .map_err(e)?
        };
        rt.wait(id)
            .map_err(|x| format!("read-back from rank {t}: {x}"))?;
        // Rank t's base content of our slice: 0xee every other page if t is odd.
        let base: Vec<u8> = (0..SLICE)
            .map(|i| {
                if t % 2 == 1 && (me as usize * SLICE + i).is_multiple_of(8192) {
                    0xee
                } else {
                    0
                }
            })
            .collect();
        let want = expected_slice(me, t, writes, &base);
        // SAFETY: the read completed.
        if unsafe { back.as_slice() } != &want[..] {
            return fail(format!(
                "read-back of my slice at rank {t} differs from what I wrote"
            ));
        }
    }
    let write_time = t0.elapsed();

    // 2. File-backed: read the next rank's file buffer (source faults there, major), write a
    //    pattern into its second half (destination faults, major), read it back.
    let t = (me + 1) % n;
    if t != me {
        let f = files[t as usize];
        let mut out = vec![0u8; FILE_LEN];
        rt.read_blocking(t, &mut out, f.addr, f.key)
            .map_err(|x| format!("read of rank {t}'s file: {x}"))?;
        if out.iter().enumerate().any(|(i, &b)| b != file_byte(t, i)) {
            return fail(format!("file-backed read from rank {t} differs"));
        }
        let half = FILE_LEN / 2;
        let pat: Vec<u8> = (0..half).map(|i| (i as u8) ^ (me as u8) ^ 0x3c).collect();
        rt.write_blocking(t, &pat, f.addr + half as u64, f.key)
            .map_err(|x| format!("write to rank {t}'s file: {x}"))?;
    }

    // 3. Protection: out of range and wrong key fail and write nothing.
    let t = (me + 1) % n;
    if t != me {
        let reg: Region = regions[t as usize];
        let data = vec![0xffu8; 4096];
        let cases = [
            (reg.addr + reg.len - 100, reg.key, "past the end"),
            (
                reg.addr + (me as usize * SLICE) as u64,
                reg.key ^ 0x1111,
                "wrong key",
            ),
        ];
        for (addr, key, what) in cases {
            match rt.write_blocking(t, &data, addr, key) {
                Err(LiveError::Failed {
                    error: CompletionError::RemoteAccess,
                    ..
                }) => {}
                other => {
                    return fail(format!(
                        "{what}: expected a remote access error, got {other:?}"
                    ))
                }
            }
        }
    }
    rt.barrier().map_err(e)?;

    // 4. Targets check their memory byte for byte (every writer's plan is deterministic).
    // SAFETY: every rank finished writing (barrier above).
    let got = unsafe { target.as_slice() };
    for w in (0..n).filter(|&w| w != me) {
        let s = w as usize * SLICE;
        let want = expected_slice(w, me, writes, &base_content[s..s + SLICE]);
        if got[s..s + SLICE] != want[..] {
            let first = got[s..s + SLICE]
                .iter()
                .zip(&want)
                .position(|(a, b)| a != b)
                .unwrap_or(0);
            return fail(format!("slice of writer {w} differs at offset {first}"));
        }
    }
    let own = me as usize * SLICE;
    if got[own..own + SLICE] != base_content[own..own + SLICE]
        || got[n as usize * SLICE..] != base_content[n as usize * SLICE..]
    {
        return fail("a slice nobody may write (own slice or guard) was written".into());
    }
    // File buffer: first half intact, second half written by rank (me + n - 1) % n.
    let wr = (me + n - 1) % n;
    if wr != me {
        // SAFETY: all writes finished (barrier above).
        let f = unsafe { file.as_slice() };
        let half = FILE_LEN / 2;
        for (i, &b) in f.iter().enumerate() {
            let want = if i < half {
                file_byte(me, i)
            } else {
                ((i - half) as u8) ^ (wr as u8) ^ 0x3c
            };
            if b != want {
                return fail(format!("file-backed memory differs at offset {i}"));
            }
        }
    }
    let st = rt.stats().map_err(e)?;
    println!(
        "rank {me}: ok; writes+read-backs {:.1} ms; present pages before {present_before}; fault NACKs sent {}, ERRs sent {}, source faults {}, pages paged in {} in {} calls, {:.1} ms",
        write_time.as_secs_f64() * 1e3,
        st.engine.nacks_fault_sent,
        st.engine.errs_sent,
        st.engine.source_faults,
        st.handler.pages,
        st.handler.calls,
        st.handler.page_in_ns as f64 / 1e6
    );
    rt.barrier().map_err(e)?;
    bail.done();
    Ok(())
}

/// The writes of `lossy` from rank `w`: (offset in the target buffer, bytes), disjoint.
fn lossy_plan(w: u32) -> Vec<(usize, Vec<u8>)> {
    let mut r = Rng::new(0x1055 + w as u64);
    let sizes = [
        1usize,
        255,
        256,
        257,
        1024,
        4097,
        16384,
        65536 + 5,
        300_000,
        1 << 20,
    ];
    let mut off = 0;
    sizes
        .iter()
        .map(|&len| {
            off += 1 + r.below(5000) as usize; // gaps nobody writes
            let at = off;
            off += len;
            (at, (0..len).map(|_| r.next() as u8).collect())
        })
        .collect()
}

/// Buffer each rank of `lossy` exposes.
const LOSSY_LEN: usize = 2 << 20;

/// Wait until each of `ids` has completed exactly once, successfully, with `lens[i]` bytes.
fn exactly_once(rt: &Runtime, what: &str, ids: &[u64], lens: &[usize]) -> Result<(), String> {
    let mut seen = vec![0u32; ids.len()];
    let deadline = Instant::now() + Duration::from_secs(20);
    while seen.contains(&0) {
        let Some(c) = rt.poll_completion() else {
            if Instant::now() > deadline {
                return fail(format!("{what}: completions missing after 20 s: {seen:?}"));
            }
            std::thread::sleep(Duration::from_micros(200));
            continue;
        };
        let Some(i) = ids.iter().position(|&id| id == c.wr_id) else {
            return fail(format!("{what}: completion of unknown request {c:?}"));
        };
        seen[i] += 1;
        if seen[i] > 1 {
            return fail(format!("{what}: request {} completed twice", c.wr_id));
        }
        if c.status.is_err() || c.len != lens[i] as u64 {
            return fail(format!(
                "{what}: request of {} B completed as {c:?}",
                lens[i]
            ));
        }
    }
    Ok(())
}

fn lossy(rt: &Runtime) -> Result<(), String> {
    let (me, n) = (rt.rank(), rt.size());
    if n != 2 {
        return fail(format!("lossy runs on 2 ranks, not {n}"));
    }
    let e = |e: LiveError| e.to_string();
    let peer = 1 - me;
    let buf = Mapping::anon(LOSSY_LEN).map_err(|e| e.to_string())?;
    // SAFETY: `buf` lives until the end of this function, after the final barrier; we read it
    // only after the barrier that follows the peer's last write.
    let key = unsafe { rt.expose(buf.ptr(), LOSSY_LEN, Perms::RW).map_err(e)? };
    let regions = rt.exchange(buf.addr(), LOSSY_LEN as u64, key).map_err(e)?;
    let reg = regions[peer as usize];
    rt.barrier().map_err(e)?;

    // 1. Every write outstanding at once.
    let plan = lossy_plan(me);
    let lens: Vec<usize> = plan.iter().map(|(_, b)| b.len()).collect();
    let mut backs: Vec<Mapping> = Vec::new();
    // Dropped before `backs`, `plan` and `buf`: a failure with requests in flight cancels them
    // before their buffers go.
    let bail = BailOut::new(rt);
    let mut ids = Vec::new();
    for (off, bytes) in &plan {
        // SAFETY: `plan` outlives every completion (collected below).
        ids.push(unsafe {
            rt.write(
                peer,
                bytes.as_ptr(),
                reg.addr + *off as u64,
                reg.key,
                bytes.len(),
            )
            .map_err(e)?
        });
    }
    exactly_once(rt, "writes", &ids, &lens)?;

    // 2. Read every range back into fresh memory, all at once.
    for &l in &lens {
        backs.push(Mapping::anon(l).map_err(|e| e.to_string())?);
    }
    let mut ids = Vec::new();
    for ((off, bytes), back) in plan.iter().zip(&backs) {
        // SAFETY: `back` is not accessed until its completion arrived.
        ids.push(unsafe {
            rt.read(
                peer,
                back.ptr(),
                reg.addr + *off as u64,
                reg.key,
                bytes.len(),
            )
            .map_err(e)?
        });
    }
    exactly_once(rt, "reads", &ids, &lens)?;
    for ((off, bytes), back) in plan.iter().zip(&backs) {
        // SAFETY: the read completed.
        if unsafe { &back.as_slice()[..bytes.len()] } != &bytes[..] {
            return fail(format!("read-back of {} B at {off} differs", bytes.len()));
        }
    }
    // Late duplicates (a retransmitted block acknowledged twice) would show up now.
    std::thread::sleep(Duration::from_millis(300));
    if let Some(c) = rt.poll_completion() {
        return fail(format!("a completion after all requests completed: {c:?}"));
    }
    rt.barrier().map_err(e)?;

    // 3. Our buffer holds exactly the peer's plan, zeros elsewhere.
    let mut want = vec![0u8; LOSSY_LEN];
    for (off, bytes) in lossy_plan(peer) {
        want[off..off + bytes.len()].copy_from_slice(&bytes);
    }
    // SAFETY: the peer finished writing (barrier above); reads do not write our buffer.
    let got = unsafe { buf.as_slice() };
    if let Some(i) = got.iter().zip(&want).position(|(a, b)| a != b) {
        return fail(format!(
            "my buffer differs from the peer's writes at offset {i}"
        ));
    }
    let st = rt.stats().map_err(e)?;
    println!(
        "rank {me}: lossy ok; data packets sent {}, timeout retransmissions {}, CRC retransmissions {}, stale dropped {}, read requests resent {}, fault NACKs sent {}",
        st.engine.data_packets_sent,
        st.engine.retransmits_timeout,
        st.engine.retransmits_crc,
        st.engine.stale_dropped,
        st.engine.read_requests_resent,
        st.engine.nacks_fault_sent,
    );
    rt.barrier().map_err(e)?;
    bail.done();
    Ok(())
}

fn kill(rt: &Runtime) -> Result<(), String> {
    let e = |e: LiveError| e.to_string();
    const LEN: usize = 256 << 20;
    let target = Mapping::anon(LEN).map_err(|e| e.to_string())?;
    // SAFETY: target lives until the process ends; nobody reads it.
    let key = unsafe { rt.expose(target.ptr(), LEN, Perms::W).map_err(e)? };
    let regions = rt.exchange(target.addr(), LEN as u64, key).map_err(e)?;
    match rt.rank() {
        0 => {
            let src = Mapping::anon(LEN).map_err(|e| e.to_string())?;
            let bail = BailOut::new(rt);
            // Rank 1 holds its engine from here on.
            rt.barrier().map_err(e)?;
            let t = Instant::now();
            // SAFETY: src outlives the wait (or the cancel of `bail`).
            let id = unsafe {
                rt.write(1, src.ptr(), regions[1].addr, regions[1].key, LEN)
                    .map_err(e)?
            };
            // The write is posted and its first packets sent: rank 1 may die.
            rt.barrier().map_err(e)?;
            let r = match rt.wait(id) {
                Err(
                    x @ LiveError::Failed {
                        error: CompletionError::PeerGone | CompletionError::RetryExceeded,
                        ..
                    },
                ) if x.to_string().contains("rank 1") => {
                    println!(
                        "rank 0: the write to the killed rank failed after {:.1} ms: {x}",
                        t.elapsed().as_secs_f64() * 1e3
                    );
                    Ok(())
                }
                other => fail(format!(
                    "expected PeerGone or RetryExceeded naming rank 1, got {other:?}"
                )),
            };
            if r.is_ok() {
                bail.done();
            }
            r
        }
        1 => {
            // Hold the engine: no packet of rank 0's write is handled here, so the write
            // cannot complete before this process dies, however late it is scheduled.
            rt.with_engine_locked(|| -> Result<(), String> {
                rt.barrier().map_err(e)?;
                rt.barrier().map_err(e)?;
                // SAFETY: raising SIGKILL on ourselves: the process ends here, engine held.
                unsafe { libc::raise(libc::SIGKILL) };
                unreachable!("SIGKILL")
            })
            .map_err(e)?
        }
        _ => Ok(()),
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn bench(rt: &Runtime) -> Result<(), String> {
    let e = |e: LiveError| e.to_string();
    const LEN: usize = 64 << 20;
    let target = Mapping::anon(LEN).map_err(|e| e.to_string())?;
    // SAFETY: target lives until the end; rank 1 never reads it.
    let key = unsafe { rt.expose(target.ptr(), LEN, Perms::W).map_err(e)? };
    let regions = rt.exchange(target.addr(), LEN as u64, key).map_err(e)?;
    // A file-backed buffer whose page cache is dropped: writes into it take major faults.
    let path = std::env::temp_dir().join(format!(
        "unpinned-bench-{}-{}",
        std::process::id(),
        rt.rank()
    ));
    let file =
        Mapping::file(&path, 4 << 20, |i| i as u8).map_err(|e| format!("file mapping: {e}"))?;
    // SAFETY: as for `target`.
    let fkey = unsafe { rt.expose(file.ptr(), file.len(), Perms::W).map_err(e)? };
    let files = rt
        .exchange(file.addr(), file.len() as u64, fkey)
        .map_err(e)?;
    if rt.rank() == 1 {
        // Pre-fault the first 8 MiB (the "present" region); the rest stays missing.
        // SAFETY: nobody writes before the barrier below.
        let s = unsafe { target.as_mut_slice() };
        for p in (0..8 << 20).step_by(4096) {
            s[p] = 1;
        }
    }
    rt.barrier().map_err(e)?;
    if rt.rank() == 0 {
        let r = regions[1];
        let res = bench_residency(4096);
        println!(
            "residency check per page: pagemap 1-entry pread {:.0} ns, windowed pread ({} pages) {:.1} ns, window hit {:.1} ns, mincore {:.0} ns",
            res.pagemap_single_ns,
            unpinned_live::memory::WINDOW_PAGES,
            res.pagemap_window_ns,
            res.window_hit_ns,
            res.mincore_ns
        );
        let small = [0x42u8; 8];
        for _ in 0..200 {
            rt.write_blocking(1, &small, r.addr, r.key).map_err(e)?;
        }
        let mut lat: Vec<f64> = (0..2000)
            .map(|_| {
                let t = Instant::now();
                rt.write_blocking(1, &small, r.addr, r.key)
                    .map(|_| t.elapsed().as_secs_f64() * 1e6)
            })
            .collect::<Result<_, _>>()
            .map_err(e)?;
        println!(
            "8 B write latency (present): median {:.1} us, min {:.1} us",
            median(&mut lat),
            lat[0]
        );
        let big = vec![7u8; 4 << 20];
        rt.write_blocking(1, &big, r.addr, r.key).map_err(e)?;
        let reps = 10;
        let t = Instant::now();
        for _ in 0..reps {
            rt.write_blocking(1, &big, r.addr, r.key).map_err(e)?;
        }
        let s = t.elapsed().as_secs_f64() / reps as f64;
        println!(
            "4 MiB write (present): {:.2} ms, {:.0} MB/s",
            s * 1e3,
            (4 << 20) as f64 / s / 1e6
        );
        // Missing pages: every write goes to a fresh page beyond the pre-faulted region.
        let page = [9u8; 4096];
        let mut miss: Vec<f64> = (0..200u64)
            .map(|i| {
                let addr = r.addr + (8 << 20) + i * 4096;
                let t = Instant::now();
                rt.write_blocking(1, &page, addr, r.key)
                    .map(|_| t.elapsed().as_secs_f64() * 1e6)
            })
            .collect::<Result<_, _>>()
            .map_err(e)?;
        let mut pres: Vec<f64> = (0..200u64)
            .map(|i| {
                let t = Instant::now();
                rt.write_blocking(1, &page, r.addr + i * 4096, r.key)
                    .map(|_| t.elapsed().as_secs_f64() * 1e6)
            })
            .collect::<Result<_, _>>()
            .map_err(e)?;
        println!("4 KiB write: present median {:.1} us; into a missing page median {:.1} us (fault NACK, page-in, ERR, retransmit)", median(&mut pres), median(&mut miss));
        let f = files[1];
        let mut major: Vec<f64> = (0..100u64)
            .map(|i| {
                let t = Instant::now();
                rt.write_blocking(1, &page, f.addr + i * 8192, f.key)
                    .map(|_| t.elapsed().as_secs_f64() * 1e6)
            })
            .collect::<Result<_, _>>()
            .map_err(e)?;
        println!("4 KiB write into a file-backed page with no PTE (page cache dropped at start, kernel readahead serves later pages): median {:.1} us", median(&mut major));
        let big_miss = (8 << 20) + 200 * 4096 + (1 << 20);
        let t = Instant::now();
        rt.write_blocking(1, &big, r.addr + big_miss as u64, r.key)
            .map_err(e)?;
        println!(
            "4 MiB write into missing pages (PIA): {:.2} ms",
            t.elapsed().as_secs_f64() * 1e3
        );
        let st = rt.stats().map_err(e)?;
        println!("rank 0 engine: {:?}", st.engine);
    }
    rt.barrier().map_err(e)?;
    if rt.rank() == 1 {
        let st = rt.stats().map_err(e)?;
        println!("rank 1: handler {:?}; memory {:?}", st.handler, st.memory);
    }
    rt.barrier().map_err(e)?;
    Ok(())
}

/// The last rank ends (`stop`: stops) itself; the others' barrier must fail naming it.
fn leave_in_setup(rt: &Runtime, stop: bool) -> Result<(), String> {
    if rt.rank() + 1 == rt.size() {
        let sig = if stop { libc::SIGSTOP } else { libc::SIGKILL };
        // SAFETY: raising a signal on ourselves; SIGKILL ends the process, SIGSTOP stops it
        // until the launcher kills it.
        unsafe { libc::raise(sig) };
        return fail("still running after raising the signal".into());
    }
    match rt.barrier() {
        Ok(()) => fail(format!("the barrier passed without rank {}", rt.size() - 1)),
        Err(e) => fail(format!("barrier: {e}")),
    }
}

/// A rank that never ends, with a child process in its group.
fn hang(rt: &Runtime) -> Result<(), String> {
    let child = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .map_err(|e| format!("starting sleep: {e}"))?;
    if let Some(d) = std::env::var_os("SELFTEST_REPORT_DIR") {
        let p = std::path::Path::new(&d).join(format!("pid-{}", rt.rank()));
        std::fs::write(p, format!("{} {}", std::process::id(), child.id()))
            .map_err(|e| e.to_string())?;
    }
    rt.barrier().map_err(|e| e.to_string())?;
    std::thread::sleep(Duration::from_secs(60));
    fail("not killed within 60 s".into())
}

/// `launch N TIMEOUT_S SCENARIO`: this program as the launcher of N ranks of itself.
fn launcher(args: &[String]) -> ExitCode {
    let [n, timeout_s, scenario] = args else {
        eprintln!("usage: unpinned-live-selftest launch N TIMEOUT_S SCENARIO");
        return ExitCode::from(2);
    };
    let (Ok(n), Ok(t)) = (n.parse(), timeout_s.parse()) else {
        eprintln!("launch: N and TIMEOUT_S are numbers");
        return ExitCode::from(2);
    };
    let exe = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("launch: {e}");
            return ExitCode::from(2);
        }
    };
    let mut o = unpinned_live::launch::LaunchOptions::new(n, exe);
    o.args = vec![scenario.clone()];
    o.timeout = Duration::from_secs_f64(t);
    o.grace = Duration::from_secs(1);
    match unpinned_live::launch::launch(&o) {
        Ok(r) if r.success() => ExitCode::SUCCESS,
        Ok(r) => {
            eprintln!("launch: {:?}", r.failures());
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("launch: {e}");
            ExitCode::from(2)
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("launch") {
        return launcher(&args[1..]);
    }
    let scenario = args.first().cloned().unwrap_or_default();
    let rt = match Runtime::from_env() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("selftest: {e}");
            return ExitCode::from(2);
        }
    };
    let r = match scenario.as_str() {
        "transfers" => transfers(&rt),
        "kill" => kill(&rt),
        "bench" => bench(&rt),
        "lossy" => lossy(&rt),
        "barrier" => rt.barrier().and_then(|()| rt.barrier()).map_err(|e| e.to_string()),
        "die-in-setup" => leave_in_setup(&rt, false),
        "stop-in-setup" => leave_in_setup(&rt, true),
        "hang" => hang(&rt),
        other => Err(format!(
            "unknown scenario {other:?} (transfers, kill, bench, lossy, barrier, die-in-setup, stop-in-setup, hang)"
        )),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("selftest rank {}: FAILED: {msg}", rt.rank());
            if let Some(d) = std::env::var_os("SELFTEST_REPORT_DIR") {
                let p = std::path::Path::new(&d).join(format!("rank-{}.txt", rt.rank()));
                let _ = std::fs::write(p, &msg);
            }
            if let Ok(st) = rt.stats() {
                eprintln!("selftest rank {}: counters {st:?}", rt.rank());
            }
            ExitCode::from(1)
        }
    }
}
