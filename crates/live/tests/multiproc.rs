//! Real processes through the launcher: every rank is the selftest binary.
//! `UNPINNED_SET=key=value,...` given to the test passes its overrides to every rank (e.g. to
//! stress `engine.block_timeout_us=1000`).

use std::time::Duration;

use unpinned_live::launch::{launch, LaunchOptions, LaunchTransport};

fn opts(n: u32, transport: LaunchTransport, scenario: &str) -> LaunchOptions {
    let mut o = LaunchOptions::new(n, env!("CARGO_BIN_EXE_unpinned-live-selftest"));
    o.transport = transport;
    o.args = vec![scenario.to_string()];
    o.timeout = Duration::from_secs(40);
    o.grace = Duration::from_secs(10);
    o.sets = unpinned_live::edge::overrides_from_env();
    o
}

#[test]
fn transfers_over_shm_three_ranks() {
    let r = launch(&opts(3, LaunchTransport::Shm, "transfers")).unwrap();
    assert!(r.success(), "{:?}", r.failures());
}

#[test]
fn transfers_over_udp_two_ranks() {
    let r = launch(&opts(2, LaunchTransport::Udp, "transfers")).unwrap();
    assert!(r.success(), "{:?}", r.failures());
}

/// Rank 1 dies (SIGKILL) with rank 0's write to it in flight, by construction: it holds its
/// engine from before the write is posted (the write cannot complete without it, however
/// the two processes are scheduled). Rank 0 must get an error that names rank 1 as gone
/// (PeerGone over shared memory; RetryExceeded where the transport cannot tell) and exit 0;
/// the launcher reports rank 1's signal.
#[test]
fn killed_rank_gives_retry_exceeded_and_is_reported() {
    let r = launch(&opts(2, LaunchTransport::Shm, "kill")).unwrap();
    assert!(!r.success());
    assert_eq!(r.first_failure, Some(1), "{:?}", r.failures());
    assert!(
        r.ranks[0].success(),
        "rank 0 saw its write fail naming rank 1, and exited 0: {:?}",
        r.failures()
    );
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(r.ranks[1].status.signal(), Some(9));
    assert!(
        !r.timed_out && r.elapsed < Duration::from_secs(20),
        "{:?}",
        r.elapsed
    );
}

#[test]
fn missing_program_is_a_setup_error() {
    let mut o = opts(2, LaunchTransport::Shm, "x");
    o.program = "/nonexistent/unpinned-program".into();
    let e = launch(&o).unwrap_err();
    assert!(e.to_string().contains("starting rank 0"), "{e}");
}
