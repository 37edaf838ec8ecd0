//! Active Access on the live runtime (spec active-access.md): the IOMMU extension
//! for real, on the engine's memory path.
//!
//! - [`ActiveRuntime`]: a live runtime ([`unpinned_live::Runtime`]) with Active Access plugged
//!   into its engine loop (crates/live's `layer` seam), and this rank's [`ActiveAccess`].
//! - [`memory::ActiveMemory`]: the engine thread's `Memory`; puts and gets on marked pages
//!   are logged (metadata, or metadata + data) into access logs in this process, active puts
//!   are not written, flushing pages hold gets until the log is drained.
//! - [`handler`]: one handler thread per log, polling or sleeping on a futex, with the
//!   measured notification delay.
//! - [`ActiveAccess`] (from [`ActiveRuntime::active`]): create logs, mark pages
//!   (`assoc_pages`, the spec's `assoc_page(addr, actions, handler)` split into marking and
//!   [`ActiveAccess::spawn_handler`]), counters.
//! - [`ActiveRuntime::active_flush`] ([`flush`]): the active flush.
//! - [`ActiveRuntime::reply_flush`] ([`reply`]): the reply-based active flush (the handler
//!   writes back how many active puts of each source it processed).
//! - [`dht`]: the distributed hash table across processes (AA or RMA inserts with remote
//!   atomics, RMA lookups, AA deletes).
//! - [`dht`]: the distributed hash table over real processes (AA inserts and deletes, RMA
//!   lookups).
//! - [`checkpoint`]: incremental checkpointing of remotely written pages; [`loggets`]: gets
//!   logged with their data for replay; [`sort`]: the fault-tolerant parallel sort's pure
//!   parts (the processes: `unpinned-live-aa sort`).
//!
//! The log's reserve / commit, back-pressure and reassembly are crates/aa's (`AccessLog`,
//! `Reassembler`), unchanged; the decision per page is crates/aa's `PageBits` table.
//!
//! Plain RMA and active accesses mix on one target: unmarked pages are untouched by all this,
//! and while no page is marked the engine's accesses pass straight through (one atomic load).
//!
//! # Notification and costs
//!
//! How the handler learns of a new entry is its choice ([`Notify`]): polling (yielding every
//! 256 empty polls, so it does not hold a core on an oversubscribed host) is the fastest and
//! costs a share of a core, a futex wake-up at every entry costs a steady wake-up latency and
//! little CPU, and a batching handler leaves a lone entry waiting for its period. On a host
//! with more processes than cores, a handler that is not scheduled delays entries whichever
//! the notification. `unpinned live aa-notify` and `unpinned live aa-dht-link` measure them
//! (results: docs/performance.md, "Active Access on the live runtime").

#![warn(missing_docs)]

pub mod checkpoint;
#[cfg(test)]
mod conformance;
pub mod dht;
mod drain;
pub mod flush;
pub mod handler;
pub mod loggets;
pub mod memory;
mod notify;
pub mod replies;
pub mod reply;
pub mod runtime;
pub mod sort;
pub(crate) mod state;

use std::sync::atomic::Ordering;
use std::sync::Arc;

use unpinned_aa::log::LogEntry;
pub use unpinned_aa::log::{EntryHeader, EntryKind};
pub use unpinned_aa::pte::{Iuid, PageBits};
use unpinned_core::memory::PAGE_BYTES;

pub use handler::{Handler, HandlerReport, Notify};
pub use runtime::ActiveRuntime;
use state::ActiveState;

/// Errors of the Active Access API. Messages say what to do.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ActiveError {
    /// IUIDs have 10 bits.
    #[error("IUID {0} is out of range (0..=1023)")]
    BadIuid(u32),
    /// A log with this IUID exists already.
    #[error("access log {0} exists already")]
    LogExists(u16),
    /// No log with this IUID.
    #[error("no access log {0}: create_log it first")]
    NoLog(u16),
    /// A log must hold at least one entry header.
    #[error("access log of {0} bytes is too small (at least 64)")]
    LogTooSmall(u32),
    /// The log has a handler already.
    #[error("access log {0} has a handler already (one per log)")]
    HandlerAttached(u16),
    /// An empty or wrapping range.
    #[error("range [{addr:#x}, +{len}) is empty or wraps around")]
    BadRange {
        /// Start.
        addr: u64,
        /// Length.
        len: u64,
    },
    /// A range of more pages than one call may mark ([`MAX_ASSOC_PAGES`]): each marked page
    /// takes an entry in the page-bit table.
    #[error(
        "range [{addr:#x}, +{len}) spans more than {MAX_ASSOC_PAGES} pages ({} GiB); \
         mark only the pages peers access, in several calls if needed",
        MAX_ASSOC_PAGES * PAGE_BYTES >> 30
    )]
    TooLarge {
        /// Start.
        addr: u64,
        /// Length.
        len: u64,
    },
    /// The handler thread could not start.
    #[error("cannot start the handler thread: {0}")]
    Thread(String),
}

/// The most pages one [`ActiveAccess::assoc_pages`] call marks (16 GiB of 4 KiB pages). Each
/// marked page is an entry of the page-bit table, so an unbounded range (a wrong length)
/// would spend minutes and all memory inserting them instead of being refused.
pub const MAX_ASSOC_PAGES: u64 = 1 << 22;

/// Counters of the live IOMMU extension.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ActiveStats {
    /// Put entries completed in a log (active, metadata or data).
    pub puts_logged: u64,
    /// Get entries completed in a log.
    pub gets_logged: u64,
    /// Packets refused because their log was full (each one is retried by the source).
    pub stalls: u64,
    /// Accesses refused as faults (W=0 / R=0 without an active meaning).
    pub faults: u64,
    /// Times a flush get was held because the handler had not caught up.
    pub flush_holds: u64,
}

/// State of one access log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogStatus {
    /// Entries published.
    pub published: u64,
    /// Entries processed by the handler.
    pub processed: u64,
    /// Bytes free in the ring.
    pub free_bytes: u64,
    /// Reservations refused so far (back-pressure).
    pub backpressure: u64,
}

/// This rank's Active Access (see [`ActiveRuntime::active`]).
pub struct ActiveAccess {
    pub(crate) state: Arc<ActiveState>,
    pub(crate) rank: u32,
}

fn iuid(v: u32) -> Result<Iuid, ActiveError> {
    u16::try_from(v)
        .ok()
        .and_then(Iuid::new)
        .ok_or(ActiveError::BadIuid(v))
}

impl ActiveAccess {
    pub(crate) fn new(rank: u32) -> ActiveAccess {
        ActiveAccess {
            state: Arc::new(ActiveState::new()),
            rank,
        }
    }

    /// Create access log `iuid` (0..=1023) of `size_bytes` in this process (a ring buffer;
    /// entries are a 32-byte header plus data padded to 8 bytes).
    pub fn create_log(&self, iuid_v: u32, size_bytes: u32) -> Result<Iuid, ActiveError> {
        let i = iuid(iuid_v)?;
        if size_bytes < 64 {
            return Err(ActiveError::LogTooSmall(size_bytes));
        }
        if !self.state.create_log(i, size_bytes) {
            return Err(ActiveError::LogExists(i.get()));
        }
        Ok(i)
    }

    /// Mark every page of `[addr, addr+len)` with `bits` (rounded out to whole pages).
    /// Logging bits must name an existing log. The range must also be exposed (with write
    /// permission for puts, read for gets) for peers to reach it at all.
    pub fn assoc_pages(&self, addr: u64, len: u64, bits: PageBits) -> Result<(), ActiveError> {
        if len == 0 || addr.checked_add(len).is_none() {
            return Err(ActiveError::BadRange { addr, len });
        }
        if (addr + len - 1) / PAGE_BYTES - addr / PAGE_BYTES >= MAX_ASSOC_PAGES {
            return Err(ActiveError::TooLarge { addr, len });
        }
        let logs = bits.wl || bits.rl || bits.e;
        if logs && self.state.log(bits.iuid).is_none() {
            return Err(ActiveError::NoLog(bits.iuid.get()));
        }
        let mut pages = self.state.pages.write().expect("page bits");
        for vpn in addr / PAGE_BYTES..=(addr + len - 1) / PAGE_BYTES {
            pages.insert(vpn, bits);
        }
        self.state.any_marked.store(true, Ordering::Release);
        Ok(())
    }

    /// Make `[addr, addr+len)` plain pages again (any length: the work is bounded by the
    /// pages marked).
    pub fn clear_pages(&self, addr: u64, len: u64) -> Result<(), ActiveError> {
        if len == 0 || addr.checked_add(len).is_none() {
            return Err(ActiveError::BadRange { addr, len });
        }
        let mut pages = self.state.pages.write().expect("page bits");
        let (first, last) = (addr / PAGE_BYTES, (addr + len - 1) / PAGE_BYTES);
        // Whichever is smaller: the range's pages or the marked ones (a range may be the
        // whole address space).
        if last - first < pages.len() as u64 {
            for vpn in first..=last {
                pages.remove(&vpn);
            }
        } else {
            pages.retain(|vpn, _| !(first..=last).contains(vpn));
        }
        self.state
            .any_marked
            .store(!pages.is_empty(), Ordering::Release);
        Ok(())
    }

    /// Start the handler thread of log `iuid`: `f` is called for every entry, in log order.
    pub fn spawn_handler(
        &self,
        iuid_v: u32,
        notify: Notify,
        f: impl FnMut(&LogEntry) + Send + 'static,
    ) -> Result<Handler, ActiveError> {
        let i = iuid(iuid_v)?;
        let log = self.state.log(i).ok_or(ActiveError::NoLog(i.get()))?;
        if log.attached.swap(true, Ordering::SeqCst) {
            return Err(ActiveError::HandlerAttached(i.get()));
        }
        Handler::spawn(
            self.state.clone(),
            log.clone(),
            format!("unpinned-aa-{}-{}", self.rank, i.get()),
            notify,
            Box::new(f),
        )
        .map_err(|e| {
            log.attached.store(false, Ordering::SeqCst);
            ActiveError::Thread(e.to_string())
        })
    }

    /// State of log `iuid`.
    pub fn log_status(&self, iuid_v: u32) -> Result<LogStatus, ActiveError> {
        let i = iuid(iuid_v)?;
        let log = self.state.log(i).ok_or(ActiveError::NoLog(i.get()))?;
        let r = log.ring.lock().expect("access log");
        Ok(LogStatus {
            published: log.published.load(Ordering::SeqCst),
            processed: log.processed.load(Ordering::SeqCst),
            free_bytes: r.log.free_bytes(),
            backpressure: r.log.stats().backpressure,
        })
    }

    /// Counters.
    pub fn stats(&self) -> ActiveStats {
        let c = &self.state.counters;
        ActiveStats {
            puts_logged: c.puts_logged.load(Ordering::Relaxed),
            gets_logged: c.gets_logged.load(Ordering::Relaxed),
            stalls: c.stalls.load(Ordering::Relaxed),
            faults: c.faults.load(Ordering::Relaxed),
            flush_holds: c.flush_holds.load(Ordering::Relaxed),
        }
    }

    /// The bits of a flushing page of log `iuid`: gets are held until the log is drained
    /// (`R=0, RL=1`), puts are refused.
    pub fn flush_page_bits(iuid: Iuid) -> PageBits {
        PageBits {
            w: false,
            r: false,
            wl: false,
            wld: false,
            rl: true,
            rld: false,
            e: false,
            iuid,
        }
    }
}

#[cfg(test)]
mod range_tests {
    use super::*;

    /// Regressions found by fuzzing the C API (fuzz/fuzz_targets/capi_args.rs): a length of
    /// 2^62 made assoc_pages insert one table entry per page and clear_pages walk 2^50 pages
    /// (the call never returned).
    #[test]
    fn huge_ranges_are_refused_or_cleared_without_a_page_walk() {
        let aa = ActiveAccess::new(0);
        let i = aa.create_log(3, 4096).unwrap();
        let bits = PageBits::active_put(i);
        assert_eq!(
            aa.assoc_pages(0x1000, 1 << 62, bits),
            Err(ActiveError::TooLarge {
                addr: 0x1000,
                len: 1 << 62
            })
        );
        let max = MAX_ASSOC_PAGES * PAGE_BYTES;
        assert!(matches!(
            aa.assoc_pages(0x1000, max + 1, bits),
            Err(ActiveError::TooLarge { .. })
        ));
        assert!(
            aa.state.bits(0x1000).is_none(),
            "a refused range marks nothing"
        );
        aa.assoc_pages(0x10_0000, 3 * PAGE_BYTES, bits).unwrap();
        aa.assoc_pages(0x90_0000, 1, bits).unwrap();
        aa.clear_pages(0x10_1000, u64::MAX - 0x10_1000).unwrap();
        assert!(
            aa.state.bits(0x10_0000).is_some(),
            "below the cleared range"
        );
        assert!(aa.state.bits(0x10_1000).is_none());
        assert!(aa.state.bits(0x90_0000).is_none());
        aa.clear_pages(0, u64::MAX).unwrap();
        assert!(aa.state.bits(0x10_0000).is_none());
        assert!(!aa.state.any_marked.load(Ordering::Acquire));
    }
}
