//! Copies to and from application memory that survive the memory going away.
//!
//! The live engine copies between its packet buffers and memory the application owns. It
//! checks residency first, but the application can unmap (or truncate the file under) a buffer
//! between the check and the copy, or break its promise and free a buffer of a request still
//! in flight. A plain `memcpy` then kills the process with `SIGSEGV` / `SIGBUS` inside the
//! engine's thread, naming nothing. [`copy`] instead returns how far it got.
//!
//! How (x86-64 Linux): the copy is one `rep movsb` instruction at a known address. A string
//! instruction that faults stops with its registers at the progress made (`rcx` = bytes left,
//! `rsi` / `rdi` at the faulting byte), and the instruction pointer still on it. A process-wide
//! handler for `SIGSEGV` and `SIGBUS` ([`install`], done at the first copy) looks at the
//! interrupted instruction pointer: if it is that instruction, it moves it past the
//! instruction and returns, and the copy returns the bytes left; any other fault goes to the
//! handler installed before (Rust's stack-overflow reporter, or the default action, which
//! ends the process as before). The normal case costs what `rep movsb` costs (with ERMS /
//! FSRM as fast as `memcpy` for packet sizes) and no system call, unlike
//! `process_vm_readv` on one's own process, which also fails with `EFAULT` instead of
//! faulting but costs a system call per copy.
//!
//! A handler installed later that does not pass on faults it does not own (crates/dsm-live's
//! `SIGSEGV` requestor takes the signal over) makes such a fault fatal again, as before this
//! module. On other architectures [`copy`] is a plain copy and [`fault_safe`] says so.

#[cfg(target_arch = "x86_64")]
mod imp {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Once;

    std::arch::global_asm!(
        ".pushsection .text.unpinned_safe_copy,\"ax\",@progbits",
        ".p2align 4",
        ".globl unpinned_safe_copy",
        ".hidden unpinned_safe_copy",
        ".type unpinned_safe_copy,@function",
        "unpinned_safe_copy:",
        // System V: rdi = dst, rsi = src, rdx = len; returns rax = bytes not copied.
        "    mov rcx, rdx",
        ".globl unpinned_safe_copy_insn",
        ".hidden unpinned_safe_copy_insn",
        "unpinned_safe_copy_insn:",
        "    rep movsb",
        ".globl unpinned_safe_copy_resume",
        ".hidden unpinned_safe_copy_resume",
        "unpinned_safe_copy_resume:",
        "    mov rax, rcx",
        "    ret",
        ".size unpinned_safe_copy, .-unpinned_safe_copy",
        ".popsection",
    );

    extern "C" {
        fn unpinned_safe_copy(dst: *mut u8, src: *const u8, len: usize) -> usize;
        static unpinned_safe_copy_insn: u8;
        static unpinned_safe_copy_resume: u8;
    }

    static INSTALLED: AtomicBool = AtomicBool::new(false);
    static ONCE: Once = Once::new();
    /// The dispositions before ours (written once by `sigaction`, before our handler can run
    /// for a fault of the copy: the copy installs first).
    static mut OLD_SEGV: std::mem::MaybeUninit<libc::sigaction> = std::mem::MaybeUninit::zeroed();
    static mut OLD_BUS: std::mem::MaybeUninit<libc::sigaction> = std::mem::MaybeUninit::zeroed();

    extern "C" fn on_fault(sig: libc::c_int, info: *mut libc::siginfo_t, uctx: *mut libc::c_void) {
        // SAFETY: for an SA_SIGINFO handler on x86-64 Linux the third argument is the
        // interrupted thread's ucontext_t; reading and writing its saved RIP is how the
        // handler redirects the thread (async-signal-safe: plain memory accesses).
        unsafe {
            let uc = &mut *(uctx as *mut libc::ucontext_t);
            let rip = uc.uc_mcontext.gregs[libc::REG_RIP as usize] as usize;
            if rip == std::ptr::addr_of!(unpinned_safe_copy_insn) as usize {
                uc.uc_mcontext.gregs[libc::REG_RIP as usize] =
                    std::ptr::addr_of!(unpinned_safe_copy_resume) as usize as i64;
                return;
            }
        }
        // Not ours: the previous disposition decides.
        // SAFETY: OLD_* were written by `sigaction` in `install` before this handler was
        // installed, and are never written again.
        let old = unsafe {
            if sig == libc::SIGBUS {
                (*std::ptr::addr_of!(OLD_BUS)).assume_init()
            } else {
                (*std::ptr::addr_of!(OLD_SEGV)).assume_init()
            }
        };
        if old.sa_sigaction == libc::SIG_DFL || old.sa_sigaction == libc::SIG_IGN {
            // Restore the default action; returning re-executes the access, which then ends
            // the process as it would have without this handler.
            // SAFETY: resetting the disposition of the signal being handled.
            unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(sig, &sa, std::ptr::null_mut());
            }
        } else if old.sa_flags & libc::SA_SIGINFO != 0 {
            // SAFETY: the previous handler was installed as an SA_SIGINFO handler with this
            // signature; it gets the same arguments the kernel gave us.
            unsafe {
                let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                    std::mem::transmute(old.sa_sigaction);
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

    pub fn install() -> bool {
        ONCE.call_once(|| {
            // SAFETY: installing process-wide handlers for SIGSEGV and SIGBUS that pass every
            // fault they do not own to the previous disposition, saved here first.
            let ok = unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = on_fault as *const () as usize;
                // On the alternate stack where one is set up (Rust's threads have one, for
                // the stack-overflow reporter we pass faults on to).
                sa.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                libc::sigemptyset(&mut sa.sa_mask);
                libc::sigaction(
                    libc::SIGSEGV,
                    &sa,
                    (*std::ptr::addr_of_mut!(OLD_SEGV)).as_mut_ptr(),
                ) == 0
                    && libc::sigaction(
                        libc::SIGBUS,
                        &sa,
                        (*std::ptr::addr_of_mut!(OLD_BUS)).as_mut_ptr(),
                    ) == 0
            };
            INSTALLED.store(ok, Ordering::Release);
        });
        INSTALLED.load(Ordering::Acquire)
    }

    #[inline]
    pub unsafe fn copy(dst: *mut u8, src: *const u8, len: usize) -> Result<(), usize> {
        if !INSTALLED.load(Ordering::Relaxed) && !install() {
            // SAFETY: the caller's contract (see `super::copy`); without the handler a fault
            // is fatal, as for any copy.
            unsafe { std::ptr::copy_nonoverlapping(src, dst, len) };
            return Ok(());
        }
        // SAFETY: the caller's contract: the ranges do not overlap and are valid unless
        // unmapped meanwhile, which the handler turns into an early return.
        let left = unsafe { unpinned_safe_copy(dst, src, len) };
        if left == 0 {
            Ok(())
        } else {
            Err(len - left)
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod imp {
    pub fn install() -> bool {
        false
    }

    #[inline]
    pub unsafe fn copy(dst: *mut u8, src: *const u8, len: usize) -> Result<(), usize> {
        // SAFETY: the caller's contract (see `super::copy`).
        unsafe { std::ptr::copy_nonoverlapping(src, dst, len) };
        Ok(())
    }
}

/// Install the fault handler now (the first [`copy`] does it otherwise). Whether copies are
/// fault-safe in this process.
pub fn install() -> bool {
    imp::install()
}

/// Whether [`copy`] survives faults here (x86-64 with the handler installed).
pub fn fault_safe() -> bool {
    imp::install()
}

/// Copy `len` bytes from `src` to `dst`. `Err(n)`: the copy faulted after `n` bytes (the byte
/// at `src + n` or `dst + n` is not mapped, or beyond the end of its file): the first `n`
/// bytes were copied, the rest not.
///
/// # Safety
///
/// The ranges do not overlap, and no Rust reference to the destination range is alive. Each
/// range is mapped with the access needed, except that either may be (or become) unmapped or
/// inaccessible, which this copy reports instead of faulting (where [`fault_safe`]).
#[inline]
pub unsafe fn copy(dst: *mut u8, src: *const u8, len: usize) -> Result<(), usize> {
    // SAFETY: forwarded contract.
    unsafe { imp::copy(dst, src, len) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mapping::Mapping;

    #[test]
    fn copies_and_reports_where_an_unmapped_source_or_destination_starts() {
        let _g = crate::MAP_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let m = Mapping::anon(4 * 4096).expect("map");
        // SAFETY: fresh private mapping, no references to it.
        let s = unsafe { m.as_mut_slice() };
        for (i, b) in s.iter_mut().enumerate() {
            *b = i as u8;
        }
        let mut out = vec![0u8; 3 * 4096];
        // SAFETY: both ranges are mapped and disjoint.
        assert_eq!(unsafe { copy(out.as_mut_ptr(), m.ptr(), out.len()) }, Ok(()));
        assert_eq!(&out[..], &s[..3 * 4096]);
        let _ = s; // no reference into the mapping lives past the unmap below
        if !fault_safe() {
            return;
        }
        // Unmap the third page: a copy across it stops there, either direction.
        // SAFETY: unmapping one page of our own mapping; nothing references it.
        assert_eq!(
            unsafe { libc::munmap(m.ptr().add(2 * 4096) as *mut libc::c_void, 4096) },
            0
        );
        out.fill(0);
        // SAFETY: disjoint ranges; the hole is what the copy must survive.
        let r = unsafe { copy(out.as_mut_ptr(), m.ptr().add(100), 3 * 4096) };
        assert_eq!(r, Err(2 * 4096 - 100));
        assert!(out[..2 * 4096 - 100]
            .iter()
            .enumerate()
            .all(|(i, &b)| b == (i + 100) as u8));
        let src = vec![0xabu8; 8192];
        // SAFETY: as above, towards the hole.
        let r = unsafe { copy(m.ptr().add(4096 + 8), src.as_ptr(), 8192) };
        assert_eq!(r, Err(4096 - 8));
        // An ordinary fault elsewhere is still fatal: not tested here (it ends the process).
    }
}
