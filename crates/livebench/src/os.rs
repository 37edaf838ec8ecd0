//! Thin, checked wrappers over the system calls the measurements need. Every `unsafe` block
//! touches only memory this module mapped itself.

use std::io;

/// Page size of this machine.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as usize
    } else {
        4096
    }
}

/// An anonymous private mapping, unmapped on drop.
pub struct Anon {
    pub ptr: *mut u8,
    pub len: usize,
}

impl Anon {
    /// Map `len` bytes of fresh anonymous memory (no page present until touched).
    pub fn new(len: usize) -> io::Result<Anon> {
        // SAFETY: a fresh anonymous mapping at an address the kernel chooses; no existing
        // memory is affected.
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
            return Err(io::Error::last_os_error());
        }
        Ok(Anon {
            ptr: p as *mut u8,
            len,
        })
    }

    /// `madvise(advice)` over `[off, off+len)` of this mapping.
    pub fn madvise(&self, off: usize, len: usize, advice: libc::c_int) -> io::Result<()> {
        assert!(off + len <= self.len);
        // SAFETY: the range lies inside our own mapping.
        let r = unsafe { libc::madvise(self.ptr.add(off) as *mut libc::c_void, len, advice) };
        if r == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// `mlock` / `munlock` of `[off, off+len)`.
    pub fn mlock(&self, off: usize, len: usize, lock: bool) -> io::Result<()> {
        assert!(off + len <= self.len);
        // SAFETY: the range lies inside our own mapping.
        let r = unsafe {
            let p = self.ptr.add(off) as *const libc::c_void;
            if lock {
                libc::mlock(p, len)
            } else {
                libc::munlock(p, len)
            }
        };
        if r == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// Read and write one byte of the page at `off` (a CPU touch).
    pub fn touch(&self, off: usize) {
        assert!(off < self.len);
        // SAFETY: inside our own readable and writable mapping; volatile so the access happens.
        unsafe {
            let p = self.ptr.add(off);
            let v = std::ptr::read_volatile(p);
            std::ptr::write_volatile(p, v.wrapping_add(1));
        }
    }
}

impl Drop for Anon {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping we created.
        unsafe {
            libc::munmap(self.ptr as *mut libc::c_void, self.len);
        }
    }
}

/// A shared mapping of a file, unmapped on drop (for major faults).
pub struct FileMap {
    pub ptr: *mut u8,
    pub len: usize,
    pub fd: libc::c_int,
}

impl FileMap {
    /// Map `path` (already `len` bytes long) read-only.
    pub fn open(path: &std::path::Path, len: usize) -> io::Result<FileMap> {
        use std::os::unix::ffi::OsStrExt;
        let c = std::ffi::CString::new(path.as_os_str().as_bytes())
            .map_err(|_| io::Error::other("path has a NUL"))?;
        // SAFETY: c is a valid C string.
        let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDONLY) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh shared read-only mapping of our own file descriptor.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            let e = io::Error::last_os_error();
            // SAFETY: closing our own descriptor.
            unsafe { libc::close(fd) };
            return Err(e);
        }
        Ok(FileMap {
            ptr: p as *mut u8,
            len,
            fd,
        })
    }

    /// Drop the file's pages from the page cache and disable read-ahead on the mapping, so
    /// every first touch is a major fault that reads one page from storage.
    pub fn evict(&self) -> io::Result<()> {
        // SAFETY: our own mapping and descriptor.
        unsafe {
            libc::madvise(self.ptr as *mut libc::c_void, self.len, libc::MADV_RANDOM);
            libc::madvise(self.ptr as *mut libc::c_void, self.len, libc::MADV_DONTNEED);
            if libc::posix_fadvise(
                self.fd,
                0,
                self.len as libc::off_t,
                libc::POSIX_FADV_DONTNEED,
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }

    /// Read one byte of the page at `off`.
    pub fn touch(&self, off: usize) -> u8 {
        assert!(off < self.len);
        // SAFETY: inside our own readable mapping.
        unsafe { std::ptr::read_volatile(self.ptr.add(off)) }
    }
}

impl Drop for FileMap {
    fn drop(&mut self) {
        // SAFETY: our own mapping and descriptor.
        unsafe {
            libc::munmap(self.ptr as *mut libc::c_void, self.len);
            libc::close(self.fd);
        }
    }
}
