//! The seeded RNG tree: one master seed; every component draws from a generator derived from
//! it by name, and a sub-system gets a sub-tree of its own, so adding a component or a draw
//! never perturbs the random streams of the others.

use unpinned_core::rng::{derive_seed, rng_for, SimRng};

/// A node of the tree: a seed from which generators and sub-trees are derived by label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RngTree {
    seed: u64,
}

impl RngTree {
    /// The root of a run's tree. Its generators are [`rng_for`]`(master, label)`: the streams
    /// every world drew before the kernel existed.
    pub fn new(master: u64) -> RngTree {
        RngTree { seed: master }
    }

    /// This node's seed (the master seed at the root).
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The generator of component `label`.
    pub fn rng(&self, label: &str) -> SimRng {
        rng_for(self.seed, label)
    }

    /// The sub-tree of sub-system `label` (its generators are independent of this node's).
    pub fn child(&self, label: &str) -> RngTree {
        RngTree {
            seed: derive_seed(self.seed, &format!("tree/{label}")),
        }
    }

    /// The sub-seed of component `label` (for components that take a seed, not a generator).
    pub fn sub_seed(&self, label: &str) -> u64 {
        derive_seed(self.seed, label)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use unpinned_core::rng::Rng;

    #[test]
    fn the_root_keeps_the_old_streams_and_children_are_independent() {
        let t = RngTree::new(9);
        assert_eq!(
            t.rng("faults").gen::<u64>(),
            rng_for(9, "faults").gen::<u64>()
        );
        let c = t.child("faults");
        assert_ne!(c.rng("x").gen::<u64>(), t.rng("x").gen::<u64>());
        assert_eq!(c, t.child("faults"));
        assert_ne!(c.seed(), t.child("swarm").seed());
    }
}
