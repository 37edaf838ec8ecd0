//! A sans-IO reproduction of a PART engine bug found by the live runtime's multi-process test
//! (read-backs failing with `RemoteAccess` when block timeouts fire under load).
//!
//! Transfer ids are allocated per engine from 1, so two ranks doing the same sequence of
//! operations use the same ids. When a read's initiator receives a late (timeout-retransmitted)
//! packet of a response after the read completed, it answers with a `Protection` NACK flagged
//! `read_response`. If the target has meanwhile finished that response (the ACK arrived), its
//! `on_nack` finds no transfer and treats the NACK as "my own read with this id was refused by
//! the peer": it fails the *target's own* pending read of the same numeric id to that peer with
//! `RemoteAccess`, although that read was never refused.
//!
//! Fixed in the engine: a read's target refuses a request with the NACK reason `ReadRefused`,
//! so a `Protection` NACK always comes from the receiver of data and can no longer be taken for
//! the refusal of one's own read. This test keeps the scenario as a regression test.

use std::collections::HashMap;

use unpinned_core::api::{Completion, CompletionError, Op, Perms, WorkRequest};
use unpinned_core::memory::{MemError, Memory, Pdid};
use unpinned_core::profile::Profile;
use unpinned_core::time::{Duration, Instant};
use unpinned_part::{EngineConfig, Event, PartEngine};

/// Every address readable and writable, bytes default to 0.
#[derive(Default)]
struct Flat(HashMap<u64, u8>);
impl Memory for Flat {
    fn write(&mut self, _: Pdid, addr: u64, data: &[u8]) -> Result<(), MemError> {
        for (i, b) in data.iter().enumerate() {
            self.0.insert(addr + i as u64, *b);
        }
        Ok(())
    }
    fn read(&mut self, _: Pdid, addr: u64, out: &mut [u8]) -> Result<(), MemError> {
        for (i, b) in out.iter_mut().enumerate() {
            *b = *self.0.get(&(addr + i as u64)).unwrap_or(&0);
        }
        Ok(())
    }
}

fn drain(e: &mut PartEngine, now: Instant, mem: &mut Flat) -> Vec<(u32, Vec<u8>)> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; 1024];
    while let Some(t) = e.poll_transmit(now, &mut buf, mem) {
        out.push((t.dst, buf[..t.len].to_vec()));
    }
    out
}

fn completions(e: &mut PartEngine) -> Vec<Completion> {
    let mut v = Vec::new();
    while let Some(ev) = e.poll_event() {
        if let Event::Completion(c) = ev {
            v.push(c);
        }
    }
    v
}

#[test]
fn late_response_nack_does_not_fail_the_targets_own_read() {
    scenario();
}

fn scenario() {
    let mut cfg = EngineConfig::from_profile(&Profile::forth_arm().engine);
    cfg.block_timeout = Some(Duration::from_us(1000));
    let (mut a, mut b) = (PartEngine::new(0, cfg.clone()), PartEngine::new(1, cfg));
    let (mut ma, mut mb) = (Flat::default(), Flat::default());
    let ka = a.expose(1, 0x10000, 0x1000, Perms::RW).unwrap();
    let kb = b.expose(1, 0x20000, 0x1000, Perms::RW).unwrap();
    let mut now = Instant(0);
    let rd = |wr_id, peer, local, remote, rkey| WorkRequest {
        wr_id,
        op: Op::Read,
        peer,
        local_pdid: 1,
        local_addr: local,
        remote_pdid: 1,
        remote_addr: remote,
        rkey,
        len: 256,
    };
    // Both engines post a read: both get transfer id 1.
    a.post(now, rd(100, 1, 0x30000, 0x20000, kb)).unwrap();
    b.post(now, rd(200, 0, 0x40000, 0x10000, ka)).unwrap();
    let a_req = drain(&mut a, now, &mut ma);
    let b_req = drain(&mut b, now, &mut mb); // held back: B's read stays pending at A's door
    assert_eq!((a_req.len(), b_req.len()), (1, 1));
    // B serves A's read: one data packet, delivered; A completes its read and ACKs.
    b.handle_packet(now, 0, &a_req[0].1, &mut mb).unwrap();
    let data = drain(&mut b, now, &mut mb);
    a.handle_packet(now, 1, &data[0].1, &mut ma).unwrap();
    assert!(completions(&mut a)
        .iter()
        .any(|c| c.wr_id == 100 && c.status.is_ok()));
    let ack = drain(&mut a, now, &mut ma);
    // The ACK is late: B's block timer fires first and B retransmits.
    now = Instant(2_000_000);
    b.handle_timeout(now);
    // (B's own read also times out and resends its request: keep only the data packet.)
    let again: Vec<_> = drain(&mut b, now, &mut mb)
        .into_iter()
        .filter(|(_, p)| p.len() > 100)
        .collect();
    assert_eq!(again.len(), 1);
    // Now the ACK arrives: B's response is finished.
    b.handle_packet(now, 0, &ack[0].1, &mut mb).unwrap();
    // The retransmitted packet reaches A after its read completed: A NACKs it.
    a.handle_packet(now, 1, &again[0].1, &mut ma).unwrap();
    let nack = drain(&mut a, now, &mut ma);
    for (_, p) in &nack {
        b.handle_packet(now, 0, p, &mut mb).unwrap();
    }
    // B's own read (id 1 too) was never refused by A: it must not have failed.
    let cb = completions(&mut b);
    assert!(
        !cb.iter().any(|c| c.wr_id == 200 && c.status == Err(CompletionError::RemoteAccess)),
        "B's pending read failed with RemoteAccess because of A's NACK of B's own late response: {cb:?}"
    );
}
