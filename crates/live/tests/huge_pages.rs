//! Transparent huge pages in the live runtime (issue 17, section 4; spec part.md, "Beyond the
//! reference design"): a PIO write of 4 MiB into a fresh, 2 MiB-aligned anonymous region
//! advised `MADV_HUGEPAGE`. The page-in thread's `MADV_POPULATE_WRITE` of the faulting page
//! makes the kernel allocate a whole huge page, so the rest of that huge page never faults:
//! far fewer page-fault NACKs than the same write into `MADV_NOHUGEPAGE` memory (when the
//! kernel gives huge pages at all: `transparent_hugepage` not `never`, memory not too
//! fragmented; otherwise the comparison is skipped, the bytes are still checked).

use unpinned_core::os::PageInPolicy;
use unpinned_live::{Perms, Runtime};
use unpinned_os::mapping::Mapping;

const HUGE: usize = 2 << 20;
const LEN: usize = 4 << 20;

fn pair() -> Vec<Runtime> {
    Runtime::in_process(2, |c| c.handler.policy = PageInPolicy::Pio).expect("runtimes")
}

/// `AnonHugePages` (bytes) of the mapping holding `addr`, from /proc/self/smaps.
fn anon_huge_bytes(addr: u64) -> u64 {
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
    let mut inside = false;
    for line in smaps.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if let Some((a, b)) = first.split_once('-') {
            if let (Ok(a), Ok(b)) = (u64::from_str_radix(a, 16), u64::from_str_radix(b, 16)) {
                inside = addr >= a && addr < b;
                continue;
            }
        }
        if inside {
            if let Some(kb) = line.strip_prefix("AnonHugePages:") {
                return kb
                    .trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<u64>()
                    .unwrap()
                    * 1024;
            }
        }
    }
    0
}

/// Write 4 MiB (PIO) into a fresh 2 MiB-aligned region with `advice`; returns (bytes
/// correct, page-fault NACKs of the target, huge bytes of the region afterwards).
fn write_with(advice: libc::c_int) -> (bool, u64, u64) {
    let rts = pair();
    let region = Mapping::anon(LEN + HUGE).unwrap();
    let base = region.addr().div_ceil(HUGE as u64) * HUGE as u64;
    // SAFETY: madvise on a 2 MiB-aligned range inside our own mapping.
    let r = unsafe { libc::madvise(base as *mut libc::c_void, LEN, advice) };
    assert_eq!(r, 0, "madvise: {}", std::io::Error::last_os_error());
    // SAFETY: the runtimes are dropped below, before `region`.
    let key = unsafe { rts[1].expose(base as *mut u8, LEN, Perms::W).unwrap() };
    let src: Vec<u8> = (0..LEN).map(|i| (i * 31 + 7) as u8).collect();
    rts[0].write_blocking(1, &src, base, key).unwrap();
    // SAFETY: the write completed; nothing writes the region any more.
    let ok = unsafe { std::slice::from_raw_parts(base as *const u8, LEN) } == &src[..];
    let nacks = rts[1].stats().unwrap().engine.nacks_fault_sent;
    let huge = anon_huge_bytes(base);
    drop(rts);
    (ok, nacks, huge)
}

#[test]
fn pio_into_huge_pages_faults_once_per_huge_page() {
    let (ok, small_nacks, small_huge) = write_with(libc::MADV_NOHUGEPAGE);
    assert!(ok, "bytes on 4 KiB pages");
    assert_eq!(small_huge, 0);
    let (ok, huge_nacks, huge) = write_with(libc::MADV_HUGEPAGE);
    assert!(ok, "bytes on huge pages");
    eprintln!(
        "PIO, 4 MiB: {small_nacks} page-fault NACKs on 4 KiB pages, {huge_nacks} with \
         MADV_HUGEPAGE ({} KiB on huge pages)",
        huge / 1024
    );
    if huge < LEN as u64 {
        eprintln!("the kernel gave {huge} bytes of huge pages, not all 4 MiB: comparison skipped");
        return;
    }
    assert!(small_nacks >= 256, "{small_nacks} NACKs on 4 KiB pages");
    assert!(
        huge_nacks * 8 < small_nacks,
        "{huge_nacks} NACKs on huge pages against {small_nacks}"
    );
}
