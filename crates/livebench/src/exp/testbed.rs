//! The live [`Testbed`]: two runtimes in this process ([`Pair`]), real memory, real faults.
//!
//! Writes are run grouped by the engine configuration they need (memory mode, page-in policy,
//! ERR, block timeout), one [`Pair`] per group, and their results returned in input order. A
//! PART write's destination is fresh memory per repetition whose pages are made present except
//! those [`missing_pages`] names, the same pages the simulator leaves missing for the seed.

use std::time::Instant;

use unpinned_core::profile::Profile;
use unpinned_experiments::testbed::{missing_pages, Measured, Scheme, Testbed, Write};
use unpinned_experiments::ExperimentError;
use unpinned_live::fault_handler::PageInConfig;
use unpinned_live::{MemoryMode, RemoteKey};
use unpinned_os::mapping::Mapping;

use super::{fail, median, pattern, present, verify, Pair};
use crate::schemes::{mlock_range, touch_pages};

/// The live runtime as a [`Testbed`], with the engine parameters of one PART profile.
pub struct LiveTestbed {
    profile: Profile,
}

impl LiveTestbed {
    /// A testbed whose ranks run `profile`'s engine parameters (see
    /// [`super::live_profile`] for the live defaults).
    pub fn new(profile: &Profile) -> LiveTestbed {
        LiveTestbed {
            profile: profile.clone(),
        }
    }

    /// The pair a group of writes runs on.
    fn pair(&self, w: &Write) -> Result<Pair, ExperimentError> {
        let mut p = self.profile.clone();
        if let Some(t) = w.timeout_us {
            p.engine.block_timeout_us = t;
            // Timeouts that fire before the page is in are normal here: do not call the peer
            // dead.
            p = p.with_override("engine.max_timeouts=1000").map_err(fail)?;
        }
        let mode = match w.scheme {
            Scheme::Part => MemoryMode::Part,
            _ => MemoryMode::TransferOnly,
        };
        Pair::new(
            &p,
            mode,
            PageInConfig {
                policy: w.policy,
                send_err: w.send_err,
            },
        )
    }
}

/// Writes that can share one [`Pair`].
fn group_key(w: &Write) -> (bool, &'static str, bool, Option<u64>) {
    (
        w.scheme == Scheme::Part,
        w.policy.name(),
        w.send_err,
        w.timeout_us.map(f64::to_bits),
    )
}

impl Testbed for LiveTestbed {
    fn backend(&self) -> &'static str {
        "live"
    }

    fn measure(
        &mut self,
        writes: &[Write],
        progress: &(dyn Fn(u64, u64) + Sync),
    ) -> Result<Vec<Measured>, ExperimentError> {
        let mut keys = Vec::new();
        for w in writes {
            if !keys.contains(&group_key(w)) {
                keys.push(group_key(w));
            }
        }
        let mut out: Vec<Option<Measured>> = vec![None; writes.len()];
        let mut done = 0;
        for key in keys {
            let members: Vec<usize> = (0..writes.len())
                .filter(|&i| group_key(&writes[i]) == key)
                .collect();
            let pair = self.pair(&writes[members[0]])?;
            for i in members {
                let w = &writes[i];
                out[i] = Some(match w.scheme {
                    Scheme::Part => part_write(&pair, w)?,
                    _ => scheme_write(&pair, w)?,
                });
                done += 1;
                progress(done, writes.len() as u64);
            }
        }
        Ok(out
            .into_iter()
            .map(|m| m.expect("every write is in a group"))
            .collect())
    }

    fn meta(&self, writes: &[Write]) -> serde_json::Map<String, serde_json::Value> {
        let mut m = serde_json::Map::new();
        let reps = writes.iter().map(|w| w.reps).max().unwrap_or(1);
        m.insert("reps".into(), reps.into());
        m.insert(
            "transport".into(),
            "shm (two runtimes in one process)".into(),
        );
        m.insert("live".into(), "Medians of reps. fault_interrupts = fault records handed to the page-in thread (one per faulting block attempt: the live counterpart of the IOMMU fault interrupt). PART writes go into fresh memory per repetition; Touch/Pin rows do the CPU work at the destination (touch, or mlock before and munlock after) around a transfer on the Transfer-Only engine; NoPres rows use fresh memory per repetition.".into());
        m
    }
}

/// Counters of the pair, as a [`Measured`] without timings.
fn counters(pair: &Pair) -> Result<Measured, ExperimentError> {
    let (s, t) = pair.stats()?;
    Ok(Measured {
        fault_interrupts: t.handler.records,
        errs: t.handler.errs,
        resent_bytes: s.engine.data_bytes_resent,
        retransmits_err: s.engine.retransmits_err,
        retransmits_timeout: s.engine.retransmits_timeout,
        ..Measured::default()
    })
}

/// The counters between `a` and `b`, with the given timings.
fn between(a: &Measured, b: &Measured, cpu_us: f64, transfer_us: f64) -> Measured {
    Measured {
        latency_us: cpu_us + transfer_us,
        cpu_us,
        transfer_us,
        fault_interrupts: b.fault_interrupts - a.fault_interrupts,
        errs: b.errs - a.errs,
        resent_bytes: b.resent_bytes - a.resent_bytes,
        retransmits_err: b.retransmits_err - a.retransmits_err,
        retransmits_timeout: b.retransmits_timeout - a.retransmits_timeout,
        events: 0,
    }
}

/// The repetition of median latency, with the medians of its timings.
fn median_rep(mut reps: Vec<Measured>) -> Measured {
    let cpu = median(reps.iter().map(|r| r.cpu_us).collect());
    let transfer = median(reps.iter().map(|r| r.transfer_us).collect());
    let m = median(reps.iter().map(|r| r.latency_us).collect());
    let i = reps.iter().position(|r| r.latency_us == m).unwrap_or(0);
    let mut r = reps.swap_remove(i);
    r.cpu_us = cpu;
    r.transfer_us = transfer;
    r
}

/// Fresh memory for a `size`-byte destination with every page present except those flagged
/// in `missing` (one flag per page, `true` = missing; see [`missing_pages`]).
pub fn destination(size: u64, missing: &[bool]) -> Result<Mapping, ExperimentError> {
    let page = unpinned_core::memory::PAGE_BYTES as usize;
    let dst = Mapping::anon(size as usize).map_err(fail)?;
    for (p, _) in missing.iter().enumerate().filter(|(_, &m)| !m) {
        if p * page < dst.len() {
            // SAFETY: our fresh mapping, not exposed yet.
            unsafe { touch_pages(dst.ptr().add(p * page), 1) };
        }
    }
    Ok(dst)
}

/// A PART write: `reps` writes into fresh memory with the seed's missing pages.
fn part_write(pair: &Pair, w: &Write) -> Result<Measured, ExperimentError> {
    let src = pattern(w.size ^ 0x5a, w.size as usize);
    let missing = missing_pages(w.seed, w.size, w.missing);
    let mut reps = Vec::new();
    for _ in 0..w.reps.max(1) {
        let dst = destination(w.size, &missing)?;
        // SAFETY: `dst` outlives the exposure (revoked below) and is read only after the write.
        let key = unsafe { pair.expose(dst.ptr(), dst.len()) }?;
        let before = counters(pair)?;
        let lat = pair.write_us(&src, dst.addr(), key)?;
        let after = counters(pair)?;
        verify(&dst, &src, "PART write")?;
        pair.revoke(key);
        reps.push(between(&before, &after, 0.0, lat));
    }
    Ok(median_rep(reps))
}

/// A write of a present-memory scheme: a warm-up transfer, then `reps` of the scheme.
fn scheme_write(pair: &Pair, w: &Write) -> Result<Measured, ExperimentError> {
    let src = pattern(w.size, w.size as usize);
    let dst = present(w.size as usize)?;
    // SAFETY: `dst` outlives the exposure (revoked below) and is read between transfers only.
    let key = unsafe { pair.expose(dst.ptr(), dst.len()) }?;
    // Warm-up: the first transfer after start pays thread wake-ups.
    pair.write_us(&src, dst.addr(), key)?;
    let mut reps = Vec::new();
    for _ in 0..w.reps.max(1) {
        let before = counters(pair)?;
        let (cpu, x) = one(pair, w.scheme, &src, &dst, key)?;
        let after = counters(pair)?;
        reps.push(between(&before, &after, cpu, x));
    }
    verify(&dst, &src, w.scheme.name())?;
    pair.revoke(key);
    Ok(median_rep(reps))
}

/// One transfer of `scheme`: (cpu_us, transfer_us). `dst` is the present destination.
fn one(
    pair: &Pair,
    scheme: Scheme,
    src: &[u8],
    dst: &Mapping,
    key: RemoteKey,
) -> Result<(f64, f64), ExperimentError> {
    let us = |t0: Instant| t0.elapsed().as_secs_f64() * 1e6;
    let len = src.len();
    match scheme {
        Scheme::TransferOnly | Scheme::Part => Ok((0.0, pair.write_us(src, dst.addr(), key)?)),
        Scheme::TouchPres => {
            let t0 = Instant::now();
            // SAFETY: `dst` is ours and no transfer is in flight.
            unsafe { touch_pages(dst.ptr(), len) };
            let cpu = us(t0);
            Ok((cpu, pair.write_us(src, dst.addr(), key)?))
        }
        Scheme::PinPres => {
            let t0 = Instant::now();
            mlock_range(dst.ptr(), len, true).map_err(fail)?;
            let mut cpu = us(t0);
            let x = pair.write_us(src, dst.addr(), key)?;
            let t0 = Instant::now();
            mlock_range(dst.ptr(), len, false).map_err(fail)?;
            cpu += us(t0);
            Ok((cpu, x))
        }
        Scheme::TouchNoPres | Scheme::PinNoPres => {
            let fresh = Mapping::anon(len).map_err(fail)?;
            // SAFETY: `fresh` outlives the exposure (revoked below).
            let k = unsafe { pair.expose(fresh.ptr(), len) }?;
            let t0 = Instant::now();
            if scheme == Scheme::TouchNoPres {
                // SAFETY: our fresh mapping, not yet written by anyone.
                unsafe { touch_pages(fresh.ptr(), len) };
            } else {
                mlock_range(fresh.ptr(), len, true).map_err(fail)?;
            }
            let mut cpu = us(t0);
            let x = pair.write_us(src, fresh.addr(), k)?;
            if scheme == Scheme::PinNoPres {
                let t0 = Instant::now();
                mlock_range(fresh.ptr(), len, false).map_err(fail)?;
                cpu += us(t0);
            }
            verify(&fresh, src, scheme.name())?;
            pair.revoke(k);
            Ok((cpu, x))
        }
    }
}
