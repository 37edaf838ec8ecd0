//! CPU cost models of the Touch and Pin schemes (spec part.md, "Alternatives").
//!
//! Pure functions of the [`CpuProfile`]: the simulator charges their result as user/kernel CPU
//! time on the sending host before (or after) the transfer. Each formula cites the calibration
//! line of part.md it comes from.

use crate::profile::CpuProfile;
use crate::time::Duration;

/// Touch-Pres / Touch-NoPres: the runtime reads and writes one byte of each of `pages` pages.
///
/// - present: `pages * touch_present_ns` ("Touching a page that is present costs about 100 to
///   200 ns");
/// - not present: `pages * minor_fault_us` ("touching one that is not present costs a minor
///   fault (about 3 us on this platform)"); the fault includes the touch itself.
pub fn touch(cpu: &CpuProfile, pages: u64, present: bool) -> Duration {
    if present {
        Duration::from_ns(cpu.touch_present_ns).times(pages)
    } else {
        Duration::from_us_f64(cpu.minor_fault_us).times(pages)
    }
}

/// Pin-Pres / Pin-NoPres: `mlock` of a buffer of `pages` pages.
///
/// - present: `mlock_call_us + (pages - 1) * mlock_page_ns` ("`mlock`: about 6 us for one
///   page"; the spec gives no per-page figure, so each further page costs a page-table walk,
///   `mlock_page_ns`, an assumption of the profile);
/// - not present: additionally `mlock_nopres_call_us` once ("a start-up of about 3 us per call
///   for a buffer not in memory") plus `pages * minor_fault_us`, because `mlock` faults every
///   page in (the minor fault of the Touch calibration).
///
/// Zero pages cost nothing: a runtime has no buffer to pin and makes no call.
pub fn mlock(cpu: &CpuProfile, pages: u64, present: bool) -> Duration {
    if pages == 0 {
        return Duration::ZERO;
    }
    let mut d = Duration::from_us_f64(cpu.mlock_call_us)
        + Duration::from_ns(cpu.mlock_page_ns).times(pages - 1);
    if !present {
        d += Duration::from_us_f64(cpu.mlock_nopres_call_us)
            + Duration::from_us_f64(cpu.minor_fault_us).times(pages);
    }
    d
}

/// `munlock` of a buffer of `pages` pages after the transfer (pin per transfer): one
/// `munlock_call_us` per call whatever its size (the spec gives no munlock figure; the profile's
/// value is an assumption). Zero pages: no call, no cost.
pub fn munlock(cpu: &CpuProfile, pages: u64) -> Duration {
    if pages == 0 {
        return Duration::ZERO;
    }
    Duration::from_us_f64(cpu.munlock_call_us)
}

/// User-space cost of posting one non-blocking operation (descriptor write): `post_us`, a
/// profile assumption (the spec's `part-isend` measures call return time, not this component).
pub fn post(cpu: &CpuProfile) -> Duration {
    Duration::from_us_f64(cpu.post_us)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Profile;

    fn cpu() -> CpuProfile {
        Profile::forth_arm().cpu
    }

    #[test]
    fn touch_costs() {
        let c = cpu();
        assert_eq!(touch(&c, 1, true), Duration::from_ns(150));
        assert_eq!(touch(&c, 256, true), Duration::from_ns(150 * 256));
        assert_eq!(touch(&c, 1, false), Duration::from_us(3));
        assert_eq!(touch(&c, 1024, false), Duration::from_us(3 * 1024));
        assert_eq!(touch(&c, 0, false), Duration::ZERO);
    }

    #[test]
    fn mlock_costs() {
        let c = cpu();
        assert_eq!(mlock(&c, 1, true), Duration::from_us(6));
        assert_eq!(mlock(&c, 4, true), Duration::from_ns(6000 + 3 * 150));
        // Not present: + 3 us start-up + 3 us minor fault per page.
        assert_eq!(mlock(&c, 1, false), Duration::from_us(12));
        assert_eq!(
            mlock(&c, 4, false),
            Duration::from_ns(6000 + 3 * 150 + 3000 + 4 * 3000)
        );
        assert_eq!(mlock(&c, 0, false), Duration::ZERO);
    }

    #[test]
    fn munlock_and_post() {
        let c = cpu();
        assert_eq!(munlock(&c, 1), Duration::from_us(3));
        assert_eq!(munlock(&c, 1000), Duration::from_us(3));
        assert_eq!(munlock(&c, 0), Duration::ZERO);
        assert_eq!(post(&c), Duration::from_ns(500));
    }
}
