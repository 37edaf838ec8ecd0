//! The replay event loop: worker threads step through their trace records, faults drive the
//! coherence protocol of `unpinned_dsm::Node` on every node, messages cross a network with the
//! profile's latencies and bandwidth, handlers run in the chosen context.
//!
//! Model (all costs from [`DsmProfile`]):
//! - `Compute{ns}` takes `ns * cpu_scale / share`, `share = min(1, cpus / (threads + load))`
//!   with `load` extra CPU-bound processes per node.
//! - A `Fault` costs the fault entry, then asks the node's protocol (`Node::fault`): if the
//!   access is allowed already (another thread's request brought the page) the thread goes on;
//!   else it posts the request(s) and blocks until the protocol resumes it, then retries.
//! - Barriers: each worker sends an arrival to node 0, which releases every node when all
//!   arrived. Locks: requests and releases go to the lock's manager (`id % nodes`), which
//!   grants in arrival order. Plain messages, no coherence actions (spec).
//! - Messages: a control send arrives after the SEND one-way latency; page data (`Msg::Data`)
//!   moves by RDMA write plus a notifying send, arriving after the later of the two. Each node's
//!   NIC serializes what it sends at the size's bandwidth; channels are FIFO (the protocol
//!   needs it). A message to the node itself is a local call.
//! - Handlers of one node run one at a time. With an interrupt (or with selective polling and
//!   nobody waiting) the notification and the handler take CPU time; if no CPU is idle (computing
//!   threads + load >= cpus) it is taken from the computing threads in equal shares. A polling
//!   handler runs on the waiting thread at its next poll (every empty poll costs the poll period).
//! - Each protection change costs one page change (batched primitive, or `mprotect` at user
//!   level), each message a post, each woken thread a wake-up.
//!
//! Not modelled: the RDMA-read path for read faults on shared pages (spec option), interrupt
//! coalescing, cache effects of the handlers.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use rustc_hash::FxHashMap;
use unpinned_dsm::trace::{Trace, TraceOp};
use unpinned_dsm::{Event, FaultResult, Msg, Node};

use super::context::{Context, Costs};
use super::profile::DsmProfile;

/// Largest minipage a trace may declare (each data message carries a copy).
const MINIPAGE_BYTES_MAX: u64 = 1 << 20;
/// Most computation one worker's records may add up to, ns (1000 s; with `cpu_scale` <= 1000
/// and a CPU share >= 1/4100 simulated time stays far from u64 overflow).
const COMPUTE_NS_MAX: u64 = 1_000_000_000_000;
/// Events after which a replay is declared runaway (a protocol bug, not a workload).
const EVENTS_MAX: u64 = 500_000_000;

/// How to replay.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReplayConfig {
    /// Handler context.
    pub context: Context,
    /// Extra CPU-bound processes per node (`dsm-load`: 1).
    pub load_procs_per_node: u32,
}

/// A trace that cannot be replayed, or a replay that went wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplayError {
    /// The trace is inconsistent (geometry, minipages, lock pairing, barrier counts).
    #[error("bad trace: {0}")]
    BadTrace(String),
    /// Threads remain blocked with nothing left to happen (a deadlock in the trace or a bug).
    #[error("replay stuck at {time_ns} ns: {why}")]
    Stuck {
        /// Simulated time.
        time_ns: u64,
        /// Who waits for what.
        why: String,
    },
    /// Too many events.
    #[error("replay exceeded {0} events")]
    Runaway(u64),
}

/// What a replay measured.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplayStats {
    /// Run time: the last worker's end, ns.
    pub time_ns: u64,
    /// Fault records replayed.
    pub faults: u64,
    /// Protocol requests sent (a fault already satisfied by another thread sends none).
    pub requests: u64,
    /// Barrier records replayed (one per worker per episode).
    pub barriers: u64,
    /// Barrier episodes completed.
    pub barrier_episodes: u64,
    /// Lock acquires.
    pub locks: u64,
    /// Lock releases.
    pub unlocks: u64,
    /// Messages between nodes (local calls excluded).
    pub messages: u64,
    /// Of the messages, those carrying page data (RDMA write plus notice).
    pub data_messages: u64,
    /// Page data moved between nodes, bytes.
    pub data_bytes: u64,
    /// Sum over workers: computing, ns.
    pub compute_ns: u64,
    /// Sum over workers: fault entry and waiting for pages, ns.
    pub fault_ns: u64,
    /// Sum over workers: waiting in barriers, ns.
    pub barrier_ns: u64,
    /// Sum over workers: waiting for locks and posting releases, ns.
    pub lock_ns: u64,
    /// Sum over workers: computation delayed by handlers taking their CPU, ns.
    pub stolen_ns: u64,
    /// Handler CPU time over all nodes, ns.
    pub handler_ns: u64,
    /// Events processed.
    pub events: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wait {
    Fault { mp: u32, write: bool },
    Barrier,
    Lock,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    Computing,
    FaultEntry { mp: u32, write: bool },
    Retry { mp: u32, write: bool },
    Continue,
    Blocked(Wait),
    Done,
}

struct Th {
    node: u32,
    local: u32,
    pc: usize,
    state: St,
    gen: u64,
    busy_until: u64,
    wait_since: u64,
}

#[derive(Clone, Debug)]
enum Wire {
    Dsm(Msg),
    BarrierArrive,
    BarrierRelease,
    LockReq { id: u32, thread: usize },
    LockGrant { thread: usize },
    LockRelease { id: u32 },
}

enum Ev {
    Thread {
        t: usize,
        gen: u64,
    },
    Arrive {
        to: u32,
        from: u32,
        wire: Wire,
        local: bool,
    },
}

#[derive(Default)]
struct LockSt {
    held: bool,
    queue: VecDeque<usize>,
}

struct NodeSt {
    dsm: Node,
    handler_free: u64,
    nic_free: u64,
}

struct Sim<'a> {
    p: &'a DsmProfile,
    c: Costs,
    ctx: Context,
    ops: &'a [Vec<TraceOp>],
    nodes: Vec<NodeSt>,
    threads: Vec<Th>,
    tpn: u32,
    load: u32,
    share: f64,
    heap: BinaryHeap<Reverse<(u64, u64)>>,
    slab: FxHashMap<u64, Ev>,
    seq: u64,
    fifo: FxHashMap<(u32, u32), u64>,
    arrived: u64,
    locks: FxHashMap<u32, LockSt>,
    done: usize,
    s: ReplayStats,
}

/// Checks what the replay relies on: geometry, minipages, lock pairing, equal barrier counts.
fn validate(trace: &Trace) -> Result<(), ReplayError> {
    let h = &trace.header;
    let bad = |m: String| Err(ReplayError::BadTrace(m));
    let workers = h.ranks as usize * h.threads_per_rank as usize;
    if workers == 0 || trace.threads.len() != workers {
        return bad(format!(
            "{} ranks x {} threads but {} thread records",
            h.ranks,
            h.threads_per_rank,
            trace.threads.len()
        ));
    }
    if h.minipage_bytes == 0 || h.minipage_bytes > MINIPAGE_BYTES_MAX {
        return bad(format!(
            "minipage of {} bytes (1..={MINIPAGE_BYTES_MAX})",
            h.minipage_bytes
        ));
    }
    let mut barriers = None;
    for (w, ops) in trace.threads.iter().enumerate() {
        let mut held: Vec<u32> = Vec::new();
        let mut b = 0;
        let mut compute_ns = 0u64;
        for op in ops {
            match *op {
                TraceOp::Compute { ns } => {
                    compute_ns = compute_ns.saturating_add(ns);
                    if compute_ns > COMPUTE_NS_MAX {
                        return bad(format!(
                            "worker {w}: computation beyond {COMPUTE_NS_MAX} ns"
                        ));
                    }
                }
                TraceOp::Fault { mp, .. } if mp >= h.minipages => {
                    return bad(format!("worker {w}: minipage {mp} >= {}", h.minipages))
                }
                TraceOp::Lock { id } if held.contains(&id) => {
                    return bad(format!("worker {w}: lock {id} taken twice"))
                }
                TraceOp::Lock { id } => held.push(id),
                TraceOp::Unlock { id } => match held.iter().position(|&x| x == id) {
                    Some(k) => {
                        held.remove(k);
                    }
                    None => {
                        return bad(format!("worker {w}: unlock of lock {id} it does not hold"))
                    }
                },
                TraceOp::Barrier if !held.is_empty() => {
                    return bad(format!("worker {w}: barrier while holding locks {held:?}"))
                }
                TraceOp::Barrier => b += 1,
                _ => {}
            }
        }
        if !held.is_empty() {
            return bad(format!("worker {w} ends holding locks {held:?}"));
        }
        if *barriers.get_or_insert(b) != b {
            return bad(format!(
                "worker {w} has {b} barriers, worker 0 has {}",
                barriers.unwrap_or(0)
            ));
        }
    }
    Ok(())
}

/// Replays `trace` on `profile`'s cluster (one node per rank of the trace).
pub fn replay(
    profile: &DsmProfile,
    trace: &Trace,
    cfg: &ReplayConfig,
) -> Result<ReplayStats, ReplayError> {
    profile
        .validate()
        .map_err(|e| ReplayError::BadTrace(e.to_string()))?;
    validate(trace)?;
    let h = &trace.header;
    let tpn = h.threads_per_rank;
    let cpus = profile.cpu.cpus_per_node as f64;
    let mut sim = Sim {
        p: profile,
        c: Costs::new(profile, cfg.context),
        ctx: cfg.context,
        ops: &trace.threads,
        nodes: (0..h.ranks)
            .map(|n| NodeSt {
                dsm: Node::new(n, h.ranks, h.minipage_bytes as usize),
                handler_free: 0,
                nic_free: 0,
            })
            .collect(),
        threads: (0..trace.threads.len())
            .map(|w| Th {
                node: w as u32 / tpn,
                local: w as u32 % tpn,
                pc: 0,
                state: St::Continue,
                gen: 0,
                busy_until: 0,
                wait_since: 0,
            })
            .collect(),
        tpn,
        load: cfg.load_procs_per_node,
        share: (cpus / (tpn + cfg.load_procs_per_node) as f64).min(1.0),
        heap: BinaryHeap::new(),
        slab: FxHashMap::default(),
        seq: 0,
        fifo: FxHashMap::default(),
        arrived: 0,
        locks: FxHashMap::default(),
        done: 0,
        s: ReplayStats::default(),
    };
    for t in 0..sim.threads.len() {
        sim.schedule_thread(t, 0);
    }
    while sim.done < sim.threads.len() {
        let Some(Reverse((now, seq))) = sim.heap.pop() else {
            let blocked: Vec<String> = sim
                .threads
                .iter()
                .enumerate()
                .filter(|(_, t)| t.state != St::Done)
                .take(8)
                .map(|(i, t)| format!("worker {i}: {:?}", t.state))
                .collect();
            return Err(ReplayError::Stuck {
                time_ns: sim.s.time_ns,
                why: blocked.join("; "),
            });
        };
        sim.s.events += 1;
        if sim.s.events > EVENTS_MAX {
            return Err(ReplayError::Runaway(EVENTS_MAX));
        }
        let ev = sim
            .slab
            .remove(&seq)
            .expect("every queued event is in the slab");
        match ev {
            Ev::Thread { t, gen } => {
                if sim.threads[t].gen == gen {
                    sim.thread_event(t, now);
                }
            }
            Ev::Arrive {
                to,
                from,
                wire,
                local,
            } => sim.arrive(to, from, wire, local, now),
        }
    }
    Ok(sim.s)
}

impl Sim<'_> {
    fn push(&mut self, at: u64, ev: Ev) {
        self.seq += 1;
        self.slab.insert(self.seq, ev);
        self.heap.push(Reverse((at, self.seq)));
    }

    fn schedule_thread(&mut self, t: usize, at: u64) {
        let th = &mut self.threads[t];
        th.gen += 1;
        let gen = th.gen;
        self.push(at, Ev::Thread { t, gen });
    }

    fn thread_event(&mut self, t: usize, now: u64) {
        match self.threads[t].state {
            St::Computing => {
                self.threads[t].pc += 1;
                self.advance(t, now);
            }
            St::FaultEntry { mp, write } => self.try_fault(t, now, mp, write),
            St::Retry { mp, write } => {
                self.s.fault_ns += now - self.threads[t].wait_since;
                self.try_fault(t, now, mp, write);
            }
            St::Continue => self.advance(t, now),
            St::Blocked(_) | St::Done => {}
        }
    }

    /// Runs thread `t` from its current record at `now`.
    fn advance(&mut self, t: usize, now: u64) {
        let th = &self.threads[t];
        let (node, pc) = (th.node, th.pc);
        let Some(op) = self.ops[t].get(pc) else {
            self.threads[t].state = St::Done;
            self.done += 1;
            self.s.time_ns = self.s.time_ns.max(now);
            return;
        };
        // Posting costs only for a remote destination (a local manager is a function call).
        let post_ns = self.c.post_ns;
        let post = |to: u32| if to == node { 0 } else { post_ns };
        match *op {
            TraceOp::Compute { ns } => {
                let dur = (ns as f64 * self.p.cpu.cpu_scale / self.share).round() as u64;
                self.s.compute_ns += dur;
                let th = &mut self.threads[t];
                th.state = St::Computing;
                th.busy_until = now + dur;
                self.schedule_thread(t, now + dur);
            }
            TraceOp::Fault { mp, write } => {
                self.s.faults += 1;
                self.s.fault_ns += self.c.fault_ns;
                self.threads[t].state = St::FaultEntry { mp, write };
                self.schedule_thread(t, now + self.c.fault_ns);
            }
            TraceOp::Barrier => {
                self.s.barriers += 1;
                self.block(t, now, Wait::Barrier);
                self.send(node, 0, Wire::BarrierArrive, now + post(0));
            }
            TraceOp::Lock { id } => {
                self.s.locks += 1;
                self.block(t, now, Wait::Lock);
                let m = id % self.nodes.len() as u32;
                self.send(node, m, Wire::LockReq { id, thread: t }, now + post(m));
            }
            TraceOp::Unlock { id } => {
                self.s.unlocks += 1;
                let m = id % self.nodes.len() as u32;
                let post = post(m);
                self.s.lock_ns += post;
                self.send(node, m, Wire::LockRelease { id }, now + post);
                self.threads[t].pc += 1;
                self.threads[t].state = St::Continue;
                self.schedule_thread(t, now + post);
            }
        }
    }

    fn block(&mut self, t: usize, now: u64, w: Wait) {
        let th = &mut self.threads[t];
        th.state = St::Blocked(w);
        th.wait_since = now;
    }

    /// Wakes blocked thread `t` at `at` after a barrier or lock wait.
    fn release(&mut self, t: usize, at: u64) {
        let th = &mut self.threads[t];
        let waited = at - th.wait_since;
        match th.state {
            St::Blocked(Wait::Barrier) => self.s.barrier_ns += waited,
            St::Blocked(Wait::Lock) => self.s.lock_ns += waited,
            _ => return,
        }
        th.pc += 1;
        th.state = St::Continue;
        self.schedule_thread(t, at);
    }

    fn try_fault(&mut self, t: usize, now: u64, mp: u32, write: bool) {
        let (node, local) = (self.threads[t].node, self.threads[t].local);
        match self.nodes[node as usize].dsm.fault(local, mp, write) {
            FaultResult::Proceed => {
                self.threads[t].pc += 1;
                self.advance(t, now);
            }
            FaultResult::Wait => {
                self.block(t, now, Wait::Fault { mp, write });
                let mut at = now;
                while let Some((to, msg)) = self.nodes[node as usize].dsm.poll_message() {
                    self.s.requests += u64::from(matches!(msg, Msg::Request { .. }));
                    // A message to this node itself is a local call: nothing to post.
                    if to != node {
                        at += self.c.post_ns;
                    }
                    self.send(node, to, Wire::Dsm(msg), at);
                }
            }
        }
    }

    /// Cost of posting a message from `from` to `to` (none for a local call).
    fn post_to(&self, from: u32, to: u32) -> u64 {
        if from == to {
            0
        } else {
            self.c.post_ns
        }
    }

    fn send(&mut self, from: u32, to: u32, wire: Wire, at: u64) {
        if from == to {
            self.push(
                at,
                Ev::Arrive {
                    to,
                    from,
                    wire,
                    local: true,
                },
            );
            return;
        }
        let net = &self.p.net;
        let data = match &wire {
            Wire::Dsm(Msg::Data { bytes, .. }) => Some(bytes.len() as u64),
            _ => None,
        };
        let bytes = data.unwrap_or(net.control_bytes);
        let ser = self.p.serialization_ns(bytes);
        let nf = &mut self.nodes[from as usize].nic_free;
        let depart = at.max(*nf);
        *nf = depart + ser;
        let send = super::profile::ns(net.send_one_way_us);
        let latency = match data {
            // RDMA write of the page, plus the send that tells the requestor.
            Some(_) => send.max(super::profile::ns(net.rdma_write_one_way_us) + ser),
            None => send,
        };
        let last = self.fifo.entry((from, to)).or_insert(0);
        let arrival = (depart + latency).max(*last);
        *last = arrival;
        self.s.messages += 1;
        self.s.data_bytes += data.unwrap_or(0);
        self.s.data_messages += u64::from(data.is_some());
        self.push(
            arrival,
            Ev::Arrive {
                to,
                from,
                wire,
                local: false,
            },
        );
    }

    /// When a polling thread of `node` sees a completion that arrived at `t`, if one waits.
    fn poll_detect(&self, node: u32, t: u64) -> Option<u64> {
        let period = self.c.poll_ns;
        self.threads
            .iter()
            .filter(|th| th.node == node && matches!(th.state, St::Blocked(_)))
            .map(|th| th.wait_since + (t.saturating_sub(th.wait_since)).div_ceil(period) * period)
            .min()
    }

    fn arrive(&mut self, to: u32, from: u32, wire: Wire, local: bool, t: u64) {
        let free = self.nodes[to as usize].handler_free;
        let polled = if !local && self.ctx == Context::Polling {
            self.poll_detect(to, t)
        } else {
            None
        };
        let (start, notify_cpu) = if local {
            (t.max(free), 0)
        } else if let Some(seen) = polled {
            (seen.max(free), 0)
        } else {
            ((t + self.c.notify_ns).max(free), self.c.notify_cpu_ns)
        };
        let mut h = start;
        match wire {
            Wire::Dsm(msg) => {
                self.nodes[to as usize].dsm.handle_message(from, msg);
                while let Some(ev) = self.nodes[to as usize].dsm.poll_event() {
                    match ev {
                        Event::SetAccess { .. } => h += self.c.protect_ns,
                        Event::Resume { thread } => {
                            h += self.c.wake_ns;
                            let t = (to * self.tpn + thread) as usize;
                            if let St::Blocked(Wait::Fault { mp, write }) = self.threads[t].state {
                                self.threads[t].state = St::Retry { mp, write };
                                self.schedule_thread(t, h);
                            }
                        }
                    }
                }
                while let Some((dest, m)) = self.nodes[to as usize].dsm.poll_message() {
                    if dest != to {
                        h += self.c.post_ns;
                    }
                    self.send(to, dest, Wire::Dsm(m), h);
                }
            }
            Wire::BarrierArrive => {
                self.arrived += 1;
                if self.arrived == self.threads.len() as u64 {
                    self.arrived = 0;
                    self.s.barrier_episodes += 1;
                    for n in 0..self.nodes.len() as u32 {
                        h += self.post_to(to, n);
                        self.send(to, n, Wire::BarrierRelease, h);
                    }
                }
            }
            Wire::BarrierRelease => {
                for t in 0..self.threads.len() {
                    if self.threads[t].node == to
                        && self.threads[t].state == St::Blocked(Wait::Barrier)
                    {
                        h += self.c.wake_ns;
                        self.release(t, h);
                    }
                }
            }
            Wire::LockReq { id, thread } => {
                let l = self.locks.entry(id).or_default();
                if l.held {
                    l.queue.push_back(thread);
                } else {
                    l.held = true;
                    let n = self.threads[thread].node;
                    h += self.post_to(to, n);
                    self.send(to, n, Wire::LockGrant { thread }, h);
                }
            }
            Wire::LockGrant { thread, .. } => {
                h += self.c.wake_ns;
                self.release(thread, h);
            }
            Wire::LockRelease { id } => {
                let l = self.locks.entry(id).or_default();
                match l.queue.pop_front() {
                    Some(next) => {
                        let n = self.threads[next].node;
                        h += self.post_to(to, n);
                        self.send(to, n, Wire::LockGrant { thread: next }, h);
                    }
                    None => l.held = false,
                }
            }
        }
        self.nodes[to as usize].handler_free = h;
        let cpu = notify_cpu + (h - start);
        self.s.handler_ns += cpu;
        if !local && polled.is_none() {
            self.steal(to, cpu, start);
        }
    }

    /// Handler CPU time `amount` on `node` at `at`: if no CPU is idle, the computing threads
    /// (and the load) give it up in equal shares.
    fn steal(&mut self, node: u32, amount: u64, at: u64) {
        let computing: Vec<usize> = (0..self.threads.len())
            .filter(|&t| {
                let th = &self.threads[t];
                th.node == node && th.state == St::Computing && th.busy_until > at
            })
            .collect();
        let runnable = computing.len() as u32 + self.load;
        if computing.is_empty() || runnable < self.p.cpu.cpus_per_node {
            return;
        }
        let per = amount / runnable as u64;
        for t in computing {
            let until = self.threads[t].busy_until + per;
            self.threads[t].busy_until = until;
            self.s.stolen_ns += per;
            self.schedule_thread(t, until);
        }
    }
}
