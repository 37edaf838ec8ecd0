//! One transfer between two simulated nodes: the building block of the PART experiments.

use unpinned_core::api::{Op, Perms, WorkRequest};
use unpinned_core::os::{Breakdown, PageInPolicy};
use unpinned_core::profile::Profile;
use unpinned_core::time::Duration;
use unpinned_sim::{NodeStats, Residence, Sim, SimConfig};

use crate::ExperimentError;

/// Source buffer address at node 0.
pub const SRC: u64 = 0x10_0000_0000;
/// Destination buffer address at node 1.
pub const DST: u64 = 0x20_0000_0000;

/// How one write is set up.
#[derive(Clone, Debug)]
pub struct WriteSetup {
    /// Bytes to write.
    pub size: u64,
    /// Residency of the destination buffer.
    pub dst: Residence,
    /// Residency of the source buffer.
    pub src: Residence,
    /// Page-in policy at both nodes.
    pub policy: PageInPolicy,
    /// Whether the page-in task sends ERRs.
    pub send_err: bool,
    /// Block timeout in us (None = NTO); overrides the profile's.
    pub timeout_us: Option<f64>,
    /// Master seed.
    pub seed: u64,
}

impl WriteSetup {
    /// A write of `size` bytes into present memory, profile defaults otherwise.
    pub fn new(size: u64, seed: u64) -> WriteSetup {
        WriteSetup {
            size,
            dst: Residence::Present,
            src: Residence::Present,
            policy: PageInPolicy::Pia,
            send_err: true,
            timeout_us: None,
            seed,
        }
    }
}

/// What one write measured.
#[derive(Clone, Debug)]
pub struct WriteResult {
    /// Post to completion.
    pub latency: Duration,
    /// Counters of the source node.
    pub src: NodeStats,
    /// Counters of the destination node.
    pub dst: NodeStats,
    /// Simulated events.
    pub events: u64,
}

impl WriteResult {
    /// Latency in us.
    pub fn latency_us(&self) -> f64 {
        self.latency.as_us_f64()
    }
    /// Host fault-path time at both nodes.
    pub fn breakdown(&self) -> Breakdown {
        let (a, b) = (self.src.breakdown, self.dst.breakdown);
        Breakdown {
            irq: a.irq + b.irq,
            fifo: a.fifo + b.fifo,
            gup: a.gup + b.gup,
            notify: a.notify + b.notify,
            bookkeeping: a.bookkeeping + b.bookkeeping,
            err: a.err + b.err,
            sched: a.sched + b.sched,
        }
    }
}

/// Run one write from node 0 to node 1 on `profile`; invariants are checked throughout.
pub fn one_write(profile: &Profile, w: &WriteSetup) -> Result<WriteResult, ExperimentError> {
    one_write_missing(profile, w, &[])
}

/// [`one_write`], with the destination pages flagged in `missing` (one flag per page,
/// `true` = missing; see [`crate::testbed::missing_pages`]) evicted before the write.
pub fn one_write_missing(
    profile: &Profile,
    w: &WriteSetup,
    missing: &[bool],
) -> Result<WriteResult, ExperimentError> {
    let (mut sim, wr) = setup_write(profile, w, missing);
    sim.post(sim.now(), 0, wr);
    sim.run_until_idle(Duration::from_ms(60_000))
        .map_err(|e| ExperimentError::Sim(e.to_string()))?;
    let rec = &sim.posts()[0];
    let c = rec.completion.expect("idle run completed every request");
    if let Err(e) = c.status {
        return Err(ExperimentError::Sim(format!(
            "write of {} bytes failed: {e} (seed {})",
            w.size, w.seed
        )));
    }
    Ok(WriteResult {
        latency: c.at - rec.posted_at,
        src: sim.stats(0),
        dst: sim.stats(1),
        events: sim.events(),
    })
}

/// The simulation of [`one_write_missing`] before the write is posted, and the write.
pub fn setup_write(profile: &Profile, w: &WriteSetup, missing: &[bool]) -> (Sim, WorkRequest) {
    let mut profile = profile.clone();
    if let Some(t) = w.timeout_us {
        profile.engine.block_timeout_us = t;
    }
    let mut cfg = SimConfig::two_nodes(profile, w.seed);
    cfg.policy = w.policy;
    cfg.send_err = w.send_err;
    let mut sim = Sim::new(cfg);
    sim.map(0, 1, SRC, w.size, w.src);
    sim.fill_random(0, 1, SRC, w.size);
    sim.map(1, 1, DST, w.size, w.dst);
    let page = unpinned_core::memory::PAGE_BYTES;
    for (p, _) in missing.iter().enumerate().filter(|(_, &m)| m) {
        sim.evict(1, 1, DST + p as u64 * page, page);
    }
    let key = sim.expose(1, 1, DST, w.size, Perms::W);
    let wr = WorkRequest {
        wr_id: 1,
        op: Op::Write,
        peer: 1,
        local_pdid: 1,
        local_addr: SRC,
        remote_pdid: 1,
        remote_addr: DST,
        rkey: key,
        len: w.size,
    };
    (sim, wr)
}

/// Pages spanned by a buffer of `size` bytes starting page-aligned.
pub fn pages(size: u64) -> u64 {
    size.div_ceil(unpinned_core::memory::PAGE_BYTES).max(1)
}

/// Run `f` over `points` on all cores, results in input order; `progress` gets (done, total).
pub fn par_map<P: Sync, R: Send>(
    points: &[P],
    progress: &(dyn Fn(u64, u64) + Sync),
    f: impl Fn(&P) -> R + Sync,
) -> Vec<R> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let total = points.len() as u64;
    let out: Mutex<Vec<Option<R>>> = Mutex::new((0..points.len()).map(|_| None).collect());
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(points.len().max(1));
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= points.len() {
                    break;
                }
                let r = f(&points[i]);
                out.lock().expect("no panics while holding the lock")[i] = Some(r);
                let d = done.fetch_add(1, Ordering::Relaxed) as u64 + 1;
                progress(d, total);
            });
        }
    });
    out.into_inner()
        .expect("lock not poisoned")
        .into_iter()
        .map(|r| r.expect("every point ran"))
        .collect()
}

/// The spec's size sweep for fault experiments: 4, 16, 64, 256 KiB, 1 and 4 MiB.
pub const FAULT_SIZES: [u64; 6] = [4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20];
