//! fanscan's integration tests: one binary, a module per feature, and the
//! `common` fixtures shared with the benches (`tests/common`: temporary
//! repositories, a mock model server on 127.0.0.1, running fanscan). No
//! test touches the network or needs an API key.

#![allow(clippy::unwrap_used, clippy::expect_used, unreachable_pub)]

mod agent_loop;
mod ask;
mod batch;
mod brief;
mod budget;
mod checkout;
mod cli;
// Shared with the benches: each uses a part of it.
#[allow(dead_code)]
#[path = "../common/mod.rs"]
mod common;
mod configs;
mod cwe;
mod doubtful;
mod eval;
mod expiry;
mod formats;
mod fuzzed;
mod gate;
mod hostile;
mod html;
mod ignores;
mod image;
mod incremental;
mod injection;
mod large_plans;
mod leads;
mod module_graph;
mod navigate;
mod pipeline;
mod prompts;
mod refusals;
mod resilience;
mod review;
mod samples;
mod shards;
mod skeptic;
mod snapshots;
mod specialists;
mod store;
mod tokens;
mod vendored;
