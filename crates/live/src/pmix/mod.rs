//! The PMIx client of a rank started by a PMIx launcher (Open MPI's `mpirun` / `prterun`,
//! Slurm's `srun`): identity (namespace, rank, job size), put / commit / fence / get of byte
//! strings, and the launcher's process-termination events.
//!
//! libpmix is loaded at run time ([`ffi`]). One client per process ([`Client::attach`]), shared
//! by the edge (which reads the job and the endpoints through it) and the runtime's bootstrap
//! (collectives as put + fence + get); PMIx is finalized when the last runtime using it goes
//! ([`release`]). A termination event for another rank of the job, or the loss of the
//! connection to the launcher (or the end of the process that started this one), ends this process at once with a message naming the rank (the
//! launcher would otherwise leave it blocked in a fence until its timeout).

mod events;
pub mod ffi;

use std::ffi::CString;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ffi::{Api, Info, Proc, Value};

/// A PMIx call failed.
#[derive(Debug, Clone, thiserror::Error)]
#[error("PMIx: {0}")]
pub struct PmixError(pub String);

/// This process's PMIx client.
pub struct Client {
    api: Api,
    me: Proc,
    nspace: String,
}

/// The process's client while some user holds it.
static CLIENT: Mutex<Option<Arc<Client>>> = Mutex::new(None);

/// A file to remove once every rank is past the next fence (rank 0's shared-memory segment:
/// mapped by all, then unlinked, so that nothing stays in /dev/shm), or when the job ends.
pub(crate) static UNLINK_AFTER_FENCE: Mutex<Option<PathBuf>> = Mutex::new(None);

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn unlink_pending() {
    if let Some(p) = lock(&UNLINK_AFTER_FENCE).take() {
        let _ = std::fs::remove_file(p);
    }
}

/// Remove `path` once every rank has passed the next fence (or when PMIx is finalized).
pub fn unlink_after_fence(path: PathBuf) {
    *lock(&UNLINK_AFTER_FENCE) = Some(path);
}

/// Drop the process-wide reference (the last runtime on PMIx is gone): PMIx is finalized once
/// no other reference remains.
pub fn release() {
    lock(&CLIENT).take();
}

impl Client {
    /// The process's client, initializing PMIx on first use.
    pub fn attach() -> Result<Arc<Client>, PmixError> {
        let mut g = lock(&CLIENT);
        if let Some(c) = g.as_ref() {
            return Ok(c.clone());
        }
        let c = Arc::new(Client::init()?);
        *g = Some(c.clone());
        Ok(c)
    }

    /// The process's client, if attached.
    pub fn current() -> Option<Arc<Client>> {
        lock(&CLIENT).clone()
    }

    fn init() -> Result<Client, PmixError> {
        let api = Api::load().map_err(PmixError)?;
        let mut me = Proc {
            nspace: [0; ffi::NSPACE_BYTES],
            rank: 0,
        };
        // SAFETY: PMIx_Init fills `me`; no info.
        let st = unsafe { (api.init)(&mut me, std::ptr::null_mut(), 0) };
        if st != ffi::SUCCESS {
            return Err(PmixError(format!(
                "PMIx_Init failed: {} (is the program started by mpirun, prterun or srun?)",
                api.describe(st)
            )));
        }
        // SAFETY: PMIx_Init wrote a NUL-terminated namespace into a zeroed array.
        let nspace = unsafe { std::ffi::CStr::from_ptr(me.nspace.as_ptr()) }
            .to_string_lossy()
            .into_owned();
        let c = Client { api, me, nspace };
        c.watch_terminations();
        events::watch_parent();
        Ok(c)
    }

    /// Ask for the launcher's termination events (`events.rs`); best effort (a launcher
    /// that does not send them still kills the job when a rank fails).
    fn watch_terminations(&self) {
        events::watch(self.me.nspace, self.me.rank);
        let mut codes = ffi::TERMINATION_EVENTS;
        // SAFETY: blocking registration (no callback): `codes` lives through the call; the
        // handler is a plain function.
        unsafe {
            (self.api.register_event_handler)(
                codes.as_mut_ptr(),
                codes.len(),
                std::ptr::null_mut(),
                0,
                events::on_termination,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        };
    }

    /// This process's rank in the job.
    pub fn rank(&self) -> u32 {
        self.me.rank
    }

    /// The job's namespace.
    pub fn nspace(&self) -> &str {
        &self.nspace
    }

    fn key(key: &str) -> Result<CString, PmixError> {
        CString::new(key).map_err(|_| PmixError(format!("key {key:?} has a NUL")))
    }

    fn check(&self, what: &str, st: ffi::Status) -> Result<(), PmixError> {
        if st == ffi::SUCCESS {
            Ok(())
        } else {
            Err(PmixError(format!("{what}: {}", self.api.describe(st))))
        }
    }

    /// A `u32` attribute of the whole job (`pmix.job.size`, `pmix.local.size`).
    pub fn job_u32(&self, key: &str) -> Result<u32, PmixError> {
        let mut p = self.me;
        p.rank = ffi::RANK_WILDCARD;
        let v = self.get_value(&p, key)?;
        match v.kind {
            ffi::UINT32 => Ok(v.data[0] as u32),
            k => Err(PmixError(format!("{key} has type {k}, not uint32"))),
        }
    }

    /// Get `key` of `proc` as a copied value (only plain data kinds are kept; pointers freed).
    fn get_value(&self, proc_: &Proc, key: &str) -> Result<Value, PmixError> {
        let k = Client::key(key)?;
        let mut out: *mut Value = std::ptr::null_mut();
        // SAFETY: PMIx_Get with valid proc and key; on success `out` is a malloc'ed value.
        let st = unsafe { (self.api.get)(proc_, k.as_ptr(), std::ptr::null(), 0, &mut out) };
        self.check(&format!("PMIx_Get {key} of rank {}", proc_.rank), st)?;
        if out.is_null() {
            return Err(PmixError(format!("PMIx_Get {key}: no value")));
        }
        // SAFETY: `out` is a valid value from PMIx; copied, then destructed and freed as
        // PMIX_VALUE_RELEASE does.
        unsafe {
            let v = *out;
            (self.api.value_destruct)(out);
            libc::free(out.cast());
            Ok(v)
        }
    }

    /// Publish `bytes` under `key` to the whole job (visible after [`Client::commit`] and a
    /// fence).
    pub fn put(&self, key: &str, bytes: &[u8]) -> Result<(), PmixError> {
        let k = Client::key(key)?;
        // A leading byte keeps the object non-empty (an empty byte object has no pointer).
        let mut b: Vec<u8> = Vec::with_capacity(bytes.len() + 1);
        b.push(1);
        b.extend_from_slice(bytes);
        let mut v = Value::new(ffi::BYTE_OBJECT);
        v.data[0] = b.as_mut_ptr() as u64;
        v.data[1] = b.len() as u64;
        // SAFETY: PMIx_Put copies the value; `b` lives through the call.
        let st = unsafe { (self.api.put)(ffi::SCOPE_GLOBAL, k.as_ptr(), &mut v) };
        self.check(&format!("PMIx_Put {key}"), st)
    }

    /// Push the puts to the server.
    pub fn commit(&self) -> Result<(), PmixError> {
        // SAFETY: no arguments.
        let st = unsafe { (self.api.commit)() };
        self.check("PMIx_Commit", st)
    }

    /// Barrier over the job, exchanging the committed data, giving up after `timeout`; then a
    /// pending unlink ([`unlink_after_fence`]) is done.
    pub fn fence(&self, timeout: Duration) -> Result<(), PmixError> {
        let info = [
            Info::flag("pmix.collect", true),
            Info::int(
                "pmix.timeout",
                timeout.as_secs().clamp(1, i32::MAX as u64) as i32,
            ),
        ];
        // SAFETY: null procs = every process of our namespace; `info` lives through the call.
        let st = unsafe { (self.api.fence)(std::ptr::null(), 0, info.as_ptr(), info.len()) };
        self.check("PMIx_Fence", st)?;
        unlink_pending();
        Ok(())
    }

    /// The bytes `rank` put under `key` (after a fence).
    pub fn get(&self, rank: u32, key: &str) -> Result<Vec<u8>, PmixError> {
        self.get_with(rank, key, &[])
    }

    /// The ranks of `0..size` whose `key` is not in this process's store after a fence that
    /// did not complete everywhere (`PMIX_ERR_PARTIAL_SUCCESS`: those ranks ended).
    fn missing(&self, key: &str, size: u32) -> Vec<u32> {
        let local = [Info::flag("pmix.optional", true)];
        (0..size)
            .filter(|r| self.get_with(*r, key, &local).is_err())
            .collect()
    }

    fn get_with(&self, rank: u32, key: &str, info: &[Info]) -> Result<Vec<u8>, PmixError> {
        let mut p = self.me;
        p.rank = rank;
        let k = Client::key(key)?;
        let mut out: *mut Value = std::ptr::null_mut();
        // SAFETY: PMIx_Get with valid proc, key and infos; on success `out` is a malloc'ed
        // value.
        let st = unsafe { (self.api.get)(&p, k.as_ptr(), info.as_ptr(), info.len(), &mut out) };
        self.check(&format!("PMIx_Get {key} of rank {rank}"), st)?;
        if out.is_null() {
            return Err(PmixError(format!(
                "PMIx_Get {key} of rank {rank}: no value"
            )));
        }
        // SAFETY: a valid value from PMIx; a byte object is copied before the value is
        // destructed and freed (PMIX_VALUE_RELEASE).
        let r = unsafe {
            let v = &*out;
            let r = if v.kind == ffi::BYTE_OBJECT {
                let (ptr, len) = (v.data[0] as *const u8, v.data[1] as usize);
                if ptr.is_null() || len == 0 {
                    Err(PmixError(format!("{key} of rank {rank} is empty")))
                } else {
                    Ok(std::slice::from_raw_parts(ptr, len)[1..].to_vec())
                }
            } else {
                Err(PmixError(format!(
                    "{key} of rank {rank} has type {}, not a byte object",
                    v.kind
                )))
            };
            (self.api.value_destruct)(out);
            libc::free(out.cast());
            r
        };
        r
    }

    /// Every rank of `size` contributes `data` under `key`; all contributions, by rank.
    pub fn all_gather(
        &self,
        key: &str,
        data: &[u8],
        size: u32,
        timeout: Duration,
    ) -> Result<Vec<Vec<u8>>, PmixError> {
        self.put(key, data)?;
        self.commit()?;
        if let Err(e) = self.fence(timeout) {
            let gone = self.missing(key, size);
            // A fence that timed out waited for ranks that are alive but stopped or hung; one
            // that ended early (PMIX_ERR_PARTIAL_SUCCESS) lost ranks that ended.
            let why = if e.0.contains(&format!("({})", ffi::ERR_TIMEOUT)) {
                format!(
                    "did not reach the fence within {} s (stopped, hung, or calling different \
                     collectives?)",
                    timeout.as_secs()
                )
            } else {
                "ended before reaching the fence".to_string()
            };
            return Err(match gone.as_slice() {
                [] => e,
                [r] => PmixError(format!("rank {r} {why} ({})", e.0)),
                _ => PmixError(format!("ranks {gone:?} {why} ({})", e.0)),
            });
        }
        (0..size).map(|r| self.get(r, key)).collect()
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        unlink_pending();
        events::unwatch();
        // SAFETY: no info; the client is not used after this.
        unsafe { (self.api.finalize)(std::ptr::null(), 0) };
    }
}
