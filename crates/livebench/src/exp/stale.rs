//! `live-stale`: the registration-cache hazard. The target exposes a buffer, a transfer lands
//! in it, the application unmaps it and maps new memory at the same address, and a second
//! transfer follows. Which bytes arrive in the new buffer?
//!
//! - `part`: nothing is registered; the engine translates through the page table at each
//!   access, so the new memory gets the bytes (the new pages fault and are paged in).
//! - `pin-cache`: a pin-down registration cache keyed by `(addr, len)` ([`PinCache`]), which
//!   does not see the `munmap`. The second lookup hits and the transfer goes to the pages
//!   pinned at registration, which the application no longer maps: the new buffer stays zero.
//!   The NIC's copy of the translations is emulated by a second mapping of the pinned pages
//!   (shared anonymous memory, `mremap` with old size 0), which is what a NIC's DMA to the
//!   registered physical pages amounts to.
//! - `pin-per-transfer`: `mlock` before and `munlock` after every transfer; nothing is kept,
//!   so nothing goes stale (at the price measured in `part-latency`).

use serde_json::json;
use unpinned_experiments::{
    Declared, ExperimentError, ExperimentOutput, ExperimentSpec, RunContext,
};
use unpinned_live::fault_handler::PageInConfig;
use unpinned_live::MemoryMode;
use unpinned_report::{PlotSpec, Table};

use super::{fail, pattern, Pair};
use crate::schemes::{mlock_range, PinCache, SharedBuf};

/// `live-stale`.
pub static SPEC: ExperimentSpec = ExperimentSpec {
    name: "live-stale",
    system: "live",
    description: "Live: transfer, munmap, mmap at the same address, transfer again: PART vs a pin-down registration cache",
    params: Some(<Params as Declared>::PARAMS),
    run,
    ..ExperimentSpec::LIVE
};

/// The steps, in order.
pub const STEPS: [&str; 3] = ["first", "reuse", "remap"];

/// Run the three steps for `engine`; `correct` per step.
pub fn steps(ctx: &RunContext, engine: &str, len: usize) -> Result<Vec<bool>, ExperimentError> {
    let mode = if engine == "part" {
        MemoryMode::Part
    } else {
        MemoryMode::TransferOnly
    };
    let pair = Pair::new(&ctx.profile, mode, PageInConfig::default())?;
    let mut buf = SharedBuf::new(len).map_err(fail)?;
    let mut cache = PinCache::new(16);
    let mut part_key = None;
    let mut out = Vec::new();
    for (i, step) in STEPS.iter().enumerate() {
        if *step == "remap" {
            // The application gives the buffer back and gets new memory at the same address.
            buf.remap_same_address().map_err(fail)?;
        }
        let src = pattern(i as u64 + 1, len);
        match engine {
            "part" => {
                // Exposed once, by address: like a registration kept across the remap.
                let key = match part_key {
                    Some(k) => k,
                    // SAFETY: `buf` stays mapped at this address for the pair's life (it is
                    // remapped in place, never left unmapped while a transfer runs).
                    None => *part_key.insert(unsafe { pair.expose(buf.ptr, len) }?),
                };
                pair.write_us(&src, buf.addr(), key)?;
            }
            "pin-cache" => {
                // SAFETY: `buf` is mapped (a miss registers it; a hit does not touch it); the
                // range the cache exposes (the alias of the pinned pages) stays mapped until
                // the cache revokes it.
                let t = unsafe {
                    cache.register(
                        buf.addr(),
                        len,
                        |a, l| pair.expose(a as *const u8, l).map_err(|e| e.to_string()),
                        |k| pair.revoke(k),
                    )
                }
                .map_err(fail)?;
                pair.write_us(&src, t.nic_addr, t.key)?;
            }
            "pin-per-transfer" => {
                mlock_range(buf.ptr, len, true).map_err(fail)?;
                // SAFETY: `buf` is mapped; the exposure is revoked right after the transfer.
                let key = unsafe { pair.expose(buf.ptr, len) }?;
                pair.write_us(&src, buf.addr(), key)?;
                pair.revoke(key);
                mlock_range(buf.ptr, len, false).map_err(fail)?;
            }
            other => return Err(fail(format!("unknown engine {other}"))),
        }
        // SAFETY: the transfer completed; nothing writes `buf` now.
        out.push(unsafe { &buf.as_slice()[..len] } == &src[..]);
    }
    cache.clear(|k| pair.revoke(k));
    Ok(out)
}

unpinned_experiments::declare_params! {
    /// Parameters of `live-stale`.
    pub struct Params {
        bytes: usize {
            default: "65536",
            unit: "bytes",
            check: unpinned_experiments::params::int(1, 1 << 30),
            doc: "Bytes per transfer",
        },
    }
}

fn run(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
    let Params { bytes: len } = ctx.params()?;
    let mut table = Table::new(&["engine", "step", "correct"]);
    let engines = ["part", "pin-cache", "pin-per-transfer"];
    for (i, engine) in engines.iter().enumerate() {
        let ok = steps(ctx, engine, len)?;
        for (step, c) in STEPS.iter().zip(ok) {
            table.push(vec![(*engine).into(), (*step).into(), u64::from(c).into()]);
        }
        (ctx.progress)(i as u64 + 1, engines.len() as u64);
    }
    Ok(ExperimentOutput {
        table,
        plots: vec![PlotSpec::line(
            "Live: correct bytes after munmap + mmap at the same address",
            "step",
            "correct",
            Some("engine"),
        )
        .bars()],
        sim_events: 0,
        meta: json!({
            "bytes": len,
            "steps": "first = register/expose and transfer; reuse = same buffer again (a cache hit for pin-cache); remap = munmap, mmap new memory at the same address, transfer",
            "memory": "MAP_SHARED|MAP_ANONYMOUS, so that the pin-down cache's copy of the translations can be emulated by a second mapping of the pinned pages",
            "transport": "shm (two runtimes in one process)",
        }),
    })
}
