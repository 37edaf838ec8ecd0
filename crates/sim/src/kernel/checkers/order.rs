//! Ordering: the requests of one stream (an RC queue pair) complete in the order they were
//! posted, errors and flushes included.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;
use unpinned_core::time::Instant;

use super::Ev;
use crate::kernel::check::Checker;
use crate::kernel::request::{ReqId, Requests};

/// Per stream, the requests not completed yet, in posting order.
#[derive(Default)]
pub struct Order {
    stream_of: FxHashMap<ReqId, u64>,
    open: FxHashMap<u64, VecDeque<ReqId>>,
}

impl Checker<Requests> for Order {
    fn name(&self) -> &'static str {
        "order"
    }

    fn observe(&mut self, _at: Instant, o: &Ev<'_>, out: &mut Vec<String>) {
        match o {
            Ev::Posted { req, stream, .. } => {
                self.stream_of.insert(*req, *stream);
                self.open.entry(*stream).or_default().push_back(*req);
            }
            Ev::Completed { req, .. } => {
                let Some(stream) = self.stream_of.get(req) else {
                    return;
                };
                let q = self
                    .open
                    .get_mut(stream)
                    .expect("a stream of a posted request");
                match q.iter().position(|r| r == req) {
                    Some(0) => {
                        q.pop_front();
                    }
                    Some(i) => {
                        out.push(format!(
                            "request {req} of stream {stream} completed before request {} posted earlier",
                            q[0]
                        ));
                        q.remove(i);
                    }
                    None => {} // a second completion: the exactly-once checker's
                }
            }
            _ => {}
        }
    }
}
