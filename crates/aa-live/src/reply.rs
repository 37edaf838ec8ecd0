//! The reply-based active flush (spec "Active flush", the alternative without IOMMU support):
//! the target's handler replies with an RDMA write naming how many active puts of each source
//! it processed, and the source's [`ActiveRuntime::reply_flush`] waits until that count reaches the
//! number of active puts it issued.
//!
//! - The source counts its active puts per target: it issues them with
//!   [`ActiveRuntime::write_active`] (an RDMA write plus the count). Issue every put to an active
//!   page of a peer through it: the target cannot tell counted puts from others, so a plain
//!   [`Runtime::write`](unpinned_live::Runtime::write) to an active page inflates the peer's reply and a later reply flush
//!   may return before the latest active puts are processed; an active write to a plain page
//!   is never confirmed (the flush times out).
//! - Every rank exposes one reply word per rank ([`ActiveRuntime::reply_words`]); each target learns
//!   where to reply to each source ([`ActiveRuntime::reply_connect`]), or all ranks do both at once
//!   through the bootstrap ([`ActiveRuntime::reply_setup`]).
//! - The target's handler threads (any log) count processed `ActivePut` entries per source
//!   (`ReplyTable::processed`, [`crate::replies`]) and wake the engine; the engine posts the reply write itself,
//!   at most one in flight per source, carrying the newest count when it is posted. Replies use
//!   work-request ids with [`REPLY_WR_BIT`](crate::replies::REPLY_WR_BIT) set: their completions are consumed here and never
//!   reach the application's completion queue nor [`Runtime::flush`](unpinned_live::Runtime::flush)'s posted/delivered count.
//! - The reply words are written by this rank's engine during its turns, under the core lock:
//!   [`ActiveRuntime::reply_flush`] reads them under the same lock (no torn counts).
//!
//! Compared with the IOMMU-held flush ([`ActiveRuntime::active_flush`]) the target needs no flushing
//! page, and the source's wait covers every log of the target; but each confirmation costs the
//! target a write, and the handler must run (a target without a handler gives a timeout).
//!
//! The reply adds a hop (the handler wakes the target's engine, which posts the reply write),
//! and across processes the flush waits for the handlers' backlog; neither kind of flush is
//! consistently faster (measurements: docs/performance.md, "Active Access on the live
//! runtime").

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use unpinned_core::api::{NodeId, Perms, RemoteKey, WrId};
use unpinned_live::LiveError;

use crate::replies::Dest;
use crate::runtime::ActiveRuntime;

/// Reply-flush counters towards / from one peer ([`ActiveRuntime::reply_status`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReplyStatus {
    /// Source side: active puts this rank issued to the peer ([`ActiveRuntime::write_active`]).
    pub issued: u64,
    /// Source side: the peer's latest reply (active puts of ours its handlers processed).
    pub confirmed: u64,
    /// Target side: active puts of the peer this rank's handlers processed.
    pub processed: u64,
    /// Target side: the count our last completed reply carried to the peer.
    pub replied: u64,
    /// Target side: reply writes to the peer that failed.
    pub reply_failures: u64,
}

impl ActiveRuntime {
    fn check_peer(&self, peer: NodeId) -> Result<(), LiveError> {
        if peer >= self.size() || peer == self.rank() {
            return Err(LiveError::Invalid(format!(
                "peer {peer} is not another rank of this {}-rank job",
                self.size()
            )));
        }
        Ok(())
    }

    /// This rank's reply words (one 8-byte count per rank, exposed writable; allocated and
    /// exposed on the first call): `(address, key)` to hand to the peers for
    /// [`ActiveRuntime::reply_connect`]. Rank `t`'s replies land at `address + 8 * t`.
    pub fn reply_words(&self) -> Result<(u64, RemoteKey), LiveError> {
        let table = &self.active.state.replies;
        if let Some((w, key)) = table.words.get() {
            return Ok((w.as_ptr() as u64, *key));
        }
        let words: Box<[AtomicU64]> = (0..self.size()).map(|_| AtomicU64::new(0)).collect();
        // SAFETY: the words live in the runtime's Active Access state, which outlives the
        // engine (the engine holds a reference to it); we only read them atomically and under
        // the engine's lock, so no Rust reference sees a write in progress.
        let key = unsafe { self.expose(words.as_ptr() as *const u8, words.len() * 8, Perms::RW)? };
        let (w, key) = match table.words.set((words, key)) {
            Ok(()) => table.words.get().expect("just set"),
            Err(_) => {
                // Another thread won the race: keep its words, withdraw ours.
                let _ = self.revoke(key);
                table.words.get().expect("set by the other thread")
            }
        };
        Ok((w.as_ptr() as u64, *key))
    }

    /// Target side: reply to `source` (whose reply words are at `words_addr`, exposed with
    /// `key`) with the count of its active puts this rank's handlers processed.
    pub fn reply_connect(
        &self,
        source: NodeId,
        words_addr: u64,
        key: RemoteKey,
    ) -> Result<(), LiveError> {
        self.check_peer(source)?;
        let addr = words_addr
            .checked_add(8 * self.rank() as u64)
            .ok_or_else(|| LiveError::Invalid("reply word address wraps around".into()))?;
        let table = &self.active.state.replies;
        let mut g = table.inner.lock().expect("reply table");
        if let Some(d) = g.dests.get_mut(&source) {
            // Reconnected: keep the buffer (a reply in flight may still be reading it) and
            // send the count again to the new word.
            (d.addr, d.key, d.sent) = (addr, key, 0);
        } else {
            let d = Dest {
                addr,
                key,
                pdid: self.pdid(),
                sent: 0,
                in_flight: None,
                buf: Box::new(0),
                failures: 0,
            };
            g.dests.insert(source, d);
        }
        drop(g);
        // Entries processed before the connection are replied now.
        table.dirty.store(true, Ordering::Release);
        self.wake_engine();
        Ok(())
    }

    /// Collective (every rank, through the bootstrap): expose this rank's reply words and
    /// connect every pair, so that [`ActiveRuntime::reply_flush`] works towards any peer.
    pub fn reply_setup(&self) -> Result<(), LiveError> {
        let (addr, key) = self.reply_words()?;
        let all = self.exchange(addr, 8 * self.size() as u64, key)?;
        for r in all.iter().filter(|r| r.rank != self.rank()) {
            self.reply_connect(r.rank, r.addr, r.key)?;
        }
        Ok(())
    }

    /// An active put: [`Runtime::write`](unpinned_live::Runtime::write) of `len` bytes to a page of `peer` marked for active
    /// puts, counted for [`ActiveRuntime::reply_flush`]. One call is one log entry at the target.
    /// Use it for every put to active pages of `peer` (see the module doc: plain writes there
    /// would make the reply flush return early).
    ///
    /// # Safety
    ///
    /// As [`Runtime::write`](unpinned_live::Runtime::write).
    pub unsafe fn write_active(
        &self,
        peer: NodeId,
        local: *const u8,
        remote_addr: u64,
        rkey: RemoteKey,
        len: usize,
    ) -> Result<WrId, LiveError> {
        // SAFETY: the caller upholds `write`'s contract.
        let id = unsafe { self.write(peer, local, remote_addr, rkey, len)? };
        let table = &self.active.state.replies;
        *table
            .inner
            .lock()
            .expect("reply table")
            .issued
            .entry(peer)
            .or_default() += 1;
        Ok(id)
    }

    /// Reply-based active flush towards `peer`: first every request of this rank completes (as
    /// [`Runtime::flush`](unpinned_live::Runtime::flush); a failed one is returned), then this waits, driving progress, until
    /// `peer`'s handlers have processed every active put issued to it with
    /// [`ActiveRuntime::write_active`] before the call, as `peer`'s replies say. Needs the reply
    /// words ([`ActiveRuntime::reply_setup`] or [`ActiveRuntime::reply_words`] + the peer's
    /// [`ActiveRuntime::reply_connect`]). A peer that does not confirm within the operation timeout
    /// (no handler, no connection) gives [`LiveError::Timeout`].
    pub fn reply_flush(&self, peer: NodeId) -> Result<(), LiveError> {
        self.check_peer(peer)?;
        if self.active.state.replies.words.get().is_none() {
            return Err(LiveError::Config(
                "no reply words: call reply_setup (or reply_words and the peer's reply_connect) first"
                    .into(),
            ));
        }
        self.flush()?;
        let target = self.reply_status(peer)?.issued;
        let start = Instant::now();
        let drive_for = self.loop_options().wait_spin + self.loop_options().wait_yield;
        loop {
            if self.confirmed(peer)? >= target {
                return Ok(());
            }
            let elapsed = start.elapsed();
            if elapsed > self.op_timeout() {
                return Err(LiveError::Timeout(self.op_timeout()));
            }
            if elapsed < drive_for {
                self.progress()?;
                std::thread::yield_now();
            } else {
                // A slow handler: let the progress thread receive the reply.
                self.wake_engine();
                std::thread::sleep(Duration::from_micros(50));
            }
        }
    }

    /// The latest reply of `peer`, read under the engine's lock (the engine writes it in its
    /// turns, under that lock).
    fn confirmed(&self, peer: NodeId) -> Result<u64, LiveError> {
        let Some((w, _)) = self.active.state.replies.words.get() else {
            return Ok(0);
        };
        self.with_engine_locked(|| w[peer as usize].load(Ordering::Acquire))
    }

    /// Reply-flush counters towards and from `peer`.
    pub fn reply_status(&self, peer: NodeId) -> Result<ReplyStatus, LiveError> {
        self.check_peer(peer)?;
        let confirmed = self.confirmed(peer)?;
        let g = self.active.state.replies.inner.lock().expect("reply table");
        let d = g.dests.get(&peer);
        Ok(ReplyStatus {
            issued: g.issued.get(&peer).copied().unwrap_or(0),
            confirmed,
            processed: g.processed.get(&peer).copied().unwrap_or(0),
            replied: d.map_or(0, |d| d.sent),
            reply_failures: d.map_or(0, |d| d.failures),
        })
    }
}
