//! Anthropic's Message Batches API: the requests created in one call
//! (`POST {base}/v1/messages/batches`, each `{custom_id, params}`), polled
//! (`GET …/batches/{id}`), and the JSONL at its `results_url` read once
//! `processing_status` is `ended`.
//!
//! Takes (custom id, Messages body) lines; gives the batch's [`Status`]
//! and each line's [`Outcome`] (`succeeded`, `errored`, `canceled`,
//! `expired`). A `results_url` on another host than the API's is not
//! followed (the key would go with it): the results endpoint of the
//! batch on the API's own host is read instead.

use futures::future::BoxFuture;
use reqwest::Method;
use reqwest::header::HeaderMap;
use serde_json::{Value, json};

use super::{BatchApi, BatchPhase, Line, Outcome, Results, Status};
use crate::llm::providers::ProviderError;
use crate::llm::providers::anthropic::Anthropic;
use crate::llm::providers::http::{DecodeError, HttpLayer, head};
use crate::llm::providers::remote::Wire;

/// The Message Batches API at `base` (the API root).
pub(crate) struct AnthropicBatch {
    wire: Anthropic,
    http: HttpLayer,
    /// `{base}/v1/messages/batches`.
    batches: String,
    /// The API's origin (`scheme://host:port`): the only one a
    /// `results_url` is followed to.
    origin: String,
    headers: HeaderMap,
}

impl AnthropicBatch {
    /// The API at `base` with `api_key`.
    pub(crate) fn new(
        wire: Anthropic,
        http: HttpLayer,
        base: &str,
        api_key: Option<&str>,
    ) -> Result<Self, ProviderError> {
        let base = base.trim_end_matches('/');
        let messages = wire.url(base);
        Ok(Self {
            headers: wire.headers(api_key)?,
            wire,
            http,
            batches: format!("{messages}/batches"),
            origin: origin(base),
        })
    }

    fn bad(&self, detail: &str, value: &Value) -> ProviderError {
        ProviderError::BadResponse {
            provider: "anthropic".into(),
            detail: detail.to_string(),
            head: head(value.to_string().as_bytes()),
        }
    }

    async fn create(&self, lines: &[(String, Value)]) -> Result<String, ProviderError> {
        let requests: Vec<Value> = lines
            .iter()
            .map(|(custom_id, params)| json!({"custom_id": custom_id, "params": params}))
            .collect();
        let body =
            serde_json::to_vec(&json!({ "requests": requests })).map_err(ProviderError::Encode)?;
        let batch: Value = self
            .http
            .send(
                Method::POST,
                &self.batches,
                &self.headers,
                Some((body.into(), "application/json".into())),
                |b| Ok(serde_json::from_slice::<Value>(b)?),
            )
            .await?;
        batch["id"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| self.bad("the batch creation answer has no id", &batch))
    }

    async fn poll(&self, id: &str) -> Result<Status, ProviderError> {
        let url = format!("{}/{id}", self.batches);
        let batch: Value = self
            .http
            .send(Method::GET, &url, &self.headers, None, |b| {
                Ok(serde_json::from_slice::<Value>(b)?)
            })
            .await?;
        let mut status = status_of(&batch).map_err(|e| self.bad(&e.to_string(), &batch))?;
        if status.phase == BatchPhase::Ended {
            let url = match batch["results_url"].as_str() {
                Some(url) if origin(url) == self.origin => url.to_string(),
                _ => format!("{}/{id}/results", self.batches),
            };
            status.results = vec![url];
        }
        Ok(status)
    }

    async fn read(&self, status: &Status) -> Result<Results, ProviderError> {
        let mut results = Results::default();
        for url in &status.results {
            let bytes: Vec<u8> = self
                .http
                .send(Method::GET, url, &self.headers, None, |b| Ok(b.to_vec()))
                .await?;
            let read = read_lines(&bytes);
            results.lines.extend(read.lines);
            results.unreadable += read.unreadable;
        }
        Ok(results)
    }
}

/// `scheme://host[:port]` of a URL (the whole text when it has no path).
fn origin(url: &str) -> String {
    let after_scheme = url.find("://").map(|i| i + 3).unwrap_or(0);
    match url[after_scheme..].find('/') {
        Some(slash) => url[..after_scheme + slash].to_string(),
        None => url.to_string(),
    }
}

/// A message batch object's state.
pub(crate) fn status_of(batch: &Value) -> Result<Status, DecodeError> {
    let phase = match batch["processing_status"].as_str() {
        Some("in_progress") => BatchPhase::InProgress,
        Some("canceling") => BatchPhase::Cancelling,
        Some("ended") => BatchPhase::Ended,
        Some(_) => {
            return Err(DecodeError::Shape(
                "the message batch has an unknown processing_status",
            ));
        }
        None => {
            return Err(DecodeError::Shape(
                "the message batch has no processing_status",
            ));
        }
    };
    let count = |name: &str| batch["request_counts"][name].as_u64().unwrap_or(0);
    let failed = count("errored") + count("canceled") + count("expired");
    let done = count("succeeded") + failed;
    let end = (phase == BatchPhase::Ended).then(|| {
        if failed == 0 {
            "completed".to_string()
        } else {
            format!(
                "with {} errored, {} expired and {} cancelled requests",
                count("errored"),
                count("expired"),
                count("canceled")
            )
        }
    });
    Ok(Status {
        phase,
        end,
        done,
        total: done + count("processing"),
        results: Vec::new(),
    })
}

/// The lines of a results file.
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
            outcome: outcome_of(&line["result"]),
        });
    }
    results
}

fn outcome_of(result: &Value) -> Outcome {
    match result["type"].as_str() {
        Some("succeeded") if result["message"].is_object() => {
            match serde_json::to_vec(&result["message"]) {
                Ok(bytes) => Outcome::Answer(bytes),
                Err(e) => Outcome::Failed(e.to_string()),
            }
        }
        Some("errored") => {
            // An error response: `{"type": "error", "error": {type, message}}`.
            let error = &result["error"];
            let inner = if error["error"].is_object() {
                &error["error"]
            } else {
                error
            };
            Outcome::Failed(format!(
                "{}: {}",
                inner["type"].as_str().unwrap_or("error"),
                inner["message"].as_str().unwrap_or_default()
            ))
        }
        Some("canceled") => Outcome::Unfinished("the batch was cancelled".into()),
        Some("expired") => Outcome::Unfinished("the batch expired".into()),
        _ => Outcome::Failed(format!(
            "a result of an unknown shape: {}",
            head(result.to_string().as_bytes())
        )),
    }
}

impl BatchApi for AnthropicBatch {
    type Format = Anthropic;

    fn wire(&self) -> &Anthropic {
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
    fn each_result_type_reads_as_its_outcome() {
        let file = br#"{"custom_id":"a","result":{"type":"succeeded","message":{"content":[]}}}
{"custom_id":"b","result":{"type":"errored","error":{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}}}
{"custom_id":"c","result":{"type":"expired"}}
{"result":{"type":"canceled"}}
{oops
"#;
        let read = read_lines(file);
        assert_eq!(read.unreadable, 2);
        assert!(matches!(&read.lines[0].outcome, Outcome::Answer(b) if b == br#"{"content":[]}"#));
        assert_eq!(
            read.lines[1].outcome,
            Outcome::Failed("invalid_request_error: bad".into())
        );
        assert!(matches!(read.lines[2].outcome, Outcome::Unfinished(_)));
    }

    #[test]
    fn processing_states_and_counts_map() {
        let s = status_of(&json!({"processing_status": "in_progress",
            "request_counts": {"processing": 3, "succeeded": 1, "errored": 1, "canceled": 0, "expired": 0}}))
        .unwrap();
        assert_eq!((s.phase, s.done, s.total), (BatchPhase::InProgress, 2, 5));
        let s = status_of(&json!({"processing_status": "ended",
            "request_counts": {"processing": 0, "succeeded": 2, "errored": 0, "canceled": 0, "expired": 0}}))
        .unwrap();
        assert_eq!(s.end.as_deref(), Some("completed"));
    }

    #[test]
    fn a_results_url_elsewhere_is_not_followed() {
        assert_eq!(
            origin("https://api.anthropic.com/v1/x"),
            "https://api.anthropic.com"
        );
        assert_eq!(origin("http://127.0.0.1:9/"), "http://127.0.0.1:9");
        assert_eq!(origin("http://127.0.0.1:9"), "http://127.0.0.1:9");
    }
}
