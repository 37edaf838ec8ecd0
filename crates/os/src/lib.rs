//! What the live runtime needs to know from Linux about this process's memory and CPUs, with
//! no engine and no protocol in it: the layer under `unpinned-live` (and `unpinned-dsm-live`).
//!
//! - [`scan`]: residency of a range by `PAGEMAP_SCAN` (Linux 6.7+).
//! - [`maps`]: whether a range is mapped, with which permissions, and whether it is private
//!   anonymous memory (`mincore`, [`procmap`]'s `PROCMAP_QUERY`, `/proc/self/maps`).
//! - [`populate`]: bringing pages in (`MADV_POPULATE_*`, or a touch per page).
//! - [`uffd_abi`] and [`residency_cache`]: the userfaultfd ABI and the translation cache
//!   built on it (write-protect and missing-page events that invalidate residency verdicts).
//! - [`mapping`]: owned anonymous and file-backed mappings (tests, benchmarks, applications).
//! - [`affinity`]: pinning threads to CPUs.
//! - [`safecopy`]: copies that report an unmapped source or destination instead of faulting.
//! - [`sigchain`]: fault handlers that pass the faults they do not own to the one before them.

#![warn(missing_docs)]

pub mod affinity;
pub mod mapping;
pub mod maps;
pub mod populate;
pub mod procmap;
pub mod residency_cache;
pub mod safecopy;
pub mod scan;
pub mod sigchain;
pub mod uffd_abi;

/// Bytes per page: the base page size of every Linux target this crate supports (x86-64,
/// aarch64 with 4 KiB pages). Equal to `unpinned_core::memory::PAGE_BYTES`.
pub const PAGE_BYTES: u64 = 4096;

/// Start of the page holding `addr`.
pub const fn page_of(addr: u64) -> u64 {
    addr & !(PAGE_BYTES - 1)
}

/// Unit tests that unmap memory and then probe the hole must not race with other tests that
/// map memory (a new mapping could land in the hole).
#[cfg(test)]
pub(crate) static MAP_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
