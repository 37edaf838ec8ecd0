//! The launcher's process-termination events (registered by [`super::Client`]): another rank
//! of this job ended abnormally, or the connection to the launcher is lost. Either ends this
//! rank at once with a message naming the cause, instead of leaving it blocked in a fence.

use std::ffi::c_void;
use std::io::Write;
use std::os::fd::FromRawFd;
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
        end_rank(rank, &why, status == ffi::ERR_LOST_CONNECTION);
    }
}

/// Say why this rank ends, remove a pending segment, and end the process; when the launcher
/// is gone (`launcher_gone`) and will not clean up, a rank that leads its process group (as
/// under mpirun) takes what it started along.
fn end_rank(rank: u32, why: &str, launcher_gone: bool) -> ! {
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
    // SAFETY: getpgrp, getpid, kill and _exit take no pointers; ending the process is the
    // point.
    unsafe {
        if launcher_gone && libc::getpgrp() == libc::getpid() {
            libc::kill(0, libc::SIGKILL);
        }
        libc::_exit(1)
    }
}

/// Watch the process that started this rank (the launcher's local daemon, which is also the
/// PMIx server): when it ends, end this rank as for a lost connection. PMIx reports the lost
/// connection too, but only after its own delay (a second, longer under load); the parent's
/// end is seen at once.
pub(super) fn watch_parent() {
    // SAFETY: getppid takes no arguments.
    let parent = unsafe { libc::getppid() };
    let spawned = std::thread::Builder::new()
        .name("unpinned-pmix-parent".into())
        .spawn(move || {
            wait_for_end(parent);
            if let Some((_, rank)) = *lock(&WATCHED) {
                end_rank(
                    rank,
                    &format!("the launcher's process {parent} ended"),
                    true,
                );
            }
        });
    // Without the thread, PMIx's own lost-connection event still ends the rank.
    drop(spawned);
}

/// Block until process `pid` (this process's parent when called) has ended.
fn wait_for_end(pid: libc::pid_t) {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as i32;
    // SAFETY: a non-negative `fd` is a new descriptor this function owns.
    let _owned = (fd >= 0).then(|| unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) });
    // Reparented already (the parent ended before the pidfd was opened, or the pid was reused
    // by then): the parent is gone.
    // SAFETY: getppid takes no arguments.
    if unsafe { libc::getppid() } != pid {
        return;
    }
    if fd >= 0 {
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd; a pidfd polls readable once its process ended.
        while unsafe { libc::poll(&mut p, 1, -1) } <= 0 {}
        return;
    }
    // No pidfds (old kernel, seccomp): the parent is gone once this process is reparented.
    // SAFETY: getppid takes no arguments.
    while unsafe { libc::getppid() } == pid {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}
