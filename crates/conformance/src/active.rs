//! Active Access scenarios: marked pages of one target and the put and get packets that reach
//! its IOMMU, run through every driver's decision (the IOMMU model and the live runtime's
//! memory decorator). What must agree is what the target can observe: each packet's result,
//! the entries its handler pops (in order, with their data), and the final bytes of the
//! region. Addresses are offsets into the target's region; payloads are derived from the
//! access ([`payload`]).

/// Bytes per page.
pub const PAGE: u64 = 4096;

/// The bits of a marked page (spec "IOMMU extensions"): W / R, the logging bits, E, and the
/// access log the page logs into.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Bits {
    /// Puts may write.
    pub w: bool,
    /// Gets may read.
    pub r: bool,
    /// Log puts.
    pub wl: bool,
    /// Log the data of puts.
    pub wld: bool,
    /// Log gets.
    pub rl: bool,
    /// Log the data of gets.
    pub rld: bool,
    /// Faults go to the access log.
    pub e: bool,
    /// The access log (IUID).
    pub iuid: u16,
}

impl Bits {
    /// Active puts (`W=0, WL=1, WLD=1`), gets plain.
    pub const fn active_put(iuid: u16) -> Bits {
        Bits {
            w: false,
            r: true,
            wl: true,
            wld: true,
            rl: false,
            rld: false,
            e: true,
            iuid,
        }
    }
    /// Written and counted (`W=1, WL=1`), gets counted too.
    pub const fn count_all(iuid: u16) -> Bits {
        Bits {
            w: true,
            r: true,
            wl: true,
            wld: false,
            rl: true,
            rld: false,
            e: true,
            iuid,
        }
    }
    /// Gets served and their data logged; puts written and their data logged.
    pub const fn log_data(iuid: u16) -> Bits {
        Bits {
            w: true,
            r: true,
            wl: true,
            wld: true,
            rl: true,
            rld: true,
            e: true,
            iuid,
        }
    }
    /// Not writable, not readable, faults to the access log (`E=1`) or the system log.
    pub const fn protected(e: bool, iuid: u16) -> Bits {
        Bits {
            w: false,
            r: false,
            wl: false,
            wld: false,
            rl: false,
            rld: false,
            e,
            iuid,
        }
    }
    /// The flushing page: gets held until the log is drained (`R=0, RL=1`).
    pub const fn flushing(iuid: u16) -> Bits {
        Bits {
            w: false,
            r: false,
            wl: false,
            wld: false,
            rl: true,
            rld: false,
            e: false,
            iuid,
        }
    }
}

/// One step of a scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// One packet of a put (`put: true`) or get: `len` bytes at `offset` within the access
    /// of `total_len` bytes at region offset `addr`, from `source`, transaction `txn`.
    Packet {
        /// A put (else a get).
        put: bool,
        /// Source process.
        source: u32,
        /// Transaction id at the source.
        txn: u32,
        /// Region offset of the whole access.
        addr: u64,
        /// Length of the whole access.
        total_len: u32,
        /// Offset of this packet in the access.
        offset: u32,
        /// Bytes of this packet.
        len: u32,
    },
    /// The handler of log `iuid` pops up to `n` entries.
    Pop {
        /// The log.
        iuid: u16,
        /// Entries at most.
        n: u32,
    },
}

/// What a packet observably did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PacketResult {
    /// Accepted (written / served, logged per the bits, or a duplicate).
    Ok,
    /// Refused as a fault (a protection error at the source).
    Fault,
    /// Not taken now (a full log, or the flush get held): the source retries it.
    Retry,
}

/// An entry popped by a handler.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Popped {
    /// The log.
    pub iuid: u16,
    /// Entry kind, by its name in crates/aa (`ActivePut`, `PutMeta`, ...).
    pub kind: String,
    /// Source process.
    pub source: u32,
    /// Region offset of the access.
    pub addr: u64,
    /// Length of the access.
    pub access_len: u32,
    /// Logged data.
    pub data: Vec<u8>,
}

/// What the target observes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observed {
    /// One per packet step, in order.
    pub packets: Vec<PacketResult>,
    /// Every popped entry, in order.
    pub popped: Vec<Popped>,
    /// The region's final bytes.
    pub memory: Vec<u8>,
}

/// A scenario: one target region of `pages` pages (initially zero), its logs, its marks, the
/// steps.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// Name, for messages.
    pub name: &'static str,
    /// Pages of the region.
    pub pages: u64,
    /// Access logs: (IUID, bytes).
    pub logs: Vec<(u16, u32)>,
    /// Marked pages: (page index, bits); unmarked pages are plain.
    pub marks: Vec<(u64, Bits)>,
    /// The steps.
    pub steps: Vec<Step>,
}

/// The payload bytes of a put packet: a pattern of the source, transaction and position, so
/// that misplaced or mixed bytes show.
pub fn payload(source: u32, txn: u32, offset: u32, len: u32) -> Vec<u8> {
    (0..len)
        .map(|i| {
            let x = (source as u64) * 131 + (txn as u64) * 31 + (offset + i) as u64;
            (x % 251) as u8 + 1
        })
        .collect()
}

fn put(source: u32, txn: u32, addr: u64, total_len: u32, offset: u32, len: u32) -> Step {
    Step::Packet {
        put: true,
        source,
        txn,
        addr,
        total_len,
        offset,
        len,
    }
}

fn get(source: u32, txn: u32, addr: u64, len: u32) -> Step {
    Step::Packet {
        put: false,
        source,
        txn,
        addr,
        total_len: len,
        offset: 0,
        len,
    }
}

/// The Active Access scenarios every driver runs.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario {
            name: "active puts interleaved, reassembled, duplicates dropped, plain RMA beside",
            pages: 3,
            logs: vec![(1, 4096)],
            marks: vec![(0, Bits::active_put(1))],
            steps: vec![
                put(1, 10, 64, 32, 16, 16),
                put(2, 10, 128, 16, 0, 16),
                put(1, 10, 64, 32, 0, 16),
                put(1, 10, 64, 32, 0, 16),      // a duplicate
                put(3, 1, PAGE + 8, 24, 0, 24), // plain page
                get(3, 2, 64, 16),              // gets of an active-put page are plain
                Step::Pop { iuid: 1, n: 8 },
            ],
        },
        Scenario {
            name: "counting and data logging of puts and gets",
            pages: 3,
            logs: vec![(2, 4096)],
            marks: vec![(0, Bits::count_all(2)), (1, Bits::log_data(2))],
            steps: vec![
                put(1, 1, 0, 32, 0, 16),
                put(1, 1, 0, 32, 16, 16), // one metadata entry per access
                get(2, 1, 8, 16),
                put(2, 2, PAGE + 100, 12, 0, 12),
                get(1, 2, PAGE + 100, 12),
                get(1, 3, 2 * PAGE, 8), // plain
                Step::Pop { iuid: 2, n: 16 },
            ],
        },
        Scenario {
            name: "faults: to the access log (E=1) and to the system log (E=0)",
            pages: 3,
            logs: vec![(3, 4096)],
            marks: vec![
                (0, Bits::protected(true, 3)),
                (1, Bits::protected(false, 3)),
            ],
            steps: vec![
                put(1, 1, 8, 8, 0, 8),
                get(1, 2, 16, 8),
                put(1, 3, PAGE, 8, 0, 8),
                get(1, 4, PAGE, 8),
                put(1, 5, 2 * PAGE, 8, 0, 8), // plain
                Step::Pop { iuid: 3, n: 8 },
            ],
        },
        Scenario {
            name: "back-pressure: a full log refuses packets untouched until the handler pops",
            pages: 2,
            logs: vec![(4, 128)],
            marks: vec![(0, Bits::active_put(4))],
            steps: vec![
                put(1, 1, 0, 40, 0, 40),
                put(1, 2, 64, 40, 0, 40),
                put(1, 2, 64, 40, 0, 40),
                Step::Pop { iuid: 4, n: 1 },
                put(1, 2, 64, 40, 0, 40),
                Step::Pop { iuid: 4, n: 4 },
            ],
        },
        Scenario {
            name: "the active flush: a get on the flushing page is held until the log is drained",
            pages: 2,
            logs: vec![(5, 4096)],
            marks: vec![(0, Bits::active_put(5)), (1, Bits::flushing(5))],
            steps: vec![
                put(1, 1, 0, 8, 0, 8),
                put(1, 2, 8, 8, 0, 8),
                get(1, 3, PAGE, 8),
                Step::Pop { iuid: 5, n: 1 },
                get(1, 3, PAGE, 8),
                Step::Pop { iuid: 5, n: 1 },
                get(1, 3, PAGE, 8),
            ],
        },
    ]
}
