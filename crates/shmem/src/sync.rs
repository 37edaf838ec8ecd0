//! Waiting on local memory, the world barrier and distributed locks.

use std::ffi::c_int;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::amo::{amo_bits, Amo};
use crate::ctx::Pending;
use crate::state::{fatal, State, BARRIER_FLAGS_OFF, BARRIER_SOURCES_OFF, EXIT_WORD_OFF, SINK_OFF};
use crate::xlate::Target;

/// `SHMEM_CMP_EQ` .. `SHMEM_CMP_LE` (include/shmem/types.h).
pub const CMP_EQ: c_int = 1;
/// Not equal.
pub const CMP_NE: c_int = 2;
/// Greater than.
pub const CMP_GT: c_int = 3;
/// Greater or equal.
pub const CMP_GE: c_int = 4;
/// Less than.
pub const CMP_LT: c_int = 5;
/// Less or equal.
pub const CMP_LE: c_int = 6;

/// `a cmp b`; an unknown operator is a fatal error of `call`.
pub fn compare<T: PartialOrd>(call: &str, a: T, cmp: c_int, b: T) -> bool {
    match cmp {
        CMP_EQ => a == b,
        CMP_NE => a != b,
        CMP_GT => a > b,
        CMP_GE => a >= b,
        CMP_LT => a < b,
        CMP_LE => a <= b,
        _ => fatal(
            call,
            format!(
                "{cmp} is not a comparison operator (use SHMEM_CMP_EQ, _NE, _GT, _GE, _LT or _LE)"
            ),
        ),
    }
}

/// Spin until `done()`: drives the engine (the flag is written by a PART packet that someone
/// must take from the ring; not when every heap is mapped, the flags then being written with
/// stores), yields the CPU after a short spin (a very short one unless this thread has a CPU
/// of its own: the PE it waits for may need this CPU to get there), and leaves if another PE
/// called `shmem_global_exit`.
///
/// Unpinned, it drives at every poll while spinning and at every
/// [`PROGRESS_EVERY_YIELDING`]th once yielding: the progress thread does that work in larger
/// turns, and a turn per yield halved the bandwidth of a peer's 1 MiB reads. Pinned (a PE
/// that `oshrun` bound to a CPU of its own, which its progress thread shares), it counts as
/// the engine's driver for the whole wait ([`unpinned_live::Runtime::driving`]), drives at
/// every poll and, past the spin, yields only every [`PINNED_YIELD_POLLS`]th poll: the
/// progress thread of such a PE sleeps on the doorbell as soon as it is idle
/// (crates/shmem/src/bind.rs, `BOUND_YIELD_US`), so the waiter is the one that takes packets
/// from the ring. Left to the progress thread, peers would pay a doorbell wake-up per packet
/// to a PE that polls anyway; yielding at every poll, the waiter took a peer's large
/// transfers in slowly (docs/performance.md, "Signals and bounce buffers in the internal
/// area; passive targets"). The yield every few dozen polls lets the page-in thread, which
/// shares the CPU, run. Every [`DRAIN_EVERY_POLLS`]th poll it empties the broadcast slots
/// that hold messages into the stage's stash, so that no root waits for a slot of a PE
/// that waits here.
pub fn wait_while(st: &State, mut done: impl FnMut() -> bool) {
    let drive = !st.all_mapped;
    let pinned = unpinned_os::affinity::current_thread_pinned();
    let spin_max = if pinned {
        SPIN_BEFORE_YIELD
    } else {
        SPIN_BEFORE_YIELD_SHARED
    };
    let _driving = (drive && pinned).then(|| st.rt.driving());
    let mut spins: u32 = 0;
    loop {
        if done() {
            std::sync::atomic::fence(Ordering::SeqCst);
            return;
        }
        spins = spins.wrapping_add(1);
        if spins.is_multiple_of(DRAIN_EVERY_POLLS) {
            // A root may be waiting for a slot of ours (crates/shmem/src/coll/staged.rs).
            st.stage.drain(st);
        }
        // While spinning, an engine turn at every poll: an idle turn costs about as much as a
        // few polls, and a turn only every 128th poll (~3 us of spin hints here) delayed every
        // packet to this PE by half of that on average (the barrier's and broadcast's flag
        // writes, the acknowledgements and atomic responses their initiators wait for).
        if drive && (pinned || spins <= spin_max || spins.is_multiple_of(PROGRESS_EVERY_YIELDING)) {
            let _ = st.rt.progress();
        }
        if spins > spin_max && (!pinned || spins.is_multiple_of(PINNED_YIELD_POLLS)) {
            std::thread::yield_now();
            if spins.is_multiple_of(1024) {
                st.check_exit_word();
            }
        } else {
            std::hint::spin_loop();
        }
    }
}

/// Polls between two looks at the broadcast slots ([`crate::coll::staged::Stage::drain`]).
const DRAIN_EVERY_POLLS: u32 = 256;
/// Polls between two engine turns driven by a waiter that yields at every poll.
const PROGRESS_EVERY_YIELDING: u32 = 128;
/// Polls before a waiter on a CPU of its own starts yielding the CPU at each poll.
const SPIN_BEFORE_YIELD: u32 = 4096;
/// Polls before a waiter that may share its CPU starts yielding.
const SPIN_BEFORE_YIELD_SHARED: u32 = 64;
/// Past its spin, a waiter on a CPU of its own yields once per this many polls.
const PINNED_YIELD_POLLS: u32 = 64;

/// The barrier flag of round `k` for barriers of epoch parity `parity` in the heap of this PE
/// (two per round, [`FLAG_WORDS`] in all).
fn flag(base: *mut u8, k: usize, parity: u64) -> &'static AtomicU64 {
    let i = 2 * k + parity as usize;
    debug_assert!(i < FLAG_WORDS);
    // SAFETY: the internal area of a heap mapping, 8-aligned; mappings live forever.
    unsafe { &*(base.add(BARRIER_FLAGS_OFF + 8 * i) as *const AtomicU64) }
}

/// The source of PART writes to flag `(k, parity)` of peers, in the heap of this PE
/// ([`BARRIER_SOURCES_OFF`] says why it lives there).
fn source(base: *mut u8, k: usize, parity: u64) -> &'static AtomicU64 {
    let i = 2 * k + parity as usize;
    debug_assert!(i < FLAG_WORDS);
    // SAFETY: the internal area of this PE's heap, 8-aligned (asserted below); lives forever.
    unsafe { &*(base.add(BARRIER_SOURCES_OFF + 8 * i) as *const AtomicU64) }
}

/// Barrier flag words: two per dissemination round, 32 rounds (2^32 PEs).
const FLAG_WORDS: usize = 64;
const _: () = assert!(BARRIER_FLAGS_OFF + 8 * FLAG_WORDS <= EXIT_WORD_OFF);
const _: () = assert!(BARRIER_SOURCES_OFF + 8 * FLAG_WORDS <= SINK_OFF);

/// Synchronize all PEs (dissemination: in round k, PE i signals PE i + 2^k and waits for
/// PE i - 2^k), without completing outstanding puts (`shmem_sync_all`).
///
/// A signal writes the barrier's epoch e into the round's flag for e's parity (a PART write
/// that is not waited for, or a store when the peer's heap is mapped); barrier e waits until
/// its flag holds e or more. A flag must never go back, so the write of epoch e may be
/// posted only once the write of e - 2 to the same flag is complete: barrier e takes the
/// requests still outstanding (those of e - 1: everything older completed in e - 1), posts
/// its first signal, and only then waits for them, whose acknowledgements arrive meanwhile
/// (waiting for them first put a round trip on every barrier's critical path). The writes go
/// on a context of their own (`State::barrier_ctx`), so that "outstanding" means exactly
/// these. The same rule keeps a write's source, the flag's word in [`source`], unchanged
/// until the write is complete: only barrier e + 2 stores there again.
pub fn sync_all(st: &State) {
    let n = st.npes as usize;
    let epoch = st.barrier_epoch.fetch_add(1, Ordering::AcqRel) + 1;
    let parity = epoch % 2;
    let me = st.me as usize;
    let mut earlier = Some(st.barrier_ctx.take_earlier());
    let mut k = 0;
    let mut dist = 1;
    while dist < n {
        let to = (me + dist) % n;
        let f = flag(st.heap.base, k, parity);
        // SAFETY: the flag lies in the symmetric heap.
        let t = st.try_target(to as u32, f as *const AtomicU64 as *const u8, 8);
        match t {
            Some(Target::Mapped(p)) | Some(Target::Local(p)) => {
                // SAFETY: the peer's mapped flag, aligned.
                unsafe { &*(p as *const AtomicU64) }.fetch_max(epoch, Ordering::SeqCst);
            }
            Some(Target::Remote { addr, key }) => {
                let src = source(st.heap.base, k, parity);
                src.store(epoch, Ordering::Release);
                // SAFETY: the source stays unchanged until the write is complete (see above).
                let id = unsafe {
                    st.rt
                        .write(to as u32, src.as_ptr() as *const u8, addr, key, 8)
                }
                .unwrap_or_else(|e| {
                    fatal(
                        "shmem_barrier_all",
                        format!("signal to PE {to} refused: {e}"),
                    )
                });
                st.barrier_ctx.push(
                    Pending {
                        id,
                        pe: to as u32,
                        buf: None,
                    },
                    false,
                );
            }
            None => unreachable!("the barrier flags are in the heap"),
        }
        if let Some(e) = earlier.take() {
            st.barrier_ctx.finish_quiet(e);
        }
        wait_while(st, || f.load(Ordering::Acquire) >= epoch);
        k += 1;
        dist *= 2;
    }
    if let Some(e) = earlier {
        st.barrier_ctx.finish_quiet(e);
    }
}

/// `shmem_barrier_all`: complete every context's puts, then synchronize.
pub fn barrier_all(st: &State) {
    st.for_each_ctx(|c| c.quiet());
    sync_all(st);
}

/// `shmem_set_lock`: a test-and-set lock on the lock word of PE 0, with back-off.
///
/// # Safety
/// `lock` symmetric, 8-aligned.
pub unsafe fn set_lock(st: &State, lock: *mut i64) {
    let me = st.me as u64 + 1;
    let mut backoff = 1u32;
    loop {
        // SAFETY: caller.
        let old = unsafe {
            amo_bits(
                st,
                &st.internal_ctx,
                "shmem_set_lock",
                0,
                lock as *mut u8,
                8,
                Amo::Cas(0, me),
            )
        };
        if old == 0 {
            std::sync::atomic::fence(Ordering::SeqCst);
            return;
        }
        for _ in 0..backoff {
            let _ = st.rt.progress();
            std::thread::yield_now();
        }
        backoff = (backoff * 2).min(64);
        st.check_exit_word();
    }
}

/// `shmem_test_lock`: 0 if the lock was taken now, 1 if someone holds it.
///
/// # Safety
/// As [`set_lock`].
pub unsafe fn test_lock(st: &State, lock: *mut i64) -> c_int {
    let me = st.me as u64 + 1;
    // SAFETY: caller.
    let old = unsafe {
        amo_bits(
            st,
            &st.internal_ctx,
            "shmem_test_lock",
            0,
            lock as *mut u8,
            8,
            Amo::Cas(0, me),
        )
    };
    std::sync::atomic::fence(Ordering::SeqCst);
    (old != 0) as c_int
}

/// `shmem_clear_lock`: complete this PE's puts, then release.
///
/// # Safety
/// As [`set_lock`].
pub unsafe fn clear_lock(st: &State, lock: *mut i64) {
    st.for_each_ctx(|c| c.quiet());
    // SAFETY: caller.
    unsafe {
        amo_bits(
            st,
            &st.internal_ctx,
            "shmem_clear_lock",
            0,
            lock as *mut u8,
            8,
            Amo::Swap(0),
        )
    };
}
