//! The DSM swarm of the VOPR (issue 18): several nodes run the sans-IO coherence protocol
//! (`unpinned_dsm::Node`) over the stack the live DSM uses, inside the simulator's PART world
//! with its faulty links (loss, duplication, reordering, corruption, delay) and page evictions
//! during transfers:
//!
//! - control messages are 64-byte slots written by PART RDMA writes into per-peer mailbox
//!   rings, consumed in sequence order, credits returned by write every `slots / 4` messages
//!   (crates/dsm-live `endpoint.rs`, modelled call for call: [`transport`]);
//! - page data moves by RDMA write from the server's private view into the requestor's, and
//!   the `Data` notice follows only after that write completed;
//! - a read of a shared minipage may be served by an RDMA read from a read copy (`ReadFrom`).
//!
//! Threads run random programs of reads and one-word writes on a few minipages. The coherence
//! checker ([`coherence`]) holds the protocol to its promise at every access and after every
//! step: one writer per minipage at any time (and no reader beside it), every read returns the
//! latest value written (sequential consistency per location). A seed runs a safety phase with
//! faults on, then a liveness phase with faults off in which every access must complete.

mod coherence;
pub mod slot;
mod transport;

use unpinned_core::api::{Op, Perms, WorkRequest};
use unpinned_core::os::PageInPolicy;
use unpinned_core::profile::RetransmitPolicy;
use unpinned_core::rng::{Rng, SimRng};
use unpinned_core::time::{Duration, Instant};
use unpinned_dsm::{Access, Event, FaultResult, Node};

use super::common;
use super::report::{SeedReport, Tally};
use crate::faults::FaultConfig;
use crate::kernel::{Checkers, FaultMix, Kernel, RngTree};
use crate::world::{PostRecord, Sim};

use coherence::{Dsm, DsmEvent};
use transport::Endpoint;

/// Address space of every node's regions.
pub(crate) const PDID: u16 = 1;
/// The mailbox: a ring of `slots` slots per sender, then one credit word per peer.
pub(crate) const MBOX_BASE: u64 = 0x1000_0000;
/// The private view: minipage `mp` at `DATA_BASE + mp * mp_bytes`.
pub(crate) const DATA_BASE: u64 = 0x4000_0000;
/// Staging slots of outgoing control writes (local only).
pub(crate) const STAGE_BASE: u64 = 0x6000_0000;
/// Staging slots per node (a staged write holds one until it completes).
pub(crate) const STAGE_SLOTS: u32 = 1024;

/// What one seed runs.
#[derive(Clone, Debug)]
pub struct DsmSwarmConfig {
    /// Master seed.
    pub seed: u64,
    /// Nodes.
    pub nodes: u32,
    /// Minipages shared.
    pub minipages: u32,
    /// Bytes per minipage (a multiple of 8).
    pub mp_bytes: u32,
    /// Threads per node.
    pub threads: u32,
    /// Accesses per thread.
    pub ops_per_thread: u32,
    /// Mailbox slots per ring (a power of two >= 4).
    pub slots: u64,
    /// Reads of shared minipages served by RDMA read (`ReadFrom`).
    pub rdma_read: bool,
    /// Packet faults of the safety phase.
    pub faults: FaultConfig,
    /// Length of the safety phase (faults on, evictions), us of simulated time.
    pub safety_us: u64,
    /// Page evictions during the safety phase.
    pub evictions: u32,
    /// PART retransmission policy.
    pub retransmit: RetransmitPolicy,
    /// Page-in policy of the nodes' fault handlers.
    pub policy: PageInPolicy,
}

impl DsmSwarmConfig {
    /// The swarm seed `seed` picks.
    pub fn from_seed(seed: u64) -> DsmSwarmConfig {
        let tree = RngTree::new(seed);
        let mut rng = tree.rng("vopr/dsm");
        // Control messages are single packets and minipages at most a block: whole-block
        // retransmission copes with the same rates as selective.
        let faults = FaultMix::draw(
            &mut tree.rng("vopr/dsm/faults"),
            MAX_FAULT_RATE,
            Duration::from_us(50),
        );
        DsmSwarmConfig {
            seed,
            nodes: rng.gen_range(2..=4),
            minipages: rng.gen_range(1..=4),
            mp_bytes: [8, 64, 256, 1024, 4096][rng.gen_range(0..5)],
            threads: rng.gen_range(1..=3),
            ops_per_thread: rng.gen_range(1..=24),
            slots: [4, 8, 16][rng.gen_range(0..3)],
            rdma_read: rng.gen_bool(0.5),
            faults,
            safety_us: rng.gen_range(50..=3_000),
            evictions: rng.gen_range(0..=12),
            retransmit: RetransmitPolicy::ALL[rng.gen_range(0..2)],
            policy: [PageInPolicy::Pio, PageInPolicy::Pi4, PageInPolicy::Pia][rng.gen_range(0..3)],
        }
    }
}

/// What a seed did besides the kernel's report.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Counts {
    reads: u64,
    writes: u64,
    /// Accesses that faulted and waited for the protocol.
    waits: u64,
    /// Data writes (page transfers) and RDMA reads (`ReadFrom`).
    data_moves: u64,
    evictions: u64,
}

/// Largest rate per fault kind.
const MAX_FAULT_RATE: f64 = 0.05;

/// Simulated time the liveness phase may take before the run counts as stuck.
const LIVENESS_LIMIT: Duration = Duration::from_ms(200);

/// Run one seed of the DSM swarm (the registry's entry).
pub fn run(seed: u64) -> SeedReport {
    run_config(DsmSwarmConfig::from_seed(seed))
}

/// Run one configured swarm: a coherence violation is recorded and the run goes on; a
/// transport failure, a broken simulator invariant or a stuck run ends it.
pub fn run_config(cfg: DsmSwarmConfig) -> SeedReport {
    let mut s = Swarm::new(cfg);
    if let Err((source, what)) = s.run() {
        let at = s.sim.now();
        s.checkers.report(source, at, what);
    }
    let at = s.sim.now();
    s.checkers.finish(at);
    s.report()
}

#[derive(Clone, Copy, Debug)]
struct AccessOp {
    mp: u32,
    write: bool,
    word: u32,
}

struct Thread {
    ops: Vec<AccessOp>,
    pc: usize,
    waiting: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DrvEv {
    Step { node: u32, thread: u32 },
    Evict { node: u32, addr: u64 },
    FaultsOff,
}

pub(crate) struct Swarm {
    pub(crate) cfg: DsmSwarmConfig,
    pub(crate) sim: Sim,
    pub(crate) eps: Vec<Endpoint>,
    dsm: Vec<Node>,
    threads: Vec<Vec<Thread>>,
    /// The driver's own events (threads, evictions, handlers, the phase change), on the
    /// kernel's queue and clock; the PART world keeps its loop and is stepped between them.
    drv: Kernel<DrvEv>,
    checkers: Checkers<Dsm>,
    rng: SimRng,
    think: Duration,
    liveness_from: Option<Instant>,
    done: bool,
    report: Counts,
    completed: Vec<PostRecord>,
    /// The first failure found inside a handler (checked after every step).
    pub(crate) failure: Option<String>,
}

impl Swarm {
    fn new(cfg: DsmSwarmConfig) -> Swarm {
        // Enough retries that the injected loss alone rarely exhausts them: a transport that
        // gives up is a failure of the seed.
        let sim = common::part_world(cfg.seed, cfg.nodes, cfg.faults, cfg.retransmit, cfg.policy);
        let mut rng = RngTree::new(cfg.seed).rng("vopr/dsm/run");
        let mut s = Swarm {
            sim,
            eps: Vec::new(),
            dsm: (0..cfg.nodes)
                .map(|n| Node::new(n, cfg.nodes, cfg.mp_bytes as usize))
                .collect(),
            threads: Vec::new(),
            drv: Kernel::new(),
            checkers: coherence::checkers(cfg.minipages, cfg.mp_bytes),
            think: Duration::from_us(rng.gen_range(0..=20)),
            rng,
            liveness_from: None,
            done: false,
            report: Counts::default(),
            completed: Vec::new(),
            failure: None,
            cfg,
        };
        s.setup();
        s
    }

    fn setup(&mut self) {
        let n = self.cfg.nodes;
        let mbox_len = transport::mbox_len(n, self.cfg.slots);
        let data_len = (self.cfg.minipages as u64 * self.cfg.mp_bytes as u64).max(8);
        let mut keys = Vec::new();
        for node in 0..n {
            for (base, len) in [
                (MBOX_BASE, mbox_len),
                (DATA_BASE, data_len),
                (STAGE_BASE, STAGE_SLOTS as u64 * 64),
            ] {
                let r = common::residence(&mut self.rng);
                self.sim.map(node, PDID, base, len, r);
            }
            let mbox = self.sim.expose(node, PDID, MBOX_BASE, mbox_len, Perms::RW);
            // Slots and credit words are rewritten before the earlier write's completion
            // (a credit or a reused slot may land before an ACK): the slot check is theirs.
            self.sim
                .rewritten_by_design(node, PDID, MBOX_BASE, mbox_len);
            let data = self.sim.expose(node, PDID, DATA_BASE, data_len, Perms::RW);
            keys.push((mbox, data));
        }
        self.eps = (0..n)
            .map(|node| Endpoint::new(node, n, self.cfg.slots, keys.clone()))
            .collect();
        // Programs: each access names a minipage, read or write, and a word.
        let words = self.cfg.mp_bytes / 8;
        for node in 0..n {
            let mut ts = Vec::new();
            for t in 0..self.cfg.threads {
                let ops = (0..self.cfg.ops_per_thread)
                    .map(|_| AccessOp {
                        mp: self.rng.gen_range(0..self.cfg.minipages),
                        write: self.rng.gen_bool(0.4),
                        word: self.rng.gen_range(0..words),
                    })
                    .collect();
                ts.push(Thread {
                    ops,
                    pc: 0,
                    waiting: false,
                });
                let at = Instant(self.rng.gen_range(0..=20_000));
                self.schedule(at, DrvEv::Step { node, thread: t });
            }
            self.threads.push(ts);
        }
        let safety_end = Instant(self.cfg.safety_us * 1_000);
        for _ in 0..self.cfg.evictions {
            let node = self.rng.gen_range(0..n);
            let (base, len) = match self.rng.gen_range(0..3) {
                0 => (MBOX_BASE, mbox_len),
                1 => (DATA_BASE, data_len),
                _ => (STAGE_BASE, STAGE_SLOTS as u64 * 64),
            };
            let addr = base + self.rng.gen_range(0..len);
            let at = Instant(self.rng.gen_range(0..safety_end.0));
            self.schedule(at, DrvEv::Evict { node, addr });
        }
        self.schedule(safety_end, DrvEv::FaultsOff);
    }

    fn schedule(&mut self, at: Instant, ev: DrvEv) {
        self.drv.schedule(at, ev);
    }

    fn all_done(&self) -> bool {
        self.threads
            .iter()
            .all(|ts| ts.iter().all(|t| t.pc >= t.ops.len()))
    }

    /// Run to the end; `Err((source, what))`: what ended it early.
    fn run(&mut self) -> Result<(), (&'static str, String)> {
        loop {
            if let Some(f) = self.failure.take() {
                return Err(("transport", f));
            }
            let drv_at = self.drv.peek_at();
            let sim_at = self.sim.next_event_at();
            if self.all_done() && sim_at.is_none() {
                break;
            }
            if let Some(from) = self.liveness_from {
                if self.sim.now() > from + LIVENESS_LIMIT {
                    return Err((
                        "liveness",
                        format!(
                            "accesses still waiting {:.0} us after faults were turned off\n{}",
                            LIVENESS_LIMIT.as_us_f64(),
                            self.stuck_summary()
                        ),
                    ));
                }
            }
            match (drv_at, sim_at) {
                (None, None) => {
                    return Err((
                        "liveness",
                        format!(
                            "stuck: nothing left to happen but accesses wait\n{}",
                            self.stuck_summary()
                        ),
                    ))
                }
                (Some(d), s) if s.is_none_or(|s| d < s) => {
                    let (at, ev) = self.drv.pop().expect("peeked");
                    self.sim.run_until(at).map_err(|e| ("world", e.what))?;
                    self.on_driver(ev);
                }
                _ => {
                    self.sim.step().map_err(|e| ("world", e.what))?;
                    self.after_step();
                }
            }
        }
        self.finish()
    }

    /// What arrived and what completed in the step just run.
    fn after_step(&mut self) {
        if let Some((src, dst)) = self.sim.take_arrival() {
            // A slot from `src` in `dst`'s ring, or a credit `src` returned to `dst`.
            self.poll_ring(dst, src);
            self.pump(dst, src);
        }
        let mut done = std::mem::take(&mut self.completed);
        self.sim.take_completed_into(&mut done);
        for rec in &done {
            let c = rec
                .completion
                .expect("completed posts carry their completion");
            self.on_completion(rec.node, c);
        }
        self.completed = done;
    }

    fn on_driver(&mut self, ev: DrvEv) {
        match ev {
            DrvEv::Step { node, thread } => self.step_thread(node, thread),
            DrvEv::Evict { node, addr } => {
                self.sim.evict(node, PDID, addr, 1);
                self.report.evictions += 1;
            }
            DrvEv::FaultsOff => {
                self.sim.set_faults(FaultConfig::NONE);
                self.liveness_from = Some(self.sim.now());
            }
        }
    }

    fn step_thread(&mut self, node: u32, thread: u32) {
        let th = &self.threads[node as usize][thread as usize];
        let Some(&op) = th.ops.get(th.pc) else {
            return;
        };
        let need = if op.write {
            Access::Write
        } else {
            Access::Read
        };
        let dsm = &mut self.dsm[node as usize];
        let go =
            dsm.access(op.mp) >= need || dsm.fault(thread, op.mp, op.write) == FaultResult::Proceed;
        if go {
            self.perform(node, thread, op);
            let th = &mut self.threads[node as usize][thread as usize];
            th.pc += 1;
            if th.pc < th.ops.len() {
                let at = self.sim.now() + self.think;
                self.schedule(at, DrvEv::Step { node, thread });
            }
        } else {
            self.threads[node as usize][thread as usize].waiting = true;
            self.report.waits += 1;
        }
        self.process(node);
    }

    fn perform(&mut self, node: u32, thread: u32, op: AccessOp) {
        let access: Vec<Access> = self.dsm.iter().map(|d| d.access(op.mp)).collect();
        let at = self.sim.now();
        if op.write {
            self.report.writes += 1;
            let value = ((node as u64) << 56) | ((thread as u64) << 48) | self.report.writes;
            let addr = DATA_BASE + op.mp as u64 * self.cfg.mp_bytes as u64 + op.word as u64 * 8;
            self.sim
                .node_mut(node)
                .mem
                .host_write(PDID, addr, &value.to_le_bytes());
            let ev = DsmEvent::Write {
                node,
                mp: op.mp,
                word: op.word,
                value,
                access: &access,
            };
            self.checkers.observe(at, &ev);
        } else {
            self.report.reads += 1;
            let mut bytes = vec![0u8; self.cfg.mp_bytes as usize];
            let addr = DATA_BASE + op.mp as u64 * self.cfg.mp_bytes as u64;
            self.sim.node(node).mem.host_read(PDID, addr, &mut bytes);
            let ev = DsmEvent::Read {
                node,
                mp: op.mp,
                bytes: &bytes,
                access: &access,
                final_copy: false,
            };
            self.checkers.observe(at, &ev);
        }
    }

    pub(crate) fn fail(&mut self, what: String) {
        if self.failure.is_none() {
            self.failure = Some(what);
        }
    }

    /// Drain node `n`'s protocol outputs: events, then messages, then messages to itself
    /// (delivered in order, like any other).
    pub(crate) fn process(&mut self, n: u32) {
        loop {
            while let Some(ev) = self.dsm[n as usize].poll_event() {
                match ev {
                    Event::SetAccess { .. } => {}
                    Event::Resume { thread } => {
                        let th = &mut self.threads[n as usize][thread as usize];
                        if th.waiting {
                            th.waiting = false;
                            let at = self.sim.now();
                            self.schedule(at, DrvEv::Step { node: n, thread });
                        }
                    }
                }
            }
            while let Some((to, msg)) = self.dsm[n as usize].poll_message() {
                self.route(n, to, msg);
            }
            match self.eps[n as usize].local.pop_front() {
                Some(m) => self.deliver(n, n, m),
                None => break,
            }
        }
        let at = self.sim.now();
        for mp in 0..self.cfg.minipages {
            let access: Vec<Access> = self.dsm.iter().map(|d| d.access(mp)).collect();
            self.checkers.observe(
                at,
                &DsmEvent::State {
                    mp,
                    access: &access,
                },
            );
        }
    }

    /// A message of `n`'s protocol to `to`, as the live DSM sends it.
    fn route(&mut self, n: u32, to: u32, msg: unpinned_dsm::Msg) {
        use unpinned_dsm::Msg;
        match msg {
            // A read of a shared minipage whose server is neither the manager nor the
            // requestor: the requestor pulls it by RDMA read (dsm-live's `process`).
            Msg::Transfer {
                mp,
                requestor,
                write: false,
                notices: 0,
            } if self.cfg.rdma_read
                && to != n
                && to != requestor
                && self.dsm[n as usize]
                    .manager_view(mp)
                    .is_some_and(|(owner, copies)| owner.is_none() && copies.contains(&to)) =>
            {
                self.send(n, requestor, slot::SlotMsg::ReadFrom { mp, server: to });
            }
            Msg::Data {
                mp, write, notices, ..
            } => self.send_data(
                n,
                to,
                mp,
                slot::SlotMsg::Dsm(Msg::Data {
                    mp,
                    write,
                    notices,
                    bytes: Vec::new(),
                }),
            ),
            other => self.send(n, to, slot::SlotMsg::Dsm(other)),
        }
    }

    /// Hand a message that arrived at `n` (from `from`) to the protocol or act on it.
    pub(crate) fn deliver(&mut self, n: u32, from: u32, m: slot::SlotMsg) {
        match m {
            slot::SlotMsg::Dsm(msg) => self.dsm[n as usize].handle_message(from, msg),
            slot::SlotMsg::ReadFrom { mp, server } => {
                if server == n || server >= self.cfg.nodes || mp >= self.cfg.minipages {
                    return self.fail(format!(
                        "node {n}: read-from of minipage {mp} at node {server}"
                    ));
                }
                let at = DATA_BASE + mp as u64 * self.cfg.mp_bytes as u64;
                let wr = WorkRequest {
                    wr_id: 0,
                    op: Op::Read,
                    peer: server,
                    local_pdid: PDID,
                    local_addr: at,
                    remote_pdid: PDID,
                    remote_addr: at,
                    rkey: self.eps[server as usize].keys[server as usize].1,
                    len: self.cfg.mp_bytes as u64,
                };
                self.post(n, wr, transport::Inflight::Read { peer: server, mp });
                self.report.data_moves += 1;
            }
        }
    }

    fn stuck_summary(&self) -> String {
        let mut s = String::new();
        for (n, ts) in self.threads.iter().enumerate() {
            for (t, th) in ts.iter().enumerate() {
                if let Some(op) = th.ops.get(th.pc) {
                    s += &format!(
                        "  node {n} thread {t}: access {} of {} ({} minipage {}, waiting {}), local access {:?}\n",
                        th.pc + 1,
                        th.ops.len(),
                        if op.write { "write" } else { "read" },
                        op.mp,
                        th.waiting,
                        self.dsm[n].access(op.mp)
                    );
                }
            }
            s += &self.eps[n].summary(n as u32);
            s += &self.ring_summary(n as u32);
        }
        s
    }

    /// Every access done: the protocol and the transport must be quiet, and every valid copy
    /// must hold the latest values.
    fn finish(&mut self) -> Result<(), (&'static str, String)> {
        self.done = true;
        let at = self.sim.now();
        for n in 0..self.cfg.nodes {
            if !self.dsm[n as usize].is_idle() {
                let what = format!("node {n}: protocol not idle after every access");
                return Err(("liveness", what));
            }
            if let Some(busy) = self.eps[n as usize].busy() {
                return Err(("liveness", format!("node {n}: {busy} after every access")));
            }
            for mp in 0..self.cfg.minipages {
                if self.dsm[n as usize].access(mp) == Access::None {
                    continue;
                }
                let mut bytes = vec![0u8; self.cfg.mp_bytes as usize];
                let addr = DATA_BASE + mp as u64 * self.cfg.mp_bytes as u64;
                self.sim.node(n).mem.host_read(PDID, addr, &mut bytes);
                let access: Vec<Access> = self.dsm.iter().map(|d| d.access(mp)).collect();
                let ev = DsmEvent::Read {
                    node: n,
                    mp,
                    bytes: &bytes,
                    access: &access,
                    final_copy: true,
                };
                self.checkers.observe(at, &ev);
            }
        }
        Ok(())
    }

    fn report(&self) -> SeedReport {
        let c = &self.cfg;
        let posted = (c.nodes * c.threads * c.ops_per_thread) as u64;
        let done = self.report.reads + self.report.writes;
        let swarm = format!(
            "nodes {}, threads {}, minipages {} x {} B, accesses {} per thread, slots {}, rdma read {}, {:?}, retransmit {}, safety {} us, faults {}; {} reads, {} writes, {} waits, {} messages, {} data moves",
            c.nodes,
            c.threads,
            c.minipages,
            c.mp_bytes,
            c.ops_per_thread,
            c.slots,
            c.rdma_read,
            c.policy,
            c.retransmit.name(),
            c.safety_us,
            common::describe(&c.faults),
            self.report.reads,
            self.report.writes,
            self.report.waits,
            self.eps.iter().map(|e| e.sent).sum::<u64>(),
            self.report.data_moves,
        );
        let tally = Tally {
            posted,
            ok: done,
            failed_other: posted - done,
            ..Tally::default()
        };
        let evictions = self.report.evictions;
        common::report(
            "dsm",
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
