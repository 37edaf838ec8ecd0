//! Reclaim while transfers run (issue 17, section 4, "fault patterns", live): a thread takes
//! destination pages away with `MADV_DONTNEED` / `MADV_PAGEOUT` while writes land in them. The
//! bytes must all arrive, and the pages must come back through PART's fault path (page-fault
//! NACK, page-in thread, ERR), under each page-in policy.
//!
//! The destination is a shared file mapping: there `MADV_DONTNEED` only drops the page-table
//! entries (the page cache keeps the bytes, the next access maps them again) and
//! `MADV_PAGEOUT` writes the pages back and reclaims them, so an eviction never loses data
//! already written, as reclaim never does. (On private anonymous memory `MADV_DONTNEED` would
//! discard the bytes, and without swap `MADV_PAGEOUT` does nothing.)

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use unpinned_live::{PageInPolicy, Perms, Runtime};
use unpinned_os::mapping::Mapping;
use unpinned_testkit::pattern;

const LEN: usize = 1 << 20;
const PAGE: usize = 4096;
const WRITES: u64 = 3;

fn pair(policy: PageInPolicy) -> Vec<Runtime> {
    Runtime::in_process(2, |c| c.handler.policy = policy).expect("runtimes")
}

/// `madvise(advice)` over `[addr, addr + len)`; true when the kernel accepted it.
fn advise(addr: usize, len: usize, advice: i32) -> bool {
    // SAFETY: the range lies in the test's own shared file mapping, which outlives every call
    // (the evictor is joined before it is unmapped). DONTNEED on a shared file mapping drops
    // page-table entries only and PAGEOUT reclaims written-back pages: neither loses bytes.
    unsafe { libc::madvise(addr as *mut libc::c_void, len, advice) == 0 }
}

#[test]
fn pages_evicted_during_writes_come_back_through_the_fault_path() {
    let dir = std::env::temp_dir().join(format!("unpinned-reclaim-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    for policy in [PageInPolicy::Pio, PageInPolicy::Pia, PageInPolicy::Adaptive] {
        let rts = pair(policy);
        let path = dir.join(policy.name());
        let dst = Mapping::file(&path, LEN, |_| 0).expect("file mapping");
        // SAFETY: dst outlives the exposure's use; it is read only after each write completed.
        let key = unsafe { rts[1].expose(dst.ptr(), dst.len(), Perms::RW).unwrap() };
        let stop = Arc::new(AtomicBool::new(false));
        let evictions = Arc::new(AtomicU64::new(0));
        let base = dst.addr() as usize;
        let evictor = {
            let (stop, evictions) = (stop.clone(), evictions.clone());
            std::thread::spawn(move || {
                let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    // A run of 1..=8 pages somewhere in the buffer; every 4th by PAGEOUT.
                    let pages = (x >> 40) as usize % 8 + 1;
                    let first = (x as usize % (LEN / PAGE)).min(LEN / PAGE - pages);
                    let advice = if i % 4 == 3 {
                        libc::MADV_PAGEOUT
                    } else {
                        libc::MADV_DONTNEED
                    };
                    if advise(base + first * PAGE, pages * PAGE, advice) {
                        evictions.fetch_add(1, Ordering::Relaxed);
                    }
                    i += 1;
                    std::thread::sleep(std::time::Duration::from_micros(20));
                }
            })
        };
        for w in 0..WRITES {
            // Every page missing at the start, and more taken away while the write runs.
            assert!(advise(base, LEN, libc::MADV_DONTNEED));
            let before = rts[1].stats().unwrap();
            let src = pattern(w * 31 + policy.name().len() as u64, LEN);
            rts[0]
                .write_blocking(1, &src, dst.addr(), key)
                .unwrap_or_else(|e| panic!("{policy} write {w}: {e}"));
            let after = rts[1].stats().unwrap();
            // SAFETY: the write completed; the evictor only drops mappings of cached pages,
            // which a read maps back with the same bytes.
            let got = unsafe { dst.as_slice() };
            assert!(got == &src[..], "{policy} write {w}: bytes differ");
            let records = after.handler.records - before.handler.records;
            let nacks = after.engine.nacks_fault_sent - before.engine.nacks_fault_sent;
            assert!(
                records > 0 && nacks > 0 && after.handler.pages > before.handler.pages,
                "{policy} write {w}: the missing pages must take the fault path \
                 (records {records}, fault NACKs {nacks})"
            );
            eprintln!(
                "{policy} write {w}: {records} fault records, {nacks} fault NACKs, {} pages in, \
                 {} ERRs",
                after.handler.pages - before.handler.pages,
                after.handler.errs - before.handler.errs
            );
        }
        stop.store(true, Ordering::Relaxed);
        evictor.join().expect("evictor");
        assert!(
            evictions.load(Ordering::Relaxed) > 0,
            "{policy}: the evictor ran during the writes"
        );
        rts[1].revoke(key).unwrap();
        drop(rts);
        drop(dst);
        std::fs::remove_file(&path).ok();
    }
    std::fs::remove_dir_all(&dir).ok();
}
