//! Residency of a whole range in one system call: the `PAGEMAP_SCAN` ioctl of
//! `/proc/self/pagemap` (Linux 6.7 and later).
//!
//! `pread` of pagemap returns one 8-byte entry per page, and the kernel builds and copies every
//! one of them. `PAGEMAP_SCAN` walks the same page tables but returns *ranges* of pages whose
//! categories match a mask: a fully present range is one range, so the cost is about one
//! system call plus a few nanoseconds per page (measurements: docs/performance.md, "Live
//! runtime: residency checks"). `unpinned_live::memory::LiveMemory`
//! asks it for the *good prefix* of a range (pages present, and for a write not the shared zero
//! page) and remembers the answer for a bounded time: one call per window of a transfer, not
//! per packet.
//!
//! What it cannot tell: whether a private anonymous page is mapped exclusively (pagemap bit 56)
//! or shared copy-on-write with a child after `fork` (a write to it takes a CPU fault). The
//! memory checker therefore uses it for writes only while this process has never forked
//! ([`forked`], counted by a `pthread_atfork` handler; `posix_spawn`, which `std::process`
//! uses, does not run those handlers and shares no pages), and falls back to per-page pagemap
//! entries otherwise. Holes between mappings are never reported as matching (the kernel skips
//! them), so a good prefix never extends over unmapped memory.

use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Once;

/// `PAGE_IS_PRESENT` of `<linux/fs.h>`.
const PAGE_IS_PRESENT: u64 = 1 << 3;
/// `PAGE_IS_PFNZERO`: the page is the shared zero page (fresh memory that was only read).
const PAGE_IS_PFNZERO: u64 = 1 << 5;

/// `struct page_region` of `<linux/fs.h>`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct PageRegion {
    start: u64,
    end: u64,
    categories: u64,
}

/// `struct pm_scan_arg` of `<linux/fs.h>`.
#[repr(C)]
#[derive(Default)]
struct PmScanArg {
    size: u64,
    flags: u64,
    start: u64,
    end: u64,
    walk_end: u64,
    vec: u64,
    vec_len: u64,
    max_pages: u64,
    category_inverted: u64,
    category_mask: u64,
    category_anyof_mask: u64,
    return_mask: u64,
}

/// `PAGEMAP_SCAN = _IOWR('f', 16, struct pm_scan_arg)`.
const PAGEMAP_SCAN: u64 =
    (3 << 30) | ((std::mem::size_of::<PmScanArg>() as u64) << 16) | ((b'f' as u64) << 8) | 16;

/// Forks of this process seen so far (both sides of a fork count one).
static FORKS: AtomicU64 = AtomicU64::new(0);
static ATFORK: Once = Once::new();

extern "C" fn on_fork() {
    FORKS.fetch_add(1, Ordering::SeqCst);
}

/// Start counting forks (idempotent). Called when a memory checker is created: forks before
/// that do not matter for pages allocated after them, and the count only ever makes the checker
/// more careful.
pub fn watch_forks() {
    ATFORK.call_once(|| {
        // SAFETY: registers two plain `extern "C"` functions that only touch an atomic; they
        // are async-signal-safe and valid for the life of the process.
        unsafe { libc::pthread_atfork(None, Some(on_fork), Some(on_fork)) };
    });
}

/// Whether this process has forked since [`watch_forks`] (private pages may then be shared
/// copy-on-write with a child, which `PAGEMAP_SCAN` cannot see).
pub fn forked() -> bool {
    FORKS.load(Ordering::SeqCst) > 0
}

/// What a page must be to count as good.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// Present (the zero page is fine to read).
    Read,
    /// Present and not the shared zero page.
    Write,
}

/// What follows the good prefix of a [`probe`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum After {
    /// The whole range is good.
    End,
    /// The first page is mapped but not good (missing, swapped out, or for [`Need::Write`]
    /// the zero page): a page-in makes it good.
    Missing,
    /// The first page is not mapped at all.
    Unmapped,
    /// A good prefix ends before the range does; what follows it is not told (the run
    /// after it, or the kernel's 2 MiB walk chunk, ended the call): probe again from there.
    Unknown,
}

/// Answer of [`probe`]: every page of `[start, good_end)` is good, and `after` says what
/// comes after.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Probe {
    /// End of the good prefix (`start` if the first page is not good).
    pub good_end: u64,
    /// What the page at `good_end` is, as far as this call tells.
    pub after: After,
}

/// The good prefix of `[start, end)` (page-aligned `start`), and for a first page that is
/// not good whether it is missing or unmapped, in one system call. `None`: the kernel has no
/// `PAGEMAP_SCAN` (or refused the call); use pagemap entries instead.
///
/// Every mapped page is reported (no category filter), with only the bits that decide
/// goodness kept, so that the kernel returns *runs* of pages alike and stops at the end of
/// the first one (one region asked): the run from `start` is the good prefix, or tells that
/// the first page is missing (a run of not-good pages starts there) or unmapped (the kernel
/// never reports holes between mappings, so the run starts later or there is none). A
/// missing first page costs a walk of its own run only, not of the whole window, and no
/// `mincore` is needed to tell "missing" from "unmapped" (`examples/miss_check.rs` compares
/// both).
pub fn probe(pagemap: &std::fs::File, start: u64, end: u64, need: Need) -> Option<Probe> {
    let mut region = PageRegion::default();
    let (return_mask, good_cats) = match need {
        Need::Read => (PAGE_IS_PRESENT, PAGE_IS_PRESENT),
        Need::Write => (PAGE_IS_PRESENT | PAGE_IS_PFNZERO, PAGE_IS_PRESENT),
    };
    let mut arg = PmScanArg {
        size: std::mem::size_of::<PmScanArg>() as u64,
        start,
        end,
        vec: &mut region as *mut PageRegion as u64,
        vec_len: 1,
        return_mask,
        ..PmScanArg::default()
    };
    // SAFETY: PAGEMAP_SCAN on our own pagemap file with a correctly sized argument whose `vec`
    // points to one `PageRegion` that lives across the call; the kernel only reads the page
    // tables of this process and writes `arg` and at most `vec_len` regions.
    let n = unsafe { libc::ioctl(pagemap.as_raw_fd(), PAGEMAP_SCAN as _, &mut arg) };
    if n < 0 {
        return None;
    }
    let (good_end, after) = if n == 0 || region.start != start {
        (start, After::Unmapped)
    } else if region.categories != good_cats {
        (start, After::Missing)
    } else {
        let g = region.end.min(end);
        (g, if g >= end { After::End } else { After::Unknown })
    };
    Some(Probe { good_end, after })
}

/// End of the good prefix of `[start, end)` (page-aligned `start`): every page of
/// `[start, returned)` is present (and, for [`Need::Write`], not the zero page); `start` itself
/// if the first page is not good. `None`: the kernel has no `PAGEMAP_SCAN` (or refused the
/// call); use pagemap entries instead.
pub fn good_prefix(pagemap: &std::fs::File, start: u64, end: u64, need: Need) -> Option<u64> {
    probe(pagemap, start, end, need).map(|p| p.good_end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn good_prefix_stops_at_missing_zero_and_unmapped_pages() {
        let _map_lock = crate::MAP_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let pm = std::fs::File::open("/proc/self/pagemap").unwrap();
        let m = crate::mapping::Mapping::anon(8 * 4096).unwrap();
        let b = m.addr();
        let Some(p) = good_prefix(&pm, b, b + 8 * 4096, Need::Read) else {
            eprintln!("no PAGEMAP_SCAN on this kernel: skipped");
            return;
        };
        assert_eq!(p, b, "fresh memory is not present");
        // SAFETY: the mapping is ours and nothing else accesses it.
        let s = unsafe { m.as_mut_slice() };
        for i in 0..4 {
            s[i * 4096] = 1;
        }
        // Page 4 read only: the zero page (readable, not writable without a fault).
        // SAFETY: a read of our own mapped page.
        let _ = unsafe { std::ptr::read_volatile(s.as_ptr().add(4 * 4096)) };
        assert_eq!(
            good_prefix(&pm, b, b + 8 * 4096, Need::Write),
            Some(b + 4 * 4096)
        );
        assert_eq!(
            good_prefix(&pm, b, b + 8 * 4096, Need::Read),
            Some(b + 5 * 4096)
        );
        assert_eq!(
            good_prefix(&pm, b, b + 2 * 4096, Need::Write),
            Some(b + 2 * 4096)
        );
        assert_eq!(
            good_prefix(&pm, b + 5 * 4096, b + 8 * 4096, Need::Read),
            Some(b + 5 * 4096)
        );
        // A hole (unmapped page) ends the prefix even when the pages after it are present.
        for i in 5..8 {
            s[i * 4096] = 1;
        }
        // SAFETY: unmapping one page of our own mapping; nothing references it.
        unsafe { libc::munmap((b + 6 * 4096) as *mut libc::c_void, 4096) };
        assert_eq!(
            good_prefix(&pm, b + 4096, b + 8 * 4096, Need::Write),
            Some(b + 4 * 4096)
        );
        assert_eq!(
            good_prefix(&pm, b + 5 * 4096, b + 8 * 4096, Need::Write),
            Some(b + 6 * 4096)
        );
        assert_eq!(
            good_prefix(&pm, b + 7 * 4096, b + 8 * 4096, Need::Write),
            Some(b + 8 * 4096)
        );
    }

    #[test]
    fn probe_tells_missing_from_unmapped() {
        let _map_lock = crate::MAP_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let pm = std::fs::File::open("/proc/self/pagemap").unwrap();
        let m = crate::mapping::Mapping::anon(8 * 4096).unwrap();
        let b = m.addr();
        let Some(p) = probe(&pm, b, b + 8 * 4096, Need::Write) else {
            eprintln!("no PAGEMAP_SCAN on this kernel: skipped");
            return;
        };
        let at = |good_end, after| Some(Probe { good_end, after });
        assert_eq!(Some(p), at(b, After::Missing), "fresh memory is missing");
        // SAFETY: the mapping is ours and nothing else accesses it.
        let s = unsafe { m.as_mut_slice() };
        s[0] = 1;
        s[4096] = 1;
        // SAFETY: a read of our own mapped page (maps the zero page).
        let _ = unsafe { std::ptr::read_volatile(s.as_ptr().add(2 * 4096)) };
        let w = Need::Write;
        assert_eq!(
            probe(&pm, b, b + 8 * 4096, w),
            at(b + 2 * 4096, After::Unknown)
        );
        assert_eq!(
            probe(&pm, b + 2 * 4096, b + 8 * 4096, w),
            at(b + 2 * 4096, After::Missing)
        );
        let r = Need::Read;
        assert_eq!(
            probe(&pm, b, b + 8 * 4096, r),
            at(b + 3 * 4096, After::Unknown)
        );
        assert_eq!(probe(&pm, b, b + 2 * 4096, w), at(b + 2 * 4096, After::End));
        assert_eq!(probe(&pm, b, b + 3 * 4096, r), at(b + 3 * 4096, After::End));
        // SAFETY: unmapping pages of our own mapping; nothing references them.
        unsafe { libc::munmap((b + 3 * 4096) as *mut libc::c_void, 5 * 4096) };
        assert_eq!(
            probe(&pm, b + 3 * 4096, b + 8 * 4096, r),
            at(b + 3 * 4096, After::Unmapped)
        );
        assert_eq!(
            probe(&pm, b + 4096, b + 8 * 4096, r),
            at(b + 3 * 4096, After::Unknown)
        );
        // A hole first, a mapping after it: still unmapped at the start.
        assert_eq!(
            probe(&pm, b + 7 * 4096, b + 9 * 4096, r).unwrap().after,
            After::Unmapped
        );
    }

    #[test]
    fn probe_never_calls_a_chunk_boundary_missing() {
        let _map_lock = crate::MAP_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let pm = std::fs::File::open("/proc/self/pagemap").unwrap();
        // 6 MiB present: the kernel's walk crosses 2 MiB chunk boundaries.
        let len = 6usize << 20;
        let m = crate::mapping::Mapping::anon(len).unwrap();
        // SAFETY: the mapping is ours and nothing else accesses it.
        let s = unsafe { m.as_mut_slice() };
        for i in (0..len).step_by(4096) {
            s[i] = 1;
        }
        let b = m.addr();
        let Some(p) = probe(&pm, b, b + len as u64, Need::Write) else {
            eprintln!("no PAGEMAP_SCAN on this kernel: skipped");
            return;
        };
        assert!(p.good_end > b);
        assert!(
            p.after == After::End || p.after == After::Unknown,
            "{p:?} from {b:#x}"
        );
    }
}
