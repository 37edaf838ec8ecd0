//! Refuse simulations the machine cannot hold, before they start: the estimate comes from
//! `unpinned_sim::sizing` (a lower bound), the machine's side from `/proc/meminfo`
//! (`MemAvailable`), read here at the edge and never inside the simulator.

use unpinned_sim::sizing;

/// Bytes the kernel reports as available for new allocations (`MemAvailable`), if known.
pub fn available_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    parse_mem_available(&text)
}

/// `MemAvailable` of a `/proc/meminfo` text, in bytes.
fn parse_mem_available(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// A byte count for people: GiB, MiB or KiB with one decimal.
pub fn human(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= (1u64 << 30) as f64 {
        format!("{:.1} GiB", b / (1u64 << 30) as f64)
    } else if b >= (1u64 << 20) as f64 {
        format!("{:.1} MiB", b / (1u64 << 20) as f64)
    } else {
        format!("{:.1} KiB", b / 1024.0)
    }
}

/// Check that `nodes` nodes, each mapping `mapped_per_node` bytes and storing
/// `stored_per_node` bytes of page contents, fit in the memory available now. `what` names the
/// command and `knob` the option to lower (e.g. `--nodes`). Without `/proc/meminfo` only
/// overflow is refused.
pub fn check_nodes(
    what: &str,
    knob: &str,
    nodes: u64,
    mapped_per_node: u64,
    stored_per_node: u64,
) -> Result<(), String> {
    verdict(
        what,
        knob,
        nodes,
        mapped_per_node,
        stored_per_node,
        available_bytes(),
    )
}

/// [`check_nodes`] for an application (a model or a replayed trace): its ranks, one per node,
/// with the buffers it maps (spread evenly over the nodes for the per-node figure).
pub fn check_app(
    what: &str,
    knob: &str,
    model: &dyn unpinned_traffic::AppModel,
) -> Result<(), String> {
    let nodes = model.ranks().max(1) as u64;
    let mapped = sizing::app_buffer_bytes(model).ok_or_else(|| {
        format!("{what}: the buffers' sizes add up to more than 2^64 bytes: lower {knob}")
    })?;
    check_nodes(what, knob, nodes, mapped.div_ceil(nodes), 0)
}

/// [`check_nodes`] against a given `available` (tests pass their own).
fn verdict(
    what: &str,
    knob: &str,
    nodes: u64,
    mapped_per_node: u64,
    stored_per_node: u64,
    available: Option<u64>,
) -> Result<(), String> {
    let per_node = sizing::run_bytes(1, mapped_per_node, stored_per_node);
    let need = per_node.and_then(|p| p.checked_mul(nodes));
    let Some(per_node) = per_node else {
        return Err(format!(
            "{what}: each node would need more than 2^64 bytes of memory ({} mapped, {} stored); lower the sizes",
            human(mapped_per_node),
            human(stored_per_node)
        ));
    };
    let fits = |avail: u64| sizing::largest_nodes(avail, per_node);
    match (need, available) {
        (Some(need), Some(avail)) if need <= avail => Ok(()),
        (Some(_), None) => Ok(()),
        (need, avail) => {
            let need_text = match need {
                Some(n) => format!("at least {}", human(n)),
                None => "more than 2^64 bytes".to_string(),
            };
            let (avail_text, largest) = match avail {
                Some(a) => (
                    format!("this machine has {} available (MemAvailable)", human(a)),
                    format!("the largest node count that fits is {}", fits(a)),
                ),
                None => ("no machine has that".into(), "lower it".into()),
            };
            Err(format!(
                "{what}: {nodes} nodes would need {need_text} of memory ({} per node), but {avail_text}; {largest}: lower {knob}",
                human(per_node)
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_mem_available() {
        let text = "MemTotal:       16303540 kB\nMemFree:  1000 kB\nMemAvailable:   12000000 kB\n";
        assert_eq!(parse_mem_available(text), Some(12_000_000 * 1024));
        assert_eq!(parse_mem_available("MemTotal: 5 kB\n"), None);
        assert_eq!(parse_mem_available("MemAvailable: x kB\n"), None);
    }

    #[test]
    fn a_run_that_fits_passes_and_one_that_does_not_names_need_and_largest() {
        let gib = 1u64 << 30;
        assert!(verdict("bench sim", "--nodes", 8, 1 << 20, 0, Some(gib)).is_ok());
        let e = verdict("bench sim", "--nodes", 100_000_000, 0, 0, Some(gib)).unwrap_err();
        let largest = gib / sizing::node_bytes();
        assert!(e.contains("100000000 nodes would need at least"), "{e}");
        assert!(e.contains("1.0 GiB available"), "{e}");
        assert!(
            e.contains(&format!("largest node count that fits is {largest}")),
            "{e}"
        );
        assert!(e.contains("lower --nodes"), "{e}");
    }

    #[test]
    fn limits_are_errors_not_panics() {
        let e = verdict(
            "replay",
            "the trace's sizes",
            2,
            u64::MAX,
            u64::MAX,
            Some(1),
        )
        .unwrap_err();
        assert!(e.contains("more than 2^64"), "{e}");
        let e = verdict("bench sim", "--nodes", u64::MAX, 0, 0, None).unwrap_err();
        assert!(e.contains("more than 2^64 bytes"), "{e}");
        let e = verdict("bench sim", "--nodes", u32::MAX as u64, 0, 0, Some(0)).unwrap_err();
        assert!(e.contains("largest node count that fits is 0"), "{e}");
    }
}
