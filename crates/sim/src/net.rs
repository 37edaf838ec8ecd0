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
    /// Hops from `a` to `b` (at least 1 between distinct nodes).
    pub fn hops(&self, a: NodeId, b: NodeId) -> u32 {
        match *self {
            Topology::Uniform { hops } => hops,
            Topology::Torus3d { x, y, z } => {
                let coord = |n: u32| (n % x, (n / x) % y, n / (x * y) % z);
                let (a, b) = (coord(a), coord(b));
                let d = |p: u32, q: u32, size: u32| {
                    let d = p.abs_diff(q);
                    d.min(size - d)
                };
                (d(a.0, b.0, x) + d(a.1, b.1, y) + d(a.2, b.2, z)).max(1)
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

#[cfg(test)]
mod tests {
    use super::*;
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
