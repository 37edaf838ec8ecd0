//! Protection changes of application views (spec dsm.md: "protection changes by a batched
//! primitive ... vs one `mprotect` call per page").
//!
//! Two mechanisms the DSM can use for every protocol action ([`ProtectMode`]): one `mprotect`
//! per page (the user-level baseline), or batched: contiguous pages with the same new access
//! in one call (one VMA walk and one TLB flush per run). [`UffdWp`] is the third primitive the
//! `dsm-protect` experiment measures: userfaultfd write-protection of a range
//! (`UFFDIO_WRITEPROTECT`), which only toggles write access.

use unpinned_dsm::Access;
use unpinned_os::uffd_abi::{
    UffdioApi, UffdioRange, UffdioRegister, UffdioWriteprotect, UFFDIO_API, UFFDIO_REGISTER,
    UFFDIO_REGISTER_MODE_WP, UFFDIO_WRITEPROTECT, UFFDIO_WRITEPROTECT_MODE_WP, UFFD_API,
    UFFD_FEATURE_WP_HUGETLBFS_SHMEM,
};

use crate::error::DsmLiveError;
use crate::views::PAGE_BYTES;

/// How protection changes are applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProtectMode {
    /// One `mprotect` call per page.
    PerPage,
    /// Contiguous pages with the same new access in one `mprotect` call.
    Batched,
}

impl std::str::FromStr for ProtectMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "per-page" | "mprotect" => Ok(ProtectMode::PerPage),
            "batched" => Ok(ProtectMode::Batched),
            _ => Err(format!(
                "unknown protection mode {s:?} (valid: per-page, batched)"
            )),
        }
    }
}

/// The `PROT_*` flags of an access.
pub fn prot_of(a: Access) -> libc::c_int {
    match a {
        Access::None => libc::PROT_NONE,
        Access::Read => libc::PROT_READ,
        Access::Write => libc::PROT_READ | libc::PROT_WRITE,
    }
}

/// One change: `pages` pages from `addr` get `access`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Change {
    /// Page-aligned start.
    pub addr: u64,
    /// Pages.
    pub pages: usize,
    /// New access.
    pub access: Access,
}

fn mprotect(addr: u64, pages: usize, prot: libc::c_int) -> Result<(), DsmLiveError> {
    // SAFETY: callers pass ranges of the DSM's own views (or the experiment's own mapping);
    // changing their protection affects no Rust-visible memory.
    let r = unsafe { libc::mprotect(addr as *mut libc::c_void, pages * PAGE_BYTES, prot) };
    if r != 0 {
        return Err(DsmLiveError::Os(format!(
            "mprotect({addr:#x}, {} pages): {}",
            pages,
            std::io::Error::last_os_error()
        )));
    }
    Ok(())
}

/// Apply `changes` with `mode`; returns the number of system calls made. Batched mode sorts
/// by address and merges adjacent ranges with the same access.
pub fn apply(mode: ProtectMode, changes: &mut [Change]) -> Result<usize, DsmLiveError> {
    let mut calls = 0;
    match mode {
        ProtectMode::PerPage => {
            for c in changes.iter() {
                for p in 0..c.pages {
                    mprotect(c.addr + (p * PAGE_BYTES) as u64, 1, prot_of(c.access))?;
                    calls += 1;
                }
            }
        }
        ProtectMode::Batched => {
            changes.sort_by_key(|c| c.addr);
            let mut i = 0;
            while i < changes.len() {
                let (start, access) = (changes[i].addr, changes[i].access);
                let mut pages = changes[i].pages;
                let mut j = i + 1;
                while j < changes.len()
                    && changes[j].access == access
                    && changes[j].addr == start + (pages * PAGE_BYTES) as u64
                {
                    pages += changes[j].pages;
                    j += 1;
                }
                mprotect(start, pages, prot_of(access))?;
                calls += 1;
                i = j;
            }
        }
    }
    Ok(calls)
}

/// A userfaultfd registered for write-protection of one range (shared memory needs kernel
/// 5.19+ and `UFFD_FEATURE_WP_HUGETLBFS_SHMEM`; creating it needs root or
/// `vm.unprivileged_userfaultfd=1`).
pub struct UffdWp {
    fd: libc::c_int,
}

impl UffdWp {
    /// Register `[addr, addr + len)` (page-aligned) for write-protect tracking.
    pub fn register(addr: u64, len: usize) -> Result<UffdWp, DsmLiveError> {
        // SAFETY: the userfaultfd system call creates a new descriptor; checked below.
        let fd = unsafe { libc::syscall(libc::SYS_userfaultfd, libc::O_CLOEXEC | libc::O_NONBLOCK) }
            as libc::c_int;
        if fd < 0 {
            return Err(DsmLiveError::Os(format!(
                "userfaultfd: {} (needs root or vm.unprivileged_userfaultfd=1)",
                std::io::Error::last_os_error()
            )));
        }
        let u = UffdWp { fd };
        let mut api = UffdioApi {
            api: UFFD_API,
            features: UFFD_FEATURE_WP_HUGETLBFS_SHMEM,
            ioctls: 0,
        };
        // SAFETY: ioctl on our descriptor with a correctly laid out argument.
        if unsafe { libc::ioctl(fd, UFFDIO_API, &mut api) } != 0 {
            return Err(DsmLiveError::Os(format!(
                "UFFDIO_API (shared-memory write-protect): {}",
                std::io::Error::last_os_error()
            )));
        }
        let mut reg = UffdioRegister {
            range: UffdioRange {
                start: addr,
                len: len as u64,
            },
            mode: UFFDIO_REGISTER_MODE_WP,
            ioctls: 0,
        };
        // SAFETY: as above; the range is the caller's own mapping.
        if unsafe { libc::ioctl(fd, UFFDIO_REGISTER, &mut reg) } != 0 {
            return Err(DsmLiveError::Os(format!(
                "UFFDIO_REGISTER (write-protect): {}",
                std::io::Error::last_os_error()
            )));
        }
        Ok(u)
    }

    /// Write-protect (`on`) or unprotect `pages` pages from `addr` in one call.
    pub fn write_protect(&self, addr: u64, pages: usize, on: bool) -> Result<(), DsmLiveError> {
        let mut wp = UffdioWriteprotect {
            range: UffdioRange {
                start: addr,
                len: (pages * PAGE_BYTES) as u64,
            },
            mode: if on { UFFDIO_WRITEPROTECT_MODE_WP } else { 0 },
        };
        // SAFETY: ioctl on our descriptor with a correctly laid out argument.
        if unsafe { libc::ioctl(self.fd, UFFDIO_WRITEPROTECT, &mut wp) } != 0 {
            return Err(DsmLiveError::Os(format!(
                "UFFDIO_WRITEPROTECT: {}",
                std::io::Error::last_os_error()
            )));
        }
        Ok(())
    }
}

impl Drop for UffdWp {
    fn drop(&mut self) {
        // SAFETY: our own descriptor.
        unsafe { libc::close(self.fd) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batched_merges_runs_and_per_page_does_not() {
        let len = 8 * PAGE_BYTES;
        // SAFETY: a fresh anonymous mapping owned by the test.
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
        assert_ne!(p, libc::MAP_FAILED);
        let a = p as u64;
        let mut ch: Vec<Change> = (0..8)
            .rev()
            .map(|i| Change {
                addr: a + (i * PAGE_BYTES) as u64,
                pages: 1,
                access: Access::Read,
            })
            .collect();
        assert_eq!(apply(ProtectMode::PerPage, &mut ch).unwrap(), 8);
        assert_eq!(apply(ProtectMode::Batched, &mut ch).unwrap(), 1);
        ch[3].access = Access::Write;
        assert_eq!(apply(ProtectMode::Batched, &mut ch).unwrap(), 3);
        let mut bad = [Change {
            addr: a + 1,
            pages: 1,
            access: Access::Read,
        }];
        assert!(matches!(
            apply(ProtectMode::Batched, &mut bad),
            Err(DsmLiveError::Os(_))
        ));
        // SAFETY: our mapping.
        unsafe { libc::munmap(p, len) };
    }
}
