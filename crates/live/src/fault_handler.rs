//! The host's page-in task (spec part.md, mechanism 5), as a thread.
//!
//! The engine loop forwards every fault record the engine logs (its "fault FIFO") over a
//! channel. The handler thread drains everything queued and plans the drain with the core's
//! page-in plan ([`PageInPlan`], shared with the simulator's handler model): the configured
//! policy's ranges, merged per access so that each page is brought in once, and one answer per
//! faulted block. This thread only makes the system calls: it pages the ranges in with
//! `madvise(MADV_POPULATE_WRITE)` for destination faults (the page must become writable, so a
//! zero page or a copy-on-write page is replaced) or `MADV_POPULATE_READ` for source faults
//! (Linux >= 5.14, probed once). On kernels without them it falls back to touching one byte per
//! page: an atomic `fetch_or(0)` for writes (a real store that cannot lose a concurrent engine
//! write to the same byte) or a volatile read.
//!
//! Then it hands back the plan's answers ([`HandlerOutput::Reply`]: "send an ERR" for
//! destination faults, "resume the source" for source faults) and wakes the engine loop. A page
//! whose page-in fails with `EINVAL` / `EFAULT` (mapped, but without the permission, e.g.
//! `mprotect` after `expose`) is reported as [`HandlerOutput::Bad`] first, so the
//! retransmission that follows fails as a protection error instead of faulting forever.
//!
//! Known limitation: if a page-in succeeds but the residency check still refuses the page (a
//! case not seen so far: the write rule accepts exclusive anonymous pages and file / shared
//! pages, which is what `MADV_POPULATE_WRITE` produces), the block would cycle through NACK,
//! page-in and ERR without progress; a per-page retry cap is future work.
//!
//! Minor faults (fresh anonymous memory) cost a few microseconds per page inside `madvise`;
//! major faults (file-backed memory not in the page cache) cost a disk read each, but
//! `MADV_POPULATE_*` of a whole PIA range issues them together with the kernel's readahead.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::Arc;
use std::time::Instant as StdInstant;

use unpinned_core::api::FaultRecord;
use unpinned_core::memory::{page_of, PAGE_BYTES};
use unpinned_core::os::PageInPlan;
pub use unpinned_core::os::{BlockReply, PageInConfig};
use unpinned_os::populate::{page_in, will_need};

/// What the handler asks of the engine loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HandlerOutput {
    /// A faulted block's pages are in: send its ERR (`post_err`) or resume the source
    /// (`handle_source_resolved`).
    Reply(BlockReply),
    /// Page-in of `[start, end)` failed although it is mapped (no permission): accesses must
    /// fail instead of faulting forever.
    Bad {
        /// First byte (page aligned).
        start: u64,
        /// End (page aligned).
        end: u64,
    },
}

/// Counters of the page-in thread, shared with the runtime (relaxed atomics).
#[derive(Debug, Default)]
pub struct PageInCounters {
    /// Fault records received (including those the engine handled inline).
    pub records: AtomicU64,
    /// Batches processed (wake-ups of the page-in task).
    pub batches: AtomicU64,
    /// Pages covered by page-in calls (after merging).
    pub pages: AtomicU64,
    /// `madvise` (or fallback touch) calls.
    pub calls: AtomicU64,
    /// Nanoseconds spent paging in.
    pub page_in_ns: AtomicU64,
    /// ERRs requested.
    pub errs: AtomicU64,
    /// Source resumes requested.
    pub resumes: AtomicU64,
    /// Ranges that could not be paged in.
    pub bad_ranges: AtomicU64,
    /// Destination faults the engine paged in itself (small, anonymous; see
    /// `LoopOptions::inline_page_in_max_pages`); their records, pages, time and ERRs are
    /// counted above too (not as batches: the thread never saw them).
    pub inline_page_ins: AtomicU64,
}

/// A plain copy of [`PageInCounters`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageInStats {
    /// Fault records received.
    pub records: u64,
    /// Batches processed.
    pub batches: u64,
    /// Pages paged in (after merging).
    pub pages: u64,
    /// Page-in calls.
    pub calls: u64,
    /// Nanoseconds spent paging in.
    pub page_in_ns: u64,
    /// ERRs requested.
    pub errs: u64,
    /// Source resumes requested.
    pub resumes: u64,
    /// Ranges that could not be paged in.
    pub bad_ranges: u64,
    /// Destination faults the engine paged in itself.
    pub inline_page_ins: u64,
}

impl PageInCounters {
    /// Read every counter.
    pub fn snapshot(&self) -> PageInStats {
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        PageInStats {
            records: l(&self.records),
            batches: l(&self.batches),
            pages: l(&self.pages),
            calls: l(&self.calls),
            page_in_ns: l(&self.page_in_ns),
            errs: l(&self.errs),
            resumes: l(&self.resumes),
            bad_ranges: l(&self.bad_ranges),
            inline_page_ins: l(&self.inline_page_ins),
        }
    }
}

/// Process one batch of fault records: plan, page in, then the outputs for the engine loop.
/// `plan` is the thread's planner, kept across batches (the adaptive policy learns from the
/// sequence of drains).
pub fn process_batch(
    plan: &mut PageInPlan,
    cfg: &PageInConfig,
    batch: &[FaultRecord],
    stats: &PageInCounters,
) -> Vec<HandlerOutput> {
    plan.plan(cfg, batch);
    let mut out = Vec::new();
    let t = StdInstant::now();
    // Start the reads of every range's missing file pages at once, before populating page by
    // page: under `MADV_RANDOM` (an application's hint against fault read-ahead, which
    // `live-hol` sets) a populate of a file mapping whose page cache was dropped reads one page
    // at a time, synchronously; `MADV_WILLNEED` over the range first lets the kernel read them
    // together. On anonymous memory the advice only reads back swapped-out pages.
    for r in &plan.ranges {
        will_need(r.start, r.end);
    }
    for r in &plan.ranges {
        stats.calls.fetch_add(1, Ordering::Relaxed);
        stats
            .pages
            .fetch_add((r.end - r.start) / PAGE_BYTES, Ordering::Relaxed);
        if page_in(r.start, r.end, r.write).is_err() {
            // Find the bad pages one by one; the good ones are now in. Only pages that are
            // mapped but cannot be populated (EINVAL / EFAULT: no permission, e.g. mprotect
            // after expose) are reported: an unmapped page (ENOMEM) is seen as unmapped by the
            // engine's own check, and a stale record for memory the application has since
            // unmapped must not poison a later mapping at the same address.
            let mut p = r.start;
            while p < r.end {
                if matches!(
                    page_in(p, p + PAGE_BYTES, r.write),
                    Err(libc::EFAULT | libc::EINVAL)
                ) {
                    stats.bad_ranges.fetch_add(1, Ordering::Relaxed);
                    out.push(HandlerOutput::Bad {
                        start: p,
                        end: p + PAGE_BYTES,
                    });
                }
                p += PAGE_BYTES;
            }
        }
    }
    stats
        .page_in_ns
        .fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
    for &reply in &plan.replies {
        let counter = match reply {
            BlockReply::SendErr { .. } => &stats.errs,
            BlockReply::ResumeSource { .. } => &stats.resumes,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        out.push(HandlerOutput::Reply(reply));
    }
    out
}

/// The handler thread's body: runs until the record channel closes.
///
/// `wake` is called after outputs were queued, so a parked engine loop picks them up at once.
pub fn run(
    cfg: PageInConfig,
    records: Receiver<FaultRecord>,
    outputs: Sender<HandlerOutput>,
    wake: Arc<dyn Fn() + Send + Sync>,
    stats: Arc<PageInCounters>,
) {
    let mut batch = Vec::new();
    let mut plan = PageInPlan::new();
    while let Some(first) = next_record(&records) {
        batch.clear();
        batch.push(first);
        while let Ok(r) = records.try_recv() {
            batch.push(r);
        }
        stats
            .records
            .fetch_add(batch.len() as u64, Ordering::Relaxed);
        stats.batches.fetch_add(1, Ordering::Relaxed);
        crate::trace::mark(
            crate::trace::PAGE_IN_THREAD,
            crate::trace::Point::HandlerStart,
            batch.len() as u32,
        );
        let outs = process_batch(&mut plan, &cfg, &batch, &stats);
        crate::trace::mark(
            crate::trace::PAGE_IN_THREAD,
            crate::trace::Point::HandlerEnd,
            outs.len() as u32,
        );
        let mut any = false;
        for o in outs {
            any = true;
            if outputs.send(o).is_err() {
                return;
            }
        }
        if any {
            wake();
        }
    }
}

/// After a batch, the thread polls for the next record (yielding the core between polls) this
/// long before it blocks: faults come in bursts (one record per faulting block attempt, blocks
/// of one transfer fault one after another), and waking a blocked thread costs tens of
/// microseconds on a loaded host, more than a small page-in.
pub const POLL_AFTER_BATCH: std::time::Duration = std::time::Duration::from_micros(200);

/// The next record: polled for [`POLL_AFTER_BATCH`], then waited for; `None` once the channel
/// is closed.
fn next_record(records: &Receiver<FaultRecord>) -> Option<FaultRecord> {
    let t = StdInstant::now();
    while t.elapsed() < POLL_AFTER_BATCH {
        match records.try_recv() {
            Ok(r) => return Some(r),
            Err(std::sync::mpsc::TryRecvError::Disconnected) => return None,
            Err(std::sync::mpsc::TryRecvError::Empty) => std::thread::yield_now(),
        }
    }
    records.recv().ok()
}

/// Page-aligned `[start, end)` covering `[addr, addr+len)`.
pub fn page_span(addr: u64, len: u64) -> (u64, u64) {
    (
        page_of(addr),
        page_of(addr.saturating_add(len).saturating_add(PAGE_BYTES - 1)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_pages_in_the_merged_plan_and_answers_each_block_once() {
        let _map_lock = crate::MAP_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: fresh private anonymous mapping owned by the test.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                3 * PAGE_BYTES as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        } as u64;
        let transfer = unpinned_core::api::TransferKey {
            data_src: 0,
            data_dst: 1,
            id: 5,
            read_response: false,
        };
        let rec = |block: u32, page: u64| FaultRecord {
            side: unpinned_core::api::FaultSide::Destination,
            transfer,
            block,
            block_seq: 0,
            pdid: 1,
            page_addr: p + page * PAGE_BYTES,
            block_range: (p + page * PAGE_BYTES, p + (page + 1) * PAGE_BYTES),
            transfer_range: (p, p + 3 * PAGE_BYTES),
        };
        let cfg = PageInConfig {
            policy: unpinned_core::os::PageInPolicy::Pio,
            send_err: true,
        };
        let stats = PageInCounters::default();
        // Two packets of block 0 and one of block 1, on adjacent pages: one call, two ERRs.
        let out = process_batch(
            &mut PageInPlan::new(),
            &cfg,
            &[rec(0, 0), rec(0, 0), rec(1, 1)],
            &stats,
        );
        let err = |block| {
            HandlerOutput::Reply(BlockReply::SendErr {
                transfer,
                block,
                block_seq: 0,
            })
        };
        assert_eq!(out, vec![err(0), err(1)]);
        let s = stats.snapshot();
        assert_eq!((s.calls, s.pages, s.errs, s.bad_ranges), (1, 2, 2, 0));
        let mut m = crate::memory::LiveMemory::new(1).unwrap();
        assert!(m
            .check(p, 2 * PAGE_BYTES as usize, crate::memory::Access::Write)
            .is_ok());
        // SAFETY: unmapping our own mapping.
        unsafe { libc::munmap(p as *mut libc::c_void, 3 * PAGE_BYTES as usize) };
    }

    #[test]
    fn page_in_populates_and_reports_unmapped() {
        let _map_lock = crate::MAP_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: fresh private anonymous mapping owned by the test.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                8192,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        } as u64;
        let mut m = crate::memory::LiveMemory::new(1).unwrap();
        assert!(m.check(p, 8192, crate::memory::Access::Write).is_err());
        page_in(p, p + 8192, true).unwrap();
        m.begin_turn();
        assert!(m.check(p, 8192, crate::memory::Access::Write).is_ok());
        // SAFETY: unmapping the second page of our own mapping.
        unsafe { libc::munmap((p + 4096) as *mut libc::c_void, 4096) };
        assert!(page_in(p + 4096, p + 8192, true).is_err());
        // SAFETY: unmapping the rest.
        unsafe { libc::munmap(p as *mut libc::c_void, 4096) };
    }
}
