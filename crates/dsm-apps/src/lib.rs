//! DSM applications written once against [`SharedSpace`] (spec dsm.md, "Applications"), each
//! with a sequential reference and a check, plus two spaces that run them in one process:
//!
//! - [`LocalSpace`]: plain memory shared by the threads of this process (std `Barrier`, a lock
//!   per id). It gives fast tests: every app on 1, 2, 4 workers against its sequential answer.
//! - [`TracingSpace`]: the same, plus a software emulation of the DSM's coherence state per
//!   (rank, minipage) that records a [`unpinned_dsm::trace`] trace: a `Fault` whenever a worker
//!   of rank r touches a minipage r has no valid copy of (or writes one it only reads), and
//!   `Compute{ns}` from the thread's CPU clock between records. The simulator replays it.
//!
//! # Why an access hook
//! A live DSM sees accesses through page protection; an in-process tracer cannot (there is
//! only one copy of the memory). The apps therefore announce each shared range they are about
//! to read or write with [`SharedSpace::access`] (a default no-op method of the trait): once
//! per range around a loop (a row band, a block, a body array), never per element, so the cost
//! is a few calls per phase and the live DSM ignores it. The alternative (synthetic traces)
//! would test the replay without the apps' real sharing patterns; the hook gives real ones.
//! The tracer's coherence starts where the DSM protocol (`unpinned_dsm::Node`) starts: each
//! minipage writable at its manager (`mp % ranks`); the initialisation in `setup` is not
//! traced (SPLASH convention: time from the start of the parallel phase).
//!
//! # Shared memory and `unsafe`
//! The [`SharedSpace`] contract is plain loads and stores through the pointers `alloc`
//! returns. [`Shared`] wraps such an allocation as a bounds-checked array of plain values; its
//! two `unsafe` blocks are the only raw accesses of the apps. Data written by different
//! workers is in different allocations where the algorithm allows (Multiview's minipages are
//! the unit of sharing).

#![warn(missing_docs)]

pub mod apps;
mod cputime;
mod local;
mod run;
mod shared;
mod tracing;

pub use apps::{create, names, Input};
pub use local::LocalSpace;
pub use run::{run_app, run_local, run_traced};
pub use shared::{Plain, Shared};
pub use tracing::{Trace, TracingSpace};
pub use unpinned_dsm::space::{SharedSpace, SpaceError, Worker};

/// Errors of an application (setup, bad input).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AppError {
    /// No application of that name.
    #[error("unknown application {0:?} (known: {1})")]
    Unknown(String, String),
    /// Input parameters that cannot run (e.g. more workers than rows).
    #[error("bad input for {app}: {why}")]
    BadInput {
        /// Application.
        app: &'static str,
        /// What is wrong.
        why: String,
    },
    /// The shared space failed.
    #[error("shared space: {0}")]
    Space(String),
}

impl From<SpaceError> for AppError {
    fn from(e: SpaceError) -> AppError {
        AppError::Space(e.0)
    }
}

/// A DSM application (SPLASH style: collective setup, parallel work between barriers, check).
pub trait App: Send + Sync {
    /// Registry name (`sor`, `lu`, ...).
    fn name(&self) -> &'static str;
    /// Collective: every rank allocates the same objects in the same order; rank 0 also
    /// initialises them. Runs before any worker starts.
    fn setup(&mut self, space: &dyn SharedSpace) -> Result<(), AppError>;
    /// The parallel phase of one worker (all workers of all ranks run it).
    fn work(&self, space: &dyn SharedSpace, worker: Worker);
    /// On rank 0 after the final barrier: compare the result with the sequential reference.
    fn check(&self, space: &dyn SharedSpace) -> Result<(), String>;
}

/// The contiguous block `k` of `n` items split into `parts` nearly equal blocks.
pub fn block(n: usize, parts: usize, k: usize) -> std::ops::Range<usize> {
    let base = n / parts;
    let extra = n % parts;
    let lo = k * base + k.min(extra);
    let hi = lo + base + usize::from(k < extra);
    lo..hi
}

/// Total workers of a space.
pub fn workers(space: &dyn SharedSpace) -> usize {
    space.ranks() * space.threads_per_rank()
}
