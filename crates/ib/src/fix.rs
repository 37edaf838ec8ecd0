//! The software-timer fix (odp.md, "The proposed fix"): a library-level timer with a fine
//! granularity that watches each QP's outstanding requests; when the oldest has been
//! outstanding longer than a threshold, it posts a small dummy request on the same QP. The
//! responder then sees a PSN gap behind the lost request, NAKs with a sequence error, and the
//! requester retransmits at once instead of waiting for the coarse hardware ACK timeout.
//!
//! **One dummy per silence.** A dummy is posted only if the QP completed something (a request
//! or an earlier dummy) since the previous dummy was posted. While the QP has been silent since
//! that dummy, it is still queued behind a fault wait, in flight, or lost with the stall it was
//! meant to break (dropped as out of sequence behind an unanswered sequence-error NAK, lost on
//! the wire, discarded by the loss model); a second one would be sent with it or dropped the
//! same way, and so adds nothing: only the hardware ACK timeout recovers such a QP. A
//! completion since the dummy means the QP moved and the dummy did not unblock it (it was
//! discarded in the replay burst, odp.md's pitfall), so the next one may. The bound uses only
//! what a library sees (its posts and its completions). Without it the dummies of a long stall
//! stay in the send queue (one per threshold: thousands per hardware timeout), every go-back-N
//! round resends them all, and under packet loss the READ responses of that queue keep the QP
//! in go-back-N: the dummies then pile up faster than they complete (docs/vopr.md).
//!
//! Sans-IO like the engine: the host calls [`SoftwareTimerFix::on_post`] and
//! [`SoftwareTimerFix::on_completion`] around the engine, and at [`SoftwareTimerFix::poll_timeout`]
//! calls [`SoftwareTimerFix::handle_timeout`], which returns the dummies to post. The dummy is a
//! zero-length RDMA READ (it touches no memory, so it can neither fault nor need a valid key);
//! its completion is hidden from the application.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;
use unpinned_core::time::{Duration, Instant};

use crate::engine::{IbOp, Qpn, SendWr, WorkCompletion};

/// Work-request ids with this bit set are the fix's dummies.
pub const DUMMY_WR_TAG: u64 = 1 << 63;

/// Parameters of the fix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FixConfig {
    /// Timer period (granularity).
    pub period: Duration,
    /// Age of the oldest outstanding request that triggers a dummy; also the least time
    /// between two dummies on one QP (which also needs a completion in between: module docs).
    pub threshold: Duration,
}

#[derive(Debug, Default)]
struct Watched {
    /// Outstanding application requests: (wr_id, posted at), in post order.
    outstanding: VecDeque<(u64, Instant)>,
    last_dummy: Option<Instant>,
    /// No completion on this QP since its last dummy was posted (the dummy is still queued,
    /// in flight, or lost together with the stall it was meant to break).
    quiet_since_dummy: bool,
    /// Remote address / key of the latest request (the dummy targets the same region).
    target: Option<(u64, u32)>,
}

/// The library-level timer.
#[derive(Debug)]
pub struct SoftwareTimerFix {
    cfg: FixConfig,
    qps: FxHashMap<Qpn, Watched>,
    next_tick: Option<Instant>,
    next_dummy: u64,
    /// Dummies posted so far.
    pub dummies_posted: u64,
}

impl SoftwareTimerFix {
    /// A timer with these parameters (nothing watched yet).
    pub fn new(cfg: FixConfig) -> SoftwareTimerFix {
        SoftwareTimerFix {
            cfg,
            qps: FxHashMap::default(),
            next_tick: None,
            next_dummy: 0,
            dummies_posted: 0,
        }
    }

    /// The application posted `wr` on `qpn` at `now`.
    pub fn on_post(&mut self, now: Instant, qpn: Qpn, wr: &SendWr) {
        let w = self.qps.entry(qpn).or_default();
        w.outstanding.push_back((wr.wr_id, now));
        if wr.op != IbOp::Send {
            w.target = Some((wr.remote_addr, wr.rkey));
        }
        if self.next_tick.is_none() {
            self.next_tick = Some(now + self.cfg.period);
        }
    }

    /// A completion came out of the engine. Returns true if it is a dummy's (the library
    /// swallows it).
    pub fn on_completion(&mut self, wc: &WorkCompletion) -> bool {
        let w = self.qps.get_mut(&wc.qpn);
        if wc.wr_id & DUMMY_WR_TAG != 0 {
            if let Some(w) = w {
                w.quiet_since_dummy = false;
            }
            return true;
        }
        if let Some(w) = w {
            w.quiet_since_dummy = false;
            if let Some(i) = w.outstanding.iter().position(|(id, _)| *id == wc.wr_id) {
                w.outstanding.remove(i);
            }
        }
        false
    }

    /// When the timer fires next (None while nothing is outstanding).
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.next_tick
    }

    /// The timer fired: the dummies to post now, as (QP, work request).
    pub fn handle_timeout(&mut self, now: Instant) -> Vec<(Qpn, SendWr)> {
        let mut dummies = Vec::new();
        match self.next_tick {
            Some(t) if t <= now => {}
            _ => return dummies,
        }
        let mut any = false;
        let mut qpns: Vec<Qpn> = self.qps.keys().copied().collect();
        qpns.sort_unstable(); // deterministic order
        for qpn in qpns {
            let w = self.qps.get_mut(&qpn).expect("listed");
            let Some(&(_, oldest)) = w.outstanding.front() else {
                continue;
            };
            any = true;
            let stalled = now.saturating_since(oldest) >= self.cfg.threshold;
            let spaced = w
                .last_dummy
                .is_none_or(|t| now.saturating_since(t) >= self.cfg.threshold);
            if let (true, true, false, Some((addr, rkey))) =
                (stalled, spaced, w.quiet_since_dummy, w.target)
            {
                w.last_dummy = Some(now);
                w.quiet_since_dummy = true;
                self.next_dummy += 1;
                self.dummies_posted += 1;
                dummies.push((
                    qpn,
                    SendWr {
                        wr_id: DUMMY_WR_TAG | self.next_dummy,
                        op: IbOp::Read,
                        local_addr: 0,
                        len: 0,
                        remote_addr: addr,
                        rkey,
                    },
                ));
            }
        }
        self.next_tick = if any {
            Some(now + self.cfg.period)
        } else {
            None
        };
        dummies
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::WcOp;

    fn read(id: u64) -> SendWr {
        SendWr {
            wr_id: id,
            op: IbOp::Read,
            local_addr: 0x1000,
            len: 100,
            remote_addr: 0x2000,
            rkey: 7,
        }
    }

    #[test]
    fn posts_a_dummy_after_the_threshold_and_hides_its_completion() {
        let mut f = SoftwareTimerFix::new(FixConfig {
            period: Duration::from_us(100),
            threshold: Duration::from_us(250),
        });
        f.on_post(Instant(0), 5, &read(1));
        assert_eq!(f.poll_timeout(), Some(Instant(100_000)));
        assert!(f.handle_timeout(Instant(100_000)).is_empty());
        assert!(f.handle_timeout(Instant(200_000)).is_empty());
        let d = f.handle_timeout(Instant(300_000));
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].0, 5);
        assert_eq!(
            (d[0].1.len, d[0].1.remote_addr, d[0].1.rkey),
            (0, 0x2000, 7)
        );
        assert!(
            f.handle_timeout(Instant(400_000)).is_empty(),
            "spaced by the threshold"
        );
        assert!(
            f.handle_timeout(Instant(600_000)).is_empty(),
            "no completion since the last dummy: a second adds nothing"
        );
        let wc = |id| WorkCompletion {
            qpn: 5,
            wr_id: id,
            op: WcOp::Read,
            status: Ok(()),
            len: 0,
            at: Instant(0),
        };
        assert!(f.on_completion(&wc(d[0].1.wr_id)));
        assert_eq!(
            f.handle_timeout(Instant(700_000)).len(),
            1,
            "the dummy completed, the request is still stalled"
        );
        assert!(!f.on_completion(&wc(1)));
        assert!(f.handle_timeout(Instant(800_000)).is_empty());
        assert_eq!(f.poll_timeout(), None, "stops when nothing is outstanding");
    }

    #[test]
    fn a_completion_of_an_earlier_request_allows_the_next_dummy() {
        let mut f = SoftwareTimerFix::new(FixConfig {
            period: Duration::from_us(100),
            threshold: Duration::from_us(100),
        });
        f.on_post(Instant(0), 5, &read(1));
        f.on_post(Instant(0), 5, &read(2));
        f.on_post(Instant(0), 6, &read(3));
        // Both QPs stalled: one dummy each.
        assert_eq!(f.handle_timeout(Instant(100_000)).len(), 2);
        // QP 5 moves (its first READ completes; the dummy, behind READ 2, does not): the dummy
        // did not unblock it, so the next one may. QP 6 stays silent: no second dummy.
        let wc = WorkCompletion {
            qpn: 5,
            wr_id: 1,
            op: WcOp::Read,
            status: Ok(()),
            len: 100,
            at: Instant(150_000),
        };
        assert!(!f.on_completion(&wc));
        let d = f.handle_timeout(Instant(200_000));
        assert_eq!(d.iter().map(|(q, _)| *q).collect::<Vec<_>>(), vec![5]);
        assert!(f.handle_timeout(Instant(300_000)).is_empty());
        assert_eq!(f.dummies_posted, 3);
    }
}
