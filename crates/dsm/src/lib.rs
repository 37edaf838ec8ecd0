//! The coherence protocol of a sequentially consistent, single-writer, invalidation-based
//! page DSM (spec dsm.md, "The protocol"), as a sans-IO state machine per node.
//!
//! Roles: the **requestor** (a node whose thread faulted), the **manager** of a minipage
//! (round-robin by id: `mp % nodes`; it orders requests and knows owner and copies), and the
//! **server** (a node with a valid copy, which sends the data). A fault sends a request to the
//! manager; when earlier requests for that minipage are done, the manager sends invalidations
//! to the other copies and a transfer notice to the server; invalidated nodes tell the
//! requestor; the server sends the data (or, for an upgrade, a grant); the requestor, after the
//! data and every invalidation notice, acknowledges to the manager and resumes its threads.
//!
//! Synchronous entry ([`Node::fault`]) only reads coherence state and queues the thread;
//! asynchronous entries ([`Node::handle_message`]) change protections and coherence state and
//! never block. Outputs: messages ([`Node::poll_message`]) and events ([`Node::poll_event`]:
//! protection changes for the driver to apply, threads to resume).
//!
//! Channels between two nodes must deliver in order (as the engine's control sends do).

#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod credit;
mod manager;
mod msg;
mod node;
pub mod space;
pub mod trace;

pub use msg::Msg;
pub use node::{Access, Event, FaultResult, Node};

/// A node (rank) of the DSM.
pub type NodeId = u32;
/// A minipage id.
pub type Mp = u32;
/// A thread of a node.
pub type ThreadId = u32;
