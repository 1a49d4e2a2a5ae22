//! Providers: the one internal conversation model and a [`Provider`] per wire
//! format.
//!
//! Takes a [`ChatRequest`] (system prompt, messages, tool specs, tool choice)
//! and gives a [`ChatResponse`] (text, tool calls, usage). Each wire format
//! converts to and from this model once, inside its own module; retries and
//! rate limits live under every provider in [`http`] and [`limits`], so no
//! caller ever sleeps or retries.

pub mod anthropic;
pub mod http;
pub mod limits;
pub mod offline;
pub mod openai;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

/// One message of a conversation. The system prompt is not a message: it
/// travels in [`ChatRequest::system`], because wire formats disagree on
/// where it goes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// Text from the user (our code: the task, the forced-summary request).
    User { text: String },
    /// What the model answered: optional text and any number of tool calls.
    Assistant {
        #[serde(skip_serializing_if = "Option::is_none")]
        text: Option<String>,
        #[serde(skip_serializing_if = "Vec::is_empty", default)]
        tool_calls: Vec<ToolCall>,
    },
    /// The answer to one tool call, matched by id.
    ToolResult {
        call_id: String,
        name: String,
        content: String,
        is_error: bool,
    },
}

/// A tool call as the model made it. `arguments` is kept as the raw JSON text
/// the model produced: it may be malformed, and that is the tool layer's
/// business (it answers with an error the model can correct).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// A tool as offered to the model.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON schema of the arguments object.
    pub parameters: serde_json::Value,
}

/// Whether the model may call tools in this turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    Auto,
    /// Tools are switched off: the answer must be text (the forced summary).
    None,
}

/// Token usage of one call, or summed over many.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Input tokens served from the provider's prompt cache (already counted
    /// in `input_tokens`).
    #[serde(default)]
    pub cached_tokens: u64,
}

impl Usage {
    /// Adds another usage into this one.
    pub fn add(&mut self, other: Usage) {
        // Saturating: a server may report any number.
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cached_tokens = self.cached_tokens.saturating_add(other.cached_tokens);
    }

    /// Input plus output tokens.
    pub fn total(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }
}

/// Why the model stopped.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    Stop,
    ToolCalls,
    /// Cut by the output token limit: a tool call in this answer may be
    /// truncated.
    Length,
    Refusal,
    Other(String),
}

/// One request to a model.
#[derive(Clone, Debug)]
pub struct ChatRequest {
    /// A model that overrides the provider's for this request (an agent
    /// definition's `model`).
    pub model: Option<String>,
    pub system: String,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
    pub tool_choice: ToolChoice,
    pub max_output_tokens: u32,
}

impl ChatRequest {
    /// A rough token estimate of the request (bytes / 3), used to reserve
    /// tokens-per-minute capacity before it is sent.
    pub fn estimated_tokens(&self) -> u64 {
        let mut bytes = self.system.len();
        for message in &self.messages {
            bytes += match message {
                Message::User { text } => text.len(),
                Message::Assistant { text, tool_calls } => {
                    text.as_ref().map_or(0, String::len)
                        + tool_calls
                            .iter()
                            .map(|c| c.name.len() + c.arguments.len() + 16)
                            .sum::<usize>()
                }
                Message::ToolResult { content, .. } => content.len() + 16,
            };
        }
        for tool in &self.tools {
            bytes += tool.name.len() + tool.description.len() + tool.parameters.to_string().len();
        }
        crate::estimate_tokens(bytes as u64) + u64::from(self.max_output_tokens)
    }
}

/// What a model answered.
#[derive(Clone, Debug, PartialEq)]
pub struct ChatResponse {
    pub text: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    /// Absent when the server did not report it (some compatible servers).
    pub usage: Option<Usage>,
    pub finish: FinishReason,
}

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
    #[error("{0}")]
    Other(String),
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
pub trait Provider: Send + Sync {
    /// The provider's name as reports show it (`openai`, `offline`, ...).
    fn name(&self) -> &str;
    /// The model name as reports show it.
    fn model(&self) -> &str;
    /// What kind of engine answers: reports name the offline rule engine as
    /// what it is.
    fn engine(&self) -> EngineKind;
    /// Sends one request.
    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>>;
}

/// Whether a language model or the offline rule engine answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EngineKind {
    Llm,
    RuleEngine,
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
pub type SharedProvider = Arc<dyn Provider>;
