//! Live `dsm-roundtrip` (spec dsm.md): ping-pong round trip of a DSM control message with the
//! receiver's handler in each context (progress thread, deferred worker, signal, selective
//! polling). Two ranks of the live runtime in this process over shm; the messages are the live
//! DSM's sends (RDMA writes into mailbox rings, crates/dsm-live), the same code path coherence
//! messages take. The sender always waits by polling, so rows differ only by the receiver.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use serde_json::json;
use unpinned_dsm_live::context::{drain, Backoff, Contexts, HandlerContext, Service};
use unpinned_dsm_live::endpoint::Endpoint;
use unpinned_dsm_live::wire::WireMsg;
use unpinned_experiments::{
    Declared, ExperimentError, ExperimentOutput, ExperimentSpec, RunContext,
};
use unpinned_live::transport::shm::{create_segment, ShmGeometry, ShmTransport};
use unpinned_live::{Config, Runtime};
use unpinned_report::{PlotSpec, Table};

use super::{fail, median};

/// `dsm-roundtrip`, live.
pub static SPEC: ExperimentSpec = ExperimentSpec {
    name: "dsm-roundtrip",
    system: "live",
    description:
        "Live DSM: control-message ping-pong round trip with the receiver's handler in each context",
    params: Some(<Params as Declared>::PARAMS),
    run,
    ..ExperimentSpec::LIVE
};

/// Answers pings, counts pongs.
struct PingPong {
    ep: Endpoint,
    pongs: AtomicU64,
}

impl Service for PingPong {
    fn endpoint(&self) -> &Endpoint {
        &self.ep
    }
    fn handle(&self, from: u32, msg: WireMsg) {
        match msg {
            WireMsg::Ping { seq } => self.ep.send(from, WireMsg::Pong { seq }),
            WireMsg::Pong { .. } => {
                self.pongs.fetch_add(1, Ordering::Release);
            }
            _ => {}
        }
    }
}

static RUNS: AtomicU64 = AtomicU64::new(0);

/// Two endpoints over a fresh shm segment with a bootstrap directory (endpoint setup is a
/// collective, so both are built on their own threads).
fn endpoints(ctx: &RunContext) -> Result<(Endpoint, Endpoint, PathBuf), ExperimentError> {
    let tag = format!(
        "{}-{}",
        std::process::id(),
        RUNS.fetch_add(1, Ordering::Relaxed)
    );
    let dir = PathBuf::from(format!("/dev/shm/unpinned-dsmrt-{tag}"));
    std::fs::create_dir_all(&dir).map_err(fail)?;
    let cfgs: Vec<Config> = (0..2)
        .map(|r| {
            let mut c = super::base_config(r);
            c.engine = ctx.profile.engine.clone();
            c.bootstrap_dir = Some(dir.clone());
            c.timeouts.bootstrap_ms = 20_000;
            c
        })
        .collect();
    let seg = dir.join("segment");
    create_segment(
        &seg,
        ShmGeometry::new(2, cfgs[0].max_packet(), cfgs[0].transport.ring_slots),
    )
    .map_err(fail)?;
    let mut hs = Vec::new();
    for c in cfgs {
        let seg = seg.clone();
        hs.push(std::thread::spawn(move || -> Result<Endpoint, String> {
            let t = ShmTransport::open(&seg, c.rank).map_err(|e| e.to_string())?;
            let rt = Runtime::new(c, Box::new(t)).map_err(|e| e.to_string())?;
            Endpoint::new(rt, 0, 0, 256).map_err(|e| e.to_string())
        }));
    }
    let mut eps = Vec::new();
    for h in hs {
        eps.push(
            h.join()
                .map_err(|_| fail("endpoint thread panicked"))?
                .map_err(fail)?,
        );
    }
    let _ = std::fs::remove_file(&seg);
    let b = eps.pop().expect("2");
    let a = eps.pop().expect("2");
    Ok((a, b, dir))
}

/// Round trips (us) with the receiver in `context`.
fn measure(
    ctx: &RunContext,
    context: HandlerContext,
    pings: usize,
    warmup: usize,
) -> Result<Vec<f64>, ExperimentError> {
    let (a, b, dir) = endpoints(ctx)?;
    let sender = Arc::new(PingPong {
        ep: a,
        pongs: AtomicU64::new(0),
    });
    let receiver = Arc::new(PingPong {
        ep: b,
        pongs: AtomicU64::new(0),
    });
    let backoff = Backoff::default();
    let cs = Contexts::start(sender.clone(), HandlerContext::Polling, backoff).map_err(fail)?;
    let cr = Arc::new(Contexts::start(receiver.clone(), context, backoff).map_err(fail)?);
    // Selective polling needs a receiver thread that waits with nothing else to do.
    let stop = Arc::new(AtomicBool::new(false));
    let poller = (context == HandlerContext::Polling).then(|| {
        let (cr, receiver, stop) = (cr.clone(), receiver.clone(), stop.clone());
        std::thread::spawn(move || cr.wait_until(&*receiver, || stop.load(Ordering::Acquire)))
    });
    let mut rtts = Vec::with_capacity(pings);
    let mut result = Ok(());
    for i in 0..(warmup + pings) {
        let t = Instant::now();
        sender.ep.send(1, WireMsg::Ping { seq: i as u64 });
        let want = i as u64 + 1;
        if let Err(e) = cs.wait_until(&*sender, || sender.pongs.load(Ordering::Acquire) >= want) {
            result = Err(fail(e));
            break;
        }
        if i >= warmup {
            rtts.push(t.elapsed().as_secs_f64() * 1e6);
        }
    }
    stop.store(true, Ordering::Release);
    if let Some(p) = poller {
        let _ = p.join();
    }
    cs.stop();
    cr.stop();
    // Both ranks idle: let the last credits land before the runtimes go.
    drain(&*sender);
    drain(&*receiver);
    sender.ep.set_quiet();
    receiver.ep.set_quiet();
    drop(cs);
    drop(cr);
    drop(sender);
    drop(receiver);
    let _ = std::fs::remove_dir_all(&dir);
    result.map(|_| rtts)
}

fn pct(mut v: Vec<f64>, p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    v[((v.len() - 1) as f64 * p).round() as usize]
}

unpinned_experiments::declare_params! {
    /// Parameters of `dsm-roundtrip`.
    pub struct Params {
        pings: usize {
            default: "300",
            unit: "",
            check: unpinned_experiments::params::int(1, 1_000_000),
            doc: "Timed pings per context and round",
        },
        warmup: usize {
            default: "30",
            unit: "",
            check: unpinned_experiments::params::int(0, 1_000_000),
            doc: "Untimed pings before them",
        },
        rounds: usize {
            default: "3",
            unit: "",
            check: unpinned_experiments::params::int(1, 1000),
            doc: "Rounds (interleaving the contexts)",
        },
    }
}

fn run(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
    let Params {
        pings,
        warmup,
        rounds,
    } = ctx.params()?;
    let mut table = Table::new(&["context", "rtt_us", "rtt_p10_us", "rtt_p90_us", "pings"]);
    let n = HandlerContext::ALL.len();
    let total = (n * rounds.max(1)) as u64;
    // Rounds interleave the contexts so that a noisy neighbour on the shared host spreads
    // over all of them instead of hitting one.
    let mut all: Vec<Vec<f64>> = vec![Vec::new(); n];
    for r in 0..rounds.max(1) {
        for (k, c) in HandlerContext::ALL.into_iter().enumerate() {
            all[k].extend(measure(ctx, c, pings.max(1), warmup)?);
            (ctx.progress)((r * n + k) as u64 + 1, total);
        }
    }
    for (k, c) in HandlerContext::ALL.into_iter().enumerate() {
        let v = &all[k];
        table.push(vec![
            c.name().into(),
            median(v.clone()).into(),
            pct(v.clone(), 0.1).into(),
            pct(v.clone(), 0.9).into(),
            (v.len() as u64).into(),
        ]);
    }
    let b = Backoff::default();
    Ok(ExperimentOutput {
        table,
        plots: vec![PlotSpec::line(
            "Live DSM round trip by receiver handler context",
            "context",
            "rtt_us",
            None,
        )
        .bars()],
        sim_events: 0,
        meta: json!({
            "pings_per_round": pings,
            "rounds": rounds,
            "warmup": warmup,
            "transport": "shm (two runtimes in one process)",
            "message": "64-byte mailbox slot written by PART RDMA write; the answer likewise",
            "sender_context": "polling (the sender's main thread waits and polls)",
            "backoff": {"spin_us": b.spin.as_micros() as u64, "yield_until_us": b.yield_until.as_micros() as u64, "sleep_us": b.sleep.as_micros() as u64},
            "note": "rtt_us is the median of all round trips (`rounds` x `pings`, each run after `warmup` unmeasured ones, on fresh runtimes); p10/p90 beside it. progress: the receiver's detector thread handles the message; deferred: the detector wakes a worker thread (unpark) that handles it; signal: the detector sends SIGRTMIN+4 with tgkill to a thread whose signal handler handles it; polling: a receiver thread waiting in the DSM polls and handles it.",
        }),
    })
}
