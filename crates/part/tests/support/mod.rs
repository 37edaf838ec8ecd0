//! What the engine tests share: a flat memory in which every page is present.

pub use unpinned_testkit::{FlatMemory as Flat, FLAT_BASE as BASE};

/// Bytes of [`Flat`] the tests use.
pub const LEN: u64 = 1 << 20;
