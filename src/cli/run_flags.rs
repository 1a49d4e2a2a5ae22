//! The flag groups of the commands that run agents, as clap parses them,
//! and their conversion into the library's plain argument structs: the
//! doc comments here are the `--help` text.

use std::path::PathBuf;

use clap::Args;

use fanscan::{
    FailOn, Format, GateArgs, OutputArgs, PlannerKind, ProviderArgs, ProviderKind, SarifSuppressed,
    ScanArgs, Shard, ShardArgs,
};

/// [`ProviderArgs`] on the command line: the fields' docs are the help.
#[derive(Args, Debug)]
pub(crate) struct ProviderFlags {
    /// The provider: offline (default, no key, no network), openai, anthropic.
    #[arg(long, value_enum)]
    provider: Option<ProviderKindFlag>,
    /// The model name (e.g. gpt-4o-mini, claude-sonnet-4-6).
    #[arg(long)]
    model: Option<String>,
    /// The API root, e.g. http://127.0.0.1:11434/v1 for Ollama.
    #[arg(long)]
    base_url: Option<String>,
    /// The environment variable holding the API key.
    #[arg(long)]
    api_key_env: Option<String>,
    /// A fanscan.toml to use instead of the repository's own.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Seconds one model request may take.
    #[arg(long, value_name = "SECS")]
    timeout: Option<u64>,
    /// Most output tokens per model call.
    #[arg(long, value_name = "N")]
    max_output_tokens: Option<u32>,
    /// The model's context window in tokens (the reducer batches its input
    /// to fit it; an agent file's `context_tokens` overrides it). Default 64000.
    #[arg(long, value_name = "N")]
    context_tokens: Option<u64>,
    /// A rule file for the offline engine instead of the built-in one.
    #[arg(long, value_name = "FILE")]
    rules: Option<PathBuf>,
    /// Requests per minute across all agents (0: unlimited). Spread evenly.
    #[arg(long, value_name = "N")]
    rpm: Option<u32>,
    /// Tokens per minute across all agents (0: unlimited).
    #[arg(long, value_name = "N")]
    tpm: Option<u64>,
    /// Attempts per model call, the first included.
    #[arg(long, value_name = "N")]
    max_attempts: Option<u32>,
    /// Longest server-requested wait (retry-after) honoured, in seconds.
    #[arg(long, value_name = "SECS")]
    max_retry_wait: Option<u64>,
    /// The anthropic-version header.
    #[arg(long, value_name = "VERSION")]
    anthropic_version: Option<String>,
    /// A model of the same provider that a group is sent to once when the
    /// run's model refuses it twice (a safety filter); the report names
    /// the groups it answered.
    #[arg(long, value_name = "MODEL")]
    fallback_model: Option<String>,
    /// Retries allowed in the whole run, across all agents.
    #[arg(long, value_name = "N")]
    retry_budget: Option<u64>,
    /// A price table instead of the built-in configs/prices.toml.
    #[arg(long, value_name = "FILE")]
    prices: Option<PathBuf>,
}

impl From<ProviderFlags> for ProviderArgs {
    fn from(f: ProviderFlags) -> Self {
        Self {
            provider: f.provider.map(Into::into),
            model: f.model,
            base_url: f.base_url,
            api_key_env: f.api_key_env,
            config: f.config,
            timeout: f.timeout,
            max_output_tokens: f.max_output_tokens,
            context_tokens: f.context_tokens,
            rules: f.rules,
            rpm: f.rpm,
            tpm: f.tpm,
            max_attempts: f.max_attempts,
            max_retry_wait: f.max_retry_wait,
            anthropic_version: f.anthropic_version,
            fallback_model: f.fallback_model,
            retry_budget: f.retry_budget,
            prices: f.prices,
        }
    }
}

/// [`ShardArgs`] on the command line: the fields' docs are the help.
#[derive(Args, Debug)]
pub(crate) struct ShardFlags {
    /// Run only shard K of N (counted from 1) of the plan's groups and
    /// write a partial JSON report for `fanscan merge`.
    #[arg(long, value_name = "K/N", value_parser = Shard::parse, conflicts_with = "shard_from_env")]
    shard: Option<Shard>,
    /// Take the shard from $JOB_COMPLETION_INDEX (0-based, set by a
    /// Kubernetes Indexed Job): shard index+1 of --shard-count.
    #[arg(long, requires = "shard_count")]
    shard_from_env: bool,
    /// N for --shard-from-env: the Job's `completions`.
    #[arg(long, value_name = "N", requires = "shard_from_env")]
    shard_count: Option<usize>,
    /// This shard's requests per minute (0: unlimited), instead of its
    /// share of --rpm (rpm / N, rounded down). Also `[shard] rpm`.
    #[arg(long, value_name = "N")]
    shard_rpm: Option<u32>,
    /// This shard's tokens per minute (0: unlimited), instead of tpm / N.
    /// Also `[shard] tpm`.
    #[arg(long, value_name = "N")]
    shard_tpm: Option<u64>,
    /// This shard's cost budget in US dollars, instead of max-cost / N.
    /// Also `[shard] max_cost`.
    #[arg(long, value_name = "USD")]
    shard_max_cost: Option<f64>,
    /// This shard's token budget, instead of max-tokens / N. Also
    /// `[shard] max_tokens`.
    #[arg(long, value_name = "N")]
    shard_max_tokens: Option<u64>,
}

impl From<ShardFlags> for ShardArgs {
    fn from(f: ShardFlags) -> Self {
        Self {
            shard: f.shard,
            shard_from_env: f.shard_from_env,
            shard_count: f.shard_count,
            shard_rpm: f.shard_rpm,
            shard_tpm: f.shard_tpm,
            shard_max_cost: f.shard_max_cost,
            shard_max_tokens: f.shard_max_tokens,
        }
    }
}

/// [`ScanArgs`] on the command line: the fields' docs are the help.
#[derive(Args, Debug)]
pub(crate) struct ScanFlags {
    /// Leads for the auditors to confirm or dismiss (repeatable): `rules`,
    /// the rule engine's hits in each group's files (the default with a
    /// model); FILE.sarif, another tool's results (Semgrep, CodeQL, ...);
    /// `off`, none. A dismissed lead is listed with the model's reason and
    /// does not gate; one not answered stays a finding.
    #[arg(long, value_name = "off|rules|FILE.sarif")]
    leads: Vec<String>,
    /// Audit each group N times in independent conversations (1 to 9;
    /// default 1): each finding says in how many it was seen, and one seen
    /// in fewer than --quorum is listed as unstable and does not gate.
    /// Multiplies the auditors' cost by N.
    #[arg(long, value_name = "N")]
    samples: Option<u32>,
    /// Only files matching this glob (repeatable).
    #[arg(long, value_name = "GLOB")]
    include: Vec<String>,
    /// Leave out files matching this glob (repeatable).
    #[arg(long, value_name = "GLOB")]
    exclude: Vec<String>,
    /// Skip hidden files and directories (by default they are audited).
    #[arg(long)]
    no_hidden: bool,
    /// Files larger than this many bytes are skipped.
    #[arg(long, value_name = "BYTES")]
    max_file_bytes: Option<u64>,
    /// Audit vendored and generated files too. By default they are skipped
    /// and listed with their reason, as GitHub Linguist decides: its
    /// well-known paths and names (vendor/, third_party/, node_modules/,
    /// jquery-*.js, minified bundles, *.pb.go, ...) and the
    /// linguist-vendored / linguist-generated attributes in .gitattributes.
    /// Dependency lock files stay skipped even then; a
    /// `Cargo.lock -linguist-generated` line in .gitattributes audits one.
    #[arg(long)]
    include_vendored: bool,
    /// The planner.
    #[arg(long, value_enum)]
    planner: Option<PlannerKindFlag>,
    /// Estimated tokens of file content per group.
    #[arg(long, value_name = "N")]
    group_tokens: Option<u64>,
    /// The most groups a plan may have (0: no cap).
    #[arg(long, value_name = "N")]
    max_groups: Option<usize>,
    /// Sub-agents in flight at once.
    #[arg(long, short = 'j', value_name = "N")]
    jobs: Option<usize>,
    /// The agent that audits each group.
    #[arg(long, value_name = "NAME")]
    agent: Option<String>,
    /// Stop starting groups once the estimated cost reaches this many US dollars.
    #[arg(long, value_name = "USD")]
    max_cost: Option<f64>,
    /// Stop starting groups once this many tokens were used.
    #[arg(long, value_name = "N")]
    max_tokens: Option<u64>,
    /// Stop starting groups after this long (e.g. 90s, 20m, 2h).
    #[arg(long, value_name = "DURATION")]
    max_duration: Option<String>,
    /// The run store (cache, resume, history). Default .fanscan/store.db
    /// under the scanned root.
    #[arg(long, value_name = "PATH")]
    store: Option<PathBuf>,
    /// Run without the run store: no cache, no resume, no history.
    #[arg(long, conflicts_with = "store")]
    no_store: bool,
    /// Ask the model for every group and every file, even those whose
    /// result is stored (the fresh results are stored): `--full` is the
    /// weekly cold run; without it only changed files are audited again.
    #[arg(long, visible_alias = "full")]
    no_cache: bool,
    /// Bound the stored results to this many MB, least recently used
    /// dropped first (0: no bound). Default 1024.
    #[arg(long, value_name = "MB")]
    store_max_mb: Option<u64>,
    /// A diff scan: plan only the groups holding files changed since the
    /// merge base of REF and HEAD (`git diff --merge-base REF`: commits and
    /// uncommitted edits; renames followed, deletions listed). The agents
    /// may still read other files for context. fanscan.toml, the rules and
    /// .fanscan/agents/ are read from REF, so the change cannot steer its
    /// own review.
    #[arg(long, value_name = "REF", conflicts_with = "changed_files")]
    since: Option<String>,
    /// A diff scan over the files listed in FILE (one path a line), for CI
    /// systems that provide the list. Configuration is read from the
    /// working tree.
    #[arg(long, value_name = "FILE")]
    changed_files: Option<PathBuf>,
    /// With --since, read fanscan.toml, the rules and .fanscan/agents/
    /// from the working tree (for pipelines whose changes are trusted).
    #[arg(long)]
    trust_worktree_config: bool,
    /// With --format github-review or gitlab-discussions: at most N
    /// comments on the changed lines, the most severe first (the rest are
    /// listed in the review's body). Default 25.
    #[arg(long, value_name = "N")]
    max_comments: Option<usize>,
    /// Send every model call through the provider's batch API (OpenAI
    /// Batch, Anthropic Message Batches) at half the price: the agents
    /// advance in rounds, each round one batch, answered within 24 hours.
    /// Every group runs at once (--jobs does not apply). Batch ids are
    /// kept in the run store, so a run started again after a kill polls
    /// the batches already sent instead of sending them twice. For
    /// nightly runs; bound the night with --max-duration.
    #[arg(long)]
    batch: bool,
    /// With --batch: the longest wait between two polls of a batch, in
    /// seconds (a batch is polled when created, then after a second, the
    /// wait doubling up to this). Default 60.
    #[arg(long, value_name = "SECONDS", requires = "batch")]
    batch_poll: Option<f64>,
}

impl From<ScanFlags> for ScanArgs {
    fn from(f: ScanFlags) -> Self {
        Self {
            include: f.include,
            exclude: f.exclude,
            no_hidden: f.no_hidden,
            max_file_bytes: f.max_file_bytes,
            include_vendored: f.include_vendored,
            planner: f.planner.map(Into::into),
            group_tokens: f.group_tokens,
            max_groups: f.max_groups,
            jobs: f.jobs,
            agent: f.agent,
            max_cost: f.max_cost,
            max_tokens: f.max_tokens,
            max_duration: f.max_duration,
            store: f.store,
            no_store: f.no_store,
            no_cache: f.no_cache,
            store_max_mb: f.store_max_mb,
            since: f.since,
            changed_files: f.changed_files,
            trust_worktree_config: f.trust_worktree_config,
            max_comments: f.max_comments,
            leads: f.leads,
            triage: false,
            samples: f.samples,
            batch: f.batch,
            batch_poll: f.batch_poll,
        }
    }
}

/// [`GateArgs`] on the command line: the fields' docs are the help.
#[derive(Args, Debug)]
pub(crate) struct GateFlags {
    /// Fail the run (exit code 4) when a verified finding at or above this
    /// severity remains that is neither baselined nor suppressed. `never`
    /// reports only. Default: high.
    #[arg(long, value_enum, value_name = "SEVERITY")]
    fail_on: Option<FailOnFlag>,
    /// Unverified findings count for --fail-on too.
    #[arg(long)]
    gate_unverified: bool,
    /// Before the gate, a skeptic agent tries to refute each verified
    /// finding at or above this severity (and each located claim): refuted
    /// findings leave the gate, listed apart with the skeptic's reason. `never`
    /// skips the stage. Default: the --fail-on severity.
    #[arg(long, value_enum, value_name = "SEVERITY")]
    challenge: Option<FailOnFlag>,
    /// With --samples N: the samples a finding must be seen in to gate and
    /// be challenged (default: a majority of N); one seen in fewer is
    /// listed as unstable with its count.
    #[arg(long, value_name = "K")]
    quorum: Option<u32>,
    /// A doubtful review makes the run incomplete (exit 3): a group whose
    /// agent made claims of which none was verified (code that is not at
    /// the cited place, files that do not exist) was not reviewed cleanly.
    /// Without it such groups are reported as doubtful and the run passes.
    #[arg(long)]
    strict: bool,
    /// A baseline (see `fanscan baseline`): its findings stay out of the
    /// gate and are listed apart.
    #[arg(long, value_name = "FILE")]
    baseline: Option<PathBuf>,
    /// Write this run's open and baselined findings as a baseline to FILE.
    #[arg(long, value_name = "FILE")]
    write_baseline: Option<PathBuf>,
    /// The reason recorded for new entries of --write-baseline.
    #[arg(long, value_name = "TEXT", requires = "write_baseline")]
    baseline_reason: Option<String>,
}

impl From<GateFlags> for GateArgs {
    fn from(f: GateFlags) -> Self {
        Self {
            fail_on: f.fail_on.map(Into::into),
            gate_unverified: f.gate_unverified,
            challenge: f.challenge.map(Into::into),
            quorum: f.quorum,
            strict: f.strict,
            baseline: f.baseline,
            write_baseline: f.write_baseline,
            baseline_reason: f.baseline_reason,
            expires_in: None,
        }
    }
}

/// [`OutputArgs`] on the command line: the fields' docs are the help.
#[derive(Args, Debug)]
pub(crate) struct OutputFlags {
    /// Report format (of stdout, or of a plain --output FILE).
    #[arg(long, value_enum)]
    format: Option<FormatFlag>,
    /// Write the report to FILE instead of stdout, or (FORMAT=FILE, repeatable)
    /// also write it in FORMAT: md, json, sarif, github, codeclimate, html,
    /// github-review, gitlab-discussions.
    /// E.g. --output sarif=fanscan.sarif --output md=report.md.
    #[arg(long, short, value_name = "[FORMAT=]FILE")]
    output: Vec<String>,
    /// The SARIF `automationDetails.id`, so several scans of one
    /// repository (nightly, pull request) keep separate alerts.
    #[arg(long, value_name = "CATEGORY")]
    category: Option<String>,
    /// What the SARIF does with findings that do not gate (suppressed
    /// inline, baselined, refuted by the skeptic): omit leaves them out and
    /// counts them in a notification, since code scanning opens an alert
    /// for every uploaded result whatever its `suppressions`; keep writes
    /// them as results with `suppressions`. Default omit.
    #[arg(long, value_enum, value_name = "MODE")]
    sarif_suppressed: Option<SarifSuppressedFlag>,
    /// Do not append the Markdown report to $GITHUB_STEP_SUMMARY.
    #[arg(long)]
    no_step_summary: bool,
}

impl From<OutputFlags> for OutputArgs {
    fn from(f: OutputFlags) -> Self {
        Self {
            format: f.format.map(Into::into),
            output: f.output,
            category: f.category,
            sarif_suppressed: f.sarif_suppressed.map(Into::into),
            no_step_summary: f.no_step_summary,
        }
    }
}

/// [`ProviderKind`] on the command line; the variants' docs are the help.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub(crate) enum ProviderKindFlag {
    /// The embedded rule engine: no key, no network.
    Offline,
    /// OpenAI Chat Completions and compatible servers.
    Openai,
    /// Anthropic Messages.
    Anthropic,
}

impl From<ProviderKindFlag> for ProviderKind {
    fn from(flag: ProviderKindFlag) -> Self {
        match flag {
            ProviderKindFlag::Offline => Self::Offline,
            ProviderKindFlag::Openai => Self::Openai,
            ProviderKindFlag::Anthropic => Self::Anthropic,
        }
    }
}

/// [`PlannerKind`] on the command line; the variants' docs are the help.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub(crate) enum PlannerKindFlag {
    /// Deterministic packing by directory under the token budget.
    Pack,
    /// The planner agent, validated and repaired.
    Llm,
}

impl From<PlannerKindFlag> for PlannerKind {
    fn from(flag: PlannerKindFlag) -> Self {
        match flag {
            PlannerKindFlag::Pack => Self::Pack,
            PlannerKindFlag::Llm => Self::Llm,
        }
    }
}

/// [`FailOn`] on the command line; the variants' docs are the help.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub(crate) enum FailOnFlag {
    Critical,
    /// The default: critical and high findings fail the gate.
    High,
    Medium,
    Low,
    Info,
    /// Report only: no finding fails the run (an incomplete run still does).
    Never,
}

impl From<FailOnFlag> for FailOn {
    fn from(flag: FailOnFlag) -> Self {
        match flag {
            FailOnFlag::Critical => Self::Critical,
            FailOnFlag::High => Self::High,
            FailOnFlag::Medium => Self::Medium,
            FailOnFlag::Low => Self::Low,
            FailOnFlag::Info => Self::Info,
            FailOnFlag::Never => Self::Never,
        }
    }
}

/// [`Format`] on the command line; the variants' docs are the help.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub(crate) enum FormatFlag {
    Md,
    Json,
    /// SARIF 2.1.0 for GitHub code scanning.
    Sarif,
    /// GitHub Actions annotations (workflow commands).
    Github,
    /// GitLab Code Quality (Code Climate issues).
    Codeclimate,
    /// One self-contained HTML page (charts, filters, no network).
    Html,
    /// The body of GitHub's "create a review" request: comments on the
    /// changed lines of a pull request (needs --since REF).
    GithubReview,
    /// GitLab merge-request discussions on the changed lines (needs
    /// --since REF).
    GitlabDiscussions,
}

impl From<FormatFlag> for Format {
    fn from(flag: FormatFlag) -> Self {
        match flag {
            FormatFlag::Md => Self::Md,
            FormatFlag::Json => Self::Json,
            FormatFlag::Sarif => Self::Sarif,
            FormatFlag::Github => Self::Github,
            FormatFlag::Codeclimate => Self::Codeclimate,
            FormatFlag::Html => Self::Html,
            FormatFlag::GithubReview => Self::GithubReview,
            FormatFlag::GitlabDiscussions => Self::GitlabDiscussions,
        }
    }
}

/// [`SarifSuppressed`] on the command line; the variants' docs are the help.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub(crate) enum SarifSuppressedFlag {
    /// Leave them out, counted in a notification: code scanning would open
    /// an alert for each, whatever its `suppressions` say.
    Omit,
    /// Write them as results with `suppressions` (for viewers that honour
    /// them; code scanning opens alerts for them).
    Keep,
}

impl From<SarifSuppressedFlag> for SarifSuppressed {
    fn from(flag: SarifSuppressedFlag) -> Self {
        match flag {
            SarifSuppressedFlag::Omit => Self::Omit,
            SarifSuppressedFlag::Keep => Self::Keep,
        }
    }
}
