//! Every token earns its place: prompt-cache keys and structured reports
//! against a scripted Chat Completions server, and the fallbacks when a
//! compatible server rejects them.

use serde_json::{Value, json};
use wiremock::ResponseTemplate;

use fanscan::{Context, Report, ScanArgs, Ui};

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
    let ui = Ui::hidden();
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
    let budgeted = ScanArgs {
        max_tokens: Some(budget),
        // Fresh calls, not the first run's results from the run store.
        no_cache: true,
        ..args
    };
    let settings = mock.settings(repo.path(), &budgeted);
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

/// A model that reads every path its task mentions and was not shown
/// (as the small local model of issue 15 did with the report format's
/// example), then answers.
fn literal_reader(body: &serde_json::Value) -> ResponseTemplate {
    let messages = body["messages"].as_array().unwrap();
    if body["tool_choice"] == "none" {
        return ResponseTemplate::new(200).set_body_json(crate::common::findings_turn(json!([])));
    }
    let task = messages[1]["content"].as_str().unwrap_or_default();
    let shown: Vec<String> = task
        .split("<file path=\"")
        .skip(1)
        .filter_map(|rest| rest.split_once('"').map(|(p, _)| p.to_string()))
        .collect();
    let unread: Vec<String> = crate::common::path_like(task)
        .into_iter()
        .filter(|p| !shown.contains(p))
        .collect();
    let read_already = messages.iter().any(|m| m["role"] == "tool");
    let reply = if unread.is_empty() || read_already {
        crate::common::text_turn("Read all of it. [TASK_COMPLETE]")
    } else {
        let calls: Vec<(String, String)> = unread
            .iter()
            .enumerate()
            .map(|(i, p)| (format!("r{i}"), json!({ "path": p }).to_string()))
            .collect();
        let refs: Vec<(&str, &str, &str)> = calls
            .iter()
            .map(|(id, a)| (id.as_str(), "read_file", a.as_str()))
            .collect();
        crate::common::tool_turn(&refs)
    };
    ResponseTemplate::new(200).set_body_json(reply)
}

#[tokio::test]
async fn a_model_that_reads_every_path_of_its_task_costs_two_calls_a_group() {
    // The test model takes what the old report format cited as a path,
    // its `path/to/file.ext` example included.
    assert_eq!(
        crate::common::path_like("{\"path\": \"src/lib.rs\", \"line\": 42} or path/to/file.ext."),
        vec!["path/to/file.ext", "src/lib.rs"]
    );
    // About 70 estimated tokens a file: one group per directory at 100.
    let pad = format!("# {}\n", "pad ".repeat(40));
    let repo = Repo::new(&[
        ("a/one.py", &format!("def one():\n    return 1\n{pad}")),
        ("b/two.py", &format!("def two():\n    return 2\n{pad}")),
        ("c/three.py", &format!("def three():\n    return 3\n{pad}")),
    ]);
    let mock = MockModel::openai(Box::new(|body, _| literal_reader(body))).await;
    let ctx = Context::new(mock.settings(repo.path(), &one_group_per_dir())).unwrap();
    let report = scan(&ctx).await;
    assert!(report.complete, "{:?}", report.incomplete_reasons);
    assert_eq!(report.groups.len(), 3);
    let mut per_group: std::collections::BTreeMap<String, usize> = Default::default();
    for seen in mock.requests() {
        if let Some(key) = seen.body["prompt_cache_key"].as_str()
            && seen.body.get("tools").is_some()
        {
            *per_group.entry(key.to_string()).or_default() += 1;
        }
    }
    assert_eq!(per_group.len(), 3);
    assert!(
        per_group.values().all(|n| *n == 2),
        "the answer and the summary, nothing read again: {per_group:?}"
    );
}

/// A repository of two groups at 100 tokens (`a/` of ~60, `b/` of ~50).
fn two_groups() -> Repo {
    let pad = |n: usize| format!("# {}\n", "pad ".repeat(n));
    Repo::new(&[
        (
            "a/one.py",
            &format!("import os\nos.system(cmd)\n{}", pad(15)),
        ),
        ("a/two.py", &format!("print('two')\n{}", pad(18))),
        ("b/three.py", &format!("os.system(other)\n{}", pad(32))),
    ])
}

/// What a model reads through the tools before it answers: `b/three.py`,
/// from group `a/` only, once.
fn reads_across(task: &str, answered: bool, summary: bool) -> Option<&'static str> {
    if summary {
        return None;
    }
    (!answered && task.contains("TASK: audit-group") && task.contains("a/one.py"))
        .then_some("b/three.py")
}

/// The `path` and `line` schemas of a structured report schema.
fn path_and_line(schema: &serde_json::Value) -> (serde_json::Value, serde_json::Value) {
    let item = &schema["properties"]["findings"]["items"]["properties"];
    (item["path"].clone(), item["line"].clone())
}

/// Whether a report schema limits `path` to an enum.
fn has_path_enum(schema: &serde_json::Value) -> bool {
    path_and_line(schema).0.get("enum").is_some()
}

#[tokio::test]
async fn the_report_schema_names_only_the_groups_files_and_its_reads_over_chat_completions() {
    let repo = two_groups();
    let mock = MockModel::openai(Box::new(|body, _| {
        let messages = body["messages"].as_array().unwrap();
        let task = messages[1]["content"].as_str().unwrap_or_default();
        let answered = messages.iter().any(|m| m["role"] == "tool");
        let reply = match reads_across(task, answered, body["tool_choice"] == "none") {
            Some(path) => crate::common::tool_turn(&[(
                "x",
                "read_file",
                &json!({ "path": path }).to_string(),
            )]),
            None if body["tool_choice"] == "none" => crate::common::findings_turn(json!([])),
            None => crate::common::text_turn("Done. [TASK_COMPLETE]"),
        };
        ResponseTemplate::new(200).set_body_json(reply)
    }))
    .await;
    let ctx = Context::new(mock.settings(repo.path(), &one_group_per_dir())).unwrap();
    let report = scan(&ctx).await;
    assert!(report.complete, "{:?}", report.incomplete_reasons);
    let mut enums = Vec::new();
    for seen in mock.requests() {
        let Some(format) = seen.body.get("response_format") else {
            continue;
        };
        assert_eq!(format["json_schema"]["strict"], true);
        // The skeptic's verdicts (the rule engine's lead in `b/three.py`,
        // `os.system`, is high and so challenged) are not a report.
        if format["json_schema"]["name"] != "report_findings" {
            continue;
        }
        let (path, line) = path_and_line(&format["json_schema"]["schema"]);
        assert_eq!(line["type"], "integer");
        assert_eq!(line["minimum"], 1);
        enums.push(path["enum"].clone());
    }
    enums.sort_by_key(|e| e.to_string());
    assert_eq!(
        enums,
        vec![
            json!(["a/one.py", "a/two.py", "b/three.py"]),
            json!(["b/three.py"]),
        ]
    );
}

/// An Anthropic Messages model like the one above; `reject` answers 400
/// to a forced tool whose schema has an `enum`.
fn messages_model(reject: bool) -> crate::common::Behaviour {
    Box::new(move |body, _| {
        let messages = body["messages"].as_array().unwrap();
        let task = messages[0]["content"][0]["text"]
            .as_str()
            .unwrap_or_default();
        let answered = messages.iter().any(|m| {
            m["content"]
                .as_array()
                .is_some_and(|c| c.iter().any(|b| b["type"] == "tool_result"))
        });
        let forced = body["tool_choice"]["type"] == "tool";
        let schema = body["tools"]
            .as_array()
            .and_then(|t| t.last())
            .map(|t| t["input_schema"].clone())
            .unwrap_or_default();
        if forced && reject && has_path_enum(&schema) {
            return ResponseTemplate::new(400).set_body_json(json!({"type": "error", "error": {
                "type": "invalid_request_error",
                "message": "tools.3.custom.input_schema: 'enum' is not supported for this model"}}));
        }
        let usage = json!({"input_tokens": 50, "output_tokens": 5});
        let reply = if forced {
            let name = body["tool_choice"]["name"].clone();
            json!({"type": "message", "role": "assistant", "stop_reason": "tool_use", "usage": usage,
                   "content": [{"type": "tool_use", "id": "toolu_r", "name": name,
                                "input": {"summary": "Done.", "findings": [
                                    {"path": "a/one.py", "line": 2, "end_line": null, "severity": "high",
                                     "title": "shell", "detail": "d", "code": "os.system(cmd)", "rule": null}]}}]})
        } else if let Some(path) = reads_across(task, answered, false) {
            json!({"type": "message", "role": "assistant", "stop_reason": "tool_use", "usage": usage,
                   "content": [{"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": path}}]})
        } else {
            json!({"type": "message", "role": "assistant", "stop_reason": "end_turn", "usage": usage,
                   "content": [{"type": "text", "text": "Done. [TASK_COMPLETE]"}]})
        };
        ResponseTemplate::new(200).set_body_json(reply)
    })
}

#[tokio::test]
async fn the_report_schema_names_only_the_groups_files_and_its_reads_over_messages() {
    let repo = two_groups();
    let mock = MockModel::anthropic(messages_model(false)).await;
    let ctx = Context::new(mock.settings_for(
        fanscan::ProviderKind::Anthropic,
        repo.path(),
        &one_group_per_dir(),
    ))
    .unwrap();
    let report = scan(&ctx).await;
    assert!(report.complete, "{:?}", report.incomplete_reasons);
    let mut enums = Vec::new();
    for seen in mock.requests() {
        // The auditors' reports (the skeptic's verdicts have their own).
        if seen.body["tool_choice"]["type"] != "tool"
            || seen.body["tool_choice"]["name"] != "report_findings"
        {
            continue;
        }
        let tools = seen.body["tools"].as_array().unwrap();
        let forced = tools.last().unwrap();
        assert_eq!(forced["name"], seen.body["tool_choice"]["name"]);
        let (path, line) = path_and_line(&forced["input_schema"]);
        assert_eq!(line["minimum"], 1);
        enums.push(path["enum"].clone());
    }
    enums.sort_by_key(|e| e.to_string());
    assert_eq!(
        enums,
        vec![
            json!(["a/one.py", "a/two.py", "b/three.py"]),
            json!(["b/three.py"]),
        ]
    );
    assert!(report.findings.iter().any(|f| f.finding.path == "a/one.py"));
}

#[tokio::test]
async fn a_server_that_rejects_the_path_enum_gets_the_schema_without_it_and_a_note() {
    // Chat Completions.
    let repo = two_groups();
    let mock = MockModel::openai(Box::new(|body, i| {
        if has_path_enum(&body["response_format"]["json_schema"]["schema"]) {
            return ResponseTemplate::new(400).set_body_json(json!({"error": {
                "message": "Invalid schema for response_format 'report_findings': In context=('properties', 'path'), 'enum' is not permitted.",
                "type": "invalid_request_error"}}));
        }
        auditor_behaviour("os.system")(body, i)
    }))
    .await;
    let ctx = Context::new(mock.settings(repo.path(), &one_group_per_dir())).unwrap();
    let report = scan(&ctx).await;
    assert!(report.complete, "{:?}", report.incomplete_reasons);
    assert_eq!(report.findings.len(), 2, "{:?}", report.findings);
    let formats: Vec<_> = mock
        .requests()
        .into_iter()
        .filter_map(|r| r.body.get("response_format").cloned())
        .filter(|f| f["json_schema"]["name"] == "report_findings")
        .collect();
    let constrained = formats
        .iter()
        .filter(|f| has_path_enum(&f["json_schema"]["schema"]))
        .count();
    assert_eq!(constrained, 1, "rejected once, never sent again");
    assert_eq!(formats.len(), 3, "the retry and the other group's summary");
    let relaxed = &formats[2]["json_schema"]["schema"];
    assert_eq!(path_and_line(relaxed).0["type"], "string");
    let note = |notes: &[String]| {
        notes
            .iter()
            .any(|n| n.contains("output schema's constraints"))
    };
    assert!(note(&report.notes), "{:?}", report.notes);

    // Messages.
    let mock = MockModel::anthropic(messages_model(true)).await;
    let ctx = Context::new(mock.settings_for(
        fanscan::ProviderKind::Anthropic,
        repo.path(),
        &one_group_per_dir(),
    ))
    .unwrap();
    let report = scan(&ctx).await;
    assert!(report.complete, "{:?}", report.incomplete_reasons);
    assert!(report.findings.iter().any(|f| f.finding.path == "a/one.py"));
    let forced: Vec<serde_json::Value> = mock
        .requests()
        .into_iter()
        .filter(|r| {
            r.body["tool_choice"]["type"] == "tool"
                && r.body["tool_choice"]["name"] == "report_findings"
        })
        .map(|r| r.body["tools"].as_array().unwrap().last().unwrap()["input_schema"].clone())
        .collect();
    assert_eq!(
        forced.len(),
        3,
        "the rejected summary, its retry, the other group's"
    );
    assert_eq!(forced.iter().filter(|s| has_path_enum(s)).count(), 1);
    assert!(note(&report.notes), "{:?}", report.notes);
}

/// What an OpenAI server counts for a Chat Completions body, by its own
/// rule: each message's text (or the tool calls' names and arguments) and
/// 3 tokens of framing, the tools and the response format as their JSON,
/// 3 to prime the answer, all with `o200k_base` (GPT-4o's tokenizer).
#[cfg(feature = "openai-tokenizer")]
fn o200k_prompt_tokens(body: &Value) -> u64 {
    let bpe = bpe_openai::o200k_base();
    let mut tokens = 3;
    for message in body["messages"].as_array().into_iter().flatten() {
        tokens += 3;
        if let Some(text) = message["content"].as_str() {
            tokens += bpe.count(text) as u64;
        }
        for call in message["tool_calls"].as_array().into_iter().flatten() {
            let f = &call["function"];
            tokens += bpe.count(f["name"].as_str().unwrap_or_default()) as u64
                + bpe.count(f["arguments"].as_str().unwrap_or_default()) as u64;
        }
    }
    if let Some(tools) = body.get("tools") {
        tokens += bpe.count(&tools.to_string()) as u64;
    }
    if let Some(format) = body.get("response_format") {
        tokens += bpe.count(&format.to_string()) as u64;
    }
    tokens
}

fn counted_by(count: fn(&Value) -> u64) -> crate::common::Behaviour {
    Box::new(move |body: &Value, _| {
        let mut reply = crate::common::auditor_reply("os.system", body);
        let prompt = count(body);
        reply["usage"] =
            json!({"prompt_tokens": prompt, "completion_tokens": 60, "total_tokens": prompt + 60});
        ResponseTemplate::new(200).set_body_json(reply)
    })
}

fn many_groups() -> Repo {
    let dirs: Vec<String> = (0..8).map(|i| format!("d{i}")).collect();
    let names: Vec<&str> = dirs.iter().map(String::as_str).collect();
    Repo::tree(&names, 1, |dir, _| {
        (
            format!("{dir}/code.py"),
            format!(
                "import os\n\ndef run_{dir}(cmd):\n    \"\"\"Runs {dir}.\"\"\"\n    os.system(cmd)\n{}",
                format!("    value = compute(cmd, \"{dir}\") + len(cmd) * 3\n").repeat(20)
            ),
        )
    })
}

#[cfg(feature = "openai-tokenizer")]
#[tokio::test]
async fn an_openai_model_is_counted_with_its_own_tokenizer_within_ten_percent() {
    let repo = many_groups();
    let mock = MockModel::openai(counted_by(o200k_prompt_tokens)).await;
    let args = fanscan::RunArgs {
        provider: fanscan::ProviderArgs {
            model: Some("gpt-4o-mini".into()),
            ..fanscan::ProviderArgs::default()
        },
        scan: ScanArgs {
            group_tokens: Some(400),
            jobs: Some(1),
            ..ScanArgs::default()
        },
        ..fanscan::RunArgs::default()
    };
    let ctx = Context::new(mock.settings_with(repo.path(), args)).unwrap();
    let report = scan(&ctx).await;
    assert!(report.complete, "{:?}", report.incomplete_reasons);
    let e = report.stats.token_estimate.clone().unwrap();
    assert_eq!(e.counted_with, "o200k_base");
    // Over every call, the server counted within 10% of our counts (the
    // ratio is the server's count per estimated token)...
    assert!((0.9..=1.1).contains(&e.ratio), "{e:?}");
    // ...and after it, the calls estimated were within 10% too.
    assert!(e.checked_calls >= 8, "{e:?}");
    assert!(e.error.unwrap().abs() <= 0.10, "{e:?}");
}

#[tokio::test]
async fn a_model_without_a_public_tokenizer_is_calibrated_within_ten_percent() {
    let repo = many_groups();
    // This server's tokenizer counts a body's bytes / 4.
    let mock = MockModel::openai(counted_by(|body| body.to_string().len() as u64 / 4)).await;
    let scan_args = ScanArgs {
        group_tokens: Some(400),
        jobs: Some(1),
        ..ScanArgs::default()
    };
    let ctx = Context::new(mock.settings(repo.path(), &scan_args)).unwrap();
    let report = scan(&ctx).await;
    assert!(report.complete, "{:?}", report.incomplete_reasons);
    let e = report.stats.token_estimate.clone().unwrap();
    assert_eq!(e.counted_with, "bytes / 3");
    assert!(e.checked_calls >= 8, "{e:?}");
    // Calibrated on the counts so far, the later calls' estimates were
    // within 10% of the server's counts.
    let error = e.error.unwrap();
    assert!(error.abs() <= 0.10, "{e:?}");
    let markdown = report.render(fanscan::Format::Md).unwrap();
    assert!(
        markdown.contains(&format!(
            "the {} calls estimated after that were {:+.1}% off the server's counts",
            e.checked_calls,
            error * 100.0
        )),
        "{markdown}"
    );
}

#[cfg(feature = "openai-tokenizer")]
#[test]
fn plan_estimate_counts_an_openai_models_files_with_its_tokenizer() {
    let repo = many_groups();
    let root = repo.path().to_str().unwrap();
    let plan = |model: &str| {
        let out = crate::common::fanscan(&[
            "plan",
            root,
            "--provider",
            "openai",
            "--model",
            model,
            "--estimate",
            "--json",
        ]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Value>(&out.stdout).unwrap()["estimate"].clone()
    };
    let exact = plan("gpt-4o");
    assert_eq!(exact["counted_with"], "o200k_base");
    let truth: u64 = (0..8)
        .map(|i| {
            let text = std::fs::read_to_string(repo.path().join(format!("d{i}/code.py"))).unwrap();
            bpe_openai::o200k_base().count(&text) as u64
        })
        .sum();
    assert_eq!(exact["content_tokens"], truth);
    let guessed = plan("llama-3.1-8b");
    assert_eq!(guessed["counted_with"], "bytes / 3");
    assert_ne!(guessed["content_tokens"], truth);
}
