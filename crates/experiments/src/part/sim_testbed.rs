//! The simulated [`Testbed`]: every write is a fresh two-node simulation (seeded, invariants
//! checked), run in parallel; Touch and Pin schemes add the CPU cost models of
//! `unpinned_core::os::cpu` to a transfer into present memory.

use std::collections::HashMap;

use unpinned_core::os::cpu;
use unpinned_core::profile::Profile;
use unpinned_core::time::Duration;
use unpinned_sim::Residence;

use super::harness::{one_write_missing, par_map, setup_write, WriteResult, WriteSetup, DST};
use crate::testbed::{missing_pages, pages, Measured, Scheme, Testbed, Write};
use crate::ExperimentError;

/// The simulator as a [`Testbed`], on one PART profile.
pub struct SimTestbed {
    profile: Profile,
}

impl SimTestbed {
    /// A testbed simulating `profile`.
    pub fn new(profile: &Profile) -> SimTestbed {
        SimTestbed {
            profile: profile.clone(),
        }
    }

    /// The destination pages the simulated write `w` finds missing (one flag per page,
    /// `true` = missing), read from the simulator's memory once the write is set up.
    pub fn missing_before(&self, w: &Write) -> Vec<bool> {
        let (sim, _) = setup_write(&self.profile, &setup(w), &Run::of(w).missing);
        let mem = &sim.node(1).mem;
        (0..pages(w.size))
            .map(|p| !mem.is_present(1, DST + p * unpinned_core::memory::PAGE_BYTES))
            .collect()
    }
}

/// The simulator's setup of `w` (its missing pages are evicted separately).
fn setup(w: &Write) -> WriteSetup {
    let mut s = WriteSetup::new(w.size, w.seed);
    s.policy = w.policy;
    s.send_err = w.send_err;
    s.timeout_us = w.timeout_us;
    s.dst = Residence::Present;
    s
}

/// The simulation a write needs: schemes other than PART share the transfer into present
/// memory, which is simulated once.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Run {
    size: u64,
    seed: u64,
    policy: &'static str,
    send_err: bool,
    timeout_bits: Option<u64>,
    missing: Vec<bool>,
}

impl Run {
    fn of(w: &Write) -> Run {
        let missing = match w.scheme {
            Scheme::Part => missing_pages(w.seed, w.size, w.missing),
            _ => Vec::new(),
        };
        Run {
            size: w.size,
            seed: w.seed,
            policy: w.policy.name(),
            send_err: w.send_err,
            timeout_bits: w.timeout_us.map(f64::to_bits),
            missing,
        }
    }
}

/// CPU cost of `scheme` on `n` pages under `profile`'s model.
fn cpu_cost(profile: &Profile, scheme: Scheme, n: u64) -> Duration {
    let c = &profile.cpu;
    match scheme {
        Scheme::TransferOnly | Scheme::Part => Duration::ZERO,
        Scheme::TouchPres => cpu::touch(c, n, true),
        Scheme::TouchNoPres => cpu::touch(c, n, false),
        Scheme::PinPres => cpu::mlock(c, n, true) + cpu::munlock(c, n),
        Scheme::PinNoPres => cpu::mlock(c, n, false) + cpu::munlock(c, n),
    }
}

impl Testbed for SimTestbed {
    fn backend(&self) -> &'static str {
        "sim"
    }

    fn measure(
        &mut self,
        writes: &[Write],
        progress: &(dyn Fn(u64, u64) + Sync),
    ) -> Result<Vec<Measured>, ExperimentError> {
        // One simulation per distinct setup, in order of first use.
        let mut runs: Vec<(Run, &Write)> = Vec::new();
        let mut index: HashMap<Run, usize> = HashMap::new();
        let mut of_write = Vec::with_capacity(writes.len());
        for w in writes {
            let r = Run::of(w);
            let i = *index.entry(r.clone()).or_insert_with(|| {
                runs.push((r, w));
                runs.len() - 1
            });
            of_write.push(i);
        }
        let results: Vec<Result<WriteResult, ExperimentError>> =
            par_map(&runs, progress, |(r, w)| {
                one_write_missing(&self.profile, &setup(w), &r.missing)
            });
        let results: Vec<WriteResult> = super::collect(results)?;
        let mut counted = vec![false; runs.len()];
        Ok(writes
            .iter()
            .zip(of_write)
            .map(|(w, i)| {
                let r = &results[i];
                let cpu = cpu_cost(&self.profile, w.scheme, pages(w.size));
                let events = if counted[i] { 0 } else { r.events };
                counted[i] = true;
                Measured {
                    latency_us: (cpu + r.latency).as_us_f64(),
                    cpu_us: cpu.as_us_f64(),
                    transfer_us: r.latency_us(),
                    fault_interrupts: r.dst.handler.interrupts,
                    errs: r.dst.engine.errs_sent,
                    resent_bytes: r.src.engine.data_bytes_resent,
                    retransmits_err: r.src.engine.retransmits_err,
                    retransmits_timeout: r.src.engine.retransmits_timeout,
                    events,
                }
            })
            .collect())
    }

    fn meta(&self, _writes: &[Write]) -> serde_json::Map<String, serde_json::Value> {
        serde_json::Map::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testbed::Missing;
    use unpinned_sim::{Sim, SimConfig};

    /// The simulated write finds missing exactly the pages [`missing_pages`] names, and they
    /// are the pages the simulator drew itself before the testbed (`MissingWithProbability`
    /// after the source's bytes), so seeded tables keep their values.
    #[test]
    fn the_simulator_misses_the_drawn_pages_as_it_always_did() {
        let profile = Profile::forth_arm();
        let tb = SimTestbed::new(&profile);
        for seed in [1, 7, 42] {
            for (size, f) in [(64 << 10, 0.3), (1 << 20, 0.6), (4096, 1.0), (16384, 0.0)] {
                let w = Write {
                    missing: Missing::Fraction(f),
                    ..Write::new(Scheme::Part, size, seed)
                };
                let want = missing_pages(seed, size, w.missing);
                assert_eq!(tb.missing_before(&w), want, "seed {seed} size {size} f {f}");
                let mut sim = Sim::new(SimConfig::two_nodes(profile.clone(), seed));
                sim.map(0, 1, super::super::harness::SRC, size, Residence::Present);
                sim.fill_random(0, 1, super::super::harness::SRC, size);
                sim.map(1, 1, DST, size, Residence::MissingWithProbability(f));
                let old: Vec<bool> = (0..pages(size))
                    .map(|p| !sim.node(1).mem.is_present(1, DST + p * 4096))
                    .collect();
                assert_eq!(old, want, "seed {seed} size {size} f {f}");
            }
        }
    }
}
