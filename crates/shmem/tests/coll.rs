//! Teams and collectives from C (tests/c/coll.c): team-based collectives on the world, on a
//! reverse-order team and on 2-D split teams, active-set collectives on `pSync`, with 1 to 4
//! PEs, with and without the load/store path, and over UDP.

use std::path::{Path, PathBuf};
use std::process::Command;

const MANIFEST: &str = env!("CARGO_MANIFEST_DIR");

fn have_cc() -> bool {
    Command::new("cc")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn build(dir: &Path) -> PathBuf {
    let bin = dir.join("coll");
    let o = Command::new(env!("CARGO_BIN_EXE_oshcc"))
        .args(["-std=c11", "-pedantic", "-Wall", "-Wextra", "-Werror", "-O1"])
        .arg(Path::new(MANIFEST).join("tests/c/coll.c"))
        .arg("-o")
        .arg(&bin)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "oshcc coll.c: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    bin
}

#[test]
fn teams_and_collectives_with_1_to_4_pes_on_every_path() {
    if !have_cc() {
        eprintln!("SKIPPED: no C compiler (`cc`)");
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let dir = exe
        .parent()
        .unwrap()
        .join(format!("shmem-coll-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bin = build(&dir);
    let b = bin.to_str().unwrap();
    for (np, transport, loadstore) in [
        (1, "shm", "1"),
        (3, "shm", "1"),
        (4, "shm", "0"),
        (2, "udp", "0"),
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_oshrun"))
            .args(["-np", &np.to_string(), "--timeout", "60"])
            .args(["--transport", transport, b])
            .env("SHMEM_LOADSTORE", loadstore)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{np} PEs over {transport}, load/store {loadstore}: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
