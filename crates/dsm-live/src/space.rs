//! [`LiveSpace`]: the live Multiview DSM behind [`SharedSpace`].
//!
//! One per process (its SIGSEGV handler takes the faults on its views and passes the others on,
//! e.g. to the runtime's fault-safe copy; it owns the fixed range). The coherence state is
//! the sans-IO [`unpinned_dsm::Node`] under one mutex; it is driven from three places:
//! - the faulting application thread, inside the SIGSEGV handler (synchronous entry: decode
//!   the address to a minipage, read vs write from the x86-64 page-fault error code, call
//!   `Node::fault`, send the request, then wait for its resume flag);
//! - the handler context ([`crate::context`]) for every message (asynchronous entry: manager
//!   and server roles, protection changes, resumes);
//! - barriers and locks, which are plain messages (rank 0 combines barriers; lock `id` is
//!   managed by rank `id % ranks`).
//!
//! After every entry the driver drains the node's events and messages in this order:
//! protection changes (so a server's copy is read-only or gone before its data is sent),
//! resumes, then messages (`Msg::Data` becomes an RDMA write of the minipage from the private
//! view followed by a notice).

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use unpinned_dsm::space::{SharedSpace, SpaceError, Worker};
use unpinned_dsm::trace::{TraceHeader, TraceOp};
use unpinned_dsm::{Access, Event, FaultResult, Msg, Node};
use unpinned_live::config::{apply_overrides, knob_rows, ConfigError, KnobRow};
use unpinned_live::edge::Edge;
use unpinned_live::Runtime;
use unpinned_os::sigchain::Chain;

use crate::context::{Backoff, Contexts, HandlerContext, Service};
use crate::endpoint::Endpoint;
use crate::error::DsmLiveError;
use crate::protect::{self, Change, ProtectMode};
use crate::trace::Tracer;
use crate::views::{ViewConfig, Views, PAGE_BYTES};
use crate::wire::WireMsg;

/// Exit code of a rank that gives up because a peer died or misbehaved.
pub const EXIT_PEER_FAILED: i32 = 75;
/// Most threads of one rank that may fault.
pub const MAX_THREADS: usize = 1024;

/// Configuration of a live space: the `dsm` section of a job's knobs.
///
/// `threads_per_rank`, `views`, `backoff` and `app` are set by the program; the other fields
/// are knobs, overridden per job by `dsm.KEY=VALUE` assignments (`unpinned run --set`,
/// `UNPINNED_SET`), which [`launch_space`] applies ([`SpaceConfig::with_overrides`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SpaceConfig {
    /// Worker threads per rank (not a knob: the program's).
    #[serde(skip)]
    pub threads_per_rank: usize,
    /// Where protocol handlers run: `progress`, `deferred`, `signal` or `polling`. Default
    /// `progress`.
    #[serde(with = "by_name")]
    pub context: HandlerContext,
    /// How protections change: `per-page` (one `mprotect` per page) or `batched`. Default
    /// `batched`.
    #[serde(with = "by_name")]
    pub protect: ProtectMode,
    /// Address-space geometry (not a knob).
    #[serde(skip)]
    pub views: ViewConfig,
    /// Idle back-off of the detector and of waiting threads (not a knob).
    #[serde(skip)]
    pub backoff: Backoff,
    /// Mailbox slots per peer ring. Default 256.
    pub mailbox_slots: usize,
    /// Serve read faults on shared minipages by an RDMA read from a non-manager copy. Default
    /// true.
    pub rdma_read_shared: bool,
    /// Record a trace into this file. Default unset.
    pub trace: Option<std::path::PathBuf>,
    /// Application name for the trace header (not a knob: the program's).
    #[serde(skip)]
    pub app: String,
}

/// Handler contexts and protection modes by their command-line names.
mod by_name {
    use serde::{Deserialize, Deserializer, Serializer};

    pub trait Named: Sized + std::str::FromStr<Err = String> {
        fn name_of(&self) -> &'static str;
    }

    impl Named for crate::context::HandlerContext {
        fn name_of(&self) -> &'static str {
            self.name()
        }
    }

    impl Named for crate::protect::ProtectMode {
        fn name_of(&self) -> &'static str {
            match self {
                crate::protect::ProtectMode::PerPage => "per-page",
                crate::protect::ProtectMode::Batched => "batched",
            }
        }
    }

    pub fn serialize<T: Named, S: Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(v.name_of())
    }

    pub fn deserialize<'de, T: Named, D: Deserializer<'de>>(d: D) -> Result<T, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

impl Default for SpaceConfig {
    fn default() -> Self {
        SpaceConfig::new(1)
    }
}

impl SpaceConfig {
    /// Defaults: `progress` context, batched protection, 1 GiB heap (sparse), 4 GiB of views.
    pub fn new(threads_per_rank: usize) -> SpaceConfig {
        SpaceConfig {
            threads_per_rank,
            context: HandlerContext::Progress,
            protect: ProtectMode::Batched,
            views: ViewConfig::default(),
            backoff: Backoff::default(),
            mailbox_slots: 256,
            rdma_read_shared: true,
            trace: None,
            app: "app".into(),
        }
    }

    /// Apply `KEY=VALUE` assignments of the `dsm` section (without the `dsm.` prefix); an
    /// unknown key or a bad value is an error naming `dsm.KEY`.
    pub fn with_overrides<S: AsRef<str>>(self, sets: &[S]) -> Result<SpaceConfig, DsmLiveError> {
        let c = apply_overrides(&self, sets).map_err(|e| {
            DsmLiveError::Config(
                ConfigError {
                    key: format!("dsm.{}", e.key),
                    why: e.why,
                }
                .to_string(),
            )
        })?;
        // The program's fields are not serialized: keep them.
        Ok(SpaceConfig {
            threads_per_rank: self.threads_per_rank,
            views: self.views,
            backoff: self.backoff,
            app: self.app,
            ..c
        })
    }
}

/// What each knob of [`SpaceConfig`] does (keys relative to the `dsm` section).
pub const KNOB_DOCS: &[(&str, &str)] = &[
    (
        "context",
        "where protocol handlers run: progress, deferred, signal or polling",
    ),
    (
        "protect",
        "how protections change: per-page (one mprotect per page) or batched",
    ),
    ("mailbox_slots", "mailbox slots per peer ring"),
    (
        "rdma_read_shared",
        "serve read faults on shared minipages by an RDMA read from a non-manager copy",
    ),
    ("trace", "record a trace of the run into this file"),
];

/// The knob table of [`SpaceConfig`] (keys with their `dsm.` prefix).
pub fn space_knobs() -> Vec<KnobRow> {
    knob_rows(
        "dsm.",
        &SpaceConfig::default(),
        KNOB_DOCS,
        &["trace=/tmp/trace"],
    )
    .expect("KNOB_DOCS match SpaceConfig")
}

/// Counters of a rank.
#[derive(Clone, Copy, Debug, Default)]
pub struct SpaceStats {
    /// Faults taken (read).
    pub read_faults: u64,
    /// Faults taken (write).
    pub write_faults: u64,
    /// Protection system calls.
    pub protect_calls: u64,
    /// Barriers passed (by worker 0 of this rank).
    pub barriers: u64,
    /// Locks acquired.
    pub locks: u64,
    /// Messaging counters.
    pub endpoint: crate::endpoint::EndpointStats,
}

#[derive(Default)]
struct LockState {
    holder: Option<(u32, u32)>,
    queue: std::collections::VecDeque<(u32, u32)>,
}

#[derive(Default)]
struct SyncState {
    /// Local arrivals at the barrier in progress.
    arrived: usize,
    /// Rank 0: arrivals (ranks) per barrier epoch.
    root: FxHashMap<u64, u32>,
    /// Locks this rank manages.
    locks: FxHashMap<u32, LockState>,
}

struct Inner {
    ep: Endpoint,
    rank: u32,
    size: u32,
    tpr: usize,
    protect: ProtectMode,
    rdma_read: bool,
    views: RwLock<Views>,
    node: Mutex<Node>,
    /// Requests for minipages not allocated here yet (a faster rank's setup).
    parked: Mutex<Vec<(u32, Msg)>>,
    sync: Mutex<SyncState>,
    released: AtomicU64,
    resume: Vec<AtomicBool>,
    granted: Vec<AtomicBool>,
    next_slot: AtomicU32,
    ctx: OnceLock<Contexts>,
    tracer: Option<Tracer>,
    app: String,
    read_faults: AtomicU64,
    write_faults: AtomicU64,
    protect_calls: AtomicU64,
    barriers: AtomicU64,
    locks: AtomicU64,
}

static SPACE: AtomicPtr<Inner> = AtomicPtr::new(std::ptr::null_mut());

thread_local! {
    static SLOT: std::cell::Cell<u32> = const { std::cell::Cell::new(u32::MAX) };
    static WORKER_LOCAL: std::cell::Cell<u32> = const { std::cell::Cell::new(u32::MAX) };
}

fn die(rank: u32, e: &DsmLiveError) -> ! {
    eprintln!("dsm-live rank {rank}: {e}");
    // SAFETY: ending the process; no destructors need to run (peers fail the same way).
    unsafe { libc::_exit(EXIT_PEER_FAILED) }
}

impl Inner {
    fn ctx(&self) -> &Contexts {
        self.ctx
            .get()
            .expect("contexts start before the space is shared")
    }

    fn slot(&self) -> usize {
        SLOT.with(|s| {
            if s.get() == u32::MAX {
                let n = self.next_slot.fetch_add(1, Ordering::Relaxed);
                if n as usize >= MAX_THREADS {
                    die(
                        self.rank,
                        &DsmLiveError::Config(format!(
                            "more than {MAX_THREADS} threads touched shared memory"
                        )),
                    );
                }
                s.set(n);
            }
            s.get() as usize
        })
    }

    /// Drain the node after an entry: protections, resumes, then messages.
    fn process(&self, node: &mut Node) {
        let views = self.views.read().expect("views");
        let mut changes = Vec::new();
        let mut resumes = Vec::new();
        while let Some(ev) = node.poll_event() {
            match ev {
                Event::SetAccess { mp, access } => {
                    let m = views.minipages()[mp as usize];
                    changes.push(Change {
                        addr: m.view_addr,
                        pages: m.view_pages,
                        access,
                    });
                }
                Event::Resume { thread } => resumes.push(thread),
            }
        }
        if !changes.is_empty() {
            match protect::apply(self.protect, &mut changes) {
                Ok(n) => {
                    self.protect_calls.fetch_add(n as u64, Ordering::Relaxed);
                }
                Err(e) => die(self.rank, &e),
            }
        }
        for t in resumes {
            self.resume[t as usize].store(true, Ordering::Release);
        }
        while let Some((to, msg)) = node.poll_message() {
            match msg {
                // A read of a shared minipage whose server is neither this manager nor the
                // requestor: the requestor pulls the data by RDMA read, the server is not
                // disturbed (spec dsm.md). The copy cannot change meanwhile: the manager
                // serves nothing else for this minipage until the requestor's Ack.
                Msg::Transfer {
                    mp,
                    requestor,
                    write: false,
                    notices: 0,
                } if self.rdma_read
                    && to != self.rank
                    && to != requestor
                    && node
                        .manager_view(mp)
                        .is_some_and(|(owner, copies)| owner.is_none() && copies.contains(&to)) =>
                {
                    self.ep
                        .send(requestor, WireMsg::ReadFrom { mp, server: to });
                }
                Msg::Data {
                    mp, write, notices, ..
                } => {
                    let m = views.minipages()[mp as usize];
                    self.ep.send_data(
                        to,
                        m.offset,
                        m.len,
                        WireMsg::Dsm(Msg::Data {
                            mp,
                            write,
                            notices,
                            bytes: Vec::new(),
                        }),
                    );
                }
                other => self.ep.send(to, WireMsg::Dsm(other)),
            }
        }
    }

    /// Check a coherence message against what this rank knows; `Ok(false)`: park it.
    fn check(&self, from: u32, msg: &Msg, known: u32) -> Result<bool, DsmLiveError> {
        let bad = |why: String| Err(DsmLiveError::Malformed { from, why });
        let (mp, node) = match msg {
            Msg::Request { mp, from, .. } | Msg::Ack { mp, from, .. } => (*mp, Some(*from)),
            Msg::Invalidate { mp, requestor } | Msg::Transfer { mp, requestor, .. } => {
                (*mp, Some(*requestor))
            }
            Msg::Grant { mp, .. } | Msg::Invalidated { mp } | Msg::Data { mp, .. } => (*mp, None),
        };
        if node.is_some_and(|n| n >= self.size) {
            return bad(format!(
                "rank {} out of range in {msg:?}",
                node.unwrap_or(0)
            ));
        }
        if matches!(msg, Msg::Request { .. } | Msg::Ack { .. }) && mp % self.size != self.rank {
            return bad(format!(
                "{msg:?} sent to rank {}, which does not manage minipage {mp}",
                self.rank
            ));
        }
        if mp >= known {
            return if matches!(msg, Msg::Request { .. }) {
                Ok(false)
            } else {
                bad(format!("unknown minipage {mp} in {msg:?}"))
            };
        }
        Ok(true)
    }

    fn handle_dsm(&self, from: u32, msg: Msg) {
        let known = self.views.read().expect("views").minipages().len() as u32;
        match self.check(from, &msg, known) {
            Ok(true) => {
                let mut node = self.node.lock().expect("node");
                node.handle_message(from, msg);
                self.process(&mut node);
            }
            Ok(false) => {
                let mut p = self.parked.lock().expect("parked");
                if p.len() >= 1 << 20 {
                    self.ep.fail_with(&DsmLiveError::Malformed {
                        from,
                        why: "more than 2^20 requests for unallocated minipages".into(),
                    });
                } else {
                    p.push((from, msg));
                }
            }
            Err(e) => self.ep.fail_with(&e),
        }
    }

    fn handle_sync(&self, from: u32, msg: WireMsg) {
        match msg {
            WireMsg::LockReq { id, thread } => {
                if id % self.size != self.rank || thread as usize >= MAX_THREADS {
                    return self.ep.fail_with(&DsmLiveError::Malformed {
                        from,
                        why: format!("lock request {id} (thread {thread}) at rank {}", self.rank),
                    });
                }
                let mut s = self.sync.lock().expect("sync");
                let l = s.locks.entry(id).or_default();
                if l.holder.is_none() {
                    l.holder = Some((from, thread));
                    drop(s);
                    self.ep.send(from, WireMsg::LockGrant { id, thread });
                } else {
                    l.queue.push_back((from, thread));
                }
            }
            WireMsg::Unlock { id } => {
                let mut s = self.sync.lock().expect("sync");
                let Some(l) = s.locks.get_mut(&id) else {
                    return self.ep.fail_with(&DsmLiveError::Malformed {
                        from,
                        why: format!("unlock of lock {id}, which is not held"),
                    });
                };
                if l.holder.map(|h| h.0) != Some(from) {
                    return self.ep.fail_with(&DsmLiveError::Malformed {
                        from,
                        why: format!("unlock of lock {id} held by {:?}", l.holder),
                    });
                }
                l.holder = l.queue.pop_front();
                if let Some((r, t)) = l.holder {
                    drop(s);
                    self.ep.send(r, WireMsg::LockGrant { id, thread: t });
                }
            }
            WireMsg::LockGrant { thread, .. } => match self.granted.get(thread as usize) {
                Some(g) => g.store(true, Ordering::Release),
                None => self.ep.fail_with(&DsmLiveError::Malformed {
                    from,
                    why: format!("lock grant for thread {thread}"),
                }),
            },
            WireMsg::BarrierArrive { epoch } => {
                if self.rank != 0 {
                    return self.ep.fail_with(&DsmLiveError::Malformed {
                        from,
                        why: "barrier arrival at a rank other than 0".into(),
                    });
                }
                let mut s = self.sync.lock().expect("sync");
                let n = s.root.entry(epoch).or_insert(0);
                *n += 1;
                if *n == self.size {
                    s.root.remove(&epoch);
                    drop(s);
                    for r in 0..self.size {
                        self.ep.send(r, WireMsg::BarrierRelease { epoch });
                    }
                }
            }
            WireMsg::BarrierRelease { epoch } => {
                self.released.fetch_max(epoch, Ordering::AcqRel);
            }
            WireMsg::ReadFrom { mp, server } => {
                let views = self.views.read().expect("views");
                match views.minipages().get(mp as usize) {
                    Some(m)
                        if server < self.size && server != self.rank && from == mp % self.size =>
                    {
                        self.ep.read_then(
                            server,
                            m.offset,
                            m.len,
                            WireMsg::Dsm(Msg::Data {
                                mp,
                                write: false,
                                notices: 0,
                                bytes: Vec::new(),
                            }),
                        );
                    }
                    _ => self.ep.fail_with(&DsmLiveError::Malformed {
                        from,
                        why: format!("read-from of minipage {mp} at rank {server}"),
                    }),
                }
            }
            WireMsg::Ping { seq } => self.ep.send(from, WireMsg::Pong { seq }),
            WireMsg::Pong { .. } | WireMsg::Dsm(_) => {}
        }
    }

    /// Synchronous entry from the SIGSEGV handler. `false`: not a DSM address.
    fn fault(&self, addr: u64, write_hint: Option<bool>) -> bool {
        let mp = match self.views.read().expect("views").find(addr) {
            Some(mp) => mp,
            None => return false,
        };
        let slot = self.slot();
        let mut node = self.node.lock().expect("node");
        // Without the error code: a fault on a readable copy must be a write.
        let write = write_hint.unwrap_or(node.access(mp) == Access::Read);
        if let Some(t) = &self.tracer {
            t.enter(TraceOp::Fault { mp, write });
        }
        if write {
            self.write_faults.fetch_add(1, Ordering::Relaxed);
        } else {
            self.read_faults.fetch_add(1, Ordering::Relaxed);
        }
        self.resume[slot].store(false, Ordering::Relaxed);
        let r = node.fault(slot as u32, mp, write);
        self.process(&mut node);
        drop(node);
        if r == FaultResult::Wait {
            let flag = &self.resume[slot];
            if let Err(e) = self.ctx().wait_until(self, || flag.load(Ordering::Acquire)) {
                die(self.rank, &e);
            }
        }
        if let Some(t) = &self.tracer {
            t.exit();
        }
        true
    }

    fn barrier_arrive(&self, count: usize) -> Result<(), DsmLiveError> {
        let epoch = {
            let mut s = self.sync.lock().expect("sync");
            let epoch = self.released.load(Ordering::Acquire) + 1;
            s.arrived += count;
            if s.arrived >= self.tpr {
                s.arrived = 0;
                drop(s);
                self.ep.send(0, WireMsg::BarrierArrive { epoch });
            }
            epoch
        };
        self.ctx()
            .wait_until(self, || self.released.load(Ordering::Acquire) >= epoch)
    }
}

impl Service for Inner {
    fn endpoint(&self) -> &Endpoint {
        &self.ep
    }

    fn handle(&self, from: u32, msg: WireMsg) {
        match msg {
            WireMsg::Dsm(m) => self.handle_dsm(from, m),
            other => self.handle_sync(from, other),
        }
    }
}

extern "C" fn on_segv(sig: libc::c_int, info: *mut libc::siginfo_t, uctx: *mut libc::c_void) {
    let p = SPACE.load(Ordering::Acquire);
    // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers.
    let addr = unsafe { (*info).si_addr() } as u64;
    #[cfg(target_arch = "x86_64")]
    // SAFETY: on x86-64 Linux the third argument is a ucontext_t; REG_ERR holds the page-fault
    // error code, whose bit 1 is set for writes.
    let write = Some(
        unsafe { (*(uctx as *mut libc::ucontext_t)).uc_mcontext.gregs[libc::REG_ERR as usize] } & 2
            != 0,
    );
    #[cfg(not(target_arch = "x86_64"))]
    let write = {
        let _ = uctx;
        None
    };
    // SAFETY: SPACE points to a live Inner while set (cleared before the Inner is dropped,
    // and only after every worker has joined).
    if !p.is_null() && unsafe { (*p).fault(addr, write) } {
        return;
    }
    // Not ours (a fault-safe copy's, or a real crash): the disposition found at installation
    // decides.
    // SAFETY: called from the handler installed through SEGV_CHAIN, with the kernel's
    // arguments.
    unsafe { SEGV_CHAIN.pass_on(sig, info, uctx) };
}

/// The `SIGSEGV` disposition found when the requestor was installed: it gets every fault that
/// is not on a DSM view.
static SEGV_CHAIN: Chain = Chain::new();

fn install_segv() -> Result<(), DsmLiveError> {
    // The runtime's fault-safe copy handler goes in first (it is installed at the first copy
    // otherwise): ours then sees every fault first and runs on the faulting thread's own stack
    // (the copy's handler runs on the small alternate stack, too small for a DSM fault, which
    // waits for the page).
    unpinned_os::safecopy::install();
    // Process-wide, once: later spaces reuse it (SPACE says which space is live).
    if !SEGV_CHAIN.install(libc::SIGSEGV, on_segv, 0) {
        return Err(DsmLiveError::Os(format!(
            "sigaction(SIGSEGV): {}",
            std::io::Error::last_os_error()
        )));
    }
    Ok(())
}

/// The live DSM of this process (see the crate doc).
pub struct LiveSpace {
    inner: Arc<Inner>,
    finished: bool,
}

/// Join the job (inside a program started by `unpinned run -n N`): read the launcher's
/// environment ([`unpinned_live::edge`]), apply its `dsm.*` overrides to `cfg`, open the
/// runtime with the others and build the space on every rank.
pub fn launch_space(cfg: SpaceConfig) -> Result<LiveSpace, DsmLiveError> {
    let mut edge = Edge::from_env()?;
    let cfg = cfg.with_overrides(&edge.take_section("dsm"))?;
    LiveSpace::new(edge.connect()?, cfg)
}

impl LiveSpace {
    /// Build the space over `rt` (collective: every rank calls it with the same `cfg`).
    pub fn new(rt: Runtime, cfg: SpaceConfig) -> Result<LiveSpace, DsmLiveError> {
        if cfg.threads_per_rank == 0 || cfg.threads_per_rank > MAX_THREADS / 2 {
            return Err(DsmLiveError::Config(format!(
                "threads_per_rank {} must be 1..={}",
                cfg.threads_per_rank,
                MAX_THREADS / 2
            )));
        }
        if !SPACE.load(Ordering::Acquire).is_null() {
            return Err(DsmLiveError::AlreadyRunning);
        }
        let views = Views::new(cfg.views)?;
        let (rank, size) = (rt.rank(), rt.size());
        let ep = Endpoint::new(
            rt,
            views.private_base() as u64,
            views.private_len(),
            cfg.mailbox_slots,
        )?;
        let inner = Arc::new(Inner {
            ep,
            rank,
            size,
            tpr: cfg.threads_per_rank,
            protect: cfg.protect,
            rdma_read: cfg.rdma_read_shared,
            views: RwLock::new(views),
            node: Mutex::new(Node::new(rank, size, 0)),
            parked: Mutex::new(Vec::new()),
            sync: Mutex::new(SyncState::default()),
            released: AtomicU64::new(0),
            resume: (0..MAX_THREADS).map(|_| AtomicBool::new(false)).collect(),
            granted: (0..MAX_THREADS).map(|_| AtomicBool::new(false)).collect(),
            next_slot: AtomicU32::new(0),
            ctx: OnceLock::new(),
            tracer: cfg.trace.clone().map(Tracer::new),
            app: cfg.app.clone(),
            read_faults: AtomicU64::new(0),
            write_faults: AtomicU64::new(0),
            protect_calls: AtomicU64::new(0),
            barriers: AtomicU64::new(0),
            locks: AtomicU64::new(0),
        });
        let ctx = Contexts::start(inner.clone(), cfg.context, cfg.backoff)?;
        let _ = inner.ctx.set(ctx);
        if SPACE
            .compare_exchange(
                std::ptr::null_mut(),
                Arc::as_ptr(&inner) as *mut Inner,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_err()
        {
            inner.ctx().stop();
            return Err(DsmLiveError::AlreadyRunning);
        }
        if let Err(e) = install_segv() {
            SPACE.store(std::ptr::null_mut(), Ordering::Release);
            inner.ctx().stop();
            return Err(e);
        }
        inner.ep.runtime().barrier()?;
        Ok(LiveSpace {
            inner,
            finished: false,
        })
    }

    /// The handler context.
    pub fn context(&self) -> HandlerContext {
        self.inner.ctx().context()
    }

    /// Read faults on shared minipages are served by RDMA reads (`dsm.rdma_read_shared`).
    pub fn rdma_read_shared(&self) -> bool {
        self.inner.rdma_read
    }

    /// Counters of this rank.
    pub fn stats(&self) -> SpaceStats {
        let i = &self.inner;
        SpaceStats {
            read_faults: i.read_faults.load(Ordering::Relaxed),
            write_faults: i.write_faults.load(Ordering::Relaxed),
            protect_calls: i.protect_calls.load(Ordering::Relaxed),
            barriers: i.barriers.load(Ordering::Relaxed),
            locks: i.locks.load(Ordering::Relaxed),
            endpoint: i.ep.stats(),
        }
    }

    /// The runtime, for bootstrap collectives (`all_gather`, `barrier`) only: its completion
    /// queue belongs to the DSM, which takes every completion, so work requests posted here
    /// would never be seen completing.
    pub fn runtime(&self) -> &Runtime {
        self.inner.ep.runtime()
    }

    /// Run `f(space, worker)` on `threads_per_rank` threads of this rank and join them.
    /// Fails if a worker panicked.
    pub fn spawn_workers<F>(&self, f: F) -> Result<(), SpaceError>
    where
        F: Fn(&LiveSpace, Worker) + Sync,
    {
        let (rank, tpr) = (self.inner.rank as usize, self.inner.tpr);
        let count = self.inner.size as usize * tpr;
        let f = &f;
        let panicked = std::thread::scope(|s| {
            let hs: Vec<_> = (0..tpr)
                .map(|t| {
                    s.spawn(move || {
                        WORKER_LOCAL.with(|w| w.set(t as u32));
                        if self.inner.tracer.is_some() {
                            Tracer::start_worker(rank as u32, t as u32);
                        }
                        f(
                            self,
                            Worker {
                                id: rank * tpr + t,
                                count,
                            },
                        );
                        if let Some(tr) = &self.inner.tracer {
                            tr.end_worker();
                        }
                    })
                })
                .collect();
            hs.into_iter()
                .map(|h| h.join().is_err())
                .filter(|&p| p)
                .count()
        });
        if panicked > 0 {
            return Err(SpaceError(format!(
                "{panicked} worker thread(s) of rank {rank} panicked"
            )));
        }
        Ok(())
    }

    /// Collective end: a DSM barrier of all ranks (nobody still needs this rank's pages),
    /// sends drained, the trace written, then the handlers stop. Also done (ignoring errors) on
    /// drop.
    pub fn finish(mut self) -> Result<(), SpaceError> {
        self.finish_inner().map_err(Into::into)
    }

    fn finish_inner(&mut self) -> Result<(), DsmLiveError> {
        if self.finished {
            return Ok(());
        }
        self.finished = true;
        let i = &self.inner;
        i.barrier_arrive(i.tpr)?;
        let t0 = std::time::Instant::now();
        i.ctx().wait_until(&**i, || {
            !i.ep.busy() || t0.elapsed() > std::time::Duration::from_secs(5)
        })?;
        if let Some(t) = &i.tracer {
            t.write_part(i.rank)?;
        }
        i.ep.runtime().barrier()?;
        i.ep.set_quiet();
        if let (Some(t), 0) = (&i.tracer, i.rank) {
            let views = i.views.read().expect("views");
            t.merge(&TraceHeader {
                app: i.app.clone(),
                ranks: i.size,
                threads_per_rank: i.tpr as u32,
                minipage_bytes: (views.config().large_minipage_pages * PAGE_BYTES) as u64,
                minipages: views.minipages().len() as u32,
            })?;
        }
        // Keep serving peers until all ranks are past their own drain.
        i.ep.runtime().barrier()?;
        Ok(())
    }
}

impl Drop for LiveSpace {
    fn drop(&mut self) {
        let _ = self.finish_inner();
        self.inner.ctx().stop();
        let me = Arc::as_ptr(&self.inner) as *mut Inner;
        let _ = SPACE.compare_exchange(
            me,
            std::ptr::null_mut(),
            Ordering::AcqRel,
            Ordering::Acquire,
        );
    }
}

impl SharedSpace for LiveSpace {
    fn rank(&self) -> usize {
        self.inner.rank as usize
    }

    fn ranks(&self) -> usize {
        self.inner.size as usize
    }

    fn threads_per_rank(&self) -> usize {
        self.inner.tpr
    }

    fn alloc(&self, bytes: usize, align: usize) -> Result<*mut u8, SpaceError> {
        let i = &self.inner;
        let (addr, mps) = i.views.write().expect("views").alloc(bytes, align)?;
        {
            let views = i.views.read().expect("views");
            let mut changes: Vec<Change> = mps
                .clone()
                .map(|mp| {
                    let m = views.minipages()[mp as usize];
                    let access = if mp % i.size == i.rank {
                        Access::Write
                    } else {
                        Access::None
                    };
                    Change {
                        addr: m.view_addr,
                        pages: m.view_pages,
                        access,
                    }
                })
                .collect();
            protect::apply(ProtectMode::Batched, &mut changes)?;
        }
        // Requests that arrived before this rank allocated their minipages.
        let known = i.views.read().expect("views").minipages().len() as u32;
        let ready: Vec<(u32, Msg)> = {
            let mut p = i.parked.lock().expect("parked");
            let (ready, later): (Vec<_>, Vec<_>) = p
                .drain(..)
                .partition(|(_, m)| matches!(m, Msg::Request { mp, .. } if *mp < known));
            *p = later;
            ready
        };
        for (from, m) in ready {
            i.handle_dsm(from, m);
        }
        Ok(addr as *mut u8)
    }

    fn barrier(&self, worker: Worker) {
        let _ = worker;
        let i = &self.inner;
        if let Some(t) = &i.tracer {
            t.enter(TraceOp::Barrier);
        }
        if let Err(e) = i.barrier_arrive(1) {
            die(i.rank, &e);
        }
        if WORKER_LOCAL.with(|w| w.get()) == 0 {
            i.barriers.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(t) = &i.tracer {
            t.exit();
        }
    }

    fn lock(&self, worker: Worker, id: u32) {
        let i = &self.inner;
        let t = worker.id % i.tpr;
        if let Some(tr) = &i.tracer {
            tr.enter(TraceOp::Lock { id });
        }
        i.granted[t].store(false, Ordering::Relaxed);
        i.ep.send(
            id % i.size,
            WireMsg::LockReq {
                id,
                thread: t as u32,
            },
        );
        if let Err(e) = i
            .ctx()
            .wait_until(&**i, || i.granted[t].load(Ordering::Acquire))
        {
            die(i.rank, &e);
        }
        i.locks.fetch_add(1, Ordering::Relaxed);
        if let Some(tr) = &i.tracer {
            tr.exit();
        }
    }

    fn unlock(&self, worker: Worker, id: u32) {
        let _ = worker;
        let i = &self.inner;
        if let Some(tr) = &i.tracer {
            tr.enter(TraceOp::Unlock { id });
        }
        i.ep.send(id % i.size, WireMsg::Unlock { id });
        if let Some(tr) = &i.tracer {
            tr.exit();
        }
    }
}

#[cfg(test)]
mod config_tests {
    use super::*;

    #[test]
    fn dsm_knobs_are_overridden_by_name_and_unknown_ones_refused() {
        let c = SpaceConfig::new(2)
            .with_overrides(&[
                "context=signal",
                "protect=per-page",
                "rdma_read_shared=false",
            ])
            .unwrap();
        assert_eq!(c.context, HandlerContext::Signal);
        assert_eq!(c.protect, ProtectMode::PerPage);
        assert!(!c.rdma_read_shared);
        assert_eq!(c.threads_per_rank, 2, "the program's fields survive");
        let c = SpaceConfig::new(1)
            .with_overrides(&["trace=/tmp/t.jsonl"])
            .unwrap();
        assert_eq!(c.trace, Some("/tmp/t.jsonl".into()));
        for bad in [
            "bogus=1",
            "context=fast",
            "mailbox_slots=x",
            "threads_per_rank=4",
        ] {
            let e = SpaceConfig::new(1)
                .with_overrides(&[bad])
                .unwrap_err()
                .to_string();
            let key = format!("dsm.{}", bad.split('=').next().unwrap());
            assert!(e.contains(&key), "{bad}: {e}");
        }
        assert_eq!(space_knobs().len(), KNOB_DOCS.len());
    }
}
