//! Active Access (spec active-access.md): puts and gets on marked pages are logged by the IOMMU
//! into per-process access logs and processed by handlers at the target, with no change to the
//! put/get interface.
//!
//! Sans-IO like the rest of the core: no clocks, threads, sockets or global RNG. Time is passed
//! in as [`unpinned_core::time::Instant`]; memory is reached through [`memory::ByteMemory`].
//!
//! - [`pte`]: the extended page-table entry (IUID, WL/WLD/RL/RLD/E beside W/R) and what each
//!   bit combination does to a put or a get.
//! - [`log`]: the access log, a ring buffer with reserve/commit (whole-entry publication) and
//!   back-pressure instead of overwrite.
//! - [`reassembly`]: multi-packet puts from several sources, interleaved, per (source, txn).
//! - [`access`]: the decision for one put or get packet, once for every driver.
//! - [`iommu`]: the extended IOMMU of one node: page bits, the access-log table, the logs.
//! - [`notify`]: handler notification (interrupt with threshold/period, polling, scratchpad).
//! - [`flush`]: active flush (a held get on the flushing page) and the reply-based alternative.
//! - [`atomics`]: remote atomics (CAS, fetch-and-add, fetch-and-replace) at the target.
//! - [`dht`], [`counter`], [`loggets`], [`checkpoint`], [`sort`]: the use cases.
//! - [`profile`]: the platform calibration (`profiles/cray-xe6.toml`).

#![warn(missing_docs)]

pub mod access;
pub mod atomics;
pub mod checkpoint;
pub mod counter;
pub mod dht;
pub mod flush;
pub mod iommu;
pub mod log;
pub mod loggets;
pub mod memory;
pub mod notify;
pub mod profile;
pub mod pte;
pub mod reassembly;
pub mod sort;

pub use iommu::AaIommu;
pub use log::{AccessLog, Backpressure, EntryHeader, EntryKind, LogEntry};
pub use pte::{GetAction, Iuid, PageBits, PutAction};
