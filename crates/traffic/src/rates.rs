//! How fast a node computes: the documented parameters behind every compute phase.
//!
//! Compute times come from each method's operation count divided by a node's rate; none is
//! fitted to a wanted slowdown. The defaults describe the forth-arm reference node (quad
//! ARMv8 Cortex-A53 at 1.2 GHz); the efficiencies are assumptions, reported in every run's
//! metadata and changeable with `--set exp.NAME=VALUE`.

use serde::Serialize;

/// A node's compute rates.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct NodeRates {
    /// Threads (cores) per node working on the rank's compute phases.
    pub threads: u32,
    /// Peak double-precision rate of one core, GFLOP/s (A53: one FP64 multiply-add per cycle
    /// at 1.2 GHz = 2.4).
    pub core_peak_gflops: f64,
    /// Fraction of peak a dense matrix multiply sustains (HPL's trailing update). Assumption.
    pub dgemm_efficiency: f64,
    /// Fraction of peak a pair-force kernel sustains (molecular dynamics). Assumption.
    pub md_efficiency: f64,
    /// Sustained memory bandwidth of a node, GB/s (sparse kernels are bandwidth-bound).
    /// Assumption for a board of this class.
    pub mem_gbps: f64,
}

impl Default for NodeRates {
    fn default() -> Self {
        NodeRates {
            threads: 4,
            core_peak_gflops: 2.4,
            dgemm_efficiency: 0.8,
            md_efficiency: 0.1,
            mem_gbps: 3.2,
        }
    }
}

impl NodeRates {
    /// Nanoseconds for `flops` of dense linear algebra.
    pub fn dgemm_ns(&self, flops: f64) -> u64 {
        (flops / (self.threads as f64 * self.core_peak_gflops * self.dgemm_efficiency)).round()
            as u64
    }

    /// Nanoseconds for `flops` of pair-force computation.
    pub fn md_ns(&self, flops: f64) -> u64 {
        (flops / (self.threads as f64 * self.core_peak_gflops * self.md_efficiency)).round() as u64
    }

    /// Nanoseconds to stream `bytes` through memory.
    pub fn stream_ns(&self, bytes: f64) -> u64 {
        (bytes / self.mem_gbps).round() as u64
    }
}
