//! No prompt lures a model into a read: no example in any request of any
//! stage holds a path-like token (a name with an extension, or with `/`)
//! that is not a file of the repository, and a model that reads every
//! path-like token of its task it was not shown (as small real models do,
//! whether or not the file exists) costs two calls a group: the answer and
//! the forced summary.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use regex::Regex;
use serde_json::{Value, json};
use wiremock::ResponseTemplate;

use fanscan::{Context, FailOn, RunArgs, Ui};

use crate::common::{
    MockModel, Repo, content_text, findings_turn, path_like, reducer_turn, text_turn, tool_turn,
};

#[test]
fn the_detector_finds_paths_and_not_prose() {
    assert_eq!(
        path_like("see path/to/file.ext and lib.rs, e.g. 0.5 or CWE-89."),
        ["lib.rs", "path/to/file.ext"]
    );
    assert!(path_like("read_file. Then `path:line` [TASK_COMPLETE] </file 00ff>").is_empty());
}

/// `text` without its fenced file blocks (repository data, not prompt).
fn without_file_blocks(text: &str) -> String {
    let mut out = String::new();
    let mut inside: Option<String> = None;
    for line in text.lines() {
        match &inside {
            Some(close) => {
                if line.trim_end() == close {
                    inside = None;
                }
            }
            None => {
                if let Some(at) = line.find("boundary=\"")
                    && line.trim_start().starts_with("<file path=")
                {
                    let boundary: String = line[at + "boundary=\"".len()..]
                        .chars()
                        .take_while(|c| *c != '"')
                        .collect();
                    inside = Some(format!("</file {boundary}>"));
                } else {
                    out.push_str(line);
                    out.push('\n');
                }
            }
        }
    }
    out
}

/// Everything of a request a prompt writer wrote: the system and user
/// messages without file blocks, the assistant's own turns left out (the
/// model wrote them), tool results left out (file text), the tool specs
/// and the response schema.
fn prompt_text(body: &Value) -> String {
    let mut out = String::new();
    for m in body["messages"].as_array().into_iter().flatten() {
        if m["role"] == "system" || m["role"] == "user" {
            out.push_str(&without_file_blocks(&content_text(&m["content"])));
            out.push('\n');
        }
    }
    if let Some(tools) = body.get("tools") {
        out.push_str(&tools.to_string());
    }
    if let Some(format) = body.get("response_format") {
        out.push_str(&format.to_string());
    }
    out
}

/// The paths of a task's preloaded file blocks.
fn preloaded(body: &Value) -> BTreeSet<String> {
    let re = Regex::new(r#"<file path="([^"]*)" boundary="#).unwrap();
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "user")
        .flat_map(|m| {
            let text = content_text(&m["content"]);
            re.captures_iter(&text)
                .map(|c| c[1].to_string())
                .collect::<Vec<_>>()
        })
        .collect()
}

fn task_of(body: &Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "user"))
        .map(|m| content_text(&m["content"]))
        .unwrap_or_default()
}

const DB: &str = "import sys\n\ndef find(cur):\n    name = sys.argv[1]\n    cur.execute(\"SELECT * FROM users WHERE name = '\" + name + \"'\")\n";
const SINK: &str = "cur.execute(\"SELECT * FROM users WHERE name = '\" + name + \"'\")";

/// A model that reads every path-like token of its task it was not
/// shown, whether or not the file exists, then reports the SQL line of
/// the file it holds; the skeptic confirms; the reducer summarises.
fn curious(body: &Value) -> Value {
    let task = task_of(body);
    if task.starts_with("TASK: reduce") {
        return reducer_turn();
    }
    if task.starts_with("TASK: challenge") {
        return if body.get("response_format").is_some() {
            text_turn(
                &json!({"verdicts": [{"id": "f1", "verdict": "confirmed", "confidence": 8,
                         "why": "argv reaches the query", "flow": []}]})
                .to_string(),
            )
        } else {
            text_turn("Traced.")
        };
    }
    let answered = body["messages"].as_array().is_some_and(|m| {
        m.iter()
            .any(|m| m["role"] == "tool" || m["role"] == "assistant")
    });
    if !answered && body.get("response_format").is_none() {
        let shown = preloaded(body);
        let wanted: BTreeSet<String> = path_like(&prompt_text(body))
            .into_iter()
            .filter(|p| !shown.contains(p))
            .collect();
        if !wanted.is_empty() {
            let calls: Vec<(String, String)> = wanted
                .iter()
                .enumerate()
                .map(|(i, p)| (format!("c{i}"), json!({"path": p}).to_string()))
                .collect();
            let refs: Vec<(&str, &str, &str)> = calls
                .iter()
                .map(|(id, a)| (id.as_str(), "read_file", a.as_str()))
                .collect();
            return tool_turn(&refs);
        }
    }
    let findings: Vec<Value> = preloaded(body)
        .into_iter()
        .filter(|p| p.ends_with("db.py"))
        .map(|p| {
            json!({"path": p, "line": 5, "severity": "high", "title": "SQL injection",
                   "detail": "argv is concatenated into the query", "evidence": SINK,
                   "rule": "sql-injection", "cwe": "CWE-89"})
        })
        .collect();
    findings_turn(Value::Array(findings))
}

#[tokio::test]
async fn no_prompt_of_any_stage_holds_a_path_like_example_and_a_curious_model_costs_two_calls_a_group()
 {
    let repo = Repo::new(&[
        ("app/db.py", DB),
        (
            "app/util.py",
            "def add(a, b):\n    # Sums two numbers; both come from the caller, never from outside.\n    return a + b\n",
        ),
        (
            "web/views.py",
            "def index():\n    # The landing page: a greeting, no input, no state.\n    return 'hello, and welcome to the landing page of this small service'\n",
        ),
    ]);
    let seen: Arc<Mutex<Vec<Value>>> = Arc::default();
    let answers: Arc<Mutex<String>> = Arc::default();
    let (log, said) = (Arc::clone(&seen), Arc::clone(&answers));
    let mock = MockModel::openai(Box::new(move |body, _| {
        log.lock().unwrap().push(body.clone());
        let answer = curious(body);
        said.lock().unwrap().push_str(&answer.to_string());
        ResponseTemplate::new(200).set_body_json(answer)
    }))
    .await;
    let args = RunArgs {
        gate: fanscan::GateArgs {
            challenge: Some(FailOn::High),
            ..fanscan::GateArgs::default()
        },
        scan: fanscan::ScanArgs {
            // One group a directory, so that there are two.
            group_tokens: Some(100),
            no_store: true,
            ..fanscan::ScanArgs::default()
        },
        ..RunArgs::default()
    };
    let ctx = Context::new(mock.settings_with(repo.path(), args)).unwrap();
    let report = fanscan::scan(&ctx, &Ui::hidden()).await.unwrap();

    let mut bodies: Vec<Value> = seen.lock().unwrap().clone();
    bodies.extend(mock.brief_requests().into_iter().map(|s| s.body));
    let files: BTreeSet<&str> = ["app/db.py", "app/util.py", "web/views.py"].into();
    let stages: BTreeSet<String> = bodies
        .iter()
        .map(|b| task_of(b).lines().next().unwrap_or_default().to_string())
        .collect();
    assert!(
        stages.iter().any(|s| s.starts_with("TASK: challenge"))
            && stages.iter().any(|s| s.starts_with("TASK: reduce"))
            && stages.iter().any(|s| s.starts_with("TASK: audit-group"))
            && !mock.brief_requests().is_empty(),
        "every stage ran: {stages:?}"
    );
    // What the model itself wrote (a finding's code and title, which the
    // skeptic's and the reducer's tasks quote) and the files' text are
    // data, not prompt.
    let data: BTreeSet<String> = path_like(&format!("{}\n{DB}\n", answers.lock().unwrap()))
        .into_iter()
        .collect();
    for body in &bodies {
        let lures: Vec<String> = path_like(&prompt_text(body))
            .into_iter()
            .filter(|t| !files.contains(t.as_str()) && !data.contains(t))
            .filter(|t| !files.iter().any(|f| f.starts_with(&format!("{t}/"))))
            .collect();
        assert!(
            lures.is_empty(),
            "path-like tokens in the prompt of `{}`: {lures:?}",
            task_of(body).lines().next().unwrap_or_default()
        );
    }

    // Two calls a group: the answer and the forced summary.
    let groups = report.groups.len();
    assert!(groups >= 2, "{:?}", report.groups);
    let audits = bodies
        .iter()
        .filter(|b| task_of(b).starts_with("TASK: audit-group"))
        .count();
    assert_eq!(audits, 2 * groups);
    assert!(
        bodies
            .iter()
            .flat_map(|b| b["messages"].as_array().cloned().unwrap_or_default())
            .all(|m| m["role"] != "tool"),
        "no read was made"
    );
    assert_eq!(report.findings.len(), 1, "{:?}", report.findings);
}
