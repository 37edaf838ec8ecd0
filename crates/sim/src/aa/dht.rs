//! The DHT workload (spec "Use cases: Distributed hash table") on the AA model.
//!
//! Every process inserts `ops` keys into volumes of random processes. A share `collision` of
//! the inserts aims at slots that are already occupied (each volume is prefilled in a small
//! region of `PREFILL` slots), the rest at random slots of the 2^21-slot table, so the
//! collision ratio is a controlled parameter, as in the spec, and the collision path really
//! runs. RMA inserts run `unpinned_aa::dht::RmaInsert` op by op against the real volume words
//! (interleaving with every other insert in flight); AA inserts are one active put, the
//! target's handler runs `Volume::local_insert`; AM inserts are one message with the same
//! handler.

use rand::Rng;
use unpinned_aa::atomics::AtomicOp;
use unpinned_aa::dht::{DhtMap, RemoteOp, RmaInsert, Volume, VolumeLayout};
use unpinned_aa::log::EntryKind;
use unpinned_core::rng::rng_for;

use super::world::{AppOp, Handled, Workload};
use super::Scheme;

/// Slots of each volume that are occupied before the run (collision targets).
pub const PREFILL: u32 = 64;
/// Address of every volume (each in its own process's address space).
pub const VOLUME_BASE: u64 = 0x10_0000_0000;

/// DHT parameters.
#[derive(Clone, Copy, Debug)]
pub struct DhtParams {
    /// Inserts per process.
    pub ops: u32,
    /// Share of inserts that hit an occupied slot (0..1).
    pub collision: f64,
    /// log2 of the table slots per volume (spec: 21).
    pub slot_bits: u32,
    /// Overflow heap cells per volume.
    pub heap_cells: u32,
    /// Computation between inserts, ns (the spec's computation ratio).
    pub compute_ns: u64,
    /// Master seed.
    pub seed: u64,
}

impl DhtParams {
    /// Spec volumes (2^21 slots), `ops` inserts per process at `collision`.
    pub fn new(ops: u32, collision: f64, seed: u64) -> DhtParams {
        DhtParams {
            ops,
            collision,
            slot_bits: 21,
            heap_cells: 1 << 19,
            compute_ns: 0,
            seed,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Rma,
    Aa,
    Am,
}

struct ProcState {
    keys: Vec<(u64, u32, u32)>,
    next: usize,
    rma: Option<(u32, RmaInsert)>,
    computed: bool,
    flushed: bool,
}

/// The DHT on the model.
pub struct DhtWorkload {
    map: DhtMap,
    /// Volume layout (same in every process).
    pub layout: VolumeLayout,
    /// One volume per process.
    pub vols: Vec<Volume>,
    procs: Vec<ProcState>,
    mode: Mode,
    compute_ns: u64,
    /// Inserts that took the collision path (RMA: observed by the CAS).
    pub collided: u64,
    /// Inserts completed (RMA) or handled (AA/AM).
    pub inserted: u64,
    /// Remote operations issued (active puts, AM sends, atomics, puts, gets; flushes not
    /// counted).
    pub remote_ops: u64,
}

impl DhtWorkload {
    /// `procs` processes running `scheme`.
    pub fn new(procs: u32, scheme: Scheme, p: DhtParams) -> DhtWorkload {
        let map = DhtMap {
            procs,
            slot_bits: p.slot_bits,
        };
        let layout = VolumeLayout {
            base: VOLUME_BASE,
            table_slots: 1 << p.slot_bits,
            heap_cells: p.heap_cells,
        };
        let mut vols: Vec<Volume> = (0..procs).map(|_| Volume::new(layout)).collect();
        for (t, v) in vols.iter_mut().enumerate() {
            for s in 0..PREFILL {
                // Prefill keys use unique part 0x8000_0000+ so they never equal inserted ones.
                v.local_insert(prefill_key(map, t as u32, s), s)
                    .expect("prefill fits");
            }
        }
        let mut uniq = 1u32;
        let state = (0..procs)
            .map(|i| {
                let mut rng = rng_for(p.seed, &format!("aa.dht.keys.{i}"));
                let keys = (0..p.ops)
                    .map(|_| {
                        let target = rng.gen_range(0..procs);
                        let slot = if rng.gen_bool(p.collision) {
                            rng.gen_range(0..PREFILL)
                        } else {
                            rng.gen_range(PREFILL..layout.table_slots)
                        };
                        uniq += 1;
                        (map.make_key(uniq, target, slot), target, slot)
                    })
                    .collect();
                ProcState {
                    keys,
                    next: 0,
                    rma: None,
                    computed: false,
                    flushed: false,
                }
            })
            .collect();
        let mode = match scheme {
            Scheme::Rma => Mode::Rma,
            s if s.is_am() => Mode::Am,
            _ => Mode::Aa,
        };
        DhtWorkload {
            map,
            layout,
            vols,
            procs: state,
            mode,
            compute_ns: p.compute_ns,
            collided: 0,
            inserted: 0,
            remote_ops: 0,
        }
    }

    /// Processes `0..inserters` insert `p.ops` keys each, all into process `target`'s volume;
    /// the other processes only own (empty) volumes (the spec's one-inserter link check).
    /// The keys are [`single_target_draws`] of `p`.
    pub fn single_target(
        procs: u32,
        inserters: u32,
        target: u32,
        scheme: Scheme,
        p: DhtParams,
    ) -> DhtWorkload {
        let draws = single_target_draws(p.seed, inserters, p.ops, p.collision, 1 << p.slot_bits);
        DhtWorkload::with_draws(procs, target, scheme, p, &draws)
    }

    /// [`DhtWorkload::single_target`] with the draws given: process `i` inserts the keys of
    /// `draws[i]` (unique part, slot), in order, into process `target`'s volume.
    pub fn with_draws(
        procs: u32,
        target: u32,
        scheme: Scheme,
        p: DhtParams,
        draws: &[Vec<(u32, u32)>],
    ) -> DhtWorkload {
        let mut w = DhtWorkload::new(procs, scheme, DhtParams { ops: 0, ..p });
        for (i, d) in draws.iter().enumerate() {
            w.procs[i].keys = d
                .iter()
                .map(|&(uniq, slot)| (w.map.make_key(uniq, target, slot), target, slot))
                .collect();
        }
        w
    }

    /// All keys each process inserts (for references).
    pub fn keys(&self) -> impl Iterator<Item = (u64, u32, u32)> + '_ {
        self.procs.iter().flat_map(|p| p.keys.iter().copied())
    }

    /// The sequential reference: the same prefill and keys inserted one after another.
    pub fn reference(&self) -> Vec<Volume> {
        let mut vols: Vec<Volume> = (0..self.vols.len())
            .map(|_| Volume::new(self.layout))
            .collect();
        for (t, v) in vols.iter_mut().enumerate() {
            for s in 0..PREFILL {
                v.local_insert(prefill_key(self.map, t as u32, s), s)
                    .expect("prefill fits");
            }
        }
        for (k, t, s) in self.keys() {
            vols[t as usize].local_insert(k, s).expect("reference fits");
        }
        vols
    }

    /// Compare with the sequential reference; an error names the first difference.
    pub fn check(&self) -> Result<(), String> {
        for (t, (v, r)) in self.vols.iter().zip(self.reference()).enumerate() {
            v.check().map_err(|e| format!("volume {t}: {e}"))?;
            let contents = |v: &Volume| v.contents().map_err(|e| format!("volume {t}: {e}"));
            if contents(v)? != contents(&r)? {
                return Err(format!("volume {t} differs from the sequential reference"));
            }
        }
        Ok(())
    }

    /// Total inserts issued.
    pub fn total_ops(&self) -> u64 {
        self.procs.iter().map(|p| p.keys.len() as u64).sum()
    }
}

impl DhtWorkload {
    /// Process `p`'s next operation.
    fn next_op(&mut self, p: u32, result: Option<u64>) -> Option<AppOp> {
        let layout = self.layout;
        let st = &mut self.procs[p as usize];
        if self.mode == Mode::Rma {
            if let Some((target, ins)) = &mut st.rma {
                if let Some(r) = result {
                    ins.on_result(r).expect("heap sized for the run");
                }
                if ins.done() {
                    if ins.collided() {
                        self.collided += 1;
                    }
                    self.inserted += 1;
                    st.rma = None;
                } else {
                    let target = *target;
                    return Some(rma_op(ins, target));
                }
            }
        }
        if self.compute_ns > 0 && !st.computed && st.next < st.keys.len() {
            st.computed = true;
            return Some(AppOp::Compute(self.compute_ns));
        }
        st.computed = false;
        let Some(&(key, target, slot)) = st.keys.get(st.next) else {
            if st.flushed {
                return None;
            }
            st.flushed = true;
            return Some(AppOp::FlushAll);
        };
        st.next += 1;
        let addr = layout.slot_key(slot);
        Some(match self.mode {
            Mode::Rma => {
                let mut ins = RmaInsert::new(layout, key, slot);
                let op = rma_op(&mut ins, target);
                st.rma = Some((target, ins));
                op
            }
            Mode::Aa => AppOp::ActivePut {
                target,
                addr,
                value: key,
                bytes: 8,
            },
            Mode::Am => AppOp::AmSend {
                target,
                addr,
                value: key,
                bytes: 8,
                reply_bytes: None,
            },
        })
    }
}

impl Workload for DhtWorkload {
    fn next(&mut self, p: u32, result: Option<u64>) -> Option<AppOp> {
        let op = self.next_op(p, result);
        if let Some(
            AppOp::ActivePut { .. }
            | AppOp::AmSend { .. }
            | AppOp::Atomic { .. }
            | AppOp::Put { .. }
            | AppOp::Get { .. },
        ) = op
        {
            self.remote_ops += 1;
        }
        op
    }

    fn atomic(&mut self, target: u32, addr: u64, op: AtomicOp) -> u64 {
        self.vols[target as usize].atomic(addr, op)
    }

    fn put(&mut self, target: u32, addr: u64, value: u64) {
        self.vols[target as usize].store(addr, value);
    }

    fn get(&mut self, target: u32, addr: u64) -> u64 {
        self.vols[target as usize].load(addr)
    }

    fn handle(
        &mut self,
        target: u32,
        _source: u32,
        _kind: EntryKind,
        addr: u64,
        value: u64,
    ) -> Handled {
        let slot = self
            .layout
            .slot_of(addr)
            .expect("active puts go to slot addresses");
        let acc = self.vols[target as usize]
            .local_insert(value, slot)
            .expect("heap sized for the run");
        if acc > 1 {
            self.collided += 1;
        }
        self.inserted += 1;
        Handled::accesses(acc)
    }
}

/// The inserts of the one-inserter workload, drawn the same way for every backend: for each
/// of `inserters` flows, `ops` (unique part, slot) pairs from the seed's `aa.dht.single.{i}`
/// stream. A share `collision` aims at the [`PREFILL`] slots that are occupied before the run,
/// the rest at the other slots of `table_slots`; unique parts count from 2 across flows.
pub fn single_target_draws(
    seed: u64,
    inserters: u32,
    ops: u32,
    collision: f64,
    table_slots: u32,
) -> Vec<Vec<(u32, u32)>> {
    let mut uniq = 1u32;
    (0..inserters)
        .map(|i| {
            let mut rng = rng_for(seed, &format!("aa.dht.single.{i}"));
            (0..ops)
                .map(|_| {
                    let slot = if rng.gen_bool(collision) {
                        rng.gen_range(0..PREFILL)
                    } else {
                        rng.gen_range(PREFILL..table_slots)
                    };
                    uniq += 1;
                    (uniq, slot)
                })
                .collect()
        })
        .collect()
}

/// The key of prefilled slot `slot` of `target`'s volume (unique parts from `0x8000_0000`,
/// never equal to an inserted key's).
pub fn prefill_key(map: DhtMap, target: u32, slot: u32) -> u64 {
    map.make_key(0x8000_0000 + slot, target, slot)
}

/// The model operation for the insert's next remote op. Puts are non-blocking, so their
/// (empty) result is fed at once; the flush that follows waits for their acks.
fn rma_op(ins: &mut RmaInsert, target: u32) -> AppOp {
    match ins.op().expect("not done") {
        RemoteOp::Atomic { addr, op } => AppOp::Atomic { target, addr, op },
        RemoteOp::Put { addr, value } => {
            ins.on_result(0).expect("put has no result");
            AppOp::Put {
                target,
                addr,
                value,
                bytes: 8,
            }
        }
        RemoteOp::Flush => AppOp::Flush,
        RemoteOp::Get { addr } => AppOp::Get {
            target,
            addr,
            bytes: 8,
        },
    }
}

/// Run the DHT on `nodes` nodes with `scheme`; returns (stats, workload) after checking the
/// content against the sequential reference.
pub fn run_dht(
    prof: &unpinned_aa::profile::AaProfile,
    cfg: super::WorldConfig,
    p: DhtParams,
) -> Result<(super::RunStats, DhtWorkload), String> {
    let procs = cfg.nodes * cfg.app_per_node(prof);
    let wl = DhtWorkload::new(procs, cfg.scheme, p);
    let seed = cfg.seed;
    let mut w = super::AaWorld::new(prof, cfg, wl);
    let stats = w.run()?;
    let wl = w.wl;
    if wl.inserted != wl.total_ops() {
        return Err(format!(
            "{} of {} inserts done (seed {seed})",
            wl.inserted,
            wl.total_ops()
        ));
    }
    wl.check().map_err(|e| format!("{e} (seed {seed})"))?;
    Ok((stats, wl))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aa::WorldConfig;
    use unpinned_aa::profile::AaProfile;

    const ALL: [Scheme; 8] = [
        Scheme::AaInt,
        Scheme::AaPoll,
        Scheme::AaSp,
        Scheme::Rma,
        Scheme::Am,
        Scheme::AmExp,
        Scheme::AmOnload { cores: 4 },
        Scheme::AmInts { batch: 10 },
    ];

    #[test]
    fn every_scheme_inserts_exactly_the_keys() {
        let prof = AaProfile::cray_xe6();
        for s in ALL {
            let cfg = WorldConfig::new(&prof, 2, s, 3);
            let (st, wl) = run_dht(&prof, cfg, DhtParams::new(40, 0.25, 3))
                .unwrap_or_else(|e| panic!("{}: {e}", s.name()));
            let rate = wl.total_ops() as f64 / st.makespan_ns as f64 * 1e9;
            eprintln!(
                "{:10} {:4} rate {:.3e}/s collided {} events {}",
                s.name(),
                s.variant(),
                rate,
                wl.collided,
                st.events
            );
        }
    }

    #[test]
    fn packet_faults_and_backpressure_keep_the_content() {
        let prof = AaProfile::cray_xe6();
        for seed in 0..6u64 {
            for s in [Scheme::AaPoll, Scheme::AaInt, Scheme::Rma, Scheme::Am] {
                let mut cfg = WorldConfig::new(&prof, 2, s, seed);
                cfg.loss = 0.05;
                cfg.duplicate = 0.05;
                // A log of 4 entries: back-pressure all the time.
                cfg.log_bytes = 4 * 40;
                let (st, _) = run_dht(&prof, cfg, DhtParams::new(30, 0.25, seed))
                    .unwrap_or_else(|e| panic!("{} seed {seed}: {e}", s.name()));
                // AA-Poll's agent drains within a poll and may never fill even a tiny log; a
                // computing process that handles its own log falls behind while it inserts.
                if s.recv_on_app() {
                    assert!(
                        st.stalls > 0,
                        "{} seed {seed}: back-pressure exercised",
                        s.name()
                    );
                }
            }
        }
    }
}
