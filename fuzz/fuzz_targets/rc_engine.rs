//! RC engine packet input (crates/ib): an engine with a pinned and an ODP region and one
//! connected QP with live requests of every kind (a READ, a WRITE, a SEND and two receive
//! buffers) is fed a sequence of arbitrary packets, each followed by draining every transmit
//! and event (page faults are resolved at once). It never panics, never writes a byte outside
//! its registered regions (`unpinned_fuzz::Guarded` counts such writes) and completes each
//! posted request at most once.
//!
//! Input: a first byte choosing the vendor profile (bits 0-1: connectx3..6) and whether its
//! ODP loss model is on (bit 2), then records of `[flags, len_hi, len_lo, bytes...]`.
//! Flags bit 0: recompute the ICRC; bit 1: rewrite the destination QP to the engine's and a
//! request's rkey to a region's (bit 2: the ODP region's, else the pinned one's), so the
//! fuzzer passes the QP and protection checks; bits 3..7: the source node (1 is the peer).
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::collections::HashMap;
use std::sync::OnceLock;
use unpinned_core::api::Perms;
use unpinned_core::time::{Duration, Instant};
use unpinned_fuzz::{seal_rc, Guarded};
use unpinned_ib::{
    ConnectAttrs, Event, IbOp, LossModelConfig, MrAttrs, Psn, QpAttrs, RcConfig, RcEngine, RecvWr,
    Region, SendWr, VendorProfile,
};
use unpinned_wire::rc::RcRepr;

const BASE: u64 = 0x4000_0000;
const LEN: u64 = 64 << 10;
const PEER: u32 = 1;
const PEER_QPN: u32 = 0x100;

/// Rewrite the destination QP (and a request's rkey) so the packet reaches the QP's checks.
fn redirect(bytes: &[u8], qpn: u32, rkey: u32) -> Option<Vec<u8>> {
    let repr = match RcRepr::parse(bytes).ok()? {
        RcRepr::ReadReq { psn, va, len, .. } => RcRepr::ReadReq {
            dest_qpn: qpn,
            psn,
            va,
            rkey,
            len,
        },
        RcRepr::Write {
            psn, va, payload, ..
        } => RcRepr::Write {
            dest_qpn: qpn,
            psn,
            va,
            rkey,
            payload,
        },
        RcRepr::Send { psn, payload, .. } => RcRepr::Send {
            dest_qpn: qpn,
            psn,
            payload,
        },
        RcRepr::ReadResp {
            psn, msn, payload, ..
        } => RcRepr::ReadResp {
            dest_qpn: qpn,
            psn,
            msn,
            payload,
        },
        RcRepr::Ack {
            psn, msn, syndrome, ..
        } => RcRepr::Ack {
            dest_qpn: qpn,
            psn,
            msn,
            syndrome,
        },
    };
    let mut out = vec![0u8; repr.buffer_len()];
    let n = repr.emit(&mut out).ok()?;
    out.truncate(n);
    Some(out)
}

/// Completions seen per posted wr_id.
struct Seen(HashMap<u64, u32>);

fn drain(e: &mut RcEngine, mem: &mut Guarded, now: Instant, buf: &mut [u8], seen: &mut Seen) {
    for _ in 0..64 {
        for _ in 0..1_000 {
            if e.poll_transmit(now, buf, mem).is_none() {
                break;
            }
        }
        let mut resolved = false;
        while let Some(ev) = e.poll_event() {
            match ev {
                Event::Completion(c) => {
                    let n = seen
                        .0
                        .get_mut(&c.wr_id)
                        .expect("a completion of a posted request");
                    *n += 1;
                    assert_eq!(*n, 1, "request {} completed twice", c.wr_id);
                }
                Event::PageFault(f) => {
                    e.handle_page_resolved(now, f.pdid, f.page);
                    resolved = true;
                }
            }
        }
        if !resolved {
            break;
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&setup, mut rest)) = data.split_first() else {
        return;
    };
    // Parsing the vendor profiles' TOML would dominate each run: do it once.
    static PROFILES: OnceLock<Vec<VendorProfile>> = OnceLock::new();
    let profiles = PROFILES.get_or_init(VendorProfile::all_builtin);
    let mut cfg = RcConfig::from_profile(&profiles[usize::from(setup & 3) % profiles.len()]);
    if setup & 4 == 0 {
        cfg.loss_model = LossModelConfig::OFF;
    }
    let mut e = RcEngine::new(0, cfg, 1);
    let mut keys = [0u32; 2];
    for (i, (base, odp)) in [(BASE, false), (BASE + LEN, true)].into_iter().enumerate() {
        let mr = e
            .register_mr(MrAttrs {
                pdid: 1,
                region: Region::Explicit { base, len: LEN },
                access: Perms::RW,
                odp,
            })
            .expect("register");
        keys[i] = mr.rkey;
    }
    let q = e.create_qp(QpAttrs::odp_default(1));
    e.connect(
        q,
        ConnectAttrs {
            peer_node: PEER,
            peer_qpn: PEER_QPN,
            sq_psn: Psn::new(0),
            rq_psn: Psn::new(0),
        },
    )
    .expect("connect");
    let mut mem = Guarded::new(BASE, 2 * LEN, LEN);
    let mut seen = Seen(HashMap::new());
    let mut now = Instant(1_000);
    let mtu = cfg.mtu.min(512);
    for (wr_id, addr) in [(10, BASE + 0x8000), (11, BASE + LEN + 0x8000)] {
        e.post_recv(
            now,
            q,
            RecvWr {
                wr_id,
                addr,
                len: mtu,
            },
        )
        .expect("post_recv");
        seen.0.insert(wr_id, 0);
    }
    for (wr_id, op, local_addr) in [
        (1, IbOp::Read, BASE + LEN + 0x100),
        (2, IbOp::Write, BASE + 0x100),
        (3, IbOp::Send, BASE + 0x200),
    ] {
        let wr = SendWr {
            wr_id,
            op,
            local_addr,
            len: mtu,
            remote_addr: 0x9000,
            rkey: 5,
        };
        e.post_send(now, q, wr).expect("post_send");
        seen.0.insert(wr_id, 0);
    }
    let mut buf = vec![0u8; cfg.mtu as usize + 64];
    drain(&mut e, &mut mem, now, &mut buf, &mut seen);

    while let [flags, hi, lo, tail @ ..] = rest {
        let n = (usize::from(*hi) << 8 | usize::from(*lo)).min(tail.len());
        let (pkt, next) = tail.split_at(n);
        rest = next;
        let mut pkt = pkt.to_vec();
        if flags & 1 != 0 {
            seal_rc(&mut pkt);
        }
        if flags & 2 != 0 {
            if let Some(p) = redirect(&pkt, q, keys[usize::from(flags >> 2 & 1)]) {
                pkt = p;
            }
        }
        let src = u32::from(flags >> 3) ^ PEER;
        now = Instant(now.0 + 1_000);
        e.handle_packet(now, src, &pkt, &mut mem);
        drain(&mut e, &mut mem, now, &mut buf, &mut seen);
        assert_eq!(mem.outside_writes, 0, "a write landed outside the regions");
    }
    // Let the timers run (retransmissions, RNR waits, retry exhaustion), bounded.
    for _ in 0..64 {
        let Some(t) = e.poll_timeout() else { break };
        now = Instant(now.0.max(t.0) + Duration::from_us(1).as_ns());
        e.handle_timeout(now);
        drain(&mut e, &mut mem, now, &mut buf, &mut seen);
    }
    assert_eq!(mem.outside_writes, 0, "a write landed outside the regions");
});
