//! Streaming answers: Server-Sent Events for both wire formats.
//!
//! Takes the body of a streamed response as byte chunks, split anywhere
//! (inside a line, inside a UTF-8 character); gives text deltas as they
//! arrive and, at the end, the whole [`ChatResponse`] with its usage. Pure
//! functions over bytes, no I/O: [`SseDecoder`] cuts the byte stream into
//! events, [`OpenAiStream`] reads Chat Completions chunks (`data: {...}`
//! up to `data: [DONE]`, usage in the last chunk when the request asked for
//! `stream_options.include_usage`), [`AnthropicStream`] reads Messages
//! events (`message_start` … `message_stop`). A stream that ends before its
//! terminator is a [`StreamError::Cut`], never a short answer passed off as
//! whole: the caller retries the call or fails it with that error.
//!
//! [`Live`] shows the text while the body arrives; [`read_body`] reads the
//! whole body once it is in, and only that answer is ever used.

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde_json::Value;

use crate::llm::conversation::{ChatResponse, FinishReason, ToolCall, Usage};

/// Why a streamed answer cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum StreamError {
    /// The connection ended before the stream's terminator.
    #[error(
        "the {format} stream was cut after {bytes} bytes, before {terminator}: the answer is incomplete and was not used"
    )]
    Cut {
        format: &'static str,
        terminator: &'static str,
        bytes: u64,
    },
    /// The server sent an error event in the stream.
    #[error("the {format} stream carried an error: {message}")]
    Server {
        format: &'static str,
        message: String,
    },
    /// An event's data is not the JSON its format has.
    #[error("the {format} stream sent an event that is not valid JSON ({detail}): {head:?}")]
    BadEvent {
        format: &'static str,
        detail: String,
        head: String,
    },
}

/// One server-sent event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event:` field, when given.
    pub event: Option<String>,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
}

/// Cuts a byte stream into events. Lines end with `\n` or `\r\n`; a blank
/// line ends an event; `:` lines are comments (keep-alives).
#[derive(Debug, Default)]
pub(crate) struct SseDecoder {
    /// Bytes of an unfinished line. Kept as bytes: a chunk may end inside
    /// a UTF-8 character, and `\n` never occurs inside one.
    line: Vec<u8>,
    event: Option<String>,
    data: Vec<String>,
    has_data: bool,
    /// Every byte seen, for error messages.
    pub(crate) bytes: u64,
}

impl SseDecoder {
    /// Feeds one chunk; gives the events it completed.
    pub(crate) fn push(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        self.bytes = self.bytes.saturating_add(chunk.len() as u64);
        let mut events = Vec::new();
        for &byte in chunk {
            if byte == b'\n' {
                let mut line = std::mem::take(&mut self.line);
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                let line = String::from_utf8_lossy(&line).into_owned();
                if let Some(event) = self.line_done(&line) {
                    events.push(event);
                }
            } else {
                self.line.push(byte);
            }
        }
        events
    }

    /// The end of the body: an event not closed by a blank line is still
    /// given (some servers end without one); the format's reader decides
    /// whether the stream was complete.
    pub(crate) fn finish(&mut self) -> Option<SseEvent> {
        if !self.line.is_empty() {
            let line = String::from_utf8_lossy(&std::mem::take(&mut self.line)).into_owned();
            if let Some(event) = self.line_done(&line) {
                return Some(event);
            }
        }
        self.dispatch()
    }

    fn line_done(&mut self, line: &str) -> Option<SseEvent> {
        if line.is_empty() {
            return self.dispatch();
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "data" => {
                self.data.push(value.to_string());
                self.has_data = true;
            }
            "event" => self.event = Some(value.to_string()),
            // `id` and `retry` matter to browsers reconnecting, not here.
            _ => {}
        }
        None
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = self.event.take();
        if !self.has_data {
            self.data.clear();
            return None;
        }
        self.has_data = false;
        Some(SseEvent {
            event,
            data: std::mem::take(&mut self.data).join("\n"),
        })
    }
}

fn parse_json(format: &'static str, data: &str) -> Result<Value, StreamError> {
    serde_json::from_str(data).map_err(|e| StreamError::BadEvent {
        format,
        detail: e.to_string(),
        head: data.chars().take(120).collect(),
    })
}

/// A tool call being assembled from fragments.
#[derive(Debug, Default)]
struct PartialCall {
    id: Option<String>,
    name: String,
    arguments: String,
}

/// Reads an OpenAI Chat Completions stream.
#[derive(Debug, Default)]
pub(crate) struct OpenAiStream {
    text: String,
    refusal: Option<String>,
    calls: BTreeMap<u64, PartialCall>,
    usage: Option<Usage>,
    finish: Option<String>,
    done: bool,
}

const OPENAI: &str = "OpenAI chat completions";

impl OpenAiStream {
    /// Reads one event; gives the text it adds, if any.
    pub(crate) fn event(&mut self, event: &SseEvent) -> Result<Option<String>, StreamError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(None);
        }
        if data.is_empty() {
            return Ok(None);
        }
        let value = parse_json(OPENAI, data)?;
        if let Some(error) = value.get("error").filter(|e| !e.is_null()) {
            return Err(StreamError::Server {
                format: OPENAI,
                message: error
                    .get("message")
                    .and_then(Value::as_str)
                    .map_or_else(|| error.to_string(), str::to_string),
            });
        }
        if let Some(u) = value.get("usage").filter(|u| u.is_object()) {
            let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
            self.usage = Some(Usage {
                input_tokens: n("prompt_tokens"),
                output_tokens: n("completion_tokens"),
                cached_tokens: u
                    .pointer("/prompt_tokens_details/cached_tokens")
                    .and_then(Value::as_u64)
                    .unwrap_or(0),
                cache_write_tokens: 0,
            });
        }
        let mut added = String::new();
        let choices = value.get("choices").and_then(Value::as_array);
        for choice in choices.into_iter().flatten() {
            if choice.get("index").and_then(Value::as_u64).unwrap_or(0) != 0 {
                continue;
            }
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                self.finish = Some(reason.to_string());
            }
            let Some(delta) = choice.get("delta") else {
                continue;
            };
            if let Some(text) = delta.get("content").and_then(Value::as_str) {
                added.push_str(text);
            }
            if let Some(text) = delta.get("refusal").and_then(Value::as_str) {
                self.refusal.get_or_insert_with(String::new).push_str(text);
            }
            for call in delta
                .get("tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let index = call.get("index").and_then(Value::as_u64).unwrap_or(0);
                let partial = self.calls.entry(index).or_default();
                if let Some(id) = call.get("id").and_then(Value::as_str) {
                    partial.id = Some(id.to_string());
                }
                if let Some(name) = call.pointer("/function/name").and_then(Value::as_str) {
                    partial.name.push_str(name);
                }
                match call.pointer("/function/arguments") {
                    Some(Value::String(s)) => partial.arguments.push_str(s),
                    Some(Value::Null) | None => {}
                    Some(other) => partial.arguments.push_str(&other.to_string()),
                }
            }
        }
        self.text.push_str(&added);
        Ok((!added.is_empty()).then_some(added))
    }

    /// The whole answer, or [`StreamError::Cut`] when `[DONE]` never came.
    pub(crate) fn finish(self, bytes: u64) -> Result<ChatResponse, StreamError> {
        if !self.done {
            return Err(StreamError::Cut {
                format: OPENAI,
                terminator: "data: [DONE]",
                bytes,
            });
        }
        let finish = match self.finish.as_deref() {
            _ if self.refusal.is_some() => FinishReason::Refusal,
            Some("stop") | None => FinishReason::Stop,
            Some("tool_calls" | "function_call") => FinishReason::ToolCalls,
            Some("length") => FinishReason::Length,
            Some("content_filter") => FinishReason::Refusal,
            Some(other) => FinishReason::Other(other.to_string()),
        };
        let text = if self.text.is_empty() {
            self.refusal
        } else {
            Some(self.text)
        };
        Ok(ChatResponse {
            text,
            tool_calls: self
                .calls
                .into_iter()
                .filter(|(_, c)| !c.name.is_empty())
                .map(|(i, c)| {
                    ToolCall::new(
                        c.id.unwrap_or_else(|| format!("call_{i}")),
                        c.name,
                        if c.arguments.trim().is_empty() {
                            "{}".into()
                        } else {
                            c.arguments
                        },
                    )
                })
                .collect(),
            usage: self.usage,
            finish,
        })
    }
}

/// A content block of a Messages stream.
#[derive(Debug)]
enum Block {
    Text(String),
    Tool(PartialCall),
    Other,
}

/// Reads an Anthropic Messages stream.
#[derive(Debug, Default)]
pub(crate) struct AnthropicStream {
    blocks: BTreeMap<u64, Block>,
    input: u64,
    cache_write: u64,
    cache_read: u64,
    output: u64,
    has_usage: bool,
    stop_reason: Option<String>,
    stopped: bool,
}

const ANTHROPIC: &str = "Anthropic messages";

impl AnthropicStream {
    /// Reads one event; gives the text it adds, if any.
    pub(crate) fn event(&mut self, event: &SseEvent) -> Result<Option<String>, StreamError> {
        let value = parse_json(ANTHROPIC, &event.data)?;
        let kind = value
            .get("type")
            .and_then(Value::as_str)
            .or(event.event.as_deref())
            .unwrap_or_default()
            .to_string();
        let n = |v: &Value, k: &str| v.get(k).and_then(Value::as_u64);
        match kind.as_str() {
            "message_start" => {
                if let Some(u) = value.pointer("/message/usage") {
                    self.input = n(u, "input_tokens").unwrap_or(0);
                    self.cache_write = n(u, "cache_creation_input_tokens").unwrap_or(0);
                    self.cache_read = n(u, "cache_read_input_tokens").unwrap_or(0);
                    self.output = n(u, "output_tokens").unwrap_or(0);
                    self.has_usage = true;
                }
            }
            "content_block_start" => {
                let index = n(&value, "index").unwrap_or(0);
                let block = value.get("content_block").unwrap_or(&Value::Null);
                let started = match block.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        let text = block.get("text").and_then(Value::as_str).unwrap_or("");
                        self.blocks.insert(index, Block::Text(text.to_string()));
                        return Ok((!text.is_empty()).then(|| text.to_string()));
                    }
                    Some("tool_use") => Block::Tool(PartialCall {
                        id: block.get("id").and_then(Value::as_str).map(str::to_string),
                        name: block
                            .get("name")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string(),
                        arguments: String::new(),
                    }),
                    _ => Block::Other,
                };
                self.blocks.insert(index, started);
            }
            "content_block_delta" => {
                let index = n(&value, "index").unwrap_or(0);
                let delta = value.get("delta").unwrap_or(&Value::Null);
                match (
                    self.blocks.get_mut(&index),
                    delta.get("type").and_then(Value::as_str),
                ) {
                    (Some(Block::Text(text)), Some("text_delta")) => {
                        let added = delta.get("text").and_then(Value::as_str).unwrap_or("");
                        text.push_str(added);
                        return Ok((!added.is_empty()).then(|| added.to_string()));
                    }
                    (Some(Block::Tool(call)), Some("input_json_delta")) => {
                        call.arguments.push_str(
                            delta
                                .get("partial_json")
                                .and_then(Value::as_str)
                                .unwrap_or(""),
                        );
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(reason) = value.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(reason.to_string());
                }
                if let Some(out) = value.get("usage").and_then(|u| n(u, "output_tokens")) {
                    // Cumulative: the final count of the answer.
                    self.output = out;
                    self.has_usage = true;
                }
            }
            "message_stop" => self.stopped = true,
            "error" => {
                return Err(StreamError::Server {
                    format: ANTHROPIC,
                    message: value
                        .pointer("/error/message")
                        .and_then(Value::as_str)
                        .map_or_else(|| value.to_string(), str::to_string),
                });
            }
            // ping, content_block_stop, and kinds added later.
            _ => {}
        }
        Ok(None)
    }

    /// The whole answer, or [`StreamError::Cut`] when `message_stop` never
    /// came.
    pub(crate) fn finish(self, bytes: u64) -> Result<ChatResponse, StreamError> {
        if !self.stopped {
            return Err(StreamError::Cut {
                format: ANTHROPIC,
                terminator: "event: message_stop",
                bytes,
            });
        }
        let finish = match self.stop_reason.as_deref() {
            Some("end_turn" | "stop_sequence") | None => FinishReason::Stop,
            Some("tool_use") => FinishReason::ToolCalls,
            Some("max_tokens" | "model_context_window_exceeded") => FinishReason::Length,
            Some("refusal") => FinishReason::Refusal,
            Some(other) => FinishReason::Other(other.to_string()),
        };
        // Text blocks are joined as the non-streaming reader joins them.
        let mut texts: Vec<String> = Vec::new();
        let mut tool_calls = Vec::new();
        for (index, block) in self.blocks {
            match block {
                Block::Text(t) => texts.push(t),
                Block::Tool(call) => {
                    // A call cut by max_tokens is marked by the call path
                    // (`remote::settle`), as for every wire format.
                    let arguments = if call.arguments.trim().is_empty() {
                        "{}".to_string()
                    } else {
                        call.arguments
                    };
                    tool_calls.push(ToolCall::new(
                        call.id.unwrap_or_else(|| format!("toolu_{index}")),
                        call.name,
                        arguments,
                    ));
                }
                Block::Other => {}
            }
        }
        let text = texts.join("\n");
        Ok(ChatResponse {
            text: (!text.is_empty()).then_some(text),
            tool_calls,
            usage: self.has_usage.then(|| Usage {
                input_tokens: self.input + self.cache_write + self.cache_read,
                output_tokens: self.output,
                cached_tokens: self.cache_read,
                cache_write_tokens: self.cache_write,
            }),
            finish,
        })
    }
}

/// Which SSE dialect a wire format streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StreamFormat {
    OpenAi,
    Anthropic,
}

/// What a streaming call shows while it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shown<'a> {
    /// More text of the answer.
    Text(&'a str),
    /// The stream was cut and the call is sent again: the text shown so
    /// far is void, the answer starts over.
    Restart,
}

/// Where a streaming call shows its text.
pub(crate) type OnText<'a> = &'a (dyn Fn(Shown<'_>) + Send + Sync);

fn reader(format: StreamFormat) -> Box<dyn Reader + Send> {
    match format {
        StreamFormat::OpenAi => Box::new(OpenAiStream::default()),
        StreamFormat::Anthropic => Box::new(AnthropicStream::default()),
    }
}

/// The answer of a whole streamed body: complete, or an error (a cut
/// stream among them).
pub(crate) fn read_body(format: StreamFormat, body: &[u8]) -> Result<ChatResponse, StreamError> {
    read_all(&[body], reader(format)).1
}

/// Shows the text of a streamed body as its chunks arrive. Only text is
/// shown; the answer itself comes from [`read_body`] once the body is in.
pub(crate) struct Live<'a> {
    format: StreamFormat,
    on_text: OnText<'a>,
    /// The decoder and reader of the current attempt, and whether any of
    /// its text was shown.
    state: Mutex<(SseDecoder, Box<dyn Reader + Send>, bool)>,
}

impl<'a> Live<'a> {
    pub(crate) fn new(format: StreamFormat, on_text: OnText<'a>) -> Self {
        Self {
            format,
            on_text,
            state: Mutex::new((SseDecoder::default(), reader(format), false)),
        }
    }

    /// One chunk of the body; `None` when a new response body starts (a
    /// retry), which voids what the last one showed.
    pub(crate) fn chunk(&self, chunk: Option<&[u8]>) {
        let mut state = crate::util::relock(&self.state);
        let Some(chunk) = chunk else {
            if state.2 {
                (self.on_text)(Shown::Restart);
            }
            *state = (SseDecoder::default(), reader(self.format), false);
            return;
        };
        let events = state.0.push(chunk);
        for event in events {
            // A bad event is the whole-body reader's to report.
            if let Ok(Some(text)) = state.1.read(&event) {
                state.2 = true;
                (self.on_text)(Shown::Text(&text));
            }
        }
    }
}

/// Reads a whole streamed body given as chunks: the text deltas in order
/// and the answer.
fn read_all<S: Reader + ?Sized>(
    chunks: &[&[u8]],
    mut reader: Box<S>,
) -> (Vec<String>, Result<ChatResponse, StreamError>) {
    let mut decoder = SseDecoder::default();
    let mut deltas = Vec::new();
    let mut events = Vec::new();
    for chunk in chunks {
        events.extend(decoder.push(chunk));
    }
    for event in &events {
        match reader.read(event) {
            Ok(Some(d)) => deltas.push(d),
            Ok(None) => {}
            Err(e) => return (deltas, Err(e)),
        }
    }
    // An event the body ended inside of is a cut stream, not a bad event.
    if let Some(last) = decoder.finish() {
        match reader.read(&last) {
            Ok(Some(d)) => deltas.push(d),
            Ok(None) | Err(StreamError::BadEvent { .. }) => {}
            Err(e) => return (deltas, Err(e)),
        }
    }
    (deltas, reader.end(decoder.bytes))
}

/// Either format's reader.
trait Reader {
    fn read(&mut self, event: &SseEvent) -> Result<Option<String>, StreamError>;
    fn end(self: Box<Self>, bytes: u64) -> Result<ChatResponse, StreamError>;
}

impl Reader for OpenAiStream {
    fn read(&mut self, event: &SseEvent) -> Result<Option<String>, StreamError> {
        self.event(event)
    }
    fn end(self: Box<Self>, bytes: u64) -> Result<ChatResponse, StreamError> {
        self.finish(bytes)
    }
}

impl Reader for AnthropicStream {
    fn read(&mut self, event: &SseEvent) -> Result<Option<String>, StreamError> {
        self.event(event)
    }
    fn end(self: Box<Self>, bytes: u64) -> Result<ChatResponse, StreamError> {
        self.finish(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPENAI_BODY: &str = concat!(
        ": keep-alive\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Héllo\"},\"finish_reason\":null}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\", world\"},\"finish_reason\":null}]}\r\n\r\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_a\",\"type\":\"function\",\"function\":{\"name\":\"grep\",\"arguments\":\"\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"pattern\\\":\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"unwrap\\\"}\"}}]}}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":120,\"completion_tokens\":9,\"prompt_tokens_details\":{\"cached_tokens\":100}}}\n\n",
        "data: [DONE]\n\n",
    );

    const ANTHROPIC_BODY: &str = concat!(
        "event: message_start\n",
        "data: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":10,\"cache_creation_input_tokens\":2,\"cache_read_input_tokens\":3,\"output_tokens\":1}}}\n\n",
        "event: content_block_start\n",
        "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
        "event: ping\n",
        "data: {\"type\":\"ping\"}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Héllo\"}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\", world\"}}\n\n",
        "event: content_block_stop\n",
        "data: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
        "event: content_block_start\n",
        "data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"grep\",\"input\":{}}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"pattern\\\":\"}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\\\"unwrap\\\"}\"}}\n\n",
        "event: content_block_stop\n",
        "data: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
        "event: message_delta\n",
        "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":9}}\n\n",
        "event: message_stop\n",
        "data: {\"type\":\"message_stop\"}\n\n",
    );

    /// The body cut into chunks of `size` bytes (inside lines and inside
    /// the two-byte `é`).
    fn chunks(body: &str, size: usize) -> Vec<&[u8]> {
        body.as_bytes().chunks(size).collect()
    }

    #[test]
    fn openai_stream_gives_text_as_it_comes_then_calls_and_usage() {
        for size in [1, 2, 3, 7, 64, 10_000] {
            let (deltas, answer) = read_all(
                &chunks(OPENAI_BODY, size),
                Box::new(OpenAiStream::default()),
            );
            assert_eq!(deltas.concat(), "Héllo, world", "chunk size {size}");
            let answer = answer.unwrap();
            assert_eq!(answer.text.as_deref(), Some("Héllo, world"));
            assert_eq!(
                answer.tool_calls,
                vec![ToolCall::new("call_a", "grep", "{\"pattern\":\"unwrap\"}")]
            );
            assert_eq!(answer.finish, FinishReason::ToolCalls);
            assert_eq!(
                answer.usage,
                Some(Usage {
                    input_tokens: 120,
                    output_tokens: 9,
                    cached_tokens: 100,
                    cache_write_tokens: 0,
                })
            );
        }
    }

    #[test]
    fn anthropic_stream_gives_text_as_it_comes_then_calls_and_usage() {
        for size in [1, 2, 5, 64, 10_000] {
            let (deltas, answer) = read_all(
                &chunks(ANTHROPIC_BODY, size),
                Box::new(AnthropicStream::default()),
            );
            assert_eq!(deltas.concat(), "Héllo, world", "chunk size {size}");
            let answer = answer.unwrap();
            assert_eq!(answer.text.as_deref(), Some("Héllo, world"));
            assert_eq!(answer.tool_calls.len(), 1);
            assert_eq!(answer.tool_calls[0].id, "toolu_1");
            assert_eq!(answer.tool_calls[0].arguments, "{\"pattern\":\"unwrap\"}");
            assert_eq!(answer.finish, FinishReason::ToolCalls);
            assert_eq!(
                answer.usage,
                Some(Usage {
                    input_tokens: 15,
                    output_tokens: 9,
                    cached_tokens: 3,
                    cache_write_tokens: 2,
                })
            );
        }
    }

    #[test]
    fn a_stream_cut_in_the_middle_is_an_error_never_a_short_answer() {
        // Cut at every byte: only the whole body gives an answer.
        for (body, name) in [(OPENAI_BODY, "openai"), (ANTHROPIC_BODY, "anthropic")] {
            let terminator = if name == "openai" {
                "data: [DONE]"
            } else {
                "event: message_stop"
            };
            let end = body.find(terminator).unwrap();
            for cut in 0..end {
                let part = &body.as_bytes()[..cut];
                let result = if name == "openai" {
                    read_all(&[part], Box::new(OpenAiStream::default())).1
                } else {
                    read_all(&[part], Box::new(AnthropicStream::default())).1
                };
                match result {
                    Err(StreamError::Cut { bytes, .. }) => assert_eq!(bytes, cut as u64),
                    other => panic!("{name} cut at {cut}: {other:?}"),
                }
            }
        }
        let (_, cut) = read_all(
            &[&OPENAI_BODY.as_bytes()[..OPENAI_BODY.find("data: [DONE]").unwrap()]],
            Box::new(OpenAiStream::default()),
        );
        assert_eq!(
            cut.unwrap_err().to_string(),
            format!(
                "the OpenAI chat completions stream was cut after {} bytes, before data: [DONE]: the answer is incomplete and was not used",
                OPENAI_BODY.find("data: [DONE]").unwrap()
            )
        );
    }

    #[test]
    fn error_events_are_errors() {
        let body = "data: {\"error\":{\"message\":\"overloaded\"}}\n\n";
        let (_, r) = read_all(&[body.as_bytes()], Box::new(OpenAiStream::default()));
        assert_eq!(
            r.unwrap_err(),
            StreamError::Server {
                format: OPENAI,
                message: "overloaded".into()
            }
        );
        let body = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
        let (_, r) = read_all(&[body.as_bytes()], Box::new(AnthropicStream::default()));
        assert!(r.unwrap_err().to_string().contains("Overloaded"));
    }

    #[test]
    fn live_text_restarts_on_a_new_body_and_the_body_reader_agrees() {
        let shown = Mutex::new(Vec::<String>::new());
        let on_text = |s: Shown<'_>| {
            shown.lock().unwrap().push(match s {
                Shown::Text(t) => t.to_string(),
                Shown::Restart => "<restart>".to_string(),
            })
        };
        let live = Live::new(StreamFormat::OpenAi, &on_text);
        live.chunk(None);
        let cut = OPENAI_BODY.find(", world").unwrap() + 200;
        for c in chunks(&OPENAI_BODY[..cut], 5) {
            live.chunk(Some(c));
        }
        live.chunk(None);
        for c in chunks(OPENAI_BODY, 9) {
            live.chunk(Some(c));
        }
        assert_eq!(
            shown.lock().unwrap().concat(),
            "Héllo, world<restart>Héllo, world"
        );
        assert!(matches!(
            read_body(StreamFormat::OpenAi, &OPENAI_BODY.as_bytes()[..cut]),
            Err(StreamError::Cut { .. })
        ));
        assert_eq!(
            read_body(StreamFormat::Anthropic, ANTHROPIC_BODY.as_bytes())
                .unwrap()
                .text
                .as_deref(),
            Some("Héllo, world")
        );
    }

    #[test]
    fn decoder_joins_data_lines_and_ignores_comments_and_unknown_fields() {
        let mut d = SseDecoder::default();
        let events = d.push(b": hi\nid: 3\nevent: x\ndata: a\ndata:b\n\ndata: c");
        assert_eq!(
            events,
            vec![SseEvent {
                event: Some("x".into()),
                data: "a\nb".into()
            }]
        );
        assert_eq!(
            d.finish(),
            Some(SseEvent {
                event: None,
                data: "c".into()
            })
        );
        assert_eq!(d.finish(), None);
    }
}
