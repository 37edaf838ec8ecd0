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

/// Ranks placed in two network namespaces joined by a veth pair (`LaunchOptions::netns`):
/// ranks 0 and 2 in the first, rank 1 in the second, over UDP on the namespaces' addresses
/// (which exist nowhere else: a rank left in the launcher's namespace could not bind).
/// Needs root and `ip`; prints why and checks nothing otherwise.
#[test]
fn transfers_over_udp_between_namespaces() {
    if let Err(why) = unpinned_live::launch::veth::available() {
        println!("SKIPPED transfers_over_udp_between_namespaces: {why}");
        return;
    }
    let pair = unpinned_live::launch::veth::NetnsPair::create("upm", 204).unwrap();
    let mut o = opts(3, LaunchTransport::Udp, "transfers");
    o.netns = pair.names.to_vec();
    let r = launch(&o).unwrap();
    assert!(r.success(), "{:?}", r.failures());
}

#[test]
fn missing_namespace_is_a_setup_error() {
    let mut o = opts(2, LaunchTransport::Udp, "transfers");
    o.netns = vec!["unpinned-no-such-namespace".into()];
    let e = launch(&o).unwrap_err().to_string();
    assert!(
        e.contains("unpinned-no-such-namespace") && e.contains("ip netns add"),
        "{e}"
    );
}
