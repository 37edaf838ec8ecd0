//! What a DSM application sees: one shared address space across ranks and threads.
//!
//! Applications (`crates/dsm-apps`) are written once against [`SharedSpace`] and run on
//! every implementation: the live Multiview DSM (`crates/dsm-live`, pages moved by the PART
//! engine, accesses caught by page protection) and a local one (threads of one process over
//! plain memory) that gives the sequential reference and fast tests.
//!
//! The contract is the one of a data-race-free program under sequential consistency: shared
//! data is read and written with plain loads and stores through the pointers [`SharedSpace::
//! alloc`] returns; ordering between threads comes from [`SharedSpace::barrier`] and the locks.

use std::fmt;

/// An error of the shared space (allocation, a dead rank, a protocol failure).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpaceError(pub String);

impl fmt::Display for SpaceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SpaceError {}

/// One worker thread's identity: its global index among all workers of all ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Worker {
    /// Global index, `rank * threads_per_rank + local`.
    pub id: usize,
    /// Number of workers over all ranks.
    pub count: usize,
}

/// A shared address space (see the module doc).
pub trait SharedSpace: Sync {
    /// This process's rank.
    fn rank(&self) -> usize;
    /// Number of ranks.
    fn ranks(&self) -> usize;
    /// Worker threads per rank.
    fn threads_per_rank(&self) -> usize;
    /// Allocates `bytes` of zeroed shared memory aligned to `align` (a power of two).
    ///
    /// Collective and deterministic: every rank calls `alloc` with the same arguments in the
    /// same order (during setup, before workers start) and gets the same address. An
    /// implementation may place each object on its own minipages (Multiview), so an object
    /// is the unit of sharing: put data written by different workers in different objects.
    fn alloc(&self, bytes: usize, align: usize) -> Result<*mut u8, SpaceError>;
    /// Waits until every worker of every rank has called `barrier` (all workers take part).
    fn barrier(&self, worker: Worker);
    /// Acquires global lock `id` (any u32; locks need no allocation).
    fn lock(&self, worker: Worker, id: u32);
    /// Releases global lock `id`.
    fn unlock(&self, worker: Worker, id: u32);
    /// Optional access hook: `worker` is about to read (or, with `write`, write) the `len`
    /// bytes at `ptr` of a shared allocation.
    ///
    /// Applications call it once per shared range around their loops (not per element), so
    /// it stays cheap. A DSM that catches accesses with page protection ignores it (the
    /// default does nothing); a tracing space that emulates coherence in software uses it to
    /// record the faults the access would take.
    fn access(&self, worker: Worker, ptr: *const u8, len: usize, write: bool) {
        let _ = (worker, ptr, len, write);
    }
}
