//! Inputs too big for the machine are refused up front with a message naming what they would
//! need and what to lower; sizes at the limits of their types are errors, not panics. No test
//! here allocates much: each is refused before the simulation starts.

use std::process::{Command, Output};

fn unpinned(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_unpinned"))
        .args(args)
        .output()
        .expect("binary runs")
}

/// Stderr of a run that must fail without a panic.
fn refused(args: &[&str]) -> String {
    let o = unpinned(args);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(!o.status.success(), "{args:?} must fail: {err}");
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    assert!(
        !err.contains("memory allocation"),
        "{args:?} aborted: {err}"
    );
    err
}

#[test]
fn bench_sim_refuses_node_counts_beyond_memory() {
    for nodes in ["100000000", &u32::MAX.to_string()] {
        let e = refused(&["bench", "sim", "--nodes", nodes, "--repeat", "1"]);
        assert!(
            e.contains(&format!("{nodes} nodes would need at least")),
            "{e}"
        );
        assert!(e.contains("largest node count that fits is"), "{e}");
        assert!(e.contains("lower --nodes"), "{e}");
    }
    let e = refused(&[
        "bench",
        "sim",
        "--workload",
        "hpcg",
        "--nodes",
        &u32::MAX.to_string(),
    ]);
    assert!(e.contains("largest node count that fits is"), "{e}");
}

#[test]
fn bench_sim_sizes_at_the_limits_are_errors() {
    let max = u64::MAX.to_string();
    let e = refused(&[
        "bench",
        "sim",
        "--concurrent",
        "4294967295",
        "--transfer-bytes",
        &max,
    ]);
    assert!(e.contains("overflows 64 bits"), "{e}");
    let e = refused(&[
        "bench",
        "sim",
        "--nodes",
        "4",
        "--transfer-bytes",
        &max,
        "--concurrent",
        "1",
    ]);
    assert!(
        e.contains("overflows 64 bits") || e.contains("would need"),
        "{e}"
    );
    let e = refused(&["bench", "sim", "--nodes", "0"]);
    assert!(e.contains("--nodes must be >= 2"), "{e}");
    let e = refused(&["bench", "sim", "--workload", "hpl", "--nodes", "0"]);
    assert!(e.contains("--nodes >= 1"), "{e}");
}

#[test]
fn part_apps_node_counts_out_of_range_are_refused() {
    for n in ["0", "65537", &u32::MAX.to_string(), &u64::MAX.to_string()] {
        let e = refused(&["sim", "part-apps", "--set", &format!("exp.nodes={n}")]);
        assert!(e.contains("exp.nodes") || e.contains("nodes"), "{e}");
    }
}

#[test]
fn replay_refuses_traces_beyond_memory_or_the_size_limit() {
    let dir = std::env::temp_dir().join(format!("unpinned-limits-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let head = r#"{"format":"unpinned-trace","version":1,"ranks":2}"#;
    let trace = |bytes: u64| {
        format!(
            "{head}\n{{\"rank\":0,\"op\":\"send\",\"peer\":1,\"bytes\":{bytes},\"tag\":0}}\n{{\"rank\":1,\"op\":\"recv\",\"peer\":0,\"bytes\":{bytes},\"tag\":0}}\n{{\"rank\":0,\"op\":\"wait\"}}\n{{\"rank\":1,\"op\":\"wait\"}}\n"
        )
    };
    let huge = dir.join("huge.jsonl");
    std::fs::write(&huge, trace(u64::MAX)).unwrap();
    let e = refused(&["replay", huge.to_str().unwrap()]);
    assert!(e.contains("larger than the limit"), "{e}");
    // 2^48 bytes on each side: 2^36 page entries each, far beyond any machine.
    let big = dir.join("big.jsonl");
    std::fs::write(&big, trace(1 << 48)).unwrap();
    let e = refused(&["replay", big.to_str().unwrap()]);
    assert!(e.contains("would need at least"), "{e}");
    assert!(e.contains("lower the trace's"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}
