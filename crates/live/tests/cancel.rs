//! The runtime's error path: cancelling outstanding requests before freeing their buffers,
//! buffers unmapped under a transfer (an error completion naming the address, never a
//! SIGSEGV in the engine), and a peer that left reported as gone.
//!
//! The tests unmap memory and then expect the engine to meet the hole; a mapping another test
//! thread makes meanwhile could land in it, so the tests of this file run one at a time.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use unpinned_live::transport::mem::network;
use unpinned_live::transport::shm::{create_segment, ShmGeometry, ShmTransport};
use unpinned_live::{CompletionError, Config, LiveError, Perms, Runtime};
use unpinned_os::mapping::Mapping;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn pair(sets: &[&str]) -> Vec<Runtime> {
    let cfg0 = Config::new(0, 2);
    network(2, cfg0.max_packet())
        .into_iter()
        .enumerate()
        .map(|(r, t)| {
            let cfg = Config::new(r as u32, 2)
                .with_overrides(sets)
                .expect("config");
            Runtime::new(cfg, Box::new(t)).expect("runtime")
        })
        .collect()
}

fn filled(len: usize, seed: u8) -> Mapping {
    let m = Mapping::anon(len).expect("map");
    // SAFETY: fresh mapping, not exposed nor posted yet.
    let s = unsafe { m.as_mut_slice() };
    for (i, b) in s.iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(31) ^ seed;
    }
    m
}

/// A mapping whose second half was taken away under a transfer: replaced in one call by an
/// inaccessible mapping of our own (the old pages are unmapped, any access faults), so that
/// no other mapping of the process (a new thread's stack) can land in a hole while the engine
/// may still look there, and unmapping the whole range at the end unmaps nothing of anyone
/// else.
struct Punched {
    addr: u64,
    len: usize,
}

impl Punched {
    /// Take away the second half of `m`; returns where it starts.
    fn new(m: Mapping) -> (Punched, u64) {
        let (addr, len) = (m.addr(), m.len());
        std::mem::forget(m);
        let hole = addr + (len / 2) as u64;
        // SAFETY: replaces the second half of a mapping of this test that nothing references
        // any more (the engine may still try to: that is what the tests check).
        let p = unsafe {
            libc::mmap(
                hole as *mut libc::c_void,
                len / 2,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        assert_eq!(p as u64, hole, "mmap over the second half");
        (Punched { addr, len }, hole)
    }
}

impl Drop for Punched {
    fn drop(&mut self) {
        // SAFETY: the first half is our mapping, the second our inaccessible one.
        unsafe { libc::munmap(self.addr as *mut libc::c_void, self.len) };
    }
}

#[test]
fn cancel_then_free_every_buffer_and_keep_running() {
    let _s = serial();
    let rts = pair(&[]);
    let (a, b) = (&rts[0], &rts[1]);
    // Fresh target memory: every block of every write takes a destination fault first, so
    // most of the requests are still in flight when they are cancelled.
    const PER: usize = 512 << 10;
    const WRITES: usize = 32;
    const READS: usize = 8;
    let dst = Mapping::anon(WRITES * PER).expect("map");
    // SAFETY: dst outlives b's use of it; nothing here reads it.
    let key = unsafe { b.expose(dst.ptr(), dst.len(), Perms::RW).expect("expose") };
    let sources: Vec<Mapping> = (0..WRITES).map(|i| filled(PER, i as u8)).collect();
    let backs: Vec<Mapping> = (0..READS)
        .map(|_| Mapping::anon(PER).expect("map"))
        .collect();
    let mut ids = Vec::new();
    for (i, s) in sources.iter().enumerate() {
        // SAFETY: the source stays mapped until the cancel below returned.
        let id = unsafe { a.write(1, s.ptr(), dst.addr() + (i * PER) as u64, key, PER) };
        ids.push(id.expect("post"));
    }
    for (i, back) in backs.iter().enumerate() {
        // SAFETY: the destination is not accessed and stays mapped until the cancel returned.
        let id = unsafe { a.read(1, back.ptr(), dst.addr() + (i * PER) as u64, key, PER) };
        ids.push(id.expect("post"));
    }
    let taken = a.drain().expect("drain");
    // Every buffer goes back to the system at once.
    drop(sources);
    drop(backs);
    let mut seen: HashMap<u64, u32> = HashMap::new();
    let mut cancelled = 0;
    for c in &taken {
        *seen.entry(c.wr_id).or_default() += 1;
        match c.status {
            Ok(()) => {}
            Err(CompletionError::Cancelled) => cancelled += 1,
            Err(e) => panic!("request {} completed with {e}", c.wr_id),
        }
    }
    assert!(
        cancelled > 0,
        "the cancel came while requests were in flight"
    );
    for id in &ids {
        assert_eq!(
            seen.get(id),
            Some(&1),
            "request {id} completed exactly once"
        );
    }
    assert_eq!(seen.len(), ids.len(), "no completion of an unknown request");
    // Keep running: late ACKs, NACKs and read responses of the cancelled requests arrive now
    // and touch nothing; new requests work.
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(a.poll_completion(), None, "nothing completes twice");
    let data = vec![0x5au8; 100_000];
    a.write_blocking(1, &data, dst.addr(), key).expect("write");
    let mut back = vec![0u8; data.len()];
    a.read_blocking(1, &mut back, dst.addr(), key)
        .expect("read");
    assert_eq!(back, data);
    assert_eq!(a.cancel_all().expect("cancel"), 0, "nothing outstanding");
    let st = a.stats().expect("stats");
    assert_eq!(st.memory.copy_faults, 0, "no copy met a freed buffer");
}

/// Without the residency check (`transfer-only`: the engine copies without asking), a buffer
/// unmapped under a transfer is met by the copy itself, which reports it.
#[test]
fn a_buffer_unmapped_under_a_transfer_fails_it_naming_the_address() {
    let _s = serial();
    let rts = pair(&["memory.mode=transfer-only"]);
    let (a, b) = (&rts[0], &rts[1]);
    const LEN: usize = 8 << 20;
    let dst = Mapping::anon(LEN).expect("map");
    // SAFETY: dst outlives b's use of it.
    let key = unsafe { b.expose(dst.ptr(), dst.len(), Perms::RW).expect("expose") };

    // A write whose source loses its second half right after the post.
    let src = filled(LEN, 1);
    let src_addr = src.addr();
    // The target's engine is held while the write starts and its source goes: at most one
    // window of it (16 blocks) can leave before the hole, however the threads are scheduled.
    let (id, (_src, hole)) = b
        .with_engine_locked(|| {
            // SAFETY: deliberately broken below: the test is about what the engine does then.
            let id = unsafe { a.write(1, src.ptr(), dst.addr(), key, LEN).expect("post") };
            (id, Punched::new(src))
        })
        .expect("engine");
    match a.wait(id) {
        Err(LiveError::Failed {
            error: CompletionError::LocalAccess,
            detail,
            ..
        }) => {
            let at = detail
                .rsplit("0x")
                .next()
                .and_then(|h| u64::from_str_radix(h.trim_end_matches(')'), 16).ok())
                .unwrap_or_else(|| panic!("no address in {detail:?}"));
            assert!(
                (hole..hole + (LEN / 2) as u64).contains(&at),
                "{detail}: {at:#x} not in the hole at {hole:#x}"
            );
            assert!(detail.contains(&format!("{src_addr:#x}")), "{detail}");
        }
        other => panic!("expected a local access error naming the address, got {other:?}"),
    }

    // A read whose destination loses its second half right after the post.
    let back = Mapping::anon(LEN).expect("map");
    // The target's engine is held: no response arrives before the hole.
    let (id, _back) = b
        .with_engine_locked(|| {
            // SAFETY: as above.
            let id = unsafe { a.read(1, back.ptr(), dst.addr(), key, LEN).expect("post") };
            (id, Punched::new(back))
        })
        .expect("engine");
    match a.wait(id) {
        Err(LiveError::Failed {
            error: CompletionError::LocalAccess,
            detail,
            ..
        }) => assert!(detail.contains("destination buffer"), "{detail}"),
        other => panic!("expected a local access error, got {other:?}"),
    }
    // The engine goes on.
    let data = vec![3u8; 65536];
    a.write_blocking(1, &data, dst.addr(), key).expect("write");
    let st = a.stats().expect("stats");
    assert!(st.memory.copy_faults >= 2, "{:?}", st.memory);
}

/// With the check (the default), an unmapped source is seen before the copy; the failure
/// names the buffer too.
#[test]
fn a_source_unmapped_before_its_packets_fails_the_write() {
    let _s = serial();
    let rts = pair(&[]);
    let (a, b) = (&rts[0], &rts[1]);
    const LEN: usize = 8 << 20;
    let dst = Mapping::anon(LEN).expect("map");
    // SAFETY: dst outlives b's use of it.
    let key = unsafe { b.expose(dst.ptr(), dst.len(), Perms::RW).expect("expose") };
    let src = filled(LEN, 2);
    let src_addr = src.addr();
    // As above: the target's engine is held until the source is gone.
    let (id, _src) = b
        .with_engine_locked(|| {
            // SAFETY: deliberately broken below.
            let id = unsafe { a.write(1, src.ptr(), dst.addr(), key, LEN).expect("post") };
            (id, Punched::new(src))
        })
        .expect("engine");
    match a.wait(id) {
        Err(LiveError::Failed {
            error: CompletionError::LocalAccess,
            detail,
            ..
        }) => assert!(
            detail.contains(&format!("source buffer [{src_addr:#x}")),
            "{detail}"
        ),
        other => panic!("expected a local access error, got {other:?}"),
    }
}

/// A peer that leaves (over shared memory) is reported as gone, by rank, not as a remote
/// access error or after the retry limit.
#[test]
fn requests_to_a_peer_that_left_fail_with_peer_gone() {
    let _s = serial();
    let dir = std::env::temp_dir().join(format!("unpinned-cancel-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("seg");
    let cfg0 = Config::new(0, 2);
    create_segment(&path, ShmGeometry::new(2, cfg0.max_packet(), 64)).expect("segment");
    let rts: Vec<Runtime> = (0..2)
        .map(|r| {
            let t = ShmTransport::open(&path, r).expect("open");
            Runtime::new(Config::new(r, 2), Box::new(t)).expect("runtime")
        })
        .collect();
    let (a, b) = (&rts[0], &rts[1]);
    const LEN: usize = 64 << 20;
    let dst = Mapping::anon(LEN).expect("map");
    // SAFETY: dst outlives b's use of it.
    let key = unsafe { b.expose(dst.ptr(), dst.len(), Perms::RW).expect("expose") };
    let src = filled(LEN, 3);
    // SAFETY: src outlives the wait.
    let id = unsafe { a.write(1, src.ptr(), dst.addr(), key, LEN).expect("post") };
    // Rank 1 bails out: tells the peers, then its memory goes away (revoked here, so its
    // engine refuses the rest of the write: a remote access error without the notice).
    assert_eq!(b.leave().expect("leave"), 0);
    b.revoke(key).expect("revoke");
    let t = Instant::now();
    match a.wait(id) {
        Err(
            e @ LiveError::Failed {
                error: CompletionError::PeerGone,
                ..
            },
        ) => assert!(e.to_string().contains("rank 1 left the job"), "{e}"),
        Ok(_) => panic!("the write finished before rank 1 left: make it larger"),
        other => panic!("expected PeerGone, got {other:?}"),
    }
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    drop(rts);
    let _ = std::fs::remove_dir_all(&dir);
}
