//! Compact storage of packets on the links.
//!
//! A packet waiting at a port holds a link buffer. Buffers are sized for the largest data
//! packet (16 KiB at the scale packet size), but most packets are far smaller (ACK, NACK, ERR,
//! read requests: under 64 bytes; the message layer's doorbells: under 100), and runs that do not keep payload bytes (application runs at
//! scale: `SimMemory::keep_bytes_only`) send data packets whose payload reads as zeros. Many-to-
//! one traffic at thousands of nodes queues many packets, so such packets are kept compactly:
//! small ones as they are, zero-payload data packets as their header and CRC, expanded into a
//! zeroed scratch buffer when they arrive. The receiving engine sees exactly the bytes the
//! sender emitted, so no event or result changes.

use unpinned_wire::part::DATA_HEADER_LEN;

/// Length of the trailing CRC of every PART packet.
const CRC_LEN: usize = 4;

/// Bytes of a data packet before its payload (the header without the CRC).
pub const DATA_PAYLOAD_AT: usize = DATA_HEADER_LEN - CRC_LEN;

/// Capacity of a compact buffer: packets up to this length are kept whole (control packets,
/// and the message layer's slot headers and credit words: data packets of under 100 bytes);
/// larger ones only when their payload is zeros (header and CRC kept).
pub const COMPACT_CAP: usize = 128;

/// Full-size link buffers smaller than this are not worth compacting (the simulator keeps
/// every packet in its full buffer then): a 256 B packet's buffer is ~375 bytes, so the
/// compact copy saves little memory and its zero check and copies cost time on the hot path.
pub const COMPACT_MIN_BUF_BYTES: usize = 4 * 1024;

/// Whether the data packet `bytes` (exactly the emitted length) has an all-zero payload.
pub fn zero_payload(bytes: &[u8]) -> bool {
    if bytes.len() <= DATA_HEADER_LEN {
        return false;
    }
    let payload = &bytes[DATA_PAYLOAD_AT..bytes.len() - CRC_LEN];
    // OR-reduce 16 bytes at a time (vectorized), then the rest.
    let mut chunks = payload.chunks_exact(16);
    let mut acc = 0u128;
    for c in &mut chunks {
        acc |= u128::from_ne_bytes(c.try_into().expect("16-byte chunk"));
    }
    acc == 0 && chunks.remainder().iter().all(|&b| b == 0)
}

/// Whether the packet `bytes` (exactly the emitted length; `is_data` for data packets) fits a
/// compact buffer without losing a byte.
pub fn compactable(bytes: &[u8], is_data: bool) -> bool {
    bytes.len() <= COMPACT_CAP || (is_data && zero_payload(bytes))
}

/// Keep a [`compactable`] packet in `out` (`COMPACT_CAP` bytes long).
pub fn compact(bytes: &[u8], out: &mut [u8]) {
    if bytes.len() <= COMPACT_CAP {
        out[..bytes.len()].copy_from_slice(bytes);
        return;
    }
    out[..DATA_PAYLOAD_AT].copy_from_slice(&bytes[..DATA_PAYLOAD_AT]);
    out[DATA_PAYLOAD_AT..DATA_HEADER_LEN].copy_from_slice(&bytes[bytes.len() - CRC_LEN..]);
}

/// The `len`-byte packet kept by [`compact`] in `kept`: the kept bytes themselves for a small
/// packet, else rebuilt in `zeroed`, whose bytes `[DATA_PAYLOAD_AT, len - CRC_LEN)` must be
/// zero. Call [`clear`] after use to restore the zeros.
pub fn expand<'a>(kept: &'a [u8], len: usize, zeroed: &'a mut [u8]) -> &'a [u8] {
    if len <= COMPACT_CAP {
        return &kept[..len];
    }
    zeroed[..DATA_PAYLOAD_AT].copy_from_slice(&kept[..DATA_PAYLOAD_AT]);
    zeroed[len - CRC_LEN..len].copy_from_slice(&kept[DATA_PAYLOAD_AT..DATA_HEADER_LEN]);
    &zeroed[..len]
}

/// Zero again what [`expand`] wrote into `zeroed` for a `len`-byte packet.
pub fn clear(len: usize, zeroed: &mut [u8]) {
    if len > COMPACT_CAP {
        zeroed[..DATA_PAYLOAD_AT].fill(0);
        zeroed[len - CRC_LEN..len].fill(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use unpinned_wire::part::{DataFlags, PartRepr};

    fn data_packet(payload: &[u8]) -> Vec<u8> {
        let repr = PartRepr::Data {
            pdid: 1,
            rkey: 0xdead_beef,
            transfer_id: 7,
            block_id: 3,
            block_seq: 1,
            flags: DataFlags::default(),
            offset: 4096,
            block_len: 16384,
            xfer_base: 1 << 32,
            xfer_len: 1 << 20,
            payload,
        };
        let mut buf = vec![0u8; repr.buffer_len()];
        repr.emit(&mut buf).expect("buffer sized by buffer_len");
        buf
    }

    #[test]
    fn zero_payload_round_trips_byte_for_byte() {
        let bytes = data_packet(&[0u8; 4000]);
        assert!(zero_payload(&bytes) && compactable(&bytes, true));
        let mut kept = [0u8; COMPACT_CAP];
        compact(&bytes, &mut kept);
        let mut scratch = vec![0u8; 8192];
        assert_eq!(expand(&kept, bytes.len(), &mut scratch), &bytes[..]);
        clear(bytes.len(), &mut scratch);
        assert!(scratch.iter().all(|&b| b == 0), "scratch zeroed again");
        assert!(PartRepr::parse(&bytes).is_ok());
    }

    #[test]
    fn any_nonzero_payload_byte_is_kept_whole() {
        for at in [0usize, 15, 16, 3999] {
            let mut payload = vec![0u8; 4000];
            payload[at] = 1;
            assert!(!zero_payload(&data_packet(&payload)), "byte {at}");
        }
        assert!(
            !zero_payload(&data_packet(&[])),
            "no payload: nothing to save"
        );
        assert!(!compactable(&data_packet(&[1u8; 100]), true));
    }

    #[test]
    fn small_packets_are_kept_whole() {
        let ack = PartRepr::Ack {
            transfer_id: 9,
            block_id: 2,
            block_seq: 1,
            read_response: false,
        };
        let mut bytes = vec![0u8; ack.buffer_len()];
        ack.emit(&mut bytes).expect("sized");
        assert!(compactable(&bytes, false));
        let small = data_packet(&[0xab; 8]);
        assert!(compactable(&small, true) && !zero_payload(&small));
        let mut scratch = vec![0u8; 128];
        for p in [&bytes, &small] {
            let mut kept = [0u8; COMPACT_CAP];
            compact(p, &mut kept);
            assert_eq!(expand(&kept, p.len(), &mut scratch), &p[..]);
            clear(p.len(), &mut scratch);
        }
        assert!(
            scratch.iter().all(|&b| b == 0),
            "small packets leave the scratch alone"
        );
    }
}
