//! The Active Access and remote-atomic calls of the C ABI (`up_aa_*`, `up_atomic`),
//! thin wrappers over [`unpinned_aa_live::ActiveAccess`], [`Runtime::active_flush`] and
//! [`Runtime::atomic`]. Documented in `include/unpinned.h`.
//!
//! [`Runtime::active_flush`]: unpinned_live::Runtime::active_flush
//! [`Runtime::atomic`]: unpinned_live::Runtime::atomic

use std::ffi::{c_int, c_uint, c_void};

use unpinned_aa_live::{ActiveError, EntryKind, Iuid, Notify, PageBits};
use unpinned_live::{AtomicOp, LiveError};

use crate::{arg, guard, handle, null, Fail, UpRuntime, UP_OK};

/// `UP_ERR_AA_EXISTS`: the access log exists already.
pub const UP_ERR_AA_EXISTS: c_int = -40;
/// `UP_ERR_AA_NO_LOG`: no access log with this IUID.
pub const UP_ERR_AA_NO_LOG: c_int = -41;
/// `UP_ERR_AA_HANDLER`: the log has a handler already (or none to stop).
pub const UP_ERR_AA_HANDLER: c_int = -42;
/// `UP_ERR_AA_THREAD`: the handler thread could not start.
pub const UP_ERR_AA_THREAD: c_int = -43;

/// Page bits (`UP_AA_W` ... `UP_AA_E`).
pub const UP_AA_W: c_uint = 1;
/// Reads allowed.
pub const UP_AA_R: c_uint = 2;
/// Log puts.
pub const UP_AA_WL: c_uint = 4;
/// Log puts' data.
pub const UP_AA_WLD: c_uint = 8;
/// Log gets.
pub const UP_AA_RL: c_uint = 16;
/// Log gets' data.
pub const UP_AA_RLD: c_uint = 32;
/// Faults to the access log.
pub const UP_AA_E: c_uint = 64;
const ALL_BITS: c_uint = 127;

/// `UP_AA_POLL`: a polling handler.
pub const UP_AA_POLL: c_int = 0;
/// `UP_AA_SLEEP`: a handler sleeping on a futex.
pub const UP_AA_SLEEP: c_int = 1;

/// `UP_ATOMIC_CAS`, `UP_ATOMIC_FETCH_ADD`, `UP_ATOMIC_SWAP`.
pub const UP_ATOMIC_CAS: c_int = 1;
/// Fetch-and-add.
pub const UP_ATOMIC_FETCH_ADD: c_int = 2;
/// Swap (fetch-and-replace).
pub const UP_ATOMIC_SWAP: c_int = 3;

/// The code of an [`ActiveError`] (exhaustive).
pub fn active_error_code(e: &ActiveError) -> c_int {
    match e {
        ActiveError::BadIuid(_)
        | ActiveError::LogTooSmall(_)
        | ActiveError::BadRange { .. }
        | ActiveError::TooLarge { .. } => crate::UP_ERR_ARG,
        ActiveError::LogExists(_) => UP_ERR_AA_EXISTS,
        ActiveError::NoLog(_) => UP_ERR_AA_NO_LOG,
        ActiveError::HandlerAttached(_) => UP_ERR_AA_HANDLER,
        ActiveError::Thread(_) => UP_ERR_AA_THREAD,
    }
}

impl From<ActiveError> for Fail {
    fn from(e: ActiveError) -> Fail {
        Fail {
            code: active_error_code(&e),
            msg: e.to_string(),
        }
    }
}

/// `up_aa_entry_t`: one access-log entry as a handler sees it.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct UpAaEntry {
    /// `UP_AA_ENTRY_*` (the crates/aa `EntryKind` value).
    pub kind: u32,
    /// Rank that made the access.
    pub source: u32,
    /// Target address of the whole access.
    pub addr: u64,
    /// Bytes the access touched.
    pub access_len: u64,
    /// Logged data (valid during the callback only), NULL for metadata-only entries.
    pub data: *const c_void,
    /// Bytes of `data`.
    pub data_len: u64,
}

/// `up_aa_handler_fn`.
pub type UpAaHandlerFn = Option<unsafe extern "C" fn(entry: *const UpAaEntry, arg: *mut c_void)>;

/// `up_aa_handler_stats_t`: what a stopped handler did.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UpAaHandlerStats {
    /// Entries processed.
    pub entries: u64,
    /// Wake-ups (batches taken after the log was found empty).
    pub wakeups: u64,
    /// Median notification delay, ns (publication -> handler), 0 without samples.
    pub notify_median_ns: u64,
}

/// The C callback and its argument, moved to the handler thread.
struct Callback {
    f: unsafe extern "C" fn(*const UpAaEntry, *mut c_void),
    arg: *mut c_void,
}
// SAFETY: the header requires `fn` and `arg` to be usable from the handler thread (the caller
// synchronizes whatever `arg` points to); we only pass `arg` back to `fn`.
unsafe impl Send for Callback {}

fn iuid(v: u32) -> Result<Iuid, Fail> {
    u16::try_from(v)
        .ok()
        .and_then(Iuid::new)
        .ok_or_else(|| arg(format!("IUID {v} is out of range (0..=1023)")))
}

/// See `up_aa_create_log` in `unpinned.h`.
///
/// # Safety
///
/// `rt` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn up_aa_create_log(rt: *mut UpRuntime, iuid: u32, size_bytes: u32) -> c_int {
    guard("up_aa_create_log", || {
        // SAFETY: `rt` is NULL or a live handle (this function's contract); NULL is checked.
        let h = unsafe { handle(rt) }?;
        h.rt.active().create_log(iuid, size_bytes)?;
        Ok(UP_OK)
    })
}

/// See `up_aa_assoc_pages` in `unpinned.h`.
///
/// # Safety
///
/// `rt` is NULL or a live handle. `addr` is not dereferenced.
#[no_mangle]
pub unsafe extern "C" fn up_aa_assoc_pages(
    rt: *mut UpRuntime,
    addr: *const c_void,
    len: usize,
    bits: c_uint,
    iuid_v: u32,
) -> c_int {
    guard("up_aa_assoc_pages", || {
        // SAFETY: `rt` is NULL or a live handle (this function's contract); NULL is checked.
        let h = unsafe { handle(rt) }?;
        if bits & !ALL_BITS != 0 {
            return Err(arg(format!("bits {bits:#x}: use UP_AA_W ... UP_AA_E")));
        }
        let b = PageBits {
            w: bits & UP_AA_W != 0,
            r: bits & UP_AA_R != 0,
            wl: bits & UP_AA_WL != 0,
            wld: bits & UP_AA_WLD != 0,
            rl: bits & UP_AA_RL != 0,
            rld: bits & UP_AA_RLD != 0,
            e: bits & UP_AA_E != 0,
            iuid: iuid(iuid_v)?,
        };
        h.rt.active().assoc_pages(addr as u64, len as u64, b)?;
        Ok(UP_OK)
    })
}

/// See `up_aa_clear_pages` in `unpinned.h`.
///
/// # Safety
///
/// `rt` is NULL or a live handle. `addr` is not dereferenced.
#[no_mangle]
pub unsafe extern "C" fn up_aa_clear_pages(
    rt: *mut UpRuntime,
    addr: *const c_void,
    len: usize,
) -> c_int {
    guard("up_aa_clear_pages", || {
        // SAFETY: `rt` is NULL or a live handle (this function's contract); NULL is checked.
        let h = unsafe { handle(rt) }?;
        h.rt.active().clear_pages(addr as u64, len as u64)?;
        Ok(UP_OK)
    })
}

/// See `up_aa_handler_start` in `unpinned.h`.
///
/// # Safety
///
/// `rt` is NULL or a live handle; `f` and `arg` may be used from another thread until
/// `up_aa_handler_stop` or `up_finalize` returns.
#[no_mangle]
pub unsafe extern "C" fn up_aa_handler_start(
    rt: *mut UpRuntime,
    iuid_v: u32,
    notify: c_int,
    f: UpAaHandlerFn,
    arg_ptr: *mut c_void,
) -> c_int {
    guard("up_aa_handler_start", || {
        // SAFETY: `rt` is NULL or a live handle (this function's contract); NULL is checked.
        let h = unsafe { handle(rt) }?;
        let f = f.ok_or_else(|| null("fn"))?;
        let notify = match notify {
            UP_AA_POLL => Notify::Poll,
            UP_AA_SLEEP => Notify::Sleep,
            n => return Err(arg(format!("notify {n}: use UP_AA_POLL or UP_AA_SLEEP"))),
        };
        let cb = Callback { f, arg: arg_ptr };
        let handler = h.rt.active().spawn_handler(iuid_v, notify, move |e| {
            let cb = &cb;
            let entry = UpAaEntry {
                kind: e.header.kind as u32,
                source: e.header.source,
                addr: e.header.addr,
                access_len: e.header.access_len as u64,
                data: if e.data.is_empty() {
                    std::ptr::null()
                } else {
                    e.data.as_ptr() as *const c_void
                },
                data_len: e.data.len() as u64,
            };
            // SAFETY: the caller of up_aa_handler_start promised that `f(entry, arg)` may be
            // called from this thread; `entry` and its data live for the call.
            unsafe { (cb.f)(&entry, cb.arg) };
        })?;
        h.handlers().insert(iuid_v, handler);
        Ok(UP_OK)
    })
}

/// See `up_aa_handler_stop` in `unpinned.h`.
///
/// # Safety
///
/// `rt` is NULL or a live handle; `out` is NULL or valid for writing.
#[no_mangle]
pub unsafe extern "C" fn up_aa_handler_stop(
    rt: *mut UpRuntime,
    iuid_v: u32,
    out: *mut UpAaHandlerStats,
) -> c_int {
    guard("up_aa_handler_stop", || {
        // SAFETY: `rt` is NULL or a live handle (this function's contract); NULL is checked.
        let h = unsafe { handle(rt) }?;
        let Some(handler) = h.handlers().remove(&iuid_v) else {
            return Err(Fail {
                code: UP_ERR_AA_HANDLER,
                msg: format!("access log {iuid_v} has no running handler"),
            });
        };
        let rep = handler.stop().unwrap_or_default();
        if !out.is_null() {
            let s = UpAaHandlerStats {
                entries: rep.entries,
                wakeups: rep.notify_ns.len() as u64,
                notify_median_ns: rep.notify_quantile_ns(0.5).unwrap_or(0),
            };
            // SAFETY: `out` is non-NULL and valid for writing per the contract.
            unsafe { out.write(s) };
        }
        Ok(UP_OK)
    })
}

/// See `up_aa_flush` in `unpinned.h`.
///
/// # Safety
///
/// `rt` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn up_aa_flush(
    rt: *mut UpRuntime,
    peer: u32,
    flush_addr: u64,
    rkey: u32,
) -> c_int {
    guard("up_aa_flush", || {
        // SAFETY: `rt` is NULL or a live handle (this function's contract); NULL is checked.
        let h = unsafe { handle(rt) }?;
        let before: Vec<u64> = h.outstanding().keys().copied().collect();
        let r = h.rt.active_flush(peer, flush_addr, rkey);
        // Like up_flush: every request posted before has completed and been consumed.
        let mut map = h.outstanding();
        for id in before {
            map.remove(&id);
        }
        drop(map);
        r?;
        Ok(UP_OK)
    })
}

/// See `up_aa_write_active` in `unpinned.h`.
///
/// # Safety
///
/// As `up_write`: `rt` is NULL or a live handle; `wr_id` is NULL or valid for writing;
/// `[local, local+len)` stays mapped and unmodified until the completion is returned.
#[no_mangle]
pub unsafe extern "C" fn up_aa_write_active(
    rt: *mut UpRuntime,
    peer: u32,
    local: *const c_void,
    remote_addr: u64,
    rkey: u32,
    len: usize,
    wr_id: *mut u64,
) -> c_int {
    guard("up_aa_write_active", || {
        // SAFETY: `rt` is NULL or a live handle (this function's contract); NULL is checked.
        let h = unsafe { handle(rt) }?;
        if local.is_null() {
            return Err(null("local"));
        }
        let start = || {
            // SAFETY: the caller takes over `Runtime::write`'s contract (see the header).
            unsafe {
                h.rt.write_active(peer, local as *const u8, remote_addr, rkey, len)
            }
        };
        crate::post(h, unpinned_live::Op::Write, start, wr_id)
    })
}

/// See `up_aa_reply_setup` in `unpinned.h`.
///
/// # Safety
///
/// `rt` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn up_aa_reply_setup(rt: *mut UpRuntime) -> c_int {
    guard("up_aa_reply_setup", || {
        // SAFETY: `rt` is NULL or a live handle (this function's contract); NULL is checked.
        let h = unsafe { handle(rt) }?;
        h.rt.reply_setup()?;
        Ok(UP_OK)
    })
}

/// See `up_aa_reply_flush` in `unpinned.h`.
///
/// # Safety
///
/// `rt` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn up_aa_reply_flush(rt: *mut UpRuntime, peer: u32) -> c_int {
    guard("up_aa_reply_flush", || {
        // SAFETY: `rt` is NULL or a live handle (this function's contract); NULL is checked.
        let h = unsafe { handle(rt) }?;
        let before: Vec<u64> = h.outstanding().keys().copied().collect();
        let r = h.rt.reply_flush(peer);
        // As up_aa_flush: the requests posted before were completed and consumed, unless the
        // call failed before its fence (bad peer, no reply words).
        if !matches!(r, Err(LiveError::Invalid(_)) | Err(LiveError::Config(_))) {
            let mut map = h.outstanding();
            for id in before {
                map.remove(&id);
            }
        }
        r?;
        Ok(UP_OK)
    })
}

/// See `up_atomic` in `unpinned.h`.
///
/// # Safety
///
/// `rt` is NULL or a live handle; `old` is NULL or valid for writing.
#[no_mangle]
pub unsafe extern "C" fn up_atomic(
    rt: *mut UpRuntime,
    peer: u32,
    remote_addr: u64,
    rkey: u32,
    op: c_int,
    operand: u64,
    compare: u64,
    old: *mut u64,
) -> c_int {
    guard("up_atomic", || {
        // SAFETY: `rt` is NULL or a live handle (this function's contract); NULL is checked.
        let h = unsafe { handle(rt) }?;
        let op = match op {
            UP_ATOMIC_CAS => AtomicOp::Cas {
                expected: compare,
                new: operand,
            },
            UP_ATOMIC_FETCH_ADD => AtomicOp::FetchAdd(operand),
            UP_ATOMIC_SWAP => AtomicOp::Swap(operand),
            o => {
                return Err(arg(format!(
                    "op {o}: use UP_ATOMIC_CAS, UP_ATOMIC_FETCH_ADD or UP_ATOMIC_SWAP"
                )))
            }
        };
        let v = h.rt.atomic(peer, remote_addr, rkey, op)?;
        if !old.is_null() {
            // SAFETY: `old` is non-NULL and valid for writing per the contract.
            unsafe { old.write(v) };
        }
        Ok(UP_OK)
    })
}

/// Entry kinds as the header names them (`UP_AA_ENTRY_*`).
pub fn entry_kind_names() -> [(&'static str, u32); 7] {
    [
        ("UP_AA_ENTRY_ACTIVE_PUT", EntryKind::ActivePut as u32),
        ("UP_AA_ENTRY_PUT_META", EntryKind::PutMeta as u32),
        ("UP_AA_ENTRY_PUT_DATA", EntryKind::PutData as u32),
        ("UP_AA_ENTRY_GET_META", EntryKind::GetMeta as u32),
        ("UP_AA_ENTRY_GET_DATA", EntryKind::GetData as u32),
        ("UP_AA_ENTRY_ACTIVE_GET", EntryKind::ActiveGet as u32),
        ("UP_AA_ENTRY_FAULT", EntryKind::Fault as u32),
    ]
}

/// `UP_AA_ACTIVE_PUT`: R | WL | WLD | E.
pub const UP_AA_ACTIVE_PUT: c_uint = UP_AA_R | UP_AA_WL | UP_AA_WLD | UP_AA_E;
/// `UP_AA_COUNT`: W | R | WL | RL | E.
pub const UP_AA_COUNT: c_uint = UP_AA_W | UP_AA_R | UP_AA_WL | UP_AA_RL | UP_AA_E;
/// `UP_AA_FLUSH_PAGE`: RL.
pub const UP_AA_FLUSH_PAGE: c_uint = UP_AA_RL;

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// The `#define UP_AA_*` / `UP_ATOMIC_*` values of the header equal this module's.
    #[test]
    fn header_matches_the_active_access_constants() {
        let h = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/include/unpinned.h"))
            .unwrap();
        let defines: HashMap<&str, i64> = h
            .lines()
            .filter_map(|l| l.trim().strip_prefix("#define "))
            .filter_map(|r| {
                let mut it = r.split_whitespace();
                Some((it.next()?, it.next()?.trim_end_matches('u').parse().ok()?))
            })
            .collect();
        let want: Vec<(&str, i64)> = vec![
            ("UP_AA_W", UP_AA_W as i64),
            ("UP_AA_R", UP_AA_R as i64),
            ("UP_AA_WL", UP_AA_WL as i64),
            ("UP_AA_WLD", UP_AA_WLD as i64),
            ("UP_AA_RL", UP_AA_RL as i64),
            ("UP_AA_RLD", UP_AA_RLD as i64),
            ("UP_AA_E", UP_AA_E as i64),
            ("UP_AA_ACTIVE_PUT", UP_AA_ACTIVE_PUT as i64),
            ("UP_AA_COUNT", UP_AA_COUNT as i64),
            ("UP_AA_FLUSH_PAGE", UP_AA_FLUSH_PAGE as i64),
            ("UP_AA_POLL", UP_AA_POLL as i64),
            ("UP_AA_SLEEP", UP_AA_SLEEP as i64),
            ("UP_ATOMIC_CAS", UP_ATOMIC_CAS as i64),
            ("UP_ATOMIC_FETCH_ADD", UP_ATOMIC_FETCH_ADD as i64),
            ("UP_ATOMIC_SWAP", UP_ATOMIC_SWAP as i64),
        ];
        for (name, v) in want
            .into_iter()
            .chain(entry_kind_names().into_iter().map(|(n, v)| (n, v as i64)))
        {
            assert_eq!(defines.get(name), Some(&v), "{name} in unpinned.h");
        }
        for f in [
            "up_aa_create_log",
            "up_aa_assoc_pages",
            "up_aa_clear_pages",
            "up_aa_handler_start",
            "up_aa_handler_stop",
            "up_aa_flush",
            "up_atomic",
        ] {
            assert!(
                h.contains(&format!(" {f}(")),
                "{f} is not declared in unpinned.h"
            );
        }
        assert_eq!(std::mem::size_of::<UpAaEntry>(), 40);
        assert_eq!(std::mem::size_of::<UpAaHandlerStats>(), 24);
    }
}
