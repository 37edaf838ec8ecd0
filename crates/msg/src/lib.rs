//! Sans-IO message passing over one-sided RDMA (the way MPI libraries run over RDMA NICs).
//!
//! An [`Endpoint`] per node turns `isend` / `irecv` into RDMA work requests and turns their
//! completions and what lands in its memory into message events:
//!
//! - **Eager** (`len <= eager_max_bytes`): the payload is written from the user's buffer into
//!   one of the receiver's pre-exposed per-peer slots; once that write completed (every block
//!   acknowledged, so the bytes are in the receiver's memory), a second write puts the slot's
//!   header (the doorbell, with the per-pair sequence number) in place. A PART transfer may
//!   land its blocks in any order, so a flag at the end of the payload would not be safe: the
//!   header is written only after the payload's completion.
//! - **Rendezvous** (larger): the header alone is a request to send (RTS) naming the sender's
//!   buffer; the receiver, once a matching receive is posted, reads the payload straight into
//!   the user's buffer with an RDMA read, then writes a FIN word into the sender's region.
//! - **Flow control**: `slots_per_peer` credits per pair; the receiver returns consumed counts
//!   by writing a credit word into the sender's region.
//! - **Order**: per pair, messages are matched strictly in sequence order with receives in
//!   posting order (MPI's non-overtaking rule for one (source, tag) stream; a tag that does not
//!   match is reported as an error, not reordered).
//!
//! Every counter word (credit, FIN) has at most one write in flight per peer, so a late packet
//! of an older write can never land over a newer value. The layer never reads a clock; the
//! host's memory is reached through [`HostMem`], the NI's through the work requests it emits.

#![warn(missing_docs)]

mod config;
mod endpoint;
mod header;
mod inflight;
mod layout;

pub use config::MsgConfig;
pub use endpoint::{Endpoint, HostMem, MsgEvent, MsgStats, PeerInfo, RecvDone, RecvError};
pub use header::{Header, Kind, HEADER_BYTES};
pub use layout::Layout;

/// A request refused by the layer (nothing was started).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MsgError {
    /// The peer is not one of the endpoint's peers.
    #[error("node {0} is not a peer of this endpoint")]
    UnknownPeer(u32),
    /// Address + length overflows.
    #[error("buffer range overflows the address space")]
    BadRange,
    /// The configuration is impossible.
    #[error("bad message-layer configuration: {0}")]
    BadConfig(&'static str),
    /// A request id is already in use.
    #[error("request id {0} is already outstanding")]
    DuplicateId(u64),
}
