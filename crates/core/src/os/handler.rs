//! The fault handler model (see the module docs of `os`).
//!
//! CONTRACT (implementation by the os helper; keep these signatures):
//! One host core runs both the IOMMU fault interrupt handler and the deferred page-in task;
//! an interrupt preempts the task (the task's current step ends `irq` later).

use crate::api::{FaultRecord, TransferKey};
use crate::memory::Pdid;
use crate::os::PageInPolicy;
use crate::profile::OsProfile;
use crate::time::{Duration, Instant};

/// Tells the handler which pages are present now (the page table).
pub trait Residency {
    /// Whether page `page_addr` of `pdid` is present.
    fn is_present(&self, pdid: Pdid, page_addr: u64) -> bool;
}

/// Configuration of the model.
#[derive(Clone, Debug, PartialEq)]
pub struct HandlerConfig {
    /// OS costs.
    pub os: OsProfile,
    /// Page-in policy.
    pub policy: PageInPolicy,
    /// Send ERRs after page-in (false: retransmission by timeout only).
    pub send_err: bool,
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
    /// Send an ERR for this faulted block to the transfer's data source (destination faults).
    SendErr {
        /// The transfer.
        transfer: TransferKey,
        /// The block.
        block: u32,
        /// The attempt that faulted.
        block_seq: u16,
    },
    /// A source-side fault is resolved: the local engine may resume the block.
    ResumeSource {
        /// The transfer.
        transfer: TransferKey,
        /// The block.
        block: u32,
        /// The attempt that faulted.
        block_seq: u16,
    },
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
}

/// The model of one node's host fault path.
pub struct FaultHandlerModel {
    _todo: (),
}

impl FaultHandlerModel {
    /// A new, idle handler.
    pub fn new(_cfg: HandlerConfig) -> FaultHandlerModel {
        todo!("os helper")
    }
    /// The IOMMU raised a fault interrupt (one per faulting transaction).
    pub fn handle_interrupt(&mut self, _now: Instant) {
        todo!("os helper")
    }
    /// The NI logged a failed block in its fault FIFO. Returns false (and counts an overflow)
    /// when the FIFO is full: the record is lost.
    pub fn handle_fifo_push(&mut self, _now: Instant, _rec: FaultRecord) -> bool {
        todo!("os helper")
    }
    /// Advance to `now` (the driver calls this at `poll_timeout()`).
    pub fn handle_timeout(&mut self, _now: Instant, _mem: &dyn Residency) {
        todo!("os helper")
    }
    /// When the model next needs `handle_timeout`.
    pub fn poll_timeout(&self) -> Option<Instant> {
        todo!("os helper")
    }
    /// The next action that became due.
    pub fn poll_action(&mut self) -> Option<HandlerAction> {
        todo!("os helper")
    }
    /// CPU time per component so far.
    pub fn breakdown(&self) -> Breakdown {
        todo!("os helper")
    }
    /// Counters so far.
    pub fn stats(&self) -> HandlerStats {
        todo!("os helper")
    }
    /// True when nothing is queued, running or scheduled.
    pub fn is_idle(&self) -> bool {
        todo!("os helper")
    }
}
