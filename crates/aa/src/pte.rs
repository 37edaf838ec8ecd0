//! The extended IOMMU page-table entry (spec "IOMMU extensions").
//!
//! Beside the usual W / R permission bits every entry carries an IUID naming one access log of
//! one local process, the logging bits WL / WLD / RL / RLD, and E (where faults are recorded).
//! [`PageBits::put_action`] and [`PageBits::get_action`] are the whole decision table, so the
//! IOMMU model and any driver agree on what a bit combination means.

/// Bits of an IUID: 10, so 1024 user domains (access logs) per node (spec).
pub const IUID_BITS: u32 = 10;

/// An IOMMU user domain id: names one access log owned by one local process.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Iuid(u16);

impl Iuid {
    /// Largest valid IUID (1023).
    pub const MAX: u16 = (1 << IUID_BITS) - 1;

    /// An IUID, or `None` if it does not fit in 10 bits.
    pub fn new(v: u16) -> Option<Iuid> {
        (v <= Self::MAX).then_some(Iuid(v))
    }

    /// The raw value (an index into the access-log table).
    pub fn get(self) -> u16 {
        self.0
    }
}

/// Permission and logging bits of one page.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageBits {
    /// Writes (puts) may modify the page.
    pub w: bool,
    /// Reads (gets) may read the page.
    pub r: bool,
    /// Log puts (write log).
    pub wl: bool,
    /// Log the data of puts too (write log data).
    pub wld: bool,
    /// Log gets (read log).
    pub rl: bool,
    /// Log the data returned by gets too (read log data).
    pub rld: bool,
    /// E=1: faults go to the access log; E=0: legacy system fault log.
    pub e: bool,
    /// The access log this page logs into.
    pub iuid: Iuid,
}

/// What the IOMMU does with a put on a page (spec table of bit meanings).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PutAction {
    /// Plain RMA write, nothing logged.
    Write,
    /// `W=1, WL=1, WLD=0`: the put is written and its metadata logged (tracking, counting).
    WriteLogMeta,
    /// `W=1, WL=1, WLD=1`: written, and metadata plus data logged.
    WriteLogData,
    /// `W=0, WL=1, WLD=1`: active put: data is not written; metadata + data go to the log.
    Active,
    /// Not writable and not an active page: a fault, recorded in the access log (E=1) ...
    FaultToAccessLog,
    /// ... or in the system fault log (E=0, legacy behaviour).
    FaultToSystemLog,
}

/// What the IOMMU does with a get on a page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GetAction {
    /// Plain RMA read.
    Read,
    /// `R=1, RL=1, RLD=0`: served and counted (metadata logged).
    ReadLogMeta,
    /// `R=1, RL=1, RLD=1`: served and a copy of the returned data logged locally.
    ReadLogData,
    /// `R=0, RL=1`: an active get: nothing is read, the request is logged for the handler.
    /// (The flushing page of the active flush is such a page.)
    Active,
    /// Not readable: a fault, recorded in the access log (E=1) ...
    FaultToAccessLog,
    /// ... or in the system fault log (E=0).
    FaultToSystemLog,
}

impl PageBits {
    /// A plain read-write page (no logging).
    pub fn plain() -> PageBits {
        PageBits {
            w: true,
            r: true,
            ..PageBits::default()
        }
    }

    /// Active puts into log `iuid` (`W=0, WL=1, WLD=1`); gets stay plain reads.
    pub fn active_put(iuid: Iuid) -> PageBits {
        PageBits {
            w: false,
            r: true,
            wl: true,
            wld: true,
            e: true,
            iuid,
            ..PageBits::default()
        }
    }

    /// Puts are written and their metadata logged (`W=1, WL=1, WLD=0`): tracking, counting.
    pub fn track_puts(iuid: Iuid) -> PageBits {
        PageBits {
            w: true,
            r: true,
            wl: true,
            e: true,
            iuid,
            ..PageBits::default()
        }
    }

    /// Puts and gets are served and both counted (metadata-only logging).
    pub fn count_all(iuid: Iuid) -> PageBits {
        PageBits {
            w: true,
            r: true,
            wl: true,
            rl: true,
            e: true,
            iuid,
            ..PageBits::default()
        }
    }

    /// Gets are served and the returned data logged (`R=1, RL=1, RLD=1`).
    pub fn log_get_data(iuid: Iuid) -> PageBits {
        PageBits {
            w: true,
            r: true,
            rl: true,
            rld: true,
            e: true,
            iuid,
            ..PageBits::default()
        }
    }

    /// The decision for a put (spec "Meaning of the bits for a put").
    pub fn put_action(&self) -> PutAction {
        match (self.w, self.wl, self.wld) {
            (true, false, _) => PutAction::Write,
            (true, true, false) => PutAction::WriteLogMeta,
            (true, true, true) => PutAction::WriteLogData,
            (false, true, true) => PutAction::Active,
            // W=0, WL=1, WLD=0 is classic fault logging; W=0, WL=0 a plain protection fault.
            (false, _, _) => self.fault_put(),
        }
    }

    fn fault_put(&self) -> PutAction {
        if self.e {
            PutAction::FaultToAccessLog
        } else {
            PutAction::FaultToSystemLog
        }
    }

    /// The decision for a get.
    pub fn get_action(&self) -> GetAction {
        match (self.r, self.rl, self.rld) {
            (true, false, _) => GetAction::Read,
            (true, true, false) => GetAction::ReadLogMeta,
            (true, true, true) => GetAction::ReadLogData,
            (false, true, _) => GetAction::Active,
            (false, false, _) if self.e => GetAction::FaultToAccessLog,
            (false, false, _) => GetAction::FaultToSystemLog,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iuid_is_ten_bits() {
        assert!(Iuid::new(1023).is_some());
        assert!(Iuid::new(1024).is_none());
    }

    #[test]
    fn spec_bit_table() {
        let i = Iuid::new(3).unwrap();
        let b = |w, wl, wld| PageBits {
            w,
            wl,
            wld,
            e: true,
            iuid: i,
            ..PageBits::default()
        };
        assert_eq!(b(false, true, true).put_action(), PutAction::Active);
        assert_eq!(b(true, true, false).put_action(), PutAction::WriteLogMeta);
        assert_eq!(
            b(false, true, false).put_action(),
            PutAction::FaultToAccessLog
        );
        let legacy = PageBits {
            e: false,
            ..b(false, true, false)
        };
        assert_eq!(legacy.put_action(), PutAction::FaultToSystemLog);
        assert_eq!(PageBits::plain().put_action(), PutAction::Write);
        let g = |r, rl, rld| PageBits {
            r,
            rl,
            rld,
            e: true,
            iuid: i,
            ..PageBits::default()
        };
        assert_eq!(g(true, true, true).get_action(), GetAction::ReadLogData);
        assert_eq!(g(true, true, false).get_action(), GetAction::ReadLogMeta);
        assert_eq!(g(false, true, false).get_action(), GetAction::Active);
        assert_eq!(PageBits::plain().get_action(), GetAction::Read);
    }
}
