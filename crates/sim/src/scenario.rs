//! Randomized scenarios (the simulator's VOPR): one master seed picks a cluster, a fault mix,
//! buffers with random residency, and a random set of writes and reads; the run must finish
//! with every invariant held. A failing run names its seed.

use unpinned_core::api::{Op, Perms, WorkRequest};
use unpinned_core::os::PageInPolicy;
use unpinned_core::profile::{Profile, RetransmitPolicy};
use unpinned_core::rng::{rng_for, Rng};
use unpinned_core::time::{Duration, Instant};

use crate::faults::FaultConfig;
use crate::memory::Residence;
use crate::net::Topology;
use crate::world::{Sim, SimConfig, SimError};

/// Outcome of one randomized run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RandomRun {
    /// Work requests posted.
    pub posted: usize,
    /// Completed successfully.
    pub ok: usize,
    /// Completed with an error (expected ones: out-of-range probes, exhausted retries).
    pub failed: usize,
    /// Events processed.
    pub events: u64,
    /// Trace hash.
    pub trace_hash: u64,
}

/// Run one randomized scenario for `seed`; `fault_rate` scales the injected packet faults.
/// The retransmission policy is drawn too (from its own sub-seed, so the rest of a seed's
/// scenario is the same under either policy).
pub fn random_run(seed: u64, fault_rate: f64) -> Result<RandomRun, SimError> {
    let policy = RetransmitPolicy::ALL[rng_for(seed, "retransmit").gen_range(0..2)];
    random_run_with(seed, fault_rate, policy)
}

/// [`random_run`] with the retransmission policy given.
pub fn random_run_with(
    seed: u64,
    fault_rate: f64,
    retransmit: RetransmitPolicy,
) -> Result<RandomRun, SimError> {
    random_run_custom(seed, fault_rate, retransmit, None, &|_| {})
}

/// [`random_run_with`], with `tweak` applied to the drawn profile before the run (e.g. a
/// fault-handler policy under test: `os.early_err`). The scenario's draws are unchanged.
pub fn random_run_tweaked(
    seed: u64,
    fault_rate: f64,
    retransmit: RetransmitPolicy,
    tweak: &dyn Fn(&mut Profile),
) -> Result<RandomRun, SimError> {
    random_run_custom(seed, fault_rate, retransmit, None, tweak)
}

/// [`random_run_with`], with the page-in policy given instead of drawn (`None`: drawn; the
/// draw is made either way, so the rest of the seed's scenario is the same).
pub fn random_run_page_in(
    seed: u64,
    fault_rate: f64,
    retransmit: RetransmitPolicy,
    page_in: Option<PageInPolicy>,
) -> Result<RandomRun, SimError> {
    random_run_custom(seed, fault_rate, retransmit, page_in, &|_| {})
}

/// The scenario of `seed`, with the page-in policy given or drawn and `tweak` applied to
/// the drawn profile.
fn random_run_custom(
    seed: u64,
    fault_rate: f64,
    retransmit: RetransmitPolicy,
    page_in: Option<PageInPolicy>,
    tweak: &dyn Fn(&mut Profile),
) -> Result<RandomRun, SimError> {
    let mut rng = rng_for(seed, "scenario");
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
    tweak(&mut profile);
    let nodes = rng.gen_range(2..=4u32);
    let drawn_page_in =
        [PageInPolicy::Pio, PageInPolicy::Pi4, PageInPolicy::Pia][rng.gen_range(0..3)];
    let cfg = SimConfig {
        profile,
        policy: page_in.unwrap_or(drawn_page_in),
        send_err: rng.gen_bool(0.8),
        seed,
        nodes,
        topology: Topology::Uniform {
            hops: rng.gen_range(1..=3),
        },
        faults: FaultConfig::uniform(fault_rate * rng.gen::<f64>()),
        check_invariants: true,
        trace: true,
    };
    let mut sim = Sim::new(cfg);
    // Each node owns one exposed region; requests go to disjoint slices of it, so every
    // completion's bytes can be checked exactly.
    const REGION: u64 = 1 << 20;
    const SRC_BASE: u64 = 0x1000_0000;
    const DST_BASE: u64 = 0x8000_0000;
    let mut keys = Vec::new();
    for n in 0..nodes {
        let residence = |rng: &mut _| match Rng::gen_range(rng, 0..3) {
            0 => Residence::Present,
            1 => Residence::Absent,
            _ => Residence::MissingWithProbability(0.5),
        };
        let r = residence(&mut rng);
        sim.map(n, 1, DST_BASE, REGION, r);
        sim.fill_random(n, 1, DST_BASE, REGION);
        keys.push(sim.expose(n, 1, DST_BASE, REGION, Perms::RW));
        let r = residence(&mut rng);
        sim.map(n, 1, SRC_BASE, REGION, r);
        sim.fill_random(n, 1, SRC_BASE, REGION);
    }
    // Disjoint slices: slice i of every node's regions belongs to request i.
    let count = rng.gen_range(1..=12u64);
    let slice = REGION / count;
    let mut t = Instant::ZERO;
    for i in 0..count {
        let n = rng.gen_range(0..nodes);
        let peer = (n + rng.gen_range(1..nodes)) % nodes;
        let len = rng.gen_range(0..=slice.min(200_000));
        let off = i * slice + rng.gen_range(0..=(slice - len));
        let op = if rng.gen_bool(0.5) {
            Op::Write
        } else {
            Op::Read
        };
        // Reads land in the reader's source region and read the peer's destination region.
        let (local_addr, remote_addr) = match op {
            Op::Write => (SRC_BASE + i * slice, DST_BASE + off),
            Op::Read => (SRC_BASE + off, DST_BASE + i * slice),
        };
        let mut rkey = keys[peer as usize];
        let mut remote_addr = remote_addr;
        if rng.gen_bool(0.05) {
            rkey ^= 1;
        }
        if rng.gen_bool(0.05) {
            remote_addr = DST_BASE + REGION - len / 2; // runs past the exposure
        }
        let wr = WorkRequest {
            wr_id: i,
            op,
            peer,
            local_pdid: 1,
            local_addr,
            remote_pdid: 1,
            remote_addr,
            rkey,
            len,
        };
        // Reads write into the reader's source region: allow it there for the checker.
        sim.post(t, n, wr);
        t += Duration(rng.gen_range(0..20_000));
    }
    sim.run_until_idle(Duration::from_ms(2_000))?;
    let ok = sim
        .posts()
        .iter()
        .filter(|p| p.completion.is_some_and(|c| c.status.is_ok()))
        .count();
    Ok(RandomRun {
        posted: count as usize,
        ok,
        failed: count as usize - ok,
        events: sim.events(),
        trace_hash: sim.trace_hash(),
    })
}
