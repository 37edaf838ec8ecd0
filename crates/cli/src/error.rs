//! Errors of the command-line tool and their exit codes.

use std::process::ExitCode;

/// What went wrong, by whose fault.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Bad command line, unknown experiment, bad profile or override: exit code 2.
    #[error("{0}")]
    Usage(String),
    /// The run itself failed (simulation error, writing files): exit code 1.
    #[error("{0}")]
    Run(String),
}

impl CliError {
    /// Exit code: 2 for usage / configuration errors, 1 for run failures.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            CliError::Usage(_) => ExitCode::from(2),
            CliError::Run(_) => ExitCode::from(1),
        }
    }
}
