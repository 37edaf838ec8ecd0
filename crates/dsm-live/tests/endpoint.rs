//! The mailbox sends of the live DSM between two live runtimes in this process (shm): FIFO
//! order across ring wrap-around under credit flow control, data before its notice, and a
//! hostile slot rejected with a typed error.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use unpinned_dsm_live::endpoint::Endpoint;
use unpinned_dsm_live::wire::{encode, WireMsg};
use unpinned_dsm_live::DsmLiveError;
use unpinned_live::transport::shm::{create_segment, ShmGeometry, ShmTransport};
use unpinned_live::{Config, Runtime};
use unpinned_os::mapping::Mapping;

static N: AtomicU32 = AtomicU32::new(0);

/// Two endpoints; rank r exposes `data[r]` (if any) as its data range.
fn pair(data: [Option<(u64, usize)>; 2]) -> (Endpoint, Endpoint, PathBuf) {
    let dir = PathBuf::from(format!(
        "/dev/shm/unpinned-dsmep-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let seg = dir.join("segment");
    let mut cfgs: Vec<Config> = (0..2).map(|r| Config::new(r, 2)).collect();
    for c in &mut cfgs {
        c.bootstrap_dir = Some(dir.clone());
    }
    create_segment(&seg, ShmGeometry::new(2, cfgs[0].max_packet(), 512)).unwrap();
    let hs: Vec<_> = cfgs
        .into_iter()
        .map(|c| {
            let seg = seg.clone();
            let (base, len) = data[c.rank as usize].unwrap_or((0, 0));
            std::thread::spawn(move || {
                let t = ShmTransport::open(&seg, c.rank).unwrap();
                Endpoint::new(Runtime::new(c, Box::new(t)).unwrap(), base, len, 16).unwrap()
            })
        })
        .collect();
    let mut eps: Vec<Endpoint> = hs.into_iter().map(|h| h.join().unwrap()).collect();
    let b = eps.pop().unwrap();
    (eps.pop().unwrap(), b, dir)
}

fn until(what: &str, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "timed out waiting for {what}"
        );
        std::thread::yield_now();
    }
}

#[test]
fn many_messages_arrive_in_order_through_wrap_around_and_credits() {
    let (a, b, dir) = pair([None, None]);
    // 16 slots per ring: 200 messages wrap it 12 times and need credits back from b.
    for seq in 0..200u64 {
        a.send(1, WireMsg::Ping { seq });
    }
    let mut got = Vec::new();
    until("200 pings", || {
        a.progress();
        b.progress();
        b.handle_pending(|from, m| {
            assert_eq!(from, 0);
            got.push(m)
        });
        got.len() == 200
    });
    let want: Vec<WireMsg> = (0..200).map(|seq| WireMsg::Ping { seq }).collect();
    assert_eq!(got, want);
    assert!(a.failure().is_none() && b.failure().is_none());
    until("sends drained", || {
        a.progress();
        b.progress();
        !a.busy()
    });
    drop((a, b));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn data_lands_before_its_notice() {
    let src = Mapping::anon(4 * 4096).unwrap();
    let dst = Mapping::anon(4 * 4096).unwrap();
    let (a, b, dir) = pair([Some((src.addr(), src.len())), Some((dst.addr(), dst.len()))]);
    for round in 0..20u8 {
        // SAFETY: our mapping; no transfer from it is in flight between rounds.
        unsafe { src.as_mut_slice()[4096..4096 + 3000].fill(round + 1) };
        a.send_data(1, 4096, 3000, WireMsg::Ping { seq: round as u64 });
        let mut seen = false;
        until("the notice", || {
            a.progress();
            b.handle_pending(|_, m| {
                assert_eq!(m, WireMsg::Ping { seq: round as u64 });
                // SAFETY: the data write completed before the notice was posted.
                let d = unsafe { &dst.as_slice()[4096..4096 + 3000] };
                assert!(
                    d.iter().all(|&x| x == round + 1),
                    "notice before its data in round {round}"
                );
                seen = true;
            });
            seen
        });
    }
    // Outside the peer's data range: a typed failure, no write.
    a.send_data(1, 3 * 4096, 8192, WireMsg::Ping { seq: 99 });
    assert!(
        matches!(a.failure(), Some(DsmLiveError::Refused(_))),
        "{:?}",
        a.failure()
    );
    drop((a, b));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_hostile_slot_is_a_typed_error_not_a_panic() {
    let (a, b, dir) = pair([None, None]);
    let (mbox, key) = a.mailbox_of(1).unwrap();
    // Slot 1 of rank 0's ring at rank 1, well formed except for an unknown tag.
    let mut slot = encode(1, &WireMsg::Ping { seq: 1 });
    slot[8] = 0xee;
    let check = xxhash_rust::xxh3::xxh3_64(&slot[..56]);
    slot[56..].copy_from_slice(&check.to_le_bytes());
    a.runtime().write_blocking(1, &slot, mbox, key).unwrap();
    let mut handled = 0;
    until("the slot", || {
        b.handle_pending(|_, _| handled += 1);
        b.failure().is_some()
    });
    assert_eq!(handled, 0);
    match b.failure() {
        Some(DsmLiveError::Malformed { from: 0, why }) => {
            assert!(why.contains("unknown message tag 238"), "{why}")
        }
        other => panic!("expected a malformed-message error, got {other:?}"),
    }
    drop((a, b));
    let _ = std::fs::remove_dir_all(dir);
}
