//! Wire formats of the unpinned transports.
//!
//! In the style of smoltcp's `wire` module: each format has a parsed representation (`Repr`)
//! with `parse` (explicit length and field checks, a typed [`WireError`] on anything malformed,
//! never a panic) and `emit` (into a caller-owned buffer).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod part;
pub mod rc;

pub use part::{
    emit_data_in_place, AtomicKind, AtomicStatus, Checksum, DataFlags, DataHeader, NackReason,
    PartRepr, WireError, DATA_PAYLOAD_OFFSET,
};
