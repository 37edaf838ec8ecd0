//! Unit tests of the engine's NAK handling and ACK timer, packets fed by hand.

use rustc_hash::FxHashMap;
use unpinned_core::api::Perms;
use unpinned_core::memory::{MemError, Memory, Pdid};
use unpinned_core::time::{Duration, Instant};
use unpinned_wire::rc::{NakCode, RcRepr, Syndrome};

use crate::*;

/// Byte-addressed memory, zero where never written.
#[derive(Default)]
struct Mem(FxHashMap<(Pdid, u64), u8>);
impl Memory for Mem {
    fn write(&mut self, pdid: Pdid, addr: u64, data: &[u8]) -> Result<(), MemError> {
        for (i, b) in data.iter().enumerate() {
            self.0.insert((pdid, addr + i as u64), *b);
        }
        Ok(())
    }
    fn read(&mut self, pdid: Pdid, addr: u64, out: &mut [u8]) -> Result<(), MemError> {
        for (i, b) in out.iter_mut().enumerate() {
            *b = *self.0.get(&(pdid, addr + i as u64)).unwrap_or(&0);
        }
        Ok(())
    }
}

fn cfg(loss: bool) -> RcConfig {
    let mut c = RcConfig::from_profile(&VendorProfile::builtin("connectx4"));
    if !loss {
        c.loss_model = LossModelConfig::OFF;
    }
    c
}

/// A requester engine with one connected QP (peer node 1, QP 0x100) and a pinned buffer.
fn requester(loss: bool) -> (RcEngine, Qpn) {
    let mut e = RcEngine::new(0, cfg(loss), 1);
    e.register_mr(MrAttrs {
        pdid: 1,
        region: Region::Explicit {
            base: 0x1000,
            len: 0x10000,
        },
        access: Perms::RW,
        odp: false,
    });
    let q = e.create_qp(QpAttrs::odp_default(1));
    e.connect(
        q,
        ConnectAttrs {
            peer_node: 1,
            peer_qpn: 0x100,
            sq_psn: Psn::new(0xff_fffe),
            rq_psn: Psn::new(0),
        },
    )
    .unwrap();
    (e, q)
}

fn read(id: u64) -> SendWr {
    SendWr {
        wr_id: id,
        op: IbOp::Read,
        local_addr: 0x1000 + id * 100,
        len: 100,
        remote_addr: 0x9000,
        rkey: 5,
    }
}

/// Drain transmissions: (opcode name, psn).
fn sent(e: &mut RcEngine, now: Instant, mem: &mut Mem) -> Vec<(String, u32)> {
    let mut buf = vec![0u8; 5000];
    let mut v = Vec::new();
    while let Some(t) = e.poll_transmit(now, &mut buf, mem) {
        let r = RcRepr::parse(&buf[..t.len]).unwrap();
        let name = match r {
            RcRepr::ReadReq { .. } => "read",
            RcRepr::Write { .. } => "write",
            RcRepr::Send { .. } => "send",
            RcRepr::ReadResp { .. } => "resp",
            RcRepr::Ack { .. } => "ack",
        };
        v.push((name.to_string(), r.qpn_psn().1));
    }
    v
}

fn feed(e: &mut RcEngine, now: Instant, repr: RcRepr<'_>, mem: &mut Mem) {
    let mut b = vec![0u8; repr.buffer_len()];
    repr.emit(&mut b).unwrap();
    e.handle_packet(now, 1, &b, mem);
}

fn completions(e: &mut RcEngine) -> Vec<(u64, Result<(), WcError>)> {
    let mut v = Vec::new();
    while let Some(ev) = e.poll_event() {
        if let Event::Completion(c) = ev {
            v.push((c.wr_id, c.status));
        }
    }
    v
}

#[test]
fn seq_nak_rewinds_to_the_expected_psn_across_the_wrap() {
    let (mut e, q) = requester(false);
    let mut m = Mem::default();
    for i in 1..=3 {
        e.post_send(Instant(0), q, read(i)).unwrap();
    }
    assert_eq!(
        sent(&mut e, Instant(0), &mut m),
        vec![
            ("read".into(), 0xff_fffe),
            ("read".into(), 0xff_ffff),
            ("read".into(), 0)
        ]
    );
    // Response to READ 1, then a sequence-error NAK at READ 2's PSN: go-back-N from READ 2.
    let data = [7u8; 100];
    feed(
        &mut e,
        Instant(10),
        RcRepr::ReadResp {
            dest_qpn: q,
            psn: 0xff_fffe,
            msn: 1,
            payload: &data,
        },
        &mut m,
    );
    feed(
        &mut e,
        Instant(11),
        RcRepr::Ack {
            dest_qpn: q,
            psn: 0xff_ffff,
            msn: 1,
            syndrome: Syndrome::Nak(NakCode::PsnSequenceError),
        },
        &mut m,
    );
    assert_eq!(
        sent(&mut e, Instant(12), &mut m),
        vec![("read".into(), 0xff_ffff), ("read".into(), 0)]
    );
    assert_eq!(completions(&mut e), vec![(1, Ok(()))]);
    // A response for PSN 0 (READ 3) while READ 2's is missing: implied NAK, resend from READ 2.
    feed(
        &mut e,
        Instant(20),
        RcRepr::ReadResp {
            dest_qpn: q,
            psn: 0,
            msn: 3,
            payload: &data,
        },
        &mut m,
    );
    assert_eq!(
        sent(&mut e, Instant(21), &mut m),
        vec![("read".into(), 0xff_ffff), ("read".into(), 0)]
    );
    feed(
        &mut e,
        Instant(30),
        RcRepr::ReadResp {
            dest_qpn: q,
            psn: 0xff_ffff,
            msn: 2,
            payload: &data,
        },
        &mut m,
    );
    feed(
        &mut e,
        Instant(31),
        RcRepr::ReadResp {
            dest_qpn: q,
            psn: 0,
            msn: 3,
            payload: &data,
        },
        &mut m,
    );
    // A stale duplicate changes nothing.
    feed(
        &mut e,
        Instant(32),
        RcRepr::ReadResp {
            dest_qpn: q,
            psn: 0,
            msn: 3,
            payload: &data,
        },
        &mut m,
    );
    assert_eq!(completions(&mut e), vec![(2, Ok(())), (3, Ok(()))]);
    let mut got = [0u8; 100];
    m.read(1, 0x1000 + 300, &mut got).unwrap();
    assert_eq!(got, data);
}

#[test]
fn rnr_nak_waits_factor_times_the_delay_then_replays() {
    let (mut e, q) = requester(false);
    let mut m = Mem::default();
    e.post_send(Instant(0), q, read(1)).unwrap();
    sent(&mut e, Instant(0), &mut m);
    feed(
        &mut e,
        Instant(5_000),
        RcRepr::Ack {
            dest_qpn: q,
            psn: 0xff_fffe,
            msn: 0,
            syndrome: Syndrome::RnrNak { timer: 14 },
        },
        &mut m,
    );
    e.post_send(Instant(6_000), q, read(2)).unwrap();
    assert!(
        sent(&mut e, Instant(6_000), &mut m).is_empty(),
        "nothing goes out during the RNR wait"
    );
    // 1.28 ms * 3.
    let until = Instant(5_000) + Duration::from_us(3840);
    let mut t = e.poll_timeout().unwrap();
    while t < until {
        e.handle_timeout(t);
        t = e.poll_timeout().unwrap();
    }
    assert_eq!(t, until);
    e.handle_timeout(t);
    assert_eq!(
        sent(&mut e, t, &mut m),
        vec![("read".into(), 0xff_fffe), ("read".into(), 0xff_ffff)],
        "replay, then READ 2 back-to-back"
    );
}

#[test]
fn remote_access_nak_fails_the_qp_and_flushes() {
    let (mut e, q) = requester(false);
    let mut m = Mem::default();
    e.post_send(Instant(0), q, read(1)).unwrap();
    e.post_send(Instant(0), q, read(2)).unwrap();
    sent(&mut e, Instant(0), &mut m);
    feed(
        &mut e,
        Instant(9),
        RcRepr::Ack {
            dest_qpn: q,
            psn: 0xff_fffe,
            msn: 0,
            syndrome: Syndrome::Nak(NakCode::RemoteAccessError),
        },
        &mut m,
    );
    e.post_send(Instant(10), q, read(3)).unwrap();
    assert_eq!(
        completions(&mut e),
        vec![
            (1, Err(WcError::RemoteAccess)),
            (2, Err(WcError::Flushed)),
            (3, Err(WcError::Flushed))
        ]
    );
}

#[test]
fn ack_timer_expires_within_t_tr_and_2_t_tr_then_every_2_t_tr_and_fails_after_retries() {
    for seed in 0..20 {
        let mut e = RcEngine::new(0, cfg(false), seed);
        e.register_mr(MrAttrs {
            pdid: 1,
            region: Region::Explicit {
                base: 0x1000,
                len: 0x10000,
            },
            access: Perms::RW,
            odp: false,
        });
        let q = e.create_qp(QpAttrs::odp_default(1));
        e.connect(
            q,
            ConnectAttrs {
                peer_node: 1,
                peer_qpn: 0x100,
                sq_psn: Psn::new(0),
                rq_psn: Psn::new(0),
            },
        )
        .unwrap();
        let mut m = Mem::default();
        let t0 = Instant(1_000_000_000);
        e.post_send(t0, q, read(1)).unwrap();
        assert_eq!(sent(&mut e, t0, &mut m).len(), 1);
        let t_tr = crate::ack_timer::t_tr(16).unwrap();
        let mut sends = vec![t0];
        let mut done = None;
        while let Some(t) = e.poll_timeout() {
            e.handle_timeout(t);
            let s = sent(&mut e, t, &mut m);
            if !s.is_empty() {
                sends.push(t);
            }
            if let Some((1, st)) = completions(&mut e).first().copied() {
                done = Some((t, st));
                break;
            }
        }
        let (end, status) = done.expect("completes");
        assert_eq!(status, Err(WcError::RetryExceeded));
        assert_eq!(sends.len(), 8, "first send + 7 retries");
        let first = sends[1] - sends[0];
        assert!(
            first > t_tr && first <= t_tr.times(2),
            "first T_o {first:?}"
        );
        for w in sends.windows(2).skip(1) {
            assert_eq!(w[1] - w[0], t_tr.times(2));
        }
        assert_eq!(end - sends[7], t_tr.times(2));
    }
}

#[test]
fn responder_nak_once_per_sequence_error_and_rnr_on_fault() {
    let mut e = RcEngine::new(1, cfg(false), 1);
    let mr = e
        .register_mr(MrAttrs {
            pdid: 1,
            region: Region::Implicit,
            access: Perms::RW,
            odp: true,
        })
        .unwrap();
    let q = e.create_qp(QpAttrs::odp_default(1));
    e.connect(
        q,
        ConnectAttrs {
            peer_node: 1,
            peer_qpn: 0x100,
            sq_psn: Psn::new(0),
            rq_psn: Psn::new(10),
        },
    )
    .unwrap();
    let mut m = Mem::default();
    let rr = |psn| RcRepr::ReadReq {
        dest_qpn: q,
        psn,
        va: 0x5000,
        rkey: mr.rkey,
        len: 8,
    };
    feed(&mut e, Instant(0), rr(10), &mut m);
    assert!(matches!(
        e.poll_event(),
        Some(Event::PageFault(PageFault {
            side: FaultSide::Responder,
            page: 0x5000,
            ..
        }))
    ));
    feed(&mut e, Instant(10_000), rr(11), &mut m); // dropped: RNR pending
    assert_eq!(
        sent(&mut e, Instant(10_000), &mut m),
        vec![("ack".into(), 10)],
        "one RNR NAK"
    );
    e.handle_page_resolved(Instant(20_000), 1, 0x5000);
    feed(&mut e, Instant(30_000), rr(10), &mut m);
    feed(&mut e, Instant(40_000), rr(12), &mut m);
    feed(&mut e, Instant(50_000), rr(13), &mut m);
    assert_eq!(
        sent(&mut e, Instant(50_000), &mut m),
        vec![("resp".into(), 10), ("ack".into(), 11)],
        "response, then a single NAK"
    );
    // After invalidation the page faults again.
    assert!(e.invalidate(1, 0x5000));
    feed(&mut e, Instant(60_000), rr(11), &mut m);
    assert_eq!(
        sent(&mut e, Instant(60_000), &mut m),
        vec![("ack".into(), 11)]
    );
    assert!(!e.is_mapped(1, 0x5000));
}
