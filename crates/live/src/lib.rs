//! The live runtime of unpinned: PART between real processes, on real memory, with real page
//! faults.
//!
//! The same sans-IO [`unpinned_part::PartEngine`] the simulator drives runs here, driven by
//! the application's own threads when they post or wait, and by a progress thread per process
//! (rank) otherwise; nothing of the protocol is re-implemented. What changes is what
//! surrounds it:
//!
//! | simulator (`crates/sim`)         | live runtime (this crate)                                   |
//! |----------------------------------|-------------------------------------------------------------|
//! | modelled memory + IOMMU          | [`memory::LiveMemory`]: the process's own pages, residency from `/proc/self/pagemap` |
//! | fault handler model              | [`fault_handler`]: a thread, `madvise(MADV_POPULATE_*)`     |
//! | links with latency and loss      | [`transport`]: shared-memory rings, UDP, in-process queues  |
//! | event queue                      | [`runtime`]: engine turns (caller-driven), real monotonic time |
//! | `Sim::post`                      | [`Runtime`] (`expose`, `write`, `read`, `wait`, `flush`)    |
//! | experiment harness               | [`launch`]: `unpinned run -n N -- PROGRAM`                  |
//!
//! Below it, crates/os holds what Linux says about memory and CPUs (pagemap scans, mappings,
//! userfaultfd, page-in by `madvise`); above it, a layer plugs into the engine loop through
//! [`layer`] (its memory decorator and a [`TurnHook`]) without the loop calling it by name:
//! crates/aa-live does so for Active Access.
//!
//! No memory is ever pinned or registered: `expose` records a range and a key; a page that is
//! not present when a packet arrives is answered with a page-fault NACK, brought in by the
//! page-in thread, and retransmitted after an ERR, exactly as in the spec (part.md).
//!
//! A write into a missing page costs, beyond a write into a present one, one page-fault NACK,
//! a page-in (`MADV_POPULATE_WRITE`), one ERR and the block's retransmission. What each path
//! costs: `unpinned bench live`, and docs/performance.md ("Live runtime: first costs" and the
//! sections after it).

#![warn(missing_docs)]

pub mod api;
pub mod atomics;
pub mod bootstrap;
pub mod config;
pub mod edge;
pub mod error;
pub mod fault_handler;
pub mod launch;
pub mod layer;
pub mod memory;
pub mod msg;
pub mod pmix;
pub mod pmix_job;
pub mod runtime;
pub mod trace;
pub mod transport;

/// Unit tests that unmap memory and then probe the hole must not race with other tests that
/// map memory (a new mapping could land in the hole).
#[cfg(test)]
pub(crate) static MAP_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub use api::{DriverGuard, Region, Runtime};
pub use config::{Config, ConfigError};
pub use error::{LiveError, TransportKind};
pub use layer::{EngineMemory, NoHook, TurnHook};
pub use memory::MemoryMode;
pub use runtime::RuntimeStats;
pub use unpinned_core::api::{AtomicOp, Completion, CompletionError, Op, Perms, RemoteKey, WrId};
pub use unpinned_core::os::PageInPolicy;
