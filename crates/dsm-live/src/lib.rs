//! The live Multiview DSM (issue 6, part 1): threads in several processes (ranks) share one
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

//! # Measured (development VM: x86-64, 2 vCPUs shared with other jobs, load average ~11)
//!
//! Release builds, two ranks over shm. `unpinned live dsm-roundtrip` (control-message ping-pong,
//! 3 rounds x 300 pings per context, two runs; median / p10 in us):
//!
//! | receiver context | run 1 median | run 2 median | p10 (both runs) |
//! |------------------|--------------|--------------|-----------------|
//! | progress         | 64           | 76           | 48              |
//! | deferred         | 57           | 81           | 53-54           |
//! | signal           | 61           | 86           | 55-56           |
//! | polling          | 69           | 73           | 50-51           |
//!
//! The PART write and the engine loops dominate (~45-50 us); the context adds a few us at the
//! low percentiles (signal: +7 us over progress) and is lost in scheduling noise at the median.
//!
//! `unpinned live dsm-protect` (RW -> RO of present, dirty pages; median us):
//! `mprotect` per page 2.2 (1 page) / 14.5-24.6 (8 pages, 8 calls); one batched `mprotect`
//! 2.2 / 2.1; userfaultfd write-protect 1.0 / 1.9.
//!
//! `dsm-live-selftest faultcost 400` (median iteration with a write fault served by the peer
//! minus the median barrier; two runs per context): progress 134-139 us, deferred 151-165,
//! signal 153-165, polling 89-124; a barrier of 2 ranks alone takes 130-195 us.

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
