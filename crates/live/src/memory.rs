//! Real process memory behind the engine's [`Memory`] trait.
//!
//! The PART engine (the "NI") reads and writes the application's memory directly, by virtual
//! address, with nothing pinned or registered. Like an NI behind an IOMMU it must never block on
//! a missing page: before touching a page it must *know* that the access will not take a CPU
//! page fault, and otherwise answer [`MemError::NotPresent`] so the engine sends a page-fault
//! NACK and the [fault handler](crate::fault_handler) brings the page in.
//!
//! # Mechanism: one `PAGEMAP_SCAN` per window of a range, pagemap entries as the fallback
//!
//! The first question for an access is answered by the
//! `PAGEMAP_SCAN` ioctl ([`unpinned_os::scan`], Linux 6.7+): one call returns how far the pages from
//! the accessed one on are good (present; for a write, not the zero page), looking
//! [`SCAN_AHEAD_BYTES`] ahead, and that *range verdict* answers the next packets of the same
//! transfer with two comparisons while it is trusted (the same [`RESIDENCY_TTL`] rule as the
//! windows below; dropped by [`LiveMemory::forget`] and bad-page marks). A scan answers a
//! whole range in one system call where the pagemap entries take one `pread` per window, so a
//! large transfer costs a handful of scans per side (the TTL ends most verdicts) instead of
//! many `pread`s. Only the pages at and after a bad one, and every write once the process has
//! forked (the scan cannot see copy-on-write sharing, see [`unpinned_os::scan`]), go through the
//! pagemap entries described next. `memory.pagemap_scan = false` ([`LiveMemory::set_scan`])
//! switches the scan off.
//!
//! # The translation cache: verdicts trusted until the kernel reports a change
//!
//! The TTL exists because a verdict cannot see the page table change after the scan. For
//! watched memory it can: [`unpinned_os::residency_cache`] registers ranges with a userfaultfd in
//! write-protect mode *only for its events* (no page is ever write-protected, so no fault is
//! ever routed to it: first touches, `MADV_POPULATE_WRITE` and copy-on-write of the zero page
//! behave as before, tested), and a reader thread bumps an epoch for every `munmap`,
//! `madvise(MADV_DONTNEED / FREE / REMOVE)` and `mremap` of a watched range *before* that call
//! returns to the application (the kernel blocks the caller until the event is read). A
//! verdict taken inside a watched range carries the epoch read before its scan and is trusted,
//! past the TTL, until the epoch changes; any event drops every verdict of this memory.
//! `munmap` + `mmap` at the same address therefore always scans the new mapping again
//! (`unmap_and_map_at_the_same_address_invalidates_the_cache`, and the runtime-level test in
//! `tests/residency_cache.rs`, both fail without the invalidation).
//!
//! What is watched ([`LiveMemory::watch_exposure`], [`LiveMemory::watch_local`]): exposures of
//! private anonymous memory (anonymity read at `expose`) and local buffers of posts of at least
//! [`LOCAL_WATCH_MIN_BYTES`] that are private anonymous (checked when registered; at most
//! [`LOCAL_WATCH_MAX`], the oldest unregistered first), each registered at its
//! [`REGISTER_AFTER_SCANS`]-th scan (a registration is a system call that takes the mmap lock
//! for writing; a one-shot small exposure never pays it). A watched verdict scans ahead up to
//! the end of the watched range ([`WATCHED_SCAN_AHEAD_BYTES`]): a 4 MiB write into a watched
//! exposure from a watched source costs no scan at all once both are registered. Revoking an
//! exposure unregisters it.
//!
//! What keeps the TTL rule: file and shared mappings (page-cache eviction sends no event),
//! anonymous memory while the system has an active swap area (reclaim to swap sends none;
//! `/proc/swaps` is read at registration and every second), every verdict once the process has
//! forked (copy-on-write sharing), ranges another userfaultfd owns (`EBUSY`, e.g.
//! crates/dsm-live's write protection), and everything when userfaultfd is unavailable
//! (`EPERM`, old kernels): silently, counted in [`MemStats::cache_fallbacks`]. Page migration,
//! NUMA hinting and KSM merging change a present page's entry without an event; the engine
//! then meets at most one transient minor fault, resolved by the kernel. `memory.residency_cache = false`
//! ([`LoopOptions::residency_cache`](crate::runtime::LoopOptions::residency_cache)) switches the cache off.
//!
//! `unpinned live live-residency` compares the cache with the TTL rule and Transfer-Only
//! (measurements: docs/performance.md, "Live runtime: residency checks").
//!
//! Candidates considered for the per-page answer:
//!
//! - `mincore(2)`: for a *file* mapping it reports page-cache residency, not whether this
//!   process has a PTE for the page: a cached but unmapped file page reads as resident and the
//!   access still takes a (minor) CPU fault. For anonymous memory it reports "in RAM", and it
//!   reports the shared zero page (fresh memory that was only read) as resident although a write
//!   to it takes a copy-on-write fault. It cannot tell present from writable. Rejected as the
//!   residency test; kept to tell *unmapped* (`ENOMEM`) from *not present*, which pagemap cannot
//!   (pagemap reads holes as zero entries).
//! - `/proc/self/pagemap`: one 64-bit entry per page, straight from the page table: bit 63
//!   *present*, bit 62 *swapped*, bit 61 *file page or shared anonymous*, bit 56 *exclusively
//!   mapped*. These bits are available without privileges (only the PFN needs root). A page is
//!   safe to **read** when present; safe to **write** when present and either exclusively mapped
//!   (a private anonymous page that is neither the zero page nor shared copy-on-write after a
//!   fork) or a file / shared page. Chosen.
//! - A software translation cache validated by pagemap: a cache that outlives the check cannot
//!   see `munmap`, `madvise(DONTNEED)` or reclaim, which is exactly the stale registration-cache
//!   bug class PART exists to avoid (unless the kernel tells it: the translation cache above,
//!   for the memory it can watch). Otherwise we keep a window only for a bounded time: a `pread`
//!   fetches [`WINDOW_PAGES`] entries at once, and lookups within the window are free during
//!   the engine turn that read it and the turns that *begin* within [`RESIDENCY_TTL`] of the
//!   read (see [`LiveMemory::begin_turn`]); page-ins (the runtime calls [`LiveMemory::forget`]
//!   when the page-in thread reports) and bad-page marks drop every window at once. Before
//!   caller-driven progress a window lived for exactly one turn of the engine thread, a few
//!   dozen packets, i.e. tens of microseconds; turns are now much shorter (a waiting caller
//!   runs one per poll), so the bound is a time of that order rather than a turn: 20 us.
//!   It is the same kind of window as the unavoidable
//!   check-then-copy race below, only longer: a page that leaves within it (munmap,
//!   `MADV_DONTNEED`, reclaim of a file page, migration) is touched by the engine, which
//!   then takes the CPU fault the check tries to avoid (or `SIGSEGV` for a broken `expose`
//!   promise, as below).
//!
//! The cost of a window read is the system call, not the entries: a stream of small data
//! packets pays one system call per window instead of one per packet, and a lookup that hits
//! the window is a few comparisons ([`bench_residency`] measures it; results in
//! docs/performance.md, "Live runtime: residency checks").
//!
//! # Page-in on access (small writes into anonymous memory)
//!
//! [`LiveMemory::set_fill`]: a remote write whose whole transfer is at most a few pages
//! (`LoopOptions::fill_on_access_max_pages`, off by default, opt-in e.g. 4) and whose missing pages lie in a
//! private anonymous exposure is paged in by the engine itself with `MADV_POPULATE_WRITE`
//! (a zero-fill minor fault) and written at once. The protocol's path for the same fault is a
//! page-fault NACK, the same inline page-in, an ERR and the block's retransmission: one round
//! trip more (`bench live` measures both). File-backed memory (a disk read) and
//! larger transfers (the page-in would hold every other transfer) keep the NACK path.
//!
//! # The race that remains, and why it cannot crash the engine
//!
//! A page can leave between the check and the copy (reclaim, `munmap`, `madvise(DONTNEED)` by
//! another thread). For reclaim the copy takes an ordinary (major or minor) fault that the
//! kernel resolves transparently, only slower. For memory that is gone (`munmap` of a buffer
//! under an outstanding transfer, a file truncated under a mapping) the copy itself reports
//! it: every copy to or from application memory goes through [`unpinned_os::safecopy`], which
//! answers the fault instead of letting it kill the process, so the access fails as
//! [`MemError::Unmapped`] naming the address (a write's source: `LocalAccess`; a read's
//! destination: `LocalAccess`; an exposure: a protection NACK), the page is marked bad for
//! [`BAD_PAGE_TTL`] and the runtime names the buffer in the failure. An application that
//! wants to give buffers back while requests are in flight cancels them first
//! (`Runtime::cancel_all`). Without swap, anonymous pages are never reclaimed; file-backed
//! pages can be dropped by the kernel at any time (that path is a major fault, resolved by
//! the kernel).
//!
//! Changing the protection of exposed memory whose pages are present (`mprotect(PROT_NONE)`)
//! is not detected by the check (x86 keeps such PTEs "present" in pagemap); the copy's fault
//! is reported as above.
//!
//! Protection (read-only mappings, `PROT_NONE`) is checked when a range is exposed, from
//! `/proc/self/maps` (see [`check_mapped`]), not per access. A page on which the fault handler's
//! page-in failed for lack of permission (`EINVAL`/`EFAULT`) is remembered as *bad* for a short while and reported [`MemError::Unmapped`], so
//! the access fails with a protection error instead of faulting forever.
//!
//! # Address spaces
//!
//! In the live runtime one process is one protection domain: the only address space is the
//! local process, known under [`LOCAL_PDID`] (or the PDID the runtime was configured with). Any
//! other PDID answers [`MemError::NoSuchDomain`].

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::time::Instant as StdInstant;

use unpinned_core::memory::{page_of, MemError, Memory, Pdid, PAGE_BYTES};
pub use unpinned_os::maps::{check_mapped, check_mapped_kind, is_mapped, MapsError};

/// The PDID of "this process" unless configured otherwise.
pub const LOCAL_PDID: Pdid = 1;

/// Pagemap entries fetched by one `pread` (a 256-byte read covering 128 KiB of address space).
/// One turn moves at most 32 packets (`LoopOptions::batch`), and with 4 KiB packets that is
/// 32 pages, so one read covers a turn. The system call, not the entries, is the cost; larger
/// windows trusted for longer read less often but gave no measurable gain, so the shorter
/// staleness bound was kept (history and measurements: docs/performance.md, "Live runtime:
/// residency checks").
pub const WINDOW_PAGES: usize = 32;

/// How long a pagemap window stays trusted (see the module doc): windows read longer ago are
/// dropped when a turn begins. 20 us: the order of one engine turn before caller-driven
/// progress (`memory.residency_ttl_us` overrides it).
pub const RESIDENCY_TTL: std::time::Duration = std::time::Duration::from_micros(20);

const PM_PRESENT: u64 = 1 << 63;
const PM_SWAPPED: u64 = 1 << 62;
const PM_FILE: u64 = 1 << 61;
const PM_EXCLUSIVE: u64 = 1 << 56;

/// What an access needs from a page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Reading: the page must be present.
    Read,
    /// Writing: the page must be present and writable without a copy-on-write fault.
    Write,
}

/// The state of one page as far as the engine is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageState {
    /// Present, and safe for the access asked.
    Ready,
    /// Mapped but not present (or present read-only copy-on-write, for a write): page-in needed.
    Missing,
    /// Not mapped at all (or marked bad after a failed page-in).
    Unmapped,
}

/// Counters of a [`LiveMemory`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemStats {
    /// `pread`s of pagemap.
    pub pagemap_reads: u64,
    /// Page lookups answered from the turn window.
    pub window_hits: u64,
    /// `mincore` calls (to tell unmapped from missing).
    pub mincore_calls: u64,
    /// Accesses answered `NotPresent`.
    pub not_present: u64,
    /// Accesses answered `Unmapped`.
    pub unmapped: u64,
    /// Bytes written into application memory.
    pub bytes_written: u64,
    /// Bytes read from application memory.
    pub bytes_read: u64,
    /// `PAGEMAP_SCAN` calls (one per window of a range, see [`unpinned_os::scan`]).
    pub range_scans: u64,
    /// Accesses answered from a range verdict of a scan.
    pub range_hits: u64,
    /// Pages paged in on access ([`LiveMemory::set_fill`]).
    pub filled_pages: u64,
    /// Time spent paging in on access, ns.
    pub fill_ns: u64,
    /// Exposed ranges registered with the translation cache's userfaultfd
    /// ([`unpinned_os::residency_cache`]): their verdicts are trusted until an unmap / remove /
    /// remap event instead of for the TTL.
    pub cache_registrations: u64,
    /// Exposed anonymous ranges that could not be registered (another userfaultfd owns them,
    /// no permission, old kernel, active swap): they keep the TTL rule.
    pub cache_fallbacks: u64,
    /// Scans whose verdict was taken under the cache (trusted until an event).
    pub cache_verdicts: u64,
    /// Events the cache's reader thread read (unmap + remove + remap); each one invalidated
    /// every verdict.
    pub cache_events: u64,
    /// Copies that faulted (memory unmapped between the check and the copy, or under a
    /// request the application gave its buffer back from): answered `Unmapped`, never a
    /// `SIGSEGV` ([`unpinned_os::safecopy`]).
    pub copy_faults: u64,
}

/// How the engine reaches application memory: PART's residency check, or one of the two
/// baselines of the spec's comparison (part.md, validation.md) that skip it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum MemoryMode {
    /// PART: check every page (pagemap) before the copy; a missing page is answered
    /// `NotPresent` (page-fault NACK, page-in thread, ERR). The NI never blocks.
    #[default]
    Part,
    /// Transfer-Only: memory is known to be present (pre-touched or pinned by the caller), so
    /// the copy is done without any check. The ideal of the spec's comparison. A page that is
    /// missing anyway is brought in by the CPU fault of the copy (as in `Blocking`).
    TransferOnly,
    /// Blocking: copy without checking and let the CPU take any page fault inside the engine
    /// thread (a minor fault, or a major one that reads from storage). Every other transfer of
    /// the rank waits meanwhile: the head-of-line blocking that `live-hol` measures.
    Blocking,
}

impl MemoryMode {
    /// Name used in tables and on the command line (`part`, `transfer-only`, `blocking`).
    pub fn name(self) -> &'static str {
        match self {
            MemoryMode::Part => "part",
            MemoryMode::TransferOnly => "transfer-only",
            MemoryMode::Blocking => "blocking",
        }
    }
}

/// Pagemap windows kept per turn (replaced round robin).
const WINDOWS: usize = 8;

/// How far past an access one `PAGEMAP_SCAN` looks (see [`unpinned_os::scan`]): 256 KiB, 64 pages.
/// A scan costs one system call plus a small cost per page. The packets that follow in the
/// same transfer find their pages in the verdict while it is trusted ([`RESIDENCY_TTL`],
/// 20 us): even at memcpy speed the engine moves a few hundred KiB in that time, and a scan
/// that looks further only spends the per-page part for nothing (most verdicts would end by
/// the TTL, not by their end).
pub const SCAN_AHEAD_BYTES: u64 = 256 << 10;

/// Range verdicts of scans kept at once (concurrent transfers are served round robin, as for
/// the pagemap windows).
const RANGES: usize = 8;

/// `[start, end)` was seen good for reading (and for writing if `write`) at `at`, while the
/// cache's epoch was `epoch`; `long`: the range is watched, the verdict is trusted past the TTL
/// until the epoch changes.
#[derive(Clone, Copy)]
struct Verdict {
    start: u64,
    end: u64,
    write: bool,
    at: Option<StdInstant>,
    epoch: u64,
    long: bool,
}

impl Verdict {
    const EMPTY: Verdict = Verdict {
        start: 0,
        end: 0,
        write: false,
        at: None,
        epoch: 0,
        long: false,
    };
}

/// An exposure is registered with the cache's userfaultfd at its this-many-th scan, not at
/// `expose`: a registration costs an `ioctl` that takes the mmap lock for writing and may split
/// the mapping (measured in the tests of [`unpinned_os::residency_cache`]), which a short-lived
/// exposure (one message's rendezvous buffer, a single small write) would pay for nothing.
pub const REGISTER_AFTER_SCANS: u32 = 3;

/// How far past an access one scan looks inside a watched range: its verdict lives until an
/// event, so the whole range (up to this) is worth one scan (a few ns per page).
pub const WATCHED_SCAN_AHEAD_BYTES: u64 = 64 << 20;

/// What became of an exposure for the cache.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum WatchState {
    /// Not registered yet: counting scans.
    Pending(u32),
    /// Registered with the userfaultfd.
    Registered,
    /// Registration refused: TTL rule.
    Refused,
}

/// Local buffers of posts (a write's source, a read's destination) at least this long are
/// candidates for the cache too. A large transfer outlives a verdict under the TTL rule
/// (20 us at a few GB/s is ~100 KiB), so its source is scanned again and again, while a
/// watched target needs no scan; a 64 KiB write costs one scan per write, several percent of
/// its time. Smaller
/// buffers are left alone: a scan is a smaller share of nothing, and their registrations
/// would split the heap's mapping into many.
pub const LOCAL_WATCH_MIN_BYTES: u64 = 64 << 10;

/// Local buffers watched at once; the oldest is unregistered when a new one comes (local
/// buffers, unlike exposures, have no revoke that would tell when they stop being used).
pub const LOCAL_WATCH_MAX: usize = 16;

/// An exposed (or, `local`, a posted local) private anonymous range (page aligned).
#[derive(Clone, Copy, Debug)]
struct Watched {
    start: u64,
    end: u64,
    state: WatchState,
    /// A local buffer of a post, not an exposure: its kind of memory is checked (procmap)
    /// when it is registered.
    local: bool,
}

/// `len` pagemap entries from page `base` on, fetched this turn.
#[derive(Clone, Copy)]
struct Window {
    base: u64,
    len: usize,
    /// When it was read (`None`: empty).
    at: Option<StdInstant>,
    e: [u64; WINDOW_PAGES],
}

impl Window {
    const EMPTY: Window = Window {
        base: 0,
        len: 0,
        at: None,
        e: [0; WINDOW_PAGES],
    };
}

/// Errors opening the residency checker.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    /// `/proc/self/pagemap` could not be opened.
    #[error("cannot open /proc/self/pagemap ({0}); the live runtime needs procfs mounted to check page residency")]
    Pagemap(std::io::Error),
}

/// The local process's memory, seen by the engine as an NI behind an IOMMU would see it.
pub struct LiveMemory {
    pdid: Pdid,
    pagemap: File,
    /// Pagemap windows of this turn. Several, because concurrent transfers are served round
    /// robin: with one window, packets of different transfers (different address ranges)
    /// evicted each other's window at every packet, one `pread` per packet.
    windows: [Window; WINDOWS],
    victim: usize,
    /// Range verdicts of `PAGEMAP_SCAN` (same lifetime rules as the windows).
    ranges: [Verdict; RANGES],
    range_victim: usize,
    /// `PAGEMAP_SCAN` works on this kernel (cleared at the first refusal).
    scan: bool,
    /// Page in on access ([`LiveMemory::set_fill`]): private anonymous exposed ranges.
    fill_ranges: Vec<(u64, u64)>,
    /// ... for remote writes whose whole transfer is at most this long (0: never).
    fill_max_bytes: u64,
    bad: Vec<(u64, u64, StdInstant)>,
    stats: MemStats,
    mode: MemoryMode,
    ttl: std::time::Duration,
    /// The translation cache's invalidation (opened at the first registration).
    watch: Option<unpinned_os::residency_cache::Watch>,
    /// The cache is on (`memory.residency_cache`, and the userfaultfd could be opened).
    cache: bool,
    /// Exposed private anonymous ranges, candidates for the cache.
    watched: Vec<Watched>,
    /// What the last scan of [`LiveMemory::covered`] told of the first page after its good
    /// prefix (that page, and whether it is missing or unmapped): the answer `mincore` gave
    /// before, without the system call.
    scan_after: Option<(u64, unpinned_os::scan::After)>,
    /// The last few posted local buffers too small to watch (page-aligned bounds): a scan
    /// window over one of them stops at its end, like one over an exposure.
    small_locals: [(u64, u64); SMALL_LOCALS],
    small_victim: usize,
    /// Addresses where copies faulted, newest last (at most [`FAULTS_KEPT`]), until the
    /// runtime names them in a failure ([`LiveMemory::take_fault`]).
    faults: Vec<u64>,
}

/// Faulted copy addresses remembered for failure messages.
const FAULTS_KEPT: usize = 16;

/// Posted local buffers below [`LOCAL_WATCH_MIN_BYTES`] remembered as scan-window bounds.
const SMALL_LOCALS: usize = 4;

/// How long a page stays marked bad after a failed page-in (the application may fix the
/// protection or remap the range; a later fault record then tries again).
pub const BAD_PAGE_TTL: std::time::Duration = std::time::Duration::from_millis(100);

impl LiveMemory {
    /// Open the residency checker for this process, answering to `pdid`.
    pub fn new(pdid: Pdid) -> Result<LiveMemory, MemoryError> {
        let pagemap = File::open("/proc/self/pagemap").map_err(MemoryError::Pagemap)?;
        unpinned_os::scan::watch_forks();
        Ok(LiveMemory {
            pdid,
            pagemap,
            windows: [Window::EMPTY; WINDOWS],
            victim: 0,
            ranges: [Verdict::EMPTY; RANGES],
            range_victim: 0,
            scan: true,
            fill_ranges: Vec::new(),
            fill_max_bytes: 0,
            bad: Vec::new(),
            stats: MemStats::default(),
            mode: MemoryMode::Part,
            // One turn, as before caller-driven progress; the runtime sets its own bound.
            ttl: std::time::Duration::ZERO,
            watch: None,
            cache: true,
            watched: Vec::new(),
            scan_after: None,
            small_locals: [(0, 0); SMALL_LOCALS],
            small_victim: 0,
            faults: Vec::new(),
        })
    }

    /// The same, with the residency check replaced by `mode` (see [`MemoryMode`]).
    pub fn with_mode(pdid: Pdid, mode: MemoryMode) -> Result<LiveMemory, MemoryError> {
        let mut m = LiveMemory::new(pdid)?;
        m.mode = mode;
        Ok(m)
    }

    /// Trust pagemap windows for `ttl` after their read (the default, `Duration::ZERO`: for
    /// the turn that read them only; the runtime uses [`RESIDENCY_TTL`]).
    pub fn set_ttl(&mut self, ttl: std::time::Duration) {
        self.ttl = ttl;
    }

    /// Use `PAGEMAP_SCAN` range verdicts where the kernel has it (the default; `memory.pagemap_scan`), or pagemap entries only.
    pub fn set_scan(&mut self, on: bool) {
        self.scan = on;
        self.ranges = [Verdict::EMPTY; RANGES];
    }

    /// Page in on access: a remote write (`Memory::write_from`) whose whole transfer is at
    /// most `max_bytes` long and whose missing pages lie in one of `ranges` (private anonymous
    /// exposures: a zero-fill minor fault, never a disk read) pages them in itself
    /// (`MADV_POPULATE_WRITE`) and writes, instead of answering `NotPresent`. That saves the
    /// page-fault NACK, the ERR and the retransmission: one round trip of the protocol. Bounded
    /// by the transfer size so that a large transfer into fresh memory still goes through the
    /// page-in thread and other transfers keep flowing. `max_bytes` 0 switches it off.
    pub fn set_fill(&mut self, ranges: Vec<(u64, u64)>, max_bytes: u64) {
        self.fill_ranges = ranges;
        self.fill_max_bytes = max_bytes;
    }

    /// The pages of `[addr, addr+len)` if a write there may page in on access.
    fn fill_range(&self, addr: u64, len: usize, xfer_len: u64) -> Option<(u64, u64)> {
        if self.mode != MemoryMode::Part || xfer_len > self.fill_max_bytes || len == 0 {
            return None;
        }
        let end = addr.checked_add(len as u64)?;
        let (s, e) = (page_of(addr), end.next_multiple_of(PAGE_BYTES));
        self.fill_ranges
            .iter()
            .any(|&(b, x)| s >= page_of(b) && e <= x.next_multiple_of(PAGE_BYTES))
            .then_some((s, e))
    }

    /// Page `[start, end)` in for writing now; whether it worked.
    fn fill(&mut self, start: u64, end: u64) -> bool {
        let t = StdInstant::now();
        if unpinned_os::populate::page_in(start, end, true).is_err() {
            return false;
        }
        self.stats.filled_pages += (end - start) / PAGE_BYTES;
        self.stats.fill_ns += t.elapsed().as_nanos() as u64;
        // Per-page entries from before the page-in are stale; the range is now good.
        self.paged_in(start, end);
        true
    }

    /// How this memory is reached.
    pub fn mode(&self) -> MemoryMode {
        self.mode
    }

    /// Whether accesses are checked before the copy. The baselines only refuse what is known
    /// bad (failed page-ins); everything else is copied and may fault on the CPU.
    fn checked(&mut self, addr: u64, len: usize, access: Access) -> Result<(), MemError> {
        match self.mode {
            MemoryMode::Part => self.check(addr, len, access),
            MemoryMode::TransferOnly | MemoryMode::Blocking => {
                if addr.checked_add(len as u64).is_none() {
                    self.stats.unmapped += 1;
                    return Err(MemError::Unmapped { addr });
                }
                Ok(())
            }
        }
    }

    /// The PDID of this address space.
    pub fn pdid(&self) -> Pdid {
        self.pdid
    }

    /// Counters so far.
    pub fn stats(&self) -> MemStats {
        let mut s = self.stats;
        if let Some(w) = &self.watch {
            let w = w.stats();
            s.cache_events = w.unmaps + w.removes + w.remaps;
        }
        s
    }

    /// Switch the translation cache on or off (on by default; `memory.residency_cache`); off
    /// drops every watched verdict.
    pub fn set_cache(&mut self, on: bool) {
        self.cache = on;
        if !on {
            for r in &mut self.ranges {
                if r.long {
                    *r = Verdict::EMPTY;
                }
            }
        }
    }

    /// The counters of the cache's userfaultfd reader (`None`: nothing registered yet).
    pub fn cache_stats(&self) -> Option<unpinned_os::residency_cache::WatchStats> {
        self.watch.as_ref().map(|w| w.stats())
    }

    /// `[start, end)` was exposed and is private anonymous memory: a candidate for the
    /// translation cache (registered at its [`REGISTER_AFTER_SCANS`]-th scan, PART mode only).
    pub fn watch_exposure(&mut self, start: u64, end: u64) {
        if self.mode != MemoryMode::Part || end <= start {
            return;
        }
        self.watched.push(Watched {
            start: page_of(start),
            end: end.next_multiple_of(PAGE_BYTES),
            state: WatchState::Pending(0),
            local: false,
        });
    }

    /// The local buffer `[addr, addr+len)` of a post (the source of a write, the destination
    /// of a read): a candidate for the translation cache if it is at least
    /// [`LOCAL_WATCH_MIN_BYTES`] long, registered like an exposure at its
    /// [`REGISTER_AFTER_SCANS`]-th scan if it is private anonymous memory. At most
    /// [`LOCAL_WATCH_MAX`] are kept (the oldest is unregistered). Smaller buffers (the last
    /// four) are only remembered as bounds of scan windows: a scan over one stops at its end.
    pub fn watch_local(&mut self, addr: u64, len: u64) {
        if self.mode != MemoryMode::Part || len == 0 {
            return;
        }
        let Some(end) = addr.checked_add(len) else {
            return;
        };
        let (s, e) = (page_of(addr), end.next_multiple_of(PAGE_BYTES));
        if len < LOCAL_WATCH_MIN_BYTES {
            // Not watched, but its end bounds the scan window (see `covered`).
            if !self.small_locals.contains(&(s, e)) {
                self.small_locals[self.small_victim] = (s, e);
                self.small_victim = (self.small_victim + 1) % SMALL_LOCALS;
            }
            return;
        }
        if !self.cache {
            return;
        }
        if self.watched.iter().any(|w| w.start <= s && e <= w.end) {
            return;
        }
        if self.watched.iter().filter(|w| w.local).count() >= LOCAL_WATCH_MAX {
            if let Some(i) = self.watched.iter().position(|w| w.local) {
                self.drop_watched(i);
            }
        }
        self.watched.push(Watched {
            start: s,
            end: e,
            state: WatchState::Pending(0),
            local: true,
        });
    }

    /// The exposure `[start, end)` of [`LiveMemory::watch_exposure`] was revoked: unregister
    /// what no other exposure still needs.
    pub fn unwatch_exposure(&mut self, start: u64, end: u64) {
        let (s, e) = (page_of(start), end.next_multiple_of(PAGE_BYTES));
        if let Some(i) = self
            .watched
            .iter()
            .position(|w| !w.local && (w.start, w.end) == (s, e))
        {
            self.drop_watched(i);
        }
    }

    /// Forget watched range `i`, unregistering what no other registered range covers.
    fn drop_watched(&mut self, i: usize) {
        let w = self.watched.remove(i);
        let (s, e) = (w.start, w.end);
        if w.state != WatchState::Registered {
            return;
        }
        let Some(watch) = &self.watch else { return };
        // The pieces of [s, e) that no other registered exposure covers.
        let mut pieces = vec![(s, e)];
        for o in self
            .watched
            .iter()
            .filter(|o| o.state == WatchState::Registered)
        {
            pieces = pieces
                .into_iter()
                .flat_map(|(a, b)| {
                    if o.end <= a || o.start >= b {
                        vec![(a, b)]
                    } else {
                        [(a, o.start.max(a)), (o.end.min(b), b)]
                            .into_iter()
                            .filter(|(x, y)| x < y)
                            .collect()
                    }
                })
                .collect();
        }
        for (a, b) in pieces {
            watch.unregister(a, b);
        }
    }

    /// The current epoch of the cache (0 without one).
    #[inline]
    fn epoch(&self) -> u64 {
        self.watch.as_ref().map_or(0, |w| w.epoch())
    }

    /// If `[page, end)` lies in a watched range (registering its exposure if due), the end of
    /// that range: a verdict over it may be trusted until the cache's epoch changes.
    fn watched_end(&mut self, page: u64, end: u64) -> Option<u64> {
        if !self.cache || self.mode != MemoryMode::Part || unpinned_os::scan::forked() {
            return None;
        }
        let i = self
            .watched
            .iter()
            .position(|w| w.start <= page && end <= w.end)?;
        match self.watched[i].state {
            WatchState::Refused => return None,
            WatchState::Registered => {}
            WatchState::Pending(n) if n + 1 < REGISTER_AFTER_SCANS => {
                self.watched[i].state = WatchState::Pending(n + 1);
                return None;
            }
            WatchState::Pending(_) => {
                if self.watch.is_none() {
                    match unpinned_os::residency_cache::Watch::open() {
                        Ok(w) => self.watch = Some(w),
                        Err(_) => {
                            // No userfaultfd for this process: never try again.
                            self.cache = false;
                            self.stats.cache_fallbacks += 1;
                            return None;
                        }
                    }
                }
                let w = self.watched[i];
                // A local buffer was never checked: only private anonymous memory is watched
                // (file pages can be evicted without an event).
                let anon = !w.local
                    || check_mapped_kind(w.start, w.end - w.start, true, false) == Ok(true);
                let ok = anon
                    && self
                        .watch
                        .as_ref()
                        .is_some_and(|x| x.register(w.start, w.end).is_ok());
                if ok {
                    self.watched[i].state = WatchState::Registered;
                    self.stats.cache_registrations += 1;
                } else {
                    self.watched[i].state = WatchState::Refused;
                    self.stats.cache_fallbacks += 1;
                    return None;
                }
            }
        }
        let watch = self.watch.as_ref()?;
        if !watch.usable() {
            return None;
        }
        let covering = watch.covering(page, end);
        if covering.is_none() {
            // Unmapped (or moved) since it was registered: the registration went with the
            // mapping. Memory mapped there again is counted and registered afresh.
            self.watched[i].state = WatchState::Pending(1);
        }
        covering
    }

    /// Start a new engine turn: forget every pagemap window read more than the TTL ago
    /// (all of them with a zero TTL).
    pub fn begin_turn(&mut self) {
        self.begin_turn_with(StdInstant::now)
    }

    /// [`LiveMemory::begin_turn`] at `now`, a time the caller read for the turn anyway (the
    /// engine loop reads the clock once per turn that has work, for both).
    pub fn begin_turn_at(&mut self, now: StdInstant) {
        self.begin_turn_with(|| now)
    }

    fn begin_turn_with(&mut self, now: impl FnOnce() -> StdInstant) {
        // Watched verdicts need no clock, only the epoch: a turn that holds nothing else
        // reads no time.
        let short = self.windows.iter().any(|w| w.at.is_some())
            || self.ranges.iter().any(|r| r.at.is_some() && !r.long);
        let epoch = self.epoch();
        if !short {
            for r in &mut self.ranges {
                if r.at.is_some() && r.epoch != epoch {
                    *r = Verdict::EMPTY;
                }
            }
            return;
        }
        let now = now();
        for r in &mut self.ranges {
            if r.epoch != epoch
                || (!r.long && r.at.is_some_and(|at| now.duration_since(at) >= self.ttl))
            {
                *r = Verdict::EMPTY;
            }
        }
        for w in &mut self.windows {
            if w.at.is_some_and(|at| now.duration_since(at) >= self.ttl) {
                *w = Window::EMPTY;
            }
        }
    }

    /// Forget every pagemap window now (pages were just brought in): the per-page entries and
    /// the range verdicts under the TTL rule. Watched verdicts stay: they only say "good", and
    /// a page-in makes no good page bad.
    pub fn forget(&mut self) {
        for w in &mut self.windows {
            w.len = 0;
            w.at = None;
        }
        for r in &mut self.ranges {
            if !r.long {
                *r = Verdict::EMPTY;
            }
        }
    }

    /// `[start, end)` was just paged in for writing (`MADV_POPULATE_WRITE` succeeded): drop
    /// the per-page entries (they may say "missing") but keep the range verdicts (they only
    /// ever say "good", and a page-in makes no good page bad), and remember the range as good
    /// for the TTL, as a scan right now would. The retransmission after the ERR then needs no
    /// new scan.
    pub fn paged_in(&mut self, start: u64, end: u64) {
        for w in &mut self.windows {
            w.len = 0;
            w.at = None;
        }
        if end > start {
            let v = self.range_victim;
            self.range_victim = (v + 1) % RANGES;
            // Under the TTL rule: the page-in happened before this call, and an event in
            // between would not be told apart by an epoch read now.
            self.ranges[v] = Verdict {
                start: page_of(start),
                end,
                write: true,
                at: Some(StdInstant::now()),
                epoch: self.epoch(),
                long: false,
            };
        }
    }

    fn forget_windows(&mut self) {
        for w in &mut self.windows {
            w.len = 0;
            w.at = None;
        }
        self.ranges = [Verdict::EMPTY; RANGES];
    }

    /// Whether a range verdict, or a new scan, covers `[page, end)` for `access`; a scan that
    /// finds a bad page first returns the good prefix it found, so that the caller checks
    /// only from there on page by page.
    fn covered(&mut self, page: u64, end: u64, access: Access) -> u64 {
        self.scan_after = None;
        let write = access == Access::Write;
        let epoch = self.epoch();
        for r in &self.ranges {
            if r.at.is_some()
                && r.epoch == epoch
                && (r.write || !write)
                && page >= r.start
                && end <= r.end
            {
                self.stats.range_hits += 1;
                return end;
            }
        }
        // Without `PAGEMAP_SCAN`, or for a write once the process forked (a shared
        // copy-on-write page looks present to the scan): per-page entries.
        if !self.scan || (write && unpinned_os::scan::forked()) {
            return page;
        }
        let need = if write {
            unpinned_os::scan::Need::Write
        } else {
            unpinned_os::scan::Need::Read
        };
        let watched = self.watched_end(page, end);
        let ahead = match watched {
            Some(w) => w
                .min(page.saturating_add(WATCHED_SCAN_AHEAD_BYTES))
                .max(end),
            None => {
                // A window past the end of the exposure (or posted buffer) that the range
                // lies in serves no packet of it: the walk stops there. From a fresh page
                // the kernel walks on through the run of missing pages into whatever is
                // mapped next (`examples/miss_check.rs` measures the difference).
                let cap = self
                    .watched
                    .iter()
                    .map(|w| (w.start, w.end))
                    .chain(self.small_locals.iter().copied())
                    .filter(|&(s, e)| s <= page && end <= e)
                    .map(|(_, e)| e)
                    .max()
                    .unwrap_or(u64::MAX);
                page.saturating_add(SCAN_AHEAD_BYTES).min(cap).max(end)
            }
        };
        // Read before the scan: an event during the scan leaves the verdict with an old epoch.
        let epoch = self.epoch();
        self.stats.range_scans += 1;
        let Some(probe) = unpinned_os::scan::probe(&self.pagemap, page, ahead, need) else {
            self.scan = false;
            return page;
        };
        let good = probe.good_end;
        self.scan_after = Some((good, probe.after));
        if good > page {
            let v = self.range_victim;
            self.range_victim = (v + 1) % RANGES;
            self.ranges[v] = Verdict {
                start: page,
                end: good,
                write,
                at: Some(StdInstant::now()),
                epoch,
                long: watched.is_some(),
            };
            self.stats.cache_verdicts += watched.is_some() as u64;
        }
        good.min(end)
    }

    /// Remember `[start, end)` as bad for [`BAD_PAGE_TTL`]: a page-in there failed (`EFAULT`),
    /// so accesses fail as unmapped instead of faulting forever.
    pub fn mark_bad(&mut self, start: u64, end: u64) {
        self.bad.retain(|b| b.2.elapsed() < BAD_PAGE_TTL);
        self.bad.push((page_of(start), end, StdInstant::now()));
        self.forget_windows();
    }

    /// Forget bad ranges overlapping `[start, end)` (e.g. after the application re-mapped it).
    pub fn clear_bad(&mut self, start: u64, end: u64) {
        self.bad.retain(|&(s, e, _)| e <= start || s >= end);
    }

    fn entry(&mut self, page: u64) -> u64 {
        for w in &self.windows {
            if w.len > 0 && page >= w.base {
                let i = ((page - w.base) / PAGE_BYTES) as usize;
                if i < w.len {
                    self.stats.window_hits += 1;
                    return w.e[i];
                }
            }
        }
        self.stats.pagemap_reads += 1;
        let mut raw = [0u8; WINDOW_PAGES * 8];
        let n = self
            .pagemap
            .read_at(&mut raw, (page / PAGE_BYTES) * 8)
            .unwrap_or(0)
            / 8;
        let v = self.victim;
        self.victim = (v + 1) % WINDOWS;
        let w = &mut self.windows[v];
        for (i, e) in w.e.iter_mut().enumerate().take(n) {
            *e = u64::from_ne_bytes(raw[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
        }
        w.base = page;
        w.len = n;
        w.at = Some(StdInstant::now());
        if n == 0 {
            0
        } else {
            w.e[0]
        }
    }

    fn overlaps_bad(&mut self, start: u64, end: u64) -> bool {
        self.bad.retain(|b| b.2.elapsed() < BAD_PAGE_TTL);
        self.bad.iter().any(|&(s, e, _)| s < end && e > start)
    }

    /// The state of the page holding `addr` for `access`.
    pub fn page_state(&mut self, addr: u64, access: Access) -> PageState {
        let page = page_of(addr);
        if !self.bad.is_empty() {
            self.bad.retain(|b| b.2.elapsed() < BAD_PAGE_TTL);
            if self.bad.iter().any(|&(s, e, _)| page >= s && page < e) {
                return PageState::Unmapped;
            }
        }
        let e = self.entry(page);
        let ok =
            e & PM_PRESENT != 0 && (access == Access::Read || e & (PM_EXCLUSIVE | PM_FILE) != 0);
        if ok {
            return PageState::Ready;
        }
        if e & (PM_PRESENT | PM_SWAPPED) != 0 {
            return PageState::Missing;
        }
        self.stats.mincore_calls += 1;
        if is_mapped(page) {
            PageState::Missing
        } else {
            PageState::Unmapped
        }
    }

    /// Check every page of `[addr, addr+len)` for `access`; the first failing page decides.
    pub fn check(&mut self, addr: u64, len: usize, access: Access) -> Result<(), MemError> {
        if len == 0 {
            return Ok(());
        }
        let Some(end) = addr.checked_add(len as u64) else {
            self.stats.unmapped += 1;
            return Err(MemError::Unmapped { addr });
        };
        let mut page = page_of(addr);
        if self.bad.is_empty() || !self.overlaps_bad(page, end) {
            let scanned = self.scan && (access == Access::Read || !unpinned_os::scan::forked());
            page = self.covered(page, end, access);
            // A good prefix that ended before the range (at a page the scan did not see, or
            // at the kernel's 2 MiB walk chunk): scan again from there, a few times at most.
            let mut again = 0;
            while page < end
                && again < 4
                && matches!(self.scan_after, Some((p, unpinned_os::scan::After::Unknown)) if p == page)
            {
                page = self.covered(page, end, access);
                again += 1;
            }
            if page < end && scanned && self.scan {
                // The scan just saw this page not good (missing, or the zero page for a
                // write) or not mapped, and told which (the run it starts, or none); else
                // `mincore` tells, not the per-page pagemap entry (a `pread` on every NACK).
                let mapped = match self.scan_after.take() {
                    Some((p, unpinned_os::scan::After::Missing)) if p == page => true,
                    Some((p, unpinned_os::scan::After::Unmapped)) if p == page => false,
                    _ => {
                        self.stats.mincore_calls += 1;
                        is_mapped(page)
                    }
                };
                return if mapped {
                    self.stats.not_present += 1;
                    Err(MemError::NotPresent { page_addr: page })
                } else {
                    self.stats.unmapped += 1;
                    Err(MemError::Unmapped {
                        addr: page.max(addr),
                    })
                };
            }
        }
        while page < end {
            match self.page_state(page, access) {
                PageState::Ready => {}
                PageState::Missing => {
                    self.stats.not_present += 1;
                    return Err(MemError::NotPresent { page_addr: page });
                }
                PageState::Unmapped => {
                    self.stats.unmapped += 1;
                    return Err(MemError::Unmapped {
                        addr: page.max(addr),
                    });
                }
            }
            page += PAGE_BYTES;
        }
        Ok(())
    }

    /// The address where a copy within `[addr, addr+len)` faulted, if one did since the last
    /// call for that range (the runtime names it in the failed request's message).
    pub fn take_fault(&mut self, addr: u64, len: u64) -> Option<u64> {
        let end = addr.saturating_add(len);
        let i = self.faults.iter().rposition(|&a| a >= addr && a < end)?;
        Some(self.faults.remove(i))
    }

    /// Copy `len` bytes, surviving memory that went away since the check: the address that
    /// faulted is remembered, marked bad for [`BAD_PAGE_TTL`]
    /// (later packets fail without touching it; every verdict is dropped), and the access is
    /// answered [`MemError::Unmapped`].
    ///
    /// # Safety
    ///
    /// As [`unpinned_os::safecopy::copy`]; `app` is the application side (`dst` or `src`).
    #[inline]
    unsafe fn copy(
        &mut self,
        dst: *mut u8,
        src: *const u8,
        len: usize,
        app: u64,
    ) -> Result<(), MemError> {
        // SAFETY: forwarded contract.
        match unsafe { unpinned_os::safecopy::copy(dst, src, len) } {
            Ok(()) => Ok(()),
            Err(f) => Err(self.copy_fault(f.addr.max(app))),
        }
    }

    #[cold]
    fn copy_fault(&mut self, at: u64) -> MemError {
        self.stats.copy_faults += 1;
        self.stats.unmapped += 1;
        self.mark_bad(at, page_of(at) + PAGE_BYTES);
        self.noted(MemError::Unmapped { addr: at })
    }

    /// Remember where an access found memory unmapped (for [`LiveMemory::take_fault`]).
    #[cold]
    fn noted(&mut self, e: MemError) -> MemError {
        if let MemError::Unmapped { addr } = e {
            if self.faults.len() >= FAULTS_KEPT {
                self.faults.remove(0);
            }
            self.faults.push(addr);
        }
        e
    }

    fn domain(&self, pdid: Pdid) -> Result<(), MemError> {
        if pdid == self.pdid {
            Ok(())
        } else {
            Err(MemError::NoSuchDomain(pdid))
        }
    }
}

impl Memory for LiveMemory {
    fn write(&mut self, pdid: Pdid, addr: u64, data: &[u8]) -> Result<(), MemError> {
        self.domain(pdid)?;
        if let Err(e) = self.checked(addr, data.len(), Access::Write) {
            return Err(self.noted(e));
        }
        // SAFETY: in `Part` mode every page of [addr, addr+len) was just seen present and
        // writable without a copy-on-write fault in this process's page table (pagemap); in the
        // baseline modes the range may fault on the CPU, which is safe (the kernel resolves it)
        // because it is mapped and writable: exposures are checked against /proc/self/maps at
        // `expose`, and local buffers are the caller's `unsafe` promise. The engine only
        // writes ranges that the application exposed for writing (or gave as the destination
        // of its own read), which is the application's promise that the memory stays mapped and
        // that it does not hold Rust references to it during the transfer. `data` is the
        // engine's own buffer and cannot overlap application memory being written. Memory
        // unmapped against that promise (or since the check) is reported, not faulted on.
        unsafe { self.copy(addr as usize as *mut u8, data.as_ptr(), data.len(), addr)? };
        self.stats.bytes_written += data.len() as u64;
        Ok(())
    }

    fn write_from(
        &mut self,
        pdid: Pdid,
        addr: u64,
        data: &[u8],
        origin: &unpinned_core::memory::AccessOrigin,
    ) -> Result<(), MemError> {
        let Some((s, e)) = self.fill_range(addr, data.len(), origin.xfer_len) else {
            return self.write(pdid, addr, data);
        };
        // With a scan, page in from its first bad page without the per-page pagemap and
        // `mincore` look-ups (2 syscalls) that would only tell "missing" from "unmapped": the
        // populate tells that too (it fails on unmapped memory, and the write below then finds
        // out as usual).
        if self.domain(pdid).is_ok()
            && self.scan
            && !unpinned_os::scan::forked()
            && !self.overlaps_bad(s, e)
        {
            let good = self.covered(s, e, Access::Write);
            if good < e {
                self.fill(good, e);
            }
        }
        match self.write(pdid, addr, data) {
            Err(MemError::NotPresent { page_addr }) => {
                // A failure (protection changed since `expose`) keeps the NACK path: the page-in
                // thread finds the bad pages and reports them.
                if !self.fill(page_addr.max(s), e) {
                    return Err(MemError::NotPresent { page_addr });
                }
                self.write(pdid, addr, data)
            }
            r => r,
        }
    }

    fn read(&mut self, pdid: Pdid, addr: u64, out: &mut [u8]) -> Result<(), MemError> {
        self.domain(pdid)?;
        if let Err(e) = self.checked(addr, out.len(), Access::Read) {
            return Err(self.noted(e));
        }
        // SAFETY: in `Part` mode every page of [addr, addr+len) was just seen present in this
        // process's page table (in the baseline modes it is mapped and readable by the
        // promises above, and may take a CPU fault the kernel resolves); the range is the source the application gave to a write (or exposed for
        // reading), which it promised to keep mapped until the completion. `out` is the engine's
        // own buffer. Memory unmapped against that promise (or since the check) is reported,
        // not faulted on.
        unsafe {
            self.copy(
                out.as_mut_ptr(),
                addr as usize as *const u8,
                out.len(),
                addr,
            )?
        };
        self.stats.bytes_read += out.len() as u64;
        Ok(())
    }

    /// A real atomic instruction on the word: the application's threads may access it at the
    /// same time (through atomics), so the default read-then-write would lose updates.
    fn atomic(
        &mut self,
        pdid: Pdid,
        addr: u64,
        op: unpinned_core::api::AtomicOp,
    ) -> Result<u64, MemError> {
        use std::sync::atomic::AtomicU64;
        self.domain(pdid)?;
        if !addr.is_multiple_of(8) || addr.checked_add(8).is_none() {
            return Err(MemError::Unmapped { addr });
        }
        if self.mode == MemoryMode::Part {
            self.check(addr, 8, Access::Write)?;
        }
        // SAFETY: `addr` is 8-byte aligned and its page was just seen present and writable
        // (Part mode) in this process, inside a range the application exposed read-write and
        // promised to keep mapped; other threads access such words only through atomics or
        // the engine, so viewing it as an `AtomicU64` for one operation is sound.
        let w = unsafe { &*(addr as usize as *const AtomicU64) };
        Ok(op.apply_atomic(w))
    }
}

/// Result of [`bench_residency`], nanoseconds per page.
#[derive(Clone, Copy, Debug)]
pub struct ResidencyCost {
    /// One `pread` of one pagemap entry per page (no window).
    pub pagemap_single_ns: f64,
    /// Pages looked up through [`LiveMemory::check`] with the turn window (one `pread` per
    /// [`WINDOW_PAGES`] pages).
    pub pagemap_window_ns: f64,
    /// A lookup that hits the current window.
    pub window_hit_ns: f64,
    /// `mincore` of one page.
    pub mincore_ns: f64,
}

/// Measure the cost of the residency check per page over a fresh `pages`-page buffer that is
/// made present first (so no check falls back to `mincore`).
pub fn bench_residency(pages: usize) -> ResidencyCost {
    let pages = pages.max(WINDOW_PAGES);
    let mut buf = vec![1u8; pages * PAGE_BYTES as usize + PAGE_BYTES as usize];
    for i in (0..buf.len()).step_by(PAGE_BYTES as usize) {
        buf[i] = 2;
    }
    let base = page_of(buf.as_ptr() as u64 + PAGE_BYTES - 1);
    let mut mem = LiveMemory::new(LOCAL_PDID).expect("pagemap");
    let reps = 5;
    // Single-entry preads.
    let t = StdInstant::now();
    let mut sink = 0u64;
    let mut one = [0u8; 8];
    for _ in 0..reps {
        for p in 0..pages as u64 {
            let _ = mem
                .pagemap
                .read_at(&mut one, ((base + p * PAGE_BYTES) / PAGE_BYTES) * 8);
            sink ^= u64::from_ne_bytes(one);
        }
    }
    let pagemap_single_ns = t.elapsed().as_nanos() as f64 / (reps * pages) as f64;
    // Windowed checks of the whole buffer, a new turn each time.
    let t = StdInstant::now();
    for _ in 0..reps {
        mem.begin_turn();
        mem.check(base, pages * PAGE_BYTES as usize, Access::Write)
            .expect("present");
    }
    let pagemap_window_ns = t.elapsed().as_nanos() as f64 / (reps * pages) as f64;
    // Window hits: the same page again and again.
    mem.begin_turn();
    let _ = mem.page_state(base, Access::Write);
    let n = 1_000_000u64;
    let t = StdInstant::now();
    for i in 0..n {
        let a = base + (i % WINDOW_PAGES as u64) * PAGE_BYTES;
        if mem.page_state(std::hint::black_box(a), Access::Write) != PageState::Ready {
            sink += 1;
        }
    }
    let window_hit_ns = t.elapsed().as_nanos() as f64 / n as f64;
    let t = StdInstant::now();
    for _ in 0..reps {
        for p in 0..pages as u64 {
            sink ^= is_mapped(base + p * PAGE_BYTES) as u64;
        }
    }
    let mincore_ns = t.elapsed().as_nanos() as f64 / (reps * pages) as f64;
    std::hint::black_box(sink);
    drop(buf);
    ResidencyCost {
        pagemap_single_ns,
        pagemap_window_ns,
        window_hit_ns,
        mincore_ns,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn anon(pages: usize) -> u64 {
        // SAFETY: a fresh private anonymous mapping; the tests own it and unmap it.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                pages * 4096,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        p as u64
    }

    #[test]
    fn fresh_memory_is_missing_then_present_after_touch() {
        let _map_lock = crate::MAP_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let base = anon(4);
        let mut m = LiveMemory::new(LOCAL_PDID).unwrap();
        assert_eq!(
            m.write(LOCAL_PDID, base + 10, &[1, 2, 3]),
            Err(MemError::NotPresent { page_addr: base })
        );
        // SAFETY: base is a live writable mapping of 4 pages.
        unsafe { *(base as *mut u8) = 7 };
        m.begin_turn();
        assert_eq!(m.write(LOCAL_PDID, base + 10, &[1, 2, 3]), Ok(()));
        let mut out = [0u8; 3];
        m.read(LOCAL_PDID, base + 10, &mut out).unwrap();
        assert_eq!(out, [1, 2, 3]);
        // Straddling into page 1, which is missing.
        assert_eq!(
            m.write(LOCAL_PDID, base + 4095, &[1, 2]),
            Err(MemError::NotPresent {
                page_addr: base + 4096
            })
        );
        assert_eq!(m.write(2, base, &[1]), Err(MemError::NoSuchDomain(2)));
        // SAFETY: unmapping our own mapping; nothing references it.
        unsafe { libc::munmap(base as *mut libc::c_void, 4 * 4096) };
    }

    #[test]
    fn windows_live_for_the_ttl_and_die_on_forget() {
        let _map_lock = crate::MAP_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let base = anon(1);
        let mut m = LiveMemory::new(LOCAL_PDID).unwrap();
        m.set_scan(false);
        m.set_ttl(std::time::Duration::from_secs(3600));
        let missing = Err(MemError::NotPresent { page_addr: base });
        assert_eq!(m.check(base, 8, Access::Write), missing);
        // SAFETY: base is a live writable mapping of one page.
        unsafe { *(base as *mut u8) = 7 };
        // Within the TTL the window read before the touch is still trusted...
        m.begin_turn();
        assert_eq!(m.check(base, 8, Access::Write), missing);
        let reads = m.stats().pagemap_reads;
        // ...until the runtime says pages came in.
        m.forget();
        assert_eq!(m.check(base, 8, Access::Write), Ok(()));
        assert_eq!(m.stats().pagemap_reads, reads + 1);
        // With a zero TTL every turn reads again.
        m.set_ttl(std::time::Duration::ZERO);
        m.begin_turn();
        assert_eq!(m.check(base, 8, Access::Write), Ok(()));
        assert_eq!(m.stats().pagemap_reads, reads + 2);
        // SAFETY: unmapping our own mapping.
        unsafe { libc::munmap(base as *mut libc::c_void, 4096) };
    }

    #[test]
    fn range_verdicts_live_for_the_ttl_and_die_on_forget() {
        let _map_lock = crate::MAP_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let base = anon(8);
        // SAFETY: base is a live writable mapping of 8 pages.
        unsafe { std::ptr::write_bytes(base as *mut u8, 1, 8 * 4096) };
        let mut m = LiveMemory::new(LOCAL_PDID).unwrap();
        m.set_ttl(std::time::Duration::from_secs(3600));
        assert_eq!(m.check(base, 100, Access::Write), Ok(()));
        if m.stats().range_scans == 0 || !m.scan {
            eprintln!("no PAGEMAP_SCAN on this kernel: skipped");
            // SAFETY: unmapping our own mapping.
            unsafe { libc::munmap(base as *mut libc::c_void, 8 * 4096) };
            return;
        }
        // One scan covered the rest of the mapping: later packets hit the verdict.
        m.begin_turn();
        assert_eq!(m.check(base + 4096, 3 * 4096, Access::Write), Ok(()));
        assert_eq!(m.check(base + 7 * 4096, 4096, Access::Read), Ok(()));
        assert_eq!(
            (
                m.stats().range_scans,
                m.stats().range_hits,
                m.stats().pagemap_reads
            ),
            (1, 2, 0)
        );
        // The verdict is trusted within the TTL (the race the module doc describes)...
        // SAFETY: dropping pages of our own mapping; nothing references them.
        unsafe {
            libc::madvise(
                (base + 4096) as *mut libc::c_void,
                4096,
                libc::MADV_DONTNEED,
            )
        };
        assert_eq!(m.check(base + 4096, 8, Access::Write), Ok(()));
        // ...until pages are reported to change, or the TTL ends.
        m.forget();
        let missing = Err(MemError::NotPresent {
            page_addr: base + 4096,
        });
        assert_eq!(m.check(base, 8192, Access::Write), missing);
        m.set_ttl(std::time::Duration::ZERO);
        assert_eq!(m.check(base, 8, Access::Write), Ok(()));
        m.begin_turn();
        let scans = m.stats().range_scans;
        assert_eq!(m.check(base, 8, Access::Write), Ok(()));
        assert_eq!(m.stats().range_scans, scans + 1);
        // The good prefix ends at the missing page, the rest is checked page by page.
        assert_eq!(m.check(base + 4096, 8, Access::Read), missing);
        // SAFETY: unmapping our own mapping.
        unsafe { libc::munmap(base as *mut libc::c_void, 8 * 4096) };
    }

    /// Brings an exposure of `pages` pages at `base` under the cache: `REGISTER_AFTER_SCANS`
    /// scans (each after `forget`, which drops verdicts under the TTL rule). `false`: no
    /// userfaultfd or no scan here.
    fn watched(m: &mut LiveMemory, base: u64, pages: u64) -> bool {
        m.set_ttl(std::time::Duration::from_secs(3600));
        m.watch_exposure(base, base + pages * 4096);
        for _ in 0..REGISTER_AFTER_SCANS {
            m.forget();
            assert_eq!(m.check(base, 4096, Access::Write), Ok(()));
        }
        let s = m.stats();
        if s.cache_registrations == 0 || s.cache_verdicts == 0 {
            eprintln!("no PAGEMAP_SCAN or userfaultfd here: skipped");
            return false;
        }
        true
    }

    /// Waits (bounded) until the cache's reader counted `n` events: it counts just after
    /// reading one, and the unmapping thread may run first.
    fn events_reach(m: &LiveMemory, n: u64) -> bool {
        let t0 = std::time::Instant::now();
        while m.stats().cache_events < n {
            if t0.elapsed().as_secs() >= 5 {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
        true
    }

    /// The stale-translation bug class PART avoids: memory unmapped and mapped again at the
    /// same address (fresh, not present) must not be trusted from a verdict of the old
    /// mapping, however long verdicts live. Both ways: `munmap` then `mmap` at the same
    /// address, and `mmap(MAP_FIXED)` over the old mapping.
    #[test]
    fn unmap_and_map_at_the_same_address_invalidates_the_cache() {
        let _map_lock = crate::MAP_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        for fixed in [false, true] {
            // Another test's thread may take the hole between munmap and mmap: try again.
            for attempt in 0.. {
                match remap_once(fixed) {
                    Some(true) => break,
                    Some(false) if attempt < 5 => continue,
                    Some(false) => panic!("the hole was always taken"),
                    None => return,
                }
            }
        }
    }

    /// One round of the test above; `Some(false)`: the address was taken in between,
    /// `None`: no cache here.
    fn remap_once(fixed: bool) -> Option<bool> {
        let base = anon(16);
        // SAFETY: touching our own mapping.
        unsafe { std::ptr::write_bytes(base as *mut u8, 1, 16 * 4096) };
        let mut m = LiveMemory::new(LOCAL_PDID).unwrap();
        if !watched(&mut m, base, 16) {
            // SAFETY: unmapping our own mapping.
            unsafe { libc::munmap(base as *mut libc::c_void, 16 * 4096) };
            return None;
        }
        // The whole exposure was scanned once; later accesses hit, across turns, past any TTL.
        let scans = m.stats().range_scans;
        m.set_ttl(std::time::Duration::ZERO);
        m.begin_turn();
        m.forget();
        assert_eq!(m.check(base + 15 * 4096, 4096, Access::Write), Ok(()));
        assert_eq!(m.stats().range_scans, scans);
        let flags = libc::MAP_PRIVATE
            | libc::MAP_ANONYMOUS
            | if fixed {
                libc::MAP_FIXED
            } else {
                libc::MAP_FIXED_NOREPLACE
            };
        // SAFETY: unmapping our own mapping (or replacing it), then a fresh one at the same
        // address; MAP_FIXED only ever replaces our own mapping.
        let again = unsafe {
            if !fixed {
                libc::munmap(base as *mut libc::c_void, 16 * 4096);
            }
            libc::mmap(
                base as *mut libc::c_void,
                16 * 4096,
                libc::PROT_READ | libc::PROT_WRITE,
                flags,
                -1,
                0,
            )
        };
        if again == libc::MAP_FAILED {
            eprintln!("mmap at {base:#x}: {}", std::io::Error::last_os_error());
            let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
            for l in maps.lines() {
                let Some((a, b)) = l.split(' ').next().and_then(|r| r.split_once('-')) else {
                    continue;
                };
                let (a, b) = (
                    u64::from_str_radix(a, 16).unwrap_or(0),
                    u64::from_str_radix(b, 16).unwrap_or(0),
                );
                if a < base + 16 * 4096 && b > base {
                    eprintln!("  taken by: {l}");
                }
            }
            return Some(false);
        }
        assert_eq!(again as u64, base);
        // No turn began, no forget: only the event can have invalidated the verdict.
        assert_eq!(
            m.check(base + 4096, 8, Access::Write),
            Err(MemError::NotPresent {
                page_addr: base + 4096
            })
        );
        assert!(events_reach(&m, 1));
        // The new mapping is not watched (not exposed): its verdicts keep the TTL rule.
        // SAFETY: touching our own new mapping.
        unsafe { std::ptr::write_bytes(base as *mut u8, 1, 16 * 4096) };
        m.forget();
        let v = m.stats().cache_verdicts;
        assert_eq!(m.check(base, 4096, Access::Write), Ok(()));
        assert_eq!(m.stats().cache_verdicts, v);
        // SAFETY: unmapping our own mapping.
        unsafe { libc::munmap(base as *mut libc::c_void, 16 * 4096) };
        Some(true)
    }

    /// A range another userfaultfd owns (here: another memory checker's) is not watched: the
    /// TTL rule, counted as a fallback, and still correct answers.
    #[test]
    fn a_range_owned_elsewhere_falls_back_to_the_ttl_counted() {
        let _map_lock = crate::MAP_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let base = anon(8);
        // SAFETY: touching our own mapping.
        unsafe { std::ptr::write_bytes(base as *mut u8, 1, 8 * 4096) };
        let mut first = LiveMemory::new(LOCAL_PDID).unwrap();
        if !watched(&mut first, base, 8) {
            // SAFETY: unmapping our own mapping.
            unsafe { libc::munmap(base as *mut libc::c_void, 8 * 4096) };
            return;
        }
        let mut second = LiveMemory::new(LOCAL_PDID).unwrap();
        second.set_ttl(std::time::Duration::from_secs(3600));
        second.watch_exposure(base, base + 8 * 4096);
        for _ in 0..REGISTER_AFTER_SCANS + 1 {
            second.forget();
            assert_eq!(second.check(base, 4096, Access::Write), Ok(()));
        }
        let s = second.stats();
        assert_eq!(
            (s.cache_registrations, s.cache_fallbacks, s.cache_verdicts),
            (0, 1, 0)
        );
        drop(first);
        drop(second);
        // SAFETY: unmapping our own mapping.
        unsafe { libc::munmap(base as *mut libc::c_void, 8 * 4096) };
    }

    /// `madvise(MADV_DONTNEED)` of watched memory: the dropped page is scanned again.
    #[test]
    fn dontneed_invalidates_the_cache_and_revoke_unregisters() {
        let _map_lock = crate::MAP_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let base = anon(8);
        // SAFETY: touching our own mapping.
        unsafe { std::ptr::write_bytes(base as *mut u8, 1, 8 * 4096) };
        let mut m = LiveMemory::new(LOCAL_PDID).unwrap();
        if !watched(&mut m, base, 8) {
            // SAFETY: unmapping our own mapping.
            unsafe { libc::munmap(base as *mut libc::c_void, 8 * 4096) };
            return;
        }
        assert_eq!(m.check(base + 3 * 4096, 4096, Access::Write), Ok(()));
        // SAFETY: dropping a page of our own mapping.
        unsafe {
            libc::madvise(
                (base + 3 * 4096) as *mut libc::c_void,
                4096,
                libc::MADV_DONTNEED,
            )
        };
        assert_eq!(
            m.check(base + 3 * 4096, 8, Access::Write),
            Err(MemError::NotPresent {
                page_addr: base + 3 * 4096
            })
        );
        assert!(events_reach(&m, 1));
        // Revoked: unregistered, so an unmap sends no event (and does not block).
        m.unwatch_exposure(base, base + 8 * 4096);
        let events = m.stats().cache_events;
        // SAFETY: unmapping our own mapping.
        unsafe { libc::munmap(base as *mut libc::c_void, 8 * 4096) };
        std::thread::sleep(std::time::Duration::from_millis(10));
        assert_eq!(m.stats().cache_events, events);
    }

    #[test]
    fn a_scan_window_stops_at_the_end_of_a_small_posted_buffer() {
        let _map_lock = crate::MAP_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let base = anon(2);
        // SAFETY: both pages are ours; touching makes them present.
        unsafe {
            std::ptr::write_volatile(base as *mut u8, 1);
            std::ptr::write_volatile((base + 4096) as *mut u8, 1);
        }
        let scans = |m: &LiveMemory| m.stats().range_scans;
        // Unbounded: the first scan's window covers the second page too.
        let mut m = LiveMemory::new(LOCAL_PDID).unwrap();
        assert_eq!(m.check(base, 8, Access::Read), Ok(()));
        let s0 = scans(&m);
        assert_eq!(m.check(base + 4096, 8, Access::Read), Ok(()));
        if s0 == 0 {
            eprintln!("no PAGEMAP_SCAN on this kernel: skipped");
            return;
        }
        assert_eq!(scans(&m), s0);
        // Bounded by a posted 8 B buffer in the first page: the second page is scanned anew.
        let mut m = LiveMemory::new(LOCAL_PDID).unwrap();
        m.watch_local(base, 8);
        assert_eq!(m.check(base, 8, Access::Read), Ok(()));
        assert_eq!(m.check(base + 4096, 8, Access::Read), Ok(()));
        assert_eq!(scans(&m), 2);
        // SAFETY: unmapping our own mapping.
        unsafe { libc::munmap(base as *mut libc::c_void, 2 * 4096) };
    }

    #[test]
    fn zero_page_is_readable_not_writable() {
        let _map_lock = crate::MAP_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let base = anon(1);
        // SAFETY: reading a fresh anonymous page maps the shared zero page.
        let v = unsafe { std::ptr::read_volatile(base as *const u8) };
        assert_eq!(v, 0);
        let mut m = LiveMemory::new(LOCAL_PDID).unwrap();
        assert_eq!(m.check(base, 8, Access::Read), Ok(()));
        assert_eq!(
            m.check(base, 8, Access::Write),
            Err(MemError::NotPresent { page_addr: base })
        );
        // SAFETY: unmapping our own mapping.
        unsafe { libc::munmap(base as *mut libc::c_void, 4096) };
    }

    #[test]
    fn a_missing_page_costs_one_scan_and_a_page_in_is_trusted_after() {
        let _map_lock = crate::MAP_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let base = anon(2);
        let mut m = LiveMemory::new(LOCAL_PDID).unwrap();
        let s0 = m.stats();
        assert_eq!(
            m.check(base, 4096, Access::Write),
            Err(MemError::NotPresent { page_addr: base })
        );
        let s1 = m.stats();
        if s1.range_scans > s0.range_scans {
            // With PAGEMAP_SCAN: no per-page pagemap read on the NACK path, and the scan's
            // run after the (empty) good prefix tells "missing" without `mincore`.
            assert_eq!(s1.pagemap_reads, s0.pagemap_reads);
            assert_eq!(s1.range_scans, s0.range_scans + 1);
            assert_eq!(s1.mincore_calls, s0.mincore_calls);
        }
        unpinned_os::populate::page_in(base, base + 4096, true).unwrap();
        m.paged_in(base, base + 4096);
        let s2 = m.stats();
        assert_eq!(m.check(base, 4096, Access::Write), Ok(()));
        let s3 = m.stats();
        assert_eq!(
            (s3.range_scans, s3.pagemap_reads),
            (s2.range_scans, s2.pagemap_reads)
        );
        // The second page was not paged in: still missing.
        m.begin_turn();
        assert_eq!(
            m.check(base + 4096, 8, Access::Write),
            Err(MemError::NotPresent {
                page_addr: base + 4096
            })
        );
        // SAFETY: unmapping our own mapping.
        unsafe { libc::munmap(base as *mut libc::c_void, 8192) };
    }

    #[test]
    fn unmapped_is_told_apart() {
        let _map_lock = crate::MAP_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let base = anon(2);
        // SAFETY: unmapping the second page of our own mapping.
        unsafe { libc::munmap((base + 4096) as *mut libc::c_void, 4096) };
        let mut m = LiveMemory::new(LOCAL_PDID).unwrap();
        assert_eq!(
            m.check(base + 4096, 8, Access::Read),
            Err(MemError::Unmapped { addr: base + 4096 })
        );
        assert!(check_mapped(base, 4096, true, true).is_ok());
        assert_eq!(check_mapped_kind(base, 4096, true, true), Ok(true));
        assert_eq!(
            check_mapped(base, 8192, true, true),
            Err(MapsError::Unmapped(base + 4096))
        );
        m.mark_bad(base, base + 4096);
        assert_eq!(
            m.check(base, 1, Access::Read),
            Err(MemError::Unmapped { addr: base })
        );
        // SAFETY: unmapping our own mapping.
        unsafe { libc::munmap(base as *mut libc::c_void, 4096) };
    }
}
