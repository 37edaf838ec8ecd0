//! Copies to and from application memory that survive the memory going away.
//!
//! The live engine copies between its packet buffers and memory the application owns. It
//! checks residency first, but the application can unmap (or truncate the file under) a buffer
//! between the check and the copy, or break its promise and free a buffer of a request still
//! in flight. A plain `memcpy` then kills the process with `SIGSEGV` / `SIGBUS` inside the
//! engine's thread, naming nothing. [`copy`] instead returns how far it got.
//!
//! How (x86-64 Linux): the copy is a small routine of our own at a known address range: from
//! 8 KiB (a bulk packet's payload) one `rep movsb`, below that a loop of 64-byte chunks of
//! SSE2 loads, then stores, and a tail of 16, 8 and 1 bytes. A process-wide handler
//! for `SIGSEGV` and `SIGBUS` ([`install`], done at the first copy) looks at the interrupted
//! instruction pointer: inside that range, it moves it to the loop's exit with the faulting
//! address (`si_addr`) as a second return value, and the copy returns how far it got; any
//! other fault goes to the handler installed before (Rust's stack-overflow reporter, or the
//! default action, which ends the process as before). The normal case is a plain copy: no
//! system call (unlike `process_vm_readv` on one's own process, which also fails with
//! `EFAULT` instead of faulting, at a system call per copy). `rep movsb` only for large
//! copies: its start-up cost (~70 ns for 8 bytes on this project's machines) and 4 KiB-aliasing
//! slowdowns made it several times slower than `memcpy` below 4 KiB, and warm in one core's
//! cache the loop stays ahead up to 16 KiB (`cost_against_memcpy` measures); but a packet's
//! copy into or out of a ring slot moves lines another core wrote last, where the string copy's
//! stores (no read-for-ownership) made 4 MiB PART transfers between two processes 5-15 % faster
//! (docs/performance.md). A fault inside `rep movsb` leaves `rcx` at the bytes not copied,
//! exactly, which is what the exit returns.
//!
//! A handler installed later must pass on the faults it does not own ([`crate::sigchain`]),
//! as crates/dsm-live's `SIGSEGV` requestor does (it installs this handler first, so that its
//! own runs on the faulting thread's stack); one that does not makes a fault of the copy
//! fatal again. On other architectures [`copy`] is a plain copy and [`fault_safe`] says so.

#[cfg(target_arch = "x86_64")]
mod imp {
    use super::Fault;
    use crate::sigchain::Chain;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Once;

    // System V: rdi = dst, rsi = src, rdx = len. Returns (rax, rdx) = (bytes not copied,
    // the address that faulted). `rep movsb` keeps `rcx` at the bytes left as it goes. In
    // the loop, loads of a chunk come before its stores, and `rcx` (bytes left) drops only
    // after a chunk is stored whole, so bytes not copied is exact at chunk granularity: a
    // fault leaves at most the faulting chunk partly stored, and counts it as not copied.
    // (The direction flag is clear on entry, as the ABI requires.)
    std::arch::global_asm!(
        ".pushsection .text.unpinned_safe_copy,\"ax\",@progbits",
        ".p2align 4",
        ".globl unpinned_safe_copy",
        ".hidden unpinned_safe_copy",
        ".type unpinned_safe_copy,@function",
        "unpinned_safe_copy:",
        "    mov rcx, rdx",
        "    xor edx, edx",
        "    cmp rcx, 8192",
        "    jb 1f",
        "    rep movsb",
        "    jmp 6f",
        "1:",
        "    cmp rcx, 64",
        "    jb 3f",
        "2:",
        "    movdqu xmm0, [rsi]",
        "    movdqu xmm1, [rsi + 16]",
        "    movdqu xmm2, [rsi + 32]",
        "    movdqu xmm3, [rsi + 48]",
        "    movdqu [rdi], xmm0",
        "    movdqu [rdi + 16], xmm1",
        "    movdqu [rdi + 32], xmm2",
        "    movdqu [rdi + 48], xmm3",
        "    add rsi, 64",
        "    add rdi, 64",
        "    sub rcx, 64",
        "    cmp rcx, 64",
        "    jae 2b",
        "3:",
        "    cmp rcx, 16",
        "    jb 4f",
        "    movdqu xmm0, [rsi]",
        "    movdqu [rdi], xmm0",
        "    add rsi, 16",
        "    add rdi, 16",
        "    sub rcx, 16",
        "    jmp 3b",
        "4:",
        "    cmp rcx, 8",
        "    jb 5f",
        "    mov rax, [rsi]",
        "    mov [rdi], rax",
        "    add rsi, 8",
        "    add rdi, 8",
        "    sub rcx, 8",
        "5:",
        "    test rcx, rcx",
        "    jz 6f",
        "    mov al, [rsi]",
        "    mov [rdi], al",
        "    inc rsi",
        "    inc rdi",
        "    dec rcx",
        "    jmp 5b",
        "6:",
        ".globl unpinned_safe_copy_fault",
        ".hidden unpinned_safe_copy_fault",
        "unpinned_safe_copy_fault:",
        "    mov rax, rcx",
        "    ret",
        ".globl unpinned_safe_copy_end",
        ".hidden unpinned_safe_copy_end",
        "unpinned_safe_copy_end:",
        ".size unpinned_safe_copy, .-unpinned_safe_copy",
        ".popsection",
    );

    /// What the copy returns in `rax:rdx`.
    #[repr(C)]
    struct Outcome {
        left: usize,
        fault_addr: usize,
    }

    extern "C" {
        fn unpinned_safe_copy(dst: *mut u8, src: *const u8, len: usize) -> Outcome;
        static unpinned_safe_copy_fault: u8;
        static unpinned_safe_copy_end: u8;
    }

    static INSTALLED: AtomicBool = AtomicBool::new(false);
    static ONCE: Once = Once::new();
    /// The dispositions found at installation, which get every fault that is not ours.
    static SEGV: Chain = Chain::new();
    static BUS: Chain = Chain::new();

    extern "C" fn on_fault(sig: libc::c_int, info: *mut libc::siginfo_t, uctx: *mut libc::c_void) {
        // SAFETY: for an SA_SIGINFO handler on x86-64 Linux the third argument is the
        // interrupted thread's ucontext_t; reading and writing its saved RIP is how the
        // handler redirects the thread (async-signal-safe: plain memory accesses).
        unsafe {
            let uc = &mut *(uctx as *mut libc::ucontext_t);
            let rip = uc.uc_mcontext.gregs[libc::REG_RIP as usize] as usize;
            let start = unpinned_safe_copy as *const () as usize;
            if rip >= start && rip < std::ptr::addr_of!(unpinned_safe_copy_end) as usize {
                // The copy's loads and stores: resume at its exit with the bytes left in rcx
                // and the faulting address in rdx (its second return value).
                uc.uc_mcontext.gregs[libc::REG_RIP as usize] =
                    std::ptr::addr_of!(unpinned_safe_copy_fault) as usize as i64;
                uc.uc_mcontext.gregs[libc::REG_RDX as usize] = (*info).si_addr() as usize as i64;
                return;
            }
        }
        // Not ours: the previous disposition decides.
        let chain = if sig == libc::SIGBUS { &BUS } else { &SEGV };
        // SAFETY: called from the handler installed through `chain`, with the kernel's
        // arguments.
        unsafe { chain.pass_on(sig, info, uctx) };
    }

    pub fn install() -> bool {
        ONCE.call_once(|| {
            // On the alternate stack where one is set up (Rust's threads have one, for the
            // stack-overflow reporter we pass faults on to).
            let ok = SEGV.install(libc::SIGSEGV, on_fault, libc::SA_ONSTACK)
                && BUS.install(libc::SIGBUS, on_fault, libc::SA_ONSTACK);
            INSTALLED.store(ok, Ordering::Release);
        });
        INSTALLED.load(Ordering::Acquire)
    }

    #[inline]
    pub unsafe fn copy(dst: *mut u8, src: *const u8, len: usize) -> Result<(), Fault> {
        if !INSTALLED.load(Ordering::Relaxed) && !install() {
            // SAFETY: the caller's contract (see `super::copy`); without the handler a fault
            // is fatal, as for any copy.
            unsafe { std::ptr::copy_nonoverlapping(src, dst, len) };
            return Ok(());
        }
        // SAFETY: the caller's contract: the ranges do not overlap and are valid unless
        // unmapped meanwhile, which the handler turns into an early return.
        let out = unsafe { unpinned_safe_copy(dst, src, len) };
        if out.left == 0 {
            Ok(())
        } else {
            Err(Fault {
                copied: len - out.left,
                addr: out.fault_addr as u64,
            })
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod imp {
    use super::Fault;

    pub fn install() -> bool {
        false
    }

    #[inline]
    pub unsafe fn copy(dst: *mut u8, src: *const u8, len: usize) -> Result<(), Fault> {
        // SAFETY: the caller's contract (see `super::copy`).
        unsafe { std::ptr::copy_nonoverlapping(src, dst, len) };
        Ok(())
    }
}

/// Where a [`copy`] stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault {
    /// Bytes copied for sure (exact for a copy of 8 KiB or more; below, a multiple of the
    /// copy's 64-byte chunks, or all before the tail): the bytes after them may be partly
    /// copied.
    pub copied: usize,
    /// The address that faulted (in the source or the destination range).
    pub addr: u64,
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

/// Copy `len` bytes from `src` to `dst`. `Err(f)`: the copy faulted at `f.addr` (not mapped,
/// not accessible, or beyond the end of its file); the first `f.copied` bytes were copied.
///
/// # Safety
///
/// The ranges do not overlap, and no Rust reference to the destination range is alive. Each
/// range is mapped with the access needed, except that either may be (or become) unmapped or
/// inaccessible, which this copy reports instead of faulting (where [`fault_safe`]).
#[inline]
pub unsafe fn copy(dst: *mut u8, src: *const u8, len: usize) -> Result<(), Fault> {
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
        assert_eq!(
            unsafe { copy(out.as_mut_ptr(), m.ptr(), out.len()) },
            Ok(())
        );
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
        let hole = m.addr() + 2 * 4096;
        let f = r.expect_err("the copy crosses the hole");
        assert_eq!(f.addr, hole, "{f:?}");
        assert!(
            f.copied <= 2 * 4096 - 100 && f.copied + 64 > 2 * 4096 - 100,
            "{f:?}"
        );
        assert!(out[..f.copied]
            .iter()
            .enumerate()
            .all(|(i, &b)| b == (i + 100) as u8));
        let src = vec![0xabu8; 8192];
        // SAFETY: as above, towards the hole.
        let f = unsafe { copy(m.ptr().add(4096 + 8), src.as_ptr(), 8192) }.expect_err("hole");
        assert_eq!(f.addr, hole, "{f:?}");
        assert!(f.copied <= 4096 - 8 && f.copied + 64 > 4096 - 8, "{f:?}");
        // A large copy (the string-copy path) stops exactly at the hole.
        let big = vec![0x5au8; 3 * 4096];
        // SAFETY: as above, towards the hole.
        let f = unsafe { copy(m.ptr().add(8), big.as_ptr(), big.len()) }.expect_err("hole");
        assert_eq!((f.copied, f.addr), (2 * 4096 - 8, hole), "{f:?}");
        // Small copies into the hole, every tail path.
        for len in [1usize, 7, 8, 9, 16, 17, 63, 64, 65] {
            // SAFETY: as above.
            let f = unsafe { copy(hole as *mut u8, src.as_ptr(), len) }.expect_err("hole");
            assert_eq!((f.copied, f.addr), (0, hole), "{len}");
        }
        // Exact copies of every small length and alignment.
        for len in 0..200usize {
            for off in [0usize, 1, 7] {
                let mut d = vec![0u8; 256];
                // SAFETY: disjoint live vectors.
                unsafe { copy(d.as_mut_ptr().add(off), out.as_ptr(), len) }.expect("mapped");
                assert_eq!(&d[off..off + len], &out[..len]);
                assert!(d[..off].iter().chain(&d[off + len..]).all(|&b| b == 0));
            }
        }
        // An ordinary fault elsewhere is still fatal: not tested here (it ends the process).
    }

    /// The cost of the fault-safe copy against `copy_nonoverlapping` at packet sizes, warm
    /// buffers (`cargo test -p unpinned-os --lib safecopy -- --ignored --nocapture`).
    #[test]
    #[ignore]
    fn cost_against_memcpy() {
        let src = vec![7u8; 1 << 16];
        let mut dst = vec![0u8; 1 << 16];
        for len in [8usize, 64, 256, 4096, 16384, 65536] {
            let reps = (64 << 20) / len.max(64);
            let mut best = [f64::MAX; 2];
            for _ in 0..5 {
                let t = std::time::Instant::now();
                for _ in 0..reps {
                    // SAFETY: disjoint live vectors.
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            std::hint::black_box(src.as_ptr()),
                            std::hint::black_box(dst.as_mut_ptr()),
                            len,
                        )
                    };
                }
                best[0] = best[0].min(t.elapsed().as_nanos() as f64 / reps as f64);
                let t = std::time::Instant::now();
                for _ in 0..reps {
                    // SAFETY: disjoint live vectors.
                    let r = unsafe {
                        copy(
                            std::hint::black_box(dst.as_mut_ptr()),
                            std::hint::black_box(src.as_ptr()),
                            len,
                        )
                    };
                    std::hint::black_box(r).unwrap();
                }
                best[1] = best[1].min(t.elapsed().as_nanos() as f64 / reps as f64);
            }
            println!(
                "{len:>6} B: memcpy {:>8.1} ns, fault-safe copy {:>8.1} ns",
                best[0], best[1]
            );
        }
    }
}
