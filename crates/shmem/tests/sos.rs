//! The Sandia OpenSHMEM unit tests and specification examples
//! (`shared/clients/openshmem/tests-sos`, found by walking up from this crate, or
//! `$SOS_TESTS_DIR`): every C and C++ program built once with `oshcc` / `oshcxx` (in
//! parallel), then run with `oshrun` under a per-test time limit in each configuration, one
//! line per test and a summary per configuration. Fortran and MPI programs are skipped and
//! listed. The test fails only if a program listed in `tests/sos-expected.txt` does not pass
//! in a configuration, unless `tests/sos-exceptions.txt` names it there with a reason (not
//! run, or run with other arguments). A program that exits 0 after saying it needs another
//! number of PEs ("Requires > 1 PEs") is reported as SELF-SKIP, not as a pass (a failure at
//! 2 PEs, where every program tests something).
//!
//! Configurations (`SOS_CONFIGS`, comma-separated, default `shm,part,netns,shm:1,shm:4`):
//! `shm` (shared-memory transport, on-node load/store path on), `part` (shared memory,
//! load/store path off: every transfer through PART), `udp` (UDP on 127.0.0.1, load/store
//! off), `netns` (UDP between two network namespaces joined by a veth pair, one PE in each,
//! load/store off; skipped with the reason when not root or without `ip`). `:N` runs N PEs
//! instead of 2 (`SOS_NPES` changes the default). Other knobs: `SOS_TIMEOUT_S` (per run,
//! default 60), `SOS_FILTER` (substring of names), `SOS_JOBS` (parallel builds, default 2).

mod support;

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
    /// Exited 0 after saying it needs another number of PEs (its line).
    SelfSkip(String),
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
            // Both folders have a shmem_team_translate: the second is named after its folder
            // (one binary per name).
            let name = if progs.iter().any(|p: &Prog| p.name == stem) {
                format!("{stem}-{}", dir.rsplit('/').next().unwrap_or(dir))
            } else {
                stem.clone()
            };
            progs.push(Prog {
                name,
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

/// How a program is run.
#[derive(Clone, Debug)]
struct RunConfig {
    /// The name in `SOS_CONFIGS` and in the output (`shm`, `netns:4`, ...).
    label: String,
    /// `oshrun --transport`.
    transport: &'static str,
    /// The on-node load/store path (`SHMEM_LOADSTORE`).
    loadstore: bool,
    /// Number of PEs.
    npes: u32,
    /// One PE per network namespace of a veth pair.
    netns: bool,
}

fn configs() -> Vec<RunConfig> {
    let list = std::env::var("SOS_CONFIGS").unwrap_or_else(|_| "shm,part,netns,shm:1,shm:4".into());
    let default_npes = unpinned_testkit::number_or("SOS_NPES", 2) as u32;
    list.split(',')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(|c| {
            let (kind, npes) = match c.split_once(':') {
                Some((k, n)) => (
                    k,
                    n.parse().unwrap_or_else(|_| {
                        panic!("SOS_CONFIGS: {c:?}: the number of PEs after ':' is not a number")
                    }),
                ),
                None => (c, default_npes),
            };
            let (transport, loadstore, netns) = match kind {
                "shm" => ("shm", true, false),
                "part" => ("shm", false, false),
                "udp" => ("udp", false, false),
                "netns" => ("udp", false, true),
                other => panic!(
                    "SOS_CONFIGS: unknown configuration {other:?} (valid: shm, part, udp, netns, each with an optional :NPES)"
                ),
            };
            let label = if npes == 2 { kind.to_string() } else { format!("{kind}:{npes}") };
            RunConfig {
                label,
                transport,
                loadstore,
                npes,
                netns,
            }
        })
        .collect()
}

/// The line of a program that exited 0 without testing anything because of the number of PEs
/// ("Requires > 1 PEs", "only intended to run on exactly two processes").
fn self_skip(output: &str) -> Option<&str> {
    output.lines().find(|l| {
        let l = l.to_ascii_lowercase();
        (l.contains("requires") && (l.contains("pe") || l.contains("process")))
            || l.contains("only intended to run on exactly")
    })
}

fn run(bin: &Path, args: &[String], log: &Path, cfg: &RunConfig, netns: &[String]) -> Outcome {
    let timeout = std::env::var("SOS_TIMEOUT_S").unwrap_or_else(|_| "60".into());
    let mut c = support::oshrun();
    c.args(["-np", &cfg.npes.to_string(), "--timeout", &timeout]);
    c.args(["--transport", cfg.transport]);
    if !netns.is_empty() {
        c.args(["--netns", &netns.join(",")]);
    }
    c.env("SHMEM_LOADSTORE", if cfg.loadstore { "1" } else { "0" });
    let f = std::fs::File::create(log).expect("log file");
    let t0 = Instant::now();
    let status = c
        .arg(bin)
        .args(args)
        .stdout(f.try_clone().expect("dup"))
        .stderr(f)
        .status()
        .expect("run oshrun");
    let secs = t0.elapsed().as_secs_f64();
    let text = std::fs::read_to_string(log).unwrap_or_default();
    if status.success() {
        return match self_skip(&text) {
            Some(l) => Outcome::SelfSkip(l.trim().chars().take(120).collect()),
            None => Outcome::Pass(secs),
        };
    }
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

/// A program not run, or run with other arguments, in some configurations
/// (`tests/sos-exceptions.txt`).
struct Exception {
    name: String,
    /// `npes=N`, `npes!=N` or a configuration's label.
    place: String,
    /// `skip`, or `args=A,B,...` (the program's arguments, comma-separated).
    action: String,
    reason: String,
}

impl Exception {
    fn applies(&self, cfg: &RunConfig) -> bool {
        let num = |v: &str| -> u32 {
            v.parse()
                .unwrap_or_else(|_| panic!("tests/sos-exceptions.txt: {:?} is not a PE count", v))
        };
        if let Some(n) = self.place.strip_prefix("npes!=") {
            cfg.npes != num(n)
        } else if let Some(n) = self.place.strip_prefix("npes=") {
            cfg.npes == num(n)
        } else {
            cfg.label == self.place
        }
    }
}

fn exceptions() -> Vec<Exception> {
    let path = Path::new(MANIFEST).join("tests/sos-exceptions.txt");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let mut w = l.split_whitespace();
            let (Some(name), Some(place), Some(action)) = (w.next(), w.next(), w.next()) else {
                panic!(
                    "{}: {l:?}: expected NAME WHERE ACTION REASON",
                    path.display()
                );
            };
            let reason = w.collect::<Vec<_>>().join(" ");
            assert!(
                (action == "skip" || action.starts_with("args=")) && !reason.is_empty(),
                "{}: {l:?}: ACTION is skip or args=A,B,... and a reason follows",
                path.display()
            );
            Exception {
                name: name.into(),
                place: place.into(),
                action: action.into(),
                reason,
            }
        })
        .collect()
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
    let exceptions = exceptions();
    let mut regressions = Vec::new();
    for cfg in configs() {
        // The namespace pair lives as long as this configuration's runs.
        let pair = if cfg.netns {
            if let Err(why) = unpinned_live::launch::veth::available() {
                println!(
                    "SKIPPED [{}]: UDP between network namespaces: {why}",
                    cfg.label
                );
                continue;
            }
            Some(
                unpinned_live::launch::veth::NetnsPair::create("sos", 203)
                    .unwrap_or_else(|e| panic!("[{}] creating the namespace pair: {e}", cfg.label)),
            )
        } else {
            None
        };
        let netns: Vec<String> = pair.iter().flat_map(|p| p.names.clone()).collect();
        let t1 = Instant::now();
        let mut results: Vec<(String, Outcome)> = Vec::new();
        let mut excepted: Vec<(String, String)> = Vec::new();
        for (p, b) in progs.iter().zip(&built) {
            let mut args = Vec::new();
            if let Some(e) = exceptions
                .iter()
                .find(|e| e.name == p.name && e.applies(&cfg))
            {
                match e.action.strip_prefix("args=") {
                    Some(a) => {
                        args = a.split(',').map(String::from).collect();
                        println!(
                            "[{}] NOTE       {} runs with {a:?}: {}",
                            cfg.label, p.name, e.reason
                        );
                    }
                    None => {
                        excepted.push((p.name.clone(), format!("{} ({})", e.reason, e.place)));
                        continue;
                    }
                }
            }
            let o = match b.as_ref().expect("built") {
                Err(e) => Outcome::BuildFail(e.clone()),
                Ok(()) => run(
                    &work.join(&p.name),
                    &args,
                    &work.join(format!("{}.log", p.name)),
                    &cfg,
                    &netns,
                ),
            };
            let line = match &o {
                Outcome::Pass(s) => format!("PASS       {} ({s:.2} s)", p.name),
                Outcome::SelfSkip(l) => format!("SELF-SKIP  {}: {l}", p.name),
                Outcome::Fail(w) => format!("FAIL       {}: {w}", p.name),
                Outcome::BuildFail(w) => format!("BUILD-FAIL {}: {w}", p.name),
            };
            println!("[{}] {line}", cfg.label);
            results.push((p.name.clone(), o));
        }
        drop(pair);
        for (n, why) in skipped.iter().chain(&excepted) {
            println!("[{}] SKIP       {n}: {why}", cfg.label);
        }
        let count = |f: fn(&Outcome) -> bool| results.iter().filter(|(_, o)| f(o)).count();
        let passed = count(|o| matches!(o, Outcome::Pass(_)));
        let self_skipped = count(|o| matches!(o, Outcome::SelfSkip(_)));
        println!(
            "SOS [{}]: {passed} passed, {} failed ({} did not build), {} skipped ({} by the program itself, for this number of PEs), {:.0} s",
            cfg.label,
            results.len() - passed - self_skipped,
            count(|o| matches!(o, Outcome::BuildFail(_))),
            skipped.len() + excepted.len() + self_skipped,
            self_skipped,
            t1.elapsed().as_secs_f64()
        );
        for name in &expected {
            match results.iter().find(|(n, _)| n == name) {
                Some((_, Outcome::Pass(_))) => {}
                // Tested at 2 PEs; at other counts some programs test nothing and say so.
                Some((_, Outcome::SelfSkip(_))) if cfg.npes != 2 => {}
                Some(_) => regressions.push(format!("{name} [{}]", cfg.label)),
                None if skipped.iter().chain(&excepted).any(|(n, _)| n == name) => {}
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
