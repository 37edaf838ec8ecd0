//! InfiniBand Reliable Connection with On-Demand Paging (spec odp.md): the incumbent PART is
//! measured against, as a second transport of the same sans-IO core.
//!
//! # The handle / poll contract
//!
//! [`RcEngine`] is the NIC of one node, a pure state machine like `unpinned_part::PartEngine`:
//!
//! - **commands** `create_qp` / `connect`, `register_mr`, `post_send`, `post_recv`, and from
//!   the host's driver / OS `handle_page_resolved` (an ODP fault is resolved) and `invalidate`
//!   (the OS moves a page: flush the NIC's translation);
//! - **inputs** `handle_packet`, `handle_timeout`;
//! - **outputs** `poll_transmit` (into a caller buffer), `poll_event` (completions and page
//!   faults for the driver), `poll_timeout`.
//!
//! No clock, thread, socket or global RNG: time is passed in, memory is the injected
//! [`unpinned_core::memory::Memory`], randomness (the ACK-timer scan phases) comes from a seed.
//!
//! # Layout
//! - [`psn`]: 24-bit PSN arithmetic; [`rnr`]: the RNR timer codes.
//! - [`ack_timer`]: `T_tr`, the vendor floor, and the scan that detects a timeout.
//! - [`timers`]: the deadline table.
//! - [`qp`]: queue-pair state; [`requester`]: sending and the ACK timer; [`completer`]: ACKs,
//!   NAKs and READ responses at the requester; [`responder`]: requests at the responder.
//! - [`odp`]: regions (explicit / implicit, pinned / ODP) and the NIC's translations.
//! - [`loss_model`]: the observed loss behaviour of the ODP path, switchable.
//! - [`fix`]: the software-timer fix.
//! - [`profile`]: ConnectX vendor profiles (`profiles/connectx{3,4,5,6}.toml`).

#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod ack_timer;
pub mod completer;
pub mod engine;
pub mod fix;
pub mod loss_model;
pub mod odp;
pub mod profile;
pub mod psn;
pub mod qp;
pub mod requester;
pub mod responder;
pub mod rnr;
pub mod timers;

#[cfg(test)]
mod tests;

pub use engine::{
    Event, FaultSide, IbOp, PageFault, PostError, Qpn, RcConfig, RcEngine, RcStats, RecvWr, SendWr,
    Transmit, WcError, WcOp, WorkCompletion,
};
pub use fix::{FixConfig, SoftwareTimerFix};
pub use loss_model::LossModelConfig;
pub use odp::{Mr, MrAttrs, Region};
pub use profile::VendorProfile;
pub use psn::Psn;
pub use qp::{ConnectAttrs, QpAttrs};
