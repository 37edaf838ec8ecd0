//! The request-level vocabulary the transports' worlds report to the checkers: requests
//! posted (with what the scenario designed them to do), completed, the bytes they delivered,
//! and the bytes a designed-to-fail write must have left alone.

use crate::kernel::check::Vocabulary;

/// The transports' vocabulary: observations are [`ReqEvent`]s.
pub struct Requests;

impl Vocabulary for Requests {
    type Event<'a> = ReqEvent<'a>;
}

/// A request's number in its run (the driver numbers them; unique per run).
pub type ReqId = u64;

/// The phase a request was posted in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Faults on: any request may fail for transport reasons, none may break safety.
    Safety,
    /// Faults off: every request must do what it was designed to do.
    Liveness,
}

/// The class of an error completion, as the world maps its protocol's statuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// Refused by the target's protection: bad key, out of range, revoked exposure, missing
    /// permission.
    Protection,
    /// The transport gave up (retries exhausted, peer gone).
    Transport,
    /// Ended by an earlier error on its queue pair (RC flush), never executed.
    Flushed,
    /// Anything else (a local error, a cancel).
    Other,
}

/// What a request was designed to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// Succeed (in the safety phase it may still fail for a transport reason).
    Succeed,
    /// Fail with this kind of error (a bad key, an out-of-range address, a revoked exposure:
    /// [`ErrorKind::Protection`]).
    Fail(ErrorKind),
}

/// A completion's status, mapped by the world.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Completed successfully.
    Ok,
    /// Completed with an error.
    Err {
        /// Its class.
        kind: ErrorKind,
        /// The protocol's own status, for the report.
        detail: String,
    },
}

impl Outcome {
    /// True for [`Outcome::Ok`].
    pub fn is_ok(&self) -> bool {
        matches!(self, Outcome::Ok)
    }
}

/// One observation of a transport world.
#[derive(Clone, Debug)]
pub enum ReqEvent<'a> {
    /// A request was posted.
    Posted {
        /// Its number.
        req: ReqId,
        /// Its ordering domain (a queue pair); requests of one stream complete in posting
        /// order where the protocol promises it.
        stream: u64,
        /// The phase it was posted in.
        phase: Phase,
        /// What it was designed to do.
        expect: Expect,
    },
    /// A request completed (the world reports every completion it sees, duplicates too).
    Completed {
        /// Its number.
        req: ReqId,
        /// Its status.
        outcome: &'a Outcome,
    },
    /// After a successful completion: the bytes it should have moved and the bytes at their
    /// destination (the target of a write, the local buffer of a read).
    Bytes {
        /// Its number.
        req: ReqId,
        /// What the source held when it was posted.
        expected: &'a [u8],
        /// What the destination holds now.
        got: &'a [u8],
    },
    /// After a designed-to-fail write completed: its target range before the post and now
    /// (only the part that lies inside memory the NI may write: a wrong-key write that lands
    /// inside an exposure must leave it alone).
    Untouched {
        /// Its number.
        req: ReqId,
        /// Before the post.
        before: &'a [u8],
        /// Now.
        after: &'a [u8],
    },
    /// A violation the world's own model found (the memory model saw the NI write outside
    /// every exposure, a completion without a post, ...).
    World {
        /// What it found.
        what: &'a str,
    },
}
