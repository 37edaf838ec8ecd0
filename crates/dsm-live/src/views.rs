//! Multiview minipages: one memfd holds the shared data; every shared object gets its own
//! virtual view of it at a fixed, agreed address (the same on every rank), so page protection
//! works per object (spec dsm.md, "Multiview"). A second, private view maps the whole memfd
//! read-write: the protocol handlers and the PART engine move data through it while the
//! application's views are protected.
//!
//! Placement is deterministic (every rank runs the same allocator on the same calls): objects
//! of at most half a page share physical pages (each with its own virtual page); larger objects
//! get whole physical pages and one contiguous view, cut into minipages of
//! [`ViewConfig::large_minipage_pages`] pages.

use std::ffi::CString;

use crate::error::DsmLiveError;

/// The page size the views are built on.
pub const PAGE_BYTES: usize = 4096;

/// Geometry of the shared space.
#[derive(Clone, Copy, Debug)]
pub struct ViewConfig {
    /// Fixed virtual base of the application views (same on every rank).
    pub base_addr: u64,
    /// Physical capacity (memfd size), bytes.
    pub heap_bytes: usize,
    /// Virtual capacity of the views, bytes (small objects use one virtual page each).
    pub virtual_bytes: usize,
    /// Pages per minipage of large objects.
    pub large_minipage_pages: usize,
}

impl Default for ViewConfig {
    fn default() -> Self {
        // The memfd is sparse and the views are reserved, not committed: generous sizes cost
        // nothing until touched.
        ViewConfig {
            base_addr: 0x5a00_0000_0000,
            heap_bytes: 1 << 30,
            virtual_bytes: 4 << 30,
            large_minipage_pages: 1,
        }
    }
}

/// One minipage: a range of one object, its view and its bytes in the memfd.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MinipageInfo {
    /// First byte of the page-aligned view range that protects it (application address).
    pub view_addr: u64,
    /// Pages of that range.
    pub view_pages: usize,
    /// First byte of its data (application address).
    pub addr: u64,
    /// Its data length, bytes.
    pub len: usize,
    /// Offset of its data in the memfd (and in the private view).
    pub offset: u64,
}

/// The memfd, the private view, the reserved application range and the minipage table.
pub struct Views {
    cfg: ViewConfig,
    fd: libc::c_int,
    private: *mut u8,
    /// Next free physical byte (page-aligned for large objects).
    next_phys: usize,
    /// Partially used physical page for small objects: (page offset, used bytes).
    small: Option<(usize, usize)>,
    next_virt: usize,
    mps: Vec<MinipageInfo>,
}

// SAFETY: the raw pointer is a mapping owned by `Views`; all mutation goes through `&mut`.
unsafe impl Send for Views {}
// SAFETY: shared access only reads the table and the addresses.
unsafe impl Sync for Views {}

fn os_err(what: &str) -> DsmLiveError {
    DsmLiveError::Os(format!("{what}: {}", std::io::Error::last_os_error()))
}

impl Views {
    /// Create the memfd, map the private view and reserve the application range at
    /// `cfg.base_addr` with `MAP_FIXED_NOREPLACE` (fails if anything is mapped there).
    pub fn new(cfg: ViewConfig) -> Result<Views, DsmLiveError> {
        if cfg.heap_bytes == 0
            || !cfg.heap_bytes.is_multiple_of(PAGE_BYTES)
            || !cfg.virtual_bytes.is_multiple_of(PAGE_BYTES)
            || cfg.virtual_bytes == 0
        {
            return Err(DsmLiveError::Config(format!(
                "heap_bytes {} and virtual_bytes {} must be non-zero multiples of {PAGE_BYTES}",
                cfg.heap_bytes, cfg.virtual_bytes
            )));
        }
        if !cfg.base_addr.is_multiple_of(PAGE_BYTES as u64) || cfg.large_minipage_pages == 0 {
            return Err(DsmLiveError::Config(
                "base_addr must be page-aligned and large_minipage_pages >= 1".into(),
            ));
        }
        let name = CString::new("unpinned-dsm").expect("no NUL");
        // SAFETY: plain system calls on our own new descriptor; results are checked.
        let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(os_err("memfd_create"));
        }
        // SAFETY: `fd` is ours.
        if unsafe { libc::ftruncate(fd, cfg.heap_bytes as libc::off_t) } != 0 {
            let e = os_err("ftruncate(memfd)");
            // SAFETY: closing our own descriptor.
            unsafe { libc::close(fd) };
            return Err(e);
        }
        // SAFETY: a fresh shared mapping of our memfd, anywhere.
        let private = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                cfg.heap_bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if private == libc::MAP_FAILED {
            let e = os_err("mmap(private view)");
            // SAFETY: closing our own descriptor.
            unsafe { libc::close(fd) };
            return Err(e);
        }
        // SAFETY: reserve the agreed range without replacing anything mapped there.
        let r = unsafe {
            libc::mmap(
                cfg.base_addr as *mut libc::c_void,
                cfg.virtual_bytes,
                libc::PROT_NONE,
                libc::MAP_PRIVATE
                    | libc::MAP_ANONYMOUS
                    | libc::MAP_NORESERVE
                    | libc::MAP_FIXED_NOREPLACE,
                -1,
                0,
            )
        };
        if r == libc::MAP_FAILED || r as u64 != cfg.base_addr {
            let e = DsmLiveError::Os(format!(
                "cannot reserve the shared range [{:#x}, +{:#x}) with MAP_FIXED_NOREPLACE: {} (choose another ViewConfig::base_addr)",
                cfg.base_addr,
                cfg.virtual_bytes,
                std::io::Error::last_os_error()
            ));
            // SAFETY: undo our own mappings.
            unsafe {
                if r != libc::MAP_FAILED {
                    libc::munmap(r, cfg.virtual_bytes);
                }
                libc::munmap(private, cfg.heap_bytes);
                libc::close(fd);
            }
            return Err(e);
        }
        Ok(Views {
            cfg,
            fd,
            private: private as *mut u8,
            next_phys: 0,
            small: None,
            next_virt: 0,
            mps: Vec::new(),
        })
    }

    /// The configuration.
    pub fn config(&self) -> ViewConfig {
        self.cfg
    }

    /// The private read-write view of the whole memfd.
    pub fn private_base(&self) -> *mut u8 {
        self.private
    }

    /// Its length.
    pub fn private_len(&self) -> usize {
        self.cfg.heap_bytes
    }

    /// Minipages allocated so far.
    pub fn minipages(&self) -> &[MinipageInfo] {
        &self.mps
    }

    /// The minipage whose view contains `addr`, if any (binary search: views are allocated at
    /// increasing addresses).
    pub fn find(&self, addr: u64) -> Option<u32> {
        let i = self.mps.partition_point(|m| m.view_addr <= addr);
        if i == 0 {
            return None;
        }
        let m = &self.mps[i - 1];
        (addr < m.view_addr + (m.view_pages * PAGE_BYTES) as u64).then_some((i - 1) as u32)
    }

    fn map_view(&mut self, pages: usize, phys: usize) -> Result<u64, DsmLiveError> {
        let len = pages * PAGE_BYTES;
        if self.next_virt + len > self.cfg.virtual_bytes {
            return Err(DsmLiveError::Alloc(format!(
                "out of virtual space ({} bytes reserved)",
                self.cfg.virtual_bytes
            )));
        }
        let addr = self.cfg.base_addr + self.next_virt as u64;
        // SAFETY: `addr` lies in the range we reserved; MAP_FIXED replaces only our reservation.
        let r = unsafe {
            libc::mmap(
                addr as *mut libc::c_void,
                len,
                libc::PROT_NONE,
                libc::MAP_SHARED | libc::MAP_FIXED,
                self.fd,
                phys as libc::off_t,
            )
        };
        if r == libc::MAP_FAILED {
            return Err(os_err("mmap(view)"));
        }
        self.next_virt += len;
        Ok(addr)
    }

    /// Place an object of `bytes` aligned to `align`; returns (its address, the ids of its
    /// new minipages). Views start with no access; the caller sets the initial protections.
    pub fn alloc(
        &mut self,
        bytes: usize,
        align: usize,
    ) -> Result<(u64, std::ops::Range<u32>), DsmLiveError> {
        if bytes == 0 || !align.is_power_of_two() || align > PAGE_BYTES {
            return Err(DsmLiveError::Alloc(format!(
                "alloc({bytes}, {align}): size must be > 0 and align a power of two <= {PAGE_BYTES}"
            )));
        }
        let first = self.mps.len() as u32;
        if bytes <= PAGE_BYTES / 2 {
            // Small: share a physical page, own a virtual page.
            let (page, used) = match self.small {
                Some((p, u)) if u.next_multiple_of(align) + bytes <= PAGE_BYTES => {
                    (p, u.next_multiple_of(align))
                }
                _ => {
                    if self.next_phys + PAGE_BYTES > self.cfg.heap_bytes {
                        return Err(DsmLiveError::Alloc(format!(
                            "out of shared memory ({} bytes)",
                            self.cfg.heap_bytes
                        )));
                    }
                    let p = self.next_phys;
                    self.next_phys += PAGE_BYTES;
                    (p, 0)
                }
            };
            let view = self.map_view(1, page)?;
            self.small = Some((page, used + bytes));
            let addr = view + used as u64;
            self.mps.push(MinipageInfo {
                view_addr: view,
                view_pages: 1,
                addr,
                len: bytes,
                offset: (page + used) as u64,
            });
            return Ok((addr, first..first + 1));
        }
        let pages = bytes.div_ceil(PAGE_BYTES);
        if self.next_phys + pages * PAGE_BYTES > self.cfg.heap_bytes {
            return Err(DsmLiveError::Alloc(format!(
                "out of shared memory: {bytes} bytes asked, {} of {} left",
                self.cfg.heap_bytes - self.next_phys,
                self.cfg.heap_bytes
            )));
        }
        let phys = self.next_phys;
        let view = self.map_view(pages, phys)?;
        self.next_phys += pages * PAGE_BYTES;
        let per = self.cfg.large_minipage_pages;
        let mut p = 0;
        while p < pages {
            let n = per.min(pages - p);
            let off = p * PAGE_BYTES;
            let len = (n * PAGE_BYTES).min(bytes - off);
            self.mps.push(MinipageInfo {
                view_addr: view + off as u64,
                view_pages: n,
                addr: view + off as u64,
                len,
                offset: (phys + off) as u64,
            });
            p += n;
        }
        Ok((view, first..self.mps.len() as u32))
    }
}

impl Drop for Views {
    fn drop(&mut self) {
        // SAFETY: our own mappings and descriptor; nothing uses them after drop.
        unsafe {
            libc::munmap(
                self.cfg.base_addr as *mut libc::c_void,
                self.cfg.virtual_bytes,
            );
            libc::munmap(self.private as *mut libc::c_void, self.cfg.heap_bytes);
            libc::close(self.fd);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_objects_share_a_page_with_separate_views() {
        let mut v = Views::new(ViewConfig {
            base_addr: 0x5b00_0000_0000,
            heap_bytes: 1 << 20,
            virtual_bytes: 1 << 22,
            large_minipage_pages: 1,
        })
        .unwrap();
        let (a, ra) = v.alloc(8, 8).unwrap();
        let (b, rb) = v.alloc(8, 8).unwrap();
        let ma = v.minipages()[ra.start as usize];
        let mb = v.minipages()[rb.start as usize];
        assert_ne!(ma.view_addr, mb.view_addr);
        assert_eq!(ma.offset / 4096, mb.offset / 4096, "same physical page");
        assert_eq!(v.find(a), Some(ra.start));
        assert_eq!(v.find(b + 100), Some(rb.start));
        let (c, rc) = v.alloc(3 * 4096 + 5, 64).unwrap();
        assert_eq!(rc.len(), 4);
        assert_eq!(v.find(c + 3 * 4096 + 1), Some(rc.end - 1));
        assert_eq!(v.minipages()[rc.end as usize - 1].len, 5);
        assert!(v.find(0x1000).is_none());
        assert!(matches!(v.alloc(0, 8), Err(DsmLiveError::Alloc(_))));
        assert!(matches!(v.alloc(8, 3), Err(DsmLiveError::Alloc(_))));
        assert!(matches!(v.alloc(2 << 20, 8), Err(DsmLiveError::Alloc(_))));
        // Writes through the private view show in the (unprotected) object view.
        // SAFETY: the test owns these mappings.
        unsafe {
            libc::mprotect(ma.view_addr as *mut libc::c_void, 4096, libc::PROT_READ);
            *v.private_base().add(ma.offset as usize) = 42;
            assert_eq!(*(a as *const u8), 42);
        }
        // A second reservation of the same range is refused, not clobbered.
        assert!(matches!(Views::new(v.config()), Err(DsmLiveError::Os(_))));
    }
}
