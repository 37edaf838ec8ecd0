//! `aa-dht-link` (live): one inserter, one target, AA vs RMA inserts per second vs collision
//! rate (spec "Calibration: small-scale check"; the simulator's experiment of the same name,
//! same columns plus `driver`). Rank 0 inserts into rank 1's volume over shared memory:
//!
//! - `aa-poll` / `aa-sleep` / `aa-batch`: one active put per key; rank 1's handler thread
//!   (polling, sleeping on a futex woken at every publication, or woken at 16 waiting
//!   entries or every 100 us) inserts with local atomics; the run ends with an active flush,
//!   so every key is in the table when the clock stops;
//! - `rma`: crates/aa's RMA protocol over the live runtime's remote atomics (a CAS; on a
//!   collision fetch-and-add, put, fetch-and-replace, CAS).
//!
//! Both keep `window` inserts in flight. Every run is checked against the sequential
//! reference (crates/aa `Volume::local_insert`): a wrong table fails the experiment.

use serde_json::json;
use unpinned_aa::dht::{DhtMap, Volume};
use unpinned_aa_live::dht::{Dht, Scheme};
use unpinned_aa_live::Notify;
use unpinned_experiments::{
    Declared, ExperimentError, ExperimentOutput, ExperimentSpec, RunContext,
};
use unpinned_report::{PlotSpec, Table};

use super::{fail, median, Pair};

/// `aa-dht-link` (live).
pub static SPEC: ExperimentSpec = ExperimentSpec {
    name: "aa-dht-link",
    system: "live",
    description: "Live: one inserter into a remote DHT volume, AA (poll, sleep, batch) vs RMA inserts/s vs collision rate",
    params: Some(<Params as Declared>::PARAMS),
    run,
    ..ExperimentSpec::LIVE
};

const SLOT_BITS: u32 = 16;

/// `n` keys owned by rank 1: a share `collision_pct` of them goes to an already used slot.
pub fn keys(n: u32, collision_pct: u32, seed: u64) -> Vec<u64> {
    let map = DhtMap {
        procs: 2,
        slot_bits: SLOT_BITS,
    };
    let mut x = seed | 1;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut used: Vec<u32> = Vec::new();
    (0..n)
        .map(|i| {
            let collide = !used.is_empty() && rnd() % 100 < collision_pct as u64;
            let slot = if collide {
                used[(rnd() % used.len() as u64) as usize]
            } else {
                // An odd multiplier permutes the slots: a fresh slot for every i < 2^16.
                let s = i.wrapping_mul(40503) & ((1 << SLOT_BITS) - 1);
                used.push(s);
                s
            };
            map.make_key(i + 1, 1, slot)
        })
        .collect()
}

/// One run: (inserts/s, remote ops per insert, handler notification median in us, packets
/// refused by the full log).
fn once(
    pair: &Pair,
    scheme: Scheme,
    notify: Notify,
    keys: &[u64],
    window: usize,
    log_bytes: u32,
) -> Result<(f64, f64, f64, f64), ExperimentError> {
    let n = keys.len() as u32;
    let stalls0 = pair.rts[1].active().stats().stalls;
    let mk = |r: usize| {
        Dht::local(&pair.rts[r], SLOT_BITS, n + 16, scheme, notify, log_bytes).map_err(fail)
    };
    let (mut d0, mut d1) = (mk(0)?, mk(1)?);
    let regions = vec![d0.region(), d1.region()];
    d0.connect(regions.clone()).map_err(fail)?;
    d1.connect(regions).map_err(fail)?;
    d0.set_window(window);
    let t = std::time::Instant::now();
    let st = d0.insert(keys).map_err(fail)?;
    let secs = t.elapsed().as_secs_f64();
    // The table must be the sequential reference's.
    let map = d0.map();
    let mut reference = Volume::new(d1.volume().layout());
    for &k in keys {
        reference
            .local_insert(k, map.locate(k).1)
            .map_err(|e| fail(format!("reference: {e}")))?;
    }
    if d1.volume().contents() != reference.contents() {
        return Err(fail(format!(
            "{} table differs from the sequential reference",
            scheme.name()
        )));
    }
    let notify_us = d1
        .stop_handler()
        .and_then(|r| r.notify_quantile_ns(0.5))
        .map_or(f64::NAN, |ns| ns as f64 / 1e3);
    let stalls = pair.rts[1].active().stats().stalls - stalls0;
    Ok((
        keys.len() as f64 / secs,
        st.remote_ops as f64 / keys.len() as f64,
        notify_us,
        stalls as f64,
    ))
}

unpinned_experiments::declare_params! {
    /// Parameters of `aa-dht-link`.
    pub struct Params {
        collision_pct: Vec<u32> {
            default: "0,5,10,25,50",
            unit: "%",
            check: unpinned_experiments::params::int(0, 100),
            doc: "Share of inserts that collide with an earlier key",
        },
        inserts: u32 {
            default: "2000",
            unit: "",
            check: unpinned_experiments::params::int(1, 60_000),
            doc: "Inserts per run",
        },
        window: usize {
            default: "16",
            unit: "",
            check: unpinned_experiments::params::int(1, 1 << 20),
            doc: "Inserts in flight",
        },
        reps: usize {
            default: "5",
            unit: "",
            check: unpinned_experiments::params::int(1, 10_000),
            doc: "Repetitions per point, median",
        },
        log_bytes: u32 {
            default: "65536",
            unit: "bytes",
            check: unpinned_experiments::params::int(64, 1 << 30),
            doc: "Bytes of the target's log (64 KiB: fewer entries than the default inserts, so a handler that falls behind meets back-pressure)",
        },
    }
}

fn run(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
    let Params {
        collision_pct: collisions,
        inserts,
        window,
        reps,
        log_bytes,
    } = ctx.params()?;
    let schemes = [
        ("aa-poll", Scheme::Aa, Notify::Poll),
        ("aa-sleep", Scheme::Aa, Notify::Sleep),
        (
            "aa-batch",
            Scheme::Aa,
            Notify::Batch {
                entries: 16,
                period_us: 100,
            },
        ),
        ("rma", Scheme::Rma, Notify::Sleep),
    ];
    let mut table = Table::new(&[
        "driver",
        "scheme",
        "collision_pct",
        "inserts_per_s",
        "remote_ops_per_insert",
        "notify_median_us",
        "log_stalls",
    ]);
    for &c in &collisions {
        let keys = keys(inserts, c, ctx.seed ^ c as u64);
        for (name, scheme, notify) in schemes {
            let pair = Pair::part(&ctx.profile)?;
            let mut rates = Vec::new();
            let (mut ops, mut note, mut stalls) = (Vec::new(), Vec::new(), Vec::new());
            for _ in 0..reps {
                let (r, o, n, s) = once(&pair, scheme, notify, &keys, window, log_bytes)?;
                rates.push(r);
                ops.push(o);
                note.push(n);
                stalls.push(s);
            }
            table.push(vec![
                "live".into(),
                name.into(),
                c.into(),
                median(rates).into(),
                median(ops).into(),
                median(note).into(),
                median(stalls).into(),
            ]);
        }
    }
    Ok(ExperimentOutput {
        table,
        plots: vec![PlotSpec::line(
            "Live: one inserter into a remote DHT volume (shm)",
            "collision_pct",
            "inserts_per_s",
            Some("scheme"),
        )],
        sim_events: 0,
        meta: json!({
            "inserts": inserts, "window": window, "reps": reps, "slot_bits": SLOT_BITS, "log_bytes": log_bytes,
            "transport": "shm (two runtimes in one process)", "statistic": "median of reps",
        }),
    })
}
