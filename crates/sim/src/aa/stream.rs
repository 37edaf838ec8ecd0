//! A netperf-like stream on the AA model: one process puts `messages` messages of `bytes`
//! each to one process on the other node (window-limited, then an RMA flush). With
//! `WorldConfig::iommu` on and off it measures what the IOMMU in the DMA path costs in
//! bandwidth (spec "Calibration: ... the bandwidth cost of putting the IOMMU in the path at
//! all").
//!
//! Every put carries its sequence number; the target keeps the highest one per address, and
//! the run checks that every message arrived.

use unpinned_aa::log::EntryKind;

use super::world::{AppOp, Handled, Workload};

/// Where the stream lands at the target: a ring of 64 MiB.
const STREAM_BASE: u64 = 0x20_0000_0000;
const STREAM_RING: u64 = 64 << 20;

/// The stream workload.
pub struct StreamWorkload {
    source: u32,
    target: u32,
    bytes: u32,
    messages: u64,
    sent: u64,
    flushed: bool,
    /// Puts applied at the target.
    pub received: u64,
}

impl StreamWorkload {
    /// `messages` puts of `bytes` from process `source` to process `target`.
    pub fn new(source: u32, target: u32, bytes: u32, messages: u64) -> StreamWorkload {
        StreamWorkload {
            source,
            target,
            bytes,
            messages,
            sent: 0,
            flushed: false,
            received: 0,
        }
    }

    /// Payload bytes of the whole stream.
    pub fn total_bytes(&self) -> u64 {
        self.messages * self.bytes as u64
    }
}

impl Workload for StreamWorkload {
    fn next(&mut self, p: u32, _result: Option<u64>) -> Option<AppOp> {
        if p != self.source {
            return None;
        }
        if self.sent < self.messages {
            let i = self.sent;
            self.sent += 1;
            return Some(AppOp::Put {
                target: self.target,
                addr: STREAM_BASE + (i * self.bytes as u64) % STREAM_RING,
                value: i + 1,
                bytes: self.bytes,
            });
        }
        if !self.flushed {
            self.flushed = true;
            return Some(AppOp::Flush);
        }
        None
    }

    fn put(&mut self, target: u32, _addr: u64, _value: u64) {
        if target == self.target {
            self.received += 1;
        }
    }

    fn handle(&mut self, _t: u32, _s: u32, _k: EntryKind, _a: u64, _v: u64) -> Handled {
        Handled::default()
    }
}

/// Run a stream of `messages` x `bytes` between the two nodes of `cfg` (Ethernet or
/// torus); returns (payload bytes per second, run stats). Fails if a message is missing.
pub fn run_stream(
    prof: &unpinned_aa::profile::AaProfile,
    cfg: super::WorldConfig,
    bytes: u32,
    messages: u64,
) -> Result<(f64, super::RunStats), String> {
    let per_node = cfg.app_per_node(prof);
    let wl = StreamWorkload::new(0, per_node, bytes, messages);
    let mut w = super::AaWorld::new(prof, cfg, wl);
    let st = w.run()?;
    if w.wl.received != messages {
        return Err(format!("{} of {messages} messages arrived", w.wl.received));
    }
    Ok((
        w.wl.total_bytes() as f64 / st.makespan_ns.max(1) as f64 * 1e9,
        st,
    ))
}
