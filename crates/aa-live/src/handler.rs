//! Handler threads: one per access log, processing its entries in order (spec "Notifying the
//! CPU"). Two ways to learn that entries were published:
//!
//! - [`Notify::Poll`]: the thread polls the log's published counter (the spec's (b), a
//!   runtime thread polling head/tail). It busy-polls with `spin_loop`, yielding the core
//!   every [`POLL_YIELD_EVERY`] empty polls so that on a host with fewer cores than busy
//!   threads the engine thread that fills the log still runs.
//! - [`Notify::Sleep`]: the thread sleeps on a futex that the engine thread bumps and wakes
//!   after every publication (only when someone sleeps): the live counterpart of (a), the
//!   interrupt.
//! - [`Notify::Batch`]: (a) with the spec's threshold and interval: the engine thread wakes
//!   the sleeping handler only when `entries` entries wait; the handler also wakes every
//!   `period_us` on its own. Fewer wake-ups (futex calls on the engine thread, context
//!   switches) for a longer delay of a lone entry.
//!
//! Every entry that finds the handler idle (the first of a batch) measures the notification
//! delay: from its publication by the engine thread to the handler taking it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use unpinned_aa::log::LogEntry;

use crate::notify::futex_wait;
use crate::state::{ActiveState, LogShared};

/// Empty polls between two `yield_now` of a polling handler.
pub const POLL_YIELD_EVERY: u32 = 256;

/// Entries taken from the log per lock acquisition.
const BATCH: usize = 64;

/// Samples of the notification delay kept per handler (the first ones).
const MAX_SAMPLES: usize = 1 << 20;

/// How a handler learns of new entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Notify {
    /// Poll the log (busy, with periodic yields).
    Poll,
    /// Sleep on a futex the engine thread wakes (the interrupt analogue).
    Sleep,
    /// Sleep; woken when `entries` entries wait, or after `period_us`.
    Batch {
        /// Fill threshold, entries (>= 1).
        entries: u32,
        /// Longest sleep, us (>= 1).
        period_us: u32,
    },
}

impl Notify {
    /// `poll` or `sleep`.
    pub fn name(self) -> &'static str {
        match self {
            Notify::Poll => "poll",
            Notify::Sleep => "sleep",
            Notify::Batch { .. } => "batch",
        }
    }
}

impl std::str::FromStr for Notify {
    type Err = String;
    fn from_str(s: &str) -> Result<Notify, String> {
        match s {
            "poll" => Ok(Notify::Poll),
            "sleep" => Ok(Notify::Sleep),
            "batch" => Ok(Notify::Batch {
                entries: 16,
                period_us: 100,
            }),
            o => Err(format!("{o:?} is not poll, sleep or batch")),
        }
    }
}

/// What a handler thread did, returned when it stops.
#[derive(Clone, Debug, Default)]
pub struct HandlerReport {
    /// Entries processed.
    pub entries: u64,
    /// Times the handler found the log empty and waited (polled or slept).
    pub idle_waits: u64,
    /// Futex sleeps (sleeping handler only).
    pub sleeps: u64,
    /// Notification delays, ns: publication by the engine thread -> taken by the idle
    /// handler (one sample per batch, i.e. per wake-up).
    pub notify_ns: Vec<u64>,
    /// CPU time the handler thread used, ns (`CLOCK_THREAD_CPUTIME_ID`): what polling costs.
    pub cpu_ns: u64,
    /// Wall time the handler thread ran, ns.
    pub wall_ns: u64,
    /// Entries whose handler call panicked (the entry counts as processed; the thread goes
    /// on, so flushes do not wait forever for a broken handler).
    pub panics: u64,
}

impl HandlerReport {
    /// The `q` quantile (0..=1) of the notification delays, ns (`None` without samples).
    pub fn notify_quantile_ns(&self, q: f64) -> Option<u64> {
        if self.notify_ns.is_empty() {
            return None;
        }
        let mut v = self.notify_ns.clone();
        v.sort_unstable();
        let i = ((v.len() - 1) as f64 * q.clamp(0.0, 1.0)).round() as usize;
        Some(v[i])
    }
}

/// A running handler thread. [`Handler::stop`] processes what is published, then joins.
pub struct Handler {
    stop: Arc<AtomicBool>,
    log: Arc<LogShared>,
    thread: Option<JoinHandle<HandlerReport>>,
}

impl Handler {
    pub(crate) fn spawn(
        state: Arc<ActiveState>,
        log: Arc<LogShared>,
        name: String,
        notify: Notify,
        f: Box<dyn FnMut(&LogEntry) + Send>,
    ) -> std::io::Result<Handler> {
        let stop = Arc::new(AtomicBool::new(false));
        let threshold = match notify {
            Notify::Batch { entries, .. } => entries.max(1) as u64,
            _ => 1,
        };
        log.wake_threshold.store(threshold, Ordering::Relaxed);
        let (s, l) = (stop.clone(), log.clone());
        let thread = std::thread::Builder::new()
            .name(name)
            .spawn(move || run(state, l, s, notify, f))?;
        Ok(Handler {
            stop,
            log,
            thread: Some(thread),
        })
    }

    /// Entries processed so far.
    pub fn processed(&self) -> u64 {
        self.log.processed.load(Ordering::SeqCst)
    }

    /// Process every entry published so far, stop the thread and report. A handler that
    /// panicked reports nothing (`None`).
    pub fn stop(mut self) -> Option<HandlerReport> {
        self.finish()
    }

    fn finish(&mut self) -> Option<HandlerReport> {
        self.stop.store(true, Ordering::SeqCst);
        self.log.word.fetch_add(1, Ordering::SeqCst);
        crate::notify::futex_wake(&self.log.word);
        let r = self.thread.take()?.join().ok();
        self.log.wake_threshold.store(1, Ordering::Relaxed);
        self.log.attached.store(false, Ordering::SeqCst);
        r
    }
}

impl Drop for Handler {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

fn run(
    state: Arc<ActiveState>,
    log: Arc<LogShared>,
    stop: Arc<AtomicBool>,
    notify: Notify,
    mut f: Box<dyn FnMut(&LogEntry) + Send>,
) -> HandlerReport {
    let mut rep = HandlerReport::default();
    let started = std::time::Instant::now();
    let mut batch = Vec::with_capacity(BATCH);
    let mut empty_polls = 0u32;
    loop {
        if log.published.load(Ordering::Acquire) > log.processed.load(Ordering::Relaxed) {
            log.take(BATCH, &mut batch);
            if let Some((_, at)) = batch.first() {
                if rep.notify_ns.len() < MAX_SAMPLES {
                    rep.notify_ns.push(state.now_ns().saturating_sub(*at));
                }
            }
            for (e, _) in batch.drain(..) {
                call(&mut f, &e, &mut rep);
                count_reply(&state, &e);
                // Release: the handler's effects happen before a flush sees them processed.
                log.processed.fetch_add(1, Ordering::SeqCst);
            }
            // Keep going without waiting while entries keep coming.
            while log.published.load(Ordering::Acquire) > log.processed.load(Ordering::Relaxed) {
                log.take(BATCH, &mut batch);
                for (e, _) in batch.drain(..) {
                    call(&mut f, &e, &mut rep);
                    count_reply(&state, &e);
                    log.processed.fetch_add(1, Ordering::SeqCst);
                }
            }
            empty_polls = 0;
            continue;
        }
        if stop.load(Ordering::SeqCst) {
            if log.published.load(Ordering::SeqCst) > log.processed.load(Ordering::SeqCst) {
                continue;
            }
            break;
        }
        rep.idle_waits += 1;
        match notify {
            Notify::Poll => {
                empty_polls += 1;
                if empty_polls.is_multiple_of(POLL_YIELD_EVERY) {
                    std::thread::yield_now();
                } else {
                    std::hint::spin_loop();
                }
            }
            Notify::Sleep | Notify::Batch { .. } => {
                let timeout = match notify {
                    Notify::Batch { period_us, .. } => {
                        Duration::from_micros(period_us.max(1) as u64)
                    }
                    _ => Duration::from_millis(50),
                };
                log.sleepers.fetch_add(1, Ordering::SeqCst);
                let w = log.word.load(Ordering::SeqCst);
                if log.published.load(Ordering::SeqCst) == log.processed.load(Ordering::SeqCst)
                    && !stop.load(Ordering::SeqCst)
                {
                    rep.sleeps += 1;
                    futex_wait(&log.word, w, timeout);
                }
                log.sleepers.fetch_sub(1, Ordering::SeqCst);
            }
        }
    }
    rep.wall_ns = started.elapsed().as_nanos() as u64;
    rep.cpu_ns = thread_cpu_ns();
    rep
}

/// Run the handler on one entry; a panic is counted, not propagated.
fn call(f: &mut Box<dyn FnMut(&LogEntry) + Send>, e: &LogEntry, rep: &mut HandlerReport) {
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(e))).is_err() {
        rep.panics += 1;
    }
    rep.entries += 1;
}

/// Count a processed active put for the reply-based flush ([`crate::reply`]).
fn count_reply(state: &ActiveState, e: &LogEntry) {
    if e.header.kind == unpinned_aa::log::EntryKind::ActivePut {
        state.replies.processed(e.header.source);
    }
}

/// CPU time of the calling thread, ns.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into our local variable.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if r != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
