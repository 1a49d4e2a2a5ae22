//! The report: one [`Report`] value, rendered as Markdown, JSON, SARIF,
//! GitHub annotations or GitLab Code Quality by pure functions, and the
//! exit code.
//!
//! The JSON schema is versioned (`schema_version`) and documented in the
//! README; it carries a run manifest (fanscan version, provider, model,
//! hashes of the agent definitions, rule set and plan) so that a run can be
//! reproduced and compared.

pub mod codeclimate;
pub mod github;
pub mod markdown;
pub mod sarif;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::agents::{AgentStatus, GroupReport};
use crate::inventory::Skipped;
use crate::plan::Plan;
use crate::providers::{EngineKind, Usage};
use crate::reduce::Merged;

/// The JSON schema version; bumped on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

/// Exit codes, as documented in the README and `--help`.
pub mod exit {
    /// The run completed.
    pub const OK: i32 = 0;
    /// An internal or I/O error (the report could not be written, ...).
    pub const ERROR: i32 = 1;
    /// A usage or configuration error: nothing was scanned.
    pub const USAGE: i32 = 2;
    /// The run is incomplete: failed groups, an interrupt, a budget.
    pub const INCOMPLETE: i32 = 3;
}

/// Output formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Md,
    Json,
    /// SARIF 2.1.0 for GitHub code scanning.
    Sarif,
    /// GitHub Actions annotations (workflow commands).
    Github,
    /// GitLab Code Quality (Code Climate issues).
    Codeclimate,
}

/// The tool that made the report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolInfo {
    pub name: String,
    pub version: String,
}

/// What a run needs to be reproduced and compared.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Manifest {
    /// Agent name to the SHA-256 of its definition file.
    pub agents: BTreeMap<String, String>,
    pub rules_source: String,
    pub rules_hash: String,
    pub plan_hash: String,
    pub group_tokens: u64,
    pub jobs: usize,
}

/// One group's outcome, as the report shows it.
#[derive(Clone, Debug, PartialEq, Serialize)]
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
        }
    }
}

/// A file that was planned but not reviewed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FailedFile {
    pub path: String,
    pub group: String,
    pub reason: String,
}

/// Where every file ended: reviewed, skipped (with a reason) or failed.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Coverage {
    /// Files of groups whose agent finished.
    pub reviewed: Vec<String>,
    /// Reviewed files whose content the agent was never shown (a model may
    /// skip a file; this says so instead of passing silently).
    pub unread: Vec<String>,
    /// Files the inventory left out, with the reason.
    pub skipped: Vec<Skipped>,
    /// Planned files whose group failed or never ran.
    pub failed: Vec<FailedFile>,
}

/// Counters of the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Stats {
    pub requests: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cached_tokens: u64,
    pub retries: u64,
    pub rate_limited: u64,
    /// The lowest number of requests in flight the adaptive limit went
    /// down to under 429/529 answers (0: never cut).
    pub lowest_concurrency: u64,
    /// Estimated cost in US dollars, when the model is in the price table.
    pub cost_usd: Option<f64>,
    /// Tokens and cost per agent (planner, auditors, reducer).
    pub agents: BTreeMap<String, AgentUsage>,
}

/// One agent's tokens and cost over the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct AgentUsage {
    #[serde(flatten)]
    pub usage: Usage,
    pub cost_usd: Option<f64>,
}

/// The report of one run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    pub schema_version: u32,
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
    pub coverage: Coverage,
    pub stats: Stats,
    /// Notes from the planner and reducer.
    pub notes: Vec<String>,
}

impl Report {
    /// The exit code of the run.
    pub fn exit_code(&self) -> i32 {
        if self.complete {
            exit::OK
        } else {
            exit::INCOMPLETE
        }
    }

    /// Renders the report.
    pub fn render(&self, format: Format) -> String {
        match format {
            Format::Md => markdown::render(self),
            Format::Json => {
                let mut text = serde_json::to_string_pretty(self).unwrap_or_else(|e| {
                    format!("{{\"error\": \"cannot serialize the report: {e}\"}}")
                });
                text.push('\n');
                text
            }
            Format::Sarif => sarif::render(self, None).unwrap_or_else(|e| {
                format!("{{\"error\": \"cannot serialize the SARIF log: {e}\"}}\n")
            }),
            Format::Github => github::render(self),
            Format::Codeclimate => codeclimate::render(self).unwrap_or_else(|e| {
                format!("{{\"error\": \"cannot serialize the Code Quality report: {e}\"}}\n")
            }),
        }
    }
}
