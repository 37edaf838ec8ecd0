//! Fault handlers that share `SIGSEGV` / `SIGBUS` in one process: each is installed in front
//! of the disposition it finds and passes the faults that are not its own on to it.
//!
//! Two handlers of this workspace take these signals: [`crate::safecopy`]'s (a fault inside
//! its copy loop) and crates/dsm-live's requestor (a fault on a DSM view). A process that
//! uses both (a DSM whose runtime copies from application memory) needs each to leave the
//! other's faults alone, whichever was installed last. A [`Chain`] remembers the disposition
//! found when its handler was installed; [`Chain::pass_on`] hands it a fault.

use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::OnceLock;

/// An `SA_SIGINFO` signal handler.
pub type Handler = extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void);

/// One handler's link in the chain of one signal: the disposition found at its installation.
pub struct Chain {
    /// The previous disposition, or null before [`Chain::install`] (leaked: a handler may
    /// read it at any time).
    prev: AtomicPtr<libc::sigaction>,
    /// Whether the installation succeeded (installed once per link).
    installed: OnceLock<bool>,
}

impl Chain {
    /// An empty link (no previous disposition yet).
    pub const fn new() -> Chain {
        Chain {
            prev: AtomicPtr::new(std::ptr::null_mut()),
            installed: OnceLock::new(),
        }
    }

    /// Install `handler` for `sig` with `SA_SIGINFO | flags`, in front of the current
    /// disposition (remembered for [`Chain::pass_on`]); whether that worked. Once per link:
    /// later calls return the first outcome and change nothing (installing again in front of
    /// a handler that chains to this one would make the two call each other forever).
    pub fn install(&self, sig: libc::c_int, handler: Handler, flags: libc::c_int) -> bool {
        *self.installed.get_or_init(|| {
            // The current disposition is remembered before ours replaces it, so that a fault
            // taken by our handler right after the switch finds it.
            // SAFETY: all zeros is a valid sigaction (SIG_DFL, no flags, empty mask).
            let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
            // SAFETY: sigaction only reads the disposition into `old`.
            if unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) } != 0 {
                return false;
            }
            self.prev
                .store(Box::into_raw(Box::new(old)), Ordering::Release);
            // SAFETY: sigaction with a fully initialized new disposition; `handler` is an
            // `extern "C"` function with the SA_SIGINFO signature.
            unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = handler as usize;
                sa.sa_flags = libc::SA_SIGINFO | flags;
                libc::sigemptyset(&mut sa.sa_mask);
                libc::sigaction(sig, &sa, std::ptr::null_mut()) == 0
            }
        })
    }

    /// Hand a fault that is not ours to the disposition found at installation: its handler
    /// gets the same arguments; the default action (or an ignored fault, or no installation)
    /// restores the default action, and returning re-executes the access, which then ends the
    /// process as it would have without any handler.
    ///
    /// # Safety
    ///
    /// Call only from the handler installed through this link, with the arguments the kernel
    /// gave it.
    pub unsafe fn pass_on(
        &self,
        sig: libc::c_int,
        info: *mut libc::siginfo_t,
        uctx: *mut libc::c_void,
    ) {
        let p = self.prev.load(Ordering::Acquire);
        // SAFETY: a non-null `prev` came from `Box::into_raw` in `install` and is never freed.
        let old = (!p.is_null()).then(|| unsafe { *p });
        match old {
            Some(old) if old.sa_sigaction != libc::SIG_DFL && old.sa_sigaction != libc::SIG_IGN => {
                if old.sa_flags & libc::SA_SIGINFO != 0 {
                    // SAFETY: installed as an SA_SIGINFO handler, so it has this signature;
                    // it gets the kernel's arguments (the caller's contract).
                    unsafe {
                        let f: Handler = std::mem::transmute(old.sa_sigaction);
                        f(sig, info, uctx);
                    }
                } else {
                    // SAFETY: a plain handler takes the signal number only.
                    unsafe {
                        let f: extern "C" fn(libc::c_int) = std::mem::transmute(old.sa_sigaction);
                        f(sig);
                    }
                }
            }
            _ => {
                // SAFETY: resetting the disposition of the signal being handled.
                unsafe {
                    let mut sa: libc::sigaction = std::mem::zeroed();
                    sa.sa_sigaction = libc::SIG_DFL;
                    libc::sigaction(sig, &sa, std::ptr::null_mut());
                }
            }
        }
    }
}

impl Default for Chain {
    fn default() -> Chain {
        Chain::new()
    }
}
