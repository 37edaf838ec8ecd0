//! PART engine packet input: an engine with one exposure and two posted operations (a write
//! and a read, so acknowledgements and read responses meet live transfers) is fed a sequence
//! of arbitrary packets, each followed by draining every transmit, event and timeout. It never
//! panics and never writes a byte outside its exposure (`unpinned_fuzz::Guarded` counts such writes;
//! the posted read's local buffer lies inside the exposure).
//!
//! Input: records of `[flags, len_hi, len_lo, bytes...]`. Flags bit 0: recompute the checksum;
//! bit 1: rewrite a data / read / atomic request's key and domain to the exposure's (so the
//! fuzzer passes the protection check); bit 2: use the checked path (`handle_packet`) instead
//! of the trusted one; bits 3..7: the source node (0 is the posts' peer).
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;
use unpinned_core::api::{Op, Perms, WorkRequest};
use unpinned_core::profile::Profile;
use unpinned_core::time::{Duration, Instant};
use unpinned_fuzz::Guarded;
use unpinned_part::{EngineConfig, PartEngine};
use unpinned_wire::part::seal;
use unpinned_wire::PartRepr;

const BASE: u64 = 0x4000_0000;
const LEN: u64 = 64 << 10;

/// Rewrite the key and domain of a request to the exposure's; other packets are left alone.
fn with_key(bytes: &[u8], key: u32) -> Option<Vec<u8>> {
    let repr = match PartRepr::parse_ignoring_checksum(bytes).ok()? {
        PartRepr::Data {
            transfer_id,
            block_id,
            block_seq,
            flags,
            offset,
            block_len,
            xfer_base,
            xfer_len,
            payload,
            ..
        } => PartRepr::Data {
            pdid: 1,
            rkey: key,
            transfer_id,
            block_id,
            block_seq,
            flags,
            offset,
            block_len,
            xfer_base,
            xfer_len,
            payload,
        },
        PartRepr::ReadReq {
            transfer_id,
            reply_pdid,
            remote_addr,
            local_addr,
            len,
            ..
        } => PartRepr::ReadReq {
            pdid: 1,
            rkey: key,
            transfer_id,
            reply_pdid,
            remote_addr,
            local_addr,
            len,
        },
        PartRepr::AtomicReq {
            transfer_id,
            kind,
            addr,
            operand,
            compare,
            ..
        } => PartRepr::AtomicReq {
            pdid: 1,
            rkey: key,
            transfer_id,
            kind,
            addr,
            operand,
            compare,
        },
        _ => return None,
    };
    let mut out = vec![0u8; repr.buffer_len()];
    let n = repr.emit(&mut out).ok()?;
    out.truncate(n);
    Some(out)
}

fn drain(e: &mut PartEngine, mem: &mut Guarded, now: Instant, buf: &mut [u8]) {
    for _ in 0..1_000 {
        if e.poll_transmit(now, buf, mem).is_none() {
            break;
        }
    }
    while e.poll_event().is_some() {}
}

fuzz_target!(|data: &[u8]| {
    // Parsing the built-in profile's TOML would dominate each run: do it once.
    static CONFIG: OnceLock<EngineConfig> = OnceLock::new();
    let cfg = CONFIG.get_or_init(|| EngineConfig::from_profile(&Profile::forth_arm().engine));
    let mut e = PartEngine::new(1, cfg.clone());
    let key = e.expose(1, BASE, LEN, Perms::RW).expect("expose");
    let mut mem = Guarded::new(BASE, LEN, LEN);
    let mut buf = vec![0u8; 1 << 16];
    let mut now = Instant(1_000);
    for (wr_id, op, local_addr) in [(1, Op::Write, BASE), (2, Op::Read, BASE + LEN / 2)] {
        let wr = WorkRequest {
            wr_id,
            op,
            peer: 0,
            local_pdid: 1,
            local_addr,
            remote_pdid: 1,
            remote_addr: 0x7000_0000,
            rkey: 7,
            len: 8 << 10,
        };
        e.post(now, wr).expect("post");
    }
    drain(&mut e, &mut mem, now, &mut buf);

    let mut rest = data;
    while let [flags, hi, lo, tail @ ..] = rest {
        let n = (usize::from(*hi) << 8 | usize::from(*lo)).min(tail.len());
        let (pkt, next) = tail.split_at(n);
        rest = next;
        let mut pkt = pkt.to_vec();
        if flags & 2 != 0 {
            if let Some(p) = with_key(&pkt, key) {
                pkt = p;
            }
        }
        if flags & 1 != 0 {
            seal(&mut pkt);
        }
        let src = u32::from(flags >> 3);
        now = Instant(now.0 + 1_000);
        if flags & 4 != 0 {
            let _ = e.handle_packet(now, src, &pkt, &mut mem);
        } else {
            let _ = e.handle_packet_intact(now, src, &pkt, &mut mem);
        }
        drain(&mut e, &mut mem, now, &mut buf);
        assert_eq!(mem.outside_writes, 0, "a write landed outside the exposure");
    }
    // Let every timer fire, then drain what they produced.
    for _ in 0..4 {
        now = Instant(now.0 + Duration::from_ms(50).as_ns());
        e.handle_timeout(now);
        drain(&mut e, &mut mem, now, &mut buf);
    }
    assert_eq!(mem.outside_writes, 0, "a write landed outside the exposure");
});
