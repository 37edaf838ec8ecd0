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
    pub fn heap_offset(&self, addr: *const u8, len: usize) -> Option<usize> {
        let off = (addr as usize).wrapping_sub(self.heap.base as usize);
        (off < self.heap.size && off + len <= self.heap.size).then_some(off)
    }

    /// Translate, or `None` if the range is not symmetric.
    pub fn try_target(&self, pe: u32, addr: *const u8, len: usize) -> Option<Target> {
        if let Some(off) = self.heap_offset(addr, len) {
            if pe == self.me {
                return Some(Target::Local(addr as *mut u8));
            }
            let p = &self.peers[pe as usize];
            if !p.heap_map.is_null() {
                // SAFETY: inside the peer's mapped heap (same size as ours).
                return Some(Target::Mapped(unsafe { p.heap_map.add(off) }));
            }
            return Some(Target::Remote {
                addr: p.heap_addr + off as u64,
                key: p.heap_key,
            });
        }
        let a = addr as usize;
        for (i, s) in self.segs.iter().enumerate() {
            if a >= s.base && a + len <= s.base + s.len {
                if pe == self.me {
                    return Some(Target::Local(addr as *mut u8));
                }
                let (paddr, key) = self.peers[pe as usize].segs[i];
                return Some(Target::Remote {
                    addr: paddr + (a - s.base) as u64,
                    key,
                });
            }
        }
        None
    }

    /// Translate for `call`; a range that is not symmetric (or a bad PE) is a fatal error
    /// naming the call, the PE and the address. A zero-length range is always `Local`.
    pub fn target(&self, call: &str, pe: c_int, addr: *const u8, len: usize) -> Target {
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
