//! The engine of a rank: the unchanged sans-IO [`PartEngine`] with its memory, transport and
//! page-in thread, driven by whichever thread holds it (caller-driven progress).
//!
//! A [`Core`] sits behind a mutex. Each [`Core::turn`], in order:
//!
//! 1. outputs of the [fault handler](crate::fault_handler) thread: `post_err` for resolved
//!    destination faults, `handle_source_resolved` for source faults, bad ranges into memory;
//! 2. up to [`LoopOptions::batch`] packets from the transport into `handle_packet`;
//! 3. `handle_timeout` if the engine's deadline has passed;
//! 4. `poll_event`: completions to the completion queue, fault records to inline page-in
//!    (whose ERR then leaves with the NACK in step 5) or to the page-in thread;
//! 5. up to `batch` packets from `poll_transmit` into the transport (a packet the transport
//!    cannot take yet stays pending; one towards a destination that stays full longer than
//!    [`LoopOptions::drop_after`] is dropped, as a lossy link would: the engine recovers);
//! 6. `poll_event` again, for what transmitting produced (source faults, failed transfers).
//!
//! This is the same routing as the simulator's `World::service` (crates/sim/src/world.rs),
//! with real threads, memory and packets instead of modelled ones. The pagemap windows of
//! [`LiveMemory`](crate::memory::LiveMemory) are valid for the turn that read them and the turns beginning within
//! [`LoopOptions::residency_ttl`].
//!
//! # Who drives (progress engine, as in MPI / UCX)
//!
//! - The thread that posts runs `post` and one turn inline (the first packets leave at once,
//!   no hand-off to another thread): [`Core::turn_at`] transmits before it receives, so that
//!   packets waiting in the rings (and the acknowledgements they queue) do not delay the new
//!   request's first packets.
//! - A thread in [`crate::Runtime::wait`] / `flush` drives turns itself while it spins
//!   ([`LoopOptions::wait_spin`], then [`LoopOptions::wait_yield`] yielding between turns),
//!   and only then sleeps on the completion queue.
//! - The progress thread ([`progress`]) is the asynchronous fallback: it answers peers when no
//!   caller is inside the runtime (a target rank whose application computes), finishes
//!   transfers that nobody waits for, and serves the page-in thread's outputs. While a caller
//!   drives, it stays out of the way (sleeps [`LoopOptions::driven_sleep`] without ringing
//!   peers' doorbells), so the two do not compete for the two cores of a small machine.
//!
//! Everyone takes the core with `try_lock` while polling, so a turn is never waited for by a
//! spinning thread; posts and configuration calls (`expose`, `revoke`, `stats`) take it with a
//! blocking lock (a turn is bounded by `batch` packets).
//!
//! Time: `std::time::Instant` (monotonic) mapped to the engine's nanosecond [`Instant`] since
//! the runtime started.
//!
//! Idle policy of the progress thread: loop without pause while there is work; busy-poll for
//! [`LoopOptions::spin`] after work *its own* turns found (default 0; never after a caller's
//! driving, so the posting rank's progress thread does not become a third spinner next to the
//! caller and the target's thread), then yield for [`LoopOptions::yield_for`]
//! (default 1 ms), then sleep in the transport's [`Sleeper`] (a futex on the shm doorbell,
//! `ppoll` on the UDP socket, a condition variable in memory) until a packet, a local
//! wake-up (handler output) or the engine's next deadline. Spinning is off by default because
//! on a machine with more busy threads than cores a spinning thread holds a core the thread it
//! waits for needs; yielding keeps every thread runnable without hogging a core. Spinning wins
//! only with a core per thread; then set `progress.spin_us` / `progress.wait_spin_us` and pin
//! the threads apart ([`LoopOptions::progress_cpu`], [`unpinned_os::affinity`]).
//!
//! An idle turn (nothing received, nothing to send) is what every polling thread repeats, so
//! it reads neither the clock (a measurable share of a spinning thread's cycles) nor the
//! ring's consumer index (a line the peer writes): the clock is read once by a turn that has
//! work, and an idle turn checks the engine's deadline every [`DEADLINE_CHECK_TURNS`]th time.
//! A progress thread that finds the engine held by a posting caller yields instead of going
//! through the transport's sleeper, which would return at once (the rings have data) and turn
//! into a sleep / wake pair per poll for the length of the post.
//!
//! Measurements of these choices: docs/performance.md, "Live runtime: the engine loop".
//!
//! # The small-write path
//!
//! - A post's inline turn reuses the clock read of the post, and every turn with work reads
//!   the clock once for both the engine and the residency verdicts' expiry
//!   ([`crate::memory::LiveMemory::begin_turn_at`]; two reads before).
//! - A post wakes the progress thread only when the transfer still has packets to send or a
//!   deadline sooner than the thread's longest sleep (`Core::needs_wake_after_post`);
//!   otherwise the peer's answer wakes a sleeping progress thread anyway. The wake-up was an
//!   atomic add and a fence on the shm line that also holds this rank's `sleeping` word,
//!   which the peer reads at every packet it sends here.
//! - Adaptive spinning ([`SPIN_BACKOFF`], [`SPIN_YIELD_POLLS`]): an unpinned spinner (the
//!   waiting caller within [`LoopOptions::wait_spin`], the progress thread within
//!   [`LoopOptions::spin`]) stops spinning for its next 64 waits / work episodes after a spin
//!   that ran out, or that had to yield the core (once per 64 polls) before its answer came.
//!   Pinned threads ([`unpinned_os::affinity::pin_current_thread`] to one CPU, or
//!   [`LoopOptions::progress_cpu`]) spin as before: a spinner that shares its core with the
//!   thread it waits for only delays it, and the back-off bounds that cost.
//!   The defaults stay without spin: when the threads share a core, a yield-polling pair is
//!   the fastest schedule; spinning helps only when a core is free for each thread, which the
//!   dedicated-core configuration makes sure of.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, TryLockError};
use std::time::{Duration as StdDuration, Instant as StdInstant};

use rustc_hash::FxHashMap;
use unpinned_core::api::{
    Completion, CompletionError, FaultRecord, FaultSide, NodeId, Op, Perms, RemoteKey, WorkRequest,
    WrId,
};
use unpinned_core::memory::PAGE_BYTES;
use unpinned_core::time::Instant;
use unpinned_part::{EngineStats, Event, PartEngine};

use crate::fault_handler::{BlockReply, HandlerOutput, PageInConfig};
use crate::layer::{EngineMemory, NoHook, TurnHook};
use crate::memory::{LiveMemory, MemStats};
use crate::transport::{InPlace, SendError, Sleeper, Transport};

/// An idle turn (nothing received, nothing to send) checks the engine's deadline only every
/// this many turns, saving the clock read; any turn with work checks it.
pub const DEADLINE_CHECK_TURNS: u32 = 16;

/// Maps the monotonic clock onto the engine's time.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    origin: StdInstant,
}

impl Clock {
    /// A clock whose origin is now.
    pub fn new() -> Clock {
        Clock {
            origin: StdInstant::now(),
        }
    }
    /// Nanoseconds since the origin.
    pub fn now(&self) -> Instant {
        self.at(StdInstant::now())
    }
    /// `t` in nanoseconds since the origin (0 before it).
    pub fn at(&self, t: StdInstant) -> Instant {
        Instant(t.saturating_duration_since(self.origin).as_nanos() as u64)
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new()
    }
}

/// Tuning of the engine loop.
#[derive(Clone, Copy, Debug)]
pub struct LoopOptions {
    /// Packets received, and packets sent, per turn at most.
    pub batch: usize,
    /// Busy-poll this long after the progress thread's own last work before yielding (0: yield
    /// at once; see the module doc for the measurements behind the default).
    pub spin: StdDuration,
    /// Then yield this long before sleeping.
    pub yield_for: StdDuration,
    /// Longest sleep in `Transport::wait`.
    pub max_sleep: StdDuration,
    /// Drop packets towards a destination whose transport stayed full this long.
    pub drop_after: StdDuration,
    /// After shutdown was asked, keep answering peers until idle this long.
    pub linger: StdDuration,
    /// A waiting caller drives the engine in a busy loop this long (`progress.wait_spin_us`).
    /// Default 0: when the caller and the peer's engine share one core, each microsecond of
    /// spinning delays the peer by as much; polling with `sched_yield` costs little when the
    /// core is free and hands it over when not.
    pub wait_spin: StdDuration,
    /// Then drives it yielding the core between turns this long, before sleeping on the
    /// completion queue (`progress.wait_yield_us`).
    pub wait_yield: StdDuration,
    /// While a caller drives, the progress thread checks back this often.
    pub driven_sleep: StdDuration,
    /// How long a residency verdict (pagemap window) stays trusted across turns
    /// ([`crate::memory::RESIDENCY_TTL`]; zero: one turn only).
    pub residency_ttl: StdDuration,
    /// Destination faults whose page-in (per the handler's policy) covers at most this many
    /// pages of *private anonymous* exposed memory are paged in by the engine itself, inline,
    /// and the ERR is queued in the same turn (0: always hand them to the page-in thread).
    /// Such a page-in is a zero-fill minor fault, a few microseconds per page, cheaper
    /// than waking the page-in thread; a file-backed page could be a disk read and always goes
    /// to the thread, so other transfers never wait for I/O. Anonymity is read from
    /// `/proc/self/maps` at `expose`: memory remapped as a file afterwards would be paged in
    /// inline (correct, only blocking).
    pub inline_page_in_max_pages: u64,
    /// Remote writes whose whole transfer is at most this many pages, into private anonymous
    /// exposed memory, page their missing pages in on access, before the write, instead of
    /// through the page-fault NACK and ERR ([`crate::memory::LiveMemory::set_fill`]): one round
    /// trip less for the small faults that [`LoopOptions::inline_page_in_max_pages`] pages in
    /// inline anyway (`progress.fill_on_access_max_pages`; default 0: off, every fault NACKed as
    /// in the spec; `bench live` measures both).
    pub fill_on_access_max_pages: u64,
    /// Pin the progress thread to this CPU (`progress.cpu`; default `None`: the
    /// scheduler places it). Part of the dedicated-core configuration: a progress thread that
    /// spins ([`LoopOptions::spin`]) helps only on a core of its own; sharing one with the
    /// caller it waits for, it keeps that caller off the core for its whole spin.
    pub progress_cpu: Option<usize>,
    /// Trust residency verdicts of watched memory until the kernel reports a change
    /// (the translation cache, [`unpinned_os::residency_cache`]; `memory.residency_cache`, default
    /// on); off: every verdict lives [`LoopOptions::residency_ttl`].
    pub residency_cache: bool,
    /// Keep the CRC32 of every packet on a reliable transport too (`transport.shm_checksum`).
    pub force_checksum: bool,
}

impl Default for LoopOptions {
    fn default() -> Self {
        LoopOptions {
            batch: 32,
            spin: StdDuration::ZERO,
            yield_for: StdDuration::from_millis(1),
            max_sleep: StdDuration::from_millis(5),
            drop_after: StdDuration::from_millis(2),
            linger: StdDuration::from_millis(20),
            wait_spin: StdDuration::ZERO,
            wait_yield: StdDuration::from_millis(2),
            driven_sleep: StdDuration::from_micros(200),
            residency_ttl: crate::memory::RESIDENCY_TTL,
            inline_page_in_max_pages: 4,
            // Off: the spec's path (page-fault NACK, page-in, ERR, retransmission) is the
            // default; page-in on access is an opt-in policy that skips the protocol.
            fill_on_access_max_pages: 0,
            progress_cpu: None,
            residency_cache: true,
            force_checksum: false,
        }
    }
}

/// Counters of a rank's runtime.
#[derive(Clone, Copy, Debug, Default)]
pub struct RuntimeStats {
    /// The engine's counters.
    pub engine: EngineStats,
    /// Residency checks and copies.
    pub memory: MemStats,
    /// Fault handler counters.
    pub handler: crate::fault_handler::PageInStats,
    /// Engine loop turns.
    pub turns: u64,
    /// Times the loop slept in the transport.
    pub sleeps: u64,
    /// Packets dropped because the destination stayed full or was unreachable.
    pub tx_dropped: u64,
    /// Packets received that the engine rejected (malformed, bad checksum).
    pub rx_rejected: u64,
}

/// State shared between the engine and the API without the core's lock.
pub(crate) struct Shared {
    pub completions: Mutex<VecDeque<Completion>>,
    pub cv: Condvar,
    pub waiters: AtomicUsize,
    /// Completions delivered so far (lets waiters spin without the lock).
    pub delivered: AtomicU64,
    /// The progress thread has exited (no more completions will come).
    pub stopped: AtomicBool,
    /// Shutdown was asked (the runtime is being dropped).
    pub shutdown: AtomicBool,
    /// Callers currently driving the engine (the progress thread then stays out of the way).
    pub drivers: AtomicUsize,
    /// Times the progress thread slept in the transport.
    pub sleeps: AtomicU64,
    /// A spinning thread not pinned to a CPU of its own yields once per this many polls
    /// ([`SPIN_YIELD_POLLS`]; 0: never).
    pub spin_yield_polls: u32,
    /// Waits left that skip [`LoopOptions::wait_spin`] (set to [`SPIN_BACKOFF`] by a spin
    /// that ran out without its completion; see [`SPIN_BACKOFF`]).
    pub wait_spin_skip: AtomicU32,
    /// What the runtime knows about failed requests beyond their [`CompletionError`] (the
    /// peer rank, the local buffer, the address that faulted), by request, until taken by
    /// `wait` / `flush` / `Runtime::failure_detail`. Only failures other than `Cancelled`
    /// put an entry here.
    pub details: Mutex<FxHashMap<WrId, String>>,
}

impl Shared {
    pub fn new(spin_yield_polls: u32) -> Shared {
        Shared {
            spin_yield_polls,
            wait_spin_skip: AtomicU32::new(0),
            completions: Mutex::new(VecDeque::new()),
            cv: Condvar::new(),
            waiters: AtomicUsize::new(0),
            delivered: AtomicU64::new(0),
            stopped: AtomicBool::new(false),
            shutdown: AtomicBool::new(false),
            drivers: AtomicUsize::new(0),
            sleeps: AtomicU64::new(0),
            details: Mutex::new(FxHashMap::default()),
        }
    }

    /// Take what is known about the failure of `wr_id` (see [`Shared::details`]).
    pub fn take_detail(&self, wr_id: WrId) -> Option<String> {
        self.details.lock().expect("failure details").remove(&wr_id)
    }

    pub fn push(&self, c: Completion) {
        {
            let mut q = self.completions.lock().expect("completion queue");
            q.push_back(c);
            // Counted under the queue's lock: a waiter checks the count under the same lock
            // before it sleeps, so it either sees this completion or is already waiting when
            // the notification below comes (no lost wake-up, no 10 ms sleep).
            self.delivered.fetch_add(1, Ordering::Release);
        }
        if self.waiters.load(Ordering::SeqCst) > 0 {
            self.cv.notify_all();
        }
    }
}

/// Everything the engine of a rank owns; whoever holds the lock drives it. `M` is the memory
/// the engine accesses and `H` the hook of the layer above, if any ([`crate::layer`]).
pub(crate) struct Core<M = LiveMemory, H = NoHook> {
    pub engine: PartEngine,
    pub mem: M,
    /// The layer's view of the turns and completions.
    hook: H,
    pub transport: Box<dyn Transport>,
    pub handler_out: Receiver<HandlerOutput>,
    /// Fault records to the page-in thread; `None` once the runtime stops (ends that thread).
    pub faults: Option<Sender<FaultRecord>>,
    pub shared: Arc<Shared>,
    pub clock: Clock,
    pub opts: LoopOptions,
    pub handler_stats: Arc<crate::fault_handler::PageInCounters>,
    handler: PageInConfig,
    /// Exposures over private anonymous memory (candidates for inline page-in).
    anon_exposures: Vec<(u64, u64, RemoteKey)>,
    /// The transport cannot corrupt bytes: packets carry no CRC and are not verified.
    reliable: bool,
    rx: Vec<u8>,
    tx: Vec<u8>,
    /// A packet `poll_transmit` produced that the transport could not take yet.
    pending: Option<(u32, usize)>,
    /// Destination of the last packet sent: the guess for writing the next one in place.
    last_dst: u32,
    full_since: Vec<Option<StdInstant>>,
    stats: RuntimeStats,
    /// This rank (for the [`crate::trace`]).
    rank: u32,
    /// Turns since the last one that did work (deadline checks of idle turns).
    idle_turns: u32,
    /// The application's requests in the engine (posted through [`Core::post`] /
    /// [`Core::post_atomic`], not yet completed): what `cancel_all` withdraws, and what names
    /// the peer and buffer of a failure. A layer's own requests are not in it.
    outstanding: FxHashMap<WrId, Posted>,
    /// Peers the transport reported gone (their requests were failed with `PeerGone`).
    gone: Vec<bool>,
    /// When peers' liveness was last asked of the transport (at most every
    /// [`GONE_CHECK_INTERVAL`], on turns whose deadlines fired).
    gone_checked: Option<StdInstant>,
}

/// An application request in the engine.
#[derive(Clone, Copy, Debug)]
struct Posted {
    peer: NodeId,
    op: Op,
    local: u64,
    len: u64,
}

/// Peers' liveness is asked of the transport at most this often, and only when a deadline of
/// the engine fired (a silent peer; never on the fast path).
pub const GONE_CHECK_INTERVAL: StdDuration = StdDuration::from_millis(1);

impl<M: EngineMemory, H: TurnHook> Core<M, H> {
    /// Assemble a core; buffers are sized for the larger of the transport's and the engine's
    /// packets.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        engine: PartEngine,
        mem: M,
        hook: H,
        transport: Box<dyn Transport>,
        handler_out: Receiver<HandlerOutput>,
        faults: Sender<FaultRecord>,
        shared: Arc<Shared>,
        clock: Clock,
        opts: LoopOptions,
        handler_stats: Arc<crate::fault_handler::PageInCounters>,
        handler: PageInConfig,
    ) -> Core<M, H> {
        let bufsz = transport
            .max_packet()
            .max(engine.config().packet_bytes as usize + unpinned_wire::part::DATA_HEADER_LEN);
        let n = transport.size() as usize;
        let rank = transport.rank();
        // `transport.shm_checksum` keeps the CRC on a reliable transport too: a diagnostic for
        // suspected corruption in shared memory.
        let reliable = transport.reliable() && !opts.force_checksum;
        let mut engine = engine;
        if reliable {
            engine.set_checksum(unpinned_wire::Checksum::None);
        }
        let mut mem = mem;
        mem.as_mut().set_ttl(opts.residency_ttl);
        if !opts.residency_cache {
            mem.as_mut().set_cache(false);
        }
        Core {
            engine,
            mem,
            hook,
            transport,
            handler_out,
            faults: Some(faults),
            shared,
            clock,
            opts,
            handler_stats,
            handler,
            anon_exposures: Vec::new(),
            reliable,
            rx: vec![0u8; bufsz],
            tx: vec![0u8; bufsz],
            pending: None,
            last_dst: 0,
            full_since: vec![None; n],
            stats: RuntimeStats::default(),
            rank,
            idle_turns: 0,
            outstanding: FxHashMap::default(),
            gone: vec![false; n],
            gone_checked: None,
        }
    }

    /// Post a work request; one the engine refuses completes at once with `Invalid`. Returns
    /// the time read for it (the posting turn reuses it: [`Core::turn_at`]).
    pub fn post(&mut self, wr: WorkRequest) -> StdInstant {
        let t = StdInstant::now();
        let now = self.clock.at(t);
        // A candidate for the translation cache if large (unpinned_os::residency_cache).
        self.mem.as_mut().watch_local(wr.local_addr, wr.len);
        self.outstanding.insert(
            wr.wr_id,
            Posted {
                peer: wr.peer,
                op: wr.op,
                local: wr.local_addr,
                len: wr.len,
            },
        );
        if self.engine.post(now, wr).is_err() {
            self.outstanding.remove(&wr.wr_id);
            self.shared.push(Completion {
                wr_id: wr.wr_id,
                op: wr.op,
                status: Err(CompletionError::Invalid),
                len: 0,
                at: now,
            });
        }
        t
    }

    /// Whether the progress thread must be woken after a post whose inline turn ran at `now`:
    /// when packets are left to send (a large write, a full ring), or, on a transport that may
    /// lose packets, when the engine's next deadline is sooner than the longest the progress
    /// thread sleeps (it computed its sleep before this post and would miss the new deadline,
    /// a retransmission's). Otherwise the transfer's next event is a packet from the peer,
    /// whose arrival rings the doorbell of a sleeping progress thread anyway, and the wake-up
    /// is saved on the small-write path: an atomic read-modify-write and a fence on a line the
    /// peer reads at every packet it sends here, and, when the progress thread sleeps, a futex
    /// wake that (on a CPU it shares with the poster) preempts the poster. On a reliable
    /// transport a deadline passes without a packet only when the peer is gone or stalled, or
    /// when a ring that stayed full made the transport drop packets
    /// (`progress.drop_after_us`); the progress thread then acts at most
    /// `progress.max_sleep_us` late.
    pub fn needs_wake_after_post(&mut self, now: StdInstant) -> bool {
        let now = self.clock.at(now);
        self.pending.is_some()
            || self.engine.wants_transmit()
            || (!self.reliable
                && self.engine.poll_timeout().is_some_and(|d| {
                    d.as_ns()
                        < now
                            .as_ns()
                            .saturating_add(self.opts.max_sleep.as_nanos() as u64)
                }))
    }

    /// Post a remote atomic; one the engine refuses completes at once with `Invalid`. Returns
    /// the time read for the post (for [`Core::turn_at`]).
    pub fn post_atomic(&mut self, r: unpinned_part::AtomicRequest) -> StdInstant {
        let t = StdInstant::now();
        let now = self.clock.at(t);
        self.outstanding.insert(
            r.wr_id,
            Posted {
                peer: r.peer,
                op: Op::Read,
                local: r.local_addr,
                len: 8,
            },
        );
        if self.engine.post_atomic(now, r).is_err() {
            self.outstanding.remove(&r.wr_id);
            self.shared.push(Completion {
                wr_id: r.wr_id,
                op: unpinned_core::api::Op::Read,
                status: Err(CompletionError::Invalid),
                len: 0,
                at: now,
            });
        }
        t
    }

    /// Expose a range (bad-page marks over it are forgotten: the application may have
    /// remapped it). `anonymous`: all of it is private anonymous memory.
    pub fn expose(
        &mut self,
        base: u64,
        len: u64,
        perms: Perms,
        anonymous: bool,
    ) -> Option<RemoteKey> {
        let end = base.saturating_add(len);
        self.mem.as_mut().clear_bad(base, end);
        let key = self
            .engine
            .expose(self.mem.as_mut().pdid(), base, len, perms)?;
        if anonymous {
            self.anon_exposures.push((base, end, key));
            self.update_fill();
            // A candidate for the translation cache (unpinned_os::residency_cache).
            self.mem.as_mut().watch_exposure(base, end);
        }
        Some(key)
    }

    /// Withdraw an exposure.
    pub fn revoke(&mut self, key: RemoteKey) -> bool {
        if let Some(&(b, e, _)) = self.anon_exposures.iter().find(|x| x.2 == key) {
            self.mem.as_mut().unwatch_exposure(b, e);
        }
        self.anon_exposures.retain(|e| e.2 != key);
        self.update_fill();
        self.engine.revoke(key)
    }

    /// Tell the memory where it may page in on access (anonymous exposures only).
    fn update_fill(&mut self) {
        let ranges = self
            .anon_exposures
            .iter()
            .map(|&(b, e, _)| (b, e))
            .collect();
        let max = self
            .opts
            .fill_on_access_max_pages
            .saturating_mul(PAGE_BYTES);
        self.mem
            .as_mut()
            .set_fill(ranges, if self.handler.send_err { max } else { 0 });
    }

    /// Page in a destination fault here and now if it is small and over anonymous memory
    /// (see [`LoopOptions::inline_page_in_max_pages`]); false: hand it to the page-in thread.
    fn page_in_inline(&mut self, rec: &FaultRecord) -> bool {
        if rec.side != FaultSide::Destination || !self.handler.send_err {
            return false;
        }
        let (s, e) = self.handler.policy.pages(rec);
        if (e - s) / PAGE_BYTES > self.opts.inline_page_in_max_pages
            || !self
                .anon_exposures
                .iter()
                .any(|&(b, x, _)| s >= b && e <= x.next_multiple_of(PAGE_BYTES))
        {
            return false;
        }
        crate::trace::mark(self.rank, crate::trace::Point::PageInStart, 0);
        let t = StdInstant::now();
        // A failure (a range made inaccessible since) goes to the thread, which finds the bad
        // pages and reports them.
        if unpinned_os::populate::page_in(s, e, true).is_err() {
            return false;
        }
        let st = &self.handler_stats;
        st.inline_page_ins.fetch_add(1, Ordering::Relaxed);
        st.records.fetch_add(1, Ordering::Relaxed);
        st.pages.fetch_add((e - s) / PAGE_BYTES, Ordering::Relaxed);
        st.page_in_ns
            .fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
        st.errs.fetch_add(1, Ordering::Relaxed);
        self.mem.as_mut().paged_in(s, e);
        self.engine.post_err(rec.transfer, rec.block, rec.block_seq);
        crate::trace::mark(self.rank, crate::trace::Point::PageInEnd, 0);
        true
    }

    /// Withdraw every request of the application still in the engine: each completes now
    /// with `Cancelled` (queued for the application), and the engine touches none of their
    /// buffers afterwards (the lock is held: no copy is under way). Returns how many.
    pub fn cancel_all(&mut self) -> usize {
        let now = self.clock.now();
        let outstanding = &self.outstanding;
        let n = self.engine.cancel(now, |id| outstanding.contains_key(&id));
        self.route_events();
        n
    }

    /// This rank leaves the job: tell the peers (where the transport can: shm), then
    /// [`Core::cancel_all`]. Peers then fail their requests to this rank with `PeerGone`.
    pub fn leave(&mut self) -> usize {
        self.transport.leave();
        self.cancel_all()
    }

    /// Ask the transport which peers are gone (at most every [`GONE_CHECK_INTERVAL`]) and
    /// fail every request towards a newly gone one with `PeerGone`.
    fn check_peers(&mut self, now: Instant) {
        let t = StdInstant::now();
        if self
            .gone_checked
            .is_some_and(|c| t.saturating_duration_since(c) < GONE_CHECK_INTERVAL)
        {
            return;
        }
        self.gone_checked = Some(t);
        for p in 0..self.gone.len() as NodeId {
            if p == self.rank || self.gone[p as usize] {
                continue;
            }
            if let Some(why) = self.transport.gone(p) {
                self.gone[p as usize] = true;
                let ids: Vec<WrId> = self
                    .outstanding
                    .iter()
                    .filter(|(_, x)| x.peer == p)
                    .map(|(&id, _)| id)
                    .collect();
                {
                    let mut d = self.shared.details.lock().expect("failure details");
                    for id in ids {
                        d.insert(id, format!("rank {p} {why}"));
                    }
                }
                self.engine.fail_peer(now, p, CompletionError::PeerGone);
            }
        }
    }

    /// A failed completion of the application's request `posted`: name what is known (the
    /// peer, the buffer, the address that faulted), and report a peer the transport knows to
    /// be gone as `PeerGone` instead of the silence or refusal its leaving caused.
    fn explain_failure(&mut self, c: &mut Completion, posted: Option<Posted>) {
        let Err(err) = c.status else { return };
        if err == CompletionError::Cancelled {
            return;
        }
        let Some(p) = posted else { return };
        let gone = match err {
            CompletionError::RetryExceeded | CompletionError::RemoteAccess => {
                self.transport.gone(p.peer)
            }
            _ => None,
        };
        if gone.is_some() {
            c.status = Err(CompletionError::PeerGone);
        }
        let mut d = self.shared.details.lock().expect("failure details");
        if d.contains_key(&c.wr_id) {
            return; // `check_peers` named it already
        }
        let what = match p.op {
            Op::Write => "source",
            Op::Read => "destination",
        };
        let detail = match (gone, err) {
            (Some(why), _) => format!("rank {} {why}", p.peer),
            (None, CompletionError::RetryExceeded) => format!("rank {} did not answer", p.peer),
            (None, CompletionError::LocalAccess) => {
                match self.mem.as_mut().take_fault(p.local, p.len) {
                    Some(a) => format!(
                        "{what} buffer [{:#x}, +{}) is not mapped at {a:#x}",
                        p.local, p.len
                    ),
                    None => format!("{what} buffer [{:#x}, +{}) is not mapped", p.local, p.len),
                }
            }
            _ => format!("at rank {}", p.peer),
        };
        d.insert(c.wr_id, detail);
    }

    /// Counters so far.
    pub fn stats(&self) -> RuntimeStats {
        let mut s = self.stats;
        s.engine = self.engine.stats();
        s.memory = self.mem.as_ref().stats();
        s.handler = self.handler_stats.snapshot();
        s.sleeps = self.shared.sleeps.load(Ordering::Relaxed);
        s
    }

    /// Whether the engine or the transmit path still holds work.
    pub fn busy(&self) -> bool {
        self.engine.is_busy() || self.pending.is_some()
    }

    /// One turn of the engine (see the module doc). Returns whether anything happened.
    pub fn turn(&mut self) -> bool {
        self.turn_inner(None)
    }

    /// [`Core::turn`] right after a post that read the clock at `now` (one clock read saved on
    /// the posting path), transmitting first: the new request's first packets leave before
    /// the turn handles what has arrived meanwhile (a peer's packet and the acknowledgement
    /// it queues would otherwise go first, ~0.3-0.4 us of engine work on the latency of every
    /// small write, a barrier's flag among them). What arrived is handled right after, in the
    /// same turn.
    pub fn turn_at(&mut self, now: StdInstant) -> bool {
        self.mem.as_mut().begin_turn_at(now);
        let mut at = Some(self.clock.at(now));
        let sent = self.transmit(&mut at);
        self.turn_inner(at) | sent
    }

    fn turn_inner(&mut self, at: Option<Instant>) -> bool {
        self.stats.turns += 1;
        // The layer's own requests that are due (Active Access: replies of the reply flush).
        {
            let clock = self.clock;
            self.hook.before_turn(&mut self.engine, &mut || clock.now());
        }
        let mut work = false;
        // The clock, and the expiry of residency verdicts, only for a turn that has something
        // to handle: a clock read costs about as much as the rest of an idle turn, and idle
        // turns are what a waiting thread polls with: each one saved is detection latency
        // saved on both hops of a write (see the module doc).
        let mut now: Option<Instant> = at;

        // 1. Fault handler outputs.
        while let Ok(out) = self.handler_out.try_recv() {
            let now = self.now_for_work(&mut now);
            if !work {
                // Pages were brought in: cached "missing" verdicts are stale.
                self.mem.as_mut().forget();
            }
            work = true;
            match out {
                HandlerOutput::Reply(BlockReply::SendErr {
                    transfer,
                    block,
                    block_seq,
                }) => self.engine.post_err(transfer, block, block_seq),
                HandlerOutput::Reply(BlockReply::ResumeSource {
                    transfer,
                    block,
                    block_seq,
                }) => self
                    .engine
                    .handle_source_resolved(now, transfer, block, block_seq),
                HandlerOutput::Bad { start, end } => self.mem.as_mut().mark_bad(start, end),
            }
        }

        // 2. Receive, in place where the transport allows (the shm ring slot).
        {
            let Core {
                engine,
                mem,
                transport,
                rx,
                stats,
                reliable,
                rank,
                clock,
                ..
            } = self;
            for _ in 0..self.opts.batch {
                let got = transport.recv_with(rx, &mut |src, bytes| {
                    crate::trace::mark(*rank, crate::trace::Point::RxStart, bytes.len() as u32);
                    let now = *now.get_or_insert_with(|| {
                        let t = StdInstant::now();
                        mem.as_mut().begin_turn_at(t);
                        clock.at(t)
                    });
                    // Every other check (lengths, fields, geometry, protection) applies either way.
                    let r = if *reliable {
                        engine.handle_packet_intact(now, src, bytes, mem)
                    } else {
                        engine.handle_packet(now, src, bytes, mem)
                    };
                    if r.is_err() {
                        stats.rx_rejected += 1;
                    }
                    crate::trace::mark(*rank, crate::trace::Point::RxEnd, 0);
                });
                if !got {
                    break;
                }
                work = true;
            }
        }

        // 3. Deadlines: checked on every turn that handled something, and on every
        // [`DEADLINE_CHECK_TURNS`]th idle one (a few hundred ns of polling; the engine's
        // deadlines are block timeouts of milliseconds).
        if let Some(deadline) = self.engine.poll_timeout() {
            self.idle_turns = self.idle_turns.wrapping_add(1);
            if now.is_some()
                || self.engine.wants_transmit()
                || self.idle_turns % DEADLINE_CHECK_TURNS == 0
            {
                let t = self.now_for_work(&mut now);
                if deadline <= t {
                    work = true;
                    self.engine.handle_timeout(t);
                    // A peer is silent (or packets were lost): is it still there?
                    self.check_peers(t);
                }
            }
        }

        // 4. Events of what arrived, before transmitting: a destination fault paged in inline
        // queues its ERR now, so it leaves with its NACK in this turn instead of the next one
        // (and completions are delivered a transmit batch earlier).
        work |= self.route_events();

        // 5. Transmit.
        work |= self.transmit(&mut now);

        // 6. Events (again: transmitting can fail transfers or meet source faults).
        work |= self.route_events();
        if work {
            self.idle_turns = 0;
        }
        work
    }

    /// Step 5 of a turn: up to `batch` packets from `poll_transmit` into the transport.
    /// Returns whether it sent (or dropped) any.
    fn transmit(&mut self, now: &mut Option<Instant>) -> bool {
        // Written in place into the transport where it allows (the shm ring slot
        // towards the last destination), else through `tx`. Only if there is something to send:
        // asking the ring for a slot reads its consumer's index, a cache line the peer writes.
        let wants = self.pending.is_some() || self.engine.wants_transmit();
        let now = if wants {
            self.now_for_work(now)
        } else {
            Instant(0)
        };
        let mut work = false;
        for _ in 0..if wants { self.opts.batch } else { 0 } {
            let (dst, len) = match self.pending.take() {
                Some(p) => p,
                None => {
                    let Core {
                        engine,
                        mem,
                        transport,
                        tx,
                        ..
                    } = self;
                    let mut filled = 0;
                    let mut fill = |buf: &mut [u8]| {
                        let t = engine.poll_transmit(now, buf, mem)?;
                        filled = t.len;
                        Some((t.dst, t.len))
                    };
                    match transport.send_in_place(self.last_dst, tx, &mut fill) {
                        InPlace::Sent(dst) => {
                            crate::trace::mark(
                                self.rank,
                                crate::trace::Point::TxSent,
                                filled as u32,
                            );
                            work = true;
                            if let Some(f) = self.full_since.get_mut(dst as usize) {
                                *f = None;
                            }
                            continue;
                        }
                        InPlace::Empty => break,
                        InPlace::Misdirected(dst, len) => {
                            self.last_dst = dst;
                            (dst, len)
                        }
                        InPlace::Unavailable => match fill(tx) {
                            Some(t) => {
                                self.last_dst = t.0;
                                t
                            }
                            None => break,
                        },
                    }
                }
            };
            work = true;
            match self.transport.send(dst, &self.tx[..len]) {
                Ok(()) => {
                    crate::trace::mark(self.rank, crate::trace::Point::TxSent, len as u32);
                    if let Some(f) = self.full_since.get_mut(dst as usize) {
                        *f = None;
                    }
                }
                Err(SendError::Full) => {
                    let t0 = *self.full_since[dst as usize].get_or_insert_with(StdInstant::now);
                    if t0.elapsed() >= self.opts.drop_after {
                        self.stats.tx_dropped += 1;
                    } else {
                        self.pending = Some((dst, len));
                        break;
                    }
                }
                Err(SendError::Unreachable) => self.stats.tx_dropped += 1,
            }
        }
        work
    }

    /// The turn's time, read once, when the turn first needs it; residency verdicts older
    /// than their bound expire then, before any memory access of the turn.
    fn now_for_work(&mut self, now: &mut Option<Instant>) -> Instant {
        *now.get_or_insert_with(|| {
            let t = StdInstant::now();
            self.mem.as_mut().begin_turn_at(t);
            self.clock.at(t)
        })
    }

    /// Completions to the completion queue, fault records to inline page-in or the page-in
    /// thread. Returns whether there were any.
    fn route_events(&mut self) -> bool {
        let mut work = false;
        while let Some(ev) = self.engine.poll_event() {
            work = true;
            match ev {
                // The layer's own requests (e.g. reply writes) stay out of the application's queue.
                Event::Completion(c) if self.hook.completed(&c) => {}
                Event::Completion(mut c) => {
                    crate::trace::mark(self.rank, crate::trace::Point::Completion, c.len as u32);
                    let posted = self.outstanding.remove(&c.wr_id);
                    if c.status.is_err() {
                        self.explain_failure(&mut c, posted);
                    }
                    self.shared.push(c)
                }
                Event::Fault(rec) => {
                    crate::trace::mark(self.rank, crate::trace::Point::Fault, 0);
                    if self.page_in_inline(&rec) {
                        continue;
                    }
                    if let Some(f) = &self.faults {
                        let _ = f.send(rec);
                    }
                }
            }
        }
        work
    }
}

/// The engine loop as the API ([`crate::Runtime`]) calls it, whatever the layer's memory and
/// hook types: one virtual call per operation or turn; the per-packet path inside a turn is
/// compiled for the layer's types.
pub(crate) trait Driver: Send {
    /// [`Core::post`].
    fn post(&mut self, wr: WorkRequest) -> StdInstant;
    /// [`Core::needs_wake_after_post`].
    fn needs_wake_after_post(&mut self, now: StdInstant) -> bool;
    /// [`Core::post_atomic`].
    fn post_atomic(&mut self, r: unpinned_part::AtomicRequest) -> StdInstant;
    /// [`Core::expose`].
    fn expose(&mut self, base: u64, len: u64, perms: Perms, anonymous: bool) -> Option<RemoteKey>;
    /// [`Core::revoke`].
    fn revoke(&mut self, key: RemoteKey) -> bool;
    /// [`Core::stats`].
    fn stats(&self) -> RuntimeStats;
    /// [`Core::turn`].
    fn turn(&mut self) -> bool;
    /// [`Core::turn_at`].
    fn turn_at(&mut self, now: StdInstant) -> bool;
    /// [`Core::cancel_all`].
    fn cancel_all(&mut self) -> usize;
    /// [`Core::leave`].
    fn leave(&mut self) -> usize;
}

impl<M: EngineMemory, H: TurnHook> Driver for Core<M, H> {
    fn post(&mut self, wr: WorkRequest) -> StdInstant {
        Core::post(self, wr)
    }
    fn needs_wake_after_post(&mut self, now: StdInstant) -> bool {
        Core::needs_wake_after_post(self, now)
    }
    fn post_atomic(&mut self, r: unpinned_part::AtomicRequest) -> StdInstant {
        Core::post_atomic(self, r)
    }
    fn expose(&mut self, base: u64, len: u64, perms: Perms, anonymous: bool) -> Option<RemoteKey> {
        Core::expose(self, base, len, perms, anonymous)
    }
    fn revoke(&mut self, key: RemoteKey) -> bool {
        Core::revoke(self, key)
    }
    fn stats(&self) -> RuntimeStats {
        Core::stats(self)
    }
    fn turn(&mut self) -> bool {
        Core::turn(self)
    }
    fn turn_at(&mut self, now: StdInstant) -> bool {
        Core::turn_at(self, now)
    }
    fn cancel_all(&mut self) -> usize {
        Core::cancel_all(self)
    }
    fn leave(&mut self) -> usize {
        Core::leave(self)
    }
}

/// A thread that busy-polls (a waiting caller within [`LoopOptions::wait_spin`], the progress
/// thread within [`LoopOptions::spin`]) and is not pinned to a single CPU yields the core once
/// per this many polls (the default of `progress.spin_yield_polls`; 0: never). Pure spinning
/// is bimodal: fast when the two spinners run on different cores, a whole time slice when they
/// share one (the one waited for runs only when the spinner's slice ends). A `sched_yield`
/// every few microseconds hands a shared core over within that time and costs about a
/// system call when the core is free (measurements: docs/performance.md, "Live runtime: the
/// engine loop").
pub const SPIN_YIELD_POLLS: u32 = 64;

/// A spin that ran out without what it waited for (a completion for a waiting caller, a packet
/// or other work for the progress thread), or that had to yield the core
/// ([`SPIN_YIELD_POLLS`]) before it came, turns spinning off for this many next waits or work
/// episodes of that thread (adaptive spinning). When the thread waited for shares the spinner's
/// core, it runs only after the spin: each spin then costs its whole length; when they run on
/// different cores the spin ends early,
/// with the packet. Backing off after a failed spin bounds the first case to one spin per this
/// many writes, while a free core keeps the second. A spin whose answer came only after a
/// periodic yield counts as failed too: that answer most likely ran on the core the yield gave
/// away.
pub const SPIN_BACKOFF: u32 = 64;

/// Busy-poll once: a `spin_loop` hint, or a `sched_yield` every `yield_every`th poll
/// (`yield_every` 0: never). Returns whether it yielded.
#[inline]
pub(crate) fn spin_once(polls: u32, yield_every: u32) -> bool {
    if yield_every != 0 && polls % yield_every == yield_every - 1 {
        std::thread::yield_now();
        true
    } else {
        std::hint::spin_loop();
        false
    }
}

/// While spinning, the progress thread reads the clock (is the spin over?) once per this many
/// polls (~2-6 us of polling): only when [`LoopOptions::spin`] is non-zero.
pub const SPIN_CHECK_POLLS: u32 = 32;

/// The progress thread's body: drive `core` whenever no caller does, until shutdown is asked
/// and the engine has been idle for `linger` (or 5 s passed since the shutdown request).
pub(crate) fn progress<M: EngineMemory, H: TurnHook>(
    core: Arc<Mutex<Core<M, H>>>,
    shared: Arc<Shared>,
    mut sleeper: Sleeper,
) {
    let (opts, clock, rank) = match core.lock() {
        Ok(c) => (c.opts, c.clock, c.rank),
        Err(_) => return finish(&core, &shared),
    };
    if let Some(cpu) = opts.progress_cpu {
        // Validated by `Runtime::new`; a failure here (the CPU went offline since) leaves the
        // thread where the scheduler puts it, which is correct, only slower.
        let _ = unpinned_os::affinity::pin_current_thread(&[cpu]);
    }
    let mut idle_since: Option<StdInstant> = None;
    // When this thread's own turn last found work: it spins only after that (a target whose
    // peer may send again), never after a caller's driving (the caller's rank just got its
    // completion; a third spinning thread on a 2-core machine starves the two that work).
    let mut last_own_work: Option<StdInstant> = None;
    let mut shutdown_at: Option<StdInstant> = None;
    // Busy polls left before the spin's end is checked again (a clock read per poll was a
    // third of an idle poll: detection latency of every packet while spinning).
    let mut spins_unchecked = 0u32;
    // Pinned to one CPU, the thread has it to itself: spin without yielding.
    let yield_every = if opts.progress_cpu.is_some() {
        0
    } else {
        shared.spin_yield_polls
    };
    let mut spin_polls = 0u32;
    // Adaptive spinning: work episodes left without a spin after one ran out (SPIN_BACKOFF),
    // and whether a spin since the last work is running.
    let mut spin_skip = 0u32;
    let mut spinning = false;
    // The current spin yielded the core at least once (SPIN_YIELD_POLLS).
    let mut spin_yielded = false;
    // Pinned, the core is this thread's own and spinning costs no one else: no back-off.
    let backs_off = opts.progress_cpu.is_none();
    loop {
        let (work, busy, deadline, pending, held) = match core.try_lock() {
            Ok(mut c) => {
                let w = c.turn();
                let d = c.engine.poll_timeout();
                (w, c.busy(), d, c.pending.is_some(), false)
            }
            // A caller is driving right now.
            Err(TryLockError::WouldBlock) => (false, true, None, false, true),
            Err(TryLockError::Poisoned(_)) => break,
        };

        if shutdown_at.is_none() && shared.shutdown.load(Ordering::SeqCst) {
            shutdown_at = Some(StdInstant::now());
        }
        if let Some(t0) = shutdown_at {
            let quiet = !busy && idle_since.is_some_and(|i| i.elapsed() >= opts.linger);
            if quiet || t0.elapsed() >= StdDuration::from_secs(5) {
                break;
            }
        }

        if work {
            idle_since = None;
            last_own_work = Some(StdInstant::now());
            if spinning && spin_yielded && backs_off {
                // This work came only after the spin gave the core away: back off.
                spin_skip = SPIN_BACKOFF;
            }
            spinning = false;
            spin_yielded = false;
            spin_polls = 0;
            if spin_skip > 0 {
                spin_skip -= 1;
                spins_unchecked = 0;
            } else if !opts.spin.is_zero() {
                spins_unchecked = SPIN_CHECK_POLLS;
                spinning = true;
            }
            continue;
        }
        if spins_unchecked > 0 && !pending {
            spins_unchecked -= 1;
            spin_polls = spin_polls.wrapping_add(1);
            spin_yielded |= spin_once(spin_polls, yield_every);
            continue;
        }
        if held && shutdown_at.is_none() && shared.drivers.load(Ordering::SeqCst) == 0 {
            // A caller holds the engine outside a wait (posting, exposing): it handles what
            // is in the rings, so the transport's sleeper would return at once (the rings
            // have data) and this loop would spin through it (a sleep / wake pair per poll
            // for the length of a post). Yield until the caller is done.
            std::thread::yield_now();
            continue;
        }
        if shared.drivers.load(Ordering::SeqCst) > 0 && shutdown_at.is_none() {
            // A caller drives the engine and handles arriving packets: keep off the core, and
            // do not announce a sleep on the doorbell (peers would pay a futex wake per packet).
            // The engine counts as active: when the caller stops driving (a long wait), this
            // thread takes over hot, spinning first, not asleep.
            crate::trace::mark(rank, crate::trace::Point::DrivenSleep, 0);
            std::thread::sleep(opts.driven_sleep);
            idle_since = None;
            continue;
        }
        let since = *idle_since.get_or_insert_with(StdInstant::now);
        let idle = since.elapsed();
        if spinning && !pending && last_own_work.is_some_and(|t| t.elapsed() < opts.spin) {
            spins_unchecked = SPIN_CHECK_POLLS;
            spin_polls = spin_polls.wrapping_add(1);
            spin_yielded |= spin_once(spin_polls, yield_every);
            continue;
        }
        if spinning {
            // The spin ran out (or a full ring interrupted it) without new work.
            spinning = false;
            if backs_off {
                spin_skip = SPIN_BACKOFF;
            }
        }
        if pending || idle < opts.spin + opts.yield_for {
            // A full ring means the peer's engine is behind: yield so that it (or another
            // thread it waits for) gets the core. Spinning here can starve the receiver
            // until `drop_after` drops packets and block timeouts have to recover them.
            std::thread::yield_now();
        } else {
            let now = clock.now();
            let mut sleep = opts.max_sleep;
            if let Some(t) = deadline {
                sleep = sleep.min(StdDuration::from_nanos(
                    t.as_ns().saturating_sub(now.as_ns()),
                ));
            }
            if shutdown_at.is_some() {
                sleep = sleep.min(opts.linger);
            }
            if !sleep.is_zero() {
                shared.sleeps.fetch_add(1, Ordering::Relaxed);
                crate::trace::mark(rank, crate::trace::Point::Sleep, sleep.as_micros() as u32);
                sleeper(sleep);
                crate::trace::mark(rank, crate::trace::Point::Woken, 0);
            }
        }
    }
    finish(&core, &shared);
}

/// The progress thread ends: close the fault channel (stops the page-in thread) and tell
/// waiters that no more completions will come.
fn finish<M, H>(core: &Mutex<Core<M, H>>, shared: &Shared) {
    match core.lock() {
        Ok(mut c) => c.faults = None,
        Err(p) => p.into_inner().faults = None,
    }
    shared.stopped.store(true, Ordering::SeqCst);
    let _q = shared.completions.lock();
    shared.cv.notify_all();
}
