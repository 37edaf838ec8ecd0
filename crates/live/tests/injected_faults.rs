//! The live runtime under injected drop, duplication, reordering and corruption (the
//! `transport.inject_*` knobs, `transport::faulty`): two real processes still deliver every
//! byte and every completion exactly once, over UDP on loopback and over shared memory.
//!
//! Loss alone is also tested between two network namespaces with the kernel dropping packets
//! (`netns_udp.rs`); this kernel has no netem, so duplication and reordering come from the
//! wrapper. The ranks are the selftest's `lossy` scenario.

use std::time::Duration;

use unpinned_live::launch::{launch, LaunchOptions, LaunchTransport};

/// 1 KiB packets (16 per block), selective retransmission, a short block timeout so a lost
/// poll or SACK is recovered in milliseconds, and every kind of fault at once.
fn opts(transport: LaunchTransport, faults: &str, retransmit: &str) -> LaunchOptions {
    let mut o = LaunchOptions::new(2, env!("CARGO_BIN_EXE_unpinned-live-selftest"));
    o.transport = transport;
    o.args = vec!["lossy".to_string()];
    o.timeout = Duration::from_secs(60);
    o.sets = [
        "engine.packet_bytes=1024",
        "engine.block_timeout_us=3000",
        "engine.max_timeouts=100",
        &format!("engine.retransmit={retransmit}"),
        "transport.inject_seed=11",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain(faults.split(',').map(str::to_string))
    .collect();
    o
}

const MIX: &str = "transport.inject_drop=0.2,transport.inject_duplicate=0.1,transport.inject_reorder=0.1,transport.inject_corrupt=0.02";

#[test]
fn udp_with_drop_duplicate_reorder_and_corrupt_delivers_exactly_once() {
    let r = launch(&opts(LaunchTransport::Udp, MIX, "selective")).unwrap();
    assert!(r.success(), "{:?}", r.failures());
}

#[test]
fn shm_with_drop_duplicate_reorder_and_corrupt_delivers_exactly_once() {
    let r = launch(&opts(LaunchTransport::Shm, MIX, "selective")).unwrap();
    assert!(r.success(), "{:?}", r.failures());
}

/// The spec's whole-block retransmission needs every packet of a block to survive one
/// attempt: it is tested at rates where that happens within the retries.
#[test]
fn block_retransmission_with_light_faults_delivers_exactly_once() {
    let light = "transport.inject_drop=0.01,transport.inject_duplicate=0.01,transport.inject_reorder=0.01,transport.inject_corrupt=0.005";
    let r = launch(&opts(LaunchTransport::Udp, light, "block")).unwrap();
    assert!(r.success(), "{:?}", r.failures());
}

#[test]
fn a_rate_outside_zero_to_one_is_refused_naming_the_knob() {
    let e = launch(&opts(
        LaunchTransport::Shm,
        "transport.inject_drop=1.5",
        "selective",
    ))
    .unwrap_err();
    assert!(e.to_string().contains("transport.inject_drop"), "{e}");
}
