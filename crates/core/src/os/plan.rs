//! Page-in planning (spec part.md, mechanism 5): what one drain of fault records asks of the
//! host, written once for the simulator's handler model ([`super::FaultHandlerModel`]) and
//! the live runtime's page-in thread. Drivers add only their costs (the model's
//! `get_user_pages` steps, skipping pages already present) or their system calls (`madvise`).
//!
//! - The pages: each record's [`PageInPolicy`] range, merged per address space and access
//!   (overlapping or adjacent ranges become one), so each page is brought in once per drain
//!   however many failed packets and blocks map to it. Destination faults need the page
//!   writable, source faults only readable: the two are separate ranges, as a write
//!   `get_user_pages` (or `MADV_POPULATE_WRITE`) of a read-only source buffer would fail.
//! - The answers: one [`BlockReply`] per distinct faulted block attempt, in the order first
//!   seen: an ERR to the data source for a destination fault (only when ERRs are enabled;
//!   without them the source recovers by its block timeout), a resume for a source fault
//!   (always: the local engine waits for it).

use rustc_hash::FxHashSet;

use crate::api::{FaultRecord, FaultSide, TransferKey};
use crate::memory::Pdid;
use crate::os::adaptive::{AdaptiveCosts, AdaptiveStats, AdaptiveTracker};
use crate::os::PageInPolicy;

/// What the page-in planning needs to know.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PageInConfig {
    /// Which pages to bring in per fault.
    pub policy: PageInPolicy,
    /// Send ERRs after page-in (false: retransmission only by the source's block timeout).
    pub send_err: bool,
}

impl Default for PageInConfig {
    fn default() -> Self {
        PageInConfig {
            policy: PageInPolicy::Pia,
            send_err: true,
        }
    }
}

/// A page-aligned range to bring in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct PageRange {
    /// Address space.
    pub pdid: Pdid,
    /// True: the pages must become writable (destination faults); false: readable (source).
    pub write: bool,
    /// First byte (page aligned).
    pub start: u64,
    /// End (page aligned, exclusive).
    pub end: u64,
}

/// The answer to one faulted block attempt, once its pages are in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockReply {
    /// Destination fault resolved: send an ERR for this block attempt to the transfer's data
    /// source.
    SendErr {
        /// The transfer.
        transfer: TransferKey,
        /// The block.
        block: u32,
        /// The attempt that faulted.
        block_seq: u16,
    },
    /// Source fault resolved: the local engine may resume the block.
    ResumeSource {
        /// The transfer.
        transfer: TransferKey,
        /// The block.
        block: u32,
        /// The attempt that faulted.
        block_seq: u16,
    },
}

/// The plan of one drain; reusable (its buffers are kept between drains).
#[derive(Clone, Debug, Default)]
pub struct PageInPlan {
    /// Merged ranges, sorted by address space, access and address.
    pub ranges: Vec<PageRange>,
    /// One answer per distinct faulted block attempt, in the order first seen.
    pub replies: Vec<BlockReply>,
    seen: FxHashSet<(FaultSide, TransferKey, u32, u16)>,
    /// The adaptive policy's history (used only under [`PageInPolicy::Adaptive`]).
    adaptive: AdaptiveTracker,
}

impl PageInPlan {
    /// An empty plan.
    pub fn new() -> PageInPlan {
        PageInPlan::default()
    }

    /// Weigh `costs` in the adaptive policy (default: the built-in profile's).
    pub fn set_adaptive_costs(&mut self, costs: AdaptiveCosts) {
        self.adaptive.set_costs(costs);
    }

    /// The adaptive policy's counters.
    pub fn adaptive_stats(&self) -> AdaptiveStats {
        self.adaptive.stats()
    }

    /// Plan the drain of `batch` (replacing the previous plan). Drains must be planned in the
    /// order they happen, each once its predecessor's pages are in (the adaptive policy learns
    /// from the sequence).
    pub fn plan(&mut self, cfg: &PageInConfig, batch: &[FaultRecord]) {
        self.ranges.clear();
        let adaptive = cfg.policy == PageInPolicy::Adaptive;
        if adaptive {
            self.adaptive.begin_drain();
        }
        for rec in batch {
            let (start, end) = if adaptive {
                self.adaptive.pages(rec)
            } else {
                cfg.policy.pages(rec)
            };
            self.ranges.push(PageRange {
                pdid: rec.pdid,
                write: rec.side == FaultSide::Destination,
                start,
                end,
            });
        }
        if adaptive {
            self.adaptive.end_drain();
        }
        self.ranges.sort_unstable();
        let mut merged = 0;
        for i in 0..self.ranges.len() {
            let r = self.ranges[i];
            if merged > 0 {
                let last = &mut self.ranges[merged - 1];
                if (last.pdid, last.write) == (r.pdid, r.write) && r.start <= last.end {
                    last.end = last.end.max(r.end);
                    continue;
                }
            }
            self.ranges[merged] = r;
            merged += 1;
        }
        self.ranges.truncate(merged);

        self.replies.clear();
        self.seen.clear();
        for rec in batch {
            if !self
                .seen
                .insert((rec.side, rec.transfer, rec.block, rec.block_seq))
            {
                continue;
            }
            let (transfer, block, block_seq) = (rec.transfer, rec.block, rec.block_seq);
            match rec.side {
                FaultSide::Destination if cfg.send_err => self.replies.push(BlockReply::SendErr {
                    transfer,
                    block,
                    block_seq,
                }),
                FaultSide::Destination => {}
                FaultSide::Source => self.replies.push(BlockReply::ResumeSource {
                    transfer,
                    block,
                    block_seq,
                }),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::PAGE_BYTES;

    const P: u64 = PAGE_BYTES;

    fn rec(side: FaultSide, pdid: Pdid, id: u32, block: u32, page: u64) -> FaultRecord {
        FaultRecord {
            side,
            transfer: TransferKey {
                data_src: 0,
                data_dst: 1,
                id,
                read_response: false,
            },
            block,
            block_seq: 0,
            pdid,
            page_addr: page * P,
            block_range: (page * P, (page + 1) * P),
            transfer_range: (0, 64 * P),
        }
    }

    #[test]
    fn merges_per_address_space_and_access_and_answers_each_block_once() {
        let cfg = PageInConfig {
            policy: PageInPolicy::Pio,
            send_err: true,
        };
        let d = FaultSide::Destination;
        let batch = [
            rec(d, 1, 7, 0, 3),
            rec(d, 1, 7, 0, 3), // another packet of the same block attempt
            rec(d, 1, 7, 1, 4), // adjacent page: merged
            rec(d, 1, 7, 2, 9),
            rec(d, 2, 8, 0, 4),                 // another address space
            rec(FaultSide::Source, 1, 9, 0, 5), // adjacent, but a read
        ];
        let mut plan = PageInPlan::new();
        plan.plan(&cfg, &batch);
        let r = |pdid, write, s: u64, e: u64| PageRange {
            pdid,
            write,
            start: s * P,
            end: e * P,
        };
        assert_eq!(
            plan.ranges,
            vec![
                r(1, false, 5, 6),
                r(1, true, 3, 5),
                r(1, true, 9, 10),
                r(2, true, 4, 5)
            ]
        );
        let blocks: Vec<(bool, u32, u32)> = plan
            .replies
            .iter()
            .map(|a| match *a {
                BlockReply::SendErr {
                    transfer, block, ..
                } => (true, transfer.id, block),
                BlockReply::ResumeSource {
                    transfer, block, ..
                } => (false, transfer.id, block),
            })
            .collect();
        assert_eq!(
            blocks,
            vec![
                (true, 7, 0),
                (true, 7, 1),
                (true, 7, 2),
                (true, 8, 0),
                (false, 9, 0)
            ]
        );
        // Without ERRs, destination faults wait for the block timeout; sources still resume.
        plan.plan(
            &PageInConfig {
                send_err: false,
                ..cfg
            },
            &batch,
        );
        assert_eq!(plan.replies.len(), 1);
        assert_eq!(
            plan.ranges.len(),
            4,
            "the pages are brought in all the same"
        );
    }
}
