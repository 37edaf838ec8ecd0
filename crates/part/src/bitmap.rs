//! Which packets of a block arrived: one bit per packet, the first 64 inline.
//!
//! Every arriving data packet tests and sets its bit. With the bits in a separate allocation
//! that was one more dependent cache line per packet (at thousands of simulated nodes, a miss);
//! the reference profiles have at most 64 packets per block (16 KiB blocks of 256 B packets),
//! so the whole bitmap is the inline word and the rest stays empty (no allocation).

/// One bit per packet of a block attempt.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PacketBitmap {
    /// Packets 0..64.
    first: u64,
    /// Packets 64.., 64 per word (empty for blocks of at most 64 packets).
    rest: Vec<u64>,
}

impl PacketBitmap {
    /// No packet of `packets` received.
    pub fn new(packets: u32) -> PacketBitmap {
        let mut b = PacketBitmap::default();
        b.reset(packets);
        b
    }

    /// No packet of `packets` received, reusing the allocation (if any).
    pub fn reset(&mut self, packets: u32) {
        self.first = 0;
        self.rest.clear();
        self.rest
            .resize((packets.div_ceil(64) as usize).saturating_sub(1), 0);
    }

    /// Whether packet `index` was received. Panics if `index` is beyond the packets given to
    /// [`PacketBitmap::new`] / [`PacketBitmap::reset`] (rounded up to 64).
    #[inline(always)]
    pub fn contains(&self, index: usize) -> bool {
        let word = if index < 64 {
            self.first
        } else {
            self.rest[index / 64 - 1]
        };
        word & (1 << (index % 64)) != 0
    }

    /// Mark packet `index` received (the same bound as [`PacketBitmap::contains`]).
    #[inline(always)]
    pub fn insert(&mut self, index: usize) {
        let word = if index < 64 {
            &mut self.first
        } else {
            &mut self.rest[index / 64 - 1]
        };
        *word |= 1 << (index % 64);
    }

    /// The first packet of `packets` not received (`packets` when all were).
    pub fn first_missing(&self, packets: u32) -> u32 {
        (0..packets)
            .find(|&i| !self.contains(i as usize))
            .unwrap_or(packets)
    }

    /// Packets `base..base + 64` (those below `packets`), one bit each, least significant
    /// first: the window a SACK reports.
    pub fn window(&self, base: u32, packets: u32) -> u64 {
        (base..packets.min(base.saturating_add(64)))
            .filter(|&i| self.contains(i as usize))
            .fold(0, |w, i| w | 1 << (i - base))
    }

    /// The allocation beyond the inline word, for reuse (the bitmap keeps the inline word).
    pub fn take_rest(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.rest)
    }

    /// [`PacketBitmap::new`] reusing `rest` (from [`PacketBitmap::take_rest`]).
    pub fn with_rest(packets: u32, rest: Vec<u64>) -> PacketBitmap {
        let mut b = PacketBitmap { first: 0, rest };
        b.reset(packets);
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against a plain vector of bools, for sizes around the inline word's 64.
    #[test]
    fn bits_match_a_plain_vector() {
        for packets in [1u32, 2, 63, 64, 65, 127, 128, 129, 300] {
            let mut b = PacketBitmap::new(packets);
            let mut want = vec![false; packets as usize];
            for i in (0..packets as usize).rev().step_by(3).chain([0]) {
                b.insert(i);
                want[i] = true;
                for (j, &w) in want.iter().enumerate() {
                    assert_eq!(b.contains(j), w, "{packets} packets, bit {j}");
                }
            }
            let first = want.iter().position(|&w| !w).unwrap_or(want.len()) as u32;
            assert_eq!(b.first_missing(packets), first, "{packets} packets");
            for base in [0, first, packets.saturating_sub(3)] {
                let w = b.window(base, packets);
                for i in 0..64u32 {
                    let held = want.get((base + i) as usize).copied().unwrap_or(false);
                    assert_eq!(
                        w >> i & 1 != 0,
                        held,
                        "{packets} packets, window {base} bit {i}"
                    );
                }
            }
            b.reset(packets);
            assert!((0..packets as usize).all(|j| !b.contains(j)));
            let rest = b.take_rest();
            let b2 = PacketBitmap::with_rest(packets, rest);
            assert!((0..packets as usize).all(|j| !b2.contains(j)));
        }
    }
}
