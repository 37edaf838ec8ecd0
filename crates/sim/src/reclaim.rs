//! Memory pressure while transfers run (issue 17, section 4, "fault patterns"): a reclaimer
//! that evicts pages of a watched range at a fixed rate of simulated time, as the kernel's
//! reclaim takes pages away from a process whose transfers are in flight.
//!
//! Every `period`, `pages_per_period` pages of the range are chosen uniformly and evicted if
//! present ([`Sim::evict`]: the IOMMU's entries are invalidated, the bytes are kept, as in
//! swap): every page has the same hazard, `pages_per_period / (period * pages)`, whatever the
//! others' state, as when reclaim picks from a system's memory much larger than the range (a
//! choice among the range's present pages only would concentrate eviction on the few pages a
//! page-in just brought into a fresh buffer). A page the NI already wrote loses nothing; a
//! page not yet written (for example one a PIA page-in brought in ahead of the transfer)
//! faults again when its data arrives. The choice is uniform, not LRU: the model has no access
//! bits.
//!
//! The reclaimer drives the simulation itself (it runs the event loop in steps of `period`):
//! a driver-level fault pattern, nothing in the engines or the handler knows about it.

use unpinned_core::api::NodeId;
use unpinned_core::memory::{Pdid, PAGE_BYTES};
use unpinned_core::rng::{rng_for, Rng, SimRng};
use unpinned_core::time::Duration;

use crate::world::{Sim, SimError};

/// A reclaimer of one range of one node.
pub struct Reclaim {
    node: NodeId,
    pdid: Pdid,
    /// First page (page aligned).
    base: u64,
    /// Pages of the range.
    pages: u64,
    period: Duration,
    pages_per_period: u32,
    rng: SimRng,
    evicted: u64,
}

impl Reclaim {
    /// Draw `pages_per_period` pages of `[base, base + len)` at `node` every `period` (which
    /// must be positive) and evict those present; the draws come from the stream `reclaim` of
    /// `seed`.
    pub fn new(
        node: NodeId,
        pdid: Pdid,
        base: u64,
        len: u64,
        period: Duration,
        pages_per_period: u32,
        seed: u64,
    ) -> Reclaim {
        assert!(period > Duration::ZERO, "a reclaim period must be positive");
        let first = unpinned_core::memory::page_of(base);
        let end = unpinned_core::memory::page_of(base.saturating_add(len + PAGE_BYTES - 1));
        Reclaim {
            node,
            pdid,
            base: first,
            pages: (end - first) / PAGE_BYTES,
            period,
            pages_per_period,
            rng: rng_for(seed, "reclaim"),
            evicted: 0,
        }
    }

    /// Pages evicted so far.
    pub fn evicted(&self) -> u64 {
        self.evicted
    }

    /// One round: `pages_per_period` pages drawn, each evicted if present.
    pub fn evict_once(&mut self, sim: &mut Sim) {
        for _ in 0..self.pages_per_period {
            let p = self.base + self.rng.gen_range(0..self.pages.max(1)) * PAGE_BYTES;
            if sim.node(self.node).mem.is_present(self.pdid, p) {
                sim.evict(self.node, self.pdid, p, PAGE_BYTES);
                self.evicted += 1;
            }
        }
    }

    /// Run `sim` until every posted request completed and no event is left, evicting every
    /// period meanwhile; fails like [`Sim::run_until_idle`] when `limit` of simulated time
    /// passes first.
    pub fn run_until_idle(&mut self, sim: &mut Sim, limit: Duration) -> Result<(), SimError> {
        let deadline = sim.now() + limit;
        while sim.pending_posts() > 0 && sim.now() < deadline {
            let next = sim.now() + self.period;
            sim.run_until(next)?;
            if sim.pending_posts() > 0 {
                self.evict_once(sim);
            }
        }
        let left = deadline.saturating_since(sim.now());
        sim.run_until_idle(left)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use unpinned_core::api::{Op, Perms, WorkRequest};
    use unpinned_core::os::PageInPolicy;
    use unpinned_core::profile::Profile;

    use crate::{Residence, SimConfig};

    const SRC: u64 = 0x10_0000_0000;
    const DST: u64 = 0x20_0000_0000;
    const LEN: u64 = 256 << 10;

    /// Pages taken away while a write lands in them come back through the fault path, and the
    /// bytes all arrive (the simulator checks delivery and exactly-once after every event).
    #[test]
    fn a_write_under_reclaim_completes_with_its_bytes() {
        for policy in [PageInPolicy::Pio, PageInPolicy::Pia, PageInPolicy::Adaptive] {
            let mut cfg = SimConfig::two_nodes(Profile::forth_arm(), 3);
            cfg.policy = policy;
            let mut sim = Sim::new(cfg);
            sim.map(0, 1, SRC, LEN, Residence::Present);
            sim.fill_random(0, 1, SRC, LEN);
            sim.map(1, 1, DST, LEN, Residence::Present);
            let rkey = sim.expose(1, 1, DST, LEN, Perms::RW);
            sim.post(
                sim.now(),
                0,
                WorkRequest {
                    wr_id: 1,
                    op: Op::Write,
                    peer: 1,
                    local_pdid: 1,
                    local_addr: SRC,
                    remote_pdid: 1,
                    remote_addr: DST,
                    rkey,
                    len: LEN,
                },
            );
            // One page every 4 us: about 50 evictions during a 200 us write of 64 pages.
            let mut r = Reclaim::new(1, 1, DST, LEN, Duration::from_us(4), 1, 9);
            r.run_until_idle(&mut sim, Duration::from_ms(1000))
                .unwrap_or_else(|e| panic!("{policy}: {e}"));
            assert_eq!(sim.posts()[0].completion.unwrap().status, Ok(()));
            assert!(r.evicted() > 10, "{policy}: evicted {}", r.evicted());
            assert!(
                sim.stats(1).handler.pages_in > 0,
                "{policy}: refaults paged in"
            );
            let (mut a, mut b) = (vec![0u8; LEN as usize], vec![0u8; LEN as usize]);
            sim.node(0).mem.host_read(1, SRC, &mut a);
            sim.node(1).mem.host_read(1, DST, &mut b);
            assert!(a == b, "{policy}: bytes differ");
        }
    }
}
