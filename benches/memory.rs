//! Peak memory of a whole scan with 10,000 groups planned and 256 agents in
//! flight: `fanscan::scan` over a tree of 10,000 small files (one file per
//! group, `--jobs 256`, `--max-groups 0`), read as `VmHWM` from
//! `/proc/self/status` at the end. Target: < 300 MiB.
//!
//! Two scenarios, each in a child process of its own so that each peak is
//! its own: the offline engine (default settings otherwise), and the
//! OpenAI provider against a fast mock of the Chat Completions API (no
//! delay; 3 calls per agent) that runs in a third process, so that the
//! mock's memory is not counted (its own peak is printed too).
//!
//! Run with `cargo bench --bench memory` (well under a minute after the
//! build). Under `cargo test --benches` it runs at a small size as a smoke
//! test. The lines after `== results ==` go into docs/benchmarks.md,
//! with the date they were measured.

#![allow(clippy::unwrap_used, clippy::expect_used)]

// The fixtures shared with the integration tests: each bench uses a part.
#[allow(dead_code, unreachable_pub, unused_imports)]
#[path = "../tests/common/mod.rs"]
mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use fanscan::{Context, ProviderArgs, ProviderKind, ScanArgs, Settings, Ui};

const CHILD: &str = "FANSCAN_MEMORY_BENCH_SCENARIO";
const SCENARIOS: &[&str] = &["offline", "mock"];
const RESULT: &str = "result: ";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let bench = args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--test");
    match std::env::var(CHILD).as_deref() {
        Ok("mock-server") => return mock_server(),
        Ok(scenario) => return child(scenario, bench),
        Err(_) => {}
    }
    let started = Instant::now();
    let exe = std::env::current_exe().unwrap();
    let mut results = Vec::new();
    for scenario in SCENARIOS {
        let out = Command::new(&exe)
            .args(&args)
            .env(CHILD, scenario)
            .stderr(Stdio::inherit())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        print!("{stdout}");
        assert!(out.status.success(), "the {scenario} scenario failed");
        results.extend(
            stdout
                .lines()
                .filter_map(|l| l.strip_prefix(RESULT))
                .map(str::to_string),
        );
    }
    println!("\n== results ==");
    for line in results {
        println!("{line}");
    }
    println!(
        "(benches/memory.rs ran for {:.0} s)",
        started.elapsed().as_secs_f64()
    );
}

/// A field of `/proc/self/status`: `kB` ones in MiB, counts as they are.
fn status_field(field: &str) -> f64 {
    let value = std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| Some(l.strip_prefix(field)?.strip_prefix(':')?.trim().to_string()))
        .unwrap_or_default();
    match value.strip_suffix("kB") {
        Some(kb) => kb.trim().parse::<f64>().map_or(f64::NAN, |kb| kb / 1024.0),
        None => value.parse::<f64>().unwrap_or(f64::NAN),
    }
}

fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `n` small source files (about 200 bytes each: one group each), 100 a
/// directory.
fn files_tree(root: &Path, n: usize) {
    const EXTENSIONS: &[&str] = &["rs", "py", "go", "ts", "js"];
    for f in 0..n {
        let dir = root.join(format!("d{:03}", f / 100));
        std::fs::create_dir_all(&dir).unwrap();
        let ext = EXTENSIONS[f % EXTENSIONS.len()];
        let text = format!(
            "// file {f}: synthetic benchmark input\n\
             fn handler_{f}(input: &str) -> usize {{\n    \
             let n = risky_call(input, {f}).unwrap();\n    \
             n + 1\n\
             }}\n\
             // {}\n",
            "padding ".repeat(12)
        );
        std::fs::write(dir.join(format!("f{f:05}.{ext}")), text).unwrap();
    }
}

/// The mock server's process: serves until its stdin closes, then says its
/// own peak.
fn mock_server() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let server = rt.block_on(mock());
    println!("{}", server.uri());
    std::io::stdout().flush().unwrap();
    let mut rest = String::new();
    let _ = std::io::stdin().read_to_string(&mut rest);
    drop(server);
    println!("{:.0}", status_field("VmHWM"));
}

/// Samples the thread count while the scan runs; returns the highest.
fn watch_threads(stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let mut most = 0;
        while !stop.load(Ordering::Relaxed) {
            most = most.max(status_field("Threads") as u64);
            std::thread::sleep(Duration::from_millis(10));
        }
        most
    })
}

fn child(scenario: &str, bench: bool) {
    let (groups, jobs) = if bench { (10_000, 256) } else { (300, 32) };
    let dir = tempfile::tempdir().unwrap();
    files_tree(dir.path(), groups);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let scan = ScanArgs {
        jobs: Some(jobs),
        group_tokens: Some(100),
        max_groups: Some(0),
        ..ScanArgs::default()
    };
    // The mock runs in a process of its own, so that its memory is not
    // counted here.
    let mut server = (scenario == "mock").then(|| {
        Command::new(std::env::current_exe().unwrap())
            .env(CHILD, "mock-server")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap()
    });
    let mut server_out = server
        .as_mut()
        .map(|s| BufReader::new(s.stdout.take().unwrap()));
    let settings = match &mut server_out {
        Some(out) => {
            let mut uri = String::new();
            out.read_line(&mut uri).unwrap();
            let base = format!("{}/v1", uri.trim());
            common::provider_settings(ProviderKind::Openai, &base, 120, dir.path(), &scan)
        }
        None => {
            Settings::resolve(dir.path(), &ProviderArgs::default(), &scan, None, &|_| None).unwrap()
        }
    };
    let ctx = Context::new(settings).unwrap();
    let baseline = status_field("VmHWM");
    let ui = Ui::hidden();
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = watch_threads(Arc::clone(&stop));
    let start = Instant::now();
    let report = rt.block_on(fanscan::scan(&ctx, &ui)).unwrap();
    let elapsed = start.elapsed();
    let peak = status_field("VmHWM");
    stop.store(true, Ordering::Relaxed);
    let threads = watcher.join().unwrap();
    let reviewed = report.groups.iter().filter(|g| g.status.reviewed()).count();
    assert_eq!(report.groups.len(), groups, "one group per file");
    let server_peak = match (server.as_mut(), server_out.as_mut()) {
        (Some(server), Some(out)) => {
            drop(server.stdin.take());
            let mut text = String::new();
            out.read_to_string(&mut text).unwrap();
            server.wait().unwrap();
            format!(
                "; the mock server's own process peaked at {} MiB",
                text.trim()
            )
        }
        _ => String::new(),
    };
    let label = match scenario {
        "mock" => "openai provider, fast mock server in another process",
        _ => "offline engine",
    };
    println!(
        "{RESULT}memory ({label}): peak RSS {peak:.0} MiB for {} groups, {jobs} in flight (target < 300 MiB); {:.0} MiB before the scan; scan {:.1} s, {} model calls, {reviewed} groups reviewed, {} findings, at most {threads} threads{server_peak}",
        thousands(groups),
        baseline,
        elapsed.as_secs_f64(),
        report.stats.requests,
        report.findings.len(),
    );
}

// ---------------------------------------------------------------------------
// The mock model: reads every listed file, then reports each `risky_call`
// line; the forced summary repeats it.

struct Auditor;

impl Respond for Auditor {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        ResponseTemplate::new(200).set_body_json(common::scan_reply("risky_call", &body))
    }
}

/// A mock server (request recording off: it would hold every body).
async fn mock() -> MockServer {
    let server = MockServer::builder()
        .disable_request_recording()
        .start()
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(Auditor)
        .mount(&server)
        .await;
    server
}
