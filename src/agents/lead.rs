//! The lead agent of `fanscan ask` and its `task` tool.
//!
//! Takes the lead's definition, a question and the agents it may delegate
//! to; gives a [`LeadOutcome`]: the answer, how the lead ended, and one
//! [`TaskRun`] per sub-agent it started. The lead is a configuration of
//! the one agent loop ([`super::turns`]), with the read-only tools plus
//! `task` ([`TaskTool`], an extra handler of its router) and its answer in
//! free text. Each `task` call runs
//! [`run_subagent`] in a fresh context (the sub-agent's own system prompt
//! and the lead's `prompt`, nothing of the lead's conversation) and only
//! its summary string comes back as the tool result. The `task` calls of
//! one turn run concurrently, `jobs` at a time, over the same provider (so
//! the same rate limiter and concurrency limit), budget and run control.
//! Sub-agents are never offered `task`, and [`run_subagent`]'s task-local
//! depth guard refuses any nesting beyond depth 1 whatever the path.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use futures::FutureExt;
use serde::Deserialize;
use serde_json::json;

use super::definition::TASK_TOOL;
use super::router::{Handler, ReadOnlyTools, Running, ToolRouter, one_line};
use super::subagent::{AgentRun, AgentStatus, AgentTask, GroupReport, run_subagent};
use super::turns::{Finish, Loop, PlainText, Start, Stop};
use super::{AgentDefinition, AgentSet, Harness};
use crate::llm::budget::Spend;
use crate::llm::control::RunControl;
use crate::llm::conversation::{ToolCall, ToolSpec, Usage};
use crate::llm::events::EventSink;
use crate::llm::providers::stream::OnText;
use crate::tools::{ToolContext, ToolError, ToolOutput};

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
    /// The run's provider, output cap and `--jobs` (sub-agents in flight
    /// at once).
    pub harness: &'a Harness,
    pub tools: &'a Arc<ToolContext>,
    /// The lead's own sink (its rounds, tools and transcript).
    pub events: &'a EventSink,
    pub task_sinks: TaskSinks<'a>,
    pub control: &'a RunControl,
    pub spend: &'a Spend,
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
fn final_request(stop: Stop) -> String {
    let why = match stop {
        Stop::MaxRounds => "your max_rounds is reached",
        Stop::WindingDown => "the run is winding down: a budget or an interrupt",
    };
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
        let tools: Arc<dyn ReadOnlyTools> = Arc::<ToolContext>::clone(self.tools);
        self.run_with(question, tools).await
    }

    /// [`Lead::run`] with `tools` as its read-only tools.
    async fn run_with(&self, question: &str, tools: Arc<dyn ReadOnlyTools>) -> LeadOutcome {
        let task = TaskTool {
            lead: self,
            started: AtomicUsize::new(0),
            finished: Mutex::new(Vec::new()),
        };
        let router = ToolRouter::new(tools, &self.definition.tools).with(&task);
        self.events.started(&self.definition.name);
        let start = Start {
            text: question.to_string(),
            ..Start::default()
        };
        let outcome = Loop {
            agent: self.definition,
            provider: self.harness.provider(),
            router: &router,
            events: self.events,
            wrap_up: &self.control.wrap_up,
            cancel: &self.control.cancel,
            spend: self.spend,
            group: None,
            max_output_tokens: self.harness.max_output_tokens(),
            // The lead's turns resend one growing prefix: one cache key.
            cache_key: Some(format!("{}-lead", self.cache_scope)),
            on_text: self.on_text,
            // The same valve as a sub-agent's: when the lead stops early it
            // is still asked for its answer, exactly once, tools off.
            finish: Finish::Answer {
                when_stopped: final_request,
            },
        }
        .run(start, &PlainText)
        .await;
        drop(router);
        let mut lead = LeadOutcome {
            answer: outcome.answer.unwrap_or_default(),
            status: outcome.status,
            error: outcome.error,
            rounds: outcome.counts.rounds,
            tool_calls: outcome.counts.tool_calls,
            tool_errors: outcome.counts.tool_errors,
            usage: outcome.counts.usage,
            tasks: task.into_runs(),
        };
        if lead.answer.is_empty() && lead.error.is_none() {
            lead.status = AgentStatus::Failed;
            lead.error = Some("the lead gave no answer text".into());
        }
        self.events.transcript(
            || json!({"type": "answer", "status": lead.status.as_str(), "text": lead.answer}),
        );
        self.events.finished(lead.status.as_str(), 0);
        lead
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
        let mut description = one_line(&args.description);
        if description.is_empty() {
            description = "(no description)".into();
        }
        let task = AgentTask {
            group: id.clone(),
            files: Vec::new(),
            focus: None,
            instructions: Some(args.prompt),
            leads: Vec::new(),
            sample: 0,
        };
        let sink = (self.task_sinks)(&id, &definition.name, &description);
        let report = run_delegated(
            AgentRun {
                definition,
                provider: self.harness.provider(),
                tools: self.tools,
                events: &sink,
                wrap_up: &self.control.wrap_up,
                cancel: &self.control.cancel,
                spend: self.spend,
                max_output_tokens: self.harness.max_output_tokens(),
                cache_scope: self.cache_scope,
                rule_leads: None,
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

/// The `task` tool of one lead: each call it accepts becomes `task-N`
/// (numbered in call order), runs a sub-agent, and answers with its
/// summary; the runs are kept for the outcome.
struct TaskTool<'l, 'a> {
    lead: &'l Lead<'a>,
    /// Tasks started so far.
    started: AtomicUsize,
    /// Finished tasks, with their number.
    finished: Mutex<Vec<(usize, TaskRun)>>,
}

impl TaskTool<'_, '_> {
    /// The finished tasks, in the order they were started.
    fn into_runs(self) -> Vec<TaskRun> {
        let mut runs = self
            .finished
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        runs.sort_by_key(|(n, _)| *n);
        runs.into_iter().map(|(_, run)| run).collect()
    }
}

impl Handler for TaskTool<'_, '_> {
    fn spec(&self) -> ToolSpec {
        task_spec(self.lead.agents)
    }

    fn concurrency(&self) -> usize {
        self.lead.harness.jobs().max(1)
    }

    fn start(&self, call: &ToolCall) -> Result<Running<'_>, ToolError> {
        let (definition, args) = self
            .lead
            .parse_task(&call.arguments)
            .map_err(|e| ToolError::Model(e.to_string()))?;
        let n = self.started.fetch_add(1, Ordering::Relaxed) + 1;
        Ok(Box::pin(async move {
            let run = self
                .lead
                .run_task(format!("task-{n}"), definition, args)
                .await;
            let result = task_result(&run);
            crate::util::relock(&self.finished).push((n, run));
            result
        }))
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
/// there is none (an error result).
fn task_result(run: &TaskRun) -> Result<ToolOutput, ToolError> {
    let report = &run.report;
    let summary = report.summary.trim();
    let text = match report.status {
        AgentStatus::Complete if !summary.is_empty() => summary.to_string(),
        AgentStatus::Complete => format!("the {} sub-agent finished without a summary", run.agent),
        AgentStatus::MaxRounds | AgentStatus::WrappedUp => format!(
            "(the {} sub-agent stopped early: {}; its summary covers what it did)\n{summary}",
            run.agent,
            report.status.as_str()
        ),
        AgentStatus::Failed
        | AgentStatus::Interrupted
        | AgentStatus::Unreviewed
        | AgentStatus::Blocked => {
            let mut text = format!(
                "the {} sub-agent {}: {}",
                run.agent,
                report.status.as_str(),
                report.error.as_deref().unwrap_or("no reason given")
            );
            if !summary.is_empty() {
                text.push_str(&format!("\nWhat it said before it ended:\n{summary}"));
            }
            return Err(ToolError::Model(text));
        }
    };
    Ok(ToolOutput {
        text,
        ..ToolOutput::default()
    })
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

    use crate::llm::conversation::{ChatRequest, ChatResponse, FinishReason};
    use crate::llm::providers::{Provider, ProviderError};

    use futures::future::BoxFuture;
    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::agents::turns::script::{Script, calls, text};
    use crate::llm::providers::EngineKind;
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
        /// The run a hanging call cancels, once it is hanging.
        hang_cancels: Mutex<Option<RunControl>>,
    }

    fn task() -> AgentTask {
        AgentTask {
            group: "task-1".into(),
            files: Vec::new(),
            focus: None,
            instructions: Some("look".into()),
            leads: Vec::new(),
            sample: 0,
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
                        rule_leads: None,
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
                    Mode::Hang => {
                        // Cancelled while the call is in flight, as a
                        // Ctrl-C during a slow answer.
                        if let Some(control) = self.hang_cancels.lock().unwrap().take() {
                            control.abort("test");
                        }
                        futures::future::pending().await
                    }
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
            hang_cancels: Mutex::new(None),
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
                *provider.hang_cancels.lock().unwrap() = Some(control.clone());
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
                    rule_leads: None,
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

    /// Read-only tools that panic, whatever is called.
    struct Panicking;

    impl ReadOnlyTools for Panicking {
        fn call(&self, name: &str, _: &str) -> Result<ToolOutput, ToolError> {
            panic!("{name} blew up");
        }
    }

    #[tokio::test]
    async fn a_panicking_tool_thread_fails_the_lead_and_names_the_tool() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.rs"), "fn a() {}\n").unwrap();
        let agents = AgentSet::load(dir.path()).unwrap();
        let tools = Arc::new(
            ToolContext::new(dir.path(), ToolLimits::default(), Arc::new(Redactor::new())).unwrap(),
        );
        let provider = Script::new(vec![
            calls(&[("grep", r#"{"pattern":"fn"}"#)]),
            text("never asked"),
        ]);
        let control = RunControl::default();
        let sinks = |id: &str, _: &str, _: &str| EventSink::silent(id);
        let provider = Arc::new(provider);
        let harness = Harness::new(provider.clone(), 100, 2);
        let lead = Lead {
            definition: agents.get("lead").unwrap(),
            agents: &agents,
            harness: &harness,
            tools: &tools,
            events: &EventSink::silent("lead"),
            task_sinks: &sinks,
            control: &control,
            spend: &Spend::unlimited(),
            cache_scope: "t",
            on_text: None,
        };
        let outcome = lead.run_with("where?", Arc::new(Panicking)).await;
        assert_eq!(outcome.status, AgentStatus::Failed);
        assert_eq!(
            outcome.error.as_deref(),
            Some("the grep tool panicked (grep blew up): a fanscan bug, please report it")
        );
        assert_eq!(
            outcome.rounds, 1,
            "no final answer is asked of a failed lead"
        );
        assert_eq!(provider.requests.lock().unwrap().len(), 1);
        assert!(outcome.tasks.is_empty());
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
