//! `fanscan ask`: one question answered by a lead agent that delegates.
//!
//! Takes a [`Context`], a [`Ui`] and the question; gives an [`Answer`]:
//! the lead's answer, one entry per sub-agent it started (agent,
//! description, status, rounds, usage, cost), the `path:line` citations of
//! the answer checked against the files, and totals. With a language model
//! the lead is [`crate::agents::lead::Lead`]; with the offline rule engine,
//! which cannot read a question, a deterministic lead delegates one audit
//! per top-level directory to the auditor and answers with a counted
//! summary that says what it is. Sub-agents' findings are verified as a
//! scan's are ([`crate::stages::verify`]); the answer's citations are then matched
//! against them and against the files.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::sync::Arc;

use futures::StreamExt;
use serde::Serialize;
use tokio::sync::mpsc::UnboundedSender;

use crate::agents::lead::{Lead, LeadOutcome, TaskRun, run_delegated};
use crate::agents::{AgentRun, AgentStatus, AgentTask, Question, TaskFile};
use crate::config::ConfigError;
use crate::llm::budget::{AgentUsage, Spend};
use crate::llm::conversation::Usage;
use crate::llm::events::{Event, EventSink};
use crate::llm::providers::EngineKind;
use crate::llm::providers::stream::{OnText, Shown};
use crate::model::findings::{Finding, Severity};
use crate::pipeline::context::{Context, SetupError, Ui};
use crate::stages::inventory::Inventory;
use crate::stages::verify::Checked;
use crate::tools::ToolContext;
use crate::util::count as plural;

/// An `ask` that could not produce an answer.
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    /// Before anything was asked (exit code 2).
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// Verification itself failed: a fanscan bug (exit code 1).
    #[error("verification failed ({0}): a fanscan bug, please report it")]
    Verify(#[source] tokio::task::JoinError),
}

/// What `fanscan ask` gives.
#[derive(Clone, Debug, Serialize)]
pub struct Answer {
    pub(crate) question: String,
    /// The lead's answer (with the offline engine, a counted summary).
    pub answer: String,
    pub(crate) engine: EngineKind,
    pub(crate) provider: String,
    pub(crate) model: String,
    /// How the lead ended.
    pub status: AgentStatus,
    pub(crate) error: Option<String>,
    /// The lead ended on its own, nothing stopped the run and every task
    /// was reviewed.
    pub complete: bool,
    /// Why the run was stopped early, if it was.
    pub stopped: Vec<String>,
    pub lead: LeadSummary,
    pub tasks: Vec<TaskSummary>,
    /// The answer's `path:line` citations, checked against the files.
    pub citations: Vec<Citation>,
    pub totals: Totals,
    /// Tokens and cost by agent name.
    pub(crate) by_agent: BTreeMap<String, AgentUsage>,
    /// The lead's text was already shown on stdout as it arrived.
    #[serde(skip)]
    pub streamed: bool,
}

/// The lead's own work.
#[derive(Clone, Debug, Serialize)]
pub struct LeadSummary {
    pub rounds: u32,
    pub tool_calls: u32,
    pub tool_errors: u32,
    pub usage: Usage,
    pub cost_usd: Option<f64>,
}

/// One sub-agent the lead started.
#[derive(Clone, Debug, Serialize)]
pub struct TaskSummary {
    /// `task-N`; its transcript is `<--transcripts>/task-N.jsonl`.
    pub id: String,
    pub agent: String,
    pub description: String,
    pub status: AgentStatus,
    pub error: Option<String>,
    pub rounds: u32,
    pub tool_calls: u32,
    pub usage: Usage,
    pub cost_usd: Option<f64>,
    /// Findings the sub-agent reported, and how many verified.
    pub findings: usize,
    pub verified_findings: usize,
}

/// How a citation held up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CitationStatus {
    /// A sub-agent's finding at this place, its quoted evidence matched.
    Verified,
    /// The file has this line, but no verified finding backs it.
    Unchecked,
    /// No such file among the scanned ones, or no such line.
    Unverifiable,
}

impl CitationStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Verified => "verified",
            Self::Unchecked => "unchecked",
            Self::Unverifiable => "unverifiable",
        }
    }
}

/// One `path:line` of the answer.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Citation {
    pub path: String,
    pub line: u32,
    pub status: CitationStatus,
    pub note: String,
}

/// The run's totals: the lead and every task.
#[derive(Clone, Debug, Serialize)]
pub struct Totals {
    pub(crate) tasks: usize,
    /// Model calls of the lead and its tasks.
    pub(crate) rounds: u32,
    pub usage: Usage,
    /// `None` when a model of the run is not in the price table.
    pub(crate) cost_usd: Option<f64>,
    /// HTTP requests sent, retries included (0 offline).
    pub requests: u64,
}

impl Answer {
    /// What `fanscan ask` prints on stdout: the answer, then its citations
    /// as checked.
    pub fn render_text(&self) -> String {
        let mut out = self.answer.trim_end().to_string();
        out.push('\n');
        out.push_str(&self.render_after_answer());
        out
    }

    /// What follows the answer on stdout: whether the lead finished, and
    /// the citations as checked. All that is printed at the end when the
    /// answer itself was streamed.
    pub fn render_after_answer(&self) -> String {
        let mut out = String::new();
        if let Some(error) = &self.error {
            out.push_str(&format!(
                "\n(the lead did not finish: {}: {error})\n",
                self.status.as_str()
            ));
        }
        out.push_str(&self.citations_text());
        out
    }

    /// The citations section: every `path:line` of the answer and how it
    /// held up, the unverifiable ones marked.
    pub fn citations_text(&self) -> String {
        if self.citations.is_empty() {
            return "\n---\nThe answer cites no path:line.\n".into();
        }
        let count = |s: CitationStatus| self.citations.iter().filter(|c| c.status == s).count();
        let mut out = format!(
            "\n---\n{} citations checked against the files: {} verified, {} not backed by quoted evidence, {} unverifiable.\n",
            self.citations.len(),
            count(CitationStatus::Verified),
            count(CitationStatus::Unchecked),
            count(CitationStatus::Unverifiable),
        );
        for c in &self.citations {
            let mark = match c.status {
                CitationStatus::Verified => "verified",
                CitationStatus::Unchecked => "unchecked",
                CitationStatus::Unverifiable => "UNVERIFIABLE",
            };
            out.push_str(&format!("  {}:{}  {mark}: {}\n", c.path, c.line, c.note));
        }
        out
    }

    /// The per-task lines `ask` prints on stderr at the end.
    pub fn tasks_text(&self) -> String {
        let mut out = String::new();
        for t in &self.tasks {
            out.push_str(&format!(
                "  {} {} ({}): {}, {} rounds, {} tokens{}, {} ({} verified){}\n",
                t.id,
                t.agent,
                t.description,
                t.status.as_str(),
                t.rounds,
                crate::util::human_count(t.usage.total()),
                cost_text(t.cost_usd),
                plural(t.findings, "finding"),
                t.verified_findings,
                t.error
                    .as_deref()
                    .map(|e| format!(": {e}"))
                    .unwrap_or_default()
            ));
        }
        out.push_str(&format!(
            "  total: {} tasks, {} rounds, {} tokens{}\n",
            self.totals.tasks,
            self.totals.rounds,
            crate::util::human_count(self.totals.usage.total()),
            cost_text(self.totals.cost_usd)
        ));
        out
    }
}

fn cost_text(cost: Option<f64>) -> String {
    match cost {
        Some(c) => format!(", ${c:.4}"),
        None => ", cost unknown (unpriced model)".into(),
    }
}

/// Answers `question` about the settings' root.
/// With `stream`, the lead's text is written to stdout as it arrives (the
/// answer is then [`Answer::streamed`]).
pub async fn ask(ctx: &Context, ui: &Ui, question: &str, stream: bool) -> Result<Answer, AskError> {
    let question = nonempty(question)?;
    let settings = &ctx.settings;
    let _time_limit = ui.control.time_limit(settings.max_duration);
    let inventory = ctx.inventory()?;
    // Agents read only what the scan would cover.
    let tools = Arc::new(
        ctx.tools
            .scoped(inventory.files.iter().map(|f| f.path.clone())),
    );
    let spend = ctx.spend(ui.control.clone(), None);
    let cache_scope = cache_scope(question);
    let lead_definition = ctx.agent("lead")?;
    let auditor = ctx.agent(&settings.agent)?;

    let (lines, consumer) = Lines::start(ui);
    let task_sinks = |id: &str, agent: &str, description: &str| lines.sink(id, agent, description);

    let print = printer(ui.clone(), stream);
    let Led {
        mut outcome,
        streamed,
        written_after,
    } = ctx
        .harness
        .answer(&Leading {
            ctx,
            lead: lead_definition,
            auditor,
            inventory: &inventory,
            question,
            tools: &tools,
            control: &ui.control,
            spend: &spend,
            lines: &lines,
            task_sinks: &task_sinks,
            cache_scope: &cache_scope,
            print: &print,
            stream,
        })
        .await;
    drop(lines);
    let consumed = consumer.finish().await;
    for error in &consumed.transcript_errors {
        tracing::warn!("{error}");
    }

    let (checked, inventory) = verify_tasks(&outcome, inventory, &tools).await?;
    if let Some(write) = written_after {
        outcome.answer = write(&outcome, &checked, &ui.control.reasons());
    }
    let citations = citations(&outcome, inventory, &tools, &checked).await?;
    let mut answer = assemble(
        ctx,
        question,
        outcome,
        &checked,
        citations,
        &spend,
        &ui.control.reasons(),
    );
    answer.streamed = streamed;
    Ok(answer)
}

/// The question without its surrounding blanks; an error when nothing is left.
fn nonempty(question: &str) -> Result<&str, AskError> {
    let question = question.trim();
    if question.is_empty() {
        return Err(SetupError::from(ConfigError::EmptyQuestion).into());
    }
    Ok(question)
}

/// One prompt-cache scope per question: the lead's turns share a key, and
/// each task's turns theirs.
fn cache_scope(question: &str) -> String {
    format!(
        "ask-{}",
        &crate::util::sha256_hex(question.as_bytes())[..16]
    )
}

/// Writes the lead's streamed text to stdout (only with `stream`), around
/// the progress lines.
fn printer(ui: Ui, stream: bool) -> impl Fn(Shown<'_>) + Send + Sync {
    move |shown: Shown<'_>| {
        if !stream {
            return;
        }
        ui.suspend(|| {
            let mut out = std::io::stdout().lock();
            // A failing stdout is reported when the rest is written.
            let _ = match shown {
                Shown::Text(text) => out.write_all(text.as_bytes()),
                Shown::Restart => {
                    eprintln!(
                        "\nfanscan: the answer's stream was cut and is asked again: the text above is void, the answer starts over"
                    );
                    out.write_all(b"\n\n")
                }
            };
            let _ = out.flush();
        });
    }
}

/// The tasks' findings verified against the files (off the async threads);
/// gives the inventory back for the citations.
async fn verify_tasks(
    outcome: &LeadOutcome,
    inventory: Inventory,
    tools: &Arc<ToolContext>,
) -> Result<(Vec<Checked>, Inventory), AskError> {
    let reports: Vec<_> = outcome.tasks.iter().map(|t| t.report.clone()).collect();
    let tools = Arc::clone(tools);
    tokio::task::spawn_blocking(move || {
        let checked = crate::stages::verify::verify(&reports, &inventory, &tools);
        (checked, inventory)
    })
    .await
    .map_err(AskError::Verify)
}

/// The answer's citations, each checked against the files.
async fn citations(
    outcome: &LeadOutcome,
    inventory: Inventory,
    tools: &Arc<ToolContext>,
    checked: &[Checked],
) -> Result<Vec<Citation>, AskError> {
    let answer = outcome.answer.clone();
    let tools = Arc::clone(tools);
    let checked = checked.to_vec();
    tokio::task::spawn_blocking(move || check_citations(&answer, &inventory, &tools, &checked))
        .await
        .map_err(AskError::Verify)
}

fn assemble(
    ctx: &Context,
    question: &str,
    outcome: LeadOutcome,
    checked: &[Checked],
    citations: Vec<Citation>,
    spend: &Spend,
    stopped: &[String],
) -> Answer {
    let pricer = ctx.pricer();
    let cost = |usage: &Usage, model: &str| pricer(model).map(|p| p.cost(usage));
    let tasks: Vec<TaskSummary> = outcome
        .tasks
        .iter()
        .map(|t| {
            let r = &t.report;
            TaskSummary {
                id: t.id.clone(),
                agent: t.agent.clone(),
                description: t.description.clone(),
                status: r.status,
                error: r.error.clone(),
                rounds: r.rounds,
                tool_calls: r.tool_calls,
                usage: r.usage,
                cost_usd: cost(&r.usage, &r.model),
                findings: r.findings.len(),
                verified_findings: checked
                    .iter()
                    .filter(|c| c.group == t.id && c.verified)
                    .count(),
            }
        })
        .collect();
    let (by_agent, total, total_cost) = spend.ledger();
    let lead_model = ctx.model_of("lead");
    let complete = outcome.status == AgentStatus::Complete
        && stopped.is_empty()
        && outcome.tasks.iter().all(|t| t.report.status.reviewed());
    Answer {
        question: question.to_string(),
        answer: outcome.answer,
        engine: ctx.harness.engine(),
        provider: ctx.harness.provider().name().to_string(),
        model: ctx.harness.provider().model().to_string(),
        status: outcome.status,
        error: outcome.error,
        complete,
        stopped: stopped.to_vec(),
        lead: LeadSummary {
            rounds: outcome.rounds,
            tool_calls: outcome.tool_calls,
            tool_errors: outcome.tool_errors,
            usage: outcome.usage,
            cost_usd: cost(&outcome.usage, &lead_model),
        },
        totals: Totals {
            tasks: tasks.len(),
            rounds: outcome.rounds + tasks.iter().map(|t| t.rounds).sum::<u32>(),
            usage: total,
            cost_usd: total_cost,
            requests: ctx.requests(),
        },
        tasks,
        citations,
        by_agent,
        streamed: false,
    }
}

/// The progress lines: one per running agent, prefixed with its agent and
/// description, shown through the run's reporter; every event is passed
/// on to the transcript writer.
struct Lines {
    reporter: crate::progress::SharedReporter,
    forward: UnboundedSender<Event>,
    transcripts: bool,
}

impl Lines {
    /// The lines, shown through the run's reporter, and the consumer that
    /// writes transcripts. Transcripts are written by the scan's consumer
    /// (its stage shown by nothing); the lines shown are this module's:
    /// one per running sub-agent, with its description.
    fn start(ui: &Ui) -> (Self, crate::progress::Running) {
        let (transcripts, consumer) = crate::progress::Consumer {
            report: Box::new(crate::progress::Hidden),
            transcripts: ui.transcripts.clone(),
        }
        .start();
        let lines = Self {
            reporter: Arc::clone(&ui.reporter),
            forward: transcripts,
            transcripts: ui.transcripts.is_some(),
        };
        (lines, consumer)
    }

    fn sink(&self, id: &str, agent: &str, description: &str) -> EventSink {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Event>();
        let mut line = self.reporter.agent_line(if id == agent {
            format!("{agent}: {description}")
        } else {
            format!("{id} {agent}: {description}")
        });
        let forward = self.forward.clone();
        tokio::spawn(async move {
            while let Some(event) = rx.recv().await {
                line.event(&event);
                // A closed writer means nobody is listening: not an error.
                let _ = forward.send(event);
            }
            line.finish();
        });
        EventSink::new(id, Some(tx), self.transcripts)
    }
}

/// The question `ask` puts to the run's harness: a language model's lead
/// answers it ([`Lead`]); the offline engine's ([`OfflineLead`]) counts.
struct Leading<'a> {
    ctx: &'a Context,
    lead: &'a crate::agents::AgentDefinition,
    /// The agent the offline lead delegates every audit to.
    auditor: &'a crate::agents::AgentDefinition,
    inventory: &'a Inventory,
    question: &'a str,
    tools: &'a Arc<ToolContext>,
    control: &'a crate::llm::control::RunControl,
    spend: &'a Spend,
    lines: &'a Lines,
    task_sinks: crate::agents::lead::TaskSinks<'a>,
    cache_scope: &'a str,
    print: OnText<'a>,
    /// The caller wants the lead's text on stdout as it arrives.
    stream: bool,
}

/// What a lead gives `ask`.
struct Led {
    outcome: LeadOutcome,
    /// The answer's text was shown on stdout as it arrived.
    streamed: bool,
    /// How the answer is written once the tasks' findings are verified;
    /// `None`: the lead's own text is the answer.
    written_after: Option<WriteAnswer>,
}

/// Writes an answer from a lead's outcome, its verified findings and why
/// the run stopped early.
type WriteAnswer = fn(&LeadOutcome, &[Checked], &[String]) -> String;

impl Question for Leading<'_> {
    type Answer = Led;

    async fn ask(&self) -> Led {
        let events = self.lines.sink("lead", "lead", "answering the question");
        let outcome = Lead {
            definition: self.lead,
            agents: &self.ctx.agents,
            harness: &self.ctx.harness,
            tools: self.tools,
            events: &events,
            task_sinks: self.task_sinks,
            control: self.control,
            spend: self.spend,
            cache_scope: self.cache_scope,
            // The lead always streams; only without --json is it shown.
            on_text: Some(self.print),
        }
        .run(self.question)
        .await;
        Led {
            outcome,
            streamed: self.stream,
            written_after: None,
        }
    }

    async fn counted(&self) -> Led {
        let outcome = OfflineLead {
            agent: self.auditor,
            inventory: self.inventory,
            question: self.question,
            ctx: self.ctx,
            tools: self.tools,
            control: self.control,
            spend: self.spend,
            task_sinks: self.task_sinks,
            cache_scope: self.cache_scope,
        }
        .run()
        .await;
        Led {
            outcome,
            streamed: false,
            written_after: Some(counted_answer),
        }
    }
}

/// The lead of the offline engine: it cannot read the question, so it
/// delegates one audit per top-level directory and counts the findings.
struct OfflineLead<'a> {
    agent: &'a crate::agents::AgentDefinition,
    inventory: &'a Inventory,
    question: &'a str,
    ctx: &'a Context,
    tools: &'a Arc<ToolContext>,
    control: &'a crate::llm::control::RunControl,
    spend: &'a Spend,
    task_sinks: crate::agents::lead::TaskSinks<'a>,
    cache_scope: &'a str,
}

impl OfflineLead<'_> {
    async fn run(&self) -> LeadOutcome {
        let mut dirs: BTreeMap<String, Vec<TaskFile>> = BTreeMap::new();
        for f in &self.inventory.files {
            let dir = match f.path.split_once('/') {
                Some((top, _)) => format!("{top}/"),
                None => "./ (top-level files)".to_string(),
            };
            dirs.entry(dir).or_default().push(TaskFile {
                path: f.path.clone(),
                bytes: f.bytes,
                language: f.language.clone(),
            });
        }
        let runs: Vec<_> = dirs
            .into_iter()
            .enumerate()
            .map(|(n, (dir, files))| {
                let id = format!("task-{}", n + 1);
                async move {
                    // A run stopped early (Ctrl-C, a budget) starts no more.
                    if self.control.stop.is_cancelled() {
                        return None;
                    }
                    let description = format!("audit {dir}");
                    let task = AgentTask {
                        group: id.clone(),
                        files,
                        focus: None,
                        instructions: Some(format!(
                            "Audit the files of {dir} for defects, security risks and reliability problems that bear on this question: {}",
                            self.question
                        )),
                        leads: Vec::new(),
                        sample: 0,
                    };
                    let sink = (self.task_sinks)(&id, &self.agent.name, &description);
                    let report = run_delegated(
                        AgentRun {
                            definition: self.agent,
                            provider: self.ctx.harness.provider(),
                            tools: self.tools,
                            events: &sink,
                            wrap_up: &self.control.wrap_up,
                            cancel: &self.control.cancel,
                            spend: self.spend,
                            max_output_tokens: self.ctx.settings.max_output_tokens,
                            cache_scope: self.cache_scope,
                            rule_leads: None,
                        },
                        &task,
                    )
                    .await;
                    Some(TaskRun {
                        id,
                        agent: self.agent.name.clone(),
                        description,
                        report,
                    })
                }
            })
            .collect();
        let total = runs.len();
        let tasks: Vec<TaskRun> = futures::stream::iter(runs)
            .buffered(self.ctx.settings.jobs.max(1))
            .filter_map(|t| async move { t })
            .collect()
            .await;
        let not_started = total - tasks.len();
        LeadOutcome {
            answer: String::new(),
            status: if not_started == 0 {
                AgentStatus::Complete
            } else {
                AgentStatus::WrappedUp
            },
            error: (not_started > 0)
                .then(|| format!("{not_started} of {total} directories were not audited: the run was stopped early")),
            rounds: 0,
            tool_calls: 0,
            tool_errors: 0,
            usage: Usage::default(),
            tasks,
        }
    }
}

/// Most findings the counted answer lists one by one.
const LISTED_FINDINGS: usize = 40;

/// The offline lead's answer: what it is, then what its tasks found,
/// counted from the verified findings.
fn counted_answer(outcome: &LeadOutcome, checked: &[Checked], stopped: &[String]) -> String {
    let verified: Vec<&Checked> = checked.iter().filter(|c| c.verified).collect();
    let mut out = format!(
        "This answer is a counted summary from the offline rule engine, not a language model: it \
         cannot read the question, so it delegated one audit per top-level directory to the \
         auditor ({} tasks) and counts what its rule set found. Use --provider openai or \
         anthropic for an answer to the question itself.\n\n",
        outcome.tasks.len()
    );
    out.push_str(&format!(
        "{} verified finding{}{}",
        verified.len(),
        if verified.len() == 1 { "" } else { "s" },
        severity_counts(verified.iter().map(|c| &c.finding))
    ));
    let dropped = checked.len() - verified.len();
    if dropped > 0 {
        out.push_str(&format!(
            "; {dropped} more claims did not verify and are left out"
        ));
    }
    out.push_str(".\n\nBy directory:\n");
    for task in &outcome.tasks {
        let here: Vec<&Finding> = verified
            .iter()
            .filter(|c| c.group == task.id)
            .map(|c| &c.finding)
            .collect();
        let status = match task.report.status {
            AgentStatus::Complete => String::new(),
            other => format!(" [{}]", other.as_str()),
        };
        out.push_str(&format!(
            "- {} ({}): {}{}{status}\n",
            task.description.trim_start_matches("audit "),
            plural(task.report.files.len(), "file"),
            plural(here.len(), "finding"),
            severity_counts(here.iter().copied())
        ));
    }
    if !verified.is_empty() {
        let mut sorted = verified.clone();
        sorted.sort_by(|a, b| {
            b.finding
                .severity
                .cmp(&a.finding.severity)
                .then_with(|| a.finding.path.cmp(&b.finding.path))
                .then_with(|| a.finding.line.cmp(&b.finding.line))
        });
        out.push_str("\nFindings, most serious first:\n");
        for c in sorted.iter().take(LISTED_FINDINGS) {
            out.push_str(&format!(
                "- [{}] {} ({}:{})\n",
                c.finding.severity.as_str(),
                c.finding.title,
                c.finding.path,
                c.finding.line
            ));
        }
        if sorted.len() > LISTED_FINDINGS {
            out.push_str(&format!(
                "- ... and {} more (run `fanscan scan` for the full report)\n",
                sorted.len() - LISTED_FINDINGS
            ));
        }
    }
    if !stopped.is_empty() {
        out.push_str(&format!("\nStopped early: {}\n", stopped.join(" ")));
    }
    out
}

fn severity_counts<'a>(findings: impl Iterator<Item = &'a Finding>) -> String {
    let mut counts: BTreeMap<Severity, usize> = BTreeMap::new();
    for f in findings {
        *counts.entry(f.severity).or_default() += 1;
    }
    if counts.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = Severity::DESCENDING
        .iter()
        .filter_map(|s| counts.get(s).map(|n| format!("{n} {}", s.as_str())))
        .collect();
    format!(" ({})", parts.join(", "))
}

/// How far a citation may be from a verified finding's line and still be
/// backed by it (models cite the start of a function or a block).
const CITATION_WINDOW: u32 = 3;

/// Finds every `path:line` (or `path:line-line`) in `answer` and checks it:
/// the file must be one of the scanned ones and have the line; it is
/// verified when a verified finding of a sub-agent is there.
pub(crate) fn check_citations(
    answer: &str,
    inventory: &Inventory,
    tools: &ToolContext,
    checked: &[Checked],
) -> Vec<Citation> {
    let known: BTreeSet<&str> = inventory.files.iter().map(|f| f.path.as_str()).collect();
    let mut lines_of: BTreeMap<String, Option<usize>> = BTreeMap::new();
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for (path, line) in citations_in(answer) {
        if !seen.insert((path.clone(), line)) {
            continue;
        }
        let (status, note) = if !known.contains(path.as_str()) {
            (
                CitationStatus::Unverifiable,
                "no such file among the scanned files".to_string(),
            )
        } else {
            let count = *lines_of.entry(path.clone()).or_insert_with(|| {
                std::fs::read(tools.root().join(&path))
                    .ok()
                    .map(|b| String::from_utf8_lossy(&b).lines().count())
            });
            match count {
                None => (
                    CitationStatus::Unverifiable,
                    "the file could not be read".to_string(),
                ),
                Some(n) if line == 0 || line as usize > n => (
                    CitationStatus::Unverifiable,
                    format!("no line {line}: the file has {n} lines"),
                ),
                Some(_) => match backing(checked, &path, line) {
                    Some(c) => (
                        CitationStatus::Verified,
                        format!("{}'s finding in {}: {}", c.agent, c.group, c.finding.title),
                    ),
                    None => (
                        CitationStatus::Unchecked,
                        "the line exists, but no sub-agent quoted evidence for it".to_string(),
                    ),
                },
            }
        };
        out.push(Citation {
            path,
            line,
            status,
            note,
        });
    }
    out
}

/// The verified finding that backs a citation, if any.
fn backing<'a>(checked: &'a [Checked], path: &str, line: u32) -> Option<&'a Checked> {
    checked
        .iter()
        .filter(|c| c.verified && c.finding.path == path)
        .find(|c| {
            let start = c.finding.line.saturating_sub(CITATION_WINDOW);
            let end = c.finding.end_line.unwrap_or(c.finding.line) + CITATION_WINDOW;
            (start..=end).contains(&line)
        })
}

/// The `path:line` pairs of a text, in order. A path must have an
/// extension; URLs (`host:port`) are not citations.
fn citations_in(text: &str) -> Vec<(String, u32)> {
    let Ok(re) =
        regex::Regex::new(r"([A-Za-z0-9_.\-/]*[A-Za-z0-9_\-]\.[A-Za-z][A-Za-z0-9]*):(\d+)")
    else {
        return Vec::new();
    };
    re.captures_iter(text)
        .filter_map(|c| {
            let whole = c.get(0)?;
            if text[..whole.start()].ends_with("//") || text[..whole.start()].ends_with(':') {
                return None;
            }
            let path = c.get(1)?.as_str().trim_start_matches("./").to_string();
            let line = c.get(2)?.as_str().parse().ok()?;
            Some((path, line))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn citations_are_paths_with_lines_not_urls() {
        let text = "See `src/db.rs:42` and ./app/main.py:7-9, also https://example.com:8080/x and version 1.2:3? and Cargo.toml:1.";
        assert_eq!(
            citations_in(text),
            vec![
                ("src/db.rs".to_string(), 42),
                ("app/main.py".to_string(), 7),
                ("Cargo.toml".to_string(), 1),
            ]
        );
    }
}
