//! The faulty-link wrapper: what happens to each packet a link carries (lost, duplicated,
//! held back past later packets, delayed, corrupted), at the rates of a
//! [`FaultConfig`], from a generator of its own; with counters of the faults injected. The
//! world decides what a fate means for its timing (the draws are [`crate::faults::fate`]'s, so
//! a world that moves onto the kernel keeps its random stream).
//!
//! [`FaultMix`] is the swarm's side: a seed picks which kinds of fault are on and at which
//! rates, rather than every kind at one rate (TigerBeetle's swarm testing: some seeds
//! hammer one fault, others mix them).

use unpinned_core::rng::{Rng, SimRng};
use unpinned_core::time::Duration;

use crate::faults::{fate, Fate, FaultConfig};

/// Faults injected so far, per kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Packets the link carried (including lost ones).
    pub packets: u64,
    /// Lost.
    pub lost: u64,
    /// Delivered twice.
    pub duplicated: u64,
    /// Held back or delayed.
    pub delayed: u64,
    /// One byte flipped.
    pub corrupted: u64,
}

impl LinkStats {
    /// Faults of every kind.
    pub fn faults(&self) -> u64 {
        self.lost + self.duplicated + self.delayed + self.corrupted
    }

    /// Add another link's counters.
    pub fn add(&mut self, o: &LinkStats) {
        self.packets += o.packets;
        self.lost += o.lost;
        self.duplicated += o.duplicated;
        self.delayed += o.delayed;
        self.corrupted += o.corrupted;
    }
}

/// A link's fault injector.
pub struct FaultyLink {
    cfg: FaultConfig,
    rng: SimRng,
    stats: LinkStats,
}

impl FaultyLink {
    /// Faults at `cfg`'s rates, drawn from `rng`.
    pub fn new(cfg: FaultConfig, rng: SimRng) -> FaultyLink {
        FaultyLink {
            cfg,
            rng,
            stats: LinkStats::default(),
        }
    }

    /// The rates in force.
    pub fn config(&self) -> &FaultConfig {
        &self.cfg
    }

    /// Change the rates (a liveness phase turns faults off); the generator goes on.
    pub fn set_config(&mut self, cfg: FaultConfig) {
        self.cfg = cfg;
    }

    /// The fate of the next packet (no draw at all when no fault is configured).
    pub fn fate(&mut self) -> Fate {
        let f = fate(&self.cfg, &mut self.rng);
        let s = &mut self.stats;
        s.packets += 1;
        s.lost += u64::from(f.copies == 0);
        s.duplicated += u64::from(f.copies == 2);
        s.delayed += u64::from(f.extra > Duration::ZERO);
        s.corrupted += u64::from(f.corrupt_at.is_some() && f.copies > 0);
        f
    }

    /// Apply a fate's corruption to the (first) copy of a packet: one byte flipped.
    pub fn corrupt(f: &Fate, bytes: &mut [u8]) {
        if let (Some(i), false) = (f.corrupt_at, bytes.is_empty()) {
            let i = i as usize % bytes.len();
            bytes[i] ^= 0x5a;
        }
    }

    /// Faults injected so far.
    pub fn stats(&self) -> LinkStats {
        self.stats
    }
}

/// A seed's fault mix: each kind of fault on or off, with its own rate.
#[derive(Clone, Copy, Debug)]
pub struct FaultMix;

impl FaultMix {
    /// Draw a mix: each kind (loss, duplication, reordering, delay, corruption) is on with
    /// probability one half, at a rate log-uniform in `[max_rate / 100, max_rate]`; reorder
    /// window and delay up to `max_delay`. About one mix in 32 has no fault at all.
    pub fn draw(rng: &mut SimRng, max_rate: f64, max_delay: Duration) -> FaultConfig {
        let rate = |rng: &mut SimRng| {
            if rng.gen_bool(0.5) {
                max_rate * 10f64.powf(-2.0 * rng.gen::<f64>())
            } else {
                0.0
            }
        };
        let loss = rate(rng);
        let duplicate = rate(rng);
        let reorder = rate(rng);
        let delay = rate(rng);
        let corrupt = rate(rng);
        let window = |rng: &mut SimRng| Duration(rng.gen_range(1..=max_delay.0.max(1)));
        FaultConfig {
            loss,
            duplicate,
            reorder,
            reorder_window: window(rng),
            corrupt,
            delay,
            delay_max: window(rng),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use unpinned_core::rng::rng_for;

    #[test]
    fn counts_what_it_injects_and_matches_the_plain_fate_stream() {
        let cfg = FaultConfig::uniform(0.2);
        let mut link = FaultyLink::new(cfg, rng_for(1, "l"));
        let mut plain = rng_for(1, "l");
        let mut lost = 0;
        for _ in 0..1000 {
            let f = link.fate();
            assert_eq!(f, fate(&cfg, &mut plain));
            lost += u64::from(f.copies == 0);
        }
        let s = link.stats();
        assert_eq!((s.packets, s.lost), (1000, lost));
        assert!(s.lost > 100 && s.duplicated > 50 && s.corrupted > 50 && s.delayed > 50);
        link.set_config(FaultConfig::NONE);
        assert_eq!(link.fate(), Fate::INTACT);
        assert_eq!(link.stats().faults(), s.faults());
    }

    #[test]
    fn mixes_differ_by_seed_and_stay_in_range() {
        let mut kinds_off = 0;
        for seed in 0..200 {
            let m = FaultMix::draw(&mut rng_for(seed, "mix"), 0.05, Duration::from_us(20));
            for r in [m.loss, m.duplicate, m.reorder, m.delay, m.corrupt] {
                assert!((0.0..=0.05).contains(&r));
                kinds_off += u32::from(r == 0.0);
            }
            assert!(m.reorder_window.0 >= 1 && m.delay_max <= Duration::from_us(20));
        }
        assert!(
            (300..700).contains(&kinds_off),
            "{kinds_off} kinds off of 1000"
        );
    }
}
