//! The engine's own CPU cost of one 8 B write, without threads, rings or residency checks:
//! post, emit the data packet, handle it at the target (write + ACK), emit the ACK, handle it
//! at the sender, take the completion; all in one thread over flat memory. The floor under
//! the live runtime's 8 B write (crates/livebench `bench live`), which adds two thread
//! hand-offs, the residency check and the runtime's completion queue on top.
//!
//! `cargo run --release -p unpinned-livebench --example engine_8b [ROUNDS]`
use unpinned_core::api::{Op, Perms, WorkRequest};
use unpinned_core::profile::Profile;
use unpinned_core::time::Instant;
use unpinned_part::{EngineConfig, Event, PartEngine};
use unpinned_testkit::{FlatMemory as Flat, FLAT_BASE as BASE};

fn main() {
    let rounds: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    // The live runtime's engine parameters (16 KiB packets, 16 outstanding blocks, 10 ms
    // block timeout); `FORTH_ARM=1` for the reference platform's (1 ms block timeout).
    let profile = if std::env::var_os("FORTH_ARM").is_some() {
        Profile::forth_arm()
    } else {
        unpinned_livebench::exp::live_profile()
    };
    let cfg = EngineConfig::from_profile(&profile.engine);
    let mut a = PartEngine::new(0, cfg.clone());
    let mut b = PartEngine::new(1, cfg);
    a.set_checksum(unpinned_wire::Checksum::None);
    b.set_checksum(unpinned_wire::Checksum::None);
    let key = b.expose(1, BASE, 4096, Perms::RW).unwrap();
    let (mut ma, mut mb) = (Flat(vec![7; 4096]), Flat(vec![0; 4096]));
    let mut buf = vec![0u8; 1 << 15];
    // Engine time per write: the receive state of a block lives `rx_state_idle_us` (20 ms),
    // so this sets how many blocks the target's table holds (20 ms / step).
    let step_ns: u64 = std::env::var("STEP_NS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    let mut now = 0u64;
    let (mut t_post, mut t_tx, mut t_rx, mut t_ack_tx, mut t_ack_rx) =
        (0u128, 0u128, 0u128, 0u128, 0u128);
    let t_all = std::time::Instant::now();
    for i in 0..rounds {
        now += step_ns;
        let t = Instant(now);
        let wr = WorkRequest {
            wr_id: i,
            op: Op::Write,
            peer: 1,
            local_pdid: 1,
            local_addr: BASE,
            remote_pdid: 1,
            remote_addr: BASE + 64,
            rkey: key,
            len: 8,
        };
        let c0 = std::time::Instant::now();
        a.post(t, wr).unwrap();
        let c1 = std::time::Instant::now();
        let p = a.poll_transmit(t, &mut buf, &mut ma).expect("data packet");
        let c2 = std::time::Instant::now();
        b.handle_packet_intact(t, 0, &buf[..p.len], &mut mb)
            .unwrap();
        while b.poll_event().is_some() {}
        let c3 = std::time::Instant::now();
        let q = b.poll_transmit(t, &mut buf, &mut mb).expect("ACK");
        let c4 = std::time::Instant::now();
        a.handle_packet_intact(t, 1, &buf[..q.len], &mut ma)
            .unwrap();
        let mut done = false;
        while let Some(ev) = a.poll_event() {
            done |= matches!(ev, Event::Completion(_));
        }
        let c5 = std::time::Instant::now();
        assert!(done);
        for e in [&mut a, &mut b] {
            if e.poll_timeout().is_some_and(|d| d <= t) {
                e.handle_timeout(t);
            }
        }
        t_post += (c1 - c0).as_nanos();
        t_tx += (c2 - c1).as_nanos();
        t_rx += (c3 - c2).as_nanos();
        t_ack_tx += (c4 - c3).as_nanos();
        t_ack_rx += (c5 - c4).as_nanos();
    }
    let n = rounds as f64;
    println!(
        "per 8 B write, ns (each includes one ~25 ns clock read): post {:.0}, data out {:.0}, data in + ACK queued {:.0}, ACK out {:.0}, ACK in + completion {:.0}; whole loop {:.0}",
        t_post as f64 / n,
        t_tx as f64 / n,
        t_rx as f64 / n,
        t_ack_tx as f64 / n,
        t_ack_rx as f64 / n,
        t_all.elapsed().as_nanos() as f64 / n
    );
}
