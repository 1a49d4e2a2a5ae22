//! The pipeline's stages, in order: inventory (walk the repository), plan
//! (groups under a token budget), brief (the repository's threat model),
//! leads (another tool's results for the auditors to judge), fan-out
//! (the auditors under the shared limits), verify (every cited
//! line and quote against the files), reduce (deduplicate, rank,
//! summarise), and the gate with its baseline.
//!
//! Each takes the previous stage's value and gives its own; none imports
//! the report, the store or the pipeline that calls them.

pub(crate) mod baseline;
pub(crate) mod brief;
pub(crate) mod fanout;
pub(crate) mod gate;
pub(crate) mod inventory;
pub(crate) mod leads;
pub(crate) mod plan;
pub(crate) mod reduce;
pub(crate) mod samples;
pub(crate) mod verify;
