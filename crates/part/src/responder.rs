//! Responder: data arriving at this node, and read requests (spec part.md, mechanisms 3, 4, 6,
//! 11, 12).
//!
//! Every data packet is checked before memory is touched: geometry (offset, block, length),
//! then protection (exposed range, key, permission, PDID) for writes, or a matching pending read
//! for read responses. A missing page answers the block with one page-fault NACK and one fault
//! record per attempt; later packets keep flowing ("hit under previous fault").
//!
//! A block attempt is taken afresh (block policy, the spec) unless its packets carry the
//! selective flag: then the packets already held are kept across attempts (duplicates are
//! dropped unwritten), and a packet with the poll flag is answered with a SACK (the packets
//! held) while the block is incomplete, or with its ACK (again, if need be) once it is whole.

use unpinned_core::api::{
    CompletionError, FaultRecord, FaultSide, NodeId, Perms, RemoteKey, TransferKey,
};
use unpinned_core::memory::{AccessOrigin, MemError, Memory, Pdid};
use unpinned_core::time::Instant;
use unpinned_wire::{NackReason, PartRepr};

use crate::bitmap::PacketBitmap;
use crate::engine::{Ctrl, Event, PartEngine};
use crate::timers::TimerKind;

/// Receive-side state of one block of one transfer.
#[derive(Clone, Debug)]
pub struct RxBlock {
    /// Attempt being received; packets of older attempts are dropped.
    pub seq: u16,
    /// Packets of this attempt received (bit per packet index).
    pub bitmap: PacketBitmap,
    /// Packets received.
    pub received: u32,
    /// Packets in the block.
    pub expected: u32,
    /// This attempt failed (NACK sent): it will not be acknowledged.
    pub failed: bool,
    /// Acknowledged: later packets of this attempt are duplicates.
    pub done: bool,
    /// The sender retransmits selectively (its packets carry the selective flag): packets
    /// held are kept across attempts.
    pub selective: bool,
    /// Last packet seen.
    pub last: Instant,
}

/// Key of a block's receive state: the transfer's data source, id and kind, and the block id,
/// packed into one integer (the data destination is always this node). Hashing one `u128` is
/// much cheaper than hashing the fields one by one, and this lookup happens on every packet.
pub(crate) fn rx_key(transfer: TransferKey, block: u32) -> u128 {
    ((transfer.data_src as u128) << 96)
        | ((transfer.id as u128) << 64)
        | ((block as u128) << 32)
        | transfer.read_response as u128
}

/// The (transfer, block) of an [`rx_key`] at node `node`.
pub(crate) fn rx_key_parts(key: u128, node: NodeId) -> (TransferKey, u32) {
    let transfer = TransferKey {
        data_src: (key >> 96) as u32,
        data_dst: node,
        id: (key >> 64) as u32,
        read_response: key & 1 != 0,
    };
    (transfer, (key >> 32) as u32)
}

/// `a` is an older attempt than `b` (serial-number arithmetic over u16, RFC 1982).
pub fn seq_older(a: u16, b: u16) -> bool {
    a != b && b.wrapping_sub(a) < 0x8000
}

impl PartEngine {
    pub(crate) fn on_data<M: Memory>(
        &mut self,
        now: Instant,
        src: NodeId,
        repr: &PartRepr,
        mem: &mut M,
    ) {
        let PartRepr::Data {
            pdid,
            rkey,
            transfer_id,
            block_id,
            block_seq,
            flags,
            offset,
            block_len,
            xfer_base,
            xfer_len,
            payload,
        } = *repr
        else {
            unreachable!("on_data takes data packets")
        };
        let transfer = TransferKey {
            data_src: src,
            data_dst: self.node,
            id: transfer_id,
            read_response: flags.read_response,
        };
        // Geometry: the packet must lie inside its block and the block inside the transfer, at
        // a packet boundary, with the length the block implies.
        let bb = self.cfg.block_bytes as u64;
        let pb = self.cfg.packet_bytes as u64;
        let block_start = block_id as u64 * bb;
        let plen = payload.len() as u64;
        let geometry_ok = block_len as u64 <= bb
            && block_len > 0
            && block_start
                .checked_add(block_len as u64)
                .is_some_and(|e| e <= xfer_len)
            && (block_start + block_len as u64 == xfer_len || block_len as u64 == bb)
            && offset >= block_start
            && offset < block_start + block_len as u64
            && crate::config::rem_size(offset - block_start, pb) == 0
            && plen == (block_start + block_len as u64 - offset).min(pb)
            && xfer_base.checked_add(xfer_len).is_some();
        if !geometry_ok {
            self.stats.malformed_dropped += 1;
            return;
        }
        // Where the bytes go, and whether they may.
        let (dst_pdid, dst_base, allowed) = if transfer.read_response {
            match self.reads.get(&transfer_id) {
                Some(r) if r.peer == src && r.len == xfer_len => (r.local_pdid, r.local_addr, true),
                _ => (0, 0, false),
            }
        } else {
            // The whole transfer must be inside one exposure: an access that is partly outside
            // fails as a whole, and no byte of it is written.
            (
                pdid,
                xfer_base,
                self.exposures
                    .check(pdid, rkey, xfer_base, xfer_len, Perms::W),
            )
        };
        if !allowed {
            // Protection error (mechanism 12): nothing is written. For a read response this means
            // the read is not (or no longer) pending here: the target drops its response.
            self.nack_once(
                now,
                transfer,
                block_id,
                block_seq,
                NackReason::Protection,
                xfer_base + offset,
                None,
                flags.selective,
            );
            return;
        }
        // Attempt bookkeeping.
        let expected = self.cfg.packets_in(block_len);
        let keep = flags.selective;
        let Some(entry) = self.rx_attempt(now, transfer, block_id, block_seq, expected, keep)
        else {
            self.stats.stale_dropped += 1;
            return;
        };
        let index = crate::config::div_size(offset - block_start, pb) as usize;
        if entry.done || entry.bitmap.contains(index) {
            self.stats.stale_dropped += 1;
            if flags.poll {
                self.answer_poll(now, src, transfer, block_id, block_seq);
            }
            return;
        }
        let dst_addr = dst_base + offset;
        // A remote put goes through `write_from` (an Active Access memory logs it by origin).
        let written = if transfer.read_response {
            mem.write(dst_pdid, dst_addr, payload)
        } else {
            mem.write_from(
                dst_pdid,
                dst_addr,
                payload,
                &AccessOrigin {
                    peer: src,
                    transfer_id,
                    xfer_addr: xfer_base,
                    xfer_len,
                    offset,
                },
            )
        };
        match written {
            Ok(()) => {
                entry.bitmap.insert(index);
                entry.received += 1;
                if entry.received == entry.expected && !entry.failed {
                    entry.done = true;
                    self.ctrl.push_back((
                        src,
                        Ctrl::Ack {
                            transfer,
                            block: block_id,
                            seq: block_seq,
                        },
                    ));
                    if transfer.read_response {
                        self.on_read_block_done(now, transfer_id, block_id);
                    }
                } else if flags.poll && !entry.failed {
                    self.ctrl.push_back((
                        src,
                        Ctrl::Sack {
                            transfer,
                            block: block_id,
                        },
                    ));
                }
            }
            Err(MemError::NotPresent { page_addr }) => {
                let block_range = (
                    dst_base + block_start,
                    dst_base + block_start + block_len as u64,
                );
                let rec = FaultRecord {
                    side: FaultSide::Destination,
                    transfer,
                    block: block_id,
                    block_seq,
                    pdid: dst_pdid,
                    page_addr,
                    block_range,
                    transfer_range: (dst_base, dst_base + xfer_len),
                };
                self.nack_once(
                    now,
                    transfer,
                    block_id,
                    block_seq,
                    NackReason::PageFault,
                    page_addr,
                    Some(rec),
                    keep,
                );
            }
            Err(MemError::Unmapped { addr }) => {
                self.nack_once(
                    now,
                    transfer,
                    block_id,
                    block_seq,
                    NackReason::Protection,
                    addr,
                    None,
                    keep,
                );
                if transfer.read_response {
                    self.fail_read(now, src, transfer_id, CompletionError::LocalAccess);
                }
            }
            Err(MemError::NoSuchDomain(_)) => {
                self.nack_once(
                    now,
                    transfer,
                    block_id,
                    block_seq,
                    NackReason::Protection,
                    dst_addr,
                    None,
                    keep,
                );
                if transfer.read_response {
                    self.fail_read(now, src, transfer_id, CompletionError::LocalAccess);
                }
            }
        }
    }

    /// NACK an attempt once (and log its fault record once): the first failing packet of an
    /// attempt decides; later failing packets of the same attempt add nothing.
    #[allow(clippy::too_many_arguments)]
    fn nack_once(
        &mut self,
        now: Instant,
        transfer: TransferKey,
        block: u32,
        seq: u16,
        reason: NackReason,
        addr: u64,
        rec: Option<FaultRecord>,
        keep: bool,
    ) {
        // The packet count is irrelevant for a failed attempt: keep what the entry has.
        let expected = self
            .rx
            .get(rx_key(transfer, block))
            .map_or(1, |e| e.expected);
        let Some(entry) = self.rx_attempt(now, transfer, block, seq, expected, keep) else {
            return;
        };
        if entry.failed {
            return;
        }
        entry.failed = true;
        self.ctrl.push_back((
            transfer.data_src,
            Ctrl::Nack {
                transfer,
                block,
                seq,
                reason,
                addr,
            },
        ));
        if let Some(rec) = rec {
            self.events.push_back(Event::Fault(rec));
        }
    }

    /// The receive state of attempt `seq` of a block: created on first sight, reset when a
    /// newer attempt starts (unless `keep`: a selective sender's packets already held stay);
    /// `None` for a packet of an older attempt (to be dropped).
    #[inline(always)]
    fn rx_attempt(
        &mut self,
        now: Instant,
        transfer: TransferKey,
        block: u32,
        seq: u16,
        expected: u32,
        keep: bool,
    ) -> Option<&mut RxBlock> {
        if self.rx.is_empty() {
            self.arm_rx_gc(now);
        }
        let pool = &mut self.bitmap_pool;
        debug_assert_eq!(
            transfer.data_dst, self.node,
            "receive state is for data arriving here"
        );
        let entry = self
            .rx
            .get_or_insert_with(rx_key(transfer, block), || RxBlock {
                seq,
                bitmap: new_bitmap(pool, expected),
                received: 0,
                expected,
                failed: false,
                done: false,
                selective: keep,
                last: now,
            });
        if seq_older(seq, entry.seq) {
            return None;
        }
        if keep && entry.selective && seq != entry.seq && entry.expected == expected {
            // A new selective attempt: the packets held stay, the attempt may succeed.
            entry.seq = seq;
            entry.failed = false;
        } else if seq != entry.seq || entry.expected != expected {
            entry.selective = keep;
            entry.seq = seq;
            entry.bitmap.reset(expected);
            entry.received = 0;
            entry.expected = expected;
            entry.failed = false;
            entry.done = false;
        }
        entry.last = now;
        Some(entry)
    }

    /// A duplicate packet polls (selective policy): ACK the block if it is whole (again: the
    /// ACK may have been lost), else report the packets held in a SACK. A failed attempt is
    /// not answered: its ERR or the sender's timer resumes it.
    fn answer_poll(
        &mut self,
        now: Instant,
        src: NodeId,
        transfer: TransferKey,
        block: u32,
        seq: u16,
    ) {
        let Some(e) = self.rx.get_mut(rx_key(transfer, block)) else {
            return;
        };
        if e.failed {
            return;
        }
        if e.received == e.expected {
            let newly = !e.done;
            e.done = true;
            self.ctrl.push_back((
                src,
                Ctrl::Ack {
                    transfer,
                    block,
                    seq,
                },
            ));
            if newly && transfer.read_response {
                self.on_read_block_done(now, transfer.id, block);
            }
        } else {
            self.ctrl.push_back((src, Ctrl::Sack { transfer, block }));
        }
    }

    /// A data packet failed its checksum: NACK its block so the source resends at once
    /// (mechanism 6). The named block is untrusted; the source ignores unknown blocks.
    pub(crate) fn on_corrupt_data(
        &mut self,
        _now: Instant,
        transfer: TransferKey,
        block: u32,
        seq: u16,
    ) {
        if let Some(e) = self.rx.get(rx_key(transfer, block)) {
            if e.done && e.seq == seq {
                return;
            }
        }
        self.ctrl.push_back((
            transfer.data_src,
            Ctrl::Nack {
                transfer,
                block,
                seq,
                reason: NackReason::Crc,
                addr: 0,
            },
        ));
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn on_read_request(
        &mut self,
        now: Instant,
        src: NodeId,
        pdid: Pdid,
        rkey: RemoteKey,
        id: u32,
        reply_pdid: Pdid,
        remote_addr: u64,
        local_addr: u64,
        len: u64,
    ) {
        let transfer = TransferKey {
            data_src: self.node,
            data_dst: src,
            id,
            read_response: true,
        };
        if self.tx_index.contains_key(&transfer) {
            // A resent request for a response already under way: its own timers cover losses.
            self.stats.stale_dropped += 1;
            return;
        }
        let sane = len > 0
            && local_addr.checked_add(len).is_some()
            && len.div_ceil(self.cfg.block_bytes as u64) <= u32::MAX as u64;
        if !sane
            || !self
                .exposures
                .allows(pdid, rkey, remote_addr, len, Perms::R)
        {
            self.ctrl.push_back((
                src,
                Ctrl::Nack {
                    transfer,
                    block: 0,
                    seq: 0,
                    reason: NackReason::ReadRefused,
                    addr: remote_addr,
                },
            ));
            return;
        }
        // Mechanism 11: the read is carried out as a write back to the initiator.
        self.start_transfer(
            now,
            transfer,
            None,
            pdid,
            remote_addr,
            reply_pdid,
            local_addr,
            0,
            len,
        );
    }

    fn arm_rx_gc(&mut self, now: Instant) {
        if self.rx_gc_at.is_none() {
            let at = now + self.cfg.rx_idle;
            self.rx_gc_at = Some(at);
            self.timers.push(at, TimerKind::RxGc);
        }
    }

    pub(crate) fn on_rx_gc(&mut self, now: Instant, at: Instant) {
        if self.rx_gc_at != Some(at) {
            return;
        }
        self.rx_gc_at = None;
        let idle = self.cfg.rx_idle;
        let pool = &mut self.bitmap_pool;
        self.rx.retain(|_, b| {
            let keep = now.saturating_since(b.last) < idle;
            if !keep {
                let rest = b.bitmap.take_rest();
                if rest.capacity() > 0 {
                    pool.push(rest);
                }
            }
            keep
        });
        if !self.rx.is_empty() {
            self.arm_rx_gc(now);
        }
    }
}

fn new_bitmap(pool: &mut Vec<Vec<u64>>, packets: u32) -> PacketBitmap {
    if packets <= 64 {
        return PacketBitmap::new(packets);
    }
    PacketBitmap::with_rest(packets, pool.pop().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_numbers_wrap() {
        assert!(seq_older(1, 2));
        assert!(!seq_older(2, 1));
        assert!(!seq_older(5, 5));
        assert!(seq_older(u16::MAX, 0), "wrap-around: 65535 is older than 0");
        assert!(!seq_older(0, u16::MAX));
    }

    #[test]
    fn rx_keys_round_trip_and_differ_per_field() {
        let t = TransferKey {
            data_src: 0xdead_beef,
            data_dst: 3,
            id: u32::MAX,
            read_response: true,
        };
        assert_eq!(rx_key_parts(rx_key(t, u32::MAX - 1), 3), (t, u32::MAX - 1));
        let u = TransferKey {
            read_response: false,
            ..t
        };
        assert_eq!(rx_key_parts(rx_key(u, 0), 3), (u, 0));
        let keys = [
            rx_key(t, 1),
            rx_key(u, 1),
            rx_key(t, 2),
            rx_key(TransferKey { id: 1, ..t }, 1),
            rx_key(TransferKey { data_src: 1, ..t }, 1),
        ];
        for (i, a) in keys.iter().enumerate() {
            assert!(keys[i + 1..].iter().all(|b| a != b));
        }
    }
}
