//! Providers: a [`Provider`] per wire format over the one conversation
//! model of [`crate::llm::conversation`].
//!
//! Takes a [`ChatRequest`] (system prompt, messages, tool specs, tool choice)
//! and gives a [`ChatResponse`] (text, tool calls, usage). The two remote
//! wire formats ([`openai`], [`anthropic`]) only encode requests and decode
//! responses; [`remote`] is their one call path, over the one HTTP layer
//! ([`http`]) where retries and rate limits ([`limits`]) live, so no caller
//! ever sleeps or retries. [`offline`] is the rule engine that plays a
//! sub-agent's model.

pub(crate) mod anthropic;
pub(crate) mod batch;
pub(crate) mod http;
pub(crate) mod limits;
pub(crate) mod openai;
pub(crate) mod remote;
pub(crate) mod stream;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde::Serialize;

use crate::llm::conversation::{ChatRequest, ChatResponse, Facts};
use crate::llm::prices::{Price, Prices};

/// Errors of a provider call, carrying what the caller needs to act.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("the API key was rejected by {provider} (HTTP {status}): check the key in ${key_env}")]
    Auth {
        provider: String,
        status: u16,
        key_env: String,
    },
    #[error(
        "{provider} has no such model or URL (HTTP 404 from {url}): check --model and --base-url"
    )]
    NotFound { provider: String, url: String },
    #[error("rate limited by {provider} (HTTP 429){}", retry_after_text(.retry_after))]
    RateLimited {
        provider: String,
        retry_after: Option<Duration>,
    },
    #[error(
        "{provider} quota is exhausted (insufficient_quota): add credit or change the key; not retried"
    )]
    QuotaExhausted { provider: String },
    #[error("{provider} answered HTTP {status}: {message}")]
    Http {
        provider: String,
        status: u16,
        message: String,
    },
    #[error(
        "{provider} answered something that is not the expected JSON: {detail}; body starts with: {head:?}"
    )]
    BadResponse {
        provider: String,
        detail: String,
        head: String,
    },
    #[error("could not reach {provider} at {url}: {detail}")]
    Connect {
        provider: String,
        url: String,
        detail: String,
    },
    #[error("{provider} did not answer within {secs} s")]
    Timeout { provider: String, secs: u64 },
    #[error("no API key: set ${key_env} (or choose another variable with --api-key-env)")]
    MissingKey { key_env: String },
    #[error("the run's retry budget is used up; last error: {last}")]
    RetryBudget { last: String },
    #[error("cancelled")]
    Cancelled,
    /// The offline rule engine cannot apply its rules (the built-in set,
    /// compiled on first use, failed to compile: a bug a unit test guards).
    #[error("the offline rule engine cannot run: {0}")]
    Engine(String),
    #[error("the API key in ${key_env} has characters an HTTP header cannot carry: check it")]
    BadKey { key_env: String },
    #[error("invalid {name} header value {value:?}")]
    BadHeader { name: &'static str, value: String },
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
    /// A request of `--batch` that got no answer: its line failed twice,
    /// or the batch could not be created, polled or read.
    #[error("{provider} batch: {message}")]
    Batch { provider: String, message: String },
    /// `--max-duration` ended the run's waits before the batch ended.
    #[error(
        "not answered: the time budget (--max-duration) ran out while {state}; the batch ids are kept in the run store, and the next run with the same store polls them instead of sending their requests again"
    )]
    BatchOpen { provider: String, state: String },
    #[error("cannot encode the request: {0}")]
    Encode(#[source] serde_json::Error),
    #[error(
        "{last}; the server asks to wait {wait_secs:.0} s, longer than the {max_secs:.0} s fanscan honours (raise --max-retry-wait)"
    )]
    WaitTooLong {
        last: String,
        wait_secs: f64,
        max_secs: f64,
    },
}

fn retry_after_text(retry_after: &Option<Duration>) -> String {
    match retry_after {
        Some(d) => format!(", retry after {:.1} s", d.as_secs_f64()),
        None => String::new(),
    }
}

/// The shape every wire format implements.
///
/// Returns a boxed future so that providers can be chosen at run time and
/// shared as `Arc<dyn Provider>` by many concurrent agents.
pub(crate) trait Provider: Send + Sync {
    /// The provider's name as reports show it (`openai`, `offline`, ...).
    fn name(&self) -> &str;
    /// The model name as reports show it.
    fn model(&self) -> &str;
    /// What kind of engine answers: reports name the offline rule engine as
    /// what it is, and a stage's question is answered by the model or
    /// counted accordingly (only `agents::Harness::answer` asks).
    fn engine(&self) -> EngineKind;
    /// Sends one request.
    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>>;
    /// Sends one request and shows the answer's text through `on_text` as
    /// it arrives. A provider that cannot stream shows it whole, once.
    /// Only the returned answer is the answer: what was shown of a stream
    /// that was cut and sent again is void ([`stream::Shown::Restart`]).
    fn chat_stream<'a>(
        &'a self,
        request: &'a ChatRequest,
        on_text: stream::OnText<'a>,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(async move {
            let response = self.chat(request).await?;
            if let Some(text) = &response.text {
                on_text(stream::Shown::Text(text));
            }
            Ok(response)
        })
    }
    /// One turn of an agent's loop. `facts` is what the loop knows of its
    /// task as data; it travels beside the request, never inside it, so no
    /// wire format can send it. A language model reads the request
    /// (streamed through `on_text` when someone watches); the offline
    /// engine reads the facts.
    fn turn<'a>(
        &'a self,
        request: &'a ChatRequest,
        _facts: &'a Facts,
        on_text: Option<stream::OnText<'a>>,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        match on_text {
            Some(on_text) => self.chat_stream(request, on_text),
            None => self.chat(request),
        }
    }
    /// What a call on `model` costs, from the run's price table; `None`
    /// when the table does not price it.
    fn price(&self, prices: &Prices, model: &str) -> Option<Price> {
        prices.get(model)
    }
    /// What the report should say about how this provider was used (a
    /// request field the server rejected and that was dropped).
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }
    /// The rounds of a batch provider (`--batch`), for the stages to
    /// register their agents with; none for the others.
    fn rounds(&self) -> Option<Arc<dyn batch::Rounds>> {
        None
    }
}

/// Whether a language model or the offline rule engine answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EngineKind {
    Llm,
    RuleEngine,
}

impl EngineKind {
    /// Whether text in the files it reads could steer it: a model's
    /// silence beside text addressed to AI agents is suspect, a rule
    /// engine's is not.
    pub(crate) fn can_be_steered(self) -> bool {
        match self {
            EngineKind::Llm => true,
            EngineKind::RuleEngine => false,
        }
    }
}

impl fmt::Display for EngineKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EngineKind::Llm => f.write_str("language model"),
            EngineKind::RuleEngine => f.write_str("offline rule engine (not a language model)"),
        }
    }
}

/// A shared provider.
pub(crate) type SharedProvider = Arc<dyn Provider>;
