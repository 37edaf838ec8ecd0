//! The live Multiview DSM (spec dsm.md): threads in several processes (ranks) share one
//! address space; page protection catches accesses; the sans-IO coherence protocol of
//! `crates/dsm` moves minipages with PART RDMA writes of the live runtime and uses mailbox
//! sends for control. The shared memory is never pinned: a page missing at the target is
//! paged in by the runtime's PART fault path.
//!
//! # Use (applications, `crates/dsm-apps`)
//!
//! Inside a program started by `unpinned run -n RANKS -- PROGRAM`:
//!
//! ```no_run
//! use unpinned_dsm::space::SharedSpace;
//! use unpinned_dsm_live::{launch_space, SpaceConfig};
//! // context/protection/trace from `unpinned run --set dsm.context=signal` and the like
//! let space = launch_space(SpaceConfig::new(2))?;
//! // Setup: collective, deterministic allocations (same address on every rank).
//! let counter = space.alloc(8, 8)? as *mut u64;
//! let c = counter as usize;
//! space.spawn_workers(|s, w| {
//!     for _ in 0..100 {
//!         s.lock(w, 0);
//!         // SAFETY: shared memory from `alloc`, accessed under lock 0 (data-race free).
//!         unsafe { *(c as *mut u64) += 1 };
//!         s.unlock(w, 0);
//!     }
//!     s.barrier(w);
//! })?;
//! space.finish()?; // collective: nobody still needs this rank's pages
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Pieces
//!
//! | file | job |
//! |------|-----|
//! | [`views`]    | one memfd mapped once per object at a fixed base (`MAP_FIXED_NOREPLACE`), the private RW view, the minipage table |
//! | [`protect`]  | protection changes: `mprotect` per page vs batched runs; userfaultfd write-protect |
//! | [`wire`]     | control messages in 64-byte mailbox slots (sequence number + checksum) |
//! | [`endpoint`] | sends as RDMA writes into per-peer mailbox rings with credits; data writes then notices; failure detection |
//! | [`context`]  | handler contexts: progress thread, deferred worker, signal, selective polling |
//! | [`space`]    | [`LiveSpace`]: SIGSEGV requestor, node driver, barriers and locks, [`SharedSpace`](unpinned_dsm::space::SharedSpace) |
//! | [`trace`]    | optional per-worker traces in the `crates/dsm` format |
//!
//! A rank whose peer dies does not hang: a waiting thread sends heartbeats (writes) every
//! 200 ms; when the runtime gives up on the peer (retries exhausted), the rank prints
//! `dsm-live rank R: rank P is unreachable ...` and exits with [`space::EXIT_PEER_FAILED`].

//! # Costs
//!
//! A control message's round trip is dominated by the PART write and the engine loops; the
//! handler context adds little next to them. `unpinned live dsm-roundtrip`, `unpinned live
//! dsm-protect` and `dsm-live-selftest faultcost` measure the contexts, the ways to
//! write-protect pages and a served write fault (results: docs/performance.md, "Live DSM").

#![warn(missing_docs)]

pub mod context;
pub mod endpoint;
pub mod error;
pub mod protect;
pub mod space;
pub mod trace;
pub mod views;
pub mod wire;

pub use context::{Backoff, HandlerContext};
pub use error::DsmLiveError;
pub use protect::ProtectMode;
pub use space::{launch_space, LiveSpace, SpaceConfig, SpaceStats};
pub use views::ViewConfig;
