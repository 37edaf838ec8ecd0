//! What the multi-PE tests of this folder share: running this test binary as the PEs of a
//! job, and `oshrun` for the C programs.

use std::process::Command;
use std::time::Duration;

use unpinned_live::launch::{launch, LaunchOptions, LaunchTransport};

/// Launch this test binary as `npes` PEs over `transport` with the load/store path off, each
/// running only the ignored test `pe_program`, and fail unless every PE passed.
#[allow(dead_code)] // Not every test file of this folder uses both.
pub fn run_pe_program(npes: u32, transport: LaunchTransport) {
    run_pe_program_with(npes, transport, &[("SHMEM_LOADSTORE", "0")]);
}

/// [`run_pe_program`] with the environment `env` for every PE instead.
#[allow(dead_code)]
pub fn run_pe_program_with(npes: u32, transport: LaunchTransport, env: &[(&str, &str)]) {
    let exe = std::env::current_exe().unwrap();
    let mut o = LaunchOptions::new(npes, exe);
    o.args = vec![
        "pe_program".into(),
        "--exact".into(),
        "--ignored".into(),
        "--nocapture".into(),
        "--test-threads=1".into(),
    ];
    o.env = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    o.transport = transport;
    o.timeout = Duration::from_secs(60);
    o.grace = Duration::from_secs(2);
    let r = launch(&o).expect("launch");
    assert!(r.success(), "{}", r.failures().join("; "));
}

/// `oshrun` of this build, without the `LD_LIBRARY_PATH` cargo gives tests: cargo puts
/// `target/<profile>/` first on it, where an earlier `cargo build` may have left an older
/// `libunpinned_shmem.so` than the one `oshcc` linked the program against, and the
/// program's RUNPATH must decide.
#[allow(dead_code)]
pub fn oshrun() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_oshrun"));
    c.env_remove("LD_LIBRARY_PATH");
    c
}
