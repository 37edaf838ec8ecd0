//! Builds `examples/c/ring.c` with the system C compiler against `include/unpinned.h` and the
//! static library `libunpinned.a` of this crate, then runs it through the launcher
//! ([`unpinned_live::launch`], what `unpinned run -n N -- ./ring` does) with 2 and 3 ranks.
//!
//! Skipped (with a message) only if no C compiler (`cc`, or `$CC`) is installed.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use unpinned_live::launch::{launch, LaunchOptions, LaunchTransport};

const MANIFEST: &str = env!("CARGO_MANIFEST_DIR");

/// The profile directory of the build that produced this test binary
/// (`<target>/<profile>/deps/c_example-HASH` -> `<target>/<profile>`).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let deps = exe.parent().expect("test binary directory");
    assert_eq!(
        deps.file_name().and_then(|n| n.to_str()),
        Some("deps"),
        "unexpected test binary location {}",
        exe.display()
    );
    deps.parent().expect("profile directory").to_path_buf()
}

fn mtime(p: &Path) -> SystemTime {
    p.metadata()
        .and_then(|m| m.modified())
        .unwrap_or(SystemTime::UNIX_EPOCH)
}

/// `libunpinned.a`, built by cargo together with this test (the library target's
/// crate-types include staticlib). `cargo test` leaves it in `deps/` (`cargo build` also copies
/// it to the profile directory): take the newest copy.
fn static_lib() -> PathBuf {
    let dir = profile_dir();
    let deps = dir.join("deps");
    let hashed = std::fs::read_dir(&deps)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("libunpinned-") && n.ends_with(".a"))
        });
    [deps.join("libunpinned.a"), dir.join("libunpinned.a")]
        .into_iter()
        .chain(hashed)
        .filter(|p| p.is_file())
        .max_by_key(|p| mtime(p))
        .unwrap_or_else(|| panic!("libunpinned.a not found in {} or its deps/ (build with `cargo test -p unpinned-capi`)", dir.display()))
}

fn compiler() -> Option<String> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    Command::new(&cc)
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|_| cc)
}

/// Compile ring.c into `dir/ring`.
fn build_ring(cc: &str, dir: &Path) -> PathBuf {
    build(cc, dir, "ring")
}

/// Compile `examples/c/NAME.c` into `dir/NAME`.
fn build(cc: &str, dir: &Path, name: &str) -> PathBuf {
    let out = dir.join(name);
    let lib = static_lib();
    let o = Command::new(cc)
        .args([
            "-std=c99",
            "-O1",
            "-Wall",
            "-Wextra",
            "-pedantic",
            "-Werror",
            "-I",
        ])
        .arg(Path::new(MANIFEST).join("include"))
        .arg(Path::new(MANIFEST).join(format!("examples/c/{name}.c")))
        .arg(&lib)
        .args(["-lpthread", "-ldl", "-lm", "-lrt", "-o"])
        .arg(&out)
        .output()
        .expect("run the C compiler");
    assert!(
        o.status.success(),
        "compiling {name}.c against {} failed:\n{}{}",
        lib.display(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

/// Run `ring` with `n` ranks; each rank's stdout goes to `dir/rank-R.out` (the launcher lets
/// ranks inherit stdout, which the test harness does not capture).
fn run_ring(ring: &Path, dir: &Path, n: u32, transport: LaunchTransport) {
    let mut o = LaunchOptions::new(n, "/bin/sh");
    o.args = vec![
        "-c".into(),
        r#"exec "$0" > "$1/rank-$UNPINNED_RANK.out""#.into(),
        ring.display().to_string(),
        dir.display().to_string(),
    ];
    o.transport = transport;
    o.timeout = Duration::from_secs(60);
    o.grace = Duration::from_secs(2);
    let report = launch(&o).expect("launch");
    assert!(
        report.success(),
        "ring with {n} ranks ({transport:?}) failed: {}",
        report.failures().join("; ")
    );
    for r in 0..n {
        let p = dir.join(format!("rank-{r}.out"));
        let s = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        let left = (r + n - 1) % n;
        let want = format!("rank {r} of {n}: ok: \"hello from rank {left} of {n}\" written into my inbox, 163840 bytes read from rank {left}");
        assert!(
            s.contains(&want),
            "rank {r} printed {s:?}, expected a line with {want:?}"
        );
        print!("{s}");
        let _ = std::fs::remove_file(&p);
    }
}

#[test]
fn ring_c_builds_against_the_header_and_runs_under_the_launcher() {
    let Some(cc) = compiler() else {
        eprintln!("SKIPPED: no C compiler (`cc` or $CC) found; install one (e.g. gcc) to build and run examples/c/ring.c");
        return;
    };
    let dir = profile_dir().join(format!("capi-c-example-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ring = build_ring(&cc, &dir);

    // Outside the launcher the program fails with an actionable message.
    let o = Command::new(&ring)
        .env_remove("UNPINNED_RANK")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "stderr: {err}");
    assert!(
        err.contains("UP_ERR_ENV") || err.contains("launcher environment"),
        "{err}"
    );
    assert!(
        err.contains("UNPINNED_RANK") && err.contains("unpinned run"),
        "{err}"
    );

    run_ring(&ring, &dir, 2, LaunchTransport::Shm);
    run_ring(&ring, &dir, 3, LaunchTransport::Shm);
    run_ring(&ring, &dir, 2, LaunchTransport::Udp);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The header also compiles as C++ (extern "C" guards), if a C++ compiler is installed.
#[test]
fn header_compiles_as_cxx() {
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    if Command::new(&cxx)
        .arg("--version")
        .output()
        .map(|o| !o.status.success())
        .unwrap_or(true)
    {
        eprintln!("SKIPPED: no C++ compiler (`c++` or $CXX) found");
        return;
    }
    let dir = profile_dir().join(format!("capi-cxx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("t.cc");
    std::fs::write(
        &src,
        "#include \"unpinned.h\"\nint main() { return up_strerror(UP_OK) == nullptr; }\n",
    )
    .unwrap();
    let o = Command::new(&cxx)
        .args([
            "-std=c++11",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-fsyntax-only",
            "-I",
        ])
        .arg(Path::new(MANIFEST).join("include"))
        .arg(&src)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        o.status.success(),
        "unpinned.h as C++: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// examples/c/aa.c: Active Access (active puts, handler, active flush) and remote atomics from
/// C, with 2 and 3 ranks and both handler kinds.
#[test]
fn aa_c_builds_and_runs_under_the_launcher() {
    let Some(cc) = compiler() else {
        eprintln!("SKIPPED: no C compiler (`cc` or $CC) found; install one (e.g. gcc) to build and run examples/c/aa.c");
        return;
    };
    let dir = profile_dir().join(format!("capi-c-aa-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let aa = build(&cc, &dir, "aa");
    for (n, notify) in [(2u32, "sleep"), (3, "poll"), (3, "sleep")] {
        let mut o = LaunchOptions::new(n, "/bin/sh");
        o.args = vec![
            "-c".into(),
            r#"exec "$0" "$2" > "$1/rank-$UNPINNED_RANK.out""#.into(),
            aa.display().to_string(),
            dir.display().to_string(),
            notify.into(),
        ];
        o.transport = LaunchTransport::Shm;
        o.timeout = Duration::from_secs(60);
        o.grace = Duration::from_secs(2);
        let report = launch(&o).expect("launch");
        assert!(
            report.success(),
            "aa with {n} ranks ({notify}) failed: {}",
            report.failures().join("; ")
        );
        for r in 0..n {
            let p = dir.join(format!("rank-{r}.out"));
            let s = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            let want = format!(
                "rank {r} of {n}: aa ok: {} active puts handled ({notify})",
                (n - 1) * 200
            );
            assert!(
                s.contains(&want),
                "rank {r} printed {s:?}, expected {want:?}"
            );
            print!("{s}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
