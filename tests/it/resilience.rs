//! Providers left running overnight: retries, `retry-after`, the shared
//! pause, adaptive concurrency, budgets and the Anthropic loop, against a
//! mock server that injects faults.

use std::time::Duration;

use serde_json::{Value, json};
use wiremock::ResponseTemplate;

use fanscan::{Context, ProviderArgs, ProviderKind, Report, RunArgs, ScanArgs, Ui};

use crate::common::{Behaviour, MockModel, Repo, auditor_behaviour};

fn tree(dirs: usize) -> Repo {
    let mut files = Vec::new();
    for d in 0..dirs {
        for i in 0..2 {
            let padding = "// ".to_string() + &"pad ".repeat(28);
            files.push((
                format!("d{d}/f{i}.rs"),
                format!("fn f() {{\n    let x = risky();\n}}\n{padding}\n"),
            ));
        }
    }
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    Repo::new(&refs)
}

fn run_args(provider: ProviderArgs, scan: ScanArgs) -> RunArgs {
    RunArgs {
        provider,
        scan,
        ..RunArgs::default()
    }
}

fn one_dir_per_group(jobs: usize) -> ScanArgs {
    ScanArgs {
        group_tokens: Some(110),
        jobs: Some(jobs),
        ..ScanArgs::default()
    }
}

async fn scan(ctx: &Context) -> Report {
    let ui = Ui::hidden();
    fanscan::scan(ctx, &ui).await.unwrap()
}

fn overloaded() -> ResponseTemplate {
    ResponseTemplate::new(529).set_body_json(
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    )
}

fn rate_limited(ms: u64) -> ResponseTemplate {
    ResponseTemplate::new(429)
        .insert_header("retry-after-ms", ms.to_string().as_str())
        .set_body_json(json!({"error": {"message": "slow down", "type": "rate_limit_error", "code": "rate_limit_exceeded"}}))
}

#[tokio::test]
async fn a_run_where_a_fifth_of_calls_fail_still_reports_every_group() {
    let repo = tree(6);
    let inner = auditor_behaviour("risky");
    let mock = MockModel::openai(Box::new(move |body, i| match i % 10 {
        1 => ResponseTemplate::new(500).set_body_string("internal error"),
        3 => overloaded(),
        5 => rate_limited(20),
        7 => ResponseTemplate::new(200).set_body_string("<html>gateway hiccup</html>"),
        9 => inner(body, i).set_delay(Duration::from_millis(1600)), // over the 1 s timeout
        _ => inner(body, i),
    }))
    .await;
    // One agent at a time: faults fall on every other request by index, so
    // no call meets two in a row (with agents interleaving, one call could
    // meet five and rightly fail: the test would depend on scheduling).
    let provider = ProviderArgs {
        timeout: Some(1),
        ..ProviderArgs::default()
    };
    let settings = mock.settings_with(repo.path(), run_args(provider, one_dir_per_group(1)));
    let ctx = Context::new(settings).unwrap();
    let report = scan(&ctx).await;
    assert!(
        report.complete,
        "{:?} {:?}",
        report.incomplete_reasons, report.groups
    );
    assert_eq!(report.groups.len(), 6);
    assert_eq!(report.coverage.reviewed.len(), 12);
    assert_eq!(report.findings.len(), 12);
    assert!(
        report.stats.retries >= 4,
        "retries: {}",
        report.stats.retries
    );
    assert!(report.stats.rate_limited >= 1);
}

#[tokio::test]
async fn retry_after_is_honoured_on_the_servers_clock() {
    let repo = tree(1);
    let inner = auditor_behaviour("risky");
    let mock = MockModel::openai(Box::new(move |body, i| match i {
        0 => ResponseTemplate::new(429)
            .insert_header("retry-after", "1")
            .set_body_json(json!({"error": {"type": "rate_limit_error", "message": "wait"}})),
        1 => rate_limited(300),
        _ => inner(body, i),
    }))
    .await;
    let ctx = Context::new(mock.settings(repo.path(), &one_dir_per_group(1))).unwrap();
    let report = scan(&ctx).await;
    assert!(report.complete);
    let seen = mock.requests();
    assert!(
        seen[1].at - seen[0].at >= Duration::from_millis(990),
        "retried after {:?}",
        seen[1].at - seen[0].at
    );
    assert!(
        seen[2].at - seen[1].at >= Duration::from_millis(295),
        "retried after {:?}",
        seen[2].at - seen[1].at
    );
    assert_eq!(report.stats.retries, 2);
}

#[tokio::test]
async fn one_429_pauses_every_agent_of_the_limiter() {
    let repo = tree(4);
    let inner = auditor_behaviour("risky");
    // The first request is refused for 600 ms; the others answer slowly,
    // so the 429 is seen before any other agent sends again.
    let mock = MockModel::openai(Box::new(move |body, i| {
        if i == 0 {
            rate_limited(600)
        } else {
            inner(body, i).set_delay(Duration::from_millis(100))
        }
    }))
    .await;
    let ctx = Context::new(mock.settings(repo.path(), &one_dir_per_group(4))).unwrap();
    let report = scan(&ctx).await;
    assert!(report.complete);
    let seen = mock.requests();
    let refused_at = seen[0].at;
    // The four agents' first requests went out together; every later one
    // waited for the pause, whichever agent sent it.
    for later in &seen[4..] {
        assert!(
            later.at - refused_at >= Duration::from_millis(580),
            "a request {:?} after the 429",
            later.at - refused_at
        );
    }
}

#[tokio::test]
async fn concurrency_shrinks_under_a_429_storm_and_recovers() {
    let repo = tree(8);
    let inner = auditor_behaviour("risky");
    let mock = MockModel::openai(Box::new(move |body, i| {
        if i < 12 {
            rate_limited(30)
        } else {
            inner(body, i).set_delay(Duration::from_millis(20))
        }
    }))
    .await;
    let ctx = Context::new(mock.settings(repo.path(), &one_dir_per_group(8))).unwrap();
    let report = scan(&ctx).await;
    assert!(report.complete, "{:?}", report.incomplete_reasons);
    assert!(
        report.stats.lowest_concurrency >= 1 && report.stats.lowest_concurrency <= 4,
        "lowest {}",
        report.stats.lowest_concurrency
    );
    assert_eq!(report.coverage.reviewed.len(), 16);
}

#[tokio::test]
async fn a_token_budget_stops_the_run_inside_it_with_a_complete_partial_report() {
    let repo = tree(6);
    // The mock counts a prompt as its body's bytes / 4, as a server counts
    // by its own tokenizer: estimates are calibrated on that after two
    // calls, in either direction.
    let mock = MockModel::openai(Box::new(|body: &Value, _| {
        let reply = crate::common::metered(crate::common::auditor_reply("risky", body), body);
        ResponseTemplate::new(200).set_body_json(reply)
    }))
    .await;
    // A group starts only when its estimate (about 5,300 tokens: two turns
    // of its prefix, the system prompt's fence notice and five tools'
    // specs included) fits beside
    // what was spent and reserved, so some groups run (how many depends on
    // the estimate's size) and the rest never start.
    let budget = ScanArgs {
        max_tokens: Some(5_600),
        ..one_dir_per_group(1)
    };
    let settings = mock.settings_with(repo.path(), run_args(ProviderArgs::default(), budget));
    let ctx = Context::new(settings).unwrap();
    let report = scan(&ctx).await;
    assert!(!report.complete);
    assert_eq!(report.exit_code(), 3);
    assert!(
        report
            .incomplete_reasons
            .iter()
            .any(|r| r.contains("--max-tokens 5600")),
        "{:?}",
        report.incomplete_reasons
    );
    assert!(
        (1..6).contains(&report.groups.len()),
        "some groups ran, not all: {:?}",
        report.groups
    );
    assert!(
        report.stats.input_tokens + report.stats.output_tokens <= 5_600,
        "{:?}",
        report.stats
    );
    assert_eq!(
        report.coverage.reviewed.len() + report.coverage.failed.len(),
        12
    );
    assert!(!report.coverage.reviewed.is_empty());
    assert!(!report.findings.is_empty(), "what ran is reported");
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("reducer was not asked"))
    );
}

#[tokio::test]
async fn reaching_the_token_budget_mid_agent_asks_for_its_summary() {
    let repo = tree(3);
    // A model that would read forever, billed as a real server bills: by
    // the size of what it is sent.
    let mock = MockModel::openai(Box::new(|body, i| {
        let turn = if body["tool_choice"] == "none" {
            crate::common::findings_turn(json!([{"path": "d0/f0.rs", "line": 2, "severity": "low", "title": "risky", "evidence": "let x = risky();"}]))
        } else {
            crate::common::tool_turn(&[(&format!("c{i}"), "read_file", r#"{"path":"d0/f0.rs"}"#)])
        };
        ResponseTemplate::new(200).set_body_json(crate::common::metered(turn, body))
    }))
    .await;
    let budget = ScanArgs {
        max_tokens: Some(12_000),
        ..one_dir_per_group(1)
    };
    let settings = mock.settings_with(repo.path(), run_args(ProviderArgs::default(), budget));
    let ctx = Context::new(settings).unwrap();
    let report = scan(&ctx).await;
    assert!(!report.complete);
    assert_eq!(report.groups.len(), 1);
    assert_eq!(report.groups[0].status, fanscan::AgentStatus::WrappedUp);
    assert!(
        report.groups[0].rounds > 2,
        "it worked before the budget stopped it"
    );
    // Only the summary may go past the budget, and not by much.
    let spent = report.stats.input_tokens + report.stats.output_tokens;
    assert!(spent <= 13_200, "{spent} is more than 10% over 12,000");
    assert_eq!(report.findings.len(), 1, "the summary's findings are kept");
}

#[tokio::test]
async fn a_cost_budget_needs_a_known_price() {
    let repo = tree(1);
    let mock = MockModel::openai(auditor_behaviour("risky")).await;
    let budget = ScanArgs {
        max_cost: Some(1.0),
        ..one_dir_per_group(1)
    };
    let settings = mock.settings_with(repo.path(), run_args(ProviderArgs::default(), budget));
    let error = Context::new(settings).err().unwrap().to_string();
    assert!(error.contains("not in the price table"), "{error}");
}

#[tokio::test]
async fn errors_that_retrying_cannot_fix_are_not_retried() {
    let repo = tree(1);
    for (status, body, expect) in [
        (
            401,
            json!({"error": {"type": "authentication_error", "message": "bad key"}}),
            "the API key was rejected",
        ),
        (
            404,
            json!({"error": {"type": "not_found_error", "message": "no model"}}),
            "no such model or URL",
        ),
        (
            429,
            json!({"error": {"type": "insufficient_quota", "code": "insufficient_quota", "message": "pay"}}),
            "quota is exhausted",
        ),
    ] {
        let mock = MockModel::openai(Box::new(move |_, _| {
            ResponseTemplate::new(status).set_body_json(body.clone())
        }))
        .await;
        let ctx = Context::new(mock.settings(repo.path(), &one_dir_per_group(1))).unwrap();
        let report = scan(&ctx).await;
        assert_eq!(report.stats.retries, 0);
        let error = report.groups[0].error.clone().unwrap();
        assert!(error.contains(expect), "{error}");
        assert!(!report.complete);
    }
}

fn anthropic_behaviour() -> Behaviour {
    Box::new(|body: &Value, _| {
        let messages = body["messages"].as_array().unwrap();
        let last = messages.last().unwrap();
        let answered = last["content"]
            .as_array()
            .is_some_and(|b| b.iter().any(|b| b["type"] == "tool_result"));
        let reply = if body["tool_choice"]["type"] == "tool" {
            // The forced report tool, as the Messages API answers it.
            json!({"type": "message", "role": "assistant", "stop_reason": "tool_use",
                   "content": [{"type": "tool_use", "id": "toolu_r", "name": body["tool_choice"]["name"],
                                "input": {"summary": "Nothing found.", "findings": []}}],
                   "usage": {"input_tokens": 50, "output_tokens": 5}})
        } else if !answered && body["tool_choice"]["type"] != "none" {
            let task = messages[0]["content"][0]["text"]
                .as_str()
                .unwrap_or_default();
            let files: Vec<String> = task
                .lines()
                .filter_map(|l| l.strip_prefix("- "))
                .filter_map(|l| l.rsplit_once(" (").map(|(p, _)| p.to_string()))
                .collect();
            let mut content = vec![json!({"type": "text", "text": "Reading."})];
            for (i, f) in files.iter().enumerate() {
                content.push(json!({"type": "tool_use", "id": format!("toolu_{i}"), "name": "read_file", "input": {"path": f}}));
            }
            json!({"type": "message", "role": "assistant", "content": content, "stop_reason": "tool_use",
                   "usage": {"input_tokens": 50, "output_tokens": 5, "cache_read_input_tokens": 10}})
        } else {
            json!({"type": "message", "role": "assistant", "stop_reason": "end_turn",
                   "content": [{"type": "text", "text": "Nothing found.\n```json\n{\"findings\": []}\n```\n[TASK_COMPLETE]"}],
                   "usage": {"input_tokens": 50, "output_tokens": 5}})
        };
        ResponseTemplate::new(200).set_body_json(reply)
    })
}

#[tokio::test]
async fn the_anthropic_loop_answers_every_tool_use_in_one_message() {
    let repo = tree(1);
    let mock = MockModel::anthropic(anthropic_behaviour()).await;
    let ctx = Context::new(mock.settings_for(
        ProviderKind::Anthropic,
        repo.path(),
        &one_dir_per_group(1),
    ))
    .unwrap();
    let report = scan(&ctx).await;
    assert!(report.complete, "{:?}", report.groups);
    let seen = mock.requests();
    let second = &seen[1].body;
    assert_eq!(
        second["system"][0]["text"]
            .as_str()
            .unwrap()
            .lines()
            .next()
            .unwrap(),
        "You are a senior code auditor. You review one group of files of a repository"
    );
    let messages = second["messages"].as_array().unwrap();
    assert_eq!(
        messages.len(),
        3,
        "task, assistant, one user message of results"
    );
    let results = messages[2]["content"].as_array().unwrap();
    let ids: Vec<&str> = results
        .iter()
        .map(|b| b["tool_use_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec!["toolu_0", "toolu_1"]);
    assert_eq!(seen[0].body["tool_choice"]["type"], "auto");
    // The summary turn: the forced report tool (structured output), asked
    // once, as a user text.
    let summaries: Vec<_> = seen
        .iter()
        .filter(|s| s.body["tool_choice"]["type"] == "tool")
        .collect();
    assert!(
        summaries
            .iter()
            .all(|s| s.body["tool_choice"]["name"] == "report_findings")
    );
    assert_eq!(
        summaries.len(),
        1,
        "asked exactly once (the reducer sends no tools)"
    );
    let last = summaries[0].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["role"], "user");
    assert!(
        last["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("complete summary of every step")
    );
    assert_eq!(report.groups[0].usage.cached_tokens, 10);
}

#[tokio::test]
async fn a_time_budget_stops_the_run_and_keeps_what_was_done() {
    let repo = tree(4);
    let inner = auditor_behaviour("risky");
    let mock = MockModel::openai(Box::new(move |body, i| {
        inner(body, i).set_delay(Duration::from_millis(120))
    }))
    .await;
    let budget = ScanArgs {
        max_duration: Some("500ms".into()),
        ..one_dir_per_group(1)
    };
    let settings = mock.settings_with(repo.path(), run_args(ProviderArgs::default(), budget));
    let ctx = Context::new(settings).unwrap();
    let report = scan(&ctx).await;
    assert!(!report.complete);
    assert!(
        report
            .incomplete_reasons
            .iter()
            .any(|r| r.contains("time budget")),
        "{:?}",
        report.incomplete_reasons
    );
    assert!(!report.groups.is_empty() && report.groups.len() < 4);
    assert_eq!(
        report.coverage.reviewed.len() + report.coverage.failed.len(),
        8
    );
}

#[tokio::test]
async fn a_quota_never_turns_into_failed_groups() {
    let repo = tree(2);
    let inner = auditor_behaviour("risky");
    // Eight 429s in a row: more than the call's attempts, all waited out.
    let mock = MockModel::openai(Box::new(move |body, i| {
        if i < 8 {
            rate_limited(10)
        } else {
            inner(body, i)
        }
    }))
    .await;
    let provider = ProviderArgs {
        max_attempts: Some(2),
        ..ProviderArgs::default()
    };
    let settings = mock.settings_with(repo.path(), run_args(provider, one_dir_per_group(1)));
    let ctx = Context::new(settings).unwrap();
    let report = scan(&ctx).await;
    assert!(report.complete, "{:?}", report.groups);
    assert_eq!(report.stats.rate_limited, 8);
    assert_eq!(report.stats.retries, 8);
}
