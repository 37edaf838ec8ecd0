//! The simulation kernel every simulated world runs on (issue 18; TigerBeetle's VOPR is the
//! model): what a deterministic world needs besides its own components.
//!
//! - [`clock`]: [`Kernel`], the event queue and the clock: events of any type in (time,
//!   insertion sequence) order ([`crate::queue`]'s order), simulated time, the event count.
//! - [`rng`]: [`RngTree`], the seeded RNG tree: one master seed, a sub-generator per
//!   component (and sub-trees per sub-system) derived by name.
//! - [`link`]: [`FaultyLink`], the faulty-link wrapper: each packet's fate (loss,
//!   duplication, reordering, delay, corruption) at configurable rates, with counters of the
//!   faults injected; [`FaultMix`] draws a seed's rates (the swarm).
//! - [`trace`]: [`TraceHash`], a running hash of the processed events (two runs of one seed
//!   must agree).
//! - [`check`]: the [`Checker`] trait and the [`Checkers`] registry: checkers observe a
//!   world's events and its final state and report [`Violation`]s (collected, never
//!   stopping the run).
//! - [`request`]: the request-level vocabulary of the transports ([`ReqEvent`]: posted,
//!   completed, bytes delivered, bytes left untouched), and [`checkers`]: one checker per
//!   concern over it (bytes, exactly-once, protection, success, ordering).

pub mod check;
pub mod checkers;
pub mod clock;
pub mod link;
pub mod request;
pub mod rng;
pub mod trace;

pub use check::{Checker, Checkers, Violation, Vocabulary};
pub use clock::Kernel;
pub use link::{FaultMix, FaultyLink, LinkStats};
pub use request::{ErrorKind, Expect, Outcome, Phase, ReqEvent, ReqId, Requests};
pub use rng::RngTree;
pub use trace::TraceHash;
