//! Remote atomics in the live API: compare-and-swap, fetch-and-add and swap on a
//! 64-bit word a peer exposed read-write, executed by the peer's engine with a real atomic
//! instruction ([`crate::memory::LiveMemory`]'s `Memory::atomic`), at most once even when the request
//! or its response is lost (crates/part/src/atomics.rs).

use std::sync::atomic::Ordering;

use unpinned_core::api::{AtomicOp, NodeId, RemoteKey, WrId};
use unpinned_part::AtomicRequest;

use crate::api::{LiveError, Runtime};

impl Runtime {
    /// Post a remote atomic on the word at `remote_addr` of `peer` (8-byte aligned, exposed
    /// read-write with `rkey`). On success the word's previous value is written to `result`.
    ///
    /// # Safety
    ///
    /// `result` must stay valid for an 8-byte write, and not be accessed, until the
    /// completion arrives.
    pub unsafe fn post_atomic(
        &self,
        peer: NodeId,
        result: *mut u64,
        remote_addr: u64,
        rkey: RemoteKey,
        op: AtomicOp,
    ) -> Result<WrId, LiveError> {
        if peer >= self.size() || peer == self.rank() {
            return Err(LiveError::Invalid(format!(
                "peer {peer} is this rank or out of range (the job has {} ranks)",
                self.size()
            )));
        }
        if !remote_addr.is_multiple_of(8) {
            return Err(LiveError::Invalid(format!(
                "atomic address {remote_addr:#x} is not 8-byte aligned"
            )));
        }
        let wr_id = self.next_wr.fetch_add(1, Ordering::Relaxed);
        let req = AtomicRequest {
            wr_id,
            peer,
            op,
            remote_pdid: self.pdid,
            remote_addr,
            rkey,
            local_pdid: self.pdid,
            local_addr: result as u64,
        };
        let wake = {
            // Caller-driven progress, as for writes and reads (api.rs).
            let mut core = self.core()?;
            self.posted.fetch_add(1, Ordering::Relaxed);
            let now = core.post_atomic(req);
            // Transmit first, as a write's post does (`Core::turn_at`).
            core.turn_at(now);
            core.needs_wake_after_post(now)
        };
        // As after a write's post (`Core::needs_wake_after_post`).
        if wake {
            (self.wake)();
        }
        Ok(wr_id)
    }

    /// Execute a remote atomic and return the word's previous value.
    pub fn atomic(
        &self,
        peer: NodeId,
        remote_addr: u64,
        rkey: RemoteKey,
        op: AtomicOp,
    ) -> Result<u64, LiveError> {
        // A heap word written now: present and private, so the engine can store the result
        // without a page fault.
        let mut result = Box::new(0u64);
        std::hint::black_box(&mut *result);
        let ptr: *mut u64 = &mut *result;
        // SAFETY: `result` lives until the completion (we wait below, without a deadline if
        // the engine is slow: the buffer stays lent) and is not touched meanwhile.
        let id = unsafe { self.post_atomic(peer, ptr, remote_addr, rkey, op)? };
        loop {
            match self.wait(id) {
                Err(LiveError::Timeout(_)) => continue,
                Err(e) => return Err(e),
                // SAFETY: the engine wrote the result before the completion was queued.
                Ok(_) => return Ok(unsafe { std::ptr::read_volatile(ptr) }),
            }
        }
    }
}
