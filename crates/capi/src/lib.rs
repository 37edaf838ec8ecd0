//! The C ABI of the unpinned live runtime.
//!
//! `include/unpinned.h` is the hand-written header; this crate builds `libunpinned.a`
//! (staticlib), `libunpinned.so` (cdylib) and an rlib (for the Rust tests). Every function is a
//! thin wrapper over [`unpinned_aa_live::ActiveRuntime`] (an [`unpinned_live::Runtime`] with
//! Active Access):
//!
//! | C                          | Rust                                   |
//! |----------------------------|----------------------------------------|
//! | `up_init` / `up_finalize`  | [`Runtime::from_env`](unpinned_live::Runtime::from_env) / `drop`         |
//! | `up_rank` / `up_size`      | [`Runtime::rank`](unpinned_live::Runtime::rank) / [`Runtime::size`](unpinned_live::Runtime::size)  |
//! | `up_expose` / `up_revoke`  | [`Runtime::expose`](unpinned_live::Runtime::expose) / [`Runtime::revoke`](unpinned_live::Runtime::revoke) |
//! | `up_exchange`              | [`Runtime::exchange`](unpinned_live::Runtime::exchange)                  |
//! | `up_write` / `up_read`     | [`Runtime::write`](unpinned_live::Runtime::write) / [`Runtime::read`](unpinned_live::Runtime::read) |
//! | `up_wait` / `up_poll`      | [`Runtime::wait`](unpinned_live::Runtime::wait) / [`Runtime::poll_completion`](unpinned_live::Runtime::poll_completion) |
//! | `up_flush` / `up_barrier`  | [`Runtime::flush`](unpinned_live::Runtime::flush) / [`Runtime::barrier`](unpinned_live::Runtime::barrier) |
//! | `up_aa_*`, `up_atomic`     | [`active`]: Active Access and remote atomics |
//!
//! Rules every entry point follows:
//!
//! - no panic crosses the boundary: each body runs under [`std::panic::catch_unwind`] and a
//!   panic becomes [`UP_ERR_PANIC`];
//! - pointers are checked for NULL ([`UP_ERR_NULL`]) before use;
//! - errors are negative codes, one per [`LiveError`] / [`CompletionError`] variant
//!   ([`live_error_code`], [`completion_error_code`]); the full message (with what to do) is kept
//!   per thread for `up_last_error_message`.
//!
//! One thing [`Runtime`](unpinned_live::Runtime) does not give back is the operation of a failed request waited for
//! with [`Runtime::wait`](unpinned_live::Runtime::wait) (`LiveError::Failed` carries only the id and the error). The handle
//! therefore remembers `wr_id -> op` for requests it posted and has not yet returned (a small
//! map, also used to refuse waiting on an id that is not outstanding instead of timing out).

#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Mutex, MutexGuard};

use unpinned_aa_live::ActiveRuntime;
use unpinned_live::{Completion, CompletionError, LiveError, Op, Perms};

// ---------------------------------------------------------------------------------------------
// Codes (keep in sync with include/unpinned.h; the unit tests check the header).

/// Success.
pub const UP_OK: c_int = 0;
/// `LiveError::Env`: a launcher environment variable is missing or malformed.
pub const UP_ERR_ENV: c_int = -1;
/// `LiveError::Config` or `LiveError::Knob`: inconsistent configuration (e.g. an unknown key
/// in `UNPINNED_SET`).
pub const UP_ERR_CONFIG: c_int = -2;
/// `LiveError::Memory`: residency checks unavailable (`/proc/self/pagemap`).
pub const UP_ERR_MEMORY: c_int = -3;
/// `LiveError::Shm`: the shared-memory transport failed to open.
pub const UP_ERR_SHM: c_int = -4;
/// `LiveError::Udp`: the UDP transport failed to open.
pub const UP_ERR_UDP: c_int = -5;
/// `LiveError::Expose`: the range cannot be exposed (not mapped with the permissions).
pub const UP_ERR_EXPOSE: c_int = -6;
/// `LiveError::Invalid`: a work request was refused before it started.
pub const UP_ERR_INVALID: c_int = -7;
/// `LiveError::Timeout`: no completion within the operation timeout.
pub const UP_ERR_TIMEOUT: c_int = -8;
/// `LiveError::EngineGone`: the engine thread has stopped.
pub const UP_ERR_ENGINE_GONE: c_int = -9;
/// `LiveError::Bootstrap`: a bootstrap collective failed.
pub const UP_ERR_BOOTSTRAP: c_int = -10;
/// `LiveError::NoBootstrap`: no bootstrap directory.
pub const UP_ERR_NO_BOOTSTRAP: c_int = -11;
/// `CompletionError::RemoteAccess` (via `LiveError::Failed`).
pub const UP_ERR_REMOTE_ACCESS: c_int = -20;
/// `CompletionError::LocalAccess` (via `LiveError::Failed`).
pub const UP_ERR_LOCAL_ACCESS: c_int = -21;
/// `CompletionError::RetryExceeded` (via `LiveError::Failed`).
pub const UP_ERR_RETRY_EXCEEDED: c_int = -22;
/// `CompletionError::Invalid` (via `LiveError::Failed`).
pub const UP_ERR_WR_INVALID: c_int = -23;
/// `CompletionError::Cancelled` (via `LiveError::Failed`): withdrawn by `up_cancel_all`.
pub const UP_ERR_CANCELLED: c_int = -24;
/// `CompletionError::PeerGone` (via `LiveError::Failed`): the target rank exited, was killed
/// or left the job.
pub const UP_ERR_PEER_GONE: c_int = -25;
/// C ABI only: a required pointer argument was NULL.
pub const UP_ERR_NULL: c_int = -30;
/// C ABI only: an argument is out of range (permission bits, array too small, unknown id).
pub const UP_ERR_ARG: c_int = -31;
/// C ABI only: an internal panic was caught (a bug in unpinned).
pub const UP_ERR_PANIC: c_int = -32;

/// `UP_PERM_READ`: peers may read the exposed range.
pub const UP_PERM_READ: c_uint = 1;
/// `UP_PERM_WRITE`: peers may write the exposed range.
pub const UP_PERM_WRITE: c_uint = 2;

/// `UP_OP_UNKNOWN`: the operation is not known (never returned for requests of this handle).
pub const UP_OP_UNKNOWN: i32 = 0;
/// `UP_OP_WRITE`.
pub const UP_OP_WRITE: i32 = 1;
/// `UP_OP_READ`.
pub const UP_OP_READ: i32 = 2;

/// The code of a [`LiveError`]; one code per variant (`Failed` maps to the code of its
/// [`CompletionError`]). The match is exhaustive on purpose: a new variant must get a code.
pub fn live_error_code(e: &LiveError) -> c_int {
    match e {
        LiveError::Env { .. } => UP_ERR_ENV,
        LiveError::Config(_) | LiveError::Knob(_) => UP_ERR_CONFIG,
        LiveError::Memory(_) => UP_ERR_MEMORY,
        LiveError::Shm(_) => UP_ERR_SHM,
        LiveError::Udp(_) => UP_ERR_UDP,
        LiveError::Expose { .. } => UP_ERR_EXPOSE,
        LiveError::Invalid(_) => UP_ERR_INVALID,
        LiveError::Failed { error, .. } => completion_error_code(*error),
        LiveError::Timeout(_) => UP_ERR_TIMEOUT,
        LiveError::EngineGone => UP_ERR_ENGINE_GONE,
        LiveError::Bootstrap(_) => UP_ERR_BOOTSTRAP,
        LiveError::NoBootstrap => UP_ERR_NO_BOOTSTRAP,
    }
}

/// The code of a [`CompletionError`] (exhaustive, one code per variant).
pub fn completion_error_code(e: CompletionError) -> c_int {
    match e {
        CompletionError::RemoteAccess => UP_ERR_REMOTE_ACCESS,
        CompletionError::LocalAccess => UP_ERR_LOCAL_ACCESS,
        CompletionError::RetryExceeded => UP_ERR_RETRY_EXCEEDED,
        CompletionError::Invalid => UP_ERR_WR_INVALID,
        CompletionError::Cancelled => UP_ERR_CANCELLED,
        CompletionError::PeerGone => UP_ERR_PEER_GONE,
    }
}

/// Every code with its `up_strerror` text (and its name in the header).
const CODES: &[(c_int, &str, &CStr)] = &[
    (UP_OK, "UP_OK", c"success"),
    (UP_ERR_ENV, "UP_ERR_ENV", c"launcher environment missing or malformed (run the program with `unpinned run -n N -- PROGRAM`)"),
    (UP_ERR_CONFIG, "UP_ERR_CONFIG", c"inconsistent runtime configuration"),
    (UP_ERR_MEMORY, "UP_ERR_MEMORY", c"page residency checks unavailable (is /proc mounted?)"),
    (UP_ERR_SHM, "UP_ERR_SHM", c"the shared-memory transport failed to open"),
    (UP_ERR_UDP, "UP_ERR_UDP", c"the UDP transport failed to open"),
    (UP_ERR_EXPOSE, "UP_ERR_EXPOSE", c"the range cannot be exposed (not mapped with the requested permissions)"),
    (UP_ERR_INVALID, "UP_ERR_INVALID", c"invalid work request (peer out of range, peer is this rank, or range wraps around)"),
    (UP_ERR_TIMEOUT, "UP_ERR_TIMEOUT", c"timed out waiting for a completion (the request may still be in flight)"),
    (UP_ERR_ENGINE_GONE, "UP_ERR_ENGINE_GONE", c"the engine thread has stopped; no more completions will arrive"),
    (UP_ERR_BOOTSTRAP, "UP_ERR_BOOTSTRAP", c"a bootstrap collective failed (a rank died or ranks called different collectives)"),
    (UP_ERR_NO_BOOTSTRAP, "UP_ERR_NO_BOOTSTRAP", c"no bootstrap directory (run the program through `unpinned run`)"),
    (UP_ERR_REMOTE_ACCESS, "UP_ERR_REMOTE_ACCESS", c"remote access error: the target refused the access (range, key or permission)"),
    (UP_ERR_LOCAL_ACCESS, "UP_ERR_LOCAL_ACCESS", c"local access error: the local buffer is not mapped"),
    (UP_ERR_RETRY_EXCEEDED, "UP_ERR_RETRY_EXCEEDED", c"retry count exceeded: the peer did not answer"),
    (UP_ERR_WR_INVALID, "UP_ERR_WR_INVALID", c"the engine rejected the work request as invalid"),
    (UP_ERR_CANCELLED, "UP_ERR_CANCELLED", c"cancelled by up_cancel_all before it finished (its buffers are no longer used)"),
    (UP_ERR_PEER_GONE, "UP_ERR_PEER_GONE", c"the target rank is gone (exited, killed, or left the job)"),
    (UP_ERR_NULL, "UP_ERR_NULL", c"a required pointer argument is NULL"),
    (UP_ERR_ARG, "UP_ERR_ARG", c"an argument is out of range"),
    (UP_ERR_PANIC, "UP_ERR_PANIC", c"internal error (a caught panic; please report it)"),
    (active::UP_ERR_AA_EXISTS, "UP_ERR_AA_EXISTS", c"the access log exists already"),
    (active::UP_ERR_AA_NO_LOG, "UP_ERR_AA_NO_LOG", c"no access log with this IUID (create it with up_aa_create_log)"),
    (active::UP_ERR_AA_HANDLER, "UP_ERR_AA_HANDLER", c"the access log has a handler already, or none to stop"),
    (active::UP_ERR_AA_THREAD, "UP_ERR_AA_THREAD", c"the handler thread could not start"),
];

/// Names and values of all codes (for tests that check the header).
pub fn code_names() -> impl Iterator<Item = (&'static str, c_int)> {
    CODES.iter().map(|(c, n, _)| (*n, *c))
}

// ---------------------------------------------------------------------------------------------
// C types.

/// `up_region_t`: one rank's exposed region, as gathered by `up_exchange`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UpRegion {
    /// The rank that exposed it.
    pub rank: u32,
    /// The key to present when accessing it.
    pub key: u32,
    /// Its virtual address in that rank.
    pub addr: u64,
    /// Its length in bytes.
    pub len: u64,
}

/// `up_completion_t`: a finished work request.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UpCompletion {
    /// The id returned by `up_write` / `up_read`.
    pub wr_id: u64,
    /// Bytes moved (the full length on success).
    pub len: u64,
    /// `UP_OP_WRITE` or `UP_OP_READ`.
    pub op: i32,
    /// `UP_OK` or a negative completion code (`UP_ERR_REMOTE_ACCESS`, ...).
    pub status: i32,
}

fn op_code(op: Op) -> i32 {
    match op {
        Op::Write => UP_OP_WRITE,
        Op::Read => UP_OP_READ,
    }
}

impl From<&Completion> for UpCompletion {
    fn from(c: &Completion) -> UpCompletion {
        UpCompletion {
            wr_id: c.wr_id,
            len: c.len,
            op: op_code(c.op),
            status: c.status.map_or_else(completion_error_code, |()| UP_OK),
        }
    }
}

/// `up_runtime_t`: the opaque handle. Owns the [`Runtime`](unpinned_live::Runtime) (its engine and page-in threads).
pub struct UpRuntime {
    /// Running Active Access handlers, by IUID. Declared first: dropped (stopped, after
    /// processing what was published) before the runtime on finalize.
    handlers: Mutex<HashMap<u32, unpinned_aa_live::Handler>>,
    rt: ActiveRuntime,
    /// Requests posted through this handle and not yet returned by wait/poll/flush.
    outstanding: Mutex<HashMap<u64, Op>>,
}

// The header promises that every call but `up_finalize` may be made from any thread.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<UpRuntime>();
};

impl UpRuntime {
    /// Wrap a runtime built in Rust (tests use the in-process transport) into a C handle, to be
    /// released with [`up_finalize`].
    pub fn into_handle(rt: ActiveRuntime) -> *mut UpRuntime {
        Box::into_raw(Box::new(UpRuntime {
            rt,
            outstanding: Mutex::new(HashMap::new()),
            handlers: Mutex::new(HashMap::new()),
        }))
    }

    fn outstanding(&self) -> MutexGuard<'_, HashMap<u64, Op>> {
        // A panic while holding this lock cannot leave the map inconsistent (single inserts
        // and removes), so a poisoned lock is still usable.
        self.outstanding.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn handlers(&self) -> MutexGuard<'_, HashMap<u32, unpinned_aa_live::Handler>> {
        self.handlers.lock().unwrap_or_else(|e| e.into_inner())
    }
}

// ---------------------------------------------------------------------------------------------
// Errors and the per-thread message.

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_last_error(msg: String) {
    let msg = CString::new(msg.replace('\0', "\\0")).unwrap_or_default();
    // `try_with` fails only during thread teardown; losing the message then is harmless.
    let _ = LAST_ERROR.try_with(|m| *m.borrow_mut() = msg);
}

/// A failed call: its code and the message for `up_last_error_message`.
struct Fail {
    code: c_int,
    msg: String,
}

impl From<LiveError> for Fail {
    fn from(e: LiveError) -> Fail {
        Fail {
            code: live_error_code(&e),
            msg: e.to_string(),
        }
    }
}

fn null(what: &str) -> Fail {
    Fail {
        code: UP_ERR_NULL,
        msg: format!("{what} is NULL"),
    }
}

fn arg(msg: String) -> Fail {
    Fail {
        code: UP_ERR_ARG,
        msg,
    }
}

/// Run an entry point's body: catch panics, turn failures into codes and remember the message.
fn guard(func: &str, body: impl FnOnce() -> Result<c_int, Fail>) -> c_int {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(v)) => v,
        Ok(Err(f)) => {
            set_last_error(format!("{func}: {}", f.msg));
            f.code
        }
        Err(p) => {
            let what = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            set_last_error(format!(
                "{func}: internal panic ({what}); this is a bug in unpinned, please report it"
            ));
            UP_ERR_PANIC
        }
    }
}

/// Borrow the runtime behind a handle.
///
/// # Safety
///
/// `rt` is NULL or a handle from [`up_init`] / [`UpRuntime::into_handle`] not yet finalized.
unsafe fn handle<'a>(rt: *const UpRuntime) -> Result<&'a UpRuntime, Fail> {
    // SAFETY: the caller guarantees a non-NULL `rt` points to a live handle; `as_ref` checks NULL.
    unsafe { rt.as_ref() }.ok_or_else(|| null("rt"))
}

fn perms_of(bits: c_uint) -> Result<Perms, Fail> {
    if bits & !(UP_PERM_READ | UP_PERM_WRITE) != 0 || bits == 0 {
        return Err(arg(format!(
            "perms {bits:#x}: use UP_PERM_READ, UP_PERM_WRITE or both"
        )));
    }
    Ok(Perms {
        read: bits & UP_PERM_READ != 0,
        write: bits & UP_PERM_WRITE != 0,
    })
}

// ---------------------------------------------------------------------------------------------
// Entry points (documented in include/unpinned.h).

/// See `up_init` in `unpinned.h`.
///
/// # Safety
///
/// `out` is NULL or valid for writing one pointer.
#[no_mangle]
pub unsafe extern "C" fn up_init(out: *mut *mut UpRuntime) -> c_int {
    guard("up_init", || {
        if out.is_null() {
            return Err(null("out"));
        }
        let rt = ActiveRuntime::from_env()?;
        // SAFETY: `out` is non-NULL and the caller guarantees it is valid for a pointer write.
        unsafe { out.write(UpRuntime::into_handle(rt)) };
        Ok(UP_OK)
    })
}

/// See `up_finalize` in `unpinned.h`.
///
/// # Safety
///
/// `rt` is NULL or a live handle that no other thread uses any more; it is invalid afterwards.
#[no_mangle]
pub unsafe extern "C" fn up_finalize(rt: *mut UpRuntime) -> c_int {
    guard("up_finalize", || {
        if !rt.is_null() {
            // SAFETY: `rt` came from `Box::into_raw` in `into_handle` and, per the contract, is
            // finalized once and no longer used by anyone else.
            drop(unsafe { Box::from_raw(rt) });
        }
        Ok(UP_OK)
    })
}

/// See `up_rank` in `unpinned.h`.
///
/// # Safety
///
/// `rt` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn up_rank(rt: *const UpRuntime) -> c_int {
    guard("up_rank", || {
        // SAFETY: `rt` is NULL or a live handle (this function's contract); NULL is checked.
        let h = unsafe { handle(rt) }?;
        Ok(h.rt.rank() as c_int)
    })
}

/// See `up_size` in `unpinned.h`.
///
/// # Safety
///
/// `rt` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn up_size(rt: *const UpRuntime) -> c_int {
    guard("up_size", || {
        // SAFETY: `rt` is NULL or a live handle (this function's contract); NULL is checked.
        let h = unsafe { handle(rt) }?;
        Ok(h.rt.size() as c_int)
    })
}

/// See `up_expose` in `unpinned.h`.
///
/// # Safety
///
/// `rt` is NULL or a live handle; `key` is NULL or valid for writing; `[addr, addr+len)` obeys
/// the contract of [`Runtime::expose`](unpinned_live::Runtime::expose) (stays mapped, not accessed while peers may write it).
#[no_mangle]
pub unsafe extern "C" fn up_expose(
    rt: *mut UpRuntime,
    addr: *mut c_void,
    len: usize,
    perms: c_uint,
    key: *mut u32,
) -> c_int {
    guard("up_expose", || {
        // SAFETY: `rt` is NULL or a live handle (this function's contract); NULL is checked.
        let h = unsafe { handle(rt) }?;
        if addr.is_null() {
            return Err(null("addr"));
        }
        if key.is_null() {
            return Err(null("key"));
        }
        let perms = perms_of(perms)?;
        // SAFETY: the caller takes over `Runtime::expose`'s contract for the range (header).
        let k = unsafe { h.rt.expose(addr as *const u8, len, perms) }?;
        // SAFETY: `key` is non-NULL and valid for writing per the contract.
        unsafe { key.write(k) };
        Ok(UP_OK)
    })
}

/// See `up_revoke` in `unpinned.h`.
///
/// # Safety
///
/// `rt` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn up_revoke(rt: *mut UpRuntime, key: u32) -> c_int {
    guard("up_revoke", || {
        // SAFETY: `rt` is NULL or a live handle (this function's contract); NULL is checked.
        let h = unsafe { handle(rt) }?;
        Ok(h.rt.revoke(key)? as c_int)
    })
}

/// See `up_exchange` in `unpinned.h`.
///
/// # Safety
///
/// `rt` is NULL or a live handle; `regions` is NULL or valid for writing `nregions` entries.
#[no_mangle]
pub unsafe extern "C" fn up_exchange(
    rt: *mut UpRuntime,
    addr: *const c_void,
    len: usize,
    key: u32,
    regions: *mut UpRegion,
    nregions: usize,
) -> c_int {
    guard("up_exchange", || {
        // SAFETY: `rt` is NULL or a live handle (this function's contract); NULL is checked.
        let h = unsafe { handle(rt) }?;
        if regions.is_null() {
            return Err(null("regions"));
        }
        // Join the collective even if the array is too small, so the other ranks do not wait
        // for this one until the bootstrap timeout.
        let all = h.rt.exchange(addr as u64, len as u64, key)?;
        if nregions < all.len() {
            return Err(arg(format!(
                "nregions is {nregions}, the job has {} ranks (pass an array of up_size() entries)",
                all.len()
            )));
        }
        for (i, r) in all.iter().enumerate() {
            // SAFETY: `i < all.len() <= nregions` and `regions` is valid for `nregions` writes.
            unsafe {
                regions.add(i).write(UpRegion {
                    rank: r.rank,
                    key: r.key,
                    addr: r.addr,
                    len: r.len,
                })
            };
        }
        Ok(UP_OK)
    })
}

/// Post a write or read; records the op for the handle's bookkeeping.
fn post(
    h: &UpRuntime,
    op: Op,
    post: impl FnOnce() -> Result<u64, LiveError>,
    wr_id: *mut u64,
) -> Result<c_int, Fail> {
    // Hold the map while posting: a completion taken by another thread right after the post
    // then finds its entry (wait/poll lock the map after the engine delivered it).
    let mut map = h.outstanding();
    let id = post()?;
    map.insert(id, op);
    drop(map);
    if !wr_id.is_null() {
        // SAFETY: the caller guarantees a non-NULL `wr_id` is valid for writing (header).
        unsafe { wr_id.write(id) };
    }
    Ok(UP_OK)
}

/// See `up_write` in `unpinned.h`.
///
/// # Safety
///
/// `rt` is NULL or a live handle; `wr_id` is NULL or valid for writing; `[local, local+len)`
/// stays mapped and unmodified until the completion is returned ([`Runtime::write`](unpinned_live::Runtime::write)).
#[no_mangle]
pub unsafe extern "C" fn up_write(
    rt: *mut UpRuntime,
    peer: u32,
    local: *const c_void,
    remote_addr: u64,
    rkey: u32,
    len: usize,
    wr_id: *mut u64,
) -> c_int {
    guard("up_write", || {
        // SAFETY: `rt` is NULL or a live handle (this function's contract); NULL is checked.
        let h = unsafe { handle(rt) }?;
        if local.is_null() {
            return Err(null("local"));
        }
        let start = || {
            // SAFETY: the caller takes over `Runtime::write`'s contract for the source
            // range (this function's contract, see the header).
            unsafe { h.rt.write(peer, local as *const u8, remote_addr, rkey, len) }
        };
        post(h, Op::Write, start, wr_id)
    })
}

/// See `up_read` in `unpinned.h`.
///
/// # Safety
///
/// `rt` is NULL or a live handle; `wr_id` is NULL or valid for writing; `[local, local+len)`
/// stays mapped and is not accessed until the completion is returned ([`Runtime::read`](unpinned_live::Runtime::read)).
#[no_mangle]
pub unsafe extern "C" fn up_read(
    rt: *mut UpRuntime,
    peer: u32,
    local: *mut c_void,
    remote_addr: u64,
    rkey: u32,
    len: usize,
    wr_id: *mut u64,
) -> c_int {
    guard("up_read", || {
        // SAFETY: `rt` is NULL or a live handle (this function's contract); NULL is checked.
        let h = unsafe { handle(rt) }?;
        if local.is_null() {
            return Err(null("local"));
        }
        let start = || {
            // SAFETY: the caller takes over `Runtime::read`'s contract for the destination
            // range (this function's contract, see the header).
            unsafe { h.rt.read(peer, local as *mut u8, remote_addr, rkey, len) }
        };
        post(h, Op::Read, start, wr_id)
    })
}

/// See `up_wait` in `unpinned.h`.
///
/// # Safety
///
/// `rt` is NULL or a live handle; `out` is NULL or valid for writing one `up_completion_t`.
#[no_mangle]
pub unsafe extern "C" fn up_wait(rt: *mut UpRuntime, wr_id: u64, out: *mut UpCompletion) -> c_int {
    guard("up_wait", || {
        // SAFETY: `rt` is NULL or a live handle (this function's contract); NULL is checked.
        let h = unsafe { handle(rt) }?;
        let Some(op) = h.outstanding().get(&wr_id).copied() else {
            return Err(arg(format!("work request {wr_id} is not outstanding (never posted, or already returned by up_wait, up_poll or up_flush)")));
        };
        let res = h.rt.wait(wr_id);
        let c = match &res {
            Ok(c) => UpCompletion::from(c),
            Err(LiveError::Failed { error, .. }) => UpCompletion {
                wr_id,
                len: 0,
                op: op_code(op),
                status: completion_error_code(*error),
            },
            // Timeout / engine gone: the request is still outstanding; `out` is untouched.
            Err(_) => return res.map(|_| UP_OK).map_err(Fail::from),
        };
        h.outstanding().remove(&wr_id);
        if !out.is_null() {
            // SAFETY: `out` is non-NULL and valid for writing per the contract.
            unsafe { out.write(c) };
        }
        res.map(|_| UP_OK).map_err(Fail::from)
    })
}

/// See `up_poll` in `unpinned.h`.
///
/// # Safety
///
/// `rt` is NULL or a live handle; `out` is NULL or valid for writing one `up_completion_t`.
#[no_mangle]
pub unsafe extern "C" fn up_poll(rt: *mut UpRuntime, out: *mut UpCompletion) -> c_int {
    guard("up_poll", || {
        // SAFETY: `rt` is NULL or a live handle (this function's contract); NULL is checked.
        let h = unsafe { handle(rt) }?;
        if out.is_null() {
            return Err(null("out"));
        }
        let Some(c) = h.rt.poll_completion() else {
            return Ok(0);
        };
        h.outstanding().remove(&c.wr_id);
        // SAFETY: `out` is non-NULL and valid for writing per the contract.
        unsafe { out.write(UpCompletion::from(&c)) };
        Ok(1)
    })
}

/// See `up_flush` in `unpinned.h`.
///
/// # Safety
///
/// `rt` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn up_flush(rt: *mut UpRuntime) -> c_int {
    guard("up_flush", || {
        // SAFETY: `rt` is NULL or a live handle (this function's contract); NULL is checked.
        let h = unsafe { handle(rt) }?;
        let before: Vec<u64> = h.outstanding().keys().copied().collect();
        let res = h.rt.flush();
        if matches!(res, Ok(()) | Err(LiveError::Failed { .. })) {
            // Every request posted before the flush has completed and been consumed.
            let mut map = h.outstanding();
            for id in before {
                map.remove(&id);
            }
        }
        res?;
        Ok(UP_OK)
    })
}

/// See `up_cancel_all` in `unpinned.h`.
///
/// # Safety
///
/// `rt` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn up_cancel_all(rt: *mut UpRuntime) -> c_int {
    guard("up_cancel_all", || {
        // SAFETY: `rt` is NULL or a live handle (this function's contract); NULL is checked.
        let h = unsafe { handle(rt) }?;
        // Hold the map: a post racing with the cancel is either cancelled and consumed here,
        // or posted after it and kept.
        let mut map = h.outstanding();
        let taken = h.rt.drain()?;
        let mut cancelled = 0;
        for c in &taken {
            map.remove(&c.wr_id);
            if c.status == Err(CompletionError::Cancelled) {
                cancelled += 1;
            }
            // The layer keeps details of failures for `wait`; nobody will wait for these.
            let _ = h.rt.failure_detail(c.wr_id);
        }
        Ok(cancelled)
    })
}

/// See `up_barrier` in `unpinned.h`.
///
/// # Safety
///
/// `rt` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn up_barrier(rt: *mut UpRuntime) -> c_int {
    guard("up_barrier", || {
        // SAFETY: `rt` is NULL or a live handle (this function's contract); NULL is checked.
        unsafe { handle(rt) }?.rt.barrier()?;
        Ok(UP_OK)
    })
}

/// See `up_strerror` in `unpinned.h`. Never fails; the string is static.
#[no_mangle]
pub extern "C" fn up_strerror(code: c_int) -> *const c_char {
    CODES
        .iter()
        .find(|(c, _, _)| *c == code)
        .map_or(c"unknown unpinned error code", |(_, _, s)| s)
        .as_ptr()
}

/// See `up_last_error_message` in `unpinned.h`. Never fails.
#[no_mangle]
pub extern "C" fn up_last_error_message() -> *const c_char {
    // The pointer stays valid until this thread's message is replaced (the next failing call
    // on this thread) or the thread exits: the CString's heap buffer does not move.
    LAST_ERROR
        .try_with(|m| m.borrow().as_ptr())
        .unwrap_or(c"".as_ptr())
}

pub mod active;

#[cfg(test)]
mod tests;
