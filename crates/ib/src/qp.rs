//! Queue-pair state (odp.md, "RC transport"): the requester half (send queue, PSNs, ACK timer,
//! waits) and the responder half (expected PSN, RNR state, the loss model, receive queue).

use std::collections::VecDeque;

use unpinned_core::api::NodeId;
use unpinned_core::memory::Pdid;
use unpinned_core::time::Duration;

use crate::ack_timer::ScanClock;
use crate::engine::{Qpn, RecvWr, SendWr};
use crate::loss_model::LossModel;
use crate::psn::Psn;

/// Attributes of a QP (ibv_modify_qp's timer and retry fields).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpAttrs {
    /// Address space of the QP's local buffers.
    pub pdid: Pdid,
    /// 5-bit ACK timeout exponent (raised to the vendor floor by the NIC).
    pub c_ack: u8,
    /// Retransmissions after timeouts (3 bits; odp.md uses 7) before RETRY_EXC_ERR.
    pub retry_cnt: u8,
    /// RNR retries (3 bits; 7 means infinite, IB spec 9.7.5.2.8).
    pub rnr_retry: u8,
    /// Minimal RNR NAK delay this QP asks its peers to wait (rounded up to an IB timer code).
    pub min_rnr_delay: Duration,
}

impl QpAttrs {
    /// The attributes of odp.md's experiments: C_ACK 0 (so the vendor floor applies),
    /// retry count 7, infinite RNR retries, minimal RNR delay 1.28 ms.
    pub fn odp_default(pdid: Pdid) -> QpAttrs {
        QpAttrs {
            pdid,
            c_ack: 0,
            retry_cnt: 7,
            rnr_retry: 7,
            min_rnr_delay: Duration::from_us(1280),
        }
    }
}

/// Where the other end is and the initial PSNs (ibv_modify_qp to RTR / RTS).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectAttrs {
    /// Peer node.
    pub peer_node: NodeId,
    /// Peer QP number.
    pub peer_qpn: Qpn,
    /// First PSN this QP sends.
    pub sq_psn: Psn,
    /// First PSN this QP expects from the peer.
    pub rq_psn: Psn,
}

/// A posted send-queue entry.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Wqe {
    pub wr: SendWr,
    pub psn: Psn,
}

/// Why the requester is not sending.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Block {
    /// Free to send.
    None,
    /// Waiting out an RNR delay (odp.md: remote fault).
    Rnr,
    /// Halted on a local page fault until the driver resolves it (odp.md: local fault).
    LocalFault { pdid: Pdid, page: u64 },
}

/// The requester half.
#[derive(Debug)]
pub(crate) struct Requester {
    /// Posted, not yet completed, in PSN order.
    pub sq: VecDeque<Wqe>,
    /// Index in `sq` of the next entry to (re)transmit; go-back-N sets it to 0.
    pub send_idx: usize,
    /// PSN of the next new post.
    pub next_psn: Psn,
    /// Highest PSN ever transmitted (None before the first).
    pub highest_sent: Option<Psn>,
    pub block: Block,
    pub rnr_gen: u32,
    /// ACK-timer scan clock (None: timer disabled).
    pub clock: Option<ScanClock>,
    pub scanning: bool,
    pub scan_gen: u32,
    /// Scans without progress since the last progress or retransmission.
    pub strikes: u32,
    pub retries_left: u8,
    pub rnr_retries_left: u8,
}

/// The responder half.
#[derive(Debug)]
pub(crate) struct Responder {
    /// Expected PSN.
    pub epsn: Psn,
    /// Message sequence number (messages completed).
    pub msn: u32,
    /// The PSN this responder RNR-NAKed and waits to see again.
    pub rnr_pending: Option<Psn>,
    /// A PSN-sequence-error NAK was sent and the expected PSN has not arrived since
    /// (IB: one NAK per sequence error).
    pub nak_sent: bool,
    pub loss: LossModel,
    pub rq: VecDeque<RecvWr>,
}

/// One queue pair.
#[derive(Debug)]
pub(crate) struct Qp {
    pub qpn: Qpn,
    pub attrs: QpAttrs,
    pub peer: Option<ConnectAttrs>,
    pub req: Requester,
    pub resp: Responder,
    /// In the error state: posts complete at once with a flush error.
    pub error: bool,
}
