//! What a re-run costs after a change, as a fraction of a cold run: a
//! 2,000-file synthetic repository (250 directories of 8 files of about
//! 1.2 KB, one group a directory), an in-process mock of the Chat
//! Completions API on 127.0.0.1 that reports every `risky_call` line it is
//! shown and bills the prompt by its size (bytes / 4, as `metered` in the
//! tests), and the run store. Runs a cold scan, then touches 1% of the
//! files (spread over the tree) and re-runs, then 10% more and re-runs,
//! and prints input tokens and requests of each re-run as fractions of the
//! cold run. Targets: 1% change ≤ 2% of the cold run's tokens, 10% ≤ 15%.
//! It also asserts that each re-run's verified findings are a full scan's.
//!
//! `cargo bench --bench incremental` runs the full size; `cargo test
//! --bench incremental` (or `-- --test`) a small one as a smoke test. The
//! lines after `== results ==` go into docs/benchmarks.md,
//! with the date they were measured.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Instant;

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use fanscan::{Context, ProviderArgs, ProviderKind, Report, RunArgs, ScanArgs, Settings, Ui};

const FILES_PER_DIR: usize = 8;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let bench = args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--test");
    let dirs = if bench { 250 } else { 25 };
    let started = Instant::now();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let results = rt.block_on(run(dirs));
    println!("\n== results ==");
    for line in results {
        println!("{line}");
    }
    println!(
        "(benches/incremental.rs ran for {:.0} s, {} build)",
        started.elapsed().as_secs_f64(),
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        }
    );
}

/// The text of file `f` of directory `d`, version `v`: a `risky_call` on
/// the second line and about 1.2 KB of ordinary code after it.
fn source(d: usize, f: usize, v: usize) -> String {
    let mut text = format!("pub fn f{f}(x: u32) -> u32 {{\n    risky_call(x)\n}}\n");
    for i in 0..30 {
        text.push_str(&format!(
            "fn helper_{d}_{f}_{i}(a: u32) -> u32 {{ a + {i} }}\n"
        ));
    }
    if v > 0 {
        text.push_str(&format!("// revision {v}\nfn added_{v}() {{}}\n"));
    }
    text
}

fn make_tree(root: &Path, dirs: usize) {
    for d in 0..dirs {
        let dir = root.join(format!("m{d:04}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..FILES_PER_DIR {
            std::fs::write(dir.join(format!("f{f}.rs")), source(d, f, 0)).unwrap();
        }
    }
}

/// Touches every `step`-th file from `offset` on (spread over the tree):
/// version `v` of each. Returns how many.
fn touch(root: &Path, dirs: usize, step: usize, offset: usize, v: usize) -> usize {
    let mut n = 0;
    for i in (offset..dirs * FILES_PER_DIR).step_by(step) {
        let (d, f) = (i / FILES_PER_DIR, i % FILES_PER_DIR);
        let path = root.join(format!("m{d:04}/f{f}.rs"));
        std::fs::write(path, source(d, f, v)).unwrap();
        n += 1;
    }
    n
}

/// The scripted model: reports each `risky_call` line of the files it is
/// shown (preloaded or read), answers the reducer and the brief; bills
/// the prompt at bytes / 4.
struct Model;

fn answer(body: &Value) -> Value {
    let messages = body["messages"].as_array().map_or(&[][..], Vec::as_slice);
    let task = messages
        .iter()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default();
    if !task.starts_with("TASK: audit-group") {
        return json!({"role": "assistant",
            "content": "```json\n{\"summary\": \"Synthetic run.\", \"ranking\": []}\n```"});
    }
    let mut findings = Vec::new();
    for source in messages.iter().filter_map(|m| m["content"].as_str()) {
        let mut current: Option<String> = None;
        for line in source.lines() {
            if let Some(rest) = line.strip_prefix("<file path=\"") {
                current = rest.split('"').next().map(str::to_string);
            } else if let Some((n, code)) = line.split_once('\t')
                && code.contains("risky_call")
                && let (Some(path), Ok(n)) = (&current, n.trim().parse::<u32>())
            {
                findings.push(json!({"path": path, "line": n, "severity": "medium",
                    "title": "unchecked risky_call", "detail": "d", "evidence": code.trim()}));
            }
        }
    }
    findings.dedup();
    json!({"role": "assistant", "content": format!(
        "Reviewed.\n```json\n{}\n```\n[TASK_COMPLETE]",
        json!({ "findings": findings })
    )})
}

impl Respond for Model {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let prompt = request.body.len() as u64 / 4;
        ResponseTemplate::new(200).set_body_json(json!({
            "choices": [{"index": 0, "message": answer(&body), "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": 100, "total_tokens": prompt + 100}
        }))
    }
}

fn settings(root: &Path, server: &MockServer, store: &Path) -> Settings {
    let provider = ProviderArgs {
        provider: Some(ProviderKind::Openai),
        model: Some("mock-model".into()),
        base_url: Some(format!("{}/v1", server.uri())),
        timeout: Some(60),
        ..ProviderArgs::default()
    };
    let scan = ScanArgs {
        jobs: Some(16),
        // Eight ~430-token files: one group a directory, with room to grow.
        group_tokens: Some(4400),
        max_groups: Some(0),
        store: Some(store.to_path_buf()),
        ..ScanArgs::default()
    };
    let args = RunArgs {
        provider,
        scan,
        ..RunArgs::default()
    };
    Settings::from_args(root, &args, &|_| None).unwrap()
}

/// One scan: its report, input tokens and requests.
async fn scan(settings: Settings) -> (Report, u64, u64) {
    let ctx = Context::new(settings).unwrap();
    let report = fanscan::scan(&ctx, &Ui::hidden()).await.unwrap();
    let tokens = report.stats.input_tokens;
    (report, tokens, ctx.requests())
}

fn findings(r: &Report) -> Vec<(String, u32)> {
    let mut f: Vec<(String, u32)> = r
        .findings
        .iter()
        .map(|m| (m.finding.path.clone(), m.finding.line))
        .collect();
    f.sort();
    f
}

/// Input tokens by agent.
fn by_agent(r: &Report) -> String {
    r.stats
        .agents
        .iter()
        .map(|(agent, a)| format!("{agent} {}", a.usage.input_tokens))
        .collect::<Vec<_>>()
        .join(", ")
}

async fn run(dirs: usize) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    make_tree(&root, dirs);
    let store = dir.path().join("store.db");
    let server = MockServer::builder()
        .disable_request_recording()
        .start()
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(Model)
        .mount(&server)
        .await;
    let files = dirs * FILES_PER_DIR;
    let (cold, cold_tokens, cold_requests) = scan(settings(&root, &server, &store)).await;
    assert!(cold.complete, "{:?}", cold.incomplete_reasons);
    assert_eq!(cold.findings.len(), files);
    let mut lines = vec![format!(
        "cold scan: {files} files, {} groups: {cold_tokens} input tokens ({}), {cold_requests} requests",
        cold.plan.groups.len(),
        by_agent(&cold)
    )];
    for (label, step, offset, v) in [("1%", 100, 37, 1), ("10%", 10, 3, 2)] {
        let touched = touch(&root, dirs, step, offset, v);
        let (again, tokens, requests) = scan(settings(&root, &server, &store)).await;
        assert!(again.complete, "{:?}", again.incomplete_reasons);
        assert_eq!(findings(&again), findings(&cold), "the same findings");
        lines.push(format!(
            "{label} change ({touched} files): {tokens} input tokens ({:.2}% of cold), {requests} requests ({:.2}% of cold); {} files carried over; {}; (target: {})",
            100.0 * tokens as f64 / cold_tokens.max(1) as f64,
            100.0 * requests as f64 / cold_requests.max(1) as f64,
            again.coverage.carried.len(),
            by_agent(&again),
            if label == "1%" { "<= 2% of the tokens" } else { "<= 15% of the tokens" }
        ));
    }
    lines
}
