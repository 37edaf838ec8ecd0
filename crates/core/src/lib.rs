//! The sans-IO protocol core of unpinned: what every transport shares.
//!
//! The transports themselves live in their own crates (`unpinned-part`, ...).
//!
//! Pure state machines: no clock reads, no threads, no sockets, no global RNG. Inputs arrive
//! through `handle_*`, commands through `post_*`, outputs leave through `poll_*`; time is our
//! own [`time::Instant`] passed in; memory is reached through the injected [`memory::Memory`].
//!
//! - [`iommu`]: the IOMMU model (TLBs, walks, faults).
//! - [`os`]: the host OS model of the fault path (interrupts, page-in task, policies) and the
//!   CPU cost models of the Touch and Pin schemes.
//! - [`profile`]: platform cost profiles.

#![warn(missing_docs)]

pub mod api;
pub mod iommu;
pub mod memory;
pub mod os;
pub mod profile;
pub mod rng;
pub mod time;
