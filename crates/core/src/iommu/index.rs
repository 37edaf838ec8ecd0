//! Key -> slot index of a wide TLB set: open addressing with linear probing and
//! backward-shift deletion.
//!
//! A TLB inserts and evicts on every miss, forever. A general hash map leaves a tombstone per
//! removal, and lookups then probe through them until the next rehash; here a removal moves
//! the following entries back instead, so probe chains stay as short as the load allows. The
//! table holds slot numbers only; keys are read from the TLB's slots.

use crate::memory::Pdid;

/// An empty table cell.
const NIL: u32 = u32::MAX;

/// The index: `cells.len()` is a power of two, at least 4 times the entries it may hold.
#[derive(Clone, Debug)]
pub(crate) struct SlotIndex {
    cells: Vec<u32>,
    mask: usize,
}

/// Hash of a key (the same mixer as the set choice, on a different packing).
#[inline(always)]
fn hash(pdid: Pdid, vpn: u64) -> usize {
    crate::rng::splitmix64(vpn.rotate_left(17) ^ pdid as u64) as usize
}

impl SlotIndex {
    /// An index for up to `entries` keys.
    pub(crate) fn new(entries: usize) -> SlotIndex {
        let n = (entries * 4).next_power_of_two().max(8);
        SlotIndex {
            cells: vec![NIL; n],
            mask: n - 1,
        }
    }

    /// The slot holding `(pdid, vpn)`; `key_of(slot)` reads a slot's key.
    #[inline]
    pub(crate) fn get(
        &self,
        pdid: Pdid,
        vpn: u64,
        key_of: impl Fn(u32) -> (Pdid, u64),
    ) -> Option<u32> {
        let mut i = hash(pdid, vpn) & self.mask;
        loop {
            let c = self.cells[i];
            if c == NIL {
                return None;
            }
            if key_of(c) == (pdid, vpn) {
                return Some(c);
            }
            i = (i + 1) & self.mask;
        }
    }

    /// Add `(pdid, vpn) -> slot`; the key must not be present.
    pub(crate) fn insert(&mut self, pdid: Pdid, vpn: u64, slot: u32) {
        let mut i = hash(pdid, vpn) & self.mask;
        while self.cells[i] != NIL {
            i = (i + 1) & self.mask;
        }
        self.cells[i] = slot;
    }

    /// Remove `(pdid, vpn)` if present, closing the gap so later lookups stop early.
    pub(crate) fn remove(&mut self, pdid: Pdid, vpn: u64, key_of: impl Fn(u32) -> (Pdid, u64)) {
        let mut i = hash(pdid, vpn) & self.mask;
        loop {
            let c = self.cells[i];
            if c == NIL {
                return;
            }
            if key_of(c) == (pdid, vpn) {
                break;
            }
            i = (i + 1) & self.mask;
        }
        // Backward shift: an entry after the hole moves into it unless its home lies
        // cyclically in (hole, entry], where it is still reachable without passing the hole.
        let mut hole = i;
        let mut j = i;
        loop {
            j = (j + 1) & self.mask;
            let c = self.cells[j];
            if c == NIL {
                break;
            }
            let (p, v) = key_of(c);
            let home = hash(p, v) & self.mask;
            let stays = if hole <= j {
                hole < home && home <= j
            } else {
                hole < home || home <= j
            };
            if !stays {
                self.cells[hole] = c;
                hole = j;
            }
        }
        self.cells[hole] = NIL;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn behaves_like_a_map_under_churn() {
        // Slots hold keys as a TLB's would; a reference map checks every answer.
        let mut keys: Vec<Option<(Pdid, u64)>> = vec![None; 64];
        let mut ix = SlotIndex::new(64);
        let mut reference: HashMap<(Pdid, u64), u32> = HashMap::new();
        let mut x = 7u64;
        for step in 0..100_000 {
            x = crate::rng::splitmix64(x);
            let slot = (x % 64) as u32;
            let key_of = |s: u32| keys[s as usize].expect("indexed slots hold keys");
            match keys[slot as usize] {
                Some(k) if x & 0x100 != 0 => {
                    ix.remove(k.0, k.1, key_of);
                    reference.remove(&k);
                    keys[slot as usize] = None;
                }
                Some(_) => {}
                None => {
                    let k = ((x >> 20) as Pdid % 3, (x >> 32) % 500);
                    if !reference.contains_key(&k) {
                        keys[slot as usize] = Some(k);
                        ix.insert(k.0, k.1, slot);
                        reference.insert(k, slot);
                    }
                }
            }
            let probe = ((x >> 40) as Pdid % 3, (x >> 8) % 500);
            let key_of = |s: u32| keys[s as usize].expect("indexed slots hold keys");
            assert_eq!(
                ix.get(probe.0, probe.1, key_of),
                reference.get(&probe).copied(),
                "step {step}"
            );
        }
    }
}
