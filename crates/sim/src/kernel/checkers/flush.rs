//! Flushing (RC's error state): once a request of a stream (a queue pair) completes with an
//! error, the queue pair is in the error state and every later completion of the stream is a
//! flush, never a success or another error; and a flush follows an error of its stream, unless
//! the world posts requests of its own that the checkers do not see (the software-timer fix's
//! dummy READs: one of them may take the error).

use rustc_hash::{FxHashMap, FxHashSet};
use unpinned_core::time::Instant;

use super::Ev;
use crate::kernel::check::Checker;
use crate::kernel::request::{ErrorKind, Outcome, ReqId, Requests};

/// Each request's stream, and the streams in the error state.
#[derive(Default)]
pub struct Flush {
    /// The world posts requests the checkers do not see: a flush may come first.
    hidden: bool,
    stream_of: FxHashMap<ReqId, u64>,
    failed: FxHashSet<u64>,
}

impl Flush {
    /// The checker; `hidden`: the world may post requests of its own on a stream.
    pub fn new(hidden: bool) -> Flush {
        Flush {
            hidden,
            ..Flush::default()
        }
    }
}

impl Checker<Requests> for Flush {
    fn name(&self) -> &'static str {
        "flush"
    }

    fn observe(&mut self, _at: Instant, o: &Ev<'_>, out: &mut Vec<String>) {
        match o {
            Ev::Posted { req, stream, .. } => {
                self.stream_of.insert(*req, *stream);
            }
            Ev::Completed { req, outcome } => {
                let Some(&stream) = self.stream_of.get(req) else {
                    return;
                };
                let failed = self.failed.contains(&stream);
                let flushed = matches!(
                    outcome,
                    Outcome::Err {
                        kind: ErrorKind::Flushed,
                        ..
                    }
                );
                match outcome {
                    Outcome::Ok if failed => out.push(format!(
                        "request {req} of stream {stream} succeeded after an earlier request of its stream failed"
                    )),
                    Outcome::Ok => {}
                    Outcome::Err { kind, detail } => {
                        if failed && !flushed {
                            out.push(format!(
                                "request {req} of stream {stream} failed with {kind:?} ({detail}) after an earlier request of its stream failed: a flush was due"
                            ));
                        }
                        if flushed && !failed && !self.hidden {
                            out.push(format!(
                                "request {req} of stream {stream} was flushed, but no request of its stream failed before"
                            ));
                        }
                        self.failed.insert(stream);
                    }
                }
            }
            _ => {}
        }
    }
}
