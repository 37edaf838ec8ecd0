//! One checker per concern over the transports' [`ReqEvent`]s:
//!
//! - [`bytes`]: a successful request moved exactly the bytes its source held at post time;
//! - [`once`]: every request completes exactly once;
//! - [`protection`]: a designed-to-fail request never succeeds and never changes its target
//!   (per request, not per region: a wrong-key write that lands inside an exposure is caught),
//!   and the world's memory model saw no write outside what the NI may write;
//! - [`success`]: in the liveness phase every request does what it was designed to do (succeed,
//!   or fail with the right error); in the safety phase only transport errors are excused;
//! - [`order`]: requests of one stream complete in posting order (RC's promise);
//! - [`flush`]: after an error on a stream, the rest of it is flushed (RC's error state).

pub mod bytes;
pub mod flush;
pub mod once;
pub mod order;
pub mod protection;
pub mod success;

use crate::kernel::check::Checkers;
use crate::kernel::request::{ReqEvent, Requests};

pub use bytes::Bytes;
pub use flush::Flush;
pub use once::Once;
pub use order::Order;
pub use protection::Protection;
pub use success::Success;

/// The registry of a transport's checkers: bytes, exactly-once, protection and success, and
/// ordering if the protocol promises in-order completion (`ordered`).
pub fn transport(ordered: bool) -> Checkers<Requests> {
    let mut c = Checkers::new();
    c.add(Box::new(Bytes))
        .add(Box::new(Once::default()))
        .add(Box::new(Protection::default()))
        .add(Box::new(Success::default()));
    if ordered {
        c.add(Box::new(Order::default()));
    }
    c
}

/// The registry of RC queue pairs: [`transport`]'s, ordering, and the error state ([`Flush`];
/// `hidden`: the world posts requests of its own on a queue pair, e.g. the fix's dummies).
pub fn queue_pairs(hidden: bool) -> Checkers<Requests> {
    let mut c = transport(true);
    c.add(Box::new(Flush::new(hidden)));
    c
}

/// Shorthand of the checkers' match arms.
type Ev<'a> = ReqEvent<'a>;

#[cfg(test)]
mod tests;
