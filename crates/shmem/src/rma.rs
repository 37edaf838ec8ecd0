//! Remote memory access on top of the translation ([`crate::xlate`]): a target on this PE or
//! mapped here is a memcpy; a remote one is a PART write or read.
//!
//! A blocking put returns when the source may be reused: up to [`BOUNCE_MAX`] bytes are copied
//! into a bounce buffer that the context owns until the write completes; larger ones wait for
//! their completion. Non-blocking ones leave the request to the context's `quiet`.

use std::ffi::c_int;

use unpinned_live::LiveError;

use crate::bounce::Bounce;
use crate::ctx::{wait_one, Ctx, Pending};
use crate::state::{fatal, State};
use crate::xlate::Target;

/// Puts up to this many bytes are copied and return at once.
pub const BOUNCE_MAX: usize = 64 << 10;

fn post_failed(call: &str, pe: u32, e: LiveError) -> ! {
    fatal(call, format!("the transfer to PE {pe} was refused: {e}"))
}

/// `std::ptr::copy` (overlap allowed), with the sizes of single elements done as one load and
/// one store: a variable-length copy is a call into `memmove`, a fair share of a small put's
/// or get's time on the load/store path.
///
/// # Safety
/// As `std::ptr::copy`.
#[inline(always)]
pub unsafe fn copy(src: *const u8, dst: *mut u8, len: usize) {
    // SAFETY: both ranges valid for `len` bytes (caller); each arm reads the whole value
    // before it writes, so overlap is allowed as with `ptr::copy`.
    unsafe {
        match len {
            8 => (dst as *mut u64).write_unaligned((src as *const u64).read_unaligned()),
            4 => (dst as *mut u32).write_unaligned((src as *const u32).read_unaligned()),
            16 => (dst as *mut u128).write_unaligned((src as *const u128).read_unaligned()),
            _ => std::ptr::copy(src, dst, len),
        }
    }
}

/// Put `len` bytes from `src` (any local memory) to the symmetric `dst` on `pe`; returns when
/// `src` may be reused.
///
/// # Safety
/// `src` readable for `len` bytes; `dst` symmetric.
pub unsafe fn put(
    st: &State,
    ctx: &Ctx,
    call: &str,
    pe: c_int,
    dst: *mut u8,
    src: *const u8,
    len: usize,
) {
    match st.target(call, pe, dst, len) {
        // SAFETY: both ranges valid for len bytes (caller); `copy` allows overlap.
        Target::Local(p) | Target::Mapped(p) => unsafe { copy(src, p, len) },
        Target::Remote { addr, key } => {
            let pe = pe as u32;
            if len <= BOUNCE_MAX {
                // SAFETY: caller guarantees `src` readable for len; the state's pool lives as
                // long as the process.
                let buf = unsafe { Bounce::copy_of(&st.bounce, src, len) };
                // SAFETY: the copy lives in the context until the completion.
                let id = unsafe { st.rt.write(pe, buf.as_ptr(), addr, key, len) }
                    .unwrap_or_else(|e| post_failed(call, pe, e));
                ctx.push(
                    Pending {
                        id,
                        pe,
                        buf: Some(buf),
                    },
                    true,
                );
            } else {
                // SAFETY: we wait for the completion before returning.
                let id = unsafe { st.rt.write(pe, src, addr, key, len) }
                    .unwrap_or_else(|e| post_failed(call, pe, e));
                wait_one(Pending { id, pe, buf: None });
            }
        }
    }
}

/// Non-blocking put: `src` must not be changed before the context's quiet.
///
/// # Safety
/// `src` readable for `len` bytes until the next quiet; `dst` symmetric.
pub unsafe fn put_nbi(
    st: &State,
    ctx: &Ctx,
    call: &str,
    pe: c_int,
    dst: *mut u8,
    src: *const u8,
    len: usize,
) {
    match st.target(call, pe, dst, len) {
        // SAFETY: as in `put`.
        Target::Local(p) | Target::Mapped(p) => unsafe { copy(src, p, len) },
        Target::Remote { addr, key } => {
            let pe = pe as u32;
            // SAFETY: the caller keeps `src` until quiet, which waits for this request.
            let id = unsafe { st.rt.write(pe, src, addr, key, len) }
                .unwrap_or_else(|e| post_failed(call, pe, e));
            ctx.push(Pending { id, pe, buf: None }, true);
        }
    }
}

/// Get `len` bytes from the symmetric `src` on `pe` into `dst` (any local memory), blocking.
///
/// # Safety
/// `dst` writable for `len` bytes; `src` symmetric.
pub unsafe fn get(
    st: &State,
    ctx: &Ctx,
    call: &str,
    pe: c_int,
    dst: *mut u8,
    src: *const u8,
    len: usize,
) {
    match st.target(call, pe, src, len) {
        // SAFETY: both ranges valid (caller).
        Target::Local(p) | Target::Mapped(p) => unsafe { copy(p, dst, len) },
        Target::Remote { addr, key } => {
            let pe = pe as u32;
            if ctx.has_writes() {
                ctx.quiet();
            }
            // SAFETY: we wait for the completion before returning.
            let id = unsafe { st.rt.read(pe, dst, addr, key, len) }
                .unwrap_or_else(|e| post_failed(call, pe, e));
            wait_one(Pending { id, pe, buf: None });
        }
    }
}

/// Non-blocking get: `dst` is defined after the context's quiet.
///
/// # Safety
/// `dst` writable for `len` bytes and untouched until the next quiet; `src` symmetric.
pub unsafe fn get_nbi(
    st: &State,
    ctx: &Ctx,
    call: &str,
    pe: c_int,
    dst: *mut u8,
    src: *const u8,
    len: usize,
) {
    match st.target(call, pe, src, len) {
        // SAFETY: as in `get`.
        Target::Local(p) | Target::Mapped(p) => unsafe { copy(p, dst, len) },
        Target::Remote { addr, key } => {
            let pe = pe as u32;
            if ctx.has_writes() {
                ctx.quiet();
            }
            // SAFETY: the caller leaves `dst` alone until quiet.
            let id = unsafe { st.rt.read(pe, dst, addr, key, len) }
                .unwrap_or_else(|e| post_failed(call, pe, e));
            ctx.push(Pending { id, pe, buf: None }, false);
        }
    }
}

/// Strided put of `nelems` elements of `size` bytes, strides in elements.
///
/// # Safety
/// As [`put`] for every element.
#[allow(clippy::too_many_arguments)]
pub unsafe fn iput(
    st: &State,
    ctx: &Ctx,
    call: &str,
    pe: c_int,
    dst: *mut u8,
    src: *const u8,
    dst_stride: isize,
    src_stride: isize,
    nelems: usize,
    size: usize,
) {
    for i in 0..nelems as isize {
        // SAFETY: the caller's strided ranges.
        unsafe {
            put(
                st,
                ctx,
                call,
                pe,
                dst.offset(i * dst_stride * size as isize),
                src.offset(i * src_stride * size as isize),
                size,
            )
        };
    }
}

/// Strided get.
///
/// # Safety
/// As [`get`] for every element.
#[allow(clippy::too_many_arguments)]
pub unsafe fn iget(
    st: &State,
    ctx: &Ctx,
    call: &str,
    pe: c_int,
    dst: *mut u8,
    src: *const u8,
    dst_stride: isize,
    src_stride: isize,
    nelems: usize,
    size: usize,
) {
    if nelems == 0 {
        return;
    }
    for i in 0..nelems as isize {
        // SAFETY: the caller's strided ranges.
        unsafe {
            get_nbi(
                st,
                ctx,
                call,
                pe,
                dst.offset(i * dst_stride * size as isize),
                src.offset(i * src_stride * size as isize),
                size,
            )
        };
    }
    ctx.quiet();
}
