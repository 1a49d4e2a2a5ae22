//! The tool router of every agent: which tools the model is shown, and
//! how a turn's calls run.
//!
//! Takes the read-only tools an agent may call and any extra handler (the
//! lead's `task`); gives the specs shown to the model and, for a turn's
//! calls, one tool result per call in order. As in codex-rs's
//! `ToolRouter`, the decisions every agent shares are made here once: a
//! call to a tool the agent was not given, a call past
//! [`MAX_CALLS_PER_TURN`] and a call cut by the output token limit are the
//! same error result for every agent and run nothing; a handler's
//! [`ToolError::Model`] is told to the model, while a
//! [`ToolError::Internal`] or a panic fails the agent ([`Fatal`]).

use std::collections::BTreeSet;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};

use crate::llm::conversation::{FileRead, MAX_CALLS_PER_TURN, Message, ToolCall, ToolSpec};
use crate::llm::events::EventSink;
use crate::tools::fence::Fence;
use crate::tools::secrets::Redaction;
use crate::tools::{ToolContext, ToolError, ToolOutput};

/// The read-only tools: run by name with the model's raw arguments, on a
/// blocking thread. [`ToolContext`] is the one implementation outside
/// tests.
pub(crate) trait ReadOnlyTools: Send + Sync {
    /// Runs tool `name` with `arguments` (synchronous).
    fn call(&self, name: &str, arguments: &str) -> Result<ToolOutput, ToolError>;
    /// The run's fence around the file text these tools show, which every
    /// agent's system prompt explains; `None` for a test double that shows
    /// no file text.
    fn fence(&self) -> Option<&Fence> {
        None
    }
}

impl ReadOnlyTools for ToolContext {
    fn call(&self, name: &str, arguments: &str) -> Result<ToolOutput, ToolError> {
        ToolContext::call(self, name, arguments)
    }

    fn fence(&self) -> Option<&Fence> {
        Some(ToolContext::fence(self))
    }
}

/// A call an extra handler has accepted, running.
pub(crate) type Running<'h> = BoxFuture<'h, Result<ToolOutput, ToolError>>;

/// A tool outside the read-only registry (the lead's `task`).
pub(crate) trait Handler: Send + Sync {
    /// The spec shown to the model; its name routes calls here.
    fn spec(&self) -> ToolSpec;
    /// How many of one turn's calls run at once.
    fn concurrency(&self) -> usize;
    /// Checks one call and starts it. Called for a turn's calls in their
    /// order before any runs, so what it hands out (ids) follows the
    /// calls' order; an error is the call's result.
    fn start(&self, call: &ToolCall) -> Result<Running<'_>, ToolError>;
}

/// A failure that is not the model's to fix (a tool panicked, the disk
/// failed under a file): the agent fails with this reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Fatal(pub(crate) String);

/// What a turn's calls gave: a result message per call, in order, and
/// what the tools saw.
#[derive(Debug, Default)]
pub(crate) struct Ran {
    pub(crate) results: Vec<Message>,
    /// Results that are errors.
    pub(crate) errors: u32,
    /// Files whose content the model was shown.
    pub(crate) files_read: BTreeSet<String>,
    /// Secrets redacted from what was shown, with their file.
    pub(crate) redactions: Vec<(String, Redaction)>,
    /// The file pages shown.
    pub(crate) reads: Vec<FileRead>,
}

/// The tools of one agent: specs and dispatch.
pub(crate) struct ToolRouter<'h> {
    tools: Arc<dyn ReadOnlyTools>,
    /// The read-only tools the agent was given.
    allowed: Vec<String>,
    /// The extra handler and its tool's name.
    extra: Option<(&'h dyn Handler, String)>,
    specs: Vec<ToolSpec>,
}

/// How one call is answered.
enum Route<'h> {
    Answered(Result<ToolOutput, ToolError>),
    ReadOnly,
    Started(Running<'h>),
}

impl<'h> ToolRouter<'h> {
    /// A router of the read-only tools named `allowed` (unknown names are
    /// left out: definitions are validated before they get here).
    pub(crate) fn new(tools: Arc<dyn ReadOnlyTools>, allowed: &[String]) -> Self {
        let specs = ToolContext::specs(allowed);
        Self {
            tools,
            allowed: specs.iter().map(|s| s.name.clone()).collect(),
            extra: None,
            specs,
        }
    }

    /// The same router with `handler`'s tool as well, shown last.
    pub(crate) fn with(mut self, handler: &'h dyn Handler) -> Self {
        let spec = handler.spec();
        self.extra = Some((handler, spec.name.clone()));
        self.specs.push(spec);
        self
    }

    /// The specs shown to the model, in order.
    pub(crate) fn specs(&self) -> Vec<ToolSpec> {
        self.specs.clone()
    }

    /// The fence around the file text its tools show.
    pub(crate) fn fence(&self) -> Option<&Fence> {
        self.tools.fence()
    }

    /// Runs a turn's calls: read-only ones on one blocking thread, the
    /// extra handler's `concurrency` at a time; every call is answered, in
    /// order.
    pub(crate) async fn run(&self, calls: &[ToolCall], events: &EventSink) -> Result<Ran, Fatal> {
        let mut outputs = Vec::with_capacity(calls.len());
        let mut read_only = Vec::new();
        let mut started = Vec::new();
        for (index, call) in calls.iter().enumerate() {
            events.tool(&call.name, &target_of(&call.arguments));
            match self.route(index, call) {
                Route::Answered(answer) => outputs.push((index, answer)),
                Route::ReadOnly => read_only.push((index, call.clone())),
                Route::Started(running) => started.push((index, running)),
            }
        }
        outputs.extend(self.run_read_only(read_only).await?);
        outputs.extend(self.run_started(calls, started).await?);
        outputs.sort_by_key(|(index, _)| *index);
        collect(calls, outputs)
    }

    /// Where call `index` goes: an error result, the read-only tools, or
    /// the extra handler.
    fn route(&self, index: usize, call: &ToolCall) -> Route<'h> {
        let extra = self
            .extra
            .as_ref()
            .filter(|(_, name)| *name == call.name)
            .map(|(handler, _)| *handler);
        let refuse = |message: String| Route::Answered(Err(ToolError::Model(message)));
        if extra.is_none() && !self.allowed.contains(&call.name) {
            // Never shown to the model, and never run.
            let available: Vec<&str> = self.specs.iter().map(|s| s.name.as_str()).collect();
            let available = if available.is_empty() {
                "none".to_string()
            } else {
                available.join(", ")
            };
            return refuse(format!(
                "tool {:?} is not available to this agent; available tools: {available}",
                call.name
            ));
        }
        if index >= MAX_CALLS_PER_TURN {
            return refuse(format!(
                "more than {MAX_CALLS_PER_TURN} tool calls in one turn; call this one again in the next turn"
            ));
        }
        if call.truncated {
            return refuse(format!(
                "this call was cut by the output token limit, its arguments may be incomplete ({}); call it again",
                call.arguments.trim()
            ));
        }
        match extra {
            Some(handler) => match handler.start(call) {
                Ok(running) => Route::Started(running),
                Err(error) => Route::Answered(Err(error)),
            },
            None => Route::ReadOnly,
        }
    }

    /// The read-only calls, in order, on one blocking thread. A panic is
    /// caught per call, so the failure names its tool.
    async fn run_read_only(
        &self,
        runnable: Vec<(usize, ToolCall)>,
    ) -> Result<Vec<(usize, Result<ToolOutput, ToolError>)>, Fatal> {
        if runnable.is_empty() {
            return Ok(Vec::new());
        }
        let tools = Arc::clone(&self.tools);
        let outputs = tokio::task::spawn_blocking(move || {
            runnable
                .into_iter()
                .map(|(index, call)| {
                    let output = std::panic::catch_unwind(AssertUnwindSafe(|| {
                        tools.call(&call.name, &call.arguments)
                    }))
                    .map_err(|panic| panicked(&call.name, panic.as_ref()));
                    (index, output)
                })
                .collect::<Vec<_>>()
        })
        .await
        .map_err(|e| {
            Fatal(format!(
                "a tool thread failed ({e}): a fanscan bug, please report it"
            ))
        })?;
        outputs
            .into_iter()
            .map(|(index, output)| output.map(|o| (index, o)))
            .collect()
    }

    /// The extra handler's started calls, `concurrency` at a time, in order.
    async fn run_started(
        &self,
        calls: &[ToolCall],
        started: Vec<(usize, Running<'h>)>,
    ) -> Result<Vec<(usize, Result<ToolOutput, ToolError>)>, Fatal> {
        let Some((handler, _)) = &self.extra else {
            return Ok(Vec::new());
        };
        // Collected first: a stream over a closure would make the future
        // of every agent loop lose `Send` for some lifetimes.
        let runs: Vec<_> = started
            .into_iter()
            .map(|(index, running)| {
                let name = calls[index].name.clone();
                async move {
                    let output = AssertUnwindSafe(running)
                        .catch_unwind()
                        .await
                        .map_err(|panic| panicked(&name, panic.as_ref()));
                    (index, output)
                }
            })
            .collect();
        let finished: Vec<_> = futures::stream::iter(runs)
            .buffered(handler.concurrency().max(1))
            .collect()
            .await;
        finished
            .into_iter()
            .map(|(index, output)| output.map(|o| (index, o)))
            .collect()
    }
}

/// The failure of a tool that panicked: a fanscan bug, named.
fn panicked(tool: &str, panic: &(dyn std::any::Any + Send)) -> Fatal {
    let message = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_string());
    Fatal(format!(
        "the {tool} tool panicked ({message}): a fanscan bug, please report it"
    ))
}

/// One result message per call, in order; an `Internal` error is fatal.
fn collect(
    calls: &[ToolCall],
    outputs: Vec<(usize, Result<ToolOutput, ToolError>)>,
) -> Result<Ran, Fatal> {
    let mut ran = Ran::default();
    let mut outputs = outputs.into_iter().peekable();
    for (index, call) in calls.iter().enumerate() {
        let output = match outputs.next_if(|(i, _)| *i == index) {
            Some((_, output)) => output,
            // Every call has a route; this is only a guard.
            None => Err(ToolError::Model("the tool did not run".to_string())),
        };
        let (content, is_error) = match output {
            Ok(out) => {
                ran.files_read.extend(out.files_read);
                ran.redactions.extend(out.redactions);
                ran.reads.extend(out.read);
                (out.text, false)
            }
            Err(ToolError::Model(message)) => (format!("error: {message}"), true),
            Err(ToolError::Internal(message)) => return Err(Fatal(message)),
        };
        ran.errors += u32::from(is_error);
        ran.results.push(Message::ToolResult {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content,
            is_error,
        });
    }
    Ok(ran)
}

/// The main argument of a call, for progress lines: one short line.
fn target_of(arguments: &str) -> String {
    let value = serde_json::from_str::<serde_json::Value>(arguments).unwrap_or_default();
    ["description", "path", "pattern"]
        .iter()
        .find_map(|k| value.get(k).and_then(|p| p.as_str()).map(one_line))
        .unwrap_or_default()
}

/// A text as one short line: whitespace collapsed, at most 80 characters.
pub(crate) fn one_line(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    line.chars().take(80).collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// Read-only tools that record what ran, and panic or fail on one name.
    #[derive(Default)]
    struct Fake {
        ran: Mutex<Vec<String>>,
        panic_on: Option<&'static str>,
        internal_on: Option<&'static str>,
    }

    impl ReadOnlyTools for Fake {
        fn call(&self, name: &str, arguments: &str) -> Result<ToolOutput, ToolError> {
            if self.panic_on == Some(name) {
                panic!("boom");
            }
            if self.internal_on == Some(name) {
                return Err(ToolError::Internal(format!(
                    "the disk failed under {arguments}"
                )));
            }
            self.ran.lock().unwrap().push(arguments.to_string());
            Ok(ToolOutput {
                text: format!("{name} ran"),
                ..ToolOutput::default()
            })
        }
    }

    /// An extra tool `task` that answers with its arguments, or panics.
    struct Echo {
        panics: bool,
    }

    impl Handler for Echo {
        fn spec(&self) -> ToolSpec {
            ToolSpec {
                name: "task".into(),
                description: "d".into(),
                parameters: serde_json::json!({"type": "object"}),
            }
        }
        fn concurrency(&self) -> usize {
            2
        }
        fn start(&self, call: &ToolCall) -> Result<Running<'_>, ToolError> {
            let arguments = call.arguments.clone();
            let panics = self.panics;
            Ok(Box::pin(async move {
                assert!(!panics, "handler bug");
                Ok(ToolOutput {
                    text: format!("task {arguments}"),
                    ..ToolOutput::default()
                })
            }))
        }
    }

    fn call(id: usize, name: &str) -> ToolCall {
        ToolCall::new(format!("c{id}"), name, format!("{{\"n\":{id}}}"))
    }

    fn contents(ran: &Ran) -> Vec<String> {
        ran.results
            .iter()
            .map(|m| match m {
                Message::ToolResult { content, .. } => content.clone(),
                other => panic!("not a result: {other:?}"),
            })
            .collect()
    }

    #[tokio::test]
    async fn a_tool_not_given_is_the_same_error_for_every_agent_and_runs_nothing() {
        let fake = Arc::new(Fake::default());
        let echo = Echo { panics: false };
        let plain = ToolRouter::new(fake.clone(), &["read_file".into()]);
        let lead = ToolRouter::new(fake.clone(), &["read_file".into()]).with(&echo);
        let events = EventSink::silent("g");
        let calls = [call(0, "write_file"), call(1, "read_file"), call(2, "task")];
        let ran = plain.run(&calls, &events).await.unwrap();
        let error = |tools: &str| {
            format!(
                "error: tool \"write_file\" is not available to this agent; available tools: {tools}"
            )
        };
        assert_eq!(
            contents(&ran),
            vec![
                error("read_file"),
                "read_file ran".to_string(),
                "error: tool \"task\" is not available to this agent; available tools: read_file"
                    .to_string(),
            ]
        );
        assert_eq!(ran.errors, 2);
        let ran = lead.run(&calls, &events).await.unwrap();
        assert_eq!(
            contents(&ran),
            vec![
                error("read_file, task"),
                "read_file ran".to_string(),
                "task {\"n\":2}".to_string(),
            ]
        );
        assert_eq!(*fake.ran.lock().unwrap(), vec!["{\"n\":1}", "{\"n\":1}"]);
        let none = ToolRouter::new(fake.clone(), &[]);
        let ran = none.run(&calls[..1], &events).await.unwrap();
        assert_eq!(contents(&ran), vec![error("none")]);
    }

    #[tokio::test]
    async fn calls_past_the_turn_limit_and_calls_cut_by_max_tokens_run_nothing() {
        let fake = Arc::new(Fake::default());
        let router = ToolRouter::new(fake.clone(), &["grep".into()]);
        let mut calls: Vec<ToolCall> = (0..=MAX_CALLS_PER_TURN).map(|i| call(i, "grep")).collect();
        calls[1].truncated = true;
        let ran = router.run(&calls, &EventSink::silent("g")).await.unwrap();
        let contents = contents(&ran);
        assert_eq!(
            contents.len(),
            MAX_CALLS_PER_TURN + 1,
            "every call answered"
        );
        assert_eq!(
            contents[1],
            "error: this call was cut by the output token limit, its arguments may be incomplete ({\"n\":1}); call it again"
        );
        assert!(
            contents[MAX_CALLS_PER_TURN].starts_with("error: more than 16 tool calls in one turn"),
            "{}",
            contents[MAX_CALLS_PER_TURN]
        );
        assert_eq!(ran.errors, 2);
        assert_eq!(fake.ran.lock().unwrap().len(), MAX_CALLS_PER_TURN - 1);
    }

    #[tokio::test]
    async fn a_panicking_or_failing_tool_fails_the_agent_and_names_the_tool() {
        let events = EventSink::silent("g");
        let fake = Arc::new(Fake {
            panic_on: Some("grep"),
            ..Fake::default()
        });
        let router = ToolRouter::new(fake, &["read_file".into(), "grep".into()]);
        let fatal = router
            .run(&[call(0, "read_file"), call(1, "grep")], &events)
            .await
            .unwrap_err();
        assert_eq!(
            fatal.0,
            "the grep tool panicked (boom): a fanscan bug, please report it"
        );
        let fake = Arc::new(Fake {
            internal_on: Some("read_file"),
            ..Fake::default()
        });
        let router = ToolRouter::new(fake, &["read_file".into()]);
        let fatal = router
            .run(&[call(0, "read_file")], &events)
            .await
            .unwrap_err();
        assert_eq!(fatal.0, "the disk failed under {\"n\":0}");
        let echo = Echo { panics: true };
        let router = ToolRouter::new(Arc::new(Fake::default()), &[]).with(&echo);
        let fatal = router.run(&[call(0, "task")], &events).await.unwrap_err();
        assert!(
            fatal.0.starts_with("the task tool panicked (handler bug)"),
            "{}",
            fatal.0
        );
    }
}
