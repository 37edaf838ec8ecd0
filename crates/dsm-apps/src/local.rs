//! [`LocalSpace`]: a [`SharedSpace`] over plain memory, shared by the threads of this process.
//! `ranks x threads_per_rank` workers are all threads here (2 ranks x 2 threads runs as 4
//! workers); the ranks only matter to code that asks for them.

use std::alloc::Layout;
use std::collections::HashMap;
use std::sync::{Barrier, Condvar, Mutex};

use unpinned_dsm::space::{SharedSpace, SpaceError, Worker};

/// Largest single allocation (a bad size is an error, not an abort).
const ALLOC_BYTES_MAX: usize = 1 << 34;

/// Plain shared memory and std synchronisation (see the module doc).
pub struct LocalSpace {
    ranks: usize,
    threads_per_rank: usize,
    allocs: Mutex<Vec<(usize, Layout)>>,
    barrier: Barrier,
    locks: Mutex<HashMap<u32, bool>>,
    released: Condvar,
}

impl LocalSpace {
    /// A space of `ranks x threads_per_rank` workers. Both must be at least 1.
    pub fn new(ranks: usize, threads_per_rank: usize) -> Result<LocalSpace, SpaceError> {
        if ranks == 0 || threads_per_rank == 0 || ranks > 64 {
            return Err(SpaceError(format!("need 1..=64 ranks and >= 1 thread per rank, got {ranks} x {threads_per_rank}")));
        }
        Ok(LocalSpace {
            ranks,
            threads_per_rank,
            allocs: Mutex::new(Vec::new()),
            barrier: Barrier::new(ranks * threads_per_rank),
            locks: Mutex::new(HashMap::new()),
            released: Condvar::new(),
        })
    }

    /// (address, length) of every allocation so far, in allocation order.
    pub fn allocations(&self) -> Vec<(usize, usize)> {
        self.allocs.lock().expect("alloc list lock").iter().map(|(a, l)| (*a, l.size())).collect()
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
            return Err(SpaceError(format!("allocation of {bytes} bytes (allowed 1..={ALLOC_BYTES_MAX})")));
        }
        let layout = Layout::from_size_align(bytes, align.max(1))
            .map_err(|e| SpaceError(format!("allocation of {bytes} bytes aligned {align}: {e}")))?;
        // SAFETY: the layout has a non-zero size (checked above); the memory is freed with
        // the same layout in Drop.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(SpaceError(format!("out of memory allocating {bytes} bytes")));
        }
        self.allocs.lock().expect("alloc list lock").push((ptr as usize, layout));
        Ok(ptr)
    }
    fn barrier(&self, _worker: Worker) {
        self.barrier.wait();
    }
    fn lock(&self, _worker: Worker, id: u32) {
        let mut held = self.locks.lock().expect("lock table");
        while held.get(&id).copied().unwrap_or(false) {
            held = self.released.wait(held).expect("lock table");
        }
        held.insert(id, true);
    }
    fn unlock(&self, _worker: Worker, id: u32) {
        let mut held = self.locks.lock().expect("lock table");
        held.insert(id, false);
        self.released.notify_all();
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
