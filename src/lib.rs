//! fanscan audits a code repository with LLM agents, fanned out.
//!
//! The pipeline reads straight off [`scan`]: inventory → plan → fan-out →
//! verify → reduce → report. Each stage is a module with a plain data type
//! at each boundary; nothing is global.

pub mod agents;
pub mod budget;
pub mod config;
pub mod events;
pub mod fanout;
pub mod findings;
pub mod inventory;
pub mod plan;
pub mod prices;
pub mod progress;
pub mod providers;
pub mod reduce;
pub mod report;
pub mod rules;
pub mod tools;
pub mod verify;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use indicatif::MultiProgress;
use sha2::{Digest, Sha256};

use agents::{AgentSet, AgentStatus};
use config::{ConfigError, PlannerKind, ProviderKind, Settings};
use fanout::{FanOut, RunControl};
use inventory::{Inventory, InventoryOptions};
use plan::Plan;
use prices::Prices;
use providers::http::{CallStats, HttpLayer, RetryPolicy};
use providers::limits::{Concurrency, RateLimits};
use providers::{SharedProvider, Usage};
use report::{Coverage, FailedFile, GroupOutcome, Manifest, Report, Stats, ToolInfo};
use rules::RuleSet;
use tools::secrets::Redactor;
use tools::{ToolContext, ToolLimits};

/// Estimated tokens of `bytes` bytes of text (bytes / 3, rounded up): a
/// deliberately high estimate for code, so budgets err on the safe side.
pub fn estimate_tokens(bytes: u64) -> u64 {
    bytes.div_ceil(3)
}

/// Lowercase hex SHA-256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Errors that stop a run before it scans: exit code 2.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Inventory(#[from] inventory::InventoryError),
    #[error("invalid agent definitions:\n{}", .0.iter().map(|e| format!("  {e}")).collect::<Vec<_>>().join("\n"))]
    Agents(Vec<agents::DefinitionError>),
    #[error("{0}")]
    Other(String),
}

/// What a run is built from: settings resolved, files loaded, provider made.
pub struct Context {
    pub settings: Settings,
    pub agents: AgentSet,
    pub rules: Arc<RuleSet>,
    pub prices: Prices,
    pub provider: SharedProvider,
    pub stats: Arc<CallStats>,
    pub tools: Arc<ToolContext>,
}

impl Context {
    /// Loads agents, rules and prices and builds the provider.
    pub fn new(settings: Settings) -> Result<Self, SetupError> {
        let meta = std::fs::metadata(&settings.root);
        if !meta.as_ref().is_ok_and(std::fs::Metadata::is_dir) {
            return Err(SetupError::Inventory(if meta.is_ok() {
                inventory::InventoryError::NotADirectory {
                    path: settings.root.display().to_string(),
                }
            } else {
                inventory::InventoryError::Missing {
                    path: settings.root.display().to_string(),
                }
            }));
        }
        let agents = AgentSet::load(&settings.root).map_err(SetupError::Agents)?;
        let rules = match &settings.rules {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| {
                    SetupError::Other(format!(
                        "{}: cannot read the rule file: {e}",
                        path.display()
                    ))
                })?;
                RuleSet::parse(&path.display().to_string(), &text)
            }
            None => RuleSet::builtin(),
        }
        .map_err(SetupError::Other)?;
        let prices = match &settings.prices {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| {
                    SetupError::Other(format!(
                        "{}: cannot read the price table: {e}",
                        path.display()
                    ))
                })?;
                Prices::parse(&path.display().to_string(), &text)
            }
            None => Prices::builtin(),
        }
        .map_err(SetupError::Other)?;
        let rules = Arc::new(rules);
        let stats = Arc::new(CallStats::new(settings.retry_budget));
        let provider = build_provider(&settings, &rules, &stats)?;
        if settings.max_cost.is_some() && provider.engine() == providers::EngineKind::Llm {
            // Every model the run may call must be priced, agents'
            // overrides included, or the budget could not be kept.
            let models = std::iter::once(provider.model().to_string())
                .chain(agents.iter().filter_map(|a| a.model.clone()));
            for model in models {
                if prices.get(&model).is_none() {
                    return Err(SetupError::Config(ConfigError(format!(
                        "--max-cost needs the price of model {model:?}, which is not in the price table; add it to a copy of configs/prices.toml and pass --prices FILE"
                    ))));
                }
            }
        }
        let tools = ToolContext::new(
            &settings.root,
            ToolLimits {
                max_file_bytes: settings
                    .max_file_bytes
                    .max(ToolLimits::default().max_file_bytes),
                ..ToolLimits::default()
            },
            Arc::new(Redactor::new()),
        )
        .map_err(|e| SetupError::Other(format!("{}: {e}", settings.root.display())))?;
        Ok(Self {
            settings,
            agents,
            rules,
            prices,
            provider,
            stats,
            tools: Arc::new(tools),
        })
    }

    /// The price of the run's model (zero for the offline engine).
    pub fn price(&self) -> Option<prices::Price> {
        self.pricer()(self.provider.model())
    }

    /// Prices any model of this run (zero for the offline engine).
    pub fn pricer(&self) -> impl Fn(&str) -> Option<prices::Price> + Send + Sync + 'static {
        let offline = self.provider.engine() == providers::EngineKind::RuleEngine;
        let prices = self.prices.clone();
        move |model: &str| {
            if offline {
                Some(prices::Price::default())
            } else {
                prices.get(model)
            }
        }
    }
}

/// Builds the provider the settings name, over the one HTTP layer.
pub fn build_provider(
    settings: &Settings,
    rules: &Arc<RuleSet>,
    stats: &Arc<CallStats>,
) -> Result<SharedProvider, SetupError> {
    // One limiter and one concurrency limit per provider, and so per key
    // and model: every agent of the run shares them.
    let limits = Arc::new(RateLimits::new(
        settings.rpm,
        settings.tpm,
        settings.max_retry_wait,
    ));
    let concurrency = Arc::new(Concurrency::new(settings.jobs));
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
            Arc::clone(&limits),
            Arc::clone(&concurrency),
            Arc::clone(stats),
        )
        .map_err(|e| SetupError::Other(e.to_string()))
    };
    let key = settings.api_key.as_ref().map(|k| k.expose());
    Ok(match settings.provider {
        ProviderKind::Offline => Arc::new(providers::offline::Offline::new(Arc::clone(rules))),
        ProviderKind::Openai => Arc::new(
            providers::openai::OpenAi::new(
                http("openai")?,
                &settings.base_url,
                &settings.model,
                key,
            )
            .map_err(|e| SetupError::Other(e.to_string()))?,
        ),
        ProviderKind::Anthropic => Arc::new(
            providers::anthropic::Anthropic::new(
                http("anthropic")?,
                &settings.base_url,
                &settings.model,
                key,
                &settings.anthropic_version,
            )
            .map_err(|e| SetupError::Other(e.to_string()))?,
        ),
    })
}

/// The inventory of the settings' root.
pub fn take_inventory(settings: &Settings) -> Result<Inventory, SetupError> {
    Ok(inventory::walk(
        &settings.root,
        &InventoryOptions {
            hidden: settings.hidden,
            max_file_bytes: settings.max_file_bytes,
            include: settings.include.clone(),
            exclude: settings.exclude.clone(),
            include_vendored: settings.include_vendored,
        },
    )?)
}

/// Plans the scan with the configured planner. Returns the plan and the
/// tokens the planner used.
pub async fn make_plan(ctx: &Context, inventory: &Inventory) -> Result<(Plan, Usage), SetupError> {
    let settings = &ctx.settings;
    let (plan, usage) = match settings.planner {
        PlannerKind::Pack => (
            plan::pack_plan(inventory, settings.group_tokens),
            Usage::default(),
        ),
        PlannerKind::Llm => {
            let planner = ctx.agents.get("planner").map_err(SetupError::Other)?;
            plan::llm::plan(
                inventory,
                settings.group_tokens,
                planner,
                ctx.provider.as_ref(),
                settings.max_output_tokens,
            )
            .await
        }
    };
    plan.check_cap(settings.max_groups)
        .map_err(|e| SetupError::Config(ConfigError(e)))?;
    Ok((plan, usage))
}

/// How a scan shows itself.
pub struct Ui {
    /// Where progress bars draw (hidden when not a terminal or quiet).
    pub multi: MultiProgress,
    /// Where transcripts go.
    pub transcripts: Option<std::path::PathBuf>,
    /// Ctrl-C and budgets stop the run through this.
    pub control: RunControl,
}

/// The whole pipeline: inventory → plan → fan-out → verify → reduce →
/// report. Only setup errors are errors; everything after is in the report.
pub async fn scan(ctx: &Context, ui: &Ui) -> Result<Report, SetupError> {
    let started_at = jiff::Timestamp::now();
    let clock = Instant::now();
    let settings = &ctx.settings;
    let auditor = Arc::new(
        ctx.agents
            .get(&settings.agent)
            .map_err(SetupError::Other)?
            .clone(),
    );
    let reducer = ctx.agents.get("reducer").map_err(SetupError::Other)?;

    let inventory = take_inventory(settings)?;
    let (plan, planner_usage) = make_plan(ctx, &inventory).await?;
    let tasks = plan.tasks(&inventory);
    // Agents read only what the scan covers: excluded or ignored files stay
    // out of every prompt.
    let tools = Arc::new(
        ctx.tools
            .scoped(inventory.files.iter().map(|f| f.path.clone())),
    );

    let pricer = ctx.pricer();
    let spend = Arc::new(
        budget::Spend::new(
            settings.max_tokens,
            settings.max_cost,
            ctx.price(),
            ui.control.clone(),
        )
        .with_pricer(Box::new(move |model| pricer(model))),
    );
    let planner_model = ctx
        .agents
        .get("planner")
        .ok()
        .and_then(|p| p.model.clone())
        .unwrap_or_else(|| ctx.provider.model().to_string());
    spend.add(planner_usage, &planner_model);
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let consumer = progress::Consumer {
        multi: ui.multi.clone(),
        total_groups: tasks.len() as u64,
        transcripts: ui.transcripts.clone(),
    };
    let consumer = tokio::spawn(consumer.run(rx));
    if let Some(limit) = settings.max_duration {
        let control = ui.control.clone();
        let text = humanize(limit);
        tokio::spawn(async move {
            tokio::time::sleep(limit).await;
            control.wind_down(&format!(
                "the time budget (--max-duration {text}) ran out: no new group was started and running agents gave their summary"
            ));
        });
    }
    let fan = FanOut {
        definition: auditor,
        provider: Arc::clone(&ctx.provider),
        tools: Arc::clone(&tools),
        jobs: settings.jobs,
        max_output_tokens: settings.max_output_tokens,
        events: Some(tx),
        transcripts: ui.transcripts.is_some(),
        control: ui.control.clone(),
        spend: Arc::clone(&spend),
    };
    let result = fan.run(tasks).await;
    drop(fan);
    let consumed = consumer.await.unwrap_or_default();

    let tools = Arc::clone(&tools);
    let reports = result.reports;
    let (checked, reports, inventory) = tokio::task::spawn_blocking(move || {
        let checked = verify::verify(&reports, &inventory, &tools);
        (checked, reports, inventory)
    })
    .await
    .map_err(|e| SetupError::Other(format!("verification failed: {e}")))?;

    let skip_reducer = ui.control.stop.is_cancelled();
    let reduced = reduce::Reducer {
        definition: reducer,
        provider: ctx.provider.as_ref(),
        // Batches exist for a model's context; the counted summary (the
        // offline engine's, or a stopped run's) takes everything at once.
        context_tokens: if skip_reducer
            || ctx.provider.engine() == providers::EngineKind::RuleEngine
        {
            u64::MAX
        } else {
            60_000
        },
        max_output_tokens: settings.max_output_tokens,
        // A run stopped early (budget, Ctrl-C) spends nothing more: its
        // summary is counted, not written.
        skip_model: skip_reducer,
    }
    .reduce(&checked, &reports)
    .await;

    // Coverage: every planned file ends reviewed, skipped or failed.
    let mut coverage = Coverage {
        skipped: inventory.skipped.clone(),
        ..Coverage::default()
    };
    for r in &reports {
        let read: BTreeSet<&str> = r.files_read.iter().map(String::as_str).collect();
        for f in &r.files {
            if r.status.reviewed() {
                coverage.reviewed.push(f.path.clone());
                if !read.contains(f.path.as_str()) {
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
    for t in &result.not_started {
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

    // Usage per agent (the planner, each group's agent, the reducer) and in
    // total, each with its cost.
    // Each agent's calls are priced by the model that answered them.
    let pricer = ctx.pricer();
    let model_of = |name: &str| {
        ctx.agents
            .get(name)
            .ok()
            .and_then(|a| a.model.clone())
            .unwrap_or_else(|| ctx.provider.model().to_string())
    };
    let mut by_agent: BTreeMap<String, report::AgentUsage> = BTreeMap::new();
    let mut charge = |name: &str, model: &str, u: Usage| {
        let entry = by_agent
            .entry(name.to_string())
            .or_insert(report::AgentUsage {
                usage: Usage::default(),
                cost_usd: Some(0.0),
            });
        entry.usage.add(u);
        entry.cost_usd = match (entry.cost_usd, pricer(model)) {
            (Some(c), Some(p)) => Some(c + p.cost(&u)),
            _ => None,
        };
    };
    if settings.planner == PlannerKind::Llm {
        charge("planner", &model_of("planner"), planner_usage);
    }
    for r in &reports {
        charge(&r.agent, &r.model, r.usage);
    }
    charge("reducer", &model_of("reducer"), reduced.usage);
    let mut usage = Usage::default();
    let mut cost = Some(0.0);
    for a in by_agent.values() {
        usage.add(a.usage);
        cost = cost.zip(a.cost_usd).map(|(x, y)| x + y);
    }
    let agent_usage = by_agent;
    let mut incomplete_reasons = ui.control.reasons();
    let failed_groups = reports.iter().filter(|r| !r.status.reviewed()).count();
    if failed_groups > 0 {
        incomplete_reasons.push(format!("{failed_groups} groups failed."));
    }
    if !result.not_started.is_empty() {
        incomplete_reasons.push(format!(
            "{} groups never started.",
            result.not_started.len()
        ));
    }
    let mut notes = plan.notes.clone();
    notes.extend(reduced.notes.clone());
    notes.extend(consumed.transcript_errors);
    let wrapped = reports
        .iter()
        .filter(|r| r.status == AgentStatus::WrappedUp)
        .count();
    if wrapped > 0 {
        notes.push(format!(
            "{wrapped} agents were asked to wrap up early and gave their summary"
        ));
    }
    let max_rounds = reports
        .iter()
        .filter(|r| r.status == AgentStatus::MaxRounds)
        .count();
    if max_rounds > 0 {
        notes.push(format!(
            "{max_rounds} agents reached max_rounds; their summaries were still taken"
        ));
    }
    let agents: BTreeMap<String, String> = ctx
        .agents
        .iter()
        .map(|a| (a.name.clone(), a.hash.clone()))
        .collect();
    let manifest = Manifest {
        agents,
        rules_source: ctx.rules.source.clone(),
        rules_hash: ctx.rules.hash.clone(),
        plan_hash: plan.hash(),
        group_tokens: settings.group_tokens,
        jobs: settings.jobs,
    };
    let stats = Stats {
        requests: ctx.stats.requests.load(Ordering::Relaxed),
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
        cached_tokens: usage.cached_tokens,
        retries: ctx.stats.retries.load(Ordering::Relaxed),
        rate_limited: ctx.stats.rate_limited.load(Ordering::Relaxed),
        lowest_concurrency: ctx.stats.lowest_concurrency.load(Ordering::Relaxed),
        cost_usd: cost,
        agents: agent_usage,
    };
    Ok(Report {
        schema_version: report::SCHEMA_VERSION,
        tool: ToolInfo {
            name: "fanscan".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        },
        provider: ctx.provider.name().into(),
        engine: ctx.provider.engine(),
        model: ctx.provider.model().into(),
        root: display_root(&settings.root),
        started_at: started_at.to_string(),
        duration_ms: u64::try_from(clock.elapsed().as_millis()).unwrap_or(u64::MAX),
        manifest,
        complete: incomplete_reasons.is_empty(),
        incomplete_reasons,
        summary: reduced.summary,
        groups: reports.iter().map(GroupOutcome::from).collect(),
        plan,
        findings: reduced.findings,
        unverified: reduced.unverified,
        coverage,
        stats,
        notes,
    })
}

fn display_root(root: &Path) -> String {
    root.canonicalize()
        .unwrap_or_else(|_| root.to_path_buf())
        .display()
        .to_string()
}

fn humanize(d: std::time::Duration) -> String {
    let secs = d.as_secs();
    if secs.is_multiple_of(3600) && secs > 0 {
        format!("{}h", secs / 3600)
    } else if secs.is_multiple_of(60) && secs > 0 {
        format!("{}m", secs / 60)
    } else {
        format!("{secs}s")
    }
}
