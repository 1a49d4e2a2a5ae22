//! Every token earns its place: prompt-cache keys and structured reports
//! against a scripted Chat Completions server, and the fallbacks when a
//! compatible server rejects them.

use serde_json::json;
use wiremock::ResponseTemplate;

use fanscan::{Context, Report, RunControl, ScanArgs, Ui};

use crate::common::{MockModel, Repo, auditor_behaviour};

fn repo() -> Repo {
    // About 70 estimated tokens a file: one group per directory at 100.
    let pad = format!("# {}\n", "pad ".repeat(40));
    Repo::new(&[
        ("a/one.py", &format!("import os\nos.system(cmd)\n{pad}")),
        ("b/two.py", &format!("print('x')\nos.system(other)\n{pad}")),
    ])
}

fn one_group_per_dir() -> ScanArgs {
    ScanArgs {
        group_tokens: Some(100),
        jobs: Some(1),
        ..ScanArgs::default()
    }
}

async fn scan(ctx: &Context) -> Report {
    let ui = Ui {
        multi: indicatif::MultiProgress::with_draw_target(indicatif::ProgressDrawTarget::hidden()),
        transcripts: None,
        control: RunControl::default(),
    };
    fanscan::scan(ctx, &ui).await.unwrap()
}

#[tokio::test]
async fn each_group_has_one_stable_prompt_cache_key_and_the_summary_asks_for_the_schema() {
    let repo = repo();
    let mock = MockModel::openai(auditor_behaviour("os.system")).await;
    let ctx = Context::new(mock.settings(repo.path(), &one_group_per_dir())).unwrap();
    let report = scan(&ctx).await;
    assert!(report.complete, "{:?}", report.incomplete_reasons);
    // The agents' requests (the reducer's has no tools and no group).
    let requests: Vec<_> = mock
        .requests()
        .into_iter()
        .filter(|r| r.body.get("tools").is_some())
        .collect();
    let mut keys: Vec<&str> = requests
        .iter()
        .map(|r| r.body["prompt_cache_key"].as_str().unwrap())
        .collect();
    keys.dedup();
    assert_eq!(keys.len(), 2, "one key per group, the same for its turns");
    let summaries: Vec<_> = requests
        .iter()
        .filter(|r| r.body["tool_choice"] == "none")
        .collect();
    assert_eq!(summaries.len(), 2);
    for s in summaries {
        let format = &s.body["response_format"];
        assert_eq!(format["type"], "json_schema");
        assert_eq!(format["json_schema"]["strict"], true);
        let item = &format["json_schema"]["schema"]["properties"]["findings"]["items"];
        assert_eq!(item["additionalProperties"], false);
        assert!(
            item["properties"]["code"]["description"]
                .as_str()
                .unwrap()
                .contains("without line numbers")
        );
    }
    assert!(
        requests
            .iter()
            .filter(|r| r.body["tool_choice"] == "auto")
            .all(|r| r.body.get("response_format").is_none())
    );
    assert_eq!(report.findings.len(), 2);
}

#[tokio::test]
async fn a_rejected_prompt_cache_key_is_dropped_for_the_rest_of_the_run_and_noted() {
    let repo = repo();
    let inner = auditor_behaviour("os.system");
    let mock = MockModel::openai(Box::new(move |body, i| {
        if body.get("prompt_cache_key").is_some() {
            return ResponseTemplate::new(400).set_body_json(json!({"error": {
                "message": "Unrecognized request argument supplied: prompt_cache_key",
                "type": "invalid_request_error", "param": null, "code": null}}));
        }
        inner(body, i)
    }))
    .await;
    let ctx = Context::new(mock.settings(repo.path(), &one_group_per_dir())).unwrap();
    let report = scan(&ctx).await;
    assert!(report.complete, "{:?}", report.incomplete_reasons);
    assert_eq!(report.findings.len(), 2);
    let with_key = mock
        .requests()
        .iter()
        .filter(|r| r.body.get("prompt_cache_key").is_some())
        .count();
    assert_eq!(with_key, 1, "sent once, rejected, never again");
    assert!(
        report.notes.iter().any(|n| n.contains("prompt_cache_key")),
        "{:?}",
        report.notes
    );
}

#[tokio::test]
async fn a_server_without_structured_output_falls_back_to_the_text_block_and_says_so() {
    let repo = repo();
    let inner = auditor_behaviour("os.system");
    let mock = MockModel::openai(Box::new(move |body, i| {
        if body.get("response_format").is_some() {
            return ResponseTemplate::new(400).set_body_json(json!({"error": {
                "message": "response_format json_schema is not supported by this model",
                "type": "invalid_request_error"}}));
        }
        inner(body, i)
    }))
    .await;
    let ctx = Context::new(mock.settings(repo.path(), &one_group_per_dir())).unwrap();
    let report = scan(&ctx).await;
    assert!(report.complete, "{:?}", report.incomplete_reasons);
    assert_eq!(
        report.findings.len(),
        2,
        "the findings still arrive, as text"
    );
    let structured = mock
        .requests()
        .iter()
        .filter(|r| r.body.get("response_format").is_some())
        .count();
    assert_eq!(structured, 1);
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("JSON-schema response format")),
        "{:?}",
        report.notes
    );
}

/// A tree of `dirs` directories of two ~2 KiB files: one group each.
fn bigger_tree(dirs: usize) -> Repo {
    let body = format!(
        "import os\nos.system(cmd)\n{}",
        "# padding line of the file\n".repeat(70)
    );
    let files: Vec<(String, String)> = (0..dirs)
        .flat_map(|d| (0..2).map(move |i| (format!("d{d:02}/f{i}.py"), String::new())))
        .collect();
    let repo = Repo::new(&[]);
    for (path, _) in &files {
        repo.write(path, &body);
    }
    repo
}

#[tokio::test]
async fn a_token_budget_stops_the_run_within_ten_percent_of_it() {
    let repo = bigger_tree(12);
    // Answers take 0 to 40 ms, so groups finish in a scrambled order, as
    // under load: the bound must hold whatever the order.
    let mock = MockModel::openai(Box::new(|body, i| {
        ResponseTemplate::new(200)
            .set_body_json(crate::common::metered(
                crate::common::auditor_reply("os.system", body),
                body,
            ))
            .set_delay(std::time::Duration::from_millis((i as u64 * 17) % 41))
    }))
    .await;
    let args = ScanArgs {
        group_tokens: Some(1_500),
        jobs: Some(4),
        ..ScanArgs::default()
    };
    // What a whole run costs, then a budget of about half of it.
    let full = scan(&Context::new(mock.settings(repo.path(), &args)).unwrap()).await;
    assert!(full.complete);
    assert_eq!(full.groups.len(), 12);
    let whole = full.stats.input_tokens + full.stats.output_tokens;
    let budget = whole / 2;
    let mut settings = mock.settings(repo.path(), &args);
    settings.max_tokens = Some(budget);
    // Fresh calls, not the first run's results from the run store.
    settings.cache = false;
    let report = scan(&Context::new(settings).unwrap()).await;
    let spent = report.stats.input_tokens + report.stats.output_tokens;
    eprintln!(
        "budget {budget}: spent {spent} ({:.3} of it), {} of 12 groups",
        spent as f64 / budget as f64,
        report.groups.len()
    );
    assert!(!report.complete);
    assert!(
        spent as f64 <= budget as f64 * 1.10,
        "spent {spent} of a {budget} budget"
    );
    assert!(
        spent as f64 >= budget as f64 * 0.5,
        "stopped far too early: {spent} of {budget}"
    );
}

#[test]
fn a_budget_below_the_cheapest_group_is_a_setup_error_with_both_numbers() {
    let repo = repo();
    let out = crate::common::fanscan(&[
        "scan",
        repo.path().to_str().unwrap(),
        "--max-tokens",
        "100",
        "--quiet",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--max-tokens 100 is less than the cheapest group's estimate"),
        "{err}"
    );
    assert!(err.contains("--group-tokens"), "{err}");
    assert!(out.stdout.is_empty(), "nothing was scanned");
}

#[test]
fn plan_estimate_needs_no_api_key_and_counts_preloading_and_caching() {
    let repo = repo();
    let out = crate::common::fanscan(&[
        "plan",
        repo.path().to_str().unwrap(),
        "--provider",
        "anthropic",
        "--model",
        "claude-sonnet-4-6",
        "--estimate",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text.lines().last().unwrap();
    assert!(
        line.starts_with("estimate for model claude-sonnet-4-6"),
        "{line}"
    );
    assert!(line.contains("read from the prompt cache"), "{line}");
    assert!(
        line.contains("files preloaded, two turns a group"),
        "{line}"
    );
    assert!(line.contains('$'), "priced: {line}");
}

#[tokio::test]
async fn every_request_limits_its_output_and_a_rejected_legacy_field_is_dropped() {
    let repo = repo();
    let inner = auditor_behaviour("os.system");
    let mock = MockModel::openai(Box::new(move |body, i| {
        if body.get("max_tokens").is_some() {
            return ResponseTemplate::new(400).set_body_json(json!({"error": {
                "message": "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
                "type": "invalid_request_error", "param": "max_tokens", "code": "unsupported_parameter"}}));
        }
        inner(body, i)
    }))
    .await;
    let ctx = Context::new(mock.settings(repo.path(), &one_group_per_dir())).unwrap();
    let report = scan(&ctx).await;
    assert!(report.complete, "{:?}", report.incomplete_reasons);
    let requests = mock.requests();
    assert!(
        requests
            .iter()
            .all(|r| r.body["max_completion_tokens"].as_u64().is_some()),
        "every request, the reducer's included, sets a maximum output"
    );
    assert_eq!(
        requests
            .iter()
            .filter(|r| r.body.get("max_tokens").is_some())
            .count(),
        1
    );
    assert!(
        report.notes.iter().any(|n| n.contains("max_tokens")),
        "{:?}",
        report.notes
    );
}
