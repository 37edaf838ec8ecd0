//! Bounce buffers for small blocking puts, and result words of blocking atomics, in the heap's
//! internal area.
//!
//! A blocking put returns when its source may be reused, so up to [`crate::rma::BOUNCE_MAX`]
//! bytes are copied first, and PART reads the copy (again on a retransmission) until the write
//! completes; a blocking atomic gives the engine a word to store the old value into. Before,
//! both were fresh allocations of the process heap, which the runtime does not watch: its
//! engine checked each one's residency with a `PAGEMAP_SCAN` system call whenever its last
//! verdict over that memory was older than its trust bound (crates/live/src/memory.rs), about
//! once per small put or atomic of a latency loop. The internal area is part of the exposed
//! symmetric heap, whose verdicts the runtime trusts until the kernel reports a change, so a
//! buffer here costs no scan. Requests larger than a slot, or made while every slot is
//! lent, still use the process heap.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Bytes of one slot.
pub const SLOT_BYTES: usize = 256;
/// Slots in the pool.
pub const SLOTS: usize = 1024;
/// Bytes of the pool.
pub const POOL_BYTES: usize = SLOT_BYTES * SLOTS;

/// The pool: [`SLOTS`] slots of [`SLOT_BYTES`] at `base`, and the indices of the free ones.
pub struct Pool {
    base: *mut u8,
    free: Mutex<Vec<u16>>,
}

// SAFETY: `base` is in the symmetric heap, which lives as long as the process; a slot is used
// by one owner at a time (the free list hands each index out once until it is given back).
unsafe impl Send for Pool {}
// SAFETY: as above.
unsafe impl Sync for Pool {}

const _: () = assert!(SLOTS <= u16::MAX as usize + 1 && SLOT_BYTES.is_multiple_of(8));

impl Pool {
    /// A pool over `[base, base + POOL_BYTES)`, which must be this process's memory, 8-aligned,
    /// for as long as the process lives and used by nothing else.
    pub fn new(base: *mut u8) -> Pool {
        Pool {
            base,
            free: Mutex::new((0..SLOTS as u16).rev().collect()),
        }
    }

    /// A slot of at least `len` bytes, if `len` fits one and one is free.
    fn take(&self, len: usize) -> Option<u16> {
        if len > SLOT_BYTES {
            return None;
        }
        self.free.lock().unwrap_or_else(|e| e.into_inner()).pop()
    }

    fn give_back(&self, i: u16) {
        self.free.lock().unwrap_or_else(|e| e.into_inner()).push(i);
    }

    fn slot(&self, i: u16) -> *mut u8 {
        // SAFETY: i < SLOTS, so the slot lies inside the pool.
        unsafe { self.base.add(i as usize * SLOT_BYTES) }
    }
}

/// A copy of a put's source that lives until the write completes.
pub enum Bounce {
    /// In a slot of the pool (given back when dropped). The pool outlives the copy (a
    /// requirement of [`Bounce::copy_of`]).
    Pool(*const Pool, u16),
    /// On the process heap.
    Heap(Box<[u8]>),
}

// SAFETY: the slot is this value's alone until it is dropped; the pool is `Sync`.
unsafe impl Send for Bounce {}

impl Bounce {
    /// A copy of `src[..len]`.
    ///
    /// # Safety
    /// `src` readable for `len` bytes; `pool` outlives the copy (the state's does: it lives as
    /// long as the process).
    pub unsafe fn copy_of(pool: &Pool, src: *const u8, len: usize) -> Bounce {
        match pool.take(len) {
            Some(i) => {
                // SAFETY: the slot is ours and at least `len` long; `src` readable (caller); a
                // slot never overlaps user memory.
                unsafe { std::ptr::copy_nonoverlapping(src, pool.slot(i), len) };
                Bounce::Pool(pool, i)
            }
            // SAFETY: caller.
            None => Bounce::Heap(unsafe { std::slice::from_raw_parts(src, len) }.into()),
        }
    }

    /// Where the copy starts.
    pub fn as_ptr(&self) -> *const u8 {
        match self {
            // SAFETY: the pool outlives this value (see the variant).
            Bounce::Pool(pool, i) => unsafe { &**pool }.slot(*i),
            Bounce::Heap(b) => b.as_ptr(),
        }
    }
}

impl Drop for Bounce {
    fn drop(&mut self) {
        if let Bounce::Pool(pool, i) = *self {
            // SAFETY: the pool outlives this value (see the variant).
            unsafe { &*pool }.give_back(i);
        }
    }
}

/// An 8-byte word for the old value of a blocking atomic, zeroed (the engine stores only into
/// a present page: see `State::sink`).
pub enum ResultWord {
    /// A slot of the pool.
    Pool(Bounce),
    /// On the process heap.
    Heap(Box<AtomicU64>),
}

impl ResultWord {
    /// A zeroed word.
    ///
    /// # Safety
    /// `pool` outlives the word (as for [`Bounce::copy_of`]).
    pub unsafe fn new(pool: &Pool) -> ResultWord {
        match pool.take(8) {
            Some(i) => {
                let w = ResultWord::Pool(Bounce::Pool(pool, i));
                w.word().store(0, Ordering::Relaxed);
                w
            }
            None => ResultWord::Heap(Box::new(AtomicU64::new(0))),
        }
    }

    /// The word.
    pub fn word(&self) -> &AtomicU64 {
        match self {
            // SAFETY: the start of a slot (slots are 8-aligned: SLOT_BYTES is a multiple of 8
            // and the pool's base is 8-aligned), ours while this value lives.
            ResultWord::Pool(b) => unsafe { &*(b.as_ptr() as *const AtomicU64) },
            ResultWord::Heap(w) => w,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pool over leaked memory (the state's lives as long as the process, like this one).
    fn pool() -> &'static Pool {
        let mem: &'static mut [u64] = vec![0u64; POOL_BYTES / 8].leak();
        Box::leak(Box::new(Pool::new(mem.as_mut_ptr() as *mut u8)))
    }

    #[test]
    fn copies_live_in_slots_until_dropped_then_the_slot_is_reused() {
        let p = pool();
        let data: Vec<u8> = (0..200u8).collect();
        // SAFETY: `data` is readable for its length.
        let b = unsafe { Bounce::copy_of(p, data.as_ptr(), data.len()) };
        assert!(matches!(b, Bounce::Pool(..)));
        // SAFETY: the copy is 200 bytes long and lives while `b` does.
        assert_eq!(
            unsafe { std::slice::from_raw_parts(b.as_ptr(), 200) },
            &data[..]
        );
        let at = b.as_ptr();
        drop(b);
        // SAFETY: as above.
        let again = unsafe { Bounce::copy_of(p, data.as_ptr(), 8) };
        assert_eq!(
            again.as_ptr(),
            at,
            "the slot given back is the next one taken"
        );
    }

    #[test]
    fn too_large_or_exhausted_falls_back_to_the_heap() {
        let p = pool();
        let data = vec![7u8; SLOT_BYTES + 1];
        // SAFETY: `data` is readable for its length.
        let big = unsafe { Bounce::copy_of(p, data.as_ptr(), data.len()) };
        assert!(matches!(big, Bounce::Heap(_)));
        // SAFETY: the copy lives while `big` does.
        assert_eq!(unsafe { *big.as_ptr().add(SLOT_BYTES) }, 7);
        // SAFETY: as above.
        let all: Vec<Bounce> = (0..SLOTS)
            .map(|_| unsafe { Bounce::copy_of(p, data.as_ptr(), 8) })
            .collect();
        assert!(all.iter().all(|b| matches!(b, Bounce::Pool(..))));
        let distinct: std::collections::HashSet<usize> =
            all.iter().map(|b| b.as_ptr() as usize).collect();
        assert_eq!(distinct.len(), SLOTS, "no slot is lent twice");
        // SAFETY: the pool is leaked.
        let w = unsafe { ResultWord::new(p) };
        assert!(matches!(w, ResultWord::Heap(_)));
        assert_eq!(w.word().load(Ordering::Relaxed), 0);
        drop(all);
        // SAFETY: the pool is leaked.
        let w = unsafe { ResultWord::new(p) };
        assert!(matches!(w, ResultWord::Pool(_)));
        assert_eq!(
            w.word().load(Ordering::Relaxed),
            0,
            "a reused slot is zeroed"
        );
    }
}
