//! The error of a scan or a merge that could not produce a report.
//!
//! Takes the errors of the stages and layers below (setup, the run store,
//! a shard's parts, verification); gives [`ScanError`], whose exit code is
//! in `exit.rs`. It lives here, below `lib.rs`, because the pipeline's
//! steps return it: nothing imports an item defined in `lib.rs`.

use crate::pipeline::context::SetupError;
use crate::report::shard::MergeError;
use crate::store::StoreError;
use crate::{agents, llm, stages};

/// A scan that could not produce a report.
#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    /// Before anything was scanned (exit code 2).
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// Verification itself failed: a fanscan bug (exit code 1).
    #[error("verification failed ({0}): a fanscan bug, please report it")]
    Verify(#[source] tokio::task::JoinError),
    /// The run store is foreign, corrupted or newer (exit code 2), or a
    /// panic broke its lookup (a fanscan bug: exit code 1).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Parts that cannot be merged, or a shard that cannot run (exit code 2).
    #[error(transparent)]
    Merge(#[from] MergeError),
}

/// Errors of the stages before the fan-out are setup errors.
macro_rules! setup_errors {
    ($($error:ty),*) => {$(
        impl From<$error> for ScanError {
            fn from(error: $error) -> Self {
                Self::Setup(error.into())
            }
        }
    )*};
}
setup_errors!(
    stages::inventory::InventoryError,
    stages::plan::PlanError,
    stages::leads::LeadsError,
    llm::budget::BudgetTooSmall,
    agents::UnknownAgent
);
