//! Memory regions and the NIC's translations, pinned or on demand (odp.md, "ODP").
//!
//! A region is *explicit* (a registered range) or *implicit* (the whole address space of a
//! protection domain). A pinned (non-ODP) region has translations for all its pages from
//! registration on and the OS may not move them. An ODP region pins nothing: a page has a NIC
//! translation only after a fault on it was resolved, and the OS, before it reclaims or moves a
//! page, invalidates the NIC's translation (the NIC flushes it), so the next access faults again.

use rustc_hash::{FxHashMap, FxHashSet};
use unpinned_core::api::Perms;
use unpinned_core::memory::{page_of, Pdid, PAGE_BYTES};

/// The extent of a region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Region {
    /// `[base, base + len)`.
    Explicit {
        /// First byte.
        base: u64,
        /// Length in bytes.
        len: u64,
    },
    /// The whole address space of the domain (implicit ODP).
    Implicit,
}

/// What a caller registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MrAttrs {
    /// Address space.
    pub pdid: Pdid,
    /// Extent.
    pub region: Region,
    /// Remote permissions.
    pub access: Perms,
    /// On-demand paging (true) or pinned (false).
    pub odp: bool,
}

/// A registered region and its keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mr {
    /// Local key.
    pub lkey: u32,
    /// Remote key.
    pub rkey: u32,
    /// Registration.
    pub attrs: MrAttrs,
}

/// Why an access cannot proceed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessError {
    /// No region (key, range, domain or permission mismatch): a protection error.
    Protection,
    /// The NIC has no translation for this page of an ODP region: a network page fault.
    Fault {
        /// Page-aligned address.
        page: u64,
    },
}

/// The NIC's region table and translation cache.
#[derive(Debug, Default)]
pub struct OdpTable {
    mrs: Vec<Mr>,
    /// Pages with a NIC translation (ODP regions).
    mapped: FxHashSet<(Pdid, u64)>,
    /// Pinned pages (reference counts over pinned regions).
    pinned: FxHashMap<(Pdid, u64), u32>,
    next_key: u32,
}

fn covers(mr: &Mr, pdid: Pdid, addr: u64, len: u64) -> bool {
    if mr.attrs.pdid != pdid {
        return false;
    }
    match mr.attrs.region {
        Region::Implicit => addr.checked_add(len).is_some(),
        Region::Explicit { base, len: l } => {
            addr >= base && addr.checked_add(len).is_some_and(|e| e <= base + l)
        }
    }
}

fn pages(addr: u64, len: u64) -> impl Iterator<Item = u64> {
    let first = page_of(addr);
    let end = if len == 0 {
        first
    } else {
        addr.saturating_add(len)
    };
    (0..)
        .map(move |i| first + i * PAGE_BYTES)
        .take_while(move |p| *p < end)
}

impl OdpTable {
    /// An empty table; keys are derived from `salt` so two nodes do not share keys.
    pub fn new(salt: u32) -> OdpTable {
        OdpTable {
            next_key: salt.wrapping_mul(0x9e37_79b9) | 1,
            ..Default::default()
        }
    }

    /// Register a region. Pinned explicit regions get their translations now; a pinned implicit
    /// region does not exist in IB (implicit regions are ODP only), so it is refused.
    pub fn register(&mut self, attrs: MrAttrs) -> Option<Mr> {
        if !attrs.odp {
            let Region::Explicit { base, len } = attrs.region else {
                return None;
            };
            for p in pages(base, len) {
                *self.pinned.entry((attrs.pdid, p)).or_default() += 1;
            }
        }
        self.next_key = self.next_key.wrapping_add(0x0101_0101);
        let mr = Mr {
            lkey: self.next_key,
            rkey: self.next_key ^ 0x5a5a_0000,
            attrs,
        };
        self.mrs.push(mr);
        Some(mr)
    }

    /// Check a remote access by `rkey`: range, domain and permission, then translations.
    /// A zero-length access touches no memory and needs no valid key (IB spec 9.4.5).
    pub fn check_remote(
        &self,
        pdid: Pdid,
        rkey: u32,
        addr: u64,
        len: u64,
        write: bool,
    ) -> Result<(), AccessError> {
        if len == 0 {
            return Ok(());
        }
        let mr = self
            .mrs
            .iter()
            .find(|m| m.rkey == rkey && covers(m, pdid, addr, len))
            .ok_or(AccessError::Protection)?;
        let ok = if write {
            mr.attrs.access.write
        } else {
            mr.attrs.access.read
        };
        if !ok {
            return Err(AccessError::Protection);
        }
        self.translate(pdid, addr, len)
    }

    /// Check a local access (any region of the domain covering the range).
    pub fn check_local(&self, pdid: Pdid, addr: u64, len: u64) -> Result<(), AccessError> {
        if len == 0 {
            return Ok(());
        }
        if !self.mrs.iter().any(|m| covers(m, pdid, addr, len)) {
            return Err(AccessError::Protection);
        }
        self.translate(pdid, addr, len)
    }

    fn translate(&self, pdid: Pdid, addr: u64, len: u64) -> Result<(), AccessError> {
        for p in pages(addr, len) {
            if !self.pinned.contains_key(&(pdid, p)) && !self.mapped.contains(&(pdid, p)) {
                return Err(AccessError::Fault { page: p });
            }
        }
        Ok(())
    }

    /// The driver resolved a fault: the NIC now translates `page`.
    pub fn resolve(&mut self, pdid: Pdid, page: u64) {
        self.mapped.insert((pdid, page_of(page)));
    }

    /// The OS is about to move or reclaim `page`: flush the NIC's translation. Returns false
    /// for a pinned page, which the OS may not move.
    pub fn invalidate(&mut self, pdid: Pdid, page: u64) -> bool {
        if self.pinned.contains_key(&(pdid, page_of(page))) {
            return false;
        }
        self.mapped.remove(&(pdid, page_of(page)));
        true
    }

    /// True if the NIC currently translates `page`.
    pub fn is_mapped(&self, pdid: Pdid, page: u64) -> bool {
        self.pinned.contains_key(&(pdid, page_of(page)))
            || self.mapped.contains(&(pdid, page_of(page)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odp_faults_until_resolved_and_again_after_invalidation() {
        let mut t = OdpTable::new(1);
        let mr = t
            .register(MrAttrs {
                pdid: 1,
                region: Region::Explicit {
                    base: 0x10000,
                    len: 8192,
                },
                access: Perms::R,
                odp: true,
            })
            .unwrap();
        assert_eq!(
            t.check_remote(1, mr.rkey, 0x10000, 100, false),
            Err(AccessError::Fault { page: 0x10000 })
        );
        t.resolve(1, 0x10000);
        assert_eq!(t.check_remote(1, mr.rkey, 0x10000, 100, false), Ok(()));
        assert_eq!(
            t.check_remote(1, mr.rkey, 0x10f00, 0x200, false),
            Err(AccessError::Fault { page: 0x11000 })
        );
        assert!(t.invalidate(1, 0x10000));
        assert_eq!(
            t.check_remote(1, mr.rkey, 0x10000, 100, false),
            Err(AccessError::Fault { page: 0x10000 })
        );
    }

    #[test]
    fn protection() {
        let mut t = OdpTable::new(2);
        let mr = t
            .register(MrAttrs {
                pdid: 1,
                region: Region::Explicit { base: 0, len: 4096 },
                access: Perms::R,
                odp: false,
            })
            .unwrap();
        assert_eq!(t.check_remote(1, mr.rkey, 0, 4096, false), Ok(()));
        assert_eq!(
            t.check_remote(1, mr.rkey, 1, 4096, false),
            Err(AccessError::Protection)
        );
        assert_eq!(
            t.check_remote(1, mr.rkey, 0, 8, true),
            Err(AccessError::Protection),
            "read-only"
        );
        assert_eq!(
            t.check_remote(1, mr.rkey ^ 1, 0, 8, false),
            Err(AccessError::Protection)
        );
        assert_eq!(
            t.check_remote(2, mr.rkey, 0, 8, false),
            Err(AccessError::Protection)
        );
        assert_eq!(
            t.check_remote(2, 0, 0, 0, false),
            Ok(()),
            "zero length needs no key"
        );
        assert!(!t.invalidate(1, 0), "pinned pages stay");
    }

    #[test]
    fn implicit_covers_everything() {
        let mut t = OdpTable::new(3);
        let mr = t
            .register(MrAttrs {
                pdid: 4,
                region: Region::Implicit,
                access: Perms::RW,
                odp: true,
            })
            .unwrap();
        assert_eq!(
            t.check_remote(4, mr.rkey, 0x7fff_0000, 1, true),
            Err(AccessError::Fault { page: 0x7fff_0000 })
        );
        assert_eq!(
            t.check_local(4, 0x1234_5000, 10),
            Err(AccessError::Fault { page: 0x1234_5000 })
        );
        assert!(t
            .register(MrAttrs {
                pdid: 4,
                region: Region::Implicit,
                access: Perms::RW,
                odp: false
            })
            .is_none());
    }
}
