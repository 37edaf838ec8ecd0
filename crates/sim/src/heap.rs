//! The event queue's heap: a 4-ary min-heap of 16-byte entries whose sibling groups each fill
//! one 64-byte cache line (see [`crate::queue`] for what the entries mean).
//!
//! At 4096 simulated nodes the queue holds ~40 000 entries and most of it is out of the L1/L2
//! caches: a pop walks from the root to a leaf reading every level's four children, and with
//! 24-byte entries (an earlier layout) they straddled two lines, with 16-byte ones in aligned
//! groups they are one.

/// One queued entry: a time, then one word whose order breaks ties (unique per entry).
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub(crate) struct Entry {
    /// Event time, ns.
    pub(crate) at: u64,
    /// Sequence number above the payload (see [`crate::queue`]).
    pub(crate) lo: u64,
}

impl Entry {
    /// (time, sequence) as one integer: one wide compare.
    #[inline(always)]
    pub(crate) fn key(self) -> u128 {
        ((self.at as u128) << 64) | self.lo as u128
    }
}

/// Four entries: the children of one heap node, in one cache line.
#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
struct Line([Entry; 4]);

/// The first entry's position: the root sits in the last lane of line 0, so that the four
/// children of the entry at position `p` are positions `4p - 8 .. 4p - 4`, all of line `p - 2`.
const ROOT: usize = 3;

/// A min-heap of entries by [`Entry::key`].
#[derive(Default)]
pub(crate) struct Heap {
    lines: Vec<Line>,
    len: usize,
}

impl Heap {
    /// Entries held.
    #[inline(always)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    #[inline(always)]
    fn get(&self, p: usize) -> Entry {
        self.lines[p >> 2].0[p & 3]
    }

    #[inline(always)]
    fn set(&mut self, p: usize, e: Entry) {
        self.lines[p >> 2].0[p & 3] = e;
    }

    /// The smallest entry.
    #[inline(always)]
    pub(crate) fn top(&self) -> Option<Entry> {
        (self.len > 0).then(|| self.get(ROOT))
    }

    /// Add an entry.
    #[inline(always)]
    pub(crate) fn push(&mut self, e: Entry) {
        let mut p = ROOT + self.len;
        if p >> 2 == self.lines.len() {
            self.lines.push(Line::default());
        }
        self.len += 1;
        // Sift up: the parent of position p is p / 4 + 2.
        while p > ROOT {
            let parent = (p >> 2) + 2;
            let pe = self.get(parent);
            if e.key() >= pe.key() {
                break;
            }
            self.set(p, pe);
            p = parent;
        }
        self.set(p, e);
    }

    /// Remove the smallest entry (the heap is not empty).
    #[inline(always)]
    pub(crate) fn remove_top(&mut self) {
        self.len -= 1;
        let end = ROOT + self.len;
        if self.len > 0 {
            let last = self.get(end);
            self.sift_into(last, end);
        }
    }

    /// Replace the smallest entry by `e`, which is not smaller than it.
    #[inline(always)]
    pub(crate) fn replace_top(&mut self, e: Entry) {
        self.sift_into(e, ROOT + self.len);
    }

    /// The root is free: place `e` into the heap of the positions below `end`.
    #[inline(always)]
    fn sift_into(&mut self, e: Entry, end: usize) {
        // Floyd: move the hole down to a leaf along the smaller children, then sift `e` up
        // from there (it usually belongs near the bottom).
        let mut hole = ROOT;
        loop {
            let first = 4 * hole - 8;
            if first >= end {
                break;
            }
            let line = &self.lines[hole - 2].0;
            let m = if first + 4 <= end {
                // All four children: a compare tree over one cache line. (Branch-free
                // selection measured slower: the branches let the next level's loads start
                // early, and they are mostly predicted.)
                let a = if line[1].key() < line[0].key() { 1 } else { 0 };
                let b = if line[3].key() < line[2].key() { 3 } else { 2 };
                if line[b].key() < line[a].key() {
                    b
                } else {
                    a
                }
            } else {
                let mut m = 0;
                for c in 1..end - first {
                    if line[c].key() < line[m].key() {
                        m = c;
                    }
                }
                m
            };
            let child = line[m];
            self.set(hole, child);
            hole = first + m;
        }
        while hole > ROOT {
            let parent = (hole >> 2) + 2;
            let pe = self.get(parent);
            if e.key() >= pe.key() {
                break;
            }
            self.set(hole, pe);
            hole = parent;
        }
        self.set(hole, e);
    }

    /// The entries, in heap order, to change in place in a way that keeps their order.
    pub(crate) fn entries_mut(&mut self) -> impl Iterator<Item = &mut Entry> + '_ {
        let len = self.len;
        self.lines
            .iter_mut()
            .flat_map(|l| l.0.iter_mut())
            .skip(ROOT)
            .take(len)
    }

    /// The entries, in heap order.
    pub(crate) fn entries(&self) -> impl Iterator<Item = &Entry> + '_ {
        self.lines
            .iter()
            .flat_map(|l| l.0.iter())
            .skip(ROOT)
            .take(self.len)
    }
}
