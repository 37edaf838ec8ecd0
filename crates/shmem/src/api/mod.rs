//! The `extern "C"` entry points of include/shmem.h.

mod mem;
mod setup;
mod sync;
pub(crate) mod typed;

use std::ffi::c_void;

use crate::ctx::Ctx;
use crate::state::{fatal, State};

/// `shmem_ctx_t` on the C side.
pub type CtxHandle = *mut c_void;

/// The object whose address is `SHMEM_CTX_DEFAULT` (include/shmem/types.h).
#[no_mangle]
#[allow(non_upper_case_globals)]
pub static shmem_up_ctx_default: [u64; 1] = [0];

/// `SHMEM_CTX_DEFAULT`.
pub fn default_ctx() -> CtxHandle {
    shmem_up_ctx_default.as_ptr() as CtxHandle
}

/// The context behind a handle, for `call`.
pub fn resolve(st: &'static State, call: &str, h: CtxHandle) -> &'static Ctx {
    if h == default_ctx() {
        &st.default_ctx
    } else if h.is_null() {
        fatal(
            call,
            "the context is SHMEM_CTX_INVALID (shmem_ctx_create failed or was not called)",
        )
    } else {
        // SAFETY: a non-default handle is a context from shmem_ctx_create (the program's
        // contract: not destroyed yet).
        unsafe { &*(h as *const Ctx) }
    }
}
