//! Exit codes, in one place: the table a CI job gates on, and the method
//! on each outcome and error type that picks its code. The binary exits
//! with what these methods return; `--help` and the README document the
//! same table.

use crate::agents::subagent::GroupReport;
use crate::config::ConfigError;
use crate::eval::EvalError;
use crate::pipeline::ask::{Answer, AskError};
use crate::pipeline::context::SetupError;
use crate::pipeline::error::ScanError;
use crate::report::Report;
use crate::stages::gate::Outcome;
use crate::store::StoreError;

/// The run completed.
pub const OK: i32 = 0;
/// An internal or I/O error (the report could not be written, ...).
pub const ERROR: i32 = 1;
/// A usage or configuration error: nothing was scanned.
pub const USAGE: i32 = 2;
/// The run is incomplete: failed groups, an interrupt, a budget.
pub const INCOMPLETE: i32 = 3;
/// The gate failed: an open finding at or above `--fail-on` remains.
pub const GATE_FAILED: i32 = 4;

impl Outcome {
    /// 0 passed, 4 failed, 3 incomplete.
    pub fn exit_code(self) -> i32 {
        match self {
            Self::Pass => OK,
            Self::Fail => GATE_FAILED,
            Self::Incomplete => INCOMPLETE,
        }
    }
}

impl Report {
    /// The exit code of the run: 4 when the gate failed, else 3 when
    /// the run is incomplete, else 0.
    pub fn exit_code(&self) -> i32 {
        // A shard's part is not the run: `fanscan merge` gates the whole.
        // A shard says only whether it ran its share.
        if self.shard.is_some() {
            return if self.complete { OK } else { INCOMPLETE };
        }
        match self.gate.outcome {
            Outcome::Pass if !self.complete => INCOMPLETE,
            outcome @ (Outcome::Pass | Outcome::Fail | Outcome::Incomplete) => outcome.exit_code(),
        }
    }
}

impl Answer {
    /// Whether `ask` exits 0 (complete) or 3.
    pub fn exit_code(&self) -> i32 {
        if self.complete { OK } else { INCOMPLETE }
    }
}

impl GroupReport {
    /// `run-agent`: 0 when the agent reviewed its task, else 3.
    pub fn exit_code(&self) -> i32 {
        if self.status.reviewed() {
            OK
        } else {
            INCOMPLETE
        }
    }
}

impl ConfigError {
    /// Always a usage error: 2.
    pub fn exit_code(&self) -> i32 {
        USAGE
    }
}

impl SetupError {
    /// Nothing was scanned: 2.
    pub fn exit_code(&self) -> i32 {
        USAGE
    }
}

impl StoreError {
    /// 1 for a fanscan bug (a panic), 2 for a store that is foreign,
    /// corrupted, newer or missing.
    pub fn exit_code(&self) -> i32 {
        if self.is_bug() { ERROR } else { USAGE }
    }
}

impl ScanError {
    /// 2 for setup and merge errors and the user's store, 1 for bugs.
    pub fn exit_code(&self) -> i32 {
        match self {
            Self::Setup(e) => e.exit_code(),
            Self::Store(e) => e.exit_code(),
            Self::Merge(_) => USAGE,
            Self::Verify(_) => ERROR,
        }
    }
}

impl AskError {
    /// 2 for setup errors, 1 for bugs.
    pub fn exit_code(&self) -> i32 {
        match self {
            Self::Setup(e) => e.exit_code(),
            Self::Verify(_) => ERROR,
        }
    }
}

impl EvalError {
    /// 2 for bad input (the user's files), 1 for fanscan's own failures.
    pub fn exit_code(&self) -> i32 {
        match self {
            Self::ReadTruth { .. }
            | Self::Truth { .. }
            | Self::ReadReport { .. }
            | Self::Report { .. }
            | Self::NoTruth => USAGE,
            Self::Table(_) | Self::BuiltinRules { .. } | Self::Json(_) | Self::Markdown(_) => ERROR,
        }
    }
}
