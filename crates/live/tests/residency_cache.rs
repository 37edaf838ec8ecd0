//! The translation cache (crate::residency_cache) through the whole runtime: verdicts of a
//! registered exposure outlive the TTL, and `munmap` + `mmap` at the same address sends the
//! next write through the page-fault path again (the stale-translation hazard of a
//! registration cache), with the right bytes.

use unpinned_live::{Perms, Runtime};

const LEN: usize = 256 << 10;

fn pair() -> Vec<Runtime> {
    Runtime::in_process(2, |c| {
        // Long enough that only an invalidation can end a verdict during the test.
        c.memory.residency_ttl_us = 3_600_000_000;
    })
    .expect("runtimes")
}

fn anon_at(addr: u64, flags: i32) -> u64 {
    // SAFETY: a private anonymous mapping of the test's own (MAP_FIXED only ever replaces the
    // test's own mapping at `addr`).
    let p = unsafe {
        libc::mmap(
            addr as *mut libc::c_void,
            LEN,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | flags,
            -1,
            0,
        )
    };
    assert_ne!(p, libc::MAP_FAILED);
    p as u64
}

#[test]
fn remap_at_the_same_address_takes_the_fault_path_again() {
    let rts = pair();
    let dst = anon_at(0, 0);
    // SAFETY: dst stays mapped (replaced in place below) while exposed.
    let key = unsafe { rts[1].expose(dst as *const u8, LEN, Perms::RW).unwrap() };
    let nacks = |rt: &Runtime| rt.stats().unwrap().engine.nacks_fault_sent;
    // Fresh memory: faults, then present. Enough writes to register the exposure.
    for i in 0..6u8 {
        let src = vec![i + 1; LEN];
        rts[0].write_blocking(1, &src, dst, key).unwrap();
    }
    let m = rts[1].stats().unwrap().memory;
    if m.cache_registrations == 0 {
        eprintln!("no userfaultfd or PAGEMAP_SCAN here ({m:?}): skipped");
        return;
    }
    assert!(m.cache_verdicts > 0);
    let (n0, scans0) = (nacks(&rts[1]), rts[1].stats().unwrap().memory.range_scans);
    assert!(n0 > 0, "fresh memory took the fault path");
    // Present now: no fault, and the watched verdict answers without a new scan.
    rts[0].write_blocking(1, &vec![9u8; LEN], dst, key).unwrap();
    assert_eq!(nacks(&rts[1]), n0);
    assert_eq!(rts[1].stats().unwrap().memory.range_scans, scans0);
    // The application replaces the memory with fresh memory at the same address.
    assert_eq!(anon_at(dst, libc::MAP_FIXED), dst);
    let src: Vec<u8> = (0..LEN).map(|i| (i * 7 + 3) as u8).collect();
    rts[0].write_blocking(1, &src, dst, key).unwrap();
    assert!(
        nacks(&rts[1]) > n0,
        "the new, missing pages must be NACKed (a stale verdict would let the engine fault)"
    );
    // SAFETY: the write completed; nothing else writes dst.
    assert_eq!(
        unsafe { std::slice::from_raw_parts(dst as *const u8, LEN) },
        &src[..]
    );
    assert!(rts[1].stats().unwrap().memory.cache_events >= 1);
    rts[1].revoke(key).unwrap();
    drop(rts);
    // SAFETY: unmapping the test's own mapping.
    unsafe { libc::munmap(dst as *mut libc::c_void, LEN) };
}

/// A large local source (not exposed) is watched too: once registered, repeated writes from
/// it need no scan at either side.
#[test]
fn a_large_source_is_watched_after_a_few_writes() {
    let rts = pair();
    let dst = anon_at(0, 0);
    // SAFETY: dst stays mapped while exposed.
    let key = unsafe { rts[1].expose(dst as *const u8, LEN, Perms::RW).unwrap() };
    let src = anon_at(0, 0);
    // SAFETY: the test's own mapping, not exposed; only read by the engine during writes.
    unsafe { std::ptr::write_bytes(src as *mut u8, 5, LEN) };
    // SAFETY: as above.
    let s = unsafe { std::slice::from_raw_parts(src as *const u8, LEN) };
    for _ in 0..6 {
        rts[0].write_blocking(1, s, dst, key).unwrap();
    }
    let m = rts[0].stats().unwrap().memory;
    if m.cache_registrations == 0 {
        eprintln!("no userfaultfd or PAGEMAP_SCAN here ({m:?}): skipped");
        return;
    }
    let scans = |r: &Runtime| r.stats().unwrap().memory.range_scans;
    let (a, b) = (scans(&rts[0]), scans(&rts[1]));
    for _ in 0..5 {
        rts[0].write_blocking(1, s, dst, key).unwrap();
    }
    assert_eq!((scans(&rts[0]), scans(&rts[1])), (a, b));
    // SAFETY: written above, complete.
    assert_eq!(
        unsafe { std::slice::from_raw_parts(dst as *const u8, LEN) },
        s
    );
    rts[1].revoke(key).unwrap();
    drop(rts);
    // SAFETY: unmapping the test's own mappings.
    unsafe {
        libc::munmap(dst as *mut libc::c_void, LEN);
        libc::munmap(src as *mut libc::c_void, LEN);
    }
}
