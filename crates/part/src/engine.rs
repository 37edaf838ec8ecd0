//! The engine: state shared by the requester, responder and completer, and the public API.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;
use unpinned_core::api::{
    Completion, CompletionError, FaultRecord, NodeId, Op, Perms, RemoteKey, TransferKey,
    WorkRequest,
};
use unpinned_core::memory::{Memory, Pdid};
use unpinned_core::time::Instant;
use unpinned_wire::{Checksum, PartRepr, WireError};

use crate::completer::PendingRead;
use crate::config::EngineConfig;
use crate::exposure::Exposures;
use crate::requester::TxTransfer;
use crate::rxtable::RxTable;
use crate::timers::{TimerKind, Timers};

/// Something the engine tells its host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A work request finished (exactly once per posted request).
    Completion(Completion),
    /// The NI logged a failed block in its fault FIFO (one record per block attempt): the host's
    /// page-in task must bring the page(s) in and then call `post_err` (destination faults) or
    /// `handle_source_resolved` (source faults).
    Fault(FaultRecord),
}

/// A packet ready to go: `len` bytes were written at the start of the caller's buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transmit {
    /// Destination node.
    pub dst: NodeId,
    /// Bytes written.
    pub len: usize,
    /// True for data packets (false for ACK / NACK / ERR / read requests).
    pub is_data: bool,
}

/// Why a post was refused (the request never entered the engine; no completion follows).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PostError {
    /// Address + length overflows, or the transfer has more blocks than ids allow.
    #[error("invalid work request: address range overflows or is too long")]
    InvalidRange,
    /// A read to oneself.
    #[error("invalid work request: peer is this node")]
    SelfPeer,
}

/// Counters, for experiments and diagnostics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EngineStats {
    /// Data packets sent.
    pub data_packets_sent: u64,
    /// Data payload bytes sent, first attempts.
    pub data_bytes_sent: u64,
    /// Data payload bytes sent again (retransmissions).
    pub data_bytes_resent: u64,
    /// Control packets sent (ACK, NACK, ERR, read requests).
    pub ctrl_packets_sent: u64,
    /// Block retransmissions caused by an ERR.
    pub retransmits_err: u64,
    /// Block retransmissions caused by a timeout.
    pub retransmits_timeout: u64,
    /// Block retransmissions caused by a CRC NACK.
    pub retransmits_crc: u64,
    /// Page-fault NACKs sent (destination faults seen).
    pub nacks_fault_sent: u64,
    /// CRC NACKs sent.
    pub nacks_crc_sent: u64,
    /// Protection NACKs sent.
    pub nacks_protection_sent: u64,
    /// ERRs sent.
    pub errs_sent: u64,
    /// ERRs received.
    pub errs_received: u64,
    /// Source-side faults (blocks suspended).
    pub source_faults: u64,
    /// Packets dropped as stale (older attempt) or duplicate.
    pub stale_dropped: u64,
    /// Packets dropped as malformed or inconsistent.
    pub malformed_dropped: u64,
    /// Read requests resent after a silent peer.
    pub read_requests_resent: u64,
    /// Block retransmissions started by a SACK (selective policy: the missing packets).
    pub retransmits_sack: u64,
    /// SACKs sent (selective policy: answers to polls of incomplete blocks).
    pub sacks_sent: u64,
}

/// A control packet waiting to be sent.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Ctrl {
    Ack {
        transfer: TransferKey,
        block: u32,
        seq: u16,
    },
    Nack {
        transfer: TransferKey,
        block: u32,
        seq: u16,
        reason: unpinned_wire::NackReason,
        addr: u64,
    },
    Err {
        transfer: TransferKey,
        block: u32,
        seq: u16,
    },
    /// The packets of a block held here (read from the receive state when sent).
    Sack {
        transfer: TransferKey,
        block: u32,
    },
    ReadReq {
        id: u32,
    },
    AtomicReq {
        id: u32,
    },
    AtomicResp {
        id: u32,
        status: unpinned_wire::AtomicStatus,
        old: u64,
    },
}

/// The PART engine of one node (see the crate docs for the contract).
pub struct PartEngine {
    pub(crate) node: NodeId,
    pub(crate) cfg: EngineConfig,
    pub(crate) exposures: Exposures,
    /// Transfers whose data we send, in a slab; `tx_index` finds them by wire key.
    pub(crate) tx: Vec<Option<TxTransfer>>,
    pub(crate) tx_gen: Vec<u32>,
    pub(crate) tx_free: Vec<u32>,
    pub(crate) tx_index: FxHashMap<TransferKey, u32>,
    /// Slots with packets to send, served round-robin one packet at a time.
    pub(crate) ready: VecDeque<u32>,
    pub(crate) ctrl: VecDeque<(NodeId, Ctrl)>,
    /// Receive-side state per (transfer, block).
    /// Keyed by [`rx_key`](crate::responder::rx_key).
    pub(crate) rx: RxTable,
    pub(crate) rx_gc_at: Option<Instant>,
    /// Bitmap words beyond the inline 64 bits of dropped receive states, for reuse.
    pub(crate) bitmap_pool: Vec<Vec<u64>>,
    /// Reads we initiated, by id.
    pub(crate) reads: FxHashMap<u32, PendingRead>,
    pub(crate) next_id: u32,
    pub(crate) events: VecDeque<Event>,
    pub(crate) timers: Timers,
    pub(crate) stats: EngineStats,
    /// Whether emitted packets carry a CRC32 ([`PartEngine::set_checksum`]).
    pub(crate) checksum: Checksum,
    /// Atomics we initiated, by id (crate::atomics).
    pub(crate) atomics: FxHashMap<u32, crate::atomics::PendingAtomic>,
    /// Atomics we executed as target, by (initiator, id): answered again, never re-executed.
    pub(crate) atomics_done: FxHashMap<(NodeId, u32), crate::atomics::DoneAtomic>,
    /// The keys of `atomics_done` in the order they were executed (oldest first): outcomes
    /// expire from the front, a constant amortized cost per atomic whatever the table holds.
    pub(crate) atomics_done_order: VecDeque<(Instant, NodeId, u32)>,
}

impl PartEngine {
    /// A new engine for node `node`.
    pub fn new(node: NodeId, cfg: EngineConfig) -> PartEngine {
        PartEngine {
            node,
            exposures: Exposures::new(cfg.key_salt ^ ((node as u64) << 32)),
            cfg,
            tx: Vec::new(),
            tx_gen: Vec::new(),
            tx_free: Vec::new(),
            tx_index: FxHashMap::default(),
            ready: VecDeque::new(),
            ctrl: VecDeque::new(),
            rx: RxTable::default(),
            rx_gc_at: None,
            bitmap_pool: Vec::new(),
            reads: FxHashMap::default(),
            next_id: 1,
            events: VecDeque::new(),
            timers: Timers::default(),
            stats: EngineStats::default(),
            checksum: Checksum::Crc32,
            atomics: FxHashMap::default(),
            atomics_done: FxHashMap::default(),
            atomics_done_order: VecDeque::new(),
        }
    }

    /// Whether the packets this engine emits carry a CRC32 (the default) or a zero checksum
    /// field ([`Checksum::None`]): for a driver whose medium cannot corrupt bytes (memory
    /// shared between the processes of one host), whose receivers then use
    /// [`PartEngine::handle_packet_intact`]. Lossy or corrupting media (links, UDP) keep it.
    pub fn set_checksum(&mut self, checksum: Checksum) {
        self.checksum = checksum;
    }

    /// This engine's node id.
    pub fn node(&self) -> NodeId {
        self.node
    }

    /// The configuration.
    pub fn config(&self) -> &EngineConfig {
        &self.cfg
    }

    /// Counters so far.
    pub fn stats(&self) -> EngineStats {
        self.stats
    }

    /// Expose `[base, base+len)` of address space `pdid` to peers with `perms`. Nothing is
    /// pinned or registered; the returned key is checked on every access.
    pub fn expose(&mut self, pdid: Pdid, base: u64, len: u64, perms: Perms) -> Option<RemoteKey> {
        self.exposures.expose(pdid, base, len, perms)
    }

    /// Withdraw an exposure.
    pub fn revoke(&mut self, key: RemoteKey) -> bool {
        self.exposures.revoke(key)
    }

    /// The exposure table (for invariant checks).
    pub fn exposures(&self) -> &Exposures {
        &self.exposures
    }

    /// Post a one-sided operation. On `Ok`, exactly one `Event::Completion` with `wr.wr_id`
    /// follows (possibly at once, for zero-length requests).
    pub fn post(&mut self, now: Instant, wr: WorkRequest) -> Result<(), PostError> {
        if wr.local_addr.checked_add(wr.len).is_none()
            || wr.remote_addr.checked_add(wr.len).is_none()
        {
            return Err(PostError::InvalidRange);
        }
        if wr.len.div_ceil(self.cfg.block_bytes as u64) > u32::MAX as u64 {
            return Err(PostError::InvalidRange);
        }
        if wr.peer == self.node {
            return Err(PostError::SelfPeer);
        }
        if wr.len == 0 {
            self.complete(now, wr.wr_id, wr.op, Ok(()), 0);
            return Ok(());
        }
        let id = self.alloc_id();
        match wr.op {
            Op::Write => {
                let key = TransferKey {
                    data_src: self.node,
                    data_dst: wr.peer,
                    id,
                    read_response: false,
                };
                self.start_transfer(
                    now,
                    key,
                    Some(wr.wr_id),
                    wr.local_pdid,
                    wr.local_addr,
                    wr.remote_pdid,
                    wr.remote_addr,
                    wr.rkey,
                    wr.len,
                );
            }
            Op::Read => self.start_read(now, id, &wr),
        }
        Ok(())
    }

    /// The host's page-in task asks for the retransmission of a faulted block (send an ERR to
    /// the transfer's data source).
    pub fn post_err(&mut self, transfer: TransferKey, block: u32, block_seq: u16) {
        // A selective sender learns first which packets need resending.
        let sack = transfer.data_dst == self.node
            && self
                .rx
                .get(crate::responder::rx_key(transfer, block))
                .is_some_and(|e| e.selective && e.seq == block_seq && e.received < e.expected);
        if sack {
            self.ctrl
                .push_back((transfer.data_src, Ctrl::Sack { transfer, block }));
        }
        self.ctrl.push_back((
            transfer.data_src,
            Ctrl::Err {
                transfer,
                block,
                seq: block_seq,
            },
        ));
    }

    /// A packet arrived from `src`. Malformed packets are dropped and reported as an error;
    /// the engine's state is unchanged by them.
    pub fn handle_packet<M: Memory>(
        &mut self,
        now: Instant,
        src: NodeId,
        bytes: &[u8],
        mem: &mut M,
    ) -> Result<(), WireError> {
        self.handle_packet_inner(now, src, bytes, mem, true)
    }

    /// Like [`PartEngine::handle_packet`], for a driver that vouches that `bytes` are exactly
    /// what a peer's `poll_transmit` emitted (the simulator's links, for packets its fault
    /// injector did not touch): the checksum, computed at emit, is not recomputed. Every other
    /// check (lengths, magic, fields, geometry, protection) still applies. A driver whose
    /// packets cross a real medium must use `handle_packet`.
    pub fn handle_packet_intact<M: Memory>(
        &mut self,
        now: Instant,
        src: NodeId,
        bytes: &[u8],
        mem: &mut M,
    ) -> Result<(), WireError> {
        self.handle_packet_inner(now, src, bytes, mem, false)
    }

    fn handle_packet_inner<M: Memory>(
        &mut self,
        now: Instant,
        src: NodeId,
        bytes: &[u8],
        mem: &mut M,
        verify_crc: bool,
    ) -> Result<(), WireError> {
        let parsed = if verify_crc {
            PartRepr::parse(bytes)
        } else {
            PartRepr::parse_trusted(bytes)
        };
        let (repr, crc_ok) = match parsed {
            Ok(r) => (r, true),
            Err(WireError::BadChecksum) => match PartRepr::parse_ignoring_checksum(bytes) {
                Ok(r) => (r, false),
                Err(e) => {
                    self.stats.malformed_dropped += 1;
                    return Err(e);
                }
            },
            Err(e) => {
                self.stats.malformed_dropped += 1;
                return Err(e);
            }
        };
        if !crc_ok {
            // Only a data packet's block can be named in a CRC NACK (mechanism 6); a corrupted
            // control packet is simply lost and recovered by timers. The fields of a corrupted
            // packet are untrusted: the NACK names a block, and the source ignores a NACK for a
            // block it does not have in flight.
            self.stats.malformed_dropped += 1;
            if let PartRepr::Data {
                transfer_id,
                block_id,
                block_seq,
                flags,
                ..
            } = repr
            {
                let transfer = TransferKey {
                    data_src: src,
                    data_dst: self.node,
                    id: transfer_id,
                    read_response: flags.read_response,
                };
                self.on_corrupt_data(now, transfer, block_id, block_seq);
            }
            return Err(WireError::BadChecksum);
        }
        match repr {
            PartRepr::Data { .. } => self.on_data(now, src, &repr, mem),
            PartRepr::Ack {
                transfer_id,
                block_id,
                block_seq,
                read_response,
            } => {
                let transfer = TransferKey {
                    data_src: self.node,
                    data_dst: src,
                    id: transfer_id,
                    read_response,
                };
                self.on_ack(now, transfer, block_id, block_seq);
            }
            PartRepr::Nack {
                transfer_id,
                block_id,
                block_seq,
                read_response,
                reason,
                addr,
            } => {
                self.on_nack(
                    now,
                    src,
                    transfer_id,
                    read_response,
                    block_id,
                    block_seq,
                    reason,
                    addr,
                );
            }
            PartRepr::Err {
                transfer_id,
                block_id,
                block_seq,
                read_response,
            } => {
                if block_id == crate::atomics::ATOMIC_BLOCK
                    && !read_response
                    && self.on_atomic_err(now, src, transfer_id)
                {
                    self.stats.errs_received += 1;
                    return Ok(());
                }
                let transfer = TransferKey {
                    data_src: self.node,
                    data_dst: src,
                    id: transfer_id,
                    read_response,
                };
                self.stats.errs_received += 1;
                self.on_err(now, transfer, block_id, block_seq);
            }
            PartRepr::ReadReq {
                pdid,
                rkey,
                transfer_id,
                reply_pdid,
                remote_addr,
                local_addr,
                len,
            } => {
                self.on_read_request(
                    now,
                    src,
                    pdid,
                    rkey,
                    transfer_id,
                    reply_pdid,
                    remote_addr,
                    local_addr,
                    len,
                );
            }
            PartRepr::AtomicReq {
                pdid,
                rkey,
                transfer_id,
                kind,
                addr,
                operand,
                compare,
            } => {
                self.on_atomic_request(
                    now,
                    src,
                    pdid,
                    rkey,
                    transfer_id,
                    kind,
                    addr,
                    operand,
                    compare,
                    mem,
                );
            }
            PartRepr::AtomicResp {
                transfer_id,
                status,
                old,
            } => self.on_atomic_response(now, src, transfer_id, status, old, mem),
            PartRepr::Sack {
                transfer_id,
                block_id,
                block_seq,
                read_response,
                base,
                received,
            } => {
                let transfer = TransferKey {
                    data_src: self.node,
                    data_dst: src,
                    id: transfer_id,
                    read_response,
                };
                self.on_sack(now, transfer, block_id, block_seq, base, received);
            }
        }
        Ok(())
    }

    /// Process every deadline at or before `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.timers.dirty = true;
        while let Some((at, kind)) = self.timers.peek() {
            if at > now {
                break;
            }
            self.timers.pop();
            match kind {
                TimerKind::Block { slot, gen, block } => {
                    self.on_block_timer(now, at, slot, gen, block)
                }
                TimerKind::Read { id } => self.on_read_timer(now, at, id),
                TimerKind::RxGc => self.on_rx_gc(now, at),
                TimerKind::Atomic { id } => self.on_atomic_timer(now, at, id),
            }
        }
    }

    /// The next deadline, if any. Stale entries at the head are discarded when new deadlines
    /// were set since the last call; otherwise the previous answer is returned, which may name
    /// a deadline that was cancelled meanwhile (the driver then calls `handle_timeout` for
    /// nothing, which is harmless).
    #[inline]
    pub fn poll_timeout(&mut self) -> Option<Instant> {
        // Called after every input: the common case (no new deadline) stays inline.
        if !self.timers.dirty {
            return self.timers.peek().map(|(at, _)| at);
        }
        self.revalidate_timeout()
    }

    #[inline(never)]
    fn revalidate_timeout(&mut self) -> Option<Instant> {
        self.timers.dirty = false;
        while let Some((at, kind)) = self.timers.peek() {
            if self.timer_is_current(at, kind) {
                return Some(at);
            }
            self.timers.pop();
        }
        None
    }

    /// Whether events are waiting for [`PartEngine::poll_event`].
    #[inline]
    pub fn has_events(&self) -> bool {
        !self.events.is_empty()
    }

    /// The next event for the host.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Work still in the engine: transfers, reads, queued control packets.
    pub fn is_busy(&self) -> bool {
        !self.tx_index.is_empty()
            || !self.reads.is_empty()
            || !self.ctrl.is_empty()
            || !self.atomics.is_empty()
    }

    /// Whether `poll_transmit` may have something to send.
    #[inline]
    pub fn wants_transmit(&self) -> bool {
        !self.ctrl.is_empty() || !self.ready.is_empty()
    }

    /// Write the next packet into `buf` (at least `packet_bytes + DATA_HEADER_LEN` long).
    /// Control packets go first; data packets are served round-robin across transfers.
    pub fn poll_transmit<M: Memory>(
        &mut self,
        now: Instant,
        buf: &mut [u8],
        mem: &mut M,
    ) -> Option<Transmit> {
        while let Some((dst, ctrl)) = self.ctrl.pop_front() {
            // A queued read request whose read has ended meanwhile is not sent.
            let Some(len) = self.emit_ctrl(ctrl, buf) else {
                continue;
            };
            self.stats.ctrl_packets_sent += 1;
            return Some(Transmit {
                dst,
                len,
                is_data: false,
            });
        }
        self.next_data_packet(now, buf, mem)
    }

    fn emit_ctrl(&mut self, ctrl: Ctrl, buf: &mut [u8]) -> Option<usize> {
        use unpinned_wire::NackReason;
        let repr = match ctrl {
            Ctrl::Ack {
                transfer,
                block,
                seq,
            } => PartRepr::Ack {
                transfer_id: transfer.id,
                block_id: block,
                block_seq: seq,
                read_response: transfer.read_response,
            },
            Ctrl::Nack {
                transfer,
                block,
                seq,
                reason,
                addr,
            } => {
                match reason {
                    NackReason::PageFault => self.stats.nacks_fault_sent += 1,
                    NackReason::Crc => self.stats.nacks_crc_sent += 1,
                    NackReason::Protection | NackReason::ReadRefused => {
                        self.stats.nacks_protection_sent += 1
                    }
                }
                PartRepr::Nack {
                    transfer_id: transfer.id,
                    block_id: block,
                    block_seq: seq,
                    read_response: transfer.read_response,
                    reason,
                    addr,
                }
            }
            Ctrl::Err {
                transfer,
                block,
                seq,
            } => {
                self.stats.errs_sent += 1;
                PartRepr::Err {
                    transfer_id: transfer.id,
                    block_id: block,
                    block_seq: seq,
                    read_response: transfer.read_response,
                }
            }
            Ctrl::Sack { transfer, block } => {
                // The state may be gone (idle sweep): then there is nothing to report.
                let e = self.rx.get(crate::responder::rx_key(transfer, block))?;
                let base = e.bitmap.first_missing(e.expected).min(u16::MAX as u32);
                self.stats.sacks_sent += 1;
                PartRepr::Sack {
                    transfer_id: transfer.id,
                    block_id: block,
                    block_seq: e.seq,
                    read_response: transfer.read_response,
                    base: base as u16,
                    received: e.bitmap.window(base, e.expected),
                }
            }
            Ctrl::ReadReq { id } => {
                let r = self.reads.get(&id)?;
                PartRepr::ReadReq {
                    pdid: r.remote_pdid,
                    rkey: r.rkey,
                    transfer_id: id,
                    reply_pdid: r.local_pdid,
                    remote_addr: r.remote_addr,
                    local_addr: r.local_addr,
                    len: r.len,
                }
            }
            Ctrl::AtomicReq { id } => self.emit_atomic_req(id)?,
            Ctrl::AtomicResp { id, status, old } => PartRepr::AtomicResp {
                transfer_id: id,
                status,
                old,
            },
        };
        Some(
            repr.emit_with(buf, self.checksum)
                .expect("caller buffer holds a control packet"),
        )
    }

    fn timer_is_current(&self, at: Instant, kind: TimerKind) -> bool {
        match kind {
            TimerKind::Block { slot, gen, block } => {
                self.block_deadline(slot, gen, block) == Some(at)
            }
            TimerKind::Read { id } => self.reads.get(&id).and_then(|r| r.deadline) == Some(at),
            TimerKind::RxGc => self.rx_gc_at == Some(at),
            TimerKind::Atomic { id } => self.atomic_deadline(id) == Some(at),
        }
    }

    pub(crate) fn alloc_id(&mut self) -> u32 {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1).max(1);
        id
    }

    pub(crate) fn complete(
        &mut self,
        now: Instant,
        wr_id: u64,
        op: Op,
        status: Result<(), CompletionError>,
        len: u64,
    ) {
        let len = if status.is_ok() { len } else { 0 };
        self.events.push_back(Event::Completion(Completion {
            wr_id,
            op,
            status,
            len,
            at: now,
        }));
    }
}

impl PartEngine {
    /// A human-readable summary of the work in the engine (diagnostics of stuck runs).
    pub fn debug_summary(&self) -> String {
        let mut s = format!("node {}: {} tx transfers, {} reads, {} ctrl queued, {} ready, {} rx blocks, {} timers\n",
            self.node, self.tx_index.len(), self.reads.len(), self.ctrl.len(), self.ready.len(), self.rx.len(), self.timers.len());
        for t in self.tx.iter().flatten() {
            s += &format!(
                "  tx {:?} len {} next_block {}/{} silent {} window {:?}\n",
                t.key,
                t.len,
                t.next_block,
                t.nblocks,
                t.silent_timeouts,
                t.window
                    .iter()
                    .map(|b| (b.id, b.seq, b.state, b.next_offset, b.deadline.map(|d| d.0)))
                    .collect::<Vec<_>>()
            );
        }
        for (key, e) in self.rx.iter() {
            let (k, b) = crate::responder::rx_key_parts(key, self.node);
            s += &format!(
                "  rx {k:?} block {b} seq {} {}/{} failed {} done {} selective {}\n",
                e.seq, e.received, e.expected, e.failed, e.done, e.selective
            );
        }
        s += &format!("  stats {:?}\n", self.stats);
        for (id, r) in &self.reads {
            s += &format!(
                "  read {id} from {} len {} done {}/{} silent {} deadline {:?}\n",
                r.peer, r.len, r.done, r.nblocks, r.silent_timeouts, r.deadline
            );
        }
        s
    }
}
