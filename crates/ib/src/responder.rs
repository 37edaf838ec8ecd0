//! The responder: in-order execution, duplicates, sequence-error NAKs, RNR NAKs for remote page
//! faults, and the ODP loss model (odp.md, "RC transport", "remote fault", "the pitfall").

use unpinned_core::memory::Memory;
use unpinned_core::time::Instant;
use unpinned_wire::rc::{NakCode, Syndrome};

use crate::engine::{Event, FaultSide, Out, RcEngine, WcOp, WorkCompletion};
use crate::odp::AccessError;
use crate::psn::Psn;
use crate::rnr;

/// A request as the responder sees it.
pub(crate) enum Req<'a> {
    Read {
        va: u64,
        rkey: u32,
        len: u32,
    },
    Write {
        va: u64,
        rkey: u32,
        payload: &'a [u8],
    },
    Send {
        payload: &'a [u8],
    },
}

/// Outcome of executing one request.
enum Exec {
    Done,
    /// Not ready (remote fault or no receive buffer): RNR NAK, expected PSN unchanged.
    NotReady,
    /// NAKed with an error.
    Failed,
}

impl RcEngine {
    /// A request with PSN `psn` on QP `qi`.
    ///
    /// First the loss model may discard it silently (odp.md, "the pitfall"). Then, relative to
    /// the expected PSN: ahead -> one PSN-sequence-error NAK per sequence error (dropped
    /// silently while an RNR NAK is pending: the requester resends from there anyway); behind
    /// -> a duplicate: a READ is executed again (READs are idempotent), a WRITE / SEND is only
    /// acknowledged again; equal -> executed in order.
    pub(crate) fn on_request(
        &mut self,
        now: Instant,
        qi: usize,
        psn: Psn,
        req: Req<'_>,
        mem: &mut dyn Memory,
    ) {
        if self.qps[qi].error {
            return;
        }
        let r = &mut self.qps[qi].resp;
        let d = psn.diff(r.epsn);
        let replay = d < 0 || r.rnr_pending == Some(psn);
        if r.loss.discard(now, replay) {
            self.stats.loss_model_discards += 1;
            return;
        }
        if d > 0 {
            if r.rnr_pending.is_none() && !r.nak_sent {
                r.nak_sent = true;
                let (epsn, msn) = (r.epsn, r.msn);
                self.stats.seq_naks_sent += 1;
                self.out.push_back((
                    qi as u32,
                    Out::Ack {
                        psn: epsn,
                        msn,
                        syndrome: Syndrome::Nak(NakCode::PsnSequenceError),
                    },
                ));
            } else {
                self.stats.out_of_sequence_dropped += 1;
            }
            return;
        }
        if d < 0 {
            match req {
                Req::Read { va, rkey, len } => {
                    self.exec_read(qi, psn, va, rkey, len, mem);
                }
                _ => {
                    let msn = self.qps[qi].resp.msn;
                    self.out.push_back((
                        qi as u32,
                        Out::Ack {
                            psn,
                            msn,
                            syndrome: Syndrome::Ack,
                        },
                    ));
                }
            }
            return;
        }
        let res = match req {
            Req::Read { va, rkey, len } => self.exec_read(qi, psn, va, rkey, len, mem),
            Req::Write { va, rkey, payload } => self.exec_write(qi, psn, va, rkey, payload, mem),
            Req::Send { payload } => self.exec_send(now, qi, psn, payload, mem),
        };
        let r = &mut self.qps[qi].resp;
        match res {
            Exec::Done => {
                r.epsn = psn.next();
                r.msn = (r.msn + 1) & unpinned_wire::rc::MASK_24;
                r.rnr_pending = None;
                r.nak_sent = false;
            }
            Exec::NotReady => r.rnr_pending = Some(psn),
            Exec::Failed => {}
        }
    }

    fn rnr_nak(&mut self, qi: usize, psn: Psn) {
        let code = rnr::code_for(self.qps[qi].attrs.min_rnr_delay);
        let msn = self.qps[qi].resp.msn;
        self.stats.rnr_naks_sent += 1;
        self.out.push_back((
            qi as u32,
            Out::Ack {
                psn,
                msn,
                syndrome: Syndrome::RnrNak { timer: code },
            },
        ));
    }

    fn nak(&mut self, qi: usize, psn: Psn, code: NakCode) {
        let msn = self.qps[qi].resp.msn;
        self.out.push_back((
            qi as u32,
            Out::Ack {
                psn,
                msn,
                syndrome: Syndrome::Nak(code),
            },
        ));
    }

    /// Check a remote access; a missing translation is a remote fault: RNR NAK now, page-in
    /// by the driver (odp.md, "remote fault").
    fn remote_check(
        &mut self,
        qi: usize,
        psn: Psn,
        va: u64,
        rkey: u32,
        len: u32,
        write: bool,
    ) -> Option<Exec> {
        if len > self.cfg.mtu {
            self.nak(qi, psn, NakCode::InvalidRequest);
            return Some(Exec::Failed);
        }
        let pdid = self.qps[qi].attrs.pdid;
        match self.odp.check_remote(pdid, rkey, va, u64::from(len), write) {
            Ok(()) => None,
            Err(AccessError::Protection) => {
                self.nak(qi, psn, NakCode::RemoteAccessError);
                Some(Exec::Failed)
            }
            Err(AccessError::Fault { page }) => {
                self.raise_fault(FaultSide::Responder, qi, page);
                self.rnr_nak(qi, psn);
                Some(Exec::NotReady)
            }
        }
    }

    fn exec_read(
        &mut self,
        qi: usize,
        psn: Psn,
        va: u64,
        rkey: u32,
        len: u32,
        mem: &mut dyn Memory,
    ) -> Exec {
        if let Some(e) = self.remote_check(qi, psn, va, rkey, len, false) {
            return e;
        }
        let pdid = self.qps[qi].attrs.pdid;
        let mut data = vec![0u8; len as usize];
        if len > 0 && mem.read(pdid, va, &mut data).is_err() {
            self.nak(qi, psn, NakCode::RemoteAccessError);
            return Exec::Failed;
        }
        let msn = self.qps[qi].resp.msn.wrapping_add(1) & unpinned_wire::rc::MASK_24;
        self.out
            .push_back((qi as u32, Out::ReadResp { psn, msn, data }));
        Exec::Done
    }

    fn exec_write(
        &mut self,
        qi: usize,
        psn: Psn,
        va: u64,
        rkey: u32,
        payload: &[u8],
        mem: &mut dyn Memory,
    ) -> Exec {
        if let Some(e) = self.remote_check(qi, psn, va, rkey, payload.len() as u32, true) {
            return e;
        }
        let pdid = self.qps[qi].attrs.pdid;
        if !payload.is_empty() && mem.write(pdid, va, payload).is_err() {
            self.nak(qi, psn, NakCode::RemoteAccessError);
            return Exec::Failed;
        }
        let msn = self.qps[qi].resp.msn.wrapping_add(1) & unpinned_wire::rc::MASK_24;
        self.out.push_back((
            qi as u32,
            Out::Ack {
                psn,
                msn,
                syndrome: Syndrome::Ack,
            },
        ));
        Exec::Done
    }

    /// A SEND needs a receive buffer: none posted is the classic RNR case; a missing page of
    /// the buffer is a remote fault (RNR NAK as well).
    fn exec_send(
        &mut self,
        now: Instant,
        qi: usize,
        psn: Psn,
        payload: &[u8],
        mem: &mut dyn Memory,
    ) -> Exec {
        let Some(&rwr) = self.qps[qi].resp.rq.front() else {
            self.rnr_nak(qi, psn);
            return Exec::NotReady;
        };
        if payload.len() > rwr.len as usize {
            self.nak(qi, psn, NakCode::InvalidRequest);
            return Exec::Failed;
        }
        let pdid = self.qps[qi].attrs.pdid;
        match self.odp.check_local(pdid, rwr.addr, payload.len() as u64) {
            Ok(()) => {}
            Err(AccessError::Protection) => {
                self.nak(qi, psn, NakCode::RemoteOperationalError);
                return Exec::Failed;
            }
            Err(AccessError::Fault { page }) => {
                self.raise_fault(FaultSide::Responder, qi, page);
                self.rnr_nak(qi, psn);
                return Exec::NotReady;
            }
        }
        if !payload.is_empty() && mem.write(pdid, rwr.addr, payload).is_err() {
            self.nak(qi, psn, NakCode::RemoteOperationalError);
            return Exec::Failed;
        }
        self.qps[qi].resp.rq.pop_front();
        let qpn = self.qps[qi].qpn;
        self.events.push_back(Event::Completion(WorkCompletion {
            qpn,
            wr_id: rwr.wr_id,
            op: WcOp::Recv,
            status: Ok(()),
            len: payload.len() as u32,
            at: now,
        }));
        let msn = self.qps[qi].resp.msn.wrapping_add(1) & unpinned_wire::rc::MASK_24;
        self.out.push_back((
            qi as u32,
            Out::Ack {
                psn,
                msn,
                syndrome: Syndrome::Ack,
            },
        ));
        Exec::Done
    }
}
