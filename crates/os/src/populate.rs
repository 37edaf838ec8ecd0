//! Bringing pages in without touching them from Rust: `madvise(MADV_POPULATE_WRITE /
//! MADV_POPULATE_READ)` (Linux >= 5.14, probed once), read-ahead advice, and a fallback for
//! older kernels that touches one byte per page after checking the mapping.

use std::sync::atomic::Ordering;

use crate::PAGE_BYTES;

/// Whether `MADV_POPULATE_*` works on this kernel (Linux >= 5.14), probed once on a page of
/// our own. (At run time `EINVAL` means "incompatible permissions", not "unsupported".)
pub fn populate_supported() -> bool {
    static SUPPORTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SUPPORTED.get_or_init(|| {
        // SAFETY: a fresh private anonymous page, populated and unmapped here; nothing else
        // refers to it.
        unsafe {
            let p = libc::mmap(
                std::ptr::null_mut(),
                PAGE_BYTES as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            if p == libc::MAP_FAILED {
                return false;
            }
            let ok = libc::madvise(p, PAGE_BYTES as usize, libc::MADV_POPULATE_WRITE) == 0;
            libc::munmap(p, PAGE_BYTES as usize);
            ok
        }
    })
}

/// Ask the kernel to read `[start, end)` (page aligned) ahead, asynchronously. Advice only:
/// a failure (an unmapped range) is found by the populate that follows.
pub fn will_need(start: u64, end: u64) {
    if end <= start {
        return;
    }
    // SAFETY: MADV_WILLNEED only starts read-ahead into the page cache (or swap-in) for the
    // range; it changes no mapping and no memory contents, and fails with an errno on an
    // unmapped range.
    unsafe {
        libc::madvise(
            start as usize as *mut libc::c_void,
            (end - start) as usize,
            libc::MADV_WILLNEED,
        )
    };
}

/// Bring `[start, end)` (page aligned) in for `write` (or read) access. Returns `Err(errno)` if
/// the kernel could not: `ENOMEM` for an unmapped range, `EINVAL` / `EFAULT` for a mapping
/// without the permission (e.g. `PROT_NONE` after `mprotect`).
pub fn page_in(start: u64, end: u64, write: bool) -> Result<(), i32> {
    if end <= start {
        return Ok(());
    }
    if populate_supported() {
        let advice = if write {
            libc::MADV_POPULATE_WRITE
        } else {
            libc::MADV_POPULATE_READ
        };
        // In chunks: one madvise holds the process's mmap lock for its whole range, and the
        // engine thread's residency scans (PAGEMAP_SCAN) queue behind it as soon as any
        // thread asks for the lock in write mode (mmap, munmap, brk).
        let mut start = start;
        while start < end {
            let chunk_end = end.min(start + POPULATE_CHUNK_BYTES);
            populate(start, chunk_end, advice)?;
            start = chunk_end;
        }
        return Ok(());
    }
    touch_pages(start, end, write)
}

/// Pages per `madvise(MADV_POPULATE_*)` call of [`page_in`], in bytes.
pub const POPULATE_CHUNK_BYTES: u64 = 16 * PAGE_BYTES;

fn populate(start: u64, end: u64, advice: i32) -> Result<(), i32> {
    loop {
        // SAFETY: MADV_POPULATE_* only populates page tables of the given range as a read or
        // write fault would; it does not change memory contents (a write populate breaks
        // copy-on-write, preserving the bytes) and fails with an errno instead of raising a
        // signal if the range is unmapped or lacks permission.
        let r = unsafe {
            libc::madvise(
                start as usize as *mut libc::c_void,
                (end - start) as usize,
                advice,
            )
        };
        if r == 0 {
            return Ok(());
        }
        match std::io::Error::last_os_error().raw_os_error().unwrap_or(0) {
            libc::EINTR | libc::EAGAIN => continue,
            e => return Err(e),
        }
    }
}

/// Fallback for old kernels: touch one byte per page, after checking from /proc/self/maps
/// that the touch cannot raise a signal.
fn touch_pages(start: u64, end: u64, write: bool) -> Result<(), i32> {
    let mut p = start;
    while p < end {
        if !crate::maps::is_mapped(p) {
            return Err(libc::ENOMEM);
        }
        if crate::maps::check_mapped(p, PAGE_BYTES, true, write).is_err() {
            return Err(libc::EFAULT);
        }
        if write {
            // SAFETY: `p` is mapped readable and writable (checked just above) and is part of
            // memory the engine must write. An atomic fetch_or(0) is a store that leaves the
            // value unchanged and cannot lose a concurrent store of the engine to the same byte.
            unsafe {
                std::sync::atomic::AtomicU8::from_ptr(p as usize as *mut u8)
                    .fetch_or(0, Ordering::Relaxed)
            };
        } else {
            // SAFETY: `p` is mapped readable (checked above); a volatile read of one byte only
            // faults the page in.
            unsafe { std::ptr::read_volatile(p as usize as *const u8) };
        }
        p += PAGE_BYTES;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_in_populates_and_reports_unmapped() {
        let _map_lock = crate::MAP_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let m = crate::mapping::Mapping::anon(2 * PAGE_BYTES as usize).unwrap();
        let p = m.addr();
        assert_eq!(m.present_pages(), 0);
        page_in(p, p + 2 * PAGE_BYTES, true).unwrap();
        assert_eq!(m.present_pages(), 2);
        // SAFETY: unmapping the second page of our own mapping (the mapping's own munmap of
        // the whole range later is harmless on the hole).
        unsafe { libc::munmap((p + PAGE_BYTES) as *mut libc::c_void, PAGE_BYTES as usize) };
        assert!(page_in(p + PAGE_BYTES, p + 2 * PAGE_BYTES, true).is_err());
    }
}
