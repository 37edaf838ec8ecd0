//! The adaptive page-in policy (issue 17, section 4; spec part.md, "Beyond the reference
//! design"): between PIO and PIA, chosen per fault from the fault density observed so far.
//!
//! **Mechanism.** A page that the page-in task does not bring in now and that turns out to be
//! missing costs the transfer a whole fault round later: interrupt, page-in task, ERR and the
//! retransmission of its block, while the transfer is stalled (at most two blocks
//! outstanding). A page it does bring in now costs `get_user_pages` time before the ERR of the
//! fault at hand: per missing page, plus a call per run of missing pages (a present page
//! splits a run), plus a walk over each present page of the range. For one page ahead,
//! missing with probability `d`:
//!
//! - bring it in: `d * (page + (1 - d) * call) + (1 - d) * present`;
//! - leave it: `d * round`.
//!
//! So bringing in everything ahead (PIA) pays when `d` is above the break-even density
//! [`AdaptiveCosts::eager_density`], and only the faulting page (PIO) pays below it. The
//! profile's costs give `round` (tens of us) far above `page` and `call` (a few us), so the
//! break-even is well under 1%: eagerness is the right default once a transfer has faulted
//! at all, and PIO remains right for a transfer whose first fault comes after hundreds of
//! present pages.
//!
//! **Density.** Per transfer (and side, address space): distinct faulting pages seen over the
//! pages from the transfer's start to the furthest faulting page, with a prior of
//! [`PRIOR_PAGES`] pages at the address space's recent density (what earlier transfers into
//! the same memory saw: buffers that are reused fault on first use only).
//!
//! **Eviction.** Pages brought in ahead are worth it only if they are still there when the
//! data arrives; under memory pressure reclaim takes some back first. A fault on a page that a
//! plan at least two drains old brought in (older plans' pages were in before the faulting
//! record could have been logged) is a refault: the page was evicted. (A record that waits in
//! a full NI fault FIFO across drains can be older; it is then taken for a refault, which only
//! shortens the lookahead.) The lookahead is then cut
//! to half the distance that page had been brought in ahead (at least one block), and doubled
//! again after every drain of the transfer without a refault. The lookahead is a property of
//! the host's memory pressure, so it carries over to the address space's next transfers.
//!
//! Sans-IO: the tracker keeps counts and page numbers only, no time; its memory is bounded
//! (transfers not seen for a while are forgotten).

use rustc_hash::FxHashMap;

use crate::api::{FaultRecord, FaultSide, TransferKey};
use crate::memory::{page_of, Pdid, PAGE_BYTES};
use crate::profile::Profile;
use crate::time::serialization;

/// Weight of the address space's recent density in a transfer's estimate, in pages.
pub const PRIOR_PAGES: f64 = 4.0;

/// Transfers remembered at most; beyond, those not seen for [`FORGET_AFTER_DRAINS`] drains
/// are dropped.
const MAX_TRANSFERS: usize = 4096;
/// Drains after which a transfer with no new fault is forgotten (when over the bound).
const FORGET_AFTER_DRAINS: u64 = 256;
/// Page-in ranges remembered per transfer (for refault detection); the oldest go first.
const MAX_COVERED: usize = 64;

/// The costs the adaptive rule weighs, from the cost profile.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdaptiveCosts {
    /// What a missing page left to fault costs the stalled transfer: one whole fault round
    /// (interrupt, page-in task with one page, ERR, its flight, the block's retransmission), us.
    pub fault_round_us: f64,
    /// `get_user_pages` per missing page brought in, us.
    pub page_us: f64,
    /// `get_user_pages` per call (one per run of missing pages), us.
    pub call_us: f64,
    /// Walking a page of the range that is present already, us.
    pub present_us: f64,
}

impl AdaptiveCosts {
    /// The costs of `p`: the fault path of `os`, one packet's flight and one block's
    /// serialization at the link rate for the round; the touch of a present page for a walk.
    pub fn from_profile(p: &Profile) -> AdaptiveCosts {
        let os = &p.os;
        let net = &p.net;
        let flight_us = (2 * net.ni_packet_ns + net.hops as u64 * net.hop_latency_ns) as f64 / 1e3
            + serialization(net.header_bytes as usize, net.link_gbps).as_us_f64();
        let block_us = serialization(p.engine.block_bytes as usize, net.link_gbps).as_us_f64();
        AdaptiveCosts {
            fault_round_us: os.irq_us
                + os.sched_us
                + 2.0 * os.fifo_read_ns as f64 / 1e3
                + os.gup_call_us
                + os.gup_page_us
                + os.bookkeeping_us
                + os.notify_us
                + os.err_send_us
                + 2.0 * flight_us
                + block_us,
            page_us: os.gup_page_us,
            call_us: os.gup_call_us,
            present_us: p.cpu.touch_present_ns as f64 / 1e3,
        }
    }

    /// Expected cost of leaving one page ahead (missing with probability `d`) to fault, minus
    /// the expected cost of bringing it in now, us. Positive: bring it in.
    pub fn gain_us(&self, d: f64) -> f64 {
        let d = d.clamp(0.0, 1.0);
        d * self.fault_round_us
            - d * (self.page_us + (1.0 - d) * self.call_us)
            - (1.0 - d) * self.present_us
    }

    /// The smallest density at which bringing in the pages ahead pays (1.0 if it never does
    /// below certainty; 0.0 if walking present pages costs nothing).
    pub fn eager_density(&self) -> f64 {
        if self.gain_us(1.0) <= 0.0 {
            return 1.0;
        }
        if self.gain_us(0.0) >= 0.0 {
            // Nothing to lose at d = 0 (present pages cost nothing): any density pays.
            return 0.0;
        }
        // gain(0) < 0 < gain(1), and gain is a quadratic in d: bisect for the crossing.
        let (mut lo, mut hi) = (0.0f64, 1.0f64);
        for _ in 0..60 {
            let mid = 0.5 * (lo + hi);
            if self.gain_us(mid) > 0.0 {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        hi
    }
}

impl Default for AdaptiveCosts {
    /// The built-in `forth-arm` profile's (computed once: every planner starts from them).
    fn default() -> Self {
        static BUILTIN: std::sync::OnceLock<AdaptiveCosts> = std::sync::OnceLock::new();
        *BUILTIN.get_or_init(|| AdaptiveCosts::from_profile(&Profile::forth_arm()))
    }
}

/// A range a plan asked for, remembered to recognize refaults.
#[derive(Clone, Copy, Debug)]
struct Covered {
    start: u64,
    end: u64,
    /// The drain that planned it.
    drain: u64,
}

/// What the tracker knows of one transfer at one side.
#[derive(Clone, Debug)]
struct TransferState {
    /// First page of the transfer.
    first: u64,
    /// Distinct faulting pages seen first-hand (not refaults of pages brought in).
    faults: u64,
    /// The furthest faulting page seen first-hand.
    furthest: u64,
    /// Page-in ranges planned for it, oldest first.
    covered: Vec<Covered>,
    /// Pages brought in beyond the faulting one when eager; `None`: to the transfer's end.
    lookahead: Option<u64>,
    /// The last drain it had a record in (0: none yet).
    seen: u64,
    /// A refault was seen in the current drain.
    refault_now: bool,
}

/// What the tracker knows of an address space (one side): its recent transfers.
#[derive(Clone, Copy, Debug)]
struct SpaceState {
    /// Density of its latest transfers (moving average).
    density: f64,
    /// The lookahead its latest transfer ended with.
    lookahead: Option<u64>,
}

/// How a fault was classified (for counters and tests).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// A page seen missing for the first time in this transfer.
    New,
    /// A page an earlier plan of this transfer brought in, missing again: it was evicted.
    Refault,
    /// A page planned recently (the record may predate its page-in), or again in this drain.
    Recent,
}

/// Counters of the adaptive tracker.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AdaptiveStats {
    /// Faults answered with the faulting page only.
    pub narrow: u64,
    /// Faults answered with pages ahead.
    pub eager: u64,
    /// Refaults seen (pages brought in, evicted before the data arrived).
    pub refaults: u64,
}

/// The adaptive policy's state: one per page-in task (kept in [`super::PageInPlan`]).
#[derive(Clone, Debug)]
pub struct AdaptiveTracker {
    costs: AdaptiveCosts,
    eager_density: f64,
    drain: u64,
    transfers: FxHashMap<(FaultSide, Pdid, TransferKey), TransferState>,
    spaces: FxHashMap<(FaultSide, Pdid), SpaceState>,
    /// Transfers with a record in the current drain, in first-seen order.
    touched: Vec<(FaultSide, Pdid, TransferKey)>,
    stats: AdaptiveStats,
}

impl Default for AdaptiveTracker {
    fn default() -> Self {
        AdaptiveTracker::new(AdaptiveCosts::default())
    }
}

impl AdaptiveTracker {
    /// A tracker that weighs `costs`.
    pub fn new(costs: AdaptiveCosts) -> AdaptiveTracker {
        AdaptiveTracker {
            eager_density: costs.eager_density(),
            costs,
            drain: 0,
            transfers: FxHashMap::default(),
            spaces: FxHashMap::default(),
            touched: Vec::new(),
            stats: AdaptiveStats::default(),
        }
    }

    /// The costs it weighs.
    pub fn costs(&self) -> AdaptiveCosts {
        self.costs
    }

    /// Replace the costs (history is kept).
    pub fn set_costs(&mut self, costs: AdaptiveCosts) {
        self.costs = costs;
        self.eager_density = costs.eager_density();
    }

    /// Counters so far.
    pub fn stats(&self) -> AdaptiveStats {
        self.stats
    }

    /// A new drain begins: its records are classified against the plans of earlier drains.
    pub fn begin_drain(&mut self) {
        self.drain += 1;
        if self.transfers.len() > MAX_TRANSFERS {
            let now = self.drain;
            self.transfers
                .retain(|_, t| now.saturating_sub(t.seen) < FORGET_AFTER_DRAINS);
        }
    }

    /// The drain's records are all planned: transfers that had records and no refault in it
    /// may look further ahead again.
    pub fn end_drain(&mut self) {
        for key in self.touched.drain(..) {
            let Some(t) = self.transfers.get_mut(&key) else {
                continue;
            };
            if !t.refault_now {
                t.lookahead = t.lookahead.map(|l| l.saturating_mul(2));
            }
            t.refault_now = false;
            if let Some(s) = self.spaces.get_mut(&(key.0, key.1)) {
                s.lookahead = t.lookahead;
            }
        }
    }

    /// The page-aligned range to bring in for `rec`, updating what the tracker knows.
    pub fn pages(&mut self, rec: &FaultRecord) -> (u64, u64) {
        let page = page_of(rec.page_addr);
        let first = page_of(rec.transfer_range.0).min(page);
        let end = page_of(rec.transfer_range.1.saturating_add(PAGE_BYTES - 1))
            .max(page.saturating_add(PAGE_BYTES));
        let block_pages =
            ((rec.block_range.1.saturating_sub(rec.block_range.0)) / PAGE_BYTES).max(1);
        let space_key = (rec.side, rec.pdid);
        let space = *self.spaces.entry(space_key).or_insert(SpaceState {
            density: self.eager_density,
            lookahead: None,
        });
        let drain = self.drain;
        let key = (rec.side, rec.pdid, rec.transfer);
        let t = self.transfers.entry(key).or_insert_with(|| TransferState {
            first,
            faults: 0,
            furthest: first,
            covered: Vec::new(),
            lookahead: space.lookahead,
            seen: 0,
            refault_now: false,
        });
        if t.seen != drain {
            t.seen = drain;
            self.touched.push(key);
        }
        // Every record of this drain was logged after the plans of two drains ago had
        // brought their pages in (the task is serial: plan, page-in, ERRs, then the next
        // drain's reads), so a page one of those covered and that is missing again was
        // evicted. A page only a more recent plan covers may never have been in yet.
        let old = t
            .covered
            .iter()
            .rev()
            .find(|c| c.start <= page && page < c.end && c.drain + 2 <= drain)
            .copied();
        let kind = match old {
            Some(c) => {
                // Brought in `page - c.start` pages ahead of the fault that planned it, and
                // gone before the data got there: look at most half that far ahead.
                let ahead = (page - c.start) / PAGE_BYTES;
                let cut = (ahead / 2).max(block_pages);
                t.lookahead = Some(t.lookahead.map_or(cut, |l| l.min(cut)));
                t.refault_now = true;
                FaultKind::Refault
            }
            None if t.covered.iter().any(|c| c.start <= page && page < c.end) => FaultKind::Recent,
            None => FaultKind::New,
        };
        if kind == FaultKind::New {
            t.faults += 1;
            t.furthest = t.furthest.max(page);
        }
        if kind == FaultKind::Refault {
            self.stats.refaults += 1;
        }
        let span = ((t.furthest - t.first) / PAGE_BYTES + 1) as f64;
        let density = (t.faults as f64 + PRIOR_PAGES * space.density) / (span + PRIOR_PAGES);
        let range = if density > self.eager_density {
            self.stats.eager += 1;
            let ahead = t.lookahead.map_or(u64::MAX, |l| l.saturating_add(1));
            (
                page,
                end.min(page.saturating_add(ahead.saturating_mul(PAGE_BYTES))),
            )
        } else {
            self.stats.narrow += 1;
            (page, page.saturating_add(PAGE_BYTES))
        };
        if t.covered.len() >= MAX_COVERED {
            t.covered.remove(0);
        }
        t.covered.push(Covered {
            start: range.0,
            end: range.1,
            drain,
        });
        if let Some(s) = self.spaces.get_mut(&space_key) {
            s.density = 0.875 * s.density + 0.125 * density;
        }
        range
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: u64 = PAGE_BYTES;

    fn rec(id: u32, page: u64, pages: u64) -> FaultRecord {
        let block = page / 4 * 4;
        FaultRecord {
            side: FaultSide::Destination,
            transfer: TransferKey {
                data_src: 0,
                data_dst: 1,
                id,
                read_response: false,
            },
            block: (block / 4) as u32,
            block_seq: 0,
            pdid: 1,
            page_addr: page * P,
            block_range: (block * P, (block + 4) * P),
            transfer_range: (0, pages * P),
        }
    }

    #[test]
    fn the_break_even_density_follows_the_costs() {
        let c = AdaptiveCosts::default();
        let d = c.eager_density();
        assert!(d > 0.0 && d < 0.01, "forth-arm break-even {d}");
        assert!(c.gain_us(d * 1.01) > 0.0 && c.gain_us(d * 0.99) <= 0.0);
        // Walking present pages for free: any density pays.
        let free = AdaptiveCosts {
            present_us: 0.0,
            ..c
        };
        assert_eq!(free.eager_density(), 0.0);
        // A fault round cheaper than a page-in: never eager.
        let cheap = AdaptiveCosts {
            fault_round_us: 1.0,
            ..c
        };
        assert_eq!(cheap.eager_density(), 1.0);
        // The round is the fault path plus the block's retransmission: tens of us.
        assert!(c.fault_round_us > 30.0 && c.fault_round_us < 60.0, "{c:?}");
    }

    #[test]
    fn dense_faults_page_in_the_rest_sparse_ones_the_page() {
        let mut t = AdaptiveTracker::default();
        t.begin_drain();
        // First fault at the first page of a 1024-page transfer: dense.
        assert_eq!(t.pages(&rec(1, 0, 1024)), (0, 1024 * P));
        // First fault after 900 present pages: below the break-even, the page only.
        assert_eq!(t.pages(&rec(2, 900, 1024)), (900 * P, 901 * P));
        t.end_drain();
        assert_eq!(t.stats().eager, 1);
        assert_eq!(t.stats().narrow, 1);
    }

    #[test]
    fn a_refault_shortens_the_lookahead_and_quiet_drains_lengthen_it() {
        let mut t = AdaptiveTracker::default();
        t.begin_drain();
        assert_eq!(t.pages(&rec(1, 0, 1024)), (0, 1024 * P));
        t.end_drain();
        // A record of the next drain for a page of that range may predate the page-in.
        t.begin_drain();
        assert_eq!(t.pages(&rec(1, 40, 1024)).0, 40 * P);
        t.end_drain();
        assert_eq!(t.stats().refaults, 0);
        // Two drains later: page 200, brought in 200 pages ahead, was evicted.
        t.begin_drain();
        assert_eq!(t.pages(&rec(1, 200, 1024)), (200 * P, 301 * P));
        t.end_drain();
        assert_eq!(t.stats().refaults, 1);
        // Page 400 was brought in by the plan of two drains ago too: another refault, the
        // lookahead stays at the smaller cut.
        t.begin_drain();
        assert_eq!(t.pages(&rec(1, 400, 1024)), (400 * P, 501 * P));
        t.end_drain();
        assert_eq!(t.stats().refaults, 2);
        // The address space's next transfer starts from that lookahead, and each of its
        // drains without a refault doubles it.
        t.begin_drain();
        assert_eq!(t.pages(&rec(2, 0, 1024)), (0, 101 * P));
        t.end_drain();
        t.begin_drain();
        assert_eq!(t.pages(&rec(2, 150, 1024)), (150 * P, 351 * P));
        t.end_drain();
        t.begin_drain();
        assert_eq!(t.pages(&rec(3, 0, 1024)), (0, 401 * P));
        t.end_drain();
    }

    #[test]
    fn the_range_stays_inside_the_transfer_and_holds_the_page() {
        let mut t = AdaptiveTracker::default();
        t.begin_drain();
        let (s, e) = t.pages(&rec(1, 10, 12));
        assert_eq!((s, e), (10 * P, 12 * P));
        // A record whose ranges do not cover its page still brings the page in.
        let mut r = rec(3, 9, 4);
        r.transfer_range = (0, 0);
        let (s, e) = t.pages(&r);
        assert!(s <= 9 * P && e > 9 * P);
    }
}
