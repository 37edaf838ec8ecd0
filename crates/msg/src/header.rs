//! The slot header: what a receiver finds in a slot once the sender's doorbell write landed.

/// Bytes of a header on the wire and in memory.
pub const HEADER_BYTES: usize = 40;

/// Kind of a slot's message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The payload is in the slot.
    Eager,
    /// Request to send: the receiver reads the payload from the sender's buffer.
    Rts,
}

/// A decoded header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Per-pair sequence number, from 1 (0 means an empty slot).
    pub seq: u64,
    /// Eager or rendezvous.
    pub kind: Kind,
    /// The sender's tag.
    pub tag: u32,
    /// Message length.
    pub len: u64,
    /// Rendezvous: the sender's buffer address.
    pub src_addr: u64,
    /// Rendezvous: the key of the sender's buffer exposure.
    pub rkey: u32,
    /// Rendezvous: the sender's address space.
    pub pdid: u16,
}

impl Header {
    /// Encode.
    pub fn emit(&self) -> [u8; HEADER_BYTES] {
        let mut b = [0u8; HEADER_BYTES];
        b[0..8].copy_from_slice(&self.seq.to_le_bytes());
        b[8..12].copy_from_slice(
            &(match self.kind {
                Kind::Eager => 1u32,
                Kind::Rts => 2,
            })
            .to_le_bytes(),
        );
        b[12..16].copy_from_slice(&self.tag.to_le_bytes());
        b[16..24].copy_from_slice(&self.len.to_le_bytes());
        b[24..32].copy_from_slice(&self.src_addr.to_le_bytes());
        b[32..36].copy_from_slice(&self.rkey.to_le_bytes());
        b[36..38].copy_from_slice(&self.pdid.to_le_bytes());
        b
    }

    /// Decode; `None` for an empty slot or an unknown kind.
    pub fn parse(b: &[u8; HEADER_BYTES]) -> Option<Header> {
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        let kind = match u32_at(8) {
            1 => Kind::Eager,
            2 => Kind::Rts,
            _ => return None,
        };
        let seq = u64_at(0);
        if seq == 0 {
            return None;
        }
        Some(Header {
            seq,
            kind,
            tag: u32_at(12),
            len: u64_at(16),
            src_addr: u64_at(24),
            rkey: u32_at(32),
            pdid: u16::from_le_bytes([b[36], b[37]]),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_empty() {
        let h = Header {
            seq: 7,
            kind: Kind::Rts,
            tag: 3,
            len: 1 << 20,
            src_addr: 0xdead_0000,
            rkey: 99,
            pdid: 2,
        };
        assert_eq!(Header::parse(&h.emit()), Some(h));
        assert_eq!(Header::parse(&[0; HEADER_BYTES]), None);
        let mut bad = h.emit();
        bad[8] = 9;
        assert_eq!(Header::parse(&bad), None);
    }
}
