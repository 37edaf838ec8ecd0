//! CPU affinity for the dedicated-core configuration: a spinning thread only helps when it has
//! a core of its own (see `unpinned_live::runtime`); pinning the waiting caller and the target's
//! progress thread to different CPUs is how HPC runs give them one.

use std::cell::Cell;

thread_local! {
    /// Whether [`pin_current_thread`] last restricted this thread to a single CPU.
    static PINNED_TO_ONE: Cell<bool> = const { Cell::new(false) };
}

/// Whether the calling thread was restricted to a single CPU by [`pin_current_thread`]: its
/// spinning then needs no periodic yield (see `unpinned_live::runtime::SPIN_YIELD_POLLS`), the CPU
/// being its own. Affinity set by other means is not seen (one thread-local read, no system
/// call, so that a waiting caller can ask at every wait).
pub fn current_thread_pinned() -> bool {
    PINNED_TO_ONE.with(|p| p.get())
}

/// CPUs this process may run on (`sched_getaffinity`), in ascending order.
pub fn allowed_cpus() -> std::io::Result<Vec<usize>> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity writes at most
    // `size_of::<cpu_set_t>()` bytes into it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: pid 0 is the calling thread; the pointer and size describe `set`.
    let r = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: CPU_ISSET only reads the set, for indices below CPU_SETSIZE.
    Ok((0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect())
}

/// Restrict the calling thread to `cpus` (an empty list is refused with `EINVAL`).
pub fn pin_current_thread(cpus: &[usize]) -> std::io::Result<()> {
    if cpus.is_empty() || cpus.iter().any(|&c| c >= libc::CPU_SETSIZE as usize) {
        return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: a zeroed cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        // SAFETY: c < CPU_SETSIZE (checked above); CPU_SET only writes inside `set`.
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    // SAFETY: pid 0 is the calling thread; the pointer and size describe `set`, which the
    // kernel only reads.
    let r = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let one = {
        let mut u = cpus.to_vec();
        u.sort_unstable();
        u.dedup();
        u.len() == 1
    };
    PINNED_TO_ONE.with(|p| p.set(one));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pin_and_restore() {
        let all = allowed_cpus().unwrap();
        assert!(!all.is_empty());
        let t = std::thread::spawn(move || {
            assert!(!current_thread_pinned());
            pin_current_thread(&all[..1]).unwrap();
            assert_eq!(allowed_cpus().unwrap(), all[..1].to_vec());
            assert!(current_thread_pinned());
            pin_current_thread(&all).unwrap();
            assert_eq!(allowed_cpus().unwrap(), all);
            assert_eq!(current_thread_pinned(), all.len() == 1);
            assert!(pin_current_thread(&[]).is_err());
            assert!(pin_current_thread(&[usize::MAX]).is_err());
        });
        t.join().unwrap();
    }
}
