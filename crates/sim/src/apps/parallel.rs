//! The window-synchronous parallel run of an application (conservative PDES): partitions of
//! contiguous node ranges, one per thread, advance through windows of simulated time no longer
//! than the lookahead and exchange the packets sent between them at the window barriers. The
//! design and why it is deterministic whatever the thread count: "Parallel application runs"
//! in docs/ARCHITECTURE.md.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use unpinned_core::api::NodeId;
use unpinned_core::time::{Duration, Instant};

use super::barrier::Barrier;
use super::driver::{AppSimConfig, Driver};
use crate::world::{Sent, SimError, Transit};

/// The first node of each partition: `threads` (0: the available cores) contiguous ranges of
/// equal size, at most one per node; one partition when the run needs one global state (fault
/// injection, tracing, invariant checks) or has no lookahead.
pub(super) fn partitions(cfg: &AppSimConfig, nodes: u32, lookahead: Duration) -> Vec<NodeId> {
    let threads = match cfg.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        t => t,
    };
    let global = cfg.sim.faults.any() || cfg.sim.trace || cfg.sim.check_invariants;
    let p = if global || lookahead == Duration::ZERO {
        1
    } else {
        threads.clamp(1, nodes.max(1) as usize)
    };
    (0..p as u64)
        .map(|i| (i * nodes as u64 / p as u64) as NodeId)
        .collect()
}

/// What the partitions share: the barrier, and per window parity (a partition may be one
/// window ahead of another's reading) the published bounds, the abort flags and the packets
/// in transit to each partition.
struct Shared {
    barrier: Barrier,
    /// Per parity, per partition: the earliest time it may next act (`u64::MAX`: never).
    bound: [Vec<AtomicU64>; 2],
    /// Per parity: a partition failed; every partition stops at this barrier.
    abort: [AtomicBool; 2],
    /// Per parity, per destination partition: packets sent to it.
    mail: [Vec<Mutex<Vec<Transit>>>; 2],
}

/// Run the partitions to the end (every partition idle). Returns (windows, parks at the
/// barrier), or the first failing partition's error.
pub(super) fn run(drivers: &mut [Driver<'_>], lookahead: Duration) -> Result<(u64, u64), SimError> {
    let p = drivers.len();
    let nodes = drivers.last().map_or(0, |d| d.sim.node_range().end) as usize;
    let mut owner = vec![0u32; nodes];
    for (i, d) in drivers.iter().enumerate() {
        for n in d.sim.node_range() {
            owner[n as usize] = i as u32;
        }
    }
    let shared = Shared {
        barrier: Barrier::new(p),
        bound: [0, 1].map(|_| (0..p).map(|_| AtomicU64::new(u64::MAX)).collect()),
        abort: [AtomicBool::new(false), AtomicBool::new(false)],
        mail: [0, 1].map(|_| (0..p).map(|_| Mutex::new(Vec::new())).collect()),
    };
    let (first, rest) = drivers.split_first_mut().expect("at least one partition");
    let results: Vec<Result<u64, SimError>> = std::thread::scope(|s| {
        let handles: Vec<_> = rest
            .iter_mut()
            .enumerate()
            .map(|(i, d)| {
                let (shared, owner) = (&shared, &owner);
                s.spawn(move || {
                    // A panicking partition must not leave the others waiting at the barrier.
                    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        partition_loop(d, i + 1, shared, owner, lookahead)
                    }));
                    r.unwrap_or_else(|panic| {
                        shared.barrier.poison();
                        std::panic::resume_unwind(panic)
                    })
                })
            })
            .collect();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            partition_loop(first, 0, &shared, &owner, lookahead)
        }));
        let mut results = vec![r.unwrap_or_else(|panic| {
            shared.barrier.poison();
            std::panic::resume_unwind(panic)
        })];
        for h in handles {
            results.push(h.join().expect("a partition thread panicked"));
        }
        results
    });
    let mut windows = 0;
    for r in results {
        windows = r?;
    }
    Ok((windows, shared.barrier.parks()))
}

/// One partition's loop (thread `me`): a window, hand over what was sent, barrier, claim the
/// ports for what arrives, next window. Returns the number of windows.
fn partition_loop(
    d: &mut Driver<'_>,
    me: usize,
    shared: &Shared,
    owner: &[u32],
    lookahead: Duration,
) -> Result<u64, SimError> {
    let p = shared.bound[0].len();
    shared.barrier.register(me);
    let mut local: Vec<Sent> = Vec::new();
    let mut remote: Vec<Vec<Transit>> = (0..p).map(|_| Vec::new()).collect();
    let mut incoming: Vec<Transit> = Vec::new();
    let never = u64::MAX;
    // Parity 0 carries the start: every partition's first event or wake-up.
    let mut par = 0;
    shared.bound[par][me].store(d.next_at().map_or(never, |t| t.0), Ordering::Relaxed);
    if !shared.barrier.wait(me) {
        return Err(d.failed("another partition's thread panicked"));
    }
    let mut start = min_bound(shared, par);
    let mut windows = 0;
    let mut result = Ok(());
    while start != never && !shared.abort[par].load(Ordering::Relaxed) {
        windows += 1;
        let end = Instant(start.saturating_add(lookahead.0));
        result = d.run_window(end);
        par ^= 1;
        let sent = d.sim.take_sent(owner, me as u32, &mut local, &mut remote);
        for (q, batch) in remote.iter_mut().enumerate() {
            if !batch.is_empty() {
                shared.mail[par][q]
                    .lock()
                    .expect("a partition thread panicked")
                    .append(batch);
            }
        }
        // An arrival is never earlier than its raw arrival time, so this bounds everything
        // this partition's sends cause too.
        let next = match (d.next_at(), sent) {
            (Some(a), Some(b)) => a.min(b).0,
            (a, b) => a.or(b).map_or(never, |t| t.0),
        };
        shared.bound[par][me].store(next, Ordering::Relaxed);
        if result.is_err() {
            shared.abort[par].store(true, Ordering::Relaxed);
        }
        // The barrier's release/acquire orders the stores above before every reader's loads.
        if !shared.barrier.wait(me) {
            return Err(d.failed("another partition's thread panicked"));
        }
        incoming.append(
            &mut shared.mail[par][me]
                .lock()
                .expect("a partition thread panicked"),
        );
        d.sim.claim(&mut local, &mut incoming);
        start = min_bound(shared, par);
        if result.is_err() {
            break;
        }
    }
    result.map(|()| windows)
}

/// The earliest published bound of parity `par`: the next window's start.
fn min_bound(shared: &Shared, par: usize) -> u64 {
    shared.bound[par]
        .iter()
        .map(|b| b.load(Ordering::Relaxed))
        .min()
        .unwrap_or(u64::MAX)
}
