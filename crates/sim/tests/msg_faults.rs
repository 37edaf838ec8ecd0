//! The message layer on PART engines under injected packet faults (loss, duplication,
//! reordering, corruption, delay) and first-use page faults: every message is delivered
//! exactly once, in order per pair, with the bytes that were sent.

use std::collections::HashMap;

use unpinned_core::api::Perms;
use unpinned_core::memory::Pdid;
use unpinned_core::profile::Profile;
use unpinned_core::rng::{rng_for, Rng};
use unpinned_core::time::{Duration, Instant};
use unpinned_msg::{Endpoint, HostMem, Layout, MsgConfig, MsgEvent, PeerInfo};
use unpinned_sim::{FaultConfig, Residence, Sim, SimConfig, SimMemory};

const PDID: Pdid = 1;
const MSG_BASE: u64 = 1 << 32;
const BUF_BASE: u64 = 1 << 40;
const SLOT: u64 = 64 << 10;

struct H<'a>(&'a mut SimMemory);
impl HostMem for H<'_> {
    fn read(&mut self, addr: u64, out: &mut [u8]) {
        self.0.host_read(PDID, addr, out);
    }
    fn write(&mut self, addr: u64, data: &[u8]) {
        self.0.host_write(PDID, addr, data);
    }
}

fn run(seed: u64, nodes: u32, per_pair: u32, faults: FaultConfig, packet_bytes: u32) {
    let mut profile = Profile::forth_arm();
    profile.engine.packet_bytes = packet_bytes;
    // As the simulator's randomized scenarios do under packet faults: the liveness limit of
    // the reference profile (7 silent timeouts) is for a clean network.
    profile.engine.max_timeouts = 30;
    let mut cfg = SimConfig::two_nodes(profile, seed);
    cfg.nodes = nodes;
    cfg.faults = faults;
    let mut sim = Sim::new(cfg);
    let mcfg = MsgConfig {
        eager_max_bytes: 4096,
        slots_per_peer: 2,
    };
    let peers: Vec<Vec<u32>> = (0..nodes)
        .map(|n| (0..nodes).filter(|&p| p != n).collect())
        .collect();
    let layout = Layout::new(&mcfg, MSG_BASE, nodes - 1);
    let mut keys = Vec::new();
    let bufs = (nodes as u64 - 1) * per_pair as u64;
    for n in 0..nodes {
        sim.map(n, PDID, MSG_BASE, layout.region_bytes(), Residence::Absent);
        keys.push(sim.expose(n, PDID, MSG_BASE, layout.region_bytes(), Perms::RW));
        // Send buffers (random bytes, half of their pages absent) then receive buffers.
        sim.map(
            n,
            PDID,
            BUF_BASE,
            2 * bufs * SLOT,
            Residence::MissingWithProbability(0.5),
        );
        sim.fill_random(n, PDID, BUF_BASE, bufs * SLOT);
    }
    let mut eps: Vec<Endpoint> = (0..nodes)
        .map(|n| {
            let bk = sim.expose(n, PDID, BUF_BASE, bufs * SLOT, Perms::R);
            let infos = peers[n as usize]
                .iter()
                .map(|&p| PeerInfo {
                    node: p,
                    pdid: PDID,
                    region_base: MSG_BASE,
                    peer_peers: nodes - 1,
                    index_at_peer: peers[p as usize].binary_search(&n).unwrap() as u32,
                    msg_rkey: keys[p as usize],
                })
                .collect();
            Endpoint::new(n, PDID, mcfg, MSG_BASE, bk, infos).unwrap()
        })
        .collect();
    // Message i of pair (s, d): size drawn at random (eager and rendezvous), tag i.
    let mut rng = rng_for(seed, "msg-test");
    let mut sizes: HashMap<(u32, u32), Vec<u64>> = HashMap::new();
    for s in 0..nodes {
        for (pi, &d) in peers[s as usize].iter().enumerate() {
            let v: Vec<u64> = (0..per_pair)
                .map(|_| {
                    if rng.gen_bool(0.5) {
                        rng.gen_range(0..=4096)
                    } else {
                        rng.gen_range(4097..SLOT)
                    }
                })
                .collect();
            for (i, &len) in v.iter().enumerate() {
                let slot = pi as u64 * per_pair as u64 + i as u64;
                eps[s as usize]
                    .isend(
                        ((d as u64) << 32) | i as u64,
                        d,
                        BUF_BASE + slot * SLOT,
                        len,
                        i as u32,
                    )
                    .unwrap();
            }
            sizes.insert((s, d), v);
        }
    }
    for d in 0..nodes {
        for (pi, &s) in peers[d as usize].iter().enumerate() {
            for i in 0..per_pair as u64 {
                let slot = bufs + pi as u64 * per_pair as u64 + i;
                eps[d as usize]
                    .irecv(
                        ((s as u64) << 32) | i,
                        s,
                        BUF_BASE + slot * SLOT,
                        SLOT,
                        i as u32,
                    )
                    .unwrap();
            }
        }
    }
    let mut got: HashMap<(u32, u32), Vec<u64>> = HashMap::new();
    let mut sends_done = 0u64;
    let pump = |sim: &mut Sim,
                eps: &mut Vec<Endpoint>,
                n: u32,
                got: &mut HashMap<(u32, u32), Vec<u64>>,
                sends_done: &mut u64| {
        let now = sim.now();
        loop {
            let mem = &mut sim.node_mut(n).mem;
            let Some(wr) = eps[n as usize].poll_post(&mut H(mem)) else {
                break;
            };
            sim.post(now, n, wr);
        }
        while let Some(ev) = eps[n as usize].poll_event() {
            match ev {
                MsgEvent::SendDone { result, .. } => {
                    result.unwrap();
                    *sends_done += 1;
                }
                MsgEvent::Recv(r) => {
                    let len = r
                        .result
                        .unwrap_or_else(|e| panic!("seed {seed}: receive failed: {e}"));
                    let i = r.id & 0xffff_ffff;
                    assert_eq!(r.seq, i + 1, "seed {seed}: in order per pair");
                    let v = got
                        .entry((r.peer, n))
                        .or_insert_with(|| vec![u64::MAX; per_pair as usize]);
                    assert_eq!(
                        v[i as usize],
                        u64::MAX,
                        "seed {seed}: message {i} {}->{n} received twice",
                        r.peer
                    );
                    v[i as usize] = len;
                }
                MsgEvent::PeerFailed { peer, error } => {
                    panic!("seed {seed}: pair {n}-{peer} failed: {error}")
                }
            }
        }
    };
    for n in 0..nodes {
        pump(&mut sim, &mut eps, n, &mut got, &mut sends_done);
    }
    let limit = Instant::ZERO + Duration::from_us(2_000_000);
    while let Some(t) = sim.next_event_at() {
        assert!(
            t < limit,
            "seed {seed}: not done by {limit:?}\n{}",
            sim.debug_summary()
        );
        sim.step().unwrap_or_else(|e| panic!("{e}"));
        if let Some((_, n)) = sim.take_arrival() {
            eps[n as usize].poll(&mut H(&mut sim.node_mut(n).mem));
            pump(&mut sim, &mut eps, n, &mut got, &mut sends_done);
        }
        for rec in sim.forget_completed() {
            let n = rec.node;
            eps[n as usize]
                .handle_completion(&rec.completion.unwrap(), &mut H(&mut sim.node_mut(n).mem));
            pump(&mut sim, &mut eps, n, &mut got, &mut sends_done);
        }
    }
    let total = nodes as u64 * (nodes as u64 - 1) * per_pair as u64;
    assert_eq!(sends_done, total, "seed {seed}: every send completed once");
    assert_eq!(
        got, sizes,
        "seed {seed}: every message received exactly once, with its length"
    );
    // The bytes: each receive buffer holds what its send buffer held.
    for d in 0..nodes {
        for (pi, &s) in peers[d as usize].iter().enumerate() {
            let spi = peers[s as usize].binary_search(&d).unwrap() as u64;
            for (i, &len) in sizes[&(s, d)].iter().enumerate() {
                let (mut a, mut b) = (vec![0u8; len as usize], vec![0u8; len as usize]);
                sim.node(s).mem.host_read(
                    PDID,
                    BUF_BASE + (spi * per_pair as u64 + i as u64) * SLOT,
                    &mut a,
                );
                sim.node(d).mem.host_read(
                    PDID,
                    BUF_BASE + (bufs + pi as u64 * per_pair as u64 + i as u64) * SLOT,
                    &mut b,
                );
                assert!(
                    a == b,
                    "seed {seed}: message {i} {s}->{d} ({len} bytes) corrupted"
                );
            }
        }
        assert!(
            !eps[d as usize].is_busy(),
            "seed {seed}: endpoint {d} idle at the end"
        );
    }
}

#[test]
fn exactly_once_in_order_without_faults() {
    run(1, 3, 12, FaultConfig::NONE, 256);
}

#[test]
fn exactly_once_in_order_under_packet_faults() {
    let rerun = "cargo test -p unpinned-sim --test msg_faults under_packet_faults";
    unpinned_testkit::for_each_seed(rerun, 6, |seed| {
        run(
            100 + seed,
            3,
            10,
            FaultConfig::uniform(0.02),
            [256, 1024, 4096][seed as usize % 3],
        )
    });
}
