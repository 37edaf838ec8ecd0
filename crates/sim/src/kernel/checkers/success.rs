//! Success: in the liveness phase (no faults) every request does what it was designed to do:
//! succeeds, or fails with the error it was designed to get. In the safety phase a request
//! may fail for a transport reason (retries exhausted, flushed after such a failure), never
//! with another error: a legitimate request refused by protection is a bug under any faults.

use rustc_hash::FxHashMap;
use unpinned_core::time::Instant;

use super::Ev;
use crate::kernel::check::Checker;
use crate::kernel::request::{ErrorKind, Expect, Outcome, Phase, ReqId, Requests};

/// Remembers each request's phase and design.
#[derive(Default)]
pub struct Success {
    reqs: FxHashMap<ReqId, (Phase, Expect)>,
}

impl Checker<Requests> for Success {
    fn name(&self) -> &'static str {
        "success"
    }

    fn observe(&mut self, _at: Instant, o: &Ev<'_>, out: &mut Vec<String>) {
        match o {
            Ev::Posted {
                req, phase, expect, ..
            } => {
                self.reqs.insert(*req, (*phase, *expect));
            }
            Ev::Completed { req, outcome } => {
                let Some(&(phase, expect)) = self.reqs.get(req) else {
                    return;
                };
                let excused = |k: ErrorKind| {
                    phase == Phase::Safety && matches!(k, ErrorKind::Transport | ErrorKind::Flushed)
                };
                let bad = match (expect, outcome) {
                    (Expect::Succeed, Outcome::Ok) => None,
                    (Expect::Succeed, Outcome::Err { kind, .. }) if excused(*kind) => None,
                    (Expect::Succeed, Outcome::Err { kind, detail }) => Some(format!(
                        "request {req} ({phase:?} phase) should have succeeded but failed: {kind:?} ({detail})"
                    )),
                    // Succeeding is the protection checker's to report.
                    (Expect::Fail(_), Outcome::Ok) => None,
                    (Expect::Fail(want), Outcome::Err { kind, .. })
                        if *kind == want || excused(*kind) =>
                    {
                        None
                    }
                    (Expect::Fail(want), Outcome::Err { kind, detail }) => Some(format!(
                        "request {req} ({phase:?} phase) should have failed with {want:?} but failed with {kind:?} ({detail})"
                    )),
                };
                out.extend(bad);
            }
            _ => {}
        }
    }
}
