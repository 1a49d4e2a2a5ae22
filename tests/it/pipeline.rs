//! The scan pipeline end to end against a mock model over real HTTP:
//! coverage, failure isolation, verification, dedupe, rate limits,
//! interruption, the LLM planner and transcripts.

use std::time::Duration;

use serde_json::{Value, json};
use wiremock::ResponseTemplate;

use fanscan::{Context, PlannerKind, ProviderArgs, Report, RunArgs, RunControl, ScanArgs, Ui};

use crate::common::{
    MockModel, Repo, auditor_behaviour, findings_turn, risky_file, task_files, text_turn, tool_turn,
};

/// Four directories of three ~50-token files.
fn tree() -> Repo {
    Repo::tree(&["a", "b", "c", "d"], 3, risky_file)
}

fn small_groups(jobs: usize) -> ScanArgs {
    // Each directory (3 files of ~50 tokens) is one group.
    ScanArgs {
        group_tokens: Some(160),
        jobs: Some(jobs),
        ..ScanArgs::default()
    }
}

/// An auditor that is not given its files up front: it must read them, so
/// these tests can see what happens when it does not.
const READING_AUDITOR: &str = "---\nname: auditor\ndescription: Reads its files itself.\ntools: [list_dir, read_file, grep]\npreload: false\n---\nYou audit.\n";

fn without_preload(repo: &Repo) -> ScanArgs {
    repo.write(".fanscan/agents/auditor.md", READING_AUDITOR);
    ScanArgs {
        exclude: vec![".fanscan/**".into()],
        ..ScanArgs::default()
    }
}

async fn scan(
    ctx: &Context,
    control: RunControl,
    transcripts: Option<std::path::PathBuf>,
) -> Report {
    let ui = Ui::hidden()
        .with_transcripts(transcripts)
        .with_control(control);
    fanscan::scan(ctx, &ui).await.unwrap()
}

#[tokio::test]
async fn a_scan_over_http_reviews_and_accounts_for_every_file() {
    let repo = tree();
    let mock = MockModel::openai(auditor_behaviour("risky_")).await;
    let ctx = Context::new(mock.settings(repo.path(), &small_groups(3))).unwrap();
    let report = scan(&ctx, RunControl::default(), None).await;
    assert!(report.complete, "{:?}", report.incomplete_reasons);
    assert_eq!(report.exit_code(), 0);
    assert_eq!(report.groups.len(), 4);
    assert_eq!(report.coverage.reviewed.len(), 12);
    assert!(report.coverage.unread.is_empty());
    assert_eq!(report.findings.len(), 12);
    assert!(
        report
            .findings
            .iter()
            .all(|m| m.verified && m.finding.line == 2)
    );
    // The brief's one request is counted with the auditors'.
    let requests = mock.requests().len() + mock.brief_requests().len();
    assert_eq!(mock.brief_requests().len(), 1);
    assert_eq!(report.stats.requests as usize, requests);
    assert_eq!(report.stats.input_tokens, 100 * requests as u64);
    assert_eq!(report.stats.agents["brief"].usage.input_tokens, 100);
}

#[tokio::test]
async fn a_failing_group_is_recorded_and_the_others_go_on() {
    let repo = tree();
    let inner = auditor_behaviour("risky_");
    let mock = MockModel::openai(Box::new(move |body, i| {
        if task_files(body).iter().any(|f| f.starts_with("b/")) {
            return ResponseTemplate::new(400).set_body_json(
                json!({"error": {"message": "context too long", "type": "invalid_request_error"}}),
            );
        }
        inner(body, i)
    }))
    .await;
    let ctx = Context::new(mock.settings(repo.path(), &small_groups(2))).unwrap();
    let report = scan(&ctx, RunControl::default(), None).await;
    assert!(!report.complete);
    assert_eq!(report.exit_code(), 3);
    let failed: Vec<&str> = report
        .coverage
        .failed
        .iter()
        .map(|f| f.path.as_str())
        .collect();
    assert_eq!(failed, vec!["b/f0.rs", "b/f1.rs", "b/f2.rs"]);
    assert!(report.coverage.failed[0].reason.contains("HTTP 400"));
    assert_eq!(report.coverage.reviewed.len(), 9);
    assert_eq!(report.findings.len(), 9);
    assert_eq!(
        report.groups.iter().filter(|g| g.error.is_some()).count(),
        1
    );
}

#[tokio::test]
async fn findings_that_cite_code_that_is_not_there_are_unverified() {
    let repo = Repo::new(&[
        ("src/a.rs", "fn a() {\n    let x = 1;\n}\n"),
        ("src/b.rs", "fn b() {}\n"),
    ]);
    let mock = MockModel::openai(Box::new(|body, _| {
        let has_results = body["messages"].as_array().unwrap().iter().any(|m| m["role"] == "tool");
        if !has_results && body["tool_choice"] == "auto" {
            return ResponseTemplate::new(200).set_body_json(tool_turn(&[("r", "read_file", r#"{"path":"src/a.rs"}"#)]));
        }
        ResponseTemplate::new(200).set_body_json(findings_turn(json!([
            {"path": "src/a.rs", "line": 2, "severity": "high", "title": "real", "evidence": "let x = 1;"},
            {"path": "src/a.rs", "line": 1, "severity": "high", "title": "off by one", "evidence": "let x = 1;"},
            {"path": "src/a.rs", "line": 2, "severity": "high", "title": "invented", "evidence": "let y = 2;"},
            {"path": "src/a.rs", "line": 40, "severity": "high", "title": "past the end"},
            {"path": "src/ghost.rs", "line": 1, "severity": "high", "title": "no such file"}
        ])))
    }))
    .await;
    let ctx = Context::new(mock.settings(repo.path(), &without_preload(&repo))).unwrap();
    let report = scan(&ctx, RunControl::default(), None).await;
    let verified: Vec<(&str, u32)> = report
        .findings
        .iter()
        .map(|m| (m.finding.title.as_str(), m.finding.line))
        .collect();
    assert_eq!(verified, vec![("off by one", 2), ("real", 2)]);
    assert_eq!(
        report.findings[0].note.as_deref(),
        Some("line corrected from 1 to 2")
    );
    let mut reasons: Vec<(&str, &str)> = report
        .unverified
        .iter()
        .map(|m| (m.finding.title.as_str(), m.note.as_deref().unwrap()))
        .collect();
    reasons.sort();
    assert_eq!(reasons.len(), 3);
    assert!(
        reasons[0].0 == "invented" && reasons[0].1.contains("evidence is not at src/a.rs:2"),
        "{reasons:?}"
    );
    assert!(
        reasons[1]
            .1
            .contains("not a file of the scanned repository"),
        "{reasons:?}"
    );
    assert!(reasons[2].1.contains("has 3 lines"), "{reasons:?}");
    assert_eq!(report.coverage.unread, vec!["src/b.rs"]);
}

#[tokio::test]
async fn an_agent_that_read_nothing_is_flagged_and_its_findings_unverified() {
    let repo = Repo::new(&[("src/a.rs", "fn a() {\n    let x = 1;\n}\n")]);
    let guess = || {
        findings_turn(
            json!([{"path": "src/a.rs", "line": 2, "severity": "high", "title": "guess", "evidence": "let x = 1;"}]),
        )
    };
    // The answer, the answer to the nudge, the summary: all guesses.
    let mock = MockModel::scripted(vec![guess(), guess(), guess()]).await;
    let ctx = Context::new(mock.settings(repo.path(), &without_preload(&repo))).unwrap();
    let report = scan(&ctx, RunControl::default(), None).await;
    // It was nudged once, by name, and still read nothing.
    let nudges = mock
        .requests()
        .iter()
        .filter(|r| r.raw.contains("You have not read src/a.rs"))
        .count();
    assert!(nudges >= 1, "the model was asked to read its file");
    assert_eq!(report.groups[0].status, fanscan::AgentStatus::Unreviewed);
    // Nothing it invented is a finding, and nothing is lost either.
    assert!(report.findings.is_empty());
    assert_eq!(report.unverified.len(), 1);
    assert!(
        report.unverified[0]
            .note
            .as_deref()
            .unwrap()
            .contains("read none")
    );
    // Its file is not "reviewed": the run is incomplete and never exits 0.
    assert!(report.coverage.reviewed.is_empty());
    assert_eq!(report.coverage.failed[0].path, "src/a.rs");
    assert!(!report.complete);
    assert_eq!(report.exit_code(), 3);
}

#[tokio::test]
async fn a_model_that_reads_after_the_nudge_completes_its_review() {
    let repo = Repo::new(&[("src/a.rs", "fn a() {\n    let x = 1;\n}\n")]);
    let mock = MockModel::scripted(vec![
        crate::common::text_turn("Looks fine. [TASK_COMPLETE]"),
        tool_turn(&[("r", "read_file", r#"{"path":"src/a.rs"}"#)]),
        findings_turn(json!([])),
    ])
    .await;
    let ctx = Context::new(mock.settings(repo.path(), &without_preload(&repo))).unwrap();
    let report = scan(&ctx, RunControl::default(), None).await;
    assert!(report.complete, "{:?}", report.incomplete_reasons);
    assert_eq!(report.coverage.reviewed, vec!["src/a.rs"]);
    assert_eq!(report.exit_code(), 0);
}

#[tokio::test]
async fn claims_that_cannot_be_read_are_listed_with_why_never_dropped() {
    let repo = Repo::new(&[("app.py", "import os\nos.system(cmd)\n")]);
    // A small model's answers: no block at all, twice (the repair turn).
    let mock = MockModel::scripted(vec![
        crate::common::text_turn("app.py:2: os.system with user input [TASK_COMPLETE]"),
        crate::common::text_turn("app.py:2: os.system with user input [TASK_COMPLETE]"),
        crate::common::text_turn("line 2: command injection via os.system [TASK_COMPLETE]"),
    ])
    .await;
    // Without leads: the rule engine's hit on line 2, unanswered, would
    // stand as its finding.
    let args = ScanArgs {
        leads: vec!["off".into()],
        ..ScanArgs::default()
    };
    let ctx = Context::new(mock.settings(repo.path(), &args)).unwrap();
    let report = scan(&ctx, RunControl::default(), None).await;
    assert!(report.findings.is_empty(), "never counted as findings");
    assert!(!report.unparsed.is_empty(), "{report:#?}");
    assert!(
        report
            .unparsed
            .iter()
            .all(|u| u.reason.contains("no findings block")),
        "{:?}",
        report.unparsed
    );
    let md = report.render(fanscan::Format::Md).unwrap();
    assert!(md.contains("## Claims that could not be read"), "{md}");
}

#[tokio::test]
async fn the_same_finding_from_two_groups_is_one_finding() {
    let repo = tree();
    let mock = MockModel::openai(Box::new(|body, _| {
        let has_results = body["messages"].as_array().unwrap().iter().any(|m| m["role"] == "tool");
        if !has_results && body["tool_choice"] == "auto" {
            let files = task_files(body);
            let args = json!({"path": files[0]}).to_string();
            return ResponseTemplate::new(200).set_body_json(tool_turn(&[("r", "read_file", &args)]));
        }
        // Every group blames a/f0.rs, as agents following a call chain do.
        ResponseTemplate::new(200).set_body_json(findings_turn(json!([
            {"path": "a/f0.rs", "line": 2, "severity": "low", "title": "Risky call", "evidence": "let x = risky_a();", "rule": "risky"}
        ])))
    }))
    .await;
    let ctx = Context::new(mock.settings(repo.path(), &small_groups(4))).unwrap();
    let report = scan(&ctx, RunControl::default(), None).await;
    assert_eq!(report.findings.len(), 1);
    assert_eq!(report.findings[0].groups.len(), 4);
}

#[tokio::test]
async fn requests_are_spread_by_the_shared_rate_limiter() {
    let repo = tree();
    let mock = MockModel::openai(auditor_behaviour("risky_")).await;
    let args = RunArgs {
        // One request every 100 ms, whatever the concurrency.
        provider: ProviderArgs {
            rpm: Some(600),
            ..ProviderArgs::default()
        },
        scan: small_groups(4),
        ..RunArgs::default()
    };
    let settings = mock.settings_with(repo.path(), args);
    let ctx = Context::new(settings).unwrap();
    let report = scan(&ctx, RunControl::default(), None).await;
    assert!(report.complete);
    let times: Vec<_> = mock.requests().iter().map(|r| r.at).collect();
    // Four groups of three calls (read, report, forced summary) and the reducer.
    assert_eq!(times.len(), 13);
    let mut sorted = times.clone();
    sorted.sort();
    // Never a burst: no two requests close together (scheduling jitter on
    // a loaded machine moves single requests by tens of milliseconds), and
    // the whole run no faster than the limit allows.
    for pair in sorted.windows(2) {
        let gap = pair[1] - pair[0];
        assert!(
            gap >= Duration::from_millis(40),
            "a burst: two requests {gap:?} apart"
        );
    }
    let span = sorted[sorted.len() - 1] - sorted[0];
    assert!(
        span >= Duration::from_millis(90 * (sorted.len() as u64 - 1)),
        "{span:?} for {} requests",
        sorted.len()
    );
}

#[tokio::test]
async fn an_interrupted_scan_still_reports_everything_marked_incomplete() {
    let repo = tree();
    let control = RunControl::default();
    let trigger = control.clone();
    // A model that would read forever: only a wrap-up ends it early. The
    // run is interrupted while the first group's first call is in flight.
    let mock = MockModel::openai(Box::new(move |body, i| {
        if i == 0 {
            trigger.wind_down("interrupted (test).");
        }
        let turn = if body["tool_choice"] == "none" {
            findings_turn(json!([]))
        } else {
            let args = json!({"path": task_files(body)[0]}).to_string();
            tool_turn(&[(&format!("c{i}"), "read_file", &args)])
        };
        ResponseTemplate::new(200)
            .set_body_json(turn)
            .set_delay(Duration::from_millis(100))
    }))
    .await;
    let ctx = Context::new(mock.settings(repo.path(), &small_groups(1))).unwrap();
    let report = scan(&ctx, control, None).await;
    assert!(!report.complete);
    assert!(
        report
            .incomplete_reasons
            .iter()
            .any(|r| r.contains("interrupted"))
    );
    // The agent in flight wrapped up with its summary; the rest never ran.
    assert_eq!(report.groups.len(), 1);
    assert_eq!(report.groups[0].status, fanscan::AgentStatus::WrappedUp);
    assert_eq!(
        report.coverage.reviewed.len() + report.coverage.failed.len(),
        12
    );
    assert!(
        report
            .coverage
            .failed
            .iter()
            .all(|f| f.reason.contains("not started"))
    );
    assert_eq!(report.coverage.failed.len(), 9);
}

#[tokio::test]
async fn the_llm_plan_is_validated_and_repaired() {
    let repo = tree();
    let inner = auditor_behaviour("risky_");
    let mock = MockModel::openai(Box::new(move |body, i| {
        let task = body["messages"][1]["content"].as_str().unwrap_or_default();
        if task.starts_with("TASK: plan") {
            let plan = json!({"groups": [
                {"files": ["a/f0.rs", "a/f1.rs", "nope.rs"], "focus": "parsing"},
                {"files": ["a/f1.rs", "b/f0.rs"], "focus": "io"}
            ]});
            return ResponseTemplate::new(200)
                .set_body_json(text_turn(&format!("```json\n{plan}\n```")));
        }
        inner(body, i)
    }))
    .await;
    let scan_args = ScanArgs {
        planner: Some(PlannerKind::Llm),
        group_tokens: Some(100),
        ..ScanArgs::default()
    };
    let ctx = Context::new(mock.settings(repo.path(), &scan_args)).unwrap();
    let report = scan(&ctx, RunControl::default(), None).await;
    assert_eq!(report.plan.planner, "llm");
    let mut all: Vec<String> = report
        .plan
        .groups
        .iter()
        .flat_map(|g| g.files.clone())
        .collect();
    all.sort();
    let total = all.len();
    all.dedup();
    assert_eq!((total, all.len()), (12, 12), "every file exactly once");
    assert_eq!(report.plan.groups[0].focus.as_deref(), Some("parsing"));
    let notes = report.notes.join("\n");
    assert!(notes.contains("dropped 1 paths"), "{notes}");
    assert!(notes.contains("more than one group"), "{notes}");
    assert!(notes.contains("packed by the default planner"), "{notes}");
    assert!(report.complete);
}

#[tokio::test]
async fn a_failed_planner_falls_back_to_the_default_plan() {
    let repo = tree();
    let inner = auditor_behaviour("risky_");
    let mock = MockModel::openai(Box::new(move |body, i| {
        let task = body["messages"][1]["content"].as_str().unwrap_or_default();
        if task.starts_with("TASK: plan") {
            return ResponseTemplate::new(200)
                .set_body_json(text_turn("I would split it by directory."));
        }
        inner(body, i)
    }))
    .await;
    let scan_args = ScanArgs {
        planner: Some(PlannerKind::Llm),
        group_tokens: Some(100),
        ..ScanArgs::default()
    };
    let ctx = Context::new(mock.settings(repo.path(), &scan_args)).unwrap();
    let report = scan(&ctx, RunControl::default(), None).await;
    assert_eq!(report.plan.planner, "pack");
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("default pack plan is used"))
    );
    assert_eq!(report.coverage.reviewed.len(), 12);
}

#[tokio::test]
async fn transcripts_hold_each_agents_whole_conversation() {
    let repo = tree();
    let mock = MockModel::openai(auditor_behaviour("risky_")).await;
    let ctx = Context::new(mock.settings(repo.path(), &small_groups(2))).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let report = scan(&ctx, RunControl::default(), Some(dir.path().to_path_buf())).await;
    for group in &report.groups {
        let text = std::fs::read_to_string(dir.path().join(format!("{}.jsonl", group.id))).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines[0]["type"], "system");
        assert!(lines.iter().any(|l| l["message"]["role"] == "tool_result"));
        assert_eq!(lines.last().unwrap()["type"], "summary");
    }
}
