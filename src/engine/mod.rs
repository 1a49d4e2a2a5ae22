//! The offline rule engine: a deterministic player of the model's part
//! through the same [`Provider`](crate::llm::providers::Provider) protocol as a
//! remote model. Takes requests; gives answers a model would give: the
//! read-only tool calls a careful auditor makes, then the rule set's
//! findings ([`offline`]) and its taint rules' traced findings
//! ([`taint`]), and the skeptic's verdicts from what the syntax trees of
//! the files it read prove of the line ([`taint::judge`]), with the table
//! of sources ([`sources`]).
//!
//! It lives beside `providers/`, not in it: it writes findings, and the
//! wire-format providers know nothing of the findings format.

pub(crate) mod offline;
pub(crate) mod rules;
pub(crate) mod sources;
pub(crate) mod symbols;
pub(crate) mod syntax;
pub(crate) mod taint;
