//! Memory management entry points (collective): the allocator of [`crate::heap`] plus a
//! barrier, so that every PE returns with the same offset and nobody uses the memory before
//! everybody has it.

#![allow(missing_docs, clippy::missing_safety_doc)]

use std::ffi::{c_long, c_void};

use crate::state::{fatal, state, State};
use crate::sync::barrier_all;

fn alloc(st: &State, call: &str, size: usize, align: usize) -> *mut c_void {
    if size == 0 {
        barrier_all(st);
        return std::ptr::null_mut();
    }
    if !align.is_power_of_two() {
        fatal(call, format!("alignment {align} is not a power of two"));
    }
    let off = st
        .alloc
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .alloc(size, align);
    let Some(off) = off else {
        fatal(call, format!("the symmetric heap ({} bytes) has no room for {size} bytes: raise SHMEM_SYMMETRIC_SIZE (e.g. SHMEM_SYMMETRIC_SIZE=4G)", st.heap.size));
    };
    barrier_all(st);
    // SAFETY: inside the heap.
    unsafe { st.heap.base.add(off) as *mut c_void }
}

fn offset_of(st: &State, call: &str, ptr: *mut c_void) -> usize {
    match st.heap_offset(ptr as *const u8, 0) {
        Some(off)
            if st
                .alloc
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .size_of(off)
                .is_some() =>
        {
            off
        }
        _ => fatal(
            call,
            format!("{ptr:p} was not returned by shmem_malloc (or was freed already)"),
        ),
    }
}

fn free(st: &State, call: &str, ptr: *mut c_void) {
    barrier_all(st);
    if ptr.is_null() {
        return;
    }
    let off = offset_of(st, call, ptr);
    st.alloc.lock().unwrap_or_else(|e| e.into_inner()).free(off);
}

#[no_mangle]
pub extern "C" fn shmem_malloc(size: usize) -> *mut c_void {
    let st = state("shmem_malloc");
    alloc(st, "shmem_malloc", size, 64)
}

#[no_mangle]
pub extern "C" fn shmem_malloc_with_hints(size: usize, _hints: c_long) -> *mut c_void {
    let st = state("shmem_malloc_with_hints");
    alloc(st, "shmem_malloc_with_hints", size, 64)
}

#[no_mangle]
pub extern "C" fn shmem_calloc(count: usize, size: usize) -> *mut c_void {
    let st = state("shmem_calloc");
    let Some(n) = count.checked_mul(size) else {
        fatal("shmem_calloc", format!("{count} x {size} bytes overflows"));
    };
    let p = alloc(st, "shmem_calloc", n, 64);
    if !p.is_null() {
        // SAFETY: our fresh allocation of n bytes. Zeroed before the barrier of the next
        // collective call; the allocation's barrier already ran, so zero and barrier again.
        unsafe { std::ptr::write_bytes(p as *mut u8, 0, n) };
        barrier_all(st);
    }
    p
}

#[no_mangle]
pub extern "C" fn shmem_align(alignment: usize, size: usize) -> *mut c_void {
    let st = state("shmem_align");
    alloc(st, "shmem_align", size, alignment)
}

#[no_mangle]
pub extern "C" fn shmem_free(ptr: *mut c_void) {
    let st = state("shmem_free");
    free(st, "shmem_free", ptr)
}

#[no_mangle]
pub extern "C" fn shmem_realloc(ptr: *mut c_void, size: usize) -> *mut c_void {
    let call = "shmem_realloc";
    let st = state(call);
    if ptr.is_null() {
        return alloc(st, call, size, 64);
    }
    if size == 0 {
        free(st, call, ptr);
        return std::ptr::null_mut();
    }
    let off = offset_of(st, call, ptr);
    let old = st
        .alloc
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .size_of(off)
        .unwrap_or(0);
    // Everybody is done with the old block before anybody reuses its space.
    barrier_all(st);
    let new = {
        let mut a = st.alloc.lock().unwrap_or_else(|e| e.into_inner());
        let keep: Vec<u8> = {
            // SAFETY: the old block, `old` bytes.
            unsafe { std::slice::from_raw_parts(ptr as *const u8, old.min(size)) }.to_vec()
        };
        a.free(off);
        let Some(n) = a.alloc(size, 64) else {
            fatal(call, format!("the symmetric heap ({} bytes) has no room for {size} bytes: raise SHMEM_SYMMETRIC_SIZE", st.heap.size));
        };
        // SAFETY: the new block holds at least keep.len() bytes.
        unsafe { std::ptr::copy_nonoverlapping(keep.as_ptr(), st.heap.base.add(n), keep.len()) };
        n
    };
    barrier_all(st);
    // SAFETY: inside the heap.
    unsafe { st.heap.base.add(new) as *mut c_void }
}

#[no_mangle]
pub extern "C" fn shmalloc(size: usize) -> *mut c_void {
    let st = state("shmalloc");
    alloc(st, "shmalloc", size, 64)
}

#[no_mangle]
pub extern "C" fn shfree(ptr: *mut c_void) {
    let st = state("shfree");
    free(st, "shfree", ptr)
}

#[no_mangle]
pub extern "C" fn shrealloc(ptr: *mut c_void, size: usize) -> *mut c_void {
    shmem_realloc(ptr, size)
}

#[no_mangle]
pub extern "C" fn shmemalign(alignment: usize, size: usize) -> *mut c_void {
    let st = state("shmemalign");
    alloc(st, "shmemalign", size, alignment)
}
