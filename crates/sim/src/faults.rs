//! Packet fault injection, applied to every packet a link carries (smoltcp's `FaultInjector`
//! idea, as a wrapper around the link rather than inside any engine).

use unpinned_core::rng::{Rng, SimRng};
use unpinned_core::time::Duration;

/// Rates (probabilities per packet) of each fault.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct FaultConfig {
    /// The packet vanishes.
    pub loss: f64,
    /// The packet is delivered twice.
    pub duplicate: f64,
    /// The packet is held back by up to `reorder_window` (overtaken by later packets).
    pub reorder: f64,
    /// How far a reordered packet may be held back.
    pub reorder_window: Duration,
    /// One byte of the packet is flipped (the receiver sees a checksum error).
    pub corrupt: f64,
    /// The packet is delayed by up to `delay_max`.
    pub delay: f64,
    /// Largest extra delay.
    pub delay_max: Duration,
}

impl FaultConfig {
    /// No faults.
    pub const NONE: FaultConfig = FaultConfig {
        loss: 0.0,
        duplicate: 0.0,
        reorder: 0.0,
        reorder_window: Duration(0),
        corrupt: 0.0,
        delay: 0.0,
        delay_max: Duration(0),
    };

    /// Every kind of fault at rate `p` (reorder window and delay up to 20 us).
    pub fn uniform(p: f64) -> FaultConfig {
        FaultConfig {
            loss: p,
            duplicate: p,
            reorder: p,
            reorder_window: Duration::from_us(20),
            corrupt: p,
            delay: p,
            delay_max: Duration::from_us(20),
        }
    }

    /// True if any fault can happen.
    pub fn any(&self) -> bool {
        self.loss > 0.0
            || self.duplicate > 0.0
            || self.reorder > 0.0
            || self.corrupt > 0.0
            || self.delay > 0.0
    }
}

/// What happens to one packet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fate {
    /// Copies delivered (0 = lost, 2 = duplicated).
    pub copies: u8,
    /// Extra delay of the (first) copy.
    pub extra: Duration,
    /// Flip this byte index (modulo length) of the first copy.
    pub corrupt_at: Option<u32>,
}

impl Fate {
    /// Delivered once, on time, untouched: the fate of every packet when no fault is
    /// configured.
    pub const INTACT: Fate = Fate {
        copies: 1,
        extra: Duration::ZERO,
        corrupt_at: None,
    };
}

/// Decide a packet's fate.
pub fn fate(cfg: &FaultConfig, rng: &mut SimRng) -> Fate {
    let mut f = Fate::INTACT;
    if !cfg.any() {
        return f;
    }
    if rng.gen::<f64>() < cfg.loss {
        f.copies = 0;
        return f;
    }
    if rng.gen::<f64>() < cfg.duplicate {
        f.copies = 2;
    }
    if rng.gen::<f64>() < cfg.reorder && cfg.reorder_window.0 > 0 {
        f.extra += Duration(rng.gen_range(1..=cfg.reorder_window.0));
    }
    if rng.gen::<f64>() < cfg.delay && cfg.delay_max.0 > 0 {
        f.extra += Duration(rng.gen_range(1..=cfg.delay_max.0));
    }
    if rng.gen::<f64>() < cfg.corrupt {
        f.corrupt_at = Some(rng.gen());
    }
    f
}
