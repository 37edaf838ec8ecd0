//! The reply table of the reply-based active flush ([`crate::reply`]): what each source issued,
//! what this rank's handlers processed per source and where to reply; and [`ReplyHook`], the
//! engine loop's side, which posts the reply writes that are due and consumes their
//! completions.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use rustc_hash::FxHashMap;
use unpinned_core::api::{Completion, Op, RemoteKey, WorkRequest};
use unpinned_core::memory::Pdid;
use unpinned_core::time::Instant as EngineInstant;
use unpinned_live::transport::Waker;
use unpinned_live::TurnHook;
use unpinned_part::PartEngine;

/// Work-request ids with this bit set are the runtime's own reply writes (the application's ids
/// count up from 1 and never reach it).
pub const REPLY_WR_BIT: u64 = 1 << 63;

/// Where and how the target replies to one source.
pub(crate) struct Dest {
    /// The source's reply word for this rank.
    pub(crate) addr: u64,
    pub(crate) key: RemoteKey,
    pub(crate) pdid: Pdid,
    /// Count confirmed by the last completed reply.
    pub(crate) sent: u64,
    /// A reply is in flight (its count is in `buf`), to this word and key.
    pub(crate) in_flight: Option<(u64, RemoteKey)>,
    /// The reply's source buffer: a heap word, stable while the write reads it.
    pub(crate) buf: Box<u64>,
    /// Replies that failed (the next processed entry retries).
    pub(crate) failures: u64,
}

#[derive(Default)]
pub(crate) struct Inner {
    /// Target side: active puts processed per source.
    pub(crate) processed: FxHashMap<u32, u64>,
    /// Target side: reply destinations per source.
    pub(crate) dests: FxHashMap<u32, Dest>,
    /// Source side: active puts issued per target.
    pub(crate) issued: FxHashMap<u32, u64>,
}

/// Reply-flush state of a rank, shared by the API, the handler threads and the engine.
#[derive(Default)]
pub(crate) struct ReplyTable {
    pub(crate) inner: Mutex<Inner>,
    /// Source side: one word per rank, written by that rank's replies (allocated once).
    pub(crate) words: OnceLock<(Box<[AtomicU64]>, RemoteKey)>,
    /// A count changed or a reply completed: the engine should look at the table.
    pub(crate) dirty: AtomicBool,
    /// Wakes this rank's engine (set when the runtime starts).
    pub(crate) waker: OnceLock<Waker>,
}

impl ReplyTable {
    /// The engine's waker, set once by the runtime.
    pub fn set_waker(&self, w: Waker) {
        let _ = self.waker.set(w);
    }

    /// A handler processed one active put of `source`.
    pub fn processed(&self, source: u32) {
        let has_dest = {
            let mut g = self.inner.lock().expect("reply table");
            *g.processed.entry(source).or_default() += 1;
            g.dests.contains_key(&source)
        };
        if has_dest {
            self.dirty.store(true, Ordering::Release);
            if let Some(w) = self.waker.get() {
                w();
            }
        }
    }
}

/// The engine loop's side of the reply-based flush: posts the replies that are due at the
/// start of each turn and consumes their completions.
pub struct ReplyHook {
    table: Arc<ReplyTable>,
}

impl ReplyHook {
    pub(crate) fn new(table: Arc<ReplyTable>) -> ReplyHook {
        ReplyHook { table }
    }
}

impl TurnHook for ReplyHook {
    /// Post the replies that are due (called at the start of a turn; one atomic load when
    /// nothing changed).
    fn before_turn(&mut self, engine: &mut PartEngine, now: &mut dyn FnMut() -> EngineInstant) {
        // A plain load first: no write to a shared line on the (usual) idle turn.
        if !self.table.dirty.load(Ordering::Acquire) {
            return;
        }
        let table = &*self.table;
        if !table.dirty.swap(false, Ordering::AcqRel) {
            return;
        }
        let now = now();
        let mut g = table.inner.lock().expect("reply table");
        let Inner {
            processed, dests, ..
        } = &mut *g;
        for (&src, d) in dests.iter_mut() {
            let count = processed.get(&src).copied().unwrap_or(0);
            if d.in_flight.is_some() || count <= d.sent {
                continue;
            }
            *d.buf = count;
            let wr = WorkRequest {
                wr_id: REPLY_WR_BIT | src as u64,
                op: Op::Write,
                peer: src,
                local_pdid: d.pdid,
                local_addr: &*d.buf as *const u64 as u64,
                remote_pdid: d.pdid,
                remote_addr: d.addr,
                rkey: d.key,
                len: 8,
            };
            if engine.post(now, wr).is_ok() {
                d.in_flight = Some((d.addr, d.key));
            } else {
                d.failures += 1;
            }
        }
    }

    /// Consume the completion of a reply write; `false` if `c` is the application's.
    fn completed(&mut self, c: &Completion) -> bool {
        if c.wr_id & REPLY_WR_BIT == 0 {
            return false;
        }
        let table = &*self.table;
        let src = (c.wr_id & !REPLY_WR_BIT) as u32;
        let mut g = table.inner.lock().expect("reply table");
        if let Some(d) = g.dests.get_mut(&src) {
            let to = d.in_flight.take();
            if c.status.is_ok() {
                // A reply to a word replaced meanwhile (reply_connect again) confirms nothing
                // there.
                if to == Some((d.addr, d.key)) {
                    d.sent = *d.buf;
                }
                // The handler may have processed more meanwhile: look again next turn.
                table.dirty.store(true, Ordering::Release);
            } else {
                d.failures += 1;
            }
        }
        true
    }
}
