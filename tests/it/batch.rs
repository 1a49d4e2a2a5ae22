//! `--batch`: a whole scan in rounds through each provider's batch API
//! (an in-process server that speaks both), at the batch price; a partly
//! errored batch, an expired one and unreadable lines fail only their own
//! requests; a run killed during a batch is picked up by the next, which
//! submits nothing twice.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use fanscan::{Context, ProviderArgs, ProviderKind, Report, ScanArgs, Ui};

use crate::common::batch::{Answer, BatchServer, Faults};
use crate::common::{MockModel, Repo, fanscan, report_of, scan_reply};

/// Three directories of two files each, every file with one `risky()`.
fn tree() -> Repo {
    let mut files = Vec::new();
    for d in 0..3 {
        for i in 0..2 {
            files.push((
                format!("d{d}/f{i}.rs"),
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

fn scan_args(batch: bool) -> ScanArgs {
    ScanArgs {
        group_tokens: Some(110),
        batch,
        batch_poll: Some(0.02),
        ..ScanArgs::default()
    }
}

/// The auditor of the synchronous mock, read off a batch line's body.
fn openai_answer() -> Answer {
    Box::new(|body: &Value| scan_reply("risky", body))
}

/// An Anthropic model that answers every turn with one finding on line 2
/// of the first file its task lists.
fn anthropic_answer() -> Answer {
    Box::new(|body: &Value| {
        let task = body["messages"][0]["content"][0]["text"]
            .as_str()
            .unwrap_or_default();
        let path = task
            .lines()
            .filter_map(|l| l.strip_prefix("- "))
            .find_map(|l| l.rsplit_once(" (").map(|(p, _)| p.to_string()));
        let text = match path {
            Some(path) => format!(
                "Summary.\n```json\n{}\n```\n[TASK_COMPLETE]",
                json!({"findings": [{"path": path, "line": 2, "severity": "medium", "title": "uses risky",
                    "detail": "d", "evidence": "let x = risky();"}]})
            ),
            None => "```json\n{\"summary\": \"Synthetic run.\", \"ranking\": []}\n```".to_string(),
        };
        json!({"id": "msg", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6",
               "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
               "usage": {"input_tokens": 1000, "output_tokens": 100}})
    })
}

async fn scan_with(
    kind: ProviderKind,
    base: &str,
    repo: &Repo,
    scan: &ScanArgs,
    model: &str,
) -> Report {
    let provider = ProviderArgs {
        provider: Some(kind),
        model: Some(model.into()),
        base_url: Some(base.to_string()),
        timeout: Some(10),
        ..ProviderArgs::default()
    };
    let settings =
        fanscan::Settings::resolve(repo.path(), &provider, scan, None, &|_| None).unwrap();
    let ctx = Context::new(settings).unwrap();
    fanscan::scan(&ctx, &Ui::hidden()).await.unwrap()
}

/// Custom ids sent in more than one batch.
fn sent_twice(server: &BatchServer) -> Vec<String> {
    let mut seen = BTreeSet::new();
    let mut twice = Vec::new();
    for batch in server.batches() {
        for (id, _) in batch.lines {
            if !seen.insert(id.clone()) {
                twice.push(id);
            }
        }
    }
    twice
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scan_runs_in_rounds_through_openais_batch_api_at_half_the_price() {
    let repo = tree();
    let server = BatchServer::openai(
        openai_answer(),
        Faults {
            polls_in_progress: 2,
            ..Faults::default()
        },
    )
    .await;
    let report = scan_with(
        ProviderKind::Openai,
        &server.base_url(false),
        &repo,
        &scan_args(true),
        "gpt-4o-mini",
    )
    .await;
    assert!(report.complete, "{:?}", report.incomplete_reasons);
    assert_eq!(report.findings.len(), 6, "{:#?}", report.findings);
    let batches = server.batches();
    // The three auditors' turns each went as one batch of three lines.
    let auditor_rounds: Vec<usize> = batches
        .iter()
        .map(|b| b.lines.len())
        .filter(|n| *n == 3)
        .collect();
    assert_eq!(
        auditor_rounds.len(),
        3,
        "{:?}",
        batches.iter().map(|b| &b.lines).collect::<Vec<_>>()
    );
    for batch in &batches {
        for (id, _) in &batch.lines {
            assert!(id.len() <= 64 && id.contains("-t"), "{id}");
        }
    }
    assert!(sent_twice(&server).is_empty());
    // A line's body is the synchronous body: its prompt cache key included.
    let auditor = batches.iter().find(|b| b.lines.len() == 3).unwrap();
    assert!(auditor.lines[0].1["prompt_cache_key"].is_string());
    let stats = report.stats.batch.clone().unwrap();
    assert_eq!(stats.batches as usize, batches.len());
    assert_eq!(
        stats.requests,
        batches.iter().map(|b| b.lines.len() as u64).sum::<u64>()
    );
    assert_eq!((stats.failed, stats.resent, stats.bad_lines), (0, 0, 0));

    // The same scan, synchronous: the same requests at twice the cost.
    let sync = MockModel::openai(Box::new(|body, _| {
        wiremock::ResponseTemplate::new(200).set_body_json(scan_reply("risky", body))
    }))
    .await;
    let plain = tree();
    let synced = scan_with(
        ProviderKind::Openai,
        &sync.base_url(),
        &plain,
        &scan_args(false),
        "gpt-4o-mini",
    )
    .await;
    assert!(synced.complete);
    assert_eq!(synced.findings.len(), 6);
    let (batched, full) = (
        report.stats.cost_usd.unwrap(),
        synced.stats.cost_usd.unwrap(),
    );
    assert!(
        (batched * 2.0 - full).abs() < 1e-9,
        "batch ${batched} vs ${full}"
    );
    let md = report.render(fanscan::Format::Md).unwrap();
    assert!(md.contains("at the batch price"), "{md}");
    assert!(md.contains("- batches: "), "{md}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scan_runs_through_anthropics_message_batches() {
    let repo = tree();
    let server = BatchServer::anthropic(
        anthropic_answer(),
        Faults {
            polls_in_progress: 1,
            ..Faults::default()
        },
    )
    .await;
    let report = scan_with(
        ProviderKind::Anthropic,
        &server.base_url(true),
        &repo,
        &scan_args(true),
        "claude-sonnet-4-6",
    )
    .await;
    assert!(report.complete, "{:?}", report.incomplete_reasons);
    assert_eq!(report.findings.len(), 3, "{:#?}", report.findings);
    let batches = server.batches();
    assert!(batches.iter().any(|b| b.lines.len() == 3));
    assert!(batches[0].lines[0].1["max_tokens"].is_number());
    // Prompt caching works inside batches: the bodies keep their
    // cache_control breakpoints.
    let auditor = batches.iter().find(|b| b.lines.len() == 3).unwrap();
    assert!(auditor.lines[0].1["system"][0]["cache_control"]["type"] == "ephemeral");
    assert!(sent_twice(&server).is_empty());
    assert_eq!(report.stats.batch.unwrap().failed, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errored_lines_and_unreadable_ones_fail_only_their_own_requests() {
    for anthropic in [false, true] {
        let repo = tree();
        let faults = Faults {
            error_ids: Some("d1-".into()),
            bad_lines: true,
            ..Faults::default()
        };
        let (server, kind, answer, model) = if anthropic {
            (
                BatchServer::anthropic(anthropic_answer(), faults).await,
                ProviderKind::Anthropic,
                3,
                "claude-sonnet-4-6",
            )
        } else {
            (
                BatchServer::openai(openai_answer(), faults).await,
                ProviderKind::Openai,
                6,
                "gpt-4o-mini",
            )
        };
        let report = scan_with(
            kind,
            &server.base_url(anthropic),
            &repo,
            &scan_args(true),
            model,
        )
        .await;
        assert!(
            report.complete,
            "{anthropic}: {:?}",
            report.incomplete_reasons
        );
        assert_eq!(report.findings.len(), answer, "{anthropic}");
        let stats = report.stats.batch.clone().unwrap();
        assert_eq!(stats.resent, 1, "{anthropic}: {stats:?}");
        assert_eq!(
            (stats.failed, stats.bad_lines),
            (0, 2),
            "{anthropic}: {stats:?}"
        );
        // The errored request went again, alone of its batch.
        let twice = sent_twice(&server);
        assert_eq!(twice.len(), 1, "{twice:?}");
        assert!(twice[0].starts_with("d1-"), "{twice:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_batch_sends_again_only_what_it_did_not_answer() {
    for anthropic in [false, true] {
        let repo = tree();
        let faults = Faults {
            expire_first: true,
            ..Faults::default()
        };
        let (server, kind, findings, model) = if anthropic {
            let server = BatchServer::anthropic(anthropic_answer(), faults).await;
            (server, ProviderKind::Anthropic, 3, "claude-sonnet-4-6")
        } else {
            let server = BatchServer::openai(openai_answer(), faults).await;
            (server, ProviderKind::Openai, 6, "gpt-4o-mini")
        };
        let report = scan_with(
            kind,
            &server.base_url(anthropic),
            &repo,
            &scan_args(true),
            model,
        )
        .await;
        assert!(
            report.complete,
            "{anthropic}: {:?}",
            report.incomplete_reasons
        );
        assert_eq!(report.findings.len(), findings, "{anthropic}");
        let stats = report.stats.batch.clone().unwrap();
        assert_eq!(stats.resent, 2, "{anthropic}: {stats:?}");
        assert_eq!(sent_twice(&server).len(), 2, "{anthropic}");
        let ended = if anthropic {
            "ended with 0 errored, 2 expired"
        } else {
            "ended expired"
        };
        assert!(
            report.notes.iter().any(|n| n.contains(ended)),
            "{anthropic}: {:?}",
            report.notes
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_killed_during_a_batch_is_picked_up_and_nothing_is_sent_twice() {
    let repo = tree();
    let server = BatchServer::openai(
        openai_answer(),
        Faults {
            never_end: true,
            ..Faults::default()
        },
    )
    .await;
    let base = server.base_url(false);
    let root = repo.path().to_str().unwrap().to_string();
    let args = |root: &str, base: &str| -> Vec<String> {
        [
            "scan",
            root,
            "--provider",
            "openai",
            "--base-url",
            base,
            "--model",
            "gpt-4o-mini",
            "--batch",
            "--batch-poll",
            "0.02",
            "--group-tokens",
            "110",
            "--format",
            "json",
            "--quiet",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_fanscan"))
        .args(args(&root, &base))
        .env("GIT_CEILING_DIRECTORIES", std::env::temp_dir())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The auditors' first round: a batch of three lines, never ending,
    // polled (so the run store has its id: it is kept before the first
    // poll).
    server
        .wait_until(|batches| batches.iter().any(|b| b.lines.len() == 3 && b.polls >= 1))
        .await;
    child.kill().unwrap();
    child.wait().unwrap();
    let before = server.batches().len();

    server.set_faults(Faults::default());
    let (r, b) = (root.clone(), base.clone());
    let out = tokio::task::spawn_blocking(move || {
        let a = args(&r, &b);
        let refs: Vec<&str> = a.iter().map(String::as_str).collect();
        fanscan(&refs)
    })
    .await
    .unwrap();
    let report = report_of(&out);
    assert!(
        report.complete,
        "{:?}\n{}",
        report.incomplete_reasons,
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(report.findings.len(), 6);
    assert!(
        sent_twice(&server).is_empty(),
        "{:?} {:?}",
        sent_twice(&server),
        server
            .batches()
            .iter()
            .map(|b| b.lines.iter().map(|l| l.0.clone()).collect::<Vec<_>>())
            .collect::<Vec<_>>()
    );
    let stats = report.stats.batch.unwrap();
    assert_eq!(stats.picked_up, 1, "{stats:?}");
    // --quiet: one line per round on stderr.
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines = stderr
        .lines()
        .filter(|l| l.starts_with("fanscan: batch round "))
        .count();
    assert_eq!(lines as u32, stats.rounds, "{stderr}");
    assert!(server.batches().len() > before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_duration_reports_what_a_batch_did_not_answer_and_exits_3() {
    let repo = tree();
    let server = BatchServer::openai(
        openai_answer(),
        Faults {
            never_end: true,
            ..Faults::default()
        },
    )
    .await;
    let base = server.base_url(false);
    let root = repo.path().to_str().unwrap().to_string();
    let out = tokio::task::spawn_blocking(move || {
        fanscan(&[
            "scan",
            &root,
            "--provider",
            "openai",
            "--base-url",
            &base,
            "--model",
            "gpt-4o-mini",
            "--batch",
            "--batch-poll",
            "0.05",
            "--group-tokens",
            "110",
            "--max-duration",
            "2s",
            "--format",
            "json",
            "--quiet",
        ])
    })
    .await
    .unwrap();
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = report_of(&out);
    assert!(!report.complete);
    let stats = report.stats.batch.unwrap();
    assert!(!stats.open.is_empty(), "{stats:?}");
    let text = serde_json::to_string(&report.groups).unwrap();
    assert!(text.contains("not answered"), "{text}");
}

#[test]
fn plan_estimate_with_batch_shows_both_prices() {
    let repo = tree();
    let root = repo.path().to_str().unwrap();
    let common = [
        "plan",
        root,
        "--estimate",
        "--provider",
        "openai",
        "--model",
        "gpt-4o-mini",
        "--base-url",
        "http://127.0.0.1:9/v1",
    ];
    let json = fanscan(&[&common[..], &["--batch", "--json"]].concat());
    assert_eq!(
        json.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&json.stderr)
    );
    let value: Value = serde_json::from_slice(&json.stdout).unwrap();
    let estimate = &value["estimate"];
    let (full, batch) = (
        estimate["low_cost_usd"].as_f64().unwrap(),
        estimate["batch_low_cost_usd"].as_f64().unwrap(),
    );
    assert!((full - 2.0 * batch).abs() < 1e-12, "{estimate}");
    let text = fanscan(&[&common[..], &["--batch"]].concat());
    let out = String::from_utf8_lossy(&text.stdout);
    assert!(out.contains("through batches (--batch)"), "{out}");
    let plain = fanscan(&common);
    assert!(!String::from_utf8_lossy(&plain.stdout).contains("through batches"));
}
