//! CPU binding of PEs, as `oshrun` asks for it ([`ENV_BIND_TO`]): with no more PEs than CPUs,
//! PE `r` runs on the `r`-th CPU it may use, as Open MPI binds ranks by default. A waiter on
//! a CPU of its own may spin; PEs sharing CPUs would take turns at every barrier round.

/// The binding `oshrun` requests from every PE: `core` (one CPU per PE) or `none`.
pub const ENV_BIND_TO: &str = "OSHRUN_BIND_TO";

/// The CPU PE `rank` of `size` binds to under `mode` (`core` or `none`), given the CPUs the
/// process may use; `None`: no binding (mode `none`, or more PEs than CPUs).
pub fn cpu_for(mode: &str, rank: u32, size: u32, cpus: &[usize]) -> Option<usize> {
    if mode != "core" || size as usize > cpus.len() {
        return None;
    }
    cpus.get(rank as usize).copied()
}

/// Bind the calling thread (before the runtime starts its threads, which inherit the CPU)
/// if [`ENV_BIND_TO`] asks for it; a refusal is reported and the PE runs unbound. Returns
/// whether the PE is now bound to a CPU of its own.
pub fn bind_from_env(rank: u32, size: u32) -> bool {
    let Ok(mode) = std::env::var(ENV_BIND_TO) else {
        return false;
    };
    let Ok(cpus) = unpinned_os::affinity::allowed_cpus() else {
        return false;
    };
    let Some(cpu) = cpu_for(mode.trim(), rank, size, &cpus) else {
        return false;
    };
    match unpinned_os::affinity::pin_current_thread(&[cpu]) {
        Ok(()) => true,
        Err(e) => {
            eprintln!(
                "shmem: PE {rank}: cannot bind to CPU {cpu}: {e} (running unbound; `oshrun --bind-to none` turns binding off)"
            );
            false
        }
    }
}

/// How long a waiting caller of a PE bound to a CPU of its own drives the engine busily
/// before it yields (the runtime's `progress.wait_spin_us`, set by the library for bound PEs;
/// the job's own setting wins). The CPU is the PE's: spinning costs no other PE, and a packet
/// is taken from the ring as it lands instead of after a `sched_yield` round trip
/// (measurements: docs/performance.md).
pub const BOUND_WAIT_SPIN_US: u64 = 200;

/// How long the progress thread of a PE bound to a CPU of its own yields after its last work
/// before it sleeps on the doorbell (the runtime's `progress.yield_us`, set by the library for
/// bound PEs; the job's own setting wins): not at all. The progress thread shares that CPU
/// with the PE's own threads. While it yields it stays runnable, so the CPU goes back to it
/// only when the application thread's scheduler slice ends, and a PE that computes answers
/// its peers' accesses that late. Asleep, it is woken by the doorbell of the next packet, and
/// the wake-up preempts the application thread. Two things make this safe for the rest: a waiting PE drives the engine itself
/// (`sync::wait_while`), and a post wakes the progress thread only when it must
/// (`Core::needs_wake_after_post` in crates/live). Measured: docs/performance.md, "Signals and
/// bounce buffers in the internal area; passive targets".
pub const BOUND_YIELD_US: u64 = 0;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_cpu_per_pe_only_when_there_are_enough() {
        let cpus = [2, 5, 7];
        assert_eq!(cpu_for("core", 0, 3, &cpus), Some(2));
        assert_eq!(cpu_for("core", 2, 3, &cpus), Some(7));
        assert_eq!(cpu_for("core", 1, 4, &cpus), None);
        assert_eq!(cpu_for("none", 0, 2, &cpus), None);
    }
}
