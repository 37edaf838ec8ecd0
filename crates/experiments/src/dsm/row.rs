//! The one result schema of `dsm-apps` and `dsm-load`, written by the simulated experiments
//! (`dsm/apps.rs`) and the live ones (`unpinned-livebench`, `exp/dsm_apps.rs`), so both
//! backends write the same columns in the same order and `live-vs-sim` can join them.
//!
//! Columns ([`COLUMNS`]): `app`, `context`, `nodes`, `threads_per_node`, `time_s`, `speedup`
//! (time on 1 node x 1 thread / time, same app and context), `faults_per_s`, `barriers_per_s`,
//! `locks_per_s`, `correct` (1 or 0), `driver` (`sim` or `live`), `requests` (fault requests
//! sent), `messages` (messages between nodes, page-data messages included), `rdma_mb_per_s`
//! (page data moved between nodes, MB per second), `sends_per_s` (messages that carry no page
//! data, per second), and the shares of worker time `compute_share`, `fault_share`,
//! `barrier_share`, `lock_share`, `stolen_share` (summed over workers / (workers x time)).
//!
//! What the live backend fills: the live runtime counts faults, not requests, so its
//! `requests` are the faults of all ranks; its `messages` are its control messages plus its
//! minipage RDMA transfers, its `sends_per_s` the control messages alone. It has no per-worker
//! time counters, so its five `*_share` cells are empty.

use unpinned_report::{Cell, Table};

/// The column names, in order.
pub const COLUMNS: [&str; 20] = [
    "app",
    "context",
    "nodes",
    "threads_per_node",
    "time_s",
    "speedup",
    "faults_per_s",
    "barriers_per_s",
    "locks_per_s",
    "correct",
    "driver",
    "requests",
    "messages",
    "rdma_mb_per_s",
    "sends_per_s",
    "compute_share",
    "fault_share",
    "barrier_share",
    "lock_share",
    "stolen_share",
];

/// Shares of worker time (each summed over workers / (workers x time)).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shares {
    /// Computing.
    pub compute: f64,
    /// In faults (entry plus wait).
    pub fault: f64,
    /// Waiting at barriers.
    pub barrier: f64,
    /// Waiting for locks.
    pub lock: f64,
    /// CPU taken by the handlers from the workers.
    pub stolen: f64,
}

/// One row of the table: one app, handler context, node count and thread count.
#[derive(Clone, Debug, PartialEq)]
pub struct DsmRow {
    /// App name.
    pub app: String,
    /// Handler context name.
    pub context: String,
    /// Nodes (ranks).
    pub nodes: u32,
    /// Worker threads per node.
    pub threads_per_node: u32,
    /// Parallel-phase time, seconds.
    pub time_s: f64,
    /// Time on 1 node x 1 thread / time.
    pub speedup: f64,
    /// Faults per second.
    pub faults_per_s: f64,
    /// Barrier episodes per second.
    pub barriers_per_s: f64,
    /// Lock acquisitions per second.
    pub locks_per_s: f64,
    /// The answer was correct.
    pub correct: bool,
    /// `sim` or `live`.
    pub driver: &'static str,
    /// Fault requests sent.
    pub requests: u64,
    /// Messages between nodes, page-data messages included.
    pub messages: u64,
    /// Page data moved between nodes, MB per second.
    pub rdma_mb_per_s: f64,
    /// Messages that carry no page data, per second.
    pub sends_per_s: f64,
    /// Shares of worker time, when the backend measures them (empty cells otherwise).
    pub shares: Option<Shares>,
}

impl DsmRow {
    /// An empty table with [`COLUMNS`].
    pub fn table() -> Table {
        Table::new(&COLUMNS)
    }

    /// The row's cells, in [`COLUMNS`] order.
    pub fn cells(self) -> Vec<Cell> {
        let shares: [Cell; 5] = match self.shares {
            Some(s) => [s.compute, s.fault, s.barrier, s.lock, s.stolen].map(Cell::from),
            None => std::array::from_fn(|_| Cell::from("")),
        };
        let mut v: Vec<Cell> = vec![
            self.app.into(),
            self.context.into(),
            self.nodes.into(),
            self.threads_per_node.into(),
            self.time_s.into(),
            self.speedup.into(),
            self.faults_per_s.into(),
            self.barriers_per_s.into(),
            self.locks_per_s.into(),
            u32::from(self.correct).into(),
            self.driver.into(),
            self.requests.into(),
            self.messages.into(),
            self.rdma_mb_per_s.into(),
            self.sends_per_s.into(),
        ];
        v.extend(shares);
        debug_assert_eq!(v.len(), COLUMNS.len());
        v
    }

    /// Append the row to `table` (made by [`DsmRow::table`]).
    pub fn push_to(self, table: &mut Table) {
        table.push(self.cells());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(shares: Option<Shares>) -> DsmRow {
        DsmRow {
            app: "sor".into(),
            context: "polling".into(),
            nodes: 2,
            threads_per_node: 1,
            time_s: 0.5,
            speedup: 1.5,
            faults_per_s: 10.0,
            barriers_per_s: 2.0,
            locks_per_s: 0.0,
            correct: true,
            driver: "live",
            requests: 5,
            messages: 12,
            rdma_mb_per_s: 0.25,
            sends_per_s: 14.0,
            shares,
        }
    }

    #[test]
    fn cells_follow_the_columns_and_missing_shares_are_empty() {
        let c = row(None).cells();
        assert_eq!(c.len(), COLUMNS.len());
        let text: Vec<String> = c.iter().map(Cell::to_text).collect();
        assert_eq!(&text[..4], ["sor", "polling", "2", "1"]);
        assert_eq!(&text[9..13], ["1", "live", "5", "12"]);
        assert!(text[15..].iter().all(String::is_empty), "{text:?}");
        let s = Shares {
            compute: 0.5,
            fault: 0.25,
            barrier: 0.125,
            lock: 0.0,
            stolen: 0.0625,
        };
        let text: Vec<String> = row(Some(s)).cells().iter().map(Cell::to_text).collect();
        assert_eq!(&text[15..], ["0.5", "0.25", "0.125", "0", "0.0625"]);
        assert_eq!(DsmRow::table().columns, COLUMNS);
    }
}
