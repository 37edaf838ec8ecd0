//! Handler notification (spec "Notifying the CPU"): when does the handler of a log run?
//!
//! (a) an interrupt when the log passes a fill threshold, or after a period if it does not;
//! (b) polling of head/tail by a runtime thread at an interval;
//! (c) a scratchpad next to the CPU holding head/tail, polled by a dedicated hardware thread.
//!
//! Sans-IO: the driver reports publications and drains; the notifier answers with the instant
//! the handler should be woken. What a wake *costs* (interrupt entry, a memory access to read
//! the tail, a scratchpad access) is the driver's calibration.

use unpinned_core::time::{Duration, Instant};

/// How the handler learns about new entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotifyPolicy {
    /// Interrupt once `threshold` entries are waiting, or `period` after the first waiting
    /// entry if the threshold is not reached (so a trickle is not stranded).
    Interrupt {
        /// Entries that trigger an interrupt.
        threshold: u64,
        /// Longest wait of an entry below the threshold.
        period: Duration,
    },
    /// A runtime thread reads head/tail every `interval` (phase 0).
    Polling {
        /// Poll period.
        interval: Duration,
    },
    /// A hardware thread polls the scratchpad continuously; one poll takes `poll`.
    Scratchpad {
        /// One scratchpad poll.
        poll: Duration,
    },
}

/// Why the handler was woken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WakeReason {
    /// Fill threshold reached (interrupt).
    Threshold,
    /// Period expired (interrupt).
    Period,
    /// A poll found entries.
    Poll,
}

/// A scheduled handler wake.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wake {
    /// When.
    pub at: Instant,
    /// Why.
    pub reason: WakeReason,
}

/// Notification state of one log.
#[derive(Clone, Debug)]
pub struct Notifier {
    policy: NotifyPolicy,
    /// A wake already scheduled (a pending interrupt timer or poll); no duplicate is issued.
    scheduled: Option<Wake>,
}

impl Notifier {
    /// A notifier with nothing scheduled.
    pub fn new(policy: NotifyPolicy) -> Notifier {
        Notifier {
            policy,
            scheduled: None,
        }
    }

    /// The policy.
    pub fn policy(&self) -> NotifyPolicy {
        self.policy
    }

    /// The wake currently scheduled, if any.
    pub fn scheduled(&self) -> Option<Wake> {
        self.scheduled
    }

    /// An entry was published at `now`; `ready` entries are waiting. Returns a wake the driver
    /// must schedule, if this publication needs one (a threshold interrupt replaces a pending
    /// period timer: the returned wake is earlier).
    pub fn on_publish(&mut self, now: Instant, ready: u64) -> Option<Wake> {
        let want = match self.policy {
            NotifyPolicy::Interrupt { threshold, period } => {
                if ready >= threshold {
                    Wake {
                        at: now,
                        reason: WakeReason::Threshold,
                    }
                } else {
                    Wake {
                        at: now + period,
                        reason: WakeReason::Period,
                    }
                }
            }
            NotifyPolicy::Polling { interval } => {
                let i = interval.as_ns().max(1);
                Wake {
                    at: Instant(now.as_ns().div_ceil(i) * i),
                    reason: WakeReason::Poll,
                }
            }
            NotifyPolicy::Scratchpad { poll } => Wake {
                at: now + poll,
                reason: WakeReason::Poll,
            },
        };
        match self.scheduled {
            Some(s) if s.at <= want.at => None,
            _ => {
                self.scheduled = Some(want);
                Some(want)
            }
        }
    }

    /// The driver delivers a wake at `at`. Returns whether it is the current one (stale wakes,
    /// replaced by an earlier one, are ignored).
    pub fn on_wake(&mut self, at: Instant) -> bool {
        match self.scheduled {
            Some(s) if s.at == at => {
                self.scheduled = None;
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interrupt_threshold_and_period() {
        let mut n = Notifier::new(NotifyPolicy::Interrupt {
            threshold: 3,
            period: Duration::from_us(10),
        });
        let w = n.on_publish(Instant(100), 1).unwrap();
        assert_eq!((w.at, w.reason), (Instant(10_100), WakeReason::Period));
        assert_eq!(n.on_publish(Instant(200), 2), None, "timer already armed");
        let t = n.on_publish(Instant(300), 3).unwrap();
        assert_eq!((t.at, t.reason), (Instant(300), WakeReason::Threshold));
        assert!(
            !n.on_wake(Instant(10_100)),
            "replaced period timer is stale"
        );
        assert!(n.on_wake(Instant(300)));
    }

    #[test]
    fn polling_rounds_up_to_the_next_tick() {
        let mut n = Notifier::new(NotifyPolicy::Polling {
            interval: Duration::from_ns(1000),
        });
        assert_eq!(n.on_publish(Instant(1500), 1).unwrap().at, Instant(2000));
        assert_eq!(n.on_publish(Instant(1700), 2), None);
        let mut s = Notifier::new(NotifyPolicy::Scratchpad {
            poll: Duration::from_ns(15),
        });
        assert_eq!(s.on_publish(Instant(1500), 1).unwrap().at, Instant(1515));
    }
}
