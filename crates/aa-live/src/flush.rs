//! The active flush (spec "Active flush") and the Active Access entry point of [`ActiveRuntime`].
//!
//! `active_flush(target)` completes only when the target's handler has processed every active
//! access this rank issued before it. As in the spec it is an active get on a flushing page
//! ([`crate::ActiveAccess::flush_page_bits`]) that the target holds until its log is drained.
//! PART does not order a read request after earlier writes (the writes' blocks may still be
//! retransmitted), so the caller first waits until all its requests are complete: then every
//! active put it issued is in the target's log, and the held get covers it.
//!
//! The RMA flush ([`unpinned_live::Runtime::flush`]) stays what it was: it completes when the data is
//! delivered, whether or not a handler has seen it. The two are independent.

use unpinned_core::api::{NodeId, RemoteKey};

use unpinned_live::LiveError;

use crate::runtime::ActiveRuntime;
use crate::ActiveAccess;

impl ActiveRuntime {
    /// This rank's Active Access: logs, page bits, handlers.
    pub fn active(&self) -> &ActiveAccess {
        &self.active
    }

    /// Active flush towards `peer`: returns when `peer`'s handler of the log behind the
    /// flushing page at `flush_addr` (exposed readable with `rkey`) has processed everything
    /// this rank issued before the call. A peer that does not catch up within the operation
    /// timeout (`Config::op_timeout`; e.g. it runs no handler) gives [`LiveError::Timeout`].
    pub fn active_flush(
        &self,
        peer: NodeId,
        flush_addr: u64,
        rkey: RemoteKey,
    ) -> Result<(), LiveError> {
        self.flush()?;
        // A heap word, not a stack one: if the peer holds the get past the operation timeout
        // (no handler there, or a stuck one), we return `Timeout` while the engine may still
        // write the word later, so it is leaked rather than freed.
        let word: &'static mut [u8; 8] = Box::leak(Box::new([0u8; 8]));
        let ptr = word.as_mut_ptr();
        // SAFETY: `word` is not freed before the read ends (leaked above) and not accessed by
        // us after the post.
        let id = match unsafe { self.read(peer, ptr, flush_addr, rkey, 8) } {
            Ok(id) => id,
            Err(e) => {
                // SAFETY: refused before it started (bad peer, range): the engine never saw
                // the word, which came from `Box::new` above.
                drop(unsafe { Box::from_raw(ptr as *mut [u8; 8]) });
                return Err(e);
            }
        };
        let r = self.wait(id).map(|_| ());
        if !matches!(r, Err(LiveError::Timeout(_))) {
            // SAFETY: the read completed (or the engine stopped): nobody writes the word any
            // more, and it came from `Box::new` above.
            drop(unsafe { Box::from_raw(ptr as *mut [u8; 8]) });
        }
        r
    }
}
