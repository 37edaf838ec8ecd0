//! Test helpers of the workspace: the one seed convention of every randomized test. (Two
//! network namespaces joined by a veth pair: `unpinned_live::launch::veth`.)
//!
//! A randomized test runs a fixed list of seeds by default, so CI is deterministic.
//! - `UNPINNED_TEST_SEED=S` runs seed `S` only (to reproduce a failure);
//! - `UNPINNED_TEST_SEEDS=N` runs seeds `0..N` instead of the default list (a soak).
//!
//! [`for_each_seed`] prints the failing seed with the command that reruns it, e.g.
//! `seed 17 failed; rerun: UNPINNED_TEST_SEED=17 cargo test -p unpinned-sim --test random`.
//! A value that is not a number is an error naming the variable, never a silent default; the
//! test suites' other numeric knobs go through [`number_or`] for the same reason.

#![warn(missing_docs)]

use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

use unpinned_core::memory::{MemError, Memory, Pdid};

/// Environment variable: run this one seed.
pub const ENV_SEED: &str = "UNPINNED_TEST_SEED";
/// Environment variable: run seeds `0..N`.
pub const ENV_SEEDS: &str = "UNPINNED_TEST_SEEDS";

fn number(var: &str) -> Option<u64> {
    let v = std::env::var(var).ok()?;
    Some(
        v.trim()
            .parse()
            .unwrap_or_else(|e| panic!("{var}={v:?} is not a number ({e})")),
    )
}

/// A numeric size knob of a test harness (`UNPINNED_TEST_...`-style variables that scale a
/// test up for a soak): the variable's value, else `default`; a value that is not a number
/// panics naming the variable.
pub fn number_or(var: &str, default: u64) -> u64 {
    number(var).unwrap_or(default)
}

/// The seeds to run: [`ENV_SEED`] alone, else `0..`[`ENV_SEEDS`], else `0..default_count`.
pub fn seeds(default_count: u64) -> Vec<u64> {
    if let Some(s) = number(ENV_SEED) {
        return vec![s];
    }
    (0..number(ENV_SEEDS).unwrap_or(default_count)).collect()
}

/// The one seed of a test that runs one: [`ENV_SEED`], else `default`. Printed, with how to
/// rerun it, so a failure's log names it.
pub fn seed(default: u64, rerun: &str) -> u64 {
    let s = number(ENV_SEED).unwrap_or(default);
    eprintln!("seed {s} (rerun: {ENV_SEED}={s} {rerun})");
    s
}

/// Run `f` for every seed of [`seeds`]`(default_count)`; the first that panics is reported
/// with the command that reruns it alone (`rerun`: e.g. `cargo test -p CRATE --test FILE`),
/// then the panic continues.
pub fn for_each_seed(rerun: &str, default_count: u64, mut f: impl FnMut(u64)) {
    for seed in seeds(default_count) {
        if let Err(p) = catch_unwind(AssertUnwindSafe(|| f(seed))) {
            eprintln!("seed {seed} failed; rerun: {ENV_SEED}={seed} {rerun}");
            resume_unwind(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_seed_is_reported_and_the_panic_goes_on() {
        if std::env::var_os(ENV_SEED).is_some() || std::env::var_os(ENV_SEEDS).is_some() {
            return; // the defaults below assume neither is set
        }
        assert_eq!(seeds(3), [0, 1, 2]);
        let mut ran = Vec::new();
        let r = catch_unwind(AssertUnwindSafe(|| {
            for_each_seed("cargo test -p unpinned-testkit", 5, |s| {
                ran.push(s);
                assert!(s != 2, "seed 2 fails");
            })
        }));
        assert!(r.is_err());
        assert_eq!(ran, [0, 1, 2]);
    }
}

/// Deterministic test bytes: `len` bytes of a xorshift stream started from `seed`.
pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// First address of a [`FlatMemory`].
pub const FLAT_BASE: u64 = 0x1000_0000;

/// Memory at `[FLAT_BASE, FLAT_BASE + len)` with every page present, for driving an engine by
/// hand (engine tests, examples); an access outside it is `Unmapped`.
pub struct FlatMemory(pub Vec<u8>);

impl FlatMemory {
    /// The little-endian 64-bit word at `addr` (panics outside the memory).
    pub fn word(&self, addr: u64) -> u64 {
        let off = (addr - FLAT_BASE) as usize;
        u64::from_le_bytes(self.0[off..off + 8].try_into().expect("8 bytes"))
    }

    fn range(&mut self, addr: u64, len: usize) -> Result<&mut [u8], MemError> {
        let off = addr
            .checked_sub(FLAT_BASE)
            .ok_or(MemError::Unmapped { addr })? as usize;
        self.0
            .get_mut(off..off.saturating_add(len))
            .ok_or(MemError::Unmapped { addr })
    }
}

impl Memory for FlatMemory {
    fn write(&mut self, _: Pdid, addr: u64, data: &[u8]) -> Result<(), MemError> {
        self.range(addr, data.len())?.copy_from_slice(data);
        Ok(())
    }
    fn read(&mut self, _: Pdid, addr: u64, out: &mut [u8]) -> Result<(), MemError> {
        out.copy_from_slice(self.range(addr, out.len())?);
        Ok(())
    }
}
