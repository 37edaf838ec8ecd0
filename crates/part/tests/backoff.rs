//! Retransmission-timeout backoff (`engine.timeout_backoff_max`): each consecutive silent
//! period of a peer doubles the next timeout up to the cap, an answer from the peer resets it,
//! and `RetryExceeded` comes after [`EngineConfig::silence_span`]`(max_timeouts + 1)` of
//! silence, for writes, reads and atomics alike. Packets are carried by hand, so that a silent
//! peer is simply one whose packets are dropped.

mod support;
use support::{Flat, BASE, LEN};

use unpinned_core::api::{AtomicOp, Completion, CompletionError, Op, Perms, WorkRequest};
use unpinned_core::profile::Profile;
use unpinned_core::time::{Duration, Instant};
use unpinned_part::{AtomicRequest, EngineConfig, Event, PartEngine};

const WORD: u64 = BASE + LEN - 4096;
const RESULT: u64 = BASE + LEN - 8;

const TIMEOUT_US: u64 = 1000;
const MAX_TIMEOUTS: u32 = 8;
const CAP: u32 = 16;
const BLOCK: u64 = 16384;

fn ms(n: u64) -> Duration {
    Duration::from_us(n * TIMEOUT_US)
}

/// One packet per 16 KiB block (as the live runtime), a window of 2, the backoff at `cap`.
fn config(cap: u32) -> EngineConfig {
    let mut c = EngineConfig::from_profile(&Profile::forth_arm().engine);
    c.packet_bytes = BLOCK as u32;
    c.max_outstanding = 2;
    c.max_timeouts = MAX_TIMEOUTS;
    c.block_timeout = Some(ms(1));
    c.timeout_backoff_max = cap;
    c
}

struct Pair {
    a: PartEngine,
    b: PartEngine,
    ma: Flat,
    mb: Flat,
    key: u32,
}

fn pair(cap: u32) -> Pair {
    let mut b = PartEngine::new(1, config(cap));
    let key = b.expose(1, BASE, LEN, Perms::RW).unwrap();
    Pair {
        a: PartEngine::new(0, config(cap)),
        b,
        ma: Flat((0..LEN).map(|i| (i * 7 + 3) as u8).collect()),
        mb: Flat(vec![0; LEN as usize]),
        key,
    }
}

fn wr(p: &Pair, op: Op, len: u64) -> WorkRequest {
    WorkRequest {
        wr_id: 1,
        op,
        peer: 1,
        local_pdid: 1,
        local_addr: BASE,
        remote_pdid: 1,
        remote_addr: BASE,
        rkey: p.key,
        len,
    }
}

fn atomic(p: &Pair) -> AtomicRequest {
    AtomicRequest {
        wr_id: 2,
        peer: 1,
        op: AtomicOp::FetchAdd(1),
        remote_pdid: 1,
        remote_addr: WORD,
        rkey: p.key,
        local_pdid: 1,
        local_addr: RESULT,
    }
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

fn completions(e: &mut PartEngine) -> Vec<Completion> {
    let mut out = Vec::new();
    while let Some(ev) = e.poll_event() {
        if let Event::Completion(c) = ev {
            out.push(c);
        }
    }
    out
}

/// Node 0 alone (its peer is dead): fire its deadlines one after the other, dropping what it
/// sends. Returns the instants at which it resent something and the failure (time, status).
fn until_failure(a: &mut PartEngine, ma: &mut Flat) -> (Vec<Instant>, Instant, Completion) {
    let mut resent = Vec::new();
    loop {
        let at = a
            .poll_timeout()
            .expect("a request in flight has a deadline");
        a.handle_timeout(at);
        if !transmit(a, ma, at).is_empty() {
            resent.push(at);
        }
        if let Some(c) = completions(a).pop() {
            return (resent, at, c);
        }
        assert!(resent.len() < 1000, "a dead peer never failed the request");
    }
}

/// The gaps between consecutive instants, from 0.
fn gaps(times: &[Instant]) -> Vec<Duration> {
    let mut prev = Instant(0);
    times
        .iter()
        .map(|&t| {
            let d = Duration(t.0 - prev.0);
            prev = t;
            d
        })
        .collect()
}

/// The silent periods a request lives through before it fails: 1, 2, 4, 8, 16, 16, ... ms.
fn expected_periods(cap: u32) -> Vec<Duration> {
    (0..=MAX_TIMEOUTS)
        .map(|k| ms((1u64 << k).min(cap as u64)))
        .collect()
}

fn assert_backoff_until_retry_exceeded(p: &mut Pair, cap: u32, what: &str) {
    let (resent, failed_at, c) = until_failure(&mut p.a, &mut p.ma);
    assert_eq!(c.status, Err(CompletionError::RetryExceeded), "{what}");
    let periods = expected_periods(cap);
    assert_eq!(
        gaps(&resent),
        periods[..MAX_TIMEOUTS as usize],
        "{what}: resent after"
    );
    assert_eq!(
        Duration(failed_at.0 - resent.last().unwrap().0),
        periods[MAX_TIMEOUTS as usize],
        "{what}: the last period"
    );
    let span = config(cap).silence_span(MAX_TIMEOUTS + 1);
    assert_eq!(
        failed_at,
        Instant(span.0),
        "{what}: RetryExceeded after {span:?}"
    );
    assert!(!p.a.is_busy(), "{what}");
}

#[test]
fn a_dead_peer_fails_a_write_after_the_backed_off_periods() {
    for cap in [1, 4, CAP] {
        let mut p = pair(cap);
        p.a.post(Instant(0), wr(&p, Op::Write, 4 * BLOCK)).unwrap();
        let _ = transmit(&mut p.a, &mut p.ma, Instant(0));
        assert_backoff_until_retry_exceeded(&mut p, cap, &format!("write, cap {cap}"));
    }
    // Without backoff that is (max_timeouts + 1) ack timeouts, as before; with it, longer.
    assert_eq!(
        config(1).silence_span(MAX_TIMEOUTS + 1),
        ms(MAX_TIMEOUTS as u64 + 1)
    );
    assert_eq!(config(CAP).silence_span(MAX_TIMEOUTS + 1), ms(95));
}

#[test]
fn a_dead_peer_fails_a_read_after_the_backed_off_periods() {
    for cap in [1, CAP] {
        let mut p = pair(cap);
        p.a.post(Instant(0), wr(&p, Op::Read, 2 * BLOCK)).unwrap();
        let _ = transmit(&mut p.a, &mut p.ma, Instant(0));
        assert_backoff_until_retry_exceeded(&mut p, cap, &format!("read, cap {cap}"));
    }
}

#[test]
fn a_dead_peer_fails_an_atomic_after_the_backed_off_periods() {
    for cap in [1, CAP] {
        let mut p = pair(cap);
        p.a.post_atomic(Instant(0), atomic(&p)).unwrap();
        let _ = transmit(&mut p.a, &mut p.ma, Instant(0));
        assert_backoff_until_retry_exceeded(&mut p, cap, &format!("atomic, cap {cap}"));
    }
}

#[test]
fn an_answer_resets_the_backoff_and_pulls_in_the_other_timers() {
    let mut p = pair(CAP);
    // Four blocks, two outstanding: blocks 0 and 1 go out and are lost.
    p.a.post(Instant(0), wr(&p, Op::Write, 4 * BLOCK)).unwrap();
    assert_eq!(transmit(&mut p.a, &mut p.ma, Instant(0)).len(), 2);
    // Three silent periods (1, 2, 4 ms): the resends at 7 ms wait 8 ms.
    let mut last = Vec::new();
    for at in [1, 3, 7].map(|t| Instant(ms(t).0)) {
        assert_eq!(p.a.poll_timeout(), Some(at));
        p.a.handle_timeout(at);
        last = transmit(&mut p.a, &mut p.ma, at);
        assert_eq!(last.len(), 2, "both blocks resent at {at:?}");
    }
    assert_eq!(p.a.poll_timeout(), Some(Instant(ms(15).0)));
    // The peer is back: block 0's resend arrives and its ACK comes back at 8 ms.
    let now = Instant(ms(8).0);
    p.b.handle_packet(now, 0, &last[0], &mut p.mb).unwrap();
    for pkt in transmit(&mut p.b, &mut p.mb, now) {
        p.a.handle_packet(now, 1, &pkt, &mut p.ma).unwrap();
    }
    // Block 2 goes out with one ack timeout, and block 1 (its resend was lost) no longer waits
    // for the 8 ms period of the silence: both time out at 9 ms.
    assert_eq!(transmit(&mut p.a, &mut p.ma, now).len(), 1, "block 2");
    assert_eq!(p.a.poll_timeout(), Some(Instant(ms(9).0)));
    // A new silence starts from one ack timeout again: the next period is 2 ms, not 16.
    let at = Instant(ms(9).0);
    p.a.handle_timeout(at);
    assert_eq!(transmit(&mut p.a, &mut p.ma, at).len(), 2);
    assert_eq!(p.a.poll_timeout(), Some(Instant(ms(11).0)));
    assert!(completions(&mut p.a).is_empty());
}

#[test]
fn without_backoff_an_answer_moves_no_timer() {
    let mut p = pair(1);
    p.a.post(Instant(0), wr(&p, Op::Write, 4 * BLOCK)).unwrap();
    let _ = transmit(&mut p.a, &mut p.ma, Instant(0));
    let mut last = Vec::new();
    for at in [1, 2, 3].map(|t| Instant(ms(t).0)) {
        assert_eq!(p.a.poll_timeout(), Some(at));
        p.a.handle_timeout(at);
        last = transmit(&mut p.a, &mut p.ma, at);
    }
    let now = Instant(ms(3).0 + 500_000);
    p.b.handle_packet(now, 0, &last[0], &mut p.mb).unwrap();
    for pkt in transmit(&mut p.b, &mut p.mb, now) {
        p.a.handle_packet(now, 1, &pkt, &mut p.ma).unwrap();
    }
    let _ = transmit(&mut p.a, &mut p.ma, now);
    // Block 1 keeps its deadline (4 ms), as the fixed timer always did.
    assert_eq!(p.a.poll_timeout(), Some(Instant(ms(4).0)));
}

#[test]
fn a_read_that_receives_a_block_starts_a_new_silence_from_one_ack_timeout() {
    let mut p = pair(CAP);
    p.a.post(Instant(0), wr(&p, Op::Read, 2 * BLOCK)).unwrap();
    let _ = transmit(&mut p.a, &mut p.ma, Instant(0));
    // Three silent periods: requests resent at 1, 3 and 7 ms, the last one waits 8 ms.
    let mut req = Vec::new();
    for at in [1, 3, 7].map(|t| Instant(ms(t).0)) {
        assert_eq!(p.a.poll_timeout(), Some(at));
        p.a.handle_timeout(at);
        req = transmit(&mut p.a, &mut p.ma, at);
        assert_eq!(req.len(), 1);
    }
    assert_eq!(p.a.poll_timeout(), Some(Instant(ms(15).0)));
    // The target serves it at 8 ms; only the first block of its response arrives.
    let now = Instant(ms(8).0);
    p.b.handle_packet(now, 0, &req[0], &mut p.mb).unwrap();
    let data = transmit(&mut p.b, &mut p.mb, now);
    assert_eq!(data.len(), 2);
    p.a.handle_packet(now, 1, &data[0], &mut p.ma).unwrap();
    let _ = transmit(&mut p.a, &mut p.ma, now);
    assert_eq!(p.a.poll_timeout(), Some(Instant(ms(9).0)));
}

#[test]
fn an_atomic_outcome_outlives_the_backed_off_resends() {
    let mut p = pair(CAP);
    p.a.post_atomic(Instant(0), atomic(&p)).unwrap();
    let first = transmit(&mut p.a, &mut p.ma, Instant(0));
    // Executed at the target; the response is lost.
    p.b.handle_packet(Instant(0), 0, &first[0], &mut p.mb)
        .unwrap();
    assert_eq!(transmit(&mut p.b, &mut p.mb, Instant(0)).len(), 1);
    assert_eq!(p.mb.word(WORD), 1);
    // The initiator resends through every backed-off period; only its last resend, at
    // silence_span(max_timeouts) = 79 ms (far past the fixed window's 10 ms), gets through.
    let mut last = (Instant(0), Vec::new());
    for _ in 0..MAX_TIMEOUTS {
        let at = p.a.poll_timeout().unwrap();
        p.a.handle_timeout(at);
        last = (at, transmit(&mut p.a, &mut p.ma, at));
    }
    let (at, pkts) = last;
    assert_eq!(at, Instant(config(CAP).silence_span(MAX_TIMEOUTS).0));
    assert_eq!(at, Instant(ms(79).0));
    // Another atomic executed at the target just before makes it forget expired outcomes.
    let mut other = atomic(&p);
    other.wr_id = 3;
    other.local_addr = RESULT - 8;
    p.a.post_atomic(at, other).unwrap();
    let pkt = transmit(&mut p.a, &mut p.ma, at);
    assert_eq!(pkt.len(), 1);
    p.b.handle_packet(at, 0, &pkt[0], &mut p.mb).unwrap();
    assert_eq!(p.mb.word(WORD), 2);
    p.b.handle_packet(at, 0, &pkts[0], &mut p.mb).unwrap();
    for pkt in transmit(&mut p.b, &mut p.mb, at) {
        p.a.handle_packet(at, 1, &pkt, &mut p.ma).unwrap();
    }
    assert_eq!(
        p.mb.word(WORD),
        2,
        "the first executed once, answered from memory"
    );
    let mut c = completions(&mut p.a);
    c.sort_by_key(|c| c.wr_id);
    assert_eq!(c.len(), 2);
    assert!(c.iter().all(|c| c.status == Ok(())), "{c:?}");
    assert_eq!(
        p.ma.word(RESULT),
        0,
        "the old value of the first one's one execution"
    );
    assert_eq!(p.ma.word(RESULT - 8), 1);
}
