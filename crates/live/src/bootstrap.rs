//! Bootstrap collectives through files in a directory shared by the ranks (the launcher's run
//! directory under `/dev/shm`): enough to exchange exposed ranges and keys, and to barrier.
//!
//! Round `t` of an all-gather: rank `r` writes `ag-t-r` atomically (write a temporary file,
//! then rename), then waits until every rank's file of round `t` exists and reads them. Every
//! rank calls the collectives in the same order. When rank `r` is in round `t`, every rank has
//! published round `t-1`, hence finished reading round `t-2`: `r` then deletes its own file of
//! round `t-2`.
//!
//! Under a PMIx launcher (mpirun, srun), a round is a put of this rank's data, a commit and a
//! fence that collects everyone's, then a get per rank ([`crate::pmix`]).
//!
//! The launcher writes `ended-r` ([`write_ended`]) when rank `r` exits or is stopped: a wait
//! that misses rank `r` then fails at once, naming it and how it ended, instead of waiting out
//! the timeout (and blaming whoever gave up first).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::pmix::{Client, PmixError};

/// Where the collectives go.
enum Backend {
    /// Files in the launcher's run directory.
    Files,
    /// PMIx put / fence / get (a program started by mpirun, prterun or srun).
    Pmix(Arc<Client>),
}

/// Bootstrap collectives of one rank: through files, or through PMIx ([`Bootstrap::pmix`]).
pub struct Bootstrap {
    backend: Backend,
    dir: PathBuf,
    rank: u32,
    size: u32,
    round: u64,
    timeout: Duration,
}

/// A collective failed.
#[derive(Debug, thiserror::Error)]
pub enum BootstrapError {
    /// File system error in the run directory.
    #[error("bootstrap directory {dir}: {err}")]
    Io {
        /// The directory.
        dir: String,
        /// What failed.
        err: std::io::Error,
    },
    /// A rank the collective waits for has ended (or was stopped): the launcher said so.
    #[error(
        "bootstrap round {round}: {how}, before arriving (reported by the launcher); giving up"
    )]
    PeerEnded {
        /// Round number.
        round: u64,
        /// The rank.
        rank: u32,
        /// How it ended, e.g. `rank 2 died of signal 9 (SIGKILL)`.
        how: String,
    },
    /// A PMIx collective failed (a rank died, or the launcher gave up).
    #[error("bootstrap round {round}: {err}")]
    Pmix {
        /// Round number.
        round: u64,
        /// What failed.
        err: PmixError,
    },
    /// Some ranks did not arrive in time (dead, or not calling the same collectives).
    #[error("bootstrap round {round}: ranks {missing:?} did not arrive within {timeout:?} (did they die, or call different collectives?)")]
    Timeout {
        /// Round number.
        round: u64,
        /// Ranks missing.
        missing: Vec<u32>,
        /// The timeout.
        timeout: Duration,
    },
}

impl Bootstrap {
    /// Collectives among `size` ranks through `dir` (which must exist), as `rank`.
    pub fn new(dir: PathBuf, rank: u32, size: u32, timeout: Duration) -> Bootstrap {
        Bootstrap {
            backend: Backend::Files,
            dir,
            rank,
            size,
            round: 0,
            timeout,
        }
    }

    /// Collectives through the process's PMIx client (which must be attached:
    /// [`Client::attach`]), as `rank` of `size`.
    pub fn pmix(rank: u32, size: u32, timeout: Duration) -> Result<Bootstrap, PmixError> {
        let c = Client::current().ok_or_else(|| {
            PmixError("no PMIx client: the job did not start through PMIx".into())
        })?;
        Ok(Bootstrap {
            backend: Backend::Pmix(c),
            dir: PathBuf::new(),
            rank,
            size,
            round: 0,
            timeout,
        })
    }

    fn ended(&self, round: u64, missing: impl Iterator<Item = u32>) -> Result<(), BootstrapError> {
        for rank in missing {
            if let Ok(how) = std::fs::read_to_string(ended_file(&self.dir, rank)) {
                return Err(BootstrapError::PeerEnded {
                    round,
                    rank,
                    how: how.trim().to_string(),
                });
            }
        }
        Ok(())
    }

    fn file(&self, round: u64, rank: u32) -> PathBuf {
        self.dir.join(format!("ag-{round}-{rank}"))
    }

    /// Every rank contributes `data`; returns all contributions, by rank.
    pub fn all_gather(&mut self, data: &[u8]) -> Result<Vec<Vec<u8>>, BootstrapError> {
        let io = |err| BootstrapError::Io {
            dir: self.dir.display().to_string(),
            err,
        };
        let round = self.round;
        self.round += 1;
        if let Backend::Pmix(c) = &self.backend {
            return c
                .all_gather(
                    &format!("unpinned.ag.{round}"),
                    data,
                    self.size,
                    self.timeout,
                )
                .map_err(|err| BootstrapError::Pmix { round, err });
        }
        let tmp = self.dir.join(format!(".ag-{round}-{}.tmp", self.rank));
        std::fs::write(&tmp, data).map_err(io)?;
        std::fs::rename(&tmp, self.file(round, self.rank)).map_err(io)?;
        let start = Instant::now();
        let mut out: Vec<Option<Vec<u8>>> = vec![None; self.size as usize];
        let mut sleep = Duration::from_micros(20);
        loop {
            for r in 0..self.size {
                if out[r as usize].is_none() {
                    match std::fs::read(self.file(round, r)) {
                        Ok(d) => out[r as usize] = Some(d),
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                        Err(e) => return Err(io(e)),
                    }
                }
            }
            if out.iter().all(Option::is_some) {
                break;
            }
            self.ended(round, (0..self.size).filter(|r| out[*r as usize].is_none()))?;
            if start.elapsed() > self.timeout {
                let missing = (0..self.size)
                    .filter(|r| out[*r as usize].is_none())
                    .collect();
                return Err(BootstrapError::Timeout {
                    round,
                    missing,
                    timeout: self.timeout,
                });
            }
            std::thread::sleep(sleep);
            sleep = (sleep * 2).min(Duration::from_millis(2));
        }
        if round >= 2 {
            let _ = std::fs::remove_file(self.file(round - 2, self.rank));
        }
        Ok(out.into_iter().map(|d| d.expect("all present")).collect())
    }

    /// Wait until every rank got here.
    pub fn barrier(&mut self) -> Result<(), BootstrapError> {
        self.all_gather(&[]).map(|_| ())
    }
}

impl Drop for Bootstrap {
    fn drop(&mut self) {
        if matches!(self.backend, Backend::Pmix(_)) {
            // The runtime using PMIx is gone: PMIx is finalized once its last user lets go.
            crate::pmix::release();
        }
    }
}

/// The file in which the launcher says how `rank` ended.
pub fn ended_file(dir: &Path, rank: u32) -> PathBuf {
    dir.join(format!("ended-{rank}"))
}

/// Say (as the launcher) that `rank` ended or stopped, `how` being one line naming it; written
/// atomically (temporary file, then rename) so that a waiting rank never reads half of it.
pub fn write_ended(dir: &Path, rank: u32, how: &str) -> std::io::Result<()> {
    let tmp = dir.join(format!(".ended-{rank}.tmp"));
    std::fs::write(&tmp, how)?;
    std::fs::rename(&tmp, ended_file(dir, rank))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_for_an_ended_rank_fails_at_once_naming_it() {
        let dir = std::env::temp_dir().join(format!("unpinned-bs-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        write_ended(&dir, 2, "rank 2 died of signal 9 (SIGKILL)\n").unwrap();
        let mut b = Bootstrap::new(dir.clone(), 0, 3, Duration::from_secs(30));
        let t = Instant::now();
        let e = b.barrier().unwrap_err().to_string();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
        assert!(e.contains("rank 2 died of signal 9"), "{e}");
    }
}
