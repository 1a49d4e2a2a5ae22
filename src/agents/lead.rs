//! The lead agent of `fanscan ask` and its `task` tool.
//!
//! Takes the lead's definition, a question and the agents it may delegate
//! to; gives a [`LeadOutcome`]: the answer, how the lead ended, and one
//! [`TaskRun`] per sub-agent it started. The lead is a ReAct loop like a
//! sub-agent's, with the read-only tools plus `task`. Each `task` call runs
//! [`run_subagent`] in a fresh context (the sub-agent's own system prompt
//! and the lead's `prompt`, nothing of the lead's conversation) and only
//! its summary string comes back as the tool result. The `task` calls of
//! one turn run concurrently, `jobs` at a time, over the same provider (so
//! the same rate limiter and concurrency limit), budget and run control.
//! Sub-agents are never offered `task`, and [`run_subagent`]'s task-local
//! depth guard refuses any nesting beyond depth 1 whatever the path.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::{FutureExt, StreamExt};
use serde::Deserialize;
use serde_json::json;

use super::definition::TASK_TOOL;
use super::subagent::{
    AgentRun, AgentStatus, AgentTask, GroupReport, Turn, record_turn, run_subagent,
};
use super::{AgentDefinition, AgentSet};
use crate::budget::Spend;
use crate::control::RunControl;
use crate::conversation::{
    ChatRequest, ChatResponse, Message, ToolCall, ToolChoice, ToolSpec, Usage,
};
use crate::events::EventSink;
use crate::findings::strip_marker;
use crate::providers::stream::{OnText, Shown};
use crate::providers::{Provider, ProviderError};
use crate::tools::{ToolContext, ToolError};

/// Most tool calls run from one lead turn; the rest get an error result.
const MAX_CALLS_PER_TURN: usize = 16;

/// Makes the event sink of one task: `(group id, agent, description)`.
/// The caller decides where its progress line and transcript go.
pub(crate) type TaskSinks<'a> = &'a (dyn Fn(&str, &str, &str) -> EventSink + Send + Sync);

/// One sub-agent the lead started.
#[derive(Clone, Debug)]
pub(crate) struct TaskRun {
    /// `task-N`, also the transcript's file name.
    pub id: String,
    pub agent: String,
    /// The few words shown in progress.
    pub description: String,
    /// What the sub-agent did; its status says how it ended.
    pub report: GroupReport,
}

/// How the lead ended and what it answered.
#[derive(Clone, Debug)]
pub(crate) struct LeadOutcome {
    /// The answer, marker stripped; empty when the lead gave none.
    pub answer: String,
    pub status: AgentStatus,
    pub error: Option<String>,
    pub rounds: u32,
    pub tool_calls: u32,
    pub tool_errors: u32,
    /// The lead's own calls.
    pub usage: Usage,
    pub tasks: Vec<TaskRun>,
}

/// What the lead runs with.
pub(crate) struct Lead<'a> {
    pub definition: &'a AgentDefinition,
    /// Where the delegable agents are looked up.
    pub agents: &'a AgentSet,
    pub provider: &'a dyn Provider,
    pub tools: &'a Arc<ToolContext>,
    /// The lead's own sink (its rounds, tools and transcript).
    pub events: &'a EventSink,
    pub task_sinks: TaskSinks<'a>,
    pub control: &'a RunControl,
    pub spend: &'a Spend,
    pub max_output_tokens: u32,
    /// Sub-agents in flight at once.
    pub jobs: usize,
    /// What prompt-cache keys derive from (the lead's and its tasks').
    pub cache_scope: &'a str,
    /// Where the lead's text is shown as it arrives (`fanscan ask` without
    /// `--json`); `None`: nothing is shown until the end.
    pub on_text: Option<OnText<'a>>,
}

/// The arguments of a `task` call.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskArgs {
    agent: String,
    description: String,
    prompt: String,
}

/// The `task` tool as the lead sees it: its description lists every
/// delegable agent with its own description.
pub(crate) fn task_spec(agents: &AgentSet) -> ToolSpec {
    let names: Vec<&str> = agents.delegable().map(|a| a.name.as_str()).collect();
    let mut description = String::from(
        "Start a sub-agent on one piece of work. It runs in a fresh context: it sees only its own \
         instructions and your `prompt`, nothing of this conversation, so the prompt must stand on \
         its own (what to look for, where, what to report). It has its own read-only tools and \
         returns only its final summary, with findings as exact paths and lines. Several task \
         calls in one turn run at the same time.\n\nSub-agent types:\n",
    );
    for agent in agents.delegable() {
        description.push_str(&format!("- {}: {}\n", agent.name, agent.description));
    }
    ToolSpec {
        name: TASK_TOOL.to_string(),
        description,
        parameters: json!({
            "type": "object",
            "properties": {
                "agent": {"type": "string", "enum": names, "description": "The sub-agent type."},
                "description": {"type": "string", "description": "A few words saying what the task is, shown in progress."},
                "prompt": {"type": "string", "description": "The complete instructions for the sub-agent."}
            },
            "required": ["agent", "description", "prompt"],
            "additionalProperties": false
        }),
    }
}

/// The forced final answer, asked when the lead stopped early.
fn final_request(why: &str) -> String {
    format!(
        "Stop here ({why}). Give your final answer to the question now, from what you and your \
         sub-agents found so far. Say plainly what was not checked. Cite every claim as path:line. \
         Do not call tools."
    )
}

impl Lead<'_> {
    /// Answers `question`. Never panics and never returns an error: a
    /// failure is in the outcome's status and error, with what was done.
    pub(crate) async fn run(&self, question: &str) -> LeadOutcome {
        let mut outcome = LeadOutcome {
            answer: String::new(),
            status: AgentStatus::Complete,
            error: None,
            rounds: 0,
            tool_calls: 0,
            tool_errors: 0,
            usage: Usage::default(),
            tasks: Vec::new(),
        };
        self.events.started(&self.definition.name);
        let mut specs = ToolContext::specs(&self.definition.tools);
        specs.push(task_spec(self.agents));
        let mut messages = vec![Message::User {
            text: question.to_string(),
        }];
        self.events.transcript(|| json!({"type": "system", "agent": self.definition.name, "text": self.definition.prompt}),
        );
        self.events
            .transcript(|| json!({"type": "message", "message": messages[0]}));
        let mut last_text: Option<String> = None;
        let mut stopped_early: Option<&'static str> = None;
        loop {
            let stopping = self.control.wrap_up.is_cancelled();
            if !stopping && outcome.rounds >= self.definition.max_rounds {
                outcome.status = AgentStatus::MaxRounds;
                stopped_early = Some("your max_rounds is reached");
                break;
            }
            let request = self.request(messages.clone(), specs.clone(), ToolChoice::Auto);
            let expected = request.estimated_tokens() - u64::from(request.max_output_tokens)
                + u64::from(request.max_output_tokens.min(512));
            if stopping || !self.spend.allows(None, expected) {
                if outcome.rounds == 0 {
                    outcome.status = AgentStatus::Interrupted;
                    outcome.error = Some(
                        "stopped before its first call: the run was stopped early (a budget or an interrupt)"
                            .into(),
                    );
                } else {
                    outcome.status = AgentStatus::WrappedUp;
                    stopped_early = Some("the run is winding down: a budget or an interrupt");
                }
                break;
            }
            outcome.rounds += 1;
            self.events.round(outcome.rounds);
            let response = match self.call(&request, &mut outcome).await {
                Ok(r) => r,
                Err(ProviderError::Cancelled) => {
                    outcome.status = AgentStatus::Interrupted;
                    outcome.error = Some("interrupted".into());
                    break;
                }
                Err(e) => {
                    outcome.status = AgentStatus::Failed;
                    outcome.error = Some(e.to_string());
                    break;
                }
            };
            let Turn { calls, paused } =
                record_turn(response, self.events, &mut messages, &mut last_text);
            if calls.is_empty() {
                if paused {
                    continue;
                }
                outcome.status = AgentStatus::Complete;
                break;
            }
            for result in self.run_calls(&calls, &mut outcome).await {
                self.events
                    .transcript(|| json!({"type": "message", "message": result}));
                messages.push(result);
            }
        }
        if let Some(why) = stopped_early {
            // The same valve as a sub-agent's: when the lead stops early it
            // is still asked for its answer, exactly once, tools off.
            messages.push(Message::User {
                text: final_request(why),
            });
            self.events
                .transcript(|| json!({"type": "message", "message": messages.last()}));
            let request = self.request(messages, specs, ToolChoice::None);
            outcome.rounds += 1;
            self.events.round(outcome.rounds);
            match self.call(&request, &mut outcome).await {
                Ok(response) => last_text = response.text.or(last_text),
                Err(ProviderError::Cancelled) => {
                    outcome.status = AgentStatus::Interrupted;
                    outcome.error = Some("interrupted during the final answer".into());
                }
                Err(e) => {
                    outcome.status = AgentStatus::Failed;
                    outcome.error = Some(format!("the final answer failed: {e}"));
                }
            }
        }
        outcome.answer = last_text
            .map(|t| strip_marker(&t).trim().to_string())
            .unwrap_or_default();
        if outcome.answer.is_empty() && outcome.error.is_none() {
            outcome.status = AgentStatus::Failed;
            outcome.error = Some("the lead gave no answer text".into());
        }
        self.events.transcript(
            || json!({"type": "answer", "status": outcome.status.as_str(), "text": outcome.answer}),
        );
        self.events.finished(outcome.status.as_str(), 0);
        outcome
    }

    fn request(
        &self,
        messages: Vec<Message>,
        tools: Vec<ToolSpec>,
        choice: ToolChoice,
    ) -> ChatRequest {
        ChatRequest {
            model: self.definition.model.clone(),
            system: self.definition.prompt.clone(),
            messages,
            tools,
            tool_choice: choice,
            max_output_tokens: self.max_output_tokens,
            // The lead's turns resend one growing prefix: one cache key.
            cache_key: Some(format!("{}-lead", self.cache_scope)),
            structured: false,
            ..ChatRequest::default()
        }
    }

    /// One model call of the lead, cancellable, with its usage counted.
    async fn call(
        &self,
        request: &ChatRequest,
        outcome: &mut LeadOutcome,
    ) -> Result<ChatResponse, ProviderError> {
        let response = tokio::select! {
            biased;
            _ = self.control.cancel.cancelled() => Err(ProviderError::Cancelled),
            r = self.chat(request) => r,
        }?;
        let usage = response.usage_or_estimate(request);
        outcome.usage.add(usage);
        let model = self
            .definition
            .model
            .clone()
            .unwrap_or_else(|| self.provider.model().to_string());
        self.spend.add(&self.definition.name, usage, &model);
        self.events.usage(usage);
        Ok(response)
    }

    /// One call, streamed when someone watches.
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, ProviderError> {
        match self.on_text {
            Some(on_text) => {
                let response = self.provider.chat_stream(request, on_text).await;
                // Turns are shown one after another: a blank line between.
                if response.as_ref().is_ok_and(|r| r.text.is_some()) {
                    on_text(Shown::Text("\n\n"));
                }
                response
            }
            None => self.provider.chat(request).await,
        }
    }

    /// Answers every call of a turn, in order: read-only tools on a
    /// blocking thread, `task` calls concurrently.
    async fn run_calls(&self, calls: &[ToolCall], outcome: &mut LeadOutcome) -> Vec<Message> {
        let mut answers: Vec<Option<(String, bool)>> = vec![None; calls.len()];
        let mut reads = Vec::new();
        let mut delegated = Vec::new();
        for (index, call) in calls.iter().enumerate() {
            outcome.tool_calls += 1;
            self.events.tool(&call.name, &call_target(call));
            if index >= MAX_CALLS_PER_TURN {
                answers[index] = Some((
                    format!(
                        "error: more than {MAX_CALLS_PER_TURN} tool calls in one turn; call this one again in the next turn"
                    ),
                    true,
                ));
            } else if call.name == TASK_TOOL {
                match self.parse_task(&call.arguments) {
                    Ok((definition, args)) => delegated.push((index, definition, args)),
                    Err(message) => answers[index] = Some((format!("error: {message}"), true)),
                }
            } else if self.definition.tools.iter().any(|t| t == &call.name) {
                reads.push((index, call.clone()));
            } else {
                let mut available = self.definition.tools.clone();
                available.push(TASK_TOOL.to_string());
                answers[index] = Some((
                    format!(
                        "error: tool {:?} is not available to this agent; available tools: {}",
                        call.name,
                        available.join(", ")
                    ),
                    true,
                ));
            }
        }
        let tools = Arc::clone(self.tools);
        let read = tokio::task::spawn_blocking(move || {
            reads
                .into_iter()
                .map(|(index, call)| (index, tools.call(&call.name, &call.arguments)))
                .collect::<Vec<_>>()
        })
        .await;
        match read {
            Ok(outputs) => {
                for (index, output) in outputs {
                    answers[index] = Some(match output {
                        Ok(out) => (out.text, false),
                        Err(ToolError::Model(m) | ToolError::Internal(m)) => {
                            (format!("error: {m}"), true)
                        }
                    });
                }
            }
            Err(e) => {
                tracing::warn!("the lead's tool thread failed: {e}");
            }
        }
        let first = outcome.tasks.len();
        let runs: Vec<_> = delegated
            .into_iter()
            .enumerate()
            .map(|(n, (index, definition, args))| {
                let id = format!("task-{}", first + n + 1);
                async move { (index, self.run_task(id, definition, args).await) }
            })
            .collect();
        let finished: Vec<(usize, TaskRun)> = futures::stream::iter(runs)
            .buffered(self.jobs.max(1))
            .collect()
            .await;
        for (index, run) in finished {
            answers[index] = Some(task_result(&run));
            outcome.tasks.push(run);
        }
        calls
            .iter()
            .zip(answers)
            .map(|(call, answer)| {
                let (content, is_error) =
                    answer.unwrap_or_else(|| ("error: the tool did not run".to_string(), true));
                if is_error {
                    outcome.tool_errors += 1;
                }
                Message::ToolResult {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    content,
                    is_error,
                }
            })
            .collect()
    }

    /// A `task` call's agent and arguments, or the error the model sees.
    fn parse_task(&self, arguments: &str) -> Result<(&AgentDefinition, TaskArgs), TaskError> {
        let args: TaskArgs = serde_json::from_str(arguments).map_err(TaskError::Arguments)?;
        let valid: Vec<&str> = self.agents.delegable().map(|a| a.name.as_str()).collect();
        let definition = self
            .agents
            .get(&args.agent)
            .ok()
            .filter(|a| a.delegable)
            .ok_or_else(|| TaskError::UnknownAgent {
                agent: args.agent.clone(),
                valid: valid.join(", "),
            })?;
        if args.prompt.trim().is_empty() {
            return Err(TaskError::EmptyPrompt);
        }
        Ok((definition, args))
    }

    /// Runs one delegated task to its end. A panic inside the sub-agent is
    /// a failed task, never the lead's end.
    async fn run_task(&self, id: String, definition: &AgentDefinition, args: TaskArgs) -> TaskRun {
        let description = one_line(&args.description);
        let task = AgentTask {
            group: id.clone(),
            files: Vec::new(),
            focus: None,
            instructions: Some(args.prompt),
        };
        let sink = (self.task_sinks)(&id, &definition.name, &description);
        let report = run_delegated(
            AgentRun {
                definition,
                provider: self.provider,
                tools: self.tools,
                events: &sink,
                wrap_up: &self.control.wrap_up,
                cancel: &self.control.cancel,
                spend: self.spend,
                max_output_tokens: self.max_output_tokens,
                cache_scope: self.cache_scope,
            },
            &task,
        )
        .await;
        TaskRun {
            id,
            agent: definition.name.clone(),
            description,
            report,
        }
    }
}

/// Runs one sub-agent through [`run_subagent`] (and so its depth guard),
/// turning a panic into a failed report.
pub(crate) async fn run_delegated(run: AgentRun<'_>, task: &AgentTask) -> GroupReport {
    let definition = run.definition;
    let provider = run.provider;
    let events = run.events.clone();
    match AssertUnwindSafe(run_subagent(run, task))
        .catch_unwind()
        .await
    {
        Ok(report) => report,
        Err(_) => {
            events.finished(AgentStatus::Failed.as_str(), 0);
            let mut report = GroupReport::empty(task, definition, provider);
            report.status = AgentStatus::Failed;
            report.error =
                Some("the sub-agent panicked (a fanscan bug: please report it)".to_string());
            report
        }
    }
}

/// What the lead sees of a finished task: the summary string, or why
/// there is none.
fn task_result(run: &TaskRun) -> (String, bool) {
    let report = &run.report;
    let summary = report.summary.trim();
    match report.status {
        AgentStatus::Complete if !summary.is_empty() => (summary.to_string(), false),
        AgentStatus::Complete => (
            format!("the {} sub-agent finished without a summary", run.agent),
            false,
        ),
        AgentStatus::MaxRounds | AgentStatus::WrappedUp => (
            format!(
                "(the {} sub-agent stopped early: {}; its summary covers what it did)\n{summary}",
                run.agent,
                report.status.as_str()
            ),
            false,
        ),
        AgentStatus::Failed | AgentStatus::Interrupted | AgentStatus::Unreviewed => {
            let mut text = format!(
                "error: the {} sub-agent {}: {}",
                run.agent,
                report.status.as_str(),
                report.error.as_deref().unwrap_or("no reason given")
            );
            if !summary.is_empty() {
                text.push_str(&format!("\nWhat it said before it ended:\n{summary}"));
            }
            (text, true)
        }
    }
}

/// A description as one short line.
fn one_line(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out: String = line.chars().take(80).collect();
    if out.is_empty() {
        out = "(no description)".into();
    }
    out
}

/// The main argument of a lead's call, for progress lines.
fn call_target(call: &ToolCall) -> String {
    let value = serde_json::from_str::<serde_json::Value>(&call.arguments).unwrap_or_default();
    ["description", "path", "pattern"]
        .iter()
        .find_map(|k| value.get(k).and_then(|p| p.as_str()).map(one_line))
        .unwrap_or_default()
}

/// A `task` call the model must correct; told to it as an error result.
#[derive(Debug, thiserror::Error)]
enum TaskError {
    #[error(
        "invalid arguments for task: {0}; send a JSON object with \"agent\", \"description\" and \"prompt\" (strings)"
    )]
    Arguments(serde_json::Error),
    #[error("unknown agent {agent:?} for task; the agents you can delegate to are: {valid}")]
    UnknownAgent { agent: String, valid: String },
    #[error("task needs a non-empty \"prompt\": the sub-agent sees nothing else")]
    EmptyPrompt,
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use crate::conversation::FinishReason;
    use std::time::Duration;

    use futures::future::BoxFuture;
    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::providers::EngineKind;
    use crate::tools::ToolLimits;
    use crate::tools::secrets::Redactor;

    #[derive(Clone, Copy, Debug, PartialEq)]
    enum Mode {
        Answer,
        Fail,
        Panic,
        Hang,
    }

    /// A model that, inside every call (so inside the sub-agent's depth
    /// scope), tries to start another sub-agent, then answers as `mode`.
    struct Nester {
        mode: Mutex<Mode>,
        nested: Mutex<Vec<GroupReport>>,
        definition: AgentDefinition,
        tools: Arc<ToolContext>,
    }

    fn task() -> AgentTask {
        AgentTask {
            group: "task-1".into(),
            files: Vec::new(),
            focus: None,
            instructions: Some("look".into()),
        }
    }

    impl Provider for Nester {
        fn name(&self) -> &str {
            "nester"
        }
        fn model(&self) -> &str {
            "nester"
        }
        fn engine(&self) -> EngineKind {
            EngineKind::Llm
        }
        fn chat<'a>(
            &'a self,
            _request: &'a ChatRequest,
        ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
            Box::pin(async move {
                let token = CancellationToken::new();
                let nested = run_delegated(
                    AgentRun {
                        definition: &self.definition,
                        provider: self,
                        tools: &self.tools,
                        events: &EventSink::silent("nested"),
                        wrap_up: &token,
                        cancel: &token,
                        spend: &Spend::unlimited(),
                        max_output_tokens: 100,
                        cache_scope: "",
                    },
                    &task(),
                )
                .await;
                self.nested.lock().unwrap().push(nested);
                let mode = *self.mode.lock().unwrap();
                match mode {
                    Mode::Answer => Ok(ChatResponse {
                        text: Some("nothing [TASK_COMPLETE]".into()),
                        tool_calls: Vec::new(),
                        usage: None,
                        finish: FinishReason::Stop,
                    }),
                    Mode::Fail => Err(ProviderError::Http {
                        provider: "nester".into(),
                        status: 500,
                        message: "boom".into(),
                    }),
                    Mode::Panic => panic!("the model panicked"),
                    Mode::Hang => futures::future::pending().await,
                }
            })
        }
    }

    #[tokio::test]
    async fn the_depth_guard_refuses_nesting_on_every_path_and_is_restored_after_each() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.rs"), "fn a() {}\n").unwrap();
        let provider = Nester {
            mode: Mutex::new(Mode::Answer),
            nested: Mutex::new(Vec::new()),
            definition: AgentDefinition::parse(
                "t.md",
                "---\nname: auditor\ndescription: d\ntools: [read_file]\n---\nx\n",
            )
            .unwrap(),
            tools: Arc::new(
                ToolContext::new(dir.path(), ToolLimits::default(), Arc::new(Redactor::new()))
                    .unwrap(),
            ),
        };
        let expected = [
            (Mode::Answer, AgentStatus::Complete, "nothing"),
            (Mode::Fail, AgentStatus::Failed, "HTTP 500"),
            (Mode::Panic, AgentStatus::Failed, "panicked"),
            (Mode::Hang, AgentStatus::Interrupted, "interrupted"),
            // After every way out, a sub-agent started at the lead's level
            // runs again: the depth was restored.
            (Mode::Answer, AgentStatus::Complete, "nothing"),
        ];
        for (mode, status, said) in expected {
            *provider.mode.lock().unwrap() = mode;
            provider.nested.lock().unwrap().clear();
            let control = RunControl::default();
            if mode == Mode::Hang {
                let cancel = control.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    cancel.abort("test");
                });
            }
            let report = run_delegated(
                AgentRun {
                    definition: &provider.definition,
                    provider: &provider,
                    tools: &provider.tools,
                    events: &EventSink::silent("task-1"),
                    wrap_up: &control.wrap_up,
                    cancel: &control.cancel,
                    spend: &Spend::unlimited(),
                    max_output_tokens: 100,
                    cache_scope: "",
                },
                &task(),
            )
            .await;
            assert_eq!(report.status, status, "{mode:?}: {report:?}");
            // A panic loses the report's counters, not the fact it ran.
            assert!(
                report.rounds >= 1 || mode == Mode::Panic,
                "{mode:?}: the sub-agent itself ran"
            );
            let shown = format!("{} {:?}", report.summary, report.error);
            assert!(shown.contains(said), "{mode:?}: {shown}");
            let nested = provider.nested.lock().unwrap().clone();
            assert!(!nested.is_empty(), "{mode:?}: a nesting was attempted");
            for n in nested {
                assert_eq!(n.status, AgentStatus::Failed);
                assert_eq!(n.rounds, 0, "the nested agent never called the model");
                assert_eq!(
                    n.error.as_deref(),
                    Some("refused: agents may not start agents (depth 1 of 1)")
                );
            }
        }
    }

    #[test]
    fn the_task_tool_lists_the_delegable_agents() {
        let dir = tempfile::tempdir().unwrap();
        let set = AgentSet::load(dir.path()).unwrap();
        let spec = task_spec(&set);
        assert_eq!(spec.name, "task");
        assert!(spec.description.contains("- auditor: "));
        assert!(spec.description.contains("- security: "));
        assert!(!spec.description.contains("- reducer: "));
        assert_eq!(
            spec.parameters["properties"]["agent"]["enum"],
            json!(["auditor", "security"])
        );
    }
}
