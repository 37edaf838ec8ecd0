//! Setup, exit and query entry points.

#![allow(missing_docs, clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::Ordering;

use crate::state::{self, state, try_state};
use crate::xlate::Target;

const VENDOR: &[u8] = b"unpinned OpenSHMEM (no registration, no pinning)\0";

#[no_mangle]
pub extern "C" fn shmem_init() {
    state::init("shmem_init", 0);
}

#[no_mangle]
pub unsafe extern "C" fn shmem_init_thread(requested: c_int, provided: *mut c_int) -> c_int {
    let level = requested.clamp(0, 3);
    state::init("shmem_init_thread", level);
    if let Some(st) = try_state() {
        st.thread_level.store(level, Ordering::Release);
    }
    if !provided.is_null() {
        // SAFETY: the caller's int.
        unsafe { provided.write(level) };
    }
    0
}

#[no_mangle]
pub unsafe extern "C" fn shmem_query_thread(provided: *mut c_int) {
    let st = state("shmem_query_thread");
    if !provided.is_null() {
        // SAFETY: the caller's int.
        unsafe { provided.write(st.thread_level.load(Ordering::Acquire)) };
    }
}

#[no_mangle]
pub extern "C" fn shmem_finalize() {
    state::finalize();
}

#[no_mangle]
pub extern "C" fn shmem_global_exit(status: c_int) {
    match try_state() {
        Some(st) => st.global_exit(status),
        None => std::process::exit(status),
    }
}

#[no_mangle]
pub extern "C" fn shmem_my_pe() -> c_int {
    state("shmem_my_pe").me as c_int
}

#[no_mangle]
pub extern "C" fn shmem_n_pes() -> c_int {
    state("shmem_n_pes").npes as c_int
}

#[no_mangle]
pub extern "C" fn shmem_pe_accessible(pe: c_int) -> c_int {
    let st = state("shmem_pe_accessible");
    (pe >= 0 && (pe as u32) < st.npes) as c_int
}

#[no_mangle]
pub extern "C" fn shmem_addr_accessible(addr: *const c_void, pe: c_int) -> c_int {
    let st = state("shmem_addr_accessible");
    (pe >= 0 && (pe as u32) < st.npes && st.try_target(pe as u32, addr as *const u8, 1).is_some())
        as c_int
}

#[no_mangle]
pub extern "C" fn shmem_ptr(dest: *const c_void, pe: c_int) -> *mut c_void {
    let st = state("shmem_ptr");
    if pe < 0 || pe as u32 >= st.npes {
        return std::ptr::null_mut();
    }
    match st.try_target(pe as u32, dest as *const u8, 1) {
        Some(Target::Local(p)) | Some(Target::Mapped(p)) => p as *mut c_void,
        _ => std::ptr::null_mut(),
    }
}

#[no_mangle]
pub unsafe extern "C" fn shmem_info_get_version(major: *mut c_int, minor: *mut c_int) {
    // SAFETY: the caller's ints.
    unsafe {
        if !major.is_null() {
            major.write(1);
        }
        if !minor.is_null() {
            minor.write(5);
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn shmem_info_get_name(name: *mut c_char) {
    if !name.is_null() {
        // SAFETY: the caller's buffer of SHMEM_MAX_NAME_LEN (256) bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(VENDOR.as_ptr() as *const c_char, name, VENDOR.len())
        };
    }
}

/// `shmem_pcontrol(level, ...)`: a hint for profiling tools; nothing to do here.
#[no_mangle]
pub extern "C" fn shmem_pcontrol(_level: c_int) {}

#[no_mangle]
pub extern "C" fn start_pes(_npes: c_int) {
    state::init("start_pes", 0);
}

#[no_mangle]
pub extern "C" fn _my_pe() -> c_int {
    state("_my_pe").me as c_int
}

#[no_mangle]
pub extern "C" fn _num_pes() -> c_int {
    state("_num_pes").npes as c_int
}

#[no_mangle]
pub extern "C" fn my_pe() -> c_int {
    state("my_pe").me as c_int
}

#[no_mangle]
pub extern "C" fn num_pes() -> c_int {
    state("num_pes").npes as c_int
}

/// Deprecated cache management: the host is cache coherent, nothing to do.
#[no_mangle]
pub extern "C" fn shmem_clear_cache_inv() {}

#[no_mangle]
pub extern "C" fn shmem_set_cache_inv() {}

#[no_mangle]
pub extern "C" fn shmem_clear_cache_line_inv(_dest: *mut c_void) {}

#[no_mangle]
pub extern "C" fn shmem_set_cache_line_inv(_dest: *mut c_void) {}

#[no_mangle]
pub extern "C" fn shmem_udcflush() {}

#[no_mangle]
pub extern "C" fn shmem_udcflush_line(_dest: *mut c_void) {}
