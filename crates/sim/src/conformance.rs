//! The conformance scenarios (crates/conformance, data only) on the simulator, and the
//! reference outcome every driver must produce: [`run_sim`], [`expected`], and the seeded
//! initial contents of the regions ([`initial_bytes`]) that every driver uses.
//!
//! The outcome of a scenario is what a user can observe: each work request's status, and the
//! final bytes of every region (as a hash). Timing is not part of it.

use unpinned_core::api::{CompletionError, Op, Perms, WorkRequest};
use unpinned_core::rng::{rng_for, Rng};
use unpinned_core::time::Duration;
use xxhash_rust::xxh3::xxh3_64;

pub use unpinned_conformance::{scenarios, Region, Request, Scenario, Start};

use crate::memory::Residence;
use crate::world::{Sim, SimConfig};

/// The engine's operation for a scenario's.
pub fn op(op: unpinned_conformance::Op) -> Op {
    match op {
        unpinned_conformance::Op::Write => Op::Write,
        unpinned_conformance::Op::Read => Op::Read,
    }
}

/// The engine's permissions for a scenario's.
pub fn perms(p: unpinned_conformance::Perms) -> Perms {
    Perms {
        read: p.read,
        write: p.write,
    }
}

/// What a user observes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// Status of each request, in request order.
    pub statuses: Vec<Result<(), CompletionError>>,
    /// xxh3 of each region's final bytes.
    pub region_hashes: Vec<u64>,
}

/// Seeded initial contents of region `i`.
pub fn initial_bytes(seed: u64, i: usize, len: u64) -> Vec<u8> {
    let mut rng = rng_for(seed, &format!("conformance/region/{i}"));
    let mut v = vec![0u8; len as usize];
    rng.fill(&mut v[..]);
    v
}

/// Base address of region `i` in the simulator.
fn sim_base(i: usize) -> u64 {
    0x100_0000_0000 + (i as u64) * 0x10_0000_0000
}

/// Run a scenario on the simulator.
pub fn run_sim(s: &Scenario, seed: u64, cfg: &SimConfig) -> Outcome {
    let mut cfg = cfg.clone();
    cfg.nodes = s.nodes;
    cfg.seed = seed;
    let mut sim = Sim::new(cfg);
    let mut keys = Vec::new();
    for (i, r) in s.regions.iter().enumerate() {
        let base = sim_base(i);
        let residence = match r.start {
            Start::Present => Residence::Present,
            Start::Fresh => Residence::Absent,
            Start::Alternate => Residence::Absent,
        };
        sim.map(r.node, 1, base, r.len, residence);
        if r.start == Start::Alternate {
            for p in (0..r.len).step_by(8192) {
                sim.node_mut(r.node).mem.make_present(1, base + p);
            }
        }
        sim.node_mut(r.node)
            .mem
            .host_write(1, base, &initial_bytes(seed, i, r.len));
        keys.push(
            r.exposed
                .map(|p| sim.expose(r.node, 1, base, r.len, perms(p))),
        );
    }
    for (wr_id, q) in s.requests.iter().enumerate() {
        let remote = &s.regions[q.remote.0];
        let key = keys[q.remote.0].unwrap_or(0) ^ if q.wrong_key { 0x5a5a } else { 0 };
        let wr = WorkRequest {
            wr_id: wr_id as u64,
            op: op(q.op),
            peer: remote.node,
            local_pdid: 1,
            local_addr: sim_base(q.local.0) + q.local.1,
            remote_pdid: 1,
            remote_addr: sim_base(q.remote.0) + q.remote.1,
            rkey: key,
            len: q.len,
        };
        if wr.op == Op::Read {
            // Reads land in the local region: let the checker know the NI may write there.
            sim.node_mut(q.node)
                .mem
                .allow_writes(1, wr.local_addr, wr.local_addr + wr.len);
        }
        sim.post(sim.now(), q.node, wr);
        if s.sequential {
            sim.run_until_idle(Duration::from_ms(10_000))
                .expect("conformance scenario runs");
        }
    }
    sim.run_until_idle(Duration::from_ms(10_000))
        .expect("conformance scenario runs");
    let mut statuses = vec![Err(CompletionError::Invalid); s.requests.len()];
    for p in sim.posts() {
        statuses[p.wr.wr_id as usize] = p.completion.expect("completed").status;
    }
    let region_hashes = s
        .regions
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let mut buf = vec![0u8; r.len as usize];
            sim.node(r.node).mem.host_read(1, sim_base(i), &mut buf);
            xxh3_64(&buf)
        })
        .collect();
    Outcome {
        statuses,
        region_hashes,
    }
}

/// The outcome every driver must produce, computed from the scenario alone: requests applied
/// in order to a plain model of the regions (protection checked, nothing partial).
pub fn expected(s: &Scenario, seed: u64) -> Outcome {
    let mut mem: Vec<Vec<u8>> = s
        .regions
        .iter()
        .enumerate()
        .map(|(i, r)| initial_bytes(seed, i, r.len))
        .collect();
    let mut statuses = Vec::new();
    for q in &s.requests {
        let remote = &s.regions[q.remote.0];
        let need = match op(q.op) {
            Op::Write => Perms::W,
            Op::Read => Perms::R,
        };
        let allowed = !q.wrong_key
            && remote
                .exposed
                .is_some_and(|p| (!need.write || p.write) && (!need.read || p.read))
            && q.remote.1 + q.len <= remote.len;
        if !allowed {
            statuses.push(Err(CompletionError::RemoteAccess));
            continue;
        }
        let (src, dst) = match op(q.op) {
            Op::Write => (q.local, q.remote),
            Op::Read => (q.remote, q.local),
        };
        let data = mem[src.0][src.1 as usize..(src.1 + q.len) as usize].to_vec();
        mem[dst.0][dst.1 as usize..(dst.1 + q.len) as usize].copy_from_slice(&data);
        statuses.push(Ok(()));
    }
    Outcome {
        statuses,
        region_hashes: mem.iter().map(|m| xxh3_64(m)).collect(),
    }
}
