//! The host's page-in task (spec part.md, mechanism 5), as a thread.
//!
//! The engine loop forwards every fault record the engine logs (its "fault FIFO") over a
//! channel. The handler thread drains everything queued, deduplicates (many failed packets and
//! several blocks map to one page), computes the pages to bring in with the configured
//! [`PageInPolicy`], merges overlapping ranges, and pages them in with
//! `madvise(MADV_POPULATE_WRITE)` for destination faults (the page must become writable, so a
//! zero page or a copy-on-write page is replaced) or `MADV_POPULATE_READ` for source faults
//! (Linux >= 5.14, probed once). On kernels without them it falls back to touching one byte per
//! page: an atomic `fetch_or(0)` for writes (a real store that cannot lose a concurrent engine
//! write to the same byte) or a volatile read.
//!
//! Then it hands back one [`HandlerOutput`] per distinct (transfer, block, attempt): "send an
//! ERR" for destination faults, "resume the source" for source faults, and wakes the engine
//! loop. A page whose page-in fails with `EINVAL` / `EFAULT` (mapped, but without the permission,
//! e.g. `mprotect` after `expose`) is reported as [`HandlerOutput::Bad`] first, so the retransmission that follows
//! fails as a protection error instead of faulting forever.
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

use unpinned_core::api::{FaultRecord, FaultSide, TransferKey};
use unpinned_core::memory::{page_of, PAGE_BYTES};
use unpinned_core::os::PageInPolicy;
use unpinned_os::populate::{page_in, will_need};

/// What the handler asks of the engine loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HandlerOutput {
    /// Destination fault resolved: send an ERR for this block attempt (`post_err`).
    SendErr {
        /// The transfer.
        transfer: TransferKey,
        /// Block index.
        block: u32,
        /// Attempt that faulted.
        block_seq: u16,
    },
    /// Source fault resolved: resume the block (`handle_source_resolved`).
    ResumeSource {
        /// The transfer.
        transfer: TransferKey,
        /// Block index.
        block: u32,
        /// Attempt that faulted.
        block_seq: u16,
    },
    /// Page-in of `[start, end)` failed although it is mapped (no permission): accesses must
    /// fail instead of faulting forever.
    Bad {
        /// First byte (page aligned).
        start: u64,
        /// End (page aligned).
        end: u64,
    },
}

/// Handler configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HandlerConfig {
    /// Which pages to bring in per fault.
    pub policy: PageInPolicy,
    /// Send ERRs (false: retransmission only by the source's block timeout).
    pub send_err: bool,
}

impl Default for HandlerConfig {
    fn default() -> Self {
        HandlerConfig {
            policy: PageInPolicy::Pia,
            send_err: true,
        }
    }
}

/// Counters of the handler, shared with the runtime (relaxed atomics).
#[derive(Debug, Default)]
pub struct HandlerStats {
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

/// A plain copy of [`HandlerStats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HandlerSnapshot {
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

impl HandlerStats {
    /// Read every counter.
    pub fn snapshot(&self) -> HandlerSnapshot {
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        HandlerSnapshot {
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

/// Merge `[start, end)` ranges in place (sorted, coalesced when overlapping or adjacent).
fn merge(ranges: &mut Vec<(u64, u64)>) {
    ranges.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(ranges.len());
    for &(s, e) in ranges.iter() {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    *ranges = out;
}

/// Process one batch of fault records: page in, then the outputs for the engine loop.
pub fn process_batch(
    cfg: &HandlerConfig,
    batch: &[FaultRecord],
    stats: &HandlerStats,
) -> Vec<HandlerOutput> {
    let mut write_ranges = Vec::new();
    let mut read_ranges = Vec::new();
    for rec in batch {
        let (s, e) = cfg.policy.pages(rec);
        match rec.side {
            FaultSide::Destination => write_ranges.push((s, e)),
            FaultSide::Source => read_ranges.push((s, e)),
        }
    }
    merge(&mut write_ranges);
    merge(&mut read_ranges);
    let mut out = Vec::new();
    let t = StdInstant::now();
    // Start the reads of every range's missing file pages at once, before populating page by
    // page: under `MADV_RANDOM` (an application's hint against fault read-ahead, which
    // `live-hol` sets) `MADV_POPULATE_WRITE` of a 1 MiB file mapping with its page cache dropped
    // took 860-910 ms here (one synchronous read per page), and 1.7-1.9 ms after
    // `MADV_WILLNEED` over the range (CPU write faults page by page: 11-18 ms). On anonymous
    // memory the advice only reads back swapped-out pages.
    for &(s, e) in write_ranges.iter().chain(read_ranges.iter()) {
        will_need(s, e);
    }
    for (ranges, write) in [(&write_ranges, true), (&read_ranges, false)] {
        for &(s, e) in ranges.iter() {
            stats.calls.fetch_add(1, Ordering::Relaxed);
            stats
                .pages
                .fetch_add((e - s) / PAGE_BYTES, Ordering::Relaxed);
            if page_in(s, e, write).is_err() {
                // Find the bad pages one by one; the good ones are now in. Only pages that are
                // mapped but cannot be populated (EINVAL / EFAULT: no permission, e.g. mprotect
                // after expose) are reported: an unmapped page (ENOMEM) is seen as unmapped by the
                // engine's own check, and a stale record for memory the application has since
                // unmapped must not poison a later mapping at the same address.
                let mut p = s;
                while p < e {
                    if matches!(
                        page_in(p, p + PAGE_BYTES, write),
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
    }
    stats
        .page_in_ns
        .fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
    let mut seen: Vec<(FaultSide, TransferKey, u32, u16)> = Vec::new();
    for rec in batch {
        let k = (rec.side, rec.transfer, rec.block, rec.block_seq);
        if seen.contains(&k) {
            continue;
        }
        seen.push(k);
        match rec.side {
            FaultSide::Destination if cfg.send_err => {
                stats.errs.fetch_add(1, Ordering::Relaxed);
                out.push(HandlerOutput::SendErr {
                    transfer: rec.transfer,
                    block: rec.block,
                    block_seq: rec.block_seq,
                });
            }
            FaultSide::Destination => {}
            FaultSide::Source => {
                stats.resumes.fetch_add(1, Ordering::Relaxed);
                out.push(HandlerOutput::ResumeSource {
                    transfer: rec.transfer,
                    block: rec.block,
                    block_seq: rec.block_seq,
                });
            }
        }
    }
    out
}

/// The handler thread's body: runs until the record channel closes.
///
/// `wake` is called after outputs were queued, so a parked engine loop picks them up at once.
pub fn run(
    cfg: HandlerConfig,
    records: Receiver<FaultRecord>,
    outputs: Sender<HandlerOutput>,
    wake: Arc<dyn Fn() + Send + Sync>,
    stats: Arc<HandlerStats>,
) {
    let mut batch = Vec::new();
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
        let outs = process_batch(&cfg, &batch, &stats);
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
/// microseconds on a loaded VM, more than a small page-in.
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
    fn merges_ranges() {
        let _map_lock = crate::MAP_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let mut r = vec![
            (0x3000, 0x4000),
            (0x1000, 0x2000),
            (0x1800, 0x3000),
            (0x9000, 0xa000),
        ];
        merge(&mut r);
        assert_eq!(r, vec![(0x1000, 0x4000), (0x9000, 0xa000)]);
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
