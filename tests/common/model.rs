//! The mock model: an in-process Chat Completions (or Messages) server on
//! 127.0.0.1 that scripts the model's turns and records every request, the
//! turn builders, and a careful auditor to script it with.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use fanscan::{ProviderArgs, ProviderKind, RunArgs, ScanArgs, Settings};

use super::hold::{Hold, front};
use super::run::provider_settings;

/// One recorded request: its JSON body and when it arrived.
#[derive(Clone, Debug)]
pub struct Seen {
    pub body: Value,
    pub raw: String,
    pub at: Instant,
}

/// How the mock model answers: given the request body and its index.
pub type Behaviour = Box<dyn Fn(&Value, usize) -> ResponseTemplate + Send + Sync>;

struct Model {
    behaviour: Behaviour,
    log: Arc<Mutex<Vec<Seen>>>,
    /// The brief agent's requests, answered apart (see [`BRIEF_TEXT`]).
    briefs: Arc<Mutex<Vec<Seen>>>,
    /// How many requests (the brief's aside) have arrived.
    arrived: Arc<tokio::sync::watch::Sender<usize>>,
    anthropic: bool,
    /// What the brief agent is answered ([`BRIEF_TEXT`] unless a test
    /// gives its own).
    brief: String,
}

/// What the mock answers the brief agent, before any scripted behaviour:
/// the brief is a stage of every scan with a model, and the tests of the
/// other stages count and script only their own requests. The brief's
/// own tests read [`MockModel::brief_requests`].
pub const BRIEF_TEXT: &str = "**What it is**: a test repository of the mock model.";

/// Whether `raw` is a request of the brief agent (its system prompt).
fn is_brief(raw: &str) -> bool {
    raw.contains("You write the brief that every auditor")
}

fn is_brief_value(body: &Value) -> bool {
    is_brief(&body.to_string())
}

/// How long [`MockModel::wait_for_requests`] waits before it fails the test.
const GUARD: Duration = Duration::from_secs(30);

impl Respond for Model {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let raw = String::from_utf8_lossy(&request.body).into_owned();
        let body: Value = serde_json::from_str(&raw).unwrap_or(Value::Null);
        if is_brief(&raw) {
            self.briefs.lock().unwrap().push(Seen {
                body,
                raw,
                at: Instant::now(),
            });
            let answer = if self.anthropic {
                json!({"id": "msg_brief", "type": "message", "role": "assistant", "model": "mock-model",
                       "content": [{"type": "text", "text": self.brief}], "stop_reason": "end_turn",
                       "usage": {"input_tokens": 100, "output_tokens": 10}})
            } else {
                text_turn(&self.brief)
            };
            return ResponseTemplate::new(200).set_body_json(answer);
        }
        let index = {
            let mut log = self.log.lock().unwrap();
            log.push(Seen {
                body: body.clone(),
                raw,
                at: Instant::now(),
            });
            log.len() - 1
        };
        self.arrived.send_replace(index + 1);
        (self.behaviour)(&body, index)
    }
}

/// A mock Chat Completions (or Messages) server.
pub struct MockModel {
    pub server: MockServer,
    log: Arc<Mutex<Vec<Seen>>>,
    briefs: Arc<Mutex<Vec<Seen>>>,
    arrived: Arc<tokio::sync::watch::Sender<usize>>,
    /// The holding front the client is pointed at, if any.
    front: Option<(String, Arc<Hold>)>,
}

impl MockModel {
    /// Serves OpenAI Chat Completions at `/v1/chat/completions`.
    pub async fn openai(behaviour: Behaviour) -> Self {
        Self::at("/v1/chat/completions", behaviour, BRIEF_TEXT).await
    }

    /// Serves OpenAI Chat Completions, answering the brief agent `brief`
    /// (an empty one: a model that gave no brief).
    pub async fn openai_with_brief(behaviour: Behaviour, brief: &str) -> Self {
        Self::at("/v1/chat/completions", behaviour, brief).await
    }

    /// Serves Anthropic Messages at `/v1/messages`.
    pub async fn anthropic(behaviour: Behaviour) -> Self {
        Self::at("/v1/messages", behaviour, BRIEF_TEXT).await
    }

    async fn at(route: &str, behaviour: Behaviour, brief: &str) -> Self {
        let server = MockServer::start().await;
        let log = Arc::new(Mutex::new(Vec::new()));
        let briefs = Arc::new(Mutex::new(Vec::new()));
        let arrived = Arc::new(tokio::sync::watch::Sender::new(0));
        Mock::given(method("POST"))
            .and(path(route))
            .respond_with(Model {
                behaviour,
                log: Arc::clone(&log),
                briefs: Arc::clone(&briefs),
                arrived: Arc::clone(&arrived),
                anthropic: route == "/v1/messages",
                brief: brief.to_string(),
            })
            .mount(&server)
            .await;
        Self {
            server,
            log,
            briefs,
            arrived,
            front: None,
        }
    }

    /// Serves OpenAI Chat Completions behind a front that holds every
    /// request `which` picks (the brief agent's never) until `count` of
    /// them have arrived: [`MockModel::hold_met`] then says they were in
    /// flight together.
    pub async fn openai_holding(
        behaviour: Behaviour,
        count: usize,
        which: fn(&Value) -> bool,
    ) -> Self {
        let mut mock = Self::openai(behaviour).await;
        let hold = Hold::new(count, which);
        let upstream = mock.server.address().to_string();
        let address = front(upstream, Arc::clone(&hold), is_brief_value);
        mock.front = Some((address, hold));
        mock
    }

    /// Whether the held requests of [`MockModel::openai_holding`] were all
    /// in flight at once (false without a front).
    pub fn hold_met(&self) -> bool {
        self.front.as_ref().is_some_and(|(_, hold)| hold.met())
    }

    /// Waits until the mock has seen `n` requests (the brief agent's
    /// aside); fails the test if that takes longer than a run could.
    pub async fn wait_for_requests(&self, n: usize) {
        let mut arrived = self.arrived.subscribe();
        let reached = tokio::time::timeout(GUARD, arrived.wait_for(|&seen| seen >= n)).await;
        assert!(
            matches!(reached, Ok(Ok(_))),
            "the mock saw {} of the {n} requests it waited for",
            self.requests().len()
        );
    }

    /// A server answering `turns` in order, then a valid empty report.
    pub async fn scripted(turns: Vec<Value>) -> Self {
        let queue = Mutex::new(VecDeque::from(turns));
        Self::openai(Box::new(move |_, _| {
            let next = queue
                .lock()
                .unwrap()
                .pop_front()
                .unwrap_or_else(|| findings_turn(json!([])));
            ResponseTemplate::new(200).set_body_json(next)
        }))
        .await
    }

    /// Where the client reaches the server: the holding front if there
    /// is one.
    pub fn uri(&self) -> String {
        match &self.front {
            Some((address, _)) => address.clone(),
            None => self.server.uri(),
        }
    }

    pub fn base_url(&self) -> String {
        format!("{}/v1", self.uri())
    }

    /// Every request but the brief agent's.
    pub fn requests(&self) -> Vec<Seen> {
        self.log.lock().unwrap().clone()
    }

    /// The brief agent's requests.
    pub fn brief_requests(&self) -> Vec<Seen> {
        self.briefs.lock().unwrap().clone()
    }

    /// Settings for a run against this server with the OpenAI provider.
    pub fn settings(&self, repo: &Path, scan: &ScanArgs) -> Settings {
        self.settings_for(ProviderKind::Openai, repo, scan)
    }

    pub fn settings_for(&self, kind: ProviderKind, repo: &Path, scan: &ScanArgs) -> Settings {
        let base = match kind {
            ProviderKind::Anthropic => self.uri(),
            _ => self.base_url(),
        };
        provider_settings(kind, &base, 10, repo, scan)
    }

    /// Settings from `args` for a run against this server with the OpenAI
    /// provider: the server's provider, URL and model (unless `args` names
    /// one) over `args.provider`.
    pub fn settings_with(&self, repo: &Path, args: RunArgs) -> Settings {
        let provider = ProviderArgs {
            provider: Some(ProviderKind::Openai),
            model: Some(args.provider.model.unwrap_or_else(|| "mock-model".into())),
            base_url: Some(self.base_url()),
            timeout: Some(args.provider.timeout.unwrap_or(10)),
            ..args.provider
        };
        let args = RunArgs { provider, ..args };
        Settings::from_args(repo, &args, &|_| None).unwrap()
    }
}

/// A Chat Completions answer with tool calls: (id, name, arguments text).
pub fn tool_turn(calls: &[(&str, &str, &str)]) -> Value {
    let calls: Vec<Value> = calls
        .iter()
        .map(|(id, name, args)| {
            json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}})
        })
        .collect();
    json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": calls},
           "finish_reason": "tool_calls"}],
           "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}})
}

/// A Chat Completions answer with text only.
pub fn text_turn(text: &str) -> Value {
    json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": text},
           "finish_reason": "stop"}],
           "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}})
}

/// A final answer holding one finding.
pub fn findings_turn(findings: Value) -> Value {
    text_turn(&format!(
        "Summary.\n```json\n{}\n```\n[TASK_COMPLETE]",
        json!({ "findings": findings })
    ))
}

/// The run's fence boundary as a system prompt names it
/// (`boundary="…"`): 16 hex digits.
pub fn boundary_of(system: &str) -> String {
    let at = system
        .find("boundary=\"")
        .map(|i| i + "boundary=\"".len())
        .unwrap_or_else(|| panic!("no boundary in {system}"));
    let boundary: String = system[at..].chars().take_while(|c| *c != '"').collect();
    assert_eq!(boundary.len(), 16, "{boundary}");
    assert!(
        boundary.bytes().all(|b| b.is_ascii_hexdigit()),
        "{boundary}"
    );
    boundary
}

/// The files an audit task lists (`- path (N bytes, lang)`).
pub fn task_files(body: &Value) -> Vec<String> {
    let task = body["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string();
    task.lines()
        .filter_map(|l| l.strip_prefix("- "))
        .filter_map(|l| l.rsplit_once(" (").map(|(p, _)| p.to_string()))
        .collect()
}

/// A model that behaves like a careful auditor over real HTTP: it reads
/// every listed file in one turn, then reports one finding per file whose
/// content contains `needle`, quoting the line.
pub fn auditor_reply(needle: &str, body: &Value) -> Value {
    {
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let tool_results: Vec<&Value> = messages.iter().filter(|m| m["role"] == "tool").collect();
        if body["tool_choice"] == "none" || !tool_results.is_empty() {
            let mut findings = Vec::new();
            for result in tool_results {
                let content = result["content"].as_str().unwrap_or_default();
                // The file's text is fenced: `<file path=… boundary=…>`,
                // the header `path (N lines)`, numbered lines, `</file …>`.
                let mut lines = content
                    .lines()
                    .filter(|l| !l.starts_with("<file path=") && !l.starts_with("</file "));
                let path = lines
                    .next()
                    .and_then(|h| h.rsplit_once(" ("))
                    .map(|(p, _)| p.to_string());
                for line in lines {
                    if let Some((n, text)) = line.split_once('\t')
                        && text.contains(needle)
                    {
                        findings.push(
                            json!({"path": path, "line": n.trim().parse::<u32>().unwrap_or(0),
                            "severity": "medium", "title": format!("uses {needle}"), "detail": "d",
                            "evidence": text.trim()}),
                        );
                    }
                }
            }
            return findings_turn(Value::Array(findings));
        }
        read_listed(body)
    }
}

/// What a careful model does first: read every file its task lists, in
/// one turn.
pub fn read_listed(body: &Value) -> Value {
    let calls: Vec<(String, String)> = task_files(body)
        .iter()
        .enumerate()
        .map(|(i, f)| (format!("call_{i}"), json!({"path": f}).to_string()))
        .collect();
    let refs: Vec<(&str, &str, &str)> = calls
        .iter()
        .map(|(id, a)| (id.as_str(), "read_file", a.as_str()))
        .collect();
    tool_turn(&refs)
}

/// A model that reads every listed file with `read_file`, then reports
/// each line holding `needle`.
pub fn auditor_behaviour(needle: &'static str) -> Behaviour {
    Box::new(move |body, _| ResponseTemplate::new(200).set_body_json(auditor_reply(needle, body)))
}

/// Usage as a real server would report it: prompt tokens from the
/// request's size (bytes / 4), a modest answer.
pub fn metered(mut reply: Value, body: &Value) -> Value {
    let prompt = body.to_string().len() as u64 / 4;
    reply["usage"] =
        json!({"prompt_tokens": prompt, "completion_tokens": 60, "total_tokens": prompt + 60});
    reply
}

/// Whether `body` is the reducer's request (its task).
pub fn is_reduce(body: &Value) -> bool {
    body["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .is_some_and(|task| task.starts_with("TASK: reduce"))
}

/// The reducer's answer: a summary, the ranking left as it is.
pub fn reducer_turn() -> Value {
    text_turn("```json\n{\"summary\": \"Synthetic run.\", \"ranking\": []}\n```")
}

/// A whole scan's model: the reducer gets [`reducer_turn`], every auditor
/// [`auditor_reply`].
pub fn scan_reply(needle: &str, body: &Value) -> Value {
    if is_reduce(body) {
        reducer_turn()
    } else {
        auditor_reply(needle, body)
    }
}

/// One finding of `severity` for every line holding `needle` in the
/// fenced files of `messages` (preloaded in the task or returned by
/// read_file: `<file path="…">`, then numbered lines), quoting the line.
pub fn needle_findings(messages: &[Value], needle: &str, severity: &str) -> Vec<Value> {
    let mut findings = Vec::new();
    for source in messages.iter().filter_map(|m| m["content"].as_str()) {
        let mut current: Option<String> = None;
        for line in source.lines() {
            if let Some(rest) = line.strip_prefix("<file path=\"") {
                current = rest.split('"').next().map(str::to_string);
            } else if let Some((n, code)) = line.split_once('\t')
                && code.contains(needle)
                && let (Some(path), Ok(n)) = (&current, n.trim().parse::<u32>())
            {
                findings.push(json!({"path": path, "line": n, "severity": severity,
                    "title": format!("unchecked {needle}"), "detail": "d", "evidence": code.trim()}));
            }
        }
    }
    findings.dedup();
    findings
}

/// The path-like tokens of `text`, as a literal-minded small model reads
/// them: a name with `/` inside it, or a name of two or more characters
/// with an extension that starts with a letter (`lib.rs`, `a/b`,
/// `path/to/file.ext`; not `e.g` nor `0.5`). Sorted, without repeats.
pub fn path_like(text: &str) -> Vec<String> {
    let re = regex::Regex::new(
        r"[A-Za-z0-9_.-]*[A-Za-z0-9_]/[A-Za-z0-9_][A-Za-z0-9_./-]*|\b[A-Za-z0-9_-]{2,}\.[A-Za-z][A-Za-z0-9]{0,7}\b",
    )
    .unwrap();
    let mut found: Vec<String> = re
        .find_iter(text)
        .map(|m| {
            m.as_str()
                .trim_end_matches(['.', '/'])
                .trim_start_matches('.')
                .to_string()
        })
        .collect();
    found.sort();
    found.dedup();
    found
}

/// The text of a message's or a tool result's `content`: a string, or an
/// array of text parts, one a line (both wire formats).
pub fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}
