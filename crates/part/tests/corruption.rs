//! Packet corruption over a link with a delay: the receiver answers a data packet that fails
//! its checksum with a CRC NACK for the packet's block attempt (mechanism 6), which reaches the
//! sender one round trip later, while it is still sending that block.
//!
//! Under the selective policy the receiver keeps every packet it holds, and only its SACK (the
//! answer to an attempt's last packet, which polls) tells the sender which ones are missing.
//! Restarting the attempt at the NACK from the first packet not known to be held (everything,
//! before the first SACK) threw away the rest of the attempt and with it the poll: a block of
//! 64 packets then reached its poll only if no packet of its first ~64 - RTT was corrupted,
//! the exponential cost of whole-block retransmission that the policy exists to avoid.

mod support;
use support::{Flat, BASE, LEN};

use unpinned_core::api::{Completion, Op, Perms, WorkRequest};
use unpinned_core::profile::{Profile, RetransmitPolicy};
use unpinned_core::rng::splitmix64;
use unpinned_core::time::{Duration, Instant};
use unpinned_part::{EngineConfig, EngineStats, Event, PartEngine};

/// One-way delay of the link, in packet times (1 us each): a round trip is 16 packets.
const DELAY_US: u64 = 8;

/// A packet in flight: delivery time, destination (0 or 1), bytes.
type InFlight = (Instant, usize, Vec<u8>);

/// Node 0 writes `len` bytes to node 1 over a link with a delay of [`DELAY_US`] each way that
/// corrupts (one byte flipped) `corrupt_percent` % of the packets in each direction; each
/// node sends at most one packet per microsecond. Returns node 0's completions, whether the
/// destination holds the source's bytes, and node 0's counters.
fn run(
    policy: RetransmitPolicy,
    seed: u64,
    corrupt_percent: u64,
    len: u64,
) -> (Vec<Completion>, bool, EngineStats) {
    let mut cfg = EngineConfig::from_profile(&Profile::forth_arm().engine);
    cfg.retransmit = policy;
    cfg.max_timeouts = 30;
    let mut nodes = [PartEngine::new(0, cfg.clone()), PartEngine::new(1, cfg)];
    let key = nodes[1].expose(1, BASE, LEN, Perms::RW).unwrap();
    let mut mems = [
        Flat((0..LEN).map(|i| (i * 7 + 3) as u8).collect()),
        Flat((0..LEN).map(|i| (i * 13 + 1) as u8).collect()),
    ];
    let wr = WorkRequest {
        wr_id: 1,
        op: Op::Write,
        peer: 1,
        local_pdid: 1,
        local_addr: BASE,
        remote_pdid: 1,
        remote_addr: BASE,
        rkey: key,
        len,
    };
    nodes[0].post(Instant(0), wr).unwrap();
    let mut state = seed;
    let mut flight: Vec<InFlight> = Vec::new();
    let mut done = Vec::new();
    let mut now = Instant(0);
    let mut buf = vec![0u8; 1 << 15];
    for _ in 0..2_000_000 {
        for (n, node) in nodes.iter_mut().enumerate() {
            node.handle_timeout(now);
            if let Some(t) = node.poll_transmit(now, &mut buf, &mut mems[n]) {
                let mut bytes = buf[..t.len].to_vec();
                state = splitmix64(state);
                if state % 100 < corrupt_percent {
                    let i = (state >> 32) as usize % bytes.len();
                    bytes[i] ^= 0x5a;
                }
                flight.push((now + Duration::from_us(DELAY_US), 1 - n, bytes));
            }
        }
        let (due, later): (Vec<InFlight>, Vec<InFlight>) =
            flight.into_iter().partition(|(at, _, _)| *at <= now);
        flight = later;
        for (_, dst, bytes) in due {
            let _ = nodes[dst].handle_packet(now, (1 - dst) as u32, &bytes, &mut mems[dst]);
        }
        while let Some(ev) = nodes[0].poll_event() {
            if let Event::Completion(c) = ev {
                done.push(c);
            }
        }
        while nodes[1].poll_event().is_some() {}
        if !done.is_empty() {
            break;
        }
        let idle = flight.is_empty() && !nodes.iter().any(|e| e.wants_transmit());
        now = if idle {
            let next = nodes.iter_mut().filter_map(|e| e.poll_timeout()).min();
            next.expect("work left implies a deadline").max(now)
        } else {
            now + Duration::from_us(1)
        };
    }
    let same = mems[0].0[..len as usize] == mems[1].0[..len as usize];
    (done, same, nodes[0].stats())
}

/// At 10 % corruption each way a selective write resends about what was corrupted (plus the
/// packets in flight behind a lost poll), not whole blocks over and over.
#[test]
fn selective_retransmission_resends_what_corruption_destroyed() {
    const WRITE: u64 = 256 << 10;
    for seed in 0..6 {
        let (done, same, s) = run(RetransmitPolicy::Selective, seed, 10, WRITE);
        assert_eq!(done.len(), 1, "seed {seed}: no completion; {s:?}");
        assert_eq!(done[0].status, Ok(()), "seed {seed}: {s:?}");
        assert!(same, "seed {seed}: bytes");
        assert!(
            s.data_bytes_resent < WRITE / 2,
            "seed {seed}: {} bytes resent for {WRITE}: {s:?}",
            s.data_bytes_resent
        );
    }
}

/// The spec's whole-block policy keeps its behaviour: a CRC NACK restarts the block at once,
/// from its first packet.
#[test]
fn whole_block_retransmission_restarts_the_block_at_a_crc_nack() {
    const WRITE: u64 = 64 << 10;
    let (done, same, s) = run(RetransmitPolicy::Block, 3, 2, WRITE);
    assert_eq!(done[0].status, Ok(()), "{s:?}");
    assert!(same);
    assert!(s.retransmits_crc > 0, "{s:?}");
}
