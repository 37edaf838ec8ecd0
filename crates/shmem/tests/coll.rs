//! Teams and collectives from C (tests/c/coll.c): team-based collectives on the world, on a
//! reverse-order team and on 2-D split teams, active-set collectives on `pSync`, with 1 to 4
//! PEs, with and without the load/store path, and over UDP; from C11 and from C++.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

const MANIFEST: &str = env!("CARGO_MANIFEST_DIR");

fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Build coll.c as C11 (its generic calls through `_Generic`) or as C++ (through overloads).
fn build(dir: &Path, cxx: bool) -> PathBuf {
    let bin = dir.join(if cxx { "coll_cxx" } else { "coll" });
    let mut c = if cxx {
        let mut c = Command::new(env!("CARGO_BIN_EXE_oshcxx"));
        c.args(["-x", "c++", "-std=c++11"]);
        c
    } else {
        let mut c = Command::new(env!("CARGO_BIN_EXE_oshcc"));
        c.arg("-std=c11");
        c
    };
    let o = c
        .args(["-pedantic", "-Wall", "-Wextra", "-Werror", "-O1"])
        .arg(Path::new(MANIFEST).join("tests/c/coll.c"))
        .arg("-o")
        .arg(&bin)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "building coll.c (C++: {cxx}): {}",
        String::from_utf8_lossy(&o.stderr)
    );
    bin
}

#[test]
fn teams_and_collectives_with_1_to_4_pes_on_every_path() {
    if !have("cc") {
        eprintln!("SKIPPED: no C compiler (`cc`)");
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let dir = exe
        .parent()
        .unwrap()
        .join(format!("shmem-coll-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let c = build(&dir, false);
    let mut runs = vec![
        (1, "shm", "1", c.clone()),
        (3, "shm", "1", c.clone()),
        (4, "shm", "0", c.clone()),
        (2, "udp", "0", c),
    ];
    if have("c++") {
        runs.push((2, "shm", "0", build(&dir, true)));
    }
    for (np, transport, loadstore, bin) in runs {
        let b = bin.to_str().unwrap();
        let o = support::oshrun()
            .args(["-np", &np.to_string(), "--timeout", "60"])
            .args(["--transport", transport, b])
            .env("SHMEM_LOADSTORE", loadstore)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{b}: {np} PEs over {transport}, load/store {loadstore}: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// RMA and atomics on a context of the odd-PE team at 4 PEs: team PE 1 is world PE 3, through
/// the load/store path and through PART.
#[test]
fn a_team_context_numbers_pes_in_its_team() {
    if !have("cc") {
        eprintln!("SKIPPED: no C compiler (`cc`)");
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let dir = exe
        .parent()
        .unwrap()
        .join(format!("shmem-team-ctx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bin = dir.join("team_ctx");
    let o = Command::new(env!("CARGO_BIN_EXE_oshcc"))
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1"])
        .arg(Path::new(MANIFEST).join("tests/c/team_ctx.c"))
        .arg("-o")
        .arg(&bin)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "building team_ctx.c: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    for loadstore in ["1", "0"] {
        let o = support::oshrun()
            .args(["-np", "4", "--timeout", "60"])
            .arg(&bin)
            .env("SHMEM_LOADSTORE", loadstore)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "team_ctx at 4 PEs, load/store {loadstore}: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
