//! fanscan audits a code repository with LLM agents, fanned out.
//!
//! The pipeline reads straight off [`scan`]: inventory → plan → fan-out →
//! verify → reduce → report. Each stage is a module with a plain data type
//! at each boundary; nothing is global. The modules form layers, and none
//! imports from one above it: `util` and `conversation` at the bottom, then
//! `control`, `findings`, `prices`, `rules`, `budget`, `events`, `tools`
//! and `providers`, then `agents`, then the stages, then `report`,
//! `config` and `context`, with `scan` and `ask` on top.

mod agents;
mod ask;
mod budget;
mod config;
mod context;
mod control;
mod conversation;
mod events;
mod fanout;
mod findings;
mod inventory;
mod language;
mod plan;
mod prices;
mod progress;
mod providers;
mod reduce;
mod report;
mod rules;
mod tools;
mod util;
mod verify;

use std::sync::Arc;

use fanout::FanOut;

pub use agents::AgentSet;
pub use agents::definition::{AgentDefinition, DefinitionError};
pub use agents::subagent::{AgentStatus, AgentTask, FileHash, GroupReport, TaskFile};
pub use ask::{Answer, AskError, Citation, CitationStatus, LeadSummary, TaskSummary, Totals, ask};
pub use budget::AgentUsage;
pub use config::{PlannerKind, ProviderArgs, ProviderKind, ScanArgs, Settings};
pub use context::{Context, SetupError, Ui};
pub use control::RunControl;
pub use events::{Event, EventSink};
pub use fanout::FanOutResult;
pub use findings::{Finding, HowParsed, Origin, Repair, Severity, Unparsed};
pub use inventory::{Inventory, InventoryOptions, walk};
pub use plan::render::{json as plan_json, text as plan_text};
pub use plan::{Plan, pack_plan};
pub use progress::LogWriter;
pub use providers::EngineKind;
pub use report::{Format, Report, exit};

/// A scan that could not produce a report.
#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    /// Before anything was scanned (exit code 2).
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// Verification itself failed: a fanscan bug (exit code 1).
    #[error("verification failed ({0}): a fanscan bug, please report it")]
    Verify(#[source] tokio::task::JoinError),
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
    let (plan, planner_usage) = ctx.plan(&inventory).await?;
    ctx.check_budget(&plan, &auditor)?;
    let spend = Arc::new(ctx.spend(ui.control.clone()));
    if settings.planner == PlannerKind::Llm {
        spend.add("planner", planner_usage, &ctx.model_of("planner"));
    }
    // Agents read only what the scan covers: excluded or ignored files stay
    // out of every prompt.
    let tools = Arc::new(
        ctx.tools
            .scoped(inventory.files.iter().map(|f| f.path.clone())),
    );
    let tasks = plan.tasks(&inventory);
    let specialists = ctx.specialists(&plan)?;
    let (events, progress) = progress::Consumer {
        multi: ui.multi.clone(),
        total_groups: tasks.len() as u64,
        transcripts: ui.transcripts.clone(),
    }
    .start();
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
        cache_scope: Arc::from(plan.hash()),
    }
    .run(tasks)
    .await;
    let consumed = progress.finish().await;

    let (checked, reports, inventory) = tokio::task::spawn_blocking(move || {
        let checked = verify::verify(&fanned.reports, &inventory, &tools);
        (checked, fanned.reports, inventory)
    })
    .await
    .map_err(ScanError::Verify)?;

    let reduced = reduce::Reducer {
        definition: reducer,
        provider: ctx.provider.as_ref(),
        context_tokens: ctx.reducer_context(reducer),
        max_output_tokens: settings.max_output_tokens,
        // A run stopped early (budget, Ctrl-C) spends nothing more.
        stopped_early: ui.control.stop.is_cancelled(),
    }
    .reduce(&checked, &reports)
    .await;
    spend.account("reducer", reduced.usage, &ctx.model_of("reducer"));

    Ok(report::assemble(report::Parts {
        run: ctx.run_info(&plan, &started),
        plan,
        skipped: inventory.skipped,
        reports,
        not_started: fanned.not_started,
        reduced,
        stopped: ui.control.reasons(),
        run_notes: [ctx.provider.notes(), consumed.transcript_errors].concat(),
        calls: ctx.call_counts(),
        spent: spend.ledger(),
    }))
}
