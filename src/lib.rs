//! fanscan audits a code repository with LLM agents, fanned out; the pipeline
//! reads straight off [`scan`] and [`merge`]. Its stages, the module layers
//! and what each takes and gives are described once, in `docs/architecture.md`.

mod agents;
mod config;
mod engine;
mod eval;
pub mod exit;
#[doc(hidden)]
pub mod fuzzing;
mod llm;
mod model;
mod pipeline;
mod progress;
mod report;
mod stages;
mod store;
mod tools;
mod util;

use std::sync::Arc;

use agents::AgentDefinition;
use pipeline::steps;
use report::shard::MergeError;
use stages::brief::Brief;
use stages::fanout::FanOut;

pub use agents::AgentSet;
pub use agents::subagent::{AgentStatus, AgentTask, GroupReport, TaskFile};
pub use config::{
    GateArgs, OutputArgs, Outputs, PlannerKind, ProviderArgs, ProviderKind, RunArgs, ScanArgs,
    Settings, ShardArgs,
};
pub use eval::{Count, EvalArgs, EvalError, EvalFormat, MatchBy, Score, evaluate};
pub use llm::control::RunControl;
pub use llm::events::{Event, EventSink};
pub use llm::providers::EngineKind;
pub use llm::providers::batch::{BatchPhase, BatchStats, OnRound, OpenBatch, RoundEvent};
pub use model::challenge::Stance;
pub use model::findings::Severity;
pub use pipeline::ask::{Answer, AskError, CitationStatus, Totals, ask};
pub use pipeline::context::{Context, SetupError, Ui};
pub use pipeline::error::ScanError;
pub use pipeline::publish::render;
pub use progress::{AgentLine, Hidden, Reporter, StageReport};
pub use report::since::FindingRef;
pub use report::{Format, RenderError, Report, SarifSuppressed};
pub use stages::baseline::{Accept, Baseline};
pub use stages::brief::BriefSource;
pub use stages::gate::{Baselined, Expired, ExpiredBy, FailOn, Outcome, Suppressed};
pub use stages::inventory::{Inventory, InventoryOptions, walk};
pub use stages::plan::render::{json as plan_json, text as plan_text};
pub use stages::plan::shard::{Shard, ShardQuota, Share, ShareKind};
pub use stages::plan::{Plan, Routing, pack_plan};
pub use stages::reduce::Merged;
pub use store::{StoreError, diff_text, history_text};
pub use util::git::{Checkout, GitCheckout};
pub use util::human_count;

/// The whole pipeline: inventory → plan → brief → fan-out, then the tail
/// it shares with [`merge`] (verify → challenge → reduce → triage →
/// report). Only setup errors stop it; everything after is in the report.
pub async fn scan(ctx: &Context, ui: &Ui) -> Result<Report, ScanError> {
    let started = pipeline::context::Started::now();
    let s = &ctx.settings;
    let _time_limit = ui.control.time_limit(s.max_duration);
    steps::show_batch_rounds(ctx, ui);
    let auditor = Arc::new(ctx.agent(&s.agent)?.clone());
    let reducer = ctx.agent("reducer")?;

    let inventory = stages::inventory::walk(&s.root, &InventoryOptions::from(s))?;
    // The tools below still reach the whole inventory, for context.
    let (scope, sarif) = steps::scope(ctx, &inventory)?;
    let (plan, planner_usage) = ctx.planner()?.plan(&scope).await?;
    let (tasks, outside_leads) = steps::tasks(ctx, &plan, &scope, sarif, &inventory)?;
    ctx.check_budget(&plan, &auditor)?;
    let spend = Arc::new(ctx.spend(ui.control.clone(), planner_usage));
    let tools = Arc::new(steps::scoped_tools(&ctx.tools, &inventory));
    let specialists =
        stages::samples::with_samples(stages::plan::group_agents(&plan, &ctx.agents)?, s.samples);
    let run_info = ctx.run_info(&plan, &started);
    let (mut run, store_warnings) = steps::open_store(ctx, &auditor, reducer, &run_info).await?;
    let briefed = steps::brief_stage(ctx, ui, &inventory, &tools, &spend, run.as_mut()).await?;
    let (auditor, specialists) = briefed.apply(auditor, specialists);
    let store = store::prepare(ctx.tools.root(), run, store_warnings, &specialists, tasks).await?;
    let specialists = store.split.with_origins(specialists);
    let (events, progress) = ui.progress(store.split.fresh.len());
    let fanned = FanOut {
        definition: auditor,
        harness: ctx.harness.clone(),
        tools: Arc::clone(&tools),
        events: Some(events),
        transcripts: ui.transcripts.is_some(),
        control: ui.control.clone(),
        spend: Arc::clone(&spend),
        specialists,
        journal: store.run.as_ref().map(store::ScanStore::journal),
        cache_scope: Arc::from(plan.hash()),
    }
    .run(store.split.fresh)
    .await;
    let consumed = progress.finish().await;
    let (fresh, carried_notes) =
        store::fold(store.run.as_ref(), store.split.partials, fanned.reports).await;
    let (reports, reused) = store::cache::in_plan_order(&plan, store.split.reused, fresh);
    let (reports, reused) = stages::samples::combined(reports, reused, s.samples);

    finish_run(
        ctx,
        ui,
        Audited {
            started,
            plan,
            inventory,
            skipped: scope.skipped,
            reports,
            reused,
            not_started: fanned.not_started,
            stopped: Vec::new(),
            notes: Notes {
                setup: store.warnings,
                stages: [
                    briefed.written.notes,
                    carried_notes,
                    consumed.transcript_errors,
                ]
                .concat(),
            },
            carried: None,
            outside_leads,
            brief: briefed.written.brief,
            run: store.run,
            tools,
            spend: &spend,
            reducer,
        },
    )
    .await
}

/// What `scan` and `merge` hand their shared tail: the audited groups and
/// what the report says of how they came.
struct Audited<'a> {
    started: pipeline::context::Started,
    plan: Plan,
    /// The whole inventory: verification reads its files.
    inventory: Inventory,
    /// What the plan's scope skipped.
    skipped: Vec<stages::inventory::Skipped>,
    reports: Vec<GroupReport>,
    reused: std::collections::BTreeMap<String, report::Reused>,
    not_started: Vec<AgentTask>,
    /// Why earlier processes (the shards) stopped; this one's are added.
    stopped: Vec<String>,
    notes: Notes,
    /// What the shards counted and spent (`merge`).
    carried: Option<report::shard::Carried>,
    /// Leads of another tool's SARIF that name no file of the plan.
    outside_leads: Vec<model::leads::OutsideLead>,
    brief: Option<Brief>,
    run: Option<store::ScanStore>,
    tools: Arc<tools::ToolContext>,
    spend: &'a llm::budget::Spend,
    reducer: &'a AgentDefinition,
}

/// The run's notes, in the report's order: `setup`'s, the provider's
/// (read at the end), `stages`', then the skeptic's.
struct Notes {
    setup: Vec<String>,
    stages: Vec<String>,
}

/// The tail of a run: verify → challenge → reduce → triage → report,
/// and the run store's record of it.
async fn finish_run(ctx: &Context, ui: &Ui, a: Audited<'_>) -> Result<Report, ScanError> {
    let s = &ctx.settings;
    let (checked, lines, reports) =
        steps::verify_off_thread(a.reports, a.inventory, Arc::clone(&a.tools)).await?;
    let skeptic = pipeline::skeptic::Skeptic {
        definition: ctx.agents.get(pipeline::skeptic::SKEPTIC),
        harness: &ctx.harness,
        rules: &ctx.rules,
        // A shard's findings are challenged in `fanscan merge`.
        threshold: s.challenge.threshold().filter(|_| s.shard.is_none()),
        quorum: s.quorum,
    };
    let run = a.run.as_ref();
    let challenged = pipeline::skeptic::challenge(
        skeptic,
        ui,
        a.spend,
        run,
        &a.tools,
        checked,
        a.brief.as_ref(),
    )
    .await;
    let checked = challenged.checked;

    let mut reduced = steps::reduce_or_reuse(ctx, ui, a.reducer, run, &checked, &reports).await;
    a.spend
        .account("reducer", reduced.usage, &ctx.model_of("reducer"));
    let triage = steps::triage(ctx, &mut reduced, &reports, &lines);
    let part = s
        .shard
        .map(|shard| steps::shard_part(shard, s.shard_quota.clone(), &a.plan, &reports, ui));
    let outputs = s.outputs();
    steps::batch_rounds_ended(ctx).await;
    let (calls, spent) = match a.carried {
        Some(carried) => carried.with_merge(a.spend.ledger(), ctx.call_counts()),
        None => (ctx.call_counts(), a.spend.ledger()),
    };
    let mut report = report::assemble(report::Parts {
        run: ctx.run_info(&a.plan, &a.started),
        plan: a.plan,
        skipped: a.skipped,
        reports,
        reused: a.reused,
        not_started: a.not_started,
        reduced,
        stopped: [a.stopped, ui.control.reasons()].concat(),
        run_notes: [
            a.notes.setup,
            ctx.harness.provider().notes(),
            a.notes.stages,
            challenged.notes,
        ]
        .concat(),
        calls,
        spent,
        triage,
        policy: s.gate,
        diff: ctx.changes.clone(),
        outside_leads: a.outside_leads,
        shard: part,
        brief: a.brief,
        // A shard says which share of the run's limits it ran with;
        // `merge` carries the note of each shard into the merged report.
        closing_notes: s
            .shard_quota
            .iter()
            .map(|quota| format!("This shard's limits: {}.", quota.describe()))
            .collect(),
        sarif: outputs
            .writes(report::Format::Sarif, s.format)
            .then(|| outputs.sarif_suppressed()),
        token_estimate: a.spend.token_estimate(),
        batch: ctx.harness.provider().rounds().map(|r| r.stats()),
    });
    // The run store records the run: its id, and what changed since the
    // last one (which needs the finished report).
    run.iter().for_each(|run| run.finish(&mut report));
    Ok(report)
}

/// `fanscan merge`: checks that the partial reports at `parts` come from
/// one plan and cover each of its groups exactly once, that the checkout
/// (the context's root) holds the files they audited, then verifies,
/// challenges, reduces and reports them as one run (the tail of
/// [`scan`]).
pub async fn merge(
    ctx: &Context,
    ui: &Ui,
    parts: &[std::path::PathBuf],
) -> Result<Report, ScanError> {
    let started = pipeline::context::Started::now();
    let s = &ctx.settings;
    if s.planner == PlannerKind::Llm {
        return Err(MergeError::LlmPlanner.into());
    }
    let auditor = ctx.agent(&s.agent)?;
    let reducer = ctx.agent("reducer")?;
    let loaded = parts
        .iter()
        .map(|p| report::shard::load(p).map(|r| (p.clone(), r)))
        .collect::<Result<Vec<_>, _>>()?;
    let joined = report::shard::join(loaded)?;
    let inventory = stages::inventory::walk(&s.root, &InventoryOptions::from(s))?;
    let scope = stages::plan::in_scope(&inventory, ctx.changes.as_ref());
    let (local, _) = ctx.planner()?.plan(&scope).await?;
    if local.hash() != joined.plan.hash() {
        return Err(MergeError::CheckoutPlan {
            root: s.root.display().to_string(),
            ours: local.hash(),
            theirs: joined.plan.hash(),
        }
        .into());
    }
    report::shard::check_checkout(ctx.tools.root(), &joined)?;
    let checkout_note = report::shard::checkout_note(&joined.checkouts, &ctx.checkout);
    let tools = Arc::new(steps::scoped_tools(&ctx.tools, &inventory));
    let run_info = ctx.run_info(&joined.plan, &started);
    let (run, warned) =
        store::ScanStore::open(s, ctx.store_keys(), auditor, reducer, &run_info).await?;
    // The shards planned; the merge pays only its skeptic and reducer.
    let spend = ctx.spend(ui.control.clone(), None);
    let carried = joined.carried();
    let not_started = steps::plan_tasks_named(&joined.plan, &scope, &joined.not_started);
    finish_run(
        ctx,
        ui,
        Audited {
            started,
            plan: joined.plan,
            inventory,
            skipped: scope.skipped,
            reports: joined.reports,
            reused: joined.reused,
            not_started,
            stopped: joined.stopped,
            notes: Notes {
                setup: [warned, joined.notes, checkout_note.into_iter().collect()].concat(),
                stages: Vec::new(),
            },
            carried: Some(carried),
            outside_leads: Vec::new(),
            // The shards' briefs are not carried in their parts: the
            // merge's skeptic runs without one.
            brief: None,
            run,
            tools,
            spend: &spend,
            reducer,
        },
    )
    .await
}
