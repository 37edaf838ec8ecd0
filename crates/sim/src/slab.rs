//! A slab: values in a vector, addressed by the slot they were given, free slots reused
//! last-freed first.
//!
//! The simulator keeps its in-flight posts here instead of in a hash map keyed by post number:
//! at 4096 nodes the map held tens of thousands of 100-byte records, and every post and every
//! completion paid a hash probe plus a cache miss into a table much larger than the caches.
//! A slot is an index (no hashing), and reusing the most recently freed slot keeps the working
//! set as small as the number of records in flight.

/// Values addressed by `u32` slots.
#[derive(Debug)]
pub struct Slab<T> {
    slots: Vec<Option<T>>,
    free: Vec<u32>,
    len: usize,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Slab<T> {
    /// An empty slab.
    pub fn new() -> Slab<T> {
        Slab {
            slots: Vec::new(),
            free: Vec::new(),
            len: 0,
        }
    }

    /// Values stored.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Store `v`; returns its slot.
    ///
    /// # Panics
    /// With more than `u32::MAX` values stored at once (the simulator's posts are numbered
    /// with `u32` already).
    pub fn insert(&mut self, v: T) -> u32 {
        self.len += 1;
        match self.free.pop() {
            Some(s) => {
                debug_assert!(self.slots[s as usize].is_none());
                self.slots[s as usize] = Some(v);
                s
            }
            None => {
                let s = u32::try_from(self.slots.len()).expect("fewer than 2^32 values at once");
                self.slots.push(Some(v));
                s
            }
        }
    }

    /// The value in `slot`, if any.
    #[inline]
    pub fn get(&self, slot: u32) -> Option<&T> {
        self.slots.get(slot as usize)?.as_ref()
    }

    /// Take the value out of `slot` (the slot becomes free).
    #[inline]
    pub fn remove(&mut self, slot: u32) -> Option<T> {
        let v = self.slots.get_mut(slot as usize)?.take()?;
        self.free.push(slot);
        self.len -= 1;
        Some(v)
    }

    /// Every stored value, in slot order.
    pub fn values(&self) -> impl Iterator<Item = &T> {
        self.slots.iter().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_reused_and_values_kept() {
        let mut s = Slab::new();
        let a = s.insert("a");
        let b = s.insert("b");
        assert_ne!(a, b);
        assert_eq!(s.remove(a), Some("a"));
        assert_eq!(s.remove(a), None, "a slot is emptied once");
        assert_eq!(s.get(a), None);
        let c = s.insert("c");
        assert_eq!(c, a, "the freed slot is reused");
        assert_eq!((s.get(b), s.get(c), s.len()), (Some(&"b"), Some(&"c"), 2));
        assert_eq!(s.values().copied().collect::<Vec<_>>(), vec!["c", "b"]);
        assert_eq!(s.get(99), None);
        assert_eq!(s.remove(99), None);
        s.remove(b);
        s.remove(c);
        assert!(s.is_empty());
    }
}
