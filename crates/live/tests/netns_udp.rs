//! UDP between two network namespaces with injected packet loss: the live runtime still
//! delivers every byte and every completion exactly once.
//!
//! Needs root, `ip` (iproute2) and `nft` (nftables; `tc netem` is not available on the
//! development kernel, so loss is an nftables rule: `numgen random mod 100 < 5 drop` on UDP
//! leaving namespace a). Without them the test prints why and passes without checking
//! anything. The namespaces and their veth pair (`unpinned_live::launch::veth`) are named after
//! this process (`upt-<pid>-a`/`-b`, `upta<pid>`/`uptb<pid>`), use a /30 of 10.200.0.0/16,
//! carry traffic only between each other, and are deleted by a guard, also when the test
//! fails.
//!
//! The two ranks are the `unpinned-live-selftest lossy` program, started here with the
//! environment `unpinned run` would set (the launcher has no per-rank namespaces).

use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use unpinned_live::launch::veth::NetnsPair;

use unpinned_live::edge::{ENV_DIR, ENV_PEERS, ENV_RANK, ENV_SET, ENV_SIZE, ENV_TRANSPORT};

/// Percentage of UDP packets leaving namespace a that are dropped (`UNPINNED_NETNS_LOSS`
/// overrides it, e.g. to soak the recovery at 30%).
fn loss_percent() -> u32 {
    unpinned_testkit::number_or("UNPINNED_NETNS_LOSS", 20) as u32
}

/// Engine settings for the lossy link: 1 KiB packets (16 per 16 KiB block), the selective
/// retransmission policy (the live default, named here because the test is about it: a lost
/// packet is resent alone, so a block does not need all its 16 packets to survive one
/// attempt, which at 20 % loss happens 0.8^16 = 3 % of the time), and a short block timeout
/// so that a lost poll or SACK is recovered in milliseconds. (`unpinned live live-loss`
/// compares both policies.)
const SETS: &str = "engine.packet_bytes=1024,engine.block_timeout_us=3000,engine.max_timeouts=100,engine.retransmit=selective";

fn run(args: &[&str]) -> Result<Output, String> {
    Command::new(args[0])
        .args(&args[1..])
        .output()
        .map_err(|e| format!("{}: {e}", args.join(" ")))
}

fn must(args: &[&str]) {
    let o = run(args).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        o.status.success(),
        "`{}` failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&o.stderr)
    );
}

fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// Two namespaces joined by a veth pair (deleted, with the pair, when `pair` is dropped, after
/// this guard's drop). Kills and reaps the rank processes started in them first, so nothing
/// outlives a failed test.
struct Netns {
    pair: NetnsPair,
    children: Vec<Child>,
    dir: PathBuf,
}

impl Drop for Netns {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn udp_between_namespaces_with_loss_delivers_exactly_once() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("SKIPPED netns_udp: not root (creating network namespaces needs root)");
        return;
    }
    for tool in ["ip", "nft"] {
        if !have(tool) {
            println!("SKIPPED netns_udp: `{tool}` not found (install iproute2 and nftables; .ci/run does)");
            return;
        }
    }
    let pid = std::process::id();
    let dir = std::env::temp_dir().join(format!("unpinned-netns-{pid}"));
    std::fs::create_dir_all(&dir).unwrap();
    let pair = NetnsPair::create("upt", 200).unwrap_or_else(|e| panic!("{e}"));
    let mut ns = Netns {
        pair,
        children: Vec::new(),
        dir: dir.clone(),
    };
    let a = ns.pair.names[0].clone();
    must(&[
        "ip", "netns", "exec", &a, "nft", "add", "table", "inet", "upt",
    ]);
    must(&[
        "ip",
        "netns",
        "exec",
        &a,
        "nft",
        "add",
        "chain",
        "inet",
        "upt",
        "out",
        "{ type filter hook output priority 0; }",
    ]);
    let loss = loss_percent().to_string();
    must(&[
        "ip", "netns", "exec", &a, "nft", "add", "rule", "inet", "upt", "out", "meta", "l4proto",
        "udp", "numgen", "random", "mod", "100", "<", &loss, "counter", "drop",
    ]);

    let [a0, a1] = ns.pair.addrs;
    let peers = format!("{a0}:7471,{a1}:7471");
    let t0 = Instant::now();
    for rank in 0..2 {
        let child = Command::new("ip")
            .args(["netns", "exec", &ns.pair.names[rank]])
            .arg(env!("CARGO_BIN_EXE_unpinned-live-selftest"))
            .arg("lossy")
            .env(ENV_RANK, rank.to_string())
            .env(ENV_SIZE, "2")
            .env(ENV_TRANSPORT, "udp")
            .env(ENV_PEERS, &peers)
            .env(ENV_DIR, &dir)
            .env(ENV_SET, SETS)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start a rank in its namespace");
        ns.children.push(child);
    }
    // Bounded: both ranks must finish within 25 s (the guard kills them otherwise).
    let mut done = [false; 2];
    while !done.iter().all(|&d| d) {
        for (i, c) in ns.children.iter_mut().enumerate() {
            if !done[i] && c.try_wait().expect("wait for a rank").is_some() {
                done[i] = true;
            }
        }
        assert!(
            t0.elapsed() < Duration::from_secs(25),
            "ranks still running after 25 s (done: {done:?})"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let children = std::mem::take(&mut ns.children);
    let mut failures = Vec::new();
    for (rank, c) in children.into_iter().enumerate() {
        let o = c.wait_with_output().expect("rank output");
        let (out, err) = (
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr),
        );
        println!("rank {rank} ({:?}): {}{}", o.status, out.trim(), err.trim());
        if !o.status.success() {
            failures.push(format!("rank {rank}: {:?}: {}", o.status, err.trim()));
        }
    }
    // The loss rule did drop packets: its counter says how many.
    let rules = run(&[
        "ip", "netns", "exec", &a, "nft", "list", "table", "inet", "upt",
    ])
    .unwrap();
    let rules = String::from_utf8_lossy(&rules.stdout).to_string();
    let dropped: u64 = rules
        .split_once("counter packets ")
        .and_then(|(_, r)| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no drop counter in the rules: {rules}"));
    assert!(failures.is_empty(), "{failures:?}");
    assert!(dropped > 0, "the loss rule dropped nothing: {rules}");
    println!(
        "netns_udp: both ranks ok in {:?}; {dropped} UDP packets dropped ({loss}%) leaving {a}",
        t0.elapsed()
    );
    drop(ns);
}
