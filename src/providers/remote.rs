//! The one call path of the remote providers: a [`Wire`] format (encode a
//! request, decode a response) over the one [`HttpLayer`].
//!
//! Takes a [`ChatRequest`]; gives a [`ChatResponse`]. OpenAI and Anthropic
//! differ only in their [`Wire`]; sending, retrying, rate limiting and
//! error classification are the HTTP layer's, shared by both.

use futures::future::BoxFuture;
use reqwest::header::HeaderMap;
use serde_json::Value;

use super::http::{DecodeError, HttpLayer};
use super::{EngineKind, Provider, ProviderError};
use crate::conversation::{ChatRequest, ChatResponse};

/// A wire format: what differs between remote providers.
pub(crate) trait Wire: Send + Sync {
    /// The provider's name as reports show it.
    fn name(&self) -> &'static str;
    /// The endpoint for the API root `base`.
    fn url(&self, base: &str) -> String;
    /// The headers every request carries (the key among them).
    fn headers(&self, api_key: Option<&str>) -> Result<HeaderMap, ProviderError>;
    /// The request body, strictly in the format's shape.
    fn encode(&self, model: &str, request: &ChatRequest) -> Value;
    /// The answer, read leniently.
    fn decode(&self, body: &[u8]) -> Result<ChatResponse, DecodeError>;
}

/// A remote provider: a wire format, an endpoint, a model.
pub(crate) struct Remote<W> {
    wire: W,
    http: HttpLayer,
    url: String,
    model: String,
    headers: HeaderMap,
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
        })
    }

    async fn call(&self, request: &ChatRequest) -> Result<ChatResponse, ProviderError> {
        let model = request.model.as_deref().unwrap_or(&self.model);
        let body = self.wire.encode(model, request);
        let answer = self
            .http
            .post_json(
                &self.url,
                &self.headers,
                &body,
                request.estimated_tokens(),
                |bytes| self.wire.decode(bytes),
            )
            .await?;
        Ok(answer)
    }
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
}
