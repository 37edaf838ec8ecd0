//! Requests ended from outside the protocol: `cancel` completes every request of the node once
//! with `Cancelled` and the engine never touches their buffers again, whatever arrives later;
//! `fail_peer` ends the requests towards one peer with the host's error.

use unpinned_core::api::{AtomicOp, Completion, CompletionError, Op, Perms, WorkRequest};
use unpinned_core::memory::{MemError, Memory, Pdid};
use unpinned_core::profile::Profile;
use unpinned_core::time::{Duration, Instant};
use unpinned_part::{AtomicRequest, EngineConfig, Event, PartEngine};

const BASE: u64 = 0x1000_0000;
const LEN: u64 = 1 << 20;

/// Flat memory at [BASE, BASE + LEN); after `free`, any access to [freed.0, freed.1) panics
/// (the stand-in for a SIGSEGV on memory the application gave back).
struct Flat {
    bytes: Vec<u8>,
    freed: Option<(u64, u64)>,
}

impl Flat {
    fn new(fill: u8) -> Flat {
        Flat {
            bytes: vec![fill; LEN as usize],
            freed: None,
        }
    }
    fn touch(&self, addr: u64, len: usize) {
        if let Some((s, e)) = self.freed {
            assert!(
                addr + len as u64 <= s || addr >= e,
                "access to freed memory [{addr:#x}, +{len})"
            );
        }
    }
}

impl Memory for Flat {
    fn write(&mut self, _: Pdid, addr: u64, data: &[u8]) -> Result<(), MemError> {
        self.touch(addr, data.len());
        let off = addr.checked_sub(BASE).ok_or(MemError::Unmapped { addr })? as usize;
        let dst = self
            .bytes
            .get_mut(off..off + data.len())
            .ok_or(MemError::Unmapped { addr })?;
        dst.copy_from_slice(data);
        Ok(())
    }
    fn read(&mut self, _: Pdid, addr: u64, out: &mut [u8]) -> Result<(), MemError> {
        self.touch(addr, out.len());
        let off = addr.checked_sub(BASE).ok_or(MemError::Unmapped { addr })? as usize;
        let src = self
            .bytes
            .get(off..off + out.len())
            .ok_or(MemError::Unmapped { addr })?;
        out.copy_from_slice(src);
        Ok(())
    }
}

fn config() -> EngineConfig {
    let mut c = EngineConfig::from_profile(&Profile::forth_arm().engine);
    c.max_timeouts = 3;
    c.block_timeout = Some(Duration::from_us(1000));
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

/// Move every packet between the two engines at `now` until both are quiet, at most `rounds`
/// rounds (`limit` packets per direction per round).
fn exchange(
    a: &mut PartEngine,
    b: &mut PartEngine,
    ma: &mut Flat,
    mb: &mut Flat,
    now: Instant,
    rounds: usize,
    limit: usize,
) {
    let mut buf = vec![0u8; 1 << 16];
    for _ in 0..rounds {
        let mut moved = false;
        for _ in 0..limit {
            let Some(t) = a.poll_transmit(now, &mut buf, ma) else {
                break;
            };
            let _ = b.handle_packet(now, 0, &buf[..t.len], mb);
            moved = true;
        }
        for _ in 0..limit {
            let Some(t) = b.poll_transmit(now, &mut buf, mb) else {
                break;
            };
            let _ = a.handle_packet(now, 1, &buf[..t.len], ma);
            moved = true;
        }
        if !moved {
            break;
        }
    }
}

fn wr(wr_id: u64, op: Op, local: u64, remote: u64, key: u32, len: u64) -> WorkRequest {
    WorkRequest {
        wr_id,
        op,
        peer: 1,
        local_pdid: 1,
        local_addr: local,
        remote_pdid: 1,
        remote_addr: remote,
        rkey: key,
        len,
    }
}

#[test]
fn cancel_completes_each_request_once_and_never_touches_its_buffers_again() {
    let (mut a, mut b) = (PartEngine::new(0, config()), PartEngine::new(1, config()));
    let key = b.expose(1, BASE, LEN, Perms::RW).unwrap();
    let (mut ma, mut mb) = (Flat::new(7), Flat::new(0));
    let half = LEN / 2;
    // Writes from the first half of A's memory, reads into the second half, one atomic.
    let mut ids = Vec::new();
    for i in 0..8u64 {
        let w = wr(
            i + 1,
            Op::Write,
            BASE + i * 65536,
            BASE + i * 65536,
            key,
            65536,
        );
        a.post(Instant(0), w).unwrap();
        ids.push(i + 1);
    }
    for i in 0..4u64 {
        let r = wr(20 + i, Op::Read, BASE + half + i * 65536, BASE, key, 65536);
        a.post(Instant(0), r).unwrap();
        ids.push(20 + i);
    }
    a.post_atomic(
        Instant(0),
        AtomicRequest {
            wr_id: 30,
            peer: 1,
            op: AtomicOp::FetchAdd(1),
            remote_pdid: 1,
            remote_addr: BASE,
            rkey: key,
            local_pdid: 1,
            local_addr: BASE + LEN - 8,
        },
    )
    .unwrap();
    ids.push(30);
    // Part of the traffic flows; some requests may finish before the cancel.
    exchange(&mut a, &mut b, &mut ma, &mut mb, Instant(10), 2, 3);
    let mut done = completions(&mut a);
    let n = a.cancel(Instant(20), |_| true);
    let cancelled = completions(&mut a);
    assert_eq!(n, cancelled.len());
    assert!(n > 0, "the cancel came while requests were in flight");
    assert!(cancelled
        .iter()
        .all(|c| c.status == Err(CompletionError::Cancelled) && c.len == 0));
    done.extend(cancelled);
    // The application frees every buffer of its requests.
    ma.freed = Some((BASE, BASE + LEN));
    // Everything still in flight arrives; timers fire; nothing touches A's memory, no request
    // completes again.
    for t in 1..50u64 {
        let now = Instant(20 + t * 1_000_000);
        exchange(&mut a, &mut b, &mut ma, &mut mb, now, 1000, 64);
        a.handle_timeout(now);
        b.handle_timeout(now);
    }
    exchange(&mut a, &mut b, &mut ma, &mut mb, Instant(1 << 40), 1000, 64);
    done.extend(completions(&mut a));
    let mut seen: Vec<u64> = done.iter().map(|c| c.wr_id).collect();
    seen.sort_unstable();
    assert_eq!(seen, ids, "every request completed exactly once");
    assert!(done
        .iter()
        .all(|c| c.status.is_ok() || c.status == Err(CompletionError::Cancelled)));
    assert!(!a.is_busy(), "{}", a.debug_summary());
}

#[test]
fn fail_peer_ends_the_requests_towards_it_only() {
    let mut a = PartEngine::new(0, config());
    let key = 0x1234;
    a.post(Instant(0), wr(1, Op::Write, BASE, BASE, key, 65536))
        .unwrap();
    a.post(Instant(0), wr(2, Op::Read, BASE, BASE, key, 4096))
        .unwrap();
    let mut other = wr(3, Op::Write, BASE, BASE, key, 4096);
    other.peer = 2;
    a.post(Instant(0), other).unwrap();
    assert_eq!(a.fail_peer(Instant(5), 1, CompletionError::PeerGone), 2);
    let c = completions(&mut a);
    assert_eq!(c.len(), 2);
    assert!(c
        .iter()
        .all(|c| c.wr_id != 3 && c.status == Err(CompletionError::PeerGone)));
    assert!(a.is_busy(), "the write to node 2 goes on");
    // The cancel of what is left reaches only node 2's write.
    assert_eq!(a.cancel(Instant(6), |id| id == 3), 1);
    assert_eq!(completions(&mut a)[0].wr_id, 3);
}
