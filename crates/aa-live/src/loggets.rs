//! Logging of gets for fault tolerance, live (spec active-access.md, "Use cases"; the
//! simulator's version is crates/aa's `loggets`).
//!
//! To replay the gets of a crashed reader, the target must keep the data it returned: its
//! region is marked `R=1, RL=1, RLD=1` ([`PageBits::log_get_data`]), so the engine thread
//! logs a copy of the bytes as it serves each get (puts are written as usual). A handler
//! thread files the entries per source into crates/aa's [`ReplayStore`]; a restarted reader
//! re-reads from it exactly what it got the first time, whatever the memory holds since.

use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use unpinned_aa::loggets::ReplayStore;

use crate::drain::wait_drained;
use crate::handler::{Handler, HandlerReport, Notify};
use crate::state::LogShared;
use crate::{ActiveAccess, ActiveError, PageBits};

/// The gets served from one region of this process, logged with their data.
pub struct GetLogger {
    log: Arc<LogShared>,
    store: Arc<Mutex<ReplayStore>>,
    handler: Option<Handler>,
    drain_timeout: Duration,
}

impl GetLogger {
    /// Create log `iuid` of `log_bytes`, mark `[addr, addr+len)` to log gets with their data
    /// and start the handler. A log smaller than the largest get plus its 32-byte header
    /// cannot hold that get: such a get is refused until it fits, i.e. forever; size the log
    /// for the reads you expect.
    pub fn start(
        aa: &ActiveAccess,
        iuid: u32,
        log_bytes: u32,
        addr: u64,
        len: u64,
        notify: Notify,
    ) -> Result<GetLogger, ActiveError> {
        if len == 0 || addr.checked_add(len).is_none() {
            return Err(ActiveError::BadRange { addr, len });
        }
        let i = aa.create_log(iuid, log_bytes)?;
        // Whole pages are marked: keep the region page-aligned to log only its gets.
        aa.assoc_pages(addr, len, PageBits::log_get_data(i))?;
        let log = aa.state.log(i).ok_or(ActiveError::NoLog(i.get()))?;
        let store = Arc::new(Mutex::new(ReplayStore::new()));
        let s = store.clone();
        let handler = aa.spawn_handler(iuid, notify, move |e| {
            s.lock().expect("replay store").on_entry(e.clone());
        })?;
        Ok(GetLogger {
            log,
            store,
            handler: Some(handler),
            drain_timeout: Duration::from_secs(10),
        })
    }

    /// Wait until every get served so far is filed; then `f` sees the store. `None` if the
    /// handler does not catch up within 10 s.
    pub fn with_store<T>(&self, f: impl FnOnce(&ReplayStore) -> T) -> Option<T> {
        if !wait_drained(&self.log, self.drain_timeout) {
            return None;
        }
        Some(f(&self.store.lock().expect("replay store")))
    }

    /// Stop the handler and report (the page marks and the log stay).
    pub fn stop(mut self) -> Option<HandlerReport> {
        self.handler.take()?.stop()
    }
}
