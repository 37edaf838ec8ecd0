//! Up-front memory estimates of a simulation, so that a front end can refuse a run the
//! machine cannot hold instead of aborting on an allocation half-way.
//!
//! The estimates are lower bounds: the per-node state the simulator allocates before the first
//! event (a node's engine, IOMMU, memory and handler models) and one page-table entry per
//! mapped page. Queues, packets and written page bytes come on top. All arithmetic is checked:
//! `None` means the need does not fit in a `u64`, which no machine has either.

use unpinned_core::memory::PAGE_BYTES;
use unpinned_traffic::AppModel;

use crate::pages::Page;
use crate::world::Node;

/// Heap a node allocates at creation besides its inline state (engine tables, IOMMU and
/// page-table vectors, handler queues): a floor, so that the estimate stays a lower bound.
const NODE_HEAP_BYTES: u64 = 512;

/// Bytes of simulator state per node, before any memory is mapped.
pub fn node_bytes() -> u64 {
    std::mem::size_of::<Node>() as u64 + NODE_HEAP_BYTES
}

/// Bytes of page-table entries for `len` mapped bytes (one entry per page, even for pages
/// never touched). `None` on overflow.
pub fn mapped_bytes(len: u64) -> Option<u64> {
    let pages = len.div_ceil(PAGE_BYTES);
    pages.checked_mul(std::mem::size_of::<Page>() as u64)
}

/// Memory a run of `nodes` nodes needs when `mapped_per_node` bytes are mapped on each node
/// (on top of [`node_bytes`]) and `stored_per_node` bytes of page contents are stored on each
/// (random payloads). `None` on overflow.
pub fn run_bytes(nodes: u64, mapped_per_node: u64, stored_per_node: u64) -> Option<u64> {
    let per_node = node_bytes()
        .checked_add(mapped_bytes(mapped_per_node)?)?
        .checked_add(stored_per_node)?;
    nodes.checked_mul(per_node)
}

/// The largest node count whose need, at `per_node_bytes` each, fits in `available_bytes`.
pub fn largest_nodes(available_bytes: u64, per_node_bytes: u64) -> u64 {
    available_bytes / per_node_bytes.max(1)
}

/// Bytes of buffers an application maps over all its ranks, page-rounded the way the
/// application driver lays them out (each buffer its own pages, at least one). `None` on
/// overflow (a trace or model with absurd sizes).
pub fn app_buffer_bytes(model: &dyn AppModel) -> Option<u64> {
    let mut total: u64 = 0;
    for r in 0..model.ranks() {
        for s in model.buffers(r) {
            let pages = s.div_ceil(PAGE_BYTES).max(1);
            total = total.checked_add(pages.checked_mul(PAGE_BYTES)?)?;
        }
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_costs_its_inline_state_and_more() {
        assert!(node_bytes() > std::mem::size_of::<Node>() as u64);
        assert_eq!(mapped_bytes(0), Some(0));
        assert_eq!(mapped_bytes(1), Some(std::mem::size_of::<Page>() as u64));
        assert_eq!(
            mapped_bytes(PAGE_BYTES + 1),
            Some(2 * std::mem::size_of::<Page>() as u64)
        );
    }

    #[test]
    fn limits_give_none_not_a_panic() {
        assert!(
            mapped_bytes(u64::MAX).is_some(),
            "2^52 pages x 16 B fits in u64"
        );
        assert_eq!(run_bytes(u64::MAX, 0, 0), None);
        assert_eq!(run_bytes(1 << 9, u64::MAX, 0), None);
        assert_eq!(run_bytes(1, 0, u64::MAX), None);
        let n = u32::MAX as u64;
        assert_eq!(run_bytes(n, 0, 0), Some(n * node_bytes()));
        assert_eq!(largest_nodes(10, 0), 10);
        assert_eq!(
            largest_nodes(u64::MAX, node_bytes()),
            u64::MAX / node_bytes()
        );
    }
}
