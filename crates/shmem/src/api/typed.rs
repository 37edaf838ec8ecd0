//! The typed entry points: build.rs generates one line per C function (`typed.rs` in
//! OUT_DIR), calling the generic helpers below.

#![allow(
    missing_docs,
    clippy::missing_safety_doc,
    clippy::too_many_arguments,
    clippy::identity_op
)]

use std::ffi::{c_int, c_void};

use super::{default_ctx, resolve, CtxHandle as Ctx};
use crate::amo::{amo_bits, Amo};
use crate::rma;
use crate::state::{fatal, state};
use crate::sync::{compare, wait_while, CMP_NE};

/// The world PE of `pe` as numbered by the team of context `c` (the world's numbering for a
/// world context); a PE outside that team is a fatal error of `call`.
fn team_pe(c: &crate::ctx::Ctx, call: &str, pe: c_int) -> c_int {
    let w = crate::team::ctx_world_pe(c, pe);
    if w < 0 {
        fatal(
            call,
            format!("PE {pe} is not a PE of the context's team (number PEs from 0 in that team)"),
        );
    }
    w
}

pub(crate) unsafe fn put(
    ctx: Ctx,
    call: &str,
    dest: *mut c_void,
    source: *const c_void,
    len: usize,
    pe: c_int,
) {
    let st = state(call);
    let c = resolve(st, call, ctx);
    // SAFETY: the C caller's buffers.
    unsafe {
        rma::put(
            st,
            c,
            call,
            team_pe(c, call, pe),
            dest as *mut u8,
            source as *const u8,
            len,
        )
    }
}

pub(crate) unsafe fn get(
    ctx: Ctx,
    call: &str,
    dest: *mut c_void,
    source: *const c_void,
    len: usize,
    pe: c_int,
) {
    let st = state(call);
    let c = resolve(st, call, ctx);
    // SAFETY: the C caller's buffers.
    unsafe {
        rma::get(
            st,
            c,
            call,
            team_pe(c, call, pe),
            dest as *mut u8,
            source as *const u8,
            len,
        )
    }
}

pub(crate) unsafe fn put_nbi(
    ctx: Ctx,
    call: &str,
    dest: *mut c_void,
    source: *const c_void,
    len: usize,
    pe: c_int,
) {
    let st = state(call);
    let c = resolve(st, call, ctx);
    // SAFETY: the C caller's buffers.
    unsafe {
        rma::put_nbi(
            st,
            c,
            call,
            team_pe(c, call, pe),
            dest as *mut u8,
            source as *const u8,
            len,
        )
    }
}

pub(crate) unsafe fn get_nbi(
    ctx: Ctx,
    call: &str,
    dest: *mut c_void,
    source: *const c_void,
    len: usize,
    pe: c_int,
) {
    let st = state(call);
    let c = resolve(st, call, ctx);
    // SAFETY: the C caller's buffers.
    unsafe {
        rma::get_nbi(
            st,
            c,
            call,
            team_pe(c, call, pe),
            dest as *mut u8,
            source as *const u8,
            len,
        )
    }
}

pub(crate) unsafe fn iput(
    ctx: Ctx,
    call: &str,
    dest: *mut c_void,
    source: *const c_void,
    dst: isize,
    sst: isize,
    nelems: usize,
    size: usize,
    pe: c_int,
) {
    let st = state(call);
    let c = resolve(st, call, ctx);
    // SAFETY: the C caller's buffers.
    unsafe {
        rma::iput(
            st,
            c,
            call,
            team_pe(c, call, pe),
            dest as *mut u8,
            source as *const u8,
            dst,
            sst,
            nelems,
            size,
        )
    }
}

pub(crate) unsafe fn iget(
    ctx: Ctx,
    call: &str,
    dest: *mut c_void,
    source: *const c_void,
    dst: isize,
    sst: isize,
    nelems: usize,
    size: usize,
    pe: c_int,
) {
    let st = state(call);
    let c = resolve(st, call, ctx);
    // SAFETY: the C caller's buffers.
    unsafe {
        rma::iget(
            st,
            c,
            call,
            team_pe(c, call, pe),
            dest as *mut u8,
            source as *const u8,
            dst,
            sst,
            nelems,
            size,
        )
    }
}

/// Put, then the signal (set or add) once the data is delivered: the atomic waits for the
/// context's outstanding puts first ([`amo_bits`]).
pub(crate) unsafe fn put_signal(
    ctx: Ctx,
    call: &str,
    dest: *mut c_void,
    source: *const c_void,
    len: usize,
    sig_addr: *mut u64,
    signal: u64,
    sig_op: c_int,
    pe: c_int,
) {
    let st = state(call);
    let c = resolve(st, call, ctx);
    let pe = team_pe(c, call, pe);
    let op = match sig_op {
        0 => Amo::Swap(signal),
        1 => Amo::Add(signal),
        _ => fatal(
            call,
            format!("{sig_op} is not a signal operator (use SHMEM_SIGNAL_SET or SHMEM_SIGNAL_ADD)"),
        ),
    };
    // SAFETY: the C caller's buffers.
    unsafe {
        rma::put(st, c, call, pe, dest as *mut u8, source as *const u8, len);
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        amo_bits(st, c, call, pe, sig_addr as *mut u8, 8, op);
    }
}

pub(crate) unsafe fn p<T: Copy>(ctx: Ctx, call: &str, dest: *mut T, value: T, pe: c_int) {
    // SAFETY: `value` lives for the call; put copies it before returning.
    unsafe {
        put(
            ctx,
            call,
            dest as *mut c_void,
            &value as *const T as *const c_void,
            size_of::<T>(),
            pe,
        )
    }
}

pub(crate) unsafe fn g<T: Copy + Default>(ctx: Ctx, call: &str, source: *const T, pe: c_int) -> T {
    // A heap cell: present and private, so a remote read writes it without a page fault.
    let mut v = Box::new(T::default());
    // SAFETY: `v` is valid for one T.
    unsafe {
        get(
            ctx,
            call,
            &mut *v as *mut T as *mut c_void,
            source as *const c_void,
            size_of::<T>(),
            pe,
        )
    };
    *v
}

/// The bits of an AMO operand (zero-extended) and back.
pub(crate) trait Bits: Copy {
    fn to_bits(self) -> u64;
    fn from_bits(b: u64) -> Self;
}

macro_rules! bits_int {
    ($($t:ty => $u:ty),*) => {$(
        impl Bits for $t {
            fn to_bits(self) -> u64 { self as $u as u64 }
            fn from_bits(b: u64) -> Self { b as $u as $t }
        }
    )*};
}
bits_int!(i32 => u32, u32 => u32, i64 => u64, u64 => u64, isize => u64, usize => u64);
impl Bits for f32 {
    fn to_bits(self) -> u64 {
        f32::to_bits(self) as u64
    }
    fn from_bits(b: u64) -> Self {
        f32::from_bits(b as u32)
    }
}
impl Bits for f64 {
    fn to_bits(self) -> u64 {
        f64::to_bits(self)
    }
    fn from_bits(b: u64) -> Self {
        f64::from_bits(b)
    }
}

pub(crate) fn bits<T: Bits>(v: T) -> u64 {
    v.to_bits()
}

pub(crate) unsafe fn amo<T: Bits>(ctx: Ctx, call: &str, dest: *mut T, pe: c_int, op: Amo) -> T {
    let st = state(call);
    let c = resolve(st, call, ctx);
    let pe = team_pe(c, call, pe);
    // SAFETY: the C caller's symmetric word.
    T::from_bits(unsafe { amo_bits(st, c, call, pe, dest as *mut u8, size_of::<T>(), op) })
}

/// One comparison value, or one per element.
pub(crate) enum Vals<T> {
    One(T),
    Many(*const T),
}

impl<T: Copy> Vals<T> {
    unsafe fn at(&self, i: usize) -> T {
        match self {
            Vals::One(v) => *v,
            // SAFETY: the caller's array of nelems values.
            Vals::Many(p) => unsafe { p.add(i).read() },
        }
    }
}

unsafe fn holds<T: Copy + PartialOrd>(
    call: &str,
    ivars: *mut T,
    i: usize,
    cmp: c_int,
    vals: &Vals<T>,
) -> bool {
    // SAFETY: the caller's array; read fresh each time (another PE writes it).
    let (v, c) = unsafe { (ivars.add(i).read_volatile(), vals.at(i)) };
    compare(call, v, cmp, c)
}

unsafe fn active(status: *const c_int, i: usize) -> bool {
    // SAFETY: the caller's status array (or null: every element takes part).
    status.is_null() || unsafe { status.add(i).read() } == 0
}

pub(crate) unsafe fn wait_until<T: Copy + PartialOrd>(ivar: *mut T, cmp: c_int, value: T) {
    let st = state("shmem_wait_until");
    // SAFETY: the caller's variable.
    wait_while(st, || unsafe {
        holds("shmem_wait_until", ivar, 0, cmp, &Vals::One(value))
    });
}

pub(crate) unsafe fn test<T: Copy + PartialOrd>(ivar: *mut T, cmp: c_int, value: T) -> c_int {
    let st = state("shmem_test");
    let _ = st.rt.progress();
    // SAFETY: the caller's variable.
    let r = unsafe { holds("shmem_test", ivar, 0, cmp, &Vals::One(value)) };
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
    r as c_int
}

pub(crate) unsafe fn test_all<T: Copy + PartialOrd>(
    ivars: *mut T,
    n: usize,
    status: *const c_int,
    cmp: c_int,
    vals: Vals<T>,
) -> c_int {
    let st = state("shmem_test_all");
    let _ = st.rt.progress();
    // SAFETY: the caller's arrays.
    let r = (0..n)
        .all(|i| unsafe { !active(status, i) || holds("shmem_test_all", ivars, i, cmp, &vals) });
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
    r as c_int
}

/// Where the next `_any` search starts: successive calls rotate through the satisfied
/// elements instead of returning the first one forever.
static ANY_START: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The first active element satisfying the comparison, searching from the rotating start.
unsafe fn find_any<T: Copy + PartialOrd>(
    call: &str,
    ivars: *mut T,
    n: usize,
    status: *const c_int,
    cmp: c_int,
    vals: &Vals<T>,
) -> usize {
    if n == 0 {
        return usize::MAX;
    }
    let start = ANY_START.load(std::sync::atomic::Ordering::Relaxed) % n;
    for k in 0..n {
        let i = (start + k) % n;
        // SAFETY: the caller's arrays.
        if unsafe { active(status, i) && holds(call, ivars, i, cmp, vals) } {
            ANY_START.store(i + 1, std::sync::atomic::Ordering::Relaxed);
            return i;
        }
    }
    usize::MAX
}

pub(crate) unsafe fn test_any<T: Copy + PartialOrd>(
    ivars: *mut T,
    n: usize,
    status: *const c_int,
    cmp: c_int,
    vals: Vals<T>,
) -> usize {
    let st = state("shmem_test_any");
    let _ = st.rt.progress();
    // SAFETY: the caller's arrays.
    let r = unsafe { find_any("shmem_test_any", ivars, n, status, cmp, &vals) };
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
    r
}

pub(crate) unsafe fn test_some<T: Copy + PartialOrd>(
    ivars: *mut T,
    n: usize,
    indices: *mut usize,
    status: *const c_int,
    cmp: c_int,
    vals: Vals<T>,
) -> usize {
    let st = state("shmem_test_some");
    let _ = st.rt.progress();
    let mut k = 0;
    for i in 0..n {
        // SAFETY: the caller's arrays (indices has room for n).
        unsafe {
            if active(status, i) && holds("shmem_test_some", ivars, i, cmp, &vals) {
                indices.add(k).write(i);
                k += 1;
            }
        }
    }
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
    k
}

pub(crate) unsafe fn wait_all<T: Copy + PartialOrd>(
    ivars: *mut T,
    n: usize,
    status: *const c_int,
    cmp: c_int,
    vals: Vals<T>,
) {
    let st = state("shmem_wait_until_all");
    // SAFETY: the caller's arrays.
    wait_while(st, || {
        (0..n).all(|i| unsafe {
            !active(status, i) || holds("shmem_wait_until_all", ivars, i, cmp, &vals)
        })
    });
}

pub(crate) unsafe fn wait_any<T: Copy + PartialOrd>(
    ivars: *mut T,
    n: usize,
    status: *const c_int,
    cmp: c_int,
    vals: Vals<T>,
) -> usize {
    let st = state("shmem_wait_until_any");
    // SAFETY: the caller's arrays.
    if (0..n).all(|i| unsafe { !active(status, i) }) {
        return usize::MAX;
    }
    let mut found = usize::MAX;
    wait_while(st, || {
        // SAFETY: the caller's arrays.
        found = (0..n)
            .find(|&i| unsafe {
                active(status, i) && holds("shmem_wait_until_any", ivars, i, cmp, &vals)
            })
            .unwrap_or(usize::MAX);
        found != usize::MAX
    });
    found
}

pub(crate) unsafe fn wait_some<T: Copy + PartialOrd>(
    ivars: *mut T,
    n: usize,
    indices: *mut usize,
    status: *const c_int,
    cmp: c_int,
    vals: Vals<T>,
) -> usize {
    let st = state("shmem_wait_until_some");
    // SAFETY: the caller's arrays.
    if (0..n).all(|i| unsafe { !active(status, i) }) {
        return 0;
    }
    let mut k = 0;
    wait_while(st, || {
        // SAFETY: the caller's arrays.
        k = unsafe {
            test_some(
                ivars,
                n,
                indices,
                status,
                cmp,
                match &vals {
                    Vals::One(v) => Vals::One(*v),
                    Vals::Many(p) => Vals::Many(*p),
                },
            )
        };
        k > 0
    });
    k
}

include!(concat!(env!("OUT_DIR"), "/typed.rs"));

/// Deprecated `shmem_wait(long *ivar, long value)`: wait until `*ivar != value`.
#[no_mangle]
pub unsafe extern "C" fn shmem_wait(ivar: *mut i64, cmp_value: i64) {
    // SAFETY: the C caller's variable.
    unsafe { wait_until(ivar, CMP_NE, cmp_value) }
}

/// Deprecated untyped `shmem_wait_until` on a `long`.
#[no_mangle]
pub unsafe extern "C" fn shmem_wait_until(ivar: *mut i64, cmp: c_int, cmp_value: i64) {
    // SAFETY: the C caller's variable.
    unsafe { wait_until(ivar, cmp, cmp_value) }
}

/// `shmem_signal_fetch`: the signal word's value.
#[no_mangle]
pub unsafe extern "C" fn shmem_signal_fetch(sig_addr: *const u64) -> u64 {
    // SAFETY: the C caller's aligned word.
    unsafe { &*(sig_addr as *const std::sync::atomic::AtomicU64) }
        .load(std::sync::atomic::Ordering::SeqCst)
}

/// `shmem_signal_wait_until`: wait until the signal word compares, return its value.
#[no_mangle]
pub unsafe extern "C" fn shmem_signal_wait_until(
    sig_addr: *mut u64,
    cmp: c_int,
    cmp_value: u64,
) -> u64 {
    // SAFETY: the C caller's variable.
    unsafe { wait_until(sig_addr, cmp, cmp_value) };
    // SAFETY: as above.
    unsafe { shmem_signal_fetch(sig_addr) }
}
