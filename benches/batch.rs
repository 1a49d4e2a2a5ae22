//! `--batch` against the synchronous run on the same tree, side by side:
//! model requests, HTTP requests, rounds, batches, wall time and cost.
//!
//! The tree has one group per directory (each two small files with one
//! `risky()` line); the model is the tests' careful auditor (a `read_file`
//! turn, an answer, the forced summary). The synchronous run talks to the
//! mock Chat Completions server, which answers each call after 50 ms, with
//! the default `--jobs 8`; the batch run talks to the in-process batch
//! server (OpenAI's Batch API), where every batch is in progress at its
//! first poll and ended at the second, polled every 50 ms at most. A real
//! batch takes minutes to hours in the provider's queue: what this
//! measures is fanscan's own side (rounds, requests, its overhead per
//! round), not the provider's latency.
//!
//! Run with `cargo bench --bench batch` (100 groups); `cargo test
//! --benches` runs it once with 6 groups as a smoke test. The lines after
//! `== results ==` go into docs/benchmarks.md, with the date measured.

#![allow(clippy::unwrap_used, clippy::expect_used)]

// The fixtures shared with the integration tests: each bench uses a part.
#[allow(dead_code, unreachable_pub, unused_imports)]
#[path = "../tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use serde_json::Value;
use wiremock::ResponseTemplate;

use common::batch::{BatchServer, Faults};
use common::{MockModel, Repo, scan_reply};
use fanscan::{Context, ProviderArgs, ProviderKind, Report, ScanArgs, Settings, Ui};

fn tree(groups: usize) -> Repo {
    let mut files = Vec::new();
    for d in 0..groups {
        for i in 0..2 {
            files.push((
                format!("d{d:03}/f{i}.rs"),
                format!(
                    "fn f() {{\n    let x = risky();\n}}\n// {}\n",
                    "pad ".repeat(28)
                ),
            ));
        }
    }
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    Repo::new(&refs)
}

async fn run(base: &str, repo: &Repo, batch: bool) -> (Report, Duration) {
    let provider = ProviderArgs {
        provider: Some(ProviderKind::Openai),
        model: Some("gpt-4o-mini".into()),
        base_url: Some(base.to_string()),
        timeout: Some(30),
        ..ProviderArgs::default()
    };
    let scan = ScanArgs {
        group_tokens: Some(110),
        batch,
        batch_poll: batch.then_some(0.05),
        no_store: true,
        ..ScanArgs::default()
    };
    let settings = Settings::resolve(repo.path(), &provider, &scan, None, &|_| None).unwrap();
    let ctx = Context::new(settings).unwrap();
    let started = Instant::now();
    let report = fanscan::scan(&ctx, &Ui::hidden()).await.unwrap();
    (report, started.elapsed())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let bench = args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--test");
    let groups = if bench { 100 } else { 6 };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let lines = rt.block_on(async {
        let sync_server = MockModel::openai(Box::new(|body: &Value, _| {
            ResponseTemplate::new(200)
                .set_body_json(scan_reply("risky", body))
                .set_delay(Duration::from_millis(50))
        }))
        .await;
        let repo = tree(groups);
        let (sync, sync_wall) = run(&sync_server.base_url(), &repo, false).await;
        let batch_server = BatchServer::openai(
            Box::new(|body: &Value| scan_reply("risky", body)),
            Faults {
                polls_in_progress: 1,
                ..Faults::default()
            },
        )
        .await;
        let repo = tree(groups);
        let (batched, batch_wall) = run(&batch_server.base_url(false), &repo, true).await;
        assert!(sync.complete && batched.complete);
        assert_eq!(sync.findings.len(), batched.findings.len());
        let stats = batched.stats.batch.clone().unwrap();
        let sync_model_requests = sync_server.requests().len() + sync_server.brief_requests().len();
        vec![
            format!("batch vs synchronous, {groups} groups of 2 files (3 turns each), gpt-4o-mini prices:"),
            format!(
                "- synchronous: {sync_model_requests} model requests in {} HTTP requests, --jobs 8, 50 ms a call: {:.2} s wall, ${:.6}",
                sync.stats.requests,
                sync_wall.as_secs_f64(),
                sync.stats.cost_usd.unwrap_or(0.0)
            ),
            format!(
                "- --batch: {} model requests in {} batches over {} rounds, {} HTTP requests (uploads, creations, polls, downloads): {:.2} s wall ({:.0} ms a round), ${:.6} ({:.2}x the synchronous cost)",
                stats.requests,
                stats.batches,
                stats.rounds,
                batched.stats.requests,
                batch_wall.as_secs_f64(),
                batch_wall.as_secs_f64() * 1000.0 / f64::from(stats.rounds.max(1)),
                batched.stats.cost_usd.unwrap_or(0.0),
                batched.stats.cost_usd.unwrap_or(0.0) / sync.stats.cost_usd.unwrap_or(1.0).max(1e-12)
            ),
        ]
    });
    println!("\n== results ==");
    for line in lines {
        println!("{line}");
    }
}
