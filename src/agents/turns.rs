//! The one agent loop. Every agent (a scan's sub-agents, the lead of
//! `fanscan ask`, and the stages to come) is a configuration of it: its
//! definition, its tools ([`ToolRouter`]), its final step ([`Finish`]) and
//! how its final answer is read ([`Reader`]); never how a turn runs.
//!
//! Takes a [`Loop`] and the start of a fresh context ([`Start`]: one task
//! message); gives an [`Outcome`]: how it ended, what it cost, what it saw
//! and its final answer as read. A turn is: check the run's budget, call
//! the model (cancellable, usage counted at once), append its answer, run
//! its tool calls through the router and append the results; repeat until
//! the model answers without calls or says `[TASK_COMPLETE]`, `max_rounds`
//! is reached or the run winds down. The steps it can be given: the nudge
//! (a model that would end without having seen a file of its task is told
//! which, once), the final turn (tools off: always, for a summary, or only
//! when stopped early, for an answer; free text or a structured answer
//! with the stage's own schema), and the one repair turn its reader may
//! ask for. The conversation moves into each request and back: it is
//! never copied.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::definition::AgentDefinition;
use super::router::{Fatal, ToolRouter};
use crate::llm::budget::Spend;
use crate::llm::conversation::{
    ChallengeFact, ChatRequest, ChatResponse, Facts, FileRead, FinishReason, Message, OutputSchema,
    ToolCall, ToolChoice, ToolSpec, Usage,
};
use crate::llm::events::EventSink;
use crate::llm::providers::stream::{OnText, Shown};
use crate::llm::providers::{Provider, ProviderError};
use crate::model::findings::says_complete;
use crate::tools::fence::Fence;

/// How an agent ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentStatus {
    /// The model finished on its own.
    Complete,
    /// `max_rounds` was reached; the summary was still asked.
    MaxRounds,
    /// The run's budget or an interrupt asked it to wrap up early; the
    /// summary was still asked.
    WrappedUp,
    /// A provider error ended it; what was done is kept.
    Failed,
    /// The model answered without ever seeing its group's files (none
    /// preloaded, none read, even after one nudge): nothing was reviewed.
    Unreviewed,
    /// Cancelled before it could finish.
    Interrupted,
    /// The model refused the task (a provider's safety filter), and refused
    /// again when asked once more as a defensive review: nothing was
    /// reviewed, and the report lists the provider's words.
    Blocked,
}

impl AgentStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Complete => "complete",
            Self::MaxRounds => "max_rounds",
            Self::WrappedUp => "wrapped_up",
            Self::Failed => "failed",
            Self::Unreviewed => "unreviewed",
            Self::Interrupted => "interrupted",
            Self::Blocked => "blocked",
        }
    }

    /// Whether the group's files count as reviewed.
    pub fn reviewed(self) -> bool {
        match self {
            Self::Complete | Self::MaxRounds | Self::WrappedUp => true,
            Self::Failed | Self::Unreviewed | Self::Interrupted | Self::Blocked => false,
        }
    }

    /// The status of a group made of two parts (carried and re-audited
    /// files, or samples): the one further from a clean finish.
    pub(crate) fn worse(self, other: Self) -> Self {
        let rank = |s: Self| match s {
            Self::Complete => 0,
            Self::MaxRounds => 1,
            Self::WrappedUp => 2,
            Self::Unreviewed => 3,
            Self::Blocked => 4,
            Self::Interrupted => 5,
            Self::Failed => 6,
        };
        if rank(other) > rank(self) {
            other
        } else {
            self
        }
    }
}

/// Why the loop stopped before the model was done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stop {
    /// The definition's `max_rounds` was reached.
    MaxRounds,
    /// The run is winding down (a budget, the clock, Ctrl-C).
    WindingDown,
}

/// Makes an output schema from the files an agent may cite: its task's
/// files, then the others it read, sorted.
pub(crate) type SchemaFor<'a> = &'a (dyn Fn(&[String]) -> OutputSchema + Sync);

/// The last step of a loop.
pub(crate) enum Finish<'a> {
    /// The model's last answer is the answer. When the loop was stopped
    /// early, one more turn (tools off) asks for it, saying why.
    Answer { when_stopped: fn(Stop) -> String },
    /// One more turn, always (tools off), asking `request`: in free text,
    /// or with `schema` through the provider's structured output; then the
    /// repair turn when the reader asks for one.
    Summary {
        request: String,
        schema: Option<SchemaFor<'a>>,
    },
}

impl Finish<'_> {
    /// What the final turn is called in errors.
    fn noun(&self) -> &'static str {
        match self {
            Self::Answer { .. } => "answer",
            Self::Summary { .. } => "summary",
        }
    }
}

/// How a stage reads its final answer.
pub(crate) trait Reader: Sync {
    /// The answer as the stage uses it.
    type Read;
    /// Reads a final answer's text.
    fn read(&self, text: &str) -> Self::Read;
    /// The repair turn's request when `read` needs one (asked once).
    fn repair(&self, _read: &Self::Read) -> Option<String> {
        None
    }
    /// Which to keep of the first answer and the repaired one.
    fn keep(&self, _first: Self::Read, second: Self::Read) -> Self::Read {
        second
    }
}

/// A final answer in free text: the completion marker taken off, trimmed.
pub(crate) struct PlainText;

impl Reader for PlainText {
    type Read = String;
    fn read(&self, text: &str) -> String {
        crate::model::findings::strip_marker(text)
            .trim()
            .to_string()
    }
}

/// One agent's loop: what it runs with and how it finishes.
pub(crate) struct Loop<'a> {
    pub(crate) agent: &'a AgentDefinition,
    pub(crate) provider: &'a dyn Provider,
    pub(crate) router: &'a ToolRouter<'a>,
    pub(crate) events: &'a EventSink,
    /// Stop calling tools and finish now (budget, Ctrl-C).
    pub(crate) wrap_up: &'a CancellationToken,
    /// Abort at once.
    pub(crate) cancel: &'a CancellationToken,
    pub(crate) spend: &'a Spend,
    /// The group its calls count against (`None`: the lead's own).
    pub(crate) group: Option<&'a str>,
    pub(crate) max_output_tokens: u32,
    /// The provider's prompt-cache key, the same for every turn.
    pub(crate) cache_key: Option<String>,
    /// Where the answer's text is shown as it arrives (streamed calls).
    pub(crate) on_text: Option<OnText<'a>>,
    pub(crate) finish: Finish<'a>,
}

/// The start of a fresh context.
#[derive(Debug, Default)]
pub(crate) struct Start {
    /// The one user message.
    pub(crate) text: String,
    /// The files the task names: the nudge names the ones not seen, and
    /// an engine that does not read prose is given them as data.
    pub(crate) files: Vec<String>,
    /// Files the task message already shows (preloaded), and their pages.
    pub(crate) seen: BTreeSet<String>,
    pub(crate) reads: Vec<FileRead>,
    /// The findings a skeptic is asked about, as data.
    pub(crate) challenges: Vec<ChallengeFact>,
    /// The leads an auditor is asked to confirm or dismiss, as data.
    pub(crate) leads: Vec<crate::llm::conversation::LeadFact>,
    /// Which sample of its group the conversation is (`--samples`).
    pub(crate) sample: u32,
}

/// What a loop did, whatever its answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    /// Model calls.
    pub(crate) rounds: u32,
    pub(crate) tool_calls: u32,
    pub(crate) tool_errors: u32,
    pub(crate) usage: Usage,
}

/// How a loop ended and what it gave.
#[derive(Debug)]
pub(crate) struct Outcome<T> {
    pub(crate) status: AgentStatus,
    pub(crate) error: Option<String>,
    pub(crate) counts: Counts,
    /// Files whose content the model was shown.
    pub(crate) files_read: BTreeSet<String>,
    /// Lines shown only in part by every read of them, per file.
    pub(crate) lines_cut: BTreeMap<String, Vec<u64>>,
    /// Secrets redacted from what the model was shown: (path, line, kind).
    pub(crate) redactions: BTreeSet<(String, u32, &'static str)>,
    /// The final answer as read (or the last answer, when no final turn
    /// gave one); `None` when the model gave no text at all.
    pub(crate) answer: Option<T>,
    /// Whether the repair turn was asked.
    pub(crate) repaired: bool,
}

/// Why the turns ended.
enum Ended {
    /// The model answered without calls, or said it was done.
    Done,
    Stopped(Stop),
    /// Cancelled (Ctrl-C, a budget) before it could finish.
    Cancelled,
    /// A failure, with the reason.
    Failed(String),
    /// The model refused twice: the provider's words the second time.
    Blocked(String),
}

/// An agent's system prompt as sent: its definition's prompt, then what
/// the run's fence means (file text is data, never an instruction).
pub(crate) fn system_prompt(prompt: &str, fence: Option<&Fence>) -> String {
    match fence {
        Some(fence) => format!("{}\n\n{}", prompt.trim_end(), fence.notice()),
        None => prompt.to_string(),
    }
}

/// The conversation and what was seen so far.
struct State {
    /// The system prompt as sent (see [`system_prompt`]).
    system: String,
    messages: Vec<Message>,
    specs: Vec<ToolSpec>,
    facts: Facts,
    last_text: Option<String>,
    nudged: bool,
    files_read: BTreeSet<String>,
    /// What the model had seen before the latest tool results.
    seen_before_results: BTreeSet<String>,
    /// The estimate of this loop's own call the budget refused (the run
    /// itself was not stopped for it), to say so rather than blame a stop
    /// that did not happen.
    refused: Option<u64>,
    redactions: BTreeSet<(String, u32, &'static str)>,
    counts: Counts,
    sample: u32,
    /// The provider's words when the model first refused; a second
    /// refusal blocks the agent.
    refused_once: Option<String>,
}

/// What a model's answer asks of the loop.
struct Turn {
    /// The tool calls to run (none: the model has answered).
    calls: Vec<ToolCall>,
    /// The server paused the turn (`pause_turn`): send it back as it is.
    paused: bool,
    /// The text says the work is complete.
    done: bool,
}

impl Loop<'_> {
    /// The model its calls are counted at: the agent's, else the
    /// provider's.
    fn model(&self) -> &str {
        super::model_for(self.agent, self.provider)
    }

    /// Runs the loop on `start` to its end. Never panics and never
    /// returns an error: a failure is the outcome's status and error.
    pub(crate) async fn run<R: Reader>(&self, start: Start, reader: &R) -> Outcome<R::Read> {
        let message = Message::User { text: start.text };
        let system = system_prompt(&self.agent.prompt, self.router.fence());
        self.events
            .transcript(|| json!({"type": "system", "agent": self.agent.name, "text": system}));
        self.events
            .transcript(|| json!({"type": "message", "message": message}));
        let mut state = State {
            system,
            messages: vec![message],
            specs: self.router.specs(),
            facts: Facts {
                files: start.files,
                reads: start.reads,
                challenges: start.challenges,
                leads: start.leads,
            },
            last_text: None,
            nudged: false,
            seen_before_results: start.seen.clone(),
            files_read: start.seen,
            refused: None,
            redactions: BTreeSet::new(),
            counts: Counts::default(),
            sample: start.sample,
            refused_once: None,
        };
        let ended = self.turns(&mut state).await;
        self.finish(state, ended, reader).await
    }

    /// Turns until the model is done, the loop is stopped, or it fails.
    async fn turns(&self, s: &mut State) -> Ended {
        loop {
            let stopping = self.wrap_up.is_cancelled();
            if !stopping && s.counts.rounds >= self.agent.max_rounds {
                return Ended::Stopped(Stop::MaxRounds);
            }
            let request = self.request(s, ToolChoice::Auto, None);
            // Stop calling tools when the run winds down (budget, time,
            // Ctrl-C) or when this call would cross the budget: the agent
            // goes straight to its final turn, or, if it has done nothing
            // yet, ends without one.
            let expected = expected_tokens(&request);
            let go = !stopping
                && self.spend.allows(
                    self.group,
                    crate::llm::budget::Tokens::counted(request.counter, expected),
                );
            if !go && !stopping {
                s.refused = Some(expected);
            }
            let answer = if go {
                Some(self.call(&request, &s.facts, &mut s.counts).await)
            } else {
                None
            };
            s.restore(request);
            let response = match answer {
                Some(Ok(response)) => response,
                Some(Err(ProviderError::Cancelled)) => return Ended::Cancelled,
                Some(Err(error)) => return Ended::Failed(error.to_string()),
                None if s.counts.rounds == 0 => return Ended::Cancelled,
                None => {
                    self.make_room(s);
                    return Ended::Stopped(Stop::WindingDown);
                }
            };
            if response.finish == FinishReason::Refusal {
                match s.refused(&response, self.events) {
                    Refused::AskAgain => continue,
                    Refused::Blocked(words) => return Ended::Blocked(words),
                }
            }
            let turn = s.record(response, self.events);
            if turn.calls.is_empty() && turn.paused {
                continue;
            }
            s.seen_before_results.clone_from(&s.files_read);
            if !turn.calls.is_empty()
                && let Err(fatal) = self.run_calls(s, &turn.calls).await
            {
                return Ended::Failed(fatal.0);
            }
            if turn.calls.is_empty() || turn.done {
                if self.nudge(s) {
                    continue;
                }
                return Ended::Done;
            }
        }
    }

    /// Before the final turn of a group whose own call the budget refused:
    /// the final turn is asked either way and carries what the refused
    /// call would have. When the budget has no room even for that, the
    /// tool results the model has not seen are left out of it (and their
    /// files count as not seen), so the final turn costs no more than the
    /// call before it, which its reservation covered.
    fn make_room(&self, s: &mut State) {
        let (Some(group), Some(tokens)) = (self.group, s.refused) else {
            return;
        };
        let counter = crate::llm::tokens::TokenCounter::for_model(self.model());
        if self
            .spend
            .summary_fits(group, crate::llm::budget::Tokens::counted(counter, tokens))
        {
            return;
        }
        for message in s.messages.iter_mut().rev() {
            match message {
                Message::ToolResult { content, .. } => {
                    *content = "(result left out: the token budget had no room to send it)".into();
                }
                Message::User { .. } | Message::Assistant { .. } => break,
            }
        }
        s.files_read = std::mem::take(&mut s.seen_before_results);
    }

    /// A request of the conversation so far: it moves in, and
    /// [`State::restore`] moves it back.
    fn request(
        &self,
        s: &mut State,
        tool_choice: ToolChoice,
        output_schema: Option<OutputSchema>,
    ) -> ChatRequest {
        ChatRequest {
            model: self.agent.model.clone(),
            system: s.system.clone(),
            messages: std::mem::take(&mut s.messages),
            tools: std::mem::take(&mut s.specs),
            tool_choice,
            max_output_tokens: self.max_output_tokens,
            cache_key: self.cache_key.clone(),
            output_schema,
            sample: s.sample,
            counter: crate::llm::tokens::TokenCounter::for_model(self.model()),
            ..ChatRequest::default()
        }
    }

    /// One model call, cancellable, with its usage counted at once.
    async fn call(
        &self,
        request: &ChatRequest,
        facts: &Facts,
        counts: &mut Counts,
    ) -> Result<ChatResponse, ProviderError> {
        counts.rounds += 1;
        self.events.round(counts.rounds);
        let response = tokio::select! {
            biased;
            _ = self.cancel.cancelled() => Err(ProviderError::Cancelled),
            r = self.chat(request, facts) => r,
        }?;
        let usage = response.usage_or_estimate(request);
        if let Some(reported) = response.usage {
            // What the server counted calibrates the run's estimates.
            self.spend.observe(
                request.counter,
                request
                    .estimated_tokens()
                    .saturating_sub(u64::from(request.max_output_tokens)),
                reported.input_tokens,
            );
        }
        counts.usage.add(usage);
        self.spend
            .charge(self.group, &self.agent.name, usage, self.model());
        self.events.usage(usage);
        Ok(response)
    }

    /// One call, streamed when someone watches; the loop's facts go
    /// beside the request (see [`Provider::turn`]).
    async fn chat(
        &self,
        request: &ChatRequest,
        facts: &Facts,
    ) -> Result<ChatResponse, ProviderError> {
        let response = self.provider.turn(request, facts, self.on_text).await;
        // Turns are shown one after another: a blank line between.
        if let Some(on_text) = self.on_text
            && response.as_ref().is_ok_and(|r| r.text.is_some())
        {
            on_text(Shown::Text("\n\n"));
        }
        response
    }

    /// Runs a turn's calls and appends their results.
    async fn run_calls(&self, s: &mut State, calls: &[ToolCall]) -> Result<(), Fatal> {
        s.counts.tool_calls += u32::try_from(calls.len()).unwrap_or(u32::MAX);
        let ran = self.router.run(calls, self.events).await?;
        s.counts.tool_errors += ran.errors;
        s.files_read.extend(ran.files_read);
        s.redactions.extend(
            ran.redactions
                .into_iter()
                .map(|(path, r)| (path, r.line, r.kind)),
        );
        s.facts.reads.extend(ran.reads);
        for result in ran.results {
            self.events
                .transcript(|| json!({"type": "message", "message": result}));
            s.messages.push(result);
        }
        Ok(())
    }

    /// The one nudge of a model that would end while files of its task
    /// were neither preloaded nor read: it names them. False once it was
    /// given, when nothing is missing, or when the run is winding down.
    fn nudge(&self, s: &mut State) -> bool {
        if s.nudged || self.wrap_up.is_cancelled() {
            return false;
        }
        let unread: Vec<&str> = s
            .facts
            .files
            .iter()
            .map(String::as_str)
            .filter(|p| !s.files_read.contains(*p))
            .collect();
        if unread.is_empty() {
            return false;
        }
        let text = format!(
            "You have not read {}: read them with read_file before you answer. Report only what you saw in them.",
            unread.join(", ")
        );
        s.nudged = true;
        s.messages.push(Message::User { text });
        true
    }

    /// The final step, then the outcome.
    async fn finish<R: Reader>(&self, mut s: State, ended: Ended, reader: &R) -> Outcome<R::Read> {
        let (mut status, mut error, ask) = self.settle(&s, ended);
        let mut repaired = false;
        let answer = match ask {
            None => s.last_text.as_deref().map(|t| reader.read(t)),
            Some(ask) => match self.final_turn(&mut s, ask).await {
                Ok(FinalTurn::Blocked(words)) => {
                    (status, error) = (AgentStatus::Blocked, Some(blocked_error(&words)));
                    None
                }
                Ok(FinalTurn::Answered(request, text)) => {
                    let (read, asked) = self.read_final(&mut s, *request, text, reader).await;
                    repaired = asked;
                    read
                }
                Err(e) => {
                    let noun = self.finish.noun();
                    (status, error) = match e {
                        ProviderError::Cancelled => (
                            AgentStatus::Interrupted,
                            Some(format!("interrupted during the final {noun}")),
                        ),
                        e => (
                            AgentStatus::Failed,
                            Some(format!("the final {noun} failed: {e}")),
                        ),
                    };
                    s.last_text.as_deref().map(|t| reader.read(t))
                }
            },
        };
        Outcome {
            status,
            error,
            counts: s.counts,
            files_read: s.files_read,
            lines_cut: crate::llm::conversation::lines_never_whole(&s.facts.reads),
            redactions: s.redactions,
            answer,
            repaired,
        }
    }

    /// How the turns' end reads: the status, the error, and the final
    /// turn's request if one is asked.
    fn settle(&self, s: &State, ended: Ended) -> (AgentStatus, Option<String>, Option<String>) {
        match ended {
            Ended::Cancelled => {
                let error = match (s.counts.rounds, s.refused) {
                    (0, Some(tokens)) => format!(
                        "stopped before its first call: the call (~{tokens} tokens) and the summary after it did not fit in what is left of the budget"
                    ),
                    (0, None) => "stopped before its first call: the run was stopped early (a budget or an interrupt)".to_string(),
                    _ => "interrupted".to_string(),
                };
                (AgentStatus::Interrupted, Some(error), None)
            }
            Ended::Failed(reason) => (AgentStatus::Failed, Some(reason), None),
            Ended::Blocked(words) => (AgentStatus::Blocked, Some(blocked_error(&words)), None),
            Ended::Done => match &self.finish {
                Finish::Answer { .. } => (AgentStatus::Complete, None, None),
                Finish::Summary { request, .. } => {
                    (AgentStatus::Complete, None, Some(request.clone()))
                }
            },
            Ended::Stopped(stop) => {
                let status = match stop {
                    Stop::MaxRounds => AgentStatus::MaxRounds,
                    Stop::WindingDown => AgentStatus::WrappedUp,
                };
                let ask = match &self.finish {
                    Finish::Answer { when_stopped } => when_stopped(stop),
                    Finish::Summary { request, .. } => request.clone(),
                };
                (status, None, Some(ask))
            }
        }
    }

    /// The final turn, tools off: `ask`, answered in free text or through
    /// the structured output. Gives its request (for a repair turn) and the
    /// answer's text; a refusal is asked once more as a defensive review
    /// (unless the turns before were refused already), and a second one
    /// blocks the agent.
    async fn final_turn(&self, s: &mut State, ask: String) -> Result<FinalTurn, ProviderError> {
        s.messages.push(Message::User { text: ask });
        self.events
            .transcript(|| json!({"type": "message", "message": s.messages.last()}));
        let schema = match &self.finish {
            Finish::Summary {
                schema: Some(schema),
                ..
            } => Some(schema(&s.citable())),
            Finish::Summary { schema: None, .. } | Finish::Answer { .. } => None,
        };
        loop {
            let request = self.request(s, ToolChoice::None, schema.clone());
            let response = self.call(&request, &s.facts, &mut s.counts).await?;
            if response.finish == FinishReason::Refusal {
                s.restore(request);
                match s.refused(&response, self.events) {
                    Refused::AskAgain => continue,
                    Refused::Blocked(words) => return Ok(FinalTurn::Blocked(words)),
                }
            }
            if let Finish::Summary { .. } = self.finish {
                self.events
                    .transcript(|| json!({"type": "summary", "text": response.text}));
            }
            return Ok(FinalTurn::Answered(Box::new(request), response.text));
        }
    }

    /// Reads the final answer; a summary the reader cannot use gets the
    /// one repair turn. Gives the answer kept and whether it repaired.
    async fn read_final<R: Reader>(
        &self,
        s: &mut State,
        request: ChatRequest,
        text: Option<String>,
        reader: &R,
    ) -> (Option<R::Read>, bool) {
        let text = match (&self.finish, text) {
            (Finish::Summary { .. }, text) => text.unwrap_or_default(),
            (Finish::Answer { .. }, Some(text)) => text,
            (Finish::Answer { .. }, None) => {
                return (s.last_text.as_deref().map(|t| reader.read(t)), false);
            }
        };
        let first = reader.read(&text);
        let Some(ask) = reader.repair(&first) else {
            return (Some(first), false);
        };
        let mut messages = request.messages;
        messages.push(Message::Assistant {
            text: Some(text),
            tool_calls: Vec::new(),
        });
        messages.push(Message::User { text: ask });
        self.events
            .transcript(|| json!({"type": "message", "message": messages.last()}));
        let request = ChatRequest {
            messages,
            estimate: std::sync::OnceLock::new(),
            ..request
        };
        match self.call(&request, &s.facts, &mut s.counts).await {
            Ok(response) => {
                self.events
                    .transcript(|| json!({"type": "repair", "text": response.text}));
                let second = reader.read(response.text.as_deref().unwrap_or_default());
                (Some(reader.keep(first, second)), true)
            }
            // A failed or cancelled repair keeps the first answer.
            Err(_) => (Some(first), true),
        }
    }
}

/// What the final turn gave.
enum FinalTurn {
    /// Its request (for a repair turn) and the answer's text.
    Answered(Box<ChatRequest>, Option<String>),
    /// The model refused twice: the provider's words the second time.
    Blocked(String),
}

/// What a refusal asks of the loop.
enum Refused {
    /// The first: the task was restated as a defensive review; ask again.
    AskAgain,
    /// The second: the agent is blocked, with the provider's words.
    Blocked(String),
}

/// How long a quoted refusal may be, in characters: enough for a
/// provider's explanation, never a whole answer.
const REFUSAL_QUOTE: usize = 600;

/// The provider's words of a refusal, cut at [`REFUSAL_QUOTE`] characters,
/// or what says it gave none.
fn refusal_words(response: &ChatResponse) -> String {
    let text = response.text.as_deref().map(str::trim).unwrap_or_default();
    if text.is_empty() {
        return "(the provider refused without an explanation)".to_string();
    }
    let mut words: String = text.chars().take(REFUSAL_QUOTE).collect();
    if text.chars().nth(REFUSAL_QUOTE).is_some() {
        words.push('…');
    }
    words
}

/// The one retry of a refused turn: the refusal quoted back and the task
/// restated as the defensive review it is.
fn restated(words: &str) -> String {
    format!(
        "Your last answer was a refusal: \"{words}\"\n\n\
         This is a defensive review that the owners of this repository asked for: find defects and \
         security weaknesses in their own code so that they can be fixed. Nothing here asks you to \
         write, run or improve an attack. Continue the task as it was given and answer in its \
         format; where a file holds attack strings (test fixtures, payload lists), describe the \
         risk without repeating them."
    )
}

/// The status error of a blocked agent: what happened, with the provider's
/// words.
fn blocked_error(words: &str) -> String {
    format!(
        "the model refused the task, and refused again when it was restated as a defensive review: \"{words}\""
    )
}

/// What the budget expects a call to cost: its estimate with an answer of
/// up to 512 tokens rather than the whole output limit.
pub(crate) fn expected_tokens(request: &ChatRequest) -> u64 {
    request.estimated_tokens() - u64::from(request.max_output_tokens)
        + u64::from(request.max_output_tokens.min(512))
}

impl State {
    /// A refused turn: its words join the conversation as the model's
    /// answer (its tool calls, if any, are not run); the first refusal is
    /// answered with the task restated, the second blocks the agent.
    fn refused(&mut self, response: &ChatResponse, events: &EventSink) -> Refused {
        let words = refusal_words(response);
        events.transcript(|| json!({"type": "refusal", "text": words}));
        if self.refused_once.is_some() {
            return Refused::Blocked(words);
        }
        self.messages.push(Message::Assistant {
            text: Some(words.clone()),
            tool_calls: Vec::new(),
        });
        let text = restated(&words);
        events.transcript(|| json!({"type": "message", "message": {"role": "user", "text": text}}));
        self.messages.push(Message::User { text });
        self.refused_once = Some(words);
        Refused::AskAgain
    }

    /// Takes the conversation back from a request.
    fn restore(&mut self, request: ChatRequest) {
        self.messages = request.messages;
        self.specs = request.tools;
    }

    /// Records a model's answer: its text as the latest, the assistant
    /// message appended to the conversation and the transcript.
    fn record(&mut self, response: ChatResponse, events: &EventSink) -> Turn {
        let done = response.text.as_deref().is_some_and(says_complete);
        if let Some(text) = &response.text {
            self.last_text = Some(text.clone());
        }
        let paused = response.finish == FinishReason::Other("pause_turn".into());
        let calls = response.tool_calls;
        let assistant = Message::Assistant {
            text: response.text,
            tool_calls: calls.clone(),
        };
        events.transcript(|| json!({"type": "message", "message": assistant}));
        self.messages.push(assistant);
        Turn {
            calls,
            paused,
            done,
        }
    }

    /// The files a final answer may cite: the task's, then the others the
    /// model read, sorted.
    fn citable(&self) -> Vec<String> {
        // A set to look in: a group may hold a hundred thousand files.
        let own: BTreeSet<&String> = self.facts.files.iter().collect();
        let mut paths = self.facts.files.clone();
        paths.extend(self.files_read.iter().filter(|p| !own.contains(p)).cloned());
        paths
    }
}

/// A scripted model for the agents' unit tests.
#[cfg(test)]
pub(crate) mod script {
    use std::collections::VecDeque;
    use std::sync::Mutex;

    use futures::future::BoxFuture;

    use crate::llm::conversation::{ChatRequest, ChatResponse, FinishReason, ToolCall};
    use crate::llm::providers::{EngineKind, Provider, ProviderError};

    /// Answers its turns in order, then `done [TASK_COMPLETE]`; keeps
    /// every request.
    pub(crate) struct Script {
        turns: Mutex<VecDeque<ChatResponse>>,
        pub(crate) requests: Mutex<Vec<ChatRequest>>,
    }

    impl Script {
        pub(crate) fn new(turns: Vec<ChatResponse>) -> Self {
            Self {
                turns: Mutex::new(turns.into()),
                requests: Mutex::new(Vec::new()),
            }
        }
    }

    /// An answer calling `(tool, arguments)` in order.
    pub(crate) fn calls(calls: &[(&str, &str)]) -> ChatResponse {
        ChatResponse {
            text: None,
            tool_calls: calls
                .iter()
                .enumerate()
                .map(|(i, (name, args))| ToolCall::new(format!("c{i}"), *name, *args))
                .collect(),
            usage: None,
            finish: FinishReason::ToolCalls,
        }
    }

    /// An answer in text.
    pub(crate) fn text(text: &str) -> ChatResponse {
        ChatResponse {
            text: Some(text.to_string()),
            tool_calls: Vec::new(),
            usage: None,
            finish: FinishReason::Stop,
        }
    }

    impl Provider for Script {
        fn name(&self) -> &str {
            "script"
        }
        fn model(&self) -> &str {
            "script"
        }
        fn engine(&self) -> EngineKind {
            EngineKind::Llm
        }
        fn chat<'a>(
            &'a self,
            request: &'a ChatRequest,
        ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
            self.requests.lock().unwrap().push(request.clone());
            let next = self.turns.lock().unwrap().pop_front();
            Box::pin(async move { Ok(next.unwrap_or_else(|| text("done [TASK_COMPLETE]"))) })
        }
    }
}
