//! The conversation model every layer shares: messages, tool calls and
//! specs, requests, responses and token usage.
//!
//! Providers convert it to and from their wire formats; tools, budgets,
//! events and prices use it without knowing any provider (as codex-rs keeps
//! its protocol apart from its clients). Imports nothing of the crate but
//! [`crate::util`].

use serde::{Deserialize, Serialize};

use crate::llm::tokens::TokenCounter;

/// One message of a conversation. The system prompt is not a message: it
/// travels in [`ChatRequest::system`], because wire formats disagree on
/// where it goes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub(crate) enum Message {
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
pub(crate) struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
    /// The answer was cut by the output token limit while this call was
    /// written: its arguments may be incomplete, so it is never run (the
    /// model is told to call it again).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

impl ToolCall {
    /// A complete call.
    pub(crate) fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
            truncated: false,
        }
    }
}

/// Most tool calls run from one model turn; the rest get an error result
/// (the agent loop's router), and the offline engine never makes more.
pub(crate) const MAX_CALLS_PER_TURN: usize = 16;

/// A tool as offered to the model.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON schema of the arguments object.
    pub parameters: serde_json::Value,
}

/// A JSON schema the answer must follow, through the provider's
/// structured output (OpenAI's `response_format`, a forced tool for
/// Anthropic). Providers map it without knowing what it describes: the
/// caller owns its meaning.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct OutputSchema {
    /// A name for it (`[a-zA-Z0-9_-]`): the response format's name, or
    /// the forced tool's.
    pub name: String,
    /// What the answer is, for a wire format that shows it to the model
    /// (the forced tool's description).
    pub description: String,
    /// The schema, strict: every key required, no others.
    pub schema: serde_json::Value,
    /// The same schema without the constraints some servers reject (an
    /// `enum`, a `minimum`): sent instead, for the rest of the run, after a
    /// server refused `schema` naming one.
    pub relaxed: Option<serde_json::Value>,
}

/// One read of a file an agent was shown (preloaded, or through
/// `read_file`): which lines of how many.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FileRead {
    pub path: String,
    /// The first and the last line shown, 1-based.
    pub first: u64,
    pub last: u64,
    /// The file's line count.
    pub total: u64,
    /// The lines of `first..=last` shown only in part: longer than a line
    /// `read_file` shows whole (see [`crate::tools::LINE_SHOWN`]).
    pub cut: Vec<u64>,
}

impl FileRead {
    /// Whether `line` was shown whole by this read.
    pub(crate) fn shows_whole(&self, line: u64) -> bool {
        (self.first..=self.last).contains(&line) && !self.cut.contains(&line)
    }
}

/// The lines of each file that no read of `reads` showed whole: cut by
/// every read that showed them. What lies past the cut was seen by no one.
/// Each cut line is looked up among its own file's reads only: a group of
/// a hundred thousand files each with a long line stays linear.
pub(crate) fn lines_never_whole(
    reads: &[FileRead],
) -> std::collections::BTreeMap<String, Vec<u64>> {
    let mut by_path: std::collections::BTreeMap<&str, Vec<&FileRead>> = Default::default();
    for read in reads {
        by_path.entry(read.path.as_str()).or_default().push(read);
    }
    let mut out = std::collections::BTreeMap::new();
    for (path, of_path) in by_path {
        let mut lines: Vec<u64> = of_path
            .iter()
            .flat_map(|r| r.cut.iter().copied())
            .filter(|&line| !of_path.iter().any(|r| r.shows_whole(line)))
            .collect();
        lines.sort_unstable();
        lines.dedup();
        if !lines.is_empty() {
            out.insert(path.to_string(), lines);
        }
    }
    out
}

/// What an agent's loop knows of its task as data, for an engine that
/// plays the model without reading its prose (the offline rule engine).
/// It is not part of a [`ChatRequest`]: the loop hands it to the provider
/// beside the request ([`crate::llm::providers::Provider::turn`]), so no
/// wire format can send it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Facts {
    /// The files the task asks to be audited, in the plan's order (none:
    /// explore the repository).
    pub files: Vec<String>,
    /// Every read of a file so far, in order.
    pub reads: Vec<FileRead>,
    /// The findings a skeptic is asked to refute (none for other agents).
    pub challenges: Vec<ChallengeFact>,
    /// The leads an auditor is asked to confirm or dismiss (none without
    /// leads).
    pub leads: Vec<LeadFact>,
}

/// One lead put to an auditor, as data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LeadFact {
    /// The id its answer names.
    pub id: String,
    pub path: String,
    pub line: u32,
    /// The rule that flagged it (another tool's id for a SARIF lead).
    pub rule: String,
    /// The CWE number it names, if any.
    pub cwe: Option<u32>,
}

/// One finding put to the skeptic, as data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ChallengeFact {
    /// The id its answer names.
    pub id: String,
    pub path: String,
    pub line: u32,
    pub rule: Option<String>,
}

/// Whether the model may call tools in this turn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ToolChoice {
    /// The model decides.
    #[default]
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
    /// Input tokens written to the provider's prompt cache (already counted
    /// in `input_tokens`; Anthropic bills them above the input price).
    #[serde(default)]
    pub cache_write_tokens: u64,
}

impl Usage {
    /// Adds another usage into this one.
    pub fn add(&mut self, other: Usage) {
        // Saturating: a server may report any number.
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cached_tokens = self.cached_tokens.saturating_add(other.cached_tokens);
        self.cache_write_tokens = self
            .cache_write_tokens
            .saturating_add(other.cache_write_tokens);
    }

    /// Input plus output tokens.
    pub fn total(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }
}

/// Why the model stopped.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum FinishReason {
    Stop,
    ToolCalls,
    /// Cut by the output token limit: a tool call in this answer may be
    /// truncated.
    Length,
    Refusal,
    Other(String),
}

/// One request to a model.
#[derive(Clone, Debug, Default)]
pub(crate) struct ChatRequest {
    /// A model that overrides the provider's for this request (an agent
    /// definition's `model`).
    pub model: Option<String>,
    pub system: String,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
    pub tool_choice: ToolChoice,
    pub max_output_tokens: u32,
    /// Groups requests that share a prefix for the provider's prompt cache
    /// (OpenAI's `prompt_cache_key`); stable across a group's turns.
    pub cache_key: Option<String>,
    /// The schema the answer must follow, through the provider's
    /// structured output; `None`: free text.
    pub output_schema: Option<OutputSchema>,
    /// Which sample of a group this request belongs to (`--samples`): 0
    /// for the first (sent as ever), k > 0 for the others, which ask the
    /// provider for a different draw (OpenAI's `seed`, Anthropic's
    /// temperature where its version takes one).
    pub sample: u32,
    /// How the request's tokens are counted: the model's own tokenizer
    /// where it has a public one, else bytes / 3.
    pub counter: TokenCounter,
    /// [`ChatRequest::estimated_tokens`], computed once: the budget, the
    /// rate limiter and a missing usage all ask for it.
    pub estimate: std::sync::OnceLock<u64>,
}

/// Tokens a chat format adds around each message, tool call and tool
/// definition (role and delimiters), and once to prime the answer: OpenAI's
/// documented 3 a message and 3 for the reply, plus one for the name or
/// call id most of them carry.
const PER_MESSAGE: u64 = 4;
const REPLY_PRIMING: u64 = 3;

impl ChatRequest {
    /// The request's input tokens plus its output limit, counted with
    /// [`ChatRequest::counter`]: what the rate limiter reserves of a
    /// tokens-per-minute limit and the budget weighs before it is sent.
    pub(crate) fn estimated_tokens(&self) -> u64 {
        *self.estimate.get_or_init(|| match self.counter {
            TokenCounter::Bytes => self.estimate_tokens(),
            TokenCounter::O200k | TokenCounter::Cl100k => self.count_tokens(),
        })
    }

    /// The input counted text by text with the model's tokenizer, plus
    /// what the chat format adds around each message.
    fn count_tokens(&self) -> u64 {
        let counter = self.counter;
        let mut tokens = counter.count(&self.system) + PER_MESSAGE + REPLY_PRIMING;
        for message in &self.messages {
            tokens += PER_MESSAGE
                + match message {
                    Message::User { text } => counter.count(text),
                    Message::Assistant { text, tool_calls } => {
                        text.as_deref().map_or(0, |t| counter.count(t))
                            + tool_calls
                                .iter()
                                .map(|c| {
                                    counter.count(&c.name)
                                        + counter.count(&c.arguments)
                                        + PER_MESSAGE
                                })
                                .sum::<u64>()
                    }
                    Message::ToolResult { content, .. } => counter.count(content),
                };
        }
        for tool in &self.tools {
            tokens += PER_MESSAGE
                + counter.count(&tool.name)
                + counter.count(&tool.description)
                + counter.count(&tool.parameters.to_string());
        }
        // A structured answer's schema is sent too (a response format or
        // a forced tool).
        if let Some(schema) = &self.output_schema {
            tokens += PER_MESSAGE
                + counter.count(&schema.name)
                + counter.count(&schema.description)
                + counter.count(&schema.schema.to_string());
        }
        tokens + u64::from(self.max_output_tokens)
    }

    /// The input as bytes / 3 (the estimate for models without a public
    /// tokenizer, calibrated by the budget on the server's counts).
    fn estimate_tokens(&self) -> u64 {
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
        crate::util::estimate_tokens(bytes as u64) + u64::from(self.max_output_tokens)
    }
}

/// What a model answered.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ChatResponse {
    pub text: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    /// Absent when the server did not report it (some compatible servers).
    pub usage: Option<Usage>,
    pub finish: FinishReason,
}

impl ChatResponse {
    /// The usage the server reported or, when it reported none (some
    /// compatible servers), an estimate: a call still costs something, and
    /// budgets and reports must not count it as free.
    pub(crate) fn usage_or_estimate(&self, request: &ChatRequest) -> Usage {
        self.usage.unwrap_or_else(|| Usage {
            input_tokens: request
                .estimated_tokens()
                .saturating_sub(u64::from(request.max_output_tokens)),
            output_tokens: crate::util::estimate_tokens(
                self.text.as_ref().map_or(0, |t| t.len() as u64)
                    + self
                        .tool_calls
                        .iter()
                        .map(|c| c.arguments.len() as u64)
                        .sum::<u64>(),
            ),
            cached_tokens: 0,
            cache_write_tokens: 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(path: &str, first: u64, last: u64, cut: &[u64]) -> FileRead {
        FileRead {
            path: path.into(),
            first,
            last,
            total: 100,
            cut: cut.to_vec(),
        }
    }

    #[test]
    fn a_line_cut_by_every_read_of_it_is_never_whole_one_read_whole_once_is() {
        let reads = [
            read("a.js", 1, 40, &[3, 7]),
            // Line 3 alone, shown whole; line 9 alone, cut again.
            read("a.js", 3, 3, &[]),
            read("b.js", 9, 9, &[9]),
            read("c.js", 1, 10, &[]),
        ];
        let never = lines_never_whole(&reads);
        assert_eq!(
            never,
            std::collections::BTreeMap::from([
                ("a.js".to_string(), vec![7]),
                ("b.js".to_string(), vec![9]),
            ])
        );
        assert!(lines_never_whole(&[]).is_empty());
    }
}
