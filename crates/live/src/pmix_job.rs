//! Joining a job through PMIx: rank and size from the launcher, and each rank's endpoint
//! exchanged with put / commit / fence / get.
//!
//! - shm: rank 0 creates the segment in `/dev/shm` (named after the namespace) and publishes its
//!   path (or why it could not); the others open it after the fence. Rank 0 removes the file
//!   after the next fence (every rank has mapped it by then: the runtime opens the transport
//!   before any collective), or when PMIx is finalized, so nothing stays in `/dev/shm`.
//! - udp: every rank picks a free port on its address and publishes `ip:port`.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::sync::Arc;

use crate::config::Config;
use crate::config::LAYER_SECTIONS;
use crate::error::{LiveError, TransportKind};
use crate::pmix::{unlink_after_fence, Client, PmixError};
use crate::transport::shm::{create_segment, ShmGeometry};

/// The key under which rank 0 publishes the segment's path (`!` + error if it failed).
const KEY_SHM: &str = "unpinned.shm";
/// The key under which every rank publishes its UDP address.
const KEY_UDP: &str = "unpinned.udp";

/// Which transport the ranks of a PMIx job use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PmixTransport {
    /// One shared-memory segment (every rank on this host).
    Shm,
    /// UDP; the address to publish, or `None`: 127.0.0.1 when the whole job is on this node,
    /// else the address this host sends from.
    Udp(Option<IpAddr>),
}

/// What a rank learns from PMIx.
pub struct PmixJob {
    /// This rank.
    pub rank: u32,
    /// Ranks in the job.
    pub size: u32,
    /// The transport to open, endpoints filled in.
    pub transport: TransportKind,
}

fn pmix_err(e: PmixError) -> LiveError {
    LiveError::Config(e.to_string())
}

/// The segment file of namespace `nspace` (characters other than `[A-Za-z0-9._-]` become `_`).
pub fn segment_path(nspace: &str) -> PathBuf {
    let name: String = nspace
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    PathBuf::from(format!("/dev/shm/unpinned-pmix-{name}"))
}

/// Join the job: rank and size from PMIx, the endpoints of `transport` exchanged; `sets` are
/// the configuration overrides (the segment's geometry and the fence timeout depend on them).
pub fn join(transport: PmixTransport, sets: &[String]) -> Result<PmixJob, LiveError> {
    let c = Client::attach().map_err(pmix_err)?;
    let rank = c.rank();
    let size = c.job_u32("pmix.job.size").map_err(pmix_err)?;
    // The layers' sections (dsm.*) are theirs to check, as the launcher leaves them.
    let sets: Vec<&str> = sets
        .iter()
        .map(|s| s.trim())
        .filter(|s| {
            !LAYER_SECTIONS
                .iter()
                .any(|l| s.split('.').next() == Some(*l))
        })
        .collect();
    let cfg = Config::new(rank, size)
        .with_overrides(&sets)
        .map_err(|e| LiveError::Config(format!("UNPINNED_SET: {e}")))?;
    let timeout = cfg.bootstrap_timeout();
    let local = c.job_u32("pmix.local.size").ok();
    let transport = match transport {
        PmixTransport::Shm => {
            if let Some(l) = local.filter(|l| *l != size) {
                return Err(LiveError::Config(format!(
                    "the shm transport needs every rank on one node ({l} of {size} are on this \
                     one): set UNPINNED_TRANSPORT=udp (and pass it on, e.g. mpirun -x)"
                )));
            }
            TransportKind::Shm(shm(&c, &cfg)?)
        }
        PmixTransport::Udp(ip) => {
            let ip = match ip {
                Some(ip) => ip,
                None if local == Some(size) => IpAddr::V4(Ipv4Addr::LOCALHOST),
                None => outbound_ip()?,
            };
            let me = UdpSocket::bind((ip, 0))
                .and_then(|s| s.local_addr())
                .map_err(|e| LiveError::Config(format!("no free UDP port on {ip}: {e}")))?;
            let all = c
                .all_gather(KEY_UDP, me.to_string().as_bytes(), size, timeout)
                .map_err(pmix_err)?;
            let peers = all
                .iter()
                .enumerate()
                .map(|(r, a)| {
                    String::from_utf8_lossy(a)
                        .parse::<SocketAddr>()
                        .map_err(|e| {
                            LiveError::Config(format!("rank {r} published a bad UDP address: {e}"))
                        })
                })
                .collect::<Result<Vec<_>, _>>()?;
            TransportKind::Udp(peers)
        }
    };
    Ok(PmixJob {
        rank,
        size,
        transport,
    })
}

/// Rank 0 creates and publishes the segment; everyone learns its path after the fence (every
/// rank takes part with an empty contribution, so that a rank that dies meanwhile is named).
fn shm(c: &Arc<Client>, cfg: &Config) -> Result<PathBuf, LiveError> {
    let mut created = None;
    let mut msg = String::new();
    if cfg.rank == 0 {
        let path = segment_path(c.nspace());
        let geometry = ShmGeometry::new(cfg.size, cfg.max_packet(), cfg.transport.ring_slots);
        msg = match create_segment(&path, geometry) {
            Ok(()) => {
                created = Some(path.clone());
                path.display().to_string()
            }
            Err(e) => format!("!{e}"),
        };
    }
    let all = c.all_gather(KEY_SHM, msg.as_bytes(), cfg.size, cfg.bootstrap_timeout());
    if let Some(p) = created {
        // Every rank maps it before the next fence; if this one failed, nobody will.
        if all.is_ok() {
            unlink_after_fence(p);
        } else {
            let _ = std::fs::remove_file(p);
        }
    }
    let s = String::from_utf8_lossy(&all.map_err(pmix_err)?[0]).into_owned();
    match s.strip_prefix('!') {
        Some(why) => Err(LiveError::Config(format!(
            "rank 0 could not create the shared-memory segment: {why}"
        ))),
        None => Ok(PathBuf::from(s)),
    }
}

/// The address this host sends from towards other hosts (a UDP connect sends nothing).
fn outbound_ip() -> Result<IpAddr, LiveError> {
    let s = UdpSocket::bind("0.0.0.0:0")
        .and_then(|s| s.connect("192.0.2.1:9").map(|()| s))
        .and_then(|s| s.local_addr());
    s.map(|a| a.ip()).map_err(|e| {
        LiveError::Config(format!(
            "cannot tell this host's address for UDP ({e}): set UNPINNED_UDP_IP"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_segment_is_named_after_the_namespace_with_safe_characters() {
        assert_eq!(
            segment_path("1444478977"),
            PathBuf::from("/dev/shm/unpinned-pmix-1444478977")
        );
        assert_eq!(
            segment_path("prterun-vm-123@1/x"),
            PathBuf::from("/dev/shm/unpinned-pmix-prterun-vm-123_1_x")
        );
    }
}
