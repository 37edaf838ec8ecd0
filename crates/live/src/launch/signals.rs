//! The launcher's termination signals: SIGINT (Ctrl-C), SIGTERM and SIGHUP are caught while a
//! job runs, so that the launcher can kill the ranks' process groups and remove its run
//! directory; then it ends the way the signal asked ([`Signals::die`]). A signal this process
//! ignores (e.g. SIGHUP under `nohup`) stays ignored, and the previous dispositions come back
//! when the last job of the process ends.
//!
//! Dispositions are process-wide, so the handler is too: jobs running at once in one process
//! (tests) share it, counted; any caught signal ends all of them.

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Mutex;

const CAUGHT: [i32; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// The first termination signal received while jobs run (0: none).
static RECEIVED: AtomicI32 = AtomicI32::new(0);

/// Jobs running, and the dispositions to restore (signal, previous action) after the last one.
static INSTALLED: Mutex<(usize, Vec<(i32, libc::sigaction)>)> = Mutex::new((0, Vec::new()));

extern "C" fn on_signal(sig: libc::c_int) {
    // Async-signal-safe: one atomic store.
    let _ = RECEIVED.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
}

/// Handlers installed for the life of one job (a guard).
pub(super) struct Signals(());

impl Signals {
    /// Catch the termination signals that are not ignored.
    pub(super) fn install() -> std::io::Result<Signals> {
        let mut g = INSTALLED.lock().unwrap_or_else(|e| e.into_inner());
        if g.0 == 0 {
            RECEIVED.store(0, Ordering::SeqCst);
            for sig in CAUGHT {
                // SAFETY: sigaction reads the current disposition into `old` and, unless the
                // signal is ignored, installs `on_signal`, which only stores to an atomic.
                unsafe {
                    let mut old: libc::sigaction = std::mem::zeroed();
                    if libc::sigaction(sig, std::ptr::null(), &mut old) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    if old.sa_sigaction == libc::SIG_IGN {
                        continue;
                    }
                    let mut new: libc::sigaction = std::mem::zeroed();
                    new.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
                    new.sa_flags = libc::SA_RESTART;
                    libc::sigemptyset(&mut new.sa_mask);
                    if libc::sigaction(sig, &new, std::ptr::null_mut()) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    g.1.push((sig, old));
                }
            }
        }
        g.0 += 1;
        Ok(Signals(()))
    }

    /// The signal received, if any.
    pub(super) fn received(&self) -> Option<i32> {
        match RECEIVED.load(Ordering::SeqCst) {
            0 => None,
            s => Some(s),
        }
    }

    /// Uninstall (as the last job) and end this process as `sig` would have: called once the
    /// job is cleaned up.
    pub(super) fn die(self, sig: i32) -> ! {
        drop(self);
        // SAFETY: restoring the default action of `sig`, then raising it on this process.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
        }
        std::process::exit(128 + sig)
    }
}

impl Drop for Signals {
    fn drop(&mut self) {
        let mut g = INSTALLED.lock().unwrap_or_else(|e| e.into_inner());
        g.0 -= 1;
        if g.0 == 0 {
            for (sig, old) in g.1.drain(..) {
                // SAFETY: putting back the disposition saved at install.
                unsafe { libc::sigaction(sig, &old, std::ptr::null_mut()) };
            }
        }
    }
}
