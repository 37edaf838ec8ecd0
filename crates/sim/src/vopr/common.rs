//! What the VOPR's drivers share: the requests of the transport swarms (PART, RC) and the
//! check of their bytes, PART completions as the checkers' outcomes, the PART world the AA and
//! DSM swarms run on, drawn residency, the one-line fault mix, and the seed's report.

use unpinned_core::api::{CompletionError, Op, WorkRequest};
use unpinned_core::os::PageInPolicy;
use unpinned_core::profile::{Profile, RetransmitPolicy};
use unpinned_core::rng::{Rng, SimRng};
use unpinned_core::time::Instant;
use unpinned_ib::{IbOp, SendWr};

use super::report::{SeedReport, Tally};
use crate::faults::FaultConfig;
use crate::kernel::{
    Checkers, ErrorKind, Expect, LinkStats, Outcome, Phase, ReqEvent, Requests, Vocabulary,
};
use crate::memory::Residence;
use crate::net::Topology;
use crate::rc::RcSim;
use crate::world::{Sim, SimConfig};

/// What a transport swarm's request is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Must succeed: a write or read of a read-write exposure, a read of a read-only one.
    Normal,
    /// A key the target never gave, into its read-write exposure.
    BadKey,
    /// Runs past the end of the read-write exposure.
    OutOfRange,
    /// Into an exposure the target revoked (PART only: RC has no deregistration).
    Revoked,
    /// A write into a read-only exposure.
    ReadOnly,
}

/// The work request of a transport, as far as the bytes check needs it.
pub(crate) trait Wr {
    /// A write (else a read).
    fn is_write(&self) -> bool;
    /// Bytes moved.
    fn bytes(&self) -> usize;
    /// Address at the poster.
    fn local(&self) -> u64;
    /// Address at the peer.
    fn remote(&self) -> u64;
}

impl Wr for WorkRequest {
    fn is_write(&self) -> bool {
        self.op == Op::Write
    }
    fn bytes(&self) -> usize {
        self.len as usize
    }
    fn local(&self) -> u64 {
        self.local_addr
    }
    fn remote(&self) -> u64 {
        self.remote_addr
    }
}

impl Wr for SendWr {
    fn is_write(&self) -> bool {
        self.op == IbOp::Write
    }
    fn bytes(&self) -> usize {
        self.len as usize
    }
    fn local(&self) -> u64 {
        self.local_addr
    }
    fn remote(&self) -> u64 {
        self.remote_addr
    }
}

/// One request of a transport swarm.
pub(crate) struct Req<W> {
    /// The node that posted it.
    pub(crate) node: u32,
    /// The node it reads or writes.
    pub(crate) peer: u32,
    pub(crate) wr: W,
    pub(crate) phase: Phase,
    pub(crate) kind: Kind,
    /// What a successful request must deliver (source contents at post time).
    pub(crate) expected: Vec<u8>,
    /// A designed-to-fail write's target contents before the post.
    pub(crate) before: Vec<u8>,
}

impl<W: Wr> Req<W> {
    /// A request about to be posted by `node` to `peer`. A request designed to succeed must
    /// deliver what its source holds now; a designed-to-fail write must leave its target as
    /// it is now. `read(node, addr, out)` reads the world's memory.
    pub(crate) fn new(
        node: u32,
        peer: u32,
        wr: W,
        phase: Phase,
        kind: Kind,
        mut read: impl FnMut(u32, u64, &mut [u8]),
    ) -> Req<W> {
        let (mut expected, mut before) = (Vec::new(), Vec::new());
        match (kind == Kind::Normal, wr.is_write()) {
            (true, true) => {
                expected = vec![0u8; wr.bytes()];
                read(node, wr.local(), &mut expected);
            }
            (true, false) => {
                expected = vec![0u8; wr.bytes()];
                read(peer, wr.remote(), &mut expected);
            }
            (false, true) => {
                before = vec![0u8; wr.bytes()];
                read(peer, wr.remote(), &mut before);
            }
            (false, false) => {}
        }
        Req {
            node,
            peer,
            wr,
            phase,
            kind,
            expected,
            before,
        }
    }

    /// What it was designed to do.
    pub(crate) fn expect(&self) -> Expect {
        if self.kind == Kind::Normal {
            Expect::Succeed
        } else {
            Expect::Fail(ErrorKind::Protection)
        }
    }

    /// After its completion (`ok`: it succeeded): a successful request must have delivered
    /// what it was to deliver, a designed-to-fail write must have left its target as it was.
    /// `read(node, addr, out)` reads the world's memory.
    pub(crate) fn check_bytes(
        &self,
        id: u64,
        ok: bool,
        at: Instant,
        checkers: &mut Checkers<Requests>,
        mut read: impl FnMut(u32, u64, &mut [u8]),
    ) {
        let wr = &self.wr;
        if self.kind == Kind::Normal && ok {
            let mut got = vec![0u8; wr.bytes()];
            match wr.is_write() {
                true => read(self.peer, wr.remote(), &mut got),
                false => read(self.node, wr.local(), &mut got),
            }
            let ev = ReqEvent::Bytes {
                req: id,
                expected: &self.expected,
                got: &got,
            };
            checkers.observe(at, &ev);
        } else if self.kind != Kind::Normal && wr.is_write() {
            let mut after = vec![0u8; wr.bytes()];
            read(self.peer, wr.remote(), &mut after);
            let ev = ReqEvent::Untouched {
                req: id,
                before: &self.before,
                after: &after,
            };
            checkers.observe(at, &ev);
        }
    }
}

/// A PART completion's status as the checkers see it.
pub(crate) fn part_outcome(status: Result<(), CompletionError>) -> Outcome {
    match status {
        Ok(()) => Outcome::Ok,
        Err(e) => Outcome::Err {
            kind: match e {
                CompletionError::RemoteAccess => ErrorKind::Protection,
                CompletionError::RetryExceeded | CompletionError::PeerGone => ErrorKind::Transport,
                _ => ErrorKind::Other,
            },
            detail: e.to_string(),
        },
    }
}

/// The PART world of the swarms built on it (AA, DSM): `nodes` nodes one hop apart, the
/// reference profile with enough retries that injected loss alone rarely exhausts them, ERR
/// on, invariants checked after every event, trace hash on.
pub(crate) fn part_world(
    seed: u64,
    nodes: u32,
    faults: FaultConfig,
    retransmit: RetransmitPolicy,
    policy: PageInPolicy,
) -> Sim {
    let mut profile = Profile::forth_arm();
    profile.engine.max_timeouts = 30;
    profile.engine.retransmit = retransmit;
    Sim::new(SimConfig {
        profile,
        policy,
        send_err: true,
        seed,
        nodes,
        topology: Topology::Uniform { hops: 1 },
        faults,
        check_invariants: true,
        trace: true,
    })
}

/// A region's residency at setup: present, absent, or each page missing with probability 1/2.
pub(crate) fn residence(rng: &mut SimRng) -> Residence {
    match rng.gen_range(0..3) {
        0 => Residence::Present,
        1 => Residence::Absent,
        _ => Residence::MissingWithProbability(0.5),
    }
}

/// The rates of a fault mix, short.
pub(crate) fn describe(f: &FaultConfig) -> String {
    format!(
        "loss {:.4} dup {:.4} reorder {:.4} delay {:.4} corrupt {:.4}",
        f.loss, f.duplicate, f.reorder, f.delay, f.corrupt
    )
}

/// The figures every world ends a seed with.
pub(crate) trait World {
    /// Events processed.
    fn events(&self) -> u64;
    /// Faults injected on the links.
    fn link_stats(&self) -> LinkStats;
    /// Hash of the events processed.
    fn trace_hash(&self) -> u64;
}

impl World for Sim {
    fn events(&self) -> u64 {
        Sim::events(self)
    }
    fn link_stats(&self) -> LinkStats {
        Sim::link_stats(self)
    }
    fn trace_hash(&self) -> u64 {
        Sim::trace_hash(self)
    }
}

impl World for RcSim {
    fn events(&self) -> u64 {
        RcSim::events(self)
    }
    fn link_stats(&self) -> LinkStats {
        RcSim::link_stats(self)
    }
    fn trace_hash(&self) -> u64 {
        RcSim::trace_hash(self)
    }
}

/// One seed's report: its swarm, request outcomes and evictions, the world's figures, and
/// the checkers' findings.
pub(crate) fn report<V: Vocabulary>(
    protocol: &'static str,
    seed: u64,
    swarm: String,
    tally: Tally,
    evictions: u64,
    world: &dyn World,
    checkers: &Checkers<V>,
) -> SeedReport {
    SeedReport {
        protocol,
        seed,
        swarm,
        tally,
        events: world.events(),
        faults: world.link_stats(),
        evictions,
        trace_hash: world.trace_hash(),
        violations: checkers.violations().to_vec(),
        violation_count: checkers.count(),
    }
}
