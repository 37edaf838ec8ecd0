//! Waiting, in the log's own process, until its handler has caught up: the local
//! counterpart of the active flush, for use cases whose consumer lives beside the log
//! (checkpointing, the get replay store).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant as StdInstant};

use crate::state::LogShared;

/// Wait until the handler of `log` has processed every entry reserved so far (so the entries
/// of all accesses completed before the call). `false` if that takes longer than `timeout`.
pub(crate) fn wait_drained(log: &LogShared, timeout: Duration) -> bool {
    let mark = log.ring.lock().expect("access log").log.stats().reserved;
    let t0 = StdInstant::now();
    while log.processed.load(Ordering::SeqCst) < mark {
        if t0.elapsed() > timeout {
            return false;
        }
        // Short sleeps: a checkpoint is not latency-critical, and the host is shared.
        std::thread::sleep(Duration::from_micros(20));
    }
    true
}
