//! The values findings are made of, which every stage shares: a finding
//! and how a model's report is parsed and repaired into findings, CWE ids
//! and their table, the skeptic's verdicts, the leads a static analysis
//! puts to an auditor, and inline suppressions.
//!
//! Takes text; gives typed values. Imports only `llm`'s conversation and
//! `util`.

pub(crate) mod challenge;
pub(crate) mod cwe;
pub(crate) mod findings;
pub(crate) mod leads;
pub(crate) mod suppress;
