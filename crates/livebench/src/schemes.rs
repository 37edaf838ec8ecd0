//! The user-level schemes PART is compared against (spec part.md, "Alternatives"; issue 3,
//! baselines): pre-touching the buffer, pinning it around each transfer, and a pin-down
//! registration cache as MPI libraries keep one.
//!
//! These run in the application's thread before and after a transfer; the transfer itself
//! then goes through the live runtime with [`unpinned_live::MemoryMode::TransferOnly`] (memory
//! known present: no residency check).

use std::io;

use unpinned_live::RemoteKey;

const PAGE: usize = 4096;

/// Touch-Pres / Touch-NoPres: read and write back one byte of every page of `[ptr, ptr+len)`
/// (a CPU minor fault per page that is not present). The bytes are unchanged.
///
/// # Safety
///
/// The range must be mapped readable and writable, and nothing else may write it meanwhile
/// (the byte is read and written back, which would lose a concurrent store).
pub unsafe fn touch_pages(ptr: *mut u8, len: usize) {
    let start = ptr as usize & !(PAGE - 1);
    let mut p = start;
    while p < ptr as usize + len {
        // Touch inside the range only: the first page may begin before `ptr`.
        let a = p.max(ptr as usize) as *mut u8;
        // SAFETY: `a` lies in the caller's mapped, writable range (see the function's contract);
        // volatile so that the access (and its fault) really happens.
        unsafe {
            let v = std::ptr::read_volatile(a);
            std::ptr::write_volatile(a, v);
        }
        p += PAGE;
    }
}

/// `mlock` (`lock`) or `munlock` the pages of `[ptr, ptr+len)`. `mlock` faults every page in
/// and pins it (Pin-Pres / Pin-NoPres when done around one transfer).
pub fn mlock_range(ptr: *const u8, len: usize, lock: bool) -> io::Result<()> {
    // SAFETY: mlock/munlock do not access memory on our behalf in a way that can violate Rust's
    // aliasing rules; an unmapped range is reported as ENOMEM.
    let r = unsafe {
        if lock {
            libc::mlock(ptr as *const libc::c_void, len)
        } else {
            libc::munlock(ptr as *const libc::c_void, len)
        }
    };
    if r == 0 {
        Ok(())
    } else {
        let e = io::Error::last_os_error();
        Err(io::Error::new(
            e.kind(),
            format!(
                "{} of {len} bytes: {e} (raise `ulimit -l`?)",
                if lock { "mlock" } else { "munlock" }
            ),
        ))
    }
}

/// A shared anonymous mapping (`MAP_SHARED | MAP_ANONYMOUS`). Unlike private memory, its pages
/// can be mapped a second time (`mremap` with old size 0), which is how [`PinCache`] emulates
/// a NIC's copy of the translations: the alias keeps pointing at the *physical* pages that
/// were there at registration, whatever the application later maps at the address.
pub struct SharedBuf {
    /// First byte.
    pub ptr: *mut u8,
    /// Length in bytes (whole pages).
    pub len: usize,
}

// SAFETY: a plain memory region; the owner decides who touches it.
unsafe impl Send for SharedBuf {}

/// A new shared anonymous mapping of `len` bytes: anywhere, or replacing `[at, at+len)`.
fn map_shared(at: Option<*mut u8>, len: usize) -> io::Result<*mut u8> {
    let (hint, fixed) = match at {
        Some(p) => (p, libc::MAP_FIXED),
        None => (std::ptr::null_mut(), 0),
    };
    // SAFETY: a new mapping; with MAP_FIXED it replaces `[at, at+len)`, which the callers own
    // (their own mapping, given back to the kernel by this very call).
    let p = unsafe {
        libc::mmap(
            hint as *mut libc::c_void,
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_ANONYMOUS | fixed,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(p as *mut u8)
}

impl SharedBuf {
    /// `len` bytes (rounded up to pages) of fresh shared anonymous memory.
    pub fn new(len: usize) -> io::Result<SharedBuf> {
        let len = len.max(1).div_ceil(PAGE) * PAGE;
        Ok(SharedBuf {
            ptr: map_shared(None, len)?,
            len,
        })
    }

    /// Address.
    pub fn addr(&self) -> u64 {
        self.ptr as u64
    }

    /// What an application does between two transfers: `munmap` the buffer and `mmap` new
    /// memory, which lands at the same address (we ask for it explicitly, as `malloc` would
    /// return it by reuse). The new memory is zero.
    ///
    /// Done as one `mmap(MAP_FIXED)` over our own mapping, which the kernel performs as the
    /// `munmap` and the `mmap` at once: a separate `munmap` first would leave the range free
    /// for a moment, another thread's `mmap` could land there, and our `Drop` would later
    /// unmap that thread's memory (seen as a flaky test when experiments ran in parallel).
    pub fn remap_same_address(&mut self) -> io::Result<()> {
        // The caller holds no references into the old pages (`&mut self`).
        self.ptr = map_shared(Some(self.ptr), self.len)?;
        Ok(())
    }

    /// The bytes.
    ///
    /// # Safety
    ///
    /// No transfer may write the buffer while the slice lives.
    pub unsafe fn as_slice(&self) -> &[u8] {
        // SAFETY: our own mapping of `len` bytes; the caller rules out concurrent writers.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl Drop for SharedBuf {
    fn drop(&mut self) {
        // SAFETY: unmapping our own mapping.
        unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.len) };
    }
}

/// One registration of a [`PinCache`].
#[derive(Debug)]
pub struct Registration {
    /// Application address registered.
    pub addr: u64,
    /// Length registered.
    pub len: usize,
    /// Where the "NIC" writes: the alias of the pages pinned at registration (shared memory),
    /// or `addr` itself when the memory cannot be aliased (private memory).
    pub nic_addr: u64,
    /// Key of the exposure of `nic_addr`.
    pub key: RemoteKey,
    alias: bool,
    last_use: u64,
}

/// What [`PinCache::register`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Translation {
    /// Address the transfer must target.
    pub nic_addr: u64,
    /// Key to present.
    pub key: RemoteKey,
    /// Whether the registration came from the cache.
    pub hit: bool,
}

/// A pin-down registration cache: registrations keyed by `(addr, len)`, pinned (`mlock`) and
/// kept after use, evicted least recently used when more than `capacity` are held. Like the
/// caches of MPI libraries without memory hooks it does not see `munmap`: a registration
/// outlives the memory it was made for, and a later buffer at the same address hits it and
/// gets the old pages (the stale-registration hazard, `live-stale`).
pub struct PinCache {
    entries: Vec<Registration>,
    capacity: usize,
    clock: u64,
    /// Lookups answered from the cache.
    pub hits: u64,
    /// Lookups that registered.
    pub misses: u64,
    /// Registrations evicted.
    pub evictions: u64,
}

impl PinCache {
    /// An empty cache holding at most `capacity` registrations.
    pub fn new(capacity: usize) -> PinCache {
        PinCache {
            entries: Vec::new(),
            capacity: capacity.max(1),
            clock: 0,
            hits: 0,
            misses: 0,
            evictions: 0,
        }
    }

    /// Registrations held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the cache is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Translate `[addr, addr+len)` for a transfer: a cached registration of exactly this
    /// range if there is one (without checking that the memory is still the same: the hazard),
    /// else pin the range, alias it when it is shared memory, `expose` the alias, and cache it
    /// (evicting the least recently used registration through `revoke`).
    ///
    /// # Safety
    ///
    /// `[addr, addr+len)` must be mapped when it is not a cache hit.
    pub unsafe fn register(
        &mut self,
        addr: u64,
        len: usize,
        mut expose: impl FnMut(u64, usize) -> Result<RemoteKey, String>,
        mut revoke: impl FnMut(RemoteKey),
    ) -> Result<Translation, String> {
        self.clock += 1;
        if let Some(r) = self
            .entries
            .iter_mut()
            .find(|r| r.addr == addr && r.len == len)
        {
            r.last_use = self.clock;
            self.hits += 1;
            return Ok(Translation {
                nic_addr: r.nic_addr,
                key: r.key,
                hit: true,
            });
        }
        self.misses += 1;
        if self.entries.len() >= self.capacity {
            let (i, _) = self
                .entries
                .iter()
                .enumerate()
                .min_by_key(|(_, r)| r.last_use)
                .expect("non-empty");
            let old = self.entries.swap_remove(i);
            self.evictions += 1;
            revoke(old.key);
            Self::release(&old);
        }
        mlock_range(addr as *const u8, len, true).map_err(|e| e.to_string())?;
        // The NIC's copy of the translation: a second mapping of the same pages. `mremap` with
        // old size 0 duplicates shared mappings only; private memory fails with EINVAL and
        // is then registered by its virtual address (no alias, so no emulated hazard).
        // SAFETY: mremap with old_size 0 creates a new mapping and leaves the original alone.
        let alias =
            unsafe { libc::mremap(addr as *mut libc::c_void, 0, len, libc::MREMAP_MAYMOVE) };
        let (nic_addr, aliased) = if alias == libc::MAP_FAILED {
            (addr, false)
        } else {
            (alias as u64, true)
        };
        if aliased {
            // Pin the alias too: it holds the pages once the application unmaps its own view.
            mlock_range(nic_addr as *const u8, len, true).map_err(|e| e.to_string())?;
        }
        let key = match expose(nic_addr, len) {
            Ok(k) => k,
            Err(e) => {
                Self::release(&Registration {
                    addr,
                    len,
                    nic_addr,
                    key: 0,
                    alias: aliased,
                    last_use: 0,
                });
                return Err(e);
            }
        };
        self.entries.push(Registration {
            addr,
            len,
            nic_addr,
            key,
            alias: aliased,
            last_use: self.clock,
        });
        Ok(Translation {
            nic_addr,
            key,
            hit: false,
        })
    }

    fn release(r: &Registration) {
        // Errors are ignored: the application may have unmapped its range already.
        let _ = mlock_range(r.addr as *const u8, r.len, false);
        if r.alias {
            // SAFETY: the alias is our own mapping, no longer exposed (revoked by the caller).
            unsafe { libc::munmap(r.nic_addr as *mut libc::c_void, r.len) };
        }
    }

    /// Drop every registration (revoking each exposure).
    pub fn clear(&mut self, mut revoke: impl FnMut(RemoteKey)) {
        for r in self.entries.drain(..) {
            revoke(r.key);
            Self::release(&r);
        }
    }
}

impl Drop for PinCache {
    fn drop(&mut self) {
        self.clear(|_| {});
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_eviction_and_hits() {
        let bufs: Vec<SharedBuf> = (0..3).map(|_| SharedBuf::new(8192).unwrap()).collect();
        let mut c = PinCache::new(2);
        let mut next = 1u32;
        let mut revoked = Vec::new();
        let mut reg = |c: &mut PinCache, b: &SharedBuf, revoked: &mut Vec<u32>| {
            // SAFETY: the buffers are mapped for the whole test.
            unsafe {
                c.register(
                    b.addr(),
                    b.len,
                    |_, _| {
                        next += 1;
                        Ok(next)
                    },
                    |k| revoked.push(k),
                )
                .unwrap()
            }
        };
        let a = reg(&mut c, &bufs[0], &mut revoked);
        assert!(
            !a.hit && a.nic_addr != bufs[0].addr(),
            "shared memory is aliased"
        );
        assert!(reg(&mut c, &bufs[0], &mut revoked).hit);
        reg(&mut c, &bufs[1], &mut revoked);
        reg(&mut c, &bufs[0], &mut revoked); // buffer 1 is now least recently used
        reg(&mut c, &bufs[2], &mut revoked);
        assert_eq!(c.evictions, 1);
        assert_eq!(c.len(), 2);
        assert_eq!(revoked.len(), 1);
        assert!(reg(&mut c, &bufs[0], &mut revoked).hit);
        // The alias sees the application's bytes (same pages).
        let p0 = bufs[0].ptr;
        // SAFETY: our mapping; nothing else writes it.
        unsafe { *p0 = 42 };
        // SAFETY: the alias maps the same pages and stays mapped while cached.
        assert_eq!(unsafe { *(a.nic_addr as *const u8) }, 42);
    }

    #[test]
    fn touch_keeps_bytes() {
        let mut v = vec![7u8; 3 * PAGE + 5];
        // SAFETY: our own vector.
        unsafe { touch_pages(v.as_mut_ptr().add(1), v.len() - 1) };
        assert!(v.iter().all(|&b| b == 7));
    }
}
