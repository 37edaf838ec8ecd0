//! The PART swarm: one seed picks 2-4 nodes, a topology, engine parameters (packet and block
//! sizes, window, block timeout, retransmission policy), the page-in policy (the adaptive one
//! included), early and kernel-sent ERRs, a fault mix,
//! residency, page evictions during transfers, and requests: writes and reads that must
//! succeed (into a read-write exposure, reads of a read-only one) and requests designed to
//! fail with a protection error (a wrong key into a read-write exposure, a range running past
//! its end, a revoked exposure, a write into a read-only one).
//!
//! The PART world keeps its own event loop ([`crate::world`], over [`crate::queue`], the
//! kernel's queue order); its links inject faults through the kernel's
//! [`crate::kernel::FaultyLink`]. This driver steps it event by event and turns what it sees
//! into [`ReqEvent`]s for the kernel's transport checkers: a completion's bytes are compared
//! at the step it happens, a designed-to-fail write's target is compared with its contents
//! before the post.

use unpinned_core::api::{Op, Perms, RemoteKey, WorkRequest};
use unpinned_core::memory::PAGE_BYTES;
use unpinned_core::os::PageInPolicy;
use unpinned_core::profile::{ErrFrom, Profile, RetransmitPolicy};
use unpinned_core::rng::{Rng, SimRng};
use unpinned_core::time::{Duration, Instant};

use super::common::{self, describe, Kind};
use super::report::{SeedReport, Tally};
use crate::faults::FaultConfig;
use crate::kernel::{checkers, Checkers, FaultMix, Phase, ReqEvent, Requests, RngTree};
use crate::net::Topology;
use crate::world::{PostRecord, Sim, SimConfig};

/// Read-write exposure and source / read-landing region, per node.
const REGION: u64 = 2 << 20;
/// The last bytes of the read-write exposure: targets of out-of-range requests only.
const GUARD: u64 = 64 << 10;
/// Read-only and revoked exposures.
const SMALL: u64 = 64 << 10;
const SRC_BASE: u64 = 0x1000_0000;
const DST_BASE: u64 = 0x8000_0000;
const RO_BASE: u64 = 0xa000_0000;
const REV_BASE: u64 = 0xc000_0000;
const PDID: unpinned_core::memory::Pdid = 1;
/// Largest request.
const MAX_LEN: u64 = 200_000;

type Req = common::Req<WorkRequest>;

/// Per node: its keys.
struct Keys {
    rw: RemoteKey,
    ro: RemoteKey,
    revoked: RemoteKey,
}

struct Driver {
    sim: Sim,
    rng: SimRng,
    nodes: u32,
    keys: Vec<Keys>,
    reqs: Vec<Req>,
    slice: u64,
    checkers: Checkers<Requests>,
    tally: Tally,
    evictions: u64,
    done: Vec<PostRecord>,
}

/// Run one seed of the PART swarm.
pub fn run(seed: u64) -> SeedReport {
    let tree = RngTree::new(seed);
    let mut rng = tree.rng("vopr/part");
    let retransmit = RetransmitPolicy::ALL[rng.gen_range(0..2)];
    let mut profile = Profile::forth_arm();
    if rng.gen_bool(0.5) {
        profile.engine.block_timeout_us = [0.0, 100.0, 500.0, 1000.0][rng.gen_range(0..4)];
    }
    if rng.gen_bool(0.3) {
        profile.engine.max_outstanding_blocks = rng.gen_range(1..=4);
    }
    if rng.gen_bool(0.3) {
        profile.engine.packet_bytes = [64, 128, 512][rng.gen_range(0..3)];
        profile.engine.block_bytes = profile.engine.packet_bytes * rng.gen_range(1..=64);
    }
    // Enough retries that injected loss alone rarely exhausts them.
    profile.engine.max_timeouts = 30;
    profile.engine.retransmit = retransmit;
    // Backoff with the selective policy only, as the live runtime runs it. Whole-block
    // retransmission at a few % loss needs many attempts per block, each unanswered, and the
    // backoff stretches every one of them (a block of 51 packets at 5 % loss: ~13 attempts of
    // up to 64 periods): slow enough to miss any phase limit, and a combination nobody runs.
    let backoff = [1, 4, 64][tree.rng("vopr/part/backoff").gen_range(0..3)];
    profile.engine.timeout_backoff_max = match retransmit {
        RetransmitPolicy::Selective => backoff,
        RetransmitPolicy::Block => 1,
    };
    // Whole-block retransmission needs every packet of a block to survive one attempt (up to
    // 64 packets: (1 - p)^64 per attempt); selective resends what is missing (docs/vopr.md).
    let max_rate = match retransmit {
        RetransmitPolicy::Block => 0.05,
        RetransmitPolicy::Selective => 0.20,
    };
    let faults = FaultMix::draw(
        &mut tree.rng("vopr/part/faults"),
        max_rate,
        Duration::from_us(20),
    );
    let nodes = rng.gen_range(2..=4u32);
    let hops = rng.gen_range(1..=3);
    let policy = [PageInPolicy::Pio, PageInPolicy::Pi4, PageInPolicy::Pia][rng.gen_range(0..3)];
    let send_err = rng.gen_bool(0.8);
    // The adaptive page-in policy and the fault handler's ERR options, from a generator of
    // their own (what the seed draws besides stays as it was).
    let mut os = tree.rng("vopr/part/os");
    let policy = if os.gen_bool(0.2) {
        PageInPolicy::Adaptive
    } else {
        policy
    };
    profile.os.early_err = os.gen_bool(0.3);
    profile.os.err_from = ErrFrom::ALL[usize::from(os.gen_bool(0.3))];
    let errs = format!(
        "early err {}, err from {}",
        profile.os.early_err,
        profile.os.err_from.name()
    );
    // The engine keeps housekeeping timers (atomic outcomes, resends) for as long as its
    // backed-off timeouts can span: a phase is given that long beyond its own limit.
    let span = unpinned_part::EngineConfig::from_profile(&profile.engine)
        .silence_span(profile.engine.max_timeouts + 2);
    let swarm = format!(
        "nodes {nodes}, hops {hops}, {policy:?}, err {send_err}, retransmit {}, packet {} B, block {} B, window {}, block timeout {} us, backoff cap {}, faults {}",
        retransmit.name(),
        profile.engine.packet_bytes,
        profile.engine.block_bytes,
        profile.engine.max_outstanding_blocks,
        profile.engine.block_timeout_us,
        profile.engine.timeout_backoff_max,
        describe(&faults),
    );
    let cfg = SimConfig {
        profile,
        policy,
        send_err,
        seed,
        nodes,
        topology: Topology::Uniform { hops },
        faults,
        check_invariants: true,
        trace: true,
    };
    let sim = Sim::new(cfg);
    let safety = rng.gen_range(1..=12u64);
    let liveness = rng.gen_range(1..=8u64);
    let mut d = Driver {
        sim,
        rng,
        nodes,
        keys: Vec::new(),
        reqs: Vec::new(),
        slice: (REGION - GUARD) / (safety + liveness),
        checkers: checkers::transport(false),
        tally: Tally::default(),
        evictions: 0,
        done: Vec::new(),
    };
    d.setup();
    d.phase(Phase::Safety, safety, Duration::from_ms(5_000) + span);
    if d.checkers.is_clean() {
        d.sim.set_faults(FaultConfig::NONE);
        d.phase(Phase::Liveness, liveness, Duration::from_ms(2_000) + span);
    }
    let now = d.sim.now();
    d.checkers.finish(now);
    common::report(
        "part",
        seed,
        format!("{swarm}, {errs}, requests {safety} + {liveness}"),
        d.tally,
        d.evictions,
        &d.sim,
        &d.checkers,
    )
}

impl Driver {
    fn setup(&mut self) {
        for n in 0..self.nodes {
            for (base, len) in [
                (SRC_BASE, REGION),
                (DST_BASE, REGION + GUARD),
                (RO_BASE, SMALL),
                (REV_BASE, SMALL),
            ] {
                let r = common::residence(&mut self.rng);
                self.sim.map(n, PDID, base, len, r);
                self.sim.fill_random(n, PDID, base, len);
            }
            let rw = self.sim.expose(n, PDID, DST_BASE, REGION, Perms::RW);
            let ro = self.sim.expose(n, PDID, RO_BASE, SMALL, Perms::R);
            let revoked = self.sim.expose(n, PDID, REV_BASE, SMALL, Perms::RW);
            let node = self.sim.node_mut(n);
            assert!(node.engine.revoke(revoked), "a fresh exposure revokes");
            node.mem.disallow_writes(PDID, REV_BASE, REV_BASE + SMALL);
            self.keys.push(Keys { rw, ro, revoked });
        }
    }

    /// Post `count` requests from now on, with evictions among them, and run until idle.
    fn phase(&mut self, phase: Phase, count: u64, limit: Duration) {
        let start = self.sim.now();
        let mut t = start;
        for _ in 0..count {
            self.post(phase, t);
            t += Duration(self.rng.gen_range(0..20_000));
        }
        // Evictions while the requests run (reclaim: the next access faults again).
        let mut evictions: Vec<(Instant, u32, u64, u64)> = (0..self.rng.gen_range(0..=4))
            .map(|_| {
                let at = start + Duration(self.rng.gen_range(0..=(t - start).0 + 200_000));
                let n = self.rng.gen_range(0..self.nodes);
                let base = [SRC_BASE, DST_BASE][self.rng.gen_range(0..2)];
                let pages = REGION / PAGE_BYTES;
                let first = self.rng.gen_range(0..pages);
                let len = self.rng.gen_range(1..=64.min(pages - first));
                (at, n, base + first * PAGE_BYTES, len * PAGE_BYTES)
            })
            .collect();
        evictions.sort_by_key(|e| e.0);
        let mut evictions = evictions.into_iter().peekable();
        let deadline = t + limit;
        loop {
            let next = self.sim.next_event_at();
            if let Some(&(at, n, base, len)) = evictions.peek() {
                if next.is_none_or(|e| at <= e) {
                    self.sim.run_until(at).expect("no event before it");
                    self.sim.evict(n, PDID, base, len);
                    self.evictions += 1;
                    evictions.next();
                    continue;
                }
            }
            let Some(next) = next else { break };
            if next > deadline {
                let what = format!(
                    "{phase:?} phase: not idle {:.0} us after its last post\n{}",
                    limit.as_us_f64(),
                    self.sim.debug_summary()
                );
                self.checkers.report("liveness", self.sim.now(), what);
                return;
            }
            if let Err(e) = self.sim.step() {
                let at = self.sim.now();
                self.checkers
                    .observe(at, &ReqEvent::World { what: &e.what });
                if self.checkers.count() > 16 {
                    return;
                }
            }
            self.drain();
        }
    }

    /// Pick and post one request at `at`.
    fn post(&mut self, phase: Phase, at: Instant) {
        let i = self.reqs.len() as u64;
        let rng = &mut self.rng;
        let n = rng.gen_range(0..self.nodes);
        let peer = (n + rng.gen_range(1..self.nodes)) % self.nodes;
        let kind = if rng.gen_bool(0.75) {
            Kind::Normal
        } else {
            [
                Kind::BadKey,
                Kind::OutOfRange,
                Kind::Revoked,
                Kind::ReadOnly,
            ][rng.gen_range(0..4)]
        };
        let op = if kind == Kind::ReadOnly || rng.gen_bool(0.5) {
            Op::Write
        } else {
            Op::Read
        };
        let slice = self.slice;
        let mut len = if kind == Kind::Normal && rng.gen_bool(0.05) {
            0
        } else {
            let scale = 1u64 << rng.gen_range(0..18);
            rng.gen_range(1..=scale.min(slice).min(MAX_LEN))
        };
        let keys = &self.keys[peer as usize];
        // Slice i of every node's regions belongs to request i.
        let local_addr = SRC_BASE + i * slice;
        let (remote_addr, rkey) = match kind {
            Kind::Normal if op == Op::Read && rng.gen_bool(0.25) => {
                len = len.min(SMALL);
                (RO_BASE + rng.gen_range(0..=SMALL - len), keys.ro)
            }
            Kind::Normal => (
                DST_BASE + i * slice + rng.gen_range(0..=slice - len),
                keys.rw,
            ),
            Kind::BadKey => {
                let mut k = rng.gen::<u32>();
                while k == 0 || k == keys.rw || k == keys.ro || k == keys.revoked {
                    k = rng.gen();
                }
                (DST_BASE + i * slice + rng.gen_range(0..=slice - len), k)
            }
            Kind::OutOfRange => {
                len = len.clamp(2, GUARD);
                (DST_BASE + REGION - rng.gen_range(1..len), keys.rw)
            }
            Kind::Revoked => {
                len = len.min(SMALL);
                (REV_BASE + rng.gen_range(0..=SMALL - len), keys.revoked)
            }
            Kind::ReadOnly => {
                len = len.min(SMALL);
                (RO_BASE + rng.gen_range(0..=SMALL - len), keys.ro)
            }
        };
        let wr = WorkRequest {
            wr_id: i,
            op,
            peer,
            local_pdid: PDID,
            local_addr,
            remote_pdid: PDID,
            remote_addr,
            rkey,
            len,
        };
        let req = Req::new(n, peer, wr, phase, kind, reader(&self.sim));
        let ev = ReqEvent::Posted {
            req: i,
            stream: u64::from(n),
            phase,
            expect: req.expect(),
        };
        self.checkers.observe(self.sim.now(), &ev);
        self.tally.posted += 1;
        self.reqs.push(req);
        self.sim.post(at, n, wr);
    }

    /// Observe the completions of the last step.
    fn drain(&mut self) {
        self.sim.take_completed_into(&mut self.done);
        let at = self.sim.now();
        for rec in std::mem::take(&mut self.done) {
            let Some(c) = rec.completion else { continue };
            let id = rec.wr.wr_id;
            let outcome = common::part_outcome(c.status);
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
            self.tally.count(req.phase, req.expect(), &outcome);
            let read = reader(&self.sim);
            req.check_bytes(id, outcome.is_ok(), at, &mut self.checkers, read);
        }
    }
}

/// Reads of the nodes' host memory, for the bytes checks.
fn reader(sim: &Sim) -> impl FnMut(u32, u64, &mut [u8]) + '_ {
    move |n, addr, out| sim.node(n).mem.host_read(PDID, addr, out)
}
