//! Atomic memory operations on 32- and 64-bit symmetric words.
//!
//! On this PE or through the load/store mapping: CPU atomics. Remote: PART atomics
//! ([`unpinned_live::Runtime::atomic`]: compare-and-swap, fetch-and-add, swap on aligned
//! 8-byte words); a 32-bit operation and the bitwise ones are compare-and-swap loops on the
//! aligned 8-byte word that contains the operand.

use std::ffi::c_int;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use unpinned_live::{AtomicOp, LiveError, RemoteKey};

use crate::bounce::ResultWord;
use crate::ctx::Ctx;
use crate::state::{fatal, State};
use crate::xlate::Target;

/// An atomic operation on a word's bits (values are the operand's bits, zero-extended).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Amo {
    /// Read.
    Fetch,
    /// Replace, returning the old value (also `set`).
    Swap(u64),
    /// Compare (first) and swap in (second).
    Cas(u64, u64),
    /// Wrapping add.
    Add(u64),
    /// Bitwise and.
    And(u64),
    /// Bitwise or.
    Or(u64),
    /// Bitwise xor.
    Xor(u64),
}

impl Amo {
    /// The new value of a word holding `old` (`mask`: the operand's width).
    pub fn apply(self, old: u64, mask: u64) -> u64 {
        (match self {
            Amo::Fetch => old,
            Amo::Swap(v) => v,
            Amo::Cas(c, v) => {
                if old & mask == c & mask {
                    v
                } else {
                    old
                }
            }
            Amo::Add(v) => old.wrapping_add(v),
            Amo::And(v) => old & v,
            Amo::Or(v) => old | v,
            Amo::Xor(v) => old ^ v,
        }) & mask
    }
}

/// Apply `op` to the `width`-byte (4 or 8) word at `p` in this process; returns the old bits.
///
/// # Safety
/// `p` valid and aligned to `width`.
pub unsafe fn local(p: *mut u8, width: usize, op: Amo) -> u64 {
    let sc = Ordering::SeqCst;
    if width == 8 {
        // SAFETY: caller: valid, aligned.
        let a = unsafe { &*(p as *const AtomicU64) };
        match op {
            Amo::Fetch => a.load(sc),
            Amo::Swap(v) => a.swap(v, sc),
            Amo::Cas(c, v) => match a.compare_exchange(c, v, sc, sc) {
                Ok(o) | Err(o) => o,
            },
            Amo::Add(v) => a.fetch_add(v, sc),
            Amo::And(v) => a.fetch_and(v, sc),
            Amo::Or(v) => a.fetch_or(v, sc),
            Amo::Xor(v) => a.fetch_xor(v, sc),
        }
    } else {
        // SAFETY: caller: valid, aligned.
        let a = unsafe { &*(p as *const AtomicU32) };
        (match op {
            Amo::Fetch => a.load(sc),
            Amo::Swap(v) => a.swap(v as u32, sc),
            Amo::Cas(c, v) => match a.compare_exchange(c as u32, v as u32, sc, sc) {
                Ok(o) | Err(o) => o,
            },
            Amo::Add(v) => a.fetch_add(v as u32, sc),
            Amo::And(v) => a.fetch_and(v as u32, sc),
            Amo::Or(v) => a.fetch_or(v as u32, sc),
            Amo::Xor(v) => a.fetch_xor(v as u32, sc),
        }) as u64
    }
}

fn remote_word(st: &State, call: &str, pe: u32, addr: u64, key: RemoteKey, op: AtomicOp) -> u64 {
    let failed = |e: LiveError| -> ! {
        fatal(
            call,
            format!("the atomic on PE {pe} at {addr:#x} failed: {e}"),
        )
    };
    // The old value's word, in the bounce pool (crates/shmem/src/bounce.rs says why).
    // SAFETY: the state's pool lives as long as the process.
    let result = unsafe { ResultWord::new(&st.bounce) };
    let word = result.word();
    // SAFETY: `result` lives until the completion, which we wait for below (without a
    // deadline: a slow engine keeps the word lent), and nothing touches it meanwhile.
    let id = unsafe { st.rt.post_atomic(pe, word.as_ptr(), addr, key, op) }
        .unwrap_or_else(|e| failed(e));
    loop {
        match st.rt.wait(id) {
            Ok(_) => return word.load(Ordering::Acquire),
            Err(LiveError::Timeout(_)) => st.check_exit_word(),
            Err(e) => failed(e),
        }
    }
}

/// Apply `op` to the `width`-byte word at remote `addr` of `pe` through PART.
fn remote(
    st: &State,
    call: &str,
    pe: u32,
    addr: u64,
    key: RemoteKey,
    width: usize,
    op: Amo,
) -> u64 {
    if width == 8 {
        match op {
            Amo::Fetch => return remote_word(st, call, pe, addr, key, AtomicOp::FetchAdd(0)),
            Amo::Swap(v) => return remote_word(st, call, pe, addr, key, AtomicOp::Swap(v)),
            Amo::Add(v) => return remote_word(st, call, pe, addr, key, AtomicOp::FetchAdd(v)),
            Amo::Cas(c, v) => {
                return remote_word(
                    st,
                    call,
                    pe,
                    addr,
                    key,
                    AtomicOp::Cas {
                        expected: c,
                        new: v,
                    },
                )
            }
            _ => {}
        }
    }
    // A compare-and-swap loop on the containing aligned word.
    let word = addr & !7;
    let shift = (addr - word) * 8;
    let mask = if width == 8 { u64::MAX } else { 0xffff_ffff };
    let mut old = remote_word(st, call, pe, word, key, AtomicOp::FetchAdd(0));
    if op == Amo::Fetch {
        return (old >> shift) & mask;
    }
    loop {
        let lane = (old >> shift) & mask;
        let new_lane = op.apply(lane, mask);
        let new = (old & !(mask << shift)) | (new_lane << shift);
        if new == old {
            return lane; // nothing to write (a failed compare, an idempotent and/or)
        }
        let seen = remote_word(
            st,
            call,
            pe,
            word,
            key,
            AtomicOp::Cas { expected: old, new },
        );
        if seen == old {
            return lane;
        }
        old = seen;
    }
}

/// Apply `op` to the symmetric `width`-byte (4 or 8) word `dest` of `pe`; returns the old bits.
///
/// # Safety
/// `dest` symmetric and aligned to `width`.
pub unsafe fn amo_bits(
    st: &State,
    ctx: &Ctx,
    call: &str,
    pe: c_int,
    dest: *mut u8,
    width: usize,
    op: Amo,
) -> u64 {
    if !(dest as usize).is_multiple_of(width) {
        fatal(
            call,
            format!("address {dest:p} is not aligned to its {width}-byte type"),
        );
    }
    match st.target(call, pe, dest, width) {
        // SAFETY: aligned (checked) and valid (symmetric).
        Target::Local(p) | Target::Mapped(p) => unsafe { local(p, width, op) },
        Target::Remote { addr, key } => {
            if ctx.has_writes() {
                ctx.quiet();
            }
            remote(st, call, pe as u32, addr, key, width, op)
        }
    }
}
