//! The sub-agent: `(definition, task) -> GroupReport`.
//!
//! A fresh message list (the definition's system prompt and one task
//! message, nothing else); only the definition's tools are offered, and a
//! call to any other name gets an error result and runs nothing; a ReAct
//! loop until the model answers without tool calls, says `[TASK_COMPLETE]`
//! or reaches `max_rounds`; then always exactly one forced final-summary
//! turn with tools switched off. Only the [`GroupReport`] leaves; the
//! transcript goes to the event sink and is dropped.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::budget::Spend;
use crate::conversation::{
    ChatRequest, ChatResponse, FinishReason, Message, ToolCall, ToolChoice, Usage,
};
use crate::events::EventSink;
use crate::findings::{
    Finding, HowParsed, Origin, ParsedReport, REPORT_FORMAT, Severity, TASK_COMPLETE, Unparsed,
    parse_report, says_complete,
};
use crate::providers::{Provider, ProviderError};
use crate::tools::secrets::Redaction;
use crate::tools::{ToolContext, ToolError};

/// Most tool calls run from one model turn; the rest get an error result.
const MAX_CALLS_PER_TURN: usize = 16;

tokio::task_local! {
    /// How deep in agent nesting the current task is. Set by scope, so it
    /// is restored on every exit path (return, error, cancellation, panic).
    static DEPTH: u32;
}

/// The deepest nesting allowed: a sub-agent may not start another.
pub(crate) const MAX_DEPTH: u32 = 1;

/// One file of a task.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskFile {
    pub path: String,
    pub bytes: u64,
    pub language: Option<String>,
}

/// What one sub-agent is asked to do.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentTask {
    /// The group id.
    pub group: String,
    pub files: Vec<TaskFile>,
    /// The planner's focus note.
    pub focus: Option<String>,
    /// Free-text instructions (`run-agent --task`); a default otherwise.
    pub instructions: Option<String>,
}

/// A file of a task as the model is shown it up front: what `read_file`
/// returns from the top (numbered, redacted, cut at the read limit with the
/// paging hint), or the error it gave.
#[derive(Clone, Debug)]
pub(crate) struct Preloaded {
    pub(crate) path: String,
    pub(crate) text: String,
}

impl AgentTask {
    /// The task message, the only user message of a fresh context. With
    /// `preloaded` files, each follows the task text as a
    /// `<file path="…">` block, in the plan's order.
    pub(crate) fn render(&self, preloaded: &[Preloaded]) -> String {
        let mut text = format!("TASK: audit-group {}\n\n", self.group);
        text.push_str(self.instructions.as_deref().unwrap_or(
            "Audit the files below for defects, security risks and reliability problems. \
             Report only what you saw in the files, with exact paths and line numbers.",
        ));
        text.push('\n');
        if let Some(focus) = &self.focus {
            text.push_str(&format!("\nFocus: {focus}\n"));
        }
        if self.files.is_empty() {
            text.push_str("\nNo file list is given: explore the repository with list_dir and read what matters.\n");
        } else if preloaded.is_empty() {
            text.push_str("\nFiles of this group (read every one with read_file; long files are cut, page on with offset):\n");
        } else {
            text.push_str(
                "\nFiles of this group. Each is below, exactly as read_file returns it from the top \
                 (numbered lines): do not read them again. A long file is cut: page on with read_file \
                 at the offset its cut line gives. Use tools only to follow references (callers, \
                 configuration, related files).\n",
            );
        }
        for f in &self.files {
            let language = f.language.as_deref().unwrap_or("text");
            text.push_str(&format!("- {} ({} bytes, {language})\n", f.path, f.bytes));
        }
        text.push_str("\nWhen you are done, give your report.\n");
        text.push_str(REPORT_FORMAT);
        text.push_str(&format!("\nEnd your final answer with {TASK_COMPLETE}.\n"));
        for file in preloaded {
            text.push_str(&format!("\n<file path=\"{}\">\n{}", file.path, file.text));
            if !file.text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str("</file>\n");
        }
        text
    }
}

/// The forced final-summary request.
///
/// It names the report format of the task rather than repeating it: the
/// task is in the context, and every repeated token is billed.
pub(crate) fn summary_request() -> String {
    format!(
        "Give the complete summary of every step's key findings in the report format of the task: \
         a short prose summary, then ONE fenced JSON block {{\"findings\": [...]}} with every finding \
         from every file you read, not only the latest ones, each with path, line, severity, title, \
         detail and evidence copied exactly from the file without line numbers. Do not call tools. \
         End with {TASK_COMPLETE}."
    )
}

/// Replaces the content of the tool results after the model's latest
/// answer (results it has not seen) with a note: the budget had no room to
/// send them. Each call keeps its result, as the wire formats require.
fn leave_out_unseen_results(messages: &mut [Message]) {
    for message in messages.iter_mut().rev() {
        match message {
            Message::ToolResult { content, .. } => {
                *content = "(result left out: the token budget had no room to send it)".into();
            }
            Message::User { .. } | Message::Assistant { .. } => break,
        }
    }
}

/// How a sub-agent ended.
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
        }
    }

    /// Whether the group's files count as reviewed.
    pub fn reviewed(self) -> bool {
        match self {
            Self::Complete | Self::MaxRounds | Self::WrappedUp => true,
            Self::Failed | Self::Unreviewed | Self::Interrupted => false,
        }
    }
}

/// A file of a group and the hash of the content that was audited.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileHash {
    pub path: String,
    /// SHA-256 of the bytes; empty when the file could not be read.
    pub sha256: String,
}

/// The unit of work and of persistence: self-contained and serializable.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GroupReport {
    pub group: String,
    pub files: Vec<FileHash>,
    pub agent: String,
    /// SHA-256 of the agent's definition.
    pub agent_hash: String,
    pub provider: String,
    pub model: String,
    pub status: AgentStatus,
    pub error: Option<String>,
    pub rounds: u32,
    pub tool_calls: u32,
    pub tool_errors: u32,
    /// Files whose content the model was shown.
    pub files_read: Vec<String>,
    pub usage: Usage,
    /// The final summary text (marker stripped).
    pub summary: String,
    /// Whether the summary's findings block parsed.
    pub summary_parsed: bool,
    /// Entries of the findings block that were not findings.
    pub rejected: Vec<String>,
    /// How the final report's findings block was read.
    pub parse: HowParsed,
    /// Whether the one repair turn was asked (the first final report did
    /// not parse, or had entries that were not findings).
    #[serde(default)]
    pub repair_turn: bool,
    /// Every claim of the model that did not become a finding, with why.
    #[serde(default)]
    pub unparsed: Vec<Unparsed>,
    pub findings: Vec<Finding>,
}

/// What a sub-agent runs with.
pub(crate) struct AgentRun<'a> {
    pub definition: &'a super::AgentDefinition,
    pub provider: &'a dyn Provider,
    pub tools: &'a Arc<ToolContext>,
    pub events: &'a EventSink,
    /// Stop calling tools and give the final summary now (budget, Ctrl-C).
    pub wrap_up: &'a CancellationToken,
    /// Abort at once.
    pub cancel: &'a CancellationToken,
    /// The run's budget: every call's usage is counted here at once.
    pub spend: &'a Spend,
    pub max_output_tokens: u32,
    /// What the provider's prompt-cache key is derived from, with the group
    /// (the plan's hash in a scan), so a group's turns share one key.
    pub cache_scope: &'a str,
}

/// Runs one sub-agent on one task. Never panics and never returns an
/// error: failures are recorded in the report with what was done.
pub(crate) async fn run_subagent(run: AgentRun<'_>, task: &AgentTask) -> GroupReport {
    run_prepared(run, task, None).await
}

/// [`run_subagent`] on a task already [`prepare`]d (the fan-out prepares a
/// group before it admits it, to reserve what its first call needs).
pub(crate) async fn run_prepared(
    run: AgentRun<'_>,
    task: &AgentTask,
    prepared: Option<Prepared>,
) -> GroupReport {
    let depth = DEPTH.try_with(|d| *d).unwrap_or(0);
    if depth >= MAX_DEPTH {
        let mut report = empty_report(&run, task);
        report.status = AgentStatus::Failed;
        report.error = Some(format!(
            "refused: agents may not start agents (depth {depth} of {MAX_DEPTH})"
        ));
        return report;
    }
    DEPTH.scope(depth + 1, run_inner(run, task, prepared)).await
}

/// A task made ready before its first call: its files hashed and swept
/// for secrets, the preloaded ones read, its task message rendered.
pub(crate) struct Prepared {
    report: GroupReport,
    secrets: BTreeSet<(String, u32, &'static str)>,
    files_read: BTreeSet<String>,
    /// The task message: the first call's only message.
    task_text: String,
}

impl Prepared {
    /// The estimate the budget checks the first call at (the call, with
    /// an answer of up to 512 tokens).
    pub(crate) fn first_call_tokens(&self, run: &AgentRun<'_>) -> u64 {
        expected_tokens(&turn_request(
            run,
            vec![Message::User {
                text: self.task_text.clone(),
            }],
            ToolContext::specs(&run.definition.tools),
            None,
        ))
    }
}

/// The request of one turn of the loop (tools offered).
fn turn_request(
    run: &AgentRun<'_>,
    messages: Vec<Message>,
    tools: Vec<crate::conversation::ToolSpec>,
    cache_key: Option<String>,
) -> ChatRequest {
    ChatRequest {
        model: run.definition.model.clone(),
        system: run.definition.prompt.clone(),
        messages,
        tools,
        tool_choice: ToolChoice::Auto,
        max_output_tokens: run.max_output_tokens,
        cache_key,
        structured: false,
        ..ChatRequest::default()
    }
}

/// What the budget expects a call to cost: its estimate with an answer of
/// up to 512 tokens rather than the whole output limit.
fn expected_tokens(request: &ChatRequest) -> u64 {
    request.estimated_tokens() - u64::from(request.max_output_tokens)
        + u64::from(request.max_output_tokens.min(512))
}

/// Hashes and sweeps `task`'s files and reads the preloaded ones. A
/// failure gives the failed report (its events already sent).
pub(crate) async fn prepare(run: &AgentRun<'_>, task: &AgentTask) -> Result<Prepared, GroupReport> {
    let mut report = empty_report(run, task);
    let failed = |mut report: GroupReport, error: String| {
        report.status = AgentStatus::Failed;
        report.error = Some(error);
        run.events.started(&run.definition.name);
        run.events
            .finished(report.status.as_str(), report.findings.len());
        report
    };

    // Hash what is audited and sweep it for secrets: the tool layer reports
    // every secret in the group whatever the model reads.
    let paths: Vec<String> = task.files.iter().map(|f| f.path.clone()).collect();
    let tools = Arc::clone(run.tools);
    let preload = run.definition.preload;
    let prepared = tokio::task::spawn_blocking(move || {
        let swept = tools.hash_and_sweep(&paths);
        let preloaded: Vec<_> = if preload {
            paths
                .iter()
                .map(|p| (p.clone(), tools.read_from_top(p)))
                .collect()
        } else {
            Vec::new()
        };
        (swept, preloaded)
    })
    .await;
    let (swept, preloads) = match prepared {
        Ok(prepared) => prepared,
        Err(e) => {
            // Without the sweep, no secret in the group would be reported:
            // the group fails rather than pass as "no secrets".
            return Err(failed(
                report,
                format!(
                    "the secret sweep of the group's files failed ({e}): a fanscan bug, please report it"
                ),
            ));
        }
    };
    let mut secrets: BTreeSet<(String, u32, &'static str)> = BTreeSet::new();
    for (index, (hash, redactions)) in swept.into_iter().enumerate() {
        if let Some(entry) = report.files.get_mut(index) {
            entry.sha256 = hash;
            for r in redactions {
                secrets.insert((entry.path.clone(), r.line, r.kind));
            }
        }
    }
    let mut files_read: BTreeSet<String> = BTreeSet::new();
    let mut preloaded = Vec::new();
    for (path, output) in preloads {
        let text = match output {
            Ok(out) => {
                files_read.extend(out.files_read);
                out.text
            }
            Err(ToolError::Model(message)) => format!("error: {message}\n"),
            Err(ToolError::Internal(message)) => {
                return Err(failed(
                    report,
                    format!("preloading {path} failed: {message}"),
                ));
            }
        };
        preloaded.push(Preloaded { path, text });
    }
    Ok(Prepared {
        report,
        secrets,
        files_read,
        task_text: task.render(&preloaded),
    })
}

fn empty_report(run: &AgentRun<'_>, task: &AgentTask) -> GroupReport {
    GroupReport::empty(task, run.definition, run.provider)
}

impl GroupReport {
    /// A report of `task` with nothing done yet: files unhashed, status
    /// complete, no usage. The agent's model wins over the provider's.
    pub(crate) fn empty(
        task: &AgentTask,
        definition: &super::AgentDefinition,
        provider: &dyn Provider,
    ) -> Self {
        Self {
            group: task.group.clone(),
            files: task
                .files
                .iter()
                .map(|f| FileHash {
                    path: f.path.clone(),
                    sha256: String::new(),
                })
                .collect(),
            agent: definition.name.clone(),
            agent_hash: definition.hash.clone(),
            provider: provider.name().to_string(),
            model: definition
                .model
                .clone()
                .unwrap_or_else(|| provider.model().to_string()),
            status: AgentStatus::Complete,
            error: None,
            rounds: 0,
            tool_calls: 0,
            tool_errors: 0,
            files_read: Vec::new(),
            usage: Usage::default(),
            summary: String::new(),
            summary_parsed: false,
            rejected: Vec::new(),
            parse: HowParsed::NoBlock,
            repair_turn: false,
            unparsed: Vec::new(),
            findings: Vec::new(),
        }
    }
}

impl GroupReport {
    /// What `fanscan run-agent` prints: status, counters, findings and the
    /// summary text.
    pub fn render_text(&self) -> String {
        let mut out = format!(
            "agent {} ({}, {}): {}{}\nrounds {}, tool calls {} ({} errors), files read {}, tokens {} in / {} out\n\n",
            self.agent,
            self.provider,
            self.model,
            self.status.as_str(),
            self.error
                .as_deref()
                .map(|e| format!(": {e}"))
                .unwrap_or_default(),
            self.rounds,
            self.tool_calls,
            self.tool_errors,
            self.files_read.len(),
            crate::util::human_count(self.usage.input_tokens),
            crate::util::human_count(self.usage.output_tokens)
        );
        for f in &self.findings {
            out.push_str(&format!(
                "- [{}] {} {}:{}\n",
                f.severity.as_str(),
                f.title,
                f.path,
                f.line
            ));
        }
        if !self.summary_parsed && !self.summary.is_empty() {
            out.push_str("\n(the summary had no findings block; its text follows)\n");
        }
        out.push_str(&format!("\n{}\n", self.summary));
        out
    }
}

async fn run_inner(run: AgentRun<'_>, task: &AgentTask, prepared: Option<Prepared>) -> GroupReport {
    let prepared = match prepared {
        Some(prepared) => prepared,
        None => match prepare(&run, task).await {
            Ok(prepared) => prepared,
            Err(report) => return report,
        },
    };
    run.events.started(&run.definition.name);
    let Prepared {
        mut report,
        mut secrets,
        mut files_read,
        task_text,
    } = prepared;

    let allowed: Vec<String> = run.definition.tools.clone();
    let mut specs = ToolContext::specs(&allowed);
    let mut messages = vec![Message::User { text: task_text }];
    run.events.transcript(
        || json!({"type": "system", "agent": run.definition.name, "text": run.definition.prompt}),
    );
    run.events
        .transcript(|| json!({"type": "message", "message": messages[0]}));
    let cache_key = (!run.cache_scope.is_empty()).then(|| {
        let hash =
            crate::util::sha256_hex(format!("{}\n{}", run.cache_scope, task.group).as_bytes());
        format!("fanscan-{}", &hash[..32])
    });
    let mut last_text: Option<String> = None;
    let mut final_report: Option<ParsedReport> = None;
    let mut ended: Option<Ended> = None;
    let mut nudged = false;
    // The estimate of a call the budget refused (the run itself was not
    // stopped), to say so rather than blame a stop that did not happen.
    let mut refused: Option<u64> = None;
    // What the model had seen before the latest tool results.
    let mut seen_before_results = files_read.clone();

    while ended.is_none() {
        let stopping = run.wrap_up.is_cancelled();
        if !stopping && report.rounds >= run.definition.max_rounds {
            report.status = AgentStatus::MaxRounds;
            break;
        }
        // The conversation moves into the request and back: no copy of it
        // is made per round.
        let request = turn_request(
            &run,
            std::mem::take(&mut messages),
            std::mem::take(&mut specs),
            cache_key.clone(),
        );
        // Stop calling tools when the run winds down (budget, time, Ctrl-C)
        // or when this call would cross the budget: the agent goes straight
        // to its summary, or, if it has done nothing yet, ends without one.
        let expected = expected_tokens(&request);
        let go = !stopping && run.spend.allows(Some(&task.group), expected);
        if !go && !stopping {
            refused = Some(expected);
        }
        let outcome = if go {
            report.rounds += 1;
            run.events.round(report.rounds);
            Some(call(&run, &request, &mut report).await)
        } else {
            None
        };
        (messages, specs) = (request.messages, request.tools);
        let Some(outcome) = outcome else {
            if report.rounds == 0 {
                ended = Some(Ended::Cancelled);
            } else {
                report.status = AgentStatus::WrappedUp;
                // The summary is asked either way, and carries what the
                // refused call would have. When the budget has no room
                // even for that, the tool results the model has not seen
                // are left out of it (and their files were not seen), so
                // the summary costs no more than the call before it.
                if let Some(tokens) = refused
                    && !run.spend.summary_fits(&task.group, tokens)
                {
                    leave_out_unseen_results(&mut messages);
                    files_read = std::mem::take(&mut seen_before_results);
                }
            }
            break;
        };
        let response = match outcome {
            Ok(r) => r,
            Err(e) => {
                ended = Some(Ended::from(e));
                break;
            }
        };
        let says_done = response.text.as_deref().is_some_and(says_complete);
        let Turn { calls, paused } =
            record_turn(response, run.events, &mut messages, &mut last_text);
        if calls.is_empty() {
            if paused {
                continue;
            }
            if let Some(nudge) = nudge_once(&mut nudged, task, &files_read, run.wrap_up) {
                messages.push(nudge);
                continue;
            }
            report.status = AgentStatus::Complete;
            break;
        }
        seen_before_results.clone_from(&files_read);
        let results = match run_tools(
            &run,
            &allowed,
            &calls,
            &mut report,
            &mut files_read,
            &mut secrets,
        )
        .await
        {
            Ok(results) => results,
            Err(reason) => {
                ended = Some(Ended::Failed(reason));
                break;
            }
        };
        for result in results {
            run.events
                .transcript(|| json!({"type": "message", "message": result}));
            messages.push(result);
        }
        if says_done {
            if let Some(nudge) = nudge_once(&mut nudged, task, &files_read, run.wrap_up) {
                messages.push(nudge);
                continue;
            }
            report.status = AgentStatus::Complete;
            break;
        }
    }

    match ended {
        Some(Ended::Cancelled) => {
            report.status = AgentStatus::Interrupted;
            report.error = Some(if let (0, Some(tokens)) = (report.rounds, refused) {
                format!(
                    "stopped before its first call: the call (~{tokens} tokens) and the summary after it did not fit in what is left of the budget"
                )
            } else if report.rounds == 0 {
                "stopped before its first call: the run was stopped early (a budget or an interrupt)".into()
            } else {
                "interrupted".into()
            });
        }
        Some(Ended::Failed(reason)) => {
            report.status = AgentStatus::Failed;
            report.error = Some(reason);
        }
        None => {
            // The forced final summary: always asked, exactly once.
            messages.push(Message::User {
                text: summary_request(),
            });
            run.events
                .transcript(|| json!({"type": "message", "message": messages.last()}));
            let request = ChatRequest {
                model: run.definition.model.clone(),
                system: run.definition.prompt.clone(),
                messages,
                tools: specs,
                tool_choice: ToolChoice::None,
                max_output_tokens: run.max_output_tokens,
                cache_key,
                // The report through the provider's structured output.
                structured: true,
                ..ChatRequest::default()
            };
            report.rounds += 1;
            run.events.round(report.rounds);
            match call(&run, &request, &mut report).await {
                Ok(response) => {
                    run.events
                        .transcript(|| json!({"type": "summary", "text": response.text}));
                    let text = response.text.unwrap_or_default();
                    let parsed = parse_report(&text);
                    last_text = None;
                    final_report = Some(if needs_repair(&parsed) {
                        repair(&run, request, text, parsed, &mut report).await
                    } else {
                        parsed
                    });
                }
                Err(ProviderError::Cancelled) => {
                    report.status = AgentStatus::Interrupted;
                    report.error = Some("interrupted during the final summary".into());
                }
                Err(error) => {
                    report.status = AgentStatus::Failed;
                    report.error = Some(format!("the final summary failed: {error}"));
                }
            }
        }
    }

    if let Some(parsed) = final_report.or_else(|| last_text.map(|t| parse_report(&t))) {
        report.summary = parsed.text;
        report.summary_parsed = parsed.parsed;
        report.rejected = parsed.rejected;
        report.parse = parsed.how;
        report.unparsed = parsed.unparsed;
        report.findings = parsed.findings;
    }
    // A model that never saw any of its group's files did not review
    // them, whatever it answered.
    let saw_any = task.files.iter().any(|f| files_read.contains(&f.path));
    if !task.files.is_empty() && !saw_any && report.status.reviewed() {
        report.status = AgentStatus::Unreviewed;
        report.error = Some(
            "the model answered without reading any of its files (even after being asked to): nothing was reviewed"
                .into(),
        );
    }
    report.findings.extend(
        secrets
            .into_iter()
            .map(|(path, line, kind)| secret_finding(path, line, kind)),
    );
    report.files_read = files_read.into_iter().collect();
    run.events
        .finished(report.status.as_str(), report.findings.len());
    report
}

/// What a model's answer asks of the loop.
pub(crate) struct Turn {
    /// The tool calls to run (none: the model has answered).
    pub(crate) calls: Vec<ToolCall>,
    /// The server paused the turn (`pause_turn`): send it back as it is.
    pub(crate) paused: bool,
}

/// Records a model's answer: its text as the latest, the assistant message
/// appended to the conversation and the transcript. Shared by the
/// sub-agent loop and the lead's.
pub(crate) fn record_turn(
    response: ChatResponse,
    events: &EventSink,
    messages: &mut Vec<Message>,
    last_text: &mut Option<String>,
) -> Turn {
    if let Some(text) = &response.text {
        *last_text = Some(text.clone());
    }
    let paused = response.finish == FinishReason::Other("pause_turn".into());
    let calls = response.tool_calls;
    let assistant = Message::Assistant {
        text: response.text,
        tool_calls: calls.clone(),
    };
    events.transcript(|| json!({"type": "message", "message": assistant}));
    messages.push(assistant);
    Turn { calls, paused }
}

/// The one nudge of a model that ends while files of its group were
/// neither preloaded nor read: it names them. `None` once it was given, or
/// when nothing is missing, or when the run is winding down.
fn nudge_once(
    nudged: &mut bool,
    task: &AgentTask,
    files_read: &BTreeSet<String>,
    wrap_up: &CancellationToken,
) -> Option<Message> {
    if *nudged || wrap_up.is_cancelled() {
        return None;
    }
    let unread: Vec<&str> = task
        .files
        .iter()
        .map(|f| f.path.as_str())
        .filter(|p| !files_read.contains(*p))
        .collect();
    if unread.is_empty() {
        return None;
    }
    *nudged = true;
    Some(Message::User {
        text: format!(
            "You have not read {}: read them with read_file before you answer. Report only what you saw in them.",
            unread.join(", ")
        ),
    })
}

/// Whether a final report gets the repair turn: no block parsed, or some
/// of its entries were not findings.
fn needs_repair(parsed: &ParsedReport) -> bool {
    !parsed.parsed || !parsed.rejected.is_empty()
}

/// The repair request: the parser's complaint, and the format again.
fn repair_request(parsed: &ParsedReport) -> String {
    let problem = match parsed.how.error() {
        Some(error) => format!("its JSON block does not parse: {error}"),
        None if !parsed.parsed => "it has no JSON findings block".to_string(),
        None => format!(
            "some entries are not findings: {}",
            parsed.rejected.join("; ")
        ),
    };
    format!(
        "Your final report could not be read: {problem}. Answer again with the complete report: \
         ONE fenced JSON block with every finding, valid JSON (escape every double quote inside a \
         string as \\\"), `evidence` copied exactly from the file without line numbers. Do not call \
         tools. End with {TASK_COMPLETE}.\n\n{REPORT_FORMAT}"
    )
}

/// The one repair turn. Keeps whichever of the two reports gave more
/// findings (the repaired one on a tie); a failed or cancelled repair keeps
/// the first, with the claims it could not read.
async fn repair(
    run: &AgentRun<'_>,
    request: ChatRequest,
    first_text: String,
    first: ParsedReport,
    report: &mut GroupReport,
) -> ParsedReport {
    let mut messages = request.messages;
    messages.push(Message::Assistant {
        text: Some(first_text),
        tool_calls: Vec::new(),
    });
    messages.push(Message::User {
        text: repair_request(&first),
    });
    run.events
        .transcript(|| json!({"type": "message", "message": messages.last()}));
    let request = ChatRequest {
        messages,
        ..request
    };
    report.rounds += 1;
    report.repair_turn = true;
    run.events.round(report.rounds);
    match call(run, &request, report).await {
        Ok(response) => {
            run.events
                .transcript(|| json!({"type": "repair", "text": response.text}));
            let second = parse_report(response.text.as_deref().unwrap_or_default());
            let better =
                second.parsed && (second.findings.len() >= first.findings.len() || !first.parsed);
            if better { second } else { first }
        }
        Err(_) => first,
    }
}

/// One model call, cancellable, with its usage counted.
async fn call(
    run: &AgentRun<'_>,
    request: &ChatRequest,
    report: &mut GroupReport,
) -> Result<ChatResponse, ProviderError> {
    let response = tokio::select! {
        biased;
        _ = run.cancel.cancelled() => Err(ProviderError::Cancelled),
        r = run.provider.chat(request) => r,
    }?;
    let usage = response.usage_or_estimate(request);
    report.usage.add(usage);
    run.spend
        .charge(Some(&report.group), &report.agent, usage, &report.model);
    run.events.usage(usage);
    Ok(response)
}

/// Runs every call of a turn and answers each id, in order. An error is a
/// failure that is not the model's (a tool thread panicked, the disk
/// failed): the group fails with it.
async fn run_tools(
    run: &AgentRun<'_>,
    allowed: &[String],
    calls: &[ToolCall],
    report: &mut GroupReport,
    files_read: &mut BTreeSet<String>,
    secrets: &mut BTreeSet<(String, u32, &'static str)>,
) -> Result<Vec<Message>, String> {
    let mut runnable = Vec::new();
    let mut answers: Vec<Option<(String, bool)>> = vec![None; calls.len()];
    for (index, call) in calls.iter().enumerate() {
        report.tool_calls += 1;
        run.events.tool(&call.name, &target_of(&call.arguments));
        if !allowed.iter().any(|a| a == &call.name) {
            // Never shown to the model, and never run.
            let available = if allowed.is_empty() {
                "none".to_string()
            } else {
                allowed.join(", ")
            };
            answers[index] = Some((
                format!(
                    "error: tool {:?} is not available to this agent; available tools: {available}",
                    call.name
                ),
                true,
            ));
        } else if index >= MAX_CALLS_PER_TURN {
            answers[index] = Some((
                format!(
                    "error: more than {MAX_CALLS_PER_TURN} tool calls in one turn; call this one again in the next turn"
                ),
                true,
            ));
        } else {
            runnable.push((index, call.clone()));
        }
    }
    let tools = Arc::clone(run.tools);
    let outputs = tokio::task::spawn_blocking(move || {
        runnable
            .into_iter()
            .map(|(index, call)| (index, tools.call(&call.name, &call.arguments)))
            .collect::<Vec<_>>()
    })
    .await
    .map_err(|e| format!("a tool thread failed ({e}): a fanscan bug, please report it"))?;
    for (index, output) in outputs {
        answers[index] = Some(match output {
            Ok(out) => {
                files_read.extend(out.files_read);
                for (path, Redaction { line, kind }) in out.redactions {
                    secrets.insert((path, line, kind));
                }
                (out.text, false)
            }
            Err(ToolError::Model(message)) => (format!("error: {message}"), true),
            Err(ToolError::Internal(message)) => return Err(message),
        });
    }
    Ok(calls
        .iter()
        .zip(answers)
        .map(|(call, answer)| {
            let (content, is_error) =
                answer.unwrap_or_else(|| ("error: the tool did not run".to_string(), true));
            if is_error {
                report.tool_errors += 1;
            }
            Message::ToolResult {
                call_id: call.id.clone(),
                name: call.name.clone(),
                content,
                is_error,
            }
        })
        .collect())
}

/// Why a loop ended before its summary.
enum Ended {
    /// Cancelled (Ctrl-C, a budget) before it could finish.
    Cancelled,
    /// A failure, with the reason the report gives.
    Failed(String),
}

impl From<ProviderError> for Ended {
    fn from(error: ProviderError) -> Self {
        match error {
            ProviderError::Cancelled => Self::Cancelled,
            other => Self::Failed(other.to_string()),
        }
    }
}

/// The main argument of a call, for progress lines.
fn target_of(arguments: &str) -> String {
    serde_json::from_str::<serde_json::Value>(arguments)
        .ok()
        .and_then(|v| {
            ["path", "pattern"]
                .iter()
                .find_map(|k| v.get(k).and_then(|p| p.as_str()).map(str::to_string))
        })
        .unwrap_or_default()
}

/// The finding the tool layer reports for a redacted secret. It carries no
/// evidence: the report must not repeat the secret either.
pub(crate) fn secret_finding(path: String, line: u32, kind: &str) -> Finding {
    // A secret in test code is often a fixture, but still worth a look.
    let in_tests = crate::rules::is_test_path(&path);
    Finding {
        severity: if in_tests {
            Severity::Low
        } else {
            Severity::High
        },
        title: format!(
            "Hard-coded secret ({kind}){}",
            if in_tests { " in test code" } else { "" }
        ),
        detail: format!(
            "A secret of kind {kind} is written in the file. fanscan redacted it before anything was sent to a model. \
             Move it to a secret store or the environment, and rotate it: it is in the repository's history."
        ),
        path,
        line,
        end_line: None,
        evidence: None,
        rule: Some(format!("secret/{kind}")),
        origin: Origin::ToolLayer,
    }
}
