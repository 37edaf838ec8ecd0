//! `aa-dht-link` on the live runtime: the simulator's experiment
//! (`unpinned_experiments::aa::dht_link`), written once over a
//! [`DhtTestbed`], run on a [`LiveDhtTestbed`]. Same name, parameters, grid, inserts and
//! columns as `unpinned sim aa-dht-link`.
//!
//! Rank 0 inserts into rank 1's volume over shared memory (two [`Pair`] runtimes in this
//! process), keeping the window's inserts in flight:
//!
//! - `aa-poll` / `aa-sleep` / `aa-batch`: one active put per key; rank 1's handler thread
//!   (polling, sleeping on a futex woken at every publication, or woken at 16 waiting entries
//!   or every 100 us) inserts with local atomics; the run ends with an active flush, so every
//!   key is in the table when the clock stops;
//! - `rma`: crates/aa's RMA protocol over the live runtime's remote atomics (a CAS; on a
//!   collision fetch-and-add, put, fetch-and-replace, CAS).
//!
//! The target's volume is made present and its first slots prefilled before the clock
//! starts, as the simulator's (whose AA world has no page faults). Every run is checked
//! against the sequential reference (crates/aa `Volume::local_insert`): a wrong table fails
//! the experiment.

use serde_json::json;
use unpinned_aa::dht::{DhtMap, Volume};
use unpinned_aa_live::dht::{Dht, Scheme};
use unpinned_aa_live::Notify;
use unpinned_core::profile::Profile;
use unpinned_experiments::aa::dht_link;
use unpinned_experiments::aa::testbed::{
    prefill_key, DhtTestbed, LinkMeasured, LinkPoint, LinkScheme, BATCH_ENTRIES, BATCH_PERIOD_US,
    PREFILL,
};
use unpinned_experiments::{Backends, Declared, ExperimentError, ExperimentSpec};

use super::{fail, median, Pair};

/// `aa-dht-link` on the live runtime.
pub static SPEC: ExperimentSpec = ExperimentSpec {
    name: "aa-dht-link",
    system: "live",
    description: dht_link::DESCRIPTION,
    backends: Backends::Both,
    params: Some(<dht_link::Params as Declared>::PARAMS),
    run: |ctx| dht_link::run(ctx, &mut LiveDhtTestbed::new(&ctx.profile)),
    ..ExperimentSpec::LIVE
};

/// The live Active Access runtime as a [`DhtTestbed`], with the engine parameters of one
/// PART profile.
pub struct LiveDhtTestbed {
    profile: Profile,
}

impl LiveDhtTestbed {
    /// A testbed whose ranks run `profile`'s engine parameters (see
    /// [`super::live_profile`] for the live defaults).
    pub fn new(profile: &Profile) -> LiveDhtTestbed {
        LiveDhtTestbed {
            profile: profile.clone(),
        }
    }
}

/// The live DHT's insert scheme and handler notification of a table scheme.
fn live_scheme(s: LinkScheme) -> (Scheme, Notify) {
    match s {
        LinkScheme::AaPoll => (Scheme::Aa, Notify::Poll),
        LinkScheme::AaSleep => (Scheme::Aa, Notify::Sleep),
        LinkScheme::AaBatch => (
            Scheme::Aa,
            Notify::Batch {
                entries: BATCH_ENTRIES,
                period_us: BATCH_PERIOD_US,
            },
        ),
        LinkScheme::Rma => (Scheme::Rma, Notify::Sleep),
    }
}

/// What one run measured.
struct Once {
    inserts_per_s: f64,
    remote_ops_per_insert: f64,
    notify_median_us: Option<f64>,
    log_stalls: f64,
}

/// One run of `pt` on `pair`.
fn once(pair: &Pair, pt: &LinkPoint) -> Result<Once, ExperimentError> {
    let map = DhtMap {
        procs: 2,
        slot_bits: pt.slot_bits,
    };
    let keys: Vec<u64> = pt
        .round_robin()
        .into_iter()
        .map(|(uniq, slot)| map.make_key(uniq, 1, slot))
        .collect();
    let (scheme, notify) = live_scheme(pt.scheme);
    let stalls0 = pair.rts[1].active().stats().stalls;
    let mk = |r: usize| {
        Dht::local(
            &pair.rts[r],
            pt.slot_bits,
            pt.heap_cells,
            scheme,
            notify,
            pt.log_bytes,
        )
        .map_err(fail)
    };
    let (mut d0, mut d1) = (mk(0)?, mk(1)?);
    let target = d1.volume();
    target.page_in().map_err(fail)?;
    let mut reference = Volume::new(target.layout());
    for s in 0..PREFILL {
        let k = prefill_key(map, 1, s);
        target.insert(k, s).map_err(fail)?;
        reference.local_insert(k, s).map_err(fail)?;
    }
    let regions = vec![d0.region(), d1.region()];
    d0.connect(regions.clone()).map_err(fail)?;
    d1.connect(regions).map_err(fail)?;
    d0.set_window(pt.window() as usize);
    let t = std::time::Instant::now();
    let st = d0.insert(&keys).map_err(fail)?;
    let secs = t.elapsed().as_secs_f64();
    // The table must be the sequential reference's.
    for &k in &keys {
        reference
            .local_insert(k, map.locate(k).1)
            .map_err(|e| fail(format!("reference: {e}")))?;
    }
    let got = d1.volume().contents().map_err(fail)?;
    if got != reference.contents().map_err(fail)? {
        return Err(fail(format!(
            "{} table differs from the sequential reference",
            pt.scheme.name()
        )));
    }
    let notify_median_us = d1
        .stop_handler()
        .and_then(|r| r.notify_quantile_ns(0.5))
        .map(|ns| ns as f64 / 1e3);
    let stalls = pair.rts[1].active().stats().stalls - stalls0;
    Ok(Once {
        inserts_per_s: keys.len() as f64 / secs,
        remote_ops_per_insert: st.remote_ops as f64 / keys.len() as f64,
        notify_median_us,
        log_stalls: stalls as f64,
    })
}

impl DhtTestbed for LiveDhtTestbed {
    fn backend(&self) -> &'static str {
        "live"
    }

    fn measure(
        &mut self,
        points: &[LinkPoint],
        progress: &(dyn Fn(u64, u64) + Sync),
    ) -> Result<Vec<LinkMeasured>, ExperimentError> {
        let total: u64 = points.iter().map(|p| p.reps as u64).sum();
        let mut done = 0;
        let mut out = Vec::new();
        for pt in points {
            let pair = Pair::part(&self.profile)?;
            let mut runs = Vec::new();
            for _ in 0..pt.reps {
                runs.push(once(&pair, pt)?);
                done += 1;
                progress(done, total);
            }
            let med = |f: fn(&Once) -> f64| median(runs.iter().map(f).collect());
            let notes: Vec<f64> = runs.iter().filter_map(|r| r.notify_median_us).collect();
            out.push(LinkMeasured {
                inserts_per_s: med(|r| r.inserts_per_s),
                link_bytes: None,
                remote_ops_per_insert: med(|r| r.remote_ops_per_insert),
                log_stalls: med(|r| r.log_stalls),
                notify_median_us: (!notes.is_empty()).then(|| median(notes)),
                events: 0,
            });
        }
        Ok(out)
    }

    fn meta(&self, points: &[LinkPoint]) -> serde_json::Map<String, serde_json::Value> {
        let reps = points.first().map_or(0, |p| p.reps);
        let v = json!({
            "transport": "shm (two runtimes in one process)",
            "reps": reps,
            "statistic": "median of reps",
        });
        match v {
            serde_json::Value::Object(m) => m,
            _ => unreachable!("a JSON object"),
        }
    }
}
