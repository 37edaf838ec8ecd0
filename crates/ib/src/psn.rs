//! 24-bit packet sequence numbers (odp.md, "RC transport": every packet carries a PSN; the
//! responder expects PSNs in order).
//!
//! PSNs wrap at 2^24, so "before" and "after" are defined modulo 2^24 within half the space
//! (IB spec 9.7.1: the valid window is 2^23 behind / ahead of the expected PSN).

use unpinned_wire::rc::MASK_24;

/// A packet sequence number (always `<= 0xff_ffff`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Psn(u32);

impl Psn {
    /// A PSN from any integer (taken modulo 2^24).
    pub const fn new(v: u32) -> Psn {
        Psn(v & MASK_24)
    }
    /// The raw 24-bit value.
    pub const fn get(self) -> u32 {
        self.0
    }
    /// `self + n` modulo 2^24.
    pub const fn add(self, n: u32) -> Psn {
        Psn(self.0.wrapping_add(n) & MASK_24)
    }
    /// The next PSN.
    pub const fn next(self) -> Psn {
        self.add(1)
    }
    /// Signed distance `self - other` in `[-2^23, 2^23)`: positive when `self` is after `other`.
    pub const fn diff(self, other: Psn) -> i32 {
        let d = self.0.wrapping_sub(other.0) & MASK_24;
        if d >= 1 << 23 {
            d as i32 - (1 << 24)
        } else {
            d as i32
        }
    }
    /// True if `self` comes strictly before `other` (modulo wrap-around).
    pub const fn before(self, other: Psn) -> bool {
        self.diff(other) < 0
    }
    /// True if `self` comes strictly after `other` (modulo wrap-around).
    pub const fn after(self, other: Psn) -> bool {
        self.diff(other) > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn wraps_at_2_pow_24() {
        let last = Psn::new(MASK_24);
        assert_eq!(last.next(), Psn::new(0));
        assert_eq!(Psn::new(0).diff(last), 1);
        assert_eq!(last.diff(Psn::new(0)), -1);
        assert!(last.before(Psn::new(0)));
        assert!(Psn::new(2).after(last));
        assert_eq!(Psn::new(1 << 24 | 5), Psn::new(5));
        assert_eq!(last.add(10), Psn::new(9));
    }

    #[test]
    fn half_window_boundary() {
        let a = Psn::new(0);
        assert_eq!(
            Psn::new(1 << 23).diff(a),
            -(1 << 23),
            "exactly half way counts as behind"
        );
        assert_eq!(Psn::new((1 << 23) - 1).diff(a), (1 << 23) - 1);
    }

    proptest! {
        #[test]
        fn add_then_diff(a in 0..=MASK_24, n in 0u32..(1 << 23)) {
            let p = Psn::new(a);
            prop_assert_eq!(p.add(n).diff(p), n as i32);
            prop_assert_eq!(p.diff(p.add(n)), -(n as i32));
            prop_assert_eq!(p.add(n).after(p), n > 0);
        }
    }
}
