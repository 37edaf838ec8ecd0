//! The event loop: a heap of events ordered by (time, insertion sequence) over per-node
//! components (PART engine, IOMMU, memory, fault handler) and the links between them.

use rustc_hash::FxHashMap;
use unpinned_core::api::{Completion, NodeId, Op, Perms, RemoteKey, WorkRequest, WrId};
use unpinned_core::iommu::Iommu;
use unpinned_core::memory::Pdid;
use unpinned_core::os::{
    BlockReply, FaultHandlerModel, HandlerAction, HandlerConfig, PageInConfig, PageInPolicy,
};
use unpinned_core::profile::Profile;
use unpinned_core::rng::{derive_seed, rng_for, Rng, SimRng};
use unpinned_core::time::{serialization, Duration, Instant};
use unpinned_part::{EngineConfig, Event as EngineEvent, PartEngine};
use unpinned_wire::part::{write_target, WriteTarget, DATA_HEADER_LEN, DATA_PAYLOAD_OFFSET};
use xxhash_rust::xxh3::Xxh3;

use crate::faults::{Fate, FaultConfig};
use crate::invariants::Checker;
use crate::kernel::{FaultyLink, LinkStats};
use crate::linkbuf;
use crate::memory::{Residence, SimMemory};
use crate::net::{Hops, Topology};
use crate::queue::{EventQueue, Packed};
use crate::slab::Slab;

mod window;
pub use window::{Sent, Transit};

/// Everything that shapes a simulation run.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// Platform costs.
    pub profile: Profile,
    /// Page-in policy of every node's fault handler.
    pub policy: PageInPolicy,
    /// Whether fault handlers send ERRs (false: retransmission by timeout only).
    pub send_err: bool,
    /// Master seed; every random stream is derived from it.
    pub seed: u64,
    /// Number of nodes.
    pub nodes: u32,
    /// How they are connected.
    pub topology: Topology,
    /// Packet faults injected on every link.
    pub faults: FaultConfig,
    /// Check invariants after every step (bytes delivered, exactly-once, protection).
    pub check_invariants: bool,
    /// Hash every event into the trace hash (determinism checks).
    pub trace: bool,
}

impl SimConfig {
    /// Two nodes with the profile's hop count, PIA with ERR, no faults, invariants on.
    pub fn two_nodes(profile: Profile, seed: u64) -> SimConfig {
        let hops = profile.net.hops;
        SimConfig {
            profile,
            policy: PageInPolicy::Pia,
            send_err: true,
            seed,
            nodes: 2,
            topology: Topology::Uniform { hops },
            faults: FaultConfig::NONE,
            check_invariants: true,
            trace: false,
        }
    }
}

/// A failed run: what broke, and the seed that reproduces it.
#[derive(Debug, thiserror::Error)]
#[error("{what} (seed {seed}, t = {at_us:.3} us)")]
pub struct SimError {
    /// The violated invariant or the stuck state.
    pub what: String,
    /// Master seed of the run.
    pub seed: u64,
    /// Simulated time of the failure, us.
    pub at_us: f64,
}

/// A posted work request, as the simulator remembers it.
#[derive(Clone, Debug)]
pub struct PostRecord {
    /// Posting node.
    pub node: NodeId,
    /// The request.
    pub wr: WorkRequest,
    /// When the user posted it (before the co-processor's initiation time).
    pub posted_at: Instant,
    /// Its completion, once it arrived.
    pub completion: Option<Completion>,
}

impl PostRecord {
    /// Post-to-completion latency, if complete.
    pub fn latency(&self) -> Option<Duration> {
        self.completion.map(|c| c.at - self.posted_at)
    }
}

/// Per-node counters, gathered from its components.
#[derive(Clone, Copy, Debug, Default)]
pub struct NodeStats {
    /// Engine counters.
    pub engine: unpinned_part::EngineStats,
    /// Fault handler counters.
    pub handler: unpinned_core::os::HandlerStats,
    /// Fault handler CPU time per component.
    pub breakdown: unpinned_core::os::Breakdown,
    /// IOMMU counters.
    pub iommu: unpinned_core::iommu::IommuStats,
}

/// One node: NI engine, IOMMU, memory, host fault handler, port state.
pub struct Node {
    /// The PART engine (the NI).
    pub engine: PartEngine,
    /// The IOMMU.
    pub iommu: Iommu,
    /// Host memory.
    pub mem: SimMemory,
    /// Host fault handler model.
    pub handler: FaultHandlerModel,
    tx_free_at: Instant,
    tx_prep_at: Instant,
    ni_ready_at: Instant,
    tx_pending: bool,
    engine_timer: Option<Instant>,
    handler_timer: Option<Instant>,
    /// The handler got an input since its outputs were last drained.
    handler_touched: bool,
}

/// What an event does. Every variant carries one `u32` (a packet on a link keeps its
/// addressing in its [`LinkBuf`]), so it packs into 35 bits of a 16-byte queue entry: the heap
/// moves entries on every push and pop, and small ones make that cheap.
#[derive(Clone, Copy, Debug)]
enum Ev {
    Post { slot: u32 },
    TxReady { node: NodeId },
    Arrive { buf: u32 },
    EngineTimer { node: NodeId },
    HandlerTimer { node: NodeId },
}

impl Packed for Ev {
    /// The variant in bits 32..35, its `u32` below.
    #[inline(always)]
    fn pack(self) -> u64 {
        let (tag, v) = match self {
            Ev::Post { slot } => (0, slot),
            Ev::TxReady { node } => (1, node),
            Ev::Arrive { buf } => (2, buf),
            Ev::EngineTimer { node } => (3, node),
            Ev::HandlerTimer { node } => (4, node),
        };
        (tag << 32) | v as u64
    }

    #[inline(always)]
    fn unpack(bits: u64) -> Ev {
        let v = bits as u32;
        match bits >> 32 {
            0 => Ev::Post { slot: v },
            1 => Ev::TxReady { node: v },
            2 => Ev::Arrive { buf: v },
            3 => Ev::EngineTimer { node: v },
            _ => Ev::HandlerTimer { node: v },
        }
    }
}

/// A packet buffer of the links, reused across packets. A compact packet is kept inline
/// (`small`), next to its addressing, so that its arrival reads one or two adjacent cache lines
/// rather than a buffer entry plus a separate allocation: at thousands of nodes both missed the
/// cache on most arrivals.
#[repr(C, align(64))]
struct LinkBuf {
    len: u32,
    src: NodeId,
    dst: NodeId,
    /// The fault injector did not touch the bytes since the sender's engine emitted them, so
    /// their checksum (computed at emit) needs no re-verification at the receiver.
    intact: bool,
    /// A compact buffer (see [`linkbuf`]): the packet is in `small` (a small packet, or the
    /// header and the CRC of a data packet whose payload is zeros), `bytes` is empty. Pooled
    /// apart from the full-size ones.
    compact: bool,
    /// A data packet whose sender read its payload from a page without bytes: the payload is
    /// zeros (the receiver's memory then need not check it; see `SimMemory::vouch_zero`).
    zero_payload: bool,
    /// A full-size buffer's bytes.
    bytes: Vec<u8>,
    /// A compact buffer's bytes.
    small: [u8; linkbuf::COMPACT_CAP],
}

/// The simulator.
pub struct Sim {
    cfg: SimConfig,
    /// The first node held here: 0, except in a partition of a windowed run (`Sim::split`),
    /// which holds nodes `base..base + nodes.len()` (node ids stay global).
    base: NodeId,
    /// A windowed run (`Sim::split`): a sent packet waits in `sent` until the window's end,
    /// where its destination's partition claims the input port (`Sim::claim`).
    windowed: bool,
    /// Packets sent in this window (windowed runs only).
    sent: Vec<Sent>,
    now: Instant,
    queue: EventQueue<Ev>,
    nodes: Vec<Node>,
    bufs: Vec<LinkBuf>,
    free_bufs: Vec<u32>,
    /// Free compact link buffers.
    free_compact: Vec<u32>,
    /// Zeroed full-size buffer compact packets are expanded into on arrival.
    rx_zeroed: Vec<u8>,
    /// Per node: when its input port is free. Kept apart from the nodes, densely: a sender
    /// reads it for every packet, and at thousands of nodes the destination's node state
    /// (kilobytes apart) is rarely in the cache, while this array (8 bytes per node) is.
    rx_free_at: Vec<Instant>,
    /// Small and zero-payload packets are stored compactly (not with fault injection or
    /// tracing: they look at or change every byte on the link; and only when a full buffer is
    /// much larger than a compact one, [`linkbuf::COMPACT_MIN_BUF_BYTES`]: with small packets
    /// the check and the copies cost more time than the little memory they save is worth).
    compact_ok: bool,
    buf_len: usize,
    /// The links' fault injector (the kernel's wrapper: one generator for every link).
    link: FaultyLink,
    setup_rng: SimRng,
    /// Posts not yet completed, by slot (see [`Slab`]).
    pending: Slab<PostRecord>,
    /// Completed posts, in completion order (kept unless `forget_completed` drains them).
    completed: Vec<PostRecord>,
    next_post: u32,
    by_wr: FxHashMap<(NodeId, WrId), u32>,
    checker: Checker,
    events: u64,
    stale_events: u64,
    max_queue: usize,
    trace: Xxh3,
    initiation: Duration,
    ni_packet: Duration,
    hop: Duration,
    /// Hops between nodes (torus places computed once).
    hops: Hops,
    link_gbps: f64,
    header_bytes: usize,
    /// (link bytes, serialization time) of the last packet sent.
    last_ser: (usize, Duration),
    /// Whether the fault injector can do anything (`cfg.faults.any()`).
    faults_any: bool,
    /// `(src, dst)` of the last packet received (for drivers that watch memory, `take_arrival`).
    arrived: Option<(NodeId, NodeId)>,
    /// What that packet may have written at `dst` (from its header).
    arrived_write: WriteTarget,
}

impl Sim {
    /// Build a simulation.
    pub fn new(cfg: SimConfig) -> Sim {
        let p = &cfg.profile;
        let adaptive = unpinned_core::os::AdaptiveCosts::from_profile(p);
        let nodes = (0..cfg.nodes)
            .map(|n| {
                let mut ecfg = EngineConfig::from_profile(&p.engine);
                ecfg.key_salt = derive_seed(cfg.seed, &format!("keys/{n}"));
                // Checksums are computed lazily, in `on_tx_ready` (see the comment there).
                let mut engine = PartEngine::new(n, ecfg);
                engine.set_checksum(unpinned_wire::Checksum::None);
                Node {
                    engine,
                    iommu: Iommu::new(&p.iommu, derive_seed(cfg.seed, &format!("iommu/{n}"))),
                    mem: SimMemory::new(),
                    handler: FaultHandlerModel::new(HandlerConfig::from_profile(
                        p,
                        PageInConfig {
                            policy: cfg.policy,
                            send_err: cfg.send_err,
                        },
                    ))
                    .with_adaptive_costs(adaptive),
                    tx_free_at: Instant::ZERO,
                    tx_prep_at: Instant::ZERO,
                    ni_ready_at: Instant::ZERO,
                    tx_pending: false,
                    engine_timer: None,
                    handler_timer: None,
                    handler_touched: false,
                }
            })
            .collect();
        let buf_len = p.engine.packet_bytes as usize + DATA_HEADER_LEN + 64;
        Sim {
            base: 0,
            windowed: false,
            sent: Vec::new(),
            now: Instant::ZERO,
            queue: EventQueue::new(),
            nodes,
            bufs: Vec::new(),
            free_bufs: Vec::new(),
            free_compact: Vec::new(),
            rx_zeroed: Vec::new(),
            rx_free_at: vec![Instant::ZERO; cfg.nodes as usize],
            compact_ok: !cfg.faults.any()
                && !cfg.trace
                && buf_len >= linkbuf::COMPACT_MIN_BUF_BYTES,
            buf_len,
            link: FaultyLink::new(cfg.faults, rng_for(cfg.seed, "faults")),
            setup_rng: rng_for(cfg.seed, "setup"),
            pending: Slab::new(),
            completed: Vec::new(),
            next_post: 0,
            by_wr: FxHashMap::default(),
            checker: Checker::new(cfg.check_invariants),
            events: 0,
            stale_events: 0,
            max_queue: 0,
            trace: Xxh3::new(),
            initiation: Duration::from_us_f64(p.engine.initiation_us),
            ni_packet: Duration(p.net.ni_packet_ns),
            hop: Duration(p.net.hop_latency_ns),
            hops: Hops::new(cfg.topology, cfg.nodes),
            link_gbps: p.net.link_gbps,
            header_bytes: p.net.header_bytes as usize,
            last_ser: (usize::MAX, Duration::ZERO),
            faults_any: cfg.faults.any(),
            arrived: None,
            arrived_write: WriteTarget::Any,
            cfg,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &SimConfig {
        &self.cfg
    }

    /// Current simulated time.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Events processed so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Superseded timer entries popped (not counted as events), and the largest queue length.
    pub fn queue_stats(&self) -> (u64, usize) {
        (self.stale_events, self.max_queue)
    }

    /// What the packet of the last arrival may have written at its destination, from its
    /// header (a driver that watches a few words skips packets that cannot touch them).
    pub fn arrival_write(&self) -> WriteTarget {
        self.arrived_write
    }

    /// Link buffers allocated so far: (full-size, compact). Their number is the largest count
    /// of packets in flight at once; compact ones hold a small packet, or the header and the
    /// CRC of a zero-payload one.
    pub fn link_buffers(&self) -> (usize, usize) {
        let compact = self.bufs.iter().filter(|b| b.compact).count();
        (self.bufs.len() - compact, compact)
    }

    /// Time of the next queued event, if any.
    pub fn next_event_at(&self) -> Option<Instant> {
        self.queue.peek_at()
    }

    /// `(src, dst)` of the packet that arrived since the last call, if any (a driver polls
    /// `dst`'s memory: the NI may have written into it on behalf of `src`).
    pub fn take_arrival(&mut self) -> Option<(NodeId, NodeId)> {
        self.arrived.take()
    }

    /// Packet faults injected so far.
    pub fn link_stats(&self) -> LinkStats {
        self.link.stats()
    }

    /// Change the packet faults from now on (the VOPR's liveness phase turns them off). A
    /// run built without faults keeps small packets compactly, which faults cannot touch:
    /// turning faults on there panics.
    pub fn set_faults(&mut self, faults: FaultConfig) {
        assert!(
            !faults.any() || !self.compact_ok,
            "faults turned on in a run built without them (build it with faults, then turn them off)"
        );
        self.cfg.faults = faults;
        self.faults_any = faults.any();
        self.link.set_config(faults);
    }

    /// Hash of every event so far (only with `trace` on): equal seeds give equal hashes.
    pub fn trace_hash(&self) -> u64 {
        self.trace.digest()
    }

    /// A node.
    pub fn node(&self, n: NodeId) -> &Node {
        &self.nodes[(n - self.base) as usize]
    }

    /// A node, mutably (set up memory, expose ranges).
    pub fn node_mut(&mut self, n: NodeId) -> &mut Node {
        &mut self.nodes[(n - self.base) as usize]
    }

    /// Counters of a node.
    pub fn stats(&self, n: NodeId) -> NodeStats {
        let node = &self.nodes[(n - self.base) as usize];
        NodeStats {
            engine: node.engine.stats(),
            handler: node.handler.stats(),
            breakdown: node.handler.breakdown(),
            iommu: node.iommu.stats(),
        }
    }

    /// Writes into `[base, base + len)` of `pdid` at node `n` are rewritten by design before
    /// they complete (a mailbox ring, a credit word): the bytes-delivered invariant skips them.
    pub fn rewritten_by_design(&mut self, n: NodeId, pdid: Pdid, base: u64, len: u64) {
        self.checker.rewritten_by_design(n, pdid, base, base + len);
    }

    /// Evict every page of a range (reclaim): the next access faults again.
    pub fn evict(&mut self, n: NodeId, pdid: Pdid, base: u64, len: u64) {
        let node = &mut self.nodes[(n - self.base) as usize];
        let mut p = unpinned_core::memory::page_of(base);
        while p < base + len {
            node.mem.evict(pdid, p, &mut node.iommu);
            p += unpinned_core::memory::PAGE_BYTES;
        }
    }

    /// Map memory at a node with the given residency.
    pub fn map(&mut self, n: NodeId, pdid: Pdid, base: u64, len: u64, residence: Residence) {
        let node = &mut self.nodes[(n - self.base) as usize];
        node.mem
            .map(pdid, base, len, residence, &mut self.setup_rng);
    }

    /// Fill `[base, base+len)` at a node with seeded random bytes (host writes; residency kept).
    pub fn fill_random(&mut self, n: NodeId, pdid: Pdid, base: u64, len: u64) {
        let mut data = vec![0u8; len as usize];
        self.setup_rng.fill(&mut data[..]);
        self.nodes[(n - self.base) as usize]
            .mem
            .host_write(pdid, base, &data);
    }

    /// Expose a range of a node to its peers.
    pub fn expose(
        &mut self,
        n: NodeId,
        pdid: Pdid,
        base: u64,
        len: u64,
        perms: Perms,
    ) -> RemoteKey {
        let node = &mut self.nodes[(n - self.base) as usize];
        let key = node
            .engine
            .expose(pdid, base, len, perms)
            .expect("range does not wrap");
        if perms.write {
            node.mem.allow_writes(pdid, base, base + len);
        }
        key
    }

    /// The user posts `wr` at node `n` at time `at` (>= now); the engine sees it after the
    /// co-processor's initiation time. Returns its number (posts are numbered from 0 in posting
    /// order).
    pub fn post(&mut self, at: Instant, n: NodeId, wr: WorkRequest) -> usize {
        let index = self.next_post as usize;
        self.next_post += 1;
        let slot = self.pending.insert(PostRecord {
            node: n,
            wr,
            posted_at: at,
            completion: None,
        });
        self.schedule(at.max(self.now) + self.initiation, Ev::Post { slot });
        index
    }

    /// Completed posts, in completion order.
    pub fn posts(&self) -> &[PostRecord] {
        &self.completed
    }

    /// Posts not completed yet.
    pub fn pending_posts(&self) -> usize {
        self.pending.len()
    }

    /// Drop the records of completed posts (long runs keep memory flat).
    pub fn forget_completed(&mut self) -> Vec<PostRecord> {
        std::mem::take(&mut self.completed)
    }

    /// Like [`Sim::forget_completed`], into `out` (cleared first): a driver that drains after
    /// every step reuses one buffer instead of allocating one per completion.
    pub fn take_completed_into(&mut self, out: &mut Vec<PostRecord>) {
        out.clear();
        if !self.completed.is_empty() {
            std::mem::swap(out, &mut self.completed);
        }
    }

    /// Run until no event is left (or `limit` simulated time passes: an error).
    pub fn run_until_idle(&mut self, limit: Duration) -> Result<(), SimError> {
        let deadline = self.now + limit;
        while self.step_not_after(deadline)? {}
        if self.queue.peek_at().is_some() {
            let what = format!(
                "not idle after {:.0} us of simulated time\n{}",
                limit.as_us_f64(),
                self.debug_summary()
            );
            return Err(self.error(what));
        }
        self.check_all_complete()
    }

    /// Run every event up to and including time `t`.
    pub fn run_until(&mut self, t: Instant) -> Result<(), SimError> {
        while self.step_not_after(t)? {}
        self.now = self.now.max(t);
        Ok(())
    }

    /// Process one event. Invariants are checked after it.
    pub fn step(&mut self) -> Result<bool, SimError> {
        self.step_not_after(Instant(u64::MAX))
    }

    /// [`Sim::step`] if the next event is not later than `limit` (`Ok(false)` otherwise, and
    /// when nothing is queued).
    fn step_not_after(&mut self, limit: Instant) -> Result<bool, SimError> {
        let Some((at, ev)) = self.queue.pop_not_after(limit) else {
            return Ok(false);
        };
        debug_assert!(at >= self.now, "time never goes back");
        self.now = at;
        self.events += 1;
        self.max_queue = self.max_queue.max(self.queue.len() + 1);
        match ev {
            Ev::Post { slot } => self.on_post(slot),
            Ev::TxReady { node } => self.on_tx_ready(node),
            Ev::Arrive { buf } => self.on_arrive(buf),
            Ev::EngineTimer { node } => self.on_engine_timer(node),
            Ev::HandlerTimer { node } => self.on_handler_timer(node),
        }
        if let Some(what) = self.checker.take_violation() {
            return Err(self.error(what));
        }
        Ok(true)
    }

    /// What every node still has in flight (for stuck-run diagnostics).
    pub fn debug_summary(&self) -> String {
        let mut s = format!(
            "t = {:.3} us, {} events queued\n",
            self.now.as_us_f64(),
            self.queue.len()
        );
        for n in &self.nodes {
            s += &n.engine.debug_summary();
            s += &format!(
                "  handler {:?} idle {}\n",
                n.handler.stats(),
                n.handler.is_idle()
            );
        }
        s
    }

    fn error(&self, what: String) -> SimError {
        SimError {
            what,
            seed: self.cfg.seed,
            at_us: self.now.as_us_f64(),
        }
    }

    fn check_all_complete(&mut self) -> Result<(), SimError> {
        if !self.cfg.check_invariants {
            return Ok(());
        }
        if let Some(p) = self.pending.values().min_by_key(|p| (p.node, p.wr.wr_id)) {
            let what = format!(
                "work request {} of node {} never completed and nothing is left to happen",
                p.wr.wr_id, p.node
            );
            return Err(self.error(what));
        }
        Ok(())
    }

    fn schedule(&mut self, at: Instant, ev: Ev) {
        self.queue.push(at, ev);
    }

    fn trace_event(&mut self, kind: u8, node: NodeId, bytes: &[u8]) {
        if self.cfg.trace {
            trace_into(&mut self.trace, self.now, kind, node, bytes);
        }
    }

    fn on_post(&mut self, slot: u32) {
        let rec = self.pending.get(slot).expect("pending post");
        let (n, wr) = (rec.node, rec.wr);
        self.trace_event(1, n, &wr.wr_id.to_le_bytes());
        if self.by_wr.insert((n, wr.wr_id), slot).is_some() {
            self.checker.violation(format!(
                "wr_id {} posted twice at node {n} while outstanding",
                wr.wr_id
            ));
        }
        if wr.op == Op::Read {
            // The NI may write the read's local buffer while it is pending.
            self.nodes[(n - self.base) as usize].mem.allow_writes(
                wr.local_pdid,
                wr.local_addr,
                wr.local_addr + wr.len,
            );
        }
        self.checker.on_post(&self.nodes, n, &wr);
        let now = self.now;
        if let Err(e) = self.nodes[(n - self.base) as usize].engine.post(now, wr) {
            self.checker.violation(format!("post refused: {e}"));
        }
        self.service(n);
    }

    fn on_tx_ready(&mut self, n: NodeId) {
        let now = self.now;
        let node = &mut self.nodes[(n - self.base) as usize];
        node.tx_pending = false;
        // The NI prepares a packet (translation, DMA read, per-packet processing) while the
        // previous one is still serializing: a one-deep pipeline. It waits only for its own
        // receive-side work (`ni_ready_at`) and for the previous packet to start (`tx_prep_at`).
        let ready = node.tx_prep_at.max(node.ni_ready_at);
        if now < ready {
            node.tx_pending = true;
            self.schedule(ready, Ev::TxReady { node: n });
            return;
        }
        let b = match self.free_bufs.pop() {
            Some(b) => b,
            None => {
                self.bufs.push(LinkBuf {
                    bytes: vec![0; self.buf_len],
                    small: [0; linkbuf::COMPACT_CAP],
                    len: 0,
                    src: 0,
                    dst: 0,
                    intact: true,
                    compact: false,
                    zero_payload: false,
                });
                (self.bufs.len() - 1) as u32
            }
        };
        let node = &mut self.nodes[(n - self.base) as usize];
        node.mem.take_zero_read();
        let mut view = node.mem.ni_view(&mut node.iommu);
        let out = node
            .engine
            .poll_transmit(now, &mut self.bufs[b as usize].bytes, &mut view);
        match out {
            None => self.free_bufs.push(b),
            Some(tx) => {
                // A data packet's payload is what the engine's last read filled.
                let zero_payload = node.mem.take_zero_read() && tx.is_data;
                let lat = node.mem.take_latency();
                let link_bytes = if tx.is_data {
                    tx.len - DATA_HEADER_LEN + self.header_bytes
                } else {
                    self.header_bytes
                };
                // Packets mostly have one of two sizes: reuse the last serialization time
                // rather than redo the floating-point division and rounding for each.
                let ser = if link_bytes == self.last_ser.0 {
                    self.last_ser.1
                } else {
                    let ser = serialization(link_bytes, self.link_gbps);
                    self.last_ser = (link_bytes, ser);
                    ser
                };
                let start = (now + lat + self.ni_packet).max(node.tx_free_at);
                node.tx_free_at = start + ser;
                node.tx_prep_at = start;
                let hops = self.hops.get(n, tx.dst) as u64;
                let arrival = start + ser + self.hop.times(hops);
                let f = if self.faults_any {
                    self.link.fate()
                } else {
                    Fate::INTACT
                };
                // The engine emitted the packet without its checksum (`Checksum::None`). Its checksum is computed here only
                // when someone can see it: the trace hash (which covers every byte) or the
                // fault injector's corruption (the receiver then verifies it). A packet that
                // neither sees reaches its receiver through `handle_packet_intact`, which
                // never reads the checksum field; the copy of a duplicated packet is taken
                // after this point. So traces, engine counters and every result are
                // bit-identical to sealing at emit, without one CRC32 per packet.
                if self.cfg.trace || f.corrupt_at.is_some() {
                    unpinned_wire::part::seal(&mut self.bufs[b as usize].bytes[..tx.len]);
                }
                if self.cfg.trace {
                    trace_into(
                        &mut self.trace,
                        now,
                        2,
                        n,
                        &self.bufs[b as usize].bytes[..tx.len],
                    );
                }
                if f.copies == 0 {
                    self.free_bufs.push(b);
                } else if self.compact_ok
                    && linkbuf::compactable(&self.bufs[b as usize].bytes[..tx.len], tx.is_data)
                {
                    // A small packet, or one without payload bytes, need not hold a payload-
                    // sized buffer while it waits at a port: keep it compactly (see linkbuf).
                    let c = match self.free_compact.pop() {
                        Some(c) => c,
                        None => {
                            self.bufs.push(LinkBuf {
                                bytes: Vec::new(),
                                small: [0; linkbuf::COMPACT_CAP],
                                len: 0,
                                src: 0,
                                dst: 0,
                                intact: true,
                                compact: true,
                                zero_payload: false,
                            });
                            (self.bufs.len() - 1) as u32
                        }
                    };
                    let mut kept = [0u8; linkbuf::COMPACT_CAP];
                    linkbuf::compact(&self.bufs[b as usize].bytes[..tx.len], &mut kept);
                    let small = &mut self.bufs[c as usize];
                    small.small = kept;
                    (small.len, small.src, small.dst, small.intact) =
                        (tx.len as u32, n, tx.dst, true);
                    self.free_bufs.push(b);
                    self.deliver(tx.dst, c, arrival + f.extra, ser);
                } else {
                    let lb = &mut self.bufs[b as usize];
                    (lb.len, lb.src, lb.dst, lb.intact, lb.zero_payload) =
                        (tx.len as u32, n, tx.dst, true, zero_payload);
                    if let Some(i) = f.corrupt_at {
                        let i = i as usize % tx.len;
                        lb.bytes[i] ^= 0x5a;
                        lb.intact = false;
                    }
                    if f.copies == 2 {
                        let lb = &self.bufs[b as usize];
                        let copy = LinkBuf {
                            bytes: lb.bytes.clone(),
                            ..*lb
                        };
                        self.bufs.push(copy);
                        let b2 = (self.bufs.len() - 1) as u32;
                        self.deliver(tx.dst, b2, arrival + ser, ser);
                    }
                    self.deliver(tx.dst, b, arrival + f.extra, ser);
                }
            }
        }
        self.service(n);
    }

    fn deliver(&mut self, dst: NodeId, buf: u32, arrival: Instant, ser: Duration) {
        if self.windowed && dst < self.cfg.nodes {
            // The port is claimed at the window's end, by the destination's partition.
            let src = self.bufs[buf as usize].src;
            self.sent.push(Sent {
                send_at: self.now,
                src,
                dst,
                raw: arrival,
                ser,
                buf,
            });
            return;
        }
        let Some(rx_free_at) = self.rx_free_at.get_mut(dst as usize) else {
            // Back to the pool it came from (a compact buffer cannot take a full packet).
            if self.bufs[buf as usize].compact {
                self.free_compact.push(buf);
            } else {
                self.free_bufs.push(buf);
            }
            return;
        };
        // The receiver's input port serializes packets too. So a node's arrivals are queued
        // in their time order: its own lane of the queue.
        let at = arrival.max(*rx_free_at + ser);
        *rx_free_at = at;
        self.queue.push_lane(dst, at, Ev::Arrive { buf });
    }

    fn on_arrive(&mut self, b: u32) {
        let now = self.now;
        let lb = &self.bufs[b as usize];
        let (src, dst, len, intact, zero_payload) =
            (lb.src, lb.dst, lb.len as usize, lb.intact, lb.zero_payload);
        if lb.compact {
            self.arrive_compact(b, src, dst, len);
            return;
        }
        // The packet is read in place: the link buffers and the nodes are disjoint fields.
        let buf = &self.bufs[b as usize].bytes;
        if self.cfg.trace {
            trace_into(&mut self.trace, now, 3, dst, &buf[..len]);
        }
        self.arrived = Some((src, dst));
        self.arrived_write = write_target(&buf[..len]);
        let node = &mut self.nodes[(dst - self.base) as usize];
        let mut view = node.mem.ni_view(&mut node.iommu);
        // A malformed or corrupted packet is dropped (or CRC-NACKed) by the engine itself. The
        // checksum was computed when the sender emitted the packet; only a packet the fault
        // injector corrupted can fail it, so only those are verified again.
        let _ = if intact {
            if zero_payload && len >= DATA_HEADER_LEN {
                view.vouch_zero(
                    &buf[DATA_PAYLOAD_OFFSET..DATA_PAYLOAD_OFFSET + (len - DATA_HEADER_LEN)],
                );
            }
            node.engine
                .handle_packet_intact(now, src, &buf[..len], &mut view)
        } else {
            node.engine.handle_packet(now, src, &buf[..len], &mut view)
        };
        node.mem.clear_zero_vouch();
        let lat = node.mem.take_latency();
        node.ni_ready_at = node.ni_ready_at.max(now + self.ni_packet + lat);
        self.free_bufs.push(b);
        self.service(dst);
    }

    /// [`Sim::on_arrive`] for a compact packet: expanded into the zeroed scratch buffer, byte
    /// for byte what the sender emitted (no trace and no corruption in compact runs).
    fn arrive_compact(&mut self, b: u32, src: NodeId, dst: NodeId, len: usize) {
        let now = self.now;
        if self.rx_zeroed.len() < self.buf_len {
            self.rx_zeroed = vec![0; self.buf_len];
        }
        self.arrived = Some((src, dst));
        let node = &mut self.nodes[(dst - self.base) as usize];
        let mut view = node.mem.ni_view(&mut node.iommu);
        let packet = linkbuf::expand(&self.bufs[b as usize].small, len, &mut self.rx_zeroed);
        self.arrived_write = write_target(packet);
        let _ = node
            .engine
            .handle_packet_intact(now, src, packet, &mut view);
        linkbuf::clear(len, &mut self.rx_zeroed);
        let lat = node.mem.take_latency();
        node.ni_ready_at = node.ni_ready_at.max(now + self.ni_packet + lat);
        self.free_compact.push(b);
        self.service(dst);
    }

    fn on_engine_timer(&mut self, n: NodeId) {
        let now = self.now;
        let node = &mut self.nodes[(n - self.base) as usize];
        if node.engine_timer != Some(now) {
            // Superseded by an earlier deadline: nothing happens, so it is not an event.
            self.events -= 1;
            self.stale_events += 1;
            return;
        }
        node.engine_timer = None;
        node.engine.handle_timeout(now);
        self.trace_event(4, n, &[]);
        self.service(n);
    }

    fn on_handler_timer(&mut self, n: NodeId) {
        let now = self.now;
        let node = &mut self.nodes[(n - self.base) as usize];
        if node.handler_timer != Some(now) {
            self.events -= 1;
            self.stale_events += 1;
            return;
        }
        node.handler_timer = None;
        node.handler_touched = true;
        node.handler.handle_timeout(now, &node.mem);
        self.trace_event(5, n, &[]);
        self.service(n);
    }

    /// After any input to node `n`: route its outputs, then re-arm its timers and transmitter.
    #[inline]
    fn service(&mut self, n: NodeId) {
        let node = &mut self.nodes[(n - self.base) as usize];
        if node.handler_touched
            || node.mem.has_interrupts()
            || node.engine.has_events()
            || node.mem.has_violations()
        {
            self.service_all(n);
            return;
        }
        // Nothing to route (most packets): only the engine's timer and the transmitter, as
        // at the end of `service_all`, without re-borrowing the node for each.
        if let Some(t) = node.engine.poll_timeout() {
            if node.engine_timer.is_none_or(|cur| t < cur) {
                node.engine_timer = Some(t);
                self.queue.push_far(t, Ev::EngineTimer { node: n });
            }
        }
        if !node.tx_pending && node.engine.wants_transmit() {
            node.tx_pending = true;
            let at = self.now.max(node.tx_prep_at).max(node.ni_ready_at);
            self.queue.push(at, Ev::TxReady { node: n });
        }
    }

    /// [`Sim::service`] when the node has outputs to route (events, interrupts, handler work).
    #[inline(never)]
    fn service_all(&mut self, n: NodeId) {
        let now = self.now;
        loop {
            let node = &mut self.nodes[(n - self.base) as usize];
            for _ in 0..node.mem.take_interrupts() {
                node.handler.handle_interrupt(now);
                node.handler_touched = true;
            }
            let mut progressed = false;
            while let Some(ev) = self.nodes[(n - self.base) as usize].engine.poll_event() {
                progressed = true;
                match ev {
                    EngineEvent::Completion(c) => {
                        self.on_completion(n, c);
                    }
                    EngineEvent::Fault(rec) => {
                        let node = &mut self.nodes[(n - self.base) as usize];
                        node.handler.handle_fifo_push(now, rec);
                        node.handler_touched = true;
                    }
                }
            }
            let node = &mut self.nodes[(n - self.base) as usize];
            // The handler changes only through its own inputs: skip it on the hot path
            // (packets that do not fault) unless it was given something.
            if !node.handler_touched {
                break;
            }
            if node.handler.poll_timeout().is_some_and(|t| t <= now) {
                node.handler.handle_timeout(now, &node.mem);
            }
            while let Some(a) = node.handler.poll_action() {
                progressed = true;
                match a {
                    HandlerAction::PageIn { pdid, page_addr } => {
                        node.mem.make_present(pdid, page_addr)
                    }
                    HandlerAction::Reply(BlockReply::SendErr {
                        transfer,
                        block,
                        block_seq,
                    }) => node.engine.post_err(transfer, block, block_seq),
                    HandlerAction::Reply(BlockReply::ResumeSource {
                        transfer,
                        block,
                        block_seq,
                    }) => node
                        .engine
                        .handle_source_resolved(now, transfer, block, block_seq),
                }
            }
            if !progressed {
                break;
            }
        }
        let node = &mut self.nodes[(n - self.base) as usize];
        // Checked first: iterating (and dropping) an empty taken vector on every event cost
        // ~10% of the standard load.
        if node.mem.has_violations() {
            for v in node.mem.take_violations() {
                self.checker.violation(v);
            }
        }
        let node = &mut self.nodes[(n - self.base) as usize];
        if std::mem::take(&mut node.handler_touched) {
            if let Some(t) = node.handler.poll_timeout() {
                if node.handler_timer.is_none_or(|cur| t < cur) {
                    node.handler_timer = Some(t);
                    self.queue.push_far(t, Ev::HandlerTimer { node: n });
                }
            }
        }
        let node = &mut self.nodes[(n - self.base) as usize];
        if let Some(t) = node.engine.poll_timeout() {
            if node.engine_timer.is_none_or(|cur| t < cur) {
                node.engine_timer = Some(t);
                self.queue.push_far(t, Ev::EngineTimer { node: n });
            }
        }
        let node = &mut self.nodes[(n - self.base) as usize];
        if !node.tx_pending && node.engine.wants_transmit() {
            node.tx_pending = true;
            let at = now.max(node.tx_prep_at).max(node.ni_ready_at);
            self.schedule(at, Ev::TxReady { node: n });
        }
    }

    fn on_completion(&mut self, n: NodeId, c: Completion) {
        let Some(slot) = self.by_wr.remove(&(n, c.wr_id)) else {
            self.checker.violation(format!(
                "completion of wr_id {} at node {n} without an outstanding post (duplicate?)",
                c.wr_id
            ));
            return;
        };
        let mut rec = self.pending.remove(slot).expect("pending post");
        rec.completion = Some(c);
        let wr = rec.wr;
        self.completed.push(rec);
        if wr.op == Op::Read {
            self.nodes[(n - self.base) as usize].mem.disallow_writes(
                wr.local_pdid,
                wr.local_addr,
                wr.local_addr + wr.len,
            );
        }
        self.checker.on_completion(&self.nodes, n, &wr, &c);
    }
}

fn trace_into(h: &mut Xxh3, now: Instant, kind: u8, node: NodeId, bytes: &[u8]) {
    h.update(&now.0.to_le_bytes());
    h.update(&[kind]);
    h.update(&node.to_le_bytes());
    h.update(bytes);
}
