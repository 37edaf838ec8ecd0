//! The message layer on two live runtimes in one process: eager and rendezvous messages in
//! both directions into fresh (not present) memory, delivered exactly once, in order, intact.

use std::time::{Duration, Instant};

use unpinned_live::msg::Messenger;
use unpinned_live::transport::mem::network;
use unpinned_live::{Config, Runtime};
use unpinned_msg::{MsgConfig, MsgEvent};
use unpinned_os::mapping::Mapping;
use unpinned_testkit::pattern;

#[test]
fn messages_both_ways_exactly_once_in_order() {
    let max = Config::new(0, 2).max_packet();
    let rts: Vec<Runtime> = network(2, max)
        .into_iter()
        .enumerate()
        .map(|(r, t)| Runtime::new(Config::new(r as u32, 2), Box::new(t)).unwrap())
        .collect();
    let cfg = MsgConfig {
        eager_max_bytes: 8192,
        slots_per_peer: 2,
    };
    let mut ms: Vec<Messenger> = rts
        .iter()
        .map(|rt| Messenger::new(rt, cfg).unwrap())
        .collect();
    let regions = vec![ms[0].region(), ms[1].region()];
    for m in &mut ms {
        m.connect(&regions).unwrap();
    }
    let sizes: Vec<usize> = vec![
        0, 1, 100, 4096, 8192, 8193, 20_000, 3, 300_000, 64, 70_000, 5,
    ];
    const SLOT: usize = 512 << 10;
    let src: Vec<Vec<Vec<u8>>> = (0..2)
        .map(|r| {
            sizes
                .iter()
                .enumerate()
                .map(|(i, &s)| pattern((r * 100 + i + 1) as u64, s))
                .collect()
        })
        .collect();
    let dst: Vec<Mapping> = (0..2)
        .map(|_| Mapping::anon(SLOT * sizes.len()).unwrap())
        .collect();
    for r in 0..2usize {
        let peer = 1 - r as u32;
        for (i, s) in src[r].iter().enumerate() {
            // SAFETY: the source vectors and destination mappings outlive the exchange below,
            // and are not touched until every event arrived.
            unsafe {
                ms[r]
                    .irecv(i as u64, peer, dst[r].ptr().add(i * SLOT), SLOT, i as u32)
                    .unwrap();
                ms[r]
                    .isend(1000 + i as u64, peer, s.as_ptr(), s.len(), i as u32)
                    .unwrap();
            }
        }
    }
    let mut got = vec![vec![None; sizes.len()]; 2];
    let mut sent = [0usize; 2];
    let deadline = Instant::now() + Duration::from_secs(60);
    while got.iter().flatten().any(|g| g.is_none()) || sent.iter().any(|&s| s < sizes.len()) {
        assert!(
            Instant::now() < deadline,
            "not done in 60 s: got {got:?}, sent {sent:?}"
        );
        for r in 0..2 {
            while let Some(ev) = ms[r].poll_event().unwrap() {
                match ev {
                    MsgEvent::SendDone { result, .. } => {
                        result.unwrap();
                        sent[r] += 1;
                    }
                    MsgEvent::Recv(d) => {
                        assert_eq!(d.seq, d.id + 1, "in order");
                        assert!(got[r][d.id as usize].is_none(), "exactly once");
                        got[r][d.id as usize] = Some(d.result.unwrap());
                    }
                    MsgEvent::PeerFailed { peer, error } => panic!("pair {r}-{peer}: {error}"),
                }
            }
        }
        std::thread::yield_now();
    }
    for r in 0..2 {
        for (i, s) in src[1 - r].iter().enumerate() {
            assert_eq!(got[r][i], Some(s.len() as u64));
            // SAFETY: every receive completed; nothing writes the mapping any more.
            let bytes = unsafe { std::slice::from_raw_parts(dst[r].ptr().add(i * SLOT), s.len()) };
            assert!(
                bytes == &s[..],
                "rank {r} message {i} ({} bytes) intact",
                s.len()
            );
        }
    }
}
