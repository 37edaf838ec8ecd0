//! The live runtime's configuration: [`Config`], one serde struct that is the only input of
//! [`crate::Runtime::new`].
//!
//! The runtime reads no environment variable. The job's identity (rank, size, bootstrap
//! directory, transport) comes from the launcher through [`crate::edge`]; every knob is a
//! field of [`Config`], addressed by its dotted path (`progress.spin_us`), with units last in
//! its name. Overrides use one syntax everywhere: `unpinned run --set a.b=v` and the
//! `UNPINNED_SET` variable ([`crate::edge::ENV_SET`]) both take `a.b=v` assignments, applied by
//! [`apply_overrides`]: an unknown key or a value of the wrong type is an error naming the key,
//! never silently ignored or read as 0. `docs/knobs.md` is generated from [`knob_rows`] and the
//! defaults of [`Config::default`] (`unpinned config --list --markdown`).

use std::path::PathBuf;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use unpinned_core::memory::Pdid;
use unpinned_core::os::PageInPolicy;
use unpinned_core::profile::{EngineProfile, Profile};

use crate::fault_handler::PageInConfig;
use crate::memory::{MemoryMode, LOCAL_PDID, RESIDENCY_TTL};
use crate::runtime::{LoopOptions, SPIN_YIELD_POLLS};

/// Sections of the overrides that belong to layers on top of the runtime, not to [`Config`]:
/// the launcher and the PMIx join leave them to the ranks ([`crate::edge::Edge::take_section`]).
pub const LAYER_SECTIONS: &[&str] = &["dsm", "shmem"];

/// Profile overrides the live runtime applies on top of `forth-arm` before the user's own.
///
/// - `engine.block_timeout_us=10000`: on the reference platform a page-in takes ~20 us, so a
///   1 ms block timeout only fires on real loss. Here a PIA page-in of a few MiB with
///   `MADV_POPULATE_WRITE` takes milliseconds and a rank can be descheduled for milliseconds
///   on a loaded host: with 1 ms, most faulting transfers would also be retransmitted by
///   timeout.
/// - `engine.packet_bytes=16384`: one packet per 16 KiB block. The reference NI splits blocks
///   into 256 B link packets; here a packet is a copy through a ring slot or a datagram whose
///   fixed cost (headers, engine bookkeeping, ring hand-off, residency lookup) is per packet,
///   not per byte, so fewer, larger packets move more bytes per second. Blocks stay 16 KiB, so
///   fault handling (PI4, resent bytes) is unchanged; UDP datagrams of 16 KiB + 55 B are fine
///   on loopback and LANs with IP fragmentation (set `engine.packet_bytes` lower for a lossy
///   network).
/// - `engine.max_timeouts=30`: a peer is declared dead after 30 silent timeouts, not 7: a
///   descheduled process on a busy host is not a dead one.
/// - `engine.timeout_backoff_max=16`: each silent period of a peer doubles the next timeout,
///   up to 16 block timeouts (160 ms); an answer from the peer resets it. With the fixed 10 ms
///   timer, 30 timeouts were 0.31 s of silence, and on a host with more runnable threads than
///   cores a peer's engine can go that long without a turn: its process descheduled, or the
///   ring towards it full (packets dropped after `progress.drop_after_us`) while it catches
///   up, so its transfers failed with RetryExceeded although it was alive. With the backoff a
///   transfer fails after 10 + 20 + 40 + 80 + 27 * 160 ms = 4.47 s of silence (a peer
///   descheduled for a second or two survives it, with half the timeouts left), while the
///   first retransmissions of a lossy link still come after 10, 20, 40 ms. A peer that died
///   is not found by this timer: the transport (shm: the peer's pid; `Runtime::leave`), the
///   launcher (`ended-R`, then the job ends after its grace) and PMIx (termination events)
///   report it within milliseconds; the timer only ends transfers to a peer that stays
///   silent without having exited (a host or network gone).
/// - `engine.max_outstanding_blocks=16`: the window must cover the bandwidth-delay product.
///   Here an ACK comes back after two thread hand-offs, several packet times after its
///   block's last packet, so a window of 2 blocks stalls the sender at every ACK. 16 was never
///   worse than 8 or 32 in the sets measured, and leaves more slack for a descheduled target.
///   Silent *periods* of a peer, not block timers, count against `max_timeouts` (crates/part
///   `requester.rs`), so a wide window does not use up the timeouts of one silent period.
/// - `engine.retransmit=selective`: a retransmission resends only the packets the receiver
///   lacks (its SACK says which), not the whole block. On a lossy network (UDP) a block of
///   `n` packets otherwise needs all `n` to survive one attempt; on shared memory nothing is
///   lost and the two policies send the same packets.
///
/// Measurements behind these values: docs/performance.md, "Live runtime: the default
/// profile".
pub const LIVE_DEFAULTS: &[&str] = &[
    "engine.block_timeout_us=10000",
    "engine.max_timeouts=30",
    "engine.timeout_backoff_max=16",
    "engine.packet_bytes=16384",
    "engine.max_outstanding_blocks=16",
    "engine.retransmit=selective",
];

/// Engine overrides the live runtime applies on top of `forth-arm` (see
/// [`LIVE_DEFAULTS`] for why each differs).
fn live_engine() -> EngineProfile {
    let mut p = Profile::forth_arm();
    for s in LIVE_DEFAULTS {
        p = p.with_override(s).expect("live defaults are valid");
    }
    p.engine
}

/// Everything a rank of a live job is started with.
///
/// The job fields (`rank`, `size`, `bootstrap_dir`) are set by whoever starts the rank (the
/// launcher's environment through [`crate::edge`], or a test); they are not knobs and cannot
/// be overridden. Every other field is a knob section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// This rank (not a knob: from the launcher).
    #[serde(skip)]
    pub rank: u32,
    /// Ranks in the job (not a knob: from the launcher).
    #[serde(skip)]
    pub size: u32,
    /// Directory for bootstrap collectives (exchange, barrier); not a knob: from the launcher.
    #[serde(skip)]
    pub bootstrap_dir: Option<PathBuf>,
    /// Bootstrap collectives through the process's PMIx client instead of a directory (a job
    /// started by mpirun, prterun or srun: [`crate::pmix`]); not a knob: from the edge.
    #[serde(skip)]
    pub bootstrap_pmix: bool,
    /// The PART engine: block and packet size, window, timeouts (the profile's `engine`
    /// section, with the live defaults of [`LIVE_DEFAULTS`]).
    pub engine: EngineProfile,
    /// The page-in thread.
    pub handler: HandlerSection,
    /// The engine loop: progress thread and waiting callers.
    pub progress: ProgressSection,
    /// Residency checks of exposed memory.
    pub memory: MemorySection,
    /// Transports between the ranks.
    pub transport: TransportSection,
    /// Timeouts of the API.
    pub timeouts: TimeoutSection,
    /// The in-process trace ([`crate::trace`]).
    pub trace: TraceSection,
}

/// The page-in thread ([`crate::fault_handler`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HandlerSection {
    /// Which pages one fault brings in: `pio` (the faulting page), `pi4` (the faulting page's
    /// block), `pia` (the rest of the transfer from the faulting page on). Default `pia`.
    pub policy: PageInPolicy,
    /// Send ERRs after a page-in (false: retransmission only by the source's block timeout).
    /// Default true.
    pub send_err: bool,
}

impl Default for HandlerSection {
    fn default() -> Self {
        let h = PageInConfig::default();
        HandlerSection {
            policy: h.policy,
            send_err: h.send_err,
        }
    }
}

/// The engine loop ([`crate::runtime`]): how the progress thread and waiting callers poll.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProgressSection {
    /// Packets received, and packets sent, per engine turn at most. Default 32.
    pub batch_packets: usize,
    /// The progress thread busy-polls this long after its own last work before yielding, us
    /// (0: yield at once). Default 0.
    pub spin_us: u64,
    /// Then yields this long before sleeping, us. Default 1000.
    pub yield_us: u64,
    /// Longest sleep in the transport, us. Default 5000.
    pub max_sleep_us: u64,
    /// Drop packets towards a destination whose transport stayed full this long, us.
    /// Default 2000.
    pub drop_after_us: u64,
    /// After shutdown was asked, keep answering peers until idle this long, us. Default 20000.
    pub linger_us: u64,
    /// A waiting caller drives the engine in a busy loop this long, us. Default 0.
    pub wait_spin_us: u64,
    /// Then drives it yielding the core between turns this long before sleeping on the
    /// completion queue, us. Default 2000.
    pub wait_yield_us: u64,
    /// While a caller drives, the progress thread checks back this often, us. Default 200.
    pub driven_sleep_us: u64,
    /// A busy-polling thread not pinned to a CPU of its own yields the core once per this
    /// many polls (0: never). Default 64.
    pub spin_yield_polls: u32,
    /// Pin the progress thread to this CPU (unset: the scheduler places it). Default unset.
    pub cpu: Option<usize>,
    /// Destination faults whose page-in covers at most this many pages of private anonymous
    /// memory are paged in by the engine itself, inline (0: always by the page-in thread).
    /// Default 4.
    pub inline_page_in_max_pages: u64,
    /// Remote writes of at most this many pages into private anonymous memory page their
    /// missing pages in on access, without the page-fault NACK and ERR (0: off, the spec's
    /// path). Default 0.
    pub fill_on_access_max_pages: u64,
}

impl Default for ProgressSection {
    /// The defaults of [`LoopOptions::default`] (where each is explained).
    fn default() -> Self {
        let o = LoopOptions::default();
        let us = |d: Duration| d.as_micros() as u64;
        ProgressSection {
            batch_packets: o.batch,
            spin_us: us(o.spin),
            yield_us: us(o.yield_for),
            max_sleep_us: us(o.max_sleep),
            drop_after_us: us(o.drop_after),
            linger_us: us(o.linger),
            wait_spin_us: us(o.wait_spin),
            wait_yield_us: us(o.wait_yield),
            driven_sleep_us: us(o.driven_sleep),
            spin_yield_polls: SPIN_YIELD_POLLS,
            cpu: o.progress_cpu,
            inline_page_in_max_pages: o.inline_page_in_max_pages,
            fill_on_access_max_pages: o.fill_on_access_max_pages,
        }
    }
}

/// Residency checks ([`crate::memory`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MemorySection {
    /// How the engine reaches memory: `part` (residency check, page-fault NACK), or the
    /// baselines `transfer-only` and `blocking` that skip the check (benchmarks only).
    /// Default `part`.
    #[serde(with = "memory_mode")]
    pub mode: MemoryMode,
    /// How long a pagemap residency verdict stays trusted across engine turns, us (0: one
    /// turn only). Default 20.
    pub residency_ttl_us: u64,
    /// Trust verdicts of watched memory until the kernel reports a change (the translation
    /// cache); false: every verdict lives `residency_ttl_us`. Default true.
    pub residency_cache: bool,
    /// Use `PAGEMAP_SCAN` range verdicts where the kernel has it; false: pagemap entries only.
    /// Default true.
    pub pagemap_scan: bool,
    /// Protection domain id of this process (every rank the same). Default 1.
    pub pdid: Pdid,
}

impl Default for MemorySection {
    fn default() -> Self {
        MemorySection {
            mode: MemoryMode::Part,
            residency_ttl_us: RESIDENCY_TTL.as_micros() as u64,
            residency_cache: LoopOptions::default().residency_cache,
            pagemap_scan: true,
            pdid: LOCAL_PDID,
        }
    }
}

/// Transports between the ranks ([`crate::transport`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TransportSection {
    /// Slots per shared-memory ring (per direction and rank pair) of the segment the launcher
    /// creates. At least 2. Default 512.
    pub ring_slots: u32,
    /// Keep the CRC32 of every packet on the shared-memory transport too (a diagnostic for
    /// suspected corruption; shared memory does not corrupt bytes). Default false.
    pub shm_checksum: bool,
    /// Fraction of sent packets dropped by the fault-injecting wrapper
    /// ([`crate::transport::faulty`]), for testing recovery. Default 0.
    pub inject_drop: f64,
    /// Fraction of sent packets sent twice. Default 0.
    pub inject_duplicate: f64,
    /// Fraction of sent packets held back behind a later one. Default 0.
    pub inject_reorder: f64,
    /// Fraction of sent packets with one byte flipped. Default 0.
    pub inject_corrupt: f64,
    /// Seed of the injected faults (mixed with the rank). Default 0.
    pub inject_seed: u64,
}

impl Default for TransportSection {
    fn default() -> Self {
        TransportSection {
            ring_slots: DEFAULT_RING_SLOTS,
            shm_checksum: false,
            inject_drop: 0.0,
            inject_duplicate: 0.0,
            inject_reorder: 0.0,
            inject_corrupt: 0.0,
            inject_seed: 0,
        }
    }
}

impl TransportSection {
    /// The fault-injection rates of the `inject_*` knobs.
    pub fn fault_rates(&self) -> crate::transport::faulty::FaultRates {
        crate::transport::faulty::FaultRates {
            drop: self.inject_drop,
            duplicate: self.inject_duplicate,
            reorder: self.inject_reorder,
            corrupt: self.inject_corrupt,
            seed: self.inject_seed,
        }
    }
}

/// Slots per shared-memory ring unless `transport.ring_slots` says otherwise.
pub const DEFAULT_RING_SLOTS: u32 = 512;

/// Timeouts of the API.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TimeoutSection {
    /// How long bootstrap collectives (exchange, barrier) wait for the other ranks, ms.
    /// Default 30000.
    pub bootstrap_ms: u64,
    /// Longest `Runtime::wait` / `Runtime::flush`, ms. Default 60000.
    pub op_ms: u64,
}

impl Default for TimeoutSection {
    fn default() -> Self {
        TimeoutSection {
            bootstrap_ms: 30_000,
            op_ms: 60_000,
        }
    }
}

/// The in-process trace ([`crate::trace`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TraceSection {
    /// Record the trace points of every runtime in the process. Default false.
    pub enabled: bool,
    /// Record (as `enabled`) and write this rank's records to `FILE.rank<R>.csv` when the
    /// runtime ends or a library asks ([`crate::Runtime::write_trace`]; the OpenSHMEM
    /// library does at `shmem_finalize`). Default unset.
    pub file: Option<std::path::PathBuf>,
}

/// `MemoryMode` as `part`, `transfer-only`, `blocking`.
mod memory_mode {
    use super::MemoryMode;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(m: &MemoryMode, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(match m {
            MemoryMode::Part => "part",
            MemoryMode::TransferOnly => "transfer-only",
            MemoryMode::Blocking => "blocking",
        })
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<MemoryMode, D::Error> {
        match String::deserialize(d)?.as_str() {
            "part" => Ok(MemoryMode::Part),
            "transfer-only" => Ok(MemoryMode::TransferOnly),
            "blocking" => Ok(MemoryMode::Blocking),
            other => Err(serde::de::Error::custom(format!(
                "{other:?} is not a memory mode (valid: part, transfer-only, blocking)"
            ))),
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config::new(0, 1)
    }
}

impl Config {
    /// The defaults for `rank` of `size`: the `forth-arm` engine with the live defaults
    /// ([`LIVE_DEFAULTS`]: 16 KiB packets, 16 outstanding blocks, 10 ms block
    /// timeout), PIA page-in with ERR, PART residency checks, no bootstrap directory.
    pub fn new(rank: u32, size: u32) -> Config {
        Config {
            rank,
            size,
            bootstrap_dir: None,
            bootstrap_pmix: false,
            engine: live_engine(),
            handler: HandlerSection::default(),
            progress: ProgressSection::default(),
            memory: MemorySection::default(),
            transport: TransportSection::default(),
            timeouts: TimeoutSection::default(),
            trace: TraceSection::default(),
        }
    }

    /// Apply `a.b=v` assignments ([`apply_overrides`]) and check the result ([`Config::validate`]).
    pub fn with_overrides<S: AsRef<str>>(self, sets: &[S]) -> Result<Config, ConfigError> {
        let mut c = apply_overrides(&self, sets)?;
        // The job fields are not serialized: keep this rank's.
        c.rank = self.rank;
        c.size = self.size;
        c.bootstrap_dir = self.bootstrap_dir;
        c.bootstrap_pmix = self.bootstrap_pmix;
        c.validate()?;
        Ok(c)
    }

    /// Reject impossible values, naming the key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let mut p = Profile::forth_arm();
        p.engine = self.engine.clone();
        p.validate().map_err(|e| ConfigError {
            key: "engine".into(),
            why: e.to_string(),
        })?;
        let bad = |key: &str, why: &str| {
            Err(ConfigError {
                key: key.into(),
                why: why.into(),
            })
        };
        if self.progress.batch_packets == 0 {
            return bad("progress.batch_packets", "must be at least 1");
        }
        if self.transport.ring_slots < 2 {
            return bad("transport.ring_slots", "a ring needs at least 2 slots");
        }
        if let Some((name, _)) = self.transport.fault_rates().invalid() {
            return bad(
                &format!("transport.{name}"),
                "a fraction of packets: between 0 and 1",
            );
        }
        if self.timeouts.op_ms == 0 || self.timeouts.bootstrap_ms == 0 {
            return bad("timeouts", "timeouts must be at least 1 ms");
        }
        Ok(())
    }

    /// The engine's parameters (the key salt is drawn by the runtime).
    pub fn engine_config(&self) -> unpinned_part::EngineConfig {
        unpinned_part::EngineConfig::from_profile(&self.engine)
    }

    /// The page-in thread's configuration.
    pub fn handler_config(&self) -> PageInConfig {
        PageInConfig {
            policy: self.handler.policy,
            send_err: self.handler.send_err,
        }
    }

    /// The engine loop's options.
    pub fn loop_options(&self) -> LoopOptions {
        let us = Duration::from_micros;
        let p = &self.progress;
        LoopOptions {
            batch: p.batch_packets,
            spin: us(p.spin_us),
            yield_for: us(p.yield_us),
            max_sleep: us(p.max_sleep_us),
            drop_after: us(p.drop_after_us),
            linger: us(p.linger_us),
            wait_spin: us(p.wait_spin_us),
            wait_yield: us(p.wait_yield_us),
            driven_sleep: us(p.driven_sleep_us),
            residency_ttl: us(self.memory.residency_ttl_us),
            inline_page_in_max_pages: p.inline_page_in_max_pages,
            fill_on_access_max_pages: p.fill_on_access_max_pages,
            progress_cpu: p.cpu,
            residency_cache: self.memory.residency_cache,
            force_checksum: self.transport.shm_checksum,
        }
    }

    /// How long bootstrap collectives wait.
    pub fn bootstrap_timeout(&self) -> Duration {
        Duration::from_millis(self.timeouts.bootstrap_ms)
    }

    /// Longest wait for a completion.
    pub fn op_timeout(&self) -> Duration {
        Duration::from_millis(self.timeouts.op_ms)
    }

    /// Largest packet the engine emits (data header + payload).
    pub fn max_packet(&self) -> usize {
        self.engine.packet_bytes as usize + unpinned_wire::part::DATA_HEADER_LEN
    }
}

/// A configuration key that does not exist or a value that does not fit it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("config key `{key}`: {why} (every key, its default and unit: `unpinned config --list`)")]
pub struct ConfigError {
    /// The dotted key (or the assignment, when it has no key).
    pub key: String,
    /// What is wrong.
    pub why: String,
}

/// Split an override list into assignments: `a.b=v` items separated by commas, semicolons or
/// whitespace (the syntax of `UNPINNED_SET`; `--set` takes one or more of them per flag).
pub fn split_assignments(list: &str) -> Vec<String> {
    list.split(|c: char| c == ',' || c == ';' || c.is_whitespace())
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Apply `a.b=v` assignments to any serde configuration `T` whose structs deny unknown
/// fields. Fields that are not serialized (`#[serde(skip)]`) come back as their defaults: the
/// caller copies them over (as [`Config::with_overrides`] does). The value is read as TOML (numbers, booleans, quoted strings) or else as a bare
/// string. Each assignment is checked on its own, so an error names its key: an unknown key
/// (serde lists the known ones), a value of the wrong type, or an assignment without `=`.
pub fn apply_overrides<T, S>(value: &T, sets: &[S]) -> Result<T, ConfigError>
where
    T: Serialize + DeserializeOwned,
    S: AsRef<str>,
{
    let mut doc = toml::Value::try_from(value).map_err(|e| ConfigError {
        key: String::new(),
        why: format!("cannot serialize the configuration: {e}"),
    })?;
    let mut out: Option<T> = None;
    for set in sets {
        let set = set.as_ref().trim();
        if set.is_empty() {
            continue;
        }
        let (key, raw) = set.split_once('=').ok_or_else(|| ConfigError {
            key: set.into(),
            why: "expected key=value".into(),
        })?;
        let (key, raw) = (key.trim(), raw.trim());
        let err = |why: String| ConfigError {
            key: key.into(),
            why,
        };
        let parts: Vec<&str> = key.split('.').collect();
        if parts.iter().any(|p| p.is_empty()) {
            return Err(err("empty path segment".into()));
        }
        let mut slot = &mut doc;
        for (i, part) in parts.iter().enumerate() {
            let table = slot
                .as_table_mut()
                .ok_or_else(|| err(format!("`{}` is not a section", parts[..i].join("."))))?;
            let last = i + 1 == parts.len();
            slot = table.entry(part.to_string()).or_insert_with(|| {
                if last {
                    toml::Value::Boolean(false)
                } else {
                    toml::Value::Table(Default::default())
                }
            });
        }
        if slot.is_table() {
            return Err(err("is a section: name one of its keys".into()));
        }
        *slot = match toml::from_str::<toml::Table>(&format!("v = {raw}")) {
            Ok(mut t) => t.remove("v").expect("key v"),
            Err(_) => toml::Value::String(raw.to_string()),
        };
        let v: T = doc
            .clone()
            .try_into()
            .map_err(|e: toml::de::Error| err(e.message().trim().to_string()))?;
        out = Some(v);
    }
    match out {
        Some(v) => Ok(v),
        None => doc.try_into().map_err(|e: toml::de::Error| ConfigError {
            key: String::new(),
            why: e.message().to_string(),
        }),
    }
}

/// One knob of a configuration, for the generated table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KnobRow {
    /// Dotted key.
    pub key: String,
    /// Default, as TOML (`unset` for an optional knob without one).
    pub default: String,
    /// Unit, from the key's suffix (`_us`: us, `_ms`: ms, `_bytes`: bytes, `_pages`: pages,
    /// `_polls`: polls, `_packets`: packets, `_slots`: slots; empty: none).
    pub unit: &'static str,
    /// What it does.
    pub doc: &'static str,
}

/// The unit a key's name ends with.
pub fn unit_of(key: &str) -> &'static str {
    const UNITS: &[(&str, &str)] = &[
        ("_us", "us"),
        ("_ms", "ms"),
        ("_ns", "ns"),
        ("_bytes", "bytes"),
        ("_pages", "pages"),
        ("_polls", "polls"),
        ("_packets", "packets"),
        ("_slots", "slots"),
        ("_blocks", "blocks"),
        ("_timeouts", "timeouts"),
    ];
    let last = key.rsplit('.').next().unwrap_or(key);
    for (suffix, unit) in UNITS {
        if last.ends_with(suffix) {
            return unit;
        }
    }
    if last == "ring_slots" {
        return "slots";
    }
    ""
}

/// The table of `defaults` (a serde configuration) with `docs` (key, what it does): every
/// key of `defaults` must have a doc and every doc a key, else the error lists the
/// differences. Keys of optional knobs that are unset by default appear in `docs` only, and
/// are checked by applying `optional` (`key=example` assignments).
pub fn knob_rows<T: Serialize + DeserializeOwned>(
    prefix: &str,
    defaults: &T,
    docs: &[(&'static str, &'static str)],
    optional: &[&str],
) -> Result<Vec<KnobRow>, String> {
    let doc = toml::Value::try_from(defaults).map_err(|e| e.to_string())?;
    let mut flat = Vec::new();
    flatten("", &doc, &mut flat);
    apply_overrides(defaults, optional).map_err(|e| e.to_string())?;
    let mut rows = Vec::new();
    let mut missing = Vec::new();
    for (key, value) in &flat {
        match docs.iter().find(|(k, _)| k == key) {
            Some((_, d)) => rows.push(KnobRow {
                key: format!("{prefix}{key}"),
                default: value.clone(),
                unit: unit_of(key),
                doc: d,
            }),
            None => missing.push(key.clone()),
        }
    }
    for (k, d) in docs {
        if flat.iter().any(|(key, _)| key == k) {
            continue;
        }
        if optional.iter().any(|o| o.split('=').next() == Some(k)) {
            rows.push(KnobRow {
                key: format!("{prefix}{k}"),
                default: "unset".into(),
                unit: unit_of(k),
                doc: d,
            });
        } else {
            missing.push(format!("{k} (documented, but no such key)"));
        }
    }
    if !missing.is_empty() {
        return Err(format!("knob docs out of date: {}", missing.join(", ")));
    }
    rows.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(rows)
}

fn flatten(prefix: &str, v: &toml::Value, out: &mut Vec<(String, String)>) {
    match v {
        toml::Value::Table(t) => {
            for (k, v) in t {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, v, out);
            }
        }
        other => out.push((prefix.to_string(), other.to_string())),
    }
}

/// What each knob of [`Config`] does (checked against the struct by [`knob_rows`]).
pub const KNOB_DOCS: &[(&str, &str)] = &[
    ("engine.block_bytes", "PART block: unit of acknowledgement and retransmission"),
    ("engine.packet_bytes", "packet payload (one ring slot or datagram)"),
    ("engine.max_outstanding_blocks", "unacknowledged blocks per transfer (the window)"),
    ("engine.block_timeout_us", "retransmit a block not acknowledged this long (0: NTO)"),
    ("engine.initiation_us", "simulator only: initiation cost per posted operation (unused live)"),
    ("engine.max_timeouts", "silent timeout periods before a transfer fails with RetryExceeded"),
    ("engine.fault_recovery_timeout_us", "a faulted block waits this long for its ERR before retransmitting anyway"),
    ("engine.rx_state_idle_us", "receive-side block state idle this long is discarded"),
    ("engine.timeout_backoff_max", "each silent period of a peer doubles the next timeout, up to this many block timeouts (1: a fixed timer)"),
    ("engine.retransmit", "what a retransmission resends: selective (the packets the receiver lacks, from its SACK) or block (the whole block, as the spec)"),
    ("handler.policy", "pages one fault brings in: pio (the page), pi4 (its block), pia (the rest of the transfer), adaptive (pio or pia from the fault density seen)"),
    ("handler.send_err", "send an ERR after a page-in (false: only the block timeout retransmits)"),
    ("progress.batch_packets", "packets received, and sent, per engine turn at most"),
    ("progress.spin_us", "progress thread busy-polls this long after its last work (0: yield at once)"),
    ("progress.yield_us", "then yields this long before sleeping"),
    ("progress.max_sleep_us", "longest sleep in the transport"),
    ("progress.drop_after_us", "drop packets to a destination whose transport stayed full this long"),
    ("progress.linger_us", "after shutdown, keep answering peers until idle this long"),
    ("progress.wait_spin_us", "a waiting caller drives the engine busily this long"),
    ("progress.wait_yield_us", "then drives it yielding between turns this long before sleeping"),
    ("progress.driven_sleep_us", "while a caller drives, the progress thread checks back this often"),
    ("progress.spin_yield_polls", "a busy-polling thread not pinned to its own CPU yields once per this many polls (0: never)"),
    ("progress.cpu", "pin the progress thread to this CPU (unset: the scheduler places it)"),
    ("progress.inline_page_in_max_pages", "faults of at most this many anonymous pages are paged in inline by the engine (0: always by the page-in thread)"),
    ("progress.fill_on_access_max_pages", "remote writes of at most this many pages page in on access, without NACK and ERR (0: off)"),
    ("memory.mode", "part (residency check), or the baselines transfer-only and blocking"),
    ("memory.residency_ttl_us", "a pagemap verdict stays trusted this long across turns (0: one turn)"),
    ("memory.residency_cache", "trust verdicts of watched memory until the kernel reports a change"),
    ("memory.pagemap_scan", "use PAGEMAP_SCAN range verdicts where the kernel has it"),
    ("memory.pdid", "protection domain id of this process"),
    ("transport.ring_slots", "slots per shared-memory ring (per direction and rank pair), at least 2"),
    ("transport.shm_checksum", "keep the CRC32 of every packet on shared memory too (diagnostic)"),
    ("transport.inject_drop", "testing: fraction of sent packets dropped (transport::faulty)"),
    ("transport.inject_duplicate", "testing: fraction of sent packets sent twice"),
    ("transport.inject_reorder", "testing: fraction of sent packets held back behind a later one"),
    ("transport.inject_corrupt", "testing: fraction of sent packets with one byte flipped"),
    ("transport.inject_seed", "testing: seed of the injected faults (mixed with the rank)"),
    ("timeouts.bootstrap_ms", "bootstrap collectives (exchange, barrier) wait this long for the other ranks"),
    ("timeouts.op_ms", "longest Runtime::wait / flush"),
    ("trace.enabled", "record the runtime's trace points (crate::trace)"),
    ("trace.file", "record them and write this rank's to FILE.rank<R>.csv at the end (unset: no file)"),
];

/// Example values of [`Config`]'s optional knobs (unset by default), for [`knob_rows`].
pub const OPTIONAL_KNOBS: &[&str] = &["progress.cpu=0", "trace.file=trace"];

/// The knob table of [`Config`].
pub fn config_knobs() -> Vec<KnobRow> {
    knob_rows("", &Config::default(), KNOB_DOCS, OPTIONAL_KNOBS).expect("KNOB_DOCS match Config")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_knob_is_documented_and_every_doc_is_a_knob() {
        let rows = knob_rows("", &Config::default(), KNOB_DOCS, OPTIONAL_KNOBS).unwrap();
        assert_eq!(rows.len(), KNOB_DOCS.len());
        assert!(rows
            .iter()
            .any(|r| r.key == "progress.spin_us" && r.unit == "us"));
        assert!(knob_rows("", &Config::default(), &KNOB_DOCS[1..], OPTIONAL_KNOBS).is_err());
    }

    #[test]
    fn overrides_change_the_named_knob_and_refuse_unknown_keys() {
        let c = Config::new(1, 2)
            .with_overrides(&["progress.spin_us=20", "engine.block_timeout_us=250"])
            .unwrap();
        assert_eq!((c.rank, c.size), (1, 2), "job fields survive");
        assert_eq!(c.progress.spin_us, 20);
        assert_eq!(c.engine.block_timeout_us, 250.0);
        assert_eq!(c.loop_options().spin, Duration::from_micros(20));
        let c = Config::default()
            .with_overrides(&[
                "progress.cpu=1",
                "memory.mode=blocking",
                "handler.policy=pio",
            ])
            .unwrap();
        assert_eq!(c.progress.cpu, Some(1));
        assert_eq!(c.memory.mode, MemoryMode::Blocking);
        assert_eq!(c.handler.policy, PageInPolicy::Pio);
        for (bad, key) in [
            ("progress.spinn_us=1", "progress.spinn_us"),
            ("nope.x=1", "nope.x"),
            ("rank=3", "rank"),
            ("progress.spin_us=abc", "progress.spin_us"),
            ("progress.spin_us=-1", "progress.spin_us"),
            ("memory.mode=fast", "memory.mode"),
            ("progress=1", "progress"),
            ("progress.spin_us", "progress.spin_us"),
        ] {
            let e = Config::default().with_overrides(&[bad]).unwrap_err();
            assert_eq!(e.key, key, "{bad}: {e}");
        }
        let e = Config::default()
            .with_overrides(&["transport.ring_slots=1"])
            .unwrap_err();
        assert_eq!(e.key, "transport.ring_slots");
        let e = Config::default()
            .with_overrides(&["engine.packet_bytes=1000000"])
            .unwrap_err();
        assert!(e.to_string().contains("engine.packet_bytes"), "{e}");
    }

    #[test]
    fn assignment_lists_split_on_commas_semicolons_and_whitespace() {
        assert_eq!(
            split_assignments(" a.b=1,c.d=2;e.f=x \n g.h=3 "),
            ["a.b=1", "c.d=2", "e.f=x", "g.h=3"]
        );
        assert!(split_assignments("  ").is_empty());
    }

    #[test]
    fn a_descheduled_peer_is_not_declared_dead_and_a_silent_one_still_is() {
        let e = Config::default().engine_config();
        let max = e.max_timeouts;
        // A transfer fails after silence_span(max_timeouts + 1) of silence.
        let dead_after = Duration::from_nanos(e.silence_span(max + 1).as_ns());
        assert_eq!(dead_after, Duration::from_millis(4470));
        // A peer descheduled for 2 s uses fewer than two thirds of the timeouts.
        let two_s = (1..=max)
            .find(|&n| e.silence_span(n).as_ns() >= 2_000_000_000)
            .unwrap();
        assert!(
            two_s <= max * 2 / 3,
            "2 s of silence takes {two_s} timeouts"
        );
        // A lossy link's first retransmissions still come after one, then two block timeouts.
        assert_eq!(e.backoff_timeout(0).as_ns(), 10_000_000);
        assert_eq!(e.backoff_timeout(1).as_ns(), 20_000_000);
    }

    #[test]
    fn a_config_round_trips_through_toml() {
        let c = Config::default()
            .with_overrides(&["progress.cpu=1"])
            .unwrap();
        let text = toml::to_string(&c).unwrap();
        let back: Config = toml::from_str(&text).unwrap();
        assert_eq!(back, c);
        assert!(toml::from_str::<Config>("[progress]\nbogus = 1").is_err());
    }
}
