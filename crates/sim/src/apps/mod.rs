//! Applications on the simulator: per-rank programs (crate `unpinned-traffic`) run over the
//! message layer (crate `unpinned-msg`) on PART engines, one rank per node.
//!
//! - [`host`]: the host CPU's access to memory for the message layer (minor faults, copies).
//! - [`driver`]: the loop that interleaves rank programs with the simulator's events.
//! - `parallel`: the window-synchronous parallel run over partitions of the nodes.
//! - [`barrier`]: the window barrier (spin, then park).
//! - [`conformance`]: the message-layer conformance scenarios on endpoints over the simulator.

pub mod barrier;
pub mod conformance;
pub mod driver;
pub mod host;
mod parallel;

pub use driver::{run_app, AppResult, AppSimConfig, BufferMode};
