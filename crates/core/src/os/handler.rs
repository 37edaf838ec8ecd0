//! The fault handler model (see the module docs of `os`): one node's host CPU handling PART
//! faults (spec part.md, mechanism 5 and "Calibration: Fault path").
//!
//! One host core runs both the IOMMU fault interrupt handler and the deferred page-in task.
//! Interrupts run back to back, each `irq_us`, and preempt the task: the task step in progress
//! when an interrupt runs ends `irq_us` later, and that time is charged to `irq`, not to the
//! step. The task itself is a sequence of steps, each a fixed amount of CPU work:
//!
//! 1. `Sched` (`sched_us`): scheduling the deferred task after the interrupt that woke it;
//! 2. FIFO reads (`fifo_read_ns` each): one per record, plus one that finds the FIFO empty
//!    (a drain stops without that empty read once it has read `fifo_entries` records: the
//!    spec's "up to 16 register reads");
//! 3. `get_user_pages`: per maximal contiguous run of new pages of one PDID (within the
//!    ranges of the shared page-in plan, [`super::plan`]), a call
//!    (`gup_call_us`), then one step per page (`gup_page_us`), at whose end the page is present
//!    ([`HandlerAction::PageIn`]): page-in is progressive, which is what lets a short block
//!    timeout overlap retransmission with page-in (mechanism 9);
//! 4. bookkeeping (`bookkeeping_us`), 5. netlink notification (`notify_us`);
//! 6. one ERR (`err_send_us`) per distinct faulted block ([`HandlerAction::Reply`], from the
//!    plan): [`BlockReply::SendErr`] for destination faults (only when ERRs are enabled),
//!    [`BlockReply::ResumeSource`] for source faults (always: the source engine waits for it);
//! 7. if records arrived meanwhile, back to 2 within the same run; else the task sleeps.
//!
//! With early ERR (`os.early_err`, [`super::early_err`]) the answers of step 6 do not wait for
//! the end of step 3: each is sent (notification, then its ERR) as soon as the pages chosen by
//! [`super::early_err::pages_before_err`] are in, and the page-in goes on after it. Between
//! pages, when an interrupt has signalled new records, the task reads the FIFO and answers
//! those records the same way if their pages are among those being brought in (others wait for
//! the next loop). With `os.err_from = "kernel"` the notification costs nothing.
//!
//! Sans-IO: time only moves through [`FaultHandlerModel::handle_timeout`]. Driver contract:
//! call `handle_timeout(t, ..)` whenever `poll_timeout()` returns `Some(t)` (and before feeding
//! inputs at a later time), then apply every [`FaultHandlerModel::poll_action`] in order (a
//! `PageIn` makes the page present in the driver's page table). Each action is produced at its
//! exact due time, so a driver that follows the contract sees it at the right moment.

use std::collections::VecDeque;

use rustc_hash::FxHashSet;

use crate::api::{FaultRecord, FaultSide};
use crate::memory::{page_of, Pdid, PAGE_BYTES};
use crate::os::adaptive::{AdaptiveCosts, AdaptiveStats};
use crate::os::early_err::{pages_before_err, PageInCosts, PendingRun, Resend, ResendStream};
use crate::os::plan::{BlockReply, PageInConfig, PageInPlan};
use crate::os::source::{huge_of, PageSource, PAGES_PER_HUGE};
use crate::profile::{ErrFrom, OsProfile, Profile};
use crate::time::{Duration, Instant};

/// Tells the handler which pages are present now (the page table).
pub trait Residency {
    /// Whether page `page_addr` of `pdid` is present.
    fn is_present(&self, pdid: Pdid, page_addr: u64) -> bool;

    /// How missing page `page_addr` of `pdid` comes in (asked when a drain plans its
    /// page-ins): the reference design's minor fault unless the memory says otherwise
    /// (major faults, huge pages: [`crate::os::source`]).
    fn source(&self, _pdid: Pdid, _page_addr: u64) -> PageSource {
        PageSource::Minor
    }
}

/// Configuration of the model.
#[derive(Clone, Debug, PartialEq)]
pub struct HandlerConfig {
    /// OS costs.
    pub os: OsProfile,
    /// Page-in policy and ERR switch (the planning shared with the live runtime).
    pub page_in: PageInConfig,
    /// How fast the source can resend (used by early ERR, `os.early_err`, only).
    pub resend: ResendStream,
}

impl HandlerConfig {
    /// The handler of a node of `profile` with the page-in planning `page_in`.
    pub fn from_profile(profile: &Profile, page_in: PageInConfig) -> HandlerConfig {
        HandlerConfig {
            os: profile.os.clone(),
            page_in,
            resend: ResendStream::from_profile(profile),
        }
    }
}

/// What the handler did, to be applied by the driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HandlerAction {
    /// `get_user_pages` made this page present: update the page table / memory model.
    PageIn {
        /// Address space.
        pdid: Pdid,
        /// Page-aligned address.
        page_addr: u64,
    },
    /// The pages of a faulted block are in: answer it (an ERR or a source resume).
    Reply(BlockReply),
}

/// Host-CPU time spent per component of the fault path.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Breakdown {
    /// Interrupt handlers.
    pub irq: Duration,
    /// Fault FIFO register reads.
    pub fifo: Duration,
    /// get_user_pages (fixed + per page).
    pub gup: Duration,
    /// Kernel-to-user notification.
    pub notify: Duration,
    /// Other bookkeeping.
    pub bookkeeping: Duration,
    /// Sending ERRs.
    pub err: Duration,
    /// Scheduling / context switches.
    pub sched: Duration,
}

/// Counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HandlerStats {
    /// Interrupts taken (after coalescing).
    pub interrupts: u64,
    /// Interrupts merged into an earlier one by coalescing.
    pub interrupts_coalesced: u64,
    /// Faults that raised no interrupt because one was still pending or running (FSR.MULTI).
    pub faults_merged: u64,
    /// FIFO records accepted.
    pub fifo_records: u64,
    /// FIFO records dropped because the FIFO was full.
    pub fifo_overflows: u64,
    /// Page-in task runs.
    pub task_runs: u64,
    /// Pages brought in.
    pub pages_in: u64,
    /// ERRs issued.
    pub errs: u64,
    /// Source-side resumes issued.
    pub resumes: u64,
    /// Pages brought in by a major fault (a device read).
    pub major_pages_in: u64,
    /// Device read requests of major faults.
    pub io_requests: u64,
    /// Time the page-in task waited for the device (not CPU time: not in [`Breakdown`]).
    pub io_wait: Duration,
    /// Huge pages brought in (their 4 KiB pages count in `pages_in` too).
    pub huge_pages_in: u64,
}

/// One interrupt handler execution on the host core, `[start, end)`.
#[derive(Clone, Copy, Debug)]
struct Irq {
    start: Instant,
    end: Instant,
}

/// What a task step does when it ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StepKind {
    Sched,
    FifoRead,
    GupCall,
    GupPage {
        pdid: Pdid,
        page_addr: u64,
    },
    /// A major fault's device read: the task waits, the CPU is free (interrupts do not push
    /// the end).
    IoWait,
    /// A whole huge page, the run at the front of `runs`.
    HugePage,
    Bookkeeping,
    Notify,
    Err(BlockReply),
}

/// The task step in progress: its CPU work, and when it ends given the interrupts known so far.
#[derive(Clone, Copy, Debug)]
struct Step {
    kind: StepKind,
    work: Duration,
    end: Instant,
}

/// A maximal run of contiguous new pages of one address space: one `get_user_pages` call.
#[derive(Clone, Copy, Debug)]
struct GupRun {
    pdid: Pdid,
    /// Next page of the run to bring in.
    next: u64,
    /// Pages of the run still to bring in (including `next`).
    left: u64,
    /// Whether the call's fixed cost is paid (its pages are being brought in).
    started: bool,
    /// Where its pages come from (one kind per run).
    source: PageSource,
    /// Pages of the run brought in so far (a major run issues a read every
    /// `readahead_pages`).
    done: u64,
}

/// The model of one node's host fault path.
pub struct FaultHandlerModel {
    cfg: HandlerConfig,
    irq: Duration,
    coalesce: Duration,
    fifo_read: Duration,
    gup_call: Duration,
    gup_page: Duration,
    notify: Duration,
    bookkeeping: Duration,
    err_send: Duration,
    sched: Duration,
    fifo_cap: usize,
    /// The NI fault FIFO.
    fifo: VecDeque<FaultRecord>,
    /// Taken interrupts not yet finished, in time order, back to back or apart.
    irqs: VecDeque<Irq>,
    /// End of the last taken interrupt: a new one starts no earlier (handlers are serial).
    irq_busy_until: Instant,
    /// Start of the last taken interrupt (the coalescing window opens there).
    last_taken_start: Option<Instant>,
    /// A coalesced interrupt that nothing else will serve: delivered when the window closes.
    deferred_irq: Option<Instant>,
    /// The task step in progress; `None` = the task is neither running nor scheduled.
    step: Option<Step>,
    /// Records read so far by the current drain.
    batch: Vec<FaultRecord>,
    /// `get_user_pages` calls still to make in this loop of the task.
    runs: VecDeque<GupRun>,
    /// ERRs / resumes still to send in this loop of the task.
    errs: VecDeque<BlockReply>,
    /// Due actions with their due time, not yet polled.
    actions: VecDeque<(Instant, HandlerAction)>,
    /// Pages whose `PageIn` is produced but not yet polled: the driver has not made them
    /// present yet, so the residency oracle cannot be trusted for them.
    unpolled: FxHashSet<(Pdid, u64)>,
    /// Pages of major sources a device read brought into the page cache (its readahead
    /// window) without mapping them: their fault is minor. Never dropped: a model of one
    /// page cache that is not reclaimed while a run lasts.
    cached: FxHashSet<(Pdid, u64)>,
    breakdown: Breakdown,
    stats: HandlerStats,
    /// The plan of the current drain (kept to avoid an allocation per drain).
    plan: PageInPlan,
    /// Scratch: the plan's ranges united per address space.
    ranges: Vec<(Pdid, u64, u64)>,
    /// Early ERR state (all unused without `os.early_err`).
    early: EarlyState,
}

/// The page-in task's early-ERR state for the loop in progress.
#[derive(Default)]
struct EarlyState {
    on: bool,
    resend: ResendStream,
    /// Pages brought in by this loop so far.
    pages_done: u64,
    /// Answers waiting for `pages_done` to reach their count, in increasing count.
    pending: Vec<(u64, BlockReply)>,
    /// Answers of this loop, sent or pending (a block attempt is answered once).
    answered: Vec<BlockReply>,
    /// An interrupt ended during the loop: the FIFO may hold records.
    signalled: bool,
    /// The FIFO reads in progress are a drain between pages.
    mid_drain: bool,
    /// The notification / ERRs in progress are early ones: the page-in resumes after them.
    mid_replies: bool,
    /// Records read between pages whose pages this loop does not bring in: the next loop's.
    deferred: Vec<FaultRecord>,
    /// Scratch for the choice.
    runs: Vec<PendingRun>,
}

impl FaultHandlerModel {
    /// A new, idle handler.
    pub fn new(cfg: HandlerConfig) -> FaultHandlerModel {
        let os = &cfg.os;
        let us = Duration::from_us_f64;
        FaultHandlerModel {
            irq: us(os.irq_us),
            coalesce: us(os.irq_coalesce_us),
            fifo_read: Duration::from_ns(os.fifo_read_ns),
            gup_call: us(os.gup_call_us),
            gup_page: us(os.gup_page_us),
            // From kernel context the task sends the ERR itself: no notification.
            notify: match os.err_from {
                ErrFrom::User => us(os.notify_us),
                ErrFrom::Kernel => Duration::ZERO,
            },
            bookkeeping: us(os.bookkeeping_us),
            err_send: us(os.err_send_us),
            sched: us(os.sched_us),
            fifo_cap: (os.fifo_entries as usize).max(1),
            fifo: VecDeque::with_capacity(os.fifo_entries as usize),
            irqs: VecDeque::new(),
            irq_busy_until: Instant::ZERO,
            last_taken_start: None,
            deferred_irq: None,
            step: None,
            batch: Vec::new(),
            runs: VecDeque::new(),
            errs: VecDeque::new(),
            actions: VecDeque::new(),
            unpolled: FxHashSet::default(),
            cached: FxHashSet::default(),
            breakdown: Breakdown::default(),
            stats: HandlerStats::default(),
            plan: PageInPlan::new(),
            ranges: Vec::new(),
            early: EarlyState {
                on: os.early_err,
                resend: cfg.resend,
                ..EarlyState::default()
            },
            cfg,
        }
    }

    /// Weigh `costs` in the adaptive page-in policy (default: the built-in profile's; a
    /// driver with the whole profile passes [`AdaptiveCosts::from_profile`]).
    pub fn with_adaptive_costs(mut self, costs: AdaptiveCosts) -> FaultHandlerModel {
        self.plan.set_adaptive_costs(costs);
        self
    }

    /// The adaptive page-in policy's counters (zero under the other policies).
    pub fn adaptive_stats(&self) -> AdaptiveStats {
        self.plan.adaptive_stats()
    }

    /// The configuration.
    pub fn config(&self) -> &HandlerConfig {
        &self.cfg
    }

    /// The IOMMU raised a fault interrupt (one per faulting transaction).
    ///
    /// With coalescing (`irq_coalesce_us > 0`), an interrupt arriving less than the window after
    /// the start of the previous taken one is merged into it: counted, no CPU. If nothing would
    /// then ever wake the page-in task (it is idle and no handler is pending), the merged
    /// interrupt is delivered when the window closes, as interrupt moderation hardware does;
    /// otherwise a record logged with it could sit in the FIFO forever.
    pub fn handle_interrupt(&mut self, now: Instant) {
        // The SMMU records a fault in the context's fault status register and raises its
        // interrupt; until the handler clears the register (at the end of the handler), further
        // faults only set the "multiple faults" bit and raise nothing (ARM SMMU architecture,
        // FSR.MULTI). So at most one interrupt is pending or running at a time: a dense fault
        // stream costs one handler per `irq_us`, not one per fault, and cannot queue
        // interrupts without bound (which would starve the page-in task forever).
        if now < self.irq_busy_until {
            self.stats.faults_merged += 1;
            return;
        }
        if self.coalesce > Duration::ZERO {
            if let Some(s) = self.last_taken_start {
                if now < s + self.coalesce {
                    self.stats.interrupts_coalesced += 1;
                    if self.step.is_none() && self.irqs.is_empty() && self.deferred_irq.is_none() {
                        self.deferred_irq = Some(s + self.coalesce);
                    }
                    return;
                }
            }
        }
        self.take_interrupt(now);
    }

    /// Run one interrupt handler: after any handler already queued, preempting the task step
    /// in progress. O(1).
    fn take_interrupt(&mut self, at: Instant) {
        let start = at.max(self.irq_busy_until);
        let end = start + self.irq;
        self.irqs.push_back(Irq { start, end });
        self.irq_busy_until = end;
        self.last_taken_start = Some(start);
        self.stats.interrupts += 1;
        // Interrupts are appended in time order, so this one runs after every interrupt the
        // step already accounts for: if it starts before the step ends, the step loses exactly
        // its duration. (A step that ended before `at` but was not processed yet is unaffected:
        // its successor accounts for this interrupt when it starts.)
        if let Some(step) = &mut self.step {
            if start < step.end && step.kind != StepKind::IoWait {
                step.end += self.irq;
            }
        }
    }

    /// The NI logged a failed block in its fault FIFO. Returns false (and counts an overflow)
    /// when the FIFO is full: the record is lost.
    ///
    /// A push does not wake the task by itself: on the hardware only the interrupt does.
    pub fn handle_fifo_push(&mut self, _now: Instant, rec: FaultRecord) -> bool {
        if self.fifo.len() >= self.fifo_cap {
            self.stats.fifo_overflows += 1;
            return false;
        }
        self.fifo.push_back(rec);
        self.stats.fifo_records += 1;
        true
    }

    /// Advance to `now` (the driver calls this at `poll_timeout()`).
    ///
    /// Processes every interrupt end and task step end at or before `now` in time order
    /// (an interrupt ending at the same instant as a step goes first: it has priority).
    /// `mem` is asked which pages are present when a drain ends.
    pub fn handle_timeout(&mut self, now: Instant, mem: &dyn Residency) {
        loop {
            let irq_at = self.irqs.front().map(|i| i.end);
            let step_at = self.step.map(|s| s.end);
            // Priority on ties: interrupt end, deferred interrupt, task step.
            let mut next: Option<(Instant, u8)> = None;
            for (t, kind) in [(irq_at, 0u8), (self.deferred_irq, 1), (step_at, 2)] {
                if let Some(t) = t {
                    let earlier = match next {
                        Some((nt, _)) => t < nt,
                        None => true,
                    };
                    if t <= now && earlier {
                        next = Some((t, kind));
                    }
                }
            }
            let Some((t, kind)) = next else { break };
            match kind {
                0 => self.end_interrupt(t),
                1 => {
                    self.deferred_irq = None;
                    self.take_interrupt(t);
                }
                _ => self.end_step(t, mem),
            }
        }
    }

    fn end_interrupt(&mut self, t: Instant) {
        let irq = self.irqs.pop_front().expect("an interrupt is pending");
        self.breakdown.irq += irq.end - irq.start;
        if self.step.is_none() {
            self.stats.task_runs += 1;
            self.start_step(StepKind::Sched, self.sched, t);
        } else if self.early.on {
            self.early.signalled = true;
        }
    }

    /// Start a task step of `work` CPU at `at`; interrupts already queued that run before it
    /// would end push its end by their duration.
    fn start_step(&mut self, kind: StepKind, work: Duration, at: Instant) {
        let mut end = at + work;
        if kind == StepKind::IoWait {
            // A device wait: the core runs interrupts meanwhile, the device is not slowed.
            self.step = Some(Step { kind, work, end });
            return;
        }
        // Each queued interrupt is scanned by at most one step (the step it overlaps ends after
        // it), so this loop is amortized O(1).
        for irq in &self.irqs {
            if irq.end <= at {
                continue;
            }
            if irq.start < end {
                end += irq.end - irq.start.max(at);
            } else {
                break;
            }
        }
        self.step = Some(Step { kind, work, end });
    }

    fn emit(&mut self, at: Instant, action: HandlerAction) {
        self.actions.push_back((at, action));
    }

    fn end_step(&mut self, t: Instant, mem: &dyn Residency) {
        let step = self.step.take().expect("a step is in progress");
        let b = &mut self.breakdown;
        match step.kind {
            StepKind::Sched => b.sched += step.work,
            StepKind::FifoRead => b.fifo += step.work,
            StepKind::GupCall | StepKind::GupPage { .. } | StepKind::HugePage => b.gup += step.work,
            StepKind::IoWait => {
                self.stats.io_requests += 1;
                self.stats.io_wait += step.work;
            }
            StepKind::Bookkeeping => b.bookkeeping += step.work,
            StepKind::Notify => b.notify += step.work,
            StepKind::Err(_) => b.err += step.work,
        }
        match step.kind {
            StepKind::Sched => self.start_step(StepKind::FifoRead, self.fifo_read, t),
            StepKind::FifoRead => match self.fifo.pop_front() {
                // The register read returns the entry at its end.
                Some(rec) => {
                    self.batch.push(rec);
                    if self.batch.len() >= self.fifo_cap {
                        self.drain_done(t, mem);
                    } else {
                        self.start_step(StepKind::FifoRead, self.fifo_read, t);
                    }
                }
                None => {
                    self.early.signalled = false;
                    self.drain_done(t, mem);
                }
            },
            StepKind::GupCall => {
                self.runs.front_mut().expect("a gup run is pending").started = true;
                self.next_page_step(t);
            }
            StepKind::IoWait => {
                let r = *self.runs.front().expect("a gup run is pending");
                if let PageSource::Major {
                    readahead_pages, ..
                } = r.source
                {
                    // The read filled the page cache with its window from this page on; the
                    // run maps its own pages, the rest fault minor later.
                    for i in r.left.min(readahead_pages)..readahead_pages {
                        self.cached.insert((r.pdid, r.next + i * PAGE_BYTES));
                    }
                }
                self.start_step(
                    StepKind::GupPage {
                        pdid: r.pdid,
                        page_addr: r.next,
                    },
                    self.gup_page,
                    t,
                );
            }
            StepKind::GupPage { pdid, page_addr } => {
                self.stats.pages_in += 1;
                self.unpolled.insert((pdid, page_addr));
                self.emit(t, HandlerAction::PageIn { pdid, page_addr });
                self.early.pages_done += 1;
                let r = self.runs.front_mut().expect("a gup run is pending");
                if matches!(r.source, PageSource::Major { .. }) {
                    self.stats.major_pages_in += 1;
                }
                r.left -= 1;
                r.done += 1;
                r.next += PAGE_BYTES;
                if r.left == 0 {
                    self.runs.pop_front();
                }
                self.gup_next(t);
            }
            // With every answer of the loop already sent early, nothing is left to notify.
            StepKind::Bookkeeping if self.early.on && self.errs.is_empty() => self.next_err(t),
            StepKind::HugePage => {
                let r = self.runs.front().copied().expect("a gup run is pending");
                self.stats.huge_pages_in += 1;
                for i in 0..r.left {
                    let page_addr = r.next + i * PAGE_BYTES;
                    self.stats.pages_in += 1;
                    self.unpolled.insert((r.pdid, page_addr));
                    self.emit(
                        t,
                        HandlerAction::PageIn {
                            pdid: r.pdid,
                            page_addr,
                        },
                    );
                }
                self.early.pages_done += r.left;
                self.end_run(t);
            }
            StepKind::Bookkeeping => self.start_step(StepKind::Notify, self.notify, t),
            StepKind::Notify => self.next_err(t),
            StepKind::Err(reply) => {
                match reply {
                    BlockReply::SendErr { .. } => self.stats.errs += 1,
                    BlockReply::ResumeSource { .. } => self.stats.resumes += 1,
                }
                self.emit(t, HandlerAction::Reply(reply));
                self.next_err(t);
            }
        }
    }

    /// The next step of the run at the front of `runs`: a device read before the first page
    /// of each `readahead_pages` of a major run, the whole huge page of a huge run, else the
    /// next page.
    fn next_page_step(&mut self, t: Instant) {
        let r = *self.runs.front().expect("a gup run is pending");
        match r.source {
            PageSource::Major {
                io,
                readahead_pages,
            } if r.done.is_multiple_of(readahead_pages.max(1)) => {
                self.start_step(StepKind::IoWait, io, t)
            }
            PageSource::Huge { cost } => self.start_step(StepKind::HugePage, cost, t),
            _ => self.start_step(
                StepKind::GupPage {
                    pdid: r.pdid,
                    page_addr: r.next,
                },
                self.gup_page,
                t,
            ),
        }
    }

    /// The run at the front is done: the next run's `get_user_pages` call, or bookkeeping.
    fn end_run(&mut self, t: Instant) {
        self.runs.pop_front();
        self.gup_next(t);
    }

    /// The next ERR / resume of this loop, or the end of the loop (step 7).
    fn next_err(&mut self, t: Instant) {
        match self.errs.pop_front() {
            Some(a) => self.start_step(StepKind::Err(a), self.err_send, t),
            None if self.early.mid_replies => {
                self.early.mid_replies = false;
                self.gup_next(t);
            }
            None if !self.fifo.is_empty() || !self.early.deferred.is_empty() => {
                self.batch.append(&mut self.early.deferred);
                self.start_step(StepKind::FifoRead, self.fifo_read, t)
            }
            None => {} // the task sleeps until the next interrupt
        }
    }

    /// The next step of `get_user_pages` (the next page, the next call, or bookkeeping once
    /// every run is done); with early ERR, first a drain of newly signalled records and the
    /// answers whose pages are in.
    fn gup_next(&mut self, t: Instant) {
        if self.early.on {
            if self.early.signalled {
                self.early.mid_drain = true;
                self.start_step(StepKind::FifoRead, self.fifo_read, t);
                return;
            }
            let done = self.early.pages_done;
            let due = self.early.pending.partition_point(|&(k, _)| k <= done);
            if due > 0 {
                self.errs
                    .extend(self.early.pending.drain(..due).map(|(_, r)| r));
                self.early.mid_replies = true;
                self.start_step(StepKind::Notify, self.notify, t);
                return;
            }
        }
        match self.runs.front() {
            Some(r) if r.started => self.next_page_step(t),
            Some(_) => self.start_step(StepKind::GupCall, self.gup_call, t),
            None => self.start_step(StepKind::Bookkeeping, self.bookkeeping, t),
        }
    }

    /// The FIFO reads are over: plan a new loop, or (between pages, early ERR) answer what was
    /// read.
    fn drain_done(&mut self, t: Instant, mem: &dyn Residency) {
        if !std::mem::take(&mut self.early.mid_drain) {
            return self.end_drain(t, mem);
        }
        let batch = std::mem::take(&mut self.batch);
        for rec in &batch {
            if !self.schedule_early(rec, mem, true) {
                self.early.deferred.push(*rec);
            }
        }
        self.batch = batch;
        self.batch.clear();
        self.gup_next(t);
    }

    /// Early ERR: queue the answer to `rec` for the point [`pages_before_err`] chooses among
    /// the pages still to come in. With `check`, first make sure this loop brings its faulting
    /// page in (or it is in already); returns false if not (the record is for the next loop).
    fn schedule_early(&mut self, rec: &FaultRecord, mem: &dyn Residency, check: bool) -> bool {
        let page = page_of(rec.page_addr);
        if check
            && !mem.is_present(rec.pdid, page)
            && !self.unpolled.contains(&(rec.pdid, page))
            && !self.runs.iter().any(|r| {
                r.pdid == rec.pdid && page >= r.next && page < r.next + r.left * PAGE_BYTES
            })
        {
            return false;
        }
        let (transfer, block, block_seq) = (rec.transfer, rec.block, rec.block_seq);
        let reply = match rec.side {
            FaultSide::Destination if self.cfg.page_in.send_err => BlockReply::SendErr {
                transfer,
                block,
                block_seq,
            },
            FaultSide::Destination => return true,
            FaultSide::Source => BlockReply::ResumeSource {
                transfer,
                block,
                block_seq,
            },
        };
        if self.early.answered.contains(&reply) {
            return true;
        }
        self.early.answered.push(reply);
        let e = &mut self.early;
        e.runs.clear();
        e.runs.extend(self.runs.iter().map(|r| PendingRun {
            pdid: r.pdid,
            first: r.next,
            pages: r.left,
            needs_call: !r.started,
        }));
        let costs = PageInCosts {
            call_ns: self.gup_call.0,
            page_ns: self.gup_page.0,
        };
        let resend = Resend {
            pdid: rec.pdid,
            block: rec.block_range,
            transfer_end: rec.transfer_range.1,
        };
        let k = e.pages_done + pages_before_err(costs, e.resend, &e.runs, &resend);
        // Kept sorted by count; equal counts keep the order seen.
        let at = e.pending.partition_point(|&(c, _)| c <= k);
        e.pending.insert(at, (k, reply));
        true
    }

    /// The drain is over: decide the pages and the ERRs of the records read, then go on with
    /// `get_user_pages` (or, with nothing new to bring in, straight to bookkeeping).
    fn end_drain(&mut self, t: Instant, mem: &dyn Residency) {
        if self.batch.is_empty() {
            // Woken with nothing to do (record dropped, or already drained by an earlier loop).
            return;
        }
        // The shared plan: the policy ranges merged per address space and access (each page
        // examined once even when PIA ranges of many records overlap), and one ERR / resume
        // per distinct faulted block attempt, in the order first seen.
        self.plan.plan(&self.cfg.page_in, &self.batch);
        // The model's page table has no access bits (a page brought in for a write is in for a
        // read too), so the plan's read and write ranges are united per address space before
        // they become `get_user_pages` runs: a page wanted both ways is brought in once.
        self.ranges.clear();
        self.ranges
            .extend(self.plan.ranges.iter().map(|r| (r.pdid, r.start, r.end)));
        self.ranges.sort_unstable();
        let mut cur: Option<(Pdid, u64, u64)> = None;
        for i in 0..self.ranges.len() {
            let (pdid, s, e) = self.ranges[i];
            match &mut cur {
                Some((cp, _, ce)) if *cp == pdid && s <= *ce => *ce = (*ce).max(e),
                _ => {
                    if let Some(c) = cur {
                        self.plan_runs(c, mem);
                    }
                    cur = Some((pdid, s, e));
                }
            }
        }
        if let Some(c) = cur {
            self.plan_runs(c, mem);
        }
        if self.early.on {
            // The plan's answers, each at its own point of the page-in.
            self.early.pages_done = 0;
            self.early.answered.clear();
            let batch = std::mem::take(&mut self.batch);
            for rec in &batch {
                self.schedule_early(rec, mem, false);
            }
            self.batch = batch;
            self.batch.clear();
            return self.gup_next(t);
        }
        self.errs.extend(self.plan.replies.iter().copied());
        self.batch.clear();
        if self.runs.is_empty() {
            self.start_step(StepKind::Bookkeeping, self.bookkeeping, t);
        } else {
            self.start_step(StepKind::GupCall, self.gup_call, t);
        }
    }

    /// Split one merged page interval into maximal runs of pages that are neither present nor
    /// already being made present, and come from one kind of source. A missing page of a huge
    /// page makes a run of the whole huge page (once per drain), even beyond the interval.
    fn plan_runs(&mut self, (pdid, start, end): (Pdid, u64, u64), mem: &dyn Residency) {
        let mut run: Option<GupRun> = None;
        let mut p = start;
        while p < end {
            let new = !mem.is_present(pdid, p) && !self.unpolled.contains(&(pdid, p));
            let source = match new {
                true => match mem.source(pdid, p) {
                    PageSource::Major { .. } if self.cached.contains(&(pdid, p)) => {
                        PageSource::Minor
                    }
                    s => s,
                },
                false => PageSource::Minor,
            };
            if let (true, PageSource::Huge { .. }) = (new, source) {
                if let Some(r) = run.take() {
                    self.runs.push_back(r);
                }
                let h = huge_of(p);
                let planned = self.runs.iter().any(|r| {
                    r.pdid == pdid && r.next == h && matches!(r.source, PageSource::Huge { .. })
                });
                if !planned {
                    self.runs.push_back(GupRun {
                        pdid,
                        next: h,
                        left: PAGES_PER_HUGE,
                        started: false,
                        source,
                        done: 0,
                    });
                }
                p = h + PAGES_PER_HUGE * PAGE_BYTES;
                continue;
            }
            match (&mut run, new) {
                (Some(r), true) if r.source == source => r.left += 1,
                (Some(_), true) => {
                    self.runs.push_back(run.take().expect("run"));
                    run = Some(GupRun {
                        pdid,
                        next: p,
                        left: 1,
                        started: false,
                        source,
                        done: 0,
                    })
                }
                (None, true) => {
                    run = Some(GupRun {
                        pdid,
                        next: p,
                        left: 1,
                        started: false,
                        source,
                        done: 0,
                    })
                }
                (Some(_), false) => self.runs.push_back(run.take().expect("run")),
                (None, false) => {}
            }
            p += PAGE_BYTES;
        }
        if let Some(r) = run {
            self.runs.push_back(r);
        }
    }

    /// When the model next needs `handle_timeout`: the end of the interrupt or task step in
    /// progress, or of a coalescing window with an interrupt to deliver.
    pub fn poll_timeout(&self) -> Option<Instant> {
        [
            self.irqs.front().map(|i| i.end),
            self.deferred_irq,
            self.step.map(|s| s.end),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// The next action that became due.
    pub fn poll_action(&mut self) -> Option<HandlerAction> {
        self.poll_timed_action().map(|(_, a)| a)
    }

    /// The next action that became due, with the instant it became due (for drivers that
    /// advance in coarse steps and for reporting).
    pub fn poll_timed_action(&mut self) -> Option<(Instant, HandlerAction)> {
        let (at, a) = self.actions.pop_front()?;
        if let HandlerAction::PageIn { pdid, page_addr } = a {
            // From now on the driver's page table answers for this page.
            self.unpolled.remove(&(pdid, page_addr));
        }
        Some((at, a))
    }

    /// CPU time per component so far (steps and interrupts are counted when they finish).
    pub fn breakdown(&self) -> Breakdown {
        self.breakdown
    }

    /// Counters so far.
    pub fn stats(&self) -> HandlerStats {
        self.stats
    }

    /// Records waiting in the fault FIFO now.
    pub fn fifo_len(&self) -> usize {
        self.fifo.len()
    }

    /// True when nothing is queued, running or scheduled: no interrupt pending, the task
    /// asleep, the FIFO empty and every action polled.
    pub fn is_idle(&self) -> bool {
        self.step.is_none()
            && self.irqs.is_empty()
            && self.deferred_irq.is_none()
            && self.fifo.is_empty()
            && self.actions.is_empty()
            && self.early.deferred.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{FaultSide, TransferKey};
    use crate::memory::page_of;
    use crate::os::PageInPolicy;
    use crate::profile::{ErrFrom, Profile};

    const P: u64 = PAGE_BYTES;

    #[derive(Default)]
    struct Pages(FxHashSet<(Pdid, u64)>);
    impl Residency for Pages {
        fn is_present(&self, pdid: Pdid, page_addr: u64) -> bool {
            self.0.contains(&(pdid, page_addr))
        }
    }

    /// A driver that follows the contract: handle_timeout at every poll_timeout, apply actions.
    struct World {
        h: FaultHandlerModel,
        mem: Pages,
        log: Vec<(Instant, HandlerAction)>,
    }

    impl World {
        fn new(policy: PageInPolicy, send_err: bool, tweak: impl FnOnce(&mut OsProfile)) -> World {
            let mut os = Profile::forth_arm().os;
            tweak(&mut os);
            World {
                h: FaultHandlerModel::new(HandlerConfig {
                    os,
                    page_in: PageInConfig { policy, send_err },
                    resend: ResendStream::from_profile(&Profile::forth_arm()),
                }),
                mem: Pages::default(),
                log: Vec::new(),
            }
        }
        fn run_until(&mut self, t: Instant) {
            while let Some(d) = self.h.poll_timeout() {
                if d > t {
                    break;
                }
                self.h.handle_timeout(d, &self.mem);
                while let Some((at, a)) = self.h.poll_timed_action() {
                    assert_eq!(at, d, "actions are produced at their due time");
                    if let HandlerAction::PageIn { pdid, page_addr } = a {
                        assert!(
                            self.mem.0.insert((pdid, page_addr)),
                            "page {page_addr:#x} brought in twice"
                        );
                    }
                    self.log.push((at, a));
                }
            }
        }
        fn finish(&mut self) {
            self.run_until(Instant(u64::MAX));
            assert!(self.h.is_idle());
        }
        fn interrupt(&mut self, t: Instant) {
            self.run_until(t);
            self.h.handle_interrupt(t);
        }
        fn push(&mut self, t: Instant, rec: FaultRecord) -> bool {
            self.run_until(t);
            self.h.handle_fifo_push(t, rec)
        }
        fn page_ins(&self) -> Vec<(Instant, u64)> {
            self.log
                .iter()
                .filter_map(|&(t, a)| match a {
                    HandlerAction::PageIn { page_addr, .. } => Some((t, page_addr)),
                    _ => None,
                })
                .collect()
        }
        fn errs(&self) -> Vec<(Instant, HandlerAction)> {
            self.log
                .iter()
                .copied()
                .filter(|(_, a)| !matches!(a, HandlerAction::PageIn { .. }))
                .collect()
        }
    }

    fn key(id: u32) -> TransferKey {
        TransferKey {
            data_src: 0,
            data_dst: 1,
            id,
            read_response: false,
        }
    }

    const BASE: u64 = 0x10_0000;

    /// A destination fault on `page` of a transfer of `pages` pages at BASE (16 KiB blocks).
    fn rec(side: FaultSide, id: u32, page: u64, pages: u64) -> FaultRecord {
        let addr = BASE + page * P;
        let block = (page / 4) as u32;
        let bs = BASE + block as u64 * 4 * P;
        FaultRecord {
            side,
            transfer: key(id),
            block,
            block_seq: 0,
            pdid: 1,
            page_addr: page_of(addr),
            block_range: (bs, (bs + 4 * P).min(BASE + pages * P)),
            transfer_range: (BASE, BASE + pages * P),
        }
    }
    fn dst(page: u64, pages: u64) -> FaultRecord {
        rec(FaultSide::Destination, 1, page, pages)
    }

    fn ns(n: u64) -> Instant {
        Instant(n)
    }
    fn us(n: u64) -> Instant {
        Instant(n * 1000)
    }

    #[test]
    fn single_page_fault_path_matches_calibration() {
        let mut w = World::new(PageInPolicy::Pio, true, |_| {});
        assert!(w.push(us(0), dst(0, 1)));
        w.interrupt(us(0));
        assert_eq!(
            w.h.poll_timeout(),
            Some(us(1)),
            "interrupt handler ends at 1 us"
        );
        w.finish();
        // 1 (irq) + 0 (sched) + 2 x 50 ns (FIFO) + 6 + 3 (gup) = 10.1 us.
        assert_eq!(w.page_ins(), vec![(ns(10_100), BASE)]);
        // + bookkeeping 4 + notify 7 + ERR 1 = 22.1 us.
        assert_eq!(
            w.errs(),
            vec![(
                ns(22_100),
                HandlerAction::Reply(BlockReply::SendErr {
                    transfer: key(1),
                    block: 0,
                    block_seq: 0
                })
            )]
        );
        let b = w.h.breakdown();
        assert_eq!(b.irq, Duration::from_us(1));
        assert_eq!(b.sched, Duration::ZERO);
        assert_eq!(b.fifo, Duration::from_ns(100));
        assert_eq!(b.gup, Duration::from_us(9));
        assert_eq!(b.bookkeeping, Duration::from_us(4));
        assert_eq!(b.notify, Duration::from_us(7));
        assert_eq!(b.err, Duration::from_us(1));
        let s = w.h.stats();
        assert_eq!(
            (
                s.interrupts,
                s.task_runs,
                s.fifo_records,
                s.pages_in,
                s.errs
            ),
            (1, 1, 1, 1, 1)
        );
    }

    #[test]
    fn pia_brings_in_progressively() {
        let mut w = World::new(PageInPolicy::Pia, true, |_| {});
        w.push(us(0), dst(0, 16));
        w.interrupt(us(0));
        w.finish();
        let got = w.page_ins();
        // One call (6 us) at 1.1 us, then one page every 3 us, in address order.
        let want: Vec<_> = (0..16)
            .map(|k| (ns(1_100 + 6_000 + 3_000 * (k + 1)), BASE + k * P))
            .collect();
        assert_eq!(got, want);
        assert_eq!(
            w.errs()[0].0,
            ns(1_100 + 6_000 + 48_000 + 4_000 + 7_000 + 1_000)
        );
        assert_eq!(w.h.breakdown().gup, Duration::from_us(6 + 48));
    }

    #[test]
    fn pia_from_the_faulting_page_and_pi4_whole_block() {
        let mut w = World::new(PageInPolicy::Pia, true, |_| {});
        w.push(us(0), dst(5, 16));
        w.interrupt(us(0));
        w.finish();
        assert_eq!(
            w.page_ins().iter().map(|p| p.1).collect::<Vec<_>>(),
            (5..16).map(|k| BASE + k * P).collect::<Vec<_>>()
        );

        let mut w = World::new(PageInPolicy::Pi4, true, |_| {});
        w.push(us(0), dst(5, 16));
        w.interrupt(us(0));
        w.finish();
        assert_eq!(
            w.page_ins().iter().map(|p| p.1).collect::<Vec<_>>(),
            (4..8).map(|k| BASE + k * P).collect::<Vec<_>>()
        );
    }

    #[test]
    fn dedup_pages_and_blocks() {
        let mut w = World::new(PageInPolicy::Pio, true, |_| {});
        // 8 records of the same page: 4 distinct blocks, each logged twice (same attempt).
        for i in 0..8u32 {
            let mut r = dst(0, 1);
            r.block = i % 4;
            assert!(w.push(us(0), r));
        }
        w.interrupt(us(0));
        w.finish();
        assert_eq!(w.page_ins().len(), 1);
        let errs = w.errs();
        assert_eq!(errs.len(), 4);
        for (i, (_, a)) in errs.iter().enumerate() {
            assert_eq!(
                *a,
                HandlerAction::Reply(BlockReply::SendErr {
                    transfer: key(1),
                    block: i as u32,
                    block_seq: 0
                })
            );
        }
        // 8 reads + 1 empty, one gup call + one page.
        let b = w.h.breakdown();
        assert_eq!(b.fifo, Duration::from_ns(9 * 50));
        assert_eq!(b.gup, Duration::from_us(9));
        assert_eq!(b.err, Duration::from_us(4));
        // A new attempt of the same block is a distinct ERR.
        let mut r = dst(0, 1);
        r.block_seq = 1;
        w.push(us(100), r);
        w.interrupt(us(100));
        w.finish();
        assert_eq!(w.errs().len(), 5);
    }

    #[test]
    fn contiguous_runs_one_call_each() {
        let mut w = World::new(PageInPolicy::Pio, true, |_| {});
        // Pages 0, 1, 2 (one run) and 7 (another run) and page 0 of another PDID (a third).
        for p in [2, 0, 7, 1] {
            w.push(us(0), dst(p, 8));
        }
        let mut other = dst(0, 8);
        other.pdid = 2;
        w.push(us(0), other);
        w.interrupt(us(0));
        w.finish();
        assert_eq!(w.h.breakdown().gup, Duration::from_us(3 * 6 + 5 * 3));
        assert_eq!(w.h.stats().pages_in, 5);
    }

    #[test]
    fn present_pages_skip_gup_entirely() {
        let mut w = World::new(PageInPolicy::Pio, true, |_| {});
        w.mem.0.insert((1, BASE));
        w.push(us(0), dst(0, 1));
        w.interrupt(us(0));
        w.finish();
        assert!(w.page_ins().is_empty());
        assert_eq!(w.h.breakdown().gup, Duration::ZERO);
        // 1 + 0.1 + 4 + 7 + 1: the ERR is still needed, the source is waiting for it.
        assert_eq!(w.errs()[0].0, ns(13_100));
    }

    #[test]
    fn interrupt_preempts_the_step_in_progress() {
        let mut w = World::new(PageInPolicy::Pio, true, |_| {});
        w.push(us(0), dst(0, 1));
        w.interrupt(us(0));
        // During the gup call step [1.1, 7.1): it ends 1 us later, and everything after too.
        w.interrupt(us(5));
        w.finish();
        assert_eq!(w.page_ins(), vec![(ns(11_100), BASE)]);
        assert_eq!(w.errs()[0].0, ns(23_100));
        let b = w.h.breakdown();
        assert_eq!(b.irq, Duration::from_us(2));
        assert_eq!(
            b.gup,
            Duration::from_us(9),
            "interrupt time is not charged to the step"
        );
        assert_eq!(w.h.stats().task_runs, 1);
    }

    #[test]
    fn faults_during_a_pending_interrupt_raise_no_new_one() {
        let mut w = World::new(PageInPolicy::Pio, true, |o| o.sched_us = 0.5);
        w.push(us(0), dst(0, 1));
        // Faults at 200, 400, 600 ns land while the first handler [0, 1) still has the fault
        // status set: merged (FSR.MULTI), no handler of their own.
        for t in [0, 200, 400, 600] {
            w.interrupt(ns(t));
        }
        w.finish();
        // Task scheduled at 1 us: 1 + 0.5 (sched) + 0.1 (FIFO) + 9 (gup) = 10.6 us.
        assert_eq!(w.page_ins(), vec![(ns(10_600), BASE)]);
        assert_eq!(w.h.breakdown().irq, Duration::from_us(1));
        assert_eq!((w.h.stats().interrupts, w.h.stats().faults_merged), (1, 3));
        assert_eq!(w.h.stats().task_runs, 1);
    }

    #[test]
    fn many_interrupts_during_a_step() {
        let mut w = World::new(PageInPolicy::Pio, true, |_| {});
        w.push(us(0), dst(0, 1));
        w.interrupt(us(0));
        // 64 faulting packets arriving every 205 ns from 2 us (inside the gup call step): a new
        // interrupt only once the previous handler has finished, i.e. every 5th packet
        // (k = 0, 5, ..., 60): 13 handlers, each preempting the task by 1 us.
        for k in 0..64 {
            w.interrupt(ns(2_000 + 205 * k));
        }
        w.finish();
        assert_eq!(w.page_ins(), vec![(ns(10_100 + 13_000), BASE)]);
        assert_eq!(
            (w.h.stats().interrupts, w.h.stats().faults_merged),
            (14, 51)
        );
    }

    #[test]
    fn coalescing_window() {
        let mut w = World::new(PageInPolicy::Pio, true, |o| o.irq_coalesce_us = 5.0);
        w.push(us(0), dst(0, 1));
        for t in [0, 1_000, 2_000, 4_999, 5_000] {
            w.interrupt(ns(t));
        }
        w.finish();
        let s = w.h.stats();
        assert_eq!((s.interrupts, s.interrupts_coalesced), (2, 3));
        assert_eq!(w.h.breakdown().irq, Duration::from_us(2));
        // The second taken interrupt (at 5 us) preempts the gup call: PageIn at 11.1 us.
        assert_eq!(w.page_ins(), vec![(ns(11_100), BASE)]);
    }

    #[test]
    fn coalesced_interrupt_is_delivered_when_nothing_else_would_wake_the_task() {
        let mut w = World::new(PageInPolicy::Pio, true, |o| o.irq_coalesce_us = 50.0);
        w.push(us(0), dst(0, 1));
        w.interrupt(us(0));
        w.run_until(us(30));
        assert_eq!(w.errs().len(), 1);
        // A new fault at 30 us falls in the window of the interrupt taken at 0.
        w.push(us(30), dst(1, 2));
        w.interrupt(us(30));
        assert_eq!(w.h.stats().interrupts_coalesced, 1);
        assert_eq!(w.h.poll_timeout(), Some(us(50)));
        w.finish();
        // Delivered at 50 us: 51 + 0.1 + 9 = 60.1, ERR at 72.1.
        assert_eq!(w.page_ins()[1], (ns(60_100), BASE + P));
        assert_eq!(w.errs()[1].0, ns(72_100));
        assert_eq!(w.h.stats().interrupts, 2);
    }

    #[test]
    fn fifo_overflow_drops_records() {
        let mut w = World::new(PageInPolicy::Pio, true, |_| {});
        for p in 0..16 {
            assert!(w.push(us(0), dst(p, 17)));
        }
        assert!(!w.push(us(0), dst(16, 17)));
        assert_eq!(w.h.stats().fifo_overflows, 1);
        assert_eq!(w.h.fifo_len(), 16);
        w.interrupt(us(0));
        w.finish();
        let s = w.h.stats();
        assert_eq!((s.fifo_records, s.pages_in), (16, 16));
        // A full FIFO is read with exactly 16 reads (no extra empty read).
        assert_eq!(w.h.breakdown().fifo, Duration::from_ns(16 * 50));
        assert!(w.push(us(1000), dst(16, 17)));
    }

    #[test]
    fn without_err_destination_faults_send_nothing() {
        let mut w = World::new(PageInPolicy::Pio, false, |_| {});
        w.push(us(0), dst(0, 1));
        w.interrupt(us(0));
        w.finish();
        assert_eq!(w.page_ins().len(), 1);
        assert!(w.errs().is_empty());
        assert_eq!(w.h.breakdown().err, Duration::ZERO);
        assert_eq!(w.h.stats().errs, 0);
    }

    #[test]
    fn a_page_wanted_for_a_read_and_a_write_in_one_drain_is_brought_in_once() {
        let mut w = World::new(PageInPolicy::Pi4, true, |_| {});
        // A destination fault and a source fault (another transfer) on the same block.
        w.push(us(0), dst(1, 8));
        w.push(us(0), rec(FaultSide::Source, 2, 2, 8));
        w.interrupt(us(0));
        w.finish(); // asserts that no page is brought in twice
        assert_eq!(w.page_ins().len(), 4, "one block of 4 pages");
        assert_eq!((w.h.stats().errs, w.h.stats().resumes), (1, 1));
    }

    #[test]
    fn source_faults_resume_the_source() {
        for send_err in [true, false] {
            let mut w = World::new(PageInPolicy::Pio, send_err, |_| {});
            w.push(us(0), rec(FaultSide::Source, 3, 0, 1));
            w.interrupt(us(0));
            w.finish();
            assert_eq!(
                w.errs(),
                vec![(
                    ns(22_100),
                    HandlerAction::Reply(BlockReply::ResumeSource {
                        transfer: key(3),
                        block: 0,
                        block_seq: 0
                    })
                )]
            );
            assert_eq!(w.h.stats().resumes, 1);
        }
    }

    #[test]
    fn task_reloops_on_records_that_arrive_while_it_runs() {
        let mut w = World::new(PageInPolicy::Pio, true, |o| o.sched_us = 2.0);
        w.push(us(0), dst(0, 8));
        w.interrupt(us(0));
        // At 15 us the first loop is in its bookkeeping step [12.1, 16.1).
        w.push(us(15), dst(4, 8));
        w.finish();
        assert_eq!(w.h.stats().task_runs, 1);
        assert_eq!(
            w.h.breakdown().sched,
            Duration::from_us(2),
            "one schedule for both loops"
        );
        // Loop 1: 1 + 2 + 0.1 + 9 + 4 + 7 + 1 = 24.1. Loop 2: + 0.1 + 9 (PageIn at 33.2) + 12.
        assert_eq!(
            w.page_ins(),
            vec![(ns(12_100), BASE), (ns(33_200), BASE + 4 * P)]
        );
        assert_eq!(
            w.errs().iter().map(|e| e.0).collect::<Vec<_>>(),
            vec![ns(24_100), ns(45_200)]
        );
    }

    #[test]
    fn unpolled_page_ins_are_not_brought_in_twice() {
        // A driver that jumps far ahead before polling: the second loop must not redo a page
        // the first loop brought in even though the page table does not show it yet.
        let mut os = Profile::forth_arm().os;
        os.sched_us = 0.0;
        let mut h = FaultHandlerModel::new(HandlerConfig {
            os,
            page_in: PageInConfig {
                policy: PageInPolicy::Pio,
                send_err: true,
            },
            resend: ResendStream::from_profile(&Profile::forth_arm()),
        });
        let mem = Pages::default();
        h.handle_fifo_push(us(0), dst(0, 1));
        h.handle_interrupt(us(0));
        h.handle_timeout(us(5), &mem);
        let mut again = dst(0, 1);
        again.block_seq = 1;
        h.handle_fifo_push(us(5), again);
        h.handle_timeout(us(1000), &mem);
        assert_eq!(h.stats().pages_in, 1);
        assert_eq!(h.stats().errs, 2);
        let times: Vec<_> = std::iter::from_fn(|| h.poll_timed_action())
            .map(|(t, _)| t)
            .collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]));
        assert!(h.is_idle());
    }

    #[test]
    fn evicted_page_is_brought_in_again() {
        let mut w = World::new(PageInPolicy::Pio, true, |_| {});
        w.push(us(0), dst(0, 1));
        w.interrupt(us(0));
        w.finish();
        w.mem.0.clear(); // reclaimed
        w.push(us(100), dst(0, 1));
        w.interrupt(us(100));
        w.finish();
        assert_eq!(w.h.stats().pages_in, 2);
    }

    #[test]
    fn empty_wakeup_costs_one_read() {
        let mut w = World::new(PageInPolicy::Pio, true, |_| {});
        w.interrupt(us(0));
        w.finish();
        let b = w.h.breakdown();
        assert_eq!(b.fifo, Duration::from_ns(50));
        assert_eq!(b.notify, Duration::ZERO);
        assert!(w.log.is_empty());
        assert!(w.h.is_idle());
    }

    #[test]
    fn kernel_err_skips_the_notification() {
        let mut w = World::new(PageInPolicy::Pio, true, |o| o.err_from = ErrFrom::Kernel);
        w.push(us(0), dst(0, 1));
        w.interrupt(us(0));
        w.finish();
        // 1 + 0.1 + 9 + 4 + 0 (no netlink) + 1: 7 us earlier than from user space.
        assert_eq!(w.errs()[0].0, ns(15_100));
        assert_eq!(w.h.breakdown().notify, Duration::ZERO);
    }

    #[test]
    fn early_err_answers_each_block_once_its_pages_are_in() {
        let mut w = World::new(PageInPolicy::Pia, true, |o| o.early_err = true);
        w.push(us(0), dst(0, 16));
        w.interrupt(us(0));
        // Block 1 faults at 15 us, during the page-in of block 0 (the page step [13.1, 16.1)
        // loses 1 us to its interrupt and ends at 17.1).
        w.push(us(15), dst(4, 16));
        w.interrupt(us(15));
        w.finish();
        // The FIFO is read between pages (17.1 .. 17.2). Block 0's ERR goes out after the 12th
        // page (44.2; see early_err's the_window_moves_the_err_later) + notify 7 + ERR 1;
        // block 1's after the 16th and last page, 3 pages and 8 us later.
        let err = |block| {
            HandlerAction::Reply(BlockReply::SendErr {
                transfer: key(1),
                block,
                block_seq: 0,
            })
        };
        assert_eq!(w.errs(), vec![(ns(52_200), err(0)), (ns(72_200), err(1))]);
        // The page-in goes on after the first ERR: page 12 at 55.2, the last page at 64.2.
        let p = w.page_ins();
        assert_eq!(p[11], (ns(44_200), BASE + 11 * P));
        assert_eq!(p[12], (ns(55_200), BASE + 12 * P));
        assert_eq!(p.len(), 16);
        assert_eq!(p[15], (ns(64_200), BASE + 15 * P));
        let b = w.h.breakdown();
        assert_eq!(
            b.notify,
            Duration::from_us(14),
            "one notification per early point"
        );
        assert_eq!(b.bookkeeping, Duration::from_us(4));
        assert_eq!(b.fifo, Duration::from_ns(4 * 50));
        assert_eq!(w.h.stats().task_runs, 1);
    }

    #[test]
    fn early_err_defers_records_outside_the_page_in() {
        // PIO brings in the faulting page only: a record for another page read between pages
        // is answered by the next loop, as without early ERR.
        let mut w = World::new(PageInPolicy::Pio, true, |o| o.early_err = true);
        w.push(us(0), dst(0, 8));
        w.interrupt(us(0));
        w.push(us(8), dst(4, 8));
        w.interrupt(us(8));
        w.finish();
        assert_eq!(w.page_ins().len(), 2);
        assert_eq!(w.errs().len(), 2);
        assert_eq!(w.h.stats().task_runs, 1);
        assert!(w.h.is_idle());
    }

    #[test]
    fn early_err_without_page_in_answers_at_once() {
        let mut w = World::new(PageInPolicy::Pio, true, |o| o.early_err = true);
        w.mem.0.insert((1, BASE));
        w.push(us(0), dst(0, 1));
        w.interrupt(us(0));
        w.finish();
        // 1 + 0.1 + 7 + 1, bookkeeping after.
        assert_eq!(w.errs()[0].0, ns(9_100));
        assert_eq!(w.h.breakdown().bookkeeping, Duration::from_us(4));
    }

    #[test]
    fn idle_and_timeouts() {
        let mut w = World::new(PageInPolicy::Pio, true, |_| {});
        assert!(w.h.is_idle());
        assert_eq!(w.h.poll_timeout(), None);
        w.push(us(0), dst(0, 1));
        assert!(!w.h.is_idle());
        w.interrupt(us(0));
        w.finish();
        assert_eq!(w.h.poll_timeout(), None);
    }
}
