//! Incremental checkpointing of remotely written pages, live (spec active-access.md, "Use
//! cases"; the simulator's version is crates/aa's `checkpoint`).
//!
//! Remote puts never set the CPU's dirty bits, so the region is marked `W=1, WL=1, WLD=0`
//! ([`PageBits::track_puts`]): puts are written as usual and the engine thread logs one
//! metadata entry per access (which range was written). A handler thread turns the entries
//! into a set of dirty pages; a checkpoint waits until the handler has processed every entry
//! reserved so far, then copies only the dirty pages (crates/aa's [`Delta`]). Local writes of
//! the application are reported with [`Checkpointer::mark_local`] (the MMU's dirty bits on
//! hardware). A base checkpoint ([`Checkpointer::full`]) plus the increments restore the
//! region byte for byte ([`restore_into`]).
//!
//! A checkpoint is consistent when the region is quiescent while it copies: the writers'
//! puts are complete (e.g. after their `flush`) and no new ones are issued until it returns.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use unpinned_aa::checkpoint::Delta;
use unpinned_aa::log::EntryKind;
use unpinned_core::memory::PAGE_BYTES;

use crate::drain::wait_drained;
use crate::handler::{Handler, HandlerReport, Notify};
use crate::state::LogShared;
use crate::{ActiveAccess, ActiveError, PageBits};

/// Errors of the live checkpointer.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CheckpointError {
    /// Creating the log, marking the pages or starting the handler failed.
    #[error(transparent)]
    Active(#[from] ActiveError),
    /// The region must be non-empty, page-aligned and not wrap around.
    #[error("checkpoint region [{addr:#x}, +{len}) must be non-empty and page-aligned")]
    BadRegion {
        /// Start.
        addr: u64,
        /// Length.
        len: u64,
    },
    /// The handler did not process the logged entries in time (stuck or stopped).
    #[error("the checkpoint handler did not drain its log within {0} ms")]
    DrainTimeout(u64),
    /// A restore target of the wrong size, or a delta page outside the region.
    #[error("restore: {0}")]
    Restore(String),
}

/// Checkpoints of one page-aligned region of this process's memory.
pub struct Checkpointer {
    addr: u64,
    len: u64,
    log: Arc<LogShared>,
    dirty: Arc<Mutex<BTreeSet<u64>>>,
    handler: Option<Handler>,
    drain_timeout: Duration,
    bytes_copied: u64,
}

impl Checkpointer {
    /// Create log `iuid` of `log_bytes`, mark `[addr, addr+len)` to log remote puts as
    /// metadata and start the handler. The region should be exposed writable to the peers.
    ///
    /// # Safety
    /// `[addr, addr+len)` must be memory of this process that stays mapped and readable while
    /// the checkpointer lives (checkpoints read it with the CPU).
    pub unsafe fn start(
        aa: &ActiveAccess,
        iuid: u32,
        log_bytes: u32,
        addr: u64,
        len: u64,
        notify: Notify,
    ) -> Result<Checkpointer, CheckpointError> {
        if len == 0
            || !addr.is_multiple_of(PAGE_BYTES)
            || !len.is_multiple_of(PAGE_BYTES)
            || addr.checked_add(len).is_none()
        {
            return Err(CheckpointError::BadRegion { addr, len });
        }
        let i = aa.create_log(iuid, log_bytes)?;
        aa.assoc_pages(addr, len, PageBits::track_puts(i))?;
        let log = aa.state.log(i).ok_or(ActiveError::NoLog(i.get()))?;
        let dirty = Arc::new(Mutex::new(BTreeSet::new()));
        let d = dirty.clone();
        let handler = aa.spawn_handler(iuid, notify, move |e| {
            let h = &e.header;
            if matches!(h.kind, EntryKind::PutMeta | EntryKind::PutData) && h.access_len > 0 {
                let last = h.addr.saturating_add(h.access_len as u64 - 1);
                let mut set = d.lock().expect("dirty pages");
                // Clipped to the region by the checkpoint; an access is at most 4 GiB.
                for p in h.addr / PAGE_BYTES..=last / PAGE_BYTES {
                    set.insert(p);
                }
            }
        })?;
        Ok(Checkpointer {
            addr,
            len,
            log,
            dirty,
            handler: Some(handler),
            drain_timeout: Duration::from_secs(10),
            bytes_copied: 0,
        })
    }

    /// The application wrote `[addr, addr+len)` itself: the next checkpoint copies it too.
    pub fn mark_local(&self, addr: u64, len: u64) {
        if len == 0 {
            return;
        }
        let last = addr.saturating_add(len - 1);
        let mut set = self.dirty.lock().expect("dirty pages");
        for p in addr / PAGE_BYTES..=last / PAGE_BYTES {
            set.insert(p);
        }
    }

    /// A full (base) checkpoint: every page of the region. Clears the dirty set.
    pub fn full(&mut self) -> Result<Delta, CheckpointError> {
        self.drain()?;
        self.dirty.lock().expect("dirty pages").clear();
        let first = self.addr / PAGE_BYTES;
        let pages: Vec<u64> = (first..first + self.len / PAGE_BYTES).collect();
        Ok(self.copy(&pages))
    }

    /// An incremental checkpoint: the pages written since the previous checkpoint.
    pub fn checkpoint(&mut self) -> Result<Delta, CheckpointError> {
        self.drain()?;
        let (first, end) = (self.addr / PAGE_BYTES, (self.addr + self.len) / PAGE_BYTES);
        let pages: Vec<u64> = std::mem::take(&mut *self.dirty.lock().expect("dirty pages"))
            .into_iter()
            .filter(|p| (first..end).contains(p))
            .collect();
        Ok(self.copy(&pages))
    }

    /// Bytes copied by all checkpoints so far.
    pub fn bytes_copied(&self) -> u64 {
        self.bytes_copied
    }

    /// Stop the handler and report (the page marks and the log stay).
    pub fn stop(mut self) -> Option<HandlerReport> {
        self.handler.take()?.stop()
    }

    /// Wait until the handler has processed every entry reserved in the log so far: the
    /// entries of all puts completed before the call.
    fn drain(&self) -> Result<(), CheckpointError> {
        if wait_drained(&self.log, self.drain_timeout) {
            Ok(())
        } else {
            Err(CheckpointError::DrainTimeout(
                self.drain_timeout.as_millis() as u64,
            ))
        }
    }

    fn copy(&mut self, pages: &[u64]) -> Delta {
        let mut out = Vec::with_capacity(pages.len());
        for &p in pages {
            let mut buf = vec![0u8; PAGE_BYTES as usize];
            // SAFETY: page `p` lies in the region, which the caller of `start` promised stays
            // mapped and readable; concurrent remote writes would only make the copy
            // inconsistent (documented), never unsound for plain bytes.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    (p * PAGE_BYTES) as usize as *const u8,
                    buf.as_mut_ptr(),
                    buf.len(),
                )
            };
            out.push((p, buf));
        }
        self.bytes_copied += out.len() as u64 * PAGE_BYTES;
        Delta { pages: out }
    }
}

/// Rebuild the image of the region starting at `addr` into `out` (its length is the region's)
/// from a base checkpoint and increments, in order.
pub fn restore_into(deltas: &[Delta], addr: u64, out: &mut [u8]) -> Result<(), CheckpointError> {
    if !addr.is_multiple_of(PAGE_BYTES) || !(out.len() as u64).is_multiple_of(PAGE_BYTES) {
        return Err(CheckpointError::Restore(format!(
            "region {addr:#x} +{} is not page-aligned",
            out.len()
        )));
    }
    let first = addr / PAGE_BYTES;
    let n = out.len() as u64 / PAGE_BYTES;
    for d in deltas {
        for (p, bytes) in &d.pages {
            if !(first..first + n).contains(p) || bytes.len() as u64 != PAGE_BYTES {
                return Err(CheckpointError::Restore(format!(
                    "page {p:#x} is outside the region or not a whole page"
                )));
            }
            let o = ((p - first) * PAGE_BYTES) as usize;
            out[o..o + PAGE_BYTES as usize].copy_from_slice(bytes);
        }
    }
    Ok(())
}
