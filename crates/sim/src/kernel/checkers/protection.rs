//! Protection, per request: a request designed to fail (bad key, out of range, revoked
//! exposure) never succeeds, and a designed-to-fail write leaves its target as it was, even
//! where the target lies inside an exposure the NI may write; plus the world's own memory
//! model (the NI wrote outside every exposure).

use rustc_hash::FxHashMap;
use unpinned_core::time::Instant;

use super::Ev;
use crate::kernel::check::Checker;
use crate::kernel::request::{Expect, ReqId, Requests};

/// Remembers what each request was designed to do.
#[derive(Default)]
pub struct Protection {
    expect: FxHashMap<ReqId, Expect>,
}

impl Checker<Requests> for Protection {
    fn name(&self) -> &'static str {
        "protection"
    }

    fn observe(&mut self, _at: Instant, o: &Ev<'_>, out: &mut Vec<String>) {
        match o {
            Ev::Posted { req, expect, .. } => {
                self.expect.insert(*req, *expect);
            }
            Ev::Completed { req, outcome } => {
                if let (Some(Expect::Fail(kind)), true) = (self.expect.get(req), outcome.is_ok()) {
                    out.push(format!(
                        "request {req} was designed to fail ({kind:?}) but completed successfully"
                    ));
                }
            }
            Ev::Untouched { req, before, after } => {
                if before != after {
                    let first = before
                        .iter()
                        .zip(after.iter())
                        .position(|(a, b)| a != b)
                        .unwrap_or(0);
                    out.push(format!(
                        "designed-to-fail write {req} changed byte {first} of its {}-byte target",
                        before.len()
                    ));
                }
            }
            Ev::World { what } => out.push((*what).to_string()),
            Ev::Bytes { .. } => {}
        }
    }
}
