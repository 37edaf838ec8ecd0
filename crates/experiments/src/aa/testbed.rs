//! What an `aa-dht-link` point needs from a backend, so that the experiment is written once.
//!
//! The experiment ([`super::dht_link`]) turns its parameters into [`LinkPoint`]s (scheme,
//! collision share, and the inserts themselves, drawn once from the seed by
//! [`single_target_draws`]), hands them to a [`DhtTestbed`] and writes the [`LinkMeasured`]
//! results into one schema. The simulator's AA world implements the trait here
//! ([`SimDhtTestbed`]); the live Active Access runtime in crates/livebench
//! (`unpinned_livebench::exp::aa_dht_link::LiveDhtTestbed`). Both insert the same keys into
//! a volume of the same geometry whose [`PREFILL`] first slots are occupied before the run.

use unpinned_aa::profile::AaProfile;
use unpinned_sim::aa::dht::DhtWorkload;
pub use unpinned_sim::aa::dht::{prefill_key, single_target_draws, PREFILL};
use unpinned_sim::aa::{AaWorld, Scheme, WorldConfig};

use super::per_s;
use crate::part::harness::par_map;
use crate::ExperimentError;

/// How an insert reaches the table's owner and how its handler learns about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkScheme {
    /// One active put per key; the owner's handler polls its log.
    AaPoll,
    /// One active put per key; the handler sleeps and is woken at every entry (live: a futex
    /// wake per publication; simulated: AA-Int with an interrupt threshold of one entry).
    AaSleep,
    /// One active put per key; the handler is woken once [`BATCH_ENTRIES`] entries wait or
    /// [`BATCH_PERIOD_US`] after the first one (live: `Notify::Batch`; simulated: AA-Int with
    /// that threshold and period).
    AaBatch,
    /// Remote atomics only (crates/aa's `RmaInsert`): a CAS, and on a collision a
    /// fetch-and-add, a put, a fetch-and-replace and a CAS.
    Rma,
}

/// Entries that wake an [`LinkScheme::AaBatch`] handler.
pub const BATCH_ENTRIES: u32 = 16;
/// Time after the first waiting entry that wakes an [`LinkScheme::AaBatch`] handler, us.
pub const BATCH_PERIOD_US: u32 = 100;

impl LinkScheme {
    /// Every scheme, in table order.
    pub const ALL: [LinkScheme; 4] = [
        LinkScheme::AaPoll,
        LinkScheme::AaSleep,
        LinkScheme::AaBatch,
        LinkScheme::Rma,
    ];

    /// The scheme's name in the table (`aa-poll`, `aa-sleep`, `aa-batch`, `rma`).
    pub fn name(self) -> &'static str {
        match self {
            LinkScheme::AaPoll => "aa-poll",
            LinkScheme::AaSleep => "aa-sleep",
            LinkScheme::AaBatch => "aa-batch",
            LinkScheme::Rma => "rma",
        }
    }
}

/// One point: a single inserter keeping `window` inserts in flight into one remote volume.
#[derive(Clone, Debug)]
pub struct LinkPoint {
    /// How inserts are carried out.
    pub scheme: LinkScheme,
    /// Share of inserts aimed at an occupied slot, %.
    pub collision_pct: u32,
    /// The inserts as `window` flows of (unique part, slot), from [`single_target_draws`]:
    /// the simulator runs each flow as a logical process, the live inserter keeps `window`
    /// inserts in flight over the flows' keys taken round-robin.
    pub flows: Vec<Vec<(u32, u32)>>,
    /// log2 of the volume's table slots.
    pub slot_bits: u32,
    /// Overflow heap cells of the volume.
    pub heap_cells: u32,
    /// Bytes of the owner's access log.
    pub log_bytes: u32,
    /// The seed (the simulator's randomness; the draws are already in `flows`).
    pub seed: u64,
    /// Repetitions; the result is the median one. The simulator is deterministic and runs one.
    pub reps: usize,
}

impl LinkPoint {
    /// Inserts in flight (the number of flows).
    pub fn window(&self) -> u32 {
        self.flows.len() as u32
    }

    /// Every insert, flows taken round-robin (the order a single inserter issues them).
    pub fn round_robin(&self) -> Vec<(u32, u32)> {
        let longest = self.flows.iter().map(Vec::len).max().unwrap_or(0);
        (0..longest)
            .flat_map(|k| self.flows.iter().filter_map(move |f| f.get(k).copied()))
            .collect()
    }
}

/// What one point measured (the median repetition's values live).
#[derive(Clone, Debug, Default)]
pub struct LinkMeasured {
    /// Inserts per second, from the first insert to the last one in the table.
    pub inserts_per_s: f64,
    /// Payload bytes carried by the link (`None`: the backend does not count them).
    pub link_bytes: Option<u64>,
    /// Remote operations per insert (puts, atomics, gets; flushes not counted).
    pub remote_ops_per_insert: f64,
    /// Packets or accesses refused by the full log (each retried).
    pub log_stalls: f64,
    /// Median delay from an entry's publication to its handler, us (`None`: the backend does
    /// not time it).
    pub notify_median_us: Option<f64>,
    /// Simulated events (0 live).
    pub events: u64,
}

/// A backend `aa-dht-link` measures on.
pub trait DhtTestbed {
    /// `sim` or `live`.
    fn backend(&self) -> &'static str;

    /// Measure every point; results in input order. `progress` gets (done, total).
    fn measure(
        &mut self,
        points: &[LinkPoint],
        progress: &(dyn Fn(u64, u64) + Sync),
    ) -> Result<Vec<LinkMeasured>, ExperimentError>;

    /// What the backend adds to the experiment's metadata (transport, repetitions).
    fn meta(&self, points: &[LinkPoint]) -> serde_json::Map<String, serde_json::Value>;
}

/// The simulator's AA world as a [`DhtTestbed`]: two nodes on the profile's 1 Gb/s Ethernet,
/// the inserter's flows as `window` logical processes on node 0 (one insert at a time each,
/// sharing node 0's link; posting costs CPU per flow, which does not matter at 1 Gb/s), the
/// table in the first process of node 1.
pub struct SimDhtTestbed {
    profile: AaProfile,
}

impl SimDhtTestbed {
    /// A testbed with the costs of `profile`.
    pub fn new(profile: &AaProfile) -> SimDhtTestbed {
        SimDhtTestbed {
            profile: profile.clone(),
        }
    }

    fn one(&self, pt: &LinkPoint) -> Result<LinkMeasured, ExperimentError> {
        let flows = pt.window();
        let mut prof = self.profile.clone();
        prof.cpu.cores_per_node = flows;
        let scheme = match pt.scheme {
            LinkScheme::AaPoll => Scheme::AaPoll,
            LinkScheme::AaSleep => {
                prof.notify.int_threshold = 1;
                Scheme::AaInt
            }
            LinkScheme::AaBatch => {
                prof.notify.int_threshold = BATCH_ENTRIES.into();
                prof.notify.int_period_us = BATCH_PERIOD_US.into();
                Scheme::AaInt
            }
            LinkScheme::Rma => Scheme::Rma,
        };
        let mut cfg = WorldConfig::new(&prof, 2, scheme, pt.seed);
        cfg.ethernet = true;
        cfg.window = 1;
        cfg.log_bytes = pt.log_bytes;
        let per_flow = pt.flows.first().map_or(0, |f| f.len() as u32);
        let mut p = unpinned_sim::aa::dht::DhtParams::new(
            per_flow,
            pt.collision_pct as f64 / 100.0,
            pt.seed,
        );
        p.slot_bits = pt.slot_bits;
        p.heap_cells = pt.heap_cells;
        let wl = DhtWorkload::with_draws(2 * flows, flows, scheme, p, &pt.flows);
        let mut w = AaWorld::new(&prof, cfg, wl);
        let st = w.run().map_err(ExperimentError::Sim)?;
        w.wl.check().map_err(ExperimentError::Sim)?;
        let inserts = w.wl.total_ops();
        Ok(LinkMeasured {
            inserts_per_s: per_s(inserts, st.makespan_ns),
            link_bytes: Some(st.platform.bytes),
            remote_ops_per_insert: w.wl.remote_ops as f64 / inserts.max(1) as f64,
            log_stalls: st.stalls as f64,
            notify_median_us: None,
            events: st.events,
        })
    }
}

impl DhtTestbed for SimDhtTestbed {
    fn backend(&self) -> &'static str {
        "sim"
    }

    fn measure(
        &mut self,
        points: &[LinkPoint],
        progress: &(dyn Fn(u64, u64) + Sync),
    ) -> Result<Vec<LinkMeasured>, ExperimentError> {
        par_map(points, progress, |pt| self.one(pt))
            .into_iter()
            .collect()
    }

    fn meta(&self, _points: &[LinkPoint]) -> serde_json::Map<String, serde_json::Value> {
        let mut m = serde_json::Map::new();
        m.insert(
            "testbed".into(),
            "the AA world: two nodes on the profile's Ethernet link, the window's flows as processes of node 0".into(),
        );
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_robin_takes_every_insert_once_in_flow_order() {
        let pt = LinkPoint {
            scheme: LinkScheme::Rma,
            collision_pct: 0,
            flows: vec![vec![(2, 70), (4, 71)], vec![(3, 72)]],
            slot_bits: 8,
            heap_cells: 16,
            log_bytes: 4096,
            seed: 1,
            reps: 1,
        };
        assert_eq!(pt.window(), 2);
        assert_eq!(pt.round_robin(), [(2, 70), (3, 72), (4, 71)]);
    }
}
