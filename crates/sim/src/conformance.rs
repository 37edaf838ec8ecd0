//! Conformance scenarios: one description, run on every driver, with outcomes that must agree
//! (turmoil's "one test body, two backends"). Addresses are region-relative so that the live
//! runtime can place regions wherever its allocator puts them; contents are seeded.
//!
//! The outcome of a scenario is what a user can observe: each work request's status, and the
//! final bytes of every region (as a hash). Timing is not part of it.

use unpinned_core::api::{CompletionError, NodeId, Op, Perms, WorkRequest};
use unpinned_core::rng::{rng_for, Rng};
use unpinned_core::time::Duration;
use xxhash_rust::xxh3::xxh3_64;

use crate::memory::Residence;
use crate::world::{Sim, SimConfig};

/// Residency of a region when the scenario starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    /// Every page present (touched).
    Present,
    /// No page present (fresh memory, never touched).
    Fresh,
    /// Every other page present.
    Alternate,
}

/// A memory region of one node.
#[derive(Clone, Debug)]
pub struct Region {
    /// Owner.
    pub node: NodeId,
    /// Bytes.
    pub len: u64,
    /// Residency at the start.
    pub start: Start,
    /// Exposed to peers with these permissions (None: private).
    pub exposed: Option<Perms>,
}

/// One work request, in region-relative terms.
#[derive(Clone, Debug)]
pub struct Request {
    /// Posting node.
    pub node: NodeId,
    /// Write or read.
    pub op: Op,
    /// Local region index and offset.
    pub local: (usize, u64),
    /// Remote region index and offset (its owner is the peer).
    pub remote: (usize, u64),
    /// Bytes.
    pub len: u64,
    /// Present a wrong key.
    pub wrong_key: bool,
}

/// A scenario.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// Name.
    pub name: &'static str,
    /// Nodes (ranks).
    pub nodes: u32,
    /// Regions; their initial contents are seeded random bytes.
    pub regions: Vec<Region>,
    /// Requests, posted in order (each after the previous completed when `sequential`).
    pub requests: Vec<Request>,
    /// Post each request only after the previous one completed (outcomes independent of timing).
    pub sequential: bool,
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

/// The scenarios every driver must run identically.
pub fn scenarios() -> Vec<Scenario> {
    let rw = Some(Perms::RW);
    let req = |node, op, local, remote, len| Request {
        node,
        op,
        local,
        remote,
        len,
        wrong_key: false,
    };
    vec![
        Scenario {
            name: "write-fresh-and-present",
            nodes: 2,
            regions: vec![
                Region {
                    node: 0,
                    len: 256 << 10,
                    start: Start::Present,
                    exposed: None,
                },
                Region {
                    node: 1,
                    len: 256 << 10,
                    start: Start::Fresh,
                    exposed: rw,
                },
                Region {
                    node: 1,
                    len: 64 << 10,
                    start: Start::Present,
                    exposed: rw,
                },
            ],
            requests: vec![
                req(0, Op::Write, (0, 0), (1, 0), 1),
                req(0, Op::Write, (0, 100), (1, 4096 + 7), 40_000),
                req(0, Op::Write, (0, 0), (1, 64 << 10), 192 << 10),
                req(0, Op::Write, (0, 5), (2, 3), (64 << 10) - 3),
            ],
            sequential: true,
        },
        Scenario {
            name: "read-with-faults-on-both-sides",
            nodes: 2,
            regions: vec![
                Region {
                    node: 0,
                    len: 128 << 10,
                    start: Start::Fresh,
                    exposed: None,
                },
                Region {
                    node: 1,
                    len: 128 << 10,
                    start: Start::Alternate,
                    exposed: Some(Perms::R),
                },
            ],
            requests: vec![
                req(0, Op::Read, (0, 0), (1, 0), 128 << 10),
                req(0, Op::Read, (0, 1), (1, 4095), 3),
            ],
            sequential: true,
        },
        Scenario {
            name: "protection-errors-write-nothing",
            nodes: 2,
            regions: vec![
                Region {
                    node: 0,
                    len: 64 << 10,
                    start: Start::Present,
                    exposed: None,
                },
                Region {
                    node: 1,
                    len: 32 << 10,
                    start: Start::Present,
                    exposed: Some(Perms::R),
                },
                Region {
                    node: 1,
                    len: 32 << 10,
                    start: Start::Present,
                    exposed: rw,
                },
            ],
            requests: vec![
                // Write to a read-only exposure.
                req(0, Op::Write, (0, 0), (1, 0), 100),
                // Past the end of an exposure.
                req(0, Op::Write, (0, 0), (2, 1), 32 << 10),
                // Wrong key.
                Request {
                    wrong_key: true,
                    ..req(0, Op::Write, (0, 0), (2, 0), 10)
                },
                Request {
                    wrong_key: true,
                    ..req(0, Op::Read, (0, 0), (1, 0), 10)
                },
                // And one that is fine.
                req(0, Op::Write, (0, 0), (2, 0), 32 << 10),
            ],
            sequential: true,
        },
        Scenario {
            name: "three-ranks-into-one-target",
            nodes: 3,
            regions: vec![
                Region {
                    node: 0,
                    len: 64 << 10,
                    start: Start::Present,
                    exposed: None,
                },
                Region {
                    node: 1,
                    len: 64 << 10,
                    start: Start::Fresh,
                    exposed: None,
                },
                Region {
                    node: 2,
                    len: 256 << 10,
                    start: Start::Fresh,
                    exposed: rw,
                },
                Region {
                    node: 1,
                    len: 64 << 10,
                    start: Start::Fresh,
                    exposed: None,
                },
            ],
            // Concurrent requests touch disjoint bytes (as a correct program's would).
            requests: vec![
                req(0, Op::Write, (0, 0), (2, 0), 64 << 10),
                req(1, Op::Write, (1, 0), (2, 64 << 10), 64 << 10),
                req(0, Op::Write, (0, 17), (2, 128 << 10), 30_000),
                req(1, Op::Read, (3, 0), (2, 192 << 10), 64 << 10),
            ],
            sequential: false,
        },
    ]
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
                .map(|perms| sim.expose(r.node, 1, base, r.len, perms)),
        );
    }
    for (wr_id, q) in s.requests.iter().enumerate() {
        let remote = &s.regions[q.remote.0];
        let key = keys[q.remote.0].unwrap_or(0) ^ if q.wrong_key { 0x5a5a } else { 0 };
        let wr = WorkRequest {
            wr_id: wr_id as u64,
            op: q.op,
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
        let need = match q.op {
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
        let (src, dst) = match q.op {
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
