//! The C API from C and C++ programs built with `oshcc` / `oshcxx` and run with `oshrun`: the
//! type-generic interfaces (C11 and C++), with and without the load/store path and over
//! UDP; a symmetric heap larger than the machine with `ulimit -l 0`; and misuse that must end
//! the job with a message a user can act on.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const MANIFEST: &str = env!("CARGO_MANIFEST_DIR");

fn work_dir(tag: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let d = exe
        .parent()
        .unwrap()
        .join(format!("shmem-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn build(dir: &Path, src: &str, out: &str, cxx: bool) -> PathBuf {
    let bin = dir.join(out);
    let tool = if cxx {
        env!("CARGO_BIN_EXE_oshcxx")
    } else {
        env!("CARGO_BIN_EXE_oshcc")
    };
    let mut c = Command::new(tool);
    if cxx {
        c.args(["-x", "c++", "-std=c++11"]);
    } else {
        c.args(["-std=c11", "-pedantic"]);
    }
    let o = c
        .args(["-Wall", "-Wextra", "-Werror", "-O1"])
        .arg(Path::new(MANIFEST).join("tests/c").join(src))
        .arg("-o")
        .arg(&bin)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{tool} {src}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    bin
}

fn oshrun(np: u32, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = support::oshrun();
    c.args(["-np", &np.to_string(), "--timeout", "60"])
        .args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn generic_interfaces_from_c11_and_cxx_on_every_path() {
    if !have("cc") {
        eprintln!("SKIPPED: no C compiler (`cc`)");
        return;
    }
    let dir = work_dir("generic");
    let mut bins = vec![build(&dir, "generic.c", "generic", false)];
    if have("c++") {
        bins.push(build(&dir, "generic.c", "generic_cxx", true));
    }
    for bin in &bins {
        let b = bin.to_str().unwrap();
        for (np, args, env) in [
            (1, vec![b], vec![]),
            (3, vec![b], vec![]),
            (2, vec![b], vec![("SHMEM_LOADSTORE", "0")]),
            (
                2,
                vec!["--transport", "udp", b],
                vec![("SHMEM_LOADSTORE", "0")],
            ),
        ] {
            let o = oshrun(np, &args, &env);
            let t = text(&o);
            assert!(o.status.success(), "{np} PEs {args:?} {env:?}: {t}");
            assert_eq!(t.matches("generic ok").count(), np as usize, "{t}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `trace.file` through `UNPINNED_SET`: every PE writes its live path's trace at
/// `shmem_finalize` (docs/performance.md reads one-way latencies from these files).
#[test]
fn every_pe_writes_its_trace_file_at_finalize() {
    if !have("cc") {
        eprintln!("SKIPPED: no C compiler (`cc`)");
        return;
    }
    let dir = work_dir("trace");
    let bin = build(&dir, "generic.c", "generic", false);
    let base = dir.join("trace");
    let set = format!("trace.file={}", base.display());
    let o = oshrun(
        2,
        &[bin.to_str().unwrap()],
        &[("SHMEM_LOADSTORE", "0"), ("UNPINNED_SET", &set)],
    );
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    for pe in 0..2 {
        let f = dir.join(format!("trace.rank{pe}.csv"));
        let csv = std::fs::read_to_string(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let mut lines = csv.lines();
        assert_eq!(lines.next(), Some("at_ns,rank,point,arg"), "{csv}");
        let rows: Vec<&str> = lines.collect();
        // Every transfer between the PEs went through PART: posts, packets sent and received.
        for point in ["Post", "TxSent", "RxStart", "RxEnd"] {
            assert!(
                rows.iter().any(|r| r.split(',').nth(2) == Some(point)
                    && r.split(',').nth(1) == Some(&pe.to_string())),
                "PE {pe}: no {point} in {} rows",
                rows.len()
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_heap_larger_than_the_machine_with_nothing_locked() {
    if !have("cc") {
        eprintln!("SKIPPED: no C compiler (`cc`)");
        return;
    }
    let dir = work_dir("bigheap");
    let bin = build(&dir, "generic.c", "generic", false);
    // 2 PEs x 64 GiB of symmetric heap, mapped by both (load/store path): reservations only.
    let o = Command::new("sh")
        .args([
            "-c",
            r#"ulimit -l 0 && exec "$0" -np 2 --timeout 60 "$1""#,
            env!("CARGO_BIN_EXE_oshrun"),
            bin.to_str().unwrap(),
        ])
        .env("SHMEM_SYMMETRIC_SIZE", "64G")
        .env_remove("LD_LIBRARY_PATH") // as `support::oshrun`
        .output()
        .unwrap();
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert_eq!(t.matches("generic ok").count(), 2, "{t}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn misuse_ends_the_job_with_a_message_naming_the_call() {
    if !have("cc") {
        eprintln!("SKIPPED: no C compiler (`cc`)");
        return;
    }
    let dir = work_dir("errors");
    let bin = build(&dir, "errors.c", "errors", false);
    let b = bin.to_str().unwrap();
    let cases: [(&str, &[&str]); 4] = [
        ("before-init", &["shmem_n_pes", "before shmem_init"]),
        (
            "not-symmetric",
            &["shmem_long_put", "PE 0", "not symmetric", "PE 1"],
        ),
        ("bad-pe", &["shmem_long_p", "PE 5 is out of range"]),
        (
            "exhausted",
            &[
                "shmem_malloc",
                "1099511627776 bytes",
                "SHMEM_SYMMETRIC_SIZE",
            ],
        ),
    ];
    for (what, want) in cases {
        let o = oshrun(2, &[b, what], &[]);
        let t = text(&o);
        assert!(!o.status.success(), "{what}: the job succeeded: {t}");
        for w in want {
            assert!(t.contains(w), "{what}: no {w:?} in: {t}");
        }
    }
    let o = oshrun(2, &[b, "global-exit"], &[]);
    assert_eq!(o.status.code(), Some(7), "{}", text(&o));
    let _ = std::fs::remove_dir_all(&dir);
}
