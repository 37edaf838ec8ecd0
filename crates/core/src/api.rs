//! Types shared by every transport: node ids, work requests, completions, fault records.

use crate::memory::Pdid;
use crate::time::Instant;

/// A node (NI) in the network. The simulator numbers them from 0; the live runtime uses ranks.
pub type NodeId = u32;

/// The caller's handle of a work request, echoed in its completion.
pub type WrId = u64;

/// Permissions of an exposed range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Perms {
    /// Remote writes (and read responses landing here) allowed.
    pub write: bool,
    /// Remote reads allowed.
    pub read: bool,
}

impl Perms {
    /// Read and write.
    pub const RW: Perms = Perms {
        write: true,
        read: true,
    };
    /// Read only.
    pub const R: Perms = Perms {
        write: false,
        read: true,
    };
    /// Write only.
    pub const W: Perms = Perms {
        write: true,
        read: false,
    };
}

/// The key a target hands to its peers for one exposed range (checked on every access).
pub type RemoteKey = u32;

/// A one-sided operation posted by the local process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkRequest {
    /// Echoed in the completion.
    pub wr_id: WrId,
    /// Write (local -> remote) or read (remote -> local).
    pub op: Op,
    /// The other node.
    pub peer: NodeId,
    /// Local address space (process) of the buffer.
    pub local_pdid: Pdid,
    /// Local virtual address.
    pub local_addr: u64,
    /// Remote address space (process) at the peer.
    pub remote_pdid: Pdid,
    /// Remote virtual address.
    pub remote_addr: u64,
    /// Key of the remote exposed range.
    pub rkey: RemoteKey,
    /// Length in bytes (may be 0).
    pub len: u64,
}

/// Kind of one-sided operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// RDMA write: local buffer to remote memory.
    Write,
    /// RDMA read: remote memory to local buffer.
    Read,
}

/// A remote atomic on a 64-bit word (issue 5: the RMA baselines of Active Access), the one
/// definition every layer uses: the wire (`part`), the live runtime, the C API, and the
/// Active Access models and use cases (`unpinned_aa::atomics` re-exports it).
///
/// Convention: like every remote atomic (and the verbs these model), an operation returns
/// the word's *previous* value; [`AtomicOp::apply`] updates the word in place and returns
/// that previous value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtomicOp {
    /// Write `new` if the word equals `expected`.
    Cas {
        /// Value the word must hold.
        expected: u64,
        /// Value written on success.
        new: u64,
    },
    /// Add (wrapping).
    FetchAdd(u64),
    /// Replace unconditionally (fetch-and-replace).
    Swap(u64),
}

impl AtomicOp {
    /// Apply to `word`: update it and return its previous value (what the requester gets).
    pub fn apply(self, word: &mut u64) -> u64 {
        let old = *word;
        *word = match self {
            AtomicOp::Cas { expected, new } => {
                if old == expected {
                    new
                } else {
                    old
                }
            }
            AtomicOp::FetchAdd(d) => old.wrapping_add(d),
            AtomicOp::Swap(v) => v,
        };
        old
    }

    /// The same operation as one atomic instruction on a word other threads may update
    /// concurrently (sequentially consistent); returns the previous value.
    pub fn apply_atomic(self, word: &std::sync::atomic::AtomicU64) -> u64 {
        use std::sync::atomic::Ordering::SeqCst;
        match self {
            AtomicOp::Cas { expected, new } => {
                match word.compare_exchange(expected, new, SeqCst, SeqCst) {
                    Ok(v) | Err(v) => v,
                }
            }
            AtomicOp::FetchAdd(d) => word.fetch_add(d, SeqCst),
            AtomicOp::Swap(v) => word.swap(v, SeqCst),
        }
    }
}

/// How a work request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CompletionError {
    /// The target refused the access: outside any exposed range, wrong key, wrong permission,
    /// unknown PDID, or unmapped memory there. Nothing was written.
    #[error("remote access error: the target refused the access (range, key, permission or PDID)")]
    RemoteAccess,
    /// The local buffer is not mapped (or the local PDID is unknown).
    #[error("local access error: the local buffer is not mapped")]
    LocalAccess,
    /// The peer stopped answering: retries exhausted.
    #[error("retry count exceeded: the peer did not answer")]
    RetryExceeded,
    /// The request itself is invalid (e.g. address range wraps around).
    #[error("invalid work request")]
    Invalid,
    /// The application cancelled the request (`cancel_all`) before it finished: the engine
    /// no longer touches its buffers; how much of it reached the peer is unknown.
    #[error(
        "cancelled: the request was withdrawn before it finished (its buffers are no longer used)"
    )]
    Cancelled,
    /// The peer is gone: its process exited or was killed, or it closed its runtime. The
    /// driver knows this from outside the protocol (PART alone sees only silence,
    /// `RetryExceeded`).
    #[error("peer gone: the target rank exited, was killed or left the job")]
    PeerGone,
}

/// A finished work request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// The caller's id.
    pub wr_id: WrId,
    /// What it was.
    pub op: Op,
    /// Success or why not.
    pub status: Result<(), CompletionError>,
    /// Bytes moved (the full length on success).
    pub len: u64,
    /// When the engine completed it.
    pub at: Instant,
}

/// Which side of a transfer took a fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FaultSide {
    /// The receiving side (destination of data): page-fault NACK + ERR path.
    Destination,
    /// The sending side (source of data): the engine suspends the block until resolved.
    Source,
}

/// Identifies one transfer on the wire: the node that sends its data, its id there, and
/// whether it is a read response.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TransferKey {
    /// Node that sends the data packets of the transfer.
    pub data_src: NodeId,
    /// Node that receives them.
    pub data_dst: NodeId,
    /// Id chosen by the initiator of the operation.
    pub id: u32,
    /// True for the data of an RDMA read (sent by the read's target).
    pub read_response: bool,
}

/// One entry of the NI fault FIFO (part.md, mechanism 3): what failed, where.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultRecord {
    /// Which side faulted.
    pub side: FaultSide,
    /// The transfer.
    pub transfer: TransferKey,
    /// Block index within the transfer.
    pub block: u32,
    /// Attempt (sequence number) of the block that faulted.
    pub block_seq: u16,
    /// Address space at the faulting node.
    pub pdid: Pdid,
    /// Page-aligned address that is missing.
    pub page_addr: u64,
    /// Virtual range of the faulting block at the faulting node, `[start, end)`.
    pub block_range: (u64, u64),
    /// Virtual range of the whole transfer at the faulting node, `[start, end)`.
    pub transfer_range: (u64, u64),
}
