//! Owned memory mappings for programs, tests and benchmarks of the live runtime: fresh
//! anonymous memory (every page missing until first touched: minor faults) and file-backed
//! memory whose page cache can be dropped (major faults).

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use crate::PAGE_BYTES;

/// A private mapping, unmapped on drop.
pub struct Mapping {
    ptr: *mut u8,
    len: usize,
    file: Option<(File, PathBuf)>,
}

// SAFETY: a Mapping is an owned region of memory like a Box<[u8]>: moving it to another thread
// moves the ownership, and shared references only hand out raw pointers or `&[u8]`.
unsafe impl Send for Mapping {}
// SAFETY: as above; `&Mapping` only exposes reads through `as_slice` (and raw pointers whose
// use is the caller's responsibility).
unsafe impl Sync for Mapping {}

impl Mapping {
    /// `len` bytes (rounded up to pages) of fresh private anonymous memory. No page is present
    /// until touched (the kernel maps them on first access).
    pub fn anon(len: usize) -> std::io::Result<Mapping> {
        let len = len.max(1).div_ceil(PAGE_BYTES as usize) * PAGE_BYTES as usize;
        // SAFETY: a new private anonymous mapping; the result is checked; nobody else refers to it.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Mapping {
            ptr: p as *mut u8,
            len,
            file: None,
        })
    }

    /// A shared mapping of a new file at `path` of `len` bytes (rounded up to pages), filled
    /// with `fill(offset)` bytes, written back to disk; the file's page cache is dropped and
    /// the mapping has no page present, so the first access to each page is a major fault.
    pub fn file(path: &Path, len: usize, fill: impl Fn(usize) -> u8) -> std::io::Result<Mapping> {
        let len = len.max(1).div_ceil(PAGE_BYTES as usize) * PAGE_BYTES as usize;
        let data: Vec<u8> = (0..len).map(fill).collect();
        std::fs::write(path, &data)?;
        let f = OpenOptions::new().read(true).write(true).open(path)?;
        f.sync_all()?;
        // SAFETY: a shared mapping of our own open file, `len` bytes long; result checked.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                f.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let m = Mapping {
            ptr: p as *mut u8,
            len,
            file: Some((f, path.to_path_buf())),
        };
        m.drop_cache()?;
        Ok(m)
    }

    /// Make every page missing again: zap this mapping's page-table entries
    /// (`MADV_DONTNEED`) and, for a file mapping, write it back and drop its page cache
    /// (`posix_fadvise(POSIX_FADV_DONTNEED)`). Anonymous contents are lost (read as zero).
    pub fn drop_cache(&self) -> std::io::Result<()> {
        if let Some((f, _)) = &self.file {
            // SAFETY: msync of our own mapping, whole length.
            unsafe { libc::msync(self.ptr as *mut libc::c_void, self.len, libc::MS_SYNC) };
            f.sync_all()?;
        }
        // SAFETY: MADV_DONTNEED on our own mapping. The documented effect (anonymous pages read
        // as zero afterwards) is what callers ask for; slices from `as_slice` are `unsafe` and
        // must not be alive across this call.
        let r =
            unsafe { libc::madvise(self.ptr as *mut libc::c_void, self.len, libc::MADV_DONTNEED) };
        if r != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if let Some((f, _)) = &self.file {
            // SAFETY: plain syscall on our own open file descriptor.
            let r = unsafe {
                libc::posix_fadvise(
                    f.as_raw_fd(),
                    0,
                    self.len as libc::off_t,
                    libc::POSIX_FADV_DONTNEED,
                )
            };
            if r != 0 {
                return Err(std::io::Error::from_raw_os_error(r));
            }
        }
        Ok(())
    }

    /// First byte.
    pub fn ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// Address of the first byte.
    pub fn addr(&self) -> u64 {
        self.ptr as u64
    }

    /// Length in bytes (a whole number of pages).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never empty (at least one page).
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The bytes. Reading faults missing pages in (anonymous ones read as zero).
    ///
    /// # Safety
    ///
    /// No transfer may write the range while the slice is alive.
    pub unsafe fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr/len describe our live mapping; the caller guarantees no concurrent writes.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// The bytes, mutably.
    ///
    /// # Safety
    ///
    /// No transfer may access the range while the slice is alive.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn as_mut_slice(&self) -> &mut [u8] {
        // SAFETY: ptr/len describe our live mapping; the caller guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    /// Pages of the mapping present in this process's page table right now (pagemap).
    pub fn present_pages(&self) -> usize {
        use std::os::unix::fs::FileExt;
        /// Bit 63 of a pagemap entry: the page is present in RAM.
        const PM_PRESENT: u64 = 1 << 63;
        let pagemap = File::open("/proc/self/pagemap").expect("open /proc/self/pagemap");
        (0..self.len as u64 / PAGE_BYTES)
            .filter(|i| {
                let mut e = [0u8; 8];
                let at = (self.addr() / PAGE_BYTES + i) * 8;
                pagemap
                    .read_exact_at(&mut e, at)
                    .expect("read /proc/self/pagemap");
                u64::from_ne_bytes(e) & PM_PRESENT != 0
            })
            .count()
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly our own mapping, once.
        unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.len) };
        if let Some((_, path)) = self.file.take() {
            let _ = std::fs::remove_file(path);
        }
    }
}
