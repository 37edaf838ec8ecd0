//! The requester: transmission from the send queue, go-back-N, and the ACK timer (odp.md,
//! "RC transport").

use unpinned_core::memory::Memory;
use unpinned_core::time::Instant;
use unpinned_wire::rc::RcRepr;

use crate::engine::{FaultSide, IbOp, RcEngine, Transmit, WcError};
use crate::odp::AccessError;
use crate::qp::Block;
use crate::timers::TimerKind;

impl RcEngine {
    /// The next request packet of QP `qi`, if it may send: connected, not in error, not
    /// waiting (RNR delay or local fault), and with an entry at the send pointer.
    pub(crate) fn requester_transmit(
        &mut self,
        now: Instant,
        qi: usize,
        buf: &mut [u8],
        mem: &mut dyn Memory,
    ) -> Option<Transmit> {
        let qp = &self.qps[qi];
        if qp.error || qp.req.block != Block::None || qp.req.send_idx >= qp.req.sq.len() {
            return None;
        }
        let peer = qp.peer?;
        let pdid = qp.attrs.pdid;
        let w = qp.req.sq[qp.req.send_idx];
        // WRITE and SEND gather their bytes now: a missing local page halts the QP until the
        // driver resolves it (odp.md, "local fault").
        let n = w.wr.len as usize;
        if w.wr.op != IbOp::Read {
            match self
                .odp
                .check_local(pdid, w.wr.local_addr, u64::from(w.wr.len))
            {
                Ok(()) => {}
                Err(AccessError::Fault { page }) => {
                    self.qps[qi].req.block = Block::LocalFault { pdid, page };
                    self.raise_fault(FaultSide::Requester, qi, page);
                    return None;
                }
                Err(AccessError::Protection) => {
                    // Only the head can be failed in order; an error further down the queue
                    // waits until everything before it completed.
                    if self.qps[qi].req.send_idx == 0 {
                        self.fail_qp(now, qi, WcError::LocalProtection);
                    }
                    return None;
                }
            }
            if n > 0
                && mem
                    .read(pdid, w.wr.local_addr, &mut self.scratch[..n])
                    .is_err()
            {
                if self.qps[qi].req.send_idx == 0 {
                    self.fail_qp(now, qi, WcError::LocalProtection);
                }
                return None;
            }
        }
        let (dest_qpn, psn) = (peer.peer_qpn, w.psn.get());
        let repr = match w.wr.op {
            IbOp::Read => RcRepr::ReadReq {
                dest_qpn,
                psn,
                va: w.wr.remote_addr,
                rkey: w.wr.rkey,
                len: w.wr.len,
            },
            IbOp::Write => RcRepr::Write {
                dest_qpn,
                psn,
                va: w.wr.remote_addr,
                rkey: w.wr.rkey,
                payload: &self.scratch[..n],
            },
            IbOp::Send => RcRepr::Send {
                dest_qpn,
                psn,
                payload: &self.scratch[..n],
            },
        };
        let len = repr.emit(buf).ok()?;
        let q = &mut self.qps[qi].req;
        q.send_idx += 1;
        self.stats.requests_sent += 1;
        match q.highest_sent {
            Some(h) if !w.psn.after(h) => self.stats.retransmissions += 1,
            _ => q.highest_sent = Some(w.psn),
        }
        self.start_scan(now, qi);
        Some(Transmit {
            dst: peer.peer_node,
            len,
        })
    }

    /// Make sure the ACK-timer scan of QP `qi` runs (requests are in flight).
    pub(crate) fn start_scan(&mut self, now: Instant, qi: usize) {
        let q = &mut self.qps[qi].req;
        if q.scanning {
            return;
        }
        if let Some(clock) = q.clock {
            q.scanning = true;
            q.strikes = 0;
            self.timers.push(
                clock.next_after(now),
                TimerKind::AckScan {
                    qp: qi as u32,
                    gen: q.scan_gen,
                },
            );
        }
    }

    /// An ACK-timer scan of QP `qi` (odp.md, "ACK timeout"; mechanism in [`crate::ack_timer`]).
    /// A QP with requests in flight and no progress for `scans_to_expire` scans times out:
    /// it retransmits from the oldest unacknowledged request (go-back-N), or, with its retry
    /// count spent, fails with RETRY_EXC_ERR. A QP with nothing in flight, or waiting on an RNR
    /// delay or a local fault, stops scanning (the timer is not armed during those waits).
    pub(crate) fn on_scan(&mut self, now: Instant, qi: usize, gen: u32) {
        let scans = self.cfg.scans_to_expire;
        let qp = &mut self.qps[qi];
        let q = &mut qp.req;
        if gen != q.scan_gen || !q.scanning {
            return;
        }
        let in_flight = !qp.error && q.block == Block::None && q.send_idx > 0;
        if !in_flight {
            q.scanning = false;
            q.strikes = 0;
            return;
        }
        q.strikes += 1;
        if q.strikes >= scans {
            q.strikes = 0;
            self.stats.timeouts += 1;
            if q.retries_left == 0 {
                self.fail_qp(now, qi, WcError::RetryExceeded);
                return;
            }
            q.retries_left -= 1;
            q.send_idx = 0;
        }
        let clock = q.clock.expect("scanning implies a clock");
        self.timers.push(
            clock.next_after(now),
            TimerKind::AckScan {
                qp: qi as u32,
                gen: q.scan_gen,
            },
        );
    }
}
