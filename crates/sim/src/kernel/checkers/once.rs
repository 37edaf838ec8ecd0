//! Exactly once: every posted request completes once; no completion without a post.

use rustc_hash::FxHashMap;
use unpinned_core::time::Instant;

use super::Ev;
use crate::kernel::check::Checker;
use crate::kernel::request::{ReqId, Requests};

/// Counts completions per request.
#[derive(Default)]
pub struct Once {
    completions: FxHashMap<ReqId, u32>,
}

impl Checker<Requests> for Once {
    fn name(&self) -> &'static str {
        "once"
    }

    fn observe(&mut self, _at: Instant, o: &Ev<'_>, out: &mut Vec<String>) {
        match o {
            Ev::Posted { req, .. } => {
                if self.completions.insert(*req, 0).is_some() {
                    out.push(format!("request {req} posted twice"));
                }
            }
            Ev::Completed { req, outcome } => match self.completions.get_mut(req) {
                None => out.push(format!(
                    "a completion ({outcome:?}) of request {req}, which was never posted"
                )),
                Some(n) => {
                    *n += 1;
                    if *n == 2 {
                        out.push(format!("request {req} completed twice (now {outcome:?})"));
                    }
                }
            },
            _ => {}
        }
    }

    fn finish(&mut self, _at: Instant, out: &mut Vec<String>) {
        let mut never: Vec<ReqId> = self
            .completions
            .iter()
            .filter(|(_, n)| **n == 0)
            .map(|(r, _)| *r)
            .collect();
        never.sort_unstable();
        if let Some(first) = never.first() {
            out.push(format!(
                "{} request(s) never completed and nothing is left to happen (first: {first})",
                never.len()
            ));
        }
    }
}
