//! The one HTTP layer under every remote provider: a reused reqwest client,
//! timeouts, error mapping, retries with backoff that honour the server's
//! `retry-after`, and the shared rate limits.
//!
//! Takes a URL, headers and a JSON body plus a parser for the expected
//! answer; gives the parsed answer or a [`ProviderError`]. Providers never
//! sleep or retry themselves.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::HeaderMap;

use super::ProviderError;
use super::limits::{Concurrency, RateLimits, secs_f64};

/// Why a successful (2xx) body is not the answer a wire format expects; the
/// call is retried like a 5xx.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DecodeError {
    #[error("invalid JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("{0}")]
    Shape(&'static str),
    /// A streamed answer that cannot be used (cut, an error event).
    #[error(transparent)]
    Stream(#[from] super::stream::StreamError),
}

/// Gets a streamed response's body as it arrives: `None` when a body
/// starts (each attempt), then each chunk.
pub(crate) type OnChunk<'a> = &'a (dyn Fn(Option<&[u8]>) + Send + Sync);

/// 429s one call may wait out before they count as failed attempts.
const MAX_RATE_LIMIT_WAITS: u32 = 50;

/// How calls are retried.
#[derive(Clone, Debug)]
pub(crate) struct RetryPolicy {
    /// Attempts per call, the first included.
    pub max_attempts: u32,
    /// First backoff delay; doubled each retry.
    pub base_delay: Duration,
    /// Longest backoff delay.
    pub max_delay: Duration,
    /// Longest server-directed wait (`retry-after`) that is honoured; a
    /// longer one fails the call at once rather than stall the run.
    pub max_server_wait: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 5,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(8),
            max_server_wait: Duration::from_secs(120),
        }
    }
}

/// Counters of one run, shared by every call.
#[derive(Debug, Default)]
pub(crate) struct CallStats {
    /// HTTP requests sent (retries included).
    pub requests: AtomicU64,
    /// Retries made.
    pub retries: AtomicU64,
    /// 429 answers received.
    pub rate_limited: AtomicU64,
    /// Retries still allowed in this run.
    retry_budget: AtomicU64,
    /// The lowest request concurrency the adaptive limit went down to
    /// (0: never cut).
    pub lowest_concurrency: AtomicU64,
}

impl CallStats {
    /// Counters with a run-wide retry budget.
    pub(crate) fn new(retry_budget: u64) -> Self {
        Self {
            retry_budget: AtomicU64::new(retry_budget),
            ..Self::default()
        }
    }

    fn take_retry(&self) -> bool {
        self.retry_budget
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok()
    }
}

/// What the error body said, in the fields both wire formats use.
#[derive(Debug, Default)]
struct ErrorBody {
    kind: String,
    code: String,
    message: String,
}

fn parse_error_body(body: &[u8]) -> ErrorBody {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(body) else {
        return ErrorBody {
            message: head(body),
            ..ErrorBody::default()
        };
    };
    let error = value.get("error").unwrap_or(&value);
    let field = |name: &str| {
        error
            .get(name)
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_string()
    };
    let message = match error {
        serde_json::Value::String(s) => s.clone(),
        _ => field("message"),
    };
    ErrorBody {
        kind: field("type"),
        code: field("code"),
        message: if message.is_empty() {
            head(body)
        } else {
            message
        },
    }
}

/// The first bytes of a body, as text, for error messages.
pub(crate) fn head(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(200)]);
    text.trim().to_string()
}

/// One request as it is sent, each attempt alike.
struct Outgoing {
    method: reqwest::Method,
    /// The body and its content type; none for a GET.
    body: Option<(bytes::Bytes, String)>,
}

/// The one HTTP client of a provider.
pub(crate) struct HttpLayer {
    client: reqwest::Client,
    provider: String,
    key_env: String,
    policy: RetryPolicy,
    limits: Arc<RateLimits>,
    concurrency: Arc<Concurrency>,
    stats: Arc<CallStats>,
    timeout: Duration,
}

impl HttpLayer {
    /// Builds the client. `timeout` bounds a whole request.
    pub(crate) fn new(
        provider: &str,
        key_env: &str,
        timeout: Duration,
        policy: RetryPolicy,
        limits: Arc<RateLimits>,
        concurrency: Arc<Concurrency>,
        stats: Arc<CallStats>,
    ) -> Result<Self, ProviderError> {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(timeout)
            .user_agent(concat!("fanscan/", env!("CARGO_PKG_VERSION")))
            // A redirect could carry x-api-key to another host.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| ProviderError::Client(e.to_string()))?;
        Ok(Self {
            client,
            provider: provider.to_string(),
            key_env: key_env.to_string(),
            policy,
            limits,
            concurrency,
            stats,
            timeout,
        })
    }

    /// POSTs `body` as JSON and parses the answer with `parse`, retrying
    /// what is worth retrying. `tokens` is the request's estimate, reserved
    /// against the tokens-per-minute limit before each attempt. A 200 whose
    /// body `parse` rejects is retried like a 5xx.
    pub(crate) async fn post_json<T, F>(
        &self,
        url: &str,
        headers: &HeaderMap,
        body: bytes::Bytes,
        tokens: u64,
        parse: F,
    ) -> Result<T, ProviderError>
    where
        F: Fn(&[u8]) -> Result<T, DecodeError>,
    {
        self.post(url, headers, body, tokens, parse, None).await
    }

    /// Sends `method` to `url` with `body` of `content_type` (none for a
    /// GET), and parses the answer with `parse`, under the same retries
    /// and rate limits as every model call: the batch APIs' uploads,
    /// creations, polls and downloads.
    pub(crate) async fn send<T, F>(
        &self,
        method: reqwest::Method,
        url: &str,
        headers: &HeaderMap,
        body: Option<(bytes::Bytes, String)>,
        parse: F,
    ) -> Result<T, ProviderError>
    where
        F: Fn(&[u8]) -> Result<T, DecodeError>,
    {
        let request = Outgoing { method, body };
        self.attempts(url, headers, &request, 0, parse, None).await
    }

    /// [`Self::post_json`] for a streamed answer: each successful
    /// attempt's body goes to `on_chunk` as it arrives, and `parse` reads
    /// the whole body at the end (a cut stream is retried like a 5xx).
    pub(crate) async fn post_streamed<T, F>(
        &self,
        url: &str,
        headers: &HeaderMap,
        body: bytes::Bytes,
        tokens: u64,
        parse: F,
        on_chunk: OnChunk<'_>,
    ) -> Result<T, ProviderError>
    where
        F: Fn(&[u8]) -> Result<T, DecodeError>,
    {
        self.post(url, headers, body, tokens, parse, Some(on_chunk))
            .await
    }

    async fn post<T, F>(
        &self,
        url: &str,
        headers: &HeaderMap,
        body: bytes::Bytes,
        tokens: u64,
        parse: F,
        on_chunk: Option<OnChunk<'_>>,
    ) -> Result<T, ProviderError>
    where
        F: Fn(&[u8]) -> Result<T, DecodeError>,
    {
        let request = Outgoing {
            method: reqwest::Method::POST,
            body: Some((body, "application/json".to_string())),
        };
        self.attempts(url, headers, &request, tokens, parse, on_chunk)
            .await
    }

    async fn attempts<T, F>(
        &self,
        url: &str,
        headers: &HeaderMap,
        request: &Outgoing,
        tokens: u64,
        parse: F,
        on_chunk: Option<OnChunk<'_>>,
    ) -> Result<T, ProviderError>
    where
        F: Fn(&[u8]) -> Result<T, DecodeError>,
    {
        let mut attempt: u32 = 0;
        let mut rate_waits: u32 = 0;
        loop {
            let slot = self.concurrency.acquire().await;
            self.limits.acquire(tokens).await;
            self.stats.requests.fetch_add(1, Ordering::Relaxed);
            let outcome = self
                .send_once(url, headers, request, &parse, on_chunk)
                .await;
            drop(slot);
            let (error, server_wait, should_retry) = match outcome {
                Ok(answer) => {
                    self.concurrency.succeeded();
                    return Ok(answer);
                }
                Err(failure) => failure,
            };
            // Waiting one's turn is not failing: a 429 that the server
            // answers with a wait uses the run's retry budget, not one of
            // the call's attempts (up to a generous cap), so a quota never
            // turns into failed groups.
            let rate_limited = matches!(error, ProviderError::RateLimited { .. });
            if rate_limited && rate_waits < MAX_RATE_LIMIT_WAITS {
                rate_waits += 1;
            } else {
                attempt += 1;
            }
            let retry = should_retry && attempt < self.policy.max_attempts;
            if !retry {
                return Err(error);
            }
            let delay = match server_wait {
                Some(wait) if wait > self.policy.max_server_wait => {
                    return Err(ProviderError::WaitTooLong {
                        last: error.to_string(),
                        wait_secs: wait.as_secs_f64(),
                        max_secs: self.policy.max_server_wait.as_secs_f64(),
                    });
                }
                Some(wait) => wait,
                None => backoff(&self.policy, attempt - 1),
            };
            if !self.stats.take_retry() {
                return Err(ProviderError::RetryBudget {
                    last: error.to_string(),
                });
            }
            self.stats.retries.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(provider = %self.provider, %error, delay_ms = delay.as_millis() as u64, attempt, "retrying");
            tokio::time::sleep(delay).await;
        }
    }

    /// One attempt. On failure: the error, the server-directed wait if any,
    /// and whether to retry.
    async fn send_once<T, F>(
        &self,
        url: &str,
        headers: &HeaderMap,
        request: &Outgoing,
        parse: &F,
        on_chunk: Option<OnChunk<'_>>,
    ) -> Result<T, (ProviderError, Option<Duration>, bool)>
    where
        F: Fn(&[u8]) -> Result<T, DecodeError>,
    {
        let mut builder = self
            .client
            .request(request.method.clone(), url)
            .headers(headers.clone());
        if let Some((body, content_type)) = &request.body {
            builder = builder
                .header(reqwest::header::CONTENT_TYPE, content_type.as_str())
                .body(body.clone());
        }
        let response = builder.send().await;
        let response = match response {
            Ok(r) => r,
            Err(e) => return Err((self.transport_error(url, &e), None, true)),
        };
        let status = response.status();
        let headers = response.headers().clone();
        self.limits.observe_headers(&headers);
        let bytes = match on_chunk {
            Some(on_chunk) if status.is_success() => {
                let mut response = response;
                let mut all = Vec::new();
                on_chunk(None);
                loop {
                    match response.chunk().await {
                        Ok(Some(chunk)) => {
                            on_chunk(Some(&chunk));
                            all.extend_from_slice(&chunk);
                        }
                        Ok(None) => break,
                        // A connection lost mid-stream: `parse` would call
                        // the body cut; the transport error says why.
                        Err(e) => return Err((self.transport_error(url, &e), None, true)),
                    }
                }
                bytes::Bytes::from(all)
            }
            _ => match response.bytes().await {
                Ok(b) => b,
                Err(e) => return Err((self.transport_error(url, &e), None, true)),
            },
        };
        if status.is_success() {
            return match parse(&bytes) {
                Ok(value) => Ok(value),
                Err(detail) => Err((
                    ProviderError::BadResponse {
                        provider: self.provider.clone(),
                        detail: detail.to_string(),
                        head: head(&bytes),
                    },
                    None,
                    true,
                )),
            };
        }
        Err(self.status_error(url, status, &headers, &bytes))
    }

    fn transport_error(&self, url: &str, error: &reqwest::Error) -> ProviderError {
        if error.is_timeout() {
            ProviderError::Timeout {
                provider: self.provider.clone(),
                secs: self.timeout.as_secs(),
            }
        } else {
            let mut detail = error.to_string();
            let mut source = std::error::Error::source(error);
            while let Some(s) = source {
                detail = format!("{detail}: {s}");
                source = s.source();
            }
            ProviderError::Connect {
                provider: self.provider.clone(),
                url: url.to_string(),
                detail,
            }
        }
    }

    fn status_error(
        &self,
        url: &str,
        status: StatusCode,
        headers: &HeaderMap,
        body: &[u8],
    ) -> (ProviderError, Option<Duration>, bool) {
        let parsed = parse_error_body(body);
        let server_wait = retry_after(headers);
        let provider = self.provider.clone();
        let code = status.as_u16();
        let retryable_status = matches!(code, 408 | 409 | 429) || code >= 500;
        let should_retry = match header_str(headers, "x-should-retry") {
            Some("true") => true,
            Some("false") => false,
            _ => retryable_status,
        };
        if code == 429 || code == 529 || parsed.kind == "overloaded_error" {
            let limit = self.concurrency.overloaded() as u64;
            self.stats
                .lowest_concurrency
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |old| {
                    Some(if old == 0 { limit } else { old.min(limit) })
                })
                .ok();
        }
        if parsed.kind == "insufficient_quota" || parsed.code == "insufficient_quota" {
            return (ProviderError::QuotaExhausted { provider }, None, false);
        }
        let error = match (code, parsed.kind.as_str()) {
            (401 | 403, _) | (_, "authentication_error" | "permission_error") => {
                ProviderError::Auth {
                    provider,
                    status: code,
                    key_env: self.key_env.clone(),
                }
            }
            (404, _) | (_, "not_found_error") => ProviderError::NotFound {
                provider,
                url: url.to_string(),
            },
            (429, _) | (_, "rate_limit_error") => {
                self.stats.rate_limited.fetch_add(1, Ordering::Relaxed);
                // One 429 pauses every agent of this limiter, not just the
                // one that got it: N workers must not turn it into N 429s.
                let wait = server_wait.unwrap_or_else(|| backoff(&self.policy, 0));
                if wait <= self.policy.max_server_wait {
                    self.limits.pause_for(wait);
                }
                ProviderError::RateLimited {
                    provider,
                    retry_after: server_wait,
                }
            }
            _ => ProviderError::Http {
                provider,
                status: code,
                message: if parsed.kind.is_empty() {
                    parsed.message
                } else {
                    format!("{}: {}", parsed.kind, parsed.message)
                },
            },
        };
        (error, server_wait, should_retry)
    }
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
}

/// The server-directed wait: `retry-after-ms`, else `retry-after` as seconds
/// or an HTTP date.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    if let Some(ms) = header_str(headers, "retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(secs_f64(ms / 1000.0));
    }
    let value = header_str(headers, "retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| secs_f64(secs));
    }
    let at = jiff::fmt::rfc2822::parse(value).ok()?.timestamp();
    let span = at.duration_since(jiff::Timestamp::now());
    Some(Duration::try_from(span).unwrap_or(Duration::ZERO))
}

/// `min(base · 2^n, max)` less up to 25% jitter, as the official SDKs do.
pub(crate) fn backoff(policy: &RetryPolicy, retries_taken: u32) -> Duration {
    let factor = 2f64.powi(retries_taken.min(30) as i32);
    let delay = (policy.base_delay.as_secs_f64() * factor).min(policy.max_delay.as_secs_f64());
    Duration::from_secs_f64(delay * (1.0 - 0.25 * fastrand::f64()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_prefers_ms_then_seconds_then_date() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", "3".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(3)));
        h.insert("retry-after-ms", "250".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_millis(250)));
        let mut h = HeaderMap::new();
        h.insert(
            "retry-after",
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(retry_after(&h), Some(Duration::ZERO));
        let mut h = HeaderMap::new();
        h.insert("retry-after", "soon".parse().unwrap());
        assert_eq!(retry_after(&h), None);
        // Absurd values are long waits, never a panic.
        h.insert("retry-after", "1e300".parse().unwrap());
        assert!(retry_after(&h).unwrap() > Duration::from_secs(1_000_000));
        h.insert("retry-after-ms", "NaN".parse().unwrap());
        assert!(retry_after(&h).is_some());
    }

    #[test]
    fn backoff_doubles_up_to_the_cap_with_at_most_25_percent_jitter() {
        let p = RetryPolicy::default();
        for (n, full) in [(0, 0.5), (1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (9, 8.0)] {
            let d = backoff(&p, n).as_secs_f64();
            assert!(d <= full && d >= full * 0.75, "retry {n}: {d}");
        }
    }

    #[test]
    fn error_bodies_of_both_formats_parse() {
        let b = parse_error_body(
            br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        );
        assert_eq!(b.kind, "overloaded_error");
        let b = parse_error_body(
            br#"{"error":{"message":"m","type":"insufficient_quota","code":"insufficient_quota"}}"#,
        );
        assert_eq!(b.code, "insufficient_quota");
        let b = parse_error_body(b"<html>bad gateway</html>");
        assert_eq!(b.message, "<html>bad gateway</html>");
    }
}
