//! The reaper: a small process forked by the launcher before the ranks start, which cleans up
//! after a launcher that could not (killed with SIGKILL, or crashed).
//!
//! It holds the read end of a pipe whose only write end is the launcher's. The launcher writes
//! the process group of every rank it starts (4 bytes each) and, when it has cleaned up itself,
//! [`Reaper::disarm`]s it (a zero) and waits for it. When the pipe closes without that, the
//! launcher is gone: the reaper SIGKILLs every rank's process group (the ranks already die by
//! their parent-death signal; this also ends what they started) and removes the run directory,
//! which is flat (segment, bootstrap files). The child runs only async-signal-safe system calls
//! (it is forked from a multithreaded process) and allocates nothing.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Most process groups a reaper remembers (the launcher's limit on ranks).
const MAX_GROUPS: usize = 64;

/// The launcher's side of its reaper.
pub(super) struct Reaper {
    pid: libc::pid_t,
    /// The write end of the pipe (close-on-exec, so ranks do not inherit it).
    fd: libc::c_int,
}

impl Reaper {
    /// Fork the reaper of the run directory `dir`.
    pub(super) fn start(dir: &Path) -> io::Result<Reaper> {
        let path = CString::new(dir.as_os_str().as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in the run directory"))?;
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: pipe2 writes two descriptors into `fds`.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let [rd, wr] = fds;
        // SAFETY: the child only runs `reaper_main`, which calls async-signal-safe system calls
        // and never returns; the parent continues normally.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            let e = io::Error::last_os_error();
            // SAFETY: closing the two descriptors we just created.
            unsafe {
                libc::close(rd);
                libc::close(wr);
            }
            return Err(e);
        }
        if pid == 0 {
            // SAFETY: in the forked child; see `reaper_main`.
            unsafe { reaper_main(rd, path.as_ptr()) }
        }
        // SAFETY: the read end belongs to the reaper now.
        unsafe { libc::close(rd) };
        Ok(Reaper { pid, fd: wr })
    }

    /// Remember the process group `pgid` (a rank just started).
    pub(super) fn watch(&self, pgid: u32) {
        self.send(pgid);
    }

    fn send(&self, word: u32) {
        let b = word.to_ne_bytes();
        // SAFETY: a 4-byte write from a live buffer to our pipe (atomic: < PIPE_BUF).
        unsafe { libc::write(self.fd, b.as_ptr().cast(), b.len()) };
    }

    /// The launcher cleaned up itself: the reaper exits without doing anything.
    pub(super) fn disarm(self) {
        drop(self);
    }
}

impl Drop for Reaper {
    fn drop(&mut self) {
        self.send(0);
        let mut status = 0;
        // SAFETY: closing our write end, then reaping our own child.
        unsafe {
            libc::close(self.fd);
            libc::waitpid(self.pid, &mut status, 0);
        }
    }
}

/// The reaper process: wait for the launcher to go, clean up, exit.
///
/// # Safety
/// Only in the child of `fork`, with `rd` the pipe's read end and `dir` a NUL-terminated path.
unsafe fn reaper_main(rd: libc::c_int, dir: *const libc::c_char) -> ! {
    // Away from the terminal's process group (Ctrl-C must not end the reaper before the launcher
    // decides), deaf to hang-ups.
    libc::setpgid(0, 0);
    libc::signal(libc::SIGINT, libc::SIG_IGN);
    libc::signal(libc::SIGHUP, libc::SIG_IGN);
    // Hold no other descriptor: write ends of other launchers' pipes in this process would keep
    // their reapers waiting.
    let fd: libc::c_int = 3;
    if rd != fd {
        libc::dup2(rd, fd);
    }
    if libc::syscall(libc::SYS_close_range, 4u32, u32::MAX, 0u32) != 0 {
        for other in 4..4096 {
            libc::close(other);
        }
    }
    let mut groups = [0u32; MAX_GROUPS];
    let mut n = 0;
    let mut word = [0u8; 4];
    let mut have = 0;
    loop {
        let r = libc::read(fd, word.as_mut_ptr().add(have).cast(), 4 - have);
        if r < 0 && *libc::__errno_location() == libc::EINTR {
            continue;
        }
        if r <= 0 {
            break;
        }
        have += r as usize;
        if have < 4 {
            continue;
        }
        have = 0;
        let g = u32::from_ne_bytes(word);
        if g == 0 {
            libc::_exit(0);
        }
        if n < MAX_GROUPS {
            groups[n] = g;
            n += 1;
        }
    }
    for g in &groups[..n] {
        libc::kill(-(*g as libc::pid_t), libc::SIGKILL);
    }
    remove_flat_dir(dir);
    libc::_exit(0)
}

/// Remove every entry of the flat directory `dir`, then `dir`, with system calls only.
///
/// # Safety
/// `dir` is a NUL-terminated path; async-signal-safe (no allocation).
unsafe fn remove_flat_dir(dir: *const libc::c_char) {
    let dfd = libc::open(dir, libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC);
    if dfd < 0 {
        return;
    }
    // A few passes: a rank killed a moment ago may have renamed one more file into place.
    for _ in 0..4 {
        libc::lseek(dfd, 0, libc::SEEK_SET);
        let mut buf = [0u64; 1024];
        loop {
            let n = libc::syscall(
                libc::SYS_getdents64,
                dfd,
                buf.as_mut_ptr(),
                std::mem::size_of_val(&buf),
            );
            if n <= 0 {
                break;
            }
            let base = buf.as_ptr().cast::<u8>();
            let mut off = 0usize;
            while off < n as usize {
                // linux_dirent64: d_ino u64, d_off i64, d_reclen u16, d_type u8, d_name[].
                let rec = base.add(off);
                let reclen = (rec.add(16) as *const u16).read_unaligned() as usize;
                let name = rec.add(19).cast::<libc::c_char>();
                let dot = *name == b'.' as libc::c_char;
                let skip = dot
                    && (*name.add(1) == 0
                        || (*name.add(1) == b'.' as libc::c_char && *name.add(2) == 0));
                if !skip {
                    libc::unlinkat(dfd, name, 0);
                }
                off += reclen;
            }
        }
        if libc::rmdir(dir) == 0 {
            break;
        }
    }
    libc::close(dfd);
}
