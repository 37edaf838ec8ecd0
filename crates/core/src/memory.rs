//! The `Memory` trait: how an engine (the NI) reaches host memory.
//!
//! The engine never touches memory directly. The simulator injects a model (residency, IOMMU
//! costs, real bytes for invariant checks); the live runtime injects real process memory that
//! must never block on a missing page: it answers [`MemError::NotPresent`] instead, which the
//! engine turns into a page-fault NACK (spec part.md, mechanism 3).

/// Protection-domain id (16 bit): selects the process / IOMMU context at a node (part.md, 12).
pub type Pdid = u16;

/// Size of a page, in bytes. PART's blocks and the IOMMU work on 4 KiB pages.
pub const PAGE_BYTES: u64 = 4096;

/// The page-aligned address containing `addr`.
pub const fn page_of(addr: u64) -> u64 {
    addr & !(PAGE_BYTES - 1)
}

/// Why a memory access did not happen. No access is ever partial: on error nothing was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MemError {
    /// The page holding `page_addr` is mapped but not present: an IOMMU fault.
    #[error("page {page_addr:#x} is not present")]
    NotPresent {
        /// Page-aligned address of the first missing page of the access.
        page_addr: u64,
    },
    /// The address is not mapped at all in the address space (no page-in can help).
    #[error("address {addr:#x} is not mapped")]
    Unmapped {
        /// First unmapped address of the access.
        addr: u64,
    },
    /// No address space (process) with this PDID exists at the node.
    #[error("no protection domain {0}")]
    NoSuchDomain(Pdid),
}

/// Host memory as seen through the IOMMU.
///
/// Implementations must make each call all-or-nothing: either every byte of the range is
/// accessed, or none is and an error says why.
pub trait Memory {
    /// Write `data` at virtual address `addr` of the address space `pdid`.
    fn write(&mut self, pdid: Pdid, addr: u64, data: &[u8]) -> Result<(), MemError>;
    /// Read `out.len()` bytes at virtual address `addr` of the address space `pdid`.
    fn read(&mut self, pdid: Pdid, addr: u64, out: &mut [u8]) -> Result<(), MemError>;

    /// [`Memory::write`] of one packet of a remote write (a put from `origin.peer`). An
    /// IOMMU that logs accesses (Active Access, spec active-access.md) needs to know whose
    /// access this is and which part of it; plain memories ignore `origin`.
    fn write_from(
        &mut self,
        pdid: Pdid,
        addr: u64,
        data: &[u8],
        origin: &AccessOrigin,
    ) -> Result<(), MemError> {
        let _ = origin;
        self.write(pdid, addr, data)
    }

    /// [`Memory::read`] of one packet served to a remote read (a get from `origin.peer`).
    fn read_for(
        &mut self,
        pdid: Pdid,
        addr: u64,
        out: &mut [u8],
        origin: &AccessOrigin,
    ) -> Result<(), MemError> {
        let _ = origin;
        self.read(pdid, addr, out)
    }

    /// Execute a remote atomic on the little-endian 64-bit word at `addr` (8-byte aligned);
    /// returns its previous value. The default reads and writes through this trait; a memory
    /// that other threads also access (the live runtime's) overrides it with a real atomic
    /// instruction.
    fn atomic(&mut self, pdid: Pdid, addr: u64, op: crate::api::AtomicOp) -> Result<u64, MemError> {
        atomic_by_read_write(self, pdid, addr, op)
    }
}

/// [`Memory::atomic`]'s default, for memories only the engine touches: read, apply, write
/// (atomic with respect to the engine, which is single-threaded).
pub fn atomic_by_read_write<M: Memory + ?Sized>(
    mem: &mut M,
    pdid: Pdid,
    addr: u64,
    op: crate::api::AtomicOp,
) -> Result<u64, MemError> {
    let mut b = [0u8; 8];
    mem.read(pdid, addr, &mut b)?;
    let mut word = u64::from_le_bytes(b);
    let old = op.apply(&mut word);
    mem.write(pdid, addr, &word.to_le_bytes())?;
    Ok(old)
}

/// Who caused an engine's memory access, for memories that log accesses (Active Access).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccessOrigin {
    /// The remote node that issued the put or get.
    pub peer: u32,
    /// Its transfer id (with `peer` and the direction, names the access).
    pub transfer_id: u32,
    /// Target address of the whole access.
    pub xfer_addr: u64,
    /// Length of the whole access, bytes.
    pub xfer_len: u64,
    /// Offset of this packet within the access, bytes.
    pub offset: u64,
}
