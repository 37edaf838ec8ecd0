//! What the fuzz targets share: a memory that notices writes where an engine must not write.

use std::ops::Range;
use unpinned_core::memory::{MemError, Memory, Pdid};

/// Flat memory of protection domain 1 mapping `[base - pad, base + len + pad)`, of which the
/// engine under test may write only `[base, base + len)` (its exposures or registered
/// regions). Writes elsewhere in the mapping succeed (the engine's checks are what is tested)
/// and are counted in `outside_writes`; accesses outside the mapping fail as unmapped.
pub struct Guarded {
    bytes: Vec<u8>,
    start: u64,
    allowed: Range<u64>,
    /// Writes that touched a byte outside `[base, base + len)`.
    pub outside_writes: usize,
}

impl Guarded {
    /// A zeroed mapping; `base >= pad`.
    pub fn new(base: u64, len: u64, pad: u64) -> Guarded {
        Guarded {
            bytes: vec![0; (len + 2 * pad) as usize],
            start: base - pad,
            allowed: base..base + len,
            outside_writes: 0,
        }
    }

    /// The offset of `[addr, addr + n)` in the mapping.
    fn span(&self, addr: u64, n: usize) -> Result<usize, MemError> {
        let end = addr
            .checked_add(n as u64)
            .ok_or(MemError::Unmapped { addr })?;
        if addr < self.start || end > self.start + self.bytes.len() as u64 {
            return Err(MemError::Unmapped { addr });
        }
        Ok((addr - self.start) as usize)
    }
}

impl Memory for Guarded {
    fn write(&mut self, pdid: Pdid, addr: u64, data: &[u8]) -> Result<(), MemError> {
        if pdid != 1 {
            return Err(MemError::NoSuchDomain(pdid));
        }
        let off = self.span(addr, data.len())?;
        if addr < self.allowed.start || addr + data.len() as u64 > self.allowed.end {
            self.outside_writes += 1;
        }
        self.bytes[off..off + data.len()].copy_from_slice(data);
        Ok(())
    }

    fn read(&mut self, pdid: Pdid, addr: u64, out: &mut [u8]) -> Result<(), MemError> {
        if pdid != 1 {
            return Err(MemError::NoSuchDomain(pdid));
        }
        let off = self.span(addr, out.len())?;
        out.copy_from_slice(&self.bytes[off..off + out.len()]);
        Ok(())
    }
}

/// Recompute the trailing ICRC of an RC packet (CRC-32 of everything before it, big-endian),
/// so that mutated fields reach the parser's checks behind it. Shorter inputs are left alone.
pub fn seal_rc(bytes: &mut [u8]) {
    if bytes.len() >= 4 {
        let at = bytes.len() - 4;
        let crc = crc32fast::hash(&bytes[..at]);
        bytes[at..].copy_from_slice(&crc.to_be_bytes());
    }
}
