//! The AA event loop: processes issuing operations, target NICs/IOMMUs, access logs or AM
//! mailboxes, handlers on core timelines, flushes, acks and responses.
//!
//! Time is in ns. Every core (a process's core, an AA-Poll runtime thread or AA-SP hardware thread,
//! an AM-Onload dedicated core) is a timeline `free_at`: work starts at `max(now, free_at)` and
//! pushes it. Handler work scheduled on a process's core therefore delays that process's next
//! operation (its `AppStep` defers until the core is free): contention comes from CPU time, not
//! from a constant. Entries become visible when the IOMMU has written them (a `Commit` event), and
//! a full log stalls the access (never a loss): its ack is withheld, so the source's window of
//! outstanding operations fills and the source waits: back-pressure through the network.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

use rustc_hash::{FxHashMap, FxHashSet};
use unpinned_aa::access::Decision;
use unpinned_aa::atomics::AtomicOp;
use unpinned_aa::flush::FlushGate;
use unpinned_aa::log::{AccessLog, EntryHeader, EntryKind};
use unpinned_aa::notify::{Notifier, NotifyPolicy};
use unpinned_aa::profile::AaProfile;
use unpinned_aa::pte::{Iuid, PageBits};
use unpinned_core::memory::PAGE_BYTES;
use unpinned_core::rng::{rng_for, Rng, SimRng};
use unpinned_core::time::{Duration, Instant};

use super::platform::{IotlbConfig, Platform, PlatformStats};
use super::scheme::Scheme;

/// Virtual address of every process's access log / mailbox (each process has its own space).
pub const LOG_BASE: u64 = 0x7f00_0000_0000;
/// Address of the reserved flushing page (active flush, spec "Active flush").
pub const FLUSH_PAGE: u64 = 0x7e00_0000_0000;
/// Address marker of an AM flush request (reply-based flush).
const AM_FLUSH_ADDR: u64 = u64::MAX;

/// One application operation, produced by a [`Workload`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppOp {
    /// Compute for `ns` (the spec's computation ratio).
    Compute(u64),
    /// CPU-local work of `accesses` memory accesses.
    Local(u32),
    /// An active put of `bytes` (non-blocking; window-limited). `value` is the payload word.
    ActivePut {
        /// Target process.
        target: u32,
        /// Target address.
        addr: u64,
        /// Payload word.
        value: u64,
        /// Payload bytes.
        bytes: u32,
    },
    /// An active message; `reply` makes it blocking (the handler's return value comes back).
    AmSend {
        /// Target process.
        target: u32,
        /// Address / key the handler acts on.
        addr: u64,
        /// Payload word.
        value: u64,
        /// Payload bytes.
        bytes: u32,
        /// Wait for the handler's reply (carrying `reply_bytes`).
        reply_bytes: Option<u32>,
    },
    /// A remote atomic (blocking: the old value is the result).
    Atomic {
        /// Target process.
        target: u32,
        /// Word address.
        addr: u64,
        /// Operation.
        op: AtomicOp,
    },
    /// A plain put (non-blocking).
    Put {
        /// Target process.
        target: u32,
        /// Address.
        addr: u64,
        /// Payload word (applied to the workload's memory).
        value: u64,
        /// Bytes.
        bytes: u32,
    },
    /// RMA flush: wait until every put of this process is acknowledged (result 0).
    Flush,
    /// A plain get (blocking; the result is the first word).
    Get {
        /// Target process.
        target: u32,
        /// Address.
        addr: u64,
        /// Bytes.
        bytes: u32,
    },
    /// End of run: wait for all outstanding operations; then an active flush (AA) or a
    /// reply-based AM flush to every target this process sent active accesses/messages to.
    FlushAll,
    /// An allreduce of `bytes` per process (recursive doubling over all processes).
    Allreduce(u32),
}

/// The application and its data, as the model drives them.
pub trait Workload {
    /// Next operation of process `p`; `result` is the value of its previous blocking
    /// operation. `None`: the process has finished.
    fn next(&mut self, p: u32, result: Option<u64>) -> Option<AppOp>;
    /// A remote atomic executed by `target`'s NIC.
    fn atomic(&mut self, target: u32, addr: u64, op: AtomicOp) -> u64 {
        let _ = (target, addr, op);
        0
    }
    /// A plain put applied at `target`.
    fn put(&mut self, target: u32, addr: u64, value: u64) {
        let _ = (target, addr, value);
    }
    /// A plain get served by `target`.
    fn get(&mut self, target: u32, addr: u64) -> u64 {
        let _ = (target, addr);
        0
    }
    /// What `target`'s IOMMU logs for a plain put (`is_put`) or get at `addr`: the page bits
    /// WL/WLD or RL/RLD of spec "IOMMU extensions".
    fn log_mode(&self, target: u32, addr: u64, is_put: bool) -> LogMode {
        let _ = (target, addr, is_put);
        LogMode::None
    }
    /// The handler of `target` processes one entry/message from `source`.
    fn handle(
        &mut self,
        target: u32,
        source: u32,
        kind: EntryKind,
        addr: u64,
        value: u64,
    ) -> Handled;
}

/// What the IOMMU logs for a plain access (page bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogMode {
    /// Nothing (plain RMA).
    None,
    /// Metadata only (WL / RL).
    Meta,
    /// Metadata and data (WLD / RLD).
    Data,
}

impl LogMode {
    /// The page bits of a readable, writable page logging in this mode (one log per process,
    /// so the IUID does not matter to the model).
    pub fn bits(self) -> PageBits {
        let (log, data) = match self {
            LogMode::None => (false, false),
            LogMode::Meta => (true, false),
            LogMode::Data => (true, true),
        };
        PageBits {
            wl: log,
            wld: data,
            rl: log,
            rld: data,
            e: true,
            ..PageBits::plain()
        }
    }
}

/// The IOMMU's decision (crates/aa's, shared with the live runtime) for message `m` at its
/// target: plain and logged puts and gets by the workload's page bits, active puts on an
/// active-put page. Messages that are not IOMMU accesses (AM mailbox deposits, atomics,
/// flushes, collectives) have none.
fn decision<W: Workload>(wl: &W, q: u32, m: &Msg) -> Option<Decision> {
    match m.kind {
        MsgKind::Put => Some(Decision::put(wl.log_mode(q, m.addr, true).bits())),
        MsgKind::Get => Some(Decision::get(wl.log_mode(q, m.addr, false).bits())),
        MsgKind::ActivePut => Some(Decision::put(PageBits::active_put(Iuid::default()))),
        _ => None,
    }
}

/// What one handler invocation on one entry did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Handled {
    /// Memory accesses made (70 ns each).
    pub accesses: u32,
    /// Bytes copied (at the memory bandwidth).
    pub copy_bytes: u64,
    /// Value of the reply, for messages that want one.
    pub reply: u64,
}

impl Handled {
    /// `accesses` memory accesses, nothing else.
    pub fn accesses(accesses: u32) -> Handled {
        Handled {
            accesses,
            ..Handled::default()
        }
    }
}

/// What to simulate.
#[derive(Clone, Debug)]
pub struct WorldConfig {
    /// Nodes.
    pub nodes: u32,
    /// Scheme.
    pub scheme: Scheme,
    /// IOTLB geometry.
    pub iotlb: IotlbConfig,
    /// Two nodes on the spec's 1 Gb/s Ethernet instead of the torus.
    pub ethernet: bool,
    /// Outstanding non-blocking operations per process.
    pub window: u32,
    /// Master seed.
    pub seed: u64,
    /// Message-level network faults (a reliable network recovers them): probability that a
    /// message is lost once and retransmitted after `retransmit_ns`, and that it is delivered
    /// twice. Receivers deduplicate by (source, transaction).
    pub loss: f64,
    /// Probability of a duplicate delivery.
    pub duplicate: f64,
    /// Retransmission delay of a lost message.
    pub retransmit_ns: u64,
    /// Log / mailbox size per process (overrides the profile; small values exercise
    /// back-pressure).
    pub log_bytes: u32,
    /// An IOMMU in the DMA path (default). `false` models a NIC writing physical memory
    /// directly: plain puts and gets pay no translation or IOMMU work (spec "the bandwidth
    /// cost of putting the IOMMU in the path at all"); active accesses need the IOMMU and
    /// still pay it.
    pub iommu: bool,
}

impl WorldConfig {
    /// Defaults from the profile for `nodes` nodes and `scheme`.
    pub fn new(prof: &AaProfile, nodes: u32, scheme: Scheme, seed: u64) -> WorldConfig {
        WorldConfig {
            nodes,
            scheme,
            iotlb: IotlbConfig {
                entries: prof.iommu.iotlb_entries,
                ways: prof.iommu.iotlb_ways,
                policy: prof.iommu.iotlb_policy.parse().expect("validated profile"),
            },
            ethernet: false,
            window: prof.net.window,
            seed,
            loss: 0.0,
            duplicate: 0.0,
            retransmit_ns: 20_000,
            log_bytes: if scheme.is_am() {
                prof.am.mailbox_bytes
            } else {
                prof.iommu.log_bytes
            },
            iommu: true,
        }
    }

    /// Application processes per node (cores minus AM-Onload's dedicated ones).
    pub fn app_per_node(&self, prof: &AaProfile) -> u32 {
        prof.cpu.cores_per_node - self.scheme.onload_cores()
    }
}

/// Receive-side CPU time of a run, ns, by component (spec "Where the schemes' costs come
/// from"). Every component is also on the timeline of the core that did it; `app_ns` is the
/// part done on the computing processes' cores (AA-Int, AM, AM-Exp, AM-Ints), the rest was
/// done by a polling agent (AA-Poll's runtime thread, AA-SP's hardware thread, AM-Onload's
/// dedicated cores). RMA has none: the target NIC executes its atomics and gets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecvCpu {
    /// Polls: of a mailbox flag or log head/tail in memory (one access), of a scratchpad. The
    /// computing processes' polls all count, empty ones included; an agent's count once per
    /// handler run (the poll that found entries: its empty polls take no one's time).
    pub poll_ns: u64,
    /// Taking entries or messages out: AA reads the entry in place (one access) and publishes
    /// the new head once per run; AM reads the message header, copies the payload out of the
    /// receive buffer and releases the slot.
    pub extract_ns: u64,
    /// The handlers themselves (the workload's memory accesses and copies, posting replies).
    pub handler_ns: u64,
    /// Interrupt entry (AA-Int, AM-Ints).
    pub interrupt_ns: u64,
    /// The part of the four above spent on the computing processes' cores.
    pub app_ns: u64,
}

impl RecvCpu {
    /// All receive-side CPU time, ns.
    pub fn total_ns(&self) -> u64 {
        self.poll_ns + self.extract_ns + self.handler_ns + self.interrupt_ns
    }
}

/// What a run measured.
#[derive(Clone, Copy, Debug, Default)]
pub struct RunStats {
    /// Time the last process finished, ns.
    pub makespan_ns: u64,
    /// Events processed.
    pub events: u64,
    /// Network and IOTLB counters.
    pub platform: PlatformStats,
    /// Accesses stalled by a full log/mailbox (each retried, none lost).
    pub stalls: u64,
    /// Handler invocations.
    pub handler_runs: u64,
    /// Entries/messages handled.
    pub handled: u64,
    /// Interrupts taken.
    pub interrupts: u64,
    /// Polls made.
    pub polls: u64,
    /// Receive-side CPU time by component.
    pub recv: RecvCpu,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MsgKind {
    ActivePut,
    AmSend,
    Atomic,
    Put,
    Get,
    ActiveFlush,
    Coll(u32),
    Response,
    Ack,
}

#[derive(Clone, Copy, Debug)]
struct Msg {
    kind: MsgKind,
    src: u32,
    dst: u32,
    txn: u32,
    addr: u64,
    value: u64,
    op: AtomicOp,
    bytes: u32,
    reply_bytes: Option<u32>,
    /// For acks/responses: whether the acked operation was a plain put.
    was_put: bool,
    /// For responses: it answers a flush.
    is_flush: bool,
}

/// Payload bytes a message carries on the link (requests of gets and atomics, acks and flush
/// answers are one word).
fn wire_bytes(m: &Msg) -> u32 {
    match m.kind {
        MsgKind::ActivePut | MsgKind::AmSend | MsgKind::Put | MsgKind::Coll(_) => m.bytes,
        MsgKind::Response if !m.is_flush => m.bytes,
        _ => 8,
    }
}

#[derive(Clone, Copy, Debug)]
enum Ev {
    AppStep(u32),
    NicArrive(Msg),
    Commit(Msg),
    SrcArrive(Msg),
    HandlerWake(u32),
}

/// A heap entry: the event itself lives in a slab, so heap moves stay small (the heap is the
/// hot path of the model).
struct Queued {
    t: u64,
    seq: u64,
    slot: u32,
}
impl PartialEq for Queued {
    fn eq(&self, o: &Self) -> bool {
        (self.t, self.seq) == (o.t, o.seq)
    }
}
impl Eq for Queued {}
impl PartialOrd for Queued {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Queued {
    fn cmp(&self, o: &Self) -> Ordering {
        (o.t, o.seq).cmp(&(self.t, self.seq))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wait {
    Running,
    Result,
    Window,
    Drain,
    Puts,
    Flushes,
    Coll,
    Done,
}

struct Proc {
    node: u32,
    local: u16,
    core_free: u64,
    hw_free: u64,
    wait: Wait,
    pending: Option<AppOp>,
    result: Option<u64>,
    outstanding: u32,
    puts_unacked: u32,
    flushes_pending: u32,
    touched: FxHashSet<u32>,
    txn: u32,
    log: AccessLog,
    /// Payload bytes of the messages in an AM mailbox, in log order (what the receiver
    /// copies out).
    payloads: VecDeque<u32>,
    stalled: VecDeque<Msg>,
    gate: FlushGate<Msg>,
    notifier: Notifier,
    wake_at: Option<u64>,
    last_poll: u64,
    poll_iv: u64,
    exp_skip: u32,
    skip_left: u32,
    coll_round: u32,
    coll_recv: u64,
    coll_bytes: u32,
    done_at: u64,
    /// (source, txn) already received (only with faults): duplicates are dropped.
    seen: FxHashSet<(u32, u32)>,
}

/// The simulated cluster.
pub struct AaWorld<W: Workload> {
    prof: AaProfile,
    cfg: WorldConfig,
    /// The workload (its data can be inspected after the run).
    pub wl: W,
    pf: Platform,
    procs: Vec<Proc>,
    hcore_free: Vec<Vec<u64>>,
    heap: BinaryHeap<Queued>,
    slab: Vec<Option<Ev>>,
    free_slots: Vec<u32>,
    seq: u64,
    now: u64,
    rng: SimRng,
    pair_last: FxHashMap<(u32, u32), u64>,
    stats: RunStats,
    app_per_node: u32,
}

impl<W: Workload> AaWorld<W> {
    /// A world of `cfg.nodes` nodes running `wl`.
    pub fn new(prof: &AaProfile, cfg: WorldConfig, wl: W) -> AaWorld<W> {
        let app = cfg.app_per_node(prof);
        let p = cfg.nodes * app;
        let policy = match cfg.scheme {
            Scheme::AaInt => NotifyPolicy::Interrupt {
                threshold: prof.notify.int_threshold,
                period: Duration::from_us_f64(prof.notify.int_period_us),
            },
            Scheme::AmInts { batch } => NotifyPolicy::Interrupt {
                threshold: batch as u64,
                period: Duration::from_us_f64(prof.notify.int_period_us),
            },
            Scheme::AaSp => NotifyPolicy::Scratchpad {
                poll: Duration::from_ns(prof.cpu.scratchpad_ns),
            },
            _ => NotifyPolicy::Polling {
                interval: Duration::from_ns(prof.am.idle_poll_ns),
            },
        };
        let has_log = cfg.scheme != Scheme::Rma;
        let procs = (0..p)
            .map(|i| Proc {
                node: i / app,
                local: (i % app) as u16,
                core_free: 0,
                hw_free: 0,
                wait: Wait::Running,
                pending: None,
                result: None,
                outstanding: 0,
                puts_unacked: 0,
                flushes_pending: 0,
                touched: FxHashSet::default(),
                txn: 0,
                log: AccessLog::new(if has_log { cfg.log_bytes } else { 64 }),
                payloads: VecDeque::new(),
                stalled: VecDeque::new(),
                gate: FlushGate::new(),
                notifier: Notifier::new(policy),
                wake_at: None,
                last_poll: 0,
                poll_iv: prof.am.idle_poll_ns,
                exp_skip: 0,
                skip_left: 0,
                coll_round: 0,
                coll_recv: 0,
                coll_bytes: 0,
                done_at: 0,
                seen: FxHashSet::default(),
            })
            .collect();
        let pf = Platform::new(prof, cfg.nodes, cfg.iotlb, cfg.ethernet, cfg.seed);
        let onload = cfg.scheme.onload_cores() as usize;
        let mut w = AaWorld {
            prof: prof.clone(),
            hcore_free: vec![vec![0; onload]; cfg.nodes as usize],
            rng: rng_for(cfg.seed, "aa.world.faults"),
            cfg,
            wl,
            pf,
            procs,
            heap: BinaryHeap::new(),
            slab: Vec::new(),
            free_slots: Vec::new(),
            seq: 0,
            now: 0,
            pair_last: FxHashMap::default(),
            stats: RunStats::default(),
            app_per_node: app,
        };
        for i in 0..p {
            w.schedule(0, Ev::AppStep(i));
        }
        w
    }

    /// Application processes.
    pub fn procs(&self) -> u32 {
        self.procs.len() as u32
    }

    fn schedule(&mut self, t: u64, ev: Ev) {
        self.seq += 1;
        let slot = match self.free_slots.pop() {
            Some(i) => {
                self.slab[i as usize] = Some(ev);
                i
            }
            None => {
                self.slab.push(Some(ev));
                (self.slab.len() - 1) as u32
            }
        };
        self.heap.push(Queued {
            t,
            seq: self.seq,
            slot,
        });
    }

    fn mem(&self, n: u32) -> u64 {
        n as u64 * self.prof.cpu.memory_access_ns
    }

    /// Run to completion. Errors if a process never finished or a log was left non-empty
    /// (a deadlock or a lost entry: a bug).
    pub fn run(&mut self) -> Result<RunStats, String> {
        while let Some(q) = self.heap.pop() {
            self.now = q.t;
            self.stats.events += 1;
            let ev = self.slab[q.slot as usize].take().expect("scheduled event");
            self.free_slots.push(q.slot);
            match ev {
                Ev::AppStep(p) => self.app_step(p),
                Ev::NicArrive(m) => self.nic_arrive(m),
                Ev::Commit(m) => self.commit(m),
                Ev::SrcArrive(m) => self.src_arrive(m),
                Ev::HandlerWake(p) => self.handler_wake(p),
            }
        }
        for (i, p) in self.procs.iter().enumerate() {
            if p.wait != Wait::Done {
                return Err(format!(
                    "process {i} stuck in {:?} (seed {})",
                    p.wait, self.cfg.seed
                ));
            }
            if p.log.ready_entries() != 0
                || !p.stalled.is_empty()
                || p.log.in_flight() != 0
                || p.gate.held() != 0
            {
                return Err(format!(
                    "process {i}: log not drained (seed {})",
                    self.cfg.seed
                ));
            }
        }
        self.stats.makespan_ns = self.procs.iter().map(|p| p.done_at).max().unwrap_or(0);
        self.stats.platform = self.pf.stats;
        Ok(self.stats)
    }

    // ---- messages ----

    fn node_of(&self, p: u32) -> u32 {
        p / self.app_per_node
    }

    /// Send `m` (from the node of `from` to the node of `to`) at `t`.
    fn send(&mut self, from: u32, to: u32, m: Msg, t: u64, to_source: bool) {
        let (a, b) = (self.node_of(from), self.node_of(to));
        let mut arrive = if self.is_completion(&m) {
            self.pf.completion(a, b, t)
        } else {
            self.pf.send(a, b, wire_bytes(&m), t)
        };
        let faulty = self.cfg.loss > 0.0 || self.cfg.duplicate > 0.0;
        if faulty {
            if self.rng.gen_bool(self.cfg.loss) {
                arrive += self.cfg.retransmit_ns;
            }
            // A reliable network delivers each pair's messages in order (sequence numbers):
            // a retransmitted message holds back the ones after it.
            let last = self.pair_last.entry((from, to)).or_insert(0);
            arrive = arrive.max(*last);
            *last = arrive;
        }
        let ev = if to_source {
            Ev::SrcArrive(m)
        } else {
            Ev::NicArrive(m)
        };
        self.schedule(arrive, ev);
        if faulty && self.rng.gen_bool(self.cfg.duplicate) {
            let extra = self.rng.gen_range(0..self.cfg.retransmit_ns.max(1));
            self.schedule(arrive + extra, ev);
        }
    }

    /// An ack on the torus is the put's completion, not a message of its own (spec: on the
    /// reference platform a one-directional put is one message; a get or an atomic is a
    /// request and a response). On the Ethernet pair it is a frame like any other.
    fn is_completion(&self, m: &Msg) -> bool {
        m.kind == MsgKind::Ack && !self.cfg.ethernet
    }

    fn msg(&mut self, p: u32, kind: MsgKind, dst: u32, addr: u64, value: u64, bytes: u32) -> Msg {
        let pr = &mut self.procs[p as usize];
        pr.txn += 1;
        Msg {
            kind,
            src: p,
            dst,
            txn: pr.txn,
            addr,
            value,
            op: AtomicOp::FetchAdd(0),
            bytes,
            reply_bytes: None,
            was_put: false,
            is_flush: false,
        }
    }

    fn respond(&mut self, req: &Msg, kind: MsgKind, value: u64, bytes: u32, t: u64) {
        let m = Msg {
            kind,
            src: req.dst,
            dst: req.src,
            txn: req.txn,
            addr: req.addr,
            value,
            op: req.op,
            bytes,
            reply_bytes: None,
            was_put: req.kind == MsgKind::Put,
            is_flush: req.kind == MsgKind::ActiveFlush || req.addr == AM_FLUSH_ADDR,
        };
        self.send(req.dst, req.src, m, t, true);
    }

    // ---- application ----

    fn app_step(&mut self, p: u32) {
        let now = self.now;
        let pi = p as usize;
        if self.procs[pi].core_free > now {
            let t = self.procs[pi].core_free;
            self.schedule(t, Ev::AppStep(p));
            return;
        }
        let mut t = now;
        if self.cfg.scheme.app_polls() {
            t = self.app_poll(p, t);
        }
        let op = match self.procs[pi].pending.take() {
            Some(op) => Some(op),
            None => {
                let r = self.procs[pi].result.take();
                self.wl.next(p, r)
            }
        };
        let post = self.prof.cpu.post_ns;
        let window = self.cfg.window;
        let Some(op) = op else {
            let pr = &mut self.procs[pi];
            pr.wait = Wait::Done;
            pr.done_at = t;
            pr.core_free = t;
            // A finished process still serves its log (others may not be done).
            if self.cfg.scheme.app_polls() && self.procs[pi].log.ready_entries() > 0 {
                self.notify(p, t);
            }
            return;
        };
        let mut next_step = true;
        match op {
            AppOp::Compute(ns) => t += ns,
            AppOp::Local(n) => t += self.mem(n),
            AppOp::ActivePut {
                target,
                addr,
                value,
                bytes,
            }
            | AppOp::Put {
                target,
                addr,
                value,
                bytes,
            }
            | AppOp::AmSend {
                target,
                addr,
                value,
                bytes,
                reply_bytes: None,
            } => {
                if self.procs[pi].outstanding >= window {
                    self.block(p, Wait::Window, Some(op), t);
                    return;
                }
                let kind = match op {
                    AppOp::ActivePut { .. } => MsgKind::ActivePut,
                    AppOp::Put { .. } => MsgKind::Put,
                    _ => MsgKind::AmSend,
                };
                t += post;
                if kind == MsgKind::AmSend {
                    t += self.mem(self.prof.am.send_accesses);
                }
                let m = self.msg(p, kind, target, addr, value, bytes);
                let pr = &mut self.procs[pi];
                pr.outstanding += 1;
                if kind == MsgKind::Put {
                    pr.puts_unacked += 1;
                } else {
                    pr.touched.insert(target);
                }
                self.send(p, target, m, t, false);
            }
            AppOp::AmSend {
                target,
                addr,
                value,
                bytes,
                reply_bytes: Some(rb),
            } => {
                t += post + self.mem(self.prof.am.send_accesses);
                let mut m = self.msg(p, MsgKind::AmSend, target, addr, value, bytes);
                m.reply_bytes = Some(rb);
                self.procs[pi].touched.insert(target);
                self.send(p, target, m, t, false);
                next_step = false;
                self.block(p, Wait::Result, None, t);
            }
            AppOp::Atomic { target, addr, op } => {
                t += post;
                let mut m = self.msg(p, MsgKind::Atomic, target, addr, 0, 8);
                m.op = op;
                self.send(p, target, m, t, false);
                next_step = false;
                self.block(p, Wait::Result, None, t);
            }
            AppOp::Get {
                target,
                addr,
                bytes,
            } => {
                t += post;
                let m = self.msg(p, MsgKind::Get, target, addr, 0, bytes);
                self.send(p, target, m, t, false);
                next_step = false;
                self.block(p, Wait::Result, None, t);
            }
            AppOp::Flush => {
                if self.procs[pi].puts_unacked > 0 {
                    self.block(p, Wait::Puts, None, t);
                    return;
                }
                self.procs[pi].result = Some(0);
            }
            AppOp::FlushAll => {
                if self.procs[pi].outstanding > 0 {
                    self.block(p, Wait::Drain, Some(op), t);
                    return;
                }
                let mut targets: Vec<u32> = self.procs[pi].touched.drain().collect();
                targets.sort_unstable();
                if !targets.is_empty() && self.cfg.scheme != Scheme::Rma {
                    for target in &targets {
                        t += post;
                        let m = if self.cfg.scheme.is_am() {
                            self.msg(p, MsgKind::AmSend, *target, AM_FLUSH_ADDR, 0, 8)
                        } else {
                            self.msg(p, MsgKind::ActiveFlush, *target, FLUSH_PAGE, 0, 8)
                        };
                        self.send(p, *target, m, t, false);
                    }
                    self.procs[pi].flushes_pending = targets.len() as u32;
                    next_step = false;
                    self.block(p, Wait::Flushes, None, t);
                }
            }
            AppOp::Allreduce(bytes) => {
                let pr = &mut self.procs[pi];
                // `coll_recv` is not reset: a partner's round-0 message may already be here.
                pr.coll_round = 0;
                pr.coll_bytes = bytes;
                if self.procs.len() > 1 {
                    assert!(
                        self.procs.len().is_power_of_two(),
                        "allreduce by recursive doubling needs 2^k processes"
                    );
                    self.coll_send(p, t);
                    self.block(p, Wait::Coll, None, t);
                    self.coll_progress(p, t);
                    return;
                }
            }
        }
        self.procs[pi].core_free = t;
        if next_step {
            self.schedule(t, Ev::AppStep(p));
        }
    }

    fn block(&mut self, p: u32, wait: Wait, pending: Option<AppOp>, t: u64) {
        let pr = &mut self.procs[p as usize];
        pr.wait = wait;
        pr.pending = pending;
        pr.core_free = t;
        // A waiting process still serves its log (its progress engine keeps polling).
        if self.cfg.scheme.app_polls() && self.procs[p as usize].log.ready_entries() > 0 {
            self.notify(p, t);
        }
    }

    fn unblock(&mut self, p: u32, t: u64) {
        let pr = &mut self.procs[p as usize];
        pr.wait = Wait::Running;
        let at = t.max(pr.core_free);
        self.schedule(at, Ev::AppStep(p));
    }

    fn coll_send(&mut self, p: u32, t: u64) {
        let r = self.procs[p as usize].coll_round;
        let partner = p ^ (1 << r);
        let bytes = self.procs[p as usize].coll_bytes;
        let m = self.msg(p, MsgKind::Coll(r), partner, 0, 0, bytes);
        self.send(p, partner, m, t, false);
    }

    fn coll_progress(&mut self, p: u32, t: u64) {
        let rounds = self.procs.len().trailing_zeros();
        let mut t = t;
        loop {
            let pr = &self.procs[p as usize];
            if pr.wait != Wait::Coll || pr.coll_recv & (1 << pr.coll_round) == 0 {
                return;
            }
            // Reduce the received vector: stream it through memory.
            t = t.max(pr.core_free)
                + (pr.coll_bytes as f64 / self.prof.cpu.memory_gbps).ceil() as u64;
            let pr = &mut self.procs[p as usize];
            pr.coll_round += 1;
            pr.core_free = t;
            if pr.coll_round == rounds {
                pr.result = Some(0);
                self.unblock(p, t);
                return;
            }
            self.coll_send(p, t);
        }
    }

    /// A poll at an operation boundary: returns when the core is free again.
    fn app_poll(&mut self, p: u32, t: u64) -> u64 {
        let pi = p as usize;
        if self.cfg.scheme == Scheme::AmExp && self.procs[pi].skip_left > 0 {
            self.procs[pi].skip_left -= 1;
            return t;
        }
        self.stats.polls += 1;
        let poll = self.app_poll_ns();
        let (end, n) = self.run_handler(p, t + poll);
        let pr = &mut self.procs[pi];
        pr.last_poll = end;
        if self.cfg.scheme == Scheme::AmExp {
            if n == 0 {
                pr.exp_skip = (pr.exp_skip * 2 + 1).min(self.prof.am.exp_max_skip);
                pr.skip_left = pr.exp_skip;
            } else {
                pr.exp_skip = 0;
            }
        }
        end
    }

    // ---- target side ----

    fn pdid_vpn(&self, p: u32, addr: u64) -> (u16, u64) {
        (self.procs[p as usize].local, addr / PAGE_BYTES)
    }

    fn log_page(&self, p: u32) -> (u16, u64) {
        let pr = &self.procs[p as usize];
        (
            pr.local,
            (LOG_BASE + pr.log.reserved() % pr.log.size()) / PAGE_BYTES,
        )
    }

    fn nic_arrive(&mut self, m: Msg) {
        let q = m.dst;
        let node = self.node_of(q);
        let rx = self.pf.receive(node, wire_bytes(&m), self.now);
        if matches!(m.kind, MsgKind::Response | MsgKind::Ack) {
            unreachable!("responses go to SrcArrive");
        }
        if self.cfg.loss > 0.0 || self.cfg.duplicate > 0.0 {
            // Loss is recovered by retransmission (a delay), so the original always arrives
            // and is answered; a duplicate is recognised by (source, txn) and dropped, never
            // applied twice (atomics, log entries and counts stay exactly-once).
            if !self.procs[q as usize].seen.insert((m.src, m.txn)) {
                return;
            }
        }
        let page = self.pdid_vpn(q, m.addr);
        match m.kind {
            MsgKind::ActivePut => {
                // Translate the target page and the log page; write the entry, publish the tail.
                let lp = self.log_page(q);
                let done = self.pf.iommu(node, rx, &[page, lp], 2, 0);
                self.schedule(done, Ev::Commit(m));
            }
            MsgKind::AmSend => {
                // The NIC deposits the message in the mailbox (a plain write through the IOMMU).
                let lp = self.log_page(q);
                let done = self.pf.iommu(node, rx, &[lp], 2, 0);
                self.schedule(done, Ev::Commit(m));
            }
            MsgKind::ActiveFlush => {
                let done = self.pf.iommu(
                    node,
                    rx,
                    &[(self.procs[q as usize].local, FLUSH_PAGE / PAGE_BYTES)],
                    0,
                    0,
                );
                self.schedule(done, Ev::Commit(m));
            }
            MsgKind::Atomic => {
                let done = self.pf.iommu(node, rx, &[page], 1, 0);
                let v = self.wl.atomic(q, m.addr, m.op);
                self.respond(&m, MsgKind::Response, v, 8, done);
            }
            MsgKind::Put => {
                if let Some(Decision::Log { data, .. }) = decision(&self.wl, q, &m) {
                    // Written and logged: the write, the entry, the tail (+ the data copy).
                    let lp = self.log_page(q);
                    let copy = if data { m.bytes as u64 } else { 0 };
                    let done = self
                        .pf
                        .iommu(node, rx, &[page, lp], 3, m.bytes as u64 + copy);
                    self.wl.put(q, m.addr, m.value);
                    self.schedule(done, Ev::Commit(m));
                } else {
                    let done = if self.cfg.iommu {
                        self.pf.iommu(node, rx, &[page], 1, m.bytes as u64)
                    } else {
                        self.pf.dma(node, rx, m.bytes as u64)
                    };
                    self.wl.put(q, m.addr, m.value);
                    self.respond(&m, MsgKind::Ack, 0, 8, done);
                }
            }
            MsgKind::Get => {
                if let Some(Decision::Log { data, .. }) = decision(&self.wl, q, &m) {
                    let lp = self.log_page(q);
                    // Read, then write the entry (+ a copy of the data) and publish the tail.
                    let copy = if data { m.bytes as u64 } else { 0 };
                    let done = self
                        .pf
                        .iommu(node, rx, &[page, lp], 3, m.bytes as u64 + copy);
                    self.schedule(done, Ev::Commit(m));
                } else {
                    let done = if self.cfg.iommu {
                        self.pf.iommu(node, rx, &[page], 1, m.bytes as u64)
                    } else {
                        self.pf.dma(node, rx, m.bytes as u64)
                    };
                    let v = self.wl.get(q, m.addr);
                    self.respond(&m, MsgKind::Response, v, m.bytes, done);
                }
            }
            MsgKind::Coll(r) => {
                self.procs[q as usize].coll_recv |= 1 << r;
                if self.procs[q as usize].wait == Wait::Coll {
                    self.coll_progress(q, rx);
                }
            }
            MsgKind::Response | MsgKind::Ack => {}
        }
    }

    fn commit(&mut self, m: Msg) {
        let q = m.dst as usize;
        if !self.procs[q].stalled.is_empty() {
            self.stats.stalls += 1;
            self.procs[q].stalled.push_back(m);
            return;
        }
        if !self.try_commit(m, self.now) {
            self.stats.stalls += 1;
            self.procs[q].stalled.push_back(m);
        }
    }

    /// Write `m`'s entry (or hold its flush) at `t`; false if the log is full.
    fn try_commit(&mut self, m: Msg, t: u64) -> bool {
        let q = m.dst;
        let qi = q as usize;
        if m.kind == MsgKind::ActiveFlush {
            let (res, head) = (self.procs[qi].log.reserved(), self.procs[qi].log.head());
            if let Some(f) = self.procs[qi].gate.hold(res, head, m) {
                self.respond(&f, MsgKind::Response, 0, 8, t);
            }
            return true;
        }
        let logged_get = m.kind == MsgKind::Get;
        // Data entries carry the payload word (8 bytes) in the ring; the rest of a large
        // access's data is streamed by the IOMMU into the per-source log area (charged as
        // streaming bytes in `nic_arrive`), so a 64 KiB get does not need a 64 KiB ring.
        // AM mailbox messages are deposited whole (their word) as active entries.
        let (kind, data) = match decision(&self.wl, q, &m) {
            Some(Decision::Log { kind, data, .. }) => (kind, data),
            Some(d) => unreachable!("a committed access is logged, not {d:?}"),
            None if m.reply_bytes.is_some() || m.addr == AM_FLUSH_ADDR => {
                (EntryKind::ActiveGet, true)
            }
            None => (EntryKind::ActivePut, true),
        };
        let data_len = if data { 8 } else { 0 };
        let h = EntryHeader {
            kind,
            source: m.src,
            txn: m.txn,
            addr: m.addr,
            access_len: m.reply_bytes.unwrap_or(m.bytes),
            data_len,
        };
        let word = if logged_get {
            self.wl.get(q, m.addr)
        } else {
            m.value
        };
        let data = if data_len == 8 {
            word.to_le_bytes().to_vec()
        } else {
            Vec::new()
        };
        if self.procs[qi].log.append(h, &data).is_err() {
            return false;
        }
        if m.kind == MsgKind::AmSend {
            self.procs[qi].payloads.push_back(m.bytes);
        }
        match m.kind {
            MsgKind::Get => {
                let v = self.wl.get(q, m.addr);
                self.respond(&m, MsgKind::Response, v, m.bytes, t);
            }
            MsgKind::AmSend if m.reply_bytes.is_some() || m.addr == AM_FLUSH_ADDR => {}
            _ => self.respond(&m, MsgKind::Ack, 0, 8, t),
        }
        self.notify(q, t);
        true
    }

    /// Entries are waiting in `q`'s log at `t`: arrange for its handler to run.
    fn notify(&mut self, q: u32, t: u64) {
        let qi = q as usize;
        let ready = self.procs[qi].log.ready_entries();
        if ready == 0 {
            return;
        }
        match self.cfg.scheme {
            Scheme::AaInt | Scheme::AmInts { .. } => {
                if let Some(w) = self.procs[qi].notifier.on_publish(Instant(t), ready) {
                    self.schedule(w.at.as_ns(), Ev::HandlerWake(q));
                }
            }
            Scheme::AaPoll | Scheme::AaSp | Scheme::AmOnload { .. } => {
                // The agent polls continuously: it sees the entry one poll later.
                let poll = self.agent_poll_ns();
                self.wake_at(q, t + poll);
            }
            Scheme::Am | Scheme::AmExp => {
                let w = self.procs[qi].wait;
                if w == Wait::Running {
                    return; // it polls at its next operation boundary
                }
                let tick = self.idle_tick(q, t);
                self.wake_at(q, tick);
            }
            Scheme::Rma => {}
        }
    }

    /// One poll of a polling agent: AA-SP's hardware thread reads a scratchpad, AA-Poll's
    /// runtime thread and AM-Onload's cores read head/tail or a mailbox flag in memory.
    fn agent_poll_ns(&self) -> u64 {
        if self.cfg.scheme == Scheme::AaSp {
            self.prof.cpu.scratchpad_ns
        } else {
            self.prof.cpu.memory_access_ns
        }
    }

    fn wake_at(&mut self, q: u32, at: u64) {
        let pr = &mut self.procs[q as usize];
        if pr.wake_at.is_some_and(|w| w <= at) {
            return;
        }
        pr.wake_at = Some(at);
        self.schedule(at, Ev::HandlerWake(q));
    }

    /// The next idle poll of a waiting process at or after `t`. AM-Exp doubles its interval
    /// after every empty poll (the polls that found nothing between `last_poll` and `t`).
    fn idle_tick(&mut self, q: u32, t: u64) -> u64 {
        let base = self.prof.am.idle_poll_ns.max(1);
        let pr = &mut self.procs[q as usize];
        if self.cfg.scheme == Scheme::AmExp {
            let cap = base * self.prof.am.exp_max_skip.max(1) as u64;
            let mut tick = pr.last_poll + pr.poll_iv;
            while tick < t {
                pr.poll_iv = (pr.poll_iv * 2).min(cap);
                tick += pr.poll_iv;
            }
            tick
        } else {
            let k = t.saturating_sub(pr.last_poll).div_ceil(base);
            pr.last_poll + k.max(1) * base
        }
    }

    fn handler_wake(&mut self, q: u32) {
        let now = self.now;
        let qi = q as usize;
        let scheme = self.cfg.scheme;
        match scheme {
            Scheme::AaInt | Scheme::AmInts { .. } => {
                if !self.procs[qi].notifier.on_wake(Instant(now)) {
                    return;
                }
                self.stats.interrupts += 1;
                let start = now.max(self.procs[qi].core_free);
                let irq = self.prof.cpu.interrupt_ns;
                self.stats.recv.interrupt_ns += irq;
                self.stats.recv.app_ns += irq;
                let (end, _) = self.run_handler(q, start + irq);
                self.procs[qi].core_free = end;
                self.notify(q, end);
            }
            Scheme::AaPoll | Scheme::AaSp => {
                if self.procs[qi].wake_at != Some(now) {
                    return;
                }
                self.procs[qi].wake_at = None;
                // The agent's own hardware context: AA-Poll's runtime thread, AA-SP's thread.
                let start = now.max(self.procs[qi].hw_free);
                self.stats.recv.poll_ns += self.agent_poll_ns();
                let (end, _) = self.run_handler(q, start);
                self.procs[qi].hw_free = end;
                self.notify(q, end);
            }
            Scheme::AmOnload { cores } => {
                if self.procs[qi].wake_at != Some(now) {
                    return;
                }
                self.procs[qi].wake_at = None;
                let (node, h) = (
                    self.procs[qi].node as usize,
                    self.procs[qi].local as usize % cores as usize,
                );
                let start = now.max(self.hcore_free[node][h]);
                self.stats.recv.poll_ns += self.agent_poll_ns();
                let (end, _) = self.run_handler(q, start);
                self.hcore_free[node][h] = end;
                self.notify(q, end);
            }
            Scheme::Am | Scheme::AmExp => {
                if self.procs[qi].wake_at != Some(now) {
                    return;
                }
                self.procs[qi].wake_at = None;
                if self.procs[qi].wait == Wait::Running {
                    return; // back in its loop: it polls at its next operation
                }
                self.stats.polls += 1;
                let start = now.max(self.procs[qi].core_free);
                let poll = self.app_poll_ns();
                let (end, n) = self.run_handler(q, start + poll);
                let pr = &mut self.procs[qi];
                pr.core_free = end;
                pr.last_poll = end;
                if n > 0 {
                    pr.poll_iv = self.prof.am.idle_poll_ns;
                }
                self.notify(q, end);
            }
            Scheme::Rma => {}
        }
    }

    /// A poll of a computing process (AM, AM-Exp): one read of its mailbox's flag in
    /// memory, charged to its core.
    fn app_poll_ns(&mut self) -> u64 {
        let poll = self.mem(1);
        self.stats.recv.poll_ns += poll;
        self.stats.recv.app_ns += poll;
        poll
    }

    /// Taking one entry or message out of `q`'s log / mailbox, ns (spec "Where the schemes'
    /// costs come from"). AA: the IOMMU wrote header and data into the access log; the handler
    /// reads the entry in place (one access). AM: read the message header (one access), copy
    /// the payload out of the receive buffer (the first line's miss, then streaming at the
    /// memory bandwidth), release the slot for the sender (one access).
    fn extract_ns(&mut self, q: u32) -> u64 {
        if !self.cfg.scheme.is_am() {
            return self.mem(1);
        }
        let bytes = self.procs[q as usize]
            .payloads
            .pop_front()
            .expect("one payload size per mailbox message");
        let copy_out = self.mem(1) + (bytes as f64 / self.prof.cpu.memory_gbps).ceil() as u64;
        self.mem(1) + copy_out + self.mem(1)
    }

    /// Run `q`'s handler from `start`: drain the log, release held flushes, retry stalled
    /// accesses. Returns (end, entries handled).
    fn run_handler(&mut self, q: u32, start: u64) -> (u64, u64) {
        let qi = q as usize;
        let mut t = start;
        let mut n = 0;
        let (mut extract, mut handler) = (0, 0);
        let mut replies = Vec::new();
        while let Some(e) = self.procs[qi].log.pop() {
            n += 1;
            let x = self.extract_ns(q);
            extract += x;
            t += x;
            let h = e.header;
            if h.addr == AM_FLUSH_ADDR {
                t += self.prof.cpu.post_ns;
                handler += self.prof.cpu.post_ns;
                replies.push((h, 0, t));
                continue;
            }
            let value = u64::from_le_bytes(
                e.data
                    .get(..8)
                    .map(|d| d.try_into().expect("8 bytes"))
                    .unwrap_or([0; 8]),
            );
            let hd = self.wl.handle(q, h.source, h.kind, h.addr, value);
            let mut work = self.mem(hd.accesses)
                + (hd.copy_bytes as f64 / self.prof.cpu.memory_gbps).ceil() as u64;
            if h.kind == EntryKind::ActiveGet {
                work += self.prof.cpu.post_ns;
                replies.push((h, hd.reply, t + work));
            }
            handler += work;
            t += work;
        }
        if n > 0 {
            self.stats.handler_runs += 1;
            self.stats.handled += n;
            if !self.cfg.scheme.is_am() {
                // Publish the new head of the access log (AM released each slot instead).
                let publish = self.mem(1);
                extract += publish;
                t += publish;
            }
        }
        self.stats.recv.extract_ns += extract;
        self.stats.recv.handler_ns += handler;
        if self.cfg.scheme.recv_on_app() {
            self.stats.recv.app_ns += extract + handler;
        }
        for (h, v, at) in replies {
            let req = Msg {
                kind: MsgKind::AmSend,
                src: h.source,
                dst: q,
                txn: h.txn,
                addr: h.addr,
                value: 0,
                op: AtomicOp::FetchAdd(0),
                bytes: 8,
                reply_bytes: Some(h.access_len),
                was_put: false,
                is_flush: false,
            };
            let bytes = if h.addr == AM_FLUSH_ADDR {
                8
            } else {
                h.access_len
            };
            self.respond(&req, MsgKind::Response, v, bytes, at);
        }
        let head = self.procs[qi].log.head();
        for f in self.procs[qi].gate.on_head(head) {
            self.respond(&f, MsgKind::Response, 0, 8, t);
        }
        while let Some(m) = self.procs[qi].stalled.front().copied() {
            if !self.try_commit(m, t) {
                break;
            }
            self.procs[qi].stalled.pop_front();
        }
        (t, n)
    }

    // ---- source side ----

    fn src_arrive(&mut self, m: Msg) {
        let p = m.dst;
        let pi = p as usize;
        let node = self.node_of(p);
        let t = if self.is_completion(&m) {
            self.now
        } else {
            self.pf.receive(node, wire_bytes(&m), self.now)
        } + self.prof.cpu.memory_access_ns;
        if self.cfg.loss > 0.0 || self.cfg.duplicate > 0.0 {
            // Duplicate answers are dropped at the source (by (peer, txn, kind)).
            let key = (m.src | 0x8000_0000, m.txn);
            if !self.procs[pi].seen.insert(key) {
                return;
            }
        }
        let window = self.cfg.window;
        let w = self.procs[pi].wait;
        match m.kind {
            MsgKind::Ack => {
                let pr = &mut self.procs[pi];
                pr.outstanding -= 1;
                if m.was_put {
                    pr.puts_unacked -= 1;
                }
                let go = match w {
                    Wait::Window => pr.outstanding < window,
                    Wait::Drain => pr.outstanding == 0,
                    Wait::Puts => pr.puts_unacked == 0,
                    _ => false,
                };
                if go {
                    if w == Wait::Puts {
                        pr.result = Some(0);
                    }
                    self.unblock(p, t);
                }
            }
            MsgKind::Response if m.is_flush => {
                let pr = &mut self.procs[pi];
                pr.flushes_pending -= 1;
                if pr.flushes_pending == 0 && w == Wait::Flushes {
                    pr.result = Some(0);
                    self.unblock(p, t);
                }
            }
            MsgKind::Response if w == Wait::Result => {
                self.procs[pi].result = Some(m.value);
                self.unblock(p, t);
            }
            _ => {}
        }
    }
}
