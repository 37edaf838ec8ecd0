//! The symmetric heap: one `MAP_NORESERVE` reservation (never locked or pinned) and a
//! deterministic allocator, so that every PE making the same collective calls gets the same
//! offsets.
//!
//! With the load/store path on, the heap is a sparse memfd mapped `MAP_SHARED`, which the
//! other PEs of the host map too (through `/proc/PID/fd/N`); off, it is private anonymous
//! memory that only PART reaches.

use std::collections::{BTreeMap, HashMap};

/// How the heap is backed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeapKind {
    /// A memfd mapped shared (the load/store path).
    SharedFile,
    /// Private anonymous memory.
    PrivateAnonymous,
}

/// The reservation.
pub struct Heap {
    /// Local base address.
    pub base: *mut u8,
    /// Bytes.
    pub size: usize,
    /// The memfd behind it (load/store path).
    pub fd: Option<i32>,
}

/// Alignment of the heap's base address: an allocation aligned to `a <= BASE_ALIGN` relative to
/// the base is aligned in the address space too (`shmem_align`).
pub const BASE_ALIGN: usize = 1 << 30;

/// An address range of `size` bytes aligned to [`BASE_ALIGN`], reserved (PROT_NONE) for a
/// MAP_FIXED mapping.
fn aligned_hole(size: usize) -> Result<*mut u8, String> {
    let total = size + BASE_ALIGN;
    // SAFETY: a fresh inaccessible reservation; nothing else refers to it.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            total,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(format!("mmap: {}", std::io::Error::last_os_error()));
    }
    let start = p as usize;
    let a = start.next_multiple_of(BASE_ALIGN);
    // SAFETY: trimming our own reservation to [a, a+size).
    unsafe {
        if a > start {
            libc::munmap(p, a - start);
        }
        let end = a + size;
        if start + total > end {
            libc::munmap(end as *mut libc::c_void, start + total - end);
        }
    }
    Ok(a as *mut u8)
}

impl Heap {
    /// Reserve `size` bytes (a multiple of the page size) at a [`BASE_ALIGN`]-aligned base.
    pub fn reserve(size: usize, kind: HeapKind) -> Result<Heap, String> {
        let hole = aligned_hole(size)?;
        match kind {
            HeapKind::PrivateAnonymous => {
                // SAFETY: replaces our own reservation at `hole`.
                let p = unsafe {
                    libc::mmap(
                        hole as *mut libc::c_void,
                        size,
                        libc::PROT_READ | libc::PROT_WRITE,
                        libc::MAP_PRIVATE
                            | libc::MAP_ANONYMOUS
                            | libc::MAP_NORESERVE
                            | libc::MAP_FIXED,
                        -1,
                        0,
                    )
                };
                if p == libc::MAP_FAILED {
                    return Err(format!("mmap: {}", std::io::Error::last_os_error()));
                }
                Ok(Heap {
                    base: p as *mut u8,
                    size,
                    fd: None,
                })
            }
            HeapKind::SharedFile => {
                // SAFETY: memfd_create with a NUL-terminated name.
                let fd = unsafe { libc::memfd_create(c"unpinned-shmem-heap".as_ptr(), 0) };
                if fd < 0 {
                    return Err(format!("memfd_create: {}", std::io::Error::last_os_error()));
                }
                // SAFETY: our fd; a sparse file (no blocks until written).
                if unsafe { libc::ftruncate(fd, size as libc::off_t) } != 0 {
                    return Err(format!("ftruncate: {}", std::io::Error::last_os_error()));
                }
                let p = map_shared(fd, size, hole)?;
                Ok(Heap {
                    base: p,
                    size,
                    fd: Some(fd),
                })
            }
        }
    }

    /// Map the heap of the process `pid` on this host, whose memfd is its descriptor `fd`.
    /// `None` if it cannot be opened (then the peer is reached through PART).
    pub fn map_peer(pid: u32, fd: i32, size: usize) -> Option<*mut u8> {
        let path = std::ffi::CString::new(format!("/proc/{pid}/fd/{fd}")).ok()?;
        // SAFETY: open a path; the descriptor is closed below, the mapping stays.
        let f = unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
        if f < 0 {
            return None;
        }
        let p = map_shared(f, size, std::ptr::null_mut()).ok();
        // SAFETY: our descriptor.
        unsafe { libc::close(f) };
        p
    }
}

/// Map `fd` shared, at `at` (a reservation of ours, replaced) or anywhere (null).
fn map_shared(fd: i32, size: usize, at: *mut u8) -> Result<*mut u8, String> {
    let fixed = if at.is_null() { 0 } else { libc::MAP_FIXED };
    // SAFETY: a shared mapping of a file we opened, over nothing or our own reservation.
    let p = unsafe {
        libc::mmap(
            at as *mut libc::c_void,
            size,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_NORESERVE | fixed,
            fd,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(format!("mmap: {}", std::io::Error::last_os_error()));
    }
    Ok(p as *mut u8)
}

/// First-fit allocator over offsets `[start, end)`: the same sequence of calls gives the same
/// offsets on every PE.
pub struct Allocator {
    free: BTreeMap<usize, usize>,
    used: HashMap<usize, usize>,
}

/// Allocation granule (and minimum alignment).
pub const GRANULE: usize = 64;

impl Allocator {
    /// All of `[start, end)` free.
    pub fn new(start: usize, end: usize) -> Allocator {
        let mut free = BTreeMap::new();
        free.insert(start, end - start);
        Allocator {
            free,
            used: HashMap::new(),
        }
    }

    /// Allocate `size` bytes aligned to `align` (a power of two); `None` if no block fits.
    pub fn alloc(&mut self, size: usize, align: usize) -> Option<usize> {
        let align = align.max(GRANULE);
        let size = size.max(1).next_multiple_of(GRANULE);
        let (&blk, &blen) = self.free.iter().find(|(&o, &l)| {
            let a = o.next_multiple_of(align);
            a + size <= o + l
        })?;
        self.free.remove(&blk);
        let a = blk.next_multiple_of(align);
        if a > blk {
            self.free.insert(blk, a - blk);
        }
        if a + size < blk + blen {
            self.free.insert(a + size, blk + blen - a - size);
        }
        self.used.insert(a, size);
        Some(a)
    }

    /// Size of the allocation at `off`, if any.
    pub fn size_of(&self, off: usize) -> Option<usize> {
        self.used.get(&off).copied()
    }

    /// Free the allocation at `off`; false if there is none.
    pub fn free(&mut self, off: usize) -> bool {
        let Some(mut len) = self.used.remove(&off) else {
            return false;
        };
        let mut start = off;
        if let Some((&p, &pl)) = self.free.range(..off).next_back() {
            if p + pl == off {
                self.free.remove(&p);
                start = p;
                len += pl;
            }
        }
        if let Some(nl) = self.free.remove(&(start + len)) {
            len += nl;
        }
        self.free.insert(start, len);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocations_are_deterministic_aligned_and_coalesce() {
        let mut a = Allocator::new(1024, 1 << 20);
        let x = a.alloc(100, 8).unwrap();
        let y = a.alloc(5000, 4096).unwrap();
        let z = a.alloc(1, 8).unwrap();
        assert_eq!(x, 1024);
        assert_eq!(y % 4096, 0);
        assert!(z >= x + 128 && (z < y || z >= y + 5056));
        assert!(a.free(y));
        assert!(a.free(x));
        assert!(a.free(z));
        assert!(!a.free(z), "double free refused");
        assert_eq!(a.free.len(), 1, "everything coalesced: {:?}", a.free);
        assert_eq!(a.alloc((1 << 20) - 1024, 8), Some(1024));
        assert_eq!(a.alloc(1, 8), None);
    }
}
