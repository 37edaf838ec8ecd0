//! The live experiments (issue 3, item 9): `unpinned live EXPERIMENT`.
//!
//! The PART experiments part-latency, -fault-small, -fault-all, -fault-frequency and -timeout
//! are the simulator's, written once over a testbed ([`part`], [`testbed::LiveTestbed`]), so
//! live and simulated tables have the same columns; `live-hol`,
//! `live-stale`, `live-loss` and `live-peers` exist only live. The Active Access
//! `aa-dht-link` is the simulator's too, written once over a DHT testbed
//! ([`aa_dht_link::LiveDhtTestbed`]); `aa-notify` exists only live (issue 5).
//! `dsm-roundtrip` and `dsm-protect` measure the live DSM (crates/dsm-live); `dsm-apps` and
//! `dsm-load` run the DSM applications on it, each rank a real process (the only live
//! experiments that launch processes). Every other experiment runs two ranks as two
//! [`Runtime`](unpinned_live::Runtime)s in this process, connected by the shared-memory transport users get from
//! `unpinned run` (a segment in /dev/shm, unlinked once both ranks opened it), so no launcher
//! is needed. Rank 0 sends, rank 1 is the target.
//!
//! Measurements are medians of a few repetitions (`--set exp.reps=N`): the development VM has
//! 2 vCPUs shared by two engine threads, two page-in threads and the caller, and single
//! transfers vary by 2-3x.

pub mod aa_dht_link;
mod aa_notify;
mod dsm_apps;
mod dsm_protect;
mod dsm_roundtrip;
pub mod hol;
mod loss;
pub mod part;
pub mod peers;
pub mod residency;
pub mod stale;
pub mod testbed;
mod vs_sim;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use unpinned_aa_live::ActiveRuntime;
use unpinned_core::profile::Profile;
use unpinned_experiments::{ExperimentError, ExperimentSpec};
use unpinned_live::api::LIVE_DEFAULTS;
use unpinned_live::fault_handler::PageInConfig;
use unpinned_live::transport::shm::{create_segment, ShmGeometry, ShmTransport};
use unpinned_live::{Config, MemoryMode, RemoteKey, RuntimeStats};
use unpinned_os::mapping::Mapping;

pub use unpinned_experiments::{ExperimentOutput, RunContext};

/// The live experiments, in report order.
pub fn specs() -> Vec<&'static ExperimentSpec> {
    vec![
        &part::LATENCY,
        &part::FAULT_SMALL,
        &part::FAULT_ALL,
        &part::FAULT_FREQUENCY,
        &part::TIMEOUT,
        &hol::SPEC,
        &stale::SPEC,
        &loss::SPEC,
        &residency::SPEC,
        &peers::SPEC,
        &vs_sim::SPEC,
        &aa_notify::SPEC,
        &aa_dht_link::SPEC,
        &dsm_roundtrip::SPEC,
        &dsm_protect::SPEC,
        &dsm_apps::SPEC_APPS,
        &dsm_apps::SPEC_LOAD,
    ]
}

/// The live experiment called `name`.
pub fn find(name: &str) -> Option<&'static ExperimentSpec> {
    specs().into_iter().find(|s| s.name == name)
}

/// The profile the live experiments start from: `forth-arm` with the live runtime's defaults
/// ([`LIVE_DEFAULTS`]); user overrides go on top.
pub fn live_profile() -> Profile {
    let mut p = Profile::forth_arm();
    for s in LIVE_DEFAULTS {
        p = p.with_override(s).expect("live defaults are valid");
    }
    p
}

/// A live failure as an experiment error.
pub fn fail(what: impl std::fmt::Display) -> ExperimentError {
    ExperimentError::Sim(format!("live: {what}"))
}

/// Two ranks in this process over a shared-memory segment: rank 0 sends, rank 1 is the target.
pub struct Pair {
    /// The runtimes, by rank.
    /// Active Access runtimes, as the C library's: the AA experiments use their Active
    /// Access, the others measure PART through the same memory path.
    pub rts: Vec<ActiveRuntime>,
}

static SEGMENTS: AtomicU64 = AtomicU64::new(0);

static BASE: std::sync::Mutex<Option<Config>> = std::sync::Mutex::new(None);

/// Set the runtime configuration every rank pair of the experiments starts from: the
/// defaults with `sets` (`a.b=v` runtime knobs, as `unpinned run --set`; the CLI passes those
/// of `UNPINNED_SET`). An unknown key or a bad value is an error naming the key.
///
/// The `engine` section is refused here: an experiment's engine is its profile's (`--set
/// engine.KEY=V` of `unpinned live`), so the base's would be silently replaced.
pub fn set_base_overrides<S: AsRef<str>>(sets: &[S]) -> Result<(), ExperimentError> {
    if let Some(s) = sets
        .iter()
        .map(|s| s.as_ref().trim())
        .find(|s| s.starts_with("engine."))
    {
        return Err(fail(format!(
            "{s}: the live experiments take engine knobs from the profile; pass them with \
             `--set {s}` instead"
        )));
    }
    let c = Config::new(0, 2).with_overrides(sets).map_err(fail)?;
    *BASE.lock().expect("base config") = Some(c);
    Ok(())
}

/// The configuration rank `rank` of a pair starts from ([`set_base_overrides`], else the
/// defaults).
pub fn base_config(rank: u32) -> Config {
    let mut c = BASE
        .lock()
        .expect("base config")
        .clone()
        .unwrap_or_default();
    c.rank = rank;
    c.size = 2;
    c
}

/// Page-in on access limit of the base configuration (`progress.fill_on_access_max_pages`;
/// 0, off, by default).
pub fn base_fill_pages() -> u64 {
    base_config(0).progress.fill_on_access_max_pages
}

/// Slots per ring of `unpinned run`, and of the experiments' pairs unless the base
/// configuration's `transport.ring_slots` says otherwise.
pub const DEFAULT_RING_SLOTS: u32 = unpinned_live::config::DEFAULT_RING_SLOTS;

/// The experiments' ring slots: `transport.ring_slots` of the base configuration.
pub fn ring_slots() -> u32 {
    base_config(0).transport.ring_slots
}

impl Pair {
    /// Start both ranks with the engine parameters of `profile`, memory `mode` and page-in
    /// `handler` configuration.
    ///
    /// The experiments measure the protocol's fault path (page-fault NACK, page-in, ERR), as
    /// the simulator models it: page-in on access
    /// ([`unpinned_live::runtime::LoopOptions::fill_on_access_max_pages`]) is off unless the
    /// base configuration asks for it ([`base_fill_pages`]; see [`Pair::with_fill`]).
    pub fn new(
        profile: &Profile,
        mode: MemoryMode,
        handler: PageInConfig,
    ) -> Result<Pair, ExperimentError> {
        Pair::with_fill(profile, mode, handler, base_fill_pages())
    }

    /// [`Pair::new`] with page-in on access for remote writes of at most `fill_pages` pages
    /// (the runtime's default is [`unpinned_live::runtime::LoopOptions::default`]'s).
    pub fn with_fill(
        profile: &Profile,
        mode: MemoryMode,
        handler: PageInConfig,
        fill_pages: u64,
    ) -> Result<Pair, ExperimentError> {
        Pair::with_loop(profile, mode, handler, fill_pages, |_, _| {})
    }

    /// [`Pair::with_fill`], then `tune(rank, config)` adjusts each rank's configuration (the
    /// dedicated-core configuration of `bench live`).
    pub fn with_loop(
        profile: &Profile,
        mode: MemoryMode,
        handler: PageInConfig,
        fill_pages: u64,
        tune: impl Fn(u32, &mut Config),
    ) -> Result<Pair, ExperimentError> {
        Pair::with_ring(profile, mode, handler, fill_pages, ring_slots(), tune)
    }

    /// [`Pair::with_loop`] over rings of `slots` slots (instead of [`ring_slots`]).
    pub fn with_ring(
        profile: &Profile,
        mode: MemoryMode,
        handler: PageInConfig,
        fill_pages: u64,
        slots: u32,
        tune: impl Fn(u32, &mut Config),
    ) -> Result<Pair, ExperimentError> {
        if slots < 2 {
            return Err(ExperimentError::BadParam(
                "transport.ring_slots".into(),
                format!("{slots} (a ring needs at least 2 slots)"),
            ));
        }
        let mut cfgs: Vec<Config> = (0..2)
            .map(|r| {
                // The base configuration (the knobs given to the CLI), then the experiment's
                // own engine, memory mode, page-in handler and page-in on access.
                let mut c = base_config(r);
                c.engine = profile.engine.clone();
                c.memory.mode = mode;
                c.handler.policy = handler.policy;
                c.handler.send_err = handler.send_err;
                c.progress.fill_on_access_max_pages = fill_pages;
                tune(r, &mut c);
                c
            })
            .collect();
        let path = PathBuf::from(format!(
            "/dev/shm/unpinned-livex-{}-{}",
            std::process::id(),
            SEGMENTS.fetch_add(1, Ordering::Relaxed)
        ));
        create_segment(&path, ShmGeometry::new(2, cfgs[0].max_packet(), slots)).map_err(fail)?;
        let ts: Result<Vec<_>, _> = (0..2).map(|r| ShmTransport::open(&path, r)).collect();
        // Both ranks have the segment mapped: the name is no longer needed.
        let _ = std::fs::remove_file(&path);
        let ts = ts.map_err(fail)?;
        let mut rts = Vec::new();
        for (t, c) in ts.into_iter().zip(cfgs.drain(..)) {
            rts.push(ActiveRuntime::new(c, Box::new(t)).map_err(fail)?);
        }
        Ok(Pair { rts })
    }

    /// PART (residency checks), PIA with ERR.
    pub fn part(profile: &Profile) -> Result<Pair, ExperimentError> {
        Pair::new(profile, MemoryMode::Part, PageInConfig::default())
    }

    /// Expose `[ptr, ptr+len)` at the target for writing and reading.
    ///
    /// # Safety
    ///
    /// As [`Runtime::expose`](unpinned_live::Runtime::expose): the range stays mapped until the key is revoked or the pair
    /// dropped, and is not accessed through references while transfers may write it.
    pub unsafe fn expose(&self, ptr: *const u8, len: usize) -> Result<RemoteKey, ExperimentError> {
        // SAFETY: the caller's promise, forwarded.
        unsafe { self.rts[1].expose(ptr, len, unpinned_live::Perms::RW) }.map_err(fail)
    }

    /// Withdraw an exposure at the target.
    pub fn revoke(&self, key: RemoteKey) {
        let _ = self.rts[1].revoke(key);
    }

    /// One write of `src` to `dst` at the target; post to completion, us.
    pub fn write_us(&self, src: &[u8], dst: u64, key: RemoteKey) -> Result<f64, ExperimentError> {
        let t = Instant::now();
        // SAFETY: `src` is borrowed until the completion we wait for.
        let id =
            unsafe { self.rts[0].write(1, src.as_ptr(), dst, key, src.len()) }.map_err(fail)?;
        loop {
            match self.rts[0].wait(id) {
                // `src` and the destination are still lent to the engine: keep waiting.
                Err(unpinned_live::LiveError::Timeout(_)) => continue,
                r => {
                    r.map_err(fail)?;
                    return Ok(t.elapsed().as_secs_f64() * 1e6);
                }
            }
        }
    }

    /// Counters of (sender, target).
    pub fn stats(&self) -> Result<(RuntimeStats, RuntimeStats), ExperimentError> {
        Ok((
            self.rts[0].stats().map_err(fail)?,
            self.rts[1].stats().map_err(fail)?,
        ))
    }
}

/// Median (upper median for even counts); NaN for none.
pub fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    v[v.len() / 2]
}

pub use unpinned_testkit::pattern;

/// Check that the first `src.len()` bytes of `dst` equal `src` (after the transfer completed).
pub fn verify(dst: &Mapping, src: &[u8], what: &str) -> Result<(), ExperimentError> {
    // SAFETY: callers verify after the completion; nothing writes `dst` meanwhile.
    let got = unsafe { &dst.as_slice()[..src.len()] };
    if got != src {
        return Err(fail(format!(
            "{what}: destination bytes differ from the source"
        )));
    }
    Ok(())
}

/// Fresh anonymous memory of `len` bytes with every page made present.
pub fn present(len: usize) -> Result<Mapping, ExperimentError> {
    let m = Mapping::anon(len).map_err(fail)?;
    // SAFETY: our fresh mapping; nothing else accesses it.
    unsafe { crate::schemes::touch_pages(m.ptr(), m.len()) };
    Ok(m)
}

#[cfg(test)]
mod ring_tests {
    use super::*;

    #[test]
    fn a_ring_of_fewer_than_two_slots_is_a_typed_error_and_small_rings_work() {
        let p = live_profile();
        let e = Pair::with_ring(
            &p,
            MemoryMode::Part,
            PageInConfig::default(),
            0,
            1,
            |_, _| {},
        );
        assert!(
            matches!(e, Err(ExperimentError::BadParam(ref k, _)) if k == "transport.ring_slots")
        );
        // Two slots per ring: every write still completes (the ring is back-pressure only).
        let pair = Pair::with_ring(
            &p,
            MemoryMode::Part,
            PageInConfig::default(),
            0,
            2,
            |_, _| {},
        )
        .unwrap();
        let dst = present(64 << 10).unwrap();
        // SAFETY: `dst` outlives the pair (the pair is dropped first, below).
        let k = unsafe { pair.expose(dst.ptr(), dst.len()) }.unwrap();
        let src = pattern(5, 64 << 10);
        pair.write_us(&src, dst.addr(), k).unwrap();
        verify(&dst, &src, "64 KiB through 2-slot rings").unwrap();
        drop(pair);
    }
}
