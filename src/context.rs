//! Setting a run up: the settings resolved, the agent definitions, rules
//! and prices loaded, the provider built over the one HTTP layer.
//!
//! Takes [`Settings`]; gives a [`Context`] that every command runs with,
//! or a [`SetupError`] (exit code 2) that names the thing and the fix. The
//! stage helpers every command shares (the inventory, the plan) live here
//! so that `scan` and `plan` walk and plan the same way.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use indicatif::MultiProgress;

use crate::agents::{
    AgentDefinition, AgentRun, AgentSet, AgentTask, DefinitionError, GroupReport, TaskFile,
    UnknownAgent, run_subagent,
};
use crate::baseline::{Baseline, BaselineError};
use crate::budget::Spend;
use crate::config::{ConfigError, DiffSource, PlannerKind, ProviderKind, Settings};
use crate::control::RunControl;
use crate::conversation::Usage;
use crate::events::EventSink;
use crate::fanout::{FanOut, FanOutResult};
use crate::findings::{Finding, FindingCwe, Origin, Severity};
use crate::git::{ChangeSet, ConfigOrigin, GitError};
use crate::inventory::{Inventory, InventoryError, InventoryOptions};
use crate::plan::{Plan, PlanError, Routing};
use crate::prices::{Price, PriceError, Prices};
use crate::providers::http::{CallStats, HttpLayer, RetryPolicy};
use crate::providers::limits::{Concurrency, RateLimits};
use crate::providers::remote::Remote;
use crate::providers::{EngineKind, ProviderError, SharedProvider};
use crate::report::{CallCounts, Manifest, RunInfo, Sources};
use crate::rules::{RuleError, RuleSet};
use crate::tools::paths::PathError;
use crate::tools::secrets::Redactor;
use crate::tools::{ToolContext, ToolLimits};

/// Errors that stop a run before it scans: exit code 2.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Inventory(#[from] InventoryError),
    #[error("invalid agent definitions:\n{}", .0.iter().map(|e| format!("  {e}")).collect::<Vec<_>>().join("\n"))]
    Agents(Vec<DefinitionError>),
    #[error(transparent)]
    UnknownAgent(#[from] UnknownAgent),
    #[error(transparent)]
    Rules(#[from] RuleError),
    #[error(transparent)]
    Prices(#[from] PriceError),
    #[error(transparent)]
    Provider(#[from] ProviderError),
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error("{path}: cannot open the scan root: {error}")]
    Root { path: String, error: std::io::Error },
    /// The tools cannot be set up (the bundled injection rules, the
    /// random source): a fanscan or system fault, never the repository's.
    #[error("cannot set up the read-only tools: {0}")]
    Tools(String),
    #[error("--file {path:?}: {error}")]
    TaskFile { path: String, error: PathError },
    #[error("--file {path:?} is not a file")]
    NotAFile { path: String },
    #[error(transparent)]
    Git(#[from] GitError),
    #[error(transparent)]
    Baseline(#[from] BaselineError),
    #[error(
        "{budget} is less than the cheapest group's estimate ({need} for group {group}), so no group could start. \
         Raise it to at least {need}, or make groups smaller with --group-tokens (now {group_tokens}); `fanscan plan --estimate` shows the whole range"
    )]
    BudgetTooSmall {
        budget: String,
        need: String,
        group: String,
        group_tokens: u64,
    },
}

/// What a run is built from: settings resolved, files loaded, provider made.
pub struct Context {
    pub settings: Settings,
    pub agents: AgentSet,
    rules: Arc<RuleSet>,
    prices: Prices,
    pub(crate) provider: SharedProvider,
    stats: Arc<CallStats>,
    pub(crate) tools: Arc<ToolContext>,
    /// A diff scan's changed files.
    pub changes: Option<ChangeSet>,
    /// The accepted findings (`--baseline`).
    pub baseline: Option<Baseline>,
    /// Where the baseline was read from, for the manifest.
    baseline_source: Option<String>,
}

impl Context {
    /// Loads agents, rules and prices and builds the provider.
    pub fn new(settings: Settings) -> Result<Self, SetupError> {
        let shown = settings.root.display().to_string();
        match std::fs::metadata(&settings.root) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => return Err(InventoryError::NotADirectory { path: shown }.into()),
            Err(_) => return Err(InventoryError::Missing { path: shown }.into()),
        }
        let agents = AgentSet::load_from(&settings.root, &settings.config_origin)
            .map_err(SetupError::Agents)?;
        for (glob, name) in &settings.agent_globs {
            if !agents.get(name).is_ok_and(|a| a.delegable) {
                let valid: Vec<&str> = agents.delegable().map(|a| a.name.as_str()).collect();
                return Err(ConfigError(format!(
                    "fanscan.toml [agents]: {glob:?} = {name:?} names no delegable agent; the agents a group can have are: {} (an agent file with `delegable: true` adds one)",
                    valid.join(", ")
                ))
                .into());
            }
        }
        let rules = Arc::new(match (&settings.rules, &settings.base_rules) {
            (Some(path), _) => RuleSet::load(path)?,
            (None, Some(rel)) => {
                let shown = format!("{}:{rel}", settings.config_origin.describe());
                let text = settings
                    .config_origin
                    .read(&settings.root, rel)?
                    .ok_or_else(|| {
                        ConfigError(format!(
                            "{shown}: the rules file named by fanscan.toml is not there"
                        ))
                    })?;
                RuleSet::parse(&shown, &text)?
            }
            (None, None) => RuleSet::builtin()?,
        });
        let changes = match &settings.diff {
            Some(DiffSource::Since(reference)) => {
                Some(crate::git::diff(&settings.root, reference)?)
            }
            Some(DiffSource::List(list)) => Some(crate::git::changed_files(&settings.root, list)?),
            None => None,
        };
        let (baseline, baseline_source) = load_baseline(&settings)?;
        let prices = match &settings.prices {
            Some(path) => Prices::load(path)?,
            None => Prices::builtin()?,
        };
        let stats = Arc::new(CallStats::new(settings.retry_budget));
        let provider = build_provider(&settings, &rules, &stats)?;
        if settings.max_cost.is_some() && provider.engine() == EngineKind::Llm {
            // Every model the run may call must be priced, agents'
            // overrides included, or the budget could not be kept.
            let models = std::iter::once(provider.model().to_string())
                .chain(agents.iter().filter_map(|a| a.model.clone()));
            for model in models {
                if prices.get(&model).is_none() {
                    return Err(ConfigError(format!(
                        "--max-cost needs the price of model {model:?}, which is not in the price table; add it to a copy of configs/prices.toml and pass --prices FILE"
                    ))
                    .into());
                }
            }
        }
        let limits = ToolLimits {
            max_file_bytes: settings
                .max_file_bytes
                .max(ToolLimits::default().max_file_bytes),
            ..ToolLimits::default()
        };
        let tools = ToolContext::new(&settings.root, limits, Arc::new(Redactor::new())).map_err(
            |error| match error {
                crate::tools::ToolSetupError::Root(error) => {
                    SetupError::Root { path: shown, error }
                }
                other => SetupError::Tools(other.to_string()),
            },
        )?;
        Ok(Self {
            settings,
            agents,
            rules,
            prices,
            provider,
            stats,
            tools: Arc::new(tools),
            changes,
            baseline,
            baseline_source,
        })
    }

    /// What a scan plans: the whole inventory, or for a diff scan only its
    /// changed files (a changed file the inventory skipped stays listed
    /// as skipped). The agents' tools still reach the whole inventory.
    pub fn in_scope(&self, inventory: &Inventory) -> Inventory {
        match &self.changes {
            None => inventory.clone(),
            Some(changes) => Inventory {
                root: inventory.root.clone(),
                files: inventory
                    .files
                    .iter()
                    .filter(|f| changes.contains(&f.path))
                    .cloned()
                    .collect(),
                skipped: inventory
                    .skipped
                    .iter()
                    .filter(|f| changes.contains(&f.path))
                    .cloned()
                    .collect(),
            },
        }
    }

    /// One finding per configuration file a `--since` change touches
    /// (fanscan.toml, the rules, `.fanscan/agents/*.md`): the change does
    /// not take effect in its own review, and reviewers should know it
    /// tried. Nothing when the working tree's configuration is trusted.
    pub(crate) fn config_change_findings(&self) -> Vec<Finding> {
        let (Some(changes), ConfigOrigin::BaseRef(base)) =
            (&self.changes, &self.settings.config_origin)
        else {
            return Vec::new();
        };
        let mut touched: Vec<&str> = changes
            .touched()
            .filter(|p| {
                *p == "fanscan.toml"
                    || *p == ".fanscan/baseline.json"
                    || (p.starts_with(".fanscan/agents/") && p.ends_with(".md"))
                    || self.settings.base_rules.as_deref() == Some(*p)
            })
            .collect();
        touched.sort_unstable();
        touched.dedup();
        touched
            .into_iter()
            .map(|path| Finding {
                path: path.to_string(),
                line: 1,
                end_line: None,
                severity: Severity::Medium,
                title: "this change edits fanscan's configuration".into(),
                detail: format!(
                    "{path} is part of fanscan's configuration. A diff scan reads its configuration from the base ref ({base}), so this edit does not take effect in the review of the change that makes it; review it by hand. Pipelines that trust their changes pass --trust-worktree-config."
                ),
                evidence: None,
                rule: Some("fanscan/config-change".into()),
                cwe: FindingCwe::default(),
                origin: Origin::ToolLayer,
            })
            .collect()
    }

    /// The definition of agent `name`.
    pub fn agent(&self, name: &str) -> Result<&AgentDefinition, SetupError> {
        Ok(self.agents.get(name)?)
    }

    /// Prices any model of this run (zero for the offline engine).
    pub(crate) fn pricer(&self) -> impl Fn(&str) -> Option<Price> + Send + Sync + 'static {
        let offline = self.provider.engine() == EngineKind::RuleEngine;
        let prices = self.prices.clone();
        move |model: &str| {
            if offline {
                Some(Price::default())
            } else {
                prices.get(model)
            }
        }
    }

    /// The run's budget over `control`, every call priced by its model.
    ///
    /// `planner` is what the LLM planner already spent, counted first.
    pub(crate) fn spend(&self, control: RunControl, planner: Option<Usage>) -> Spend {
        let pricer = self.pricer();
        let price = pricer(self.provider.model());
        let spend = Spend::new(
            self.settings.max_tokens,
            self.settings.max_cost,
            price,
            control,
        )
        .with_pricer(Box::new(pricer));
        if let Some(usage) = planner.filter(|_| self.settings.planner == PlannerKind::Llm) {
            spend.add("planner", usage, &self.model_of("planner"));
        }
        spend
    }

    /// The tools, reading only what the inventory covers: excluded or
    /// ignored files stay out of every prompt.
    pub(crate) fn scoped_tools(&self, inventory: &Inventory) -> ToolContext {
        self.tools
            .scoped(inventory.files.iter().map(|f| f.path.clone()))
    }

    /// The model agent `name` runs on: its own, else the run's.
    pub(crate) fn model_of(&self, name: &str) -> String {
        self.agents
            .get(name)
            .ok()
            .and_then(|a| a.model.clone())
            .unwrap_or_else(|| self.provider.model().to_string())
    }

    /// The inventory of the settings' root.
    pub fn inventory(&self) -> Result<Inventory, SetupError> {
        let s = &self.settings;
        Ok(crate::inventory::walk(
            &s.root,
            &InventoryOptions {
                hidden: s.hidden,
                max_file_bytes: s.max_file_bytes,
                include: s.include.clone(),
                exclude: s.exclude.clone(),
                include_vendored: s.include_vendored,
            },
        )?)
    }

    /// Who audits each file: `--agent` alone when forced, else the
    /// `[agents]` globs, the planner's picks among the delegable agents and
    /// the run's agent.
    pub fn routing(&self) -> Result<Routing, SetupError> {
        let s = &self.settings;
        if s.agent_forced {
            return Ok(Routing::single(&s.agent));
        }
        let delegable = self.agents.delegable().map(|a| a.name.clone()).collect();
        Routing::new(&s.agent, &s.agent_globs, delegable)
            .map_err(|e| ConfigError(e.to_string()).into())
    }

    /// Plans the scan with the configured planner, within `--max-groups`;
    /// every group has one agent (see [`Context::routing`]).
    /// Returns the plan and the tokens the planner used.
    pub async fn plan(&self, inventory: &Inventory) -> Result<(Plan, Usage), SetupError> {
        let (plan, usage) = self.plan_uncapped(inventory).await?;
        plan.check_cap(self.settings.max_groups)?;
        Ok((plan, usage))
    }

    /// The plan without the `--max-groups` cap, for `fanscan plan`: the cap
    /// keeps a scan from starting too many agents, and showing a plan
    /// starts none. [`Plan::check_cap`] says whether a scan would refuse it.
    pub async fn plan_uncapped(&self, inventory: &Inventory) -> Result<(Plan, Usage), SetupError> {
        let s = &self.settings;
        let routing = self.routing()?;
        let (mut plan, usage) = match s.planner {
            PlannerKind::Pack => (
                crate::plan::pack_plan(inventory, s.group_tokens, &routing),
                Usage::default(),
            ),
            PlannerKind::Llm => {
                let planner = self.agent("planner")?;
                // With --agent forced, the planner is not offered a choice.
                let choices: Vec<(String, String)> = if s.agent_forced {
                    Vec::new()
                } else {
                    self.agents
                        .delegable()
                        .map(|a| (a.name.clone(), a.description.clone()))
                        .collect()
                };
                crate::plan::llm::plan(
                    inventory,
                    s.group_tokens,
                    planner,
                    self.provider.as_ref(),
                    s.max_output_tokens,
                    &choices,
                    &routing,
                )
                .await
            }
        };
        if let Some(c) = &self.changes {
            plan.notes.push(format!(
                "diff scan ({}): {} changed files, {} in the scan, {} deleted{}",
                c.source,
                c.changed.len(),
                inventory.files.len(),
                c.deleted.len(),
                if c.renamed.is_empty() {
                    String::new()
                } else {
                    format!(", {} renamed", c.renamed.len())
                }
            ));
        }
        Ok((plan, usage))
    }

    /// A token and cost range for a scan of `plan` by the run's agent;
    /// calls nothing.
    pub fn estimate(&self, plan: &Plan) -> Result<crate::plan::estimate::Estimate, SetupError> {
        let agent = self.agent(&self.settings.agent)?;
        let model = agent.model.as_deref().unwrap_or(self.provider.model());
        Ok(crate::plan::estimate::estimate(
            plan,
            model,
            self.pricer()(model),
            self.settings.max_output_tokens,
            agent.preload,
        ))
    }

    /// Refuses a budget that cannot pay for even the cheapest group: such a
    /// run would start nothing and call itself stopped by its budget.
    pub(crate) fn check_budget(
        &self,
        plan: &Plan,
        agent: &AgentDefinition,
    ) -> Result<(), SetupError> {
        let s = &self.settings;
        let output = s.max_output_tokens;
        let cheapest = plan
            .groups
            .iter()
            .map(|g| {
                let e = crate::plan::estimate::group(g.tokens, agent.preload, output);
                (e.reserve(), e.low, g.id.as_str())
            })
            .min_by_key(|(reserve, _, _)| *reserve);
        let Some((reserve, low, group)) = cheapest else {
            return Ok(());
        };
        let too_small = |budget: String, need: String| SetupError::BudgetTooSmall {
            budget,
            need,
            group: group.to_string(),
            group_tokens: s.group_tokens,
        };
        if let Some(max) = s.max_tokens
            && max < reserve
        {
            return Err(too_small(
                format!("--max-tokens {max}"),
                format!("{reserve} tokens"),
            ));
        }
        let model = agent.model.as_deref().unwrap_or(self.provider.model());
        if let (Some(max), Some(price)) = (s.max_cost, self.pricer()(model)) {
            let need = price.cost(&low);
            if max < need {
                return Err(too_small(
                    format!("--max-cost {max}"),
                    format!("${need:.4}"),
                ));
            }
        }
        Ok(())
    }

    /// A file of a `run-agent` task, confined to the root.
    pub fn task_file(&self, path: &str) -> Result<TaskFile, SetupError> {
        let resolved = crate::tools::paths::resolve(self.tools.root(), path).map_err(|error| {
            SetupError::TaskFile {
                path: path.to_string(),
                error,
            }
        })?;
        let meta = std::fs::metadata(&resolved.real)
            .ok()
            .filter(|m| m.is_file());
        let Some(meta) = meta else {
            return Err(SetupError::NotAFile { path: resolved.rel });
        };
        Ok(TaskFile {
            bytes: meta.len(),
            language: crate::language::language_of(&resolved.rel).map(str::to_string),
            path: resolved.rel,
        })
    }

    /// The reducer's batch budget: its model's context, less its answer.
    pub(crate) fn reducer_context(&self, reducer: &AgentDefinition) -> u64 {
        reducer
            .context_tokens
            .unwrap_or(self.settings.context_tokens)
            .saturating_sub(u64::from(self.settings.max_output_tokens))
    }

    /// Who ran, with what, for the report.
    pub(crate) fn run_info(&self, plan: &Plan, started: &Started) -> RunInfo {
        RunInfo {
            provider: self.provider.name().into(),
            engine: self.provider.engine(),
            model: self.provider.model().into(),
            root: display_root(&self.settings.root),
            started_at: started.at.to_string(),
            duration_ms: u64::try_from(started.clock.elapsed().as_millis()).unwrap_or(u64::MAX),
            manifest: Manifest {
                agents: self
                    .agents
                    .iter()
                    .map(|a| (a.name.clone(), a.hash.clone()))
                    .collect::<BTreeMap<_, _>>(),
                rules_source: self.rules.source.clone(),
                rules_hash: self.rules.hash.clone(),
                plan_hash: plan.hash(),
                group_tokens: self.settings.group_tokens,
                jobs: self.settings.jobs,
                sources: self.sources(),
            },
        }
    }

    /// Where the configuration came from, for the manifest.
    fn sources(&self) -> Sources {
        let origin = self.settings.config_origin.describe();
        Sources {
            config: self.settings.config_source.clone(),
            rules: if self.rules.source.starts_with("builtin:") {
                "built-in".into()
            } else if self.settings.base_rules.is_some() {
                // Already named `base ref REF:path`.
                self.rules.source.clone()
            } else {
                format!("file ({})", self.rules.source)
            },
            baseline: self.baseline_source.clone(),
            agents: self
                .agents
                .iter()
                .map(|a| {
                    let from = if a.source.starts_with("builtin:") {
                        "built-in".to_string()
                    } else {
                        format!("{origin} ({})", a.source)
                    };
                    (a.name.clone(), from)
                })
                .collect(),
        }
    }

    /// Runs `definition` on one task (`run-agent`, tests): no budget,
    /// stopped through `control`.
    pub async fn run_agent(
        &self,
        definition: &AgentDefinition,
        task: &AgentTask,
        events: &EventSink,
        control: &RunControl,
    ) -> GroupReport {
        let run = AgentRun {
            definition,
            provider: self.provider.as_ref(),
            tools: &self.tools,
            events,
            wrap_up: &control.wrap_up,
            cancel: &control.cancel,
            spend: &Spend::unlimited(),
            max_output_tokens: self.settings.max_output_tokens,
            cache_scope: "run-agent",
        };
        run_subagent(run, task).await
    }

    /// Runs agent `agent` on every task, `--jobs` at a time, with no
    /// budget and no progress display (benchmarks, tests).
    pub async fn fan_out(
        &self,
        agent: &str,
        tasks: Vec<AgentTask>,
        control: &RunControl,
    ) -> Result<FanOutResult, SetupError> {
        let fan = FanOut {
            definition: Arc::new(self.agent(agent)?.clone()),
            provider: Arc::clone(&self.provider),
            tools: Arc::clone(&self.tools),
            jobs: self.settings.jobs,
            max_output_tokens: self.settings.max_output_tokens,
            events: None,
            transcripts: false,
            control: control.clone(),
            spend: Arc::new(Spend::unlimited()),
            specialists: Default::default(),
            journal: None,
            cache_scope: Arc::from("fan-out"),
        };
        Ok(fan.run(tasks).await)
    }

    /// The definition of each group's agent, by group id.
    pub(crate) fn specialists(
        &self,
        plan: &Plan,
    ) -> Result<std::collections::HashMap<String, Arc<AgentDefinition>>, SetupError> {
        let mut by_name: BTreeMap<&str, Arc<AgentDefinition>> = BTreeMap::new();
        let mut out = std::collections::HashMap::new();
        for group in &plan.groups {
            let name = group.agent.as_str();
            let definition = match by_name.get(name) {
                Some(d) => Arc::clone(d),
                None => {
                    let d = Arc::new(self.agent(name)?.clone());
                    by_name.insert(name, Arc::clone(&d));
                    d
                }
            };
            out.insert(group.id.clone(), definition);
        }
        Ok(out)
    }

    /// The SHA-256 of the rule set in effect (part of every cache key).
    pub(crate) fn rules_hash(&self) -> &str {
        &self.rules.hash
    }

    /// HTTP requests sent so far, retries included.
    pub fn requests(&self) -> u64 {
        self.stats.requests.load(Ordering::Relaxed)
    }

    /// The HTTP counters so far.
    pub(crate) fn call_counts(&self) -> CallCounts {
        CallCounts {
            requests: self.stats.requests.load(Ordering::Relaxed),
            retries: self.stats.retries.load(Ordering::Relaxed),
            rate_limited: self.stats.rate_limited.load(Ordering::Relaxed),
            lowest_concurrency: self.stats.lowest_concurrency.load(Ordering::Relaxed),
        }
    }
}

/// When a run started: the wall-clock time for the report, and a monotonic
/// clock for its duration.
pub(crate) struct Started {
    at: jiff::Timestamp,
    clock: std::time::Instant,
}

impl Started {
    pub(crate) fn now() -> Self {
        Self {
            at: jiff::Timestamp::now(),
            clock: std::time::Instant::now(),
        }
    }
}

/// How a scan shows itself and is stopped.
pub struct Ui {
    /// Where progress bars draw (hidden when not a terminal or quiet).
    pub multi: MultiProgress,
    /// Where transcripts go.
    pub transcripts: Option<std::path::PathBuf>,
    /// Ctrl-C and budgets stop the run through this.
    pub control: RunControl,
}

/// The `--baseline` file. In a diff scan whose configuration comes from
/// the base ref, a baseline inside the repository is read from there too:
/// a change that adds its own findings to it does not pass because of
/// that (and gets a `fanscan/config-change` finding). One the base does
/// not have yet is empty for this run.
fn load_baseline(settings: &Settings) -> Result<(Option<Baseline>, Option<String>), SetupError> {
    let Some(path) = &settings.baseline else {
        return Ok((None, None));
    };
    let inside = match (
        &settings.config_origin,
        path.canonicalize(),
        settings.root.canonicalize(),
    ) {
        (ConfigOrigin::BaseRef(base), Ok(file), Ok(root)) => file
            .strip_prefix(&root)
            .ok()
            .map(|rel| (base.clone(), rel.to_string_lossy().replace('\\', "/"))),
        _ => None,
    };
    match inside {
        Some((base, rel)) => {
            let shown = format!("{base}:{rel}");
            match crate::git::show(&settings.root, &base, &rel)? {
                Some(text) => Ok((
                    Some(Baseline::parse(&shown, &text)?),
                    Some(format!("base ref {shown}")),
                )),
                None => Ok((
                    Some(Baseline {
                        version: crate::baseline::VERSION,
                        findings: Vec::new(),
                    }),
                    Some(format!(
                        "none at base ref {base} ({rel} is new in this change): empty"
                    )),
                )),
            }
        }
        None => Ok((
            Some(Baseline::load(path)?),
            Some(format!("file ({})", path.display())),
        )),
    }
}

impl Ui {
    /// Starts the one event consumer of a run of `groups` groups: progress
    /// on the terminal, transcripts to their directory.
    pub(crate) fn progress(
        &self,
        groups: usize,
    ) -> (
        tokio::sync::mpsc::UnboundedSender<crate::events::Event>,
        crate::progress::Running,
    ) {
        crate::progress::Consumer {
            multi: self.multi.clone(),
            total_groups: groups as u64,
            transcripts: self.transcripts.clone(),
        }
        .start()
    }
}

/// Builds the provider the settings name, over the one HTTP layer.
fn build_provider(
    settings: &Settings,
    rules: &Arc<RuleSet>,
    stats: &Arc<CallStats>,
) -> Result<SharedProvider, ProviderError> {
    // One limiter and one concurrency limit per provider, and so per key
    // and model: every agent of the run shares them.
    let http = |name: &str| {
        HttpLayer::new(
            name,
            &settings.api_key_env,
            settings.timeout,
            RetryPolicy {
                max_attempts: settings.max_attempts,
                max_server_wait: settings.max_retry_wait,
                ..RetryPolicy::default()
            },
            Arc::new(RateLimits::new(
                settings.rpm,
                settings.tpm,
                settings.max_retry_wait,
            )),
            Arc::new(Concurrency::new(settings.jobs)),
            Arc::clone(stats),
        )
    };
    let key = settings.api_key.as_ref().map(|k| k.expose());
    let key_env = settings.api_key_env.clone();
    Ok(match settings.provider {
        ProviderKind::Offline => {
            Arc::new(crate::providers::offline::Offline::new(Arc::clone(rules)))
        }
        ProviderKind::Openai => Arc::new(Remote::new(
            crate::providers::openai::OpenAi { key_env },
            http("openai")?,
            &settings.base_url,
            &settings.model,
            key,
        )?),
        ProviderKind::Anthropic => Arc::new(Remote::new(
            crate::providers::anthropic::Anthropic {
                key_env,
                version: settings.anthropic_version.clone(),
            },
            http("anthropic")?,
            &settings.base_url,
            &settings.model,
            key,
        )?),
    })
}

fn display_root(root: &Path) -> String {
    root.canonicalize()
        .unwrap_or_else(|_| root.to_path_buf())
        .display()
        .to_string()
}
