//! The responder's receive-side block state, by [`rx_key`](crate::responder::rx_key).
//!
//! Every data packet looks its block up here. A node keeps the state of every block it saw
//! in the last `rx_idle` (thousands at link speed), so a hash map lookup per packet mostly
//! misses the CPU cache; yet consecutive packets name only a few blocks (one or two per
//! transfer in flight). Entries live in a slab, each key next to its state (one cache line to
//! check and update); a hash index maps keys to slab slots, and a small direct-mapped memo in
//! front of it remembers the slot of recent keys. A memo entry is checked against the key its
//! slot holds, so it never needs invalidating.

use rustc_hash::FxHashMap;

use crate::responder::RxBlock;

/// The key of a free slot. [`rx_key`](crate::responder::rx_key) leaves bits 1..32 zero, so
/// no real key equals it.
const FREE: u128 = u128::MAX;

/// Memo entries (a power of two).
const MEMO: usize = 64;

/// Receive-side state per block key.
pub(crate) struct RxTable {
    /// Key and state per slot (key [`FREE`] and stale state when the slot is unused).
    slots: Vec<(u128, RxBlock)>,
    /// Free slots, reused last-freed first.
    free: Vec<u32>,
    /// Key -> slot.
    index: FxHashMap<u128, u32>,
    /// Slot of a recent key per small hash of the key (verified against `keys`).
    memo: [u32; MEMO],
}

/// The memo entry of a key: both halves folded, Fibonacci-hashed (the block number sits in the
/// low half, the source and transfer in the high half).
#[inline(always)]
fn memo_of(key: u128) -> usize {
    ((key as u64 ^ (key >> 64) as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
        >> (64 - MEMO.trailing_zeros())) as usize
}

impl Default for RxTable {
    fn default() -> RxTable {
        RxTable {
            slots: Vec::new(),
            free: Vec::new(),
            index: FxHashMap::default(),
            memo: [0; MEMO],
        }
    }
}

impl RxTable {
    /// Entries held.
    pub(crate) fn len(&self) -> usize {
        self.index.len()
    }

    /// True when no entry is held.
    pub(crate) fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// The slot of `key`, if held.
    #[inline]
    fn find(&self, key: u128) -> Option<usize> {
        let s = self.memo[memo_of(key)] as usize;
        if self.slots.get(s).is_some_and(|e| e.0 == key) {
            return Some(s);
        }
        self.index.get(&key).map(|&s| s as usize)
    }

    /// The state of `key`, if held.
    pub(crate) fn get(&self, key: u128) -> Option<&RxBlock> {
        debug_assert_ne!(key, FREE);
        self.find(key).map(|s| &self.slots[s].1)
    }

    /// The state of `key`, if held, to change it.
    pub(crate) fn get_mut(&mut self, key: u128) -> Option<&mut RxBlock> {
        debug_assert_ne!(key, FREE);
        self.find(key).map(|s| &mut self.slots[s].1)
    }

    /// The state of `key`, created by `make` if not held (the memo check is inlined into the
    /// per-packet caller; a miss goes through [`RxTable::get_or_insert_slow`]).
    #[inline(always)]
    pub(crate) fn get_or_insert_with(
        &mut self,
        key: u128,
        make: impl FnOnce() -> RxBlock,
    ) -> &mut RxBlock {
        debug_assert_ne!(key, FREE);
        let m = memo_of(key);
        let s = self.memo[m] as usize;
        if self.slots.get(s).is_some_and(|e| e.0 == key) {
            return &mut self.slots[s].1;
        }
        let s = self.get_or_insert_slow(key, make);
        self.memo[m] = s as u32;
        &mut self.slots[s].1
    }

    /// [`RxTable::get_or_insert_with`] past the memo: the index, or a new slot.
    #[inline(never)]
    fn get_or_insert_slow(&mut self, key: u128, make: impl FnOnce() -> RxBlock) -> usize {
        if let Some(&s) = self.index.get(&key) {
            return s as usize;
        }
        let block = make();
        let s = match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = (key, block);
                s
            }
            None => {
                self.slots.push((key, block));
                (self.slots.len() - 1) as u32
            }
        };
        self.index.insert(key, s);
        s as usize
    }

    /// Keep only the entries for which `keep` returns true (it may take what it needs from an
    /// entry it drops).
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(u128, &mut RxBlock) -> bool) {
        for s in 0..self.slots.len() {
            let (key, block) = &mut self.slots[s];
            if *key == FREE || keep(*key, block) {
                continue;
            }
            let key = std::mem::replace(key, FREE);
            self.index.remove(&key);
            self.free.push(s as u32);
        }
    }

    /// Every entry, in slot order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u128, &RxBlock)> {
        self.slots
            .iter()
            .filter(|(k, _)| *k != FREE)
            .map(|(k, b)| (*k, b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use unpinned_core::time::Instant;

    fn block(seq: u16) -> RxBlock {
        RxBlock {
            seq,
            bitmap: crate::bitmap::PacketBitmap::new(1),
            received: 0,
            expected: 1,
            failed: false,
            done: false,
            selective: false,
            last: Instant::ZERO,
        }
    }

    /// Against a plain hash map, over inserts, lookups and sweeps of keys that collide in the
    /// memo: every lookup finds what the map holds.
    #[test]
    fn behaves_like_a_map() {
        let mut t = RxTable::default();
        let mut m: FxHashMap<u128, u16> = FxHashMap::default();
        let mut x = 7u64;
        for step in 0..50_000u32 {
            x = unpinned_core::rng::splitmix64(x);
            let key = (((x % 5) as u128) << 96)
                | (((x >> 8) % 7) as u128) << 64
                | ((((x >> 16) % 40) as u128) << 32)
                | ((x >> 30) & 1) as u128;
            match (x >> 40) % 10 {
                0 => {
                    let cut = (x >> 50) % 7;
                    t.retain(|k, _| ((k >> 64) as u64) % 7 != cut);
                    m.retain(|k, _| ((k >> 64) as u64) % 7 != cut);
                }
                1..=3 => assert_eq!(
                    t.get(key).map(|b| b.seq),
                    m.get(&key).copied(),
                    "step {step}"
                ),
                _ => {
                    let seq = step as u16;
                    let b = t.get_or_insert_with(key, || block(seq));
                    let want = *m.entry(key).or_insert(seq);
                    assert_eq!(b.seq, want, "step {step}");
                }
            }
            assert_eq!(t.len(), m.len());
            assert_eq!(t.is_empty(), m.is_empty());
        }
        let mut a: Vec<(u128, u16)> = t.iter().map(|(k, b)| (k, b.seq)).collect();
        let mut b: Vec<(u128, u16)> = m.into_iter().collect();
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a, b);
    }
}
