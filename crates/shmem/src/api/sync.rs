//! Ordering, barrier, lock and context entry points.

#![allow(missing_docs, clippy::missing_safety_doc)]

use std::ffi::{c_int, c_long};

use super::{default_ctx, resolve, CtxHandle};
use crate::ctx::Ctx;
use crate::state::state;
use crate::sync;

#[no_mangle]
pub extern "C" fn shmem_quiet() {
    state("shmem_quiet").default_ctx.quiet();
}

#[no_mangle]
pub extern "C" fn shmem_ctx_quiet(ctx: CtxHandle) {
    let st = state("shmem_ctx_quiet");
    if !ctx.is_null() {
        resolve(st, "shmem_ctx_quiet", ctx).quiet();
    }
}

/// Fence: PART does not order separate transfers, so a fence completes them (a quiet).
#[no_mangle]
pub extern "C" fn shmem_fence() {
    state("shmem_fence").default_ctx.quiet();
}

#[no_mangle]
pub extern "C" fn shmem_ctx_fence(ctx: CtxHandle) {
    let st = state("shmem_ctx_fence");
    if !ctx.is_null() {
        resolve(st, "shmem_ctx_fence", ctx).quiet();
    }
}

#[no_mangle]
pub extern "C" fn shmem_barrier_all() {
    sync::barrier_all(state("shmem_barrier_all"));
}

#[no_mangle]
pub extern "C" fn shmem_sync_all() {
    sync::sync_all(state("shmem_sync_all"));
}

#[no_mangle]
pub unsafe extern "C" fn shmem_set_lock(lock: *mut c_long) {
    // SAFETY: the C caller's symmetric lock.
    unsafe { sync::set_lock(state("shmem_set_lock"), lock) }
}

#[no_mangle]
pub unsafe extern "C" fn shmem_test_lock(lock: *mut c_long) -> c_int {
    // SAFETY: the C caller's symmetric lock.
    unsafe { sync::test_lock(state("shmem_test_lock"), lock) }
}

#[no_mangle]
pub unsafe extern "C" fn shmem_clear_lock(lock: *mut c_long) {
    // SAFETY: the C caller's symmetric lock.
    unsafe { sync::clear_lock(state("shmem_clear_lock"), lock) }
}

#[no_mangle]
pub unsafe extern "C" fn shmem_ctx_create(options: c_long, ctx: *mut CtxHandle) -> c_int {
    let st = state("shmem_ctx_create");
    let c = Box::into_raw(Box::new(Ctx::new(options)));
    st.contexts
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(c as usize);
    if !ctx.is_null() {
        // SAFETY: the caller's handle.
        unsafe { ctx.write(c as CtxHandle) };
    }
    0
}

#[no_mangle]
pub unsafe extern "C" fn shmem_ctx_destroy(ctx: CtxHandle) {
    let st = state("shmem_ctx_destroy");
    if ctx.is_null() || ctx == default_ctx() {
        return;
    }
    resolve(st, "shmem_ctx_destroy", ctx).quiet();
    st.contexts
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|&c| c != ctx as usize);
    // SAFETY: created by shmem_ctx_create, unregistered above; the program does not use it
    // after destroying it.
    drop(unsafe { Box::from_raw(ctx as *mut Ctx) });
}
