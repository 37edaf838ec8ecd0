//! The RNR NAK timer field (odp.md, "RNR NAK": the *minimal RNR NAK delay* is a software
//! setting). IB encodes it as a 5-bit code (IB spec table 45); this module maps code <-> delay.

use unpinned_core::time::Duration;

/// Delay of each 5-bit code, in microseconds (IB spec table 45; code 0 is the longest).
const TABLE_US: [u64; 32] = [
    655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1_280, 1_920, 2_560, 3_840,
    5_120, 7_680, 10_240, 15_360, 20_480, 30_720, 40_960, 61_440, 81_920, 122_880, 163_840,
    245_760, 327_680, 491_520,
];

/// The delay a timer code stands for (codes above 31 are taken modulo 32).
pub fn delay_of(code: u8) -> Duration {
    Duration::from_us(TABLE_US[usize::from(code & 0x1f)])
}

/// The smallest code whose delay is at least `min` (what a user asking for "at least `min`"
/// gets); the longest code 0 if nothing is long enough.
pub fn code_for(min: Duration) -> u8 {
    (1u8..32)
        .filter(|&c| delay_of(c) >= min)
        .min_by_key(|&c| delay_of(c))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn spec_values() {
        assert_eq!(code_for(Duration::from_us(10)), 1);
        assert_eq!(code_for(Duration::from_us(640)), 12);
        assert_eq!(code_for(Duration::from_us(1280)), 14);
        assert_eq!(delay_of(14), Duration::from_us(1280));
        assert_eq!(code_for(Duration::from_us(1000)), 14, "rounds up");
        assert_eq!(code_for(Duration::from_ms(600)), 0);
        for c in 1..32u8 {
            assert_eq!(code_for(delay_of(c)), c);
        }
    }
}
