//! The requester's side of acknowledgements: ACKs, NAKs and READ responses (odp.md, "RC
//! transport" and "local fault").

use unpinned_core::memory::Memory;
use unpinned_core::time::{Duration, Instant};
use unpinned_wire::rc::{NakCode, Syndrome};

use crate::engine::{FaultSide, IbOp, RcEngine, WcError};
use crate::odp::AccessError;
use crate::psn::Psn;
use crate::qp::Block;
use crate::rnr;
use crate::timers::TimerKind;

/// A response as the completer sees it.
pub(crate) enum Resp<'a> {
    /// ACK / RNR NAK / NAK.
    Ack(Syndrome),
    /// READ response data.
    ReadResp(&'a [u8]),
}

impl RcEngine {
    /// A response for PSN `psn` on QP `qi`.
    ///
    /// Every request before `psn` is acknowledged implicitly (a WRITE / SEND completes; a READ
    /// whose response never came means that response was lost: go-back-N from it). Then the
    /// response itself: an ACK completes, READ data completes (or, on a missing local page, is
    /// dropped and the QP halts until the fault is resolved, then replays from this READ), an
    /// RNR NAK makes the QP wait `rnr_delay_factor` times the NAK's delay and resend from
    /// `psn`, a sequence-error NAK resends from `psn` at once, other NAKs fail the QP.
    pub(crate) fn on_response(
        &mut self,
        now: Instant,
        qi: usize,
        psn: Psn,
        resp: Resp<'_>,
        mem: &mut dyn Memory,
    ) {
        let qp = &self.qps[qi];
        if qp.error {
            return;
        }
        if matches!(qp.req.block, Block::LocalFault { .. }) {
            // The QP is halted on a page fault: the NIC drops what arrives meanwhile and
            // replays from the faulting request when it resumes.
            self.stats.responses_dropped += 1;
            return;
        }
        let (Some(front), Some(highest)) = (qp.req.sq.front(), qp.req.highest_sent) else {
            return;
        };
        let idx = psn.diff(front.psn);
        if idx < 0 || psn.after(highest) || idx as usize >= qp.req.sq.len() {
            return; // stale duplicate, or a PSN never sent
        }
        let mut progress = false;
        for _ in 0..idx {
            if self.qps[qi].req.sq[0].wr.op == IbOp::Read {
                // Implied sequence error: this READ's response was lost.
                self.progress(qi, progress);
                self.qps[qi].req.send_idx = 0;
                return;
            }
            self.complete_front(now, qi, Ok(()));
            progress = true;
        }
        let head = self.qps[qi].req.sq[0];
        match resp {
            Resp::Ack(Syndrome::Ack) => {
                if head.wr.op == IbOp::Read {
                    self.progress(qi, progress);
                    self.qps[qi].req.send_idx = 0;
                    return;
                }
                self.complete_front(now, qi, Ok(()));
                progress = true;
            }
            Resp::ReadResp(data) => {
                if head.wr.op != IbOp::Read || data.len() != head.wr.len as usize {
                    self.progress(qi, progress);
                    return;
                }
                let pdid = self.qps[qi].attrs.pdid;
                match self
                    .odp
                    .check_local(pdid, head.wr.local_addr, u64::from(head.wr.len))
                {
                    Err(AccessError::Fault { page }) => {
                        self.stats.responses_dropped += 1;
                        let q = &mut self.qps[qi].req;
                        q.block = Block::LocalFault { pdid, page };
                        q.send_idx = 0;
                        self.raise_fault(FaultSide::Requester, qi, page);
                        self.progress(qi, progress);
                        return;
                    }
                    Err(AccessError::Protection) => {
                        self.fail_qp(now, qi, WcError::LocalProtection);
                        return;
                    }
                    Ok(()) => {
                        if !data.is_empty() && mem.write(pdid, head.wr.local_addr, data).is_err() {
                            self.fail_qp(now, qi, WcError::LocalProtection);
                            return;
                        }
                        self.complete_front(now, qi, Ok(()));
                        progress = true;
                    }
                }
            }
            Resp::Ack(Syndrome::RnrNak { timer }) => {
                self.stats.rnr_naks_received += 1;
                self.progress(qi, progress);
                let factor = self.cfg.rnr_delay_factor;
                let infinite = self.qps[qi].attrs.rnr_retry >= 7;
                let q = &mut self.qps[qi].req;
                if !infinite {
                    if q.rnr_retries_left == 0 {
                        self.fail_qp(now, qi, WcError::RnrRetryExceeded);
                        return;
                    }
                    q.rnr_retries_left -= 1;
                }
                let wait = Duration((rnr::delay_of(timer).0 as f64 * factor).round() as u64);
                q.block = Block::Rnr;
                q.send_idx = 0;
                q.rnr_gen += 1;
                self.timers.push(
                    now + wait,
                    TimerKind::RnrDone {
                        qp: qi as u32,
                        gen: q.rnr_gen,
                    },
                );
                return;
            }
            Resp::Ack(Syndrome::Nak(NakCode::PsnSequenceError)) => {
                self.stats.seq_naks_received += 1;
                self.progress(qi, progress);
                let q = &mut self.qps[qi].req;
                if q.retries_left == 0 {
                    self.fail_qp(now, qi, WcError::RetryExceeded);
                    return;
                }
                q.retries_left -= 1;
                q.send_idx = 0;
                return;
            }
            Resp::Ack(Syndrome::Nak(code)) => {
                let err = match code {
                    NakCode::RemoteAccessError => WcError::RemoteAccess,
                    NakCode::InvalidRequest => WcError::RemoteInvalidRequest,
                    _ => WcError::RemoteOperational,
                };
                self.fail_qp(now, qi, err);
                return;
            }
        }
        self.progress(qi, progress);
    }

    /// Forward progress resets the ACK timer's strikes and the retry count.
    fn progress(&mut self, qi: usize, progress: bool) {
        if progress {
            let qp = &mut self.qps[qi];
            qp.req.strikes = 0;
            qp.req.retries_left = qp.attrs.retry_cnt.min(7);
            qp.req.rnr_retries_left = qp.attrs.rnr_retry.min(7);
        }
    }
}
