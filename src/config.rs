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

use clap::{Args, ValueEnum};
use serde::Deserialize;

use crate::gate::{FailOn, GatePolicy};
use crate::git::ConfigOrigin;
use crate::plan::shard::{Shard, ShardError};
use crate::report::Format;

/// Which wire format answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Deserialize)]
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PlannerKind {
    /// Deterministic packing by directory under the token budget.
    Pack,
    /// The planner agent, validated and repaired.
    Llm,
}

/// Provider options shared by every command that may call a model.
#[derive(Args, Clone, Debug, Default)]
pub struct ProviderArgs {
    /// The provider: offline (default, no key, no network), openai, anthropic.
    #[arg(long, value_enum)]
    pub provider: Option<ProviderKind>,
    /// The model name (e.g. gpt-4o-mini, claude-sonnet-4-6).
    #[arg(long)]
    pub model: Option<String>,
    /// The API root, e.g. http://127.0.0.1:11434/v1 for Ollama.
    #[arg(long)]
    pub base_url: Option<String>,
    /// The environment variable holding the API key.
    #[arg(long)]
    pub api_key_env: Option<String>,
    /// A fanscan.toml to use instead of the repository's own.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Seconds one model request may take.
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<u64>,
    /// Most output tokens per model call.
    #[arg(long, value_name = "N")]
    pub max_output_tokens: Option<u32>,
    /// The model's context window in tokens (the reducer batches its input
    /// to fit it; an agent file's `context_tokens` overrides it). Default 64000.
    #[arg(long, value_name = "N")]
    pub context_tokens: Option<u64>,
    /// A rule file for the offline engine instead of the built-in one.
    #[arg(long, value_name = "FILE")]
    pub rules: Option<PathBuf>,
    /// Requests per minute across all agents (0: unlimited). Spread evenly.
    #[arg(long, value_name = "N")]
    pub rpm: Option<u32>,
    /// Tokens per minute across all agents (0: unlimited).
    #[arg(long, value_name = "N")]
    pub tpm: Option<u64>,
    /// Attempts per model call, the first included.
    #[arg(long, value_name = "N")]
    pub max_attempts: Option<u32>,
    /// Longest server-requested wait (retry-after) honoured, in seconds.
    #[arg(long, value_name = "SECS")]
    pub max_retry_wait: Option<u64>,
    /// The anthropic-version header.
    #[arg(long, value_name = "VERSION")]
    pub anthropic_version: Option<String>,
    /// Retries allowed in the whole run, across all agents.
    #[arg(long, value_name = "N")]
    pub retry_budget: Option<u64>,
    /// A price table instead of the built-in configs/prices.toml.
    #[arg(long, value_name = "FILE")]
    pub prices: Option<PathBuf>,
}

/// Which share of the plan a `scan` runs (`--shard K/N`, or a Kubernetes
/// Indexed Job's `$JOB_COMPLETION_INDEX` with `--shard-from-env`).
#[derive(Args, Clone, Debug, Default)]
pub struct ShardArgs {
    /// Run only shard K of N (counted from 1) of the plan's groups and
    /// write a partial JSON report for `fanscan merge`.
    #[arg(long, value_name = "K/N", value_parser = Shard::parse, conflicts_with = "shard_from_env")]
    pub shard: Option<Shard>,
    /// Take the shard from $JOB_COMPLETION_INDEX (0-based, set by a
    /// Kubernetes Indexed Job): shard index+1 of --shard-count.
    #[arg(long, requires = "shard_count")]
    pub shard_from_env: bool,
    /// N for --shard-from-env: the Job's `completions`.
    #[arg(long, value_name = "N", requires = "shard_from_env")]
    pub shard_count: Option<usize>,
}

impl ShardArgs {
    /// The shard to run, if any; `env` looks up `JOB_COMPLETION_INDEX`.
    pub fn resolve(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<Shard>, ShardError> {
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
#[derive(Args, Clone, Debug, Default)]
pub struct ScanArgs {
    /// Only files matching this glob (repeatable).
    #[arg(long, value_name = "GLOB")]
    pub include: Vec<String>,
    /// Leave out files matching this glob (repeatable).
    #[arg(long, value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// Skip hidden files and directories (by default they are audited).
    #[arg(long)]
    pub no_hidden: bool,
    /// Files larger than this many bytes are skipped.
    #[arg(long, value_name = "BYTES")]
    pub max_file_bytes: Option<u64>,
    /// Audit vendored and generated files too. By default they are skipped
    /// and listed with their reason, as GitHub Linguist decides: its
    /// well-known paths and names (vendor/, third_party/, node_modules/,
    /// jquery-*.js, minified bundles, *.pb.go, ...) and the
    /// linguist-vendored / linguist-generated attributes in .gitattributes.
    /// Dependency lock files stay skipped even then; a
    /// `Cargo.lock -linguist-generated` line in .gitattributes audits one.
    #[arg(long)]
    pub include_vendored: bool,
    /// The planner.
    #[arg(long, value_enum)]
    pub planner: Option<PlannerKind>,
    /// Estimated tokens of file content per group.
    #[arg(long, value_name = "N")]
    pub group_tokens: Option<u64>,
    /// The most groups a plan may have (0: no cap).
    #[arg(long, value_name = "N")]
    pub max_groups: Option<usize>,
    /// Sub-agents in flight at once.
    #[arg(long, short = 'j', value_name = "N")]
    pub jobs: Option<usize>,
    /// The agent that audits each group.
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
    /// Stop starting groups once the estimated cost reaches this many US dollars.
    #[arg(long, value_name = "USD")]
    pub max_cost: Option<f64>,
    /// Stop starting groups once this many tokens were used.
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u64>,
    /// Stop starting groups after this long (e.g. 90s, 20m, 2h).
    #[arg(long, value_name = "DURATION")]
    pub max_duration: Option<String>,
    /// The run store (cache, resume, history). Default .fanscan/store.db
    /// under the scanned root.
    #[arg(long, value_name = "PATH")]
    pub store: Option<PathBuf>,
    /// Run without the run store: no cache, no resume, no history.
    #[arg(long, conflicts_with = "store")]
    pub no_store: bool,
    /// Ask the model for every group, even those whose result is stored
    /// (the fresh results are stored).
    #[arg(long)]
    pub no_cache: bool,
    /// Bound the stored results to this many MB, least recently used
    /// dropped first (0: no bound). Default 1024.
    #[arg(long, value_name = "MB")]
    pub store_max_mb: Option<u64>,
    /// A diff scan: plan only the groups holding files changed since the
    /// merge base of REF and HEAD (`git diff --merge-base REF`: commits and
    /// uncommitted edits; renames followed, deletions listed). The agents
    /// may still read other files for context. fanscan.toml, the rules and
    /// .fanscan/agents/ are read from REF, so the change cannot steer its
    /// own review.
    #[arg(long, value_name = "REF", conflicts_with = "changed_files")]
    pub since: Option<String>,
    /// A diff scan over the files listed in FILE (one path a line), for CI
    /// systems that provide the list. Configuration is read from the
    /// working tree.
    #[arg(long, value_name = "FILE")]
    pub changed_files: Option<PathBuf>,
    /// With --since, read fanscan.toml, the rules and .fanscan/agents/
    /// from the working tree (for pipelines whose changes are trusted).
    #[arg(long)]
    pub trust_worktree_config: bool,
    /// With --format github-review or gitlab-discussions: at most N
    /// comments on the changed lines, the most severe first (the rest are
    /// listed in the review's body). Default 25.
    #[arg(long, value_name = "N")]
    pub max_comments: Option<usize>,
}

/// The gate's options (`scan` only).
#[derive(Args, Clone, Debug, Default)]
pub struct GateArgs {
    /// Fail the run (exit code 4) when a verified finding at or above this
    /// severity remains that is neither baselined nor suppressed. `never`
    /// reports only. Default: high.
    #[arg(long, value_enum, value_name = "SEVERITY")]
    pub fail_on: Option<FailOn>,
    /// Unverified findings count for --fail-on too.
    #[arg(long)]
    pub gate_unverified: bool,
    /// Before the gate, a skeptic agent tries to refute each verified
    /// finding at or above this severity (and each located claim): refuted
    /// findings leave the gate, listed apart with the skeptic's reason. `never`
    /// skips the stage. Default: the --fail-on severity.
    #[arg(long, value_enum, value_name = "SEVERITY")]
    pub challenge: Option<FailOn>,
    /// A doubtful review makes the run incomplete (exit 3): a group whose
    /// agent made claims of which none was verified (code that is not at
    /// the cited place, files that do not exist) was not reviewed cleanly.
    /// Without it such groups are reported as doubtful and the run passes.
    #[arg(long)]
    pub strict: bool,
    /// A baseline (see `fanscan baseline`): its findings stay out of the
    /// gate and are listed apart.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Write this run's open and baselined findings as a baseline to FILE.
    #[arg(long, value_name = "FILE")]
    pub write_baseline: Option<PathBuf>,
    /// The reason recorded for new entries of --write-baseline.
    #[arg(long, value_name = "TEXT", requires = "write_baseline")]
    pub baseline_reason: Option<String>,
}

/// Where a diff scan's changed files come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DiffSource {
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
}

/// Everything a run needs, validated.
#[derive(Clone, Debug)]
pub struct Settings {
    pub root: PathBuf,
    pub provider: ProviderKind,
    pub model: String,
    pub base_url: String,
    pub api_key_env: String,
    /// The key, read once here; never printed.
    pub api_key: Option<Secret>,
    pub timeout: Duration,
    pub max_output_tokens: u32,
    /// The model's context window, in tokens.
    pub context_tokens: u64,
    pub rules: Option<PathBuf>,
    pub rpm: u32,
    pub tpm: u64,
    pub max_attempts: u32,
    pub max_retry_wait: Duration,
    pub anthropic_version: String,
    pub retry_budget: u64,
    pub prices: Option<PathBuf>,
    pub include: Vec<String>,
    pub exclude: Vec<String>,
    pub hidden: bool,
    pub max_file_bytes: u64,
    /// Audit vendored and generated files (lock files excepted).
    pub include_vendored: bool,
    pub planner: PlannerKind,
    pub group_tokens: u64,
    pub max_groups: usize,
    pub jobs: usize,
    pub agent: String,
    /// `--agent` was given: it audits every group, whatever the plan says.
    pub agent_forced: bool,
    /// The `[agents]` table: (glob, agent), sorted by glob; each glob
    /// compiles.
    pub agent_globs: Vec<(String, String)>,
    pub max_cost: Option<f64>,
    pub max_tokens: Option<u64>,
    pub max_duration: Option<Duration>,
    pub format: Format,
    /// A diff scan, and over what.
    pub diff: Option<DiffSource>,
    /// Where the repository's fanscan.toml, rules and agents are read from.
    pub config_origin: ConfigOrigin,
    /// Where the config file came from, for the manifest.
    pub config_source: String,
    /// A rules file named by the repository's fanscan.toml at the base ref
    /// (repository-relative), read from there.
    pub base_rules: Option<String>,
    /// What fails the gate.
    pub gate: GatePolicy,
    /// The lowest severity the skeptic challenges (`--challenge`), or
    /// `never`.
    pub challenge: FailOn,
    pub baseline: Option<PathBuf>,
    pub write_baseline: Option<PathBuf>,
    pub baseline_reason: Option<String>,
    /// The run store's file; none with --no-store.
    pub store: Option<PathBuf>,
    /// Reuse stored results (false with --no-cache).
    pub cache: bool,
    /// Bound of the stored results in bytes (0: none).
    pub store_max_bytes: u64,
    /// Run only this shard of the plan (`--shard`); set by the caller
    /// after resolving, from [`ShardArgs`].
    pub shard: Option<Shard>,
    /// Most review comments (`--max-comments`).
    pub max_comments: usize,
}

/// An API key. Its `Debug` never shows it, so no log or error can.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// The key itself, for the one header that carries it.
    pub fn expose(&self) -> &str {
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
#[error("{0}")]
pub struct ConfigError(pub String);

impl Settings {
    /// Merges the command line over the config file over the defaults.
    /// `env` looks up environment variables (passed in: tests give their
    /// own, nothing reads the process environment behind the caller's back).
    pub fn resolve(
        root: &Path,
        provider: &ProviderArgs,
        scan: &ScanArgs,
        format: Option<Format>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        Self::resolve_with(root, provider, scan, format, env, true)
    }

    /// As [`Settings::resolve`], for work that calls no model (`fanscan plan
    /// --estimate`): a remote provider needs no API key.
    pub fn resolve_without_key(
        root: &Path,
        provider: &ProviderArgs,
        scan: &ScanArgs,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        Self::resolve_with(root, provider, scan, None, env, false)
    }

    fn resolve_with(
        root: &Path,
        provider: &ProviderArgs,
        scan: &ScanArgs,
        format: Option<Format>,
        env: &dyn Fn(&str) -> Option<String>,
        need_key: bool,
    ) -> Result<Self, ConfigError> {
        let diff = match (&scan.since, &scan.changed_files) {
            (Some(_), Some(_)) => {
                return Err(ConfigError(
                    "--since and --changed-files both name the changed files; give one".into(),
                ));
            }
            (Some(r), None) if r.trim().is_empty() || r.starts_with('-') => {
                return Err(ConfigError(format!(
                    "--since {r:?} is not a git ref; give e.g. origin/main"
                )));
            }
            (Some(r), None) => Some(DiffSource::Since(r.trim().to_string())),
            (None, Some(p)) => Some(DiffSource::List(p.clone())),
            (None, None) => None,
        };
        let config_origin = match &diff {
            Some(DiffSource::Since(r)) if !scan.trust_worktree_config => {
                ConfigOrigin::BaseRef(r.clone())
            }
            Some(DiffSource::Since(_) | DiffSource::List(_)) | None => ConfigOrigin::Worktree,
        };
        let (file, from_repo) = load_file(root, provider.config.as_deref(), &config_origin)?;
        let config_source = match (&provider.config, from_repo) {
            (Some(p), _) => format!("--config {}", p.display()),
            (None, true) => format!("{} (fanscan.toml)", config_origin.describe()),
            (None, false) => "built-in defaults (no fanscan.toml)".to_string(),
        };
        if from_repo {
            for (key, set) in [
                ("base_url", file.base_url.is_some()),
                ("api_key_env", file.api_key_env.is_some()),
            ] {
                if set {
                    return Err(ConfigError(format!(
                        "{}: `{key}` is not honoured in the scanned repository's own fanscan.toml (a repository could send your API key elsewhere); pass --{} or use --config FILE",
                        root.join("fanscan.toml").display(),
                        key.replace('_', "-")
                    )));
                }
            }
        }
        // File paths in the repository's own config stay inside it: a
        // repository must not make fanscan read (and echo in an error)
        // files elsewhere on the machine.
        let confine = |key: &str, path: Option<PathBuf>| -> Result<Option<PathBuf>, ConfigError> {
            match path {
                Some(p) if from_repo => {
                    let root = root
                        .canonicalize()
                        .map_err(|e| ConfigError(format!("{}: {e}", root.display())))?;
                    crate::tools::paths::resolve(&root, &p.to_string_lossy())
                        .map(|r| Some(r.real))
                        .map_err(|e| {
                            ConfigError(format!(
                                "{}: `{key}`: {e}; a repository's own fanscan.toml may only name files inside it",
                                root.join("fanscan.toml").display()
                            ))
                        })
                }
                other => Ok(other),
            }
        };
        // At the base ref, the repository's rules file is read from there
        // too; only its name is checked here.
        let base_rules = match (&config_origin, from_repo, &file.rules) {
            (ConfigOrigin::BaseRef(_), true, Some(p)) => {
                let rel = p.to_string_lossy().replace('\\', "/");
                let rel = rel.trim_start_matches("./").to_string();
                if p.is_absolute() || rel.split('/').any(|c| c == "..") {
                    return Err(ConfigError(format!(
                        "fanscan.toml at {}: `rules`: {rel:?} is outside the repository; a repository's own fanscan.toml may only name files inside it",
                        config_origin.describe()
                    )));
                }
                Some(rel)
            }
            _ => None,
        };
        let file_rules = if base_rules.is_some() {
            None
        } else {
            confine("rules", file.rules.clone())?
        };
        let file_prices = confine("prices", file.prices.clone())?;
        let kind = provider
            .provider
            .or(file.provider)
            .unwrap_or(ProviderKind::Offline);
        let (default_model, default_url, default_key) = match kind {
            ProviderKind::Offline => ("rules", "", ""),
            ProviderKind::Openai => ("gpt-4o-mini", "https://api.openai.com/v1", "OPENAI_API_KEY"),
            ProviderKind::Anthropic => (
                "claude-sonnet-4-6",
                "https://api.anthropic.com",
                "ANTHROPIC_API_KEY",
            ),
        };
        let model = provider
            .model
            .clone()
            .or(file.model)
            .unwrap_or_else(|| default_model.to_string());
        let base_url = provider
            .base_url
            .clone()
            .or(file.base_url)
            .unwrap_or_else(|| default_url.to_string());
        if kind != ProviderKind::Offline
            && !(base_url.starts_with("http://") || base_url.starts_with("https://"))
        {
            return Err(ConfigError(format!(
                "--base-url {base_url:?} must start with http:// or https://"
            )));
        }
        let api_key_env = provider
            .api_key_env
            .clone()
            .or(file.api_key_env)
            .unwrap_or_else(|| default_key.to_string());
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
            return Err(ConfigError(format!(
                "no API key for --provider {}: set ${api_key_env} (or name another variable with --api-key-env), or use --provider offline",
                match kind {
                    ProviderKind::Openai => "openai",
                    ProviderKind::Anthropic => "anthropic",
                    ProviderKind::Offline => "offline",
                }
            )));
        }
        let jobs = scan.jobs.or(file.jobs).unwrap_or(8);
        if jobs == 0 {
            return Err(ConfigError("--jobs must be at least 1".into()));
        }
        let group_tokens = scan.group_tokens.or(file.group_tokens).unwrap_or(24_000);
        if group_tokens < 100 {
            return Err(ConfigError(format!(
                "--group-tokens {group_tokens} is too small to hold a file; use at least 100 (default 24000)"
            )));
        }
        let context_tokens = provider
            .context_tokens
            .or(file.context_tokens)
            .unwrap_or(64_000);
        if !(8_000..=100_000_000).contains(&context_tokens) {
            return Err(ConfigError(format!(
                "--context-tokens {context_tokens} is not a model's context window; give the window in tokens, from 8000 (default 64000)"
            )));
        }
        let max_duration = match scan.max_duration.clone().or(file.max_duration) {
            Some(text) => Some(parse_duration(&text).ok_or_else(|| {
                ConfigError(format!(
                    "--max-duration {text:?} is not a duration; write e.g. 90s, 20m or 2h"
                ))
            })?),
            None => None,
        };
        let max_cost = scan.max_cost.or(file.max_cost);
        if max_cost.is_some_and(|c| !c.is_finite() || c <= 0.0) {
            return Err(ConfigError(
                "--max-cost must be a positive number of US dollars".into(),
            ));
        }
        let include = if scan.include.is_empty() {
            file.include.unwrap_or_default()
        } else {
            scan.include.clone()
        };
        let exclude = if scan.exclude.is_empty() {
            file.exclude.unwrap_or_default()
        } else {
            scan.exclude.clone()
        };
        let agent_globs: Vec<(String, String)> =
            file.agents.unwrap_or_default().into_iter().collect();
        for (glob, agent) in &agent_globs {
            if let Err(e) = globset::Glob::new(glob) {
                return Err(ConfigError(format!(
                    "fanscan.toml [agents]: {glob:?} is not a valid glob ({e}); write e.g. \"src/auth/**\" = \"security\""
                )));
            }
            if agent.trim().is_empty() {
                return Err(ConfigError(format!(
                    "fanscan.toml [agents]: {glob:?} names no agent; write e.g. \"{glob}\" = \"security\""
                )));
            }
        }
        let format = format.or(file.format).unwrap_or(Format::Md);
        if matches!(format, Format::GithubReview | Format::GitlabDiscussions)
            && !matches!(diff, Some(DiffSource::Since(_)))
        {
            return Err(ConfigError(
                "--format github-review and gitlab-discussions comment on the lines a change touched: add --since REF (e.g. --since origin/main)".into(),
            ));
        }
        Ok(Self {
            root: root.to_path_buf(),
            provider: kind,
            model,
            base_url,
            api_key_env,
            api_key,
            timeout: Duration::from_secs(provider.timeout.or(file.timeout).unwrap_or(300).max(1)),
            max_output_tokens: provider
                .max_output_tokens
                .or(file.max_output_tokens)
                .unwrap_or(4096)
                .max(256),
            context_tokens,
            rules: provider.rules.clone().or(file_rules),
            rpm: provider.rpm.or(file.rpm).unwrap_or(0),
            tpm: provider.tpm.or(file.tpm).unwrap_or(0),
            max_attempts: provider
                .max_attempts
                .or(file.max_attempts)
                .unwrap_or(5)
                .max(1),
            max_retry_wait: Duration::from_secs(
                provider
                    .max_retry_wait
                    .or(file.max_retry_wait)
                    .unwrap_or(120),
            ),
            anthropic_version: provider
                .anthropic_version
                .clone()
                .or(file.anthropic_version)
                .unwrap_or_else(|| crate::providers::anthropic::DEFAULT_VERSION.to_string()),
            retry_budget: provider.retry_budget.or(file.retry_budget).unwrap_or(1000),
            prices: provider.prices.clone().or(file_prices),
            include,
            exclude,
            hidden: if scan.no_hidden {
                false
            } else {
                file.hidden.unwrap_or(true)
            },
            max_file_bytes: scan
                .max_file_bytes
                .or(file.max_file_bytes)
                .unwrap_or(1024 * 1024),
            include_vendored: scan.include_vendored || file.include_vendored.unwrap_or(false),
            planner: scan.planner.or(file.planner).unwrap_or(PlannerKind::Pack),
            group_tokens,
            max_groups: scan.max_groups.or(file.max_groups).unwrap_or(2000),
            jobs,
            agent: scan
                .agent
                .clone()
                .or(file.agent)
                .unwrap_or_else(|| "auditor".into()),
            agent_forced: scan.agent.is_some(),
            agent_globs,
            max_cost,
            max_tokens: scan.max_tokens.or(file.max_tokens),
            max_duration,
            format,
            diff,
            config_origin,
            config_source,
            base_rules,
            gate: GatePolicy::default(),
            challenge: GatePolicy::default().fail_on,
            baseline: None,
            write_baseline: None,
            baseline_reason: None,
            store: if scan.no_store {
                None
            } else {
                Some(
                    scan.store
                        .clone()
                        .unwrap_or_else(|| root.join(".fanscan").join("store.db")),
                )
            },
            cache: !scan.no_cache,
            store_max_bytes: scan
                .store_max_mb
                .or(file.store_max_mb)
                .unwrap_or(1024)
                .saturating_mul(1024 * 1024),
            shard: None,
            max_comments: scan
                .max_comments
                .unwrap_or(crate::report::review::DEFAULT_MAX_COMMENTS),
        })
    }

    /// The gate's options over the resolved settings (`scan` only).
    pub fn with_gate(mut self, gate: &GateArgs) -> Self {
        self.gate = GatePolicy {
            fail_on: gate.fail_on.unwrap_or_default(),
            gate_unverified: gate.gate_unverified,
            strict: gate.strict,
        };
        self.challenge = gate.challenge.unwrap_or(self.gate.fail_on);
        self.baseline.clone_from(&gate.baseline);
        self.write_baseline.clone_from(&gate.write_baseline);
        self.baseline_reason.clone_from(&gate.baseline_reason);
        self
    }
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
            let text = std::fs::read_to_string(p).map_err(|e| {
                ConfigError(format!("{}: cannot read the config file: {e}", p.display()))
            })?;
            (p.to_path_buf(), text, false)
        }
        None => {
            let text = origin
                .read(root, "fanscan.toml")
                .map_err(|e| ConfigError(format!("fanscan.toml at {}: {e}", origin.describe())))?;
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
        let message = e.message().to_string();
        ConfigError(match line {
            Some(l) => format!("{}:{l}: {message}", path.display()),
            None => format!("{}: {message}", path.display()),
        })
    })?;
    Ok((file, from_repo))
}

/// Parses `90s`, `20m`, `2h`, `1h30m` or a number of seconds.
pub(crate) fn parse_duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    let parsed = match text.parse::<u64>() {
        Ok(secs) => Some(Duration::from_secs(secs)),
        Err(_) => crate::providers::limits::parse_go_duration(text),
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
        assert!(e.0.contains("fanscan.toml:2:"), "{e}");
        assert!(e.0.contains("jbos"), "{e}");
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
        assert!(e.0.contains("not honoured"), "{e}");
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
        assert!(e.0.contains("may only name files inside it"), "{e}");
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
        assert!(e.0.contains("$OPENAI_API_KEY"), "{e}");
        let local = ProviderArgs {
            base_url: Some("http://127.0.0.1:8080/v1".into()),
            ..remote.clone()
        };
        assert!(Settings::resolve(dir.path(), &local, &ScanArgs::default(), None, &no_env).is_ok());
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
    fn the_example_config_parses() {
        let text = include_str!("../configs/fanscan.example.toml");
        let file: FileConfig = toml::from_str(text).unwrap();
        assert_eq!(file.jobs, Some(8));
    }

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration("90"), Some(Duration::from_secs(90)));
        assert_eq!(parse_duration("20m"), Some(Duration::from_secs(1200)));
        assert_eq!(parse_duration("1h30m"), Some(Duration::from_secs(5400)));
        assert_eq!(parse_duration("soon"), None);
        assert_eq!(parse_duration("0"), None);
        assert_eq!(parse_duration("99999999999999999999999h"), None);
    }
}
