//! Requester: transfers whose data this node sends (spec part.md, mechanisms 1, 2, 6, 7, 9, 10).
//!
//! A transfer is cut into blocks of `block_bytes`, each sent as packets of `packet_bytes`. At
//! most `max_outstanding` blocks are unacknowledged at once; a NACK or a missing ACK holds the
//! window (the transfer is suspended until the block is acknowledged). A retransmission resends
//! only the failed block, with its sequence number incremented.
//!
//! What the new attempt carries depends on [`RetransmitPolicy`]: the whole block (`Block`, the
//! spec), or only the packets the receiver is not known to hold (`Selective`): the last packet
//! of every selective attempt carries the poll flag, the receiver answers an incomplete block
//! with a SACK (the packets it holds), and a SACK for the current attempt starts the next one
//! at once with the missing packets; a CRC NACK or an ERR resends what the last SACK did not
//! report. A timeout (the poll or its SACK was lost) resends only the last of those packets,
//! as a probe: its SACK then names exactly what is missing, instead of the whole block going
//! again whenever a poll is lost. A SACK replaces what the sender knew, so a receiver that dropped an idle
//! block's state (and reports fewer packets) gets the others again.

use unpinned_core::api::{
    CompletionError, FaultRecord, FaultSide, Op, RemoteKey, TransferKey, WrId,
};
use unpinned_core::memory::{AccessOrigin, MemError, Memory, Pdid};
use unpinned_core::profile::RetransmitPolicy;
use unpinned_core::time::Instant;
use unpinned_wire::{emit_data_in_place, DataFlags, DataHeader, NackReason, DATA_PAYLOAD_OFFSET};

use crate::engine::{Ctrl, Event, PartEngine, Transmit};
use crate::timers::TimerKind;

/// State of one block in the window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockState {
    /// Packets left to send (from `next_offset`).
    Sending,
    /// All packets sent, waiting for the ACK (timer armed).
    AwaitAck,
    /// A page-fault NACK came back: waiting for the ERR (and, unless NTO, the timer).
    Faulted,
    /// The source page is missing: waiting for the local page-in (`handle_source_resolved`).
    SourceFault,
    /// Acknowledged.
    Acked,
}

/// One block of the window.
#[derive(Clone, Copy, Debug)]
pub struct TxBlock {
    /// Block id.
    pub id: u32,
    /// Current attempt.
    pub seq: u16,
    /// State.
    pub state: BlockState,
    /// Next byte (within the block) to send.
    pub next_offset: u32,
    /// Current deadline, if a timer is armed.
    pub deadline: Option<Instant>,
    /// This block has been sent at least once before (payload counts as resent).
    pub resending: bool,
    /// Selective policy: packets `0..known_base` are at the receiver (its last SACK).
    pub known_base: u32,
    /// Selective policy: packet `known_base + i` is at the receiver if bit `i` is set.
    pub known_bits: u64,
    /// The attempt named by the last SACK applied (an older SACK is stale).
    pub sack_seq: u16,
    /// Selective policy: this attempt is a probe (one packet, which polls).
    pub probe: bool,
}

impl TxBlock {
    fn new(id: u32) -> TxBlock {
        TxBlock {
            id,
            seq: 0,
            state: BlockState::Sending,
            next_offset: 0,
            deadline: None,
            resending: false,
            known_base: 0,
            known_bits: 0,
            sack_seq: 0,
            probe: false,
        }
    }

    /// Whether packet `i` is known to be at the receiver (selective policy).
    fn known(&self, i: u32) -> bool {
        i < self.known_base
            || (i - self.known_base < 64 && self.known_bits >> (i - self.known_base) & 1 != 0)
    }

    /// The first packet from `from` (of `packets`) not known to be at the receiver.
    fn next_unknown(&self, from: u32, packets: u32) -> Option<u32> {
        (from..packets).find(|&i| !self.known(i))
    }
}

/// A transfer whose data this node sends.
#[derive(Clone, Debug)]
pub struct TxTransfer {
    /// Wire identity.
    pub key: TransferKey,
    /// The user's request, for writes we initiated; `None` for read responses we serve.
    pub wr_id: Option<WrId>,
    /// Source address space and address (here).
    pub local_pdid: Pdid,
    /// Source address.
    pub local_addr: u64,
    /// Destination address space at the peer.
    pub remote_pdid: Pdid,
    /// Destination address at the peer.
    pub remote_addr: u64,
    /// Key of the destination range.
    pub rkey: RemoteKey,
    /// Length in bytes.
    pub len: u64,
    /// Blocks in the transfer.
    pub nblocks: u32,
    /// Next block never sent.
    pub next_block: u32,
    /// The window, ordered by block id.
    pub window: Vec<TxBlock>,
    /// Silent periods since the peer last answered: block timeouts, counted at most once per
    /// ack timeout. Every block of the window has its own timer, and one silent period fires
    /// all of them; counting each made `max_timeouts` a budget of `max_timeouts / window`
    /// periods (with 16 outstanding blocks and 30 timeouts, a peer descheduled for ~20 ms
    /// failed the transfer with `RetryExceeded`). With the backoff on, it also sets how long
    /// the next period lasts ([`crate::EngineConfig::backoff_timeout`]).
    pub silent_timeouts: u32,
    /// When the last silent period was counted (`None`: none since the peer last answered).
    pub silent_counted_at: Option<Instant>,
    /// In the ready queue.
    pub in_ready: bool,
}

impl TxTransfer {
    fn block_len(&self, block: u32, block_bytes: u32) -> u32 {
        let start = block as u64 * block_bytes as u64;
        (self.len - start).min(block_bytes as u64) as u32
    }
    fn has_sendable(&self) -> bool {
        self.window.iter().any(|b| b.state == BlockState::Sending)
    }
}

impl PartEngine {
    /// Create a transfer and queue it for transmission.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn start_transfer(
        &mut self,
        _now: Instant,
        key: TransferKey,
        wr_id: Option<WrId>,
        local_pdid: Pdid,
        local_addr: u64,
        remote_pdid: Pdid,
        remote_addr: u64,
        rkey: RemoteKey,
        len: u64,
    ) {
        let nblocks = len.div_ceil(self.cfg.block_bytes as u64) as u32;
        let t = TxTransfer {
            key,
            wr_id,
            local_pdid,
            local_addr,
            remote_pdid,
            remote_addr,
            rkey,
            len,
            nblocks,
            next_block: 0,
            window: Vec::with_capacity(self.cfg.max_outstanding as usize),
            silent_timeouts: 0,
            silent_counted_at: None,
            in_ready: false,
        };
        let slot = match self.tx_free.pop() {
            Some(s) => {
                self.tx[s as usize] = Some(t);
                s
            }
            None => {
                self.tx.push(Some(t));
                self.tx_gen.push(0);
                (self.tx.len() - 1) as u32
            }
        };
        self.tx_gen[slot as usize] = self.tx_gen[slot as usize].wrapping_add(1);
        self.tx_index.insert(key, slot);
        self.open_blocks(slot);
    }

    /// Fill the window with new blocks and make the transfer ready if it has packets to send.
    fn open_blocks(&mut self, slot: u32) {
        let max = self.cfg.max_outstanding as usize;
        let t = self.tx[slot as usize].as_mut().expect("live slot");
        while t.window.len() < max && t.next_block < t.nblocks {
            t.window.push(TxBlock::new(t.next_block));
            t.next_block += 1;
        }
        if t.has_sendable() && !t.in_ready {
            t.in_ready = true;
            self.ready.push_back(slot);
        }
    }

    /// The peer answered (ACK, NACK, SACK or ERR): the silence is over. With the backoff on,
    /// block timers armed during the silence (up to `timeout_backoff_max` ack timeouts away)
    /// are brought back to one ack timeout from now: the peer is back, and a packet lost now
    /// must not wait out a period sized for the silence.
    fn peer_answered(&mut self, now: Instant, slot: u32) {
        let t = self.tx[slot as usize].as_mut().expect("live slot");
        let backed_off = t.silent_timeouts > 0 && self.cfg.timeout_backoff_max > 1;
        t.silent_timeouts = 0;
        t.silent_counted_at = None;
        if !backed_off {
            return;
        }
        let at = now + self.cfg.ack_timeout();
        let gen = self.tx_gen[slot as usize];
        for b in &mut t.window {
            let waiting = matches!(b.state, BlockState::AwaitAck | BlockState::Faulted);
            if waiting && b.deadline.is_some_and(|d| d > at) {
                b.deadline = Some(at);
                let block = b.id;
                self.timers.push(at, TimerKind::Block { slot, gen, block });
            }
        }
    }

    fn make_ready(&mut self, slot: u32) {
        let t = self.tx[slot as usize].as_mut().expect("live slot");
        if !t.in_ready {
            t.in_ready = true;
            self.ready.push_back(slot);
        }
    }

    /// Restart block `idx` of the window as a new attempt: from its first packet (block
    /// policy), or from its first packet the receiver is not known to hold (selective; with
    /// `probe`, only the last such packet).
    fn retransmit(&mut self, slot: u32, idx: usize, probe: bool) {
        let t = self.tx[slot as usize].as_mut().expect("live slot");
        let block_len = t.block_len(t.window[idx].id, self.cfg.block_bytes);
        let b = &mut t.window[idx];
        b.seq = b.seq.wrapping_add(1);
        b.state = BlockState::Sending;
        b.next_offset = 0;
        b.probe = false;
        if self.cfg.retransmit == RetransmitPolicy::Selective {
            let packets = self.cfg.packets_in(block_len);
            match b.next_unknown(0, packets) {
                Some(i) if probe => {
                    let last = (i..packets).rev().find(|&j| !b.known(j)).unwrap_or(i);
                    b.next_offset = last * self.cfg.packet_bytes;
                    b.probe = true;
                }
                Some(i) => b.next_offset = i * self.cfg.packet_bytes,
                // Every packet reported held, yet no ACK (it was lost): send the block again,
                // its last packet polls, and the receiver answers with the ACK.
                None => {
                    b.known_base = 0;
                    b.known_bits = 0;
                }
            }
        }
        b.deadline = None;
        b.resending = true;
        self.make_ready(slot);
    }

    /// The next data packet, round-robin over ready transfers.
    pub(crate) fn next_data_packet<M: Memory>(
        &mut self,
        now: Instant,
        buf: &mut [u8],
        mem: &mut M,
    ) -> Option<Transmit> {
        while let Some(slot) = self.ready.pop_front() {
            let Some(t) = self.tx[slot as usize].as_mut() else {
                continue;
            };
            let Some(idx) = t.window.iter().position(|b| b.state == BlockState::Sending) else {
                t.in_ready = false;
                continue;
            };
            let block = t.window[idx];
            let block_len = t.block_len(block.id, self.cfg.block_bytes);
            let block_start = block.id as u64 * self.cfg.block_bytes as u64;
            let plen = (block_len - block.next_offset).min(self.cfg.packet_bytes) as usize;
            let offset = block_start + block.next_offset as u64;
            let src_addr = t.local_addr + offset;
            // The payload is read straight into its place in the packet (for the shm transport
            // that is the ring slot): one copy from the source, none from a staging buffer.
            let payload = &mut buf[DATA_PAYLOAD_OFFSET..DATA_PAYLOAD_OFFSET + plen];
            // Serving a remote get goes through `read_for` (an Active Access memory logs it).
            let read = if t.key.read_response {
                let origin = AccessOrigin {
                    peer: t.key.data_dst,
                    transfer_id: t.key.id,
                    xfer_addr: t.local_addr,
                    xfer_len: t.len,
                    offset,
                };
                mem.read_for(t.local_pdid, src_addr, payload, &origin)
            } else {
                mem.read(t.local_pdid, src_addr, payload)
            };
            match read {
                Ok(()) => {}
                Err(MemError::NotPresent { page_addr }) => {
                    // Mechanism 10: a source fault suspends the block until the host pages in.
                    let rec = FaultRecord {
                        side: FaultSide::Source,
                        transfer: t.key,
                        block: block.id,
                        block_seq: block.seq,
                        pdid: t.local_pdid,
                        page_addr,
                        block_range: (
                            t.local_addr + block_start,
                            t.local_addr + block_start + block_len as u64,
                        ),
                        transfer_range: (t.local_addr, t.local_addr + t.len),
                    };
                    let b = &mut t.window[idx];
                    b.state = BlockState::SourceFault;
                    // Safety net: if the fault record is lost (FIFO full), retry later.
                    let at = now + self.cfg.recovery_timeout;
                    b.deadline = Some(at);
                    let (id, gen) = (block.id, self.tx_gen[slot as usize]);
                    self.timers.push(
                        at,
                        TimerKind::Block {
                            slot,
                            gen,
                            block: id,
                        },
                    );
                    self.stats.source_faults += 1;
                    self.events.push_back(Event::Fault(rec));
                    let t = self.tx[slot as usize].as_mut().expect("live slot");
                    if t.has_sendable() {
                        self.ready.push_back(slot);
                    } else {
                        t.in_ready = false;
                    }
                    continue;
                }
                Err(MemError::Unmapped { .. }) | Err(MemError::NoSuchDomain(_)) => {
                    self.fail_transfer(now, slot, CompletionError::LocalAccess);
                    continue;
                }
            }
            // Where this attempt continues: the next packet (block policy), or the next one the
            // receiver is not known to hold (selective; the last one polls for a SACK).
            let selective = self.cfg.retransmit == RetransmitPolicy::Selective;
            let next = if selective {
                let pb = self.cfg.packet_bytes;
                let index = block.next_offset / pb;
                let rest = self.cfg.packets_in(block_len) * !block.probe as u32;
                block.next_unknown(index + 1, rest).map(|i| i * pb)
            } else {
                let n = block.next_offset + plen as u32;
                (n < block_len).then_some(n)
            };
            let h = DataHeader {
                pdid: t.remote_pdid,
                rkey: t.rkey,
                transfer_id: t.key.id,
                block_id: block.id,
                block_seq: block.seq,
                flags: DataFlags {
                    read_response: t.key.read_response,
                    selective,
                    poll: selective && next.is_none(),
                },
                offset,
                block_len,
                xfer_base: t.remote_addr,
                xfer_len: t.len,
            };
            let len = emit_data_in_place(&h, plen, buf, self.checksum)
                .expect("caller buffer holds a data packet");
            let dst = t.key.data_dst;
            let b = &mut t.window[idx];
            b.next_offset = next.unwrap_or(block_len);
            if b.resending {
                self.stats.data_bytes_resent += plen as u64;
            } else {
                self.stats.data_bytes_sent += plen as u64;
            }
            self.stats.data_packets_sent += 1;
            if next.is_none() {
                b.state = BlockState::AwaitAck;
                // One ack timeout, or longer while the peer has been silent (backoff).
                let at = now + self.cfg.backoff_timeout(t.silent_timeouts);
                b.deadline = Some(at);
                let gen = self.tx_gen[slot as usize];
                self.timers.push(
                    at,
                    TimerKind::Block {
                        slot,
                        gen,
                        block: block.id,
                    },
                );
            }
            if t.has_sendable() {
                self.ready.push_back(slot);
            } else {
                t.in_ready = false;
            }
            return Some(Transmit {
                dst,
                len,
                is_data: true,
            });
        }
        None
    }

    fn find_block(&self, transfer: TransferKey, block: u32) -> Option<(u32, usize)> {
        let slot = *self.tx_index.get(&transfer)?;
        let t = self.tx[slot as usize].as_ref()?;
        let idx = t.window.iter().position(|b| b.id == block)?;
        Some((slot, idx))
    }

    pub(crate) fn block_deadline(&self, slot: u32, gen: u32, block: u32) -> Option<Instant> {
        if self.tx_gen.get(slot as usize) != Some(&gen) {
            return None;
        }
        let t = self.tx[slot as usize].as_ref()?;
        t.window.iter().find(|b| b.id == block)?.deadline
    }

    pub(crate) fn on_ack(&mut self, now: Instant, transfer: TransferKey, block: u32, _seq: u16) {
        // An ACK of any attempt means every packet of that attempt was written: accept it.
        let Some((slot, idx)) = self.find_block(transfer, block) else {
            self.stats.stale_dropped += 1;
            return;
        };
        self.peer_answered(now, slot);
        let t = self.tx[slot as usize].as_mut().expect("live slot");
        let b = &mut t.window[idx];
        if b.state == BlockState::Acked {
            return;
        }
        b.state = BlockState::Acked;
        b.deadline = None;
        // Slide the window past acknowledged blocks at its front.
        let acked_front = t
            .window
            .iter()
            .take_while(|b| b.state == BlockState::Acked)
            .count();
        t.window.drain(..acked_front);
        if t.window.is_empty() && t.next_block == t.nblocks {
            self.finish_transfer(now, slot, Ok(()));
        } else {
            self.open_blocks(slot);
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn on_nack(
        &mut self,
        now: Instant,
        src: u32,
        id: u32,
        read_response: bool,
        block: u32,
        seq: u16,
        reason: NackReason,
        _addr: u64,
    ) {
        // A NACK may concern a transfer we send (we are its data source), or, for a read we
        // initiated, tell us the target refused the read request.
        if reason == NackReason::ReadRefused {
            // Only a read's target sends this, naming a read we initiated (our id space).
            if read_response {
                self.fail_read(now, src, id, CompletionError::RemoteAccess);
            } else {
                self.stats.malformed_dropped += 1;
            }
            return;
        }
        // Every other NACK comes from the receiver of data we send.
        let transfer = TransferKey {
            data_src: self.node,
            data_dst: src,
            id,
            read_response,
        };
        let Some((slot, idx)) = self.find_block(transfer, block) else {
            self.stats.stale_dropped += 1;
            return;
        };
        self.peer_answered(now, slot);
        let t = self.tx[slot as usize].as_mut().expect("live slot");
        let b = t.window[idx];
        if b.seq != seq || b.state == BlockState::Acked {
            self.stats.stale_dropped += 1;
            return;
        }
        match reason {
            NackReason::Crc if self.cfg.retransmit == RetransmitPolicy::Selective => {
                // The receiver keeps what it holds and the attempt's last packet polls for
                // the SACK that names the corrupted packet: an attempt still sending goes on
                // (restarting it from the first packet not known held resent the whole block
                // before the first SACK and never reached the poll under steady corruption).
                // Once the poll is sent, it may be the packet that was corrupted: probe.
                if b.state == BlockState::Sending {
                    return;
                }
                self.stats.retransmits_crc += 1;
                let probe = b.state == BlockState::AwaitAck;
                self.retransmit(slot, idx, probe);
            }
            NackReason::Crc => {
                self.stats.retransmits_crc += 1;
                self.retransmit(slot, idx, false);
            }
            NackReason::PageFault => {
                if matches!(b.state, BlockState::Sending | BlockState::AwaitAck) {
                    let b = &mut t.window[idx];
                    b.state = BlockState::Faulted;
                    // Mechanism 6 and 9: the NACK does not trigger retransmission. With a
                    // timeout the timer keeps running (overlap); with NTO it is cancelled and
                    // only the ERR resumes (the recovery timer guards a lost ERR).
                    if self.cfg.block_timeout.is_none() {
                        let at = now + self.cfg.recovery_timeout;
                        b.deadline = Some(at);
                        let gen = self.tx_gen[slot as usize];
                        self.timers.push(at, TimerKind::Block { slot, gen, block });
                    } else if b.deadline.is_none() {
                        // NACK arrived while still sending: arm the timer from now.
                        let at = now + self.cfg.ack_timeout();
                        b.deadline = Some(at);
                        let gen = self.tx_gen[slot as usize];
                        self.timers.push(at, TimerKind::Block { slot, gen, block });
                    }
                }
            }
            NackReason::ReadRefused => unreachable!("handled above"),
            NackReason::Protection => {
                let err = if transfer.read_response {
                    None
                } else {
                    Some(CompletionError::RemoteAccess)
                };
                match err {
                    Some(e) => self.fail_transfer(now, slot, e),
                    // The initiator of the read refused our response (its buffer is unmapped, or
                    // the read is no longer pending): drop the response.
                    None => self.finish_transfer(now, slot, Ok(())),
                }
            }
        }
    }

    /// A SACK: which packets of `block` the receiver holds (the answer to our poll, or sent
    /// with an ERR). It replaces what we knew; when it answers the current attempt, the next
    /// one starts at once with the missing packets. Ignored under the block policy.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn on_sack(
        &mut self,
        now: Instant,
        transfer: TransferKey,
        block: u32,
        seq: u16,
        base: u16,
        received: u64,
    ) {
        let found = self.find_block(transfer, block);
        let Some((slot, idx)) =
            found.filter(|_| self.cfg.retransmit == RetransmitPolicy::Selective)
        else {
            self.stats.stale_dropped += 1;
            return;
        };
        self.peer_answered(now, slot);
        let t = self.tx[slot as usize].as_mut().expect("live slot");
        let b = &mut t.window[idx];
        let stale =
            crate::responder::seq_older(seq, b.sack_seq) || crate::responder::seq_older(b.seq, seq);
        if stale || b.state == BlockState::Acked {
            self.stats.stale_dropped += 1;
            return;
        }
        b.known_base = base as u32;
        b.known_bits = received;
        b.sack_seq = seq;
        if seq == b.seq && b.state == BlockState::AwaitAck {
            self.stats.retransmits_sack += 1;
            self.retransmit(slot, idx, false);
        }
    }

    pub(crate) fn on_err(&mut self, now: Instant, transfer: TransferKey, block: u32, seq: u16) {
        let Some((slot, idx)) = self.find_block(transfer, block) else {
            self.stats.stale_dropped += 1;
            return;
        };
        self.peer_answered(now, slot);
        let t = self.tx[slot as usize].as_mut().expect("live slot");
        let b = t.window[idx];
        // Only the attempt that faulted is resent; an ERR for an older attempt is stale (a
        // newer attempt is already on its way and has its own fault record if it faulted).
        if b.seq != seq || matches!(b.state, BlockState::Acked | BlockState::SourceFault) {
            self.stats.stale_dropped += 1;
            return;
        }
        self.stats.retransmits_err += 1;
        self.retransmit(slot, idx, false);
    }

    /// A source-side fault was resolved by the host: resume the block where it stopped.
    pub fn handle_source_resolved(
        &mut self,
        _now: Instant,
        transfer: TransferKey,
        block: u32,
        block_seq: u16,
    ) {
        let Some((slot, idx)) = self.find_block(transfer, block) else {
            return;
        };
        let t = self.tx[slot as usize].as_mut().expect("live slot");
        let b = &mut t.window[idx];
        if b.seq == block_seq && b.state == BlockState::SourceFault {
            b.state = BlockState::Sending;
            b.deadline = None;
            self.make_ready(slot);
        }
    }

    pub(crate) fn on_block_timer(
        &mut self,
        now: Instant,
        at: Instant,
        slot: u32,
        gen: u32,
        block: u32,
    ) {
        if self.block_deadline(slot, gen, block) != Some(at) {
            return;
        }
        let t = self.tx[slot as usize].as_mut().expect("live slot");
        let idx = t
            .window
            .iter()
            .position(|b| b.id == block)
            .expect("deadline implies block");
        let state = t.window[idx].state;
        t.window[idx].deadline = None;
        if state == BlockState::SourceFault {
            // The local fault record may have been lost: try again (a new record if still missing).
            t.window[idx].state = BlockState::Sending;
            self.make_ready(slot);
            return;
        }
        // Timers of blocks sent in the same period expire within one period of the one that
        // was counted: the same silence, counted once. A period is one ack timeout, or longer
        // with the backoff on (the timers armed since the last count use this length).
        let period = self.cfg.backoff_timeout(t.silent_timeouts);
        if t.silent_counted_at
            .is_none_or(|c| now.saturating_since(c) >= period)
        {
            t.silent_timeouts += 1;
            t.silent_counted_at = Some(now);
        }
        if t.silent_timeouts > self.cfg.max_timeouts {
            let err = CompletionError::RetryExceeded;
            self.fail_transfer(now, slot, err);
            return;
        }
        self.stats.retransmits_timeout += 1;
        self.retransmit(slot, idx, true);
    }

    /// End a transfer with an error completion (writes) or silently (read responses).
    pub(crate) fn fail_transfer(&mut self, now: Instant, slot: u32, err: CompletionError) {
        let t = self.tx[slot as usize].as_ref().expect("live slot");
        if t.key.read_response && err == CompletionError::LocalAccess {
            // Serving a read from memory that turned out unmapped: tell the initiator.
            let (dst, transfer) = (t.key.data_dst, t.key);
            self.ctrl.push_back((
                dst,
                Ctrl::Nack {
                    transfer,
                    block: 0,
                    seq: 0,
                    reason: NackReason::ReadRefused,
                    addr: 0,
                },
            ));
        }
        self.finish_transfer(now, slot, Err(err));
    }

    pub(crate) fn finish_transfer(
        &mut self,
        now: Instant,
        slot: u32,
        status: Result<(), CompletionError>,
    ) {
        let t = self.tx[slot as usize].take().expect("live slot");
        self.tx_index.remove(&t.key);
        self.tx_free.push(slot);
        self.tx_gen[slot as usize] = self.tx_gen[slot as usize].wrapping_add(1);
        if let Some(wr_id) = t.wr_id {
            self.complete(now, wr_id, Op::Write, status, t.len);
        }
        if t.in_ready {
            self.ready.retain(|s| *s != slot);
        }
    }
}
