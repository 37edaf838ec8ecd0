//! The team-based collective entry points: `shmem_broadcastmem`, `shmem_TYPE_broadcast`,
//! collect, fcollect, alltoall(s), `shmem_TYPE_OP_reduce` (build_coll.rs generates the typed
//! ones as `coll_typed.rs` in OUT_DIR, calling the helpers below) and the callback forms that
//! the header's inline long double reductions use.

#![allow(missing_docs, clippy::missing_safety_doc, clippy::too_many_arguments)]

use std::ffi::{c_int, c_long, c_void};

use super::active::set_reduce;
use super::ops::{self, C32, C64};
use crate::state::{fatal, state};
use crate::team::{need, TeamHandle as Team};

include!(concat!(env!("OUT_DIR"), "/coll_typed.rs"));

/// A C combine callback: fold `n` elements of `other` into `acc`.
pub type CombineFn = unsafe extern "C" fn(acc: *mut c_void, other: *const c_void, n: usize);

fn root_index(call: &str, size: u32, root: c_int) -> u32 {
    if root < 0 || root as u32 >= size {
        fatal(
            call,
            format!("PE_root {root} is not a PE of the team (it has {size} PEs)"),
        );
    }
    root as u32
}

pub(crate) unsafe fn team_broadcast(
    team: Team,
    call: &str,
    dest: *mut c_void,
    source: *const c_void,
    len: usize,
    root: c_int,
) -> c_int {
    let st = state(call);
    let g = &need(st, call, team).group;
    let root = root_index(call, g.size, root);
    // SAFETY: the C caller's symmetric buffers.
    unsafe { super::broadcast(st, call, g, dest as _, source as _, len, root, true) };
    0
}

pub(crate) unsafe fn team_collect(
    team: Team,
    call: &str,
    dest: *mut c_void,
    source: *const c_void,
    len: usize,
) -> c_int {
    let st = state(call);
    let g = &need(st, call, team).group;
    // SAFETY: the C caller's symmetric buffers.
    unsafe { super::collect(st, call, g, dest as _, source as _, len, false) };
    0
}

pub(crate) unsafe fn team_fcollect(
    team: Team,
    call: &str,
    dest: *mut c_void,
    source: *const c_void,
    len: usize,
) -> c_int {
    let st = state(call);
    let g = &need(st, call, team).group;
    // SAFETY: the C caller's symmetric buffers.
    unsafe { super::collect(st, call, g, dest as _, source as _, len, true) };
    0
}

pub(crate) unsafe fn team_alltoall(
    team: Team,
    call: &str,
    dest: *mut c_void,
    source: *const c_void,
    len: usize,
) -> c_int {
    let st = state(call);
    let g = &need(st, call, team).group;
    // SAFETY: the C caller's symmetric buffers.
    unsafe { super::alltoall(st, call, g, dest as _, source as _, len) };
    0
}

pub(crate) unsafe fn team_alltoalls(
    team: Team,
    call: &str,
    dest: *mut c_void,
    source: *const c_void,
    dst: isize,
    sst: isize,
    nelems: usize,
    size: usize,
) -> c_int {
    let st = state(call);
    let g = &need(st, call, team).group;
    // SAFETY: the C caller's symmetric buffers.
    unsafe { super::alltoalls(st, call, g, dest as _, source as _, dst, sst, nelems, size) };
    0
}

/// Fold with a typed operator (the element type's alignment is that of the buffers).
pub(crate) fn typed_combine<T: Copy>(op: fn(T, T) -> T) -> impl FnMut(*mut u8, *const u8, usize) {
    move |acc, other, n| {
        // SAFETY: the reduction engine's 16-aligned buffers of n elements.
        let (a, b) = unsafe {
            (
                std::slice::from_raw_parts_mut(acc as *mut T, n),
                std::slice::from_raw_parts(other as *const T, n),
            )
        };
        for (x, y) in a.iter_mut().zip(b) {
            *x = op(*x, *y);
        }
    }
}

pub(crate) unsafe fn team_reduce<T: Copy>(
    team: Team,
    call: &str,
    dest: *mut T,
    source: *const T,
    nreduce: usize,
    op: fn(T, T) -> T,
) -> c_int {
    let st = state(call);
    let g = &need(st, call, team).group;
    let mut f = typed_combine(op);
    // SAFETY: the C caller's symmetric buffers.
    unsafe {
        super::reduce(
            st,
            call,
            g,
            dest as _,
            source as _,
            nreduce,
            std::mem::size_of::<T>(),
            &mut f,
        )
    };
    0
}

#[no_mangle]
pub unsafe extern "C" fn shmem_broadcastmem(
    team: Team,
    dest: *mut c_void,
    source: *const c_void,
    nelems: usize,
    pe_root: c_int,
) -> c_int {
    // SAFETY: the C caller's buffers.
    unsafe { team_broadcast(team, "shmem_broadcastmem", dest, source, nelems, pe_root) }
}

#[no_mangle]
pub unsafe extern "C" fn shmem_collectmem(
    team: Team,
    dest: *mut c_void,
    source: *const c_void,
    nelems: usize,
) -> c_int {
    // SAFETY: the C caller's buffers.
    unsafe { team_collect(team, "shmem_collectmem", dest, source, nelems) }
}

#[no_mangle]
pub unsafe extern "C" fn shmem_fcollectmem(
    team: Team,
    dest: *mut c_void,
    source: *const c_void,
    nelems: usize,
) -> c_int {
    // SAFETY: the C caller's buffers.
    unsafe { team_fcollect(team, "shmem_fcollectmem", dest, source, nelems) }
}

#[no_mangle]
pub unsafe extern "C" fn shmem_alltoallmem(
    team: Team,
    dest: *mut c_void,
    source: *const c_void,
    nelems: usize,
) -> c_int {
    // SAFETY: the C caller's buffers.
    unsafe { team_alltoall(team, "shmem_alltoallmem", dest, source, nelems) }
}

#[no_mangle]
pub unsafe extern "C" fn shmem_alltoallsmem(
    team: Team,
    dest: *mut c_void,
    source: *const c_void,
    dst: isize,
    sst: isize,
    nelems: usize,
) -> c_int {
    // SAFETY: the C caller's buffers.
    unsafe {
        team_alltoalls(
            team,
            "shmem_alltoallsmem",
            dest,
            source,
            dst,
            sst,
            nelems,
            1,
        )
    }
}

/// Team reduction with a C combine callback (the header's long double reductions).
#[no_mangle]
pub unsafe extern "C" fn shmem_up_reduce_cb(
    call: *const std::ffi::c_char,
    team: Team,
    dest: *mut c_void,
    source: *const c_void,
    nreduce: usize,
    size: usize,
    combine: CombineFn,
) -> c_int {
    // SAFETY: the header passes a string literal.
    let call = unsafe { std::ffi::CStr::from_ptr(call) }.to_string_lossy();
    let st = state(&call);
    let g = &need(st, &call, team).group;
    // SAFETY: the header's combine over the engine's aligned buffers.
    let mut f = |a: *mut u8, b: *const u8, n: usize| unsafe { combine(a as _, b as _, n) };
    // SAFETY: the C caller's symmetric buffers.
    unsafe { super::reduce(st, &call, g, dest as _, source as _, nreduce, size, &mut f) };
    0
}

/// Active-set reduction with a C combine callback (the header's long double `_to_all`).
#[no_mangle]
pub unsafe extern "C" fn shmem_up_to_all_cb(
    call: *const std::ffi::c_char,
    dest: *mut c_void,
    source: *const c_void,
    nreduce: c_int,
    pe_start: c_int,
    log_pe_stride: c_int,
    pe_size: c_int,
    psync: *mut c_long,
    size: usize,
    combine: CombineFn,
) {
    // SAFETY: the header passes a string literal.
    let call = unsafe { std::ffi::CStr::from_ptr(call) }.to_string_lossy();
    let st = state(&call);
    let g = super::active::group(st, &call, pe_start, log_pe_stride, pe_size, psync);
    // SAFETY: the header's combine over the engine's aligned buffers.
    let mut f = |a: *mut u8, b: *const u8, n: usize| unsafe { combine(a as _, b as _, n) };
    // SAFETY: the C caller's symmetric buffers.
    unsafe {
        super::reduce(
            st,
            &call,
            &g,
            dest as _,
            source as _,
            nreduce.max(0) as usize,
            size,
            &mut f,
        )
    };
}
