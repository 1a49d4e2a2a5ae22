//! OpenAI's Batch API for Chat Completions: the requests uploaded as a
//! JSONL file (`POST {base}/files`, purpose `batch`), the batch created
//! (`POST {base}/batches`, endpoint `/v1/chat/completions`, window `24h`),
//! polled (`GET {base}/batches/{id}`), and its output and error files read
//! (`GET {base}/files/{id}/content`).
//!
//! Takes (custom id, Chat Completions body) lines; gives the batch's
//! [`Status`] and each line's [`Outcome`]. Lenient when reading, like the
//! synchronous format: a line that is not JSON or names no `custom_id` is
//! counted as unreadable, never an error of the batch.

use futures::future::BoxFuture;
use reqwest::Method;
use reqwest::header::HeaderMap;
use serde_json::{Value, json};

use super::{BatchApi, BatchPhase, Line, Outcome, Results, Status};
use crate::llm::providers::ProviderError;
use crate::llm::providers::http::{DecodeError, HttpLayer};
use crate::llm::providers::openai::OpenAi;
use crate::llm::providers::remote::Wire;

/// The endpoint every line of a batch calls.
const ENDPOINT: &str = "/v1/chat/completions";

/// OpenAI's Batch API at `base` (the API root, `…/v1`).
pub(crate) struct OpenAiBatch {
    wire: OpenAi,
    http: HttpLayer,
    base: String,
    headers: HeaderMap,
}

impl OpenAiBatch {
    /// The API at `base` with `api_key`.
    pub(crate) fn new(
        wire: OpenAi,
        http: HttpLayer,
        base: &str,
        api_key: Option<&str>,
    ) -> Result<Self, ProviderError> {
        Ok(Self {
            headers: wire.headers(api_key)?,
            wire,
            http,
            base: base.trim_end_matches('/').to_string(),
        })
    }

    async fn get_json(&self, url: &str) -> Result<Value, ProviderError> {
        self.http
            .send(Method::GET, url, &self.headers, None, |b| {
                Ok(serde_json::from_slice::<Value>(b)?)
            })
            .await
    }

    async fn upload(&self, jsonl: Vec<u8>) -> Result<String, ProviderError> {
        let boundary = format!("fanscan-{}", &crate::util::sha256_hex(&jsonl)[..24]);
        let mut body = Vec::with_capacity(jsonl.len() + 512);
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"fanscan-batch.jsonl\"\r\nContent-Type: application/jsonl\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend_from_slice(&jsonl);
        body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
        let url = format!("{}/files", self.base);
        let file: Value = self
            .http
            .send(
                Method::POST,
                &url,
                &self.headers,
                Some((
                    body.into(),
                    format!("multipart/form-data; boundary={boundary}"),
                )),
                |b| Ok(serde_json::from_slice::<Value>(b)?),
            )
            .await?;
        id_of(&file, "file upload", &self.wire)
    }

    async fn create(&self, lines: &[(String, Value)]) -> Result<String, ProviderError> {
        let mut jsonl = Vec::new();
        for (custom_id, body) in lines {
            let line =
                json!({"custom_id": custom_id, "method": "POST", "url": ENDPOINT, "body": body});
            serde_json::to_writer(&mut jsonl, &line).map_err(ProviderError::Encode)?;
            jsonl.push(b'\n');
        }
        let file_id = self.upload(jsonl).await?;
        let create =
            json!({"input_file_id": file_id, "endpoint": ENDPOINT, "completion_window": "24h"});
        let body = serde_json::to_vec(&create).map_err(ProviderError::Encode)?;
        let url = format!("{}/batches", self.base);
        let batch: Value = self
            .http
            .send(
                Method::POST,
                &url,
                &self.headers,
                Some((body.into(), "application/json".into())),
                |b| Ok(serde_json::from_slice::<Value>(b)?),
            )
            .await?;
        id_of(&batch, "batch creation", &self.wire)
    }

    async fn poll(&self, id: &str) -> Result<Status, ProviderError> {
        let batch = self
            .get_json(&format!("{}/batches/{id}", self.base))
            .await?;
        status_of(&batch).map_err(|detail| ProviderError::BadResponse {
            provider: "openai".into(),
            detail: detail.to_string(),
            head: crate::llm::providers::http::head(batch.to_string().as_bytes()),
        })
    }

    async fn read(&self, status: &Status) -> Result<Results, ProviderError> {
        let mut results = Results::default();
        for file in &status.results {
            let url = format!("{}/files/{file}/content", self.base);
            let bytes: Vec<u8> = self
                .http
                .send(Method::GET, &url, &self.headers, None, |b| Ok(b.to_vec()))
                .await?;
            let read = read_lines(&bytes);
            results.lines.extend(read.lines);
            results.unreadable += read.unreadable;
        }
        Ok(results)
    }
}

/// The `id` of an object the API created.
fn id_of(value: &Value, what: &str, _wire: &OpenAi) -> Result<String, ProviderError> {
    value["id"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| ProviderError::BadResponse {
            provider: "openai".into(),
            detail: format!("the {what} answer has no id"),
            head: crate::llm::providers::http::head(value.to_string().as_bytes()),
        })
}

/// A batch object's state.
pub(crate) fn status_of(batch: &Value) -> Result<Status, DecodeError> {
    let state = batch["status"]
        .as_str()
        .ok_or(DecodeError::Shape("the batch object has no status"))?;
    let (phase, end) = match state {
        "validating" => (BatchPhase::Validating, None),
        "in_progress" => (BatchPhase::InProgress, None),
        "finalizing" => (BatchPhase::Finalizing, None),
        "cancelling" => (BatchPhase::Cancelling, None),
        "completed" | "expired" | "cancelled" => (BatchPhase::Ended, Some(state.to_string())),
        "failed" => {
            let why: Vec<&str> = batch["errors"]["data"]
                .as_array()
                .map(|errors| {
                    errors
                        .iter()
                        .filter_map(|e| e["message"].as_str())
                        .collect()
                })
                .unwrap_or_default();
            (
                BatchPhase::Ended,
                Some(format!("failed ({})", why.join("; "))),
            )
        }
        _ => return Err(DecodeError::Shape("the batch object has an unknown status")),
    };
    let count = |name: &str| batch["request_counts"][name].as_u64().unwrap_or(0);
    let results = ["output_file_id", "error_file_id"]
        .iter()
        .filter_map(|field| batch[*field].as_str())
        .filter(|id| !id.is_empty())
        .map(str::to_string)
        .collect();
    Ok(Status {
        phase,
        end,
        done: count("completed") + count("failed"),
        total: count("total"),
        results,
    })
}

/// The lines of an output or error file.
pub(crate) fn read_lines(bytes: &[u8]) -> Results {
    let mut results = Results::default();
    for raw in bytes.split(|b| *b == b'\n') {
        if raw.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let Ok(line) = serde_json::from_slice::<Value>(raw) else {
            results.unreadable += 1;
            continue;
        };
        let Some(custom_id) = line["custom_id"].as_str().filter(|s| !s.is_empty()) else {
            results.unreadable += 1;
            continue;
        };
        results.lines.push(Line {
            custom_id: custom_id.to_string(),
            outcome: outcome_of(&line),
        });
    }
    results
}

fn outcome_of(line: &Value) -> Outcome {
    let error = &line["error"];
    if error.is_object() {
        let code = error["code"].as_str().unwrap_or_default();
        let message = error["message"].as_str().unwrap_or_default();
        let text = format!("{code}: {message}");
        return match code {
            "batch_expired" | "batch_cancelled" => Outcome::Unfinished(text),
            _ => Outcome::Failed(text),
        };
    }
    let response = &line["response"];
    let status = response["status_code"].as_u64().unwrap_or(0);
    let body = &response["body"];
    if status == 200 && body.is_object() {
        return match serde_json::to_vec(body) {
            Ok(bytes) => Outcome::Answer(bytes),
            Err(e) => Outcome::Failed(e.to_string()),
        };
    }
    let message = body["error"]["message"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| crate::llm::providers::http::head(body.to_string().as_bytes()));
    Outcome::Failed(format!("HTTP {status}: {message}"))
}

impl BatchApi for OpenAiBatch {
    type Format = OpenAi;

    fn wire(&self) -> &OpenAi {
        &self.wire
    }

    fn submit<'a>(
        &'a self,
        lines: &'a [(String, Value)],
    ) -> BoxFuture<'a, Result<String, ProviderError>> {
        Box::pin(self.create(lines))
    }

    fn status<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Status, ProviderError>> {
        Box::pin(self.poll(id))
    }

    fn results<'a>(&'a self, status: &'a Status) -> BoxFuture<'a, Result<Results, ProviderError>> {
        Box::pin(self.read(status))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_and_error_lines_read_each_on_its_own() {
        let file = br#"{"id":"r1","custom_id":"a","response":{"status_code":200,"body":{"choices":[]}},"error":null}
not json
{"id":"r2","response":{"status_code":200,"body":{}}}
{"id":"r3","custom_id":"b","response":{"status_code":400,"body":{"error":{"message":"bad field"}}},"error":null}
{"id":"r4","custom_id":"c","response":null,"error":{"code":"batch_expired","message":"too late"}}

"#;
        let read = read_lines(file);
        assert_eq!(read.unreadable, 2);
        assert_eq!(read.lines.len(), 3);
        assert!(matches!(&read.lines[0].outcome, Outcome::Answer(b) if b == br#"{"choices":[]}"#));
        assert_eq!(
            read.lines[1].outcome,
            Outcome::Failed("HTTP 400: bad field".into())
        );
        assert!(
            matches!(&read.lines[2].outcome, Outcome::Unfinished(t) if t.contains("batch_expired"))
        );
    }

    #[test]
    fn batch_states_map_to_phases() {
        let s = status_of(&json!({"status": "in_progress", "request_counts": {"total": 5, "completed": 2, "failed": 1}})).unwrap();
        assert_eq!((s.phase, s.done, s.total), (BatchPhase::InProgress, 3, 5));
        let s =
            status_of(&json!({"status": "expired", "output_file_id": "f1", "error_file_id": "f2"}))
                .unwrap();
        assert_eq!(s.phase, BatchPhase::Ended);
        assert_eq!(s.end.as_deref(), Some("expired"));
        assert_eq!(s.results, vec!["f1".to_string(), "f2".to_string()]);
        let s = status_of(
            &json!({"status": "failed", "errors": {"data": [{"message": "bad line 3"}]}}),
        )
        .unwrap();
        assert_eq!(s.end.as_deref(), Some("failed (bad line 3)"));
        assert!(status_of(&json!({"status": "weird"})).is_err());
    }
}
