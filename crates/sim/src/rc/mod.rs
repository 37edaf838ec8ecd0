//! A deterministic world of RC nodes (the `unpinned-ib` engines) on the simulation kernel
//! ([`crate::kernel`]): its queue and clock (events ordered by (time, insertion sequence)),
//! its faulty-link wrapper (the PART simulator's packet faults, [`crate::faults`]), its trace
//! hash; the PART simulator's topology ([`crate::net::Topology`]); all randomness from
//! sub-seeds of one master seed.
//!
//! Per node: the RC engine (the NIC), host memory, the ODP fault path of the driver / OS (a
//! fault is resolved after the profile's cost plus a seeded jitter), and optionally the
//! library-level software-timer fix. Links: the sender's port serializes each packet at the
//! link rate; the packet then takes NIC time at both ends plus `latency_ns` per hop.
//!
//! - [`memory`]: host memory with real bytes.
//! - [`trace`]: the packet trace.
//! - [`bench`]: the odp.md micro-benchmarks (READ pattern, timeout floor).

pub mod bench;
pub mod memory;
pub mod trace;

use unpinned_core::api::NodeId;
use unpinned_core::memory::Pdid;
use unpinned_core::rng::{Rng, SimRng};
use unpinned_core::time::{serialization, Duration, Instant};
use unpinned_ib::{
    ConnectAttrs, Event, FixConfig, Mr, MrAttrs, Psn, QpAttrs, Qpn, RcConfig, RcEngine, RcStats,
    SendWr, SoftwareTimerFix, VendorProfile, WorkCompletion,
};
use unpinned_wire::rc::RcRepr;

use crate::faults::FaultConfig;
use crate::kernel::{FaultyLink, Kernel, LinkStats, RngTree, TraceHash};
use crate::net::Topology;
pub use memory::HostMemory;
pub use trace::TraceRecord;

/// Everything that shapes an RC run.
#[derive(Clone, Debug)]
pub struct RcSimConfig {
    /// Vendor profile (timer floor, fault costs, loss model, links).
    pub profile: VendorProfile,
    /// Master seed.
    pub seed: u64,
    /// Number of nodes.
    pub nodes: u32,
    /// How they are connected.
    pub topology: Topology,
    /// Injected packet faults.
    pub faults: FaultConfig,
    /// The software-timer fix, if on (one instance per node, in the "library").
    pub fix: Option<FixConfig>,
    /// Record the packet trace.
    pub trace: bool,
}

impl RcSimConfig {
    /// Two nodes one hop apart, no faults, no fix, no trace.
    pub fn two_nodes(profile: VendorProfile, seed: u64) -> RcSimConfig {
        RcSimConfig {
            profile,
            seed,
            nodes: 2,
            topology: Topology::Uniform { hops: 1 },
            faults: FaultConfig::NONE,
            fix: None,
            trace: false,
        }
    }
}

/// One node.
pub struct RcNode {
    /// The NIC.
    pub engine: RcEngine,
    /// Host memory.
    pub mem: HostMemory,
    fix: Option<SoftwareTimerFix>,
    tx_free_at: Instant,
    tx_pending: bool,
    engine_timer: Option<Instant>,
    fix_timer: Option<Instant>,
    /// When the engine's ACK timer expired (one entry per expiry), in order.
    timeouts_at: Vec<Instant>,
}

enum Ev {
    Post {
        node: NodeId,
        qpn: Qpn,
        wr: SendWr,
    },
    TxReady {
        node: NodeId,
    },
    Arrive {
        src: NodeId,
        dst: NodeId,
        bytes: Vec<u8>,
    },
    EngineTimer {
        node: NodeId,
    },
    FixTimer {
        node: NodeId,
    },
    FaultResolved {
        node: NodeId,
        pdid: Pdid,
        page: u64,
    },
    Invalidate {
        node: NodeId,
        pdid: Pdid,
        page: u64,
    },
}

/// A completion as the application saw it (the fix's dummies are hidden).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AppCompletion {
    /// Node.
    pub node: NodeId,
    /// The completion.
    pub wc: WorkCompletion,
}

/// The RC simulator.
pub struct RcSim {
    cfg: RcSimConfig,
    kernel: Kernel<Ev>,
    nodes: Vec<RcNode>,
    link: FaultyLink,
    os_rng: SimRng,
    trace: Vec<TraceRecord>,
    hash: TraceHash,
    completions: Vec<AppCompletion>,
    buf: Vec<u8>,
}

impl RcSim {
    /// A simulator with `cfg.nodes` nodes.
    pub fn new(cfg: RcSimConfig) -> RcSim {
        let rc = RcConfig::from_profile(&cfg.profile);
        let nodes = (0..cfg.nodes)
            .map(|n| RcNode {
                engine: RcEngine::new(n, rc, cfg.seed),
                mem: HostMemory::new(),
                fix: cfg.fix.map(SoftwareTimerFix::new),
                tx_free_at: Instant::ZERO,
                tx_pending: false,
                engine_timer: None,
                fix_timer: None,
                timeouts_at: Vec::new(),
            })
            .collect();
        let rngs = RngTree::new(cfg.seed);
        RcSim {
            link: FaultyLink::new(cfg.faults, rngs.rng("rc-link-faults")),
            os_rng: rngs.rng("rc-os-faults"),
            buf: vec![0; cfg.profile.net.mtu_bytes as usize + 256],
            cfg,
            kernel: Kernel::new(),
            nodes,
            trace: Vec::new(),
            hash: TraceHash::new(),
            completions: Vec::new(),
        }
    }

    /// Current time.
    pub fn now(&self) -> Instant {
        self.kernel.now()
    }
    /// Events processed.
    pub fn events(&self) -> u64 {
        self.kernel.events()
    }
    /// Hash of every event processed so far (equal seeds give equal hashes).
    pub fn trace_hash(&self) -> u64 {
        self.hash.digest()
    }
    /// Packet faults injected so far.
    pub fn link_stats(&self) -> LinkStats {
        self.link.stats()
    }
    /// Change the packet faults from now on (the VOPR's liveness phase turns them off).
    pub fn set_faults(&mut self, faults: FaultConfig) {
        self.cfg.faults = faults;
        self.link.set_config(faults);
    }
    /// Time of the next queued event.
    pub fn next_event_at(&self) -> Option<Instant> {
        self.kernel.peek_at()
    }
    /// The configuration.
    pub fn config(&self) -> &RcSimConfig {
        &self.cfg
    }
    /// A node.
    pub fn node(&self, n: NodeId) -> &RcNode {
        &self.nodes[n as usize]
    }
    /// A node, mutably (setup: regions, QPs, memory contents).
    pub fn node_mut(&mut self, n: NodeId) -> &mut RcNode {
        &mut self.nodes[n as usize]
    }
    /// Engine counters of a node.
    pub fn stats(&self, n: NodeId) -> RcStats {
        self.nodes[n as usize].engine.stats()
    }
    /// When node `n`'s ACK timer expired, in order (one entry per expiry counted in
    /// [`RcStats::timeouts`]): tells a timeout the application waited for from one on a
    /// request left over after its last completion.
    pub fn timeouts_at(&self, n: NodeId) -> &[Instant] {
        &self.nodes[n as usize].timeouts_at
    }
    /// Dummies posted by a node's fix.
    pub fn dummies(&self, n: NodeId) -> u64 {
        self.nodes[n as usize]
            .fix
            .as_ref()
            .map_or(0, |f| f.dummies_posted)
    }
    /// The packet trace (if enabled).
    pub fn trace(&self) -> &[TraceRecord] {
        &self.trace
    }
    /// Application-visible completions, in order.
    pub fn completions(&self) -> &[AppCompletion] {
        &self.completions
    }

    /// Register a region at node `n`.
    pub fn register(&mut self, n: NodeId, attrs: MrAttrs) -> Mr {
        self.nodes[n as usize]
            .engine
            .register_mr(attrs)
            .expect("valid region")
    }

    /// Create and connect a QP pair between `a` and `b` (both start at PSN `psn`).
    pub fn connect_pair(
        &mut self,
        a: NodeId,
        attrs_a: QpAttrs,
        b: NodeId,
        attrs_b: QpAttrs,
        psn: Psn,
    ) -> (Qpn, Qpn) {
        let qa = self.nodes[a as usize].engine.create_qp(attrs_a);
        let qb = self.nodes[b as usize].engine.create_qp(attrs_b);
        self.nodes[a as usize]
            .engine
            .connect(
                qa,
                ConnectAttrs {
                    peer_node: b,
                    peer_qpn: qb,
                    sq_psn: psn,
                    rq_psn: psn,
                },
            )
            .expect("qp");
        self.nodes[b as usize]
            .engine
            .connect(
                qb,
                ConnectAttrs {
                    peer_node: a,
                    peer_qpn: qa,
                    sq_psn: psn,
                    rq_psn: psn,
                },
            )
            .expect("qp");
        (qa, qb)
    }

    fn push(&mut self, at: Instant, ev: Ev) {
        self.kernel.schedule(at, ev);
    }

    /// The application at node `n` posts `wr` on `qpn` at time `at`.
    pub fn post(&mut self, at: Instant, n: NodeId, qpn: Qpn, wr: SendWr) {
        self.push(at, Ev::Post { node: n, qpn, wr });
    }

    /// The OS at node `n` moves `page` at time `at` (after invalidating the NIC's translation).
    pub fn invalidate_at(&mut self, at: Instant, n: NodeId, pdid: Pdid, page: u64) {
        self.push(
            at,
            Ev::Invalidate {
                node: n,
                pdid,
                page,
            },
        );
    }

    /// Run until nothing is left to do or simulated time passes `limit`. Errors if the limit
    /// was reached with events still pending.
    pub fn run_until_idle(&mut self, limit: Duration) -> Result<(), String> {
        let end = self.now() + limit;
        while let Some(at) = self.kernel.peek_at() {
            if at > end {
                return Err(format!("not idle after {limit:?} (seed {})", self.cfg.seed));
            }
            self.step();
        }
        Ok(())
    }

    /// Process the next event, if any (a driver that looks at every step).
    pub fn step(&mut self) {
        let Some((now, ev)) = self.kernel.pop() else {
            return;
        };
        let node = match ev {
            Ev::Post { node, qpn, wr } => {
                self.hash.record(now, 1, node, &wr.wr_id.to_le_bytes());
                let nd = &mut self.nodes[node as usize];
                if let Some(f) = nd.fix.as_mut() {
                    f.on_post(now, qpn, &wr);
                }
                nd.engine.post_send(now, qpn, wr).expect("valid post");
                node
            }
            Ev::TxReady { node } => {
                self.hash.record(now, 2, node, &[]);
                // An idle port is not re-armed until some other input gives the engine work.
                let sent = self.transmit(node);
                self.service(node, sent);
                return;
            }
            Ev::Arrive { src, dst, bytes } => {
                self.hash.record(now, 3, dst, &bytes);
                let nd = &mut self.nodes[dst as usize];
                nd.engine.handle_packet(now, src, &bytes, &mut nd.mem);
                dst
            }
            Ev::EngineTimer { node } => {
                self.hash.record(now, 4, node, &[]);
                let nd = &mut self.nodes[node as usize];
                if nd.engine_timer == Some(now) {
                    nd.engine_timer = None;
                    let before = nd.engine.stats().timeouts;
                    nd.engine.handle_timeout(now);
                    let expired = nd.engine.stats().timeouts - before;
                    nd.timeouts_at
                        .extend(std::iter::repeat_n(now, expired as usize));
                }
                node
            }
            Ev::FixTimer { node } => {
                self.hash.record(now, 5, node, &[]);
                let nd = &mut self.nodes[node as usize];
                if nd.fix_timer == Some(now) {
                    nd.fix_timer = None;
                    let dummies = nd
                        .fix
                        .as_mut()
                        .map(|f| f.handle_timeout(now))
                        .unwrap_or_default();
                    for (qpn, wr) in dummies {
                        nd.engine.post_send(now, qpn, wr).expect("dummy post");
                    }
                }
                node
            }
            Ev::FaultResolved { node, pdid, page } => {
                self.hash.record(now, 6, node, &page.to_le_bytes());
                self.nodes[node as usize]
                    .engine
                    .handle_page_resolved(now, pdid, page);
                node
            }
            Ev::Invalidate { node, pdid, page } => {
                self.hash.record(now, 7, node, &page.to_le_bytes());
                self.nodes[node as usize].engine.invalidate(pdid, page);
                node
            }
        };
        self.service(node, true);
    }

    /// After any input to `n`: drain its events, (re)arm its port (if `arm_tx`) and timers.
    fn service(&mut self, n: NodeId, arm_tx: bool) {
        let now = self.now();
        let prof = &self.cfg.profile;
        let nd = &mut self.nodes[n as usize];
        let mut resolved = Vec::new();
        while let Some(ev) = nd.engine.poll_event() {
            match ev {
                Event::Completion(wc) => {
                    let hidden = nd.fix.as_mut().is_some_and(|f| f.on_completion(&wc));
                    if !hidden {
                        self.completions.push(AppCompletion { node: n, wc });
                    }
                }
                Event::PageFault(pf) => {
                    let jitter = prof.odp.fault_jitter_us;
                    let extra = if jitter > 0.0 {
                        self.os_rng.gen_range(0.0..=jitter)
                    } else {
                        0.0
                    };
                    let at = now + prof.fault_cost(pf.side) + Duration::from_us_f64(extra);
                    resolved.push((at, pf.pdid, pf.page));
                }
            }
        }
        let tx_at = (arm_tx && !nd.tx_pending).then(|| now.max(nd.tx_free_at));
        if tx_at.is_some() {
            nd.tx_pending = true;
        }
        let engine_at = nd
            .engine
            .poll_timeout()
            .filter(|t| Some(*t) != nd.engine_timer && nd.engine_timer.is_none_or(|e| *t < e));
        if let Some(t) = engine_at {
            nd.engine_timer = Some(t);
        }
        let fix_at = nd
            .fix
            .as_ref()
            .and_then(|f| f.poll_timeout())
            .filter(|t| Some(*t) != nd.fix_timer);
        if let Some(t) = fix_at {
            nd.fix_timer = Some(t);
        }
        for (at, pdid, page) in resolved {
            self.push(
                at,
                Ev::FaultResolved {
                    node: n,
                    pdid,
                    page,
                },
            );
        }
        if let Some(t) = tx_at {
            self.push(t, Ev::TxReady { node: n });
        }
        if let Some(t) = engine_at {
            self.push(t.max(now), Ev::EngineTimer { node: n });
        }
        if let Some(t) = fix_at {
            self.push(t.max(now), Ev::FixTimer { node: n });
        }
    }

    /// The port of `n` is free: send one packet, if the engine has one. True if it did (or
    /// the port was still busy and the attempt was deferred).
    fn transmit(&mut self, n: NodeId) -> bool {
        let now = self.now();
        let net = self.cfg.profile.net.clone();
        let nd = &mut self.nodes[n as usize];
        nd.tx_pending = false;
        if now < nd.tx_free_at {
            nd.tx_pending = true;
            let t = nd.tx_free_at;
            self.push(t, Ev::TxReady { node: n });
            return true;
        }
        let Some(t) = nd.engine.poll_transmit(now, &mut self.buf, &mut nd.mem) else {
            return false;
        };
        let ser = serialization(t.len + net.header_bytes as usize, net.link_gbps);
        nd.tx_free_at = now + ser;
        let bytes = self.buf[..t.len].to_vec();
        let f = self.link.fate();
        self.hash.record(now, 8, n, &bytes);
        if self.cfg.trace {
            if let Ok(r) = RcRepr::parse(&bytes) {
                let (qpn, psn) = r.qpn_psn();
                self.trace.push(TraceRecord {
                    at: now,
                    src: n,
                    dst: t.dst,
                    packet: trace::packet_name(&r),
                    psn,
                    qpn,
                    delivered: f.copies > 0,
                });
            }
        }
        let hops = self.cfg.topology.hops(n, t.dst) as u64;
        let arrive = now + ser + Duration(2 * net.nic_packet_ns + hops * net.latency_ns) + f.extra;
        for copy in 0..f.copies {
            let mut b = bytes.clone();
            if copy == 0 {
                FaultyLink::corrupt(&f, &mut b);
            }
            let at = if copy == 0 { arrive } else { arrive + ser };
            self.push(
                at,
                Ev::Arrive {
                    src: n,
                    dst: t.dst,
                    bytes: b,
                },
            );
        }
        let free = self.nodes[n as usize].tx_free_at;
        self.nodes[n as usize].tx_pending = true;
        self.push(free, Ev::TxReady { node: n });
        true
    }
}
