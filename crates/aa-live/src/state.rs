//! What the live "IOMMU" (the engine thread, through [`crate::memory::ActiveMemory`]) and the
//! handler threads share: the per-page Active Access bits, the access-log table and the logs.
//!
//! A log is crates/aa's [`AccessLog`] (reserve / commit, whole-entry publication,
//! back-pressure) with its [`Reassembler`], in this process's memory behind a mutex. Beside it,
//! two counters the handler can poll without the lock (`published`, `processed`, in entries)
//! and a futex word the engine thread bumps on every publication, for a sleeping handler.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant as StdInstant;

use rustc_hash::FxHashMap;
use unpinned_aa::log::{AccessLog, LogEntry};
use unpinned_aa::pte::{Iuid, PageBits};
use unpinned_aa::reassembly::Reassembler;
use unpinned_core::memory::PAGE_BYTES;

use crate::notify::futex_wake;

/// The ring of one access log, as the engine thread and the handler see it under the lock.
pub(crate) struct Ring {
    pub log: AccessLog,
    pub re: Reassembler,
    /// Publication time (ns since the state's origin) of every published, unconsumed entry,
    /// in log order: the handler measures its notification delay from it.
    pub stamps: VecDeque<u64>,
}

/// One access log and its notification state.
pub(crate) struct LogShared {
    pub ring: Mutex<Ring>,
    /// Entries published so far (monotonic).
    pub published: AtomicU64,
    /// Entries whose handler call returned (monotonic).
    pub processed: AtomicU64,
    /// Futex word: bumped after every publication.
    pub word: AtomicU32,
    /// Handlers sleeping on `word` (the engine thread calls `FUTEX_WAKE` only if > 0).
    pub sleepers: AtomicU32,
    /// A handler thread is attached (one per log).
    pub attached: AtomicBool,
    /// Wake a sleeping handler only when this many entries wait (1 = every publication; a
    /// batching handler also wakes on its period).
    pub wake_threshold: AtomicU64,
}

impl LogShared {
    fn new(size_bytes: u32) -> LogShared {
        LogShared {
            ring: Mutex::new(Ring {
                log: AccessLog::new(size_bytes),
                re: Reassembler::new(),
                stamps: VecDeque::new(),
            }),
            published: AtomicU64::new(0),
            processed: AtomicU64::new(0),
            word: AtomicU32::new(0),
            sleepers: AtomicU32::new(0),
            attached: AtomicBool::new(false),
            wake_threshold: AtomicU64::new(1),
        }
    }

    /// After the engine thread changed the ring: record newly published entries, bump the
    /// futex word and wake a sleeping handler.
    pub fn after_change(&self, ring: &mut Ring, now_ns: u64) {
        let published = ring.log.stats().published;
        let before = self.published.load(Ordering::Relaxed);
        if published == before {
            return;
        }
        for _ in before..published {
            ring.stamps.push_back(now_ns);
        }
        self.published.store(published, Ordering::SeqCst);
        self.word.fetch_add(1, Ordering::SeqCst);
        if self.sleepers.load(Ordering::SeqCst) > 0
            && published.saturating_sub(self.processed.load(Ordering::SeqCst))
                >= self.wake_threshold.load(Ordering::Relaxed)
        {
            futex_wake(&self.word);
        }
    }

    /// The handler takes up to `max` entries with their publication times.
    pub fn take(&self, max: usize, out: &mut Vec<(LogEntry, u64)>) {
        let mut r = self.ring.lock().expect("access log");
        while out.len() < max {
            let Some(e) = r.log.pop() else { break };
            let at = r.stamps.pop_front().unwrap_or(0);
            out.push((e, at));
        }
    }
}

/// Counters of the live IOMMU extension.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub puts_logged: AtomicU64,
    pub gets_logged: AtomicU64,
    pub stalls: AtomicU64,
    pub faults: AtomicU64,
    pub flush_holds: AtomicU64,
}

/// Everything shared between the engine thread and the Active Access API / handlers.
pub(crate) struct ActiveState {
    pub origin: StdInstant,
    /// Any page marked: when false the engine's accesses pass straight through.
    pub any_marked: AtomicBool,
    /// Bits per virtual page number (unmarked pages are plain).
    pub pages: RwLock<FxHashMap<u64, PageBits>>,
    /// The access-log table: IUID -> log.
    pub logs: RwLock<FxHashMap<u16, Arc<LogShared>>>,
    /// Held active gets on flushing pages: (peer, transfer id) -> entries the handler must
    /// have processed before the get is served.
    pub holds: Mutex<FxHashMap<(u32, u32), u64>>,
    pub counters: Counters,
    /// Reply-based flush: counts and reply destinations ([`crate::reply`]).
    pub replies: crate::reply::ReplyTable,
}

impl ActiveState {
    pub fn new() -> ActiveState {
        ActiveState {
            origin: StdInstant::now(),
            any_marked: AtomicBool::new(false),
            pages: RwLock::new(FxHashMap::default()),
            logs: RwLock::new(FxHashMap::default()),
            holds: Mutex::new(FxHashMap::default()),
            counters: Counters::default(),
            replies: Default::default(),
        }
    }

    pub fn now_ns(&self) -> u64 {
        self.origin.elapsed().as_nanos() as u64
    }

    /// Bits of the page holding `addr`, if marked.
    pub fn bits(&self, addr: u64) -> Option<PageBits> {
        self.pages
            .read()
            .expect("page bits")
            .get(&(addr / PAGE_BYTES))
            .copied()
    }

    pub fn log(&self, iuid: Iuid) -> Option<Arc<LogShared>> {
        self.logs
            .read()
            .expect("log table")
            .get(&iuid.get())
            .cloned()
    }

    pub fn create_log(&self, iuid: Iuid, size_bytes: u32) -> bool {
        let mut t = self.logs.write().expect("log table");
        if t.contains_key(&iuid.get()) {
            return false;
        }
        t.insert(iuid.get(), Arc::new(LogShared::new(size_bytes)));
        true
    }
}
