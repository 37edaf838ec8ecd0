//! An active flush against a slow handler, deterministically: the target holds the flush's get
//! until its handler has drained the log, and the source's read counts that hold as silence.
//! A hold longer than the source's liveness limit (`engine.max_timeouts` silent periods of
//! `engine.block_timeout_us`) fails the flush with RetryExceeded although the peer is alive;
//! a limit above the handler's drain time lets it complete. This is how a rank descheduled
//! on a loaded host (a polling handler that does not run) failed
//! `aa_dht_three_processes_polling_handler` (tests/active_multiproc.rs) before the runtime's timeouts backed off.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use unpinned_aa_live::{ActiveAccess, ActiveRuntime, Notify, PageBits};
use unpinned_core::api::CompletionError;
use unpinned_live::transport::mem::network;
use unpinned_live::{Config, LiveError, Perms};
use unpinned_os::mapping::Mapping;

/// Active puts before the flush.
const PUTS: u64 = 4;

/// Two Active Access ranks whose engines give up on a silent peer after `max_timeouts`
/// periods of 1 ms (long enough, in both cases below, for the puts before the flush on a
/// loaded host).
fn pair(max_timeouts: u32) -> Vec<ActiveRuntime> {
    let sets = [
        "engine.block_timeout_us=1000".to_string(),
        format!("engine.max_timeouts={max_timeouts}"),
        // Fixed periods, so the limit is max_timeouts x 1 ms.
        "engine.timeout_backoff_max=1".to_string(),
    ];
    let max = Config::new(0, 2).max_packet();
    network(2, max)
        .into_iter()
        .enumerate()
        .map(|(r, t)| {
            let c = Config::new(r as u32, 2)
                .with_overrides(&sets)
                .expect("config");
            ActiveRuntime::new(c, Box::new(t)).expect("runtime")
        })
        .collect()
}

/// `PUTS` active puts to a handler that processes nothing until its gate opens (after
/// `open_after`, or, if `None`, when the flush has returned), then an active flush: the
/// flush's outcome and the entries processed when it returned.
fn flush_behind_a_stalled_handler(
    max_timeouts: u32,
    open_after: Option<Duration>,
) -> (Result<(), LiveError>, u64) {
    let mem = Mapping::anon(2 * 4096).unwrap();
    let rts = pair(max_timeouts);
    let (src, dst) = (&rts[0], &rts[1]);
    // SAFETY: the mapping outlives the runtimes (declared before them, dropped after).
    let key = unsafe { dst.expose(mem.ptr(), mem.len(), Perms::RW).unwrap() };
    let aa = dst.active();
    let iuid = aa.create_log(1, 4096).unwrap();
    aa.assoc_pages(mem.addr(), 4096, PageBits::active_put(iuid))
        .unwrap();
    aa.assoc_pages(mem.addr() + 4096, 4096, ActiveAccess::flush_page_bits(iuid))
        .unwrap();
    let gate = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let (g, c) = (gate.clone(), count.clone());
    let h = aa
        .spawn_handler(1, Notify::Sleep, move |_| {
            while !g.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(1));
            }
            c.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    // Opens the gate on every way out, a failed assertion included (the handler's `Drop`
    // waits for it).
    let _open = Open(gate.clone());
    for i in 0..PUTS {
        let v = (i + 1).to_le_bytes();
        src.write_blocking(1, &v, mem.addr() + 8 * i, key).unwrap();
    }
    let r = std::thread::scope(|s| {
        if let Some(d) = open_after {
            let g = gate.clone();
            s.spawn(move || {
                std::thread::sleep(d);
                g.store(true, Ordering::SeqCst);
            });
        }
        src.active_flush(1, mem.addr() + 4096, key)
    });
    let done = count.load(Ordering::SeqCst);
    gate.store(true, Ordering::SeqCst);
    h.stop();
    (r, done)
}

/// Opens the handler's gate when dropped.
struct Open(Arc<AtomicBool>);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[test]
fn a_flush_held_longer_than_the_liveness_limit_fails_a_longer_limit_completes() {
    // The handler stalls until the flush returns; 200 silent periods of 1 ms: RetryExceeded,
    // although the peer is alive and holding the flush on purpose.
    let (r, done) = flush_behind_a_stalled_handler(200, None);
    assert!(
        matches!(
            r,
            Err(LiveError::Failed {
                error: CompletionError::RetryExceeded,
                ..
            })
        ),
        "{r:?}"
    );
    assert_eq!(done, 0);
    // The handler stalls 50 ms; 2000 periods (at least 2 s) allowed: the flush waits.
    let (r, done) = flush_behind_a_stalled_handler(2000, Some(Duration::from_millis(50)));
    r.expect("a flush held within the liveness limit completes");
    assert_eq!(
        done, PUTS,
        "the flush returned after the handler processed every put"
    );
}
