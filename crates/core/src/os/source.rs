//! Where a missing page comes from, beyond the anonymous 4 KiB page of the reference design
//! (spec part.md, "Beyond the reference design": major faults and huge pages).
//!
//! The fault handler model asks its [`super::Residency`] for the source of every page it is
//! about to bring in; the default answer, [`PageSource::Minor`], is the reference design's
//! page (`get_user_pages` at the profile's per-page cost), so a memory model that says nothing
//! keeps every cost and every event of the reference design.

use crate::time::Duration;

/// Bytes of a transparent huge page (2 MiB, one level-2 block entry of a 4 KiB granule table).
pub const HUGE_PAGE_BYTES: u64 = 2 << 20;

/// 4 KiB pages in a huge page.
pub const PAGES_PER_HUGE: u64 = HUGE_PAGE_BYTES / crate::memory::PAGE_BYTES;

/// The start of the huge page holding `addr`.
pub fn huge_of(addr: u64) -> u64 {
    addr & !(HUGE_PAGE_BYTES - 1)
}

/// How one missing page is brought in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PageSource {
    /// Anonymous memory (fresh or zero-filled): a CPU minor fault, the profile's
    /// `gup_page_us`. The reference design's only kind.
    #[default]
    Minor,
    /// A major fault: the page lives in a file that is not in the page cache, or in swap. The
    /// page-in task blocks for the device: one read request of `io` per `readahead_pages`
    /// contiguous pages of one `get_user_pages` run, then maps each page at the profile's
    /// per-page cost. A request reads a whole window of `readahead_pages` from its first page
    /// on: window pages the run does not map stay in the page cache and fault minor later
    /// (so PIO gains from readahead too). The wait is not CPU work: interrupts taken
    /// meanwhile do not lengthen it.
    Major {
        /// Device time of one read request.
        io: Duration,
        /// Pages one request reads at most (1: every page its own request, as scattered swap).
        readahead_pages: u64,
    },
    /// A page of a 2 MiB transparent huge page: a fault on any of its 4 KiB pages brings the
    /// whole huge page in, one step of `cost` (CPU work: allocating and clearing 2 MiB).
    Huge {
        /// CPU time of one huge page-in.
        cost: Duration,
    },
}

impl PageSource {
    /// Short name for tables (`minor`, `major`, `huge`).
    pub fn name(self) -> &'static str {
        match self {
            PageSource::Minor => "minor",
            PageSource::Major { .. } => "major",
            PageSource::Huge { .. } => "huge",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{FaultRecord, FaultSide, TransferKey};
    use crate::memory::{Pdid, PAGE_BYTES};
    use crate::os::{
        FaultHandlerModel, HandlerAction, HandlerConfig, PageInConfig, PageInPolicy, Residency,
    };
    use crate::profile::Profile;
    use crate::time::Instant;
    use rustc_hash::FxHashSet;

    const P: u64 = PAGE_BYTES;
    const BASE: u64 = 0x20_0000;

    #[test]
    fn huge_page_geometry() {
        assert_eq!(PAGES_PER_HUGE, 512);
        assert_eq!(huge_of(0x20_0000_0000 + 0x1f_f000), 0x20_0000_0000);
        assert_eq!(huge_of(0x20_0020_0000), 0x20_0020_0000);
        assert_eq!(PageSource::default(), PageSource::Minor);
    }

    /// Pages at or above BASE come from `source`; nothing is present at first.
    struct Mem {
        present: FxHashSet<u64>,
        source: PageSource,
    }
    impl Residency for Mem {
        fn is_present(&self, _pdid: Pdid, page_addr: u64) -> bool {
            self.present.contains(&page_addr)
        }
        fn source(&self, _pdid: Pdid, page_addr: u64) -> PageSource {
            if page_addr >= BASE {
                self.source
            } else {
                PageSource::Minor
            }
        }
    }

    /// A destination fault on page `page` of a `pages`-page transfer at BASE.
    fn rec(page: u64, pages: u64) -> FaultRecord {
        let block = page / 4;
        let bs = BASE + block * 4 * P;
        FaultRecord {
            side: FaultSide::Destination,
            transfer: TransferKey {
                data_src: 0,
                data_dst: 1,
                id: 1,
                read_response: false,
            },
            block: block as u32,
            block_seq: 0,
            pdid: 1,
            page_addr: BASE + page * P,
            block_range: (bs, (bs + 4 * P).min(BASE + pages * P)),
            transfer_range: (BASE, BASE + pages * P),
        }
    }

    /// Run the handler until idle after `recs` arrive at `t = 0` with one interrupt, plus an
    /// interrupt at each of `irqs_us` (with the record of `late`, if any, at the first of
    /// them); the page-ins and their times.
    fn run(
        policy: PageInPolicy,
        source: PageSource,
        recs: &[FaultRecord],
        irqs_us: &[u64],
        mut late: Option<FaultRecord>,
    ) -> (FaultHandlerModel, Vec<(Instant, u64)>) {
        let mut h = FaultHandlerModel::new(HandlerConfig {
            os: Profile::forth_arm().os,
            page_in: PageInConfig {
                policy,
                send_err: true,
            },
            resend: crate::os::early_err::ResendStream::from_profile(&Profile::forth_arm()),
        });
        let mut mem = Mem {
            present: FxHashSet::default(),
            source,
        };
        for r in recs {
            assert!(h.handle_fifo_push(Instant::ZERO, *r));
        }
        h.handle_interrupt(Instant::ZERO);
        let mut irqs: Vec<Instant> = irqs_us
            .iter()
            .map(|&u| Instant::ZERO + Duration::from_us(u))
            .collect();
        irqs.reverse();
        let mut ins = Vec::new();
        loop {
            let next = h.poll_timeout();
            let irq = irqs.last().copied();
            let t = match (next, irq) {
                (Some(a), Some(b)) if b <= a => b,
                (None, Some(b)) => b,
                (Some(a), _) => a,
                (None, None) => break,
            };
            if irq == Some(t) && next.is_none_or(|a| t < a) {
                irqs.pop();
                if let Some(r) = late.take() {
                    assert!(h.handle_fifo_push(t, r));
                }
                h.handle_interrupt(t);
                continue;
            }
            h.handle_timeout(t, &mem);
            while let Some((at, a)) = h.poll_timed_action() {
                if let HandlerAction::PageIn { page_addr, .. } = a {
                    mem.present.insert(page_addr);
                    ins.push((at, page_addr));
                }
            }
        }
        (h, ins)
    }

    /// PIA over 4 major pages with a readahead of 2: two device reads, each before its pair of
    /// pages; the wait is not CPU time, and an interrupt during it does not lengthen it.
    #[test]
    fn major_runs_wait_for_one_read_per_readahead_window() {
        let io = Duration::from_us(100);
        let major = PageSource::Major {
            io,
            readahead_pages: 2,
        };
        let (h, ins) = run(PageInPolicy::Pia, major, &[rec(0, 4)], &[], None);
        let s = h.stats();
        assert_eq!((s.io_requests, s.major_pages_in, s.pages_in), (2, 4, 4));
        assert_eq!(s.io_wait, io.times(2));
        let gup = h.breakdown().gup;
        let (minor, minor_ins) = run(
            PageInPolicy::Pia,
            PageSource::Minor,
            &[rec(0, 4)],
            &[],
            None,
        );
        assert_eq!(
            gup,
            minor.breakdown().gup,
            "the device wait is not CPU time"
        );
        // Pages 0 and 1 after the first read, 2 and 3 after the second.
        assert_eq!(ins[0].0 - minor_ins[0].0, io);
        assert_eq!(ins[1].0 - minor_ins[1].0, io);
        assert_eq!(ins[2].0 - minor_ins[2].0, io.times(2));
        assert_eq!(ins[3].0 - minor_ins[3].0, io.times(2));
        // An interrupt in the middle of the first read: the read ends at the same time.
        let (_, with_irq) = run(PageInPolicy::Pia, major, &[rec(0, 4)], &[50], None);
        assert_eq!(with_irq[0].0, ins[0].0);
        // PIO: one page, one read; the window's next page is then in the page cache.
        let (h, ins) = run(PageInPolicy::Pio, major, &[rec(2, 4)], &[], None);
        assert_eq!((h.stats().io_requests, ins.len()), (1, 1));
        let (h, ins) = run(
            PageInPolicy::Pio,
            major,
            &[rec(2, 4)],
            &[500],
            Some(rec(3, 4)),
        );
        let s = h.stats();
        assert_eq!((s.io_requests, s.major_pages_in, ins.len()), (1, 1, 2));
    }

    /// A fault anywhere in a missing huge page brings all of it in at once, after one step of
    /// its cost; two faults in one huge page plan it once.
    #[test]
    fn huge_pages_come_in_whole_and_once() {
        let cost = Duration::from_us(200);
        let huge = PageSource::Huge { cost };
        let (h, ins) = run(PageInPolicy::Pio, huge, &[rec(5, 8), rec(1, 8)], &[], None);
        let s = h.stats();
        assert_eq!((s.huge_pages_in, s.pages_in), (1, PAGES_PER_HUGE));
        assert_eq!(ins.len() as u64, PAGES_PER_HUGE);
        assert!(ins.iter().all(|&(t, _)| t == ins[0].0), "one instant");
        assert_eq!(ins[0].1, BASE);
        assert_eq!(ins.last().map(|i| i.1), Some(BASE + HUGE_PAGE_BYTES - P));
        assert_eq!(
            h.breakdown().gup,
            Duration::from_us_f64(Profile::forth_arm().os.gup_call_us) + cost
        );
        assert_eq!(s.errs, 2, "one ERR per faulted block");
    }
}
