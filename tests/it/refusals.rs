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

/// Refuses the marked group on the run's model `m`; the fallback model
/// answers it when `fallback_answers`.
fn refusing_but_the_fallback(fallback_answers: bool) -> Behaviour {
    Box::new(move |body, _| {
        let on_fallback = body["model"] == "fb";
        let refused = task(body).contains(MARKER) && !(on_fallback && fallback_answers);
        let answer = if refused {
            openai_refusal()
        } else if is_reduce(body) {
            reducer_turn()
        } else {
            findings_turn(json!([]))
        };
        ResponseTemplate::new(200).set_body_json(answer)
    })
}

#[test]
fn a_blocked_group_is_sent_once_to_the_fallback_model_and_the_report_says_it_answered() {
    let repo = repo();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockModel::openai(refusing_but_the_fallback(true)));
    let out = fanscan(&[
        "scan",
        repo.path().to_str().unwrap(),
        "--format",
        "json",
        "--quiet",
        "--no-store",
        "--provider",
        "openai",
        "--base-url",
        &mock.base_url(),
        "--model",
        "m",
        "--group-tokens",
        "100",
        "--fallback-model",
        "fb",
    ]);
    assert_eq!(out.status.code(), Some(exit::OK), "{out:?}");
    let report = report_of(&out);
    assert!(report.complete, "{:?}", report.incomplete_reasons);
    let answered = report
        .groups
        .iter()
        .find(|g| g.files.iter().any(|f| f.starts_with("exploit/")))
        .unwrap();
    assert_eq!(answered.status, AgentStatus::Complete);
    assert_eq!(answered.fallback.as_deref(), Some("fb"));
    // Both tries are counted: two refused calls on `m`, then the
    // fallback's answer and its summary.
    let on = |model: &str| {
        refused_requests(&mock)
            .iter()
            .filter(|b| b["model"] == model)
            .count()
    };
    assert_eq!(on("m"), 2);
    assert!(on("fb") >= 1);
    assert_eq!(answered.rounds as usize, on("m") + on("fb"));
    // The group the run's model answered never went to the fallback.
    let other = report
        .groups
        .iter()
        .find(|g| g.files.iter().any(|f| f.starts_with("app/")))
        .unwrap();
    assert_eq!(other.fallback, None);
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("the fallback model fb answered 1 group")),
        "{:?}",
        report.notes
    );
    let markdown = report.render(Format::Md).unwrap();
    assert!(
        markdown.contains("## Answered by the fallback model"),
        "{markdown}"
    );
}

#[test]
fn a_group_the_fallback_model_refuses_too_stays_blocked_with_both_models_words() {
    let repo = repo();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockModel::openai(refusing_but_the_fallback(false)));
    let out = fanscan(&[
        "scan",
        repo.path().to_str().unwrap(),
        "--format",
        "json",
        "--quiet",
        "--no-store",
        "--provider",
        "openai",
        "--base-url",
        &mock.base_url(),
        "--model",
        "m",
        "--group-tokens",
        "100",
        "--fallback-model",
        "fb",
    ]);
    assert_eq!(out.status.code(), Some(exit::INCOMPLETE), "{out:?}");
    let report = report_of(&out);
    let blocked = report
        .groups
        .iter()
        .find(|g| g.status == AgentStatus::Blocked)
        .unwrap();
    assert_eq!(blocked.fallback.as_deref(), Some("fb"));
    let error = blocked.error.as_deref().unwrap();
    assert!(
        error.starts_with("m: ") && error.contains("the fallback model fb too"),
        "{error}"
    );
    // Sent once to the fallback (its own two tries), never more.
    assert_eq!(refused_requests(&mock).len(), 4);
}

#[test]
fn a_fallback_model_with_the_offline_engine_is_a_setup_error() {
    let repo = repo();
    let out = fanscan(&[
        "scan",
        repo.path().to_str().unwrap(),
        "--quiet",
        "--no-store",
        "--fallback-model",
        "fb",
    ]);
    assert_eq!(out.status.code(), Some(exit::USAGE), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("fallback_model") && stderr.contains("--provider openai or anthropic"),
        "{stderr}"
    );
}

/// An OpenAI stream whose answer is a refusal (`delta.refusal`).
fn refusal_stream() -> ResponseTemplate {
    let mut out = String::new();
    for chunk in [
        json!({"choices": [{"index": 0, "delta": {"refusal": "I can't help "}, "finish_reason": null}]}),
        json!({"choices": [{"index": 0, "delta": {"refusal": "with analysing malicious code."}, "finish_reason": null}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        json!({"choices": [], "usage": {"prompt_tokens": 70, "completion_tokens": 7}}),
    ] {
        out.push_str(&format!("data: {chunk}\n\n"));
    }
    out.push_str("data: [DONE]\n\n");
    ResponseTemplate::new(200).set_body_raw(out, "text/event-stream")
}

#[test]
fn a_streamed_refusal_of_the_lead_is_asked_once_more_and_then_ends_the_answer_incomplete() {
    let repo = repo();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(MockModel::openai(Box::new(|body, _| {
        assert_eq!(body["stream"], true, "the lead streams");
        refusal_stream()
    })));
    let out = fanscan(&[
        "ask",
        "where does input reach a shell?",
        repo.path().to_str().unwrap(),
        "--provider",
        "openai",
        "--base-url",
        &mock.base_url(),
        "--model",
        "m",
    ]);
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(exit::INCOMPLETE), "{all}");
    assert!(all.contains("blocked"), "{all}");
    assert!(all.contains(WORDS), "{all}");
    let asked = mock.requests();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert!(asked[1].raw.contains("defensive review"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_in_a_batch_line_blocks_its_group_like_a_synchronous_one() {
    use crate::common::batch::{BatchServer, Faults};
    let repo = repo();
    let server = BatchServer::openai(
        Box::new(|body: &Value| {
            if task(body).contains(MARKER) {
                openai_refusal()
            } else if is_reduce(body) {
                reducer_turn()
            } else {
                findings_turn(json!([]))
            }
        }),
        Faults::default(),
    )
    .await;
    let provider = fanscan::ProviderArgs {
        provider: Some(fanscan::ProviderKind::Openai),
        model: Some("m".into()),
        base_url: Some(server.base_url(false)),
        timeout: Some(10),
        ..fanscan::ProviderArgs::default()
    };
    let scan = fanscan::ScanArgs {
        group_tokens: Some(100),
        batch: true,
        batch_poll: Some(0.02),
        no_store: true,
        ..fanscan::ScanArgs::default()
    };
    let settings =
        fanscan::Settings::resolve(repo.path(), &provider, &scan, None, &|_| None).unwrap();
    let ctx = fanscan::Context::new(settings).unwrap();
    let report = fanscan::scan(&ctx, &fanscan::Ui::hidden()).await.unwrap();
    let blocked = report
        .groups
        .iter()
        .find(|g| g.files.iter().any(|f| f.starts_with("exploit/")))
        .unwrap();
    assert_eq!(blocked.status, AgentStatus::Blocked, "{:?}", report.groups);
    assert!(blocked.error.as_deref().unwrap().contains(WORDS));
    assert!(!report.complete);
    assert_eq!(report.exit_code(), exit::INCOMPLETE);
    // The refused line was asked once more in a later round, restated.
    let refused: Vec<Value> = server
        .batches()
        .into_iter()
        .flat_map(|b| b.lines.into_iter().map(|(_, body)| body))
        .filter(|body| task(body).contains(MARKER))
        .collect();
    assert_eq!(refused.len(), 2, "{refused:?}");
    assert!(refused[1].to_string().contains("defensive review"));
}
