//! The PART transport (spec part.md): an RDMA engine that never pins memory.
//!
//! # The handle / poll contract
//!
//! [`PartEngine`] is the NI of one node, a pure state machine in the style of quinn-proto:
//!
//! - **commands** `post_write`, `post_read` (the user's work requests), `post_err` (the host's
//!   page-in task asks for a retransmission), `expose` / `revoke` (what peers may access);
//! - **inputs** `handle_packet` (a packet from a peer), `handle_timeout` (the time returned by
//!   `poll_timeout` has come), `handle_source_resolved` (a local page-in finished);
//! - **outputs** `poll_transmit` (the next packet, written into a caller-owned buffer),
//!   `poll_event` (completions and fault-FIFO records), `poll_timeout` (the next deadline).
//!
//! Memory is reached only through the injected [`Memory`](unpinned_core::memory::Memory) given
//! to `handle_packet` and `poll_transmit`. A missing page never blocks: at the destination it
//! becomes a page-fault NACK plus a fault record for the host (mechanism 3); at the source the
//! block is suspended until the host resolves the fault (mechanism 10).
//!
//! After every input, the driver drains `poll_transmit` (as link capacity allows), `poll_event`,
//! and re-reads `poll_timeout`.
//!
//! # Layout
//! - [`requester`]: transfers whose data this node sends (writes it initiated, reads it serves):
//!   segmentation into blocks and packets, the outstanding-block window, retransmission.
//! - [`responder`]: data arriving here: protection checks, memory writes, ACK / NACK, fault
//!   records; read requests.
//! - [`completer`]: reads this node initiated: reassembly bookkeeping and completions.
//! - [`exposure`]: the ranges this node exposes, with keys and permissions.
//! - [`timers`]: deadlines with lazy invalidation.
//! - [`bitmap`]: which packets of a block arrived (the first 64 bits inline).
//! - [`atomics`]: remote atomics (CAS, fetch-and-add, swap): execute-once at the target,
//!   resend on timeout or ERR at the initiator.
//! - [`cancel`]: requests ended from outside the protocol: withdrawn by the host
//!   (`cancel`), or towards a peer the host knows is gone (`fail_peer`).

#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod atomics;
pub mod bitmap;
pub mod cancel;
pub mod completer;
pub mod config;
pub mod engine;
pub mod exposure;
pub mod requester;
pub mod responder;
mod rxtable;
pub mod timers;

pub use atomics::{AtomicRequest, ATOMIC_BLOCK};
pub use config::EngineConfig;
pub use engine::{EngineStats, Event, PartEngine, PostError, Transmit};
