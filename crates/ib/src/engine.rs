//! The RC engine of one node: QPs, the NIC's region table, events and the public API
//! (odp.md, "RC transport" and "ODP"). The halves live in [`crate::requester`],
//! [`crate::completer`] and [`crate::responder`].

use std::collections::VecDeque;

use rustc_hash::FxHashSet;
use unpinned_core::api::NodeId;
use unpinned_core::memory::{Memory, Pdid};
use unpinned_core::rng::{rng_for, Rng, SimRng};
use unpinned_core::time::{Duration, Instant};
use unpinned_wire::rc::{RcRepr, Syndrome};

use crate::ack_timer::{effective_c_ack, t_tr, ScanClock};
use crate::loss_model::{LossModel, LossModelConfig};
use crate::odp::{Mr, MrAttrs, OdpTable};
use crate::profile::VendorProfile;
use crate::psn::Psn;
use crate::qp::{Block, ConnectAttrs, Qp, QpAttrs, Requester, Responder};
use crate::timers::{TimerKind, Timers};

/// A queue-pair number (24 bits).
pub type Qpn = u32;

/// QP numbers start here, so that a wrong destination QP is detectable.
pub const QPN_BASE: Qpn = 0x100;

/// Operation of a send work request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IbOp {
    /// RDMA READ: remote `[remote_addr, +len)` into local `[local_addr, +len)`.
    Read,
    /// RDMA WRITE: local into remote.
    Write,
    /// SEND: local into the peer's next receive buffer.
    Send,
}

/// A send work request (one packet: `len <= mtu`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendWr {
    /// Caller's id, echoed in the completion.
    pub wr_id: u64,
    /// What to do.
    pub op: IbOp,
    /// Local buffer (in the QP's domain).
    pub local_addr: u64,
    /// Bytes.
    pub len: u32,
    /// Remote address (READ / WRITE).
    pub remote_addr: u64,
    /// Remote key (READ / WRITE).
    pub rkey: u32,
}

/// A receive work request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvWr {
    /// Caller's id.
    pub wr_id: u64,
    /// Buffer (in the QP's domain).
    pub addr: u64,
    /// Capacity.
    pub len: u32,
}

/// Operation of a completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WcOp {
    /// RDMA READ.
    Read,
    /// RDMA WRITE.
    Write,
    /// SEND.
    Send,
    /// A receive buffer was filled by a peer's SEND.
    Recv,
}

impl From<IbOp> for WcOp {
    fn from(op: IbOp) -> WcOp {
        match op {
            IbOp::Read => WcOp::Read,
            IbOp::Write => WcOp::Write,
            IbOp::Send => WcOp::Send,
        }
    }
}

/// Error completions (ibv_wc_status).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WcError {
    /// IBV_WC_RETRY_EXC_ERR: the ACK timer expired `retry_cnt + 1` times without progress.
    RetryExceeded,
    /// IBV_WC_RNR_RETRY_EXC_ERR.
    RnrRetryExceeded,
    /// IBV_WC_REM_ACCESS_ERR: key, range or permission refused at the responder.
    RemoteAccess,
    /// IBV_WC_REM_INV_REQ_ERR.
    RemoteInvalidRequest,
    /// IBV_WC_REM_OP_ERR.
    RemoteOperational,
    /// IBV_WC_LOC_PROT_ERR: the local buffer is not registered.
    LocalProtection,
    /// IBV_WC_WR_FLUSH_ERR: the QP is in the error state.
    Flushed,
}

/// A work completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkCompletion {
    /// The QP.
    pub qpn: Qpn,
    /// Caller's id.
    pub wr_id: u64,
    /// What completed.
    pub op: WcOp,
    /// Success or why not.
    pub status: Result<(), WcError>,
    /// Bytes (of a receive: bytes received).
    pub len: u32,
    /// When.
    pub at: Instant,
}

/// Which side of the connection took a network page fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FaultSide {
    /// The requester (local fault, e.g. a READ response landing on a missing page).
    Requester,
    /// The responder (remote fault; answered with an RNR NAK).
    Responder,
}

/// A page fault the driver must resolve (then call [`RcEngine::handle_page_resolved`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageFault {
    /// Side.
    pub side: FaultSide,
    /// Address space.
    pub pdid: Pdid,
    /// Page-aligned address.
    pub page: u64,
    /// QP that hit it.
    pub qpn: Qpn,
}

/// What the engine tells its host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A work request finished (exactly once per posted request).
    Completion(WorkCompletion),
    /// A page fault to resolve (one per page until it is resolved).
    PageFault(PageFault),
}

/// A packet ready to go: `len` bytes at the start of the caller's buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transmit {
    /// Destination node.
    pub dst: NodeId,
    /// Bytes written.
    pub len: usize,
}

/// Why a post was refused (no completion follows).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PostError {
    /// No such QP.
    #[error("no such QP")]
    NoSuchQp,
    /// Longer than one MTU (the model sends single-packet messages only).
    #[error("message longer than the MTU")]
    TooLong,
    /// The QP is not connected.
    #[error("QP not connected")]
    NotConnected,
}

/// Engine parameters (from a vendor profile).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RcConfig {
    /// Vendor floor on C_ACK.
    pub c_ack_floor: u8,
    /// Scans of the ACK timer before expiry.
    pub scans_to_expire: u32,
    /// Actual RNR wait / configured minimum.
    pub rnr_delay_factor: f64,
    /// The ODP loss model.
    pub loss_model: LossModelConfig,
    /// Largest message, bytes.
    pub mtu: u32,
}

impl RcConfig {
    /// The parameters of a vendor profile.
    pub fn from_profile(p: &VendorProfile) -> RcConfig {
        RcConfig {
            c_ack_floor: p.timer.c_ack_floor,
            scans_to_expire: p.timer.scans_to_expire,
            rnr_delay_factor: p.odp.rnr_delay_factor,
            loss_model: p.odp.loss_model,
            mtu: p.net.mtu_bytes,
        }
    }
}

/// Counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RcStats {
    /// Request packets sent (first transmissions and retransmissions).
    pub requests_sent: u64,
    /// Of which retransmissions.
    pub retransmissions: u64,
    /// ACK-timer expiries.
    pub timeouts: u64,
    /// RNR NAKs sent / received.
    pub rnr_naks_sent: u64,
    /// RNR NAKs received.
    pub rnr_naks_received: u64,
    /// PSN-sequence-error NAKs sent.
    pub seq_naks_sent: u64,
    /// PSN-sequence-error NAKs received.
    pub seq_naks_received: u64,
    /// Requests discarded by the loss model.
    pub loss_model_discards: u64,
    /// Local (requester) faults.
    pub local_faults: u64,
    /// Remote (responder) faults.
    pub remote_faults: u64,
    /// Responses dropped while halted on a local fault (or for a faulting buffer).
    pub responses_dropped: u64,
    /// Out-of-sequence requests dropped silently.
    pub out_of_sequence_dropped: u64,
    /// Packets that did not parse (bad ICRC included).
    pub bad_packets: u64,
    /// Packets for an unknown QP or from the wrong node.
    pub misdirected: u64,
}

/// A responder packet waiting to go.
#[derive(Debug)]
pub(crate) enum Out {
    Ack {
        psn: Psn,
        msn: u32,
        syndrome: Syndrome,
    },
    ReadResp {
        psn: Psn,
        msn: u32,
        data: Vec<u8>,
    },
}

/// The RC engine of one node (sans-IO; see the crate docs for the contract).
pub struct RcEngine {
    pub(crate) node: NodeId,
    pub(crate) cfg: RcConfig,
    pub(crate) qps: Vec<Qp>,
    pub(crate) odp: OdpTable,
    /// Responder packets, in order, with the QP index that sends them.
    pub(crate) out: VecDeque<(u32, Out)>,
    pub(crate) events: VecDeque<Event>,
    pub(crate) timers: Timers,
    pub(crate) rng: SimRng,
    pub(crate) stats: RcStats,
    pub(crate) rr: usize,
    pub(crate) faults_pending: FxHashSet<(Pdid, u64)>,
    pub(crate) scratch: Vec<u8>,
}

impl RcEngine {
    /// A new engine for `node`; `seed` drives the ACK-timer scan phases.
    pub fn new(node: NodeId, cfg: RcConfig, seed: u64) -> RcEngine {
        RcEngine {
            node,
            cfg,
            qps: Vec::new(),
            odp: OdpTable::new(node.wrapping_add(1)),
            out: VecDeque::new(),
            events: VecDeque::new(),
            timers: Timers::default(),
            rng: rng_for(seed, &format!("rc-engine-{node}")),
            stats: RcStats::default(),
            rr: 0,
            faults_pending: FxHashSet::default(),
            scratch: vec![0; cfg.mtu as usize],
        }
    }

    /// This node.
    pub fn node(&self) -> NodeId {
        self.node
    }
    /// Counters.
    pub fn stats(&self) -> RcStats {
        self.stats
    }
    /// The configuration.
    pub fn config(&self) -> &RcConfig {
        &self.cfg
    }

    /// Register a memory region (explicit or implicit, pinned or ODP).
    pub fn register_mr(&mut self, attrs: MrAttrs) -> Option<Mr> {
        self.odp.register(attrs)
    }

    /// Create a QP. The ACK timer uses `max(c_ack, floor)` (odp.md); its scan phase is drawn
    /// from the engine's seeded generator.
    pub fn create_qp(&mut self, attrs: QpAttrs) -> Qpn {
        let qpn = QPN_BASE + self.qps.len() as u32;
        let clock =
            t_tr(effective_c_ack(attrs.c_ack, self.cfg.c_ack_floor)).map(|period| ScanClock {
                period,
                phase: Duration(self.rng.gen_range(0..period.0.max(1))),
            });
        self.qps.push(Qp {
            qpn,
            attrs,
            peer: None,
            req: Requester {
                sq: VecDeque::new(),
                send_idx: 0,
                next_psn: Psn::new(0),
                highest_sent: None,
                block: Block::None,
                rnr_gen: 0,
                clock,
                scanning: false,
                scan_gen: 0,
                strikes: 0,
                retries_left: attrs.retry_cnt.min(7),
                rnr_retries_left: attrs.rnr_retry.min(7),
            },
            resp: Responder {
                epsn: Psn::new(0),
                msn: 0,
                rnr_pending: None,
                nak_sent: false,
                loss: LossModel::new(self.cfg.loss_model),
                rq: VecDeque::new(),
            },
            error: false,
        });
        qpn
    }

    /// Connect a QP to its peer (RTR + RTS).
    pub fn connect(&mut self, qpn: Qpn, c: ConnectAttrs) -> Result<(), PostError> {
        let qp = self.qp_mut(qpn).ok_or(PostError::NoSuchQp)?;
        qp.peer = Some(c);
        qp.req.next_psn = c.sq_psn;
        qp.resp.epsn = c.rq_psn;
        Ok(())
    }

    /// The ACK-timer scan clock of a QP (None: disabled).
    pub fn scan_clock(&self, qpn: Qpn) -> Option<ScanClock> {
        self.qp(qpn).and_then(|q| q.req.clock)
    }

    /// Post a send work request. A QP in the error state completes it at once with a flush
    /// error.
    pub fn post_send(&mut self, now: Instant, qpn: Qpn, wr: SendWr) -> Result<(), PostError> {
        let mtu = self.cfg.mtu;
        let qp = self.qp_mut(qpn).ok_or(PostError::NoSuchQp)?;
        if qp.peer.is_none() {
            return Err(PostError::NotConnected);
        }
        if wr.len > mtu {
            return Err(PostError::TooLong);
        }
        if qp.error {
            self.events.push_back(Event::Completion(WorkCompletion {
                qpn,
                wr_id: wr.wr_id,
                op: wr.op.into(),
                status: Err(WcError::Flushed),
                len: 0,
                at: now,
            }));
            return Ok(());
        }
        let psn = qp.req.next_psn;
        qp.req.next_psn = psn.next();
        qp.req.sq.push_back(crate::qp::Wqe { wr, psn });
        Ok(())
    }

    /// Post a receive buffer (consumed by the peer's SENDs).
    pub fn post_recv(&mut self, now: Instant, qpn: Qpn, wr: RecvWr) -> Result<(), PostError> {
        let qp = self.qp_mut(qpn).ok_or(PostError::NoSuchQp)?;
        if qp.error {
            self.events.push_back(Event::Completion(WorkCompletion {
                qpn,
                wr_id: wr.wr_id,
                op: WcOp::Recv,
                status: Err(WcError::Flushed),
                len: 0,
                at: now,
            }));
            return Ok(());
        }
        qp.resp.rq.push_back(wr);
        Ok(())
    }

    /// Requests of a QP posted and not yet completed.
    pub fn outstanding(&self, qpn: Qpn) -> usize {
        self.qp(qpn).map_or(0, |q| q.req.sq.len())
    }

    /// A packet arrived from node `src`. Bad packets (ICRC included) are dropped silently, as
    /// are packets for an unknown QP or from a node that is not the QP's peer.
    pub fn handle_packet(&mut self, now: Instant, src: NodeId, bytes: &[u8], mem: &mut dyn Memory) {
        let repr = match RcRepr::parse(bytes) {
            Ok(r) => r,
            Err(_) => {
                self.stats.bad_packets += 1;
                return;
            }
        };
        let (qpn, psn) = repr.qpn_psn();
        let Some(qi) = self.qp_index(qpn) else {
            self.stats.misdirected += 1;
            return;
        };
        if self.qps[qi].peer.map(|p| p.peer_node) != Some(src) {
            self.stats.misdirected += 1;
            return;
        }
        let psn = Psn::new(psn);
        match repr {
            RcRepr::ReadReq { va, rkey, len, .. } => self.on_request(
                now,
                qi,
                psn,
                crate::responder::Req::Read { va, rkey, len },
                mem,
            ),
            RcRepr::Write {
                va, rkey, payload, ..
            } => self.on_request(
                now,
                qi,
                psn,
                crate::responder::Req::Write { va, rkey, payload },
                mem,
            ),
            RcRepr::Send { payload, .. } => {
                self.on_request(now, qi, psn, crate::responder::Req::Send { payload }, mem)
            }
            RcRepr::ReadResp { payload, .. } => {
                self.on_response(now, qi, psn, crate::completer::Resp::ReadResp(payload), mem)
            }
            RcRepr::Ack { syndrome, .. } => {
                self.on_response(now, qi, psn, crate::completer::Resp::Ack(syndrome), mem)
            }
        }
    }

    /// The time returned by [`RcEngine::poll_timeout`] has come.
    pub fn handle_timeout(&mut self, now: Instant) {
        while let Some(k) = self.timers.pop_due(now) {
            match k {
                TimerKind::AckScan { qp, gen } => self.on_scan(now, qp as usize, gen),
                TimerKind::RnrDone { qp, gen } => {
                    let q = &mut self.qps[qp as usize].req;
                    if q.rnr_gen == gen && q.block == Block::Rnr {
                        q.block = Block::None;
                    }
                }
            }
        }
    }

    /// The driver resolved a page fault: the NIC translates the page now, and requester QPs
    /// halted on it resume (replaying from the faulting request, odp.md "local fault").
    pub fn handle_page_resolved(&mut self, _now: Instant, pdid: Pdid, page: u64) {
        self.faults_pending.remove(&(pdid, page));
        self.odp.resolve(pdid, page);
        for q in &mut self.qps {
            if q.req.block == (Block::LocalFault { pdid, page }) {
                q.req.block = Block::None;
            }
        }
    }

    /// The OS is about to move or reclaim a page: flush the NIC's translation (odp.md, "ODP").
    /// Returns false for a pinned page (the OS may not move it).
    pub fn invalidate(&mut self, pdid: Pdid, page: u64) -> bool {
        self.odp.invalidate(pdid, page)
    }

    /// True if the NIC translates the page now.
    pub fn is_mapped(&self, pdid: Pdid, page: u64) -> bool {
        self.odp.is_mapped(pdid, page)
    }

    /// The next packet to send, written into `buf` (at least `mtu + 64` bytes). Responder
    /// packets go first, then requester QPs round-robin.
    pub fn poll_transmit(
        &mut self,
        now: Instant,
        buf: &mut [u8],
        mem: &mut dyn Memory,
    ) -> Option<Transmit> {
        if let Some((qi, o)) = self.out.pop_front() {
            let qp = &self.qps[qi as usize];
            let peer = qp.peer?;
            let repr = match &o {
                Out::Ack { psn, msn, syndrome } => RcRepr::Ack {
                    dest_qpn: peer.peer_qpn,
                    psn: psn.get(),
                    msn: *msn,
                    syndrome: *syndrome,
                },
                Out::ReadResp { psn, msn, data } => RcRepr::ReadResp {
                    dest_qpn: peer.peer_qpn,
                    psn: psn.get(),
                    msn: *msn,
                    payload: data,
                },
            };
            let len = repr.emit(buf).ok()?;
            return Some(Transmit {
                dst: peer.peer_node,
                len,
            });
        }
        let n = self.qps.len();
        for k in 0..n {
            let qi = (self.rr + k) % n;
            if let Some(t) = self.requester_transmit(now, qi, buf, mem) {
                self.rr = (qi + 1) % n.max(1);
                return Some(t);
            }
        }
        None
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// The next deadline (may be early: stale timers are discarded when they fire).
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.peek()
    }

    pub(crate) fn qp_index(&self, qpn: Qpn) -> Option<usize> {
        let i = qpn.checked_sub(QPN_BASE)? as usize;
        (i < self.qps.len()).then_some(i)
    }
    fn qp(&self, qpn: Qpn) -> Option<&Qp> {
        self.qp_index(qpn).map(|i| &self.qps[i])
    }
    fn qp_mut(&mut self, qpn: Qpn) -> Option<&mut Qp> {
        self.qp_index(qpn).map(|i| &mut self.qps[i])
    }

    /// Report a page fault once per page until it is resolved.
    pub(crate) fn raise_fault(&mut self, side: FaultSide, qi: usize, page: u64) {
        let pdid = self.qps[qi].attrs.pdid;
        match side {
            FaultSide::Requester => self.stats.local_faults += 1,
            FaultSide::Responder => self.stats.remote_faults += 1,
        }
        if self.faults_pending.insert((pdid, page)) {
            let qpn = self.qps[qi].qpn;
            self.events.push_back(Event::PageFault(PageFault {
                side,
                pdid,
                page,
                qpn,
            }));
        }
    }

    /// Complete the oldest send-queue entry.
    pub(crate) fn complete_front(&mut self, now: Instant, qi: usize, status: Result<(), WcError>) {
        let qp = &mut self.qps[qi];
        if let Some(w) = qp.req.sq.pop_front() {
            qp.req.send_idx = qp.req.send_idx.saturating_sub(1);
            let len = if status.is_ok() { w.wr.len } else { 0 };
            self.events.push_back(Event::Completion(WorkCompletion {
                qpn: qp.qpn,
                wr_id: w.wr.wr_id,
                op: w.wr.op.into(),
                status,
                len,
                at: now,
            }));
        }
    }

    /// Move the QP to the error state: the oldest request fails with `err`, the rest (and the
    /// receive queue) are flushed.
    pub(crate) fn fail_qp(&mut self, now: Instant, qi: usize, err: WcError) {
        self.complete_front(now, qi, Err(err));
        while !self.qps[qi].req.sq.is_empty() {
            self.complete_front(now, qi, Err(WcError::Flushed));
        }
        let qp = &mut self.qps[qi];
        qp.error = true;
        qp.req.scanning = false;
        qp.req.scan_gen += 1;
        while let Some(r) = qp.resp.rq.pop_front() {
            self.events.push_back(Event::Completion(WorkCompletion {
                qpn: qp.qpn,
                wr_id: r.wr_id,
                op: WcOp::Recv,
                status: Err(WcError::Flushed),
                len: 0,
                at: now,
            }));
        }
    }
}
