//! Topology and links.
//!
//! Each node has one NI port: packets serialize on the sender's output link at the link
//! bandwidth, travel `hops` hops of `hop_latency` each (cut-through switching), and serialize
//! again into the receiver's input port (so many-to-one traffic queues there). Contention inside
//! the network is not modelled; endpoint ports are.

use unpinned_core::api::NodeId;

/// How nodes are connected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Topology {
    /// Every pair of nodes is `hops` hops apart.
    Uniform {
        /// Hops between any two nodes.
        hops: u32,
    },
    /// A 3-D torus of `x * y * z` nodes; hops = wrap-around Manhattan distance.
    Torus3d {
        /// Size in x.
        x: u32,
        /// Size in y.
        y: u32,
        /// Size in z.
        z: u32,
    },
    /// A fat tree (folded Clos) whose switches have `down` ports towards the nodes: nodes
    /// under one leaf switch are 2 hops apart, nodes whose lowest common ancestor is `l`
    /// levels up are `2 l` hops apart. Full bisection bandwidth (the upper levels have as
    /// many up as down ports), so, like the torus here, only endpoint ports contend.
    FatTree {
        /// Down ports per switch (nodes per leaf switch).
        down: u32,
    },
}

impl Topology {
    /// The fewest hops between any two nodes (a node to itself included): the lookahead of a
    /// parallel run rests on it (`Sim::lookahead`).
    pub fn min_hops(&self) -> u32 {
        match *self {
            Topology::Uniform { hops } => hops,
            Topology::Torus3d { .. } => 1,
            Topology::FatTree { .. } => 2,
        }
    }

    /// Hops from `a` to `b` (at least 1 between distinct nodes).
    pub fn hops(&self, a: NodeId, b: NodeId) -> u32 {
        match *self {
            Topology::Uniform { hops } => hops,
            Topology::Torus3d { x, y, z } => {
                torus_distance(torus_coord(a, x, y, z), torus_coord(b, x, y, z), [x, y, z])
            }
            Topology::FatTree { down } => {
                let down = down.max(2);
                let (mut a, mut b, mut levels) = (a / down, b / down, 1);
                while a != b {
                    a /= down;
                    b /= down;
                    levels += 1;
                }
                2 * levels
            }
        }
    }
}

/// A node's (x, y, z) place in a 3-D torus of sizes `x * y * z`.
fn torus_coord(n: u32, x: u32, y: u32, z: u32) -> [u32; 3] {
    [n % x, (n / x) % y, n / (x * y) % z]
}

/// Hops between two places of a 3-D torus of sizes `dims`: the wrap-around Manhattan
/// distance, at least 1.
#[inline]
fn torus_distance(a: [u32; 3], b: [u32; 3], dims: [u32; 3]) -> u32 {
    let d = |i: usize| {
        let d = a[i].abs_diff(b[i]);
        d.min(dims[i] - d)
    };
    (d(0) + d(1) + d(2)).max(1)
}

/// [`Topology::hops`] for a run's nodes, with the torus places computed once: the simulator
/// asks for every packet, and a torus place costs three divisions per node (six per packet).
#[derive(Clone, Debug)]
pub struct Hops {
    topology: Topology,
    /// Torus places by node (empty for other topologies, or sizes beyond `u16`).
    places: Vec<[u16; 3]>,
}

impl Hops {
    /// The hop counts between `nodes` nodes connected by `topology`.
    pub fn new(topology: Topology, nodes: u32) -> Hops {
        let places = match topology {
            Topology::Torus3d { x, y, z } if x.max(y).max(z) <= u16::MAX as u32 => (0..nodes)
                .map(|n| torus_coord(n, x, y, z).map(|c| c as u16))
                .collect(),
            _ => Vec::new(),
        };
        Hops { topology, places }
    }

    /// Hops from `a` to `b`, as [`Topology::hops`].
    #[inline]
    pub fn get(&self, a: NodeId, b: NodeId) -> u32 {
        match self.topology {
            Topology::Uniform { hops } => hops,
            Topology::Torus3d { x, y, z } => {
                match (self.places.get(a as usize), self.places.get(b as usize)) {
                    (Some(pa), Some(pb)) => {
                        torus_distance(pa.map(u32::from), pb.map(u32::from), [x, y, z])
                    }
                    _ => self.topology.hops(a, b),
                }
            }
            Topology::FatTree { .. } => self.topology.hops(a, b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precomputed_hops_are_the_topologys() {
        for t in [
            Topology::Uniform { hops: 3 },
            Topology::Torus3d { x: 4, y: 3, z: 5 },
            Topology::Torus3d { x: 2, y: 2, z: 1 },
            Topology::FatTree { down: 4 },
        ] {
            let nodes = 60;
            let h = Hops::new(t, nodes);
            for a in 0..nodes {
                for b in 0..nodes {
                    assert!(t.hops(a, b) >= t.min_hops(), "{t:?} {a} -> {b}");
                }
            }
            // Beyond the nodes given (a packet to a node that does not exist): still the same.
            for a in 0..nodes + 2 {
                for b in 0..nodes + 2 {
                    assert_eq!(h.get(a, b), t.hops(a, b), "{t:?} {a} -> {b}");
                }
            }
        }
    }

    #[test]
    fn torus_distance_wraps() {
        let t = Topology::Torus3d { x: 4, y: 4, z: 4 };
        assert_eq!(t.hops(0, 3), 1, "0 and 3 are neighbours across the wrap");
        assert_eq!(t.hops(0, 2), 2);
        assert_eq!(t.hops(0, 4 + 16 + 1), 3);
    }

    #[test]
    fn fat_tree_distance_by_common_ancestor() {
        let t = Topology::FatTree { down: 16 };
        assert_eq!(t.hops(0, 15), 2, "same leaf switch");
        assert_eq!(t.hops(0, 16), 4, "same second-level switch");
        assert_eq!(t.hops(0, 255), 4);
        assert_eq!(t.hops(0, 256), 6);
        assert_eq!(t.hops(4095, 0), 6, "4096 nodes: three levels");
    }
}
