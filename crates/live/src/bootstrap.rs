//! Bootstrap collectives through files in a directory shared by the ranks (the launcher's run
//! directory under `/dev/shm`): enough to exchange exposed ranges and keys, and to barrier.
//!
//! Round `t` of an all-gather: rank `r` writes `ag-t-r` atomically (write a temporary file,
//! then rename), then waits until every rank's file of round `t` exists and reads them. Every
//! rank calls the collectives in the same order. When rank `r` is in round `t`, every rank has
//! published round `t-1`, hence finished reading round `t-2`: `r` then deletes its own file of
//! round `t-2`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

/// File-based collectives of one rank.
pub struct Bootstrap {
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
            dir,
            rank,
            size,
            round: 0,
            timeout,
        }
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
