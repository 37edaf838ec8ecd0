//! Network and IOMMU resources of the model (spec "Calibration").
//!
//! - NIC: each node serializes its outgoing and incoming messages at the larger of the link
//!   serialization time and the NIC's per-message time (message rate).
//! - Flight: NIC processing at both ends plus `hops` router hops of the 3-D torus
//!   (`Topology::Torus3d`); or one Ethernet latency for the spec's two-machine check.
//! - IOMMU: `concurrency` accesses in flight; each holds its slot for 5 ns + 70 ns per
//!   additional memory access (page-walk accesses on an IOTLB miss, log writes, the access
//!   itself) plus streaming time for bulk data. The IOTLB is `unpinned_core`'s `Tlb`.

use unpinned_aa::profile::AaProfile;
use unpinned_core::iommu::{Replacement, Tlb};
use unpinned_core::rng::derive_seed;

use crate::net::Topology;

/// IOTLB geometry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IotlbConfig {
    /// Entries.
    pub entries: u32,
    /// Ways (entries = fully associative).
    pub ways: u32,
    /// Replacement.
    pub policy: Replacement,
}

/// Counters of the platform.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PlatformStats {
    /// Messages sent.
    pub messages: u64,
    /// Payload bytes sent.
    pub bytes: u64,
    /// Payload bytes x hops (router energy).
    pub byte_hops: u64,
    /// IOTLB hits.
    pub tlb_hits: u64,
    /// IOTLB misses.
    pub tlb_misses: u64,
}

/// The shared hardware of all nodes.
pub struct Platform {
    prof: AaProfile,
    topo: Topology,
    ethernet: bool,
    tx_free: Vec<u64>,
    rx_free: Vec<u64>,
    iommu_free: Vec<Vec<u64>>,
    tlbs: Vec<Tlb>,
    /// Counters.
    pub stats: PlatformStats,
}

/// A torus for `nodes` nodes: the most cubic x*y*z = nodes with x >= y >= z.
///
/// Only shapes with x >= y >= z qualify, so z^3 <= nodes and z*y^2 <= nodes bound the search
/// (in u64, so no product wraps for any u32 node count); the order of the search and the
/// tie-break (first strictly smaller x - z) are those of the exhaustive search.
#[allow(clippy::manual_is_multiple_of)] // is_multiple_of is newer than rust-version 1.80
pub fn torus_for(nodes: u32) -> Topology {
    let n = u64::from(nodes.max(1));
    let mut best = (n, 1u64, 1u64);
    let mut z = 1u64;
    while z * z * z <= n {
        let mut y = z;
        while z * y * y <= n {
            if n % (y * z) == 0 {
                let x = n / (y * z);
                if x - z < best.0 - best.2 {
                    best = (x, y, z);
                }
            }
            y += 1;
        }
        z += 1;
    }
    // Each factor divides `n`, itself a u32.
    Topology::Torus3d {
        x: best.0 as u32,
        y: best.1 as u32,
        z: best.2 as u32,
    }
}

impl Platform {
    /// `nodes` nodes on a torus (or two on Ethernet when `ethernet`).
    pub fn new(
        prof: &AaProfile,
        nodes: u32,
        iotlb: IotlbConfig,
        ethernet: bool,
        seed: u64,
    ) -> Platform {
        let n = nodes as usize;
        Platform {
            prof: prof.clone(),
            topo: torus_for(nodes),
            ethernet,
            tx_free: vec![0; n],
            rx_free: vec![0; n],
            iommu_free: vec![vec![0; prof.iommu.concurrency as usize]; n],
            tlbs: (0..n)
                .map(|i| {
                    Tlb::new(
                        iotlb.entries as usize,
                        iotlb.ways as usize,
                        iotlb.policy,
                        derive_seed(seed, &format!("aa.iotlb.{i}")),
                    )
                })
                .collect(),
            stats: PlatformStats::default(),
        }
    }

    fn wire_ns(&self, bytes: u32) -> u64 {
        let (on_wire, gbps) = if self.ethernet {
            let e = &self.prof.ethernet;
            (
                (bytes + e.frame_overhead_bytes).max(e.min_frame_bytes),
                e.link_gbps,
            )
        } else {
            (bytes + self.prof.net.header_bytes, self.prof.net.link_gbps)
        };
        (on_wire as f64 * 8.0 / gbps).ceil() as u64
    }

    fn slot_ns(&self, bytes: u32) -> u64 {
        let w = self.wire_ns(bytes);
        if self.ethernet {
            w
        } else {
            w.max(self.prof.net.nic_msg_ns)
        }
    }

    /// A message of `bytes` payload leaves node `src` for `dst` at `now` (or when the NIC is
    /// free): returns when it reaches `dst`'s NIC.
    pub fn send(&mut self, src: u32, dst: u32, bytes: u32, now: u64) -> u64 {
        let slot = self.slot_ns(bytes);
        let depart = now.max(self.tx_free[src as usize]);
        self.tx_free[src as usize] = depart + slot;
        let hops = if src == dst {
            0
        } else {
            self.topo.hops(src, dst) as u64
        };
        let flight = if self.ethernet {
            self.prof.ethernet.latency_ns
        } else {
            2 * self.prof.net.nic_ns + hops * self.prof.net.hop_ns
        };
        self.stats.messages += 1;
        self.stats.bytes += bytes as u64;
        self.stats.byte_hops += bytes as u64 * hops.max(1);
        depart + self.wire_ns(bytes) + flight
    }

    /// A put's completion travelling back from `src` (the target) to `dst` (the source) on
    /// the torus, sent at `now`: returns when the source's NIC has it. Not a message (spec
    /// "Where the schemes' costs come from": on the reference platform a one-directional put is
    /// one message): it takes neither NIC's message slot nor link time and is not counted,
    /// only the flight (both NICs and the hops).
    pub fn completion(&self, src: u32, dst: u32, now: u64) -> u64 {
        let hops = if src == dst {
            0
        } else {
            self.topo.hops(src, dst) as u64
        };
        now + 2 * self.prof.net.nic_ns + hops * self.prof.net.hop_ns
    }

    /// The message is taken off the link into `dst`'s NIC: returns when it is in.
    pub fn receive(&mut self, dst: u32, bytes: u32, now: u64) -> u64 {
        let slot = self.slot_ns(bytes);
        let start = now.max(self.rx_free[dst as usize]);
        self.rx_free[dst as usize] = start + slot;
        start + slot
    }

    /// The IOMMU of `node` handles an access at `now`: translates `pages` (pdid, vpn), makes
    /// `accesses` additional memory accesses and streams `stream_bytes`. Returns when done.
    pub fn iommu(
        &mut self,
        node: u32,
        now: u64,
        pages: &[(u16, u64)],
        accesses: u32,
        stream_bytes: u64,
    ) -> u64 {
        let mut acc = accesses as u64;
        let tlb = &mut self.tlbs[node as usize];
        for &(pdid, vpn) in pages {
            if tlb.lookup(pdid, vpn) {
                self.stats.tlb_hits += 1;
            } else {
                self.stats.tlb_misses += 1;
                tlb.insert(pdid, vpn);
                acc += self.prof.iommu.walk_accesses as u64;
            }
        }
        let stream = (stream_bytes as f64 / self.prof.cpu.memory_gbps).ceil() as u64;
        let cost = self.prof.iommu.base_ns + acc * self.prof.iommu.extra_access_ns + stream;
        let slots = &mut self.iommu_free[node as usize];
        let (i, &free) = slots
            .iter()
            .enumerate()
            .min_by_key(|(_, f)| **f)
            .expect("concurrency > 0");
        let start = now.max(free);
        slots[i] = start + cost;
        start + cost
    }

    /// Without an IOMMU in the path: the NIC's DMA of `stream_bytes` into `node`'s memory at
    /// `now` costs only the streaming time (no translation, no per-access IOMMU work); the
    /// same DMA pipelines as [`Platform::iommu`]. Returns when done.
    pub fn dma(&mut self, node: u32, now: u64, stream_bytes: u64) -> u64 {
        let cost = (stream_bytes as f64 / self.prof.cpu.memory_gbps).ceil() as u64;
        let slots = &mut self.iommu_free[node as usize];
        let (i, &free) = slots
            .iter()
            .enumerate()
            .min_by_key(|(_, f)| **f)
            .expect("concurrency > 0");
        let start = now.max(free);
        slots[i] = start + cost;
        start + cost
    }

    /// Hops between two nodes.
    pub fn hops(&self, a: u32, b: u32) -> u32 {
        if a == b {
            0
        } else {
            self.topo.hops(a, b)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn torus_shapes() {
        assert_eq!(torus_for(64), Topology::Torus3d { x: 4, y: 4, z: 4 });
        assert_eq!(torus_for(16), Topology::Torus3d { x: 4, y: 2, z: 2 });
        assert_eq!(torus_for(1), Topology::Torus3d { x: 1, y: 1, z: 1 });
    }

    /// The bounded search finds what the exhaustive one finds, and node counts whose
    /// exhaustive search wrapped a u32 product (65,536; 100,000; u32::MAX) get a torus.
    #[test]
    fn torus_shapes_match_exhaustive_search_and_large_counts_do_not_wrap() {
        fn exhaustive(n: u64) -> (u64, u64, u64) {
            let mut best = (n, 1, 1);
            for z in 1..=n {
                for y in z..=n {
                    if n % (y * z) == 0 {
                        let x = n / (y * z);
                        if x >= y && x - z < best.0 - best.2 {
                            best = (x, y, z);
                        }
                    }
                }
            }
            best
        }
        for n in 1..=300u32 {
            let (x, y, z) = exhaustive(u64::from(n));
            assert_eq!(
                torus_for(n),
                Topology::Torus3d {
                    x: x as u32,
                    y: y as u32,
                    z: z as u32
                },
                "{n} nodes"
            );
        }
        for n in [65_536u32, 100_000, 1 << 31, u32::MAX] {
            let Topology::Torus3d { x, y, z } = torus_for(n) else {
                panic!("not a torus")
            };
            assert_eq!(u64::from(x) * u64::from(y) * u64::from(z), u64::from(n));
            assert!(x >= y && y >= z, "{n}: {x}x{y}x{z}");
        }
        assert_eq!(
            torus_for(65_536),
            Topology::Torus3d {
                x: 64,
                y: 32,
                z: 32
            }
        );
    }

    #[test]
    fn iotlb_miss_costs_a_walk() {
        let p = AaProfile::cray_xe6();
        let mut pl = Platform::new(
            &p,
            1,
            IotlbConfig {
                entries: 4,
                ways: 4,
                policy: Replacement::Lru,
            },
            false,
            1,
        );
        let miss = pl.iommu(0, 0, &[(0, 1)], 1, 0);
        let hit = pl.iommu(0, 0, &[(0, 1)], 1, 0);
        assert_eq!(miss, 5 + 70 * 3);
        assert_eq!(hit, 5 + 70);
    }
}
