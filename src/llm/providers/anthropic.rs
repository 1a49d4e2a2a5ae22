//! The Anthropic Messages wire format (`POST {base}/v1/messages`).
//!
//! Takes a [`ChatRequest`]; gives a [`ChatResponse`]. `system` goes at the
//! top level, tool results of one turn go back in ONE user message that
//! starts with every `tool_result` block, `input` arrives as an object.
//! Under `anthropic-version: 2026-10-21` no sampling parameter is sent.

use reqwest::header::{HeaderMap, HeaderValue};
use serde::Deserialize;
use serde_json::{Value, json};

use super::ProviderError;
use super::http::DecodeError;
use super::remote::{Features, Optional, Wire};
use crate::llm::conversation::{
    ChatRequest, ChatResponse, FinishReason, Message, ToolCall, ToolChoice, Usage,
};

/// The API version sent by default.
pub(crate) const DEFAULT_VERSION: &str = "2023-06-01";

/// The Messages wire format.
pub(crate) struct Anthropic {
    /// Where the key comes from, for error messages.
    pub(crate) key_env: String,
    /// The `anthropic-version` header.
    pub(crate) version: String,
}

impl Anthropic {
    /// Versions from 2026-10-21 on refuse sampling parameters.
    fn sampling(&self) -> bool {
        self.version.as_str() < "2026-10-21"
    }
}

impl Wire for Anthropic {
    fn name(&self) -> &'static str {
        "anthropic"
    }

    fn stream_format(&self) -> Option<super::stream::StreamFormat> {
        Some(super::stream::StreamFormat::Anthropic)
    }

    fn url(&self, base: &str) -> String {
        if base.ends_with("/v1") {
            format!("{base}/messages")
        } else {
            format!("{base}/v1/messages")
        }
    }

    fn headers(&self, api_key: Option<&str>) -> Result<HeaderMap, ProviderError> {
        let mut headers = HeaderMap::new();
        if let Some(key) = api_key {
            let mut value = HeaderValue::from_str(key).map_err(|_| ProviderError::BadKey {
                key_env: self.key_env.clone(),
            })?;
            value.set_sensitive(true);
            headers.insert("x-api-key", value);
        }
        let version =
            HeaderValue::from_str(&self.version).map_err(|_| ProviderError::BadHeader {
                name: "anthropic-version",
                value: self.version.clone(),
            })?;
        headers.insert("anthropic-version", version);
        Ok(headers)
    }

    type Body<'a> = Value;

    fn encode<'a>(&'a self, model: &'a str, request: &'a ChatRequest, features: Features) -> Value {
        encode(model, request, self.sampling(), features)
    }

    fn decode(&self, body: &[u8]) -> Result<ChatResponse, DecodeError> {
        decode(body)
    }

    fn rejects(&self, message: &str) -> Vec<Optional> {
        if super::remote::names_a_constraint(message) {
            vec![Optional::SchemaConstraints]
        } else {
            Vec::new()
        }
    }
}

fn encode(model: &str, request: &ChatRequest, sampling: bool, features: Features) -> Value {
    let mut messages: Vec<Value> = Vec::new();
    for message in &request.messages {
        match message {
            Message::User { text } => {
                // Text after tool results joins their user message, after
                // the results, as the API requires.
                if let Some(last) = messages.last_mut()
                    && last["role"] == "user"
                    && let Some(blocks) = last["content"].as_array_mut()
                {
                    blocks.push(json!({"type": "text", "text": text}));
                    continue;
                }
                messages.push(json!({"role": "user", "content": [{"type": "text", "text": text}]}));
            }
            Message::Assistant { text, tool_calls } => {
                let mut blocks = Vec::new();
                if let Some(text) = text.as_ref().filter(|t| !t.is_empty()) {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                for call in tool_calls {
                    let input = serde_json::from_str::<Value>(&call.arguments)
                        .ok()
                        .filter(Value::is_object)
                        .unwrap_or_else(|| json!({}));
                    blocks.push(
                        json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}),
                    );
                }
                if blocks.is_empty() {
                    blocks.push(json!({"type": "text", "text": "(no answer)"}));
                }
                messages.push(json!({"role": "assistant", "content": blocks}));
            }
            Message::ToolResult {
                call_id,
                content,
                is_error,
                ..
            } => {
                let block = json!({"type": "tool_result", "tool_use_id": call_id,
                                   "content": content, "is_error": is_error});
                match messages.last_mut() {
                    Some(last)
                        if last["role"] == "user"
                            && last["content"]
                                .as_array()
                                .is_some_and(|b| b.iter().all(|b| b["type"] == "tool_result")) =>
                    {
                        if let Some(blocks) = last["content"].as_array_mut() {
                            blocks.push(block);
                        }
                    }
                    _ => messages.push(json!({"role": "user", "content": [block]})),
                }
            }
        }
    }
    mark_cache_breakpoints(&mut messages);
    // The last system block caches tools and system (tools come first in
    // the prefix); the newest user turns cache the conversation so far, so
    // each turn reads the previous turn's prefix from the cache.
    let system = if request.system.is_empty() {
        json!([])
    } else {
        json!([{"type": "text", "text": request.system, "cache_control": {"type": "ephemeral"}}])
    };
    let mut body = json!({
        "model": model,
        "max_tokens": request.max_output_tokens,
        "system": system,
        "messages": messages,
    });
    if sampling {
        // A further sample of a group (`--samples`) is a draw of its own.
        body["temperature"] = if request.sample > 0 {
            json!(1)
        } else {
            json!(0)
        };
    }
    let mut tools: Vec<Value> = request
        .tools
        .iter()
        .map(
            |t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}),
        )
        .collect();
    if let Some(output) = &request.output_schema {
        // The Messages API's structured output: one forced tool whose input
        // is the answer (read back as text by the call path).
        tools.push(json!({
            "name": output.name,
            "description": output.description,
            "input_schema": features.schema(output),
        }));
        body["tool_choice"] = json!({"type": "tool", "name": output.name});
    } else if !tools.is_empty() {
        body["tool_choice"] = match request.tool_choice {
            ToolChoice::Auto => json!({"type": "auto"}),
            ToolChoice::None => json!({"type": "none"}),
        };
    }
    if !tools.is_empty() {
        body["tools"] = Value::Array(tools);
    }
    body
}

/// Most cache breakpoints one request may carry, the system's included.
const MAX_BREAKPOINTS: usize = 4;

/// Marks the last content block of the newest user turns, at most
/// [`MAX_BREAKPOINTS`] less the system's, the oldest dropped first.
fn mark_cache_breakpoints(messages: &mut [Value]) {
    let mut left = MAX_BREAKPOINTS - 1;
    for message in messages.iter_mut().rev() {
        if left == 0 {
            break;
        }
        if message["role"] != "user" {
            continue;
        }
        if let Some(last) = message["content"]
            .as_array_mut()
            .and_then(|blocks| blocks.last_mut())
        {
            last["cache_control"] = json!({"type": "ephemeral"});
            left -= 1;
        }
    }
}

#[derive(Deserialize)]
struct WireResponse {
    #[serde(default)]
    content: Vec<Value>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(rename = "type", default)]
    kind: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
}

fn decode(body: &[u8]) -> Result<ChatResponse, DecodeError> {
    let wire: WireResponse = serde_json::from_slice(body)?;
    if wire.kind.as_deref() == Some("error") {
        return Err(DecodeError::Shape("an error object arrived with HTTP 200"));
    }
    if wire.content.is_empty() && wire.stop_reason.is_none() {
        return Err(DecodeError::Shape(
            "the message has neither content nor stop_reason",
        ));
    }
    let mut texts = Vec::new();
    let mut tool_calls = Vec::new();
    for block in &wire.content {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                if let Some(t) = block.get("text").and_then(Value::as_str) {
                    texts.push(t.to_string());
                }
            }
            // A forced output tool comes back as a call too: the call path
            // reads it as the answer's text (`remote::settle`).
            Some("tool_use") => tool_calls.push(ToolCall::new(
                block.get("id").and_then(Value::as_str).unwrap_or_default(),
                block
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
                block
                    .get("input")
                    .map_or_else(|| "{}".to_string(), Value::to_string),
            )),
            _ => {}
        }
    }
    let finish = match wire.stop_reason.as_deref() {
        Some("end_turn" | "stop_sequence") | None => FinishReason::Stop,
        Some("tool_use") => FinishReason::ToolCalls,
        Some("max_tokens" | "model_context_window_exceeded") => FinishReason::Length,
        Some("refusal") => FinishReason::Refusal,
        Some(other) => FinishReason::Other(other.to_string()),
    };
    let usage = wire.usage.map(|u| {
        let cache_read = u.cache_read_input_tokens.unwrap_or(0);
        Usage {
            input_tokens: u.input_tokens + u.cache_creation_input_tokens.unwrap_or(0) + cache_read,
            output_tokens: u.output_tokens,
            cached_tokens: cache_read,
            cache_write_tokens: u.cache_creation_input_tokens.unwrap_or(0),
        }
    });
    let text = texts.join("\n");
    Ok(ChatResponse {
        text: (!text.is_empty()).then_some(text),
        tool_calls,
        usage,
        finish,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: Features = Features {
        cache_key: true,
        response_format: true,
        legacy_max_tokens: true,
        schema_constraints: true,
    };

    fn call(id: &str) -> ToolCall {
        ToolCall::new(id, "read_file", r#"{"path":"a"}"#)
    }

    fn result(id: &str) -> Message {
        Message::ToolResult {
            call_id: id.into(),
            name: "read_file".into(),
            content: "x".into(),
            is_error: id == "b",
        }
    }

    #[test]
    fn every_tool_use_is_answered_in_one_user_message() {
        let request = ChatRequest {
            model: None,
            system: "s".into(),
            messages: vec![
                Message::User {
                    text: "task".into(),
                },
                Message::Assistant {
                    text: Some("reading".into()),
                    tool_calls: vec![call("a"), call("b")],
                },
                result("a"),
                result("b"),
                Message::User {
                    text: "summary please".into(),
                },
            ],
            tools: vec![],
            tool_choice: ToolChoice::None,
            max_output_tokens: 10,
            ..ChatRequest::default()
        };
        let body = encode("m", &request, false, ALL);
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 3);
        let blocks = messages[2]["content"].as_array().unwrap();
        assert_eq!(blocks[0]["tool_use_id"], "a");
        assert_eq!(blocks[1]["tool_use_id"], "b");
        assert_eq!(blocks[1]["is_error"], true);
        assert_eq!(blocks[2]["type"], "text");
        assert!(body.get("temperature").is_none());
        assert_eq!(messages[1]["content"][1]["input"]["path"], "a");
    }

    #[test]
    fn decodes_tool_use_usage_and_truncation() {
        let body = br#"{"type":"message","content":[{"type":"text","text":"hi"},
            {"type":"tool_use","id":"t1","name":"grep","input":{"pattern":"x"}}],
            "stop_reason":"max_tokens","usage":{"input_tokens":10,"output_tokens":5,
            "cache_creation_input_tokens":2,"cache_read_input_tokens":3}}"#;
        let r = super::super::remote::settle(decode(body).unwrap(), &ChatRequest::default());
        assert_eq!(r.text.as_deref(), Some("hi"));
        assert_eq!(r.finish, FinishReason::Length);
        assert!(
            r.tool_calls[0].truncated,
            "a call cut by max_tokens is marked"
        );
        assert_eq!(r.tool_calls[0].arguments, r#"{"pattern":"x"}"#);
        assert_eq!(
            r.usage,
            Some(Usage {
                input_tokens: 15,
                output_tokens: 5,
                cached_tokens: 3,
                cache_write_tokens: 2,
            })
        );
        assert!(decode(br#"{"type":"error","error":{"type":"overloaded_error"}}"#).is_err());
    }

    fn turns(n: usize) -> Vec<Message> {
        let mut messages = vec![Message::User {
            text: "task".into(),
        }];
        for i in 0..n {
            let id = format!("c{i}");
            messages.push(Message::Assistant {
                text: None,
                tool_calls: vec![call(&id)],
            });
            messages.push(result(&id));
        }
        messages
    }

    fn breakpoints(body: &Value) -> usize {
        body.to_string().matches("cache_control").count()
    }

    #[test]
    fn prompt_cache_breakpoints_mark_the_system_and_the_newest_user_turns_at_most_four() {
        for n in [0, 1, 2, 5, 12] {
            let request = ChatRequest {
                system: "sys".into(),
                messages: turns(n),
                max_output_tokens: 100,
                ..ChatRequest::default()
            };
            let body = encode("m", &request, false, ALL);
            assert_eq!(body["system"][0]["cache_control"]["type"], "ephemeral");
            let messages = body["messages"].as_array().unwrap();
            let newest = messages.last().unwrap()["content"].as_array().unwrap();
            assert_eq!(
                newest.last().unwrap()["cache_control"]["type"],
                "ephemeral",
                "the newest user turn is marked"
            );
            assert!(breakpoints(&body) <= 4, "{n} turns: {}", breakpoints(&body));
            assert_eq!(breakpoints(&body), (n + 1).min(3) + 1);
        }
    }

    #[test]
    fn an_output_schema_is_one_forced_tool_read_back_as_text() {
        let output = crate::llm::conversation::OutputSchema {
            name: "answer_it".into(),
            description: "The answer.".into(),
            schema: json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}}),
            relaxed: Some(json!({"type": "object", "properties": {"n": {"type": "integer"}}})),
        };
        let request = ChatRequest {
            system: "sys".into(),
            messages: turns(1),
            tools: crate::tools::ToolContext::specs(&["read_file".into()]),
            tool_choice: ToolChoice::None,
            max_output_tokens: 100,
            output_schema: Some(output.clone()),
            ..ChatRequest::default()
        };
        let body = encode("m", &request, false, ALL);
        assert_eq!(
            body["tool_choice"],
            json!({"type": "tool", "name": "answer_it"})
        );
        let names: Vec<&str> = body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, vec!["read_file", "answer_it"]);
        assert_eq!(body["tools"][1]["description"], "The answer.");
        assert_eq!(body["tools"][1]["input_schema"], output.schema);
        let relaxed = Features {
            schema_constraints: false,
            ..ALL
        };
        let body = encode("m", &request, false, relaxed);
        assert_eq!(body["tools"][1]["input_schema"], output.relaxed.unwrap());
        let answer = br#"{"type":"message","content":[{"type":"text","text":"Here."},
            {"type":"tool_use","id":"r","name":"answer_it","input":{"n":3}}],"stop_reason":"tool_use"}"#;
        let r = super::super::remote::settle(decode(answer).unwrap(), &request);
        assert!(r.tool_calls.is_empty(), "the answer is not a call to run");
        assert_eq!(r.text.as_deref(), Some("Here.\n{\"n\":3}"));
    }
}
