//! The edge of a rank: the only place the live runtime reads the environment.
//!
//! [`crate::launch`] starts every rank with the job's identity in [`ENV_RANK`], [`ENV_SIZE`],
//! [`ENV_TRANSPORT`], [`ENV_SHM`] or [`ENV_PEERS`], and [`ENV_DIR`], and with the user's
//! overrides (`unpinned run --set a.b=v`) in [`ENV_SET`]. [`Edge::from_env`] reads them once;
//! [`Edge::config`] turns them into the [`Config`] that [`crate::Runtime::new`] takes. Nothing
//! below this module reads a variable: a knob is a [`Config`] field or it does not exist.

use std::net::SocketAddr;
use std::path::PathBuf;

use crate::api::Runtime;
use crate::config::{split_assignments, Config};
use crate::error::{LiveError, TransportKind};

/// Environment variable: this process's rank.
pub const ENV_RANK: &str = "UNPINNED_RANK";
/// Environment variable: ranks in the job.
pub const ENV_SIZE: &str = "UNPINNED_SIZE";
/// Environment variable: `shm` or `udp`.
pub const ENV_TRANSPORT: &str = "UNPINNED_TRANSPORT";
/// Environment variable: path of the shared-memory segment (shm transport).
pub const ENV_SHM: &str = "UNPINNED_SHM";
/// Environment variable: comma-separated `ip:port` of every rank, by rank (udp transport).
pub const ENV_PEERS: &str = "UNPINNED_PEERS";
/// Environment variable: the run directory for bootstrap collectives.
pub const ENV_DIR: &str = "UNPINNED_DIR";
/// Environment variable (optional): configuration overrides, `a.b=v` assignments separated by
/// commas or whitespace, the syntax of `unpinned run --set` (which passes its own here), e.g.
/// `engine.block_timeout_us=100,progress.spin_us=20`. Unknown keys are refused.
pub const ENV_SET: &str = "UNPINNED_SET";

/// Sections of the overrides that belong to layers on top of the runtime, not to [`Config`]:
/// the launcher leaves them to the ranks ([`Edge::take_section`]).
pub const LAYER_SECTIONS: &[&str] = &["dsm", "shmem"];

/// What the launcher told this rank.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edge {
    /// This rank.
    pub rank: u32,
    /// Ranks in the job.
    pub size: u32,
    /// The transport to open.
    pub transport: TransportKind,
    /// The run directory for bootstrap collectives.
    pub bootstrap_dir: Option<PathBuf>,
    /// Configuration overrides (`a.b=v`), from [`ENV_SET`].
    pub sets: Vec<String>,
}

fn var(name: &'static str) -> Result<String, LiveError> {
    std::env::var(name).map_err(|_| LiveError::Env {
        var: name,
        why: "not set".into(),
    })
}

fn num(name: &'static str) -> Result<u32, LiveError> {
    var(name)?.trim().parse().map_err(|e| LiveError::Env {
        var: name,
        why: format!("not a number ({e})"),
    })
}

/// The overrides in [`ENV_SET`] (empty when unset), for programs that start runtimes
/// themselves (`unpinned bench live`, the live experiments).
pub fn overrides_from_env() -> Vec<String> {
    std::env::var(ENV_SET)
        .map(|v| split_assignments(&v))
        .unwrap_or_default()
}

impl Edge {
    /// Read the launcher's variables (see the module doc); a missing or malformed one is an
    /// error naming it.
    pub fn from_env() -> Result<Edge, LiveError> {
        let rank = num(ENV_RANK)?;
        let size = num(ENV_SIZE)?;
        if rank >= size {
            return Err(LiveError::Env {
                var: ENV_RANK,
                why: format!("rank {rank} >= size {size}"),
            });
        }
        let transport = match var(ENV_TRANSPORT)?.as_str() {
            "shm" => TransportKind::Shm(PathBuf::from(var(ENV_SHM)?)),
            "udp" => {
                let peers = var(ENV_PEERS)?
                    .split(',')
                    .map(|a| {
                        a.trim().parse::<SocketAddr>().map_err(|e| LiveError::Env {
                            var: ENV_PEERS,
                            why: format!("{a:?}: {e}"),
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                if peers.len() != size as usize {
                    return Err(LiveError::Env {
                        var: ENV_PEERS,
                        why: format!("{} addresses for {size} ranks", peers.len()),
                    });
                }
                TransportKind::Udp(peers)
            }
            other => {
                return Err(LiveError::Env {
                    var: ENV_TRANSPORT,
                    why: format!("{other:?} is not shm or udp"),
                })
            }
        };
        Ok(Edge {
            rank,
            size,
            transport,
            bootstrap_dir: std::env::var_os(ENV_DIR).map(PathBuf::from),
            sets: overrides_from_env(),
        })
    }

    /// Remove the overrides of section `name` (`name.a=v`) and return them relative to it
    /// (`a=v`): a layer on top of the runtime (the DSM space's `dsm` section) takes its own
    /// knobs before [`Edge::config`] refuses keys it does not know.
    pub fn take_section(&mut self, name: &str) -> Vec<String> {
        let prefix = format!("{name}.");
        let (mine, rest): (Vec<String>, Vec<String>) = std::mem::take(&mut self.sets)
            .into_iter()
            .partition(|s| s.trim_start().starts_with(&prefix));
        self.sets = rest;
        mine.into_iter()
            .map(|s| s.trim_start()[prefix.len()..].to_string())
            .collect()
    }

    /// The runtime's configuration: the defaults for this rank with the overrides applied (an
    /// unknown key or a bad value is an error naming the key and [`ENV_SET`]).
    pub fn config(&self) -> Result<Config, LiveError> {
        let mut c = Config::new(self.rank, self.size)
            .with_overrides(&self.sets)
            .map_err(|e| LiveError::Config(format!("{ENV_SET}: {e}")))?;
        c.bootstrap_dir = self.bootstrap_dir.clone();
        Ok(c)
    }

    /// Open the transport and start the runtime.
    pub fn connect(self) -> Result<Runtime, LiveError> {
        let cfg = self.config()?;
        Runtime::connect(cfg, self.transport)
    }
}

impl Runtime {
    /// Join the job described by the launcher's environment ([this module]: rank, size,
    /// transport, bootstrap directory, and the `UNPINNED_SET` overrides).
    pub fn from_env() -> Result<Runtime, LiveError> {
        Edge::from_env()?.connect()
    }

    /// The configuration and transport of this rank from the launcher's environment
    /// ([`Edge`]; for a runtime with a layer, [`Runtime::connect_with_layer`]).
    pub fn env_config() -> Result<(Config, TransportKind), LiveError> {
        let edge = Edge::from_env()?;
        Ok((edge.config()?, edge.transport))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edge(sets: &[&str]) -> Edge {
        Edge {
            rank: 1,
            size: 2,
            transport: TransportKind::Shm("/nonexistent".into()),
            bootstrap_dir: Some("/tmp/x".into()),
            sets: sets.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn the_config_has_the_job_and_the_overrides() {
        let c = edge(&["progress.spin_us=7"]).config().unwrap();
        assert_eq!((c.rank, c.size, c.progress.spin_us), (1, 2, 7));
        assert_eq!(c.bootstrap_dir, Some(PathBuf::from("/tmp/x")));
        let e = edge(&["progress.nope=7"]).config().unwrap_err().to_string();
        assert!(e.contains(ENV_SET) && e.contains("progress.nope"), "{e}");
    }

    #[test]
    fn a_layer_takes_its_section_before_the_runtime_sees_it() {
        let mut e = edge(&["dsm.context=signal", "progress.spin_us=7", "dsmx.a=1"]);
        assert_eq!(e.take_section("dsm"), ["context=signal"]);
        assert_eq!(e.sets, ["progress.spin_us=7", "dsmx.a=1"]);
        assert!(e.config().is_err(), "dsmx is nobody's section");
    }
}
