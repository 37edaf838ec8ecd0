//! Early ERR (spec part.md, "Beyond the reference design"): the page-in task answers a faulted
//! block before all the pages of its drain are in, so that the source's retransmission overlaps
//! the rest of the page-in without relying on a block timeout.
//!
//! The point is chosen from the transfer and its faults: which pages are still to come in (the
//! fault count and where the missing pages lie), how fast they come in (`get_user_pages` per
//! call and per page), and how fast the source can stream the retransmitted data (the link).
//! The ERR is sent after the `k`-th of the remaining pages is in, for the smallest `k` such that
//!
//! - every missing page of the faulted block itself is in (the block is resent first), and
//! - the resent stream, starting at the block and going on through the rest of the transfer at
//!   full link speed, never reaches a page before that page is in. The source may skip up to
//!   `max_outstanding_blocks - 1` other faulted blocks that still wait for their own ERR (they
//!   hold window slots, the blocks after them go out), so the stream may be that much ahead;
//!   and the page-in after the ERR may be slowed by as many other faulted blocks (their fault
//!   interrupts, about one block's transmission time each, and their own early ERRs): a slack.
//!
//! The ERR's trip to the source and the source's turnaround only delay the stream further. The
//! cost of this ERR's own notification delays the page-in and the ERR alike, so it cancels
//! out.
//!
//! Pure: [`pages_before_err`] is the choice; the handler model ([`super::handler`]) applies it.

use crate::memory::{page_of, Pdid, PAGE_BYTES};
use crate::profile::Profile;

/// What the early-ERR choice needs besides the page-in costs: how fast a resent block can
/// arrive. The default (all zero) is an infinitely fast stream: the ERR waits for every page.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResendStream {
    /// Link time per payload byte of a resent block, in picoseconds (packet headers included):
    /// the fastest the source can stream the retransmission.
    pub stream_ps_per_byte: u64,
    /// Bytes of other faulted blocks the stream may skip (`(max_outstanding_blocks - 1) *
    /// block_bytes`).
    pub skip_bytes: u64,
    /// How much the page-in after the ERR may be slowed by the other faulted blocks, ns.
    pub slack_ns: u64,
}

impl ResendStream {
    /// The stream of `profile`: `(packet_bytes + header_bytes)` bytes at `link_gbps` per
    /// `packet_bytes` of payload; the window's other blocks for the skip and the slack (each:
    /// a block's transmission, plus a notification unless `os.err_from = "kernel"`, plus an
    /// ERR).
    pub fn from_profile(profile: &Profile) -> ResendStream {
        let n = &profile.net;
        let e = &profile.engine;
        let bits = (e.packet_bytes as f64 + n.header_bytes as f64) * 8.0;
        // ps per packet = bits / Gb/s * 1000; per payload byte: / packet_bytes. Rounded down
        // (a faster stream is the conservative side).
        let ps = (bits / n.link_gbps * 1000.0 / e.packet_bytes as f64).floor() as u64;
        let others = e.max_outstanding_blocks.saturating_sub(1) as u64;
        let notify_us = match profile.os.err_from {
            crate::profile::ErrFrom::User => profile.os.notify_us,
            crate::profile::ErrFrom::Kernel => 0.0,
        };
        let per_block_ns = e.block_bytes as u64 * ps / 1000
            + ((notify_us + profile.os.err_send_us) * 1000.0).ceil() as u64;
        ResendStream {
            stream_ps_per_byte: ps,
            skip_bytes: others * e.block_bytes as u64,
            slack_ns: others * per_block_ns,
        }
    }
}

/// The page-in costs the choice uses, in ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageInCosts {
    /// `get_user_pages` per call.
    pub call_ns: u64,
    /// `get_user_pages` per page brought in.
    pub page_ns: u64,
}

/// One `get_user_pages` call still to make (or in progress), in the order the task makes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PendingRun {
    /// Address space.
    pub pdid: Pdid,
    /// First page still to bring in.
    pub first: u64,
    /// Pages still to bring in, from `first` on.
    pub pages: u64,
    /// Whether the call's fixed cost is still ahead (false: the call is in progress).
    pub needs_call: bool,
}

/// A faulted block attempt to answer: what the source resends once it gets the ERR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resend {
    /// Address space of the faulting side.
    pub pdid: Pdid,
    /// The faulted block, `[start, end)`: resent first, so its pages must all be in.
    pub block: (u64, u64),
    /// End of the transfer: the stream goes on from the block to here.
    pub transfer_end: u64,
}

/// How many of the `runs`' pages (counted in order, from now) must be in before the ERR for
/// `resend` goes out (0: at once; the total: after the whole page-in, as without early ERR).
pub fn pages_before_err(
    costs: PageInCosts,
    model: ResendStream,
    runs: &[PendingRun],
    resend: &Resend,
) -> u64 {
    let (from, block_end) = resend.block;
    let from_page = page_of(from);
    // Pass 1: walk the pages in order with the time each is in (from now); collect the
    // smallest k the block needs, and the latest instant by which the ERR must be sent.
    let mut t = 0u64;
    let mut j = 0u64;
    let mut k_block = 0u64;
    let mut send_by_ns = 0u64; // the ERR's page-in time must be at least this
    for r in runs {
        if r.needs_call {
            t += costs.call_ns;
        }
        for i in 0..r.pages {
            t += costs.page_ns;
            j += 1;
            let p = r.first + i * PAGE_BYTES;
            if r.pdid != resend.pdid || p + PAGE_BYTES <= from_page || p >= resend.transfer_end {
                continue;
            }
            if p < block_end {
                k_block = j;
            } else {
                // The stream reaches page p this long after the ERR at the earliest: after the
                // block itself, and after what lies before p less the skipped blocks.
                let behind = (p - from)
                    .saturating_sub(model.skip_bytes)
                    .max(block_end - from);
                let ahead_ns = behind * model.stream_ps_per_byte / 1000;
                send_by_ns = send_by_ns.max((t + model.slack_ns).saturating_sub(ahead_ns));
            }
        }
    }
    // Pass 2: the smallest k >= k_block whose page-in time reaches `send_by_ns`.
    let mut t = 0u64;
    let mut k = 0u64;
    if k >= k_block && t >= send_by_ns {
        return 0;
    }
    for r in runs {
        if r.needs_call {
            t += costs.call_ns;
        }
        for _ in 0..r.pages {
            t += costs.page_ns;
            k += 1;
            if k >= k_block && t >= send_by_ns {
                return k;
            }
        }
    }
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: u64 = PAGE_BYTES;
    const BASE: u64 = 0x10_0000;

    /// forth-arm page-in: 6 us per call, 3 us per page.
    const COSTS: PageInCosts = PageInCosts {
        call_ns: 6_000,
        page_ns: 3_000,
    };

    /// A stream alone: no window of other faulted blocks.
    fn stream(ps_per_byte: u64) -> ResendStream {
        ResendStream {
            stream_ps_per_byte: ps_per_byte,
            skip_bytes: 0,
            slack_ns: 0,
        }
    }

    fn run(first_page: u64, pages: u64) -> PendingRun {
        PendingRun {
            pdid: 1,
            first: BASE + first_page * P,
            pages,
            needs_call: true,
        }
    }

    fn resend(block: u64, transfer_pages: u64) -> Resend {
        Resend {
            pdid: 1,
            block: (BASE + block * 4 * P, BASE + (block + 1) * 4 * P),
            transfer_end: BASE + transfer_pages * P,
        }
    }

    #[test]
    fn forth_arm_stream_rate() {
        // 272 bytes of link per 256 of payload at 10 Gb/s: 0.85 ns per byte, 3.48 us per page
        // (slower than a page-in's 3 us).
        let m = ResendStream::from_profile(&Profile::forth_arm());
        assert_eq!(m.stream_ps_per_byte, 850);
        // The other block of the window: 16 KiB skipped; its transmission (13.9 us), netlink
        // (7 us) and ERR (1 us) of slack; no netlink from kernel context.
        assert_eq!((m.skip_bytes, m.slack_ns), (16384, 13_926 + 8_000));
        let mut k = Profile::forth_arm();
        k.os.err_from = crate::profile::ErrFrom::Kernel;
        assert_eq!(ResendStream::from_profile(&k).slack_ns, 13_926 + 1_000);
    }

    #[test]
    fn the_window_moves_the_err_later() {
        // forth-arm: the stream alone never catches up once block 0 is in; with the window's
        // other block skipped and its slack, the ERR waits until the pages of block 1 and a few
        // more are in, so that block 2, sent right after the resent block 0, finds its pages.
        let m = ResendStream::from_profile(&Profile::forth_arm());
        let runs = [run(0, 1024)];
        let k = pages_before_err(COSTS, m, &runs, &resend(0, 1024));
        // Page j (1-based) is in at 6 + 3 j us. Block 2's first page (the 9th, in at 33 us)
        // is reached 13.9 us after the ERR at the earliest (right after block 0, block 1
        // skipped), with 21.9 us of slack: 6 + 3 k >= 33 + 21.9 - 13.9, k = 12. Later pages
        // are reached later (3.48 us per page streamed against 3 us per page in).
        assert_eq!(k, 12);
    }

    #[test]
    fn a_slow_stream_needs_only_the_faulted_block() {
        // Pages come in every 3 us; the stream takes 4 us per page: once block 0 (4 pages) is
        // in, the stream never catches up.
        let slow = stream(1_000);
        let runs = [run(0, 1024)];
        assert_eq!(
            pages_before_err(COSTS, slow, &runs, &resend(0, 1024)),
            4,
            "4 MiB, all missing"
        );
        // A fault in block 3 of the same transfer: its pages are the 13th to 16th of the run.
        let runs = [run(12, 1012)];
        assert_eq!(pages_before_err(COSTS, slow, &runs, &resend(3, 1024)), 4);
    }

    #[test]
    fn a_fast_stream_waits_in_proportion_to_the_transfer() {
        // 1.024 us per page streamed, 3 us per page in: the last page binds. It is in at
        // 6 + 3 n us and reached 1.024 (n - 1) us after the ERR, so the ERR waits for
        // k = ceil(n - 1.024 (n - 1) / 3) pages: about two thirds of the transfer.
        let fast = stream(250);
        for pages in [64u64, 256, 1024] {
            let k = pages_before_err(COSTS, fast, &[run(0, pages)], &resend(0, pages));
            let want = (3000 * pages - 1024 * (pages - 1)).div_ceil(3000);
            assert_eq!(k, want, "{pages} pages");
        }
        // A stream faster than light waits for everything.
        let instant = stream(0);
        assert_eq!(
            pages_before_err(COSTS, instant, &[run(0, 64)], &resend(0, 64)),
            64
        );
    }

    #[test]
    fn fewer_missing_pages_allow_an_earlier_err() {
        // The fault count: with the same stream, a transfer whose later pages are mostly
        // present needs fewer pages in before the ERR than one with every page missing.
        let fast = stream(250);
        let all = pages_before_err(COSTS, fast, &[run(0, 256)], &resend(0, 256));
        // Block 0 missing, then one page in 8 missing.
        let mut sparse = vec![run(0, 4)];
        sparse.extend((1..32).map(|i| run(i * 8, 1)));
        let k = pages_before_err(COSTS, fast, &sparse, &resend(0, 256));
        assert!(k < all, "sparse {k} vs all {all}");
        // The check itself: with ERR after k of the sparse pages, no page is reached early.
        let ahead = |p: u64| p * 250 / 1000;
        let mut t = 0;
        let mut times = Vec::new();
        for r in &sparse {
            t += COSTS.call_ns;
            for i in 0..r.pages {
                t += COSTS.page_ns;
                times.push((r.first + i * P - BASE, t));
            }
        }
        let t_err = times[k as usize - 1].1;
        for &(off, t_in) in &times[k as usize..] {
            assert!(t_err + ahead(off) >= t_in, "page at +{off:#x}");
        }
    }

    #[test]
    fn present_block_and_unrelated_pages_need_nothing() {
        let m = stream(1_000);
        // The block's pages are already in; the runs are another address space's.
        let other = PendingRun {
            pdid: 2,
            ..run(0, 16)
        };
        assert_eq!(pages_before_err(COSTS, m, &[other], &resend(0, 16)), 0);
        // A run in progress (no call ahead) still counts its pages.
        let going = PendingRun {
            needs_call: false,
            ..run(0, 8)
        };
        assert_eq!(pages_before_err(COSTS, m, &[going], &resend(0, 8)), 4);
    }

    #[test]
    fn pages_before_the_block_do_not_bind() {
        // PIA from a fault in block 2 of a transfer whose earlier pages are in: the stream starts
        // at block 2, pages before it are not resent.
        let m = stream(1_000);
        let runs = [run(6, 2), run(8, 8)]; // pages 6, 7 belong to block 1
        assert_eq!(pages_before_err(COSTS, m, &runs, &resend(2, 16)), 6);
    }
}
