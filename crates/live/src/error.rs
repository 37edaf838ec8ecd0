//! The live runtime's error type and the transport choice: below every module that reports
//! errors or names a transport (the API, the launcher's edge, the configuration).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use unpinned_core::api::{CompletionError, WrId};

use crate::bootstrap::BootstrapError;
use crate::memory::{MapsError, MemoryError};
use crate::transport::shm::ShmError;

/// Errors of the live runtime. Messages say what to do.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// A launcher environment variable is missing or malformed.
    #[error("environment variable {var}: {why} (these are set by `unpinned run -n N -- PROGRAM`, or by a PMIx launcher such as `mpirun -n N PROGRAM`; run the program through one)")]
    Env {
        /// The variable.
        var: &'static str,
        /// What is wrong.
        why: String,
    },
    /// Configuration is inconsistent.
    #[error("configuration: {0}")]
    Config(String),
    /// A configuration key is unknown or its value does not fit.
    #[error(transparent)]
    Knob(#[from] crate::config::ConfigError),
    /// Residency checks are unavailable.
    #[error(transparent)]
    Memory(#[from] MemoryError),
    /// The shared-memory transport failed to open.
    #[error(transparent)]
    Shm(#[from] ShmError),
    /// The UDP transport failed to open.
    #[error("UDP transport: {0} (is the address in UNPINNED_PEERS free and local?)")]
    Udp(std::io::Error),
    /// A range cannot be exposed.
    #[error("cannot expose [{addr:#x}, +{len}): {source}")]
    Expose {
        /// Start.
        addr: u64,
        /// Length.
        len: u64,
        /// Why.
        source: MapsError,
    },
    /// A work request was refused before it started.
    #[error("invalid work request: {0}")]
    Invalid(String),
    /// A work request completed with an error.
    #[error("work request {wr_id} failed: {error}{}", if detail.is_empty() { String::new() } else { format!(" ({detail})") })]
    Failed {
        /// Its id.
        wr_id: WrId,
        /// Why.
        error: CompletionError,
        /// What the runtime knows beyond `error`: the peer rank, the local buffer and the
        /// address that faulted (empty if nothing).
        detail: String,
    },
    /// Waiting took longer than the configured operation timeout.
    #[error("timed out after {0:?} waiting for a completion (is the peer alive? raise timeouts.op_ms for very slow page-ins)")]
    Timeout(Duration),
    /// The engine thread has stopped (the runtime is shutting down or panicked).
    #[error("the engine thread has stopped; no more completions will arrive")]
    EngineGone,
    /// A bootstrap collective failed.
    #[error(transparent)]
    Bootstrap(#[from] BootstrapError),
    /// No bootstrap directory was configured.
    #[error("no bootstrap directory: set Config::bootstrap_dir (or run the program through `unpinned run`)")]
    NoBootstrap,
}

/// Which transport to open.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TransportKind {
    /// Shared-memory segment at this path.
    Shm(PathBuf),
    /// UDP, one address per rank.
    Udp(Vec<SocketAddr>),
}
