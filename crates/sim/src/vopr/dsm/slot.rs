//! The mailbox slot of the swarm's DSM transport: the live DSM's format (crates/dsm-live
//! `wire.rs`): `seq: u64 LE | payload: 48 bytes | check: u64 LE`, `check` the xxh3 of the
//! first 56 bytes. A receiver accepts a slot only when `seq` is the one it expects and the
//! check matches. Only the coherence messages and `ReadFrom` travel here (locks, barriers and
//! pings are not part of the swarm).

use unpinned_dsm::Msg;

/// Bytes per mailbox slot.
pub const SLOT_BYTES: usize = 64;
const PAYLOAD: usize = 48;

/// A control message of the swarm's DSM.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SlotMsg {
    /// A coherence message (`Msg::Data` with empty `bytes`: the data went ahead by RDMA write).
    Dsm(Msg),
    /// Manager -> requestor of a read: pull `mp` by RDMA read from `server`'s read copy.
    ReadFrom {
        /// Minipage.
        mp: u32,
        /// A node holding a read copy.
        server: u32,
    },
}

fn check(b: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(&b[..SLOT_BYTES - 8])
}

/// Encode `m` as message number `seq` (1-based: a zeroed slot never matches).
pub fn encode(seq: u64, m: &SlotMsg) -> [u8; SLOT_BYTES] {
    let mut s = [0u8; SLOT_BYTES];
    s[..8].copy_from_slice(&seq.to_le_bytes());
    let mut p = [0u8; PAYLOAD];
    let mut at = 0;
    let mut put = |v: &[u8]| {
        p[at..at + v.len()].copy_from_slice(v);
        at += v.len();
    };
    let b = |v: bool| [v as u8];
    match m {
        SlotMsg::Dsm(Msg::Request { mp, from, write }) => {
            put(&[1]);
            put(&mp.to_le_bytes());
            put(&from.to_le_bytes());
            put(&b(*write));
        }
        SlotMsg::Dsm(Msg::Invalidate { mp, requestor }) => {
            put(&[2]);
            put(&mp.to_le_bytes());
            put(&requestor.to_le_bytes());
        }
        SlotMsg::Dsm(Msg::Transfer {
            mp,
            requestor,
            write,
            notices,
        }) => {
            put(&[3]);
            put(&mp.to_le_bytes());
            put(&requestor.to_le_bytes());
            put(&b(*write));
            put(&notices.to_le_bytes());
        }
        SlotMsg::Dsm(Msg::Grant { mp, notices }) => {
            put(&[4]);
            put(&mp.to_le_bytes());
            put(&notices.to_le_bytes());
        }
        SlotMsg::Dsm(Msg::Invalidated { mp }) => {
            put(&[5]);
            put(&mp.to_le_bytes());
        }
        SlotMsg::Dsm(Msg::Data {
            mp, write, notices, ..
        }) => {
            put(&[6]);
            put(&mp.to_le_bytes());
            put(&b(*write));
            put(&notices.to_le_bytes());
        }
        SlotMsg::Dsm(Msg::Ack { mp, from, write }) => {
            put(&[7]);
            put(&mp.to_le_bytes());
            put(&from.to_le_bytes());
            put(&b(*write));
        }
        SlotMsg::ReadFrom { mp, server } => {
            put(&[8]);
            put(&mp.to_le_bytes());
            put(&server.to_le_bytes());
        }
    }
    s[8..8 + PAYLOAD].copy_from_slice(&p);
    let c = check(&s);
    s[SLOT_BYTES - 8..].copy_from_slice(&c.to_le_bytes());
    s
}

/// Has slot `s` fully landed as message number `seq`?
pub fn landed(s: &[u8; SLOT_BYTES], seq: u64) -> bool {
    s[..8] == seq.to_le_bytes() && s[SLOT_BYTES - 8..] == check(s).to_le_bytes()
}

/// Decode a landed slot (`None`: not a message this format knows).
pub fn decode(s: &[u8; SLOT_BYTES]) -> Option<SlotMsg> {
    let p = &s[8..8 + PAYLOAD];
    let u32_at = |i: usize| u32::from_le_bytes(p[i..i + 4].try_into().expect("4 bytes"));
    let bool_at = |i: usize| match p[i] {
        0 => Some(false),
        1 => Some(true),
        _ => None,
    };
    Some(match p[0] {
        1 => SlotMsg::Dsm(Msg::Request {
            mp: u32_at(1),
            from: u32_at(5),
            write: bool_at(9)?,
        }),
        2 => SlotMsg::Dsm(Msg::Invalidate {
            mp: u32_at(1),
            requestor: u32_at(5),
        }),
        3 => SlotMsg::Dsm(Msg::Transfer {
            mp: u32_at(1),
            requestor: u32_at(5),
            write: bool_at(9)?,
            notices: u32_at(10),
        }),
        4 => SlotMsg::Dsm(Msg::Grant {
            mp: u32_at(1),
            notices: u32_at(5),
        }),
        5 => SlotMsg::Dsm(Msg::Invalidated { mp: u32_at(1) }),
        6 => SlotMsg::Dsm(Msg::Data {
            mp: u32_at(1),
            write: bool_at(5)?,
            notices: u32_at(6),
            bytes: Vec::new(),
        }),
        7 => SlotMsg::Dsm(Msg::Ack {
            mp: u32_at(1),
            from: u32_at(5),
            write: bool_at(9)?,
        }),
        8 => SlotMsg::ReadFrom {
            mp: u32_at(1),
            server: u32_at(5),
        },
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_round_trips_and_a_wrong_seq_or_damage_is_not_landed() {
        let all = [
            SlotMsg::Dsm(Msg::Request {
                mp: 3,
                from: 1,
                write: true,
            }),
            SlotMsg::Dsm(Msg::Invalidate {
                mp: 4,
                requestor: 2,
            }),
            SlotMsg::Dsm(Msg::Transfer {
                mp: 5,
                requestor: 0,
                write: false,
                notices: 7,
            }),
            SlotMsg::Dsm(Msg::Grant { mp: 6, notices: 2 }),
            SlotMsg::Dsm(Msg::Invalidated { mp: 7 }),
            SlotMsg::Dsm(Msg::Data {
                mp: 8,
                write: true,
                notices: 3,
                bytes: Vec::new(),
            }),
            SlotMsg::Dsm(Msg::Ack {
                mp: 9,
                from: 3,
                write: false,
            }),
            SlotMsg::ReadFrom { mp: 10, server: 2 },
        ];
        for (i, m) in all.iter().enumerate() {
            let seq = i as u64 + 1;
            let mut s = encode(seq, m);
            assert!(landed(&s, seq));
            assert!(!landed(&s, seq + 1));
            assert_eq!(decode(&s).as_ref(), Some(m));
            s[20] ^= 1;
            assert!(!landed(&s, seq));
        }
    }
}
