//! Two network namespaces joined by a veth pair, with packet faults injected by nftables: the
//! lossy network of `live-loss`.
//!
//! Loss is a rule on each namespace's output hook (`oifname VETH meta l4proto udp numgen
//! random mod 100 < P counter drop`), so it applies to UDP leaving through the veth in both
//! directions, never to a runtime's wake-up datagram to itself. Duplication is a rule on the
//! veth's netdev egress hook (`dup to VETH`). Reordering and delay need `tc netem`, which not
//! every kernel has (the development kernel does not); they are not injected.
//!
//! A rank's UDP socket is created by a thread that entered the rank's namespace
//! (`setns(CLONE_NEWNET)` applies to the calling thread only); a socket stays in the namespace
//! it was created in, so both ranks of a pair can live in this process. The pair itself is
//! the launcher's ([`unpinned_live::launch::veth`], tag `upl`, addresses a /30 of
//! 10.201.0.0/16); everything is deleted when the [`NetnsPair`] is dropped.

use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::process::{Command, Stdio};

use unpinned_live::launch::veth::{self, sh};
use unpinned_live::transport::udp::UdpTransport;

/// Why namespaces cannot be used here, or `Ok` when they can (root, `ip` and `nft` present).
pub fn available() -> Result<(), String> {
    veth::available()?;
    let found = Command::new("nft")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    if !found {
        return Err("`nft` not found (install nftables)".into());
    }
    Ok(())
}

/// Two namespaces (rank 0 in the first, rank 1 in the second) joined by a veth pair, with
/// nftables tables for the faults.
pub struct NetnsPair {
    pair: veth::NetnsPair,
}

impl NetnsPair {
    /// Create the namespaces, the veth pair and the (empty) nftables tables.
    pub fn create() -> Result<NetnsPair, String> {
        available()?;
        let pair = NetnsPair {
            pair: veth::NetnsPair::create("upl", 201)?,
        };
        for i in 0..2 {
            let v = pair.pair.veth[i].as_str();
            pair.nft(i, &["add", "table", "inet", "upl"])?;
            pair.nft(
                i,
                &[
                    "add",
                    "chain",
                    "inet",
                    "upl",
                    "out",
                    "{ type filter hook output priority 0; }",
                ],
            )?;
            pair.nft(i, &["add", "table", "netdev", "upl"])?;
            let chain = format!("{{ type filter hook egress device {v} priority 0; }}");
            pair.nft(i, &["add", "chain", "netdev", "upl", "eg", &chain])?;
        }
        Ok(pair)
    }

    fn nft(&self, i: usize, rest: &[&str]) -> Result<String, String> {
        let mut a = vec!["ip", "netns", "exec", &self.pair.names[i], "nft"];
        a.extend_from_slice(rest);
        sh(&a)
    }

    /// Drop `loss_percent` % and duplicate about `dup_percent` % of the UDP packets crossing
    /// the veth, in both directions (replacing the rules of an earlier call; counters restart).
    pub fn set_faults(&self, loss_percent: u32, dup_percent: u32) -> Result<(), String> {
        for i in 0..2 {
            let v = self.pair.veth[i].as_str();
            self.nft(i, &["flush", "chain", "inet", "upl", "out"])?;
            self.nft(i, &["flush", "chain", "netdev", "upl", "eg"])?;
            let loss = loss_percent.to_string();
            self.nft(
                i,
                &[
                    "add", "rule", "inet", "upl", "out", "oifname", v, "meta", "l4proto", "udp",
                    "numgen", "random", "mod", "100", "<", &loss, "counter", "drop",
                ],
            )?;
            let dup = dup_percent.to_string();
            self.nft(
                i,
                &[
                    "add", "rule", "netdev", "upl", "eg", "udp", "dport", "1-65535", "numgen",
                    "random", "mod", "100", "<", &dup, "counter", "dup", "to", v,
                ],
            )?;
        }
        Ok(())
    }

    /// (dropped, duplicated) packets since the last [`NetnsPair::set_faults`], both directions.
    pub fn counters(&self) -> Result<(u64, u64), String> {
        let mut out = (0, 0);
        for i in 0..2 {
            out.0 += counter(&self.nft(i, &["list", "chain", "inet", "upl", "out"])?);
            out.1 += counter(&self.nft(i, &["list", "chain", "netdev", "upl", "eg"])?);
        }
        Ok(out)
    }

    /// The UDP address of `rank` at `port`.
    pub fn addr(&self, rank: usize, port: u16) -> SocketAddr {
        SocketAddr::from((self.pair.addrs[rank], port))
    }

    /// Rank `rank`'s UDP transport of a 2-rank job on `port`, its socket in the rank's
    /// namespace.
    pub fn udp(&self, rank: u32, port: u16, max_packet: usize) -> Result<UdpTransport, String> {
        let peers = vec![self.addr(0, port), self.addr(1, port)];
        let ns = format!("/run/netns/{}", self.pair.names[rank as usize]);
        std::thread::scope(|s| {
            s.spawn(|| {
                let f = std::fs::File::open(&ns).map_err(|e| format!("{ns}: {e}"))?;
                // SAFETY: `f` is an open namespace file; setns changes the network namespace of
                // this (short-lived, scoped) thread only.
                if unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                    return Err(format!("setns {ns}: {}", std::io::Error::last_os_error()));
                }
                UdpTransport::bind(rank, peers, max_packet)
                    .map_err(|e| format!("UDP socket of rank {rank} in {ns}: {e}"))
            })
            .join()
            .map_err(|_| "the namespace thread panicked".to_string())?
        })
    }
}

/// The `counter packets N` of an nft listing (0 without a rule).
fn counter(listing: &str) -> u64 {
    listing
        .split("counter packets ")
        .skip(1)
        .filter_map(|r| r.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_summed_from_listings() {
        let l = "table inet upl {\n chain out {\n  oifname \"x\" counter packets 12 bytes 3 drop\n  counter packets 5 bytes 9 drop\n }\n}\n";
        assert_eq!(counter(l), 17);
        assert_eq!(counter("table inet upl {}"), 0);
    }

    /// The pair with its fault tables: rules set and counted, everything gone on drop (skipped
    /// without root, `ip` or `nft`).
    #[test]
    fn pair_with_fault_tables_is_created_and_removed() {
        if let Err(why) = available() {
            eprintln!("skipped: {why}");
            return;
        }
        let p = NetnsPair::create().expect("namespace pair");
        p.set_faults(0, 0).expect("rules");
        assert_eq!(p.counters().expect("counters"), (0, 0));
        let names = p.pair.names.clone();
        drop(p);
        let left = sh(&["ip", "netns", "list"]).expect("ip netns list");
        assert!(names.iter().all(|n| !left.contains(n.as_str())), "{left}");
    }
}
