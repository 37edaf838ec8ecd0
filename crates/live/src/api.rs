//! The Rust API of the live runtime: [`Runtime`].
//!
//! ```no_run
//! use unpinned_live::{Perms, Runtime};
//! let rt = Runtime::from_env()?; // rank, size, transport from `unpinned run`
//! let mut buf = vec![0u8; 1 << 20]; // never touched, never pinned, never registered
//! // SAFETY: `buf` outlives the runtime's use of it and is not accessed while peers write.
//! let key = unsafe { rt.expose(buf.as_mut_ptr(), buf.len(), Perms::RW)? };
//! let all = rt.exchange(buf.as_ptr() as u64, buf.len() as u64, key)?;
//! if rt.rank() == 0 {
//!     let peer = &all[1];
//!     rt.write_blocking(1, b"hello", peer.addr, peer.key)?;
//! }
//! rt.barrier()?;
//! # Ok::<(), unpinned_live::LiveError>(())
//! ```
//!
//! Threads per rank: the caller's, one progress thread ([`crate::runtime`]) and one page-in
//! thread ([`crate::fault_handler`]). Progress is caller-driven: `write` / `read` run the
//! engine inline, and [`Runtime::wait`] / [`Runtime::flush`] drive it while they spin; the
//! progress thread takes over when no caller is inside the runtime. Calls are thread-safe;
//! completions go to one queue shared by all callers ([`Runtime::poll_completion`],
//! [`Runtime::wait`], [`Runtime::flush`]).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use unpinned_core::api::{Completion, NodeId, Op, Perms, RemoteKey, WorkRequest, WrId};
use unpinned_core::memory::Pdid;

use crate::bootstrap::Bootstrap;
pub use crate::config::{Config, LIVE_DEFAULTS};
pub use crate::error::{LiveError, TransportKind};
use crate::fault_handler::{self, PageInCounters};
use crate::layer::{EngineMemory, NoHook, TurnHook};
use crate::memory::{check_mapped_kind, LiveMemory, MapsError};
use crate::runtime::{Clock, Core, Driver, LoopOptions, RuntimeStats, Shared};
use crate::transport::faulty::FaultyTransport;
use crate::transport::shm::ShmTransport;
use crate::transport::udp::UdpTransport;
use crate::transport::{Transport, Waker};

fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    if std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut b))
        .is_ok()
    {
        return u64::from_ne_bytes(b);
    }
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    unpinned_core::rng::splitmix64(t ^ ((std::process::id() as u64) << 32))
}

/// An exposed range of one rank, as exchanged by [`Runtime::exchange`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    /// The rank that exposed it.
    pub rank: u32,
    /// Its virtual address there.
    pub addr: u64,
    /// Length.
    pub len: u64,
    /// Key to present.
    pub key: RemoteKey,
}

/// One rank of a live job.
pub struct Runtime {
    rank: u32,
    size: u32,
    pub(crate) pdid: Pdid,
    /// The engine loop, compiled for the layer's memory and hook (see [`crate::layer`]).
    core: Arc<Mutex<dyn Driver>>,
    pub(crate) wake: Waker,
    shared: Arc<Shared>,
    pub(crate) opts: LoopOptions,
    pub(crate) next_wr: AtomicU64,
    pub(crate) posted: AtomicU64,
    pub(crate) op_timeout: Duration,
    /// The longest write the engine sends as one packet (see [`Runtime::single_packet_bytes`]).
    single_packet_bytes: usize,
    /// Where [`Runtime::write_trace`] writes (`trace.file`).
    trace_file: Option<std::path::PathBuf>,
    bootstrap: Mutex<Option<Bootstrap>>,
    clock: Clock,
    engine_thread: Option<JoinHandle<()>>,
    handler_thread: Option<JoinHandle<()>>,
}

impl Runtime {
    /// Open the transport `kind` and start.
    pub fn connect(cfg: Config, kind: TransportKind) -> Result<Runtime, LiveError> {
        let transport = Runtime::open_transport(&cfg, kind)?;
        Runtime::new(cfg, transport)
    }

    /// [`Runtime::connect`] with a layer ([`Runtime::with_layer`]).
    pub fn connect_with_layer<M: EngineMemory, H: TurnHook>(
        cfg: Config,
        kind: TransportKind,
        layer: impl FnOnce(LiveMemory, Waker) -> (M, H),
    ) -> Result<Runtime, LiveError> {
        let transport = Runtime::open_transport(&cfg, kind)?;
        Runtime::with_layer(cfg, transport, layer)
    }

    /// Open the transport `kind` for the rank `cfg` describes.
    fn open_transport(cfg: &Config, kind: TransportKind) -> Result<Box<dyn Transport>, LiveError> {
        let transport: Box<dyn Transport> = match kind {
            TransportKind::Shm(path) => {
                let t = ShmTransport::open(&path, cfg.rank)?;
                if t.size() != cfg.size {
                    return Err(LiveError::Config(format!(
                        "segment {} has {} ranks, job has {}",
                        path.display(),
                        t.size(),
                        cfg.size
                    )));
                }
                if t.max_packet() < cfg.max_packet() {
                    return Err(LiveError::Config(format!(
                        "segment slots hold {} bytes, packets need {}",
                        t.max_packet(),
                        cfg.max_packet()
                    )));
                }
                Box::new(t)
            }
            TransportKind::Udp(peers) => Box::new(
                UdpTransport::bind(cfg.rank, peers, cfg.max_packet()).map_err(LiveError::Udp)?,
            ),
        };
        Ok(transport)
    }

    /// Start on an already open transport (tests use [`crate::transport::mem::network`]).
    pub fn new(cfg: Config, transport: Box<dyn Transport>) -> Result<Runtime, LiveError> {
        Runtime::with_layer(cfg, transport, |mem, _| (mem, NoHook))
    }

    /// Ranks `0..n` in this process, connected by [`crate::transport::mem::network`], each on
    /// `Config::new(rank, n)` as changed by `configure` (tests, in-process measurements).
    pub fn in_process(n: u32, configure: impl Fn(&mut Config)) -> Result<Vec<Runtime>, LiveError> {
        let cfgs: Vec<Config> = (0..n)
            .map(|r| {
                let mut c = Config::new(r, n);
                configure(&mut c);
                c
            })
            .collect();
        let max = cfgs.iter().map(Config::max_packet).max().unwrap_or(0);
        cfgs.into_iter()
            .zip(crate::transport::mem::network(n, max))
            .map(|(c, t)| Runtime::new(c, Box::new(t)))
            .collect()
    }

    /// Start on an already open transport with a layer above the engine loop
    /// ([`crate::layer`]): `layer` receives this rank's [`LiveMemory`] and the engine's waker
    /// and returns the memory the engine accesses (a decorator around that one) and the hook
    /// that sees the turns and completions.
    pub fn with_layer<M: EngineMemory, H: TurnHook>(
        cfg: Config,
        transport: Box<dyn Transport>,
        layer: impl FnOnce(LiveMemory, Waker) -> (M, H),
    ) -> Result<Runtime, LiveError> {
        // Fault injection (`transport.inject_*`) wraps whatever transport the runtime is given.
        let rates = cfg.transport.fault_rates();
        let transport: Box<dyn Transport> = if rates.any() {
            Box::new(FaultyTransport::new(transport, rates))
        } else {
            transport
        };
        if transport.rank() != cfg.rank || transport.size() != cfg.size {
            return Err(LiveError::Config(format!(
                "transport is rank {} of {}, configuration says rank {} of {}",
                transport.rank(),
                transport.size(),
                cfg.rank,
                cfg.size
            )));
        }
        if transport.max_packet() < cfg.max_packet() {
            return Err(LiveError::Config(format!(
                "transport carries {} bytes, packets need {}",
                transport.max_packet(),
                cfg.max_packet()
            )));
        }
        if let Some(cpu) = cfg.progress.cpu {
            let allowed = unpinned_os::affinity::allowed_cpus()
                .map_err(|e| LiveError::Config(format!("cannot read this process's CPUs: {e}")))?;
            if !allowed.contains(&cpu) {
                return Err(LiveError::Config(format!(
                    "progress_cpu {cpu} is not one of this process's CPUs {allowed:?}"
                )));
            }
        }
        cfg.validate()?;
        let bootstrap = if cfg.bootstrap_pmix {
            Some(
                Bootstrap::pmix(cfg.rank, cfg.size, cfg.bootstrap_timeout())
                    .map_err(|e| LiveError::Config(e.to_string()))?,
            )
        } else {
            cfg.bootstrap_dir
                .clone()
                .map(|d| Bootstrap::new(d, cfg.rank, cfg.size, cfg.bootstrap_timeout()))
        };
        if (cfg.trace.enabled || cfg.trace.file.is_some()) && !crate::trace::enabled() {
            crate::trace::enable();
        }
        let opts = cfg.loop_options();
        let handler = cfg.handler_config();
        let mut live_mem = LiveMemory::with_mode(cfg.memory.pdid, cfg.memory.mode)?;
        live_mem.set_scan(cfg.memory.pagemap_scan);
        let (mem, hook) = layer(live_mem, transport.waker());
        let mut engine_cfg = cfg.engine_config();
        engine_cfg.key_salt = random_u64();
        let single_packet_bytes = engine_cfg.packet_bytes.min(engine_cfg.block_bytes) as usize;
        let engine = unpinned_part::PartEngine::new(cfg.rank, engine_cfg);
        let (fault_tx, fault_rx) = mpsc::channel();
        let (out_tx, out_rx) = mpsc::channel();
        let shared = Arc::new(Shared::new(cfg.progress.spin_yield_polls));
        let wake = transport.waker();
        let handler_stats = Arc::new(PageInCounters::default());
        let handler_thread = {
            let (wake, stats, hcfg) = (wake.clone(), handler_stats.clone(), handler);
            std::thread::Builder::new()
                .name(format!("unpinned-pagein-{}", cfg.rank))
                .spawn(move || fault_handler::run(hcfg, fault_rx, out_tx, wake, stats))
                .map_err(|e| LiveError::Config(format!("cannot start the page-in thread: {e}")))?
        };
        let clock = Clock::new();
        let sleeper = transport.sleeper();
        let core = Arc::new(Mutex::new(Core::new(
            engine,
            mem,
            hook,
            transport,
            out_rx,
            fault_tx,
            shared.clone(),
            clock,
            opts,
            handler_stats,
            handler,
        )));
        let engine_thread = {
            let (core, shared) = (core.clone(), shared.clone());
            std::thread::Builder::new()
                .name(format!("unpinned-engine-{}", cfg.rank))
                .spawn(move || crate::runtime::progress(core, shared, sleeper))
                .map_err(|e| LiveError::Config(format!("cannot start the engine thread: {e}")))?
        };
        Ok(Runtime {
            rank: cfg.rank,
            size: cfg.size,
            pdid: cfg.memory.pdid,
            core,
            wake,
            shared,
            opts,
            next_wr: AtomicU64::new(1),
            posted: AtomicU64::new(0),
            op_timeout: cfg.op_timeout(),
            single_packet_bytes,
            trace_file: cfg.trace.file.clone(),
            bootstrap: Mutex::new(bootstrap),
            clock,
            engine_thread: Some(engine_thread),
            handler_thread: Some(handler_thread),
        })
    }

    /// This rank.
    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// Ranks in the job.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// The engine's clock now: the time base of [`Completion::at`], so that `c.at - now()`
    /// taken at post time is a transfer's latency independent of when the caller looked.
    pub fn now(&self) -> unpinned_core::time::Instant {
        self.clock.now()
    }

    /// The protection domain of this rank's memory (local and remote PDID of its requests).
    pub fn pdid(&self) -> Pdid {
        self.pdid
    }

    /// The loop options this runtime runs with (spin and yield bounds of waits).
    pub fn loop_options(&self) -> &LoopOptions {
        &self.opts
    }

    /// The longest write this runtime's engine sends as a single packet (the smaller of
    /// `engine.packet_bytes` and `engine.block_bytes`). The target writes such a packet into
    /// memory in one engine turn, under the engine's lock, or not at all (a page-fault NACK
    /// before any byte if it lies in one page): a layer above can give one write all-or-nothing
    /// meaning by checking it under [`Runtime::with_engine_locked`].
    pub fn single_packet_bytes(&self) -> usize {
        self.single_packet_bytes
    }

    /// How long a blocking call waits before it gives [`LiveError::Timeout`].
    pub fn op_timeout(&self) -> Duration {
        self.op_timeout
    }

    /// Wake the progress thread (a layer that changed what its hook will do next turn).
    pub fn wake_engine(&self) {
        (self.wake)();
    }

    /// Run `f` while holding the engine's lock: no turn runs meanwhile, so memory the engine
    /// writes during its turns (a layer's reply words) can be read whole.
    pub fn with_engine_locked<R>(&self, f: impl FnOnce() -> R) -> Result<R, LiveError> {
        let _core = self.core()?;
        Ok(f())
    }

    /// The engine, for a call that must happen now (post, expose, revoke, stats): waits for
    /// a turn in progress (bounded by `LoopOptions::batch` packets) to end.
    pub(crate) fn core(&self) -> Result<MutexGuard<'_, dyn Driver + 'static>, LiveError> {
        if self.shared.stopped.load(Ordering::SeqCst) {
            return Err(LiveError::EngineGone);
        }
        self.core.lock().map_err(|_| LiveError::EngineGone)
    }

    /// Run one engine turn in this thread unless another thread is running one.
    pub(crate) fn drive(&self) -> Result<(), LiveError> {
        match self.core.try_lock() {
            Ok(mut c) => {
                c.turn();
                Ok(())
            }
            Err(TryLockError::WouldBlock) => Ok(()),
            Err(TryLockError::Poisoned(_)) => Err(LiveError::EngineGone),
        }
    }

    /// Count this thread as driving the engine while the guard lives, as [`Runtime::wait`]
    /// does while it polls: the progress thread keeps off the core (it checks back every
    /// `progress.driven_sleep_us`) and does not announce a sleep on the doorbell, so peers
    /// write into the rings without waking anyone. The holder must then poll with
    /// [`Runtime::progress`] often, and drop the guard before it stops polling (a long wait
    /// that leaves progress to the progress thread, or computation). For a waiter on a CPU of
    /// its own that shares it with the progress thread: without the guard, a progress thread
    /// that sleeps on the doorbell makes every peer pay a wake-up per packet.
    pub fn driving(&self) -> DriverGuard<'_> {
        DriverGuard::new(&self.shared)
    }

    /// Run one engine turn in this thread (receive, deadlines, transmit), unless another
    /// thread is running one: progress for an application that polls
    /// ([`Runtime::poll_completion`]) instead of waiting. Returns whether the turn did any
    /// work (false also when another thread held the engine).
    pub fn progress(&self) -> Result<bool, LiveError> {
        match self.core.try_lock() {
            Ok(mut c) => Ok(c.turn()),
            Err(TryLockError::WouldBlock) => Ok(false),
            Err(TryLockError::Poisoned(_)) => Err(LiveError::EngineGone),
        }
    }

    /// Let peers access `[ptr, ptr+len)` with `perms`. Nothing is pinned or registered, and the
    /// pages need not be present: the first remote access to a missing page faults it in.
    /// The range must be mapped with (at least) the permissions granted (checked once here).
    ///
    /// # Safety
    ///
    /// Until the key is revoked (or the runtime dropped), peers may write the range at any
    /// time: the caller must keep it mapped and must not hold Rust references (`&`/`&mut`)
    /// to bytes that peers may write while they may write them (synchronize with
    /// [`Runtime::barrier`] or your own protocol, then read through the buffer).
    pub unsafe fn expose(
        &self,
        ptr: *const u8,
        len: usize,
        perms: Perms,
    ) -> Result<RemoteKey, LiveError> {
        let (addr, len) = (ptr as u64, len as u64);
        let anonymous = check_mapped_kind(addr, len, perms.read, perms.write)
            .map_err(|source| LiveError::Expose { addr, len, source })?;
        self.core()?
            .expose(addr, len, perms, anonymous)
            .ok_or_else(|| LiveError::Expose {
                addr,
                len,
                source: MapsError::Unmapped(addr.wrapping_add(len)),
            })
    }

    /// Withdraw an exposure; later accesses with its key fail with a remote access error.
    pub fn revoke(&self, key: RemoteKey) -> Result<bool, LiveError> {
        Ok(self.core()?.revoke(key))
    }

    fn post(
        &self,
        op: Op,
        peer: NodeId,
        local: u64,
        remote_addr: u64,
        rkey: RemoteKey,
        len: usize,
    ) -> Result<WrId, LiveError> {
        if peer >= self.size {
            return Err(LiveError::Invalid(format!(
                "peer {peer} is out of range (the job has {} ranks)",
                self.size
            )));
        }
        if peer == self.rank {
            return Err(LiveError::Invalid(format!(
                "peer {peer} is this rank; copy locally instead"
            )));
        }
        let len = len as u64;
        if local.checked_add(len).is_none() || remote_addr.checked_add(len).is_none() {
            return Err(LiveError::Invalid("address range wraps around".into()));
        }
        crate::trace::mark(self.rank, crate::trace::Point::Post, len as u32);
        let wr_id = self.next_wr.fetch_add(1, Ordering::Relaxed);
        let wr = WorkRequest {
            wr_id,
            op,
            peer,
            local_pdid: self.pdid,
            local_addr: local,
            remote_pdid: self.pdid,
            remote_addr,
            rkey,
            len,
        };
        let wake = {
            // Caller-driven progress: post and send the first packets from this thread.
            let mut core = self.core()?;
            crate::trace::mark(self.rank, crate::trace::Point::PostLocked, 0);
            self.posted.fetch_add(1, Ordering::Relaxed);
            let now = core.post(wr);
            crate::trace::mark(self.rank, crate::trace::Point::PostQueued, 0);
            core.turn_at(now);
            crate::trace::mark(self.rank, crate::trace::Point::PostTurnEnd, 0);
            core.needs_wake_after_post(now)
        };
        // The progress thread finishes the transfer if nobody waits for it. It needs waking
        // only if the transfer has more to send or a deadline it may sleep past; else the
        // peer's answer wakes it (see `Core::needs_wake_after_post`).
        if wake {
            (self.wake)();
        }
        Ok(wr_id)
    }

    /// Post an RDMA write of `len` bytes from `local` to `remote_addr` at `peer` (a range the
    /// peer exposed with key `rkey`). Returns at once; the completion reports the outcome.
    ///
    /// # Safety
    ///
    /// `[local, local+len)` must stay mapped and readable until the completion arrives, and
    /// must not be mutated meanwhile if the bytes sent are to be well defined.
    pub unsafe fn write(
        &self,
        peer: NodeId,
        local: *const u8,
        remote_addr: u64,
        rkey: RemoteKey,
        len: usize,
    ) -> Result<WrId, LiveError> {
        self.post(Op::Write, peer, local as u64, remote_addr, rkey, len)
    }

    /// Post an RDMA read of `len` bytes at `remote_addr` of `peer` into `local`.
    ///
    /// # Safety
    ///
    /// `[local, local+len)` must stay mapped and writable until the completion arrives, and
    /// the caller must not access it (nor hold references to it) meanwhile.
    pub unsafe fn read(
        &self,
        peer: NodeId,
        local: *mut u8,
        remote_addr: u64,
        rkey: RemoteKey,
        len: usize,
    ) -> Result<WrId, LiveError> {
        self.post(Op::Read, peer, local as u64, remote_addr, rkey, len)
    }

    /// Write `data` to `remote_addr` at `peer` and wait for the completion.
    pub fn write_blocking(
        &self,
        peer: NodeId,
        data: &[u8],
        remote_addr: u64,
        rkey: RemoteKey,
    ) -> Result<Completion, LiveError> {
        // SAFETY: `data` is borrowed for the whole call and we wait for the completion (or the
        // engine's end) before returning; on a wait timeout the engine may still read `data`
        // later, so we keep waiting without a deadline in that case.
        let id = unsafe { self.write(peer, data.as_ptr(), remote_addr, rkey, data.len())? };
        self.wait_blocking_borrow(id)
    }

    /// Read into `out` from `remote_addr` at `peer` and wait for the completion.
    pub fn read_blocking(
        &self,
        peer: NodeId,
        out: &mut [u8],
        remote_addr: u64,
        rkey: RemoteKey,
    ) -> Result<Completion, LiveError> {
        // SAFETY: `out` is mutably borrowed for the whole call and we do not return before the
        // completion (or the engine's end), so nothing else accesses it meanwhile.
        let id = unsafe { self.read(peer, out.as_mut_ptr(), remote_addr, rkey, out.len())? };
        self.wait_blocking_borrow(id)
    }

    fn wait_blocking_borrow(&self, id: WrId) -> Result<Completion, LiveError> {
        loop {
            match self.wait(id) {
                Err(LiveError::Timeout(_)) => continue, // the buffer is still lent: keep waiting
                r => return r,
            }
        }
    }

    /// Take any completion, if one is queued.
    pub fn poll_completion(&self) -> Option<Completion> {
        self.shared
            .completions
            .lock()
            .expect("completion queue")
            .pop_front()
    }

    fn wait_for<R>(
        &self,
        mut f: impl FnMut(&mut VecDeque<Completion>) -> Option<R>,
    ) -> Result<R, LiveError> {
        // Read at the first clock check (after `WAIT_CLOCK_POLLS` polls, ~1 us): a wait that
        // ends sooner reads no clock at all; the spin, yield and timeout bounds count from there.
        let mut start: Option<Instant> = None;
        // A caller pinned to one CPU has it to itself: it spins without yielding or backing off.
        let pinned = unpinned_os::affinity::current_thread_pinned();
        let mut spin = self.opts.wait_spin;
        // Adaptive spinning (crate::runtime::SPIN_BACKOFF): skip the spin for a while after
        // one ran out without its completion.
        if !spin.is_zero() && !pinned && self.shared.wait_spin_skip.load(Ordering::Relaxed) > 0 {
            self.shared.wait_spin_skip.fetch_sub(1, Ordering::Relaxed);
            spin = Duration::ZERO;
        }
        let drive_for = self.opts.wait_spin + self.opts.wait_yield;
        let mut spin_failed = false;
        // A periodic yield of the spin gave the core away (crate::runtime::SPIN_BACKOFF).
        let mut spin_yielded = false;
        // While this thread drives the engine, the progress thread keeps off the core.
        let mut driving = Some(DriverGuard::new(&self.shared));
        // Completions delivered when the queue was last looked at: it is locked and searched
        // again only once more were delivered.
        let mut looked: Option<u64> = None;
        // The first clock check after `WAIT_CLOCK_POLLS` polls.
        let mut polls = 1u32;
        let mut elapsed = Duration::ZERO;
        // Pinned, it spins without periodic yields too.
        let yield_every = if pinned {
            0
        } else {
            self.shared.spin_yield_polls
        };
        loop {
            let seen = self.shared.delivered.load(Ordering::Acquire);
            if looked != Some(seen) {
                if let Some(r) = f(&mut self.shared.completions.lock().expect("completion queue")) {
                    if spin_yielded && !spin_failed {
                        // The completion came only after the spin gave the core away: most
                        // likely to the thread it waited for. Back off.
                        self.shared
                            .wait_spin_skip
                            .store(crate::runtime::SPIN_BACKOFF, Ordering::Relaxed);
                    }
                    return Ok(r);
                }
                looked = Some(seen);
            }
            if self.shared.stopped.load(Ordering::SeqCst) {
                return Err(LiveError::EngineGone);
            }
            // The clock once per few polls while driving (a read costs about half an idle
            // engine turn here); every time once sleeping.
            if polls % WAIT_CLOCK_POLLS == 0 || elapsed >= drive_for {
                let now = Instant::now();
                elapsed = now.saturating_duration_since(*start.get_or_insert(now));
            }
            polls = polls.wrapping_add(1);
            if elapsed > self.op_timeout {
                return Err(LiveError::Timeout(self.op_timeout));
            }
            if elapsed < drive_for {
                // Drive the engine: busily at first, then yielding the core between turns (on a
                // host with fewer cores than busy threads, yielding lets the peer's engine run).
                self.drive()?;
                if self.shared.delivered.load(Ordering::Acquire) == seen {
                    if elapsed < spin {
                        spin_yielded |= crate::runtime::spin_once(polls, yield_every);
                    } else {
                        if !spin.is_zero() && !spin_failed && !pinned {
                            // The spin ran out without the completion: back off.
                            spin_failed = true;
                            self.shared
                                .wait_spin_skip
                                .store(crate::runtime::SPIN_BACKOFF, Ordering::Relaxed);
                        }
                        std::thread::yield_now();
                    }
                }
                continue;
            }
            // A long wait (page-in, slow peer): hand progress to the progress thread and sleep.
            if driving.take().is_some() {
                crate::trace::mark(self.rank, crate::trace::Point::WaitSleep, 0);
                (self.wake)();
            }
            self.shared.waiters.fetch_add(1, Ordering::SeqCst);
            let q = self.shared.completions.lock().expect("completion queue");
            if self.shared.delivered.load(Ordering::Acquire) == seen
                && !self.shared.stopped.load(Ordering::SeqCst)
            {
                let _ = self.shared.cv.wait_timeout(q, Duration::from_millis(10));
            }
            self.shared.waiters.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Wait for the completion of `wr_id` (other completions stay queued). A failed request
    /// is returned as `Err(LiveError::Failed)`.
    pub fn wait(&self, wr_id: WrId) -> Result<Completion, LiveError> {
        let c = self.wait_for(|q| {
            let i = q.iter().position(|c| c.wr_id == wr_id)?;
            q.remove(i)
        })?;
        crate::trace::mark(self.rank, crate::trace::Point::WaitReturn, 0);
        match c.status {
            Ok(()) => Ok(c),
            Err(error) => Err(self.failed(wr_id, error)),
        }
    }

    /// The error of a failed request, with what the runtime knows about it.
    fn failed(&self, wr_id: WrId, error: unpinned_core::api::CompletionError) -> LiveError {
        LiveError::Failed {
            wr_id,
            error,
            detail: self.shared.take_detail(wr_id).unwrap_or_default(),
        }
    }

    /// What the runtime knows about the failure of `wr_id` beyond its completion's error
    /// (the peer rank, the local buffer, the address that faulted), for a completion taken
    /// with [`Runtime::poll_completion`]; `wait` and `flush` put it in their error. Taken
    /// once.
    pub fn failure_detail(&self, wr_id: WrId) -> Option<String> {
        self.shared.take_detail(wr_id)
    }

    /// Withdraw every request of this rank still in flight (writes, reads, atomics): each
    /// completes now with [`CompletionError::Cancelled`](unpinned_core::api::CompletionError::Cancelled)
    /// (queued like any completion), and once this returns the engine reads and writes none
    /// of their buffers again: they may be freed. Requests that completed before stay as they
    /// completed. Returns how many were cancelled. What a cancelled write or read did at the
    /// peer is unknown (some blocks may have landed).
    ///
    /// The way out of an error path: cancel, then free the buffers.
    pub fn cancel_all(&self) -> Result<usize, LiveError> {
        Ok(self.core()?.cancel_all())
    }

    /// [`Runtime::cancel_all`], then take every queued completion: afterwards no request of
    /// this rank is outstanding or queued. Returns the completions taken (each request posted
    /// and not yet consumed appears once, as it completed or as cancelled).
    pub fn drain(&self) -> Result<Vec<Completion>, LiveError> {
        self.cancel_all()?;
        let mut q = self.shared.completions.lock().expect("completion queue");
        Ok(q.drain(..).collect())
    }

    /// This rank bails out of the job: tell the peers (over shared memory: they then fail
    /// their requests to this rank with `PeerGone` naming it, instead of a remote access
    /// error when its memory goes away) and [`Runtime::cancel_all`]. Returns how many
    /// requests were cancelled. The runtime keeps answering packets until dropped.
    pub fn leave(&self) -> Result<usize, LiveError> {
        Ok(self.core()?.leave())
    }

    /// Wait until every request posted so far has completed, consume all queued completions,
    /// and return the first failure among them, if any (a fence for this rank's requests).
    /// Completions already taken by [`Runtime::wait`] or [`Runtime::poll_completion`] count as
    /// done.
    pub fn flush(&self) -> Result<(), LiveError> {
        let target = self.posted.load(Ordering::SeqCst);
        let mut first_err = None;
        let shared = &self.shared;
        self.wait_for(|q| {
            while let Some(c) = q.pop_front() {
                if let (Err(error), None) = (c.status, &first_err) {
                    first_err = Some(self.failed(c.wr_id, error));
                }
            }
            (shared.delivered.load(Ordering::Acquire) >= target).then_some(())
        })?;
        first_err.map_or(Ok(()), Err)
    }

    /// Every rank contributes one region `(addr, len, key)`; returns all of them, by rank.
    pub fn exchange(&self, addr: u64, len: u64, key: RemoteKey) -> Result<Vec<Region>, LiveError> {
        let mut b = Vec::with_capacity(20);
        b.extend_from_slice(&addr.to_le_bytes());
        b.extend_from_slice(&len.to_le_bytes());
        b.extend_from_slice(&key.to_le_bytes());
        let all = self.all_gather(&b)?;
        all.iter()
            .enumerate()
            .map(|(r, d)| {
                if d.len() != 20 {
                    return Err(LiveError::Config(format!("rank {r} sent a {}-byte region (expected 20): ranks disagree on collectives", d.len())));
                }
                Ok(Region {
                    rank: r as u32,
                    addr: u64::from_le_bytes(d[0..8].try_into().expect("8")),
                    len: u64::from_le_bytes(d[8..16].try_into().expect("8")),
                    key: u32::from_le_bytes(d[16..20].try_into().expect("4")),
                })
            })
            .collect()
    }

    /// Every rank contributes `data`; returns all contributions, by rank.
    pub fn all_gather(&self, data: &[u8]) -> Result<Vec<Vec<u8>>, LiveError> {
        let mut b = self.bootstrap.lock().expect("bootstrap lock");
        Ok(b.as_mut().ok_or(LiveError::NoBootstrap)?.all_gather(data)?)
    }

    /// Wait until every rank got here.
    pub fn barrier(&self) -> Result<(), LiveError> {
        self.all_gather(&[]).map(|_| ())
    }

    /// Counters of the engine, memory checks and page-in thread.
    pub fn stats(&self) -> Result<RuntimeStats, LiveError> {
        Ok(self.core()?.stats())
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::SeqCst);
        (self.wake)();
        if let Some(t) = self.engine_thread.take() {
            let _ = t.join();
        }
        if let Some(t) = self.handler_thread.take() {
            let _ = t.join();
        }
        if let Err(e) = self.write_trace() {
            eprintln!("rank {}: trace.file: {e}", self.rank);
        }
    }
}

impl Runtime {
    /// With `trace.file = FILE` set: write this rank's trace records so far
    /// ([`crate::trace`]) to `FILE.rank<R>.csv` (columns `at_ns,rank,point,arg`; `at_ns` from
    /// the process's first trace record), replacing what an earlier call wrote, and return
    /// the path. Dropping the runtime calls it; a library whose runtime lives to the end of
    /// the process calls it itself (the OpenSHMEM library, at `shmem_finalize`). `Ok(None)`
    /// without `trace.file`. The trace holds [`crate::trace::CAPACITY`] records per process:
    /// the first ones of a long run.
    pub fn write_trace(&self) -> Result<Option<std::path::PathBuf>, LiveError> {
        use std::io::Write;
        let Some(base) = &self.trace_file else {
            return Ok(None);
        };
        let mut path = base.clone().into_os_string();
        path.push(format!(".rank{}.csv", self.rank));
        let path = std::path::PathBuf::from(path);
        let failed = |e: std::io::Error| LiveError::Config(format!("{}: {e}", path.display()));
        let mut out = std::io::BufWriter::new(std::fs::File::create(&path).map_err(failed)?);
        writeln!(out, "at_ns,rank,point,arg").map_err(failed)?;
        for r in crate::trace::take().iter().filter(|r| r.rank == self.rank) {
            writeln!(out, "{},{},{:?},{}", r.at_ns, r.rank, r.point, r.arg).map_err(failed)?;
        }
        out.flush().map_err(failed)?;
        Ok(Some(path))
    }
}

/// A waiting caller that drives the engine reads the clock (for its spin, yield and timeout
/// bounds) once per this many polls.
const WAIT_CLOCK_POLLS: u32 = 16;

/// Counts a caller as driving the engine for as long as it lives ([`Runtime::driving`]).
#[must_use = "the caller counts as driving only while the guard lives"]
pub struct DriverGuard<'a>(&'a Shared);

impl<'a> DriverGuard<'a> {
    fn new(shared: &'a Shared) -> DriverGuard<'a> {
        shared.drivers.fetch_add(1, Ordering::SeqCst);
        DriverGuard(shared)
    }
}

impl Drop for DriverGuard<'_> {
    fn drop(&mut self) {
        self.0.drivers.fetch_sub(1, Ordering::SeqCst);
    }
}
