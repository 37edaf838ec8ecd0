//! Output capture for the live experiments: while one runs, this process's stdout and stderr
//! (file descriptors 1 and 2, inherited by every rank process it launches) go to the
//! experiment's log file, so that rank output does not interleave with the list of results on
//! the terminal; progress is drawn on a copy of the terminal kept aside.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::sync::{Mutex, MutexGuard};

/// Makes `to` also be descriptor `fd` (`dup2`).
fn redirect(to: RawFd, fd: RawFd) -> io::Result<()> {
    // SAFETY: dup2 only changes which open file `fd` refers to; both are valid descriptors of
    // this process (`to` is borrowed by the caller for the call, `fd` is 1 or 2).
    let rc = unsafe { libc::dup2(to, fd) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A copy of the terminal's stderr, for progress while stderr itself goes to a log.
pub fn terminal() -> io::Result<File> {
    Ok(File::from(io::stderr().as_fd().try_clone_to_owned()?))
}

/// Held by the capture in force: descriptors 1 and 2 are process-wide, so two captures at once
/// would restore each other's log instead of the terminal.
static CAPTURING: Mutex<()> = Mutex::new(());

/// Stdout and stderr redirected to a log file until dropped (one capture at a time: a second
/// one waits for the first to end).
pub struct Capture {
    saved_out: OwnedFd,
    saved_err: OwnedFd,
    // Released after `drop` put the descriptors back.
    _one_at_a_time: MutexGuard<'static, ()>,
}

impl Capture {
    /// Send stdout and stderr to `log` (anything buffered is written first, where it was
    /// meant to go).
    pub fn start(log: &File) -> io::Result<Capture> {
        let lock = CAPTURING.lock().unwrap_or_else(|e| e.into_inner());
        let _ = io::stdout().flush();
        let saved_out = io::stdout().as_fd().try_clone_to_owned()?;
        let saved_err = io::stderr().as_fd().try_clone_to_owned()?;
        redirect(log.as_raw_fd(), 1)?;
        let capture = Capture {
            saved_out,
            saved_err,
            _one_at_a_time: lock,
        };
        // On failure the drop below puts stdout back.
        redirect(log.as_raw_fd(), 2)?;
        Ok(capture)
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        let _ = io::stdout().flush();
        let _ = redirect(self.saved_out.as_raw_fd(), 1);
        let _ = redirect(self.saved_err.as_raw_fd(), 2);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn child_output_goes_to_the_log_and_stdout_comes_back() {
        let path =
            std::env::temp_dir().join(format!("unpinned-capture-{}.log", std::process::id()));
        let log = File::create(&path).unwrap();
        {
            let _c = Capture::start(&log).unwrap();
            // A child inherits descriptors 1 and 2, as the ranks do.
            let st = std::process::Command::new("sh")
                .args(["-c", "echo rank-out; echo rank-err >&2"])
                .status()
                .unwrap();
            assert!(st.success());
        }
        let mut text = String::new();
        File::open(&path)
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        assert!(
            text.contains("rank-out") && text.contains("rank-err"),
            "{text:?}"
        );
        // Descriptor 1 no longer refers to the log. (Not "the same file as before": another
        // test of this binary may hold a capture of its own right now, so what descriptor 1
        // was before this test's capture is not known without holding the lock throughout.)
        let stat = |fd: RawFd| {
            // SAFETY: fstat writes into the zeroed stat buffer for a valid descriptor.
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            // SAFETY: as above; `fd` is open for the whole call.
            assert_eq!(unsafe { libc::fstat(fd, &mut st) }, 0);
            (st.st_dev, st.st_ino)
        };
        assert_ne!(stat(1), stat(log.as_raw_fd()));
        let _ = std::fs::remove_file(&path);
    }
}
