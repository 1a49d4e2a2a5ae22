//! What a re-run costs after a change, as a fraction of a cold run, the
//! skeptic included: a 2,000-file synthetic repository (250 directories of
//! 8 files of about 1.2 KB, one group a directory), the `fanscan` binary
//! with the run store and the default gate (`--fail-on high`, so the
//! skeptic challenges every finding at or above high), and an in-process
//! mock of the Chat Completions API on 127.0.0.1 that answers each stage as
//! a small model does: the brief in a line, every `risky_call` line it is
//! shown reported at high, a skeptic's turn without tools and then its
//! verdicts (those of odd-numbered files without a confidence), and the reducer's
//! summary. It bills the prompt by its size (bytes / 4, as `metered` in the
//! tests) and counts requests and billed input tokens by stage.
//!
//! Then the same again with a model that answers badly half the time: the
//! skeptic answers the findings of odd-numbered files with a list of
//! findings instead of verdicts (no verdict), the brief agent with no text
//! and the reducer in prose without its JSON block. What the model
//! answered is stored either way, so the targets are the same.
//!
//! Runs a cold scan, the same scan again unchanged (asserted: no request
//! in any stage), then touches 1% of the files (spread over the tree) and
//! re-runs, then 10% more and re-runs, and prints each re-run's input
//! tokens and requests as fractions of the cold run's, with both by stage.
//! Targets: 1% change ≤ 2% of the cold run's tokens, 10% ≤ 15%. It also
//! asserts that each re-run's verified findings are a full scan's.
//!
//! `cargo bench --bench incremental` runs the full size; `cargo test
//! --bench incremental` (or `-- --test`) a small one as a smoke test. The
//! lines after `== results ==` go into docs/benchmarks.md,
//! with the date they were measured.

#![allow(clippy::unwrap_used, clippy::expect_used)]

// The fixtures shared with the integration tests: each bench uses a part.
#[allow(dead_code, unreachable_pub, unused_imports)]
#[path = "../tests/common/mod.rs"]
mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use fanscan::Report;

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
    let mut results = vec!["-- a model that answers every stage --".to_string()];
    results.extend(rt.block_on(run(dirs, false)));
    results.push(
        "-- a model that answers badly half the time (skeptic non-verdicts, no brief, reducer prose) --"
            .to_string(),
    );
    results.extend(rt.block_on(run(dirs, true)));
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

/// The stages a request can belong to, in pipeline order.
const STAGES: [&str; 4] = ["brief", "audit", "skeptic", "reduce"];

/// Requests and billed input tokens, by stage.
type Tally = BTreeMap<&'static str, (u64, u64)>;

/// The scripted model (see the header); counts what it is asked.
struct Model {
    tally: Arc<Mutex<Tally>>,
    /// Answers badly half the time (see the header).
    bad: bool,
}

/// The stage `body` (`raw`, its text) belongs to.
fn stage_of(raw: &str, task: &str) -> &'static str {
    if raw.contains("You write the brief that every auditor") {
        "brief"
    } else if task.starts_with("TASK: audit-group") {
        "audit"
    } else if task.starts_with("TASK: challenge") {
        "skeptic"
    } else {
        "reduce"
    }
}

/// An answer with text only.
fn text(content: &str) -> Value {
    json!({"role": "assistant", "content": content})
}

/// Whether the skeptic's task is about an odd-numbered file.
fn odd_file(task: &str) -> bool {
    task.lines().next().is_some_and(|l| {
        l.trim_end_matches(".rs")
            .ends_with(['1', '3', '5', '7', '9'])
    })
}

/// The ids of the findings a skeptic's task lists.
fn task_ids(task: &str) -> Vec<&str> {
    task.lines()
        .filter_map(|l| l.strip_prefix("- id "))
        .filter_map(|l| l.split(':').next())
        .collect()
}

fn answer(stage: &str, task: &str, body: &Value, bad: bool) -> Value {
    let messages = body["messages"].as_array().map_or(&[][..], Vec::as_slice);
    let final_turn = body.get("response_format").is_some() || body["tool_choice"] == "none";
    match stage {
        "brief" if bad => text(""),
        "brief" => text("**What it is**: a synthetic library of small functions."),
        "audit" => {
            let findings = common::needle_findings(messages, "risky_call", "high");
            text(&format!(
                "Reviewed.\n```json\n{}\n```\n[TASK_COMPLETE]",
                json!({ "findings": findings })
            ))
        }
        // A list of findings where verdicts were asked: no verdict.
        "skeptic" if final_turn && bad && odd_file(task) => {
            let findings: Vec<Value> = task_ids(task)
                .iter()
                .map(|id| json!({"finding": id, "severity": "high", "title": "risky call"}))
                .collect();
            text(&json!({ "findings": findings }).to_string())
        }
        "skeptic" if final_turn => {
            // The findings of odd-numbered files get no confidence.
            let odd = odd_file(task);
            let verdicts: Vec<Value> = task_ids(task)
                .iter()
                .map(|id| {
                    let mut v = json!({"id": id, "verdict": "confirmed",
                        "why": "the argument reaches risky_call unchecked", "flow": []});
                    if !odd {
                        v["confidence"] = json!(7);
                    }
                    v
                })
                .collect();
            text(&json!({ "verdicts": verdicts }).to_string())
        }
        // No tool call and no marker: the loop's turn ends, the verdicts
        // are asked next.
        "skeptic" => text("The value comes from the caller; nothing checks it."),
        _ if bad => text("I merged the reports: every function calls risky_call."),
        _ => text("```json\n{\"summary\": \"Synthetic run.\", \"ranking\": []}\n```"),
    }
}

impl Respond for Model {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let raw = String::from_utf8_lossy(&request.body);
        let body: Value = serde_json::from_str(&raw).unwrap_or(Value::Null);
        let task = body["messages"]
            .as_array()
            .and_then(|m| m.iter().find(|m| m["role"] == "user"))
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default();
        let stage = stage_of(&raw, task);
        let prompt = request.body.len() as u64 / 4;
        {
            let mut tally = self.tally.lock().unwrap();
            let entry = tally.entry(stage).or_default();
            entry.0 += 1;
            entry.1 += prompt;
        }
        ResponseTemplate::new(200).set_body_json(json!({
            "choices": [{"index": 0, "message": answer(stage, task, &body, self.bad), "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": 100, "total_tokens": prompt + 100}
        }))
    }
}

/// One scan through the binary: its report and what the model was asked.
async fn scan(
    root: &Path,
    server: &MockServer,
    store: &Path,
    tally: &Mutex<Tally>,
) -> (Report, Tally) {
    let args: Vec<String> = [
        "scan",
        &root.display().to_string(),
        "--provider",
        "openai",
        "--model",
        "mock-model",
        "--base-url",
        &format!("{}/v1", server.uri()),
        "--timeout",
        "60",
        "--jobs",
        "16",
        // Eight ~430-token files: one group a directory, with room to grow.
        "--group-tokens",
        "4400",
        "--max-groups",
        "0",
        "--store",
        &store.display().to_string(),
        "--format",
        "json",
        "--quiet",
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_fanscan"))
            .args(&args)
            .env_remove("OPENAI_API_KEY")
            .env_remove("GITHUB_STEP_SUMMARY")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let report: Report = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not a JSON report ({e}), exit {:?}: {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    // The gate fails: every finding is high and confirmed.
    assert_eq!(
        out.status.code(),
        Some(fanscan::exit::GATE_FAILED),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let asked = std::mem::take(&mut *tally.lock().unwrap());
    // What the model billed is what the report counts.
    let billed: u64 = asked.values().map(|(_, t)| t).sum();
    assert_eq!(report.stats.input_tokens, billed, "{asked:?}");
    (report, asked)
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

fn totals(t: &Tally) -> (u64, u64) {
    t.values().fold((0, 0), |(r, k), (r2, k2)| (r + r2, k + k2))
}

/// `brief 1, audit 500, …` of a tally's requests (`0`) or tokens (`1`).
fn by_stage(t: &Tally, tokens: bool) -> String {
    STAGES
        .iter()
        .map(|s| {
            let (r, k) = t.get(s).copied().unwrap_or_default();
            format!("{s} {}", if tokens { k } else { r })
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `x` as a percentage of `of`.
fn share(x: u64, of: u64) -> f64 {
    100.0 * x as f64 / of.max(1) as f64
}

async fn run(dirs: usize, bad: bool) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    make_tree(&root, dirs);
    let store = dir.path().join("store.db");
    let server = MockServer::builder()
        .disable_request_recording()
        .start()
        .await;
    let tally = Arc::new(Mutex::new(Tally::new()));
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(Model {
            tally: Arc::clone(&tally),
            bad,
        })
        .mount(&server)
        .await;
    let files = dirs * FILES_PER_DIR;
    let (cold, cold_asked) = scan(&root, &server, &store, &tally).await;
    assert!(cold.complete, "{:?}", cold.incomplete_reasons);
    assert_eq!(cold.findings.len(), files);
    assert!(
        cold.findings.iter().all(|m| m.challenge.is_some()),
        "the skeptic challenged every finding"
    );
    let (cold_requests, cold_tokens) = totals(&cold_asked);
    let mut lines = vec![format!(
        "cold scan: {files} files, {} groups: {cold_tokens} input tokens ({}), {cold_requests} requests ({})",
        cold.plan.groups.len(),
        by_stage(&cold_asked, true),
        by_stage(&cold_asked, false),
    )];
    let (same, asked) = scan(&root, &server, &store, &tally).await;
    assert!(
        asked.is_empty(),
        "an unchanged re-scan asks nothing: {asked:?}"
    );
    assert_eq!(findings(&same), findings(&cold));
    lines.push("unchanged re-scan: 0 input tokens, 0 requests in every stage".to_string());
    for (label, step, offset, v) in [("1%", 100, 37, 1), ("10%", 10, 3, 2)] {
        let touched = touch(&root, dirs, step, offset, v);
        let (again, asked) = scan(&root, &server, &store, &tally).await;
        assert!(again.complete, "{:?}", again.incomplete_reasons);
        assert_eq!(findings(&again), findings(&cold), "the same findings");
        let (requests, tokens) = totals(&asked);
        let stage_shares = STAGES
            .iter()
            .map(|s| {
                let (_, k) = asked.get(s).copied().unwrap_or_default();
                let (_, c) = cold_asked.get(s).copied().unwrap_or_default();
                format!("{s} {:.2}%", share(k, c))
            })
            .collect::<Vec<_>>()
            .join(", ");
        lines.push(format!(
            "{label} change ({touched} files): {tokens} input tokens ({:.2}% of cold; {}), {requests} requests ({:.2}% of cold; {}); each stage's tokens against its cold ones: {stage_shares}; {} files carried over; (target: {})",
            share(tokens, cold_tokens),
            by_stage(&asked, true),
            share(requests, cold_requests),
            by_stage(&asked, false),
            again.coverage.carried.len(),
            if label == "1%" { "<= 2% of the tokens" } else { "<= 15% of the tokens" }
        ));
    }
    lines
}
