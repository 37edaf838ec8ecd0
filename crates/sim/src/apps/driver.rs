//! The application driver: ranks run their programs (compute phases advance simulated time,
//! message calls go to the node's message endpoint), the endpoints' work requests go to the
//! PART engines of the simulator, and what lands in memory or completes at the NI goes back
//! to the endpoints. The endpoint acts as a progress engine: it reacts at the instant a
//! packet lands or a request completes (a busy-polling progress thread), and the CPU time it
//! spends (copies, minor faults) is charged to the rank.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use unpinned_core::api::{NodeId, Perms};
use unpinned_core::memory::{Pdid, PAGE_BYTES};
use unpinned_core::time::{Duration, Instant};
use unpinned_msg::{Endpoint, Layout, MsgConfig, MsgEvent, PeerInfo};
use unpinned_traffic::{AppModel, Op};
use unpinned_wire::part::WriteTarget;

use super::host::Host;
use crate::memory::Residence;
use crate::world::{Sim, SimConfig, SimError};

/// Where a rank's message buffers and the message region start.
const MSG_BASE: u64 = 1 << 32;
const BUF_BASE: u64 = 1 << 40;
const PDID: Pdid = 1;

/// Residency of buffers and message region at the start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum BufferMode {
    /// PART: nothing pinned, nothing touched: every page faults on its first use.
    Part,
    /// Pre-touch: every page present from the start (no network faults).
    PreTouch,
}

impl BufferMode {
    /// Name used in tables.
    pub fn name(self) -> &'static str {
        match self {
            BufferMode::Part => "part",
            BufferMode::PreTouch => "pretouch",
        }
    }
}

/// An application run.
#[derive(Clone, Debug)]
pub struct AppSimConfig {
    /// The simulator (profile, policy, seed, nodes, topology, packet faults, invariants).
    pub sim: SimConfig,
    /// Buffer residency.
    pub mode: BufferMode,
    /// Message layer.
    pub msg: MsgConfig,
    /// Host memory-copy bandwidth (eager receive copies), GB/s. Assumption.
    pub copy_gbps: f64,
    /// Copy real bytes on the host (tests check them; large runs model time only).
    pub copy_bytes: bool,
    /// Memory pressure: every this many iterations, every buffer page is reclaimed (0: never).
    pub evict_every: u64,
    /// Give up after this much simulated time.
    pub time_limit: Duration,
    /// Worker threads of a parallel run (0: the available cores; capped by the nodes). Every
    /// count gives the same result; runs with fault injection, tracing or invariant checks use
    /// one (see `parallel.rs`).
    pub threads: usize,
}

/// What a run measured.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct AppResult {
    /// Simulated time until the last rank finished, s.
    pub time_s: f64,
    /// Send calls.
    pub sends: u64,
    /// Bytes sent.
    pub bytes: u64,
    /// Receives completed.
    pub recvs: u64,
    /// Receives or sends that failed (tag mismatch, truncation, transport).
    pub msg_errors: u64,
    /// IOMMU fault interrupts, all nodes.
    pub fault_interrupts: u64,
    /// ERRs sent, all nodes.
    pub errs: u64,
    /// Minor faults taken by host CPUs.
    pub minor_faults: u64,
    /// Simulator events.
    pub events: u64,
    /// Superseded timer entries popped from the event queue (not events).
    pub stale_timers: u64,
    /// Largest number of entries in one partition's event queue at once.
    pub queue_max: u64,
    /// Partitions (threads) the run used.
    pub threads: u32,
    /// Windows of simulated time the partitions advanced through (0: not windowed).
    pub windows: u64,
    /// Times a thread parked at a window barrier (it waited longer than its spin and yield).
    pub parks: u64,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    Ready,
    Computing,
    Waiting,
    Done,
}

struct Rank {
    ops: VecDeque<Op>,
    next_iter: u64,
    bufs: Vec<u64>,
    /// Bytes of the buffer area (from `BUF_BASE`).
    bufs_len: u64,
    outstanding: u32,
    state: State,
    /// CPU time owed by the progress engine, charged when the rank next runs.
    debt: Duration,
    next_id: u64,
}

/// The peers of every rank (either direction), sorted.
fn peer_lists(model: &dyn AppModel) -> Vec<Vec<u32>> {
    let n = model.ranks() as usize;
    let mut lists: Vec<Vec<u32>> = vec![Vec::new(); n];
    for r in 0..n as u32 {
        for p in model.peers(r) {
            lists[r as usize].push(p);
            lists[p as usize].push(r);
        }
    }
    for l in &mut lists {
        l.sort_unstable();
        l.dedup();
    }
    lists
}

/// Run iterations `iters` of `model` (one rank per node; `cfg.sim.nodes` must equal its ranks).
pub fn run_app(
    cfg: &AppSimConfig,
    model: &dyn AppModel,
    iters: std::ops::Range<u64>,
) -> Result<AppResult, SimError> {
    let n = model.ranks();
    let mut scfg = cfg.sim.clone();
    scfg.nodes = n;
    let mut sim = Sim::new(scfg);
    let residence = match cfg.mode {
        BufferMode::Part => Residence::Absent,
        BufferMode::PreTouch => Residence::Present,
    };
    let peers = peer_lists(model);
    // Memory: the message region and the buffers, mapped and exposed.
    let mut msg_keys = Vec::with_capacity(n as usize);
    let mut control_end = Vec::with_capacity(n as usize);
    let mut ranks = Vec::with_capacity(n as usize);
    for r in 0..n {
        let layout = Layout::new(&cfg.msg, MSG_BASE, peers[r as usize].len() as u32);
        control_end.push(MSG_BASE + layout.control_bytes());
        sim.map(r, PDID, MSG_BASE, layout.region_bytes(), residence);
        if !cfg.copy_bytes {
            // Only the layer's control words are read back; payload bytes are not modelled.
            sim.node_mut(r).mem.keep_bytes_only(Some(vec![(
                PDID,
                MSG_BASE,
                MSG_BASE + layout.control_bytes(),
            )]));
        }
        msg_keys.push(sim.expose(r, PDID, MSG_BASE, layout.region_bytes(), Perms::RW));
        let sizes = model.buffers(r);
        let mut bufs = Vec::with_capacity(sizes.len());
        let mut at = BUF_BASE;
        for s in sizes {
            bufs.push(at);
            at += s.div_ceil(PAGE_BYTES).max(1) * PAGE_BYTES;
        }
        sim.map(r, PDID, BUF_BASE, at - BUF_BASE, residence);
        ranks.push((bufs, at - BUF_BASE));
    }
    let mut eps = Vec::with_capacity(n as usize);
    let mut rs = Vec::with_capacity(n as usize);
    for r in 0..n {
        let (bufs, len) = std::mem::take(&mut ranks[r as usize]);
        let buf_key = sim.expose(r, PDID, BUF_BASE, len, Perms::R);
        let infos = peers[r as usize]
            .iter()
            .map(|&p| PeerInfo {
                node: p,
                pdid: PDID,
                region_base: MSG_BASE,
                peer_peers: peers[p as usize].len() as u32,
                index_at_peer: peers[p as usize]
                    .binary_search(&r)
                    .expect("symmetric peer lists") as u32,
                msg_rkey: msg_keys[p as usize],
            })
            .collect();
        let ep =
            Endpoint::new(r, PDID, cfg.msg, MSG_BASE, buf_key, infos).map_err(|e| SimError {
                what: e.to_string(),
                seed: cfg.sim.seed,
                at_us: 0.0,
            })?;
        eps.push(ep);
        rs.push(Rank {
            ops: VecDeque::new(),
            next_iter: iters.start,
            bufs,
            bufs_len: len,
            outstanding: 0,
            state: State::Ready,
            debt: Duration::ZERO,
            next_id: 1,
        });
    }
    let lookahead = sim.lookahead();
    let parts = super::parallel::partitions(cfg, n, lookahead);
    let new_driver = |sim: Sim, eps: Vec<Endpoint>, ranks: Vec<Rank>| {
        let base = sim.node_range().start;
        let mut d = Driver {
            cfg,
            sim,
            base,
            eps,
            control_end: &control_end,
            ranks,
            wake: BinaryHeap::new(),
            res: AppResult::default(),
            model,
            iters: iters.clone(),
            finished: 0,
            done: Vec::new(),
            scratch: Vec::new(),
        };
        for r in d.sim.node_range() {
            d.wake.push(Reverse((Instant::ZERO, r)));
        }
        d
    };
    let mut drivers = Vec::new();
    let mut windows = 0;
    let mut parks = 0;
    if lookahead == Duration::ZERO {
        // No lookahead (a uniform network of 0 hops with free NIs and links): the one
        // sequential loop, packets claiming ports at send time.
        drivers.push(new_driver(sim, eps, rs));
        drivers[0].run_window(Instant(u64::MAX))?;
    } else {
        let sims = sim.split(&parts)?;
        for sim in sims.into_iter().rev() {
            let first = sim.node_range().start as usize;
            drivers.push(new_driver(sim, eps.split_off(first), rs.split_off(first)));
        }
        drivers.reverse();
        (windows, parks) = super::parallel::run(&mut drivers, lookahead)?;
    }
    let finished: u32 = drivers.iter().map(|d| d.finished).sum();
    if finished != n {
        let d = drivers
            .iter()
            .find(|d| d.finished != d.ranks.len() as u32)
            .expect("a partition with ranks not done");
        return Err(d.stuck("deadlock: no event left but ranks are waiting".into()));
    }
    let mut res = AppResult {
        threads: drivers.len() as u32,
        windows,
        parks,
        ..AppResult::default()
    };
    for d in &drivers {
        let r = &d.res;
        res.time_s = res.time_s.max(r.time_s);
        res.sends += r.sends;
        res.bytes += r.bytes;
        res.recvs += r.recvs;
        res.msg_errors += r.msg_errors;
        res.minor_faults += r.minor_faults;
        for node in d.sim.node_range() {
            let s = d.sim.stats(node);
            res.fault_interrupts += s.handler.interrupts;
            res.errs += s.engine.errs_sent;
        }
        res.events += d.sim.events();
        let (stale, queue_max) = d.sim.queue_stats();
        res.stale_timers += stale;
        res.queue_max = res.queue_max.max(queue_max as u64);
    }
    Ok(res)
}

/// The ranks of one partition (all of them in a run of one) and their simulator.
pub(super) struct Driver<'a> {
    cfg: &'a AppSimConfig,
    pub(super) sim: Sim,
    /// The first node of the partition (`eps` and `ranks` are indexed from it).
    base: NodeId,
    eps: Vec<Endpoint>,
    /// End of each rank's control words (from `MSG_BASE`), every rank's.
    control_end: &'a [u64],
    ranks: Vec<Rank>,
    wake: BinaryHeap<Reverse<(Instant, u32)>>,
    res: AppResult,
    model: &'a dyn AppModel,
    iters: std::ops::Range<u64>,
    finished: u32,
    /// Completed posts of the last step (a buffer kept across steps).
    done: Vec<crate::world::PostRecord>,
    /// An iteration's operations on their way into a rank's queue (a buffer kept across
    /// iterations).
    scratch: Vec<Op>,
}

impl Driver<'_> {
    /// When this partition next has something to do: an event or a rank waking up.
    pub(super) fn next_at(&self) -> Option<Instant> {
        let tw = self.wake.peek().map(|Reverse((t, _))| *t);
        match (self.sim.next_event_at(), tw) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Run every event and rank wake-up before `end` (events first at equal times).
    pub(super) fn run_window(&mut self, end: Instant) -> Result<(), SimError> {
        let limit = Instant::ZERO + self.cfg.time_limit;
        loop {
            let tw = self.wake.peek().map(|Reverse((t, _))| *t);
            let te = self.sim.next_event_at();
            match (te, tw) {
                (None, None) => break,
                (Some(te), tw) if tw.is_none_or(|tw| te <= tw) => {
                    if te >= end {
                        break;
                    }
                    if te > limit {
                        return Err(self.stuck(format!(
                            "not finished after {:.0} us",
                            self.cfg.time_limit.as_us_f64()
                        )));
                    }
                    self.sim.step()?;
                    self.after_step();
                }
                (_, Some(tw)) => {
                    if tw >= end {
                        break;
                    }
                    let Reverse((_, r)) = self.wake.pop().expect("peeked");
                    self.sim.run_until(tw)?;
                    self.run_rank(r, tw);
                }
                (Some(_), None) => unreachable!("covered by the guard"),
            }
        }
        Ok(())
    }

    /// An error of this partition at its current time.
    pub(super) fn failed(&self, what: &str) -> SimError {
        SimError {
            what: what.to_string(),
            seed: self.cfg.sim.seed,
            at_us: self.sim.now().as_us_f64(),
        }
    }

    fn stuck(&self, what: String) -> SimError {
        let waiting: Vec<_> = self
            .ranks
            .iter()
            .enumerate()
            .filter(|(_, r)| r.state != State::Done)
            .map(|(i, r)| (i + self.base as usize, r.state, r.outstanding, r.next_iter))
            .take(8)
            .collect();
        SimError {
            what: format!(
                "{what}; ranks not done (rank, state, outstanding, next iteration): {waiting:?}"
            ),
            seed: self.cfg.sim.seed,
            at_us: self.sim.now().as_us_f64(),
        }
    }

    fn host(&mut self, n: NodeId) -> (Host<'_>, &mut Endpoint) {
        let node = self.sim.node_mut(n);
        let host = Host {
            mem: &mut node.mem,
            pdid: PDID,
            cpu: &self.cfg.sim.profile.cpu,
            copy_gbps: self.cfg.copy_gbps,
            spent: Duration::ZERO,
            minor_faults: 0,
            copy_bytes: self.cfg.copy_bytes,
        };
        (host, &mut self.eps[(n - self.base) as usize])
    }

    fn after_step(&mut self) {
        if let Some((src, n)) = self
            .sim
            .take_arrival()
            .filter(|&(_, n)| self.may_write_control(n, self.sim.arrival_write()))
        {
            // Only `src` writes into the words of its pair: poll that pair.
            let (mut host, ep) = self.host(n);
            ep.poll_node(src, &mut host);
            let (spent, mf) = (host.spent, host.minor_faults);
            self.charge(n, spent, mf);
            self.drain(n, self.sim.now());
        }
        let mut done = std::mem::take(&mut self.done);
        self.sim.take_completed_into(&mut done);
        for rec in done.drain(..) {
            let Some(c) = rec.completion else { continue };
            let n = rec.node;
            let (mut host, ep) = self.host(n);
            ep.handle_completion(&c, &mut host);
            let (spent, mf) = (host.spent, host.minor_faults);
            self.charge(n, spent, mf);
            self.drain(n, self.sim.now());
        }
        self.done = done;
    }

    /// Whether a packet that wrote `w` at node `n` may have changed the endpoint's control words
    /// (slot headers, credit and FIN words), the only memory a poll reads. A poll after any
    /// other packet finds nothing new and costs nothing, so it is skipped: the run is the same.
    /// Read responses land in the buffer of one of `n`'s own reads; the endpoint reads only into
    /// user buffers (rendezvous), never into its control words.
    fn may_write_control(&self, n: NodeId, w: WriteTarget) -> bool {
        match w {
            WriteTarget::Nothing | WriteTarget::ReadResponse => false,
            WriteTarget::Range { pdid, start, end } => {
                pdid == PDID && start < self.control_end[n as usize] && end > MSG_BASE
            }
            WriteTarget::Any => true,
        }
    }

    fn charge(&mut self, n: NodeId, spent: Duration, minor_faults: u64) {
        self.ranks[(n - self.base) as usize].debt += spent;
        self.res.minor_faults += minor_faults;
    }

    /// Post the endpoint's work requests at `at` and hand its events to the rank.
    fn drain(&mut self, n: NodeId, at: Instant) {
        loop {
            let (mut host, ep) = self.host(n);
            let Some(wr) = ep.poll_post(&mut host) else {
                break;
            };
            self.sim.post(at, n, wr);
        }
        let now = self.sim.now();
        while let Some(ev) = self.eps[(n - self.base) as usize].poll_event() {
            match ev {
                MsgEvent::SendDone { result, .. } => {
                    if result.is_err() {
                        self.res.msg_errors += 1;
                    }
                }
                MsgEvent::Recv(r) => {
                    self.res.recvs += 1;
                    if r.result.is_err() {
                        self.res.msg_errors += 1;
                    }
                }
                MsgEvent::PeerFailed { .. } => {
                    self.res.msg_errors += 1;
                    continue;
                }
            }
            let rank = &mut self.ranks[(n - self.base) as usize];
            rank.outstanding -= 1;
            if rank.outstanding == 0 && rank.state == State::Waiting {
                rank.state = State::Ready;
                let t = now + std::mem::take(&mut rank.debt);
                self.wake.push(Reverse((t, n)));
            }
        }
    }

    fn run_rank(&mut self, n: NodeId, mut t: Instant) {
        let post = Duration::from_us_f64(self.cfg.sim.profile.cpu.post_us);
        t += std::mem::take(&mut self.ranks[(n - self.base) as usize].debt);
        loop {
            let rank = &mut self.ranks[(n - self.base) as usize];
            let Some(op) = rank.ops.pop_front() else {
                if rank.next_iter >= self.iters.end {
                    rank.state = State::Done;
                    self.finished += 1;
                    self.res.time_s = self.res.time_s.max(t.0 as f64 * 1e-9);
                    return;
                }
                let it = rank.next_iter;
                rank.next_iter += 1;
                self.scratch.clear();
                self.model.iteration(n, it, &mut self.scratch);
                rank.ops.extend(self.scratch.drain(..));
                if self.cfg.evict_every > 0
                    && it > self.iters.start
                    && (it - self.iters.start) % self.cfg.evict_every == 0
                {
                    // Memory pressure: the OS reclaimed every buffer page since the last
                    // iteration; the next use faults again (NI or CPU).
                    let len = rank.bufs_len;
                    self.sim.evict(n, PDID, BUF_BASE, len);
                }
                continue;
            };
            match op {
                Op::Compute { ns } => {
                    rank.state = State::Computing;
                    self.wake.push(Reverse((t + Duration(ns), n)));
                    return;
                }
                Op::Send {
                    peer,
                    bytes,
                    buf,
                    tag,
                } => {
                    let addr = rank.bufs[buf as usize];
                    let id = rank.next_id;
                    rank.next_id += 1;
                    rank.outstanding += 1;
                    self.res.sends += 1;
                    self.res.bytes += bytes;
                    // The application wrote (packed) the data it sends: its CPU touches the pages.
                    let (mut host, ep) = self.host(n);
                    host.touch(addr, bytes);
                    let isend = ep.isend(id, peer, addr, bytes, tag);
                    let (spent, mf) = (host.spent, host.minor_faults);
                    self.res.minor_faults += mf;
                    t += spent + post;
                    if isend.is_err() {
                        self.res.msg_errors += 1;
                        self.ranks[(n - self.base) as usize].outstanding -= 1;
                    }
                    self.drain(n, t);
                }
                Op::Recv {
                    peer,
                    bytes,
                    buf,
                    tag,
                } => {
                    let addr = rank.bufs[buf as usize];
                    let id = rank.next_id;
                    rank.next_id += 1;
                    rank.outstanding += 1;
                    let (mut host, ep) = self.host(n);
                    let ok = ep.irecv(id, peer, addr, bytes, tag).is_ok();
                    ep.poll_node(peer, &mut host);
                    let (spent, mf) = (host.spent, host.minor_faults);
                    self.res.minor_faults += mf;
                    t += spent + post;
                    if !ok {
                        self.res.msg_errors += 1;
                        self.ranks[(n - self.base) as usize].outstanding -= 1;
                    }
                    self.drain(n, t);
                }
                Op::Wait => {
                    let rank = &mut self.ranks[(n - self.base) as usize];
                    if rank.outstanding > 0 {
                        rank.state = State::Waiting;
                        return;
                    }
                }
            }
        }
    }
}
