//! Process-private futex wait / wake on a `u32` word: how the engine thread (the "IOMMU")
//! wakes a sleeping handler, the live counterpart of the spec's interrupt notification.

use std::sync::atomic::AtomicU32;
use std::time::Duration;

/// Wake every thread sleeping on `word`.
pub(crate) fn futex_wake(word: &AtomicU32) {
    // SAFETY: FUTEX_WAKE_PRIVATE on a valid, aligned u32 of this process; it only uses the
    // address as a key and touches no memory.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            i32::MAX,
            0usize,
            0usize,
            0u32,
        )
    };
}

/// Sleep while `word` holds `expected`, at most `timeout` (spurious returns are fine: callers
/// re-check their condition).
pub(crate) fn futex_wait(word: &AtomicU32, expected: u32, timeout: Duration) {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: FUTEX_WAIT_PRIVATE on a valid, aligned u32 of this process with a relative
    // timeout that outlives the call; it returns at once if the word no longer holds
    // `expected`, and only reads the word.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            &ts as *const libc::timespec,
            0usize,
            0u32,
        )
    };
}
