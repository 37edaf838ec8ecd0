//! Errors of the live DSM.

use unpinned_dsm::space::SpaceError;

/// An error of the live DSM. Messages say what went wrong and, where possible, what to do.
#[derive(Debug, thiserror::Error)]
pub enum DsmLiveError {
    /// A system call failed.
    #[error("system call: {0}")]
    Os(String),
    /// The configuration is impossible.
    #[error("configuration: {0}")]
    Config(String),
    /// An allocation cannot be satisfied.
    #[error("allocation: {0}")]
    Alloc(String),
    /// The live runtime failed.
    #[error("live runtime: {0}")]
    Live(#[from] unpinned_live::LiveError),
    /// A peer sent a message that does not decode or makes no sense.
    #[error("malformed message from rank {from}: {why}")]
    Malformed {
        /// The sender.
        from: u32,
        /// What is wrong.
        why: String,
    },
    /// A peer stopped answering (its process died or hangs).
    #[error("rank {rank} is unreachable ({why}); the job cannot continue")]
    PeerDead {
        /// The peer.
        rank: u32,
        /// The failed operation.
        why: String,
    },
    /// This rank asked for something impossible (a bug or a misuse, not a peer's fault).
    #[error("refused: {0}")]
    Refused(String),
    /// Only one live DSM space may exist per process (it owns SIGSEGV and a fixed range).
    #[error("a live DSM space already exists in this process")]
    AlreadyRunning,
}

impl From<DsmLiveError> for SpaceError {
    fn from(e: DsmLiveError) -> SpaceError {
        SpaceError(e.to_string())
    }
}
