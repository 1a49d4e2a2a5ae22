//! fanscan's integration tests: one binary, a module per feature, and a
//! `common` harness (temporary repositories, a mock model server on
//! 127.0.0.1). No test touches the network or needs an API key.

#![allow(clippy::unwrap_used, clippy::expect_used, unreachable_pub)]

mod agent_loop;
mod ask;
mod brief;
mod budget;
mod cli;
mod common;
mod configs;
mod cwe;
mod doubtful;
mod eval;
mod formats;
mod gate;
mod ignores;
mod incremental;
mod large_plans;
mod module_graph;
mod pipeline;
mod resilience;
mod shards;
mod skeptic;
mod snapshots;
mod specialists;
mod store;
mod tokens;
mod vendored;
