//! A short run of every coverage-guided fuzz target in `fuzz/` (docs/fuzzing.md), when the
//! nightly toolchain and cargo-fuzz are installed; otherwise the test says why it skipped and
//! passes (a fresh CI machine has neither: `.ci/run` does not install them, the install takes
//! minutes).
//!
//! Each target runs `UNPINNED_FUZZ_SECONDS` seconds (default 2) from a corpus in a temporary
//! directory seeded from `fuzz/seeds/TARGET/` (a few inputs per target, among them the
//! reproducers of past findings), built as the campaigns build it (`-O -a`: optimized, with
//! debug assertions, so an arithmetic overflow is a finding). Any crash, panic, leak or
//! timeout fails the test, naming the target and where its reproducer was copied
//! (`fuzz/artifacts/TARGET/`). The build goes to `fuzz/target/` (its own workspace; ignored by
//! git): the first one takes minutes, later ones only rebuild what changed.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `cargo +nightly ...` in `fuzz/`, without the variables `cargo test` set for this process
/// (they name this build's toolchain and target directory, not the fuzz workspace's).
fn nightly(args: &[&str]) -> Command {
    let mut c = Command::new("cargo");
    c.arg("+nightly")
        .args(args)
        .current_dir(root().join("fuzz"));
    for v in [
        "RUSTUP_TOOLCHAIN",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET_DIR",
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTC",
        "RUSTC_WRAPPER",
        "RUSTDOC",
    ] {
        c.env_remove(v);
    }
    c
}

fn run(mut c: Command) -> Output {
    c.output().expect("start cargo")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The last `n` lines of a log.
fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Why the fuzzing toolchain is unusable here, if it is.
fn missing_toolchain() -> Option<String> {
    match nightly(&["fuzz", "--version"]).output() {
        Ok(o) if o.status.success() => None,
        Ok(o) => Some(format!(
            "`cargo +nightly fuzz --version` failed ({}): install with `rustup toolchain \
             install nightly && cargo install cargo-fuzz --locked`",
            tail(&text(&o), 1).trim()
        )),
        Err(e) => Some(format!("cannot run cargo: {e}")),
    }
}

#[test]
fn every_fuzz_target_runs_briefly_without_a_finding() {
    if let Some(why) = missing_toolchain() {
        eprintln!("fuzz smoke test skipped: {why}");
        return;
    }
    let seconds: u32 = std::env::var("UNPINNED_FUZZ_SECONDS")
        .ok()
        .map(|s| {
            s.parse()
                .expect("UNPINNED_FUZZ_SECONDS: a whole number of seconds")
        })
        .unwrap_or(2);
    let list = run(nightly(&["fuzz", "list"]));
    assert!(list.status.success(), "cargo fuzz list: {}", text(&list));
    let targets: Vec<String> = String::from_utf8_lossy(&list.stdout)
        .lines()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect();
    assert!(
        targets.len() >= 9,
        "fuzz targets: {targets:?} (fuzz/Cargo.toml)"
    );

    let build = run(nightly(&["fuzz", "build", "-O", "-a"]));
    assert!(
        build.status.success(),
        "cargo +nightly fuzz build -O -a failed:\n{}",
        tail(&text(&build), 40)
    );

    let scratch = std::env::temp_dir().join(format!("unpinned-fuzz-smoke-{}", std::process::id()));
    let mut failures = Vec::new();
    for t in &targets {
        let corpus = scratch.join("corpus").join(t);
        let artifacts = scratch.join("artifacts").join(t);
        std::fs::create_dir_all(&corpus).unwrap();
        std::fs::create_dir_all(&artifacts).unwrap();
        let seeds = root().join("fuzz/seeds").join(t);
        if let Ok(dir) = std::fs::read_dir(&seeds) {
            for f in dir.flatten() {
                std::fs::copy(f.path(), corpus.join(f.file_name())).unwrap();
            }
        }
        let o = run({
            let mut c = nightly(&["fuzz", "run", "-O", "-a", t]);
            c.arg(&corpus).arg("--").args([
                format!("-max_total_time={seconds}"),
                "-max_len=4096".into(),
                "-timeout=30".into(),
                "-print_final_stats=1".into(),
                format!("-artifact_prefix={}/", artifacts.display()),
            ]);
            c
        });
        let log = text(&o);
        let execs = log
            .lines()
            .find_map(|l| l.strip_prefix("stat::number_of_executed_units:"))
            .map_or("?".into(), |n| n.trim().to_string());
        if o.status.success() {
            eprintln!("fuzz smoke: {t}: {seconds} s, {execs} executions, no finding");
            continue;
        }
        // Keep the reproducer where docs/fuzzing.md says to look for it.
        let keep = root().join("fuzz/artifacts").join(t);
        std::fs::create_dir_all(&keep).unwrap();
        let mut kept = Vec::new();
        for f in std::fs::read_dir(&artifacts).unwrap().flatten() {
            std::fs::copy(f.path(), keep.join(f.file_name())).unwrap();
            kept.push(keep.join(f.file_name()).display().to_string());
        }
        failures.push(format!(
            "{t}: reproducer(s) {kept:?}; replay with `cd fuzz && cargo +nightly fuzz run -O -a \
             {t} FILE`\n{}",
            tail(&log, 30)
        ));
    }
    let _ = std::fs::remove_dir_all(&scratch);
    assert!(
        failures.is_empty(),
        "fuzz findings:\n{}",
        failures.join("\n\n")
    );
}
