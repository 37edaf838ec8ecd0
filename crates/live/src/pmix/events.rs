//! The launcher's process-termination events (registered by [`super::Client`]): another rank
//! of this job ended abnormally, or the connection to the launcher is lost. Either ends this
//! rank at once with a message naming the cause, instead of leaving it blocked in a fence.

use std::ffi::c_void;
use std::io::Write;
use std::os::raw::c_char;
use std::sync::Mutex;

use super::ffi::{self, Info, Proc};
use super::{lock, UNLINK_AFTER_FENCE};

/// The namespace and rank the termination handler acts for (none after finalize).
static WATCHED: Mutex<Option<([c_char; ffi::NSPACE_BYTES], u32)>> = Mutex::new(None);

/// Act for `nspace`'s `rank` (this process).
pub(super) fn watch(nspace: [c_char; ffi::NSPACE_BYTES], rank: u32) {
    *lock(&WATCHED) = Some((nspace, rank));
}

/// Stop acting (PMIx is being finalized).
pub(super) fn unwatch() {
    lock(&WATCHED).take();
}

/// The rank an event is about: the `pmix.evproc` info, else the event's source.
///
/// # Safety
/// `info` points to `ninfo` valid infos; `source` is null or valid.
unsafe fn affected(source: *const Proc, info: *const Info, ninfo: usize) -> Option<Proc> {
    let infos = if info.is_null() {
        &[][..]
    } else {
        std::slice::from_raw_parts(info, ninfo)
    };
    for i in infos {
        let key = std::ffi::CStr::from_ptr(i.key.as_ptr());
        if key.to_bytes() == b"pmix.evproc" && i.value.kind == ffi::PROC {
            let p = i.value.data[0] as *const Proc;
            if !p.is_null() {
                return Some(*p);
            }
        }
    }
    (!source.is_null()).then(|| *source)
}

/// The exit code an event carries (`pmix.exit.code`), if any.
///
/// # Safety
/// As [`affected`].
unsafe fn exit_code(info: *const Info, ninfo: usize) -> Option<i32> {
    if info.is_null() {
        return None;
    }
    std::slice::from_raw_parts(info, ninfo)
        .iter()
        .find_map(|i| {
            let key = std::ffi::CStr::from_ptr(i.key.as_ptr());
            (key.to_bytes() == b"pmix.exit.code" && i.value.kind == ffi::INT)
                .then(|| i.value.data[0] as u32 as i32)
        })
}

/// PMIx's event handler: another rank of this job ended abnormally, or the launcher is gone:
/// say which, remove a pending segment, end this process (and, when the launcher is gone, the
/// process group it leads).
pub(super) unsafe extern "C" fn on_termination(
    _id: usize,
    status: ffi::Status,
    source: *const Proc,
    info: *mut Info,
    ninfo: usize,
    _results: *mut Info,
    _nresults: usize,
    cbfunc: Option<ffi::EventDoneFn>,
    cbdata: *mut c_void,
) {
    let me = *lock(&WATCHED);
    let code = exit_code(info, ninfo);
    let act = match (me, affected(source, info, ninfo)) {
        (None, _) => None,
        (Some(_), _) if status == ffi::ERR_LOST_CONNECTION => {
            Some("lost the connection to the PMIx server (the launcher is gone)".to_string())
        }
        (Some((ns, rank)), Some(p)) if p.nspace == ns && p.rank != rank && code != Some(0) => {
            Some(format!(
                "rank {} of the job ended (PMIx event {status}{})",
                p.rank,
                code.map(|c| format!(", exit code {c}")).unwrap_or_default()
            ))
        }
        _ => None,
    };
    if let Some(cb) = cbfunc {
        cb(
            ffi::EVENT_ACTION_COMPLETE,
            std::ptr::null_mut(),
            0,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            cbdata,
        );
    }
    if let (Some(why), Some((_, rank))) = (act, me) {
        // stderr may be a pipe to a launcher that is gone: ignore a failed write.
        let _ = writeln!(
            std::io::stderr(),
            "unpinned: rank {rank}: {why}; ending this rank"
        );
        if let Ok(mut g) = UNLINK_AFTER_FENCE.try_lock() {
            if let Some(p) = g.take() {
                let _ = std::fs::remove_file(p);
            }
        }
        // The launcher is gone and will not clean up: a rank that leads its process group (as
        // under mpirun) takes what it started along.
        if status == ffi::ERR_LOST_CONNECTION && libc::getpgrp() == libc::getpid() {
            libc::kill(0, libc::SIGKILL);
        }
        libc::_exit(1);
    }
}
