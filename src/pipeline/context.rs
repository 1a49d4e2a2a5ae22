//! Setting a run up: the settings resolved, the agent definitions, rules
//! and prices loaded, the provider built over the one HTTP layer.
//!
//! Takes [`Settings`]; gives a [`Context`] that every command runs with,
//! or a [`SetupError`] (exit code 2) that names the thing and the fix.
//! The context is the resolved run; the stages' work lives in their
//! modules. What it gives them are their inputs (the [`Planner`], the
//! store's [`Keys`], the budget's [`Limits`] and prices), so that `scan`
//! and `plan` walk and plan the same way.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::agents::{
    AgentDefinition, AgentRun, AgentSet, AgentTask, DefinitionError, GroupReport, Harness,
    TaskFile, UnknownAgent, run_subagent,
};
use crate::config::{ConfigError, DiffSource, PlannerKind, ProviderKind, Settings};
use crate::engine::rules::{RuleError, RuleSet};
use crate::llm::budget::{BudgetTooSmall, Limits, Spend};
use crate::llm::control::RunControl;
use crate::llm::conversation::Usage;
use crate::llm::events::EventSink;
use crate::llm::prices::{Price, PriceError, Prices};
use crate::llm::providers::http::{CallStats, HttpLayer, RetryPolicy};
use crate::llm::providers::limits::{Concurrency, RateLimits};
use crate::llm::providers::remote::Remote;
use crate::llm::providers::{ProviderError, SharedProvider};
use crate::report::{CallCounts, Manifest, RunInfo, Sources};
use crate::stages::baseline::{Baseline, BaselineError};
use crate::stages::fanout::{FanOut, FanOutResult};
use crate::stages::inventory::{Inventory, InventoryError, InventoryOptions};
use crate::stages::plan::{Plan, PlanError, Planner, PlannerAgent, Routing};
use crate::store::Keys;
use crate::tools::paths::PathError;
use crate::tools::secrets::Redactor;
use crate::tools::{ToolContext, ToolLimits};
use crate::util::git::{ChangeSet, Checkout, ConfigOrigin, GitError};

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
    #[error(transparent)]
    Leads(#[from] crate::stages::leads::LeadsError),
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
    #[error(transparent)]
    Budget(#[from] BudgetTooSmall),
}

/// What a run is built from: settings resolved, files loaded, provider made.
pub struct Context {
    pub settings: Settings,
    pub agents: AgentSet,
    pub(crate) rules: Arc<RuleSet>,
    prices: Prices,
    /// The provider, output cap and `--jobs` every agent stage shares.
    pub(crate) harness: Harness,
    stats: Arc<CallStats>,
    pub(crate) tools: Arc<ToolContext>,
    /// A diff scan's changed files.
    pub changes: Option<ChangeSet>,
    /// The accepted findings (`--baseline`).
    pub baseline: Option<Baseline>,
    /// Where the baseline was read from, for the manifest.
    baseline_source: Option<String>,
    /// The scanned tree's state in git, read once here: every report of
    /// the run names the same commit, whatever git does meanwhile.
    pub checkout: Checkout,
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
                return Err(ConfigError::NotDelegable {
                    glob: glob.clone(),
                    name: name.clone(),
                    valid: valid.join(", "),
                }
                .into());
            }
        }
        let rules = Arc::new(
            match (&settings.rules, &settings.base_rules) {
                (Some(path), _) => RuleSet::load(path)?,
                (None, Some(rel)) => {
                    let shown = format!("{}:{rel}", settings.config_origin.describe());
                    let text = settings
                        .config_origin
                        .read(&settings.root, rel)?
                        .ok_or_else(|| ConfigError::RulesMissing(shown.clone()))?;
                    RuleSet::parse(&shown, &text)?
                }
                (None, None) => RuleSet::builtin(),
            }
            // A shard's findings are challenged in `fanscan merge`.
            .keeping_trees_at(
                settings
                    .challenge
                    .threshold()
                    .filter(|_| settings.shard.is_none()),
            ),
        );
        let changes = match &settings.diff {
            Some(DiffSource::Since(reference)) => {
                Some(crate::util::git::diff(&settings.root, reference)?)
            }
            Some(DiffSource::List(list)) => {
                Some(crate::util::git::changed_files(&settings.root, list)?)
            }
            None => None,
        };
        let (baseline, baseline_source) = load_baseline(&settings)?;
        let checkout = crate::util::git::checkout(&settings.root);
        let prices = match &settings.prices {
            Some(path) => Prices::load(path)?,
            None => Prices::builtin()?,
        };
        let stats = Arc::new(CallStats::new(settings.retry_budget));
        let provider = build_provider(&settings, &rules, &stats)?;
        if settings.max_cost.is_some() {
            // Every model the run may call must be priced, agents'
            // overrides included, or the budget could not be kept.
            let models = std::iter::once(provider.model().to_string())
                .chain(agents.iter().filter_map(|a| a.model.clone()));
            for model in models {
                if provider.price(&prices, &model).is_none() {
                    return Err(ConfigError::Unpriced(model).into());
                }
            }
        }
        let limits = ToolLimits {
            max_file_bytes: settings
                .max_file_bytes
                .max(ToolLimits::default().max_file_bytes),
            ..ToolLimits::default()
        };
        let tools = ToolContext::new(&settings.root, limits, Arc::new(Redactor::new()))
            .map_err(|error| match error {
                crate::tools::ToolSetupError::Root(error) => {
                    SetupError::Root { path: shown, error }
                }
                other => SetupError::Tools(other.to_string()),
            })?
            // `definition` and `references` answer from the engine's parse.
            .with_symbols(Arc::new(crate::engine::symbols::index));
        let harness = Harness::new(provider, settings.max_output_tokens, settings.jobs)
            .with_rule_leads(settings.leads.rules.then(|| Arc::clone(&rules)))
            .with_fallback_model(settings.fallback_model.clone());
        Ok(Self {
            settings,
            agents,
            rules,
            prices,
            harness,
            stats,
            tools: Arc::new(tools),
            changes,
            baseline,
            baseline_source,
            checkout,
        })
    }

    /// What a scan plans: the whole inventory, or for a diff scan only its
    /// changed files (see [`crate::stages::plan::in_scope`]).
    pub fn in_scope(&self, inventory: &Inventory) -> Inventory {
        crate::stages::plan::in_scope(inventory, self.changes.as_ref())
    }

    /// The definition of agent `name`.
    pub fn agent(&self, name: &str) -> Result<&AgentDefinition, SetupError> {
        Ok(self.agents.get(name)?)
    }

    /// Prices any model of this run, as its provider bills it (the
    /// offline engine bills nothing).
    pub(crate) fn pricer(&self) -> impl Fn(&str) -> Option<Price> + Send + Sync + 'static {
        self.harness.pricer(self.prices.clone())
    }

    /// The run's budget over `control`, every call priced by its model.
    ///
    /// `planner` is what the planner agent already spent, counted first.
    pub(crate) fn spend(&self, control: RunControl, planner: Option<Usage>) -> Spend {
        let pricer = self.pricer();
        let price = pricer(self.harness.provider().model());
        let spend = Spend::new(
            self.settings.max_tokens,
            self.settings.max_cost,
            price,
            control,
        )
        .with_pricer(Box::new(pricer));
        if let Some(usage) = planner {
            spend.add("planner", usage, &self.model_of("planner"));
        }
        spend
    }

    /// The model agent `name` runs on: its own, else the run's.
    pub(crate) fn model_of(&self, name: &str) -> String {
        match self.agents.get(name) {
            Ok(agent) => self.harness.model_for(agent).to_string(),
            Err(_) => self.harness.provider().model().to_string(),
        }
    }

    /// The inventory of the settings' root.
    pub fn inventory(&self) -> Result<Inventory, SetupError> {
        let s = &self.settings;
        Ok(crate::stages::inventory::walk(
            &s.root,
            &InventoryOptions::from(s),
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
            .map_err(|e| ConfigError::Routing(e.to_string()).into())
    }

    /// The planner as the settings configure it: `--group-tokens`,
    /// `--max-groups`, the [`Context::routing`], and the planner agent
    /// (offered the delegable agents unless `--agent` is forced) for
    /// `--planner llm`.
    pub(crate) fn planner(&self) -> Result<Planner<'_>, SetupError> {
        let s = &self.settings;
        let agent = match s.planner {
            PlannerKind::Pack => None,
            PlannerKind::Llm => Some(PlannerAgent {
                definition: self.agent("planner")?,
                harness: &self.harness,
                choices: if s.agent_forced {
                    Vec::new()
                } else {
                    self.agents
                        .delegable()
                        .map(|a| (a.name.clone(), a.description.clone()))
                        .collect()
                },
            }),
        };
        Ok(Planner {
            group_tokens: s.group_tokens,
            max_groups: s.max_groups,
            routing: self.routing()?,
            agent,
            changes: self.changes.as_ref(),
        })
    }

    /// Plans the scan with the configured planner, within `--max-groups`;
    /// every group has one agent (see [`Context::routing`]).
    /// Returns the plan and the tokens the planner used.
    pub async fn plan(&self, inventory: &Inventory) -> Result<(Plan, Usage), SetupError> {
        let (plan, usage) = self.planner()?.plan(inventory).await?;
        Ok((plan, usage.unwrap_or_default()))
    }

    /// The plan without the `--max-groups` cap, for `fanscan plan`: the cap
    /// keeps a scan from starting too many agents, and showing a plan
    /// starts none. [`Plan::check_cap`] says whether a scan would refuse it.
    pub async fn plan_uncapped(&self, inventory: &Inventory) -> Result<(Plan, Usage), SetupError> {
        let (plan, usage) = self.planner()?.plan_uncapped(inventory).await;
        Ok((plan, usage.unwrap_or_default()))
    }

    /// A token and cost range for a scan of `plan` by the run's agent;
    /// calls nothing.
    pub fn estimate(
        &self,
        plan: &Plan,
        inventory: &Inventory,
    ) -> Result<crate::stages::plan::estimate::Estimate, SetupError> {
        use crate::stages::plan::estimate::Content;
        let agent = self.agent(&self.settings.agent)?;
        let model = self.harness.model_for(agent);
        // The model's own tokenizer counts the files' text when it has a
        // public one; else the plan's bytes / 3 stands.
        let counter = crate::llm::tokens::TokenCounter::for_model(model);
        let content = if counter.exact() {
            Content::counted(plan, inventory, counter)
        } else {
            Content::walked(plan)
        };
        // Under --batch the pricer gives the batch price: both are shown.
        let priced = self.pricer()(model);
        let (price, batch_price) = match self.settings.batch {
            Some(_) => (self.prices.get(model), priced),
            None => (priced, None),
        };
        Ok(crate::stages::plan::estimate::estimate(
            plan,
            content,
            model,
            (price, batch_price),
            crate::stages::plan::estimate::Asked {
                max_output_tokens: self.settings.max_output_tokens,
                preload: agent.preload,
                samples: self.settings.samples,
            },
        ))
    }

    /// The run's `--max-tokens` and `--max-cost`.
    pub(crate) fn limits(&self) -> Limits {
        Limits {
            max_tokens: self.settings.max_tokens,
            max_cost: self.settings.max_cost,
        }
    }

    /// Whether the budget can pay for the plan's cheapest group (a shard's
    /// error says the budget is its share).
    pub(crate) fn check_budget(
        &self,
        plan: &Plan,
        auditor: &AgentDefinition,
    ) -> Result<(), BudgetTooSmall> {
        let s = &self.settings;
        let cheapest =
            crate::stages::plan::estimate::cheapest(plan, auditor.preload, s.max_output_tokens);
        crate::llm::budget::check(cheapest, self.limits(), self.price_of(auditor)).map_err(|e| {
            match s.shard {
                Some(shard) => e.of_shard(&shard.to_string()),
                None => e,
            }
        })
    }

    /// The price of the model `agent` runs on, when known.
    pub(crate) fn price_of(&self, agent: &AgentDefinition) -> Option<Price> {
        self.pricer()(self.harness.model_for(agent))
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
            language: crate::util::language::language_of(&resolved.rel).map(str::to_string),
            path: resolved.rel,
        })
    }

    /// The SHA-256 of the file at `path` (repository-relative) as it is
    /// now, for a baseline entry; `None` when it cannot be read or is not
    /// inside the root.
    pub fn file_sha256(&self, path: &str) -> Option<String> {
        let resolved = crate::tools::paths::resolve(self.tools.root(), path).ok()?;
        let bytes = std::fs::read(resolved.real).ok()?;
        Some(crate::util::sha256_hex(&bytes))
    }

    /// Who ran, with what, for the report.
    pub(crate) fn run_info(&self, plan: &Plan, started: &Started) -> RunInfo {
        RunInfo {
            provider: self.harness.provider().name().into(),
            engine: self.harness.engine(),
            model: self.harness.provider().model().into(),
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
                checkout: Some(self.checkout.clone()),
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
            provider: self.harness.provider(),
            tools: &self.tools,
            events,
            wrap_up: &control.wrap_up,
            cancel: &control.cancel,
            spend: &Spend::unlimited(),
            max_output_tokens: self.harness.max_output_tokens(),
            cache_scope: "run-agent",
            // `run-agent` runs the agent on the task as given.
            rule_leads: None,
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
            harness: self.harness.clone(),
            tools: Arc::clone(&self.tools),
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

    /// What the run store's keys share: the provider, the run's model and
    /// the rule set's hash (part of every cache key), with the injection
    /// table's: the tool layer's injection findings are stored with the
    /// group, so a change of its table re-runs groups as a rules change does.
    pub(crate) fn store_keys(&self) -> Keys {
        Keys {
            provider: self.harness.provider().name().into(),
            model: self.harness.provider().model().into(),
            rules_hash: format!(
                "{} injection {}{}",
                self.rules.hash,
                self.tools.injection_hash(),
                // The rules' hits are put to the auditors: a run with them
                // asks other questions than one without.
                if self.harness.rule_leads().is_some() {
                    " leads rules"
                } else {
                    ""
                }
            ),
        }
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

impl From<&Settings> for InventoryOptions {
    /// The walk the settings ask for.
    fn from(s: &Settings) -> Self {
        Self {
            hidden: s.hidden,
            max_file_bytes: s.max_file_bytes,
            include: s.include.clone(),
            exclude: s.exclude.clone(),
            include_vendored: s.include_vendored,
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

/// How a run shows itself and is stopped: its progress display, where
/// transcripts go, and the control that Ctrl-C and budgets stop it through.
/// Clones share the display and the control.
#[derive(Clone)]
pub struct Ui {
    /// What shows the run's progress (the CLI's bars, or nothing).
    pub(crate) reporter: crate::progress::SharedReporter,
    /// Where transcripts go.
    pub(crate) transcripts: Option<std::path::PathBuf>,
    /// Ctrl-C and budgets stop the run through this.
    pub(crate) control: RunControl,
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
            match crate::util::git::show(&settings.root, &base, &rel)? {
                Some(text) => Ok((
                    Some(Baseline::parse(&shown, &text)?),
                    Some(format!("base ref {shown}")),
                )),
                None => Ok((
                    Some(Baseline {
                        version: crate::stages::baseline::VERSION,
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
    /// Progress shown through `reporter`; no transcripts; a fresh control.
    pub fn new(reporter: std::sync::Arc<dyn crate::progress::Reporter>) -> Self {
        Self {
            reporter,
            transcripts: None,
            control: RunControl::default(),
        }
    }

    /// No progress display (tests, benches, batch work).
    pub fn hidden() -> Self {
        Self::new(std::sync::Arc::new(crate::progress::Hidden))
    }

    /// Each agent's conversation is also written to `dir`.
    pub fn with_transcripts(mut self, dir: Option<std::path::PathBuf>) -> Self {
        self.transcripts = dir;
        self
    }

    /// Stopped through `control`, which the caller keeps a clone of.
    pub fn with_control(mut self, control: RunControl) -> Self {
        self.control = control;
        self
    }

    /// The control the run is stopped through.
    pub fn control(&self) -> &RunControl {
        &self.control
    }

    /// Runs `f` with the progress display cleared, for lines on stderr.
    pub fn suspend(&self, f: impl FnOnce()) {
        let mut f = Some(f);
        self.reporter.suspend(&mut || {
            if let Some(f) = f.take() {
                f();
            }
        });
    }

    /// Starts the one event consumer of a run of `groups` groups: progress
    /// on the terminal, transcripts to their directory.
    pub(crate) fn progress(
        &self,
        groups: usize,
    ) -> (
        tokio::sync::mpsc::UnboundedSender<crate::llm::events::Event>,
        crate::progress::Running,
    ) {
        crate::progress::Consumer {
            report: self.reporter.stage(groups as u64),
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
    if let Some(batch) = settings.batch {
        return build_batch(settings, batch, http, key, key_env);
    }
    Ok(match settings.provider {
        ProviderKind::Offline => Arc::new(crate::engine::offline::Offline::new(Arc::clone(rules))),
        ProviderKind::Openai => Arc::new(Remote::new(
            crate::llm::providers::openai::OpenAi { key_env },
            http("openai")?,
            &settings.base_url,
            &settings.model,
            key,
        )?),
        ProviderKind::Anthropic => Arc::new(Remote::new(
            crate::llm::providers::anthropic::Anthropic {
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

/// The `--batch` provider of the settings' wire format: its batch API
/// over the same HTTP layer, waiting at most `--max-duration`.
fn build_batch(
    settings: &Settings,
    batch: crate::config::BatchSettings,
    http: impl Fn(&str) -> Result<HttpLayer, ProviderError>,
    key: Option<&str>,
    key_env: String,
) -> Result<SharedProvider, ProviderError> {
    use crate::llm::providers::batch::{
        BatchProvider, Poll, anthropic::AnthropicBatch, openai::OpenAiBatch,
    };
    let poll = Poll {
        first: batch.poll_max.min(std::time::Duration::from_secs(1)),
        max: batch.poll_max,
    };
    let deadline = settings
        .max_duration
        .map(|limit| std::time::Instant::now() + limit);
    let model = &settings.model;
    Ok(match settings.provider {
        // Refused by the settings; built as the synchronous engine it is.
        ProviderKind::Offline => {
            return Err(ProviderError::Batch {
                provider: "offline".into(),
                message: "the offline engine has no batch API".into(),
            });
        }
        ProviderKind::Openai => Arc::new(BatchProvider::new(
            OpenAiBatch::new(
                crate::llm::providers::openai::OpenAi { key_env },
                http("openai")?,
                &settings.base_url,
                key,
            )?,
            model,
            poll,
            deadline,
        )),
        ProviderKind::Anthropic => Arc::new(BatchProvider::new(
            AnthropicBatch::new(
                crate::llm::providers::anthropic::Anthropic {
                    key_env,
                    version: settings.anthropic_version.clone(),
                },
                http("anthropic")?,
                &settings.base_url,
                key,
            )?,
            model,
            poll,
            deadline,
        )),
    })
}

fn display_root(root: &Path) -> String {
    root.canonicalize()
        .unwrap_or_else(|_| root.to_path_buf())
        .display()
        .to_string()
}
