//! The trace hash: a running hash of every processed event (time, kind, node, bytes). Two runs
//! of one seed must end with the same hash; a difference means something nondeterministic
//! (an iteration over a hash map, a clock, a global RNG) got into the run.

use unpinned_core::time::Instant;
use xxhash_rust::xxh3::Xxh3;

/// A running xxh3 over the events a world records.
#[derive(Clone)]
pub struct TraceHash {
    h: Xxh3,
    records: u64,
}

impl Default for TraceHash {
    fn default() -> Self {
        Self::new()
    }
}

impl TraceHash {
    /// An empty trace.
    pub fn new() -> TraceHash {
        TraceHash {
            h: Xxh3::new(),
            records: 0,
        }
    }

    /// Add one event: when, what kind (the world's numbering), at which node, with which
    /// bytes (a packet, a request id). The same layout as the PART world's own trace.
    pub fn record(&mut self, at: Instant, kind: u8, node: u32, bytes: &[u8]) {
        self.h.update(&at.0.to_le_bytes());
        self.h.update(&[kind]);
        self.h.update(&node.to_le_bytes());
        self.h.update(bytes);
        self.records += 1;
    }

    /// Events recorded.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// The hash so far.
    pub fn digest(&self) -> u64 {
        self.h.digest()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_traces_hash_equal_and_any_difference_shows() {
        let mut a = TraceHash::new();
        let mut b = TraceHash::new();
        a.record(Instant(5), 1, 0, b"xy");
        b.record(Instant(5), 1, 0, b"xy");
        assert_eq!(a.digest(), b.digest());
        b.record(Instant(6), 1, 0, b"");
        assert_ne!(a.digest(), b.digest());
        a.record(Instant(6), 1, 1, b"");
        assert_ne!(a.digest(), b.digest());
        assert_eq!(a.records(), 2);
    }
}
