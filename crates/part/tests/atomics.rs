//! Remote atomics in the PART engine, sans-IO: two engines, packets carried by hand so that
//! losses, duplicates and page faults are placed exactly.

use std::collections::{HashMap, HashSet};

use unpinned_core::api::{AtomicOp, Completion, CompletionError, FaultRecord, Perms};
use unpinned_core::memory::{page_of, MemError, Memory, Pdid};
use unpinned_core::profile::Profile;
use unpinned_core::time::{Duration, Instant};
use unpinned_part::{AtomicRequest, EngineConfig, Event, PartEngine, ATOMIC_BLOCK};

/// Byte memory with pages that can be "not present" until paged in.
#[derive(Default)]
struct Mem {
    bytes: HashMap<u64, u8>,
    missing: HashSet<u64>,
}
impl Memory for Mem {
    fn write(&mut self, _: Pdid, addr: u64, data: &[u8]) -> Result<(), MemError> {
        if self.missing.contains(&page_of(addr)) {
            return Err(MemError::NotPresent {
                page_addr: page_of(addr),
            });
        }
        for (i, b) in data.iter().enumerate() {
            self.bytes.insert(addr + i as u64, *b);
        }
        Ok(())
    }
    fn read(&mut self, _: Pdid, addr: u64, out: &mut [u8]) -> Result<(), MemError> {
        if self.missing.contains(&page_of(addr)) {
            return Err(MemError::NotPresent {
                page_addr: page_of(addr),
            });
        }
        for (i, b) in out.iter_mut().enumerate() {
            *b = *self.bytes.get(&(addr + i as u64)).unwrap_or(&0);
        }
        Ok(())
    }
}
impl Mem {
    fn word(&self, addr: u64) -> u64 {
        let mut b = [0u8; 8];
        for (i, x) in b.iter_mut().enumerate() {
            *x = *self.bytes.get(&(addr + i as u64)).unwrap_or(&0);
        }
        u64::from_le_bytes(b)
    }
}

fn drain(e: &mut PartEngine, now: Instant, mem: &mut Mem) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; 1024];
    while let Some(t) = e.poll_transmit(now, &mut buf, mem) {
        out.push(buf[..t.len].to_vec());
    }
    out
}

fn events(e: &mut PartEngine) -> (Vec<Completion>, Vec<FaultRecord>) {
    let (mut c, mut f) = (Vec::new(), Vec::new());
    while let Some(ev) = e.poll_event() {
        match ev {
            Event::Completion(x) => c.push(x),
            Event::Fault(x) => f.push(x),
        }
    }
    (c, f)
}

struct Pair {
    a: PartEngine,
    b: PartEngine,
    ma: Mem,
    mb: Mem,
    key: u32,
}

const WORD: u64 = 0x20_0000;
const RESULT: u64 = 0x30_0000;

fn pair() -> Pair {
    let mut cfg = EngineConfig::from_profile(&Profile::forth_arm().engine);
    cfg.block_timeout = Some(Duration::from_us(1000));
    let (a, mut b) = (PartEngine::new(0, cfg.clone()), PartEngine::new(1, cfg));
    let key = b.expose(1, WORD, 4096, Perms::RW).unwrap();
    Pair {
        a,
        b,
        ma: Mem::default(),
        mb: Mem::default(),
        key,
    }
}

fn req(p: &Pair, wr_id: u64, op: AtomicOp) -> AtomicRequest {
    AtomicRequest {
        wr_id,
        peer: 1,
        op,
        remote_pdid: 1,
        remote_addr: WORD,
        rkey: p.key,
        local_pdid: 1,
        local_addr: RESULT,
    }
}

/// Run one atomic to completion with no loss; returns the old value.
fn run(p: &mut Pair, wr_id: u64, op: AtomicOp) -> u64 {
    let now = Instant(0);
    p.a.post_atomic(now, req(p, wr_id, op)).unwrap();
    for pkt in drain(&mut p.a, now, &mut p.ma) {
        p.b.handle_packet(now, 0, &pkt, &mut p.mb).unwrap();
    }
    for pkt in drain(&mut p.b, now, &mut p.mb) {
        p.a.handle_packet(now, 1, &pkt, &mut p.ma).unwrap();
    }
    let (c, _) = events(&mut p.a);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].status, Ok(()));
    p.ma.word(RESULT)
}

#[test]
fn cas_fetch_add_and_swap_return_the_old_value() {
    let mut p = pair();
    assert_eq!(
        run(
            &mut p,
            1,
            AtomicOp::Cas {
                expected: 0,
                new: 7
            }
        ),
        0
    );
    assert_eq!(p.mb.word(WORD), 7);
    assert_eq!(
        run(
            &mut p,
            2,
            AtomicOp::Cas {
                expected: 0,
                new: 9
            }
        ),
        7,
        "failed CAS"
    );
    assert_eq!(p.mb.word(WORD), 7);
    assert_eq!(run(&mut p, 3, AtomicOp::FetchAdd(5)), 7);
    assert_eq!(run(&mut p, 4, AtomicOp::Swap(100)), 12);
    assert_eq!(p.mb.word(WORD), 100);
    assert!(!p.a.is_busy());
}

#[test]
fn lost_response_is_answered_again_not_executed_twice() {
    let mut p = pair();
    let mut now = Instant(0);
    p.a.post_atomic(now, req(&p, 1, AtomicOp::FetchAdd(1)))
        .unwrap();
    let r = drain(&mut p.a, now, &mut p.ma);
    p.b.handle_packet(now, 0, &r[0], &mut p.mb).unwrap();
    let lost = drain(&mut p.b, now, &mut p.mb);
    assert_eq!(lost.len(), 1);
    // The response is lost; the request times out and is resent (and duplicated).
    now = Instant(2_000_000);
    p.a.handle_timeout(now);
    let again = drain(&mut p.a, now, &mut p.ma);
    assert_eq!(again.len(), 1);
    p.b.handle_packet(now, 0, &again[0], &mut p.mb).unwrap();
    p.b.handle_packet(now, 0, &again[0], &mut p.mb).unwrap();
    for pkt in drain(&mut p.b, now, &mut p.mb) {
        p.a.handle_packet(now, 1, &pkt, &mut p.ma).unwrap();
    }
    assert_eq!(p.mb.word(WORD), 1, "executed exactly once");
    let (c, _) = events(&mut p.a);
    assert_eq!(c.len(), 1, "one completion: {c:?}");
    assert_eq!(p.ma.word(RESULT), 0);
}

#[test]
fn refused_atomics_write_nothing() {
    let mut p = pair();
    let now = Instant(0);
    let mut bad_key = req(&p, 1, AtomicOp::Swap(5));
    bad_key.rkey ^= 1;
    let mut outside = req(&p, 2, AtomicOp::Swap(5));
    outside.remote_addr = WORD + 4096;
    for r in [bad_key, outside] {
        p.a.post_atomic(now, r).unwrap();
    }
    let mut misaligned = req(&p, 3, AtomicOp::Swap(5));
    misaligned.remote_addr += 4;
    assert!(p.a.post_atomic(now, misaligned).is_err());
    for pkt in drain(&mut p.a, now, &mut p.ma) {
        p.b.handle_packet(now, 0, &pkt, &mut p.mb).unwrap();
    }
    for pkt in drain(&mut p.b, now, &mut p.mb) {
        p.a.handle_packet(now, 1, &pkt, &mut p.ma).unwrap();
    }
    let (c, _) = events(&mut p.a);
    assert_eq!(c.len(), 2);
    assert!(c
        .iter()
        .all(|c| c.status == Err(CompletionError::RemoteAccess)));
    assert!(p.mb.bytes.is_empty());
}

#[test]
fn missing_target_page_goes_through_the_fault_path_and_err() {
    let mut p = pair();
    p.mb.missing.insert(WORD);
    let now = Instant(0);
    p.a.post_atomic(now, req(&p, 1, AtomicOp::FetchAdd(3)))
        .unwrap();
    for pkt in drain(&mut p.a, now, &mut p.ma) {
        p.b.handle_packet(now, 0, &pkt, &mut p.mb).unwrap();
    }
    assert!(
        drain(&mut p.b, now, &mut p.mb).is_empty(),
        "no answer while the page is missing"
    );
    let (_, faults) = events(&mut p.b);
    assert_eq!(faults.len(), 1);
    assert_eq!(faults[0].block, ATOMIC_BLOCK);
    // The host pages the word in and asks for the retransmission.
    p.mb.missing.clear();
    p.b.post_err(faults[0].transfer, faults[0].block, faults[0].block_seq);
    for pkt in drain(&mut p.b, now, &mut p.mb) {
        p.a.handle_packet(now, 1, &pkt, &mut p.ma).unwrap();
    }
    // The ERR made A resend at once (no timeout needed).
    for pkt in drain(&mut p.a, now, &mut p.ma) {
        p.b.handle_packet(now, 0, &pkt, &mut p.mb).unwrap();
    }
    for pkt in drain(&mut p.b, now, &mut p.mb) {
        p.a.handle_packet(now, 1, &pkt, &mut p.ma).unwrap();
    }
    let (c, _) = events(&mut p.a);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].status, Ok(()));
    assert_eq!(p.mb.word(WORD), 3);
}

#[test]
fn silent_target_gives_retry_exceeded() {
    let mut p = pair();
    let mut now = Instant(0);
    p.a.post_atomic(now, req(&p, 1, AtomicOp::FetchAdd(1)))
        .unwrap();
    let _ = drain(&mut p.a, now, &mut p.ma);
    for _ in 0..100 {
        now += Duration::from_us(1000);
        p.a.handle_timeout(now);
        let _ = drain(&mut p.a, now, &mut p.ma);
    }
    let (c, _) = events(&mut p.a);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].status, Err(CompletionError::RetryExceeded));
    assert!(!p.a.is_busy());
}
