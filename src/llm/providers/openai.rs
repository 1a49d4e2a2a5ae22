//! The OpenAI Chat Completions wire format (`POST {base}/chat/completions`):
//! OpenAI, DeepSeek, Ollama, vLLM, llama.cpp's server, LiteLLM, OpenRouter.
//!
//! Takes a [`ChatRequest`]; gives a [`ChatResponse`]. Strict when writing,
//! lenient when reading: `arguments` as a string or an object, `content` as
//! a string or parts, `usage` optional.

use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::ProviderError;
use super::http::DecodeError;
use super::remote::{Features, Optional, Wire};
use crate::llm::conversation::{
    ChatRequest, ChatResponse, FinishReason, Message, ToolCall, ToolChoice, Usage,
};

/// The Chat Completions wire format.
pub(crate) struct OpenAi {
    /// Where the key comes from, for error messages.
    pub(crate) key_env: String,
}

impl Wire for OpenAi {
    fn name(&self) -> &'static str {
        "openai"
    }

    fn stream_format(&self) -> Option<super::stream::StreamFormat> {
        Some(super::stream::StreamFormat::OpenAi)
    }

    fn url(&self, base: &str) -> String {
        format!("{base}/chat/completions")
    }

    fn headers(&self, api_key: Option<&str>) -> Result<HeaderMap, ProviderError> {
        let mut headers = HeaderMap::new();
        if let Some(key) = api_key {
            let mut value = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
                ProviderError::BadKey {
                    key_env: self.key_env.clone(),
                }
            })?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        Ok(headers)
    }

    type Body<'a> = Body<'a>;

    fn encode<'a>(
        &'a self,
        model: &'a str,
        request: &'a ChatRequest,
        features: Features,
    ) -> Body<'a> {
        encode(model, request, features)
    }

    fn decode(&self, body: &[u8]) -> Result<ChatResponse, DecodeError> {
        decode(body)
    }

    fn rejects(&self, message: &str) -> Vec<Optional> {
        // OpenAI's reasoning models: "'max_tokens' is not supported with
        // this model. Use 'max_completion_tokens' instead."
        if message.contains("'max_tokens'") || message.contains("max_tokens is not") {
            return vec![Optional::LegacyMaxTokens];
        }
        if message.contains("prompt_cache_key") {
            return vec![Optional::PromptCacheKey];
        }
        let mut fields = Vec::new();
        // A schema keyword the server does not take: the looser schema
        // first, then no response format at all.
        if super::remote::names_a_constraint(message) {
            fields.push(Optional::SchemaConstraints);
        }
        if message.contains("response_format") || message.contains("json_schema") {
            fields.push(Optional::ResponseFormat);
        }
        fields
    }
}

/// The request body, borrowed from the request and serialized straight
/// to bytes: no JSON tree is built for it.
#[derive(Serialize)]
pub(crate) struct Body<'a> {
    model: &'a str,
    messages: Vec<OutMessage<'a>>,
    max_completion_tokens: u32,
    /// Every request sets a maximum output, under both names (see
    /// [`Optional::LegacyMaxTokens`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<OutTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<Value>,
    /// A further sample of a group (`--samples`) asks for another draw.
    #[serde(skip_serializing_if = "Option::is_none")]
    seed: Option<u32>,
}

#[derive(Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum OutMessage<'a> {
    System {
        content: &'a str,
    },
    User {
        content: &'a str,
    },
    Assistant {
        content: Option<&'a str>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<OutCall<'a>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: &'a str,
    },
}

#[derive(Serialize)]
struct OutCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: OutCallFunction<'a>,
}

#[derive(Serialize)]
struct OutCallFunction<'a> {
    name: &'a str,
    arguments: &'a str,
}

#[derive(Serialize)]
struct OutTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: OutToolFunction<'a>,
}

#[derive(Serialize)]
struct OutToolFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

/// The request body.
fn encode<'a>(model: &'a str, request: &'a ChatRequest, features: Features) -> Body<'a> {
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    messages.push(OutMessage::System {
        content: &request.system,
    });
    for message in &request.messages {
        messages.push(match message {
            Message::User { text } => OutMessage::User { content: text },
            Message::Assistant { text, tool_calls } => OutMessage::Assistant {
                content: text.as_deref(),
                tool_calls: tool_calls
                    .iter()
                    .map(|c| OutCall {
                        id: &c.id,
                        kind: "function",
                        function: OutCallFunction {
                            name: &c.name,
                            arguments: &c.arguments,
                        },
                    })
                    .collect(),
            },
            Message::ToolResult {
                call_id, content, ..
            } => OutMessage::Tool {
                tool_call_id: call_id,
                content,
            },
        });
    }
    let tools: Vec<OutTool<'a>> = request
        .tools
        .iter()
        .map(|t| OutTool {
            kind: "function",
            function: OutToolFunction {
                name: &t.name,
                description: &t.description,
                parameters: &t.parameters,
            },
        })
        .collect();
    let tool_choice = (!tools.is_empty()).then_some(match request.tool_choice {
        ToolChoice::Auto => "auto",
        ToolChoice::None => "none",
    });
    Body {
        model,
        messages,
        max_completion_tokens: request.max_output_tokens,
        max_tokens: features
            .legacy_max_tokens
            .then_some(request.max_output_tokens),
        tools,
        tool_choice,
        // The prefix (system, tools, task with its preloaded files) comes
        // first and stays the same across a group's turns; servers cache
        // prefixes of 1,024 tokens or more on their own, and the key routes
        // a group's turns to the same cache.
        prompt_cache_key: request.cache_key.as_deref().filter(|_| features.cache_key),
        seed: (request.sample > 0).then_some(request.sample),
        response_format: request
            .output_schema
            .as_ref()
            .filter(|_| features.response_format)
            .map(|output| {
                json!({
                    "type": "json_schema",
                    "json_schema": {
                        "name": output.name,
                        "strict": true,
                        "schema": features.schema(output),
                    },
                })
            }),
    }
}

#[derive(Deserialize)]
struct WireResponse {
    #[serde(default)]
    choices: Vec<WireChoice>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct WireChoice {
    message: WireMessage,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireMessage {
    #[serde(default)]
    content: Option<Value>,
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireToolCall>>,
}

#[derive(Deserialize)]
struct WireToolCall {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<WireFunction>,
}

#[derive(Deserialize)]
struct WireFunction {
    #[serde(default)]
    name: String,
    #[serde(default)]
    arguments: Option<Value>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<WireDetails>,
}

#[derive(Deserialize)]
struct WireDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

/// Parses a response body; an error string makes the HTTP layer retry.
fn decode(body: &[u8]) -> Result<ChatResponse, DecodeError> {
    let wire: WireResponse = serde_json::from_slice(body)?;
    let choice = wire
        .choices
        .into_iter()
        .next()
        .ok_or(DecodeError::Shape("the chat completion has no choices"))?;
    let text = match choice.message.content {
        Some(Value::String(s)) => Some(s),
        Some(Value::Array(parts)) => Some(
            parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join(""),
        ),
        _ => None,
    }
    .filter(|t| !t.is_empty())
    .or(choice.message.refusal.clone());
    let tool_calls = choice
        .message
        .tool_calls
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .filter_map(|(i, call)| {
            let function = call.function?;
            let arguments = match function.arguments {
                Some(Value::String(s)) => s,
                Some(Value::Null) | None => "{}".to_string(),
                Some(other) => other.to_string(),
            };
            Some(ToolCall::new(
                call.id.unwrap_or_else(|| format!("call_{i}")),
                function.name,
                arguments,
            ))
        })
        .collect();
    let finish = match choice.finish_reason.as_deref() {
        Some("stop") | None => FinishReason::Stop,
        Some("tool_calls" | "function_call") => FinishReason::ToolCalls,
        Some("length") => FinishReason::Length,
        Some("content_filter") => FinishReason::Refusal,
        Some(other) => FinishReason::Other(other.to_string()),
    };
    let finish = if choice.message.refusal.is_some() {
        FinishReason::Refusal
    } else {
        finish
    };
    let usage = wire.usage.map(|u| Usage {
        input_tokens: u.prompt_tokens,
        output_tokens: u.completion_tokens,
        cached_tokens: u
            .prompt_tokens_details
            .and_then(|d| d.cached_tokens)
            .unwrap_or(0),
        // OpenAI writes its cache for free.
        cache_write_tokens: 0,
    });
    Ok(ChatResponse {
        text,
        tool_calls,
        usage,
        finish,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::conversation::ToolSpec;

    #[test]
    fn decodes_tool_calls_with_string_or_object_arguments_and_no_usage() {
        let body = br#"{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[
            {"id":"a","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"x\"}"}},
            {"id":"b","type":"function","function":{"name":"grep","arguments":{"pattern":"y"}}}]},
            "finish_reason":"tool_calls"}]}"#;
        let r = decode(body).unwrap();
        assert_eq!(r.tool_calls.len(), 2);
        assert_eq!(r.tool_calls[0].arguments, r#"{"path":"x"}"#);
        assert_eq!(r.tool_calls[1].arguments, r#"{"pattern":"y"}"#);
        assert_eq!(r.usage, None);
        assert_eq!(r.text, None);
        assert_eq!(r.finish, FinishReason::ToolCalls);
    }

    #[test]
    fn rejects_bodies_without_choices() {
        assert!(decode(b"{}").is_err());
        assert!(decode(b"<html>").is_err());
    }

    #[test]
    fn encodes_one_tool_message_per_call_and_tool_choice() {
        let request = ChatRequest {
            model: None,
            system: "sys".into(),
            messages: vec![
                Message::User { text: "t".into() },
                Message::Assistant {
                    text: None,
                    tool_calls: vec![ToolCall::new("c1", "grep", "{}")],
                },
                Message::ToolResult {
                    call_id: "c1".into(),
                    name: "grep".into(),
                    content: "x".into(),
                    is_error: false,
                },
            ],
            tools: vec![ToolSpec {
                name: "grep".into(),
                description: "d".into(),
                parameters: json!({"type": "object"}),
            }],
            tool_choice: ToolChoice::None,
            max_output_tokens: 100,
            ..ChatRequest::default()
        };
        let body = serde_json::to_value(encode(
            "m",
            &request,
            Features {
                cache_key: true,
                response_format: true,
                legacy_max_tokens: true,
                schema_constraints: true,
            },
        ))
        .unwrap();
        assert_eq!(body["messages"][0]["role"], "system");
        assert_eq!(body["messages"][3]["tool_call_id"], "c1");
        assert_eq!(body["tool_choice"], "none");
        assert_eq!(body["tools"][0]["function"]["name"], "grep");
    }
}
