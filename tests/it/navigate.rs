//! `definition` and `references` through the real agent loop and both wire
//! formats: a model that asks for a name defined in another file gets its
//! source, one that asks for a function's callers gets each calling line
//! with the function it is in; a name defined twice gives both, a name in
//! a file the scan leaves out or nowhere gives none, and a long definition
//! is cut within the tool output limit.

use serde_json::{Value, json};
use wiremock::ResponseTemplate;

use crate::common::{MockModel, Repo, findings_turn, tool_turn};
use fanscan::{ProviderKind, ScanArgs};

/// A view that calls a query function defined in two other files, a
/// helper in a file the scan excludes, and a long function.
fn repo() -> Repo {
    let long: String = (0..3_000).map(|i| format!("    v{i} = {i}\n")).collect();
    Repo::new(&[
        (
            "app/views.py",
            "from data.db import run_query\n\ndef handle(request):\n    q = request.args[\"q\"]\n    hidden_fn(q)\n    return run_query(\"SELECT \" + q)\n",
        ),
        (
            "data/db.py",
            "def run_query(sql):\n    return cursor.execute(sql)\n",
        ),
        (
            "legacy/db2.py",
            "def run_query(sql, *args):\n    return conn.execute(sql, args)\n",
        ),
        ("vendor/hidden.py", "def hidden_fn(x):\n    return x\n"),
        ("big/long.py", &format!("def long_one():\n{long}")),
    ])
}

fn args() -> ScanArgs {
    ScanArgs {
        jobs: Some(1),
        group_tokens: Some(100),
        exclude: vec!["vendor/**".into()],
        no_store: true,
        ..ScanArgs::default()
    }
}

/// The calls the model makes on the first turn of the group holding
/// `app/views.py`: (id, tool, arguments).
const CALLS: &[(&str, &str, &str)] = &[
    ("c1", "definition", r#"{"name": "run_query"}"#),
    ("c2", "references", r#"{"name": "run_query"}"#),
    ("c3", "definition", r#"{"name": "hidden_fn"}"#),
    ("c4", "definition", r#"{"name": "nowhere"}"#),
    ("c5", "definition", r#"{"name": "long_one"}"#),
    (
        "c6",
        "definition",
        r#"{"name": "run_query", "path": "legacy"}"#,
    ),
];

fn task_of(body: &Value, anthropic: bool) -> String {
    let Some(first) = body["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "user"))
    else {
        return String::new();
    };
    match anthropic {
        true => first["content"][0]["text"].as_str(),
        false => first["content"].as_str(),
    }
    .unwrap_or_default()
    .to_string()
}

/// Tool results of `body` by call id, in either wire format.
fn results(body: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for m in body["messages"].as_array().into_iter().flatten() {
        if m["role"] == "tool" {
            out.push((
                m["tool_call_id"].as_str().unwrap().to_string(),
                m["content"].as_str().unwrap().to_string(),
            ));
        }
        for b in m["content"].as_array().into_iter().flatten() {
            if b["type"] == "tool_result" {
                out.push((
                    b["tool_use_id"].as_str().unwrap().to_string(),
                    crate::common::content_text(&b["content"]),
                ));
            }
        }
    }
    out
}

fn behaviour(anthropic: bool) -> crate::common::Behaviour {
    Box::new(move |body: &Value, _| {
        let task = task_of(body, anthropic);
        let answered = !results(body).is_empty();
        let forced = body["tool_choice"] == "none"
            || body["tool_choice"]["type"] == "tool"
            || body["tool_choice"]["type"] == "none";
        let calls: &[(&str, &str, &str)] = match task.contains("- app/views.py (") {
            true if !answered && !forced => CALLS,
            // Other groups read their one file (a model that read nothing
            // reviewed nothing).
            _ if !answered && !forced => &[],
            _ => &[],
        };
        let files: Vec<String> = task
            .lines()
            .filter_map(|l| l.strip_prefix("- "))
            .filter_map(|l| l.rsplit_once(" (").map(|(p, _)| p.to_string()))
            .filter(|p| !p.contains(' '))
            .collect();
        let reads: Vec<(String, String)> = files
            .iter()
            .enumerate()
            .map(|(i, f)| (format!("r{i}"), json!({"path": f}).to_string()))
            .collect();
        let mut all: Vec<(&str, &str, &str)> = calls.to_vec();
        if !answered && !forced {
            all.extend(
                reads
                    .iter()
                    .map(|(id, a)| (id.as_str(), "read_file", a.as_str())),
            );
        }
        let reply = match (anthropic, all.is_empty()) {
            (false, false) => tool_turn(&all),
            (false, true) => findings_turn(json!([])),
            (true, false) => {
                let content: Vec<Value> = all
                    .iter()
                    .map(|(id, name, a)| {
                        json!({"type": "tool_use", "id": id, "name": name,
                               "input": serde_json::from_str::<Value>(a).unwrap()})
                    })
                    .collect();
                json!({"type": "message", "role": "assistant", "content": content, "stop_reason": "tool_use",
                       "usage": {"input_tokens": 50, "output_tokens": 5}})
            }
            (true, true) if body["tool_choice"]["type"] == "tool" => {
                json!({"type": "message", "role": "assistant", "stop_reason": "tool_use",
                       "content": [{"type": "tool_use", "id": "toolu_r", "name": body["tool_choice"]["name"],
                                    "input": {"summary": "Nothing found.", "findings": []}}],
                       "usage": {"input_tokens": 50, "output_tokens": 5}})
            }
            (true, true) => {
                json!({"type": "message", "role": "assistant", "stop_reason": "end_turn",
                "content": [{"type": "text", "text": "Nothing found.\n```json\n{\"findings\": []}\n```\n[TASK_COMPLETE]"}],
                "usage": {"input_tokens": 50, "output_tokens": 5}})
            }
        };
        ResponseTemplate::new(200).set_body_json(reply)
    })
}

async fn navigate(anthropic: bool) {
    let repo = repo();
    let (mock, kind) = match anthropic {
        true => (
            MockModel::anthropic(behaviour(true)).await,
            ProviderKind::Anthropic,
        ),
        false => (
            MockModel::openai(behaviour(false)).await,
            ProviderKind::Openai,
        ),
    };
    let settings = mock.settings_for(kind, repo.path(), &args());
    let ctx = fanscan::Context::new(settings).unwrap();
    let report = fanscan::scan(&ctx, &fanscan::Ui::hidden()).await.unwrap();
    assert!(report.complete, "{:?}", report.incomplete_reasons);

    let requests = mock.requests();
    // The views group's task names what its file uses from elsewhere.
    let first = requests
        .iter()
        .find(|s| task_of(&s.body, anthropic).contains("- app/views.py ("))
        .expect("the views group ran");
    let task = task_of(&first.body, anthropic);
    assert!(
        task.contains("Names these files use that other files define")
            && task.contains("- run_query (data/db.py, legacy/db2.py)"),
        "{task}"
    );
    assert!(
        !task.contains("hidden_fn ("),
        "an excluded file defines nothing: {task}"
    );
    let tools: Vec<String> = match anthropic {
        true => first.body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect(),
        false => first.body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap().to_string())
            .collect(),
    };
    assert!(
        tools.contains(&"definition".to_string()) && tools.contains(&"references".to_string()),
        "{tools:?}"
    );

    let answered = requests
        .iter()
        .map(|s| results(&s.body))
        .find(|r| r.iter().any(|(id, _)| id == "c1"))
        .expect("the tools were answered");
    let of = |id: &str| {
        answered
            .iter()
            .find(|(i, _)| i == id)
            .map(|(_, t)| t.clone())
            .unwrap()
    };
    let definition = of("c1");
    assert!(
        definition.starts_with("2 definitions of \"run_query\""),
        "{definition}"
    );
    assert!(
        definition.contains("1\tdef run_query(sql):"),
        "{definition}"
    );
    assert!(
        definition.contains("1\tdef run_query(sql, *args):"),
        "{definition}"
    );
    let references = of("c2");
    assert!(
        references
            .contains("app/views.py:6: return run_query(\"SELECT \" + q)    [call in handle]"),
        "{references}"
    );
    assert!(
        of("c3").starts_with("no definition of \"hidden_fn\""),
        "{}",
        of("c3")
    );
    assert!(
        of("c4").starts_with("no definition of \"nowhere\""),
        "{}",
        of("c4")
    );
    let long = of("c5");
    assert!(long.len() < 33 * 1024, "{}", long.len());
    assert!(long.contains("call read_file with offset="), "{long}");
    let narrowed = of("c6");
    assert!(
        narrowed.starts_with("1 definition of \"run_query\"") && narrowed.contains("legacy/db2.py"),
        "{narrowed}"
    );

    // Counted with the group's tool calls.
    let views = report
        .groups
        .iter()
        .find(|g| g.files.iter().any(|f| f == "app/views.py"))
        .unwrap();
    assert!(views.tool_calls >= CALLS.len() as u32, "{views:?}");
}

#[tokio::test]
async fn definition_and_references_through_chat_completions() {
    navigate(false).await;
}

#[tokio::test]
async fn definition_and_references_through_messages() {
    navigate(true).await;
}
