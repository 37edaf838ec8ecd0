//! The distributed hash table of spec "Use cases": every process owns a volume (a table plus an
//! overflow heap of fixed size, with per-slot last pointers and a next-free-cell field).
//!
//! Layout of a volume in the owner's memory (all fields 64-bit words, so remote atomics apply):
//! - slot `s` at `base + 32 s`: `key` (0 = empty), `next` (first overflow cell + 1, 0 = none),
//!   `last` (last overflow cell of the chain + 1, 0 = none);
//! - heap cell `c` at `heap + 16 c`: `key`, `next`;
//! - `next_free` after the heap, then one designated page for AA deletes.
//!
//! Keys are nonzero 64-bit words and already hashed: [`DhtMap`] takes the target process and
//! the slot from the low 32 bits, so workloads can aim at a slot (to control the collision
//! ratio) without rejection sampling.
//!
//! Three ways to insert, all producing the same content:
//! - [`RmaInsert`]: the RMA protocol (spec): a remote CAS on the slot; on a collision a remote
//!   fetch-and-add for a free cell, a put plus flush of the element, a remote fetch-and-replace
//!   of the last pointer and a CAS linking the previous last element.
//! - [`Volume::local_insert`]: the same algorithm with local atomics, run by the AA handler
//!   after one active put to the slot's address.
//! - A sequential reference ([`Volume::local_insert`] in issue order on a fresh volume).

use std::collections::BTreeMap;

use unpinned_core::memory::PAGE_BYTES;

use crate::atomics::{execute, AtomicOp, WordMap, WordMemory};

/// Bytes per table slot (key, next, last, padding).
pub const SLOT_BYTES: u64 = 32;
/// Bytes per heap cell (key, next).
pub const CELL_BYTES: u64 = 16;

/// Where everything of one volume lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VolumeLayout {
    /// Address of slot 0.
    pub base: u64,
    /// Table slots (the spec's volumes have 2^21).
    pub table_slots: u32,
    /// Overflow heap cells.
    pub heap_cells: u32,
}

impl VolumeLayout {
    /// `key` word of slot `s`.
    pub fn slot_key(&self, s: u32) -> u64 {
        self.base + s as u64 * SLOT_BYTES
    }
    /// `next` word of slot `s`.
    pub fn slot_next(&self, s: u32) -> u64 {
        self.slot_key(s) + 8
    }
    /// `last` word of slot `s`.
    pub fn slot_last(&self, s: u32) -> u64 {
        self.slot_key(s) + 16
    }
    /// First byte of the heap.
    pub fn heap(&self) -> u64 {
        self.base + self.table_slots as u64 * SLOT_BYTES
    }
    /// `key` word of cell `c`.
    pub fn cell_key(&self, c: u32) -> u64 {
        self.heap() + c as u64 * CELL_BYTES
    }
    /// `next` word of cell `c`.
    pub fn cell_next(&self, c: u32) -> u64 {
        self.cell_key(c) + 8
    }
    /// The next-free-cell counter.
    pub fn next_free(&self) -> u64 {
        self.heap() + self.heap_cells as u64 * CELL_BYTES
    }
    /// The designated page AA deletes are put to.
    pub fn delete_page(&self) -> u64 {
        (self.next_free() / PAGE_BYTES + 1) * PAGE_BYTES
    }
    /// The `next` word that follows link value `p` (0 = the slot itself, else cell `p-1`).
    pub fn next_of(&self, slot: u32, p: u64) -> u64 {
        if p == 0 {
            self.slot_next(slot)
        } else {
            self.cell_next((p - 1) as u32)
        }
    }
    /// The slot whose `key` word is at `addr` (for the AA handler).
    pub fn slot_of(&self, addr: u64) -> Option<u32> {
        let off = addr.checked_sub(self.base)?;
        (off % SLOT_BYTES == 0 && off / SLOT_BYTES < self.table_slots as u64)
            .then_some((off / SLOT_BYTES) as u32)
    }
    /// Bytes from `base` to the end of the delete page.
    pub fn span(&self) -> u64 {
        self.delete_page() + PAGE_BYTES - self.base
    }
}

/// Maps keys to (process, slot).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DhtMap {
    /// Processes (volumes).
    pub procs: u32,
    /// log2 of the slots per volume.
    pub slot_bits: u32,
}

impl DhtMap {
    /// Owner and slot of `key` (from its low 32 bits, which are the hash).
    pub fn locate(&self, key: u64) -> (u32, u32) {
        let h = key as u32;
        let slot = h & ((1u32 << self.slot_bits) - 1);
        let target = (h >> self.slot_bits) % self.procs;
        (target, slot)
    }

    /// A key with hash (target, slot) and unique part `uniq` (>= 1, so the key is nonzero).
    pub fn make_key(&self, uniq: u32, target: u32, slot: u32) -> u64 {
        assert!(
            uniq >= 1 && target < self.procs && (target as u64) < (1u64 << (32 - self.slot_bits))
        );
        ((uniq as u64) << 32) | ((target as u64) << self.slot_bits) | slot as u64
    }
}

/// DHT errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DhtError {
    /// The overflow heap of a volume is exhausted.
    #[error("overflow heap full")]
    HeapFull,
    /// A link CAS found the next pointer taken (impossible in this protocol: a bug).
    #[error("link CAS failed")]
    LinkTaken,
    /// Walking the chain of a slot took more links than the heap has cells: the chain loops
    /// back on itself, so the volume's memory was corrupted (or is not a volume).
    #[error(
        "the chain of slot {slot} loops (more than {heap_cells} links): the volume is corrupted"
    )]
    ChainCycle {
        /// The slot whose chain loops.
        slot: u32,
        /// Cells in the heap (the longest possible chain).
        heap_cells: u32,
    },
}

/// The operations at the volume's owner, once for every driver: the AA handler's insert and
/// delete with local atomics, and the chain walk. They run on any [`WordMemory`]: the
/// simulator's sparse [`Volume`] and the live runtime's volume in real memory (whose
/// [`WordMemory::atomic`] is a real atomic instruction, as its handler thread shares the words
/// with the engine).
impl VolumeLayout {
    /// The handler's insert with local atomics. Returns the memory accesses it made (the
    /// driver charges one memory access each): 1 without collision, 5 with.
    pub fn local_insert(
        &self,
        mem: &mut dyn WordMemory,
        key: u64,
        slot: u32,
    ) -> Result<u32, DhtError> {
        let cas = |expected, new| AtomicOp::Cas { expected, new };
        if mem.atomic(self.slot_key(slot), cas(0, key)) == 0 {
            return Ok(1);
        }
        let c = mem.atomic(self.next_free(), AtomicOp::FetchAdd(1));
        if c >= self.heap_cells as u64 {
            return Err(DhtError::HeapFull);
        }
        mem.store(self.cell_key(c as u32), key);
        let prev = mem.atomic(self.slot_last(slot), AtomicOp::Swap(c + 1));
        if mem.atomic(self.next_of(slot, prev), cas(0, c + 1)) != 0 {
            return Err(DhtError::LinkTaken);
        }
        Ok(5)
    }

    /// The handler's delete (AA deletes are active puts of keys to the delete page; only the
    /// handler modifies chains then). Returns (found, memory accesses).
    pub fn local_delete(&self, mem: &mut dyn WordMemory, key: u64, slot: u32) -> (bool, u32) {
        let mut acc = 1;
        if mem.load(self.slot_key(slot)) == key {
            let first = mem.load(self.slot_next(slot));
            acc += 1;
            if first == 0 {
                mem.store(self.slot_key(slot), 0);
                return (true, acc + 1);
            }
            let c = (first - 1) as u32;
            let (ck, cn) = (mem.load(self.cell_key(c)), mem.load(self.cell_next(c)));
            mem.store(self.slot_key(slot), ck);
            mem.store(self.slot_next(slot), cn);
            if mem.load(self.slot_last(slot)) == first {
                mem.store(self.slot_last(slot), 0);
            }
            return (true, acc + 5);
        }
        let mut prev = 0u64;
        let mut cur = mem.load(self.slot_next(slot));
        acc += 1;
        while cur != 0 {
            let c = (cur - 1) as u32;
            acc += 2;
            let nxt = mem.load(self.cell_next(c));
            if mem.load(self.cell_key(c)) == key {
                mem.store(self.next_of(slot, prev), nxt);
                if mem.load(self.slot_last(slot)) == cur {
                    mem.store(self.slot_last(slot), prev);
                }
                return (true, acc + 2);
            }
            prev = cur;
            cur = nxt;
        }
        (false, acc)
    }

    /// The overflow links of slot `s` in order (link values: cell + 1), or
    /// [`DhtError::ChainCycle`] when there are more than the heap has cells.
    fn links(&self, mem: &dyn WordMemory, s: u32) -> Result<Vec<u64>, DhtError> {
        let mut out = Vec::new();
        let mut cur = mem.load(self.slot_next(s));
        while cur != 0 {
            if out.len() >= self.heap_cells as usize {
                return Err(DhtError::ChainCycle {
                    slot: s,
                    heap_cells: self.heap_cells,
                });
            }
            out.push(cur);
            cur = mem.load(self.cell_next((cur - 1) as u32));
        }
        Ok(out)
    }

    /// Keys of slot `s`, slot first then the chain.
    pub fn chain(&self, mem: &dyn WordMemory, s: u32) -> Result<Vec<u64>, DhtError> {
        let mut out = Vec::new();
        let k = mem.load(self.slot_key(s));
        if k != 0 {
            out.push(k);
        }
        for c in self.links(mem, s)? {
            out.push(mem.load(self.cell_key((c - 1) as u32)));
        }
        Ok(out)
    }

    /// The non-empty ones among `slots` with their keys sorted (order within a chain depends
    /// on timing; the set does not).
    pub fn contents(
        &self,
        mem: &dyn WordMemory,
        slots: impl IntoIterator<Item = u32>,
    ) -> Result<BTreeMap<u32, Vec<u64>>, DhtError> {
        let mut out = BTreeMap::new();
        for s in slots {
            let mut c = self.chain(mem, s)?;
            if !c.is_empty() {
                c.sort_unstable();
                out.insert(s, c);
            }
        }
        Ok(out)
    }

    /// Structural check of `slots`: the last pointer of every slot is the end of its chain.
    pub fn check(
        &self,
        mem: &dyn WordMemory,
        slots: impl IntoIterator<Item = u32>,
    ) -> Result<(), String> {
        for s in slots {
            let end = self
                .links(mem, s)
                .map_err(|e| e.to_string())?
                .last()
                .copied()
                .unwrap_or(0);
            let last = mem.load(self.slot_last(s));
            if last != end {
                return Err(format!(
                    "slot {s}: last pointer {last} but chain ends at {end}"
                ));
            }
        }
        Ok(())
    }
}

/// One volume (a process's part of the DHT) over a sparse word memory.
#[derive(Clone, Debug)]
pub struct Volume {
    /// Where the fields are.
    pub layout: VolumeLayout,
    /// The words.
    pub mem: WordMap,
}

impl Volume {
    /// An empty volume.
    pub fn new(layout: VolumeLayout) -> Volume {
        Volume {
            layout,
            mem: WordMap::default(),
        }
    }

    /// Remote or local atomic on a word of this volume.
    pub fn atomic(&mut self, addr: u64, op: AtomicOp) -> u64 {
        execute(&mut self.mem, addr, op)
    }

    /// Read a word.
    pub fn load(&self, addr: u64) -> u64 {
        self.mem.load(addr)
    }

    /// Write a word.
    pub fn store(&mut self, addr: u64, v: u64) {
        self.mem.store(addr, v)
    }

    /// [`VolumeLayout::local_insert`] on this volume.
    pub fn local_insert(&mut self, key: u64, slot: u32) -> Result<u32, DhtError> {
        self.layout.local_insert(&mut self.mem, key, slot)
    }

    /// [`VolumeLayout::local_delete`] on this volume.
    pub fn local_delete(&mut self, key: u64, slot: u32) -> (bool, u32) {
        self.layout.local_delete(&mut self.mem, key, slot)
    }

    /// Keys of slot `s`, slot first then the chain.
    pub fn chain(&self, s: u32) -> Result<Vec<u64>, DhtError> {
        self.layout.chain(&self.mem, s)
    }

    /// Local lookup.
    pub fn contains(&self, key: u64, slot: u32) -> Result<bool, DhtError> {
        Ok(self.chain(slot)?.contains(&key))
    }

    /// The slots with a written key or next word (the others are empty).
    fn written_slots(&self) -> Vec<u32> {
        let l = self.layout;
        let mut slots: Vec<u32> = self
            .mem
            .0
            .keys()
            .filter(|&&a| a >= l.base && a < l.heap())
            .filter_map(|&a| {
                let off = a - l.base;
                Some((off / SLOT_BYTES) as u32).filter(|_| off % SLOT_BYTES <= 8)
            })
            .collect();
        slots.sort_unstable();
        slots.dedup();
        slots
    }

    /// Every non-empty slot with its keys sorted (order within a chain depends on timing; the
    /// set does not).
    pub fn contents(&self) -> Result<BTreeMap<u32, Vec<u64>>, DhtError> {
        self.layout.contents(&self.mem, self.written_slots())
    }

    /// Structural check: the last pointer of every slot is the end of its chain.
    pub fn check(&self) -> Result<(), String> {
        self.layout.check(&self.mem, self.written_slots())
    }
}

/// One remote operation of an RMA protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RemoteOp {
    /// A remote atomic (a round trip: the result is needed).
    Atomic {
        /// Word address at the target.
        addr: u64,
        /// The operation.
        op: AtomicOp,
    },
    /// A put of one word.
    Put {
        /// Word address.
        addr: u64,
        /// Value.
        value: u64,
    },
    /// Wait until every earlier put to the target is complete (RMA flush: a round trip).
    Flush,
    /// A get of one word (a round trip).
    Get {
        /// Word address.
        addr: u64,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum InsertState {
    CasSlot,
    FetchCell,
    PutCell,
    FlushCell,
    ReplaceLast,
    LinkPrev,
    Done,
}

/// The RMA insert protocol of one key as a state machine: ask [`RmaInsert::op`], execute it
/// at the target, feed the result to [`RmaInsert::on_result`].
#[derive(Clone, Debug)]
pub struct RmaInsert {
    layout: VolumeLayout,
    key: u64,
    slot: u32,
    state: InsertState,
    cell: u64,
    prev: u64,
    ops: u32,
    flushes: u32,
}

impl RmaInsert {
    /// Insert `key` into `slot` of the volume at `layout`.
    pub fn new(layout: VolumeLayout, key: u64, slot: u32) -> RmaInsert {
        RmaInsert {
            layout,
            key,
            slot,
            state: InsertState::CasSlot,
            cell: 0,
            prev: 0,
            ops: 0,
            flushes: 0,
        }
    }

    /// The next remote operation, or `None` when done.
    pub fn op(&self) -> Option<RemoteOp> {
        let l = &self.layout;
        Some(match self.state {
            InsertState::CasSlot => RemoteOp::Atomic {
                addr: l.slot_key(self.slot),
                op: AtomicOp::Cas {
                    expected: 0,
                    new: self.key,
                },
            },
            InsertState::FetchCell => RemoteOp::Atomic {
                addr: l.next_free(),
                op: AtomicOp::FetchAdd(1),
            },
            InsertState::PutCell => RemoteOp::Put {
                addr: l.cell_key(self.cell as u32),
                value: self.key,
            },
            InsertState::FlushCell => RemoteOp::Flush,
            InsertState::ReplaceLast => RemoteOp::Atomic {
                addr: l.slot_last(self.slot),
                op: AtomicOp::Swap(self.cell + 1),
            },
            InsertState::LinkPrev => RemoteOp::Atomic {
                addr: l.next_of(self.slot, self.prev),
                op: AtomicOp::Cas {
                    expected: 0,
                    new: self.cell + 1,
                },
            },
            InsertState::Done => return None,
        })
    }

    /// Feed the result of the operation [`RmaInsert::op`] returned (0 for puts and flushes).
    pub fn on_result(&mut self, result: u64) -> Result<(), DhtError> {
        self.ops += 1;
        self.flushes += u32::from(self.state == InsertState::FlushCell);
        self.state = match self.state {
            InsertState::CasSlot if result == 0 => InsertState::Done,
            InsertState::CasSlot => InsertState::FetchCell,
            InsertState::FetchCell => {
                if result >= self.layout.heap_cells as u64 {
                    return Err(DhtError::HeapFull);
                }
                self.cell = result;
                InsertState::PutCell
            }
            InsertState::PutCell => InsertState::FlushCell,
            InsertState::FlushCell => InsertState::ReplaceLast,
            InsertState::ReplaceLast => {
                self.prev = result;
                InsertState::LinkPrev
            }
            InsertState::LinkPrev if result == 0 => InsertState::Done,
            InsertState::LinkPrev => return Err(DhtError::LinkTaken),
            InsertState::Done => InsertState::Done,
        };
        Ok(())
    }

    /// Whether the insert is complete.
    pub fn done(&self) -> bool {
        self.state == InsertState::Done
    }

    /// Whether the slot was taken (the collision path ran).
    pub fn collided(&self) -> bool {
        self.ops > 1
    }

    /// Remote operations executed so far.
    pub fn ops(&self) -> u32 {
        self.ops
    }

    /// Remote operations executed so far without the flushes: the atomics, puts and gets,
    /// each a request of its own on the network.
    pub fn remote_ops(&self) -> u32 {
        self.ops - self.flushes
    }
}

/// An RMA lookup: plain gets walking the chain.
#[derive(Clone, Debug)]
pub struct RmaLookup {
    layout: VolumeLayout,
    key: u64,
    slot: u32,
    /// Next address to read, and whether it is a key word (else a next word).
    at: Option<(u64, bool)>,
    found: bool,
}

impl RmaLookup {
    /// Look `key` up in `slot`.
    pub fn new(layout: VolumeLayout, key: u64, slot: u32) -> RmaLookup {
        RmaLookup {
            layout,
            key,
            slot,
            at: Some((layout.slot_key(slot), true)),
            found: false,
        }
    }

    /// The next get, or `None` when the answer is known.
    pub fn op(&self) -> Option<RemoteOp> {
        self.at.map(|(addr, _)| RemoteOp::Get { addr })
    }

    /// Feed the word the get returned.
    pub fn on_result(&mut self, word: u64) {
        let Some((addr, is_key)) = self.at else {
            return;
        };
        self.at = if is_key {
            if word == self.key {
                self.found = true;
                None
            } else if addr == self.layout.slot_key(self.slot) {
                Some((self.layout.slot_next(self.slot), false))
            } else {
                Some((addr + 8, false))
            }
        } else if word == 0 {
            None
        } else {
            Some((self.layout.cell_key((word - 1) as u32), true))
        };
    }

    /// `Some(found)` when finished.
    pub fn result(&self) -> Option<bool> {
        self.at.is_none().then_some(self.found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use unpinned_core::rng::SimRng;

    fn layout() -> VolumeLayout {
        VolumeLayout {
            base: 0x1000_0000,
            table_slots: 64,
            heap_cells: 1024,
        }
    }

    #[test]
    fn concurrent_rma_inserts_equal_sequential_reference() {
        // Many RMA inserts interleaved op by op in a random order (as concurrent sources
        // would), on few slots so that collisions are frequent.
        for seed in 0..30u64 {
            let mut rng = SimRng::seed_from_u64(seed);
            let l = layout();
            let mut vol = Volume::new(l);
            let mut reference = Volume::new(l);
            let keys: Vec<(u64, u32)> = (1..=300u64)
                .map(|k| (k << 32 | k, rng.gen_range(0..8)))
                .collect();
            let mut live: Vec<RmaInsert> =
                keys.iter().map(|&(k, s)| RmaInsert::new(l, k, s)).collect();
            for &(k, s) in &keys {
                reference.local_insert(k, s).unwrap();
            }
            while !live.is_empty() {
                let i = rng.gen_range(0..live.len());
                let ins = &mut live[i];
                let r = match ins.op().unwrap() {
                    RemoteOp::Atomic { addr, op } => vol.atomic(addr, op),
                    RemoteOp::Put { addr, value } => {
                        vol.store(addr, value);
                        0
                    }
                    RemoteOp::Flush | RemoteOp::Get { .. } => 0,
                };
                ins.on_result(r).unwrap();
                if ins.done() {
                    live.swap_remove(i);
                }
            }
            assert_eq!(
                vol.contents().unwrap(),
                reference.contents().unwrap(),
                "seed {seed}"
            );
            vol.check().unwrap();
            for &(k, s) in &keys {
                let mut lk = RmaLookup::new(l, k, s);
                while let Some(RemoteOp::Get { addr }) = lk.op() {
                    lk.on_result(vol.load(addr));
                }
                assert_eq!(
                    lk.result(),
                    Some(true),
                    "seed {seed}: key {k:x} found by RMA gets"
                );
            }
        }
    }

    #[test]
    fn rma_insert_op_counts() {
        let l = layout();
        let mut vol = Volume::new(l);
        let mut n = |k: u64| {
            let mut ins = RmaInsert::new(l, k, 3);
            while let Some(op) = ins.op() {
                let r = match op {
                    RemoteOp::Atomic { addr, op } => vol.atomic(addr, op),
                    RemoteOp::Put { addr, value } => {
                        vol.store(addr, value);
                        0
                    }
                    _ => 0,
                };
                ins.on_result(r).unwrap();
            }
            ins.ops()
        };
        assert_eq!(n(1), 1, "no collision: one remote CAS");
        assert_eq!(
            n(2),
            6,
            "collision: CAS, FAA, put, flush, fetch-and-replace, CAS"
        );
    }

    #[test]
    fn deletes() {
        let l = layout();
        let mut v = Volume::new(l);
        let mut r = Volume::new(l);
        let mut rng = SimRng::seed_from_u64(4);
        let mut keys = Vec::new();
        for k in 1..200u64 {
            let s = rng.gen_range(0..4);
            v.local_insert(k, s).unwrap();
            keys.push((k, s));
        }
        for &(k, s) in &keys {
            if k % 3 == 0 {
                assert!(v.local_delete(k, s).0);
            } else {
                r.local_insert(k, s).unwrap();
            }
        }
        assert!(!v.local_delete(3, keys[2].1).0, "already deleted");
        assert_eq!(v.contents().unwrap(), r.contents().unwrap());
        v.check().unwrap();
        // Inserting after deletes keeps the structure valid.
        v.local_insert(10_000, 0).unwrap();
        v.check().unwrap();
    }

    #[test]
    fn a_chain_cycle_is_a_typed_error_not_a_hang_or_a_panic() {
        let l = layout();
        let mut v = Volume::new(l);
        for k in [11, 12, 13] {
            v.local_insert(k, 4).unwrap();
        }
        assert_eq!(v.chain(4).unwrap(), vec![11, 12, 13]);
        // Corrupt the volume: the second cell links back to the first.
        v.store(l.cell_next(1), 1);
        let cycle = DhtError::ChainCycle {
            slot: 4,
            heap_cells: l.heap_cells,
        };
        assert_eq!(v.chain(4), Err(cycle));
        assert_eq!(v.contains(99, 4), Err(cycle));
        assert_eq!(v.contents(), Err(cycle));
        let e = v.check().unwrap_err();
        assert!(e.contains("slot 4") && e.contains("loops"), "{e}");
    }

    #[test]
    fn map_roundtrip() {
        let m = DhtMap {
            procs: 2048,
            slot_bits: 21,
        };
        let k = m.make_key(7, 2047, (1 << 21) - 1);
        assert_eq!(m.locate(k), (2047, (1 << 21) - 1));
    }
}
