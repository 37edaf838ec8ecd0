//! What this node exposes to its peers (spec part.md, mechanism 12; live runtime issue,
//! "Exposure and protection without pinning"). Nothing is registered with any kernel and
//! nothing is pinned: an exposure is a (PDID, range, permissions) record behind a key, checked
//! on every incoming access before memory is touched.

use rustc_hash::FxHashMap;
use unpinned_core::api::{Perms, RemoteKey};
use unpinned_core::memory::Pdid;
use unpinned_core::rng::splitmix64;

/// One exposed range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exposure {
    /// Address space (process).
    pub pdid: Pdid,
    /// First byte.
    pub base: u64,
    /// Length in bytes.
    pub len: u64,
    /// Allowed accesses.
    pub perms: Perms,
}

/// The exposure table of one node.
#[derive(Default)]
pub struct Exposures {
    by_key: FxHashMap<RemoteKey, Exposure>,
    counter: u64,
    salt: u64,
    /// The exposure of the last key [`Exposures::check`] found: every data packet is checked,
    /// and a stream of packets presents the same key (cleared when that key is revoked).
    last: Option<(RemoteKey, Exposure)>,
}

impl Exposures {
    /// An empty table whose keys are derived from `salt`.
    pub fn new(salt: u64) -> Exposures {
        Exposures {
            by_key: FxHashMap::default(),
            counter: 0,
            salt,
            last: None,
        }
    }

    /// Expose `[base, base+len)` of `pdid` with `perms`; returns the key peers must present.
    /// Returns `None` if the range wraps around the address space.
    pub fn expose(&mut self, pdid: Pdid, base: u64, len: u64, perms: Perms) -> Option<RemoteKey> {
        base.checked_add(len)?;
        loop {
            self.counter += 1;
            let key = splitmix64(self.salt ^ self.counter) as u32;
            if key != 0 && !self.by_key.contains_key(&key) {
                self.by_key.insert(
                    key,
                    Exposure {
                        pdid,
                        base,
                        len,
                        perms,
                    },
                );
                return Some(key);
            }
        }
    }

    /// Withdraw an exposure; later accesses with its key fail.
    pub fn revoke(&mut self, key: RemoteKey) -> bool {
        if self.last.is_some_and(|(k, _)| k == key) {
            self.last = None;
        }
        self.by_key.remove(&key).is_some()
    }

    /// Whether an access of `len` bytes at `addr` in `pdid` with `key` needing `need` is allowed.
    pub fn allows(&self, pdid: Pdid, key: RemoteKey, addr: u64, len: u64, need: Perms) -> bool {
        let Some(e) = self.by_key.get(&key) else {
            return false;
        };
        permits(e, pdid, addr, len, need)
    }

    /// [`Exposures::allows`] for the per-packet path: the same answer, with the last key's
    /// exposure remembered (no hash lookup while packets present the same key).
    #[inline(always)]
    pub fn check(&mut self, pdid: Pdid, key: RemoteKey, addr: u64, len: u64, need: Perms) -> bool {
        let e = match self.last {
            Some((k, e)) if k == key => e,
            _ => {
                let Some(&e) = self.by_key.get(&key) else {
                    return false;
                };
                self.last = Some((key, e));
                e
            }
        };
        permits(&e, pdid, addr, len, need)
    }

    /// All exposures (for invariant checks).
    pub fn iter(&self) -> impl Iterator<Item = (RemoteKey, &Exposure)> {
        self.by_key.iter().map(|(k, e)| (*k, e))
    }
}

/// Whether exposure `e` allows an access of `len` bytes at `addr` in `pdid` needing `need`.
#[inline(always)]
fn permits(e: &Exposure, pdid: Pdid, addr: u64, len: u64, need: Perms) -> bool {
    let Some(end) = addr.checked_add(len) else {
        return false;
    };
    e.pdid == pdid
        && addr >= e.base
        && end <= e.base + e.len
        && (!need.write || e.perms.write)
        && (!need.read || e.perms.read)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_range_key_pdid_and_permission() {
        let mut t = Exposures::new(1);
        let k = t.expose(3, 0x1000, 0x2000, Perms::W).unwrap();
        assert!(t.allows(3, k, 0x1000, 0x2000, Perms::W));
        assert!(!t.allows(3, k, 0x1000, 0x2001, Perms::W), "past the end");
        assert!(!t.allows(3, k, 0xfff, 2, Perms::W), "before the start");
        assert!(!t.allows(4, k, 0x1000, 1, Perms::W), "wrong pdid");
        assert!(!t.allows(3, k ^ 1, 0x1000, 1, Perms::W), "wrong key");
        assert!(!t.allows(3, k, 0x1000, 1, Perms::R), "no read permission");
        assert!(!t.allows(3, k, u64::MAX, 2, Perms::W), "wrap-around");
        assert!(t.revoke(k));
        assert!(!t.allows(3, k, 0x1000, 1, Perms::W), "revoked");
        assert!(t.expose(3, u64::MAX, 2, Perms::W).is_none());
    }

    /// `check` (with its memo) answers what `allows` answers, across keys, revocations and
    /// new exposures.
    #[test]
    fn check_agrees_with_allows() {
        let mut t = Exposures::new(9);
        let mut keys = vec![
            t.expose(1, 0x1000, 0x1000, Perms::W).unwrap(),
            t.expose(2, 0x8000, 0x100, Perms::R).unwrap(),
        ];
        let mut x = 3u64;
        for step in 0..20_000 {
            x = splitmix64(x);
            match x % 50 {
                0 => {
                    let k = keys[(x >> 8) as usize % keys.len()];
                    t.revoke(k);
                }
                1 => keys.push(
                    t.expose(
                        (x >> 8) as Pdid % 3,
                        (x >> 12) & 0xffff,
                        (x >> 30) & 0xfff,
                        Perms::W,
                    )
                    .unwrap(),
                ),
                _ => {
                    let key = if (x >> 6) % 8 == 0 {
                        (x >> 20) as RemoteKey
                    } else {
                        keys[(x >> 8) as usize % keys.len()]
                    };
                    let (pdid, addr, len) = (
                        (x >> 10) as Pdid % 3,
                        (x >> 14) & 0x1ffff,
                        (x >> 40) & 0x1fff,
                    );
                    let need = if (x >> 60) & 1 == 0 {
                        Perms::W
                    } else {
                        Perms::R
                    };
                    assert_eq!(
                        t.check(pdid, key, addr, len, need),
                        t.allows(pdid, key, addr, len, need),
                        "step {step}"
                    );
                }
            }
        }
    }
}
