//! What the engine tests share: a flat memory in which every page is present.

use unpinned_core::memory::{MemError, Memory, Pdid};

/// Flat memory at [BASE, BASE + LEN), every page present.
pub struct Flat(pub Vec<u8>);

/// First address of [`Flat`].
pub const BASE: u64 = 0x1000_0000;
/// Bytes of [`Flat`].
pub const LEN: u64 = 1 << 20;

impl Memory for Flat {
    fn write(&mut self, _: Pdid, addr: u64, data: &[u8]) -> Result<(), MemError> {
        let off = addr.checked_sub(BASE).ok_or(MemError::Unmapped { addr })? as usize;
        let dst = self
            .0
            .get_mut(off..off + data.len())
            .ok_or(MemError::Unmapped { addr })?;
        dst.copy_from_slice(data);
        Ok(())
    }
    fn read(&mut self, _: Pdid, addr: u64, out: &mut [u8]) -> Result<(), MemError> {
        let off = addr.checked_sub(BASE).ok_or(MemError::Unmapped { addr })? as usize;
        let src = self
            .0
            .get(off..off + out.len())
            .ok_or(MemError::Unmapped { addr })?;
        out.copy_from_slice(src);
        Ok(())
    }
}
