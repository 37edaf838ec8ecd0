//! Deterministic discrete-event simulator for the unpinned engines.
//!
//! A heap of events ordered by (time, insertion sequence) drives sans-IO components: per node a
//! PART engine (the NI), an IOMMU model over a page-table / memory model, and the host fault
//! handler model; links with bandwidth and latency join the nodes. One master seed derives every
//! sub-seed, so the same seed gives the same trace, byte for byte ([`Sim::trace_hash`]).
//!
//! - [`memory`]: per-node address spaces with residency and real bytes, seen through the IOMMU.
//! - [`backing`]: file / swap backed ranges (major faults) and huge pages.
//! - [`pages`]: the page table behind the memory model (regions indexed by page number).
//! - [`linkbuf`]: compact storage of zero-payload packets on the links.
//! - [`net`]: topology, links and ports.
//! - [`faults`]: packet fault injection (loss, duplication, reordering, corruption, delay).
//! - [`invariants`]: checks after every step (bytes, exactly-once completion, protection).
//! - [`kernel`]: the simulation kernel (queue and clock, RNG tree, faulty links, trace hash,
//!   checkers) the worlds run on; [`vopr`]: seeded swarms of every protocol over it.
//! - [`queue`]: the event queue ((time, seq) order, a 4-ary heap).
//! - [`world`]: the event loop.
//! - [`slab`]: slot-addressed storage (the posts in flight).
//! - [`sizing`]: up-front memory estimates (node state, page-table entries), checked math.
//! - [`apps`]: applications (per-rank programs over the message layer) on the simulator.
//! - [`dsm`]: replay of DSM traces on the reference cluster's calibration.

#![warn(missing_docs)]

pub mod aa;
pub mod apps;
pub mod backing;
pub mod bench;
pub mod conformance;
pub mod dsm;
pub mod faults;
mod heap;
pub mod invariants;
pub mod kernel;
pub mod linkbuf;
pub mod memory;
pub mod net;
pub mod pages;
pub mod queue;
pub mod rc;
pub mod reclaim;
pub mod sizing;
pub mod slab;
pub mod vopr;
pub mod world;

pub use faults::FaultConfig;
pub use memory::{Residence, SimMemory};
pub use net::Topology;
pub use world::{NodeStats, PostRecord, Sim, SimConfig, SimError};
