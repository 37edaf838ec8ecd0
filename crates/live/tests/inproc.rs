//! Two (or more) runtimes in one process, connected by the in-memory transport: the live
//! engine loop, page-in thread and real memory checks, without process management.

use std::time::{Duration, Instant};

use unpinned_live::{CompletionError, LiveError, Perms, Runtime};
use unpinned_os::mapping::Mapping;

fn pair(n: u32) -> Vec<Runtime> {
    Runtime::in_process(n, |_| {}).expect("runtimes")
}

/// xorshift, deterministic.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut r = Rng(seed | 1);
    (0..len).map(|_| r.next() as u8).collect()
}

#[test]
fn writes_and_reads_into_fresh_memory_byte_for_byte() {
    let rts = pair(2);
    let (a, b) = (&rts[0], &rts[1]);
    const LEN: usize = 8 << 20;
    let dst = Mapping::anon(LEN).unwrap();
    assert_eq!(dst.present_pages(), 0, "fresh memory has no page present");
    // SAFETY: dst outlives both runtimes' use; we read it only after the writes completed.
    let key = unsafe { b.expose(dst.ptr(), dst.len(), Perms::RW).unwrap() };
    let mut rng = Rng(0x1234_5678);
    let mut sizes = vec![
        1usize,
        8,
        255,
        256,
        257,
        4096,
        4097,
        16384,
        65536 + 3,
        4 << 20,
    ];
    for _ in 0..6 {
        sizes.push(1 + rng.below(1 << 20) as usize);
    }
    let mut expect = vec![0u8; LEN];
    for (i, &len) in sizes.iter().enumerate() {
        let off = rng.below((LEN - len) as u64) as usize;
        let src = pattern(i as u64 + 77, len);
        let c = a
            .write_blocking(1, &src, dst.addr() + off as u64, key)
            .unwrap_or_else(|e| panic!("write {len} at {off}: {e}"));
        assert_eq!(c.len, len as u64);
        expect[off..off + len].copy_from_slice(&src);
        // Read it back through the engine (rank 0 reads from rank 1) into fresh memory.
        let back = Mapping::anon(len).unwrap();
        // SAFETY: `back` is ours, not accessed until the read completes.
        let id = unsafe {
            a.read(1, back.ptr(), dst.addr() + off as u64, key, len)
                .unwrap()
        };
        a.wait(id).unwrap();
        // SAFETY: the read completed; nothing writes `back` any more.
        assert!(
            unsafe { &back.as_slice()[..len] } == &src[..],
            "read-back of {len} B at {off}"
        );
    }
    // SAFETY: every write completed.
    assert!(
        unsafe { dst.as_slice() } == &expect[..],
        "destination byte for byte"
    );
    let s = b.stats().unwrap();
    assert!(s.engine.nacks_fault_sent > 0, "fresh memory faulted: {s:?}");
    assert!(
        s.handler.errs > 0 && s.handler.pages > 0,
        "page-in thread worked: {s:?}"
    );
    let s0 = a.stats().unwrap();
    assert!(s0.engine.errs_received > 0);
}

#[test]
fn partially_present_memory() {
    let rts = pair(2);
    const LEN: usize = 1 << 20;
    let dst = Mapping::anon(LEN).unwrap();
    // SAFETY: not yet exposed; we own it.
    let s = unsafe { dst.as_mut_slice() };
    for p in (0..LEN).step_by(8192) {
        s[p] = 0xaa;
    }
    assert_eq!(dst.present_pages(), LEN / 8192);
    // SAFETY: dst outlives the runtimes' use.
    let key = unsafe { rts[1].expose(dst.ptr(), LEN, Perms::W).unwrap() };
    let src = pattern(5, LEN - 100);
    rts[0]
        .write_blocking(1, &src, dst.addr() + 50, key)
        .unwrap();
    // SAFETY: the write completed.
    let got = unsafe { dst.as_slice() };
    assert!(got[..50]
        .iter()
        .enumerate()
        .all(|(i, &b)| b == if i == 0 { 0xaa } else { 0 }));
    assert!(got[50..LEN - 50] == src[..]);
    assert!(got[LEN - 50..].iter().all(|&b| b == 0));
}

#[test]
fn source_faults_are_resolved_at_the_source() {
    let rts = pair(2);
    const LEN: usize = 256 << 10;
    let src = Mapping::file(
        &std::env::temp_dir().join(format!("unpinned-src-{}", std::process::id())),
        LEN,
        |i| (i * 7 + 3) as u8,
    )
    .unwrap();
    assert_eq!(src.present_pages(), 0);
    let dst = Mapping::anon(LEN).unwrap();
    // SAFETY: dst outlives the runtimes' use.
    let key = unsafe { rts[1].expose(dst.ptr(), LEN, Perms::W).unwrap() };
    // SAFETY: src is neither written nor unmapped until the completion.
    let id = unsafe { rts[0].write(1, src.ptr(), dst.addr(), key, LEN).unwrap() };
    rts[0].wait(id).unwrap();
    // SAFETY: completed.
    assert!(unsafe { dst.as_slice() == src.as_slice() });
    let s = rts[0].stats().unwrap();
    assert!(s.engine.source_faults > 0 && s.handler.resumes > 0, "{s:?}");
}

#[test]
fn protection_failures_write_nothing() {
    let rts = pair(2);
    let dst = Mapping::anon(64 << 10).unwrap();
    // Expose only the middle 32 KiB.
    let base = dst.addr() + (16 << 10);
    // SAFETY: dst outlives the runtimes' use.
    let key = unsafe {
        rts[1]
            .expose(base as *const u8, 32 << 10, Perms::W)
            .unwrap()
    };
    let data = vec![0x5au8; 8 << 10];
    let fails = [
        (base + (28 << 10), key, "past the end"),
        (base - 1, key, "before the start"),
        (base, key ^ 0x55, "wrong key"),
    ];
    for (addr, k, what) in fails {
        match rts[0].write_blocking(1, &data, addr, k) {
            Err(LiveError::Failed {
                error: CompletionError::RemoteAccess,
                ..
            }) => {}
            other => panic!("{what}: expected a remote access error, got {other:?}"),
        }
    }
    // Reading needs read permission.
    let mut out = vec![0u8; 16];
    assert!(matches!(
        rts[0].read_blocking(1, &mut out, base, key),
        Err(LiveError::Failed {
            error: CompletionError::RemoteAccess,
            ..
        })
    ));
    // SAFETY: every request completed.
    assert!(
        unsafe { dst.as_slice() }.iter().all(|&b| b == 0),
        "nothing written"
    );
    // A read-only exposure cannot be granted write permission on a read-only mapping.
    // SAFETY: fresh read-only mapping owned by the test.
    let ro = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    // SAFETY: the exposure is refused before anything could write.
    let e = unsafe { rts[1].expose(ro as *const u8, 4096, Perms::W) }.unwrap_err();
    assert!(e.to_string().contains("not writable"), "{e}");
    // SAFETY: our mapping.
    unsafe { libc::munmap(ro, 4096) };
    // Memory made inaccessible after it was exposed (mprotect PROT_NONE) fails as a protection
    // error, without a crash: the page-in fails with EFAULT and the page is reported bad.
    // (mprotect rather than munmap: another test's mapping could land in an unmapped hole.)
    let gone = Mapping::anon(16 << 10).unwrap();
    // SAFETY: exposure of our mapping, made inaccessible below on purpose.
    let k2 = unsafe { rts[1].expose(gone.ptr(), gone.len(), Perms::W).unwrap() };
    // SAFETY: mprotect of our own mapping; nothing holds references into it.
    assert_eq!(
        unsafe { libc::mprotect(gone.ptr() as *mut libc::c_void, gone.len(), libc::PROT_NONE) },
        0
    );
    assert!(matches!(
        rts[0].write_blocking(1, &data, gone.addr(), k2),
        Err(LiveError::Failed {
            error: CompletionError::RemoteAccess,
            ..
        })
    ));
    assert!(rts[1].stats().unwrap().handler.bad_ranges > 0);
}

#[test]
fn concurrent_writers_into_one_target() {
    let rts = pair(4);
    const PART: usize = 512 << 10;
    let dst = Mapping::anon(3 * PART).unwrap();
    // SAFETY: dst outlives the runtimes' use.
    let key = unsafe { rts[0].expose(dst.ptr(), dst.len(), Perms::W).unwrap() };
    let srcs: Vec<Vec<u8>> = (1..4).map(|r| pattern(r as u64 * 1000, PART)).collect();
    std::thread::scope(|s| {
        for r in 1..4usize {
            let (rt, src, addr) = (&rts[r], &srcs[r - 1], dst.addr() + ((r - 1) * PART) as u64);
            s.spawn(move || {
                // Several outstanding writes per rank, 64 KiB each.
                let ids: Vec<_> = (0..PART / (64 << 10))
                    .map(|i| {
                        let o = i * (64 << 10);
                        // SAFETY: `src` outlives the flush below.
                        unsafe {
                            rt.write(0, src[o..].as_ptr(), addr + o as u64, key, 64 << 10)
                                .unwrap()
                        }
                    })
                    .collect();
                assert_eq!(ids.len(), 8);
                rt.flush().unwrap();
            });
        }
    });
    // SAFETY: every writer flushed.
    let got = unsafe { dst.as_slice() };
    for r in 0..3 {
        assert!(
            got[r * PART..(r + 1) * PART] == srcs[r][..],
            "part of rank {}",
            r + 1
        );
    }
}

#[test]
fn dead_peer_gives_retry_exceeded_not_a_hang() {
    let mut rts = pair(2);
    let dst = Mapping::anon(1 << 20).unwrap();
    // SAFETY: dst outlives the runtimes' use.
    let key = unsafe { rts[1].expose(dst.ptr(), dst.len(), Perms::W).unwrap() };
    rts.pop(); // rank 1 stops answering
    let data = vec![1u8; 1 << 20];
    let t = Instant::now();
    match rts[0].write_blocking(1, &data, dst.addr(), key) {
        Err(LiveError::Failed {
            error: CompletionError::RetryExceeded,
            ..
        }) => {}
        other => panic!("expected RetryExceeded, got {other:?}"),
    }
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
}

/// An application that polls instead of waiting: `progress` turns the engine in the calling
/// thread and `poll_completion` picks the completion up; the bytes arrive. A fresh page at the
/// target takes the fault path (NACK, page-in, ERR, retransmission) under the same polling.
#[test]
fn polling_with_progress_completes_writes() {
    let rts = pair(2);
    let (a, b) = (&rts[0], &rts[1]);
    let dst = Mapping::anon(2 * 4096).unwrap();
    // SAFETY: dst outlives the runtimes' use; read only after the completions.
    let key = unsafe { b.expose(dst.ptr(), dst.len(), Perms::RW).unwrap() };
    for (i, len) in [(0usize, 8usize), (1, 4096)] {
        let src = pattern(i as u64 + 3, len);
        // SAFETY: src lives until the completion below.
        let id =
            unsafe { a.write(1, src.as_ptr(), dst.addr() + (i * 4096) as u64, key, len) }.unwrap();
        let t = Instant::now();
        let c = loop {
            a.progress().unwrap();
            if let Some(c) = a.poll_completion() {
                break c;
            }
            assert!(t.elapsed() < Duration::from_secs(20), "no completion");
        };
        assert_eq!(c.wr_id, id);
        assert!(c.status.is_ok(), "{:?}", c.status);
        // SAFETY: the write completed; nothing writes the page any more.
        let got = unsafe { &dst.as_mut_slice()[i * 4096..i * 4096 + len] };
        assert_eq!(got, &src[..]);
    }
}
