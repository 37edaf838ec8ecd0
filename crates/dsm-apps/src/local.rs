//! [`LocalSpace`]: a [`SharedSpace`] over plain memory, shared by the threads of this process.
//! `ranks x threads_per_rank` workers are all threads here (2 ranks x 2 threads runs as 4
//! workers); the ranks only matter to code that asks for them.

use std::alloc::Layout;
use std::collections::HashMap;
use std::sync::{Condvar, Mutex, MutexGuard};

use unpinned_dsm::space::{SharedSpace, SpaceError, Worker};

/// Largest single allocation (a bad size is an error, not an abort).
const ALLOC_BYTES_MAX: usize = 1 << 34;

/// Plain shared memory and std synchronisation (see the module doc).
pub struct LocalSpace {
    ranks: usize,
    threads_per_rank: usize,
    allocs: Mutex<Vec<(usize, Layout)>>,
    sync: Mutex<SyncState>,
    changed: Condvar,
}

/// Barrier and lock state, under one mutex so that poisoning wakes every waiter.
#[derive(Default)]
struct SyncState {
    arrived: usize,
    generation: u64,
    held: HashMap<u32, bool>,
    poisoned: bool,
}

impl LocalSpace {
    /// A space of `ranks x threads_per_rank` workers. Both must be at least 1.
    pub fn new(ranks: usize, threads_per_rank: usize) -> Result<LocalSpace, SpaceError> {
        if ranks == 0 || threads_per_rank == 0 || ranks > 64 {
            return Err(SpaceError(format!(
                "need 1..=64 ranks and >= 1 thread per rank, got {ranks} x {threads_per_rank}"
            )));
        }
        Ok(LocalSpace {
            ranks,
            threads_per_rank,
            allocs: Mutex::new(Vec::new()),
            sync: Mutex::new(SyncState::default()),
            changed: Condvar::new(),
        })
    }

    /// A worker failed: every barrier and lock wait, now and later, panics instead of waiting
    /// for it forever (the runner reports the failure instead of hanging).
    pub fn poison(&self) {
        self.state().poisoned = true;
        self.changed.notify_all();
    }

    fn state(&self) -> MutexGuard<'_, SyncState> {
        // The state stays consistent even if a holder panicked (plain counters and flags).
        self.sync.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn wait<'a>(&self, g: MutexGuard<'a, SyncState>) -> MutexGuard<'a, SyncState> {
        let g = self.changed.wait(g).unwrap_or_else(|e| e.into_inner());
        if g.poisoned {
            drop(g);
            panic!("shared space poisoned: another worker failed");
        }
        g
    }

    /// (address, length) of every allocation so far, in allocation order.
    pub fn allocations(&self) -> Vec<(usize, usize)> {
        self.allocs
            .lock()
            .expect("alloc list lock")
            .iter()
            .map(|(a, l)| (*a, l.size()))
            .collect()
    }
}

impl SharedSpace for LocalSpace {
    fn rank(&self) -> usize {
        0
    }
    fn ranks(&self) -> usize {
        self.ranks
    }
    fn threads_per_rank(&self) -> usize {
        self.threads_per_rank
    }
    fn alloc(&self, bytes: usize, align: usize) -> Result<*mut u8, SpaceError> {
        if bytes == 0 || bytes > ALLOC_BYTES_MAX {
            return Err(SpaceError(format!(
                "allocation of {bytes} bytes (allowed 1..={ALLOC_BYTES_MAX})"
            )));
        }
        let layout = Layout::from_size_align(bytes, align.max(1))
            .map_err(|e| SpaceError(format!("allocation of {bytes} bytes aligned {align}: {e}")))?;
        // SAFETY: the layout has a non-zero size (checked above); the memory is freed with
        // the same layout in Drop.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(SpaceError(format!(
                "out of memory allocating {bytes} bytes"
            )));
        }
        self.allocs
            .lock()
            .expect("alloc list lock")
            .push((ptr as usize, layout));
        Ok(ptr)
    }
    fn barrier(&self, _worker: Worker) {
        let mut g = self.state();
        assert!(!g.poisoned, "shared space poisoned: another worker failed");
        g.arrived += 1;
        if g.arrived == self.ranks * self.threads_per_rank {
            g.arrived = 0;
            g.generation += 1;
            self.changed.notify_all();
            return;
        }
        let gen = g.generation;
        while g.generation == gen {
            g = self.wait(g);
        }
    }
    fn lock(&self, _worker: Worker, id: u32) {
        let mut g = self.state();
        assert!(!g.poisoned, "shared space poisoned: another worker failed");
        while g.held.get(&id).copied().unwrap_or(false) {
            g = self.wait(g);
        }
        g.held.insert(id, true);
    }
    fn unlock(&self, _worker: Worker, id: u32) {
        self.state().held.insert(id, false);
        self.changed.notify_all();
    }
}

impl Drop for LocalSpace {
    fn drop(&mut self) {
        for (addr, layout) in self.allocs.get_mut().expect("alloc list lock").drain(..) {
            // SAFETY: allocated in `alloc` with this layout and not freed before; no worker
            // runs any more (they borrow the space).
            unsafe { std::alloc::dealloc(addr as *mut u8, layout) };
        }
    }
}
