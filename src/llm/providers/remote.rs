//! The one call path of the remote providers: a [`Wire`] format (encode a
//! request, decode a response) over the one [`HttpLayer`].
//!
//! Takes a [`ChatRequest`]; gives a [`ChatResponse`]. OpenAI and Anthropic
//! differ only in their [`Wire`]; sending, retrying, rate limiting and
//! error classification are the HTTP layer's, shared by both.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::future::BoxFuture;
use reqwest::header::HeaderMap;

use super::http::{DecodeError, HttpLayer};
use super::stream::{Live, OnText, Shown, StreamFormat};
use super::{EngineKind, Provider, ProviderError};
use crate::llm::conversation::{ChatRequest, ChatResponse, FinishReason, OutputSchema};

/// Request fields a server may not know. Some OpenAI-compatible servers
/// reject unknown fields: after a 400 that names one, it is dropped for the
/// rest of the run, and the report says so.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Optional {
    /// OpenAI's `prompt_cache_key`.
    PromptCacheKey,
    /// A JSON-schema response format for the final report.
    ResponseFormat,
    /// The legacy `max_tokens` beside `max_completion_tokens`: some
    /// compatible servers only honour the old name (an answer without a
    /// limit can run for minutes on a small machine).
    LegacyMaxTokens,
    /// The output schema's constraints (an `enum`, a `minimum`): its
    /// relaxed form is sent instead.
    SchemaConstraints,
}

/// Whether a server's complaint names a schema constraint some servers do
/// not take (`enum`, `minimum`).
pub(crate) fn names_a_constraint(message: &str) -> bool {
    message.contains("enum") || message.contains("minimum")
}

/// Which optional fields a request may carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Features {
    pub(crate) cache_key: bool,
    pub(crate) response_format: bool,
    pub(crate) legacy_max_tokens: bool,
    pub(crate) schema_constraints: bool,
}

impl Features {
    /// The form of `output`'s schema to send.
    pub(crate) fn schema(self, output: &OutputSchema) -> &serde_json::Value {
        match &output.relaxed {
            Some(relaxed) if !self.schema_constraints => relaxed,
            _ => &output.schema,
        }
    }
}

/// A wire format: what differs between remote providers.
pub(crate) trait Wire: Send + Sync {
    /// The provider's name as reports show it.
    fn name(&self) -> &'static str;
    /// The endpoint for the API root `base`.
    fn url(&self, base: &str) -> String;
    /// The headers every request carries (the key among them).
    fn headers(&self, api_key: Option<&str>) -> Result<HeaderMap, ProviderError>;
    /// The request body: strictly in the format's shape, with the optional
    /// fields `features` allows, serialized as it is.
    type Body<'a>: serde::Serialize
    where
        Self: 'a;
    /// The request body for `request`.
    fn encode<'a>(
        &'a self,
        model: &'a str,
        request: &'a ChatRequest,
        features: Features,
    ) -> Self::Body<'a>;
    /// The answer, read leniently.
    fn decode(&self, body: &[u8]) -> Result<ChatResponse, DecodeError>;
    /// The SSE dialect this format streams in, if it streams.
    fn stream_format(&self) -> Option<StreamFormat> {
        None
    }
    /// The optional fields a 400 answer's message may be about, the most
    /// specific first: the first one not dropped yet is dropped.
    fn rejects(&self, _message: &str) -> Vec<Optional> {
        Vec::new()
    }
}

/// A remote provider: a wire format, an endpoint, a model.
pub(crate) struct Remote<W> {
    wire: W,
    http: HttpLayer,
    url: String,
    model: String,
    headers: HeaderMap,
    no_cache_key: AtomicBool,
    no_response_format: AtomicBool,
    no_legacy_max_tokens: AtomicBool,
    no_schema_constraints: AtomicBool,
    notes: Mutex<Vec<String>>,
}

impl<W: Wire> Remote<W> {
    /// `base_url` is the API root; a key is optional because local
    /// servers often need none.
    pub(crate) fn new(
        wire: W,
        http: HttpLayer,
        base_url: &str,
        model: &str,
        api_key: Option<&str>,
    ) -> Result<Self, ProviderError> {
        Ok(Self {
            url: wire.url(base_url.trim_end_matches('/')),
            headers: wire.headers(api_key)?,
            wire,
            http,
            model: model.to_string(),
            no_cache_key: AtomicBool::new(false),
            no_response_format: AtomicBool::new(false),
            no_legacy_max_tokens: AtomicBool::new(false),
            no_schema_constraints: AtomicBool::new(false),
            notes: Mutex::new(Vec::new()),
        })
    }

    fn features(&self) -> Features {
        Features {
            cache_key: !self.no_cache_key.load(Ordering::Relaxed),
            response_format: !self.no_response_format.load(Ordering::Relaxed),
            legacy_max_tokens: !self.no_legacy_max_tokens.load(Ordering::Relaxed),
            schema_constraints: !self.no_schema_constraints.load(Ordering::Relaxed),
        }
    }

    /// Drops an optional field for the rest of the run; false when it was
    /// already dropped (the 400 was about something else).
    fn drop_field(&self, field: Optional, message: &str) -> bool {
        let (flag, note) = match field {
            Optional::PromptCacheKey => (
                &self.no_cache_key,
                "the server rejected `prompt_cache_key`, so it was dropped for the rest of the run (prompt caching still works where the server caches prefixes on its own)",
            ),
            Optional::ResponseFormat => (
                &self.no_response_format,
                "the server rejected the JSON-schema response format, so final reports were asked for as a JSON block in text for the rest of the run (with one repair turn when a block does not parse)",
            ),
            Optional::LegacyMaxTokens => (
                &self.no_legacy_max_tokens,
                "the server rejected the legacy `max_tokens` field, so only `max_completion_tokens` limited answers for the rest of the run",
            ),
            Optional::SchemaConstraints => (
                &self.no_schema_constraints,
                "the server rejected the output schema's constraints (an `enum` or a `minimum`), so the schema without them was sent for the rest of the run: final reports could name files outside their group (verification still checks every path and line)",
            ),
        };
        if flag.swap(true, Ordering::Relaxed) {
            return false;
        }
        tracing::info!(%message, "{note}");
        crate::util::relock(&self.notes).push(note.to_string());
        true
    }

    /// Drops the first field a 400 answer names that can still be dropped
    /// for this request; false when none (the error stands).
    fn drop_rejected(&self, request: &ChatRequest, message: &str) -> bool {
        let relaxable = request
            .output_schema
            .as_ref()
            .is_some_and(|s| s.relaxed.is_some());
        self.wire
            .rejects(message)
            .into_iter()
            .filter(|field| *field != Optional::SchemaConstraints || relaxable)
            .any(|field| self.drop_field(field, message))
    }

    async fn call(&self, request: &ChatRequest) -> Result<ChatResponse, ProviderError> {
        let model = request.model.as_deref().unwrap_or(&self.model);
        loop {
            let body = serde_json::to_vec(&self.wire.encode(model, request, self.features()))
                .map_err(ProviderError::Encode)?;
            let answer = self
                .http
                .post_json(
                    &self.url,
                    &self.headers,
                    body.into(),
                    request.estimated_tokens(),
                    |bytes| self.wire.decode(bytes),
                )
                .await;
            match answer {
                Err(ProviderError::Http {
                    status: 400 | 422,
                    ref message,
                    ..
                }) if self.drop_rejected(request, message) => {}
                other => return other.map(|r| settle(r, request)),
            }
        }
    }
}

impl<W: Wire> Remote<W> {
    /// [`Self::call`], streamed: the body asks for SSE, the text is shown
    /// as it arrives, the answer is read from the whole body.
    async fn call_stream(
        &self,
        request: &ChatRequest,
        on_text: OnText<'_>,
    ) -> Result<ChatResponse, ProviderError> {
        let Some(format) = self.wire.stream_format() else {
            let response = self.call(request).await?;
            if let Some(text) = &response.text {
                on_text(Shown::Text(text));
            }
            return Ok(response);
        };
        let model = request.model.as_deref().unwrap_or(&self.model);
        let live = Live::new(format, on_text);
        let on_chunk = |chunk: Option<&[u8]>| live.chunk(chunk);
        loop {
            let mut value = serde_json::to_value(self.wire.encode(model, request, self.features()))
                .map_err(ProviderError::Encode)?;
            if let Some(fields) = value.as_object_mut() {
                fields.insert("stream".into(), true.into());
                if format == StreamFormat::OpenAi {
                    // Usage comes in a last chunk only when asked for.
                    fields.insert(
                        "stream_options".into(),
                        serde_json::json!({"include_usage": true}),
                    );
                }
            }
            let body = serde_json::to_vec(&value).map_err(ProviderError::Encode)?;
            let answer = self
                .http
                .post_streamed(
                    &self.url,
                    &self.headers,
                    body.into(),
                    request.estimated_tokens(),
                    |bytes| Ok(super::stream::read_body(format, bytes)?),
                    &on_chunk,
                )
                .await;
            match answer {
                Err(ProviderError::Http {
                    status: 400 | 422,
                    ref message,
                    ..
                }) if self.drop_rejected(request, message) => {}
                other => return other.map(|r| settle(r, request)),
            }
        }
    }
}

/// What every wire format's answer means, settled in one place: a call
/// written when the output token limit cut the answer is marked truncated
/// (never run), and a call to the tool named after the request's output
/// schema (how Anthropic carries structured output) is the answer's text,
/// not a call to run.
pub(crate) fn settle(mut response: ChatResponse, request: &ChatRequest) -> ChatResponse {
    if response.finish == FinishReason::Length {
        for call in &mut response.tool_calls {
            call.truncated = true;
        }
    }
    let Some(output) = &request.output_schema else {
        return response;
    };
    let (answers, calls): (Vec<_>, Vec<_>) = std::mem::take(&mut response.tool_calls)
        .into_iter()
        .partition(|c| c.name == output.name);
    response.tool_calls = calls;
    let texts: Vec<String> = response
        .text
        .take()
        .into_iter()
        .chain(answers.into_iter().map(|c| c.arguments))
        .collect();
    let text = texts.join("\n");
    response.text = (!text.is_empty()).then_some(text);
    response
}

impl<W: Wire> Provider for Remote<W> {
    fn name(&self) -> &str {
        self.wire.name()
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn engine(&self) -> EngineKind {
        EngineKind::Llm
    }

    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(self.call(request))
    }

    fn chat_stream<'a>(
        &'a self,
        request: &'a ChatRequest,
        on_text: OnText<'a>,
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        Box::pin(self.call_stream(request, on_text))
    }

    fn notes(&self) -> Vec<String> {
        crate::util::relock(&self.notes).clone()
    }
}
