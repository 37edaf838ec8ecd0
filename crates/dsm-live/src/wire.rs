//! Control messages on the wire: one 64-byte mailbox slot each.
//!
//! Slot layout: `seq: u64 LE | payload: 48 bytes | check: u64 LE`, where `check` is the xxh3
//! of the first 56 bytes. The engine's memory copy gives no order among the bytes of one
//! write, so a receiver accepts a slot only when `seq` is the one it expects *and* the check
//! matches; anything else is "not landed yet". Page data never travels here: it moves by RDMA
//! write into the receiver's private view, and only then is the `Data` notice sent.

use unpinned_dsm::Msg;

/// Bytes per mailbox slot.
pub const SLOT_BYTES: usize = 64;
const PAYLOAD: usize = 48;

/// A control message of the live DSM.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WireMsg {
    /// A coherence message (`Msg::Data` travels with empty `bytes`: the data went ahead).
    Dsm(Msg),
    /// Worker `thread` of the sender asks for lock `id` (to the lock's manager).
    LockReq {
        /// Lock.
        id: u32,
        /// Local thread index at the sender.
        thread: u32,
    },
    /// The manager grants lock `id` to `thread` of the receiver.
    LockGrant {
        /// Lock.
        id: u32,
        /// Thread.
        thread: u32,
    },
    /// The sender released lock `id` (to the lock's manager).
    Unlock {
        /// Lock.
        id: u32,
    },
    /// Every worker of the sender reached barrier `epoch` (to rank 0).
    BarrierArrive {
        /// Barrier number.
        epoch: u64,
    },
    /// Everyone reached barrier `epoch` (from rank 0).
    BarrierRelease {
        /// Barrier number.
        epoch: u64,
    },
    /// Manager -> requestor of a read: pull `mp` with an RDMA read from `server`'s shared read
    /// copy (instead of a transfer notice to the server), then acknowledge as after `Data`.
    ReadFrom {
        /// Minipage.
        mp: u32,
        /// A rank holding a read copy.
        server: u32,
    },
    /// Round-trip probe (dsm-roundtrip).
    Ping {
        /// Sequence number.
        seq: u64,
    },
    /// Answer to [`WireMsg::Ping`].
    Pong {
        /// Sequence number.
        seq: u64,
    },
}

/// A slot that does not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// Unknown message tag.
    #[error("unknown message tag {0}")]
    UnknownTag(u8),
    /// A boolean field is neither 0 nor 1.
    #[error("field {0} is not a boolean")]
    BadBool(&'static str),
}

struct W {
    b: [u8; PAYLOAD],
    at: usize,
}

impl W {
    fn u8(&mut self, v: u8) -> &mut W {
        self.b[self.at] = v;
        self.at += 1;
        self
    }
    fn u32(&mut self, v: u32) -> &mut W {
        self.b[self.at..self.at + 4].copy_from_slice(&v.to_le_bytes());
        self.at += 4;
        self
    }
    fn u64(&mut self, v: u64) -> &mut W {
        self.b[self.at..self.at + 8].copy_from_slice(&v.to_le_bytes());
        self.at += 8;
        self
    }
}

struct R<'a> {
    b: &'a [u8],
    at: usize,
}

impl R<'_> {
    fn u8(&mut self) -> u8 {
        let v = self.b[self.at];
        self.at += 1;
        v
    }
    fn bool(&mut self, what: &'static str) -> Result<bool, WireError> {
        match self.u8() {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(WireError::BadBool(what)),
        }
    }
    fn u32(&mut self) -> u32 {
        let v = u32::from_le_bytes(self.b[self.at..self.at + 4].try_into().expect("4 bytes"));
        self.at += 4;
        v
    }
    fn u64(&mut self) -> u64 {
        let v = u64::from_le_bytes(self.b[self.at..self.at + 8].try_into().expect("8 bytes"));
        self.at += 8;
        v
    }
}

fn payload(m: &WireMsg) -> [u8; PAYLOAD] {
    let mut w = W {
        b: [0; PAYLOAD],
        at: 0,
    };
    match m {
        WireMsg::Dsm(Msg::Request { mp, from, write }) => {
            w.u8(1).u32(*mp).u32(*from).u8(*write as u8)
        }
        WireMsg::Dsm(Msg::Invalidate { mp, requestor }) => w.u8(2).u32(*mp).u32(*requestor),
        WireMsg::Dsm(Msg::Transfer {
            mp,
            requestor,
            write,
            notices,
        }) => w
            .u8(3)
            .u32(*mp)
            .u32(*requestor)
            .u8(*write as u8)
            .u32(*notices),
        WireMsg::Dsm(Msg::Grant { mp, notices }) => w.u8(4).u32(*mp).u32(*notices),
        WireMsg::Dsm(Msg::Invalidated { mp }) => w.u8(5).u32(*mp),
        WireMsg::Dsm(Msg::Data {
            mp,
            write,
            notices,
            bytes: _,
        }) => w.u8(6).u32(*mp).u8(*write as u8).u32(*notices),
        WireMsg::Dsm(Msg::Ack { mp, from, write }) => w.u8(7).u32(*mp).u32(*from).u8(*write as u8),
        WireMsg::LockReq { id, thread } => w.u8(8).u32(*id).u32(*thread),
        WireMsg::LockGrant { id, thread } => w.u8(9).u32(*id).u32(*thread),
        WireMsg::Unlock { id } => w.u8(10).u32(*id),
        WireMsg::BarrierArrive { epoch } => w.u8(11).u64(*epoch),
        WireMsg::BarrierRelease { epoch } => w.u8(12).u64(*epoch),
        WireMsg::Ping { seq } => w.u8(13).u64(*seq),
        WireMsg::Pong { seq } => w.u8(14).u64(*seq),
        WireMsg::ReadFrom { mp, server } => w.u8(15).u32(*mp).u32(*server),
    };
    w.b
}

fn check(b: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(&b[..SLOT_BYTES - 8])
}

/// Encode `m` as slot number `seq` (1-based: a zeroed slot never matches).
pub fn encode(seq: u64, m: &WireMsg) -> [u8; SLOT_BYTES] {
    let mut s = [0u8; SLOT_BYTES];
    s[..8].copy_from_slice(&seq.to_le_bytes());
    s[8..8 + PAYLOAD].copy_from_slice(&payload(m));
    let c = check(&s);
    s[SLOT_BYTES - 8..].copy_from_slice(&c.to_le_bytes());
    s
}

/// Has slot `s` fully landed as message number `seq`?
pub fn landed(s: &[u8; SLOT_BYTES], seq: u64) -> bool {
    s[..8] == seq.to_le_bytes() && s[SLOT_BYTES - 8..] == check(s).to_le_bytes()
}

/// Decode a landed slot.
pub fn decode(s: &[u8; SLOT_BYTES]) -> Result<WireMsg, WireError> {
    let mut r = R {
        b: &s[8..8 + PAYLOAD],
        at: 0,
    };
    let tag = r.u8();
    Ok(match tag {
        1 => WireMsg::Dsm(Msg::Request {
            mp: r.u32(),
            from: r.u32(),
            write: r.bool("write")?,
        }),
        2 => WireMsg::Dsm(Msg::Invalidate {
            mp: r.u32(),
            requestor: r.u32(),
        }),
        3 => WireMsg::Dsm(Msg::Transfer {
            mp: r.u32(),
            requestor: r.u32(),
            write: r.bool("write")?,
            notices: r.u32(),
        }),
        4 => WireMsg::Dsm(Msg::Grant {
            mp: r.u32(),
            notices: r.u32(),
        }),
        5 => WireMsg::Dsm(Msg::Invalidated { mp: r.u32() }),
        6 => WireMsg::Dsm(Msg::Data {
            mp: r.u32(),
            write: r.bool("write")?,
            notices: r.u32(),
            bytes: Vec::new(),
        }),
        7 => WireMsg::Dsm(Msg::Ack {
            mp: r.u32(),
            from: r.u32(),
            write: r.bool("write")?,
        }),
        8 => WireMsg::LockReq {
            id: r.u32(),
            thread: r.u32(),
        },
        9 => WireMsg::LockGrant {
            id: r.u32(),
            thread: r.u32(),
        },
        10 => WireMsg::Unlock { id: r.u32() },
        11 => WireMsg::BarrierArrive { epoch: r.u64() },
        12 => WireMsg::BarrierRelease { epoch: r.u64() },
        13 => WireMsg::Ping { seq: r.u64() },
        14 => WireMsg::Pong { seq: r.u64() },
        15 => WireMsg::ReadFrom {
            mp: r.u32(),
            server: r.u32(),
        },
        t => return Err(WireError::UnknownTag(t)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_round_trips_and_damage_is_detected() {
        let all = vec![
            WireMsg::Dsm(Msg::Request {
                mp: 7,
                from: 1,
                write: true,
            }),
            WireMsg::Dsm(Msg::Invalidate {
                mp: 8,
                requestor: 2,
            }),
            WireMsg::Dsm(Msg::Transfer {
                mp: 9,
                requestor: 3,
                write: false,
                notices: 4,
            }),
            WireMsg::Dsm(Msg::Grant { mp: 10, notices: 5 }),
            WireMsg::Dsm(Msg::Invalidated { mp: 11 }),
            WireMsg::Dsm(Msg::Data {
                mp: 12,
                write: true,
                notices: 6,
                bytes: Vec::new(),
            }),
            WireMsg::Dsm(Msg::Ack {
                mp: 13,
                from: 0,
                write: false,
            }),
            WireMsg::LockReq {
                id: u32::MAX,
                thread: 3,
            },
            WireMsg::LockGrant { id: 1, thread: 2 },
            WireMsg::Unlock { id: 5 },
            WireMsg::BarrierArrive { epoch: 1 << 40 },
            WireMsg::BarrierRelease { epoch: 3 },
            WireMsg::Ping { seq: 99 },
            WireMsg::Pong { seq: 100 },
            WireMsg::ReadFrom { mp: 14, server: 2 },
        ];
        for (i, m) in all.iter().enumerate() {
            let s = encode(i as u64 + 1, m);
            assert!(landed(&s, i as u64 + 1));
            assert!(
                !landed(&s, i as u64 + 2),
                "a slot of an older lap is not the expected one"
            );
            assert_eq!(&decode(&s).unwrap(), m);
            let mut torn = s;
            torn[20] ^= 1;
            assert!(
                !landed(&torn, i as u64 + 1),
                "a partly written slot is not accepted"
            );
        }
        assert!(!landed(&[0; SLOT_BYTES], 1));
        let mut bad = encode(1, &WireMsg::Ping { seq: 1 });
        bad[8] = 200;
        assert_eq!(decode(&bad), Err(WireError::UnknownTag(200)));
        let mut bad = encode(
            1,
            &WireMsg::Dsm(Msg::Request {
                mp: 1,
                from: 0,
                write: true,
            }),
        );
        bad[8 + 9] = 7;
        assert_eq!(decode(&bad), Err(WireError::BadBool("write")));
    }
}
