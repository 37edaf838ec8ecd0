//! Where the message layer's words live in a node's message region.
//!
//! The region of a node with `m` peers and `K` slots per peer is, in order:
//! - receive slot headers: `m * K` headers,
//! - incoming control words: per peer 16 bytes (credit word, FIN word), written by that peer,
//! - outgoing staging: per peer `K` headers and one 16-byte control pair, the sources of the
//!   header, credit and FIN writes this node sends,
//! - receive slot payloads: `m * K` payloads of `eager_max_bytes`.
//!
//! Everything before the payloads is the control part ([`Layout::control_bytes`]): small,
//! and the only part whose contents the layer itself reads.
//! The peers' own `peer index` orders the slots: a peer writes into slot range `index * K`.

use crate::config::MsgConfig;
use crate::header::HEADER_BYTES;

/// Addresses inside one node's message region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Start of the region (virtual address).
    pub base: u64,
    /// Peers of the node.
    pub peers: u32,
    /// Slots per peer.
    pub slots: u32,
    /// Payload bytes of a slot.
    pub slot_bytes: u64,
}

impl Layout {
    /// The layout for `peers` peers at `base`.
    pub fn new(cfg: &MsgConfig, base: u64, peers: u32) -> Layout {
        Layout {
            base,
            peers,
            slots: cfg.slots_per_peer,
            slot_bytes: cfg.eager_max_bytes as u64,
        }
    }

    /// Bytes of the control part (headers, counter words, staging), from `base`.
    pub fn control_bytes(&self) -> u64 {
        self.staging_base() + self.peers as u64 * (self.slots as u64 * HEADER_BYTES as u64 + 16)
            - self.base
    }

    /// Total bytes of the region.
    pub fn region_bytes(&self) -> u64 {
        self.control_bytes() + self.peers as u64 * self.slots as u64 * self.slot_bytes
    }

    /// Header of slot `slot` of the messages coming from peer index `peer`.
    pub fn recv_slot(&self, peer: u32, slot: u32) -> u64 {
        self.base + (peer as u64 * self.slots as u64 + slot as u64) * HEADER_BYTES as u64
    }

    /// Payload of slot `slot` of the messages coming from peer index `peer`.
    pub fn recv_payload(&self, peer: u32, slot: u32) -> u64 {
        self.base
            + self.control_bytes()
            + (peer as u64 * self.slots as u64 + slot as u64) * self.slot_bytes
    }

    fn ctrl_in_base(&self) -> u64 {
        self.base + self.peers as u64 * self.slots as u64 * HEADER_BYTES as u64
    }

    /// The credit word written by peer index `peer` (how many of our messages it consumed).
    pub fn credit_in(&self, peer: u32) -> u64 {
        self.ctrl_in_base() + peer as u64 * 16
    }

    /// The FIN word written by peer index `peer` (how many of our rendezvous it finished).
    pub fn fin_in(&self, peer: u32) -> u64 {
        self.credit_in(peer) + 8
    }

    fn staging_base(&self) -> u64 {
        self.ctrl_in_base() + self.peers as u64 * 16
    }

    /// Staging of the header for slot `slot` of peer index `peer` (our outgoing messages).
    pub fn stage_header(&self, peer: u32, slot: u32) -> u64 {
        self.staging_base() + (peer as u64 * self.slots as u64 + slot as u64) * HEADER_BYTES as u64
    }

    /// Staging of the credit word we send to peer index `peer`.
    pub fn stage_credit(&self, peer: u32) -> u64 {
        self.staging_base()
            + self.peers as u64 * self.slots as u64 * HEADER_BYTES as u64
            + peer as u64 * 16
    }

    /// Staging of the FIN word we send to peer index `peer`.
    pub fn stage_fin(&self, peer: u32) -> u64 {
        self.stage_credit(peer) + 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn areas_do_not_overlap() {
        let cfg = MsgConfig {
            eager_max_bytes: 1000,
            slots_per_peer: 4,
        };
        let l = Layout::new(&cfg, 4096, 3);
        let mut areas: Vec<(u64, u64)> = Vec::new();
        for p in 0..3 {
            for s in 0..4 {
                areas.push((l.recv_slot(p, s), HEADER_BYTES as u64));
                areas.push((l.recv_payload(p, s), l.slot_bytes));
                areas.push((l.stage_header(p, s), HEADER_BYTES as u64));
            }
            areas.push((l.credit_in(p), 8));
            areas.push((l.fin_in(p), 8));
            areas.push((l.stage_credit(p), 8));
            areas.push((l.stage_fin(p), 8));
        }
        areas.sort();
        for w in areas.windows(2) {
            assert!(w[0].0 + w[0].1 <= w[1].0, "{w:?} overlap");
        }
        let last = areas.last().unwrap();
        assert_eq!(last.0 + last.1, l.base + l.region_bytes());
    }
}
