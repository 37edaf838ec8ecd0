//! The packet trace of an RC run (odp.md, `odp-trace`): one record per packet put on the wire.

use unpinned_core::api::NodeId;
use unpinned_core::time::Instant;
use unpinned_wire::rc::{NakCode, RcRepr, Syndrome};

/// One packet on the wire.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceRecord {
    /// When its first bit left the sender.
    pub at: Instant,
    /// Sender.
    pub src: NodeId,
    /// Receiver.
    pub dst: NodeId,
    /// Packet type: READ_REQ, WRITE, SEND, READ_RESP, ACK, RNR_NAK, NAK_SEQ, NAK_ERR.
    pub packet: &'static str,
    /// PSN.
    pub psn: u32,
    /// Destination QP.
    pub qpn: u32,
    /// False if the injected link faults dropped it.
    pub delivered: bool,
}

/// The packet type name of a parsed packet.
pub fn packet_name(r: &RcRepr<'_>) -> &'static str {
    match r {
        RcRepr::ReadReq { .. } => "READ_REQ",
        RcRepr::Write { .. } => "WRITE",
        RcRepr::Send { .. } => "SEND",
        RcRepr::ReadResp { .. } => "READ_RESP",
        RcRepr::Ack {
            syndrome: Syndrome::Ack,
            ..
        } => "ACK",
        RcRepr::Ack {
            syndrome: Syndrome::RnrNak { .. },
            ..
        } => "RNR_NAK",
        RcRepr::Ack {
            syndrome: Syndrome::Nak(NakCode::PsnSequenceError),
            ..
        } => "NAK_SEQ",
        RcRepr::Ack { .. } => "NAK_ERR",
    }
}
