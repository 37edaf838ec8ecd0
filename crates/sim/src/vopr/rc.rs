//! The RC/ODP swarm: two nodes with the `unpinned-ib` engines; one seed picks a vendor
//! profile, whether each region is on-demand paged or pinned, the ODP loss model and the
//! software-timer fix on or off, a fault mix, translations invalidated during transfers, and
//! requests: READs and WRITEs (one packet each) on a few queue pairs in either direction, that
//! must succeed and complete in order per queue pair, and requests designed to fail with a
//! remote access error (a key never given, a range running past the region's end, a WRITE
//! into a read-only region), each alone on a queue pair of its own (an error moves a queue
//! pair to the error state and flushes what follows it). RC has no deregistration in the
//! model: no revoked case.
//!
//! The RC world runs on the kernel ([`crate::rc`]); this driver steps it and feeds the
//! kernel's transport checkers, ordering included.

use unpinned_core::api::Perms;
use unpinned_core::memory::{Memory, PAGE_BYTES};
use unpinned_core::rng::{Rng, SimRng};
use unpinned_core::time::{Duration, Instant};
use unpinned_ib::{
    FixConfig, IbOp, LossModelConfig, MrAttrs, Psn, QpAttrs, Qpn, Region, SendWr, VendorProfile,
    WcError,
};

use super::common::{self, describe, Kind};
use super::report::{SeedReport, Tally};
use crate::faults::FaultConfig;
use crate::kernel::{
    checkers, Checkers, ErrorKind, FaultMix, Outcome, Phase, ReqEvent, Requests, RngTree,
};
use crate::net::Topology;
use crate::rc::{RcSim, RcSimConfig};

/// Read-write region per node (slice `i` belongs to request `i`).
const BUF: u64 = 0x10_0000_0000;
/// Read-only region per node.
const RO_BUF: u64 = 0x20_0000_0000;
/// Bytes of each request's slice (two pages: a request may cross a page boundary).
const SLICE: u64 = 2 * PAGE_BYTES;
const RO_LEN: u64 = 16 * PAGE_BYTES;
/// Events a phase may take (a few thousand is usual): more is a goodput collapse.
const MAX_PHASE_EVENTS: u64 = 5_000_000;
const PDID: unpinned_core::memory::Pdid = 1;

type Req = common::Req<SendWr>;

struct Keys {
    rw: u32,
    ro: u32,
    /// Bytes of the read-write region (slices of every request, then a guard page).
    rw_len: u64,
}

struct Driver {
    sim: RcSim,
    rng: SimRng,
    keys: Vec<Keys>,
    odp: [[bool; 2]; 2],
    reqs: Vec<Req>,
    qp_attrs: QpAttrs,
    checkers: Checkers<Requests>,
    tally: Tally,
    seen: usize,
    evictions: u64,
}

/// Run one seed of the RC swarm.
pub fn run(seed: u64) -> SeedReport {
    let tree = RngTree::new(seed);
    let mut rng = tree.rng("vopr/rc");
    let name = ["connectx3", "connectx4", "connectx5", "connectx6"][rng.gen_range(0..4)];
    let mut profile = VendorProfile::builtin(name);
    let fix = rng.gen_bool(0.3).then_some(FixConfig {
        period: Duration::from_us(500),
        threshold: Duration::from_us(500),
    });
    // The loss model and the fix together under packet loss: the fix posts one dummy per
    // silence (crates/ib fix.rs), so a long stall no longer fills the send queue with dummies
    // that every go-back-N round resends (seed 78270, docs/vopr.md).
    let loss_model = rng.gen_bool(0.5);
    profile.odp.loss_model = LossModelConfig {
        enabled: loss_model,
        ..profile.odp.loss_model
    };
    let faults = FaultMix::draw(&mut tree.rng("vopr/rc/faults"), 0.1, Duration::from_us(20));
    let safety = rng.gen_range(1..=16u64);
    let liveness = rng.gen_range(1..=10u64);
    let odp = [
        [rng.gen_bool(0.7), rng.gen_bool(0.7)],
        [rng.gen_bool(0.7), rng.gen_bool(0.7)],
    ];
    let mut qp_attrs = QpAttrs::odp_default(PDID);
    qp_attrs.min_rnr_delay = Duration::from_us([10, 640, 1280][rng.gen_range(0..3)]);
    // Now and then few retries in the safety phase, so that faults exhaust them: RETRY_EXC_ERR
    // and the queue pair's error state (flushes). From a generator of its own: what the seed
    // draws besides stays as it was.
    let mut retries = tree.rng("vopr/rc/retries");
    let retry_cnt = qp_attrs.retry_cnt;
    if retries.gen_bool(0.25) {
        qp_attrs.retry_cnt = retries.gen_range(0..=2);
    }
    let swarm = format!(
        "{name}, loss model {loss_model}, fix {}, odp {odp:?}, min rnr {} us, faults {}, requests {safety} + {liveness}",
        fix.is_some(),
        qp_attrs.min_rnr_delay.as_us_f64(),
        describe(&faults)
    );
    let swarm = format!("{swarm}, retries {}", qp_attrs.retry_cnt);
    let mtu = profile.net.mtu_bytes;
    let sim = RcSim::new(RcSimConfig {
        profile,
        seed,
        nodes: 2,
        topology: Topology::Uniform { hops: 1 },
        faults,
        fix,
        trace: false,
    });
    let mut d = Driver {
        sim,
        rng,
        keys: Vec::new(),
        odp,
        reqs: Vec::new(),
        qp_attrs,
        checkers: checkers::queue_pairs(fix.is_some()),
        tally: Tally::default(),
        seen: 0,
        evictions: 0,
    };
    d.setup(safety + liveness);
    let max_len = (mtu as u64).min(SLICE);
    let limit = Duration::from_ms(3_600_000);
    d.phase(Phase::Safety, safety, max_len, limit);
    if d.checkers.is_clean() {
        d.sim.set_faults(FaultConfig::NONE);
        d.qp_attrs.retry_cnt = retry_cnt;
        d.phase(Phase::Liveness, liveness, max_len, limit);
    }
    let now = d.sim.now();
    d.checkers.finish(now);
    common::report("rc", seed, swarm, d.tally, d.evictions, &d.sim, &d.checkers)
}

impl Driver {
    fn setup(&mut self, requests: u64) {
        let rw_len = requests * SLICE + PAGE_BYTES;
        for n in 0..2u32 {
            let [rw_odp, ro_odp] = self.odp[n as usize];
            let rw = self.sim.register(
                n,
                MrAttrs {
                    pdid: PDID,
                    region: Region::Explicit {
                        base: BUF,
                        len: rw_len,
                    },
                    access: Perms::RW,
                    odp: rw_odp,
                },
            );
            let ro = self.sim.register(
                n,
                MrAttrs {
                    pdid: PDID,
                    region: Region::Explicit {
                        base: RO_BUF,
                        len: RO_LEN,
                    },
                    access: Perms::R,
                    odp: ro_odp,
                },
            );
            for (base, len) in [(BUF, rw_len + PAGE_BYTES), (RO_BUF, RO_LEN + PAGE_BYTES)] {
                let mut fill = vec![0u8; len as usize];
                self.rng.fill(&mut fill[..]);
                self.sim
                    .node_mut(n)
                    .mem
                    .write(PDID, base, &fill)
                    .expect("host memory takes any range");
            }
            self.keys.push(Keys {
                rw: rw.rkey,
                ro: ro.rkey,
                rw_len,
            });
        }
    }

    fn connect(&mut self, from: u32) -> Qpn {
        let psn = Psn::new(self.rng.gen_range(0..=0x00ff_ffffu32));
        let (q, _) = self
            .sim
            .connect_pair(from, self.qp_attrs, 1 - from, self.qp_attrs, psn);
        q
    }

    fn phase(&mut self, phase: Phase, count: u64, max_len: u64, limit: Duration) {
        let start = self.sim.now();
        let streams: Vec<(u32, Qpn)> = (0..self.rng.gen_range(1..=3))
            .map(|_| {
                let from = self.rng.gen_range(0..2);
                (from, self.connect(from))
            })
            .collect();
        let mut t = start;
        for _ in 0..count {
            self.post(phase, t, &streams, max_len);
            t += Duration::from_us(self.rng.gen_range(0..2_000));
        }
        // The OS moves pages of on-demand paged regions while the requests run.
        for _ in 0..self.rng.gen_range(0..=4) {
            let at = start + Duration(self.rng.gen_range(0..=(t - start).0 + 1_000_000));
            let n = self.rng.gen_range(0..2u32);
            let page = BUF / PAGE_BYTES
                + self
                    .rng
                    .gen_range(0..self.keys[n as usize].rw_len / PAGE_BYTES);
            self.sim.invalidate_at(at, n, PDID, page);
            self.evictions += 1;
        }
        let deadline = t + limit;
        let budget = self.sim.events() + MAX_PHASE_EVENTS;
        while let Some(next) = self.sim.next_event_at() {
            if self.sim.events() > budget {
                let what = format!(
                    "{phase:?} phase: not idle after {MAX_PHASE_EVENTS} events (goodput collapse)"
                );
                self.checkers.report("liveness", self.sim.now(), what);
                return;
            }
            if next > deadline {
                let what = format!(
                    "{phase:?} phase: not idle {:.0} ms after its last post",
                    limit.as_us_f64() / 1000.0
                );
                self.checkers.report("liveness", self.sim.now(), what);
                return;
            }
            self.sim.step();
            self.drain();
        }
    }

    fn post(&mut self, phase: Phase, at: Instant, streams: &[(u32, Qpn)], max_len: u64) {
        let i = self.reqs.len() as u64;
        let kind = if self.rng.gen_bool(0.8) {
            Kind::Normal
        } else {
            [Kind::BadKey, Kind::OutOfRange, Kind::ReadOnly][self.rng.gen_range(0..3)]
        };
        // A designed-to-fail request breaks its queue pair: it gets one of its own.
        let (node, qpn) = if kind == Kind::Normal {
            streams[self.rng.gen_range(0..streams.len())]
        } else {
            let from = self.rng.gen_range(0..2);
            (from, self.connect(from))
        };
        let peer = 1 - node;
        let rng = &mut self.rng;
        let op = if kind == Kind::ReadOnly || rng.gen_bool(0.5) {
            IbOp::Write
        } else {
            IbOp::Read
        };
        let len = match rng.gen_range(1..=max_len) {
            l if kind == Kind::OutOfRange => l.max(2),
            l => l,
        };
        let keys = &self.keys[peer as usize];
        let local_addr = BUF + i * SLICE + rng.gen_range(0..=SLICE - len);
        let in_slice = BUF + i * SLICE + rng.gen_range(0..=SLICE - len);
        let (remote_addr, rkey) = match kind {
            Kind::Normal if op == IbOp::Read && rng.gen_bool(0.25) => {
                (RO_BUF + rng.gen_range(0..=RO_LEN - len), keys.ro)
            }
            Kind::Normal => (in_slice, keys.rw),
            Kind::BadKey => {
                let mut k = rng.gen::<u32>();
                while k == keys.rw || k == keys.ro {
                    k = rng.gen();
                }
                (in_slice, k)
            }
            Kind::OutOfRange => (BUF + keys.rw_len - rng.gen_range(1..len), keys.rw),
            Kind::ReadOnly => (RO_BUF + rng.gen_range(0..=RO_LEN - len), keys.ro),
            Kind::Revoked => unreachable!("not drawn: RC has no deregistration"),
        };
        let wr = SendWr {
            wr_id: i,
            op,
            local_addr,
            len: len as u32,
            remote_addr,
            rkey,
        };
        let req = Req::new(node, peer, wr, phase, kind, reader(&mut self.sim));
        let ev = ReqEvent::Posted {
            req: i,
            stream: (u64::from(node) << 32) | u64::from(qpn),
            phase,
            expect: req.expect(),
        };
        self.checkers.observe(self.sim.now(), &ev);
        self.tally.posted += 1;
        self.reqs.push(req);
        self.sim.post(at, node, qpn, wr);
    }

    /// Observe the application completions of the last step.
    fn drain(&mut self) {
        let at = self.sim.now();
        while self.seen < self.sim.completions().len() {
            let c = self.sim.completions()[self.seen];
            self.seen += 1;
            let id = c.wc.wr_id;
            let outcome = match c.wc.status {
                Ok(()) => Outcome::Ok,
                Err(e) => Outcome::Err {
                    kind: match e {
                        WcError::RemoteAccess => ErrorKind::Protection,
                        WcError::RetryExceeded | WcError::RnrRetryExceeded => ErrorKind::Transport,
                        WcError::Flushed => ErrorKind::Flushed,
                        _ => ErrorKind::Other,
                    },
                    detail: format!("{e:?}"),
                },
            };
            self.checkers.observe(
                at,
                &ReqEvent::Completed {
                    req: id,
                    outcome: &outcome,
                },
            );
            let Some(req) = self.reqs.get(id as usize) else {
                continue;
            };
            if req.node != c.node {
                let what = format!(
                    "request {id} of node {} completed at node {}",
                    req.node, c.node
                );
                self.checkers.observe(at, &ReqEvent::World { what: &what });
            }
            self.tally.count(req.phase, req.expect(), &outcome);
            let read = reader(&mut self.sim);
            req.check_bytes(id, outcome.is_ok(), at, &mut self.checkers, read);
        }
    }
}

/// Reads of the nodes' host memory, for the bytes checks.
fn reader(sim: &mut RcSim) -> impl FnMut(u32, u64, &mut [u8]) + '_ {
    move |n, addr, out| {
        sim.node_mut(n)
            .mem
            .read(PDID, addr, out)
            .expect("host memory reads any range")
    }
}
