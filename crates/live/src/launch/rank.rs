//! One rank process of the launcher: spawned in its own process group with a parent-death
//! signal, watched without being reaped (so that its group can still be killed after it
//! exited), killed as a group.

use std::io;
use std::os::fd::RawFd;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};

/// What changed in a rank process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Change {
    /// It exited or died (not reaped yet).
    Ended,
    /// It was stopped by this signal (SIGSTOP, SIGTSTP, a tracer).
    Stopped(i32),
}

/// Start `cmd` as a rank: leader of a new process group (so that the launcher can kill the rank
/// with whatever it started, and a terminal's Ctrl-C reaches only the launcher, which then
/// cleans up), killed by the kernel when the launcher's thread dies (`PR_SET_PDEATHSIG`);
/// with `netns`, in that network namespace (an open `/run/netns/NAME`, see `netns.rs`).
pub(super) fn spawn(cmd: &mut Command, netns: Option<RawFd>) -> io::Result<Child> {
    let launcher = std::process::id() as libc::pid_t;
    cmd.process_group(0);
    // SAFETY: the closure runs in the child between fork and exec and calls only
    // async-signal-safe functions (prctl, getppid, setns), allocating nothing.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                return Err(io::Error::last_os_error());
            }
            // The launcher may have died before the prctl: then nobody would send the signal.
            if libc::getppid() != launcher {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            if let Some(fd) = netns {
                super::netns::enter(fd)?;
            }
            Ok(())
        });
    }
    cmd.spawn()
}

/// Has `pid` (a child of this process) ended or stopped? Leaves an ended child unreaped, so
/// that its process id, which is also its group id, cannot be reused before the group is killed.
pub(super) fn peek(pid: u32) -> io::Result<Option<Change>> {
    // SAFETY: zeroed siginfo_t is a valid out-parameter; waitid writes it.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: waitid on our own child with WNOWAIT only reads its state.
    let r = unsafe {
        libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WSTOPPED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: waitid filled `info` (si_pid 0: nothing to report).
    let (who, status) = unsafe { (info.si_pid(), info.si_status()) };
    if who == 0 {
        return Ok(None);
    }
    Ok(Some(match info.si_code {
        libc::CLD_STOPPED | libc::CLD_TRAPPED => Change::Stopped(status),
        _ => Change::Ended,
    }))
}

/// SIGKILL the process group `pgid` (a rank and everything it started that stayed in its group).
pub(super) fn kill_group(pgid: u32) {
    // SAFETY: kill(2) with a negative pid signals a process group; no memory is touched.
    unsafe {
        libc::kill(-(pgid as libc::pid_t), libc::SIGKILL);
    }
}

/// The usual name of a signal number (for messages).
pub(crate) fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGSTOP => "SIGSTOP",
        libc::SIGTSTP => "SIGTSTP",
        libc::SIGTTIN => "SIGTTIN",
        libc::SIGTTOU => "SIGTTOU",
        libc::SIGXCPU => "SIGXCPU",
        _ => "signal",
    }
}
