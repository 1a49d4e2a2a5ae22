//! The sub-agent: `(definition, task) -> GroupReport`, a configuration of
//! the one agent loop ([`super::turns`]).
//!
//! A fresh message list (the definition's system prompt and one task
//! message with the group's files preloaded, nothing else); only the
//! definition's tools are offered ([`ToolRouter`]); the loop runs until the
//! model answers without tool calls, says `[TASK_COMPLETE]` or reaches
//! `max_rounds`, nudging once a model that would end without reading its
//! files; then always exactly one forced final-summary turn with tools
//! switched off, its report through the provider's structured output
//! ([`report_output`]: only the files it was given or read may be cited),
//! and one repair turn when the report cannot be read. Only the
//! [`GroupReport`] leaves; the transcript goes to the event sink and is
//! dropped.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

pub use super::turns::AgentStatus;

use super::router::{ReadOnlyTools, ToolRouter};
use super::turns::{Finish, Loop, Outcome, Reader, Start, expected_tokens, system_prompt};
use crate::engine::rules::RuleSet;
use crate::llm::budget::Spend;
use crate::llm::conversation::{ChatRequest, FileRead, LeadFact, Message, Usage};
use crate::llm::events::EventSink;
use crate::llm::providers::Provider;
use crate::model::findings::{
    Finding, FindingCwe, HowParsed, Origin, ParsedReport, REPORT_FORMAT, Severity, TASK_COMPLETE,
    Unparsed, parse_report, report_output,
};
use crate::model::leads::{self, LEADS_FORMAT, Lead, LeadResult};
use crate::tools::fence::Fence;
use crate::tools::injection::InjectionRuleError;

/// The label of the leads block in a task (in place of a file's path).
const LEADS_BLOCK: &str = "leads of this group";
use crate::tools::{ToolContext, ToolError};

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
    /// What another tool found in the group's files (`--leads
    /// FILE.sarif`), to be confirmed or dismissed; the rule engine's own
    /// leads join them when the group is prepared.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub leads: Vec<Lead>,
    /// Which sample of its group this is (`--samples`): 0 for the first;
    /// k > 0 for the others, whose group id ends in `~k+1`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub sample: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
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
    /// `preloaded` files, each follows the task text in its
    /// `<file path="…" boundary="…">` block, fenced by `fence`, in the
    /// plan's order.
    ///
    /// With `leads`, they follow the file list in their own fenced block
    /// (their code and messages are data), and the report format asks for
    /// an answer to each.
    pub(crate) fn render(
        &self,
        preloaded: &[Preloaded],
        leads: &[Lead],
        elsewhere: &[(String, Vec<String>)],
        fence: &Fence,
    ) -> String {
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
        if !elsewhere.is_empty() {
            text.push_str(
                "\nNames these files use that other files define (call definition for a name's source, \
                 references for its callers):\n",
            );
            for (name, paths) in elsewhere {
                text.push_str(&format!("- {name} ({})\n", paths.join(", ")));
            }
        }
        text.push_str("\nWhen you are done, give your report.\n");
        text.push_str(REPORT_FORMAT);
        if !leads.is_empty() {
            text.push_str("\n\n");
            text.push_str(LEADS_FORMAT);
            text.push('\n');
        }
        text.push_str(&format!("\nEnd your final answer with {TASK_COMPLETE}.\n"));
        if !leads.is_empty() {
            text.push('\n');
            text.push_str(&fence.wrap(LEADS_BLOCK, &leads::block(leads)));
        }
        for file in preloaded {
            text.push('\n');
            // `read_file`'s text is fenced already; an error is fenced here.
            if file.text.starts_with(&fence.open(&file.path)) {
                text.push_str(&file.text);
            } else {
                text.push_str(&fence.wrap(&file.path, &file.text));
            }
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

/// A file of a group and the hash of the content that was audited.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct FileHash {
    pub path: String,
    /// SHA-256 of the bytes; empty when the file could not be read.
    pub sha256: String,
}

/// The unit of work and of persistence: self-contained and serializable.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GroupReport {
    pub group: String,
    pub(crate) files: Vec<FileHash>,
    pub(crate) agent: String,
    /// SHA-256 of the agent's definition.
    pub(crate) agent_hash: String,
    pub(crate) provider: String,
    pub model: String,
    pub status: AgentStatus,
    pub error: Option<String>,
    pub rounds: u32,
    pub tool_calls: u32,
    pub tool_errors: u32,
    /// Files whose content the model was shown.
    pub files_read: Vec<String>,
    pub(crate) usage: Usage,
    /// The final summary text (marker stripped).
    pub(crate) summary: String,
    /// Whether the summary's findings block parsed.
    pub summary_parsed: bool,
    /// Entries of the findings block that were not findings.
    pub(crate) rejected: Vec<String>,
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
    /// Files whose results came from the run store, not from this
    /// report's agent, by path: the id of the run that audited each.
    /// Empty for a group audited whole.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub(crate) carried: std::collections::BTreeMap<String, i64>,
    /// Lines of the group's files that no read showed whole (longer than
    /// any read shows), by path: what lies past the cut was not reviewed.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub(crate) lines_cut: std::collections::BTreeMap<String, Vec<u64>>,
    /// The leads put to the agent and what became of each (confirmed and
    /// unanswered ones are also in `findings`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub leads: Vec<LeadResult>,
    /// The model the group was sent to after the run's model refused it
    /// twice (`fallback_model`); its status says whether it answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
}

impl GroupReport {
    /// This report after a blocked one of the same group (the fallback
    /// model's try): it counts the first try's calls and tokens too, and a
    /// second block names both models' words.
    pub(crate) fn after_blocked(mut self, first: &GroupReport, fallback: &str) -> Self {
        self.rounds += first.rounds;
        self.tool_calls += first.tool_calls;
        self.tool_errors += first.tool_errors;
        self.usage.add(first.usage);
        self.fallback = Some(fallback.to_string());
        if self.status == AgentStatus::Blocked {
            self.error = Some(format!(
                "{}: {}; the fallback model {fallback} too: {}",
                first.model,
                first.error.as_deref().unwrap_or("refused"),
                self.error.as_deref().unwrap_or("refused")
            ));
        }
        self
    }
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
    /// The rules whose hits in the group's files are put to the agent as
    /// leads (`--leads`); none: no rule leads.
    pub rule_leads: Option<&'a Arc<RuleSet>>,
}

/// Runs one sub-agent on one task, with the read-only tools its
/// definition names. Never panics and never returns an error: failures
/// are recorded in the report with what was done.
pub(crate) async fn run_subagent(run: AgentRun<'_>, task: &AgentTask) -> GroupReport {
    run_ready(run, task, None).await
}

/// [`run_subagent`] on a task already made [`Ready`] (the fan-out prepares
/// a group before it admits it, to reserve what its first call needs).
pub(crate) async fn run_ready(
    run: AgentRun<'_>,
    task: &AgentTask,
    ready: Option<Ready>,
) -> GroupReport {
    let tools: Arc<dyn ReadOnlyTools> = Arc::new(
        run.tools
            .for_task(task.files.iter().map(|f| f.path.clone())),
    );
    let router = ToolRouter::new(tools, &run.definition.tools);
    run_subagent_on(run, task, &router, ready).await
}

/// [`run_ready`] with the tools of `router`.
pub(crate) async fn run_subagent_on(
    run: AgentRun<'_>,
    task: &AgentTask,
    router: &ToolRouter<'_>,
    ready: Option<Ready>,
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
    DEPTH
        .scope(depth + 1, run_inner(run, task, router, ready))
        .await
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
            model: super::model_for(definition, provider).to_string(),
            status: AgentStatus::Complete,
            error: None,
            rounds: 0,
            tool_calls: 0,
            tool_errors: 0,
            files_read: Vec::new(),
            lines_cut: Default::default(),
            usage: Usage::default(),
            summary: String::new(),
            summary_parsed: false,
            rejected: Vec::new(),
            parse: HowParsed::NoBlock,
            repair_turn: false,
            unparsed: Vec::new(),
            carried: std::collections::BTreeMap::new(),
            findings: Vec::new(),
            leads: Vec::new(),
            fallback: None,
        }
    }
}

impl GroupReport {
    /// A complete report of `group` with nothing in it (tests).
    #[cfg(test)]
    pub(crate) fn for_test(group: &str) -> Self {
        Self {
            group: group.into(),
            files: Vec::new(),
            agent: "auditor".into(),
            agent_hash: String::new(),
            provider: "test".into(),
            model: "m".into(),
            status: AgentStatus::Complete,
            error: None,
            rounds: 0,
            tool_calls: 0,
            tool_errors: 0,
            files_read: Vec::new(),
            lines_cut: Default::default(),
            usage: Usage::default(),
            summary: String::new(),
            summary_parsed: true,
            rejected: Vec::new(),
            parse: HowParsed::Clean,
            repair_turn: false,
            unparsed: Vec::new(),
            findings: Vec::new(),
            carried: std::collections::BTreeMap::new(),
            leads: Vec::new(),
            fallback: None,
        }
    }

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

/// The group's files as the sub-agent starts: their hashes (in the
/// report), the secrets in them, and what is preloaded.
struct Prepared {
    /// Every secret of the group's files: (path, line, kind).
    secrets: BTreeSet<(String, u32, &'static str)>,
    /// Text addressed to AI agents and deceptive characters in the group's
    /// files, found by the tool layer before any model read them.
    injections: Vec<Finding>,
    /// The files preloaded, and their pages.
    seen: BTreeSet<String>,
    reads: Vec<FileRead>,
    preloaded: Vec<Preloaded>,
    /// The task's leads with the rule engine's, numbered, their code read
    /// from the files: those the task shows, and those held back (over
    /// [`leads::MOST_PER_TASK`]).
    leads: Vec<Lead>,
    held: Vec<Lead>,
    /// Why each of the group's files that could not be read at the start
    /// could not (deleted or replaced since the inventory).
    unreadable: Vec<String>,
    /// The names the group's files use that other files define, with
    /// those files: listed in the task for `definition`.
    elsewhere: Vec<(String, Vec<String>)>,
}

/// A group made ready before its first call: its files hashed and swept,
/// the preloaded ones read, its task message rendered.
pub(crate) struct Ready {
    report: GroupReport,
    prepared: Prepared,
    text: String,
}

impl Ready {
    /// What the budget expects the group's first call to cost: the call as
    /// the loop will send it (system prompt, task message, tools), with an
    /// answer of up to 512 tokens.
    pub(crate) fn first_call_tokens(&self, run: &AgentRun<'_>) -> u64 {
        expected_tokens(&ChatRequest {
            model: run.definition.model.clone(),
            system: system_prompt(&run.definition.prompt, Some(run.tools.fence())),
            messages: vec![Message::User {
                text: self.text.clone(),
            }],
            tools: ToolContext::specs(&run.definition.tools),
            max_output_tokens: run.max_output_tokens,
            counter: crate::llm::tokens::TokenCounter::for_model(super::model_for(
                run.definition,
                run.provider,
            )),
            ..ChatRequest::default()
        })
    }
}

/// Makes `task` [`Ready`]; a failure gives the failed report (its events
/// already sent).
pub(crate) async fn prepare_group(
    run: &AgentRun<'_>,
    task: &AgentTask,
) -> Result<Ready, GroupReport> {
    let mut report = empty_report(run, task);
    match prepare(run, task, &mut report).await {
        Ok(prepared) => Ok(Ready {
            text: task.render(
                &prepared.preloaded,
                &prepared.leads,
                &prepared.elsewhere,
                run.tools.fence(),
            ),
            report,
            prepared,
        }),
        Err(reason) => {
            report.status = AgentStatus::Failed;
            report.error = Some(reason.to_string());
            run.events.started(&run.definition.name);
            run.events
                .finished(report.status.as_str(), report.findings.len());
            Err(report)
        }
    }
}

async fn run_inner(
    run: AgentRun<'_>,
    task: &AgentTask,
    router: &ToolRouter<'_>,
    ready: Option<Ready>,
) -> GroupReport {
    let ready = match ready {
        Some(ready) => ready,
        None => match prepare_group(&run, task).await {
            Ok(ready) => ready,
            Err(report) => return report,
        },
    };
    run.events.started(&run.definition.name);
    let Ready {
        report,
        prepared,
        text,
    } = ready;
    let lead_ids: Vec<String> = prepared.leads.iter().map(|l| l.id.clone()).collect();
    let schema = |paths: &[String]| report_output(paths, &lead_ids);
    let start = Start {
        text,
        files: task.files.iter().map(|f| f.path.clone()).collect(),
        seen: prepared.seen,
        reads: prepared.reads,
        sample: task.sample,
        leads: prepared
            .leads
            .iter()
            .map(|l| LeadFact {
                id: l.id.clone(),
                path: l.path.clone(),
                line: l.line,
                rule: l.rule.clone(),
                cwe: l.cwe.id.map(|c| c.number()),
            })
            .collect(),
        ..Start::default()
    };
    let outcome = Loop {
        agent: run.definition,
        provider: run.provider,
        router,
        events: run.events,
        wrap_up: run.wrap_up,
        cancel: run.cancel,
        spend: run.spend,
        group: Some(&task.group),
        max_output_tokens: run.max_output_tokens,
        cache_key: cache_key(run.cache_scope, &task.group),
        on_text: None,
        finish: Finish::Summary {
            request: summary_request(),
            // The report through the provider's structured output, citing
            // only files the agent was given or read.
            schema: Some(&schema),
        },
    }
    .run(start, &ReportReader)
    .await;
    let report = fill(
        report,
        outcome,
        Swept {
            secrets: prepared.secrets,
            injections: prepared.injections,
            leads: &prepared.leads,
            held: &prepared.held,
            unreadable: &prepared.unreadable,
        },
        task,
    );
    run.events
        .finished(report.status.as_str(), report.findings.len());
    report
}

/// The prompt-cache key of a group's turns, from the run's scope (none
/// without one).
fn cache_key(scope: &str, group: &str) -> Option<String> {
    (!scope.is_empty()).then(|| {
        let hash = crate::util::sha256_hex(format!("{scope}\n{group}").as_bytes());
        format!("fanscan-{}", &hash[..32])
    })
}

/// Why a group could not be made ready: it fails with this reason.
#[derive(Debug, thiserror::Error)]
enum PrepareError {
    #[error("the secret sweep of the group's files failed ({0}): a fanscan bug, please report it")]
    Panicked(tokio::task::JoinError),
    #[error(
        "the injection sweep of the group's files cannot run: {0} (a fanscan bug, please report it)"
    )]
    Rules(InjectionRuleError),
    #[error("preloading {path} failed: {message}")]
    Preload { path: String, message: String },
    #[error("the rule engine's leads cannot be found: {0}")]
    Leads(String),
}

/// Hashes what is audited and sweeps it for secrets (the tool layer
/// reports every secret in the group whatever the model reads), and reads
/// the files to preload; off the async threads. An error fails the group.
async fn prepare(
    run: &AgentRun<'_>,
    task: &AgentTask,
    report: &mut GroupReport,
) -> Result<Prepared, PrepareError> {
    let paths: Vec<String> = task.files.iter().map(|f| f.path.clone()).collect();
    let tools = Arc::clone(run.tools);
    let preload = run.definition.preload;
    // The names defined elsewhere are for a model to ask about; the rule
    // engine reads its files by their trees already, and building the
    // index costs a parse of every file.
    let navigates = run.definition.tools.iter().any(|t| t == "definition")
        && run.provider.engine() == crate::llm::providers::EngineKind::Llm;
    let (swept, preloads, elsewhere) = tokio::task::spawn_blocking(move || {
        let swept = tools.hash_and_sweep(&paths)?;
        let elsewhere = match preload && navigates {
            true => tools.defined_elsewhere(&paths),
            false => Vec::new(),
        };
        let preloaded: Vec<_> = if preload {
            paths
                .iter()
                .map(|p| (p.clone(), tools.read_from_top(p)))
                .collect()
        } else {
            Vec::new()
        };
        Ok::<_, InjectionRuleError>((swept, preloaded, elsewhere))
    })
    .await
    // Without the sweep, no secret or injection attempt in the group would
    // be reported: the group fails rather than pass as "none".
    .map_err(PrepareError::Panicked)?
    .map_err(PrepareError::Rules)?;
    let mut prepared = Prepared {
        secrets: BTreeSet::new(),
        injections: Vec::new(),
        seen: BTreeSet::new(),
        reads: Vec::new(),
        preloaded: Vec::new(),
        leads: Vec::new(),
        held: Vec::new(),
        unreadable: Vec::new(),
        elsewhere,
    };
    let mut leads = task.leads.clone();
    for (index, swept) in swept.into_iter().enumerate() {
        if let Some(entry) = report.files.get_mut(index) {
            if let Some(text) = &swept.text {
                add_leads(&mut leads, &entry.path, text, run.rule_leads)?;
            }
            entry.sha256 = swept.hash;
            prepared.unreadable.extend(swept.unreadable);
            for r in swept.redactions {
                prepared
                    .secrets
                    .insert((entry.path.clone(), r.line, r.kind));
            }
            prepared.injections.extend(swept.injections);
        }
    }
    for (path, output) in preloads {
        let text = match output {
            Ok(out) => {
                prepared.seen.extend(out.files_read);
                prepared.reads.extend(out.read);
                out.text
            }
            Err(ToolError::Model(message)) => format!("error: {message}\n"),
            Err(ToolError::Internal(message)) => {
                return Err(PrepareError::Preload { path, message });
            }
        };
        prepared.preloaded.push(Preloaded { path, text });
    }
    (prepared.leads, prepared.held) = leads::shown_and_held(leads::number(leads));
    Ok(prepared)
}

/// Adds the rule engine's hits in `path` (with `rules`) to `leads`, and
/// fills in the code of every lead in `path` that has none (another
/// tool's) from `text`, the file as the model reads it.
fn add_leads(
    leads: &mut Vec<Lead>,
    path: &str,
    text: &str,
    rules: Option<&Arc<RuleSet>>,
) -> Result<(), PrepareError> {
    // Most files have no lead to read: split none of them into lines.
    if rules.is_none() && !leads.iter().any(|l| l.path == path && l.code.is_none()) {
        return Ok(());
    }
    let lines: Vec<(u32, String)> = (1u32..).zip(text.lines().map(str::to_string)).collect();
    if let Some(rules) = rules {
        let hits = rules
            .apply(path, &lines)
            .map_err(|e| PrepareError::Leads(e.to_string()))?;
        leads.extend(hits.into_iter().map(Lead::of_rule));
    }
    // The flagged line as the file has it: what the model is shown and
    // what verification checks the lead's finding against.
    for lead in leads
        .iter_mut()
        .filter(|l| l.path == path && l.code.is_none())
    {
        lead.code = (lead.line.checked_sub(1))
            .and_then(|i| lines.get(i as usize))
            .map(|(_, l)| l.trim().to_string())
            .filter(|l| !l.is_empty());
    }
    Ok(())
}

/// The report of a finished loop: how it ended, what it cost and read,
/// the findings of its final report, and every secret of the group.
/// What the tool layer found in a group's files before the model ran:
/// the report gets them whatever the model answered.
struct Swept<'a> {
    secrets: BTreeSet<(String, u32, &'static str)>,
    injections: Vec<Finding>,
    leads: &'a [Lead],
    held: &'a [Lead],
    unreadable: &'a [String],
}

fn fill(
    mut report: GroupReport,
    outcome: Outcome<ParsedReport>,
    swept: Swept<'_>,
    task: &AgentTask,
) -> GroupReport {
    let Swept {
        mut secrets,
        injections,
        leads,
        held,
        unreadable,
    } = swept;
    let mut answers = Vec::new();
    report.status = outcome.status;
    report.error = outcome.error;
    report.rounds = outcome.counts.rounds;
    report.tool_calls = outcome.counts.tool_calls;
    report.tool_errors = outcome.counts.tool_errors;
    report.usage = outcome.counts.usage;
    report.repair_turn = outcome.repaired;
    if let Some(parsed) = outcome.answer {
        report.summary = parsed.text;
        report.summary_parsed = parsed.parsed;
        report.rejected = parsed.rejected;
        report.parse = parsed.how;
        report.unparsed = parsed.unparsed;
        report.findings = parsed.findings;
        answers = parsed.leads;
    }
    // Every lead has an outcome, whatever the model answered: a confirmed
    // or unanswered one is a finding, a dismissed one is listed.
    let (results, lead_findings) = leads::resolve(leads, &answers, &report.findings);
    report.leads = results;
    report.findings.extend(lead_findings);
    let (results, lead_findings) = leads::held(held, leads.len() + held.len());
    report.leads.extend(results);
    report.findings.extend(lead_findings);
    // A model that never saw any of its group's files did not review
    // them, whatever it answered.
    let files_read = outcome.files_read;
    let saw_any = task.files.iter().any(|f| files_read.contains(&f.path));
    if !task.files.is_empty() && !saw_any && report.status.reviewed() {
        report.status = AgentStatus::Unreviewed;
        report.error = Some(match unreadable {
            [] => "the model answered without reading any of its files (even after being asked to): nothing was reviewed"
                .into(),
            why => format!(
                "the model read none of its files, and some could not be read when the group started ({}): deleted or replaced during the scan? Nothing was reviewed",
                why.join("; ")
            ),
        });
    }
    secrets.extend(outcome.redactions);
    report.findings.extend(
        secrets
            .into_iter()
            .map(|(path, line, kind)| secret_finding(path, line, kind)),
    );
    report.findings.extend(injections);
    report.files_read = files_read.into_iter().collect();
    report.lines_cut = outcome
        .lines_cut
        .into_iter()
        .filter(|(path, _)| task.files.iter().any(|f| &f.path == path))
        .collect();
    report
}

/// How a sub-agent's final report is read: the findings block parsed;
/// one repair turn when it did not parse or had entries that were not
/// findings; of the two, the one with more findings kept (the repaired
/// one on a tie).
struct ReportReader;

impl Reader for ReportReader {
    type Read = ParsedReport;

    fn read(&self, text: &str) -> ParsedReport {
        parse_report(text)
    }

    fn repair(&self, parsed: &ParsedReport) -> Option<String> {
        (!parsed.parsed || !parsed.rejected.is_empty()).then(|| repair_request(parsed))
    }

    fn keep(&self, first: ParsedReport, second: ParsedReport) -> ParsedReport {
        let better =
            second.parsed && (second.findings.len() >= first.findings.len() || !first.parsed);
        if better { second } else { first }
    }
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

/// The finding the tool layer reports for a redacted secret. It carries no
/// evidence: the report must not repeat the secret either.
pub(crate) fn secret_finding(path: String, line: u32, kind: &str) -> Finding {
    // A secret in test code is often a fixture, but still worth a look.
    let in_tests = crate::engine::rules::is_test_path(&path);
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
        // CWE-798: Use of Hard-coded Credentials.
        cwe: FindingCwe::number(798),
        origin: Origin::ToolLayer,
        seen: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::AgentDefinition;
    use crate::agents::turns::script::{Script, calls, text};
    use crate::tools::{ToolLimits, ToolOutput, secrets::Redactor};

    /// Read-only tools whose `read_file` panics.
    struct Panicking;

    impl ReadOnlyTools for Panicking {
        fn call(&self, name: &str, _: &str) -> Result<ToolOutput, ToolError> {
            panic!("{name} blew up");
        }
    }

    #[tokio::test]
    async fn a_panicking_tool_thread_fails_the_group_and_names_the_tool() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.rs"), "fn a() {}\n").unwrap();
        let tools = Arc::new(
            ToolContext::new(dir.path(), ToolLimits::default(), Arc::new(Redactor::new())).unwrap(),
        );
        let definition = AgentDefinition::parse(
            "t.md",
            "---\nname: auditor\ndescription: d\ntools: [read_file]\n---\nx\n",
        )
        .unwrap();
        let provider = Script::new(vec![
            calls(&[("read_file", r#"{"path":"a.rs"}"#)]),
            text("never asked"),
        ]);
        let token = CancellationToken::new();
        let run = AgentRun {
            definition: &definition,
            provider: &provider,
            tools: &tools,
            events: &EventSink::silent("g1"),
            wrap_up: &token,
            cancel: &token,
            spend: &Spend::unlimited(),
            max_output_tokens: 100,
            cache_scope: "",
            rule_leads: None,
        };
        let task = AgentTask {
            group: "g1".into(),
            files: vec![TaskFile {
                path: "a.rs".into(),
                bytes: 10,
                language: None,
            }],
            focus: None,
            instructions: None,
            leads: Vec::new(),
            sample: 0,
        };
        let router = ToolRouter::new(Arc::new(Panicking), &definition.tools);
        let report = run_subagent_on(run, &task, &router, None).await;
        assert_eq!(report.status, AgentStatus::Failed);
        assert_eq!(
            report.error.as_deref(),
            Some(
                "the read_file tool panicked (read_file blew up): a fanscan bug, please report it"
            )
        );
        assert_eq!(report.rounds, 1, "no summary is asked of a failed agent");
        assert_eq!(provider.requests.lock().unwrap().len(), 1);
        assert!(
            !report.files[0].sha256.is_empty(),
            "the group was still hashed"
        );
    }
}
