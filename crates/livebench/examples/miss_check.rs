//! What the target's residency check of a write into a missing page costs: the check of a
//! freshly exposed 4 KiB anonymous page (one `PAGEMAP_SCAN` bounded by the exposure, which
//! also tells "missing" from "unmapped"), against the previous way (a scan of the 256 KiB
//! window for a good prefix, then `mincore` of the page), the new probe over the whole
//! window and over the page alone, and one `MADV_POPULATE_WRITE` of the page; medians of
//! `N` fresh pages each (`cargo run --release -p unpinned-livebench --example miss_check [N]`).
use std::time::Instant;

use unpinned_core::memory::MemError;
use unpinned_live::memory::{is_mapped, Access, LiveMemory, SCAN_AHEAD_BYTES};
use unpinned_os::mapping::Mapping;
use unpinned_os::scan::{good_prefix, probe, Need};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(3000);
    let pm = std::fs::File::open("/proc/self/pagemap").unwrap();
    let mut mem = LiveMemory::new(unpinned_live::memory::LOCAL_PDID).unwrap();
    let (mut check, mut old, mut populate) = (Vec::new(), Vec::new(), Vec::new());
    let (mut page_only, mut present, mut window) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..6 * n {
        let m = Mapping::anon(4096).unwrap();
        let p = m.addr();
        match i % 6 {
            0 => {
                // As the runtime does for an exposure of anonymous memory.
                mem.forget();
                mem.watch_exposure(p, p + 4096);
                let t = Instant::now();
                let r = mem.check(p, 4096, Access::Write);
                check.push(t.elapsed().as_secs_f64() * 1e6);
                mem.unwatch_exposure(p, p + 4096);
                assert_eq!(r, Err(MemError::NotPresent { page_addr: p }));
            }
            1 => {
                let t = Instant::now();
                let g = good_prefix(&pm, p, p + SCAN_AHEAD_BYTES, Need::Write);
                let mapped = is_mapped(p);
                old.push(t.elapsed().as_secs_f64() * 1e6);
                assert_eq!((g, mapped), (Some(p), true));
            }
            2 => {
                let t = Instant::now();
                let r = probe(&pm, p, p + 4096, Need::Write);
                page_only.push(t.elapsed().as_secs_f64() * 1e6);
                assert_eq!(r.map(|r| r.good_end), Some(p));
            }
            5 => {
                let t = Instant::now();
                let r = probe(&pm, p, p + SCAN_AHEAD_BYTES, Need::Write);
                window.push(t.elapsed().as_secs_f64() * 1e6);
                assert_eq!(r.map(|r| r.good_end), Some(p));
            }
            3 => {
                unpinned_os::populate::page_in(p, p + 4096, true).unwrap();
                let t = Instant::now();
                let r = probe(&pm, p, p + 4096, Need::Write);
                present.push(t.elapsed().as_secs_f64() * 1e6);
                assert_eq!(r.map(|r| r.good_end), Some(p + 4096));
            }
            _ => {
                let t = Instant::now();
                unpinned_os::populate::page_in(p, p + 4096, true).unwrap();
                populate.push(t.elapsed().as_secs_f64() * 1e6);
            }
        }
    }
    println!(
        "probe of the 256 KiB window from a missing page {:.2} us; of the page alone: missing {:.2} us, present {:.2} us",
        median(window),
        median(page_only),
        median(present)
    );
    // The sender's side: a posted 4 KiB source on the heap, its verdict expired.
    let src = vec![7u8; 4096];
    let mut smem = LiveMemory::new(unpinned_live::memory::LOCAL_PDID).unwrap();
    let mut out = vec![0u8; 4096];
    let mut source = Vec::new();
    for _ in 0..n {
        smem.forget();
        let a = src.as_ptr() as u64;
        let t = Instant::now();
        smem.watch_local(a, 4096);
        let r = unpinned_core::memory::Memory::read(
            &mut smem,
            unpinned_live::memory::LOCAL_PDID,
            a,
            &mut out,
        );
        source.push(t.elapsed().as_secs_f64() * 1e6);
        assert_eq!(r, Ok(()));
    }
    println!(
        "a posted 4 KiB heap source, checked and read: {:.2} us",
        median(source)
    );
    let s = mem.stats();
    println!(
        "missing-page check: {:.2} us (scans {}, mincore {}); scan of 256 KiB + mincore: {:.2} us; \
         MADV_POPULATE_WRITE of the page: {:.2} us (medians of {n})",
        median(check),
        s.range_scans,
        s.mincore_calls,
        median(old),
        median(populate)
    );
}
