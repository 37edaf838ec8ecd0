//! Symmetric address translation: where the bytes at `addr` of this PE are on PE `pe`.

use std::ffi::c_int;

use unpinned_live::RemoteKey;

use crate::state::{fatal, State};

/// Where a symmetric range is on a PE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// This PE: the address itself.
    Local(*mut u8),
    /// Another PE's heap, mapped here (load/store path).
    Mapped(*mut u8),
    /// Another PE, through PART: its address and key.
    Remote {
        /// Address at the PE.
        addr: u64,
        /// Key of the exposure.
        key: RemoteKey,
    },
}

impl State {
    /// Check `pe` for `call`: a PE of the job, else a fatal error.
    pub fn check_pe(&self, call: &str, pe: c_int) -> u32 {
        if pe < 0 || pe as u32 >= self.npes {
            fatal(
                call,
                format!(
                    "PE {pe} is out of range (the job has {} PEs: 0..{})",
                    self.npes,
                    self.npes - 1
                ),
            );
        }
        pe as u32
    }

    /// Offset of `[addr, addr+len)` in the heap, if it lies inside.
    #[inline(always)]
    pub fn heap_offset(&self, addr: *const u8, len: usize) -> Option<usize> {
        offset_in(self.heap.base as usize, self.heap.size, addr as usize, len)
    }

    /// Translate, or `None` if the range is not symmetric.
    pub fn try_target(&self, pe: u32, addr: *const u8, len: usize) -> Option<Target> {
        self.heap_target(pe, addr, len)
            .or_else(|| self.segment_target(pe, addr, len))
    }

    /// The same number on every PE for the same symmetric object at `addr` (its heap offset,
    /// or its data segment's number and offset), or `None` if `addr` is not symmetric.
    pub fn symmetric_id(&self, addr: *const u8) -> Option<u64> {
        if let Some(off) = self.heap_offset(addr, 1) {
            return Some(off as u64);
        }
        let a = addr as usize;
        self.segs.iter().enumerate().find_map(|(i, s)| {
            offset_in(s.base, s.len, a, 1).map(|off| ((i as u64 + 1) << 48) | off as u64)
        })
    }

    /// [`State::try_target`] for a range of the symmetric heap.
    #[inline(always)]
    fn heap_target(&self, pe: u32, addr: *const u8, len: usize) -> Option<Target> {
        let off = self.heap_offset(addr, len)?;
        if pe == self.me {
            return Some(Target::Local(addr as *mut u8));
        }
        let p = &self.peers[pe as usize];
        if !p.heap_map.is_null() {
            // SAFETY: inside the peer's mapped heap (same size as ours).
            return Some(Target::Mapped(unsafe { p.heap_map.add(off) }));
        }
        Some(Target::Remote {
            addr: p.heap_addr + off as u64,
            key: p.heap_key,
        })
    }

    /// [`State::try_target`] for a range of the program's data segments.
    fn segment_target(&self, pe: u32, addr: *const u8, len: usize) -> Option<Target> {
        let a = addr as usize;
        for (i, s) in self.segs.iter().enumerate() {
            if let Some(off) = offset_in(s.base, s.len, a, len) {
                if pe == self.me {
                    return Some(Target::Local(addr as *mut u8));
                }
                let (paddr, key) = self.peers[pe as usize].segs[i];
                return Some(Target::Remote {
                    addr: paddr + off as u64,
                    key,
                });
            }
        }
        None
    }

    /// Translate for `call`; a range that is not symmetric (or a bad PE) is a fatal error
    /// naming the call, the PE and the address. A zero-length range is always `Local`.
    ///
    /// The common case (a heap range of a valid PE) is decided here, inline and without a
    /// call: a small put or get on the load/store path is a few nanoseconds of work in all,
    /// and calls and a returned enum in memory were a measurable share of it.
    #[inline(always)]
    pub fn target(&self, call: &str, pe: c_int, addr: *const u8, len: usize) -> Target {
        // A negative `pe` becomes a large u32 and fails the bound.
        if (pe as u32) < self.npes && len != 0 {
            if let Some(t) = self.heap_target(pe as u32, addr, len) {
                return t;
            }
        }
        self.target_slow(call, pe, addr, len)
    }

    /// [`State::target`] for every other case, and its errors.
    #[cold]
    #[inline(never)]
    fn target_slow(&self, call: &str, pe: c_int, addr: *const u8, len: usize) -> Target {
        let pe = self.check_pe(call, pe);
        if len == 0 {
            return Target::Local(addr as *mut u8);
        }
        self.try_target(pe, addr, len).unwrap_or_else(|| {
            fatal(
                call,
                format!(
                    "address {addr:p} (+{len} bytes) given as a remote target for PE {pe} is not symmetric: use memory from shmem_malloc (heap {:p}+{:#x}) or a global/static variable",
                    self.heap.base, self.heap.size
                ),
            )
        })
    }
}

/// Offset of `[addr, addr+len)` in `[base, base+size)`, if it lies inside.
#[inline(always)]
fn offset_in(base: usize, size: usize, addr: usize, len: usize) -> Option<usize> {
    let off = addr.wrapping_sub(base);
    // `len <= size - off`, not `off + len <= size`, which a huge `len` wraps past.
    (off < size && len <= size - off).then_some(off)
}

#[cfg(test)]
mod tests {
    use super::offset_in;

    #[test]
    fn ranges_inside_and_outside() {
        assert_eq!(offset_in(0x1000, 0x100, 0x1000, 0x100), Some(0));
        assert_eq!(offset_in(0x1000, 0x100, 0x10f8, 8), Some(0xf8));
        assert_eq!(offset_in(0x1000, 0x100, 0x10f9, 8), None);
        assert_eq!(offset_in(0x1000, 0x100, 0xff8, 8), None);
        assert_eq!(offset_in(0x1000, 0x100, 0x1100, 0), None);
    }

    #[test]
    fn a_huge_length_does_not_wrap_into_the_heap() {
        assert_eq!(offset_in(0x1000, 0x100, 0x1010, usize::MAX - 0xf), None);
        assert_eq!(offset_in(0x1000, 0x100, 0x1010, usize::MAX), None);
    }
}
