//! What the multi-PE tests of this folder share: running this test binary as the PEs of a
//! job.

use std::time::Duration;

use unpinned_live::launch::{launch, LaunchOptions, LaunchTransport};

/// Launch this test binary as `npes` PEs over `transport` with the load/store path off, each
/// running only the ignored test `pe_program`, and fail unless every PE passed.
pub fn run_pe_program(npes: u32, transport: LaunchTransport) {
    let exe = std::env::current_exe().unwrap();
    let mut o = LaunchOptions::new(npes, exe);
    o.args = vec![
        "pe_program".into(),
        "--exact".into(),
        "--ignored".into(),
        "--nocapture".into(),
        "--test-threads=1".into(),
    ];
    o.env = vec![("SHMEM_LOADSTORE".into(), "0".into())];
    o.transport = transport;
    o.timeout = Duration::from_secs(60);
    o.grace = Duration::from_secs(2);
    let r = launch(&o).expect("launch");
    assert!(r.success(), "{}", r.failures().join("; "));
}
