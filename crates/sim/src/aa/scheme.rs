//! The schemes of spec "Schemes compared" as the model sees them: which path a message takes
//! (IOMMU access log or AM mailbox) and how its handler is notified.

/// How a process's incoming active accesses / messages reach a handler.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// AA, interrupt at a fill threshold or period.
    AaInt,
    /// AA, a runtime thread of the process (its own hardware context) polls head/tail in
    /// memory and runs the handler on the entry in place.
    AaPoll,
    /// AA, a dedicated hardware thread polls a scratchpad.
    AaSp,
    /// Remote atomics only: no handler anywhere.
    Rma,
    /// Active messages, polled at every operation boundary (message passing).
    Am,
    /// Active messages, polls skipped with exponential back-off after empty polls.
    AmExp,
    /// Active messages served by `cores` dedicated cores per node.
    AmOnload {
        /// Dedicated cores per node (1..cores_per_node-1).
        cores: u32,
    },
    /// Active messages, an interrupt per batch of `batch` messages.
    AmInts {
        /// Messages per interrupt.
        batch: u32,
    },
}

impl Scheme {
    /// Lower-case name used in CSV files.
    pub fn name(&self) -> &'static str {
        match self {
            Scheme::AaInt => "aa-int",
            Scheme::AaPoll => "aa-poll",
            Scheme::AaSp => "aa-sp",
            Scheme::Rma => "rma",
            Scheme::Am => "am",
            Scheme::AmExp => "am-exp",
            Scheme::AmOnload { .. } => "am-onload",
            Scheme::AmInts { .. } => "am-ints",
        }
    }

    /// Variant detail (`c4`, `b10`), empty otherwise.
    pub fn variant(&self) -> String {
        match self {
            Scheme::AmOnload { cores } => format!("c{cores}"),
            Scheme::AmInts { batch } => format!("b{batch}"),
            _ => String::new(),
        }
    }

    /// Messages go through an AM mailbox (else the IOMMU access log).
    pub fn is_am(&self) -> bool {
        matches!(
            self,
            Scheme::Am | Scheme::AmExp | Scheme::AmOnload { .. } | Scheme::AmInts { .. }
        )
    }

    /// The computing processes poll their receive buffers at operation boundaries (and at
    /// idle ticks while they wait): AM and AM-Exp (spec "Where the schemes' costs come from").
    pub fn app_polls(&self) -> bool {
        matches!(self, Scheme::Am | Scheme::AmExp)
    }

    /// The receive-side work (polls, extraction, handlers, interrupts) runs on the computing
    /// processes' cores, taken out of the time they spend issuing their own operations. Else a
    /// polling agent does it (AA-Poll's runtime thread, AA-SP's hardware thread, AM-Onload's
    /// dedicated cores), or there is none (RMA: the target NIC executes atomics).
    pub fn recv_on_app(&self) -> bool {
        matches!(
            self,
            Scheme::AaInt | Scheme::Am | Scheme::AmExp | Scheme::AmInts { .. }
        )
    }

    /// Dedicated handler cores per node.
    pub fn onload_cores(&self) -> u32 {
        match self {
            Scheme::AmOnload { cores } => *cores,
            _ => 0,
        }
    }
}
