//! Cluster-scale model of Active Access (spec active-access.md) and its baselines.
//!
//! A deterministic discrete-event model (events ordered by (time, seq), one master seed) of N
//! nodes x P processes on a 3-D torus (or the spec's 1 Gb/s Ethernet pair). Every remote
//! operation pays the network ([`platform`]: NIC message rate, link serialization, hops of
//! `Topology::Torus3d`), the target's IOMMU (5 ns + 70 ns per additional memory access, IOTLB
//! misses via `unpinned_core::iommu::Tlb`), and, for active accesses and active messages, a
//! handler on a CPU. The sans-IO pieces of `unpinned_aa` do the real work: access logs
//! (reserve/commit, back-pressure), the flush gate, notification, remote atomics, the DHT.
//!
//! Handler contention is a mechanism of the model, not a constant: handlers and application
//! code share core timelines ([`world`]), AM polls happen at operation boundaries or idle
//! ticks and AM takes each message out (header, copy-out, slot release) on the computing
//! process, AA-Poll's runtime thread and AA-SP's hardware thread handle log entries in place
//! on their own timelines (docs/aa-receive-side.md), AM-Exp skips polls after empty ones, AM-Onload dedicates C of the node's cores (and
//! loses them as application processes), interrupt schemes pay 3 us per interrupt on the
//! interrupted core.
//!
//! - [`scheme`]: the schemes and how each notifies its handler.
//! - [`platform`]: network and IOMMU resources.
//! - [`world`]: the event loop, processes, logs, handlers.
//! - [`conformance`]: the Active Access conformance scenarios on the IOMMU model (the
//!   reference the live runtime's decorator must match).
//! - [`dht`], [`counter`], [`loggets`], [`sort`], [`stream`]: the workloads of the
//!   experiments.

pub mod conformance;
pub mod counter;
pub mod dht;
pub mod loggets;
pub mod platform;
pub mod scheme;
pub mod sort;
pub mod stream;
pub mod world;

pub use scheme::Scheme;
pub use world::{AaWorld, AppOp, Handled, LogMode, RecvCpu, RunStats, Workload, WorldConfig};

#[cfg(test)]
mod recv_tests;
#[cfg(test)]
mod tests;
