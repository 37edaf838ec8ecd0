//! A barrier for the window-synchronous parallel run: spin briefly, then park.
//!
//! On two cores shared with other work, a thread spinning at the barrier while its partner is
//! descheduled burns the very core the partner needs; a thread that always parks pays a futex
//! wake-up per window, and on a loaded machine the woken thread often waits for a time slice
//! (so much that parking early can cost as much wall time as the second core gains;
//! docs/performance.md, "Simulator: parallel application runs"). So a waiter spins for
//! [`SPINS`] rounds (the partner is usually about to arrive), then yields the core
//! (`sched_yield`: it stays runnable and runs again when the core has nothing else to do) for
//! up to [`YIELD`], then parks until the last arriver unparks it.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::thread::Thread;
use std::time::{Duration, Instant};

/// Spin rounds (a `spin_loop` hint each, about a microsecond in all) before a waiter yields.
pub const SPINS: u32 = 256;
/// How long a waiter yields before it parks.
pub const YIELD: Duration = Duration::from_millis(2);

/// A reusable barrier for a fixed number of threads, each with its own index.
pub struct Barrier {
    n: usize,
    count: AtomicUsize,
    generation: AtomicUsize,
    threads: Vec<OnceLock<Thread>>,
    parks: AtomicU64,
    /// A thread will never arrive again (it panicked): waiters return at once.
    poisoned: AtomicBool,
}

impl Barrier {
    /// A barrier for `n` threads (indices `0..n`).
    pub fn new(n: usize) -> Barrier {
        Barrier {
            n,
            count: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
            threads: (0..n).map(|_| OnceLock::new()).collect(),
            parks: AtomicU64::new(0),
            poisoned: AtomicBool::new(false),
        }
    }

    /// Thread `i` registers itself (before its first [`Barrier::wait`]) so that the last
    /// arriver can unpark it.
    pub fn register(&self, i: usize) {
        let _ = self.threads[i].set(std::thread::current());
    }

    /// Times a waiter parked so far.
    pub fn parks(&self) -> u64 {
        self.parks.load(Ordering::Relaxed)
    }

    /// A thread that will never arrive again (it panicked) releases every waiter, now and
    /// later: they must not wait for it forever.
    pub fn poison(&self) {
        self.poisoned.store(true, Ordering::SeqCst);
        for t in self.threads.iter().filter_map(|t| t.get()) {
            t.unpark();
        }
    }

    /// Wait until all `n` threads have called `wait` (thread `i` calling). Returns `false` if
    /// the barrier was poisoned instead.
    #[must_use]
    pub fn wait(&self, i: usize) -> bool {
        if self.poisoned.load(Ordering::SeqCst) {
            return false;
        }
        // Read before arriving: the generation cannot move on before this thread arrives.
        let g = self.generation.load(Ordering::Acquire);
        if self.count.fetch_add(1, Ordering::AcqRel) + 1 == self.n {
            // Reset before releasing: a released thread may arrive at the next use at once.
            self.count.store(0, Ordering::Relaxed);
            self.generation.store(g.wrapping_add(1), Ordering::Release);
            for (j, t) in self.threads.iter().enumerate() {
                if j != i {
                    // Unparking a thread that is not parked leaves it a token: its next park
                    // returns at once and it checks the generation again.
                    if let Some(t) = t.get() {
                        t.unpark();
                    }
                }
            }
            return true;
        }
        let released =
            || self.generation.load(Ordering::Acquire) != g || self.poisoned.load(Ordering::SeqCst);
        let start = Instant::now();
        let mut spins = 0u32;
        while !released() {
            if spins < SPINS {
                std::hint::spin_loop();
            } else {
                // Give the core to whoever is runnable (the partner, if it was descheduled)
                // without leaving the run queue.
                std::thread::yield_now();
                if start.elapsed() >= YIELD {
                    break;
                }
            }
            spins += 1;
        }
        if released() {
            return self.generation.load(Ordering::Acquire) != g;
        }
        self.parks.fetch_add(1, Ordering::Relaxed);
        while !released() {
            std::thread::park();
        }
        self.generation.load(Ordering::Acquire) != g
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    #[test]
    fn no_thread_passes_before_all_arrive() {
        let n = 3;
        let b = Barrier::new(n);
        let arrived = AtomicU32::new(0);
        std::thread::scope(|s| {
            for i in 0..n {
                let (b, arrived) = (&b, &arrived);
                s.spawn(move || {
                    b.register(i);
                    for round in 1..=200u32 {
                        arrived.fetch_add(1, Ordering::SeqCst);
                        assert!(b.wait(i));
                        // Everyone arrived for this round, nobody for the next one yet.
                        assert!(arrived.load(Ordering::SeqCst) >= round * n as u32);
                        assert!(b.wait(i));
                    }
                });
            }
        });
        assert_eq!(arrived.load(Ordering::SeqCst), 200 * n as u32);
    }

    #[test]
    fn a_late_thread_wakes_a_parked_one() {
        let b = Barrier::new(2);
        std::thread::scope(|s| {
            s.spawn(|| {
                b.register(1);
                std::thread::sleep(std::time::Duration::from_millis(20));
                assert!(b.wait(1));
            });
            b.register(0);
            assert!(b.wait(0));
        });
        assert_eq!(b.parks(), 1, "the early thread spun, then parked");
    }

    #[test]
    fn poison_releases_a_waiter() {
        let b = Barrier::new(2);
        std::thread::scope(|s| {
            s.spawn(|| {
                b.register(1);
                std::thread::sleep(std::time::Duration::from_millis(10));
                b.poison();
            });
            b.register(0);
            assert!(!b.wait(0), "released by the poison, not by an arrival");
        });
        assert!(!b.wait(0), "and stays released");
    }
}
