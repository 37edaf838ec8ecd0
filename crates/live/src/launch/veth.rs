//! Two network namespaces joined by a veth pair, for running a job's ranks on a real (virtual)
//! network: `ip netns exec`, or the launcher's per-rank namespaces ([`super::LaunchOptions`]'s
//! `netns`, `oshrun --netns`, `unpinned run --netns`). Used by the tests (live's netns_udp and
//! multiproc, the SOS runner) and by livebench's `live-loss`, which adds nftables faults.
//!
//! Names carry a tag and this process's id (`TAG-<pid>-a` / `-b`, interfaces `TAGa<pid>` /
//! `TAGb<pid>`), the two ends are a /30 of `10.<net>.0.0/16` derived from the pid, loopback
//! is up in both (the live runtime wakes its engine with a datagram to its own address), and
//! both namespaces (with the pair) are deleted when the [`NetnsPair`] is dropped. Traffic
//! stays between the two namespaces.

use std::net::Ipv4Addr;
use std::process::{Command, Stdio};

/// Why namespaces cannot be made here (not root, no `ip`), or `Ok` when they can.
pub fn available() -> Result<(), String> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let euid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap_or("?");
    if euid != "0" {
        return Err("not root (creating network namespaces needs root)".into());
    }
    let ip = Command::new("ip")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if ip.is_err() {
        return Err("`ip` not found (install iproute2)".into());
    }
    Ok(())
}

/// Run a command; its stdout, or an error naming it and its stderr.
pub fn sh(args: &[&str]) -> Result<String, String> {
    let o = Command::new(args[0])
        .args(&args[1..])
        .output()
        .map_err(|e| format!("{}: {e}", args.join(" ")))?;
    if !o.status.success() {
        return Err(format!(
            "`{}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&o.stdout).into_owned())
}

/// Two namespaces joined by a veth pair (see the module docs); deleted on drop.
pub struct NetnsPair {
    /// The namespaces' names (`ip netns` names, files under `/run/netns`).
    pub names: [String; 2],
    /// The veth ends, `veth[i]` in `names[i]`.
    pub veth: [String; 2],
    /// The ends' IPv4 addresses (one /30).
    pub addrs: [Ipv4Addr; 2],
}

impl Drop for NetnsPair {
    fn drop(&mut self) {
        // Deleting a namespace deletes its end of the veth pair, and with it the other end.
        for n in &self.names {
            let _ = sh(&["ip", "netns", "del", n]);
        }
    }
}

impl NetnsPair {
    /// Create the pair. `tag` (at most 4 characters, so that interface names fit in 15)
    /// tells tests apart; `net` is the second octet of the 10.x.0.0/16 the /30 is taken from.
    pub fn create(tag: &str, net: u8) -> Result<NetnsPair, String> {
        assert!(tag.len() <= 4, "netns tag {tag:?}: at most 4 characters");
        available()?;
        let pid = std::process::id();
        let sub = (pid % (1 << 14)) * 4;
        let addr =
            |i: u32| Ipv4Addr::new(10, net, (sub >> 8) as u8, (sub & 0xff) as u8 + 1 + i as u8);
        let pair = NetnsPair {
            names: [format!("{tag}-{pid}-a"), format!("{tag}-{pid}-b")],
            veth: [format!("{tag}a{pid}"), format!("{tag}b{pid}")],
            addrs: [addr(0), addr(1)],
        };
        // A namespace left by a killed earlier run of this pid would make `add` fail.
        for n in &pair.names {
            let _ = sh(&["ip", "netns", "del", n]);
            sh(&["ip", "netns", "add", n])?;
        }
        let [va, vb] = &pair.veth;
        sh(&["ip", "link", "add", va, "type", "veth", "peer", "name", vb])?;
        for i in 0..2 {
            let (n, v) = (&pair.names[i], &pair.veth[i]);
            sh(&["ip", "link", "set", v, "netns", n])?;
            let cidr = format!("{}/30", pair.addrs[i]);
            sh(&["ip", "-n", n, "addr", "add", &cidr, "dev", v])?;
            sh(&["ip", "-n", n, "link", "set", v, "up"])?;
            sh(&["ip", "-n", n, "link", "set", "lo", "up"])?;
        }
        Ok(pair)
    }
}
