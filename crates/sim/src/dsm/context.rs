//! Handler contexts (spec dsm.md, "Handler contexts compared") and what each costs.

use super::profile::{ns, DsmProfile};

/// Where the asynchronous protocol handlers run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Context {
    /// A waiting thread spins on the completion queue and runs the handler itself. Selective
    /// polling: with no thread waiting on the node, a message raises an interrupt instead.
    Polling,
    /// The handler runs in the interrupt itself.
    Interrupt,
    /// The interrupt queues the handler, which runs later (task queue).
    Deferred,
    /// The user-level baseline: a signal per completion notification, +1 us per action that
    /// needs a system call, `mprotect` per page for protection changes.
    Signal,
}

impl Context {
    /// All contexts, in report order.
    pub const ALL: [Context; 4] = [
        Context::Polling,
        Context::Interrupt,
        Context::Deferred,
        Context::Signal,
    ];

    /// Name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Context::Polling => "polling",
            Context::Interrupt => "interrupt",
            Context::Deferred => "deferred",
            Context::Signal => "signal",
        }
    }
}

impl std::str::FromStr for Context {
    type Err = String;
    fn from_str(s: &str) -> Result<Context, String> {
        Context::ALL
            .into_iter()
            .find(|c| c.name() == s)
            .ok_or_else(|| format!("context {s:?} (polling|interrupt|deferred|signal)"))
    }
}

/// The costs of one context on one profile, in ns.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Costs {
    /// From a message's arrival to its handler starting, when notified by interrupt.
    pub notify_ns: u64,
    /// CPU time that notification takes from the node (interrupt, signal delivery).
    pub notify_cpu_ns: u64,
    /// Poll period of a waiting thread (polling context).
    pub poll_ns: u64,
    /// Fault entry of the faulting thread.
    pub fault_ns: u64,
    /// Posting one work request.
    pub post_ns: u64,
    /// Changing one minipage's protection.
    pub protect_ns: u64,
    /// Waking a blocked thread.
    pub wake_ns: u64,
}

impl Costs {
    pub fn new(p: &DsmProfile, ctx: Context) -> Costs {
        let (interrupt, syscall, extra) = (
            ns(p.os.interrupt_us),
            ns(p.os.syscall_us),
            ns(p.user.extra_syscall_us),
        );
        let kernel_protect = ns(p.os.protect_batched_us);
        let (notify_ns, notify_cpu_ns, protect_ns, wake_ns) = match ctx {
            Context::Polling | Context::Interrupt => {
                (interrupt, interrupt, kernel_protect, syscall)
            }
            Context::Deferred => (
                interrupt + ns(p.os.deferred_delay_us),
                interrupt,
                kernel_protect,
                syscall,
            ),
            // Signal delivery to the process: the table's fault-to-signal-handler figure.
            Context::Signal => {
                let signal = interrupt + ns(p.os.fault_us);
                (
                    signal,
                    signal,
                    syscall + kernel_protect + extra,
                    syscall + extra,
                )
            }
        };
        Costs {
            notify_ns,
            notify_cpu_ns,
            poll_ns: ns(p.net.cq_poll_empty_us),
            fault_ns: ns(p.os.fault_us),
            post_ns: ns(p.net.post_us),
            protect_ns,
            wake_ns,
        }
    }
}
