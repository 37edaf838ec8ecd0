//! The calling thread's CPU time (what a trace's `Compute{ns}` measures: time the thread ran,
//! not time it waited or was preempted by the other engineers' jobs on a shared machine).

/// CPU time consumed by the calling thread so far, ns.
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into the valid, exclusively borrowed `ts`.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        // Linux always has the per-thread clock; without it, no computation is recorded.
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
