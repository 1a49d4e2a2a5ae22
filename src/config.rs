//! Settings: command-line arguments (all optional) and `fanscan.toml`
//! merged once into validated [`Settings`]; after this nothing reads the
//! environment or a config file again.
//!
//! The command line wins over the file, the file over the defaults. The
//! file is the repository's `fanscan.toml` or the one given with
//! `--config`. A scanned repository is untrusted: its own `fanscan.toml`
//! may not set `base_url` or `api_key_env` (it could send your key
//! elsewhere); set them on the command line or in a `--config` file.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::report::{Format, SarifSuppressed};
use crate::stages::gate::{FailOn, GatePolicy};
use crate::stages::plan::shard::{Quota, Shard, ShardError, ShardQuota};
use crate::tools::paths::PathError;
use crate::util::git::{ConfigOrigin, GitError};

/// Which wire format answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// The embedded rule engine: no key, no network.
    Offline,
    /// OpenAI Chat Completions and compatible servers.
    Openai,
    /// Anthropic Messages.
    Anthropic,
}

/// Which planner splits the repository.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PlannerKind {
    /// Deterministic packing by directory under the token budget.
    Pack,
    /// The planner agent, validated and repaired.
    Llm,
}

/// Provider options shared by every command that may call a model.
#[derive(Clone, Debug, Default)]
pub struct ProviderArgs {
    /// `--provider`.
    pub provider: Option<ProviderKind>,
    /// `--model`.
    pub model: Option<String>,
    /// `--base-url`.
    pub base_url: Option<String>,
    /// `--api-key-env`.
    pub api_key_env: Option<String>,
    /// `--config`.
    pub config: Option<PathBuf>,
    /// `--timeout`.
    pub timeout: Option<u64>,
    /// `--max-output-tokens`.
    pub max_output_tokens: Option<u32>,
    /// `--context-tokens`.
    pub context_tokens: Option<u64>,
    /// `--rules`.
    pub rules: Option<PathBuf>,
    /// `--rpm`.
    pub rpm: Option<u32>,
    /// `--tpm`.
    pub tpm: Option<u64>,
    /// `--max-attempts`.
    pub max_attempts: Option<u32>,
    /// `--max-retry-wait`.
    pub max_retry_wait: Option<u64>,
    /// `--anthropic-version`.
    pub anthropic_version: Option<String>,
    /// `--fallback-model`.
    pub fallback_model: Option<String>,
    /// `--retry-budget`.
    pub retry_budget: Option<u64>,
    /// `--prices`.
    pub prices: Option<PathBuf>,
}

/// Which share of the plan a `scan` runs (`--shard K/N`, or a Kubernetes
/// Indexed Job's `$JOB_COMPLETION_INDEX` with `--shard-from-env`).
#[derive(Clone, Debug, Default)]
pub struct ShardArgs {
    /// `--shard`.
    pub shard: Option<Shard>,
    /// `--shard-from-env`.
    pub shard_from_env: bool,
    /// `--shard-count`.
    pub shard_count: Option<usize>,
    /// `--shard-rpm`.
    pub shard_rpm: Option<u32>,
    /// `--shard-tpm`.
    pub shard_tpm: Option<u64>,
    /// `--shard-max-cost`.
    pub shard_max_cost: Option<f64>,
    /// `--shard-max-tokens`.
    pub shard_max_tokens: Option<u64>,
}

impl ShardArgs {
    /// The shard to run, if any; `env` looks up `JOB_COMPLETION_INDEX`.
    fn resolve(&self, env: &dyn Fn(&str) -> Option<String>) -> Result<Option<Shard>, ShardError> {
        if let Some(shard) = self.shard {
            return Ok(Some(shard));
        }
        match (self.shard_from_env, self.shard_count) {
            (true, Some(count)) => {
                let index = env("JOB_COMPLETION_INDEX").ok_or(ShardError::EnvMissing)?;
                Shard::from_index(&index, count).map(Some)
            }
            _ => Ok(None),
        }
    }
}

/// Options of `scan` and `plan`.
#[derive(Clone, Debug, Default)]
pub struct ScanArgs {
    /// `--include`.
    pub include: Vec<String>,
    /// `--exclude`.
    pub exclude: Vec<String>,
    /// `--no-hidden`.
    pub no_hidden: bool,
    /// `--max-file-bytes`.
    pub max_file_bytes: Option<u64>,
    /// `--include-vendored`.
    pub include_vendored: bool,
    /// `--planner`.
    pub planner: Option<PlannerKind>,
    /// `--group-tokens`.
    pub group_tokens: Option<u64>,
    /// `--max-groups`.
    pub max_groups: Option<usize>,
    /// `--jobs`.
    pub jobs: Option<usize>,
    /// `--agent`.
    pub agent: Option<String>,
    /// `--max-cost`.
    pub max_cost: Option<f64>,
    /// `--max-tokens`.
    pub max_tokens: Option<u64>,
    /// `--max-duration`.
    pub max_duration: Option<String>,
    /// `--store`.
    pub store: Option<PathBuf>,
    /// `--no-store`.
    pub no_store: bool,
    /// `--no-cache`.
    pub no_cache: bool,
    /// `--store-max-mb`.
    pub store_max_mb: Option<u64>,
    /// `--since`.
    pub since: Option<String>,
    /// `--changed-files`.
    pub changed_files: Option<PathBuf>,
    /// `--trust-worktree-config`.
    pub trust_worktree_config: bool,
    /// `--max-comments`.
    pub max_comments: Option<usize>,
    /// `--leads` (repeatable): `off`, `rules`, or a SARIF file.
    pub leads: Vec<String>,
    /// `fanscan triage`: only the files with SARIF leads are audited.
    pub triage: bool,
    /// `--samples`.
    pub samples: Option<u32>,
    /// `--batch`.
    pub batch: bool,
    /// `--batch-poll`, in seconds.
    pub batch_poll: Option<f64>,
}

/// The gate's options (`scan` only).
#[derive(Clone, Debug, Default)]
pub struct GateArgs {
    /// `--fail-on`.
    pub fail_on: Option<FailOn>,
    /// `--gate-unverified`.
    pub gate_unverified: bool,
    /// `--challenge`.
    pub challenge: Option<FailOn>,
    /// `--quorum`.
    pub quorum: Option<u32>,
    /// `--strict`.
    pub strict: bool,
    /// `--baseline`.
    pub baseline: Option<PathBuf>,
    /// `--write-baseline`.
    pub write_baseline: Option<PathBuf>,
    /// `--baseline-reason`.
    pub baseline_reason: Option<String>,
    /// `fanscan baseline --expires-in`: how long new entries hold.
    pub expires_in: Option<String>,
}

/// Where and in which formats a report goes (`scan` and `merge`).
#[derive(Clone, Debug, Default)]
pub struct OutputArgs {
    /// `--format`.
    pub format: Option<Format>,
    /// `--output`.
    pub output: Vec<String>,
    /// `--category`.
    pub category: Option<String>,
    /// `--sarif-suppressed`.
    pub sarif_suppressed: Option<SarifSuppressed>,
    /// `--no-step-summary`.
    pub no_step_summary: bool,
}

/// Everything the command line says about one run, every value optional:
/// what [`Settings::from_args`] merges over the config file and the
/// defaults, once.
#[derive(Clone, Debug, Default)]
pub struct RunArgs {
    pub provider: ProviderArgs,
    pub scan: ScanArgs,
    pub gate: GateArgs,
    pub shard: ShardArgs,
    /// Where the report goes; `None` for a command that writes none
    /// (`baseline` writes only its file, `ask` and `plan` their own text).
    pub output: Option<OutputArgs>,
    /// The work calls no model (`fanscan plan`): a remote provider needs
    /// no API key.
    pub no_key_needed: bool,
}

/// Where a diff scan's changed files come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum DiffSource {
    /// `git diff --merge-base REF`.
    Since(String),
    /// A list of paths.
    List(PathBuf),
}

/// The TOML file. Every key is optional; unknown keys are errors.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileConfig {
    pub provider: Option<ProviderKind>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    pub api_key_env: Option<String>,
    pub timeout: Option<u64>,
    pub max_output_tokens: Option<u32>,
    pub context_tokens: Option<u64>,
    pub rules: Option<PathBuf>,
    pub rpm: Option<u32>,
    pub tpm: Option<u64>,
    pub max_attempts: Option<u32>,
    pub max_retry_wait: Option<u64>,
    pub anthropic_version: Option<String>,
    pub fallback_model: Option<String>,
    pub retry_budget: Option<u64>,
    pub prices: Option<PathBuf>,
    pub include: Option<Vec<String>>,
    pub exclude: Option<Vec<String>>,
    pub hidden: Option<bool>,
    pub max_file_bytes: Option<u64>,
    pub include_vendored: Option<bool>,
    pub planner: Option<PlannerKind>,
    pub group_tokens: Option<u64>,
    pub max_groups: Option<usize>,
    pub jobs: Option<usize>,
    pub agent: Option<String>,
    pub max_cost: Option<f64>,
    pub max_tokens: Option<u64>,
    pub max_duration: Option<String>,
    pub format: Option<Format>,
    /// Globs to agent names for the planner: `"src/auth/**" = "security"`.
    pub agents: Option<std::collections::BTreeMap<String, String>>,
    pub store_max_mb: Option<u64>,
    /// Every model call through the provider's batch API (`--batch`).
    pub batch: Option<bool>,
    /// The longest wait between two polls of a batch, in seconds.
    pub batch_poll: Option<f64>,
    /// Per-shard limits, used under `--shard` instead of 1/N of the run's.
    pub shard: Option<ShardFileConfig>,
}

/// The `[shard]` table: what each shard of a sharded scan may use, instead
/// of its 1/N share of `rpm`, `tpm`, `max_cost` and `max_tokens`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ShardFileConfig {
    pub rpm: Option<u32>,
    pub tpm: Option<u64>,
    pub max_cost: Option<f64>,
    pub max_tokens: Option<u64>,
}

/// Everything a run needs, validated. Built once by
/// [`Settings::from_args`]; nothing changes it afterwards.
#[derive(Clone, Debug)]
pub struct Settings {
    pub(crate) root: PathBuf,
    pub(crate) provider: ProviderKind,
    pub(crate) model: String,
    pub(crate) base_url: String,
    pub(crate) api_key_env: String,
    /// The key, read once here; never printed.
    pub(crate) api_key: Option<Secret>,
    pub(crate) timeout: Duration,
    pub(crate) max_output_tokens: u32,
    /// The model's context window, in tokens.
    pub(crate) context_tokens: u64,
    pub(crate) rules: Option<PathBuf>,
    pub(crate) rpm: u32,
    pub(crate) tpm: u64,
    pub(crate) max_attempts: u32,
    pub(crate) max_retry_wait: Duration,
    pub(crate) anthropic_version: String,
    /// The model a group the run's model refused twice is sent to once
    /// (`fallback_model`); none: a blocked group stays blocked.
    pub(crate) fallback_model: Option<String>,
    pub(crate) retry_budget: u64,
    pub(crate) prices: Option<PathBuf>,
    pub(crate) include: Vec<String>,
    pub(crate) exclude: Vec<String>,
    pub(crate) hidden: bool,
    pub(crate) max_file_bytes: u64,
    /// Audit vendored and generated files (lock files excepted).
    pub(crate) include_vendored: bool,
    pub(crate) planner: PlannerKind,
    pub(crate) group_tokens: u64,
    pub(crate) max_groups: usize,
    pub(crate) jobs: usize,
    pub(crate) agent: String,
    /// `--agent` was given: it audits every group, whatever the plan says.
    pub(crate) agent_forced: bool,
    /// The `[agents]` table: (glob, agent), sorted by glob; each glob
    /// compiles.
    pub(crate) agent_globs: Vec<(String, String)>,
    pub(crate) max_cost: Option<f64>,
    pub(crate) max_tokens: Option<u64>,
    pub(crate) max_duration: Option<Duration>,
    pub(crate) format: Format,
    /// Where the report goes.
    pub(crate) outputs: Outputs,
    /// A diff scan, and over what.
    pub(crate) diff: Option<DiffSource>,
    /// Where the repository's fanscan.toml, rules and agents are read from.
    pub(crate) config_origin: ConfigOrigin,
    /// Where the config file came from, for the manifest.
    pub(crate) config_source: String,
    /// A rules file named by the repository's fanscan.toml at the base ref
    /// (repository-relative), read from there.
    pub(crate) base_rules: Option<String>,
    /// What fails the gate.
    pub(crate) gate: GatePolicy,
    /// The lowest severity the skeptic challenges (`--challenge`), or
    /// `never`.
    pub(crate) challenge: FailOn,
    /// What is put to the auditors as leads (`--leads`).
    pub(crate) leads: Leads,
    /// `fanscan triage`: audit only the files the SARIF leads name.
    pub(crate) triage: bool,
    /// Independent audits of each group (`--samples`).
    pub(crate) samples: u32,
    /// Samples a finding must be seen in to gate (`--quorum`).
    pub(crate) quorum: u32,
    pub(crate) baseline: Option<PathBuf>,
    pub(crate) write_baseline: Option<PathBuf>,
    pub(crate) baseline_reason: Option<String>,
    /// The last day new baseline entries hold (`--expires-in`).
    pub(crate) baseline_expires: Option<jiff::civil::Date>,
    /// The run's date (UTC), read once here: suppressions and baseline
    /// entries past it have expired. `FANSCAN_TODAY=YYYY-MM-DD` sets it,
    /// so a run can be reproduced and tests need no clock.
    pub(crate) today: jiff::civil::Date,
    /// The run store's file; none with --no-store.
    pub(crate) store: Option<PathBuf>,
    /// Reuse stored results (false with --no-cache).
    pub(crate) cache: bool,
    /// Bound of the stored results in bytes (0: none).
    pub(crate) store_max_bytes: u64,
    /// Run only this shard of the plan (`--shard`).
    pub(crate) shard: Option<Shard>,
    /// A shard's limits and budgets (`rpm`, `tpm`, `max_cost` and
    /// `max_tokens` above are its values), each with the run's value and
    /// how it was shared.
    pub(crate) shard_quota: Option<ShardQuota>,
    /// Most review comments (`--max-comments`).
    pub(crate) max_comments: usize,
    /// `--batch`: every model call through the provider's batch API.
    pub(crate) batch: Option<BatchSettings>,
}

/// How `--batch` runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct BatchSettings {
    /// The longest wait between two polls of a batch (`--batch-poll`).
    pub(crate) poll_max: Duration,
}

/// `--batch` and `--batch-poll`: only with a provider that has a batch API.
fn resolve_batch(
    scan: &ScanArgs,
    file: &FileConfig,
    provider: ProviderKind,
) -> Result<Option<BatchSettings>, ConfigError> {
    if !(scan.batch || file.batch.unwrap_or(false)) {
        return Ok(None);
    }
    if provider == ProviderKind::Offline {
        return Err(ConfigError::BatchOffline);
    }
    let secs = scan.batch_poll.or(file.batch_poll).unwrap_or(60.0);
    if !secs.is_finite() || secs <= 0.0 || secs > 86_400.0 {
        let given = setting(scan.batch_poll.is_some(), "batch-poll", "batch_poll", secs);
        return Err(ConfigError::BatchPoll(given));
    }
    Ok(Some(BatchSettings {
        poll_max: Duration::from_secs_f64(secs),
    }))
}

impl Settings {
    /// The format of stdout (or of a plain `--output FILE`).
    pub fn format(&self) -> Format {
        self.format
    }

    /// Where the report goes.
    pub fn outputs(&self) -> &Outputs {
        &self.outputs
    }

    /// Where to write this run's findings as a baseline, if asked.
    pub fn write_baseline(&self) -> Option<&Path> {
        self.write_baseline.as_deref()
    }

    /// The reason recorded for the baseline's new entries.
    pub fn baseline_reason(&self) -> Option<&str> {
        self.baseline_reason.as_deref()
    }

    /// The last day the baseline's new entries hold, if they expire.
    pub fn baseline_expires(&self) -> Option<jiff::civil::Date> {
        self.baseline_expires
    }

    /// The run's date.
    pub fn today(&self) -> jiff::civil::Date {
        self.today
    }

    /// The most groups a scan's plan may have (0: no cap).
    pub fn max_groups(&self) -> usize {
        self.max_groups
    }

    /// Estimated tokens of file content per group.
    pub fn group_tokens(&self) -> u64 {
        self.group_tokens
    }
}

/// Where a report goes: stdout (or one file) in the run's format, and more
/// files each in their own format.
#[derive(Clone, Debug, Default)]
pub struct Outputs {
    /// The report in the run's format goes to stdout (or `plain`).
    stdout: bool,
    /// A plain `--output FILE`.
    plain: Option<PathBuf>,
    /// `--output FORMAT=FILE`, in the order given.
    extra: Vec<(Format, PathBuf)>,
    category: Option<String>,
    /// `--sarif-suppressed`.
    sarif_suppressed: SarifSuppressed,
    /// $GITHUB_STEP_SUMMARY, unless --no-step-summary.
    step_summary: Option<PathBuf>,
}

impl Outputs {
    /// Whether the report in the run's format is written (to stdout, or
    /// to [`Outputs::plain`]).
    pub fn stdout(&self) -> bool {
        self.stdout
    }

    /// A plain `--output FILE`, written instead of stdout.
    pub fn plain(&self) -> Option<&Path> {
        self.plain.as_deref()
    }

    /// `--output FORMAT=FILE`, in the order given.
    pub fn extra(&self) -> &[(Format, PathBuf)] {
        &self.extra
    }

    /// The SARIF `automationDetails.id`.
    pub fn category(&self) -> Option<&str> {
        self.category.as_deref()
    }

    /// Whether the SARIF keeps the findings that do not gate as results.
    pub fn sarif_suppressed(&self) -> SarifSuppressed {
        self.sarif_suppressed
    }

    /// Whether the report is written as SARIF (the run's format or an
    /// `--output sarif=FILE`).
    pub(crate) fn writes(&self, format: Format, run_format: Format) -> bool {
        (self.stdout && run_format == format) || self.extra.iter().any(|(f, _)| *f == format)
    }

    /// $GITHUB_STEP_SUMMARY, where the Markdown report is appended.
    pub fn step_summary(&self) -> Option<&Path> {
        self.step_summary.as_deref()
    }
}

/// An API key. Its `Debug` never shows it, so no log or error can.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Secret(String);

impl Secret {
    /// The key itself, for the one header that carries it.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// A configuration error: names the thing and the fix. Exit code 2.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(
        "--expires-in {0:?}: not a number of days, weeks, months or years; write e.g. 90d, 12w, 6mo or 1y"
    )]
    ExpiresIn(String),
    #[error("{TODAY_ENV}={0:?}: not a date; write the run's date as YYYY-MM-DD, or unset it")]
    Today(String),
    #[error("--since and --changed-files both name the changed files; give one")]
    SinceAndChangedFiles,
    #[error("--since {0:?} is not a git ref; give e.g. origin/main")]
    NotARef(String),
    #[error("{}: cannot read the config file: {error}", .path.display())]
    ReadFile {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
    #[error("fanscan.toml at {origin}: {error}")]
    ReadAtOrigin {
        origin: String,
        #[source]
        error: GitError,
    },
    /// The config file does not parse: `place` is `file:line` or `file`.
    #[error("{place}: {message}")]
    Parse { place: String, message: String },
    #[error(
        "{}: `{key}` is not honoured in the scanned repository's own fanscan.toml (a repository could send your API key elsewhere); pass --{} or use --config FILE",
        .file.display(),
        .key.replace('_', "-")
    )]
    NotHonoured { file: PathBuf, key: &'static str },
    #[error("{}: {error}", .root.display())]
    Root {
        root: PathBuf,
        #[source]
        error: std::io::Error,
    },
    #[error(
        "{}: `{key}`: {error}; a repository's own fanscan.toml may only name files inside it",
        .file.display()
    )]
    OutsideRepository {
        file: PathBuf,
        key: &'static str,
        #[source]
        error: PathError,
    },
    #[error(
        "fanscan.toml at {origin}: `rules`: {rel:?} is outside the repository; a repository's own fanscan.toml may only name files inside it"
    )]
    BaseRulesOutside { origin: String, rel: String },
    #[error("{0}: the rules file named by fanscan.toml is not there")]
    RulesMissing(String),
    #[error("--base-url {0:?} must start with http:// or https://")]
    BaseUrl(String),
    #[error(
        "no API key for --provider {provider}: set ${env} (or name another variable with --api-key-env), or use --provider offline"
    )]
    NoApiKey { provider: &'static str, env: String },
    #[error("{0} must be at least 1")]
    NoJobs(String),
    #[error("--samples {n}: give 1 to {max} (each sample audits every group once more)")]
    Samples { n: u32, max: u32 },
    #[error("--quorum {k}: give 1 to the number of samples ({n})")]
    Quorum { k: u32, n: u32 },
    #[error("--leads off turns leads off: give it alone, not with other --leads")]
    LeadsOff,
    #[error("--leads {0:?}: give off, rules, or a SARIF file (FILE.sarif or FILE.sarif.json)")]
    LeadsValue(String),
    #[error("{0} is too small to hold a file; use at least 100 (default 24000)")]
    GroupTokens(String),
    #[error(
        "{0} is not a model's context window; give the window in tokens, from 8000 (default 64000)"
    )]
    ContextTokens(String),
    #[error("{0} is not a duration; write e.g. 90s, 20m or 2h")]
    Duration(String),
    #[error("{0} must be a positive number of US dollars")]
    MaxCost(String),
    #[error(
        "--batch sends the model calls through a provider's batch API: pass --provider openai or anthropic (the offline engine answers at once)"
    )]
    BatchOffline,
    #[error(
        "fallback_model names a model to send a group to when the run's model refuses it: pass --provider openai or anthropic (the offline engine never refuses), or leave fallback_model out"
    )]
    FallbackOffline,
    #[error(
        "fallback_model is empty: name a model of the same provider (e.g. the one you run with --model), or leave it out"
    )]
    FallbackEmpty,
    #[error(
        "{0} is not a wait between polls; give seconds, more than 0 and at most 86400 (default 60)"
    )]
    BatchPoll(String),
    #[error(
        "--shard-max-cost (or `[shard] max_cost`) must be a positive number of US dollars; leave it out to give each shard max-cost / N"
    )]
    ShardMaxCost,
    #[error(
        "--max-cost needs the price of model {0:?}, which is not in the price table; add it to a copy of configs/prices.toml and pass --prices FILE"
    )]
    Unpriced(String),
    #[error(
        "fanscan.toml [agents]: {glob:?} is not a valid glob ({error}); write e.g. \"src/auth/**\" = \"security\""
    )]
    AgentGlob {
        glob: String,
        #[source]
        error: globset::Error,
    },
    #[error("fanscan.toml [agents]: {glob:?} names no agent; write e.g. \"{glob}\" = \"security\"")]
    NoAgent { glob: String },
    #[error(
        "fanscan.toml [agents]: {glob:?} = {name:?} names no delegable agent; the agents a group can have are: {valid} (an agent file with `delegable: true` adds one)"
    )]
    NotDelegable {
        glob: String,
        name: String,
        valid: String,
    },
    /// The `[agents]` table cannot route the plan's files.
    #[error("{0}")]
    Routing(String),
    #[error(transparent)]
    Shard(#[from] ShardError),
    /// `--format` other than json with `--shard` (the format's name).
    #[error(
        "--format {0} with --shard: a shard writes its partial report as JSON for `fanscan merge`; drop --format (or add --output md=FILE for a readable copy)"
    )]
    ShardFormat(String),
    #[error("--output {0}: no file after '='; write FORMAT=FILE")]
    OutputNoFile(String),
    #[error(
        "--format {0} comments on the lines a change touched: add --since REF (e.g. --since origin/main)"
    )]
    ReviewNeedsSince(&'static str),
    #[error(
        "--output {0}: only one --output may omit its format; write FORMAT=FILE (md, json, sarif, github, codeclimate, html, github-review, gitlab-discussions)"
    )]
    OutputTwoPlain(String),
    #[error(
        "the question is empty: write it in quotes, e.g. fanscan ask \"where is user input parsed?\" ."
    )]
    EmptyQuestion,
}

impl Settings {
    /// A scan's settings with the default gate, no shard, and the report
    /// to stdout in `format`: [`Settings::from_args`] with only these.
    pub fn resolve(
        root: &Path,
        provider: &ProviderArgs,
        scan: &ScanArgs,
        format: Option<Format>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let args = RunArgs {
            provider: provider.clone(),
            scan: scan.clone(),
            output: Some(OutputArgs {
                format,
                ..OutputArgs::default()
            }),
            ..RunArgs::default()
        };
        Self::from_args(root, &args, env)
    }

    /// Merges the command line over the config file over the defaults,
    /// once and whole. `env` looks up environment variables (passed in:
    /// tests give their own, nothing reads the process environment behind
    /// the caller's back).
    pub fn from_args(
        root: &Path,
        args: &RunArgs,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let shard = args.shard.resolve(env)?;
        let (format, outputs) = resolve_outputs(args.output.as_ref(), shard, env)?;
        let source = Source::load(root, &args.provider, &args.scan)?;
        let files = source.files(root, &args.provider)?;
        let file = source.file;
        let provider = resolve_provider(&args.provider, &file, env, !args.no_key_needed)?;
        let mut limits = resolve_limits(&args.provider, &args.scan, &file)?;
        let fallback_model = resolve_fallback(&args.provider, &file, provider.kind)?;
        let mut budget = resolve_budget(&args.scan, &file)?;
        let shard_quota = match shard {
            Some(shard) => Some(share_limits(
                &args.shard,
                &file,
                shard,
                &mut limits,
                &mut budget,
            )?),
            None => None,
        };
        let agents = resolve_agents(&args.scan, &file)?;
        let gate = resolve_gate(&args.gate, env)?;
        let samples = resolve_samples(args.scan.samples, args.gate.quorum)?;
        let store = resolve_store(root, &args.scan, &file);
        let batch = resolve_batch(&args.scan, &file, provider.kind)?;
        let scan = &args.scan;
        let format = format.or(file.format).unwrap_or(Format::Md);
        review_needs_since(format, &outputs, source.diff.as_ref())?;
        Ok(Self {
            root: root.to_path_buf(),
            provider: provider.kind,
            model: provider.model,
            base_url: provider.base_url,
            api_key_env: provider.api_key_env,
            api_key: provider.api_key,
            timeout: limits.timeout,
            max_output_tokens: limits.max_output_tokens,
            context_tokens: limits.context_tokens,
            rules: files.rules,
            rpm: limits.rpm,
            tpm: limits.tpm,
            max_attempts: limits.max_attempts,
            max_retry_wait: limits.max_retry_wait,
            anthropic_version: limits.anthropic_version,
            fallback_model,
            retry_budget: limits.retry_budget,
            prices: files.prices,
            include: or_file(&scan.include, file.include),
            exclude: or_file(&scan.exclude, file.exclude),
            hidden: !scan.no_hidden && file.hidden.unwrap_or(true),
            max_file_bytes: scan
                .max_file_bytes
                .or(file.max_file_bytes)
                .unwrap_or(1024 * 1024),
            include_vendored: scan.include_vendored || file.include_vendored.unwrap_or(false),
            planner: scan.planner.or(file.planner).unwrap_or(PlannerKind::Pack),
            group_tokens: limits.group_tokens,
            max_groups: scan.max_groups.or(file.max_groups).unwrap_or(2000),
            jobs: limits.jobs,
            agent: agents.agent,
            agent_forced: agents.forced,
            agent_globs: agents.globs,
            max_cost: budget.max_cost,
            max_tokens: budget.max_tokens,
            max_duration: budget.max_duration,
            format,
            outputs,
            diff: source.diff,
            config_origin: source.origin,
            config_source: source.described,
            base_rules: files.base_rules,
            gate: gate.policy,
            challenge: gate.challenge,
            leads: resolve_leads(&scan.leads, provider.kind, scan.triage)?,
            batch,
            triage: scan.triage,
            samples: samples.0,
            quorum: samples.1,
            baseline: gate.baseline,
            write_baseline: gate.write_baseline,
            baseline_reason: gate.baseline_reason,
            baseline_expires: gate.baseline_expires,
            today: gate.today,
            store: store.path,
            cache: store.cache,
            store_max_bytes: store.max_bytes,
            shard,
            shard_quota,
            max_comments: scan
                .max_comments
                .unwrap_or(crate::report::review::DEFAULT_MAX_COMMENTS),
        })
    }
}

/// `--samples` (1 to 9, default 1) and `--quorum` (1 to the samples,
/// default a majority of them).
fn resolve_samples(samples: Option<u32>, quorum: Option<u32>) -> Result<(u32, u32), ConfigError> {
    let max = crate::stages::samples::MAX_SAMPLES;
    let n = samples.unwrap_or(1);
    if !(1..=max).contains(&n) {
        return Err(ConfigError::Samples { n, max });
    }
    let k = quorum.unwrap_or(n / 2 + 1);
    if !(1..=n).contains(&k) {
        return Err(ConfigError::Quorum { k, n });
    }
    Ok((n, k))
}

/// What is put to the auditors as leads to confirm or dismiss.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Leads {
    /// The rule engine's hits in each group's files.
    pub(crate) rules: bool,
    /// Other tools' results (`--leads FILE.sarif`), in the order given.
    pub(crate) sarif: Vec<PathBuf>,
    /// The rule engine's flows across files, into each group's files
    /// (with every provider; not with `off` nor in a triage).
    pub(crate) across: bool,
}

/// `--leads` as given: `off` (nothing), `rules` (the rule engine's hits),
/// a SARIF file (its results; repeatable). Without `off` or `rules`, the
/// rule engine's hits are leads of a model-backed scan; the offline engine
/// finds them itself; a triage judges its SARIF's results only.
fn resolve_leads(
    given: &[String],
    provider: ProviderKind,
    triage: bool,
) -> Result<Leads, ConfigError> {
    let off = given.iter().any(|g| g == "off");
    let files: Vec<PathBuf> = given
        .iter()
        .filter(|g| *g != "off" && *g != "rules")
        .map(PathBuf::from)
        .collect();
    if off && given.len() > 1 {
        return Err(ConfigError::LeadsOff);
    }
    if let Some(not_sarif) = files
        .iter()
        .find(|f| !f.extension().is_some_and(|e| e == "sarif" || e == "json"))
    {
        return Err(ConfigError::LeadsValue(not_sarif.display().to_string()));
    }
    Ok(Leads {
        rules: !off
            && (given.iter().any(|g| g == "rules")
                || (provider != ProviderKind::Offline && !triage)),
        sarif: files,
        across: !off && !triage,
    })
}

/// A review payload (github-review, gitlab-discussions) comments on the
/// lines a change touched: it needs `--since`, as the run's format or as
/// any `--output FORMAT=FILE`.
fn review_needs_since(
    format: Format,
    outputs: &Outputs,
    diff: Option<&DiffSource>,
) -> Result<(), ConfigError> {
    if matches!(diff, Some(DiffSource::Since(_))) {
        return Ok(());
    }
    let review = std::iter::once(format)
        .chain(outputs.extra.iter().map(|(f, _)| *f))
        .find(|f| matches!(f, Format::GithubReview | Format::GitlabDiscussions));
    match review {
        Some(Format::GitlabDiscussions) => Err(ConfigError::ReviewNeedsSince("gitlab-discussions")),
        Some(_) => Err(ConfigError::ReviewNeedsSince("github-review")),
        None => Ok(()),
    }
}

/// The command line's list if it has one, else the file's.
fn or_file(args: &[String], file: Option<Vec<String>>) -> Vec<String> {
    if args.is_empty() {
        file.unwrap_or_default()
    } else {
        args.to_vec()
    }
}

/// Where the configuration comes from: the diff scan that decides it, the
/// file, and how the manifest names it.
struct Source {
    diff: Option<DiffSource>,
    origin: ConfigOrigin,
    file: FileConfig,
    /// The file is the scanned repository's own (untrusted).
    from_repo: bool,
    described: String,
}

impl Source {
    /// The diff scan, then the config file from where that says
    /// (`--since`: the base ref), checked for keys a repository may not set.
    fn load(root: &Path, provider: &ProviderArgs, scan: &ScanArgs) -> Result<Self, ConfigError> {
        let diff = match (&scan.since, &scan.changed_files) {
            (Some(_), Some(_)) => return Err(ConfigError::SinceAndChangedFiles),
            (Some(r), None) if r.trim().is_empty() || r.starts_with('-') => {
                return Err(ConfigError::NotARef(r.clone()));
            }
            (Some(r), None) => Some(DiffSource::Since(r.trim().to_string())),
            (None, Some(p)) => Some(DiffSource::List(p.clone())),
            (None, None) => None,
        };
        let origin = match &diff {
            Some(DiffSource::Since(r)) if !scan.trust_worktree_config => {
                ConfigOrigin::BaseRef(r.clone())
            }
            Some(DiffSource::Since(_) | DiffSource::List(_)) | None => ConfigOrigin::Worktree,
        };
        let (file, from_repo) = load_file(root, provider.config.as_deref(), &origin)?;
        let described = match (&provider.config, from_repo) {
            (Some(p), _) => format!("--config {}", p.display()),
            (None, true) => format!("{} (fanscan.toml)", origin.describe()),
            (None, false) => "built-in defaults (no fanscan.toml)".to_string(),
        };
        if from_repo {
            for (key, set) in [
                ("base_url", file.base_url.is_some()),
                ("api_key_env", file.api_key_env.is_some()),
            ] {
                if set {
                    return Err(ConfigError::NotHonoured {
                        file: root.join("fanscan.toml"),
                        key,
                    });
                }
            }
        }
        Ok(Self {
            diff,
            origin,
            file,
            from_repo,
            described,
        })
    }

    /// The rules and price files: the command line's, else the file's,
    /// which a repository's own config may name only inside it.
    fn files(&self, root: &Path, provider: &ProviderArgs) -> Result<Files, ConfigError> {
        // At the base ref, the repository's rules file is read from there
        // too; only its name is checked here.
        let base_rules = match (&self.origin, self.from_repo, &self.file.rules) {
            (ConfigOrigin::BaseRef(_), true, Some(p)) => {
                let rel = p.to_string_lossy().replace('\\', "/");
                let rel = rel.trim_start_matches("./").to_string();
                if p.is_absolute() || rel.split('/').any(|c| c == "..") {
                    return Err(ConfigError::BaseRulesOutside {
                        origin: self.origin.describe(),
                        rel,
                    });
                }
                Some(rel)
            }
            _ => None,
        };
        let file_rules = if base_rules.is_some() {
            None
        } else {
            self.confine(root, "rules", self.file.rules.clone())?
        };
        let file_prices = self.confine(root, "prices", self.file.prices.clone())?;
        Ok(Files {
            rules: provider.rules.clone().or(file_rules),
            prices: provider.prices.clone().or(file_prices),
            base_rules,
        })
    }

    /// File paths in the repository's own config stay inside it: a
    /// repository must not make fanscan read (and echo in an error) files
    /// elsewhere on the machine.
    fn confine(
        &self,
        root: &Path,
        key: &'static str,
        path: Option<PathBuf>,
    ) -> Result<Option<PathBuf>, ConfigError> {
        match path {
            Some(p) if self.from_repo => {
                let root = root.canonicalize().map_err(|error| ConfigError::Root {
                    root: root.to_path_buf(),
                    error,
                })?;
                crate::tools::paths::resolve(&root, &p.to_string_lossy())
                    .map(|r| Some(r.real))
                    .map_err(|error| ConfigError::OutsideRepository {
                        file: root.join("fanscan.toml"),
                        key,
                        error,
                    })
            }
            other => Ok(other),
        }
    }
}

/// The rule and price files.
struct Files {
    rules: Option<PathBuf>,
    prices: Option<PathBuf>,
    base_rules: Option<String>,
}

/// Who answers, and with which key.
struct ProviderPart {
    kind: ProviderKind,
    model: String,
    base_url: String,
    api_key_env: String,
    api_key: Option<Secret>,
}

/// The provider, its model, URL and key; the key is read here, once.
fn resolve_provider(
    provider: &ProviderArgs,
    file: &FileConfig,
    env: &dyn Fn(&str) -> Option<String>,
    need_key: bool,
) -> Result<ProviderPart, ConfigError> {
    let kind = provider
        .provider
        .or(file.provider)
        .unwrap_or(ProviderKind::Offline);
    let (name, default_model, default_url, default_key) = match kind {
        ProviderKind::Offline => ("offline", "rules", "", ""),
        ProviderKind::Openai => (
            "openai",
            "gpt-4o-mini",
            "https://api.openai.com/v1",
            "OPENAI_API_KEY",
        ),
        ProviderKind::Anthropic => (
            "anthropic",
            "claude-sonnet-4-6",
            "https://api.anthropic.com",
            "ANTHROPIC_API_KEY",
        ),
    };
    let pick = |arg: &Option<String>, file: &Option<String>, default: &str| {
        arg.clone()
            .or_else(|| file.clone())
            .unwrap_or_else(|| default.to_string())
    };
    let model = pick(&provider.model, &file.model, default_model);
    let base_url = pick(&provider.base_url, &file.base_url, default_url);
    if kind != ProviderKind::Offline
        && !(base_url.starts_with("http://") || base_url.starts_with("https://"))
    {
        return Err(ConfigError::BaseUrl(base_url));
    }
    let api_key_env = pick(&provider.api_key_env, &file.api_key_env, default_key);
    let api_key = if api_key_env.is_empty() {
        None
    } else {
        env(&api_key_env)
            .filter(|k| !k.trim().is_empty())
            .map(|k| Secret(k.trim().to_string()))
    };
    // A local OpenAI-compatible server needs no key; the real APIs do.
    let local = base_url.contains("://127.0.0.1")
        || base_url.contains("://localhost")
        || base_url.contains("://[::1]");
    if need_key && kind != ProviderKind::Offline && api_key.is_none() && !local {
        return Err(ConfigError::NoApiKey {
            provider: name,
            env: api_key_env,
        });
    }
    Ok(ProviderPart {
        kind,
        model,
        base_url,
        api_key_env,
        api_key,
    })
}

/// `fallback_model` (flag, then file): a model of the run's provider.
fn resolve_fallback(
    provider: &ProviderArgs,
    file: &FileConfig,
    kind: ProviderKind,
) -> Result<Option<String>, ConfigError> {
    let Some(model) = provider
        .fallback_model
        .clone()
        .or_else(|| file.fallback_model.clone())
    else {
        return Ok(None);
    };
    if model.trim().is_empty() {
        return Err(ConfigError::FallbackEmpty);
    }
    if kind == ProviderKind::Offline {
        return Err(ConfigError::FallbackOffline);
    }
    Ok(Some(model.trim().to_string()))
}

/// How much a run may ask of the provider at once and per call.
struct Limits {
    timeout: Duration,
    max_output_tokens: u32,
    context_tokens: u64,
    rpm: u32,
    tpm: u64,
    max_attempts: u32,
    max_retry_wait: Duration,
    anthropic_version: String,
    retry_budget: u64,
    jobs: usize,
    group_tokens: u64,
}

/// A setting's value as an error names it: the flag it was given with
/// (`--jobs 0`), or the key of `fanscan.toml` it came from (`jobs = 0` in
/// fanscan.toml), so the user fixes the right place.
fn setting(by_flag: bool, flag: &str, key: &str, value: impl std::fmt::Display) -> String {
    if by_flag {
        format!("--{flag} {value}")
    } else {
        format!("`{key} = {value}` in fanscan.toml")
    }
}

/// Request limits, retries, concurrency and the size of a group.
fn resolve_limits(
    provider: &ProviderArgs,
    scan: &ScanArgs,
    file: &FileConfig,
) -> Result<Limits, ConfigError> {
    let jobs = scan.jobs.or(file.jobs).unwrap_or(8);
    if jobs == 0 {
        return Err(ConfigError::NoJobs(setting(
            scan.jobs.is_some(),
            "jobs",
            "jobs",
            jobs,
        )));
    }
    let group_tokens = scan.group_tokens.or(file.group_tokens).unwrap_or(24_000);
    if group_tokens < 100 {
        let given = setting(
            scan.group_tokens.is_some(),
            "group-tokens",
            "group_tokens",
            group_tokens,
        );
        return Err(ConfigError::GroupTokens(given));
    }
    let context_tokens = provider
        .context_tokens
        .or(file.context_tokens)
        .unwrap_or(64_000);
    if !(8_000..=100_000_000).contains(&context_tokens) {
        let given = setting(
            provider.context_tokens.is_some(),
            "context-tokens",
            "context_tokens",
            context_tokens,
        );
        return Err(ConfigError::ContextTokens(given));
    }
    let secs = |arg: Option<u64>, file: Option<u64>, default: u64| {
        Duration::from_secs(arg.or(file).unwrap_or(default))
    };
    Ok(Limits {
        timeout: secs(provider.timeout, file.timeout, 300).max(Duration::from_secs(1)),
        max_output_tokens: provider
            .max_output_tokens
            .or(file.max_output_tokens)
            .unwrap_or(4096)
            .max(256),
        context_tokens,
        rpm: provider.rpm.or(file.rpm).unwrap_or(0),
        tpm: provider.tpm.or(file.tpm).unwrap_or(0),
        max_attempts: provider
            .max_attempts
            .or(file.max_attempts)
            .unwrap_or(5)
            .max(1),
        max_retry_wait: secs(provider.max_retry_wait, file.max_retry_wait, 120),
        anthropic_version: provider
            .anthropic_version
            .clone()
            .or_else(|| file.anthropic_version.clone())
            .unwrap_or_else(|| crate::llm::providers::anthropic::DEFAULT_VERSION.to_string()),
        retry_budget: provider.retry_budget.or(file.retry_budget).unwrap_or(1000),
        jobs,
        group_tokens,
    })
}

/// When a run stops starting groups.
struct Budget {
    max_cost: Option<f64>,
    max_tokens: Option<u64>,
    max_duration: Option<Duration>,
}

/// `--max-cost`, `--max-tokens`, `--max-duration`.
fn resolve_budget(scan: &ScanArgs, file: &FileConfig) -> Result<Budget, ConfigError> {
    let max_duration = match scan.max_duration.clone().or(file.max_duration.clone()) {
        Some(text) => Some(parse_duration(&text).ok_or_else(|| {
            ConfigError::Duration(setting(
                scan.max_duration.is_some(),
                "max-duration",
                "max_duration",
                format!("{text:?}"),
            ))
        })?),
        None => None,
    };
    let max_cost = scan.max_cost.or(file.max_cost);
    if let Some(cost) = max_cost.filter(|c| !c.is_finite() || *c <= 0.0) {
        let given = setting(scan.max_cost.is_some(), "max-cost", "max_cost", cost);
        return Err(ConfigError::MaxCost(given));
    }
    Ok(Budget {
        max_cost,
        max_tokens: scan.max_tokens.or(file.max_tokens),
        max_duration,
    })
}

/// Under a shard of N: the shard's `rpm`, `tpm`, `max_cost` and
/// `max_tokens` (its configured value, else the run's divided by N) put in
/// place of the run's, and what was decided. Without this, N pods would
/// each take the organisation's whole rate limit and budget.
fn share_limits(
    args: &ShardArgs,
    file: &FileConfig,
    shard: Shard,
    limits: &mut Limits,
    budget: &mut Budget,
) -> Result<ShardQuota, ConfigError> {
    let table = file.shard.as_ref();
    // 0 is "unlimited" for rates: the same as no value.
    let rate = |v: u64| (v > 0).then_some(v);
    let configured = Quota {
        rpm: args.shard_rpm.or(table.and_then(|t| t.rpm)).map(u64::from),
        tpm: args.shard_tpm.or(table.and_then(|t| t.tpm)),
        max_cost: args.shard_max_cost.or(table.and_then(|t| t.max_cost)),
        max_tokens: args.shard_max_tokens.or(table.and_then(|t| t.max_tokens)),
    };
    if configured
        .max_cost
        .is_some_and(|c| !c.is_finite() || c <= 0.0)
    {
        return Err(ConfigError::ShardMaxCost);
    }
    let whole = Quota {
        rpm: rate(u64::from(limits.rpm)),
        tpm: rate(limits.tpm),
        max_cost: budget.max_cost,
        max_tokens: budget.max_tokens,
    };
    let quota = ShardQuota::of(whole, configured, shard.count);
    // A configured rate of 0 is unlimited, as for the run.
    limits.rpm = quota
        .rpm
        .per_shard
        .and_then(|v| u32::try_from(v).ok())
        .unwrap_or(0);
    limits.tpm = quota.tpm.per_shard.unwrap_or(0);
    budget.max_cost = quota.max_cost.per_shard;
    budget.max_tokens = quota.max_tokens.per_shard;
    Ok(quota)
}

/// Which agents audit the groups.
struct Agents {
    agent: String,
    forced: bool,
    globs: Vec<(String, String)>,
}

/// The run's agent (`--agent` forces it on every group) and the
/// `[agents]` table, each glob checked.
fn resolve_agents(scan: &ScanArgs, file: &FileConfig) -> Result<Agents, ConfigError> {
    let globs: Vec<(String, String)> = file
        .agents
        .clone()
        .unwrap_or_default()
        .into_iter()
        .collect();
    for (glob, agent) in &globs {
        if let Err(error) = globset::Glob::new(glob) {
            return Err(ConfigError::AgentGlob {
                glob: glob.clone(),
                error,
            });
        }
        if agent.trim().is_empty() {
            return Err(ConfigError::NoAgent { glob: glob.clone() });
        }
    }
    Ok(Agents {
        agent: scan
            .agent
            .clone()
            .or_else(|| file.agent.clone())
            .unwrap_or_else(|| "auditor".into()),
        forced: scan.agent.is_some(),
        globs,
    })
}

/// What fails the run, what the skeptic challenges, and the baselines.
struct Gate {
    policy: GatePolicy,
    challenge: FailOn,
    baseline: Option<PathBuf>,
    write_baseline: Option<PathBuf>,
    baseline_reason: Option<String>,
    baseline_expires: Option<jiff::civil::Date>,
    today: jiff::civil::Date,
}

/// The gate's options; the skeptic challenges from `--fail-on` unless
/// told otherwise. The run's date is read here, once.
fn resolve_gate(
    gate: &GateArgs,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Gate, ConfigError> {
    let policy = GatePolicy {
        fail_on: gate.fail_on.unwrap_or_default(),
        gate_unverified: gate.gate_unverified,
        strict: gate.strict,
    };
    let today = match env(TODAY_ENV) {
        Some(text) => parse_date(&text).ok_or(ConfigError::Today(text))?,
        None => jiff::Timestamp::now()
            .to_zoned(jiff::tz::TimeZone::UTC)
            .date(),
    };
    let baseline_expires = gate
        .expires_in
        .as_deref()
        .map(|text| expires_in(text, today))
        .transpose()?;
    Ok(Gate {
        policy,
        challenge: gate.challenge.unwrap_or(policy.fail_on),
        baseline: gate.baseline.clone(),
        write_baseline: gate.write_baseline.clone(),
        baseline_reason: gate.baseline_reason.clone(),
        baseline_expires,
        today,
    })
}

/// The variable that sets the run's date (tests, reproducing a run).
const TODAY_ENV: &str = "FANSCAN_TODAY";

/// A date in the plain ISO form `YYYY-MM-DD`, and no other.
fn parse_date(text: &str) -> Option<jiff::civil::Date> {
    let text = text.trim();
    text.parse::<jiff::civil::Date>()
        .ok()
        .filter(|d| d.to_string() == text)
}

/// The last day of `--expires-in` (`90d`, `12w`, `6mo`, `1y`) from `today`:
/// whole days, weeks, months or years, more than none.
fn expires_in(text: &str, today: jiff::civil::Date) -> Result<jiff::civil::Date, ConfigError> {
    let bad = || ConfigError::ExpiresIn(text.to_string());
    let span: jiff::Span = text.trim().parse().map_err(|_| bad())?;
    let clock = span.get_hours() != 0
        || span.get_minutes() != 0
        || span.get_seconds() != 0
        || span.get_milliseconds() != 0
        || span.get_microseconds() != 0
        || span.get_nanoseconds() != 0;
    if !span.is_positive() || clock {
        return Err(bad());
    }
    today.checked_add(span).map_err(|_| bad())
}

/// The run store.
struct Store {
    path: Option<PathBuf>,
    cache: bool,
    max_bytes: u64,
}

/// The store's file (none with `--no-store`), the cache, and its bound.
fn resolve_store(root: &Path, scan: &ScanArgs, file: &FileConfig) -> Store {
    Store {
        path: (!scan.no_store).then(|| {
            scan.store
                .clone()
                .unwrap_or_else(|| root.join(".fanscan").join("store.db"))
        }),
        cache: !scan.no_cache,
        max_bytes: scan
            .store_max_mb
            .or(file.store_max_mb)
            .unwrap_or(1024)
            .saturating_mul(1024 * 1024),
    }
}

/// The report's format from the command line (a shard's is JSON: `fanscan
/// merge` reads it) and its outputs: `--output` (plain or FORMAT=FILE), the
/// SARIF category and $GITHUB_STEP_SUMMARY, the one variable read here.
fn resolve_outputs(
    output: Option<&OutputArgs>,
    shard: Option<Shard>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(Option<Format>, Outputs), ConfigError> {
    let Some(output) = output else {
        return Ok((None, Outputs::default()));
    };
    let format = match (shard, output.format) {
        (Some(_), None | Some(Format::Json)) => Some(Format::Json),
        (Some(_), Some(other)) => {
            return Err(ConfigError::ShardFormat(
                format!("{other:?}").to_lowercase(),
            ));
        }
        (None, format) => format,
    };
    let step_summary = if output.no_step_summary {
        None
    } else {
        env("GITHUB_STEP_SUMMARY")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let mut outputs = Outputs {
        stdout: true,
        category: output.category.clone(),
        sarif_suppressed: output.sarif_suppressed.unwrap_or_default(),
        step_summary,
        ..Outputs::default()
    };
    for o in &output.output {
        // FORMAT=FILE when the part before the first `=` names a format,
        // else a plain file for --format.
        let split = o
            .split_once('=')
            .and_then(|(name, file)| Some((Format::from_name(name)?, file)));
        match split {
            Some((_, "")) => return Err(ConfigError::OutputNoFile(o.clone())),
            Some((format, file)) => outputs.extra.push((format, PathBuf::from(file))),
            None if outputs.plain.is_some() => {
                return Err(ConfigError::OutputTwoPlain(o.clone()));
            }
            None => outputs.plain = Some(PathBuf::from(o)),
        }
    }
    Ok((format, outputs))
}

/// The config file: `--config FILE`, else the repository's `fanscan.toml`
/// (from `origin`) if there is one. Returns whether it came from the
/// repository.
fn load_file(
    root: &Path,
    explicit: Option<&Path>,
    origin: &ConfigOrigin,
) -> Result<(FileConfig, bool), ConfigError> {
    let (path, text, from_repo) = match explicit {
        Some(p) => {
            let text = std::fs::read_to_string(p).map_err(|error| ConfigError::ReadFile {
                path: p.to_path_buf(),
                error,
            })?;
            (p.to_path_buf(), text, false)
        }
        None => {
            let text =
                origin
                    .read(root, "fanscan.toml")
                    .map_err(|error| ConfigError::ReadAtOrigin {
                        origin: origin.describe(),
                        error,
                    })?;
            let Some(text) = text else {
                return Ok((FileConfig::default(), false));
            };
            let path = match origin {
                ConfigOrigin::Worktree => root.join("fanscan.toml"),
                ConfigOrigin::BaseRef(r) => PathBuf::from(format!("{r}:fanscan.toml")),
            };
            (path, text, true)
        }
    };
    let file: FileConfig = toml::from_str(&text).map_err(|e| {
        let line = e
            .span()
            .map(|s| text.get(..s.start).unwrap_or(&text).matches('\n').count() + 1);
        ConfigError::Parse {
            place: match line {
                Some(l) => format!("{}:{l}", path.display()),
                None => path.display().to_string(),
            },
            message: e.message().to_string(),
        }
    })?;
    Ok((file, from_repo))
}

/// Parses `90s`, `20m`, `2h`, `1h30m` or a number of seconds.
pub(crate) fn parse_duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    // Whole seconds, or jiff's friendly form (`90s`, `20m`, `1h30m`,
    // `2 hours`) and ISO 8601 (`PT2H`); a negative span is no duration.
    let parsed = match text.parse::<u64>() {
        Ok(secs) => Some(Duration::from_secs(secs)),
        Err(_) => text
            .parse::<jiff::SignedDuration>()
            .ok()
            .and_then(|d| Duration::try_from(d).ok()),
    };
    // Zero would stop the run before it starts; a year is surely a typo.
    parsed.filter(|d| !d.is_zero() && *d <= Duration::from_secs(366 * 24 * 3600))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    /// Settings for `root` with no arguments and no environment.
    fn resolve_default(root: &Path) -> Result<Settings, ConfigError> {
        Settings::resolve(
            root,
            &ProviderArgs::default(),
            &ScanArgs::default(),
            None,
            &no_env,
        )
    }

    #[test]
    fn defaults_are_offline_and_need_no_key() {
        let dir = tempfile::tempdir().unwrap();
        let s = resolve_default(dir.path()).unwrap();
        assert_eq!(s.provider, ProviderKind::Offline);
        assert_eq!(s.jobs, 8);
        assert!(s.api_key.is_none());
    }

    #[test]
    fn command_line_wins_over_file_and_unknown_keys_fail_with_line() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("fanscan.toml"),
            "jobs = 3\ngroup_tokens = 5000\n",
        )
        .unwrap();
        let scan = ScanArgs {
            jobs: Some(5),
            ..ScanArgs::default()
        };
        let s =
            Settings::resolve(dir.path(), &ProviderArgs::default(), &scan, None, &no_env).unwrap();
        assert_eq!((s.jobs, s.group_tokens), (5, 5000));
        std::fs::write(dir.path().join("fanscan.toml"), "jobs = 3\njbos = 4\n").unwrap();
        let e = Settings::resolve(dir.path(), &ProviderArgs::default(), &scan, None, &no_env)
            .unwrap_err();
        assert!(e.to_string().contains("fanscan.toml:2:"), "{e}");
        assert!(e.to_string().contains("jbos"), "{e}");
    }

    #[test]
    fn repository_config_may_not_redirect_the_key() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("fanscan.toml"),
            "base_url = \"https://evil.example\"\n",
        )
        .unwrap();
        let e = resolve_default(dir.path()).unwrap_err();
        assert!(e.to_string().contains("not honoured"), "{e}");
    }

    #[test]
    fn repository_config_may_not_name_files_outside_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("fanscan.toml"),
            "rules = \"/proc/self/environ\"\n",
        )
        .unwrap();
        let e = resolve_default(dir.path()).unwrap_err();
        assert!(
            e.to_string().contains("may only name files inside it"),
            "{e}"
        );
        std::fs::write(dir.path().join("rules.toml"), "").unwrap();
        std::fs::write(dir.path().join("fanscan.toml"), "rules = \"rules.toml\"\n").unwrap();
        let s = resolve_default(dir.path()).unwrap();
        assert!(s.rules.unwrap().ends_with("rules.toml"));
    }

    #[test]
    fn remote_providers_need_a_key_local_ones_do_not() {
        let dir = tempfile::tempdir().unwrap();
        let remote = ProviderArgs {
            provider: Some(ProviderKind::Openai),
            ..ProviderArgs::default()
        };
        let e = Settings::resolve(dir.path(), &remote, &ScanArgs::default(), None, &no_env)
            .unwrap_err();
        assert!(e.to_string().contains("$OPENAI_API_KEY"), "{e}");
        let local = ProviderArgs {
            base_url: Some("http://127.0.0.1:8080/v1".into()),
            ..remote.clone()
        };
        assert!(Settings::resolve(dir.path(), &local, &ScanArgs::default(), None, &no_env).is_ok());
        // Work that calls no model (`fanscan plan`) needs no key.
        let planning = RunArgs {
            provider: remote.clone(),
            no_key_needed: true,
            ..RunArgs::default()
        };
        let s = Settings::from_args(dir.path(), &planning, &no_env).unwrap();
        assert!(s.api_key.is_none());
        let env = |k: &str| (k == "OPENAI_API_KEY").then(|| "sk-test".to_string());
        let s = Settings::resolve(dir.path(), &remote, &ScanArgs::default(), None, &env).unwrap();
        assert_eq!(s.api_key.as_ref().map(Secret::expose), Some("sk-test"));
        assert!(!format!("{s:?}").contains("sk-test"));
    }

    #[test]
    fn include_vendored_from_the_command_line_or_the_file() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!resolve_default(dir.path()).unwrap().include_vendored);
        let scan = ScanArgs {
            include_vendored: true,
            ..ScanArgs::default()
        };
        let s =
            Settings::resolve(dir.path(), &ProviderArgs::default(), &scan, None, &no_env).unwrap();
        assert!(s.include_vendored);
        std::fs::write(dir.path().join("fanscan.toml"), "include_vendored = true\n").unwrap();
        assert!(resolve_default(dir.path()).unwrap().include_vendored);
    }

    #[test]
    fn outputs_split_plain_and_format_files_and_name_the_bad_one() {
        let dir = tempfile::tempdir().unwrap();
        let with = |output: &[&str]| {
            let args = RunArgs {
                output: Some(OutputArgs {
                    output: output.iter().map(|o| o.to_string()).collect(),
                    ..OutputArgs::default()
                }),
                ..RunArgs::default()
            };
            Settings::from_args(dir.path(), &args, &no_env)
        };
        let s = with(&["report.txt", "sarif=out.sarif", "md=r.md"]).unwrap();
        let outputs = s.outputs();
        assert!(outputs.stdout());
        assert_eq!(outputs.plain(), Some(Path::new("report.txt")));
        assert_eq!(
            outputs.extra(),
            [
                (Format::Sarif, PathBuf::from("out.sarif")),
                (Format::Md, PathBuf::from("r.md"))
            ]
        );
        let e = with(&["json="]).unwrap_err().to_string();
        assert_eq!(e, "--output json=: no file after '='; write FORMAT=FILE");
        let e = with(&["a.txt", "b.txt"]).unwrap_err().to_string();
        assert!(
            e.starts_with("--output b.txt: only one --output may omit its format"),
            "{e}"
        );
    }

    #[test]
    fn a_shard_writes_json_and_refuses_another_format() {
        let dir = tempfile::tempdir().unwrap();
        let sharded = |format: Option<Format>| RunArgs {
            shard: ShardArgs {
                shard: Some(Shard::parse("1/2").unwrap()),
                ..ShardArgs::default()
            },
            output: Some(OutputArgs {
                format,
                ..OutputArgs::default()
            }),
            ..RunArgs::default()
        };
        let s = Settings::from_args(dir.path(), &sharded(None), &no_env).unwrap();
        assert_eq!((s.format(), s.shard.is_some()), (Format::Json, true));
        let e = Settings::from_args(dir.path(), &sharded(Some(Format::Md)), &no_env)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("--format md with --shard: a shard writes"),
            "{e}"
        );
    }

    #[test]
    fn a_shard_takes_its_share_of_the_run_s_limits_unless_configured_per_shard() {
        use crate::stages::plan::shard::ShareKind;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("fanscan.toml"),
            "rpm = 600\ntpm = 100000\nmax_cost = 20.0\nmax_tokens = 3000001\n",
        )
        .unwrap();
        let args = |shard: ShardArgs| RunArgs {
            shard,
            ..RunArgs::default()
        };
        let sharded = |extra: ShardArgs| {
            args(ShardArgs {
                shard: Some(Shard::parse("2/4").unwrap()),
                ..extra
            })
        };
        // Unsharded: the run's own values.
        let s = Settings::from_args(dir.path(), &args(ShardArgs::default()), &no_env).unwrap();
        assert_eq!(
            (s.rpm, s.tpm, s.max_cost, s.max_tokens),
            (600, 100_000, Some(20.0), Some(3_000_001))
        );
        assert!(s.shard_quota.is_none());
        // Shard 2 of 4: a quarter of each, rounded down.
        let s = Settings::from_args(dir.path(), &sharded(ShardArgs::default()), &no_env).unwrap();
        assert_eq!(
            (s.rpm, s.tpm, s.max_cost, s.max_tokens),
            (150, 25_000, Some(5.0), Some(750_000))
        );
        let q = s.shard_quota.unwrap();
        assert_eq!(
            (q.shards, q.rpm.whole, q.rpm.how),
            (4, Some(600), ShareKind::Split)
        );
        // From the Job's index, the same.
        let env = |k: &str| (k == "JOB_COMPLETION_INDEX").then(|| "1".to_string());
        let from_env = args(ShardArgs {
            shard_from_env: true,
            shard_count: Some(4),
            ..ShardArgs::default()
        });
        let s = Settings::from_args(dir.path(), &from_env, &env).unwrap();
        assert_eq!((s.rpm, s.max_cost), (150, Some(5.0)));
        // `[shard]` values are each shard's own; a flag wins over them.
        std::fs::write(
            dir.path().join("fanscan.toml"),
            "rpm = 600\ntpm = 100000\nmax_cost = 20.0\n[shard]\nrpm = 200\nmax_cost = 6.0\n",
        )
        .unwrap();
        let s = Settings::from_args(
            dir.path(),
            &sharded(ShardArgs {
                shard_max_cost: Some(4.5),
                shard_max_tokens: Some(9),
                ..ShardArgs::default()
            }),
            &no_env,
        )
        .unwrap();
        assert_eq!(
            (s.rpm, s.tpm, s.max_cost, s.max_tokens),
            (200, 25_000, Some(4.5), Some(9))
        );
        let q = s.shard_quota.unwrap();
        assert_eq!(
            (q.rpm.how, q.tpm.how, q.max_cost.how),
            (
                ShareKind::Configured,
                ShareKind::Split,
                ShareKind::Configured
            )
        );
        assert_eq!(
            (q.max_tokens.whole, q.max_tokens.how),
            (None, ShareKind::Configured)
        );
        // Unsharded, `[shard]` is unused.
        let s = Settings::from_args(dir.path(), &args(ShardArgs::default()), &no_env).unwrap();
        assert_eq!((s.rpm, s.max_cost), (600, Some(20.0)));
        let e = Settings::from_args(
            dir.path(),
            &sharded(ShardArgs {
                shard_max_cost: Some(0.0),
                ..ShardArgs::default()
            }),
            &no_env,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("--shard-max-cost (or `[shard] max_cost`) must be a positive"),
            "{e}"
        );
        // The example's `[shard]` table parses.
        let example = include_str!("../configs/fanscan.example.toml");
        let table: String = example
            .lines()
            .skip_while(|l| *l != "# [shard]")
            .take(5)
            .map(|l| format!("{}\n", l.trim_start_matches("# ")))
            .collect();
        let file: FileConfig = toml::from_str(&table).unwrap();
        assert_eq!(file.shard.unwrap().rpm, Some(100));
    }

    #[test]
    fn sarif_output_and_what_it_does_with_suppressed_findings() {
        let dir = tempfile::tempdir().unwrap();
        let with = |format: Option<Format>, output: &[&str], mode: Option<SarifSuppressed>| {
            let args = RunArgs {
                output: Some(OutputArgs {
                    format,
                    output: output.iter().map(|o| o.to_string()).collect(),
                    sarif_suppressed: mode,
                    ..OutputArgs::default()
                }),
                ..RunArgs::default()
            };
            Settings::from_args(dir.path(), &args, &no_env).unwrap()
        };
        let s = with(Some(Format::Sarif), &[], None);
        assert!(s.outputs().writes(Format::Sarif, s.format()));
        assert_eq!(s.outputs().sarif_suppressed(), SarifSuppressed::Omit);
        let s = with(None, &["sarif=x.sarif"], Some(SarifSuppressed::Keep));
        assert!(s.outputs().writes(Format::Sarif, s.format()));
        assert_eq!(s.outputs().sarif_suppressed(), SarifSuppressed::Keep);
        let s = with(None, &["md=x.md"], None);
        assert!(!s.outputs().writes(Format::Sarif, s.format()));
    }

    #[test]
    fn the_step_summary_comes_from_env_unless_turned_off() {
        let dir = tempfile::tempdir().unwrap();
        let env = |k: &str| (k == "GITHUB_STEP_SUMMARY").then(|| "/tmp/summary.md".to_string());
        let mut args = RunArgs {
            output: Some(OutputArgs::default()),
            ..RunArgs::default()
        };
        let s = Settings::from_args(dir.path(), &args, &env).unwrap();
        assert_eq!(
            s.outputs().step_summary(),
            Some(Path::new("/tmp/summary.md"))
        );
        args.output = Some(OutputArgs {
            no_step_summary: true,
            ..OutputArgs::default()
        });
        let s = Settings::from_args(dir.path(), &args, &env).unwrap();
        assert_eq!(s.outputs().step_summary(), None);
        // A command that writes no report writes no job summary either.
        args.output = None;
        let s = Settings::from_args(dir.path(), &args, &env).unwrap();
        assert!(!s.outputs().stdout());
        assert_eq!(s.outputs().step_summary(), None);
    }

    #[test]
    fn the_gate_is_resolved_with_the_rest_and_challenges_from_fail_on() {
        let dir = tempfile::tempdir().unwrap();
        let args = RunArgs {
            gate: GateArgs {
                fail_on: Some(FailOn::Medium),
                write_baseline: Some(PathBuf::from("b.json")),
                baseline_reason: Some("accepted".into()),
                ..GateArgs::default()
            },
            ..RunArgs::default()
        };
        let s = Settings::from_args(dir.path(), &args, &no_env).unwrap();
        assert_eq!(
            (s.gate.fail_on, s.challenge),
            (FailOn::Medium, FailOn::Medium)
        );
        assert_eq!(s.write_baseline(), Some(Path::new("b.json")));
        assert_eq!(s.baseline_reason(), Some("accepted"));
        assert_eq!(s.baseline_expires(), None);
        let default = resolve_default(dir.path()).unwrap();
        assert_eq!(default.gate, GatePolicy::default());
        assert_eq!(default.challenge, GatePolicy::default().fail_on);
    }

    #[test]
    fn batch_needs_a_remote_provider_and_a_sane_poll() {
        let dir = tempfile::tempdir().unwrap();
        let resolve = |kind: ProviderKind, poll: Option<f64>| {
            let provider = ProviderArgs {
                provider: Some(kind),
                base_url: Some("http://127.0.0.1:9/v1".into()),
                model: Some("m".into()),
                ..ProviderArgs::default()
            };
            let scan = ScanArgs {
                batch: true,
                batch_poll: poll,
                ..ScanArgs::default()
            };
            Settings::resolve(dir.path(), &provider, &scan, None, &|_| None)
        };
        let s = resolve(ProviderKind::Openai, None).unwrap();
        assert_eq!(s.batch.map(|b| b.poll_max), Some(Duration::from_secs(60)));
        let s = resolve(ProviderKind::Anthropic, Some(0.5)).unwrap();
        assert_eq!(
            s.batch.map(|b| b.poll_max),
            Some(Duration::from_millis(500))
        );
        let e = resolve(ProviderKind::Offline, None)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("--batch sends the model calls"), "{e}");
        let e = resolve(ProviderKind::Openai, Some(0.0))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("--batch-poll 0 is not"), "{e}");
        // `batch = true` in the file turns it on too.
        std::fs::write(
            dir.path().join("fanscan.toml"),
            "batch = true\nbatch_poll = 5\n",
        )
        .unwrap();
        let provider = ProviderArgs {
            provider: Some(ProviderKind::Openai),
            base_url: Some("http://127.0.0.1:9/v1".into()),
            ..ProviderArgs::default()
        };
        let s = Settings::resolve(dir.path(), &provider, &ScanArgs::default(), None, &|_| None)
            .unwrap();
        assert_eq!(s.batch.map(|b| b.poll_max), Some(Duration::from_secs(5)));
    }

    #[test]
    fn the_example_config_parses() {
        let text = include_str!("../configs/fanscan.example.toml");
        let file: FileConfig = toml::from_str(text).unwrap();
        assert_eq!(file.jobs, Some(8));
        // Its commented `batch` keys parse too.
        let batch: String = text
            .lines()
            .filter(|l| l.starts_with("# batch"))
            .map(|l| format!("{}\n", l.trim_start_matches("# ")))
            .collect();
        let file: FileConfig = toml::from_str(&batch).unwrap();
        assert_eq!((file.batch, file.batch_poll), (Some(true), Some(60.0)));
    }

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration("90"), Some(Duration::from_secs(90)));
        assert_eq!(parse_duration("20m"), Some(Duration::from_secs(1200)));
        assert_eq!(parse_duration("1h30m"), Some(Duration::from_secs(5400)));
        assert_eq!(parse_duration("soon"), None);
        assert_eq!(parse_duration("0"), None);
        assert_eq!(parse_duration("99999999999999999999999h"), None);
        assert_eq!(parse_duration("2 hours"), Some(Duration::from_secs(7200)));
        assert_eq!(parse_duration("PT1M"), Some(Duration::from_secs(60)));
        assert_eq!(parse_duration("1.5s"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_duration("-5s"), None);
        assert_eq!(parse_duration(""), None);
    }

    #[test]
    fn the_runs_date_is_read_once_and_expires_in_counts_from_it() {
        let dir = tempfile::tempdir().unwrap();
        let with = |expires_in: Option<&str>, today: Option<&str>| {
            let args = RunArgs {
                gate: GateArgs {
                    expires_in: expires_in.map(str::to_string),
                    ..GateArgs::default()
                },
                ..RunArgs::default()
            };
            let today = today.map(str::to_string);
            let env = move |name: &str| (name == TODAY_ENV).then(|| today.clone()).flatten();
            Settings::from_args(dir.path(), &args, &env)
        };
        let s = with(Some("90d"), Some("2026-01-15")).unwrap();
        assert_eq!(s.today(), jiff::civil::date(2026, 1, 15));
        assert_eq!(s.baseline_expires(), Some(jiff::civil::date(2026, 4, 15)));
        for (span, last) in [
            ("2w", (2026, 1, 29)),
            ("6mo", (2026, 7, 15)),
            ("1y", (2027, 1, 15)),
        ] {
            let s = with(Some(span), Some("2026-01-15")).unwrap();
            assert_eq!(
                s.baseline_expires(),
                Some(jiff::civil::date(last.0, last.1, last.2)),
                "{span}"
            );
        }
        for bad in ["banana", "-5d", "0d", "3h", ""] {
            let e = with(Some(bad), Some("2026-01-15")).unwrap_err().to_string();
            assert!(
                e.starts_with("--expires-in") && e.contains("90d"),
                "{bad}: {e}"
            );
        }
        let e = with(None, Some("2026-13-45")).unwrap_err().to_string();
        assert!(
            e.contains("FANSCAN_TODAY") && e.contains("YYYY-MM-DD"),
            "{e}"
        );
        // Without the variable, the clock's date.
        assert!(with(None, None).unwrap().today() >= jiff::civil::date(2026, 1, 1));
    }
}
