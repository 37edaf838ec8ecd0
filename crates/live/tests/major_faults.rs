//! Major faults in the live runtime (issue 17, section 4; spec part.md, "Beyond the reference
//! design"): the target region is a shared mapping of a file whose page cache was dropped
//! (`Mapping::file`: written back, `MADV_DONTNEED`, `POSIX_FADV_DONTNEED`), so the first
//! access to each page needs a read from the file. PART's fault path (NACK, page-in thread,
//! ERR; a source fault for reads) brings the pages in, the bytes land in the file, and a
//! second write into resident memory of the same target posted during the major page-in
//! completes correctly.

use unpinned_live::{Perms, Runtime};
use unpinned_os::mapping::Mapping;

fn pair() -> Vec<Runtime> {
    Runtime::in_process(2, |_| {}).expect("runtimes")
}

/// Pages of `m` whose file page is in the page cache (`mincore`), mapped or not.
fn cached_pages(m: &Mapping) -> usize {
    let pages = m.len() / 4096;
    let mut vec = vec![0u8; pages];
    // SAFETY: `m` is a live mapping of `m.len()` bytes and `vec` has one byte per page.
    let r = unsafe { libc::mincore(m.ptr() as *mut libc::c_void, m.len(), vec.as_mut_ptr()) };
    assert_eq!(r, 0, "mincore: {}", std::io::Error::last_os_error());
    vec.iter().filter(|&&b| b & 1 != 0).count()
}

/// A file under the test's scratch directory (on the build's disk, not a tmpfs: dropping
/// its page cache really makes its pages cold).
fn scratch(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("unpinned-major-{name}-{}", std::process::id()))
}

/// A cold file mapping of `len` bytes filled with `fill`; None (and a note) when the file
/// system keeps its pages cached anyway (tmpfs), where no fault could be major.
fn cold(path: &std::path::Path, len: usize, fill: impl Fn(usize) -> u8) -> Option<Mapping> {
    let m = Mapping::file(path, len, fill).unwrap();
    assert_eq!(m.present_pages(), 0, "no page mapped after drop_cache");
    let cached = cached_pages(&m);
    if cached != 0 {
        eprintln!("{cached} pages stay in the page cache of {path:?}: not a cold file, skipped");
        return None;
    }
    Some(m)
}

#[test]
fn writes_and_reads_through_major_faults() {
    const LEN: usize = 1 << 20;
    let rts = pair();
    let path = scratch("write");
    let Some(dst) = cold(&path, LEN, |i| (i % 251) as u8) else {
        let _ = std::fs::remove_file(&path);
        return;
    };
    // A write into the middle of the cold file mapping.
    // SAFETY: the runtimes are dropped below, before `dst`.
    let key = unsafe { rts[1].expose(dst.ptr(), LEN, Perms::RW).unwrap() };
    let src: Vec<u8> = (0..LEN - 8192).map(|i| (i * 13 + 5) as u8).collect();
    rts[0]
        .write_blocking(1, &src, dst.addr() + 4096, key)
        .unwrap();
    let s = rts[1].stats().unwrap();
    assert!(
        s.engine.nacks_fault_sent > 0 && s.engine.errs_sent > 0,
        "the fault path ran: {} NACKs, {} ERRs",
        s.engine.nacks_fault_sent,
        s.engine.errs_sent
    );
    // The bytes are in the file: write it back, drop its cache, read it from disk.
    dst.drop_cache().unwrap();
    let file = std::fs::read(&path).unwrap();
    assert!(file[..4096]
        .iter()
        .enumerate()
        .all(|(i, &b)| b == (i % 251) as u8));
    assert!(
        file[4096..LEN - 4096] == src[..],
        "the written bytes reached the file"
    );
    assert!(file[LEN - 4096..]
        .iter()
        .enumerate()
        .all(|(i, &b)| b == ((LEN - 4096 + i) % 251) as u8));
    // A read whose source is the (again cold) file mapping: source faults at the target.
    dst.drop_cache().unwrap();
    assert_eq!(cached_pages(&dst), 0);
    let mut out = vec![0u8; LEN];
    rts[0].read_blocking(1, &mut out, dst.addr(), key).unwrap();
    assert!(out == file, "read back through major faults");
    assert!(rts[1].stats().unwrap().engine.source_faults > 0);
    drop(rts);
    let _ = std::fs::remove_file(&path);
}

#[test]
fn a_write_into_resident_memory_completes_during_a_major_page_in() {
    const BIG: usize = 4 << 20;
    const SMALL: usize = 16 << 10;
    let rts = pair();
    let path = scratch("hit");
    let Some(cold_dst) = cold(&path, BIG, |_| 0) else {
        let _ = std::fs::remove_file(&path);
        return;
    };
    let warm = Mapping::anon(SMALL).unwrap();
    // SAFETY: not exposed yet; touching makes every page resident.
    unsafe { warm.as_mut_slice() }.fill(1);
    // SAFETY: the runtimes are dropped below, before both mappings.
    let (kc, kw) = unsafe {
        (
            rts[1].expose(cold_dst.ptr(), BIG, Perms::W).unwrap(),
            rts[1].expose(warm.ptr(), SMALL, Perms::W).unwrap(),
        )
    };
    let big: Vec<u8> = (0..BIG).map(|i| (i * 7 + 1) as u8).collect();
    let small: Vec<u8> = (0..SMALL).map(|i| (i * 3 + 2) as u8).collect();
    // SAFETY: `big` and `small` outlive the waits below and are not mutated.
    let (a, b) = unsafe {
        (
            rts[0]
                .write(1, big.as_ptr(), cold_dst.addr(), kc, BIG)
                .unwrap(),
            rts[0]
                .write(1, small.as_ptr(), warm.addr(), kw, SMALL)
                .unwrap(),
        )
    };
    let t0 = std::time::Instant::now();
    rts[0].wait(b).unwrap();
    let small_us = t0.elapsed().as_micros();
    // Whether the big write was still in flight when the small one completed (timing on a
    // shared machine: reported, not asserted).
    let overlapped = rts[0].poll_completion().is_none();
    rts[0].wait(a).unwrap();
    eprintln!(
        "16 KiB into resident memory: {small_us} us (big write still in flight: {overlapped}); \
         4 MiB into the cold file: {} us",
        t0.elapsed().as_micros()
    );
    // SAFETY: both writes completed; nothing writes the mappings any more.
    unsafe {
        assert!(warm.as_slice() == &small[..]);
        assert!(cold_dst.as_slice() == &big[..]);
    }
    assert!(rts[1].stats().unwrap().engine.nacks_fault_sent > 0);
    drop(rts);
    let _ = std::fs::remove_file(&path);
}
