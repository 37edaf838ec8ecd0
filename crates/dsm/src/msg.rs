//! Protocol messages. Data moves in [`Msg::Data`]; a driver may carry it by RDMA write and
//! send the rest of the message as a control send.

use crate::{Mp, NodeId};

/// A protocol message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Msg {
    /// Requestor -> manager: a thread of `from` needs `mp` for reading or writing.
    Request {
        /// Minipage.
        mp: Mp,
        /// The requesting node.
        from: NodeId,
        /// Write access wanted.
        write: bool,
    },
    /// Manager -> a node with a read copy: drop it, then tell `requestor`.
    Invalidate {
        /// Minipage.
        mp: Mp,
        /// Who waits for the notice.
        requestor: NodeId,
    },
    /// Manager -> server: send `mp` to `requestor`; for a write, drop your copy afterwards,
    /// for a read, keep a read copy. `notices` invalidation notices will reach the requestor.
    Transfer {
        /// Minipage.
        mp: Mp,
        /// Destination of the data.
        requestor: NodeId,
        /// Write access granted.
        write: bool,
        /// Invalidation notices the requestor must collect.
        notices: u32,
    },
    /// Manager -> requestor that already holds a valid copy (an upgrade): no data moves.
    Grant {
        /// Minipage.
        mp: Mp,
        /// Invalidation notices to collect first.
        notices: u32,
    },
    /// Invalidated node -> requestor.
    Invalidated {
        /// Minipage.
        mp: Mp,
    },
    /// Server -> requestor: the contents.
    Data {
        /// Minipage.
        mp: Mp,
        /// Write access granted.
        write: bool,
        /// Invalidation notices to collect.
        notices: u32,
        /// The bytes.
        bytes: Vec<u8>,
    },
    /// Requestor -> manager: done; the manager may serve the next request for `mp`.
    Ack {
        /// Minipage.
        mp: Mp,
        /// The requestor.
        from: NodeId,
        /// It now holds write access.
        write: bool,
    },
}
