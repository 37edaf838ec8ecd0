//! Simulated and live time, in nanoseconds from an arbitrary origin.
//!
//! The sans-IO engines never read a clock: every `handle_*`/`poll_*` call is given `now`.
//! The simulator advances an [`Instant`] from 0; the live runtime maps a monotonic clock onto it.

use std::ops::{Add, AddAssign, Sub};

/// A point in time, in nanoseconds since the driver's origin.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
)]
pub struct Instant(pub u64);

/// A span of time in nanoseconds.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
)]
pub struct Duration(pub u64);

impl Instant {
    /// The driver's origin.
    pub const ZERO: Instant = Instant(0);
    /// Nanoseconds since the origin.
    pub const fn as_ns(self) -> u64 {
        self.0
    }
    /// Microseconds since the origin, as a float (for reporting).
    pub fn as_us_f64(self) -> f64 {
        self.0 as f64 / 1e3
    }
    /// Time elapsed since `earlier`; zero if `earlier` is later.
    pub fn saturating_since(self, earlier: Instant) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }
}

impl Duration {
    /// No time at all.
    pub const ZERO: Duration = Duration(0);
    /// From nanoseconds.
    pub const fn from_ns(ns: u64) -> Self {
        Duration(ns)
    }
    /// From microseconds.
    pub const fn from_us(us: u64) -> Self {
        Duration(us * 1_000)
    }
    /// From milliseconds.
    pub const fn from_ms(ms: u64) -> Self {
        Duration(ms * 1_000_000)
    }
    /// From fractional microseconds (profile values), rounded to the nearest nanosecond.
    pub fn from_us_f64(us: f64) -> Self {
        Duration((us * 1e3).round().max(0.0) as u64)
    }
    /// Nanoseconds.
    pub const fn as_ns(self) -> u64 {
        self.0
    }
    /// Microseconds as a float (for reporting).
    pub fn as_us_f64(self) -> f64 {
        self.0 as f64 / 1e3
    }
    /// `self * n`, saturating.
    pub fn times(self, n: u64) -> Duration {
        Duration(self.0.saturating_mul(n))
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(d.0))
    }
}
impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        self.0 = self.0.saturating_add(d.0);
    }
}
impl Sub<Instant> for Instant {
    type Output = Duration;
    fn sub(self, earlier: Instant) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }
}
impl Add for Duration {
    type Output = Duration;
    fn add(self, o: Duration) -> Duration {
        Duration(self.0.saturating_add(o.0))
    }
}
impl AddAssign for Duration {
    fn add_assign(&mut self, o: Duration) {
        self.0 = self.0.saturating_add(o.0);
    }
}

/// Time to serialize `bytes` on a link of `gbps` gigabits per second, in nanoseconds (rounded up).
pub fn serialization(bytes: usize, gbps: f64) -> Duration {
    Duration(((bytes as f64 * 8.0) / gbps).ceil() as u64)
}
