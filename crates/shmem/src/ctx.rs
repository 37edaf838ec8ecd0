//! Communication contexts: each keeps its outstanding PART requests, so that `quiet` on it
//! waits for exactly those.

use std::ffi::{c_long, c_void};
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::Mutex;

use unpinned_live::{LiveError, WrId};

use crate::bounce::Bounce;
use crate::state::{fatal, try_state};

/// A request posted and not yet waited for.
pub struct Pending {
    /// Its id.
    pub id: WrId,
    /// The PE it goes to.
    pub pe: u32,
    /// The bounce buffer it reads from, given back once it completed.
    pub buf: Option<Bounce>,
}

/// Outstanding requests above which a post first waits for the oldest half.
const MAX_PENDING: usize = 4096;

/// A context.
pub struct Ctx {
    /// `SHMEM_CTX_*` options it was created with.
    pub options: c_long,
    /// The team it belongs to (`shmem_team_t`; null: the world team). Set by the teams code.
    pub team: AtomicPtr<c_void>,
    pending: Mutex<Vec<Pending>>,
    /// Puts posted and not yet known complete (a get or atomic waits for them first, so that
    /// it observes this PE's earlier puts).
    writes: AtomicUsize,
    quiet_lock: Mutex<()>,
}

impl Ctx {
    /// A new context.
    pub fn new(options: c_long) -> Ctx {
        Ctx {
            options,
            team: AtomicPtr::new(std::ptr::null_mut()),
            pending: Mutex::new(Vec::new()),
            writes: AtomicUsize::new(0),
            quiet_lock: Mutex::new(()),
        }
    }

    /// Record a posted request (`write`: it is a put).
    pub fn push(&self, p: Pending, write: bool) {
        if write {
            self.writes.fetch_add(1, Ordering::AcqRel);
        }
        let backlog = {
            let mut v = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            v.push(p);
            if v.len() > MAX_PENDING {
                let n = v.len() / 2;
                Some(v.drain(..n).collect::<Vec<_>>())
            } else {
                None
            }
        };
        if let Some(old) = backlog {
            for p in old {
                wait_one(p);
            }
        }
    }

    /// Whether puts of this context may be outstanding.
    pub fn has_writes(&self) -> bool {
        self.writes.load(Ordering::Acquire) > 0
    }

    /// Wait until every request posted on this context so far has completed.
    pub fn quiet(&self) {
        let _q = self.quiet_lock.lock().unwrap_or_else(|e| e.into_inner());
        let writes = self.writes.load(Ordering::Acquire);
        let list = std::mem::take(&mut *self.pending.lock().unwrap_or_else(|e| e.into_inner()));
        for p in list {
            wait_one(p);
        }
        self.writes.fetch_sub(writes, Ordering::AcqRel);
        std::sync::atomic::fence(Ordering::SeqCst);
    }
}

/// Requests of a context taken out by [`Ctx::take_earlier`], waited for by
/// [`Ctx::finish_quiet`].
pub struct Earlier {
    list: Vec<Pending>,
    writes: usize,
}

impl Ctx {
    /// Take the requests posted on this context so far, so that new ones can be posted before
    /// waiting for these ([`Ctx::finish_quiet`]): the barrier posts its signal first, and the
    /// acknowledgements of its earlier ones then arrive while it waits anyway. A `quiet` on
    /// this context meanwhile does not wait for them (only the barriers use this, on their
    /// own contexts: `State::barrier_ctx` and `State::sync_ctx`).
    pub fn take_earlier(&self) -> Earlier {
        let _q = self.quiet_lock.lock().unwrap_or_else(|e| e.into_inner());
        let writes = self.writes.load(Ordering::Acquire);
        let list = std::mem::take(&mut *self.pending.lock().unwrap_or_else(|e| e.into_inner()));
        Earlier { list, writes }
    }

    /// Wait until the requests of `earlier` have completed.
    pub fn finish_quiet(&self, earlier: Earlier) {
        for p in earlier.list {
            wait_one(p);
        }
        self.writes.fetch_sub(earlier.writes, Ordering::AcqRel);
        std::sync::atomic::fence(Ordering::SeqCst);
    }

    /// Wait for this context's requests until `deadline`, ignoring failures: for the last
    /// requests of a PE that is leaving (its peers may be leaving too, so an acknowledgement
    /// that needs a resend may never come).
    pub fn quiet_lenient(&self, deadline: std::time::Instant) {
        let st = try_state().expect("requests exist only after init");
        let list = std::mem::take(&mut *self.pending.lock().unwrap_or_else(|e| e.into_inner()));
        for p in list {
            while std::time::Instant::now() < deadline {
                match st.rt.wait(p.id) {
                    Err(LiveError::Timeout(_)) => continue,
                    _ => break,
                }
            }
        }
    }
}

/// Wait for one request; a failure is fatal (the PE and the runtime's reason are named).
pub fn wait_one(p: Pending) {
    let st = try_state().expect("requests exist only after init");
    loop {
        match st.rt.wait(p.id) {
            Ok(_) => break,
            Err(LiveError::Timeout(_)) => {
                st.check_exit_word();
                continue;
            }
            Err(e) => fatal(
                "shmem_quiet",
                format!("a transfer to PE {} failed: {e}", p.pe),
            ),
        }
    }
    drop(p.buf);
}
