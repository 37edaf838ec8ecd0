//! The grid of `dsm-apps` and `dsm-load`, shared by the simulated experiments (`dsm/apps.rs`)
//! and the live ones (`unpinned-livebench`, `exp/dsm_apps.rs`): the same points in the same
//! order, so that both backends' tables (one schema, [`super::row`]) line up row for row
//! where their parameters agree.
//!
//! The two backends share the grid and the schema but not the point function, because a
//! point means a different run on each (docs/experiments.md, "dsm-apps and dsm-load on two
//! backends"): the simulator replays one trace of the point in every handler context (the
//! context prices the same execution), while the live DSM runs the application once per
//! context (the context changes the execution), and the two sets of contexts differ.

/// One point: an application on `nodes` nodes (live: ranks) x `threads` worker threads per
/// node. Each backend turns it into one row per handler context.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DsmPoint {
    /// Application name (`unpinned_dsm_apps::names`).
    pub app: String,
    /// Nodes (ranks).
    pub nodes: u32,
    /// Worker threads per node.
    pub threads: u32,
}

impl DsmPoint {
    /// The speedup baseline of the point's application: 1 node x 1 thread.
    pub fn is_baseline(&self) -> bool {
        self.nodes == 1 && self.threads == 1
    }
}

/// Every point: applications in the order given, then node counts, then thread counts.
pub fn grid(apps: &[String], nodes: &[u32], threads: &[u32]) -> Vec<DsmPoint> {
    apps.iter()
        .flat_map(|app| {
            nodes.iter().flat_map(move |&n| {
                threads.iter().map(move |&t| DsmPoint {
                    app: app.clone(),
                    nodes: n,
                    threads: t,
                })
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_is_app_major_then_nodes_then_threads() {
        let g = grid(&["sor".into(), "is".into()], &[1, 4], &[1, 2]);
        let got: Vec<(&str, u32, u32)> = g
            .iter()
            .map(|p| (p.app.as_str(), p.nodes, p.threads))
            .collect();
        assert_eq!(
            got,
            [
                ("sor", 1, 1),
                ("sor", 1, 2),
                ("sor", 4, 1),
                ("sor", 4, 2),
                ("is", 1, 1),
                ("is", 1, 2),
                ("is", 4, 1),
                ("is", 4, 2)
            ]
        );
        assert!(g[0].is_baseline() && !g[1].is_baseline());
    }
}
