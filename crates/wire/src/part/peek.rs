//! Where a packet may write at its receiver, read from its header without parsing or checking
//! the whole packet: for simulator drivers that watch memory and want to skip the packets that
//! cannot have changed what they watch. Never panics; anything it cannot classify is
//! [`WriteTarget::Any`].

use super::{field, get_u16, get_u64, kind, DATA_HEADER_LEN, FLAG_READ_RESPONSE, MAGIC, VERSION};

/// What a packet may write in its receiver's memory when it is accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteTarget {
    /// Nothing: an ACK, NACK, ERR, SACK or read request.
    Nothing,
    /// At most `[start, end)` of address space `pdid` (a data packet of a write).
    Range {
        /// Protection domain at the receiver.
        pdid: u16,
        /// First byte.
        start: u64,
        /// One past the last byte.
        end: u64,
    },
    /// The local buffer of one of the receiver's own pending reads (a read response: the
    /// header does not say where, the reader's engine knows).
    ReadResponse,
    /// Unknown: an atomic (executed on, or answered into, memory) or a packet too short or
    /// too strange to classify.
    Any,
}

/// Classify `bytes` (one packet) by its header. The packet is not validated: a packet the
/// engine would drop is classified by what its header claims, which is a superset of what it
/// writes (nothing).
pub fn write_target(bytes: &[u8]) -> WriteTarget {
    if bytes.len() < field::HEADER_END
        || get_u16(bytes, field::MAGIC) != MAGIC
        || bytes[field::VERSION] != VERSION
    {
        return WriteTarget::Any;
    }
    match bytes[field::TYPE] {
        kind::ACK | kind::NACK | kind::ERR | kind::READ_REQ | kind::SACK => WriteTarget::Nothing,
        kind::DATA if bytes.len() >= DATA_HEADER_LEN => {
            if bytes[field::data::FLAGS] & FLAG_READ_RESPONSE != 0 {
                return WriteTarget::ReadResponse;
            }
            let base = get_u64(bytes, field::data::XFER_BASE);
            let offset = get_u64(bytes, field::data::OFFSET);
            let len = get_u16(bytes, field::data::PAYLOAD_LEN) as u64;
            match base
                .checked_add(offset)
                .and_then(|s| s.checked_add(len).map(|e| (s, e)))
            {
                Some((start, end)) => WriteTarget::Range {
                    pdid: get_u16(bytes, field::data::PDID),
                    start,
                    end,
                },
                None => WriteTarget::Any,
            }
        }
        _ => WriteTarget::Any,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::part::{DataFlags, NackReason, PartRepr};

    fn emit(repr: &PartRepr) -> Vec<u8> {
        let mut buf = vec![0u8; repr.buffer_len()];
        repr.emit(&mut buf).expect("sized");
        buf
    }

    fn data(read_response: bool) -> Vec<u8> {
        emit(&PartRepr::Data {
            pdid: 3,
            rkey: 9,
            transfer_id: 1,
            block_id: 0,
            block_seq: 0,
            flags: DataFlags {
                read_response,
                ..DataFlags::default()
            },
            offset: 512,
            block_len: 1024,
            xfer_base: 0x1000,
            xfer_len: 4096,
            payload: &[7u8; 100],
        })
    }

    #[test]
    fn data_packets_name_their_range() {
        assert_eq!(
            write_target(&data(false)),
            WriteTarget::Range {
                pdid: 3,
                start: 0x1000 + 512,
                end: 0x1000 + 612
            }
        );
        assert_eq!(write_target(&data(true)), WriteTarget::ReadResponse);
    }

    #[test]
    fn control_packets_write_nothing() {
        let ack = emit(&PartRepr::Ack {
            transfer_id: 1,
            block_id: 2,
            block_seq: 0,
            read_response: false,
        });
        assert_eq!(write_target(&ack), WriteTarget::Nothing);
        let nack = emit(&PartRepr::Nack {
            transfer_id: 1,
            block_id: 2,
            block_seq: 0,
            read_response: false,
            reason: NackReason::Crc,
            addr: 0,
        });
        assert_eq!(write_target(&nack), WriteTarget::Nothing);
    }

    #[test]
    fn garbage_is_any_and_never_panics() {
        assert_eq!(write_target(&[]), WriteTarget::Any);
        assert_eq!(write_target(&[1, 2, 3, 4, 5]), WriteTarget::Any);
        let d = data(false);
        for cut in 0..d.len() {
            let _ = write_target(&d[..cut]);
        }
        assert_eq!(
            write_target(&d[..20]),
            WriteTarget::Any,
            "a data header cut short"
        );
    }
}
