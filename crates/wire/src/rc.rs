//! InfiniBand Reliable Connection packets, as modelled by `unpinned-ib` (spec odp.md, "RC
//! transport").
//!
//! A compact rendering of the IB base transport header (BTH), RDMA extended header (RETH) and
//! ACK extended header (AETH). Only what the RC model needs travels: every message is a single
//! packet (`*_ONLY` opcodes of IB), so there are no FIRST / MIDDLE / LAST packets.
//!
//! # Layout
//!
//! All integers are big-endian; offsets are in bytes; no padding. Every packet starts with a
//! 12-byte header and ends with a 4-byte ICRC (CRC32 IEEE over all bytes before it; the real
//! ICRC masks variant fields, which this model does not have).
//!
//! Header (BTH):
//!
//! | bytes | field    | value                                                        |
//! |-------|----------|--------------------------------------------------------------|
//! | 0..2  | magic    | `0x4942` ("IB")                                              |
//! | 2     | version  | `1`                                                          |
//! | 3     | opcode   | 1 = ReadReq, 2 = Write, 3 = Send, 4 = ReadResp, 5 = Ack       |
//! | 4..8  | dest_qpn | destination queue pair, 24 bits (upper byte must be 0)       |
//! | 8..12 | psn      | packet sequence number, 24 bits (upper byte must be 0)       |
//!
//! ReadReq (1), 32 bytes: `12..20` va, `20..24` rkey, `24..28` dma_len, `28..32` icrc.
//!
//! Write (2), 30 + n bytes: `12..20` va, `20..24` rkey, `24..26` payload_len n,
//! `26..26+n` payload, then the icrc.
//!
//! Send (3), 18 + n bytes: `12..14` payload_len n, `14..14+n` payload, then the icrc.
//!
//! ReadResp (4), 22 + n bytes: `12` syndrome, `13..16` msn, `16..18` payload_len n,
//! `18..18+n` payload, then the icrc. The syndrome must be an ACK.
//!
//! Ack (5), 20 bytes: `12` syndrome, `13..16` msn, `16..20` icrc.
//!
//! Syndrome (AETH, IB spec 9.7.5.1): bits 7..5 select the kind, bits 4..0 the value:
//! `000` ACK (value must be 0 here: no credits are modelled), `001` RNR NAK (value = RNR
//! timer code, see `unpinned_ib::rnr`), `011` NAK (value 0 = PSN sequence error, 1 = invalid
//! request, 2 = remote access error, 3 = remote operational error).
//!
//! # Parsing order
//!
//! [`RcRepr::parse`] checks, in order: header present (`Truncated`), magic and version
//! (`BadMagic`), opcode (`UnknownOpcode`), fixed part present (`Truncated`), declared payload
//! present (`Truncated`) and nothing after the declared end (`Malformed("length")`), ICRC
//! (`BadChecksum`), then the field values (`Malformed(..)`). Never panics.

use core::ops::Range;

/// Largest 24-bit value (QPNs, PSNs, MSNs).
pub const MASK_24: u32 = 0x00ff_ffff;

/// Why a byte string is not a valid RC packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RcWireError {
    /// Shorter than its header or than its declared payload.
    #[error("packet truncated: {need} bytes needed, {have} present")]
    Truncated {
        /// Bytes needed.
        need: usize,
        /// Bytes present.
        have: usize,
    },
    /// Unknown magic or version.
    #[error("not an RC packet (bad magic or version)")]
    BadMagic,
    /// Unknown opcode.
    #[error("unknown opcode {0}")]
    UnknownOpcode(u8),
    /// A field holds an impossible value.
    #[error("malformed field {0}")]
    Malformed(&'static str),
    /// The ICRC does not match: the packet was corrupted in flight (IB drops it silently).
    #[error("ICRC mismatch")]
    BadChecksum,
    /// The output buffer is too small for `emit`, or a field does not fit its width.
    #[error("output buffer too small or field too wide: {need} bytes needed")]
    BufferTooSmall {
        /// Bytes needed.
        need: usize,
    },
}

/// NAK codes (AETH syndrome `011xxxxx`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NakCode {
    /// The request's PSN is ahead of the expected one (odp.md: go-back-N from the expected PSN).
    PsnSequenceError,
    /// The request is not valid for this QP.
    InvalidRequest,
    /// Key, range or permission check failed at the responder.
    RemoteAccessError,
    /// The responder could not complete the request.
    RemoteOperationalError,
}

/// The acknowledgement carried by an ACK packet or a read response (AETH).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Syndrome {
    /// Positive acknowledgement up to and including the packet's PSN.
    Ack,
    /// Receiver not ready: retry the packet's PSN after the delay of this timer code.
    RnrNak {
        /// 5-bit RNR timer code.
        timer: u8,
    },
    /// Negative acknowledgement at the packet's PSN.
    Nak(NakCode),
}

impl Syndrome {
    fn encode(self) -> u8 {
        match self {
            Syndrome::Ack => 0,
            Syndrome::RnrNak { timer } => 0x20 | (timer & 0x1f),
            Syndrome::Nak(c) => {
                0x60 | match c {
                    NakCode::PsnSequenceError => 0,
                    NakCode::InvalidRequest => 1,
                    NakCode::RemoteAccessError => 2,
                    NakCode::RemoteOperationalError => 3,
                }
            }
        }
    }
    fn decode(b: u8) -> Result<Syndrome, RcWireError> {
        let v = b & 0x1f;
        match b >> 5 {
            0b000 if v == 0 => Ok(Syndrome::Ack),
            0b001 => Ok(Syndrome::RnrNak { timer: v }),
            0b011 => Ok(Syndrome::Nak(match v {
                0 => NakCode::PsnSequenceError,
                1 => NakCode::InvalidRequest,
                2 => NakCode::RemoteAccessError,
                3 => NakCode::RemoteOperationalError,
                _ => return Err(RcWireError::Malformed("nak code")),
            })),
            _ => Err(RcWireError::Malformed("syndrome")),
        }
    }
}

/// A parsed RC packet. Node addresses travel in the link layer; `dest_qpn` selects the QP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RcRepr<'a> {
    /// RDMA READ request (one response packet of `len` bytes).
    ReadReq {
        /// Destination QP.
        dest_qpn: u32,
        /// PSN.
        psn: u32,
        /// Remote virtual address.
        va: u64,
        /// Remote key.
        rkey: u32,
        /// Bytes to read.
        len: u32,
    },
    /// RDMA WRITE (only packet).
    Write {
        /// Destination QP.
        dest_qpn: u32,
        /// PSN.
        psn: u32,
        /// Remote virtual address.
        va: u64,
        /// Remote key.
        rkey: u32,
        /// The bytes.
        payload: &'a [u8],
    },
    /// SEND (only packet): consumes a receive request at the responder.
    Send {
        /// Destination QP.
        dest_qpn: u32,
        /// PSN.
        psn: u32,
        /// The bytes.
        payload: &'a [u8],
    },
    /// RDMA READ response (only packet), with an ACK syndrome.
    ReadResp {
        /// Destination QP (the requester's).
        dest_qpn: u32,
        /// PSN of the READ request it answers.
        psn: u32,
        /// Message sequence number at the responder.
        msn: u32,
        /// The bytes.
        payload: &'a [u8],
    },
    /// ACK, RNR NAK or NAK.
    Ack {
        /// Destination QP (the requester's).
        dest_qpn: u32,
        /// PSN acknowledged (ACK) or refused (NAKs).
        psn: u32,
        /// Message sequence number at the responder.
        msn: u32,
        /// What kind of acknowledgement.
        syndrome: Syndrome,
    },
}

/// Byte ranges of the fields (see the module docs).
pub mod field {
    use core::ops::Range;
    /// Magic.
    pub const MAGIC: Range<usize> = 0..2;
    /// Version.
    pub const VERSION: usize = 2;
    /// Opcode.
    pub const OPCODE: usize = 3;
    /// Destination QP number.
    pub const DEST_QPN: Range<usize> = 4..8;
    /// PSN.
    pub const PSN: Range<usize> = 8..12;
    /// End of the header.
    pub const HEADER_END: usize = 12;
    /// Length of the trailing ICRC.
    pub const ICRC_LEN: usize = 4;
    /// RETH (read request, write).
    pub mod reth {
        use core::ops::Range;
        /// Virtual address.
        pub const VA: Range<usize> = 12..20;
        /// Remote key.
        pub const RKEY: Range<usize> = 20..24;
        /// DMA length (read request).
        pub const DMA_LEN: Range<usize> = 24..28;
        /// Payload length (write).
        pub const PAYLOAD_LEN: Range<usize> = 24..26;
        /// Payload start (write).
        pub const PAYLOAD: usize = 26;
    }
    /// Send.
    pub mod send {
        use core::ops::Range;
        /// Payload length.
        pub const PAYLOAD_LEN: Range<usize> = 12..14;
        /// Payload start.
        pub const PAYLOAD: usize = 14;
    }
    /// AETH (ack, read response).
    pub mod aeth {
        use core::ops::Range;
        /// Syndrome.
        pub const SYNDROME: usize = 12;
        /// Message sequence number (24 bits in 3 bytes).
        pub const MSN: Range<usize> = 13..16;
        /// Payload length (read response).
        pub const PAYLOAD_LEN: Range<usize> = 16..18;
        /// Payload start (read response).
        pub const PAYLOAD: usize = 18;
    }
}

mod opcode {
    pub const READ_REQ: u8 = 1;
    pub const WRITE: u8 = 2;
    pub const SEND: u8 = 3;
    pub const READ_RESP: u8 = 4;
    pub const ACK: u8 = 5;
}

const MAGIC: u16 = 0x4942;
const VERSION: u8 = 1;

/// Read request length.
pub const READ_REQ_LEN: usize = field::reth::DMA_LEN.end + field::ICRC_LEN;
/// Ack length.
pub const ACK_LEN: usize = field::aeth::MSN.end + field::ICRC_LEN;
/// Write length without payload.
pub const WRITE_HEADER_LEN: usize = field::reth::PAYLOAD + field::ICRC_LEN;
/// Send length without payload.
pub const SEND_HEADER_LEN: usize = field::send::PAYLOAD + field::ICRC_LEN;
/// Read response length without payload.
pub const READ_RESP_HEADER_LEN: usize = field::aeth::PAYLOAD + field::ICRC_LEN;

fn get_u16(b: &[u8], r: Range<usize>) -> u16 {
    let mut a = [0u8; 2];
    a.copy_from_slice(&b[r]);
    u16::from_be_bytes(a)
}
fn get_u32(b: &[u8], r: Range<usize>) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[r]);
    u32::from_be_bytes(a)
}
fn get_u24(b: &[u8], r: Range<usize>) -> u32 {
    let mut a = [0u8; 4];
    a[1..].copy_from_slice(&b[r]);
    u32::from_be_bytes(a)
}
fn get_u64(b: &[u8], r: Range<usize>) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[r]);
    u64::from_be_bytes(a)
}
fn put_u16(b: &mut [u8], r: Range<usize>, v: u16) {
    b[r].copy_from_slice(&v.to_be_bytes());
}
fn put_u32(b: &mut [u8], r: Range<usize>, v: u32) {
    b[r].copy_from_slice(&v.to_be_bytes());
}
fn put_u24(b: &mut [u8], r: Range<usize>, v: u32) {
    b[r].copy_from_slice(&v.to_be_bytes()[1..]);
}
fn put_u64(b: &mut [u8], r: Range<usize>, v: u64) {
    b[r].copy_from_slice(&v.to_be_bytes());
}

impl<'a> RcRepr<'a> {
    /// Parse and check one packet (see the module docs for the order of checks). Payloads
    /// borrow from `bytes`. Never panics.
    pub fn parse(bytes: &'a [u8]) -> Result<RcRepr<'a>, RcWireError> {
        let have = bytes.len();
        let need = |need: usize| -> Result<(), RcWireError> {
            if have < need {
                Err(RcWireError::Truncated { need, have })
            } else {
                Ok(())
            }
        };
        need(field::HEADER_END)?;
        if get_u16(bytes, field::MAGIC) != MAGIC || bytes[field::VERSION] != VERSION {
            return Err(RcWireError::BadMagic);
        }
        let op = bytes[field::OPCODE];
        let total = match op {
            opcode::READ_REQ => READ_REQ_LEN,
            opcode::ACK => ACK_LEN,
            opcode::WRITE => {
                need(WRITE_HEADER_LEN)?;
                WRITE_HEADER_LEN + usize::from(get_u16(bytes, field::reth::PAYLOAD_LEN))
            }
            opcode::SEND => {
                need(SEND_HEADER_LEN)?;
                SEND_HEADER_LEN + usize::from(get_u16(bytes, field::send::PAYLOAD_LEN))
            }
            opcode::READ_RESP => {
                need(READ_RESP_HEADER_LEN)?;
                READ_RESP_HEADER_LEN + usize::from(get_u16(bytes, field::aeth::PAYLOAD_LEN))
            }
            other => return Err(RcWireError::UnknownOpcode(other)),
        };
        need(total)?;
        if have > total {
            return Err(RcWireError::Malformed("length"));
        }
        let (b, icrc) = bytes.split_at(total - field::ICRC_LEN);
        if crc32fast::hash(b) != get_u32(icrc, 0..field::ICRC_LEN) {
            return Err(RcWireError::BadChecksum);
        }
        let dest_qpn = get_u32(b, field::DEST_QPN);
        if dest_qpn > MASK_24 {
            return Err(RcWireError::Malformed("dest_qpn"));
        }
        let psn = get_u32(b, field::PSN);
        if psn > MASK_24 {
            return Err(RcWireError::Malformed("psn"));
        }
        Ok(match op {
            opcode::READ_REQ => RcRepr::ReadReq {
                dest_qpn,
                psn,
                va: get_u64(b, field::reth::VA),
                rkey: get_u32(b, field::reth::RKEY),
                len: get_u32(b, field::reth::DMA_LEN),
            },
            opcode::WRITE => RcRepr::Write {
                dest_qpn,
                psn,
                va: get_u64(b, field::reth::VA),
                rkey: get_u32(b, field::reth::RKEY),
                payload: &b[field::reth::PAYLOAD..],
            },
            opcode::SEND => RcRepr::Send {
                dest_qpn,
                psn,
                payload: &b[field::send::PAYLOAD..],
            },
            opcode::READ_RESP => {
                if Syndrome::decode(b[field::aeth::SYNDROME])? != Syndrome::Ack {
                    return Err(RcWireError::Malformed("syndrome"));
                }
                RcRepr::ReadResp {
                    dest_qpn,
                    psn,
                    msn: get_u24(b, field::aeth::MSN),
                    payload: &b[field::aeth::PAYLOAD..],
                }
            }
            _ => RcRepr::Ack {
                dest_qpn,
                psn,
                msn: get_u24(b, field::aeth::MSN),
                syndrome: Syndrome::decode(b[field::aeth::SYNDROME])?,
            },
        })
    }

    /// Bytes `emit` writes.
    pub fn buffer_len(&self) -> usize {
        match self {
            RcRepr::ReadReq { .. } => READ_REQ_LEN,
            RcRepr::Ack { .. } => ACK_LEN,
            RcRepr::Write { payload, .. } => WRITE_HEADER_LEN + payload.len(),
            RcRepr::Send { payload, .. } => SEND_HEADER_LEN + payload.len(),
            RcRepr::ReadResp { payload, .. } => READ_RESP_HEADER_LEN + payload.len(),
        }
    }

    /// The destination QP and PSN of any packet.
    pub fn qpn_psn(&self) -> (u32, u32) {
        match *self {
            RcRepr::ReadReq { dest_qpn, psn, .. }
            | RcRepr::Write { dest_qpn, psn, .. }
            | RcRepr::Send { dest_qpn, psn, .. }
            | RcRepr::ReadResp { dest_qpn, psn, .. }
            | RcRepr::Ack { dest_qpn, psn, .. } => (dest_qpn, psn),
        }
    }

    /// Write the packet at the start of `out`; returns the bytes written. Fails (writing
    /// nothing) if `out` is too small, a payload exceeds 65535 bytes, or a 24-bit field or RNR
    /// timer code is out of range.
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, RcWireError> {
        let len = self.buffer_len();
        let payload_len = match self {
            RcRepr::Write { payload, .. }
            | RcRepr::Send { payload, .. }
            | RcRepr::ReadResp { payload, .. } => payload.len(),
            _ => 0,
        };
        if payload_len > usize::from(u16::MAX) {
            return Err(RcWireError::BufferTooSmall { need: len });
        }
        let (qpn, psn) = self.qpn_psn();
        if qpn > MASK_24 || psn > MASK_24 {
            return Err(RcWireError::Malformed("24-bit field"));
        }
        match self {
            RcRepr::ReadResp { msn, .. } | RcRepr::Ack { msn, .. } if *msn > MASK_24 => {
                return Err(RcWireError::Malformed("msn"))
            }
            RcRepr::Ack {
                syndrome: Syndrome::RnrNak { timer },
                ..
            } if *timer > 0x1f => return Err(RcWireError::Malformed("rnr timer")),
            _ => {}
        }
        if out.len() < len {
            return Err(RcWireError::BufferTooSmall { need: len });
        }
        let out = &mut out[..len];
        put_u16(out, field::MAGIC, MAGIC);
        out[field::VERSION] = VERSION;
        put_u32(out, field::DEST_QPN, qpn);
        put_u32(out, field::PSN, psn);
        match *self {
            RcRepr::ReadReq {
                va,
                rkey,
                len: dlen,
                ..
            } => {
                out[field::OPCODE] = opcode::READ_REQ;
                put_u64(out, field::reth::VA, va);
                put_u32(out, field::reth::RKEY, rkey);
                put_u32(out, field::reth::DMA_LEN, dlen);
            }
            RcRepr::Write {
                va, rkey, payload, ..
            } => {
                out[field::OPCODE] = opcode::WRITE;
                put_u64(out, field::reth::VA, va);
                put_u32(out, field::reth::RKEY, rkey);
                put_u16(out, field::reth::PAYLOAD_LEN, payload.len() as u16);
                out[field::reth::PAYLOAD..field::reth::PAYLOAD + payload.len()]
                    .copy_from_slice(payload);
            }
            RcRepr::Send { payload, .. } => {
                out[field::OPCODE] = opcode::SEND;
                put_u16(out, field::send::PAYLOAD_LEN, payload.len() as u16);
                out[field::send::PAYLOAD..field::send::PAYLOAD + payload.len()]
                    .copy_from_slice(payload);
            }
            RcRepr::ReadResp { msn, payload, .. } => {
                out[field::OPCODE] = opcode::READ_RESP;
                out[field::aeth::SYNDROME] = Syndrome::Ack.encode();
                put_u24(out, field::aeth::MSN, msn);
                put_u16(out, field::aeth::PAYLOAD_LEN, payload.len() as u16);
                out[field::aeth::PAYLOAD..field::aeth::PAYLOAD + payload.len()]
                    .copy_from_slice(payload);
            }
            RcRepr::Ack { msn, syndrome, .. } => {
                out[field::OPCODE] = opcode::ACK;
                out[field::aeth::SYNDROME] = syndrome.encode();
                put_u24(out, field::aeth::MSN, msn);
            }
        }
        let at = len - field::ICRC_LEN;
        let crc = crc32fast::hash(&out[..at]);
        put_u32(out, at..len, crc);
        Ok(len)
    }
}

const _: () = {
    assert!(READ_REQ_LEN == 32);
    assert!(ACK_LEN == 20);
    assert!(WRITE_HEADER_LEN == 30);
    assert!(SEND_HEADER_LEN == 18);
    assert!(READ_RESP_HEADER_LEN == 22);
};

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn samples(p: &[u8]) -> Vec<RcRepr<'_>> {
        vec![
            RcRepr::ReadReq {
                dest_qpn: 0x12_3456,
                psn: MASK_24,
                va: 0x7fff_0000_1000,
                rkey: 0xdead_beef,
                len: 100,
            },
            RcRepr::Write {
                dest_qpn: 1,
                psn: 0,
                va: 42,
                rkey: 7,
                payload: p,
            },
            RcRepr::Send {
                dest_qpn: 2,
                psn: 5,
                payload: p,
            },
            RcRepr::Send {
                dest_qpn: 2,
                psn: 6,
                payload: &[],
            },
            RcRepr::ReadResp {
                dest_qpn: 3,
                psn: 9,
                msn: 4,
                payload: p,
            },
            RcRepr::Ack {
                dest_qpn: 4,
                psn: 10,
                msn: MASK_24,
                syndrome: Syndrome::Ack,
            },
            RcRepr::Ack {
                dest_qpn: 4,
                psn: 10,
                msn: 1,
                syndrome: Syndrome::RnrNak { timer: 14 },
            },
            RcRepr::Ack {
                dest_qpn: 4,
                psn: 11,
                msn: 1,
                syndrome: Syndrome::Nak(NakCode::PsnSequenceError),
            },
            RcRepr::Ack {
                dest_qpn: 4,
                psn: 11,
                msn: 1,
                syndrome: Syndrome::Nak(NakCode::RemoteAccessError),
            },
        ]
    }

    fn emit_vec(r: &RcRepr<'_>) -> Vec<u8> {
        let mut v = vec![0; r.buffer_len()];
        assert_eq!(r.emit(&mut v), Ok(v.len()));
        v
    }

    fn fix_icrc(b: &mut [u8]) {
        let at = b.len() - 4;
        let c = crc32fast::hash(&b[..at]);
        b[at..].copy_from_slice(&c.to_be_bytes());
    }

    #[test]
    fn round_trip_every_variant() {
        let p: Vec<u8> = (0..100).collect();
        for r in samples(&p) {
            assert_eq!(RcRepr::parse(&emit_vec(&r)), Ok(r));
        }
    }

    #[test]
    fn known_bytes_of_an_rnr_nak() {
        let b = emit_vec(&RcRepr::Ack {
            dest_qpn: 0x010203,
            psn: 0x040506,
            msn: 0x070809,
            syndrome: Syndrome::RnrNak { timer: 14 },
        });
        assert_eq!(
            &b[..16],
            &[0x49, 0x42, 1, 5, 0, 1, 2, 3, 0, 4, 5, 6, 0x2e, 7, 8, 9]
        );
    }

    #[test]
    fn truncations_trailing_bytes_and_bit_flips_are_rejected() {
        let p: Vec<u8> = (0..40).collect();
        for r in samples(&p) {
            let b = emit_vec(&r);
            for cut in 0..b.len() {
                assert!(
                    matches!(RcRepr::parse(&b[..cut]), Err(RcWireError::Truncated { .. })),
                    "{r:?} cut {cut}"
                );
            }
            let mut long = b.clone();
            long.push(0);
            assert_eq!(RcRepr::parse(&long), Err(RcWireError::Malformed("length")));
            for bit in 0..b.len() * 8 {
                let mut bad = b.clone();
                bad[bit / 8] ^= 1 << (bit % 8);
                assert!(RcRepr::parse(&bad).is_err(), "{r:?}: flip {bit} accepted");
            }
        }
    }

    #[test]
    fn bad_magic_opcode_and_fields() {
        let good = emit_vec(&samples(&[])[5]);
        let mut b = good.clone();
        b[0] = 0;
        assert_eq!(RcRepr::parse(&b), Err(RcWireError::BadMagic));
        let mut b = good.clone();
        b[field::OPCODE] = 9;
        assert_eq!(RcRepr::parse(&b), Err(RcWireError::UnknownOpcode(9)));
        let mut b = good.clone();
        b[field::PSN.start] = 1;
        fix_icrc(&mut b);
        assert_eq!(RcRepr::parse(&b), Err(RcWireError::Malformed("psn")));
        let mut b = good.clone();
        b[field::DEST_QPN.start] = 1;
        fix_icrc(&mut b);
        assert_eq!(RcRepr::parse(&b), Err(RcWireError::Malformed("dest_qpn")));
        for (syn, err) in [(0x01u8, "syndrome"), (0x40, "syndrome"), (0x64, "nak code")] {
            let mut b = good.clone();
            b[field::aeth::SYNDROME] = syn;
            fix_icrc(&mut b);
            assert_eq!(RcRepr::parse(&b), Err(RcWireError::Malformed(err)));
        }
        // A read response must carry an ACK syndrome.
        let mut b = emit_vec(&samples(&[1, 2])[4]);
        b[field::aeth::SYNDROME] = 0x60;
        fix_icrc(&mut b);
        assert_eq!(RcRepr::parse(&b), Err(RcWireError::Malformed("syndrome")));
    }

    #[test]
    fn emit_refuses_what_does_not_fit() {
        let r = RcRepr::ReadReq {
            dest_qpn: 1,
            psn: 1,
            va: 0,
            rkey: 0,
            len: 1,
        };
        assert_eq!(
            r.emit(&mut [0u8; 31]),
            Err(RcWireError::BufferTooSmall { need: 32 })
        );
        let r = RcRepr::ReadReq {
            dest_qpn: 1 << 24,
            psn: 1,
            va: 0,
            rkey: 0,
            len: 1,
        };
        assert!(r.emit(&mut [0u8; 64]).is_err());
        let big = vec![0u8; 70_000];
        let r = RcRepr::Send {
            dest_qpn: 1,
            psn: 1,
            payload: &big,
        };
        assert!(r.emit(&mut vec![0u8; 80_000]).is_err());
    }

    fn arb_syndrome() -> impl Strategy<Value = Syndrome> {
        prop_oneof![
            Just(Syndrome::Ack),
            (0u8..32).prop_map(|timer| Syndrome::RnrNak { timer }),
            prop_oneof![
                Just(NakCode::PsnSequenceError),
                Just(NakCode::InvalidRequest),
                Just(NakCode::RemoteAccessError),
                Just(NakCode::RemoteOperationalError)
            ]
            .prop_map(Syndrome::Nak),
        ]
    }

    proptest! {
        #[test]
        fn round_trips(qpn in 0..=MASK_24, psn in 0..=MASK_24, msn in 0..=MASK_24, va: u64, rkey: u32, len: u32,
                       payload in proptest::collection::vec(any::<u8>(), 0..300), syndrome in arb_syndrome(), which in 0u8..5) {
            let r = match which {
                0 => RcRepr::ReadReq { dest_qpn: qpn, psn, va, rkey, len },
                1 => RcRepr::Write { dest_qpn: qpn, psn, va, rkey, payload: &payload },
                2 => RcRepr::Send { dest_qpn: qpn, psn, payload: &payload },
                3 => RcRepr::ReadResp { dest_qpn: qpn, psn, msn, payload: &payload },
                _ => RcRepr::Ack { dest_qpn: qpn, psn, msn, syndrome },
            };
            let b = emit_vec(&r);
            prop_assert_eq!(RcRepr::parse(&b), Ok(r));
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = RcRepr::parse(&bytes);
        }
    }
}
