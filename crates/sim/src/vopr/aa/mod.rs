//! The Active Access swarm of the VOPR (issue 18): the AA engine (crates/aa's per-packet
//! decision, access logs, reassembly) in front of the simulator's PART engines, as the live
//! stack puts crates/aa-live's `ActiveMemory` in front of the live engine ([`layer`]), under
//! packet faults (loss, duplication, reordering, corruption, delay) and page evictions.
//!
//! Every node's target pages get random page bits (plain, tracked puts, logged put data,
//! active puts, counted puts and gets, logged get data, faults to the access log or to the
//! system log, a log that does not exist) and its logs random sizes (small ones stall: back-
//! pressure). Random puts and gets go between nodes, plus requests designed to fail at the
//! engine (bad key, out of range, write into a read-only exposure, a revoked exposure). A handler drains the logs
//! now and then and counts accesses (crates/aa's `AccessCounter`). The checkers ([`check`]):
//! bytes (a put's target holds its source, an active or refused put left the target as it
//! was, a get returned the target's bytes), exactly-once (the simulator's, plus one log entry
//! per logged access), log entries match the operations (kind, source, address, length,
//! data), protection per request (each designed-to-fail request fails with the protection
//! error and touches nothing), counters, and success: in the liveness phase (faults off) every
//! request not designed to fail succeeds.

mod check;
mod layer;

use std::sync::{Arc, Mutex};

use unpinned_aa::counter::AccessCounter;
use unpinned_aa::log::{AccessLog, LogEntry};
use unpinned_aa::pte::{Iuid, PageBits};
use unpinned_aa::reassembly::Reassembler;
use unpinned_core::api::{CompletionError, Op, Perms, RemoteKey, WorkRequest};
use unpinned_core::memory::PAGE_BYTES;
use unpinned_core::os::PageInPolicy;
use unpinned_core::profile::RetransmitPolicy;
use unpinned_core::rng::{Rng, SimRng};
use unpinned_core::time::{Duration, Instant};

use super::common;
use super::report::{SeedReport, Tally};
use crate::faults::FaultConfig;
use crate::kernel::{
    checkers, Checkers, ErrorKind, Expect, FaultMix, Kernel, Outcome, Phase, ReqEvent, Requests,
    RngTree,
};
use crate::world::{PostRecord, Sim};

use layer::{AaState, ActiveLayer};

const PDID: u16 = 1;
/// Target pages (exposed read-write); the last one is the edge that out-of-range requests
/// cross.
const TGT_BASE: u64 = 0x1000_0000;
/// A read-only exposure (one page).
const RO_BASE: u64 = 0x2000_0000;
/// An exposure revoked at setup (one page).
const REV_BASE: u64 = 0x3000_0000;
/// Sources of puts: request `i`'s bytes at `SRC_BASE + i * LANE`.
const SRC_BASE: u64 = 0x4000_0000;
/// Where gets land: request `i`'s at `GET_BASE + i * LANE`.
const GET_BASE: u64 = 0x6000_0000;
/// Bytes of one lane: a target page holds four, one request each.
const LANE: u64 = 1024;
/// Simulated time the liveness phase may take.
const LIVENESS_LIMIT: Duration = Duration::from_ms(500);

/// What the page bits of a target page are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageKind {
    /// Unmarked.
    Plain,
    /// Puts written, metadata logged.
    TrackPuts,
    /// Puts written, metadata and data logged.
    PutData,
    /// Puts logged with their data, not written; gets plain.
    ActivePut,
    /// Puts and gets served and counted (metadata logged).
    CountAll,
    /// Gets served and their data logged; puts plain.
    LogGetData,
    /// Neither readable nor writable: faults go to the access log (E=1).
    FaultAccess,
    /// Neither readable nor writable: faults go to the system log (E=0).
    FaultSystem,
    /// Tracked puts into a log that does not exist (a system fault); gets plain.
    NoLog,
}

impl PageKind {
    const ALL: [PageKind; 9] = [
        PageKind::Plain,
        PageKind::TrackPuts,
        PageKind::PutData,
        PageKind::ActivePut,
        PageKind::CountAll,
        PageKind::LogGetData,
        PageKind::FaultAccess,
        PageKind::FaultSystem,
        PageKind::NoLog,
    ];

    fn bits(self, iuid: Iuid) -> Option<PageBits> {
        let none = PageBits::default();
        Some(match self {
            PageKind::Plain => return None,
            PageKind::TrackPuts => PageBits::track_puts(iuid),
            PageKind::PutData => PageBits {
                wld: true,
                ..PageBits::track_puts(iuid)
            },
            PageKind::ActivePut => PageBits::active_put(iuid),
            PageKind::CountAll => PageBits::count_all(iuid),
            PageKind::LogGetData => PageBits::log_get_data(iuid),
            PageKind::FaultAccess => PageBits {
                e: true,
                iuid,
                ..none
            },
            PageKind::FaultSystem => PageBits { iuid, ..none },
            PageKind::NoLog => PageBits::track_puts(Iuid::new(NO_LOG).expect("10 bits")),
        })
    }
}

/// An IUID no node has a log for.
const NO_LOG: u16 = 9;

/// How a request is designed to fail at the engine (or not).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Designed {
    /// Meant to reach the page bits.
    Normal,
    /// A wrong key.
    BadKey,
    /// The range runs past the end of the exposure.
    OutOfRange,
    /// A put into a read-only exposure.
    ReadOnly,
    /// Into an exposure the target revoked.
    Revoked,
}

/// One request of the swarm.
#[derive(Clone, Debug)]
pub(crate) struct Req {
    pub(crate) src: u32,
    pub(crate) dst: u32,
    pub(crate) op: Op,
    pub(crate) designed: Designed,
    /// Target address at `dst` and length.
    pub(crate) addr: u64,
    pub(crate) len: u64,
    /// The kind of the target page (`Plain` for requests outside the target pages).
    pub(crate) kind: PageKind,
    /// Posted while faults were on.
    pub(crate) in_safety: bool,
    /// The source's bytes (puts) / the target's bytes at setup (both: what the checks compare).
    pub(crate) src_bytes: Vec<u8>,
    pub(crate) tgt_before: Vec<u8>,
    pub(crate) status: Option<Result<(), CompletionError>>,
}

impl Req {
    /// The phase it was posted in.
    fn phase(&self) -> Phase {
        if self.in_safety {
            Phase::Safety
        } else {
            Phase::Liveness
        }
    }

    /// What it was designed to do: refused by the engine, or by its page's bits.
    fn expect(&self) -> Expect {
        match check::expect(self).0 {
            Ok(()) => Expect::Succeed,
            Err(_) => Expect::Fail(ErrorKind::Protection),
        }
    }
}

/// What one seed runs.
#[derive(Clone, Debug)]
pub struct AaSwarmConfig {
    /// Master seed.
    pub seed: u64,
    /// Nodes.
    pub nodes: u32,
    /// Target pages per node (the last is the out-of-range edge).
    pub pages: u32,
    /// Requests.
    pub requests: u32,
    /// Log sizes (IUIDs 1 and 2), bytes.
    pub log_bytes: [u32; 2],
    /// How often a node's handler drains its logs, us.
    pub drain_every_us: u64,
    /// Packet faults of the safety phase.
    pub faults: FaultConfig,
    /// Length of the safety phase, us.
    pub safety_us: u64,
    /// Page evictions during the safety phase.
    pub evictions: u32,
    /// PART retransmission policy.
    pub retransmit: RetransmitPolicy,
    /// Page-in policy.
    pub policy: PageInPolicy,
}

impl AaSwarmConfig {
    /// The swarm seed `seed` picks.
    pub fn from_seed(seed: u64) -> AaSwarmConfig {
        let tree = RngTree::new(seed);
        let mut rng = tree.rng("vopr/aa");
        let faults = FaultMix::draw(
            &mut tree.rng("vopr/aa/faults"),
            MAX_FAULT_RATE,
            Duration::from_us(50),
        );
        let log = |rng: &mut SimRng| [2048, 4096, 1 << 16][rng.gen_range(0..3)];
        AaSwarmConfig {
            seed,
            nodes: rng.gen_range(2..=4),
            pages: rng.gen_range(3..=12),
            requests: rng.gen_range(1..=40),
            log_bytes: [log(&mut rng), log(&mut rng)],
            drain_every_us: rng.gen_range(1..=50),
            faults,
            safety_us: rng.gen_range(20..=1_000),
            evictions: rng.gen_range(0..=12),
            retransmit: RetransmitPolicy::ALL[rng.gen_range(0..2)],
            policy: [PageInPolicy::Pio, PageInPolicy::Pi4, PageInPolicy::Pia][rng.gen_range(0..3)],
        }
    }
}

/// Run one seed of the AA swarm (the registry's entry).
pub fn run(seed: u64) -> SeedReport {
    run_config(AaSwarmConfig::from_seed(seed))
}

/// Largest rate per fault kind.
const MAX_FAULT_RATE: f64 = 0.05;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DrvEv {
    Drain { node: u32 },
    Evict { node: u32, addr: u64 },
    FaultsOff,
}

/// Run one configured swarm: violations are collected; a stuck run ends it.
pub fn run_config(cfg: AaSwarmConfig) -> SeedReport {
    let mut s = Swarm::new(cfg);
    if let Err(what) = s.run() {
        let at = s.sim.now();
        s.checkers.report("liveness", at, what);
    }
    let mut found = Vec::new();
    check::logs(&s, &mut found);
    let at = s.sim.now();
    for (checker, what) in found {
        s.checkers.report(checker, at, what);
    }
    s.checkers.finish(at);
    s.report()
}

pub(crate) struct Swarm {
    cfg: AaSwarmConfig,
    sim: Sim,
    states: Vec<Arc<Mutex<AaState>>>,
    /// Per node, per target page: its kind.
    pub(crate) kinds: Vec<Vec<PageKind>>,
    pub(crate) reqs: Vec<Req>,
    /// Per node: the entries its handler took from its logs, in order.
    pub(crate) entries: Vec<Vec<LogEntry>>,
    pub(crate) counters: Vec<AccessCounter>,
    /// The driver's own events (threads, evictions, handlers, the phase change), on the
    /// kernel's queue and clock; the PART world keeps its loop and is stepped between them.
    drv: Kernel<DrvEv>,
    rng: SimRng,
    liveness_from: Option<Instant>,
    completed: Vec<PostRecord>,
    checkers: Checkers<Requests>,
    tally: Tally,
    evictions: u64,
}

impl Swarm {
    fn new(cfg: AaSwarmConfig) -> Swarm {
        let sim = common::part_world(cfg.seed, cfg.nodes, cfg.faults, cfg.retransmit, cfg.policy);
        let mut s = Swarm {
            sim,
            states: Vec::new(),
            kinds: Vec::new(),
            reqs: Vec::new(),
            entries: vec![Vec::new(); cfg.nodes as usize],
            counters: (0..cfg.nodes)
                .map(|_| AccessCounter::new(TGT_BASE, LANE))
                .collect(),
            drv: Kernel::new(),
            rng: RngTree::new(cfg.seed).rng("vopr/aa/run"),
            liveness_from: None,
            completed: Vec::new(),
            checkers: checkers::transport(false),
            tally: Tally::default(),
            evictions: 0,
            cfg,
        };
        s.setup();
        s
    }

    fn schedule(&mut self, at: Instant, ev: DrvEv) {
        self.drv.schedule(at, ev);
    }

    fn setup(&mut self) {
        let (n, pages) = (self.cfg.nodes, self.cfg.pages as u64);
        let tgt_len = pages * PAGE_BYTES;
        let lanes_len = (self.cfg.requests as u64 * LANE).max(PAGE_BYTES);
        let mut keys: Vec<(RemoteKey, RemoteKey, RemoteKey)> = Vec::new();
        for node in 0..n {
            for (base, len) in [
                (TGT_BASE, tgt_len),
                (RO_BASE, PAGE_BYTES),
                (REV_BASE, PAGE_BYTES),
                (SRC_BASE, lanes_len),
                (GET_BASE, lanes_len),
            ] {
                let r = common::residence(&mut self.rng);
                self.sim.map(node, PDID, base, len, r);
                self.sim.fill_random(node, PDID, base, len);
            }
            let rw = self.sim.expose(node, PDID, TGT_BASE, tgt_len, Perms::RW);
            let ro = self.sim.expose(
                node,
                PDID,
                RO_BASE,
                PAGE_BYTES,
                Perms {
                    write: false,
                    read: true,
                },
            );
            let revoked = self.sim.expose(node, PDID, REV_BASE, PAGE_BYTES, Perms::RW);
            let engine = &mut self.sim.node_mut(node).engine;
            assert!(engine.revoke(revoked), "a fresh exposure revokes");
            self.sim
                .node_mut(node)
                .mem
                .disallow_writes(PDID, REV_BASE, REV_BASE + PAGE_BYTES);
            keys.push((rw, ro, revoked));
            // Page bits and logs.
            let mut st = AaState::default();
            let mut kinds = Vec::new();
            for p in 0..pages {
                let kind = if p + 1 == pages {
                    PageKind::Plain
                } else {
                    PageKind::ALL[self.rng.gen_range(0..PageKind::ALL.len())]
                };
                let iuid = Iuid::new(self.rng.gen_range(1..=2)).expect("10 bits");
                if let Some(bits) = kind.bits(iuid) {
                    st.bits.insert(TGT_BASE + p * PAGE_BYTES, bits);
                }
                kinds.push(kind);
            }
            for (i, &bytes) in self.cfg.log_bytes.iter().enumerate() {
                st.logs
                    .insert(i as u16 + 1, (AccessLog::new(bytes), Reassembler::new()));
            }
            let st = Arc::new(Mutex::new(st));
            self.sim
                .node_mut(node)
                .mem
                .set_packet_hook(Box::new(ActiveLayer(st.clone())));
            self.states.push(st);
            self.kinds.push(kinds);
            // Active puts leave the target as it was: the bytes invariant must not compare
            // them (the swarm's own bytes check does, per request).
            for (p, k) in self.kinds[node as usize].iter().enumerate() {
                if *k == PageKind::ActivePut {
                    self.sim.rewritten_by_design(
                        node,
                        PDID,
                        TGT_BASE + p as u64 * PAGE_BYTES,
                        PAGE_BYTES,
                    );
                }
            }
            let first = Instant(self.rng.gen_range(0..=self.cfg.drain_every_us * 1_000));
            self.schedule(first, DrvEv::Drain { node });
        }
        // Requests: each on a lane of its own (target lanes, and source / landing lanes by
        // request index), so that every byte check is exact.
        let mut free: Vec<Vec<u64>> = (0..n)
            .map(|_| {
                (0..(pages - 1) * (PAGE_BYTES / LANE))
                    .map(|l| TGT_BASE + l * LANE)
                    .collect()
            })
            .collect();
        let safety_end = Instant(self.cfg.safety_us * 1_000);
        let horizon = safety_end.0 + self.cfg.safety_us * 1_000 / 2 + 1;
        for _ in 0..self.cfg.requests {
            let src = self.rng.gen_range(0..n);
            let dst = (src + self.rng.gen_range(1..n)) % n;
            let op = if self.rng.gen_bool(0.5) {
                Op::Write
            } else {
                Op::Read
            };
            let designed = match self.rng.gen_range(0..24) {
                0 => Designed::BadKey,
                1 => Designed::OutOfRange,
                2 if op == Op::Write => Designed::ReadOnly,
                3 => Designed::Revoked,
                _ => Designed::Normal,
            };
            let mut len = self.rng.gen_range(1..=LANE);
            let (addr, kind) = match designed {
                Designed::OutOfRange => {
                    len = len.max(2);
                    (TGT_BASE + tgt_len - len / 2, PageKind::Plain)
                }
                Designed::ReadOnly => (
                    RO_BASE + self.rng.gen_range(0..=PAGE_BYTES - len),
                    PageKind::Plain,
                ),
                Designed::Revoked => (
                    REV_BASE + self.rng.gen_range(0..=PAGE_BYTES - len),
                    PageKind::Plain,
                ),
                _ => {
                    let f = &mut free[dst as usize];
                    if f.is_empty() {
                        continue;
                    }
                    let lane = f.swap_remove(self.rng.gen_range(0..f.len()));
                    let off = self.rng.gen_range(0..=LANE - len);
                    let page = (lane - TGT_BASE) / PAGE_BYTES;
                    (lane + off, self.kinds[dst as usize][page as usize])
                }
            };
            let (rw, ro, revoked) = keys[dst as usize];
            let mut rkey = match designed {
                Designed::ReadOnly => ro,
                Designed::Revoked => revoked,
                _ => rw,
            };
            if designed == Designed::BadKey {
                rkey ^= 0x5a5a_0000;
            }
            // Local lanes by request number (requests that found no free lane were skipped).
            let idx = self.reqs.len() as u64;
            let local = if op == Op::Write {
                SRC_BASE + idx * LANE
            } else {
                GET_BASE + idx * LANE
            };
            let at = Instant(self.rng.gen_range(0..horizon));
            let mut src_bytes = vec![0u8; len as usize];
            self.sim
                .node(src)
                .mem
                .host_read(PDID, local, &mut src_bytes);
            let mut tgt_before = vec![0u8; len as usize];
            self.sim
                .node(dst)
                .mem
                .host_read(PDID, addr, &mut tgt_before);
            let wr = WorkRequest {
                wr_id: self.reqs.len() as u64,
                op,
                peer: dst,
                local_pdid: PDID,
                local_addr: local,
                remote_pdid: PDID,
                remote_addr: addr,
                rkey,
                len,
            };
            self.sim.post(at, src, wr);
            let idx = self.reqs.len() as u64;
            self.reqs.push(Req {
                src,
                dst,
                op,
                designed,
                addr,
                len,
                kind,
                in_safety: at < safety_end,
                src_bytes,
                tgt_before,
                status: None,
            });
            let r = &self.reqs[idx as usize];
            let ev = ReqEvent::Posted {
                req: idx,
                stream: u64::from(src),
                phase: r.phase(),
                expect: r.expect(),
            };
            self.checkers.observe(Instant::ZERO, &ev);
            self.tally.posted += 1;
        }
        for _ in 0..self.cfg.evictions {
            let node = self.rng.gen_range(0..n);
            let (base, len) = match self.rng.gen_range(0..3) {
                0 => (TGT_BASE, tgt_len),
                1 => (SRC_BASE, lanes_len),
                _ => (GET_BASE, lanes_len),
            };
            let addr = base + self.rng.gen_range(0..len);
            let at = Instant(self.rng.gen_range(0..safety_end.0));
            self.schedule(at, DrvEv::Evict { node, addr });
        }
        self.schedule(safety_end, DrvEv::FaultsOff);
    }

    /// Run until every request completed (`Err`: stuck, or not done in the liveness limit).
    fn run(&mut self) -> Result<(), String> {
        loop {
            let sim_at = self.sim.next_event_at();
            if sim_at.is_none() && self.sim.pending_posts() == 0 {
                break;
            }
            if let Some(from) = self.liveness_from {
                if self.sim.now() > from + LIVENESS_LIMIT {
                    return Err(format!(
                        "{} requests unfinished {:.0} us after faults were turned off\n{}",
                        self.sim.pending_posts(),
                        LIVENESS_LIMIT.as_us_f64(),
                        self.sim.debug_summary()
                    ));
                }
            }
            let drv_at = self.drv.peek_at();
            match (drv_at, sim_at) {
                (Some(d), s) if s.is_none_or(|s| d < s) => {
                    let (at, ev) = self.drv.pop().expect("peeked");
                    if let Err(e) = self.sim.run_until(at) {
                        self.world_violation(e.what);
                    }
                    self.on_driver(ev);
                }
                (_, Some(_)) => {
                    if let Err(e) = self.sim.step() {
                        self.world_violation(e.what);
                    }
                    self.take_completions();
                }
                (_, None) => {
                    return Err(format!(
                        "stuck: {} requests unfinished and nothing left to happen",
                        self.sim.pending_posts()
                    ))
                }
            }
        }
        self.take_completions();
        for node in 0..self.cfg.nodes {
            self.drain(node);
        }
        Ok(())
    }

    /// The simulator's own invariants broke (an NI write outside what it may write, ...).
    fn world_violation(&mut self, what: String) {
        let at = self.sim.now();
        self.checkers.observe(at, &ReqEvent::World { what: &what });
    }

    fn take_completions(&mut self) {
        let mut done = std::mem::take(&mut self.completed);
        self.sim.take_completed_into(&mut done);
        let at = self.sim.now();
        for rec in &done {
            let c = rec
                .completion
                .expect("completed posts carry their completion");
            let id = rec.wr.wr_id;
            let outcome = common::part_outcome(c.status);
            self.checkers.observe(
                at,
                &ReqEvent::Completed {
                    req: id,
                    outcome: &outcome,
                },
            );
            let Some(r) = self.reqs.get_mut(id as usize) else {
                continue;
            };
            r.status = Some(c.status);
            self.tally.count(r.phase(), r.expect(), &outcome);
            let r = &self.reqs[id as usize];
            let mut now = vec![0u8; r.len as usize];
            self.sim.node(r.dst).mem.host_read(PDID, r.addr, &mut now);
            let (_, after, _) = check::expect(r);
            let ev = match (&outcome, r.op) {
                // A put leaves its source's bytes, or (active) the target as it was.
                (Outcome::Ok, Op::Write) => ReqEvent::Bytes {
                    req: id,
                    expected: match after {
                        check::After::Source => &r.src_bytes,
                        check::After::Unchanged => &r.tgt_before,
                    },
                    got: &now,
                },
                (Outcome::Ok, Op::Read) => {
                    let mut got = vec![0u8; r.len as usize];
                    self.sim
                        .node(r.src)
                        .mem
                        .host_read(PDID, GET_BASE + id * LANE, &mut got);
                    let ev = ReqEvent::Bytes {
                        req: id,
                        expected: &r.tgt_before,
                        got: &got,
                    };
                    self.checkers.observe(at, &ev);
                    // A get never changes its target.
                    ReqEvent::Untouched {
                        req: id,
                        before: &r.tgt_before,
                        after: &now,
                    }
                }
                (Outcome::Err { .. }, _) if r.expect() != Expect::Succeed => ReqEvent::Untouched {
                    req: id,
                    before: &r.tgt_before,
                    after: &now,
                },
                _ => continue,
            };
            self.checkers.observe(at, &ev);
        }
        self.completed = done;
    }

    fn on_driver(&mut self, ev: DrvEv) {
        match ev {
            DrvEv::Drain { node } => {
                self.drain(node);
                // Keep draining while requests remain (a full log needs its handler).
                if self.sim.pending_posts() > 0 || self.sim.next_event_at().is_some() {
                    let at = self.sim.now() + Duration::from_us(self.cfg.drain_every_us);
                    self.schedule(at, DrvEv::Drain { node });
                }
            }
            DrvEv::Evict { node, addr } => {
                self.sim.evict(node, PDID, addr, 1);
                self.evictions += 1;
            }
            DrvEv::FaultsOff => {
                self.sim.set_faults(FaultConfig::NONE);
                self.liveness_from = Some(self.sim.now());
            }
        }
    }

    /// The handler of `node`: every published entry of every log, in order.
    fn drain(&mut self, node: u32) {
        let mut st = self.states[node as usize].lock().expect("aa state");
        let mut iuids: Vec<u16> = st.logs.keys().copied().collect();
        iuids.sort_unstable();
        for iuid in iuids {
            let (log, _) = st.logs.get_mut(&iuid).expect("listed");
            while let Some(e) = log.pop() {
                self.counters[node as usize].on_entry(&e.header);
                self.entries[node as usize].push(e);
            }
        }
    }

    fn report(&self) -> SeedReport {
        let c = &self.cfg;
        let stalls: u64 = self
            .states
            .iter()
            .map(|s| s.lock().expect("aa state").stalls)
            .sum();
        let entries: usize = self.entries.iter().map(Vec::len).sum();
        let swarm = format!(
            "nodes {}, pages {}, logs {:?} B, drain every {} us, {:?}, retransmit {}, safety {} us, faults {}; {} log entries, {} stalls",
            c.nodes,
            c.pages,
            c.log_bytes,
            c.drain_every_us,
            c.policy,
            c.retransmit.name(),
            c.safety_us,
            common::describe(&c.faults),
            entries,
            stalls,
        );
        let (tally, evictions) = (self.tally, self.evictions);
        common::report(
            "aa",
            c.seed,
            swarm,
            tally,
            evictions,
            &self.sim,
            &self.checkers,
        )
    }
}

#[cfg(test)]
mod tests;
