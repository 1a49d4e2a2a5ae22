//! Run store and shard benchmarks, measured side by side in one run
//! against an in-process mock of the Chat Completions API on 127.0.0.1:
//!
//! - **unchanged re-scan vs cold scan** of the same repository (D
//!   directories × 4 files, one group a directory, a 20 ms model): wall
//!   time and model calls of each, and the re-scan against what `fanscan
//!   plan` does (`Context::new`, `ctx.inventory()`, `ctx.plan()`), both
//!   timed from setup on. Targets: 0 calls on the re-scan, its wall within
//!   2× of planning.
//! - **store overhead per committed group result**: a scan with the store
//!   and `--no-cache` (every group asked and committed) against the same
//!   scan with `--no-store`, an instant model; (with − without) / groups.
//!   Target: < 2 ms.
//! - **N shards + merge vs one run**: N = 3 shard runs (partial reports
//!   written as JSON) and `fanscan::merge` against one unsharded run: the
//!   same fingerprints (asserted), and the wall times.
//!
//! `cargo bench --bench store` runs the full sizes; `cargo test --bench
//! store -- --test` (criterion's test mode) runs each part once at a small
//! size as a smoke test. The lines after `== results ==` go into
//! docs/benchmarks.md, with the date they were measured.

#![allow(clippy::unwrap_used, clippy::expect_used)]

// The fixtures shared with the integration tests: each bench uses a part.
#[allow(dead_code, unreachable_pub, unused_imports)]
#[path = "../tests/common/mod.rs"]
mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use criterion::Criterion;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use fanscan::{
    Context, Format, ProviderArgs, ProviderKind, Report, RunArgs, ScanArgs, Settings, Shard, Ui,
};

struct Scale {
    dirs: usize,
    reps: usize,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let bench = args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--test");
    let scale = if bench {
        Scale { dirs: 100, reps: 5 }
    } else {
        Scale { dirs: 12, reps: 1 }
    };
    let mut c = Criterion::default().configure_from_args();
    let started = Instant::now();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut results = Vec::new();
    results.extend(rescan(&rt, &mut c, &scale, bench));
    results.extend(store_overhead(&rt, &scale));
    results.extend(shards_vs_one(&rt, &scale));
    c.final_summary();
    println!("\n== results ==");
    for line in results {
        println!("{line}");
    }
    println!(
        "(benches/store.rs ran for {:.0} s, {} build)",
        started.elapsed().as_secs_f64(),
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        }
    );
}

/// `dirs` directories of four ~70-token files, each with a `risky_call`.
fn make_tree(root: &Path, dirs: usize) {
    for d in 0..dirs {
        let dir = root.join(format!("m{d:04}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..4 {
            std::fs::write(
                dir.join(format!("f{f}.rs")),
                format!(
                    "pub fn f{f}(x: u32) -> u32 {{\n    risky_call(x)\n}}\n// module {d} file {f} {}\n",
                    "pad ".repeat(20)
                ),
            )
            .unwrap();
        }
    }
}

/// The model: reads every file of its task, reports each `risky_call`
/// line, answers the reducer; after `delay`.
struct Model {
    delay: Duration,
}

fn answer(body: &Value) -> Value {
    let messages = body["messages"].as_array().map_or(&[][..], Vec::as_slice);
    let task = messages
        .iter()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default();
    if task.starts_with("TASK: reduce") {
        return common::reducer_turn();
    }
    // Files come preloaded in the task (`<file path="...">`, numbered
    // lines) or as read_file results.
    let findings = common::needle_findings(messages, "risky_call", "medium");
    common::text_turn(&format!(
        "Reviewed.\n```json\n{}\n```\n[TASK_COMPLETE]",
        json!({ "findings": findings })
    ))
}

impl Respond for Model {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        ResponseTemplate::new(200)
            .set_body_json(answer(&body))
            .set_delay(self.delay)
    }
}

async fn mock(delay: Duration) -> MockServer {
    let server = MockServer::builder()
        .disable_request_recording()
        .start()
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(Model { delay })
        .mount(&server)
        .await;
    server
}

fn settings(root: &Path, server: &MockServer, store: Option<&Path>) -> Settings {
    settings_with(root, server, store, |_| {})
}

/// [`settings`], with `tweak` applied to the arguments first.
fn settings_with(
    root: &Path,
    server: &MockServer,
    store: Option<&Path>,
    tweak: impl FnOnce(&mut RunArgs),
) -> Settings {
    let provider = ProviderArgs {
        provider: Some(ProviderKind::Openai),
        model: Some("mock-model".into()),
        base_url: Some(format!("{}/v1", server.uri())),
        timeout: Some(60),
        ..ProviderArgs::default()
    };
    let scan = ScanArgs {
        jobs: Some(16),
        // Four ~70-token files: one group a directory.
        group_tokens: Some(300),
        max_groups: Some(0),
        store: store.map(Path::to_path_buf),
        no_store: store.is_none(),
        ..ScanArgs::default()
    };
    let mut args = RunArgs {
        provider,
        scan,
        ..RunArgs::default()
    };
    tweak(&mut args);
    Settings::from_args(root, &args, &|_| None).unwrap()
}

fn ui() -> Ui {
    Ui::hidden()
}

/// One scan: its report, wall time (setup included, as the command) and
/// model calls.
async fn scan(settings: Settings) -> (Report, Duration, u64) {
    let start = Instant::now();
    let ctx = Context::new(settings).unwrap();
    let report = fanscan::scan(&ctx, &ui()).await.unwrap();
    (report, start.elapsed(), ctx.requests())
}

/// What `fanscan plan` does: setup (agents, rules, prices), inventory and
/// plan; its wall time.
async fn plan_only(settings: Settings) -> Duration {
    let start = Instant::now();
    let ctx = Context::new(settings).unwrap();
    let inventory = ctx.inventory().unwrap();
    let (plan, _) = ctx.plan(&inventory).await.unwrap();
    std::hint::black_box(plan);
    start.elapsed()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn fingerprints(r: &Report) -> Vec<String> {
    let mut f: Vec<String> = r.findings.iter().map(|m| m.fingerprint.clone()).collect();
    f.sort();
    f
}

fn rescan(
    rt: &tokio::runtime::Runtime,
    c: &mut Criterion,
    scale: &Scale,
    bench: bool,
) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    make_tree(&root, scale.dirs);
    let store = dir.path().join("store.db");
    let server = rt.block_on(mock(Duration::from_millis(20)));
    let (cold, cold_wall, cold_calls) = rt.block_on(scan(settings(&root, &server, Some(&store))));
    let mut walls = Vec::new();
    let mut calls = 0;
    let mut same = true;
    for _ in 0..scale.reps {
        let (again, wall, n) = rt.block_on(scan(settings(&root, &server, Some(&store))));
        walls.push(wall);
        calls += n;
        same &= fingerprints(&again) == fingerprints(&cold);
    }
    assert!(same, "an unchanged re-scan reproduces the fingerprints");
    assert_eq!(calls, 0, "an unchanged re-scan calls no model");
    let plans: Vec<Duration> = (0..scale.reps)
        .map(|_| rt.block_on(plan_only(settings(&root, &server, Some(&store)))))
        .collect();
    if bench {
        let mut group = c.benchmark_group("store");
        group.sample_size(10);
        group.bench_function("unchanged rescan", |b| {
            b.iter(|| rt.block_on(scan(settings(&root, &server, Some(&store)))))
        });
        group.bench_function("plan", |b| {
            b.iter(|| rt.block_on(plan_only(settings(&root, &server, Some(&store)))))
        });
        group.finish();
    }
    let (rescan, plan) = (median(walls), median(plans));
    vec![
        format!(
            "cold scan, {} groups ({} files, 20 ms model): {:.0} ms, {cold_calls} model calls",
            cold.plan.groups.len(),
            scale.dirs * 4,
            ms(cold_wall)
        ),
        format!(
            "unchanged re-scan: {:.1} ms, {calls} model calls; `fanscan plan`'s work {:.1} ms: re-scan / plan = {:.2} (target <= 2; both with setup)",
            ms(rescan),
            ms(plan),
            rescan.as_secs_f64() / plan.as_secs_f64().max(1e-9)
        ),
    ]
}

fn store_overhead(rt: &tokio::runtime::Runtime, scale: &Scale) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    make_tree(&root, scale.dirs);
    let store = dir.path().join("store.db");
    let server = rt.block_on(mock(Duration::ZERO));
    let mut with = Vec::new();
    let mut without = Vec::new();
    let mut groups = 0;
    // Alternate, so drift affects both alike.
    for _ in 0..scale.reps.max(3) {
        let s = settings_with(&root, &server, Some(&store), |a| a.scan.no_cache = true);
        let (report, wall, _) = rt.block_on(scan(s));
        groups = report.plan.groups.len();
        with.push(wall);
        let (_, wall, _) = rt.block_on(scan(settings(&root, &server, None)));
        without.push(wall);
    }
    let (with, without) = (median(with), median(without));
    let per_group = (ms(with) - ms(without)) / groups.max(1) as f64;
    vec![format!(
        "store overhead: {groups} groups committed, {:.1} ms with the store (--no-cache), {:.1} ms without: {per_group:.3} ms a group (target < 2 ms)",
        ms(with),
        ms(without)
    )]
}

fn shards_vs_one(rt: &tokio::runtime::Runtime, scale: &Scale) -> Vec<String> {
    const N: usize = 3;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    make_tree(&root, scale.dirs);
    let server = rt.block_on(mock(Duration::from_millis(20)));
    let (one, one_wall, one_calls) = rt.block_on(scan(settings(&root, &server, None)));
    let mut parts = Vec::new();
    let mut shard_walls = Vec::new();
    let mut shard_calls = 0;
    for k in 1..=N {
        let s = settings_with(&root, &server, None, |a| {
            a.shard.shard = Some(Shard::parse(&format!("{k}/{N}")).unwrap());
        });
        let (part, wall, calls) = rt.block_on(scan(s));
        shard_walls.push(wall);
        shard_calls += calls;
        let path = dir.path().join(format!("part-{k}.json"));
        std::fs::write(&path, part.render(Format::Json).unwrap()).unwrap();
        parts.push(path);
    }
    let ctx = Context::new(settings(&root, &server, None)).unwrap();
    let start = Instant::now();
    let merged = rt.block_on(fanscan::merge(&ctx, &ui(), &parts)).unwrap();
    let merge_wall = start.elapsed();
    assert_eq!(fingerprints(&merged), fingerprints(&one));
    assert_eq!(merged.coverage, one.coverage);
    let slowest = shard_walls.iter().max().copied().unwrap_or_default();
    vec![format!(
        "{N} shards + merge vs one run ({} groups): same {} fingerprints; one run {:.0} ms, {one_calls} calls; slowest shard {:.0} ms + merge {:.0} ms, {} calls",
        one.plan.groups.len(),
        one.findings.len(),
        ms(one_wall),
        ms(slowest),
        ms(merge_wall),
        shard_calls + ctx.requests()
    )]
}
