//! Active flush (spec "Active flush"): `flush(target)` completes only when the target's handler
//! has processed every active access the caller issued before it.
//!
//! [`FlushGate`]: the IOMMU implementation. The flush is an active get on a reserved flushing
//! page; the IOMMU holds it until the log's head has passed the reservation tail seen when the
//! flush arrived. The network delivers a caller's accesses in order, so everything the caller
//! issued before has reserved its entry by then (an access stalled by back-pressure stalls the
//! flush behind it too), and a head past that point means the handler consumed all of it.
//!
//! [`ReplyFlush`] + [`ReplyCounter`]: the alternative without IOMMU support, where the handler
//! replies with an active put naming how many accesses of each source it processed.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

/// Flushes held by the IOMMU of one log, released as the handler drains.
#[derive(Clone, Debug)]
pub struct FlushGate<T> {
    held: VecDeque<(u64, T)>,
}

impl<T> Default for FlushGate<T> {
    fn default() -> Self {
        FlushGate {
            held: VecDeque::new(),
        }
    }
}

impl<T> FlushGate<T> {
    /// No flush held.
    pub fn new() -> FlushGate<T> {
        FlushGate::default()
    }

    /// Flushes waiting.
    pub fn held(&self) -> usize {
        self.held.len()
    }

    /// A flush arrived when the log's reservation tail was `reserved` and its head `head`.
    /// Returns the token back if it completes at once (nothing outstanding).
    pub fn hold(&mut self, reserved: u64, head: u64, token: T) -> Option<T> {
        if head >= reserved {
            return Some(token);
        }
        // Tails only grow, so the queue stays sorted by position.
        self.held.push_back((reserved, token));
        None
    }

    /// The handler advanced the head to `head`: the flushes now complete, oldest first.
    pub fn on_head(&mut self, head: u64) -> Vec<T> {
        let mut out = Vec::new();
        while self.held.front().is_some_and(|(p, _)| *p <= head) {
            out.push(self.held.pop_front().expect("front exists").1);
        }
        out
    }
}

/// The same rule for drivers that hold a flush by refusing its get until it is retried (the
/// live engine re-reads a packet its memory refused): per access, the log's reservation
/// position when the get first arrived; the get is served once the consumer has reached it.
#[derive(Clone, Debug)]
pub struct FlushHolds<K> {
    marks: FxHashMap<K, u64>,
}

impl<K> Default for FlushHolds<K> {
    fn default() -> Self {
        FlushHolds {
            marks: FxHashMap::default(),
        }
    }
}

impl<K: std::hash::Hash + Eq> FlushHolds<K> {
    /// No flush held.
    pub fn new() -> FlushHolds<K> {
        FlushHolds::default()
    }

    /// The flush get `key` arrived (again): `reserved` gives the log's reservation position,
    /// asked only on its first arrival; `consumed` is how far the handler has got. True: serve
    /// it now; false: hold it (refuse, to be retried).
    pub fn poll(&mut self, key: K, reserved: impl FnOnce() -> u64, consumed: u64) -> bool {
        let mark = *self.marks.entry(key).or_insert_with(reserved);
        consumed >= mark
    }

    /// The flush get `key` was served completely: forget it.
    pub fn done(&mut self, key: &K) {
        self.marks.remove(key);
    }

    /// Flush gets seen and not yet served.
    pub fn held(&self) -> usize {
        self.marks.len()
    }
}

/// Target side of the reply-based flush: per source, how many accesses the handler processed.
#[derive(Clone, Debug, Default)]
pub struct ReplyCounter {
    processed: FxHashMap<u32, u64>,
    unreplied: FxHashMap<u32, u64>,
}

impl ReplyCounter {
    /// Nothing processed yet.
    pub fn new() -> ReplyCounter {
        ReplyCounter::default()
    }

    /// The handler processed one access of `source`.
    pub fn processed(&mut self, source: u32) {
        *self.processed.entry(source).or_default() += 1;
        *self.unreplied.entry(source).or_default() += 1;
    }

    /// Replies to send now: (source, total processed) for every source with at least `every`
    /// unreplied accesses, or with any when `drained` (the log is empty: reply to everyone so
    /// no flush waits for a batch that never fills).
    pub fn replies(&mut self, every: u64, drained: bool) -> Vec<(u32, u64)> {
        let mut out: Vec<(u32, u64)> = self
            .unreplied
            .iter()
            .filter(|(_, &n)| n > 0 && (drained || n >= every))
            .map(|(&s, _)| (s, self.processed[&s]))
            .collect();
        out.sort_unstable();
        for (s, _) in &out {
            self.unreplied.insert(*s, 0);
        }
        out
    }
}

/// Source side of the reply-based flush.
#[derive(Clone, Debug, Default)]
pub struct ReplyFlush {
    issued: FxHashMap<u32, u64>,
    confirmed: FxHashMap<u32, u64>,
}

impl ReplyFlush {
    /// Nothing issued.
    pub fn new() -> ReplyFlush {
        ReplyFlush::default()
    }

    /// An active access to `target` was issued.
    pub fn issued(&mut self, target: u32) {
        *self.issued.entry(target).or_default() += 1;
    }

    /// A reply from `target`: it processed `processed` of our accesses in total.
    pub fn on_reply(&mut self, target: u32, processed: u64) {
        let c = self.confirmed.entry(target).or_default();
        *c = (*c).max(processed);
    }

    /// Whether a flush of `target` is complete (everything issued was processed).
    pub fn flushed(&self, target: u32) -> bool {
        self.confirmed.get(&target).copied().unwrap_or(0)
            >= self.issued.get(&target).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::{AccessLog, EntryHeader, EntryKind};

    #[test]
    fn flush_waits_for_the_handler_not_for_delivery() {
        let mut log = AccessLog::new(4096);
        let mut gate = FlushGate::new();
        let h = |txn| EntryHeader {
            kind: EntryKind::ActivePut,
            source: 1,
            txn,
            addr: 0,
            access_len: 8,
            data_len: 8,
        };
        for t in 0..3 {
            log.append(h(t), &[0; 8]).unwrap();
        }
        assert_eq!(gate.hold(log.reserved(), log.head(), "f1"), None);
        // A later access (after the flush) must not delay it.
        log.append(h(3), &[0; 8]).unwrap();
        log.pop();
        log.pop();
        assert!(gate.on_head(log.head()).is_empty());
        log.pop();
        assert_eq!(gate.on_head(log.head()), vec!["f1"]);
        // Nothing outstanding once drained: immediate.
        log.pop();
        assert_eq!(gate.hold(log.reserved(), log.head(), "f2"), Some("f2"));
    }

    #[test]
    fn reply_based_flush() {
        let (mut src, mut dst) = (ReplyFlush::new(), ReplyCounter::new());
        for _ in 0..5 {
            src.issued(2);
        }
        assert!(!src.flushed(2));
        for _ in 0..4 {
            dst.processed(1);
        }
        for (_, n) in dst.replies(4, false) {
            src.on_reply(2, n);
        }
        assert!(!src.flushed(2));
        dst.processed(1);
        assert!(dst.replies(4, false).is_empty());
        for (_, n) in dst.replies(4, true) {
            src.on_reply(2, n);
        }
        assert!(src.flushed(2));
    }
}
