//! The active flush (spec "Active flush") and the Active Access entry point of [`Runtime`].
//!
//! `active_flush(target)` completes only when the target's handler has processed every active
//! access this rank issued before it. As in the spec it is an active get on a flushing page
//! ([`super::ActiveAccess::flush_page_bits`]) that the target holds until its log is drained.
//! PART does not order a read request after earlier writes (the writes' blocks may still be
//! retransmitted), so the caller first waits until all its requests are complete: then every
//! active put it issued is in the target's log, and the held get covers it.
//!
//! The RMA flush ([`Runtime::flush`]) stays what it was: it completes when the data is
//! delivered, whether or not a handler has seen it. The two are independent.

use unpinned_core::api::{NodeId, RemoteKey};

use super::ActiveAccess;
use crate::api::{LiveError, Runtime};

impl Runtime {
    /// This rank's Active Access: logs, page bits, handlers.
    pub fn active(&self) -> &ActiveAccess {
        &self.active
    }

    /// Active flush towards `peer`: returns when `peer`'s handler of the log behind the
    /// flushing page at `flush_addr` (exposed readable with `rkey`) has processed everything
    /// this rank issued before the call.
    pub fn active_flush(
        &self,
        peer: NodeId,
        flush_addr: u64,
        rkey: RemoteKey,
    ) -> Result<(), LiveError> {
        self.flush()?;
        let mut word = [0u8; 8];
        self.read_blocking(peer, &mut word, flush_addr, rkey)?;
        Ok(())
    }
}
