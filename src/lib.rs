//! fanscan audits a code repository with LLM agents, fanned out.
//!
//! The pipeline reads straight off [`scan`]: inventory → plan → fan-out →
//! verify → reduce → report. Each stage is a module with a plain data type
//! at each boundary; nothing is global. The modules form layers, and none
//! imports from one above it: `util`, `conversation` and `cwe` at the
//! bottom, then `control`, `findings`, `prices`, `rules`, `budget`,
//! `events`, `tools` and `providers`, then `agents`, then the stages, then
//! `report`, `config` and `context`, with `scan`, `ask` and `eval` on top.

mod agents;
mod ask;
mod baseline;
mod brief;
mod budget;
mod challenge;
mod config;
mod context;
mod control;
mod conversation;
mod cwe;
mod eval;
mod events;
mod fanout;
mod findings;
mod gate;
mod git;
mod inventory;
mod language;
mod plan;
mod prices;
mod progress;
mod providers;
mod publish;
mod reduce;
mod report;
mod rules;
mod skeptic;
mod store;
mod suppress;
mod tools;
mod util;
mod verify;

use std::sync::Arc;

use fanout::FanOut;

pub use agents::AgentSet;
pub use agents::definition::{AgentDefinition, DefinitionError};
pub use agents::subagent::{AgentStatus, AgentTask, FileHash, GroupReport, TaskFile};
pub use ask::{Answer, AskError, Citation, CitationStatus, LeadSummary, TaskSummary, Totals, ask};
pub use baseline::{Baseline, BaselineEntry, BaselineError};
pub use brief::{Brief, BriefSource};
pub use budget::AgentUsage;
pub use challenge::{Challenge, Stance};
pub use config::{
    GateArgs, PlannerKind, ProviderArgs, ProviderKind, ScanArgs, Settings, ShardArgs,
};
pub use context::{Context, SetupError, Ui};
pub use control::RunControl;
pub use cwe::{CweEntry, CweError, CweId, CweTable};
pub use eval::{Count, EvalArgs, EvalError, EvalFormat, MatchBy, evaluate};
pub use events::{Event, EventSink};
pub use fanout::FanOutResult;
pub use findings::{Finding, FindingCwe, HowParsed, Origin, Repair, Severity, Unparsed};
pub use gate::{Baselined, FailOn, GatePolicy, Outcome, Suppressed, Verdict};
pub use git::{ChangeSet, ConfigOrigin};
pub use inventory::{Inventory, InventoryOptions, walk};
pub use plan::render::{json as plan_json, text as plan_text};
pub use plan::shard::{Shard, ShardError};
pub use plan::{Plan, Routing, pack_plan};
pub use progress::LogWriter;
pub use providers::EngineKind;
pub use publish::render;
pub use reduce::Merged;
pub use report::shard::{MergeError, ShardPart};
pub use report::since::{FindingRef, SinceLastRun};
pub use report::{Format, RenderError, Report, exit};
pub use store::{StoreError, diff_text, history_text};
pub use suppress::Suppression;

/// A scan that could not produce a report.
#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    /// Before anything was scanned (exit code 2).
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// Verification itself failed: a fanscan bug (exit code 1).
    #[error("verification failed ({0}): a fanscan bug, please report it")]
    Verify(#[source] tokio::task::JoinError),
    /// The run store is foreign, corrupted or newer (exit code 2), or a
    /// panic broke its lookup (a fanscan bug: exit code 1).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Parts that cannot be merged, or a shard that cannot run (exit code 2).
    #[error(transparent)]
    Merge(#[from] MergeError),
}

/// The whole pipeline: inventory → plan → fan-out → verify → reduce →
/// report. Only setup errors stop it; everything after is in the report.
pub async fn scan(ctx: &Context, ui: &Ui) -> Result<Report, ScanError> {
    let started = context::Started::now();
    let settings = &ctx.settings;
    let _time_limit = ui.control.time_limit(settings.max_duration);
    let auditor = Arc::new(ctx.agent(&settings.agent)?.clone());
    let reducer = ctx.agent("reducer")?;

    let inventory = ctx.inventory()?;
    // A diff scan plans only the changed files; the tools below still
    // reach the whole inventory, for context.
    let scope = ctx.in_scope(&inventory);
    let (plan, planner_usage) = ctx.plan(&scope).await?;
    let tasks = shard_tasks(settings, &plan, &scope)?;
    ctx.check_budget(&plan, &auditor)?;
    let spend = Arc::new(ctx.spend(ui.control.clone(), Some(planner_usage)));
    let tools = Arc::new(ctx.scoped_tools(&inventory));
    let specialists = ctx.specialists(&plan)?;
    let (mut run, store_warnings) =
        store::ScanStore::open(ctx, &auditor, reducer, &ctx.run_info(&plan, &started))?;
    let briefed = brief_stage(ctx, ui, &inventory, &tools, &spend, run.as_mut()).await?;
    let (auditor, specialists) = briefed.apply(auditor, specialists);
    let store = store::prepare(ctx, run, store_warnings, &specialists, tasks).await?;
    let (events, progress) = ui.progress(store.split.fresh.len());
    let fanned = FanOut {
        definition: auditor,
        provider: Arc::clone(&ctx.provider),
        tools: Arc::clone(&tools),
        jobs: settings.jobs,
        max_output_tokens: settings.max_output_tokens,
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
    let (reports, reused) = store::cache::in_plan_order(&plan, store.split.reused, fanned.reports);

    let (checked, lines, reports) =
        verify_off_thread(reports, inventory, Arc::clone(&tools)).await?;
    let run = store.run;
    let challenged = skeptic::challenge(
        ctx,
        ui,
        &spend,
        run.as_ref(),
        &tools,
        checked,
        briefed.written.brief.as_ref(),
    )
    .await;
    let checked = challenged.checked;

    let mut reduced = reduce_or_reuse(ctx, ui, reducer, run.as_ref(), &checked, &reports).await;
    spend.account("reducer", reduced.usage, &ctx.model_of("reducer"));
    let triage = triage(ctx, &mut reduced, &reports, &lines);
    let part = settings.shard.map(|s| shard_part(s, &plan, &reports, ui));

    let mut report = report::assemble(report::Parts {
        run: ctx.run_info(&plan, &started),
        plan,
        skipped: scope.skipped,
        reports,
        reused,
        not_started: fanned.not_started,
        reduced,
        stopped: ui.control.reasons(),
        run_notes: [
            store.warnings,
            ctx.provider.notes(),
            briefed.written.notes,
            consumed.transcript_errors,
            challenged.notes,
        ]
        .concat(),
        calls: ctx.call_counts(),
        spent: spend.ledger(),
        triage,
        policy: settings.gate,
        diff: ctx.changes.clone(),
    });
    report.shard = part;
    report.brief = briefed.written.brief;
    run.iter().for_each(|run| run.finish(&mut report));
    Ok(report)
}

/// The repository brief, and the auditors with it in their prompts.
struct Briefed {
    written: brief::Written,
}

impl Briefed {
    /// The auditor and the specialists with the brief in their prompts
    /// (unchanged without one).
    fn apply(
        &self,
        auditor: Arc<AgentDefinition>,
        specialists: std::collections::HashMap<String, Arc<AgentDefinition>>,
    ) -> (
        Arc<AgentDefinition>,
        std::collections::HashMap<String, Arc<AgentDefinition>>,
    ) {
        let Some(brief) = &self.written.brief else {
            return (auditor, specialists);
        };
        let specialists = specialists
            .into_iter()
            .map(|(group, d)| (group, Arc::new(brief::with_brief(&d, brief))))
            .collect();
        (Arc::new(brief::with_brief(&auditor, brief)), specialists)
    }
}

/// Writes (or reads) the repository brief before the fan-out, and keys
/// the store's results by the briefed auditor.
async fn brief_stage(
    ctx: &Context,
    ui: &Ui,
    inventory: &Inventory,
    tools: &Arc<tools::ToolContext>,
    spend: &budget::Spend,
    run: Option<&mut store::ScanStore>,
) -> Result<Briefed, ScanError> {
    let settings = &ctx.settings;
    let own = settings
        .config_origin
        .read(&settings.root, brief::BRIEF_FILE)
        .map_err(SetupError::from)?
        .map(|text| (text, settings.config_origin.describe()));
    let definition = ctx.agent("brief")?;
    let written = brief::Stage {
        writer: brief::Writer {
            definition,
            provider: ctx.provider.as_ref(),
            tools: Arc::clone(tools),
            events: &EventSink::silent("brief"),
            control: &ui.control,
            spend,
            max_output_tokens: settings.max_output_tokens,
        },
        own,
        stored: run.as_deref().map(|r| r as &dyn brief::Stored),
    }
    .run(inventory)
    .await;
    if let (Some(brief), Some(run)) = (&written.brief, run) {
        let auditor = brief::with_brief(ctx.agent(&settings.agent)?, brief);
        run.rekey_auditor(ctx, &auditor);
    }
    Ok(Briefed { written })
}

/// Verification reads files: it runs off the async threads, and gives the
/// reports back with the lines it read (suppressions are found in them).
async fn verify_off_thread(
    reports: Vec<GroupReport>,
    inventory: Inventory,
    tools: Arc<tools::ToolContext>,
) -> Result<(Vec<verify::Checked>, verify::FileLines, Vec<GroupReport>), ScanError> {
    tokio::task::spawn_blocking(move || {
        let (checked, lines) = verify::verify_keeping_lines(&reports, &inventory, &tools);
        (checked, lines, reports)
    })
    .await
    .map_err(ScanError::Verify)
}

/// The findings as the gate sorts them: fanscan's own findings on a change
/// to its configuration added after the ranked ones, then inline
/// suppressions (found in the lines verification read) and the baseline
/// taken out, each listed apart.
fn triage(
    ctx: &Context,
    reduced: &mut reduce::Reduced,
    reports: &[GroupReport],
    lines: &verify::FileLines,
) -> gate::Triage {
    let mut findings = std::mem::take(&mut reduced.findings);
    findings.extend(
        ctx.config_change_findings()
            .into_iter()
            .map(|finding| reduce::Merged {
                fingerprint: reduce::fingerprint(&finding, 0),
                finding,
                agents: vec!["fanscan".into()],
                groups: Vec::new(),
                verified: true,
                note: None,
                located: false,
                challenge: None,
            }),
    );
    let reviewed: std::collections::BTreeSet<String> = reports
        .iter()
        .filter(|r| r.status.reviewed())
        .flat_map(|r| r.files.iter().map(|f| f.path.clone()))
        .collect();
    let base = ctx.changes.as_ref().and_then(|c| c.base.clone());
    let added_by_change = |path: &str, marker: &str| match &base {
        // Added by the change when the file at the base has no such comment
        // (or no such file). An unreadable base counts as added: listing
        // a suppression apart is the safe side.
        Some(base) => !git::show(&ctx.settings.root, base, path)
            .ok()
            .flatten()
            .is_some_and(|text| {
                text.lines()
                    .any(|l| suppress::marker_text(l) == Some(marker))
            }),
        None => false,
    };
    gate::triage(
        findings,
        std::mem::take(&mut reduced.unverified),
        &gate::TriageInput {
            lines,
            baseline: ctx.baseline.as_ref(),
            reviewed: &reviewed,
            added_by_change: &added_by_change,
        },
    )
}

/// The reducer's answer for these reports: from the run store when it
/// reduced exactly them before, else asked (and stored).
async fn reduce_or_reuse(
    ctx: &Context,
    ui: &Ui,
    reducer: &AgentDefinition,
    run: Option<&store::ScanStore>,
    checked: &[verify::Checked],
    reports: &[GroupReport],
) -> reduce::Reduced {
    if let Some(shard) = ctx.settings.shard {
        // The reducer runs once, in `fanscan merge`.
        return reduce::partial(checked, &shard.to_string());
    }
    if let Some(stored) = run.and_then(|r| r.reduced(reports, checked)) {
        return stored;
    }
    let reduced = reduce::Reducer {
        definition: reducer,
        provider: ctx.provider.as_ref(),
        context_tokens: ctx.reducer_context(reducer),
        max_output_tokens: ctx.settings.max_output_tokens,
        // A run stopped early (budget, Ctrl-C) spends nothing more.
        stopped_early: ui.control.stop.is_cancelled(),
    }
    .reduce(checked, reports)
    .await;
    if let Some(run) = run {
        run.keep_reduced(reports, checked, &reduced);
    }
    reduced
}

/// The tasks of the groups this run audits: all, or its shard's share.
fn shard_tasks(
    settings: &Settings,
    plan: &Plan,
    inventory: &Inventory,
) -> Result<Vec<AgentTask>, ScanError> {
    let tasks = plan.tasks(inventory);
    let Some(shard) = settings.shard else {
        return Ok(tasks);
    };
    if settings.planner == PlannerKind::Llm {
        return Err(MergeError::LlmPlanner.into());
    }
    let mine = plan::shard::groups_of(plan, shard);
    Ok(tasks
        .into_iter()
        .filter(|t| mine.contains(&t.group))
        .collect())
}

/// What a shard's partial report adds: its place in the plan and its
/// groups' full results.
fn shard_part(shard: Shard, plan: &Plan, reports: &[GroupReport], ui: &Ui) -> ShardPart {
    ShardPart {
        index: shard.index,
        count: shard.count,
        plan_hash: plan.hash(),
        groups: plan::shard::groups_of(plan, shard),
        stopped: ui.control.reasons(),
        reports: reports.to_vec(),
    }
}

/// `fanscan merge`: checks that the partial reports at `parts` come from
/// one plan and cover each of its groups exactly once, that the checkout
/// (the context's root) holds the files they audited, then verifies,
/// reduces and reports them as one run.
pub async fn merge(
    ctx: &Context,
    ui: &Ui,
    parts: &[std::path::PathBuf],
) -> Result<Report, ScanError> {
    let started = context::Started::now();
    let settings = &ctx.settings;
    if settings.planner == PlannerKind::Llm {
        return Err(MergeError::LlmPlanner.into());
    }
    let auditor = ctx.agent(&settings.agent)?;
    let reducer = ctx.agent("reducer")?;
    let loaded = parts
        .iter()
        .map(|p| report::shard::load(p).map(|r| (p.clone(), r)))
        .collect::<Result<Vec<_>, _>>()?;
    let mut joined = report::shard::join(loaded)?;
    let inventory = ctx.inventory()?;
    let scope = ctx.in_scope(&inventory);
    let (local, _) = ctx.plan(&scope).await?;
    if local.hash() != joined.plan.hash() {
        return Err(MergeError::CheckoutPlan {
            root: settings.root.display().to_string(),
            ours: local.hash(),
            theirs: joined.plan.hash(),
        }
        .into());
    }
    report::shard::check_checkout(ctx.tools.root(), &joined)?;
    let tools = Arc::new(ctx.scoped_tools(&inventory));
    let (run, warned) =
        store::ScanStore::open(ctx, auditor, reducer, &ctx.run_info(&joined.plan, &started))?;
    let reports = std::mem::take(&mut joined.reports);
    let (checked, lines, reports) =
        verify_off_thread(reports, inventory, Arc::clone(&tools)).await?;
    // The shards planned; the merge pays only its skeptic and reducer.
    let spend = ctx.spend(ui.control.clone(), None);
    // The shards' briefs are not carried in their parts: the merge's
    // skeptic runs without one.
    let challenged = skeptic::challenge(ctx, ui, &spend, run.as_ref(), &tools, checked, None).await;
    let checked = challenged.checked;
    let mut reduced = reduce_or_reuse(ctx, ui, reducer, run.as_ref(), &checked, &reports).await;
    spend.account("reducer", reduced.usage, &ctx.model_of("reducer"));
    let triage = triage(ctx, &mut reduced, &reports, &lines);
    let (calls, spent) = joined.with_merge(spend.ledger(), ctx.call_counts());
    let not_started = plan_tasks_named(&joined.plan, &scope, &joined.not_started);
    let mut report = report::assemble(report::Parts {
        run: ctx.run_info(&joined.plan, &started),
        plan: joined.plan,
        skipped: scope.skipped,
        reports,
        reused: joined.reused,
        not_started,
        reduced,
        stopped: [joined.stopped, ui.control.reasons()].concat(),
        run_notes: [warned, joined.notes, ctx.provider.notes(), challenged.notes].concat(),
        calls,
        spent,
        triage,
        policy: settings.gate,
        diff: ctx.changes.clone(),
    });
    run.iter().for_each(|run| run.finish(&mut report));
    Ok(report)
}

/// The tasks of the groups named `ids`, in plan order.
fn plan_tasks_named(plan: &Plan, inventory: &Inventory, ids: &[String]) -> Vec<AgentTask> {
    plan.tasks(inventory)
        .into_iter()
        .filter(|t| ids.contains(&t.group))
        .collect()
}
