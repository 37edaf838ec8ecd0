//! `max_timeouts` counts silent *periods* of a transfer, not block timers: with a window of
//! many outstanding blocks, one silent period fires one timer per block, and counting each
//! of them failed a transfer with `RetryExceeded` after two periods of a descheduled peer
//! (16 blocks, `max_timeouts = 30`: the 3-rank shm test of crates/live failed 10 of 64 runs).

mod support;
use support::{Flat, BASE, LEN};

use unpinned_core::api::{Completion, CompletionError, Op, Perms, WorkRequest};
use unpinned_core::profile::Profile;
use unpinned_core::time::{Duration, Instant};
use unpinned_part::{EngineConfig, Event, PartEngine};

const WINDOW: u32 = 16;
const MAX_TIMEOUTS: u32 = 5;
const TIMEOUT_US: u64 = 1000;

fn config() -> EngineConfig {
    let mut c = EngineConfig::from_profile(&Profile::forth_arm().engine);
    c.max_outstanding = WINDOW;
    c.max_timeouts = MAX_TIMEOUTS;
    c.block_timeout = Some(Duration::from_us(TIMEOUT_US));
    c
}

fn completions(e: &mut PartEngine) -> Vec<Completion> {
    let mut out = Vec::new();
    while let Some(ev) = e.poll_event() {
        if let Event::Completion(c) = ev {
            out.push(c);
        }
    }
    out
}

/// Node 0 writes `WINDOW` blocks to node 1; returns (a, b, their memories).
fn start() -> (PartEngine, PartEngine, Flat, Flat) {
    let mut a = PartEngine::new(0, config());
    let mut b = PartEngine::new(1, config());
    let key = b.expose(1, BASE, LEN, Perms::RW).unwrap();
    let ma = Flat((0..LEN).map(|i| (i * 7 + 3) as u8).collect());
    let mb = Flat(vec![0; LEN as usize]);
    let len = WINDOW as u64 * config().block_bytes as u64;
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
    a.post(Instant(0), wr).unwrap();
    (a, b, ma, mb)
}

/// Everything `from` has to send now.
fn transmit(from: &mut PartEngine, mem: &mut Flat, now: Instant) -> Vec<Vec<u8>> {
    let mut buf = vec![0u8; 1 << 15];
    let mut out = Vec::new();
    while let Some(t) = from.poll_transmit(now, &mut buf, mem) {
        out.push(buf[..t.len].to_vec());
    }
    out
}

#[test]
fn a_silent_period_counts_once_whatever_the_window() {
    let (mut a, mut b, mut ma, mut mb) = start();
    let mut now = Instant(0);
    // The peer is silent (descheduled) while the window times out MAX_TIMEOUTS times, WINDOW
    // timers each time: the transfer must survive, and the last retransmissions get through.
    let _ = transmit(&mut a, &mut ma, now);
    for period in 1..=MAX_TIMEOUTS {
        now += Duration::from_us(TIMEOUT_US + 10);
        a.handle_timeout(now);
        let resent = transmit(&mut a, &mut ma, now);
        assert!(
            completions(&mut a).is_empty(),
            "failed after {period} silent periods (the limit is {MAX_TIMEOUTS})"
        );
        if period < MAX_TIMEOUTS {
            continue;
        }
        // The peer is back.
        for p in resent {
            b.handle_packet(now, 0, &p, &mut mb).unwrap();
        }
    }
    for _ in 0..10 {
        for p in transmit(&mut b, &mut mb, now) {
            a.handle_packet(now, 1, &p, &mut ma).unwrap();
        }
        for p in transmit(&mut a, &mut ma, now) {
            b.handle_packet(now, 0, &p, &mut mb).unwrap();
        }
    }
    let c = completions(&mut a);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].status, Ok(()));
    let len = (WINDOW * config().block_bytes) as usize;
    assert_eq!(mb.0[..len], ma.0[..len]);
}

#[test]
fn a_dead_peer_still_fails_after_max_timeouts_periods() {
    let (mut a, _b, mut ma, _mb) = start();
    let mut now = Instant(0);
    let _ = transmit(&mut a, &mut ma, now);
    let mut periods = 0;
    let failed_at = loop {
        now += Duration::from_us(TIMEOUT_US + 10);
        periods += 1;
        a.handle_timeout(now);
        let _ = transmit(&mut a, &mut ma, now);
        let c = completions(&mut a);
        if let Some(c) = c.first() {
            assert_eq!(c.status, Err(CompletionError::RetryExceeded));
            break periods;
        }
        assert!(periods < 100, "a dead peer never failed the transfer");
    };
    assert_eq!(failed_at, MAX_TIMEOUTS + 1);
    assert!(!a.is_busy());
}
