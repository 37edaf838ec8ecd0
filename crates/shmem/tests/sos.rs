//! The Sandia OpenSHMEM unit tests and specification examples
//! (`shared/clients/openshmem/tests-sos`, found by walking up from this crate, or
//! `$SOS_TESTS_DIR`): every C and C++ program built with `oshcc` / `oshcxx` (in parallel),
//! run with `oshrun -np 2` under a per-test time limit, one line per test and a summary.
//! Fortran and MPI programs are skipped and listed. The test fails only if a program listed
//! in `tests/sos-expected.txt` does not pass.
//!
//! Each program runs once per configuration of `SOS_CONFIGS` (comma-separated, default
//! `shm,part`): `shm` (shared-memory transport, on-node load/store path on), `part` (shared
//! memory, load/store path off: every transfer through PART), `udp` (UDP, load/store off).
//! Other knobs: `SOS_NPES` (default 2), `SOS_TIMEOUT_S` (per run, default 60), `SOS_FILTER`
//! (substring of names), `SOS_JOBS` (parallel builds, default 2).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

const MANIFEST: &str = env!("CARGO_MANIFEST_DIR");

fn suite_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("SOS_TESTS_DIR") {
        return Some(PathBuf::from(d));
    }
    Path::new(MANIFEST)
        .ancestors()
        .map(|a| a.join("shared/clients/openshmem/tests-sos"))
        .find(|p| p.join("test/unit").is_dir())
}

/// One program of the suite.
struct Prog {
    name: String,
    sources: Vec<PathBuf>,
    cxx: bool,
    flags: Vec<String>,
}

enum Outcome {
    Pass(f64),
    Fail(String),
    BuildFail(String),
}

fn programs(root: &Path) -> (Vec<Prog>, Vec<(String, String)>) {
    let mut progs = Vec::new();
    let mut skipped = Vec::new();
    for dir in ["test/unit", "test/spec-example"] {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(root.join(dir))
            .unwrap_or_else(|e| panic!("{}: {e}", root.join(dir).display()))
            .flatten()
            .map(|e| e.path())
            .collect();
        entries.sort();
        for p in entries {
            let file = p.file_name().unwrap().to_string_lossy().to_string();
            let (stem, ext) = match file.rsplit_once('.') {
                Some((s, e)) => (s.to_string(), e.to_string()),
                None => continue,
            };
            match ext.as_str() {
                "f90" | "f" => {
                    skipped.push((
                        stem,
                        "Fortran (this implementation has C and C++ bindings only)".into(),
                    ));
                    continue;
                }
                "c" | "cpp" => {}
                _ => continue,
            }
            if stem == "mt_lock" {
                continue; // linked into mt_lock_test
            }
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            if text.contains("#include <mpi.h>") {
                skipped.push((stem, "needs MPI (a hybrid MPI + OpenSHMEM program)".into()));
                continue;
            }
            let mut sources = vec![p.clone()];
            if stem == "mt_lock_test" {
                sources.push(root.join(dir).join("mt_lock.c"));
            }
            progs.push(Prog {
                name: stem.clone(),
                sources: sources.clone(),
                cxx: ext == "cpp",
                flags: vec![],
            });
            // Upstream's extra programs from the same sources (test/unit/Makefile.am).
            if stem == "rma_coverage" {
                progs.push(Prog {
                    name: "rma_coverage_pshmem".into(),
                    sources,
                    cxx: false,
                    flags: vec!["-DTEST_PSHMEM".into()],
                });
            } else if stem == "query_thread" {
                progs.push(Prog {
                    name: "query_thread_funneled".into(),
                    sources,
                    cxx: false,
                    flags: vec![],
                });
            }
        }
    }
    (progs, skipped)
}

fn build(p: &Prog, root: &Path, out: &Path) -> Result<(), String> {
    let tool = if p.cxx {
        env!("CARGO_BIN_EXE_oshcxx")
    } else {
        env!("CARGO_BIN_EXE_oshcc")
    };
    let mut c = Command::new(tool);
    if !p.cxx {
        c.arg("-std=gnu11");
    }
    c.args(["-O1", "-w", "-DENABLE_DEPRECATED_TESTS", "-DENABLE_THREADS"])
        .arg(format!("-I{}", root.join("test/include").display()))
        .args(&p.flags)
        .args(&p.sources)
        .arg("-o")
        .arg(out)
        .args(["-lpthread", "-lm"]);
    let o = c.output().map_err(|e| format!("cannot run {tool}: {e}"))?;
    if o.status.success() {
        Ok(())
    } else {
        let err = String::from_utf8_lossy(&o.stderr);
        let first = err
            .lines()
            .find(|l| l.contains("error"))
            .unwrap_or_else(|| err.lines().next().unwrap_or("?"));
        Err(first.trim().to_string())
    }
}

/// How a program is run: (label, transport, load/store path on).
type RunConfig = (&'static str, &'static str, bool);

fn configs() -> Vec<RunConfig> {
    let list = std::env::var("SOS_CONFIGS").unwrap_or_else(|_| "shm,part".into());
    list.split(',')
        .map(|c| match c.trim() {
            "shm" => ("shm", "shm", true),
            "part" => ("part", "shm", false),
            "udp" => ("udp", "udp", false),
            other => panic!("SOS_CONFIGS: unknown configuration {other:?} (valid: shm, part, udp)"),
        })
        .collect()
}

fn run(bin: &Path, log: &Path, cfg: RunConfig) -> Outcome {
    let npes = std::env::var("SOS_NPES").unwrap_or_else(|_| "2".into());
    let timeout = std::env::var("SOS_TIMEOUT_S").unwrap_or_else(|_| "60".into());
    let mut c = Command::new(env!("CARGO_BIN_EXE_oshrun"));
    c.args(["-np", &npes, "--timeout", &timeout, "--transport", cfg.1]);
    c.env("SHMEM_LOADSTORE", if cfg.2 { "1" } else { "0" });
    let f = std::fs::File::create(log).expect("log file");
    let t0 = Instant::now();
    let status = c
        .arg(bin)
        .stdout(f.try_clone().expect("dup"))
        .stderr(f)
        .status()
        .expect("run oshrun");
    let secs = t0.elapsed().as_secs_f64();
    if status.success() {
        return Outcome::Pass(secs);
    }
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let why = text
        .lines()
        .rev()
        .find(|l| l.contains("timed out"))
        .or_else(|| text.lines().find(|l| l.starts_with("shmem:")))
        .or_else(|| {
            text.lines().rev().find(|l| {
                !l.trim().is_empty() && !l.starts_with("oshrun:") && !l.starts_with("unpinned run:")
            })
        })
        .unwrap_or("no output");
    Outcome::Fail(format!(
        "{} after {secs:.1} s: {}",
        status,
        why.chars().take(160).collect::<String>()
    ))
}

#[test]
fn sos_unit_tests_and_spec_examples() {
    let Some(root) = suite_dir() else {
        eprintln!("SKIPPED: the SOS test suite (shared/clients/openshmem/tests-sos) was not found above {MANIFEST}; set SOS_TESTS_DIR");
        return;
    };
    if Command::new("cc").arg("--version").output().is_err() {
        eprintln!("SKIPPED: no C compiler (`cc`)");
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let work = exe
        .parent()
        .unwrap()
        .join(format!("sos-{}", std::process::id()));
    std::fs::create_dir_all(&work).unwrap();
    let filter = std::env::var("SOS_FILTER").unwrap_or_default();
    let (progs, mut skipped) = programs(&root);
    let cxx = std::env::var("OSHCXX_CXX")
        .or_else(|_| std::env::var("CXX"))
        .unwrap_or_else(|_| "c++".into());
    let have_cxx = Command::new(&cxx)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let (progs, no_cxx): (Vec<Prog>, Vec<Prog>) = progs
        .into_iter()
        .filter(|p| p.name.contains(&filter))
        .partition(|p| !p.cxx || have_cxx);
    for p in no_cxx {
        skipped.push((p.name, format!("no C++ compiler ({cxx}; set CXX)")));
    }

    // Build in parallel.
    let jobs: usize = std::env::var("SOS_JOBS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2);
    let next = AtomicUsize::new(0);
    let built: Mutex<Vec<Option<Result<(), String>>>> =
        Mutex::new(progs.iter().map(|_| None).collect());
    let t0 = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(p) = progs.get(i) else { break };
                let r = build(p, &root, &work.join(&p.name));
                built.lock().unwrap()[i] = Some(r);
            });
        }
    });
    let built = built.into_inner().unwrap();
    println!(
        "built {} programs in {:.1} s",
        progs.len(),
        t0.elapsed().as_secs_f64()
    );

    let expected =
        std::fs::read_to_string(Path::new(MANIFEST).join("tests/sos-expected.txt")).unwrap();
    let expected: Vec<&str> = expected
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let mut regressions = Vec::new();
    for cfg in configs() {
        let t1 = Instant::now();
        let mut results: Vec<(String, Outcome)> = Vec::new();
        for (p, b) in progs.iter().zip(&built) {
            let o = match b.as_ref().expect("built") {
                Err(e) => Outcome::BuildFail(e.clone()),
                Ok(()) => run(
                    &work.join(&p.name),
                    &work.join(format!("{}.log", p.name)),
                    cfg,
                ),
            };
            let line = match &o {
                Outcome::Pass(s) => format!("PASS       {} ({s:.2} s)", p.name),
                Outcome::Fail(w) => format!("FAIL       {}: {w}", p.name),
                Outcome::BuildFail(w) => format!("BUILD-FAIL {}: {w}", p.name),
            };
            println!("[{}] {line}", cfg.0);
            results.push((p.name.clone(), o));
        }
        for (n, why) in &skipped {
            println!("[{}] SKIP       {n}: {why}", cfg.0);
        }
        let passed = results
            .iter()
            .filter(|(_, o)| matches!(o, Outcome::Pass(_)))
            .count();
        let failed = results.len() - passed;
        println!(
            "SOS [{}]: {passed} passed, {failed} failed ({} did not build), {} skipped, {:.0} s",
            cfg.0,
            results
                .iter()
                .filter(|(_, o)| matches!(o, Outcome::BuildFail(_)))
                .count(),
            skipped.len(),
            t1.elapsed().as_secs_f64()
        );
        for name in &expected {
            match results.iter().find(|(n, _)| n == name) {
                Some((_, Outcome::Pass(_))) => {}
                Some(_) => regressions.push(format!("{name} [{}]", cfg.0)),
                None if skipped.iter().any(|(n, _)| n == name) => {}
                None if filter.is_empty() => regressions.push(format!("{name} (not in the suite)")),
                None => {}
            }
        }
    }
    let _ = std::fs::remove_dir_all(&work);
    assert!(
        regressions.is_empty(),
        "tests listed in tests/sos-expected.txt no longer pass: {regressions:?}"
    );
}
