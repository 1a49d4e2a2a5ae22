//! An in-process server on 127.0.0.1 that speaks both batch APIs:
//! OpenAI's (file upload, batch creation, polling, output and error
//! files) and Anthropic's Message Batches (creation, polling, JSONL
//! results). Each batch line is answered by a behaviour that reads the
//! line's body as the synchronous call would get it; faults are injected
//! per batch (lines that error, a batch that expires, unreadable lines,
//! batches that never end).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use wiremock::matchers::path_regex;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use super::model::BRIEF_TEXT;

/// What a line's body is answered with (the synchronous answer's body).
pub type Answer = Box<dyn Fn(&Value) -> Value + Send + Sync>;

/// Faults of the batches (each applies to the batches it names, by their
/// number from 1).
#[derive(Clone, Debug, Default)]
pub struct Faults {
    /// Polls that see a batch in progress before it ends.
    pub polls_in_progress: usize,
    /// Batches that never end.
    pub never_end: bool,
    /// In batch 1, lines whose custom id contains this answer an HTTP 500.
    pub error_ids: Option<String>,
    /// Batch 1 expires with only its first line answered.
    pub expire_first: bool,
    /// Batch 1's results carry a line that is not JSON and a line for a
    /// request never sent.
    pub bad_lines: bool,
}

/// One batch as the server keeps it.
#[derive(Clone, Debug)]
pub struct Created {
    pub id: String,
    /// The lines: custom id and body.
    pub lines: Vec<(String, Value)>,
    pub polls: usize,
}

#[derive(Default)]
struct State {
    files: HashMap<String, Vec<u8>>,
    batches: Vec<Created>,
    faults: Faults,
}

struct Server {
    anthropic: bool,
    answer: Answer,
    state: Arc<Mutex<State>>,
    uri: Arc<Mutex<String>>,
    created: Arc<tokio::sync::watch::Sender<usize>>,
}

/// A batch API server.
pub struct BatchServer {
    pub server: MockServer,
    state: Arc<Mutex<State>>,
    created: Arc<tokio::sync::watch::Sender<usize>>,
}

impl BatchServer {
    /// OpenAI's Batch API at `/v1`.
    pub async fn openai(answer: Answer, faults: Faults) -> Self {
        Self::start(false, answer, faults).await
    }

    /// Anthropic's Message Batches at `/v1/messages/batches`.
    pub async fn anthropic(answer: Answer, faults: Faults) -> Self {
        Self::start(true, answer, faults).await
    }

    async fn start(anthropic: bool, answer: Answer, faults: Faults) -> Self {
        let server = MockServer::start().await;
        let state = Arc::new(Mutex::new(State {
            faults,
            ..State::default()
        }));
        let created = Arc::new(tokio::sync::watch::Sender::new(0));
        Mock::given(path_regex(".*"))
            .respond_with(Server {
                anthropic,
                answer,
                state: Arc::clone(&state),
                uri: Arc::new(Mutex::new(server.uri())),
                created: Arc::clone(&created),
            })
            .mount(&server)
            .await;
        Self {
            server,
            state,
            created,
        }
    }

    /// The `--base-url` for fanscan.
    pub fn base_url(&self, anthropic: bool) -> String {
        if anthropic {
            self.server.uri()
        } else {
            format!("{}/v1", self.server.uri())
        }
    }

    /// Every batch created, in order.
    pub fn batches(&self) -> Vec<Created> {
        self.state.lock().unwrap().batches.clone()
    }

    /// Changes the faults from now on.
    pub fn set_faults(&self, faults: Faults) {
        self.state.lock().unwrap().faults = faults;
    }

    /// Waits until `cond` holds of the batches (checked at each creation
    /// and poll); fails the test after 60 s.
    pub async fn wait_until(&self, cond: impl Fn(&[Created]) -> bool) {
        let mut events = self.created.subscribe();
        let state = Arc::clone(&self.state);
        let reached = tokio::time::timeout(Duration::from_secs(60), async move {
            loop {
                if cond(&state.lock().unwrap().batches) {
                    return;
                }
                if events.changed().await.is_err() {
                    return;
                }
            }
        })
        .await;
        assert!(
            reached.is_ok(),
            "the batches never got there: {:?}",
            self.batches().len()
        );
    }

    /// Waits until `n` batches were created; fails the test after 60 s.
    pub async fn wait_for_batches(&self, n: usize) {
        let mut created = self.created.subscribe();
        let reached =
            tokio::time::timeout(Duration::from_secs(60), created.wait_for(|&seen| seen >= n))
                .await;
        assert!(
            matches!(reached, Ok(Ok(_))),
            "the server saw {} of the {n} batches it waited for",
            self.batches().len()
        );
    }
}

fn json_response(value: Value) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(value)
}

/// The JSONL file part of a multipart upload.
fn multipart_file(body: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(body);
    let at = text.find("filename=").expect("a file part");
    let start = at + text[at..].find("\r\n\r\n").expect("the part's headers end") + 4;
    let end = text.rfind("\r\n--").expect("the closing boundary");
    text[start..end].as_bytes().to_vec()
}

impl Server {
    fn line_outcomes(
        &self,
        batch: &Created,
        target: bool,
        faults: &Faults,
    ) -> Vec<(String, Result<Value, String>)> {
        batch
            .lines
            .iter()
            .enumerate()
            .map(|(i, (id, body))| {
                let outcome = if target && faults.expire_first && i > 0 {
                    Err("expired".to_string())
                } else if target
                    && faults.error_ids.as_ref().is_some_and(|needle| id.starts_with(needle.as_str()))
                {
                    Err("error".to_string())
                } else if body.to_string().contains("You write the brief that every auditor") {
                    Ok(if self.anthropic {
                        json!({"id": "msg_b", "type": "message", "role": "assistant", "content": [{"type": "text", "text": BRIEF_TEXT}],
                               "stop_reason": "end_turn", "usage": {"input_tokens": 100, "output_tokens": 10}})
                    } else {
                        super::model::text_turn(BRIEF_TEXT)
                    })
                } else {
                    Ok((self.answer)(body))
                };
                (id.clone(), outcome)
            })
            .collect()
    }

    fn status(&self, index: usize) -> ResponseTemplate {
        let mut state = self.state.lock().unwrap();
        let faults = state.faults.clone();
        let batch = &mut state.batches[index];
        batch.polls += 1;
        self.created.send_modify(|n| *n += 1);
        let total = batch.lines.len();
        let id = batch.id.clone();
        // Faults apply to the first batch of several lines (the auditors'
        // first round: the brief's batches come before it), never-ending
        // to every batch of several lines.
        let several = batch.lines.len() >= 2;
        let running = (faults.never_end && several) || batch.polls <= faults.polls_in_progress;
        let target = state.batches.iter().position(|b| b.lines.len() >= 2) == Some(index);
        let batch = &mut state.batches[index];
        if running {
            return json_response(if self.anthropic {
                json!({"id": id, "type": "message_batch", "processing_status": "in_progress",
                       "request_counts": {"processing": total, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0},
                       "results_url": null})
            } else {
                json!({"id": id, "object": "batch", "status": if batch.polls == 1 { "validating" } else { "in_progress" },
                       "request_counts": {"total": total, "completed": 0, "failed": 0}})
            });
        }
        let batch = batch.clone();
        let outcomes = self.line_outcomes(&batch, target, &faults);
        let ok = outcomes.iter().filter(|(_, o)| o.is_ok()).count();
        let expired = target && faults.expire_first;
        let uri = self.uri.lock().unwrap().clone();
        if self.anthropic {
            let mut jsonl = String::new();
            for (custom_id, outcome) in &outcomes {
                let result = match outcome {
                    Ok(message) => json!({"type": "succeeded", "message": message}),
                    Err(kind) if kind == "expired" => json!({"type": "expired"}),
                    Err(_) => {
                        json!({"type": "errored", "error": {"type": "error", "error": {"type": "api_error", "message": "Internal server error"}}})
                    }
                };
                jsonl.push_str(&json!({"custom_id": custom_id, "result": result}).to_string());
                jsonl.push('\n');
            }
            if target && faults.bad_lines {
                jsonl.push_str("{not json\n");
                jsonl.push_str(
                    &json!({"custom_id": "never-sent", "result": {"type": "expired"}}).to_string(),
                );
                jsonl.push('\n');
            }
            state
                .files
                .insert(format!("{id}-results"), jsonl.into_bytes());
            let errored = outcomes
                .iter()
                .filter(|(_, o)| o.as_ref().is_err_and(|k| k == "error"))
                .count();
            let expired_n = outcomes.len() - ok - errored;
            return json_response(
                json!({"id": id, "type": "message_batch", "processing_status": "ended",
                "request_counts": {"processing": 0, "succeeded": ok, "errored": errored, "canceled": 0, "expired": expired_n},
                "results_url": format!("{uri}/v1/messages/batches/{id}/results")}),
            );
        }
        let mut output = String::new();
        let mut errors = String::new();
        for (n, (custom_id, outcome)) in outcomes.iter().enumerate() {
            match outcome {
                Ok(body) => {
                    output.push_str(&json!({"id": format!("r{n}"), "custom_id": custom_id,
                        "response": {"status_code": 200, "request_id": format!("q{n}"), "body": body}, "error": null}).to_string());
                    output.push('\n');
                }
                Err(kind) if kind == "expired" => {
                    errors.push_str(&json!({"id": format!("r{n}"), "custom_id": custom_id, "response": null,
                        "error": {"code": "batch_expired", "message": "This request could not be executed before the completion window expired."}}).to_string());
                    errors.push('\n');
                }
                Err(_) => {
                    errors.push_str(&json!({"id": format!("r{n}"), "custom_id": custom_id,
                        "response": {"status_code": 500, "request_id": format!("q{n}"), "body": {"error": {"message": "The server had an error", "type": "server_error"}}},
                        "error": null}).to_string());
                    errors.push('\n');
                }
            }
        }
        if target && faults.bad_lines {
            output.push_str("{not json\n");
            output.push_str(&json!({"id": "rx", "custom_id": "never-sent", "response": {"status_code": 200, "body": {}}, "error": null}).to_string());
            output.push('\n');
        }
        let out_id = format!("{id}-out");
        let err_id = format!("{id}-err");
        state.files.insert(out_id.clone(), output.into_bytes());
        state.files.insert(err_id.clone(), errors.into_bytes());
        json_response(
            json!({"id": id, "object": "batch", "endpoint": "/v1/chat/completions",
            "status": if expired { "expired" } else { "completed" },
            "output_file_id": out_id, "error_file_id": err_id,
            "request_counts": {"total": total, "completed": ok, "failed": total - ok}}),
        )
    }

    fn create(&self, lines: Vec<(String, Value)>) -> ResponseTemplate {
        let mut state = self.state.lock().unwrap();
        let id = format!("batch_{}", state.batches.len() + 1);
        state.batches.push(Created {
            id: id.clone(),
            lines,
            polls: 0,
        });
        drop(state);
        self.created.send_modify(|n| *n += 1);
        json_response(if self.anthropic {
            json!({"id": id, "type": "message_batch", "processing_status": "in_progress",
                   "request_counts": {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}})
        } else {
            json!({"id": id, "object": "batch", "status": "validating"})
        })
    }

    fn index_of(&self, id: &str) -> Option<usize> {
        self.state
            .lock()
            .unwrap()
            .batches
            .iter()
            .position(|b| b.id == id)
    }
}

impl Respond for Server {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let path = request.url.path().to_string();
        let method = request.method.as_str().to_string();
        let not_found = ResponseTemplate::new(404)
            .set_body_json(json!({"error": {"message": format!("no route {method} {path}")}}));
        if self.anthropic {
            let rest = path.strip_prefix("/v1/messages/batches").unwrap_or("");
            return match (method.as_str(), rest) {
                ("POST", "") => {
                    let body: Value = serde_json::from_slice(&request.body).unwrap();
                    let lines = body["requests"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|r| {
                            (
                                r["custom_id"].as_str().unwrap().to_string(),
                                r["params"].clone(),
                            )
                        })
                        .collect();
                    self.create(lines)
                }
                ("GET", rest) if rest.ends_with("/results") => {
                    let id = rest.trim_start_matches('/').trim_end_matches("/results");
                    match self
                        .state
                        .lock()
                        .unwrap()
                        .files
                        .get(&format!("{id}-results"))
                    {
                        Some(bytes) => ResponseTemplate::new(200).set_body_bytes(bytes.clone()),
                        None => not_found,
                    }
                }
                ("GET", rest) => match self.index_of(rest.trim_start_matches('/')) {
                    Some(index) => self.status(index),
                    None => not_found,
                },
                _ => not_found,
            };
        }
        match (method.as_str(), path.as_str()) {
            ("POST", "/v1/files") => {
                let file = multipart_file(&request.body);
                let mut state = self.state.lock().unwrap();
                let id = format!("file-{}", state.files.len() + 1);
                state.files.insert(id.clone(), file);
                json_response(json!({"id": id, "object": "file", "purpose": "batch"}))
            }
            ("POST", "/v1/batches") => {
                let body: Value = serde_json::from_slice(&request.body).unwrap();
                assert_eq!(body["endpoint"], "/v1/chat/completions");
                assert_eq!(body["completion_window"], "24h");
                let input = body["input_file_id"].as_str().unwrap().to_string();
                let file = self
                    .state
                    .lock()
                    .unwrap()
                    .files
                    .get(&input)
                    .cloned()
                    .unwrap();
                let lines = String::from_utf8(file)
                    .unwrap()
                    .lines()
                    .map(|l| {
                        let line: Value = serde_json::from_str(l).unwrap();
                        assert_eq!(line["method"], "POST");
                        assert_eq!(line["url"], "/v1/chat/completions");
                        (
                            line["custom_id"].as_str().unwrap().to_string(),
                            line["body"].clone(),
                        )
                    })
                    .collect();
                self.create(lines)
            }
            ("GET", p) if p.starts_with("/v1/files/") && p.ends_with("/content") => {
                let id = p
                    .trim_start_matches("/v1/files/")
                    .trim_end_matches("/content");
                match self.state.lock().unwrap().files.get(id) {
                    Some(bytes) => ResponseTemplate::new(200).set_body_bytes(bytes.clone()),
                    None => not_found,
                }
            }
            ("GET", p) if p.starts_with("/v1/batches/") => {
                match self.index_of(p.trim_start_matches("/v1/batches/")) {
                    Some(index) => self.status(index),
                    None => not_found,
                }
            }
            _ => not_found,
        }
    }
}
