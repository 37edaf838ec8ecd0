//! Malformed and hostile packets thrown straight at an engine: it never panics, and it never
//! writes a byte outside what it exposed (checked by the memory below on every write).

use proptest::prelude::*;
use unpinned_core::api::Perms;
use unpinned_core::memory::{MemError, Memory, Pdid};
use unpinned_core::profile::Profile;
use unpinned_core::time::{Duration, Instant};
use unpinned_part::{EngineConfig, PartEngine};
use unpinned_wire::{DataFlags, PartRepr};

const BASE: u64 = 0x4000_0000;
const LEN: u64 = 64 << 10;

/// Flat memory covering [BASE - LEN, BASE + 2 LEN); every page present. Records any write
/// outside the exposed [BASE, BASE + LEN).
struct Guarded {
    bytes: Vec<u8>,
    outside_writes: usize,
}

impl Memory for Guarded {
    fn write(&mut self, pdid: Pdid, addr: u64, data: &[u8]) -> Result<(), MemError> {
        if pdid != 1 {
            return Err(MemError::NoSuchDomain(pdid));
        }
        let end = addr
            .checked_add(data.len() as u64)
            .ok_or(MemError::Unmapped { addr })?;
        if addr < BASE - LEN || end > BASE + 2 * LEN {
            return Err(MemError::Unmapped { addr });
        }
        if addr < BASE || end > BASE + LEN {
            self.outside_writes += 1;
        }
        let off = (addr - (BASE - LEN)) as usize;
        self.bytes[off..off + data.len()].copy_from_slice(data);
        Ok(())
    }
    fn read(&mut self, _pdid: Pdid, addr: u64, out: &mut [u8]) -> Result<(), MemError> {
        let end = addr
            .checked_add(out.len() as u64)
            .ok_or(MemError::Unmapped { addr })?;
        if addr < BASE - LEN || end > BASE + 2 * LEN {
            return Err(MemError::Unmapped { addr });
        }
        let off = (addr - (BASE - LEN)) as usize;
        out.copy_from_slice(&self.bytes[off..off + out.len()]);
        Ok(())
    }
}

fn engine() -> (PartEngine, u32, Guarded) {
    let mut e = PartEngine::new(1, EngineConfig::from_profile(&Profile::forth_arm().engine));
    let key = e.expose(1, BASE, LEN, Perms::RW).unwrap();
    (
        e,
        key,
        Guarded {
            bytes: vec![0; (3 * LEN) as usize],
            outside_writes: 0,
        },
    )
}

fn drain(e: &mut PartEngine, mem: &mut Guarded, now: Instant) {
    let mut buf = vec![0u8; 4096];
    for _ in 0..10_000 {
        if e.poll_transmit(now, &mut buf, mem).is_none() {
            break;
        }
    }
    while e.poll_event().is_some() {}
    e.handle_timeout(now + Duration::from_ms(100));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400), src in 0u32..4) {
        let (mut e, _key, mut mem) = engine();
        let _ = e.handle_packet(Instant(1), src, &bytes, &mut mem);
        drain(&mut e, &mut mem, Instant(2));
        prop_assert_eq!(mem.outside_writes, 0);
    }

    #[test]
    fn well_formed_hostile_data_never_writes_outside_the_exposure(
        right_key in any::<bool>(),
        pdid in 0u16..3,
        block_id in 0u32..8,
        block_seq in any::<u16>(),
        offset in 0u64..(LEN * 2),
        block_len in 0u32..40_000,
        base_off in -(LEN as i64)..(2 * LEN as i64),
        xfer_len in 0u64..(3 * LEN),
        plen in 0usize..600,
        read_response in any::<bool>(),
        (selective, poll) in any::<(bool, bool)>(),
    ) {
        let (mut e, key, mut mem) = engine();
        let payload = vec![0xabu8; plen];
        let repr = PartRepr::Data {
            pdid,
            rkey: if right_key { key } else { key ^ 0x55 },
            transfer_id: 9,
            block_id,
            block_seq,
            flags: DataFlags { read_response, selective, poll },
            offset,
            block_len,
            xfer_base: (BASE as i64 + base_off) as u64,
            xfer_len,
            payload: &payload,
        };
        let mut buf = vec![0u8; repr.buffer_len()];
        repr.emit(&mut buf).unwrap();
        let checked = e.handle_packet(Instant(1), 0, &buf, &mut mem);
        drain(&mut e, &mut mem, Instant(2));
        prop_assert_eq!(mem.outside_writes, 0);
        // The path that trusts the checksum (a driver's own intact link) decides exactly alike.
        let (mut e2, _, mut mem2) = engine();
        let trusted = e2.handle_packet_intact(Instant(1), 0, &buf, &mut mem2);
        drain(&mut e2, &mut mem2, Instant(2));
        prop_assert_eq!(checked, trusted);
        prop_assert_eq!(e.stats(), e2.stats());
        prop_assert!(mem.bytes == mem2.bytes);
    }

    #[test]
    fn random_bytes_never_panic_when_the_checksum_is_trusted(bytes in proptest::collection::vec(any::<u8>(), 0..400), src in 0u32..4) {
        let (mut e, _key, mut mem) = engine();
        let _ = e.handle_packet_intact(Instant(1), src, &bytes, &mut mem);
        drain(&mut e, &mut mem, Instant(2));
        prop_assert_eq!(mem.outside_writes, 0);
    }

    #[test]
    fn hostile_read_requests_never_read_outside_the_exposure(
        right_key in any::<bool>(),
        remote_off in -(LEN as i64)..(2 * LEN as i64),
        len in 0u64..(3 * LEN),
    ) {
        let (mut e, key, mut mem) = engine();
        let repr = PartRepr::ReadReq {
            pdid: 1,
            rkey: if right_key { key } else { key ^ 3 },
            transfer_id: 5,
            reply_pdid: 1,
            remote_addr: (BASE as i64 + remote_off) as u64,
            local_addr: 0x9000_0000,
            len,
        };
        let mut buf = vec![0u8; repr.buffer_len()];
        repr.emit(&mut buf).unwrap();
        let _ = e.handle_packet(Instant(1), 0, &buf, &mut mem);
        // Whatever the engine sends back must carry only exposed bytes: a response exists only
        // if the whole range is inside the exposure.
        let mut out = vec![0u8; 4096];
        while let Some(tx) = e.poll_transmit(Instant(2), &mut out, &mut mem) {
            if let Ok(PartRepr::Data { offset, payload, .. }) = PartRepr::parse(&out[..tx.len]) {
                let addr = (BASE as i64 + remote_off) as u64 + offset;
                prop_assert!(addr >= BASE && addr + payload.len() as u64 <= BASE + LEN, "read response leaked {addr:#x}");
            }
        }
    }
}
