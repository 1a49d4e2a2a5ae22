//! `fanscan ask`: the lead agent, its `task` tool and the sub-agents it
//! starts, against a scripted model over real HTTP; the offline lead; the
//! command's output.

use serde_json::{Value, json};
use wiremock::ResponseTemplate;

use fanscan::{Answer, CitationStatus, Context, ScanArgs, Ui};

use crate::common::{MockModel, Repo, fanscan, findings_turn, text_turn, tool_turn};

/// Placed in the question: it must never reach a sub-agent.
const MARKER: &str = "QUESTION-MARKER-7f3a";

fn repo() -> Repo {
    Repo::new(&[
        (
            "web/app.py",
            "import os\nos.system(\"ls \" + input())\nprint('done')\n",
        ),
        (
            "src/main.rs",
            "fn main() {\n    let x: Option<u32> = None;\n    x.unwrap();\n}\n",
        ),
    ])
}

/// Text of a Chat Completions message (a string or an array of parts).
fn text_of(message: &Value) -> String {
    crate::common::content_text(&message["content"])
}

fn messages(body: &Value) -> Vec<Value> {
    body["messages"].as_array().cloned().unwrap_or_default()
}

fn system_of(body: &Value) -> String {
    messages(body).first().map(text_of).unwrap_or_default()
}

fn is_lead(body: &Value) -> bool {
    system_of(body).starts_with("You are the lead engineer")
}

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn has_tool_results(body: &Value) -> bool {
    messages(body).iter().any(|m| m["role"] == "tool")
}

fn task_call(id: &str, agent: &str, description: &str, prompt: &str) -> (String, String) {
    (
        id.to_string(),
        json!({"agent": agent, "description": description, "prompt": prompt}).to_string(),
    )
}

fn task_turn(calls: &[(String, String)]) -> Value {
    let refs: Vec<(&str, &str, &str)> = calls
        .iter()
        .map(|(id, args)| (id.as_str(), "task", args.as_str()))
        .collect();
    tool_turn(&refs)
}

async fn ask(mock: &MockModel, repo: &Repo, question: &str) -> Answer {
    let ctx = Context::new(mock.settings(repo.path(), &ScanArgs::default())).unwrap();
    ask_with(&ctx, question).await
}

async fn ask_with(ctx: &Context, question: &str) -> Answer {
    let ui = Ui::hidden();
    fanscan::ask(ctx, &ui, question, false).await.unwrap()
}

/// The lead streams: a turn given as a Chat Completions JSON answer is
/// sent as SSE when the request asks for a stream, as JSON otherwise.
fn reply(body: &Value, turn: Value) -> ResponseTemplate {
    if body["stream"] != true {
        return ResponseTemplate::new(200).set_body_json(turn);
    }
    let message = &turn["choices"][0]["message"];
    let mut delta = json!({});
    if let Some(text) = message["content"].as_str() {
        delta["content"] = json!(text);
    }
    if let Some(calls) = message["tool_calls"].as_array() {
        let indexed: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let mut c = c.clone();
                c["index"] = json!(i);
                c
            })
            .collect();
        delta["tool_calls"] = json!(indexed);
    }
    let finish = turn["choices"][0]["finish_reason"].clone();
    let mut out = String::new();
    for chunk in [
        json!({"choices": [{"index": 0, "delta": delta, "finish_reason": null}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}),
        json!({"choices": [], "usage": turn["usage"]}),
    ] {
        out.push_str(&format!("data: {chunk}\n\n"));
    }
    out.push_str("data: [DONE]\n\n");
    sse(out)
}

/// [`reply`] for an Anthropic Messages answer.
fn reply_anthropic(body: &Value, message: Value) -> ResponseTemplate {
    if body["stream"] != true {
        return ResponseTemplate::new(200).set_body_json(message);
    }
    let event = |name: &str, data: Value| format!("event: {name}\ndata: {data}\n\n");
    let mut out = event(
        "message_start",
        json!({"type": "message_start", "message": {"usage": {"input_tokens": message["usage"]["input_tokens"], "output_tokens": 0}}}),
    );
    for (i, block) in message["content"].as_array().unwrap().iter().enumerate() {
        if block["type"] == "text" {
            out.push_str(&event("content_block_start", json!({"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}})));
            out.push_str(&event("content_block_delta", json!({"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": block["text"]}})));
        } else {
            out.push_str(&event("content_block_start", json!({"type": "content_block_start", "index": i, "content_block": {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}})));
            out.push_str(&event("content_block_delta", json!({"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": block["input"].to_string()}})));
        }
        out.push_str(&event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": i}),
        ));
    }
    out.push_str(&event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": message["stop_reason"]}, "usage": {"output_tokens": message["usage"]["output_tokens"]}}),
    ));
    out.push_str(&event("message_stop", json!({"type": "message_stop"})));
    sse(out)
}

/// The finding a sub-agent reports for `web/app.py`, quoting the line.
fn shell_finding() -> Value {
    findings_turn(json!([{"path": "web/app.py", "line": 2, "severity": "high",
        "title": "shell command built from input", "detail": "d",
        "evidence": "os.system(\"ls \" + input())"}]))
}

#[tokio::test(flavor = "multi_thread")]
async fn the_lead_delegates_in_fresh_contexts_concurrently_and_its_citations_are_checked() {
    let repo = repo();
    let question = format!("Where does user input reach a shell? {MARKER}");
    // The sub-agents' first requests are held until both have arrived: they
    // can only get through if the two tasks run at once.
    let first_turn_of_a_task = |body: &Value| !is_lead(body) && messages(body).len() == 2;
    let mock = MockModel::openai_holding(Box::new(|body, _| {
        if is_lead(body) {
            if !has_tool_results(body) {
                return reply(body, task_turn(&[
                    task_call(
                        "t1",
                        "security",
                        "shell injection in web/",
                        "Find shell commands built from input in web/. SUB-PROMPT-A",
                    ),
                    task_call(
                        "t2",
                        "auditor",
                        "panics in src/",
                        "Find panics in src/. SUB-PROMPT-B",
                    ),
                ]));
            }
            return reply(body, text_turn(
                "Input reaches a shell at web/app.py:2. Also see nope/x.rs:5 and src/main.rs:99.",
            ));
        }
        reply(body, shell_finding())
    }), 2, first_turn_of_a_task)
    .await;
    let answer = ask(&mock, &repo, &question).await;
    let requests = mock.requests();

    // The lead's first request: its system prompt and the question, only.
    let lead_first = &requests[0].body;
    assert!(is_lead(lead_first));
    let first_messages = messages(lead_first);
    assert_eq!(first_messages.len(), 2, "{first_messages:?}");
    assert_eq!(first_messages[1]["role"], "user");
    assert_eq!(text_of(&first_messages[1]), question);
    let lead_tools = tool_names(lead_first);
    assert!(lead_tools.contains(&"task".to_string()), "{lead_tools:?}");
    let task_tool = lead_first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "task")
        .unwrap();
    let description = task_tool["function"]["description"].as_str().unwrap();
    assert!(description.contains("- auditor: Reviews one group of files"));
    assert!(description.contains("- security: Security specialist"));
    assert!(!description.contains("- lead:") && !description.contains("- planner:"));

    // Each sub-agent: its own system prompt and the lead's prompt, nothing
    // of the lead's conversation, and never the task tool.
    let subs: Vec<_> = requests.iter().filter(|s| !is_lead(&s.body)).collect();
    assert!(!subs.is_empty());
    for seen in &subs {
        assert!(
            !seen.raw.contains(MARKER),
            "the question leaked: {}",
            seen.raw
        );
        assert!(!tool_names(&seen.body).contains(&"task".to_string()));
    }
    let firsts: Vec<_> = subs
        .iter()
        .filter(|s| messages(&s.body).len() == 2)
        .collect();
    assert_eq!(firsts.len(), 2, "one fresh context per task");
    let security = firsts
        .iter()
        .find(|s| text_of(&messages(&s.body)[1]).contains("SUB-PROMPT-A"))
        .unwrap();
    assert!(system_of(&security.body).starts_with("You are an application security reviewer"));
    assert!(!text_of(&messages(&security.body)[1]).contains("SUB-PROMPT-B"));
    let auditor = firsts
        .iter()
        .find(|s| text_of(&messages(&s.body)[1]).contains("SUB-PROMPT-B"))
        .unwrap();
    assert!(system_of(&auditor.body).starts_with("You are a senior code auditor"));

    // Both were in flight together: each first request was held until the
    // other had arrived.
    assert!(mock.hold_met(), "the two tasks did not run at once");

    // The lead got back only the summaries, never a transcript.
    let lead_second = requests
        .iter()
        .find(|s| is_lead(&s.body) && has_tool_results(&s.body))
        .unwrap();
    let results: Vec<Value> = messages(&lead_second.body)
        .into_iter()
        .filter(|m| m["role"] == "tool")
        .collect();
    assert_eq!(results.len(), 2);
    for r in &results {
        assert!(text_of(r).contains("shell command built from input"), "{r}");
    }
    assert!(!lead_second.raw.contains("You are a senior code auditor"));
    assert!(!lead_second.raw.contains("Give the complete summary"));

    // What ask gives.
    assert_eq!(answer.status, fanscan::AgentStatus::Complete);
    assert!(answer.complete);
    assert_eq!(answer.tasks.len(), 2);
    assert_eq!(answer.tasks[0].agent, "security");
    assert_eq!(answer.tasks[0].description, "shell injection in web/");
    assert_eq!(answer.tasks[1].agent, "auditor");
    assert_eq!(answer.lead.rounds, 2);
    let cited: Vec<(&str, u32, CitationStatus)> = answer
        .citations
        .iter()
        .map(|c| (c.path.as_str(), c.line, c.status))
        .collect();
    assert_eq!(
        cited,
        vec![
            ("web/app.py", 2, CitationStatus::Verified),
            ("nope/x.rs", 5, CitationStatus::Unverifiable),
            ("src/main.rs", 99, CitationStatus::Unverifiable),
        ]
    );
    let text = answer.render_text();
    assert!(
        text.contains("nope/x.rs:5  UNVERIFIABLE: no such file"),
        "{text}"
    );
    assert!(text.contains("src/main.rs:99  UNVERIFIABLE: no line 99: the file has 4 lines"));
    // Totals are the sum of what was spent.
    let task_tokens: u64 = answer.tasks.iter().map(|t| t.usage.total()).sum();
    assert_eq!(
        answer.totals.usage.total(),
        task_tokens + answer.lead.usage.total()
    );
    assert_eq!(answer.totals.requests, requests.len() as u64);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sub_agent_that_calls_task_gets_an_error_and_nothing_nests() {
    let repo = repo();
    let mock = MockModel::openai(Box::new(|body, _| {
        if is_lead(body) {
            if !has_tool_results(body) {
                return reply(
                    body,
                    task_turn(&[task_call("t1", "auditor", "look around", "Audit src/.")]),
                );
            }
            return reply(body, text_turn("Nothing found."));
        }
        if messages(body).len() == 2 {
            // The sub-agent tries to delegate although it was not offered task.
            let nested =
                json!({"agent": "auditor", "description": "nest", "prompt": "NESTED"}).to_string();
            return reply(body, tool_turn(&[("n1", "task", nested.as_str())]));
        }
        reply(body, findings_turn(json!([])))
    }))
    .await;
    let answer = ask(&mock, &repo, "anything?").await;
    let requests = mock.requests();
    let subs: Vec<_> = requests.iter().filter(|s| !is_lead(&s.body)).collect();
    // One sub-agent context only: its first turn, the error turn, the summary.
    assert_eq!(
        subs.iter().filter(|s| messages(&s.body).len() == 2).count(),
        1
    );
    assert!(
        requests
            .iter()
            .all(|s| !s.raw.contains("\"NESTED\"") || !is_lead(&s.body))
    );
    let second = subs
        .iter()
        .find(|s| has_tool_results(&s.body))
        .expect("the sub-agent's second turn");
    let result = messages(&second.body)
        .into_iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    assert!(
        text_of(&result).contains("tool \"task\" is not available to this agent"),
        "{result}"
    );
    assert_eq!(subs.len(), 3);
    assert_eq!(answer.tasks.len(), 1);
    assert_eq!(answer.tasks[0].tool_calls, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_agent_is_a_tool_error_listing_the_valid_names() {
    let repo = repo();
    let mock = MockModel::openai(Box::new(|body, _| {
        if !has_tool_results(body) {
            return reply(
                body,
                task_turn(&[
                    task_call("t1", "wizard", "magic", "Do magic."),
                    task_call("t2", "planner", "plan", "Plan."),
                ]),
            );
        }
        reply(body, text_turn("I could not delegate."))
    }))
    .await;
    let answer = ask(&mock, &repo, "anything?").await;
    let requests = mock.requests();
    assert_eq!(requests.len(), 2, "no sub-agent ran");
    let results: Vec<String> = messages(&requests[1].body)
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(text_of)
        .collect();
    assert_eq!(
        results[0],
        "error: unknown agent \"wizard\" for task; the agents you can delegate to are: auditor, security"
    );
    assert!(
        results[1].contains("unknown agent \"planner\""),
        "{}",
        results[1]
    );
    assert!(answer.tasks.is_empty());
    assert_eq!(answer.lead.tool_errors, 2);
    assert_eq!(answer.answer, "I could not delegate.");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_lead_stops_at_max_rounds_and_still_answers() {
    let repo = repo();
    repo.write(
        ".fanscan/agents/lead.md",
        "---\nname: lead\ndescription: Short lead.\ntools: [grep]\nmax_rounds: 1\n---\nYou are the lead engineer, briefly.\n",
    );
    let mock = MockModel::openai(Box::new(|body, _| {
        if body["tool_choice"] == "none" {
            return reply(body, text_turn("Forced answer."));
        }
        let args = json!({"pattern": "unwrap"}).to_string();
        reply(body, tool_turn(&[("g1", "grep", args.as_str())]))
    }))
    .await;
    let answer = ask(&mock, &repo, "anything?").await;
    assert_eq!(answer.status, fanscan::AgentStatus::MaxRounds);
    assert_eq!(answer.answer, "Forced answer.");
    assert_eq!(answer.lead.rounds, 2);
    assert!(!answer.complete);
    assert_eq!(answer.exit_code(), 3);
    let last = &mock.requests()[1].body;
    assert!(text_of(messages(last).last().unwrap()).contains("your max_rounds is reached"));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_lead_works_over_anthropic_messages() {
    let repo = repo();
    let mock = MockModel::anthropic(Box::new(|body, _| {
        let system = body["system"].as_str().map(str::to_string).unwrap_or_else(|| {
            body["system"][0]["text"].as_str().unwrap_or_default().to_string()
        });
        let has_results = body["messages"].as_array().unwrap().iter().any(|m| {
            m["content"]
                .as_array()
                .is_some_and(|c| c.iter().any(|b| b["type"] == "tool_result"))
        });
        let text = |t: &str| {
            json!({"id": "m", "type": "message", "role": "assistant", "model": "mock-model",
                "content": [{"type": "text", "text": t}], "stop_reason": "end_turn",
                "usage": {"input_tokens": 50, "output_tokens": 5}})
        };
        if system.starts_with("You are the lead engineer") {
            if has_results {
                return reply_anthropic(body, text("See web/app.py:2."));
            }
            return reply_anthropic(body, json!({"id": "m", "type": "message",
                "role": "assistant", "model": "mock-model", "stop_reason": "tool_use",
                "content": [{"type": "tool_use", "id": "tu1", "name": "task",
                    "input": {"agent": "security", "description": "shell", "prompt": "Check web/."}}],
                "usage": {"input_tokens": 50, "output_tokens": 5}}));
        }
        let finding = "Found.\n```json\n{\"findings\": [{\"path\": \"web/app.py\", \"line\": 2, \"severity\": \"high\", \"title\": \"shell\", \"detail\": \"d\", \"evidence\": \"os.system(\\\"ls \\\" + input())\"}]}\n```\n[TASK_COMPLETE]";
        reply_anthropic(body, text(finding))
    }))
    .await;
    let settings = mock.settings_for(
        fanscan::ProviderKind::Anthropic,
        repo.path(),
        &ScanArgs::default(),
    );
    let answer = ask_with(&Context::new(settings).unwrap(), "shell?").await;
    assert!(answer.complete, "{answer:?}");
    assert_eq!(answer.tasks.len(), 1);
    assert_eq!(answer.tasks[0].agent, "security");
    assert_eq!(answer.citations[0].status, CitationStatus::Verified);
}

#[test]
fn an_agent_file_that_lists_task_is_rejected_at_load_with_file_and_line() {
    let repo = repo();
    repo.write(
        ".fanscan/agents/nester.md",
        "---\nname: nester\ndescription: Tries to nest.\ntools: [read_file, task]\n---\nNest.\n",
    );
    let out = fanscan(&["ask", "anything?", repo.path().to_str().unwrap(), "--quiet"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("nester.md:4: tool \"task\" may not be listed"),
        "{stderr}"
    );
}

fn offline_repo() -> Repo {
    Repo::new(&[
        ("web/app.py", "import os\nos.system(\"ls \" + input())\n"),
        (
            "src/main.rs",
            "fn main() {\n    let x: Option<u32> = None;\n    x.unwrap();\n}\n",
        ),
        ("top.py", "eval(input())\n"),
    ])
}

#[test]
fn offline_ask_delegates_one_task_per_directory_and_says_what_it_is() {
    let repo = offline_repo();
    let out = fanscan(&["ask", "where is input run?", repo.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with(
            "This answer is a counted summary from the offline rule engine, not a language model"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("3 verified findings (1 high, 1 medium, 1 low)."),
        "{stdout}"
    );
    assert!(
        stdout.contains("- web/ (1 file): 1 finding (1 high)"),
        "{stdout}"
    );
    assert!(stdout.contains("3 citations checked against the files: 3 verified"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("task-3 auditor (audit web/): complete"),
        "{stderr}"
    );
}

#[test]
fn offline_ask_json() {
    let repo = offline_repo();
    let out = fanscan(&[
        "ask",
        "where is input run?",
        repo.path().to_str().unwrap(),
        "--json",
        "--quiet",
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let value: Value = serde_json::from_slice(&out.stdout).unwrap();
    insta::assert_snapshot!(serde_json::to_string_pretty(&value).unwrap());
}

/// An OpenAI SSE body answering `text` in three chunks, with usage.
fn openai_sse(text: &str) -> String {
    let (a, rest) = text.split_at(text.len() / 3);
    let (b, c) = rest.split_at(rest.len() / 2);
    let mut body = String::new();
    for part in [a, b, c] {
        body.push_str(&format!(
            "data: {}\n\n",
            json!({"choices": [{"index": 0, "delta": {"content": part}, "finish_reason": null}]})
        ));
    }
    body.push_str(&format!(
        "data: {}\n\n",
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    ));
    body.push_str(&format!(
        "data: {}\n\ndata: [DONE]\n\n",
        json!({"choices": [], "usage": {"prompt_tokens": 70, "completion_tokens": 7}})
    ));
    body
}

fn sse(body: String) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")
}

const STREAMED: &str = "Input reaches a shell at web/app.py:2, nowhere else.";

async fn run_binary(args: Vec<String>) -> std::process::Output {
    tokio::task::spawn_blocking(move || {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        fanscan(&refs)
    })
    .await
    .unwrap()
}

fn ask_args(repo: &Repo, mock: &MockModel, provider: &str, extra: &[&str]) -> Vec<String> {
    let base = if provider == "anthropic" {
        mock.server.uri()
    } else {
        mock.base_url()
    };
    let mut args: Vec<String> = [
        "ask",
        "where does input reach a shell?",
        repo.path().to_str().unwrap(),
        "--provider",
        provider,
        "--base-url",
        &base,
        "--model",
        "mock-model",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

#[tokio::test(flavor = "multi_thread")]
async fn the_answer_streams_over_openai_and_a_stream_cut_in_the_middle_is_sent_again() {
    let repo = repo();
    let mock = MockModel::openai(Box::new(|body, index| {
        assert_eq!(body["stream"], true, "the lead streams");
        assert_eq!(body["stream_options"]["include_usage"], true);
        let full = openai_sse(STREAMED);
        if index == 0 {
            // Cut after the first chunk: no [DONE].
            let cut = full.find("\n\n").unwrap() + 2;
            return sse(full[..cut].to_string());
        }
        sse(full)
    }))
    .await;
    let out = run_binary(ask_args(&repo, &mock, "openai", &[])).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(mock.requests().len(), 2, "the cut call was sent again");
    assert!(
        stderr.contains("the answer's stream was cut and is asked again"),
        "{stderr}"
    );
    // The void part, then the whole answer, then its checked citations.
    let (before, after) = stdout.split_once("\n\n").unwrap();
    assert!(STREAMED.starts_with(before.trim()), "{stdout}");
    assert!(after.trim_start().starts_with(STREAMED), "{stdout}");
    assert!(
        stdout.contains("web/app.py:2  unchecked: the line exists"),
        "{stdout}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stream_cut_on_every_attempt_fails_clearly_and_is_never_taken_as_the_answer() {
    let repo = repo();
    let mock = MockModel::openai(Box::new(|_, _| {
        let full = openai_sse(STREAMED);
        let cut = full.find("[DONE]").unwrap() - "data: ".len();
        sse(full[..cut].to_string())
    }))
    .await;
    let out = run_binary(ask_args(
        &repo,
        &mock,
        "openai",
        &["--max-attempts", "2", "--json"],
    ))
    .await;
    assert_eq!(out.status.code(), Some(3));
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["status"], "failed");
    assert_eq!(answer["answer"], "");
    assert!(
        answer["error"]
            .as_str()
            .unwrap()
            .contains("stream was cut after"),
        "{answer}"
    );
    assert_eq!(mock.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_answer_streams_over_anthropic_messages() {
    let repo = repo();
    let mock = MockModel::anthropic(Box::new(|body, _| {
        assert_eq!(body["stream"], true);
        let event = |name: &str, data: Value| format!("event: {name}\ndata: {data}\n\n");
        let mut out = event(
            "message_start",
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 40, "output_tokens": 1}}}),
        );
        out.push_str(&event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ));
        for part in ["Input reaches a shell ", "at web/app.py:2, nowhere else."] {
            out.push_str(&event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": part}}),
            ));
        }
        out.push_str(&event(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 12}}),
        ));
        out.push_str(&event("message_stop", json!({"type": "message_stop"})));
        sse(out)
    }))
    .await;
    let out = run_binary(ask_args(&repo, &mock, "anthropic", &[])).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.starts_with(STREAMED), "{stdout}");
    // --json asks nothing streamed of stdout, and its usage is the stream's.
    let out = run_binary(ask_args(&repo, &mock, "anthropic", &["--json"])).await;
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["answer"], STREAMED);
    assert_eq!(answer["lead"]["usage"]["input_tokens"], 40);
    assert_eq!(answer["lead"]["usage"]["output_tokens"], 12);
}
