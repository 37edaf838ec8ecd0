//! Remote atomics (issue item 5): compare-and-swap, fetch-and-add and fetch-and-replace,
//! executed at the target (by its NIC in RMA, by a handler's local atomics in AA) on 64-bit
//! words. The RMA baselines of the DHT and the counter are built from these.

use rustc_hash::FxHashMap;

/// The atomic operations: core's single definition (variants `Cas`, `FetchAdd`, `Swap`, the
/// spec's fetch-and-replace), re-exported so the use cases name it from here.
pub use unpinned_core::api::AtomicOp;

/// Word-addressed memory the atomics and the DHT's volume operations run on: a sparse map in
/// the simulator ([`WordMap`]), real memory shared with other threads in the live runtime.
pub trait WordMemory {
    /// Load the word at `addr` (8-byte aligned).
    fn load(&self, addr: u64) -> u64;
    /// Store the word at `addr`.
    fn store(&mut self, addr: u64, v: u64);
    /// Execute `op` on the word at `addr` as one read-modify-write; returns the previous
    /// value. The default loads, applies and stores (stores only a changed word): atomic for a
    /// memory one thread owns; a memory other threads update concurrently overrides it with
    /// an atomic instruction ([`AtomicOp::apply_atomic`]).
    fn atomic(&mut self, addr: u64, op: AtomicOp) -> u64 {
        let mut w = self.load(addr);
        let old = op.apply(&mut w);
        if w != old {
            self.store(addr, w);
        }
        old
    }
}

/// A sparse word memory: unwritten words read 0.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WordMap(pub FxHashMap<u64, u64>);

impl WordMemory for WordMap {
    fn load(&self, addr: u64) -> u64 {
        self.0.get(&addr).copied().unwrap_or(0)
    }
    fn store(&mut self, addr: u64, v: u64) {
        if v == 0 {
            self.0.remove(&addr);
        } else {
            self.0.insert(addr, v);
        }
    }
}

/// Execute `op` on the word at `addr`; returns the old value. One memory access at the
/// target (the atomic unit's read-modify-write), which drivers charge.
pub fn execute(mem: &mut dyn WordMemory, addr: u64, op: AtomicOp) -> u64 {
    debug_assert_eq!(addr % 8, 0, "atomics are on aligned words");
    mem.atomic(addr, op)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops() {
        let mut m = WordMap::default();
        assert_eq!(
            execute(
                &mut m,
                8,
                AtomicOp::Cas {
                    expected: 0,
                    new: 5
                }
            ),
            0
        );
        assert_eq!(
            execute(
                &mut m,
                8,
                AtomicOp::Cas {
                    expected: 0,
                    new: 6
                }
            ),
            5,
            "failed CAS returns the current value"
        );
        assert_eq!(m.load(8), 5);
        assert_eq!(execute(&mut m, 8, AtomicOp::FetchAdd(3)), 5);
        assert_eq!(execute(&mut m, 8, AtomicOp::Swap(1)), 8);
        assert_eq!(m.load(8), 1);
    }
}
