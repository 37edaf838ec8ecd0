//! The host OS side of PART's fault path, as models for the simulator, and the policy logic the
//! live runtime shares.
//!
//! - [`policy`]: which pages a fault pages in (PIO / PI4 / PIA), pure.
//! - [`adaptive`]: the adaptive policy between PIO and PIA (fault density, refaults).
//! - [`plan`]: the page-in plan of one drain of fault records (merged ranges, one ERR or
//!   resume per block), shared by the model below and the live page-in thread.
//! - [`source`]: where a missing page comes from (minor, major fault, huge page).
//! - [`handler`]: the fault handler model: IOMMU fault interrupts that preempt a deferred page-in
//!   task, which drains the NI fault FIFO, deduplicates pages, calls `get_user_pages`, notifies
//!   user space, and issues ERRs (spec part.md, mechanism 5 and "Fault path").
//! - [`early_err`]: early ERR, when the handler answers a faulted block before its whole
//!   page-in is done (beyond the reference design), pure.
//! - [`cpu`]: CPU cost models for the Touch and Pin schemes.

pub mod adaptive;
pub mod cpu;
pub mod early_err;
pub mod handler;
pub mod plan;
pub mod policy;
pub mod source;

pub use adaptive::{AdaptiveCosts, AdaptiveStats};
pub use early_err::ResendStream;
pub use handler::{
    Breakdown, FaultHandlerModel, HandlerAction, HandlerConfig, HandlerStats, Residency,
};
pub use plan::{BlockReply, PageInConfig, PageInPlan, PageRange};
pub use policy::PageInPolicy;
pub use source::PageSource;
