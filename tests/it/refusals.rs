//! A model that refuses is never a review: a refused turn is asked once
//! more with the refusal quoted back and the task restated as a defensive
//! review; refused again, the group is `blocked` (not reviewed, the run
//! incomplete, exit 3 unless the gate failed) and every format lists it
//! with the provider's words. A refused challenge is "no verdict", never a
//! refutation; a refused reducer gives the counted summary and says so.
//! The mock refuses any request whose text holds a marker, in OpenAI's
//! (`refusal` set) and Anthropic's (`stop_reason: refusal`) wire formats.

use std::path::Path;

use serde_json::{Value, json};
use wiremock::ResponseTemplate;

use fanscan::{AgentStatus, Format, Report, Stance, exit};

use crate::common::{
    Behaviour, MockModel, Repo, fanscan, findings_turn, is_reduce, reducer_turn, report_of,
};

/// Text in a file that the mock's "safety filter" refuses to look at.
const MARKER: &str = "REFUSE-THIS-FILE";
/// What the mock says when it refuses.
const WORDS: &str = "I can't help with analysing malicious code.";

/// A comment that makes a file large enough to fill a group of 100
/// tokens alone.
fn padding() -> String {
    format!("# {}\n", "padding ".repeat(25))
}

fn repo() -> Repo {
    Repo::new(&[
        (
            "exploit/payload.py",
            &format!("# {MARKER}\nPAYLOAD = 'a test fixture'\n{}", padding()),
        ),
        (
            "app/views.py",
            &format!(
                "def handler(request):\n    name = request.args['name']\n    return name\n{}",
                padding()
            ),
        ),
    ])
}

/// The task (first user message) of an OpenAI or Anthropic request.
fn task(body: &Value) -> String {
    let first = body["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "user"))
        .cloned()
        .unwrap_or(Value::Null);
    match &first["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn openai_refusal() -> Value {
    json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": null, "refusal": WORDS},
           "finish_reason": "stop"}],
           "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}})
}

fn anthropic_text(text: &str, stop: &str) -> Value {
    json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "mock-model",
           "content": [{"type": "text", "text": text}], "stop_reason": stop,
           "usage": {"input_tokens": 100, "output_tokens": 10}})
}

/// An auditor's clean answer, in the wire format of the mock.
fn clean(anthropic: bool) -> Value {
    if anthropic {
        anthropic_text(
            "Summary.\n```json\n{\"findings\": []}\n```\n[TASK_COMPLETE]",
            "end_turn",
        )
    } else {
        findings_turn(json!([]))
    }
}

/// Refuses every request whose task holds the marker; answers the rest
/// (the auditor of the other group, the reducer) cleanly.
fn refusing(anthropic: bool) -> Behaviour {
    Box::new(move |body, _| {
        let refused = task(body).contains(MARKER);
        let answer = match (refused, anthropic) {
            (true, false) => openai_refusal(),
            (true, true) => anthropic_text(WORDS, "refusal"),
            (false, false) if is_reduce(body) => reducer_turn(),
            (false, a) => clean(a),
        };
        ResponseTemplate::new(200).set_body_json(answer)
    })
}

fn scan(root: &Path, base: &str, provider: &str) -> std::process::Output {
    fanscan(&[
        "scan",
        root.to_str().unwrap(),
        "--format",
        "json",
        "--quiet",
        "--no-store",
        "--provider",
        provider,
        "--base-url",
        base,
        "--model",
        "m",
        // One group per file: the refused one and the other.
        "--group-tokens",
        "100",
    ])
}

/// The requests of the refused group, in order.
fn refused_requests(mock: &MockModel) -> Vec<Value> {
    mock.requests()
        .into_iter()
        .filter(|s| task(&s.body).contains(MARKER))
        .map(|s| s.body)
        .collect()
}

fn blocked_checks(report: &Report, mock: &MockModel) {
    let blocked: Vec<_> = report
        .groups
        .iter()
        .filter(|g| g.files.iter().any(|f| f.starts_with("exploit/")))
        .collect();
    assert_eq!(blocked.len(), 1, "{:?}", report.groups);
    assert_eq!(blocked[0].status, AgentStatus::Blocked);
    let error = blocked[0].error.as_deref().unwrap_or_default();
    assert!(error.contains(WORDS), "the provider's words: {error}");
    let other = report
        .groups
        .iter()
        .find(|g| g.files.iter().any(|f| f.starts_with("app/")))
        .unwrap();
    assert_eq!(other.status, AgentStatus::Complete);
    assert!(!report.complete);
    assert!(
        report
            .incomplete_reasons
            .iter()
            .any(|r| r.contains("1 group blocked")),
        "{:?}",
        report.incomplete_reasons
    );
    assert!(
        report
            .coverage
            .failed
            .iter()
            .any(|f| f.path == "exploit/payload.py"),
        "a blocked group's files are not reviewed"
    );
    assert!(
        !report
            .coverage
            .reviewed
            .contains(&"exploit/payload.py".to_string())
    );
    // Asked twice: the task, then once more with the refusal quoted back
    // and restated as a defensive review; never a third time.
    let asked = refused_requests(mock);
    assert_eq!(asked.len(), 2, "{asked:?}");
    let second = asked[1].to_string();
    assert!(second.contains("defensive review"), "{second}");
    assert!(second.contains(WORDS), "{second}");
}

#[test]
fn a_group_the_openai_model_refuses_twice_is_blocked_and_the_run_incomplete() {
    let repo = repo();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockModel::openai(refusing(false)));
    let out = scan(repo.path(), &mock.base_url(), "openai");
    assert_eq!(out.status.code(), Some(exit::INCOMPLETE), "{out:?}");
    let report = report_of(&out);
    blocked_checks(&report, &mock);

    // Every format lists the blocked group with the provider's words.
    let markdown = report.render(Format::Md).unwrap();
    assert!(markdown.contains("## Blocked groups"), "{markdown}");
    assert!(markdown.contains(WORDS), "{markdown}");
    assert!(!markdown.contains("## Failed groups"), "{markdown}");
    let sarif = report.render(Format::Sarif).unwrap();
    assert!(sarif.contains("\"blocked_group\""), "{sarif}");
    assert!(sarif.contains("I can't help"), "{sarif}");
    let github = report.render(Format::Github).unwrap();
    assert!(
        github.contains("title=fanscan%3A blocked group") && github.contains("I can't help"),
        "{github}"
    );
    let html = report.render(Format::Html).unwrap();
    assert!(html.contains("blocked") && html.contains("help with analysing"));
}

#[test]
fn a_group_the_anthropic_model_refuses_twice_is_blocked_and_the_run_incomplete() {
    let repo = repo();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockModel::anthropic(refusing(true)));
    let out = scan(repo.path(), &mock.base_url(), "anthropic");
    assert_eq!(out.status.code(), Some(exit::INCOMPLETE), "{out:?}");
    blocked_checks(&report_of(&out), &mock);
}

#[test]
fn a_model_that_refuses_once_and_then_reviews_completes_the_group() {
    let repo = repo();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockModel::openai(Box::new(|body, _| {
        let text = body.to_string();
        let answer = if is_reduce(body) {
            reducer_turn()
        } else if task(body).contains(MARKER) && !text.contains("defensive review") {
            openai_refusal()
        } else {
            findings_turn(json!([]))
        };
        ResponseTemplate::new(200).set_body_json(answer)
    })));
    let out = scan(repo.path(), &mock.base_url(), "openai");
    assert_eq!(out.status.code(), Some(exit::OK), "{out:?}");
    let report = report_of(&out);
    assert!(report.complete, "{:?}", report.incomplete_reasons);
    assert!(
        report
            .groups
            .iter()
            .all(|g| g.status == AgentStatus::Complete)
    );
    assert!(
        report
            .coverage
            .reviewed
            .contains(&"exploit/payload.py".to_string())
    );
}

#[test]
fn a_refused_challenge_is_no_verdict_and_a_refused_reducer_is_counted() {
    let repo = Repo::new(&[(
        "app/run.py",
        "import os\ndef handler(request):\n    os.system(request.args['cmd'])\n",
    )]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockModel::openai(Box::new(|body, _| {
        let task = task(body);
        let answer = if task.starts_with("TASK: challenge") || is_reduce(body) {
            openai_refusal()
        } else {
            findings_turn(json!([{"path": "app/run.py", "line": 3, "severity": "high",
                "title": "command injection", "detail": "request input reaches a shell",
                "evidence": "os.system(request.args['cmd'])", "cwe": 78}]))
        };
        ResponseTemplate::new(200).set_body_json(answer)
    })));
    let out = scan(repo.path(), &mock.base_url(), "openai");
    // The finding is never refuted by a refusal: it stays in the gate.
    assert_eq!(out.status.code(), Some(exit::GATE_FAILED), "{out:?}");
    let report = report_of(&out);
    assert_eq!(report.findings.len(), 1, "{:?}", report.findings);
    assert!(report.refuted.is_empty());
    let challenge = report.findings[0].challenge.as_ref().unwrap();
    assert_eq!(challenge.stance, Stance::NoVerdict, "{challenge:?}");
    assert!(challenge.reason.contains(WORDS), "{challenge:?}");
    assert!(
        report
            .summary
            .starts_with("Counted summary: the reducer model refused"),
        "{}",
        report.summary
    );
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("the reducer model refused")),
        "{:?}",
        report.notes
    );
}
