//! Compact link buffers (crates/sim/src/linkbuf.rs): packets queued at ports without their
//! zero payloads or in small buffers change no event and no result, only memory.

use unpinned_core::api::{Op, Perms, WorkRequest};
use unpinned_core::profile::Profile;
use unpinned_core::time::Duration;
use unpinned_sim::{Residence, Sim, SimConfig};

const SRC: u64 = 0x10_0000_0000;
const DST: u64 = 0x20_0000_0000;
const LEN: u64 = 256 << 10;
const SENDERS: u32 = 7;

/// Every other node writes `LEN` bytes into its own slice of node 0's buffer at once
/// (many-to-one: packets queue at node 0's input port), destination pages absent (faults,
/// NACKs, ERRs, resends). `keep_bytes`: senders keep real bytes (non-zero payloads) or not.
/// Returns (per-post latency in ns, events, link buffers (full, compact)).
fn many_to_one(trace: bool, keep_bytes: bool) -> (Vec<u64>, u64, (usize, usize)) {
    let mut profile = Profile::forth_arm();
    profile.engine.packet_bytes = 16384;
    profile.engine.block_bytes = 16384;
    let mut cfg = SimConfig::two_nodes(profile, 11);
    cfg.nodes = SENDERS + 1;
    cfg.trace = trace;
    let mut sim = Sim::new(cfg);
    sim.map(0, 1, DST, LEN * SENDERS as u64, Residence::Absent);
    let key = sim.expose(0, 1, DST, LEN * SENDERS as u64, Perms::RW);
    for n in 1..=SENDERS {
        sim.map(n, 1, SRC, LEN, Residence::Present);
        if keep_bytes {
            sim.fill_random(n, 1, SRC, LEN);
        } else {
            sim.node_mut(n).mem.keep_bytes_only(Some(Vec::new()));
        }
    }
    sim.node_mut(0)
        .mem
        .keep_bytes_only(if keep_bytes { None } else { Some(Vec::new()) });
    for n in 1..=SENDERS {
        let remote_addr = DST + (n as u64 - 1) * LEN;
        let wr = WorkRequest {
            wr_id: n as u64,
            op: Op::Write,
            peer: 0,
            local_pdid: 1,
            local_addr: SRC,
            remote_pdid: 1,
            remote_addr,
            rkey: key,
            len: LEN,
        };
        sim.post(sim.now(), n, wr);
    }
    sim.run_until_idle(Duration::from_ms(1000)).unwrap();
    let mut lat: Vec<(u64, u64)> = sim
        .posts()
        .iter()
        .map(|p| (p.wr.wr_id, p.latency().unwrap().0))
        .collect();
    assert_eq!(lat.len(), SENDERS as usize);
    assert!(sim
        .posts()
        .iter()
        .all(|p| p.completion.unwrap().status.is_ok()));
    lat.sort_unstable();
    (
        lat.into_iter().map(|l| l.1).collect(),
        sim.events(),
        sim.link_buffers(),
    )
}

#[test]
fn zero_payload_packets_are_stored_compactly_without_changing_the_run() {
    // Tracing looks at every byte on the link, so it keeps every packet whole: the reference.
    let (whole_lat, whole_events, whole_bufs) = many_to_one(true, false);
    let (lat, events, bufs) = many_to_one(false, false);
    assert_eq!(lat, whole_lat, "same completion times");
    assert_eq!(events, whole_events, "same events");
    assert_eq!(whole_bufs.1, 0, "traced run: no compact buffer");
    assert!(
        whole_bufs.0 > SENDERS as usize,
        "packets queued at node 0's port: {whole_bufs:?}"
    );
    // Only the one the NI emits into is full-size: everything queued is compact.
    assert_eq!(bufs.0, 1, "{bufs:?}");
    assert!(bufs.1 >= whole_bufs.0 - 1, "{bufs:?} vs {whole_bufs:?}");
}

#[test]
fn payloads_with_bytes_stay_whole() {
    let (whole_lat, whole_events, _) = many_to_one(true, true);
    let (lat, events, bufs) = many_to_one(false, true);
    assert_eq!((lat, events), (whole_lat, whole_events));
    // Data packets carry random bytes: full-size buffers; ACKs and NACKs are compact.
    assert!(bufs.0 > SENDERS as usize && bufs.1 > 0, "{bufs:?}");
}

#[test]
fn packets_to_a_node_that_does_not_exist_return_their_buffer_to_its_pool() {
    let mut profile = Profile::forth_arm();
    profile.engine.packet_bytes = 16384;
    profile.engine.block_bytes = 16384;
    let mut sim = Sim::new(SimConfig::two_nodes(profile, 5));
    sim.map(0, 1, SRC, LEN, Residence::Present);
    sim.node_mut(0).mem.keep_bytes_only(Some(Vec::new()));
    sim.map(1, 1, DST, LEN, Residence::Present);
    let key = sim.expose(1, 1, DST, LEN, Perms::RW);
    // Node 7 does not exist: its packets (compact ones too) are dropped at the sender's port;
    // the full-size packets of the write to node 1 must still find full-size buffers.
    let lost = WorkRequest {
        wr_id: 1,
        op: Op::Write,
        peer: 7,
        local_pdid: 1,
        local_addr: SRC,
        remote_pdid: 1,
        remote_addr: DST,
        rkey: key,
        len: 64,
    };
    sim.post(sim.now(), 0, lost);
    let wr = WorkRequest {
        wr_id: 2,
        op: Op::Write,
        peer: 1,
        local_pdid: 1,
        local_addr: SRC,
        remote_pdid: 1,
        remote_addr: DST,
        rkey: key,
        len: LEN,
    };
    sim.post(sim.now(), 0, wr);
    let _ = sim.run_until_idle(Duration::from_ms(10_000));
    let ok = sim
        .posts()
        .iter()
        .find(|p| p.wr.wr_id == 2)
        .expect("the write to node 1 completed");
    assert!(ok.completion.unwrap().status.is_ok());
}
