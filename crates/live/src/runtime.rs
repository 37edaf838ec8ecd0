//! The engine loop: one thread per rank drives the unchanged sans-IO [`PartEngine`].
//!
//! Each turn, in order:
//!
//! 1. user commands (posts, exposures) from the API threads;
//! 2. outputs of the [fault handler](crate::fault_handler) thread: `post_err` for resolved
//!    destination faults, `handle_source_resolved` for source faults, bad ranges into memory;
//! 3. up to [`LoopOptions::batch`] packets from the transport into `handle_packet`;
//! 4. `handle_timeout` if the engine's deadline has passed;
//! 5. up to `batch` packets from `poll_transmit` into the transport (a packet the transport
//!    cannot take yet stays pending; one towards a destination that stays full longer than
//!    [`LoopOptions::drop_after`] is dropped, as a lossy link would: the engine recovers);
//! 6. `poll_event`: completions to the completion queue, fault records to the handler.
//!
//! This is the same routing as the simulator's `World::service` (crates/sim/src/world.rs),
//! with real threads, memory and packets instead of modelled ones. The pagemap window of
//! [`LiveMemory`](crate::memory::LiveMemory) is valid for one turn only.
//!
//! Time: `std::time::Instant` (monotonic) mapped to the engine's nanosecond [`Instant`] since
//! the runtime started.
//!
//! Idle policy: loop without pause while there is work; after [`LoopOptions::spin`] without
//! work (default 0), yield for [`LoopOptions::yield_for`] (default 1 ms), then sleep in
//! [`Transport::wait`] (a futex on the shm doorbell, `ppoll` on the UDP socket, a condition
//! variable in memory) until a packet, a local wake-up (post, handler output) or the engine's
//! next deadline. On the 2-vCPU development VM busy-polling with `pause` was the worst choice
//! (an 8 B write took 78 us median with 20 us of spinning, 13 us with none): there are more
//! busy threads than cores (two engines and a waiting caller), and a spinning thread holds a
//! core the others need, while waking a sleeping vCPU costs tens of microseconds. Yielding
//! keeps every thread runnable without hogging a core.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration as StdDuration, Instant as StdInstant};

use unpinned_core::api::{Completion, CompletionError, FaultRecord, Perms, RemoteKey, WorkRequest};
use unpinned_core::time::Instant;
use unpinned_part::{EngineStats, Event, PartEngine};

use crate::fault_handler::HandlerOutput;
use crate::memory::MemStats;
use crate::transport::{SendError, Transport};

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
        Instant(self.origin.elapsed().as_nanos() as u64)
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
    /// Busy-poll this long without work before yielding.
    pub spin: StdDuration,
    /// Then yield this long before sleeping.
    pub yield_for: StdDuration,
    /// Longest sleep in `Transport::wait`.
    pub max_sleep: StdDuration,
    /// Drop packets towards a destination whose transport stayed full this long.
    pub drop_after: StdDuration,
    /// After shutdown was asked, keep answering peers until idle this long.
    pub linger: StdDuration,
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
    pub handler: crate::fault_handler::HandlerSnapshot,
    /// Engine loop turns.
    pub turns: u64,
    /// Times the loop slept in the transport.
    pub sleeps: u64,
    /// Packets dropped because the destination stayed full or was unreachable.
    pub tx_dropped: u64,
    /// Packets received that the engine rejected (malformed, bad checksum).
    pub rx_rejected: u64,
}

/// What the API threads ask of the engine loop.
pub(crate) enum Command {
    Post(WorkRequest),
    PostAtomic(unpinned_part::AtomicRequest),
    Expose {
        base: u64,
        len: u64,
        perms: Perms,
        reply: Sender<Option<RemoteKey>>,
    },
    Revoke {
        key: RemoteKey,
        reply: Sender<bool>,
    },
    Stats {
        reply: Sender<RuntimeStats>,
    },
    Shutdown,
}

/// State shared between the engine loop and the API.
pub(crate) struct Shared {
    pub completions: Mutex<VecDeque<Completion>>,
    pub cv: Condvar,
    pub waiters: AtomicUsize,
    /// Completions delivered so far (lets waiters spin without the lock).
    pub delivered: AtomicU64,
    /// The engine loop has exited (no more completions will come).
    pub stopped: AtomicBool,
}

impl Shared {
    pub fn new() -> Shared {
        Shared {
            completions: Mutex::new(VecDeque::new()),
            cv: Condvar::new(),
            waiters: AtomicUsize::new(0),
            delivered: AtomicU64::new(0),
            stopped: AtomicBool::new(false),
        }
    }

    fn push(&self, c: Completion) {
        self.completions
            .lock()
            .expect("completion queue")
            .push_back(c);
        self.delivered.fetch_add(1, Ordering::Release);
        if self.waiters.load(Ordering::SeqCst) > 0 {
            self.cv.notify_all();
        }
    }
}

/// Everything the engine loop owns.
pub(crate) struct EngineLoop {
    pub engine: PartEngine,
    pub mem: crate::active::memory::ActiveMemory,
    pub transport: Box<dyn Transport>,
    pub commands: Receiver<Command>,
    pub handler_out: Receiver<HandlerOutput>,
    pub faults: Option<Sender<FaultRecord>>,
    pub shared: Arc<Shared>,
    pub clock: Clock,
    pub opts: LoopOptions,
    pub handler_stats: Arc<crate::fault_handler::HandlerStats>,
}

impl EngineLoop {
    /// Run until shutdown is asked and the engine has been idle for `linger`, or the command
    /// channel closes.
    pub fn run(mut self) {
        let bufsz = self
            .transport
            .max_packet()
            .max(self.engine.config().packet_bytes as usize + unpinned_wire::part::DATA_HEADER_LEN);
        let mut rx = vec![0u8; bufsz];
        let mut tx = vec![0u8; bufsz];
        let mut pending: Option<(u32, usize)> = None;
        let n = self.transport.size() as usize;
        let mut full_since: Vec<Option<StdInstant>> = vec![None; n];
        let mut idle_since: Option<StdInstant> = None;
        let mut shutdown_at: Option<StdInstant> = None;
        let mut stats = RuntimeStats::default();
        'outer: loop {
            stats.turns += 1;
            let now = self.clock.now();
            self.mem.begin_turn();
            let mut work = false;

            // 1. Commands.
            loop {
                match self.commands.try_recv() {
                    Ok(cmd) => {
                        work = true;
                        match cmd {
                            Command::Post(wr) => {
                                if self.engine.post(now, wr).is_err() {
                                    self.shared.push(Completion {
                                        wr_id: wr.wr_id,
                                        op: wr.op,
                                        status: Err(CompletionError::Invalid),
                                        len: 0,
                                        at: now,
                                    });
                                }
                            }
                            Command::PostAtomic(r) => {
                                if self.engine.post_atomic(now, r).is_err() {
                                    self.shared.push(Completion {
                                        wr_id: r.wr_id,
                                        op: unpinned_core::api::Op::Read,
                                        status: Err(CompletionError::Invalid),
                                        len: 0,
                                        at: now,
                                    });
                                }
                            }
                            Command::Expose {
                                base,
                                len,
                                perms,
                                reply,
                            } => {
                                self.mem.clear_bad(base, base.saturating_add(len));
                                let _ = reply.send(self.engine.expose(
                                    self.mem.pdid(),
                                    base,
                                    len,
                                    perms,
                                ));
                            }
                            Command::Revoke { key, reply } => {
                                let _ = reply.send(self.engine.revoke(key));
                            }
                            Command::Stats { reply } => {
                                stats.engine = self.engine.stats();
                                stats.memory = self.mem.stats();
                                stats.handler = self.handler_stats.snapshot();
                                let _ = reply.send(stats);
                            }
                            Command::Shutdown => {
                                shutdown_at.get_or_insert(StdInstant::now());
                            }
                        }
                    }
                    Err(std::sync::mpsc::TryRecvError::Empty) => break,
                    Err(std::sync::mpsc::TryRecvError::Disconnected) => {
                        shutdown_at.get_or_insert(StdInstant::now());
                        break;
                    }
                }
            }

            // 2. Fault handler outputs.
            while let Ok(out) = self.handler_out.try_recv() {
                work = true;
                match out {
                    HandlerOutput::SendErr {
                        transfer,
                        block,
                        block_seq,
                    } => self.engine.post_err(transfer, block, block_seq),
                    HandlerOutput::ResumeSource {
                        transfer,
                        block,
                        block_seq,
                    } => self
                        .engine
                        .handle_source_resolved(now, transfer, block, block_seq),
                    HandlerOutput::Bad { start, end } => self.mem.mark_bad(start, end),
                }
            }

            // 3. Receive.
            for _ in 0..self.opts.batch {
                let Some((src, len)) = self.transport.recv(&mut rx) else {
                    break;
                };
                work = true;
                if self
                    .engine
                    .handle_packet(now, src, &rx[..len], &mut self.mem)
                    .is_err()
                {
                    stats.rx_rejected += 1;
                }
            }

            // 4. Deadlines.
            let deadline = self.engine.poll_timeout();
            if deadline.is_some_and(|t| t <= now) {
                work = true;
                self.engine.handle_timeout(now);
            }

            // 5. Transmit.
            for _ in 0..self.opts.batch {
                let (dst, len) = match pending.take() {
                    Some(p) => p,
                    None => match self.engine.poll_transmit(now, &mut tx, &mut self.mem) {
                        Some(t) => (t.dst, t.len),
                        None => break,
                    },
                };
                work = true;
                match self.transport.send(dst, &tx[..len]) {
                    Ok(()) => {
                        if let Some(f) = full_since.get_mut(dst as usize) {
                            *f = None;
                        }
                    }
                    Err(SendError::Full) => {
                        let t0 = *full_since[dst as usize].get_or_insert_with(StdInstant::now);
                        if t0.elapsed() >= self.opts.drop_after {
                            stats.tx_dropped += 1;
                        } else {
                            pending = Some((dst, len));
                            break;
                        }
                    }
                    Err(SendError::Unreachable) => stats.tx_dropped += 1,
                }
            }

            // 6. Events.
            while let Some(ev) = self.engine.poll_event() {
                work = true;
                match ev {
                    Event::Completion(c) => self.shared.push(c),
                    Event::Fault(rec) => {
                        if let Some(f) = &self.faults {
                            let _ = f.send(rec);
                        }
                    }
                }
            }

            if let Some(t0) = shutdown_at {
                let quiet = !self.engine.is_busy()
                    && pending.is_none()
                    && idle_since.is_some_and(|i| i.elapsed() >= self.opts.linger);
                if quiet || t0.elapsed() >= StdDuration::from_secs(5) {
                    break 'outer;
                }
            }

            // Idle policy.
            if work {
                idle_since = None;
                continue;
            }
            let since = *idle_since.get_or_insert_with(StdInstant::now);
            let idle = since.elapsed();
            if idle < self.opts.spin {
                std::hint::spin_loop();
            } else if pending.is_some() || idle < self.opts.spin + self.opts.yield_for {
                // A full ring means the peer's engine is behind: yield so that it (or another
                // thread it waits for) gets the core. Spinning here starved the receiver on the
                // 2-vCPU VM until `drop_after` dropped packets and block timeouts (10 ms) had to
                // recover them (live-hol: 351 drops, 12 timeouts, 25 ms for 768 KiB).
                std::thread::yield_now();
            } else {
                let now = self.clock.now();
                let mut sleep = self.opts.max_sleep;
                if let Some(t) = self.engine.poll_timeout() {
                    sleep = sleep.min(StdDuration::from_nanos(
                        t.as_ns().saturating_sub(now.as_ns()),
                    ));
                }
                if shutdown_at.is_some() {
                    sleep = sleep.min(self.opts.linger);
                }
                if !sleep.is_zero() {
                    stats.sleeps += 1;
                    self.transport.wait(sleep);
                }
            }
        }
        // Closing the fault channel stops the handler thread.
        self.faults = None;
        self.shared.stopped.store(true, Ordering::SeqCst);
        self.shared.cv.notify_all();
    }
}
