//! The binary's parts: the flags and their resolution ([`flags`], the
//! flag groups of the commands that run agents in [`run_flags`]), one
//! function per command ([`commands`]), writing the report ([`output`]),
//! the progress bars ([`progress`]) and Ctrl-C ([`signals`]). [`Failure`] is why a command made no result,
//! with its exit code.

pub(crate) mod commands;
pub(crate) mod flags;
pub(crate) mod output;
pub(crate) mod progress;
pub(crate) mod run_flags;
mod signals;

use fanscan::{AskError, EvalError, ScanError, SetupError, StoreError, exit};

/// Why a command ended without its result; printed as `fanscan: {it}`.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Failure {
    #[error(transparent)]
    Setup(#[from] SetupError),
    #[error(transparent)]
    Scan(#[from] ScanError),
    #[error(transparent)]
    Ask(#[from] AskError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Eval(#[from] EvalError),
    /// Stdout or an output file could not be written.
    #[error("{0:#}")]
    Output(anyhow::Error),
}

impl Failure {
    /// The exit code, as each error type decides it.
    pub(crate) fn exit_code(&self) -> i32 {
        match self {
            Self::Setup(e) => e.exit_code(),
            Self::Scan(e) => e.exit_code(),
            Self::Ask(e) => e.exit_code(),
            Self::Store(e) => e.exit_code(),
            Self::Eval(e) => e.exit_code(),
            Self::Output(_) => exit::ERROR,
        }
    }
}
