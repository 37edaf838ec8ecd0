//! End-to-end tests of the `unpinned` binary.

use std::path::PathBuf;
use std::process::{Command, Output};

fn unpinned(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_unpinned"))
        .args(args)
        .output()
        .expect("binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A fresh directory name under the system temp dir.
fn scratch(tag: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    std::env::temp_dir().join(format!("unpinned-cli-{tag}-{}-{nanos}", std::process::id()))
}

#[test]
fn help_mentions_reproduce() {
    let o = unpinned(&["--help"]);
    assert!(o.status.success());
    let out = text(&o.stdout);
    assert!(out.contains("reproduce"), "{out}");
    assert!(out.contains("PART"), "{out}");
}

#[test]
fn sim_list_succeeds() {
    let o = unpinned(&["sim", "--list"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(!o.stdout.is_empty());
}

#[test]
fn unknown_experiment_is_a_usage_error() {
    let o = unpinned(&["sim", "no-such-experiment"]);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(
        err.contains("no-such-experiment") && err.contains("--list"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn profile_show_prints_toml() {
    let o = unpinned(&["profile", "show"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("block_bytes = 16384"));
    let o = unpinned(&["profile", "show", "--set", "engine.block_timeout_us=100"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("block_timeout_us = 100.0"));
}

#[test]
fn invalid_override_is_a_usage_error() {
    let o = unpinned(&["profile", "show", "--set", "engine.block_bytes=1000"]);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(err.contains("block_bytes"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn profile_check_file() {
    let dir = scratch("check");
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("good.toml");
    let shown = unpinned(&["profile", "show"]);
    std::fs::write(&good, &shown.stdout).unwrap();
    let o = unpinned(&["profile", "check", good.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("OK"));
    let bad = dir.join("bad.toml");
    std::fs::write(
        &bad,
        text(&shown.stdout).replace("block_bytes = 16384", "block_bytes = 1000"),
    )
    .unwrap();
    let o = unpinned(&["profile", "check", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("block_bytes"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn reproduce_writes_index() {
    let dir = scratch("reproduce");
    let o = unpinned(&[
        "reproduce",
        "--quiet",
        "--no-live",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let index = dir.join("index.html");
    assert!(index.exists());
    assert!(text(&o.stdout).contains("index.html"));
    let html = std::fs::read_to_string(&index).unwrap();
    assert!(html.contains("<html") && html.contains("forth-arm"));
    // Every registered experiment appears in the report with its files.
    for e in unpinned_experiments_names(&html) {
        assert!(dir.join(format!("{e}.csv")).exists(), "{e}.csv");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Experiment names linked from the table of contents (`href="#NAME"`; not the two parts'
/// anchors).
fn unpinned_experiments_names(html: &str) -> Vec<String> {
    html.split("href=\"#")
        .skip(1)
        .filter_map(|s| s.split('"').next())
        .filter(|n| !["simulated", "live"].contains(n))
        .map(str::to_string)
        .collect()
}

#[test]
fn reproduce_only_dsm_is_the_same_bytes_twice_and_says_the_live_part_did_not_run() {
    let dirs = [scratch("reproduce-dsm-a"), scratch("reproduce-dsm-b")];
    for d in &dirs {
        let o = unpinned(&[
            "reproduce",
            "--quiet",
            "--only",
            "dsm",
            "--out",
            d.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        assert!(!d.join("live").exists(), "--only runs no live experiment");
        let html = std::fs::read_to_string(d.join("index.html")).unwrap();
        assert!(html.contains("Simulated experiments (deterministic)"));
        assert!(html.contains("Live experiments: measured on this machine (not deterministic)"));
        assert!(html.contains("Not run (--only"));
    }
    for e in ["dsm-apps", "dsm-load"] {
        let f = format!("{e}.csv");
        let (a, b) = (
            std::fs::read(dirs[0].join(&f)).unwrap(),
            std::fs::read(dirs[1].join(&f)).unwrap(),
        );
        assert!(a.len() > 10_000, "{f}: {} bytes", a.len());
        assert!(a == b, "{f} differs between two runs");
    }
    // The two parts are chosen on the command line; they cannot be both excluded.
    let o = unpinned(&["reproduce", "--no-live", "--live-only"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    for d in &dirs {
        let _ = std::fs::remove_dir_all(d);
    }
}

#[test]
fn dsm_run_runs_an_app_on_two_ranks_and_checks_it() {
    // The README's command: `unpinned run -n 2 -- unpinned dsm-run APP ...`.
    let exe = env!("CARGO_BIN_EXE_unpinned");
    let o = unpinned(&[
        "run",
        "-n",
        "2",
        "--timeout",
        "60",
        "--",
        exe,
        "dsm-run",
        "nbody",
        "--threads",
        "2",
        "--context",
        "deferred",
    ]);
    let out = text(&o.stdout);
    assert!(o.status.success(), "{out}{}", text(&o.stderr));
    assert!(
        out.contains("nbody (small) on 2 ranks x 2 threads, context deferred: correct"),
        "{out}"
    );
    let o = unpinned(&["dsm-run", "no-such-app"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("unknown application"));
}

#[test]
fn knobs_are_set_one_way_and_unknown_ones_are_refused() {
    let exe = env!("CARGO_BIN_EXE_unpinned");
    // `unpinned config` prints the effective configuration: `--set` after `UNPINNED_SET`.
    let o = Command::new(exe)
        .args(["config", "--set", "progress.spin_us=20"])
        .env("UNPINNED_SET", "progress.yield_us=7, progress.spin_us=3")
        .output()
        .expect("binary runs");
    let out = text(&o.stdout);
    assert!(o.status.success(), "{out}{}", text(&o.stderr));
    assert!(
        out.contains("spin_us = 20") && out.contains("yield_us = 7"),
        "{out}"
    );
    // An unknown key is refused before any rank starts, with its name, from either source.
    for (flag, env) in [
        ("engine.packet_bytez=1", ""),
        ("dsm.bogus=1", ""),
        ("progress.spin_us=abc", ""),
        ("handler.policy=pia", "progress.nope=1"),
    ] {
        let o = Command::new(exe)
            .args(["run", "-n", "2", "--set", flag, "--", "true"])
            .env("UNPINNED_SET", env)
            .output()
            .expect("binary runs");
        let err = text(&o.stderr);
        let key = if env.is_empty() { flag } else { env };
        let key = key.split('=').next().unwrap();
        assert_eq!(o.status.code(), Some(2), "{flag} {env}: {err}");
        assert!(err.contains(&format!("`{key}`")), "{flag} {env}: {err}");
    }
}

#[test]
fn vopr_runs_seeds_of_every_protocol_and_refuses_unknown_ones() {
    let o = unpinned(&["vopr", "--seeds", "0..20", "--jobs", "2", "-q"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(
        ["part", "rc", "aa", "dsm"]
            .iter()
            .all(|p| out.contains(&format!("{p}: 20 seeds, 0 failing"))),
        "{out}"
    );
    let o = unpinned(&["vopr", "--protocol", "rc", "--seed", "3"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        text(&o.stdout).contains("trace hash"),
        "{}",
        text(&o.stdout)
    );
    let o = unpinned(&["vopr", "--protocol", "nope"]);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(err.contains("part") && err.contains("rc"), "{err}");
    let o = unpinned(&["vopr", "--seeds", "5..2"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
}
