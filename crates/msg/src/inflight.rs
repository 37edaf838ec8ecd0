//! The endpoint's work requests in flight, by id.
//!
//! Ids are handed out in increasing order (1, 2, 3, ...) and completions come back in any
//! order, so the requests in flight are a window `[base, base + len)` of ids in which some are
//! already done. A ring of that window finds a request by subtraction instead of hashing: at
//! 4096 simulated nodes one hash table per endpoint cost a cache miss or two per completion.
//! The window spans from the oldest request in flight to the newest, and every request posted
//! to the NI completes (successfully or with an error), so it stays as short as the layer's
//! own limits keep the number of requests in flight (credits, one counter write per peer).

use std::collections::VecDeque;

/// Values by sequential `u64` id.
#[derive(Debug)]
pub(crate) struct InFlight<T> {
    /// Id of `ring[0]`.
    base: u64,
    ring: VecDeque<Option<T>>,
    len: usize,
}

impl<T> InFlight<T> {
    /// Empty; the first id inserted must be `first`.
    pub(crate) fn new(first: u64) -> InFlight<T> {
        InFlight {
            base: first,
            ring: VecDeque::new(),
            len: 0,
        }
    }

    /// Values in flight.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Store `v` under `id`, the id after the last one inserted.
    pub(crate) fn insert(&mut self, id: u64, v: T) {
        if self.ring.is_empty() {
            // Nothing in flight: the window restarts at this id.
            self.base = id;
        }
        debug_assert_eq!(
            id,
            self.base + self.ring.len() as u64,
            "ids are inserted in sequence"
        );
        self.ring.push_back(Some(v));
        self.len += 1;
    }

    /// Take the value of `id` out, if it is in flight.
    pub(crate) fn remove(&mut self, id: u64) -> Option<T> {
        let i = usize::try_from(id.checked_sub(self.base)?).ok()?;
        let v = self.ring.get_mut(i)?.take()?;
        self.len -= 1;
        while let Some(None) = self.ring.front() {
            self.ring.pop_front();
            self.base += 1;
        }
        Some(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// Against a hash map, with completions in a scrambled order and unknown ids.
    #[test]
    fn finds_what_a_map_finds() {
        let mut t = InFlight::new(1);
        let mut m = HashMap::new();
        let (mut next, mut x) = (1u64, 7u64);
        for _ in 0..20_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            if (x >> 33) % 3 != 0 {
                t.insert(next, next * 10);
                m.insert(next, next * 10);
                next += 1;
            } else {
                // Any id from well before the window to past its end.
                let id = (x >> 40) % (next + 5);
                assert_eq!(t.remove(id), m.remove(&id), "id {id}");
            }
            assert_eq!(t.len(), m.len());
        }
        assert_eq!(t.remove(u64::MAX), None);
        assert_eq!(t.remove(0), None);
    }
}
