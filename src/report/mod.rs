//! The report: one [`Report`] value assembled from the stages' values
//! ([`assemble`]), rendered as Markdown, JSON, SARIF, GitHub annotations or
//! GitLab Code Quality by pure functions, and the exit code.
//!
//! The JSON schema is versioned (`schema_version`) and documented in
//! `docs/reports.md`; it carries a run manifest (fanscan version, provider,
//! model, hashes of the agent definitions, rule set and plan, and the
//! scanned tree's commit, branch and uncommitted changes) so that a run can
//! be reproduced and compared, and a finding traced to the checkout it is of.

mod codeclimate;
mod github;
pub(crate) mod html;
mod markdown;
pub(crate) mod review;
mod sarif;
pub(crate) mod shard;
pub(crate) mod since;

pub use sarif::Suppressed as SarifSuppressed;

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::agents::{AgentStatus, AgentTask, GroupReport};
use crate::llm::budget::AgentUsage;
use crate::llm::conversation::Usage;
use crate::llm::providers::EngineKind;
use crate::model::findings::Origin;
use crate::model::leads::{LeadResult, LeadsReport, OutsideLead};
use crate::stages::baseline::BaselineEntry;
use crate::stages::gate::{Baselined, Expired, GatePolicy, Suppressed, Triage, Verdict};
use crate::stages::inventory::Skipped;
use crate::stages::plan::Plan;
use crate::stages::reduce::{Merged, Reduced};
use crate::util::count as plural;
use crate::util::git::{ChangeSet, Checkout};

/// The JSON schema version; bumped on any incompatible change.
pub(crate) const SCHEMA_VERSION: u32 = 1;

/// Output formats (`--format`, whose help says what each is for).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// Markdown.
    Md,
    /// The JSON report.
    Json,
    /// SARIF 2.1.0.
    Sarif,
    /// GitHub Actions workflow commands.
    Github,
    /// Code Climate issues.
    Codeclimate,
    /// One HTML page.
    Html,
    /// A GitHub pull-request review.
    #[serde(rename = "github-review")]
    GithubReview,
    /// GitLab merge-request discussions.
    #[serde(rename = "gitlab-discussions")]
    GitlabDiscussions,
}

impl Format {
    /// The format named `name` (`md`, `sarif`, `github-review`, ...; any
    /// case), as `--output FORMAT=FILE` names it; `None` when no format has
    /// that name.
    pub(crate) fn from_name(name: &str) -> Option<Self> {
        use serde::Deserialize as _;
        let lower = name.to_ascii_lowercase();
        Self::deserialize(serde::de::value::StrDeserializer::<serde::de::value::Error>::new(&lower))
            .ok()
    }
}

/// The tool that made the report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolInfo {
    pub name: String,
    pub version: String,
}

/// What a run needs to be reproduced and compared.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Agent name to the SHA-256 of its definition file.
    pub agents: BTreeMap<String, String>,
    pub rules_source: String,
    pub rules_hash: String,
    pub plan_hash: String,
    pub group_tokens: u64,
    pub jobs: usize,
    /// Where each agent definition, the rules and the config came from.
    #[serde(default)]
    pub sources: Sources,
    /// The scanned tree's commit, branch and uncommitted changes (or that
    /// it is no git repository), read when the run was set up; none in a
    /// report written before fanscan recorded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkout: Option<Checkout>,
}

/// Where the run's configuration came from: `built-in`, `working tree`,
/// `base ref REF` (a `--since` scan), or a file named on the command line.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Sources {
    pub config: String,
    pub rules: String,
    /// Where the `--baseline` was read from (a file, or the base ref).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
    /// Agent name to where its definition came from.
    pub agents: BTreeMap<String, String>,
}

/// One group's outcome, as the report shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GroupOutcome {
    pub id: String,
    pub files: Vec<String>,
    pub agent: String,
    pub status: AgentStatus,
    pub rounds: u32,
    pub tool_calls: u32,
    pub tool_errors: u32,
    pub files_read: usize,
    pub usage: Usage,
    pub summary_parsed: bool,
    pub error: Option<String>,
    /// Reused from the run store: no model was asked this run (its usage
    /// is what it cost when it ran).
    #[serde(default)]
    pub cached: bool,
    /// Cached, and finished by a run that never completed (killed or
    /// stopped): this run resumed it.
    #[serde(default)]
    pub resumed: bool,
    /// Its agent made claims and none was verified: not a clean review
    /// (listed in [`Report::doubtful`] with its claims).
    #[serde(default)]
    pub doubtful: bool,
    /// Its files hold text addressed to AI agents and its agent reported
    /// nothing else: it may have obeyed (listed in [`Report::contested`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub contested: bool,
    /// The model the group was sent to after the run's model refused it
    /// (`fallback_model`); it answered unless the status is `blocked`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
}

/// How a group's result came from the run store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reused {
    /// Finished by an earlier complete run.
    Cached,
    /// Finished by an earlier run that did not complete.
    Resumed,
}

impl From<&GroupReport> for GroupOutcome {
    fn from(r: &GroupReport) -> Self {
        Self {
            id: r.group.clone(),
            files: r.files.iter().map(|f| f.path.clone()).collect(),
            agent: r.agent.clone(),
            status: r.status,
            rounds: r.rounds,
            tool_calls: r.tool_calls,
            tool_errors: r.tool_errors,
            files_read: r.files_read.len(),
            usage: r.usage,
            summary_parsed: r.summary_parsed,
            error: r.error.clone(),
            cached: false,
            resumed: false,
            doubtful: false,
            contested: false,
            fallback: r.fallback.clone(),
        }
    }
}

/// A claim an agent made that could not be read as a finding.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnparsedClaim {
    pub group: String,
    pub agent: String,
    /// Why it is not a finding.
    pub reason: String,
    /// The claim as the model wrote it, clipped.
    pub text: String,
    pub path: Option<String>,
    pub line: Option<u32>,
}

/// A review that did not happen: a group whose agent made claims (findings
/// or unreadable claims) of which none was verified. The model was shown
/// the files and cited code that is not there, so "no findings" from it
/// says nothing about the files.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DoubtfulGroup {
    pub group: String,
    pub agent: String,
    pub files: Vec<String>,
    /// Every claim of the group, none verified, with why.
    pub claims: Vec<DoubtfulClaim>,
}

/// One claim of a doubtful group.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DoubtfulClaim {
    pub path: Option<String>,
    pub line: Option<u32>,
    /// The finding's title, or the claim's text as the model wrote it.
    pub text: String,
    /// Why it is not verified.
    pub reason: String,
}

/// A review the files under review may have steered: a group whose files
/// hold text addressed to AI agents (an open `injection/ai-directed`
/// finding of the tool layer) and whose agent reported no finding of its
/// own. A model that obeyed "report nothing" looks exactly like this, so a
/// reviewer looks at it; the injection finding itself gates as any other.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContestedGroup {
    pub group: String,
    pub agent: String,
    pub files: Vec<String>,
    /// Where the text addressed to AI agents is: `path:line`.
    pub injections: Vec<String>,
}

/// The rule of text addressed to AI agents.
pub(crate) const AI_DIRECTED: &str = "injection/ai-directed";

/// A file that was planned but not reviewed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailedFile {
    pub path: String,
    pub group: String,
    pub reason: String,
}

/// Where every file ended: reviewed, skipped (with a reason) or failed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Coverage {
    /// Files a model was shown (preloaded or read) in a group whose agent
    /// finished.
    pub reviewed: Vec<String>,
    /// Files of finished groups that no model was shown (a model may skip a
    /// file): not reviewed, and the run is incomplete.
    pub unread: Vec<String>,
    /// Files the inventory left out, with the reason.
    pub skipped: Vec<Skipped>,
    /// Planned files whose group failed or never ran.
    pub failed: Vec<FailedFile>,
    /// Reviewed files whose results were carried over from the run store
    /// (unchanged since the run named), not audited in this run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub carried: Vec<CarriedFile>,
    /// Reviewed files with lines longer than any read shows: no model saw
    /// what lies past the cut.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub partly_read: Vec<PartlyRead>,
}

/// A reviewed file some of whose lines no read showed whole.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartlyRead {
    pub path: String,
    /// The lines shown only in part.
    pub lines: Vec<u64>,
}

/// A reviewed file not audited in this run: its results are those of the
/// run that audited it, re-verified against today's text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CarriedFile {
    pub path: String,
    /// The id of the run (in the run store) that audited it.
    pub run: i64,
}

/// Counters of the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    pub requests: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cached_tokens: u64,
    /// Input tokens written to the prompt cache.
    #[serde(default)]
    pub cache_write_tokens: u64,
    pub retries: u64,
    pub rate_limited: u64,
    /// The lowest number of requests in flight the adaptive limit went
    /// down to under 429/529 answers (0: never cut).
    pub lowest_concurrency: u64,
    /// Estimated cost in US dollars, when the model is in the price table.
    pub cost_usd: Option<f64>,
    /// Tokens and cost per agent (planner, auditors, reducer).
    pub agents: BTreeMap<String, AgentUsage>,
    /// Groups reused from the run store (resumed ones included).
    #[serde(default)]
    pub cached_groups: usize,
    /// Cached groups finished by an earlier run that did not complete.
    #[serde(default)]
    pub resumed_groups: usize,
    /// How token estimates (budgets) were made after the first responses:
    /// absent while they were bytes / 3 throughout (no server count).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_estimate: Option<crate::llm::budget::TokenEstimate>,
    /// `--batch`: the rounds and batches every model call went through
    /// (the cost above is at the batch price); absent without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<crate::llm::providers::batch::BatchStats>,
}

/// The report of one run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub(crate) schema_version: u32,
    pub tool: ToolInfo,
    pub provider: String,
    pub engine: EngineKind,
    pub model: String,
    pub root: String,
    pub started_at: String,
    pub duration_ms: u64,
    pub manifest: Manifest,
    /// Whether every planned group ran to the end.
    pub complete: bool,
    /// Why not, when not.
    pub incomplete_reasons: Vec<String>,
    pub summary: String,
    pub plan: Plan,
    pub groups: Vec<GroupOutcome>,
    /// Verified findings, ranked.
    pub findings: Vec<Merged>,
    /// Findings that failed verification, with the reason; not gated on.
    pub unverified: Vec<Merged>,
    /// Verified findings the skeptic refuted, with its reason: out of the
    /// gate, never out of the report.
    #[serde(default)]
    pub refuted: Vec<Merged>,
    /// Claims of the agents that did not come as a readable finding (no
    /// block, bad JSON, an entry without a line...), with the reason: kept
    /// so nothing a model said disappears; never counted as findings.
    #[serde(default)]
    pub unparsed: Vec<UnparsedClaim>,
    /// Groups whose agent made claims and none was verified, with their
    /// claims: reviews that did not happen. `--strict` makes them an
    /// incomplete run.
    #[serde(default)]
    pub doubtful: Vec<DoubtfulGroup>,
    /// Groups whose files address AI agents and whose agent reported
    /// nothing else: reviews the code under review may have steered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contested: Vec<ContestedGroup>,
    pub coverage: Coverage,
    pub stats: Stats,
    /// Notes from the planner and reducer.
    pub notes: Vec<String>,
    /// The gate's verdict.
    #[serde(default)]
    pub gate: Verdict,
    /// Findings kept out of the gate by an inline `fanscan:ignore`.
    #[serde(default)]
    pub suppressed: Vec<Suppressed>,
    /// Findings kept out of the gate by the baseline.
    #[serde(default)]
    pub baselined: Vec<Baselined>,
    /// Suppressions and baseline entries past their date, with their
    /// reason: their findings are open again (and listed there too).
    #[serde(default)]
    pub expired: Vec<Expired>,
    /// Baseline entries that match no finding and whose file changed
    /// since they were written: they cover nothing any more.
    #[serde(default)]
    pub baseline_void: Vec<BaselineEntry>,
    /// Baseline entries whose file this run did not review.
    #[serde(default)]
    pub baseline_not_checked: Vec<BaselineEntry>,
    /// Baseline entries whose file was reviewed and no longer has them.
    #[serde(default)]
    pub baseline_not_found: Vec<BaselineEntry>,
    /// A diff scan: the change it covered.
    #[serde(default)]
    pub diff: Option<ChangeSet>,
    /// This run's id in the run store (none without a store).
    #[serde(default)]
    pub run_id: Option<i64>,
    /// What changed since the last complete run in the store.
    #[serde(default)]
    pub since_last_run: Option<since::SinceLastRun>,
    /// A shard's partial report (`scan --shard K/N`): which shard of which
    /// plan, with its groups' full results for `fanscan merge`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<shard::ShardPart>,
    /// The repository brief the auditors were given, and who wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub brief: Option<crate::stages::brief::Brief>,
    /// Findings seen in fewer of their group's samples than `--quorum`
    /// (`--samples`), with their counts: out of the gate, listed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unstable: Vec<Merged>,
    /// The leads put to the auditors (the rule engine's, another tool's)
    /// and what became of each; none when a run had none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leads: Option<LeadsReport>,
}

impl Report {
    /// Renders the report.
    pub fn render(&self, format: Format) -> Result<String, RenderError> {
        match format {
            Format::Md => markdown::render(self).map_err(RenderError::Text),
            Format::Json => {
                let mut text = serde_json::to_string_pretty(self).map_err(RenderError::Json)?;
                text.push('\n');
                Ok(text)
            }
            Format::Sarif => {
                sarif::render(self, None, SarifSuppressed::default()).map_err(RenderError::Sarif)
            }
            Format::Github => Ok(github::render(self)),
            Format::Codeclimate => codeclimate::render(self).map_err(RenderError::CodeClimate),
            Format::Html => {
                html::render(self, &html::HtmlExtras::default()).map_err(RenderError::Text)
            }
            Format::GithubReview | Format::GitlabDiscussions => Err(RenderError::NeedsDiff),
        }
    }
}

impl Report {
    /// The SARIF log with `category` as its `automationDetails.id`, so that
    /// several scans of one repository coexist in code scanning;
    /// `suppressed` says whether findings that do not gate are results.
    pub fn render_sarif(
        &self,
        category: Option<&str>,
        suppressed: SarifSuppressed,
    ) -> Result<String, RenderError> {
        sarif::render(self, category, suppressed).map_err(RenderError::Sarif)
    }

    /// The note saying what the SARIF log cuts to keep code scanning's
    /// limits (25,000 results a run), when it must.
    pub(crate) fn sarif_cut_note(&self, suppressed: SarifSuppressed) -> Option<String> {
        sarif::cut_note(self, suppressed)
    }
}

/// A report that cannot be rendered: exit code 1, never an empty report.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("cannot serialize the report as JSON: {0}")]
    Json(#[source] serde_json::Error),
    #[error("cannot serialize the SARIF log: {0}")]
    Sarif(#[source] serde_json::Error),
    #[error("cannot serialize the Code Quality report: {0}")]
    CodeClimate(#[source] serde_json::Error),
    /// A review format rendered without the change's hunks.
    #[error(
        "--format github-review and gitlab-discussions comment on a change: scan with --since REF"
    )]
    NeedsDiff,
    #[error("cannot serialize the review: {0}")]
    Review(#[source] serde_json::Error),
    /// The change's hunks could not be read from git.
    #[error("the review needs the change's diff: {0}")]
    Git(#[source] crate::util::git::GitError),
    /// Writing Markdown or HTML failed: a `Display` of ours returned an
    /// error (a fanscan bug), reported instead of a cut page.
    #[error("cannot write the report's text: a fanscan bug, please report it")]
    Text(#[source] std::fmt::Error),
}

/// Who made the report and with what: the run's identity.
#[derive(Clone, Debug)]
pub(crate) struct RunInfo {
    pub(crate) provider: String,
    pub(crate) engine: EngineKind,
    pub(crate) model: String,
    pub(crate) root: String,
    pub(crate) started_at: String,
    pub(crate) duration_ms: u64,
    pub(crate) manifest: Manifest,
}

/// HTTP counters of the run.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CallCounts {
    pub(crate) requests: u64,
    pub(crate) retries: u64,
    pub(crate) rate_limited: u64,
    pub(crate) lowest_concurrency: u64,
}

/// Everything the stages gave, from which the report is assembled.
pub(crate) struct Parts {
    pub(crate) run: RunInfo,
    pub(crate) plan: Plan,
    pub(crate) skipped: Vec<Skipped>,
    pub(crate) reports: Vec<GroupReport>,
    /// Groups whose result came from the run store.
    pub(crate) reused: BTreeMap<String, Reused>,
    pub(crate) not_started: Vec<AgentTask>,
    pub(crate) reduced: Reduced,
    /// Why the run was stopped early (the run control's reasons).
    pub(crate) stopped: Vec<String>,
    /// Notes of the run itself (transcripts that could not be written).
    pub(crate) run_notes: Vec<String>,
    pub(crate) calls: CallCounts,
    /// What each agent spent (the budget's ledger), the total and its cost.
    pub(crate) spent: (BTreeMap<String, AgentUsage>, Usage, Option<f64>),
    /// The findings as the gate sorted them (they replace `reduced`'s).
    pub(crate) triage: Triage,
    pub(crate) policy: GatePolicy,
    pub(crate) diff: Option<ChangeSet>,
    /// Leads of another tool that name no file of the plan.
    pub(crate) outside_leads: Vec<OutsideLead>,
    /// A shard's part (`scan --shard`).
    pub(crate) shard: Option<shard::ShardPart>,
    /// The repository brief the auditors were given.
    pub(crate) brief: Option<crate::stages::brief::Brief>,
    /// Notes that close the list (a shard's share of the limits).
    pub(crate) closing_notes: Vec<String>,
    /// How a SARIF output treats findings that do not gate, when one is
    /// written: what it cuts is noted in the report too.
    pub(crate) sarif: Option<SarifSuppressed>,
    /// How the budgets weighed token estimates.
    pub(crate) token_estimate: Option<crate::llm::budget::TokenEstimate>,
    /// What `--batch` sent and got.
    pub(crate) batch: Option<crate::llm::providers::batch::BatchStats>,
}

/// Assembles the report: coverage accounts for every planned file, the
/// run is complete only when every group ran to the end and nothing
/// stopped it, and the notes say what a reader should know.
pub(crate) fn assemble(parts: Parts) -> Report {
    let Parts {
        run,
        plan,
        skipped,
        reports,
        reused,
        not_started,
        reduced,
        stopped,
        run_notes,
        calls,
        spent: (agents, usage, cost_usd),
        triage,
        policy,
        diff,
        outside_leads,
        shard,
        brief,
        closing_notes,
        sarif,
        token_estimate,
        batch,
    } = parts;
    let lead_results: Vec<&LeadResult> = reports.iter().flat_map(|r| &r.leads).collect();
    let leads = LeadsReport::of(&lead_results, outside_leads);
    let coverage = coverage(skipped, &reports, &not_started);
    let mut incomplete_reasons = incomplete_reasons(stopped, &reports, &not_started, &coverage);
    let mut notes = plan.notes.clone();
    notes.extend(reduced.notes.iter().cloned());
    notes.extend(run_notes);
    notes.extend(status_notes(&reports));
    notes.extend(triage.notes.iter().cloned());
    notes.extend(leads.as_ref().and_then(LeadsReport::held_note));
    let doubtful = doubtful(&reports, &triage, &reduced.refuted);
    if let Some(what) = doubtful_note(&doubtful) {
        if policy.strict {
            incomplete_reasons.push(format!("--strict: {what}"));
        } else {
            notes.push(format!("{what} --strict makes such a run incomplete."));
        }
    }
    if let Some(what) = partly_read_note(&coverage) {
        if policy.strict {
            incomplete_reasons.push(format!("--strict: {what}"));
        } else {
            notes.push(format!("{what} --strict makes such a run incomplete."));
        }
    }
    let contested = contested(run.engine, &reports, &triage);
    notes.extend(contested_note(&contested));
    let complete = incomplete_reasons.is_empty();
    let gate = crate::stages::gate::verdict(policy, &triage.findings, &triage.unverified, complete);
    let mut report = Report {
        schema_version: SCHEMA_VERSION,
        tool: ToolInfo {
            name: "fanscan".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        },
        provider: run.provider,
        engine: run.engine,
        model: run.model,
        root: run.root,
        started_at: run.started_at,
        duration_ms: run.duration_ms,
        manifest: run.manifest,
        complete,
        incomplete_reasons,
        summary: reduced.summary,
        groups: group_outcomes(&reports, &reused, &doubtful, &contested),
        plan,
        findings: triage.findings,
        unverified: triage.unverified,
        refuted: reduced.refuted,
        unparsed: unparsed_claims(&reports),
        doubtful,
        contested,
        coverage,
        stats: stats(calls, usage, cost_usd, agents, &reused),
        notes,
        gate,
        suppressed: triage.suppressed,
        baselined: triage.baselined,
        expired: triage.expired,
        baseline_void: triage.void,
        baseline_not_checked: triage.not_checked,
        baseline_not_found: triage.not_found,
        unstable: triage.unstable,
        diff,
        run_id: None,
        since_last_run: None,
        shard,
        brief,
        leads,
    };
    report.notes.extend(closing_notes);
    // The SARIF keeps code scanning's limits; what it cuts is said here
    // too, where people read the run.
    if let Some(note) = sarif.and_then(|s| report.sarif_cut_note(s)) {
        report.notes.push(note);
    }
    report.stats.token_estimate = token_estimate;
    report.stats.batch = batch;
    report
}

/// Why the run is incomplete, before the doubtful reviews are weighed:
/// what stopped it, then failed, never started and unread groups and files.
fn incomplete_reasons(
    stopped: Vec<String>,
    reports: &[GroupReport],
    not_started: &[AgentTask],
    coverage: &Coverage,
) -> Vec<String> {
    let mut reasons = stopped;
    let blocked = reports
        .iter()
        .filter(|r| r.status == AgentStatus::Blocked)
        .count();
    let failed_groups = reports
        .iter()
        .filter(|r| !r.status.reviewed() && r.status != AgentStatus::Blocked)
        .count();
    if failed_groups > 0 {
        reasons.push(format!(
            "{} failed.",
            crate::util::count(failed_groups, "group")
        ));
    }
    if blocked > 0 {
        reasons.push(format!(
            "{} blocked: the model refused to review {} (see the blocked groups).",
            crate::util::count(blocked, "group"),
            if blocked == 1 { "it" } else { "them" }
        ));
    }
    if !not_started.is_empty() {
        reasons.push(match not_started.len() {
            1 => "1 group never started.".to_string(),
            n => format!("{n} groups never started."),
        });
    }
    if !coverage.unread.is_empty() {
        reasons.push(format!(
            "{} planned files were never shown to a model (their agents answered without reading them).",
            coverage.unread.len()
        ));
    }
    reasons
}

/// Notes on agents that were wrapped up early or reached `max_rounds`.
fn status_notes(reports: &[GroupReport]) -> Vec<String> {
    let count = |status: AgentStatus| reports.iter().filter(|r| r.status == status).count();
    let mut notes = Vec::new();
    let wrapped = count(AgentStatus::WrappedUp);
    if wrapped > 0 {
        notes.push(format!(
            "{wrapped} agents were asked to wrap up early and gave their summary"
        ));
    }
    let max_rounds = count(AgentStatus::MaxRounds);
    if max_rounds > 0 {
        notes.push(format!(
            "{max_rounds} agents reached max_rounds; their summaries were still taken"
        ));
    }
    // Which groups the fallback model answered, by model.
    let mut answered: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for r in reports.iter().filter(|r| r.status.reviewed()) {
        if let Some(model) = &r.fallback {
            answered.entry(model).or_default().push(&r.group);
        }
    }
    for (model, groups) in answered {
        notes.push(format!(
            "the fallback model {model} answered {} the run's model refused: {}",
            crate::util::count(groups.len(), "group"),
            groups.join(", ")
        ));
    }
    notes
}

/// What to say about the doubtful reviews, if there are any.
fn doubtful_note(doubtful: &[DoubtfulGroup]) -> Option<String> {
    if doubtful.is_empty() {
        return None;
    }
    let ids: Vec<&str> = doubtful.iter().map(|d| d.group.as_str()).collect();
    Some(format!(
        "{} made claims and none was verified, so {} not reviewed cleanly (doubtful): {}.",
        plural(doubtful.len(), "group"),
        if doubtful.len() == 1 {
            "it was"
        } else {
            "they were"
        },
        ids.join(", ")
    ))
}

/// Each group's outcome, marked cached, resumed or doubtful.
fn group_outcomes(
    reports: &[GroupReport],
    reused: &BTreeMap<String, Reused>,
    doubtful: &[DoubtfulGroup],
    contested: &[ContestedGroup],
) -> Vec<GroupOutcome> {
    reports
        .iter()
        .map(|r| {
            let mut outcome = GroupOutcome::from(r);
            outcome.cached = reused.contains_key(&r.group);
            outcome.resumed = reused.get(&r.group) == Some(&Reused::Resumed);
            outcome.doubtful = doubtful.iter().any(|d| d.group == r.group);
            outcome.contested = contested.iter().any(|c| c.group == r.group);
            outcome
        })
        .collect()
}

/// Every group's claims that could not be read, with the group and agent.
fn unparsed_claims(reports: &[GroupReport]) -> Vec<UnparsedClaim> {
    reports
        .iter()
        .flat_map(|r| {
            r.unparsed.iter().map(|u| UnparsedClaim {
                group: r.group.clone(),
                agent: r.agent.clone(),
                reason: u.reason.clone(),
                text: u.text.clone(),
                path: u.path.clone(),
                line: u.line,
            })
        })
        .collect()
}

/// The run's counters, usage and cost.
fn stats(
    calls: CallCounts,
    usage: Usage,
    cost_usd: Option<f64>,
    agents: BTreeMap<String, AgentUsage>,
    reused: &BTreeMap<String, Reused>,
) -> Stats {
    Stats {
        requests: calls.requests,
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
        cached_tokens: usage.cached_tokens,
        cache_write_tokens: usage.cache_write_tokens,
        retries: calls.retries,
        rate_limited: calls.rate_limited,
        lowest_concurrency: calls.lowest_concurrency,
        cost_usd,
        agents,
        cached_groups: reused.len(),
        resumed_groups: reused.values().filter(|r| **r == Reused::Resumed).count(),
        // The scan sets it once the budget says how it estimated.
        token_estimate: None,
        batch: None,
    }
}

/// The groups that reviewed (their agent finished) and made claims, none
/// verified: findings of their agent only unverified, or claims that could
/// not be read. The tool layer's findings (secrets) are no claim of the
/// model; a group verified in another group's dedupe counts as verified.
/// A claim the skeptic refuted was verified, and a located one (its line
/// exists in a file of the group) is no invention: neither is doubtful.
fn doubtful(reports: &[GroupReport], triage: &Triage, refuted: &[Merged]) -> Vec<DoubtfulGroup> {
    let verified: BTreeSet<&str> = triage
        .findings
        .iter()
        .chain(triage.suppressed.iter().map(|s| &s.finding))
        .chain(triage.baselined.iter().map(|b| &b.finding))
        .chain(refuted.iter())
        .chain(triage.unverified.iter().filter(|m| m.located))
        .filter(|m| m.finding.origin == Origin::Agent)
        .flat_map(|m| m.groups.iter().map(String::as_str))
        .collect();
    let mut out = Vec::new();
    for r in reports {
        let made = r.findings.iter().any(|f| f.origin == Origin::Agent) || !r.unparsed.is_empty();
        if !r.status.reviewed() || !made || verified.contains(r.group.as_str()) {
            continue;
        }
        let mut claims: Vec<DoubtfulClaim> = triage
            .unverified
            .iter()
            .filter(|m| m.finding.origin == Origin::Agent && m.groups.contains(&r.group))
            .map(|m| DoubtfulClaim {
                path: Some(m.finding.path.clone()),
                line: Some(m.finding.line),
                text: m.finding.title.clone(),
                reason: m.note.clone().unwrap_or_else(|| "unverified".into()),
            })
            .collect();
        claims.extend(r.unparsed.iter().map(|u| DoubtfulClaim {
            path: u.path.clone(),
            line: u.line,
            text: u.text.clone(),
            reason: u.reason.clone(),
        }));
        out.push(DoubtfulGroup {
            group: r.group.clone(),
            agent: r.agent.clone(),
            files: r.files.iter().map(|f| f.path.clone()).collect(),
            claims,
        });
    }
    out.sort_by(|a, b| a.group.cmp(&b.group));
    out
}

/// The note naming the contested groups, if any.
fn contested_note(contested: &[ContestedGroup]) -> Option<String> {
    if contested.is_empty() {
        return None;
    }
    let ids: Vec<&str> = contested.iter().map(|c| c.group.as_str()).collect();
    Some(format!(
        "{} whose files address AI agents reported nothing else (contested: the text may have steered the model): {}.",
        plural(contested.len(), "group"),
        ids.join(", ")
    ))
}

/// The groups that reviewed, whose files hold an open (neither
/// suppressed nor baselined) finding of text addressed to AI agents, and
/// whose agent reported no finding of its own, readable or not. A rule
/// engine cannot be steered by what it reads: only a model's silence is
/// contested.
fn contested(engine: EngineKind, reports: &[GroupReport], triage: &Triage) -> Vec<ContestedGroup> {
    if !engine.can_be_steered() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for r in reports {
        let own = r.findings.iter().any(|f| f.origin == Origin::Agent) || !r.unparsed.is_empty();
        if !r.status.reviewed() || own {
            continue;
        }
        let injections: Vec<String> = triage
            .findings
            .iter()
            .filter(|m| {
                m.finding.origin == Origin::ToolLayer
                    && m.finding.rule.as_deref() == Some(AI_DIRECTED)
                    && m.groups.contains(&r.group)
            })
            .map(|m| format!("{}:{}", m.finding.path, m.finding.line))
            .collect();
        if injections.is_empty() {
            continue;
        }
        out.push(ContestedGroup {
            group: r.group.clone(),
            agent: r.agent.clone(),
            files: r.files.iter().map(|f| f.path.clone()).collect(),
            injections,
        });
    }
    out.sort_by(|a, b| a.group.cmp(&b.group));
    out
}

/// Every planned file ends reviewed, skipped or failed.
fn coverage(skipped: Vec<Skipped>, reports: &[GroupReport], not_started: &[AgentTask]) -> Coverage {
    let mut coverage = Coverage {
        skipped,
        ..Coverage::default()
    };
    for r in reports {
        let read: BTreeSet<&str> = r.files_read.iter().map(String::as_str).collect();
        for f in &r.files {
            if r.status.reviewed() {
                // A file no model was shown was not reviewed, whatever its
                // group's agent said.
                if read.contains(f.path.as_str()) {
                    coverage.reviewed.push(f.path.clone());
                    if let Some(lines) = r.lines_cut.get(&f.path) {
                        coverage.partly_read.push(PartlyRead {
                            path: f.path.clone(),
                            lines: lines.clone(),
                        });
                    }
                    if let Some(&run) = r.carried.get(&f.path) {
                        coverage.carried.push(CarriedFile {
                            path: f.path.clone(),
                            run,
                        });
                    }
                } else {
                    coverage.unread.push(f.path.clone());
                }
            } else {
                coverage.failed.push(FailedFile {
                    path: f.path.clone(),
                    group: r.group.clone(),
                    reason: r.error.clone().unwrap_or_else(|| r.status.as_str().into()),
                });
            }
        }
    }
    for t in not_started {
        for f in &t.files {
            coverage.failed.push(FailedFile {
                path: f.path.clone(),
                group: t.group.clone(),
                reason: "not started: the run was stopped early".into(),
            });
        }
    }
    coverage.reviewed.sort();
    coverage.unread.sort();
    coverage.failed.sort_by(|a, b| a.path.cmp(&b.path));
    coverage.carried.sort_by(|a, b| a.path.cmp(&b.path));
    coverage.partly_read.sort_by(|a, b| a.path.cmp(&b.path));
    coverage
}

/// What to say of the files with lines no read showed whole, if any.
fn partly_read_note(coverage: &Coverage) -> Option<String> {
    let files = &coverage.partly_read;
    if files.is_empty() {
        return None;
    }
    let listed: Vec<String> = files
        .iter()
        .take(10)
        .map(|f| {
            let lines: Vec<String> = f.lines.iter().take(5).map(u64::to_string).collect();
            let more = if f.lines.len() > 5 { ", …" } else { "" };
            format!("{} (line {}{more})", f.path, lines.join(", "))
        })
        .collect();
    let more = match files.len() {
        n if n > 10 => format!(" and {} more", n - 10),
        _ => String::new(),
    };
    Some(format!(
        "{} {} lines too long for any read to show whole, and no agent saw what lies past the cut: {}{more}.",
        plural(files.len(), "file"),
        if files.len() == 1 { "has" } else { "have" },
        listed.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::findings::{Finding, FindingCwe, HowParsed, Severity, Unparsed};
    use crate::stages::reduce::Merged;

    #[test]
    fn formats_are_named_as_output_names_them_in_any_case() {
        assert_eq!(Format::from_name("sarif"), Some(Format::Sarif));
        assert_eq!(Format::from_name("MD"), Some(Format::Md));
        assert_eq!(
            Format::from_name("github-review"),
            Some(Format::GithubReview)
        );
        assert_eq!(
            Format::from_name("Gitlab-Discussions"),
            Some(Format::GitlabDiscussions)
        );
        assert_eq!(Format::from_name("report.md"), None);
        assert_eq!(Format::from_name("github_review"), None);
    }

    fn finding(title: &str, origin: Origin) -> Finding {
        Finding {
            path: "a.py".into(),
            line: 2,
            end_line: None,
            severity: Severity::High,
            title: title.into(),
            detail: String::new(),
            evidence: None,
            rule: None,
            cwe: FindingCwe::default(),
            origin,
            seen: None,
        }
    }

    fn merged(title: &str, origin: Origin, groups: &[&str], note: Option<&str>) -> Merged {
        Merged {
            fingerprint: title.into(),
            finding: finding(title, origin),
            agents: vec!["auditor".into()],
            groups: groups.iter().map(|g| g.to_string()).collect(),
            verified: note.is_none(),
            note: note.map(str::to_string),
            located: false,
            challenge: None,
        }
    }

    fn group(
        id: &str,
        status: AgentStatus,
        findings: Vec<Finding>,
        unparsed: usize,
    ) -> GroupReport {
        GroupReport {
            group: id.into(),
            files: Vec::new(),
            agent: "auditor".into(),
            agent_hash: String::new(),
            provider: "p".into(),
            model: "m".into(),
            status,
            error: None,
            rounds: 1,
            tool_calls: 0,
            tool_errors: 0,
            files_read: Vec::new(),
            lines_cut: Default::default(),
            usage: Usage::default(),
            summary: String::new(),
            summary_parsed: unparsed == 0,
            rejected: Vec::new(),
            parse: HowParsed::Clean,
            repair_turn: false,
            unparsed: (0..unparsed)
                .map(|i| Unparsed {
                    reason: "no findings block".into(),
                    text: format!("claim {i}"),
                    path: None,
                    line: Some(3),
                })
                .collect(),
            carried: Default::default(),
            findings,
            leads: Vec::new(),
            fallback: None,
        }
    }

    #[test]
    fn doubtful_groups_are_those_whose_model_claims_all_failed() {
        let agent = |t: &str| finding(t, Origin::Agent);
        let reports = vec![
            // Its one claim unverified; the secret verified is no claim.
            group(
                "a-invented",
                AgentStatus::Complete,
                vec![agent("ghost"), finding("secret", Origin::ToolLayer)],
                0,
            ),
            // Only claims that could not be read.
            group("b-unreadable", AgentStatus::MaxRounds, Vec::new(), 2),
            // Its claim was verified under another group's dedupe.
            group("c-shared", AgentStatus::Complete, vec![agent("shared")], 0),
            // No claim at all, a secret only.
            group(
                "d-secret",
                AgentStatus::Complete,
                vec![finding("secret2", Origin::ToolLayer)],
                0,
            ),
            // Failed: incomplete already, not doubtful.
            group("e-failed", AgentStatus::Failed, vec![agent("lost")], 0),
        ];
        let triage = Triage {
            findings: vec![
                merged("secret", Origin::ToolLayer, &["a-invented"], None),
                merged("shared", Origin::Agent, &["x-other", "c-shared"], None),
                merged("secret2", Origin::ToolLayer, &["d-secret"], None),
            ],
            unverified: vec![
                merged("ghost", Origin::Agent, &["a-invented"], Some("not there")),
                merged("lost", Origin::Agent, &["e-failed"], Some("not there")),
            ],
            ..Triage::default()
        };
        let found = doubtful(&reports, &triage, &[]);
        let ids: Vec<&str> = found.iter().map(|d| d.group.as_str()).collect();
        assert_eq!(ids, ["a-invented", "b-unreadable"]);
        assert_eq!(
            found[0].claims,
            vec![DoubtfulClaim {
                path: Some("a.py".into()),
                line: Some(2),
                text: "ghost".into(),
                reason: "not there".into(),
            }]
        );
        assert_eq!(found[1].claims.len(), 2);
        assert_eq!(found[1].claims[0].reason, "no findings block");

        // A located claim (its line exists in a file of the group) and a
        // claim the skeptic refuted (it was verified) are no invention.
        let reports = vec![
            group("f-located", AgentStatus::Complete, vec![agent("near")], 0),
            group("g-refuted", AgentStatus::Complete, vec![agent("const")], 0),
        ];
        let mut located = merged("near", Origin::Agent, &["f-located"], Some("not code"));
        located.located = true;
        let triage = Triage {
            unverified: vec![located],
            ..Triage::default()
        };
        let refuted = [merged("const", Origin::Agent, &["g-refuted"], None)];
        assert!(doubtful(&reports, &triage, &refuted).is_empty());
        assert_eq!(
            doubtful(&reports, &triage, &[]).len(),
            1,
            "without the refuted one"
        );
    }
}
