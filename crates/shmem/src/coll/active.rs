//! The active-set collectives (OpenSHMEM 1.4 forms, deprecated in 1.5 but used by real
//! codes): the set is `PE_start`, `2^logPE_stride`, `PE_size`; the program's symmetric
//! `pSync` array holds the group's counters (they return to `SHMEM_SYNC_VALUE`, zero, when
//! the collective is over). `pWrk` is not needed: reductions work in private memory.

#![allow(missing_docs, clippy::missing_safety_doc, clippy::too_many_arguments)]

use std::ffi::{c_int, c_long, c_void};

use super::{typed::typed_combine, Group};
use crate::state::{fatal, state, State};

/// The active set as a group on `psync` (fatal if this PE is not in it or it is malformed).
pub fn group(
    st: &State,
    call: &str,
    pe_start: c_int,
    log_pe_stride: c_int,
    pe_size: c_int,
    psync: *mut c_long,
) -> Group {
    if !(0..31).contains(&log_pe_stride) || pe_size < 1 || pe_start < 0 {
        fatal(
            call,
            format!("the active set (PE_start {pe_start}, logPE_stride {log_pe_stride}, PE_size {pe_size}) is malformed"),
        );
    }
    let stride = 1i64 << log_pe_stride;
    let last = pe_start as i64 + (pe_size as i64 - 1) * stride;
    if last >= st.npes as i64 {
        fatal(
            call,
            format!("the active set (PE_start {pe_start}, logPE_stride {log_pe_stride}, PE_size {pe_size}) ends at PE {last}, beyond the job's {} PEs", st.npes),
        );
    }
    let mut g = Group::new(
        pe_start as i64,
        stride,
        pe_size as u32,
        0,
        psync as *mut u64,
    );
    match g.index_of(st.me as i64) {
        Some(i) => g.me = i,
        None => fatal(
            call,
            format!("this PE is not in the active set (PE_start {pe_start}, logPE_stride {log_pe_stride}, PE_size {pe_size})"),
        ),
    }
    if psync.is_null() || st.try_target(st.me, psync as *const u8, 8).is_none() {
        fatal(call, format!("pSync {psync:p} is not a symmetric array"));
    }
    g
}

#[no_mangle]
pub unsafe extern "C" fn shmem_barrier(
    pe_start: c_int,
    log_pe_stride: c_int,
    pe_size: c_int,
    psync: *mut c_long,
) {
    let call = "shmem_barrier";
    let st = state(call);
    let g = group(st, call, pe_start, log_pe_stride, pe_size, psync);
    st.for_each_ctx(|c| c.quiet());
    super::sync(st, call, &g);
}

/// `shmem_sync` with an active set (C11 programs reach it through the `shmem_sync` generic
/// macro, which selects `shmem_team_sync` for a team).
#[no_mangle]
pub unsafe extern "C" fn shmem_sync(
    pe_start: c_int,
    log_pe_stride: c_int,
    pe_size: c_int,
    psync: *mut c_long,
) {
    let call = "shmem_sync";
    let st = state(call);
    let g = group(st, call, pe_start, log_pe_stride, pe_size, psync);
    super::sync(st, call, &g);
}

unsafe fn bcast(
    call: &str,
    dest: *mut c_void,
    source: *const c_void,
    len: usize,
    pe_root: c_int,
    pe_start: c_int,
    log_pe_stride: c_int,
    pe_size: c_int,
    psync: *mut c_long,
) {
    let st = state(call);
    let g = group(st, call, pe_start, log_pe_stride, pe_size, psync);
    if pe_root < 0 || pe_root >= pe_size {
        fatal(
            call,
            format!("PE_root {pe_root} is not in the active set of {pe_size} PEs"),
        );
    }
    // SAFETY: the C caller's symmetric buffers. The root's dest is left alone (1.4).
    unsafe {
        super::broadcast(
            st,
            call,
            &g,
            dest as _,
            source as _,
            len,
            pe_root as u32,
            false,
        )
    };
}

#[no_mangle]
pub unsafe extern "C" fn shmem_broadcast32(
    dest: *mut c_void,
    source: *const c_void,
    nelems: usize,
    pe_root: c_int,
    pe_start: c_int,
    log_pe_stride: c_int,
    pe_size: c_int,
    psync: *mut c_long,
) {
    // SAFETY: the C caller's buffers.
    unsafe {
        bcast(
            "shmem_broadcast32",
            dest,
            source,
            nelems * 4,
            pe_root,
            pe_start,
            log_pe_stride,
            pe_size,
            psync,
        )
    }
}

#[no_mangle]
pub unsafe extern "C" fn shmem_broadcast64(
    dest: *mut c_void,
    source: *const c_void,
    nelems: usize,
    pe_root: c_int,
    pe_start: c_int,
    log_pe_stride: c_int,
    pe_size: c_int,
    psync: *mut c_long,
) {
    // SAFETY: the C caller's buffers.
    unsafe {
        bcast(
            "shmem_broadcast64",
            dest,
            source,
            nelems * 8,
            pe_root,
            pe_start,
            log_pe_stride,
            pe_size,
            psync,
        )
    }
}

macro_rules! set_collect {
    ($name:ident, $size:expr, $same:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            dest: *mut c_void,
            source: *const c_void,
            nelems: usize,
            pe_start: c_int,
            log_pe_stride: c_int,
            pe_size: c_int,
            psync: *mut c_long,
        ) {
            let call = stringify!($name);
            let st = state(call);
            let g = group(st, call, pe_start, log_pe_stride, pe_size, psync);
            // SAFETY: the C caller's symmetric buffers.
            unsafe { super::collect(st, call, &g, dest as _, source as _, nelems * $size, $same) };
        }
    };
}
set_collect!(shmem_collect32, 4, false);
set_collect!(shmem_collect64, 8, false);
set_collect!(shmem_fcollect32, 4, true);
set_collect!(shmem_fcollect64, 8, true);

macro_rules! set_alltoall {
    ($name:ident, $size:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            dest: *mut c_void,
            source: *const c_void,
            nelems: usize,
            pe_start: c_int,
            log_pe_stride: c_int,
            pe_size: c_int,
            psync: *mut c_long,
        ) {
            let call = stringify!($name);
            let st = state(call);
            let g = group(st, call, pe_start, log_pe_stride, pe_size, psync);
            // SAFETY: the C caller's symmetric buffers.
            unsafe { super::alltoall(st, call, &g, dest as _, source as _, nelems * $size) };
        }
    };
}
set_alltoall!(shmem_alltoall32, 4);
set_alltoall!(shmem_alltoall64, 8);

macro_rules! set_alltoalls {
    ($name:ident, $size:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            dest: *mut c_void,
            source: *const c_void,
            dst: isize,
            sst: isize,
            nelems: usize,
            pe_start: c_int,
            log_pe_stride: c_int,
            pe_size: c_int,
            psync: *mut c_long,
        ) {
            let call = stringify!($name);
            let st = state(call);
            let g = group(st, call, pe_start, log_pe_stride, pe_size, psync);
            // SAFETY: the C caller's symmetric buffers.
            unsafe {
                super::alltoalls(
                    st,
                    call,
                    &g,
                    dest as _,
                    source as _,
                    dst,
                    sst,
                    nelems,
                    $size,
                )
            };
        }
    };
}
set_alltoalls!(shmem_alltoalls32, 4);
set_alltoalls!(shmem_alltoalls64, 8);

/// The `_to_all` reductions (generated by build_coll.rs).
pub(crate) unsafe fn set_reduce<T: Copy>(
    call: &str,
    dest: *mut T,
    source: *const T,
    nreduce: c_int,
    pe_start: c_int,
    log_pe_stride: c_int,
    pe_size: c_int,
    psync: *mut c_long,
    op: fn(T, T) -> T,
) {
    let st = state(call);
    let g = group(st, call, pe_start, log_pe_stride, pe_size, psync);
    let mut f = typed_combine(op);
    // SAFETY: the C caller's symmetric buffers.
    unsafe {
        super::reduce(
            st,
            call,
            &g,
            dest as _,
            source as _,
            nreduce.max(0) as usize,
            std::mem::size_of::<T>(),
            &mut f,
        )
    };
}
