//! The steps of a run between its stages, which `scan` and `merge` call:
//! `--batch`'s rounds shown and its ledger in the run store, the
//! repository brief with the briefed auditors, verification off the
//! async threads, the gate's triage, the reducer (or its stored answer),
//! a shard's share of the plan and its part of the report, and a task's
//! leads.
//!
//! Takes the run's context and a stage's output; gives the next stage's
//! input. The pipeline itself, in order, is `scan` and `merge` in
//! `lib.rs`.

use std::sync::Arc;

use crate::agents::{AgentDefinition, AgentTask, GroupReport};
use crate::config::{PlannerKind, Settings};
use crate::engine::rules::{RuleError, RuleSet};
use crate::llm::events::EventSink;
use crate::pipeline::context::{Context, SetupError, Ui};
use crate::pipeline::error::ScanError;
use crate::report::RunInfo;
use crate::report::shard::{MergeError, ShardPart};
use crate::stages::inventory::Inventory;
use crate::stages::plan::Plan;
use crate::stages::plan::shard::Shard;
use crate::{llm, model, stages, store, tools, util};

/// The tools, reading only what the inventory covers: excluded or
/// ignored files stay out of every prompt.
pub(crate) fn scoped_tools(
    tools: &tools::ToolContext,
    inventory: &Inventory,
) -> tools::ToolContext {
    tools.scoped(inventory.files.iter().map(|f| f.path.clone()))
}

/// `--batch`: each round of batches shows on the terminal as it goes.
pub(crate) fn show_batch_rounds(ctx: &Context, ui: &Ui) {
    if let Some(rounds) = ctx.harness.provider().rounds() {
        let reporter = Arc::clone(&ui.reporter);
        rounds.set_observer(Arc::new(move |event| reporter.batch(event)));
    }
}

/// `--batch`: waits for the rounds still being driven to end. A round
/// answers its calls before it records its batches' end and counts and
/// shows itself, so without this the report could miss its last round.
pub(crate) async fn batch_rounds_ended(ctx: &Context) {
    if let Some(rounds) = ctx.harness.provider().rounds() {
        let mut driving = rounds.driving();
        // The sender lives in the provider, which outlives this wait.
        let _ = driving.wait_for(|n| *n == 0).await;
    }
}

/// Opens a scan's run store (none without `--store`), with its warnings.
/// `--batch` keeps its batch ids and answers there, so a run started
/// again polls what this one sent instead of sending it.
pub(crate) async fn open_store(
    ctx: &Context,
    auditor: &AgentDefinition,
    reducer: &AgentDefinition,
    run_info: &RunInfo,
) -> Result<(Option<store::ScanStore>, Vec<String>), ScanError> {
    let (run, warnings) =
        store::ScanStore::open(&ctx.settings, ctx.store_keys(), auditor, reducer, run_info).await?;
    if let (Some(rounds), Some(run)) = (ctx.harness.provider().rounds(), run.as_ref()) {
        rounds.set_ledger(run.ledger());
    }
    Ok((run, warnings))
}

/// The repository brief, and the auditors with it in their prompts.
pub(crate) struct Briefed {
    pub(crate) written: stages::brief::Written,
}

impl Briefed {
    /// The auditor and the specialists with the brief in their prompts
    /// (unchanged without one).
    pub(crate) fn apply(
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
            .map(|(group, d)| (group, Arc::new(stages::brief::with_brief(&d, brief))))
            .collect();
        (
            Arc::new(stages::brief::with_brief(&auditor, brief)),
            specialists,
        )
    }
}

/// Writes (or reads) the repository brief before the fan-out, and keys
/// the store's results by the briefed auditor.
pub(crate) async fn brief_stage(
    ctx: &Context,
    ui: &Ui,
    inventory: &Inventory,
    tools: &Arc<tools::ToolContext>,
    spend: &llm::budget::Spend,
    run: Option<&mut store::ScanStore>,
) -> Result<Briefed, ScanError> {
    let settings = &ctx.settings;
    let own = settings
        .config_origin
        .read(&settings.root, stages::brief::BRIEF_FILE)
        .map_err(SetupError::from)?
        .map(|text| (text, settings.config_origin.describe()));
    let definition = ctx.agent("brief")?;
    let written = stages::brief::Stage {
        writer: stages::brief::Writer {
            definition,
            harness: &ctx.harness,
            tools: Arc::clone(tools),
            events: &EventSink::silent("brief"),
            control: &ui.control,
            spend,
        },
        own,
        stored: run.as_deref().map(|r| r as &dyn stages::brief::Stored),
    }
    .run(inventory)
    .await;
    if let (Some(brief), Some(run)) = (&written.brief, run) {
        run.rekey_auditor(&stages::brief::with_brief(
            ctx.agent(&settings.agent)?,
            brief,
        ));
    }
    Ok(Briefed { written })
}

/// Verification reads files: it runs off the async threads, and gives the
/// reports back with the lines it read (suppressions are found in them).
pub(crate) async fn verify_off_thread(
    reports: Vec<GroupReport>,
    inventory: Inventory,
    tools: Arc<tools::ToolContext>,
) -> Result<
    (
        Vec<stages::verify::Checked>,
        stages::verify::FileLines,
        Vec<GroupReport>,
    ),
    ScanError,
> {
    tokio::task::spawn_blocking(move || {
        let (checked, lines) = stages::verify::verify_keeping_lines(&reports, &inventory, &tools);
        (checked, lines, reports)
    })
    .await
    .map_err(ScanError::Verify)
}

/// The findings as the gate sorts them: fanscan's own findings on a change
/// to its configuration added after the ranked ones, then inline
/// suppressions (found in the lines verification read) and the baseline
/// taken out, each listed apart.
pub(crate) fn triage(
    ctx: &Context,
    reduced: &mut stages::reduce::Reduced,
    reports: &[GroupReport],
    lines: &stages::verify::FileLines,
) -> stages::gate::Triage {
    let s = &ctx.settings;
    let mut findings = std::mem::take(&mut reduced.findings);
    let config_changes = stages::gate::config_changes(
        ctx.changes.as_ref(),
        &s.config_origin,
        s.base_rules.as_deref(),
    );
    findings.extend(
        config_changes
            .into_iter()
            .map(|finding| stages::reduce::Merged {
                fingerprint: stages::reduce::fingerprint(&finding, 0),
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
    // The SHA-256 of each reviewed file as this run read it: a baseline
    // entry that matches nothing in a file that changed is void.
    let file_sha256: std::collections::BTreeMap<String, String> = reports
        .iter()
        .filter(|r| r.status.reviewed())
        .flat_map(|r| r.files.iter().map(|f| (f.path.clone(), f.sha256.clone())))
        .collect();
    let base = ctx.changes.as_ref().and_then(|c| c.base.clone());
    let added_by_change = |path: &str, marker: &str| match &base {
        // Added by the change when the file at the base has no such comment
        // (or no such file). An unreadable base counts as added: listing
        // a suppression apart is the safe side.
        Some(base) => !util::git::show(&s.root, base, path)
            .ok()
            .flatten()
            .is_some_and(|text| {
                text.lines()
                    .any(|l| model::suppress::marker_text(l) == Some(marker))
            }),
        None => false,
    };
    stages::gate::triage(
        findings,
        std::mem::take(&mut reduced.unverified),
        &stages::gate::TriageInput {
            lines,
            baseline: ctx.baseline.as_ref(),
            reviewed: &reviewed,
            added_by_change: &added_by_change,
            quorum: s.quorum,
            today: s.today,
            file_sha256: &file_sha256,
        },
    )
}

/// The reducer's answer for these reports: from the run store when it
/// reduced exactly them before, else asked (and stored).
pub(crate) async fn reduce_or_reuse(
    ctx: &Context,
    ui: &Ui,
    reducer: &AgentDefinition,
    run: Option<&store::ScanStore>,
    checked: &[stages::verify::Checked],
    reports: &[GroupReport],
) -> stages::reduce::Reduced {
    let s = &ctx.settings;
    if let Some(shard) = s.shard {
        // The reducer runs once, in `fanscan merge`.
        return stages::reduce::partial(checked, &shard.to_string());
    }
    if let Some(stored) = run.and_then(|r| r.reduced(reports, checked)) {
        return stored;
    }
    let reducer = stages::reduce::Reducer {
        definition: reducer,
        harness: &ctx.harness,
        context_tokens: stages::reduce::batch_tokens(
            reducer,
            s.context_tokens,
            s.max_output_tokens,
        ),
        // A run stopped early (budget, Ctrl-C) spends nothing more.
        stopped_early: ui.control.stop.is_cancelled(),
    };
    // A few groups changed since the last reduction: update it.
    let reduced = match run.and_then(|r| r.changed_since_reduced(reports)) {
        Some((changed, last)) => {
            reducer
                .reduce_since(checked, reports, &changed, &last)
                .await
        }
        None => reducer.reduce(checked, reports).await,
    };
    if let Some(run) = run {
        run.keep_reduced(reports, checked, &reduced);
        run.keep_last_reduced(reports, &reduced);
    }
    reduced
}

/// What the run plans: the whole inventory, a diff scan's changed files,
/// or a triage's files with leads; and the leads of `--leads FILE.sarif`
/// (a SARIF that cannot be read stops the run before anything is asked).
pub(crate) fn scope(
    ctx: &Context,
    inventory: &Inventory,
) -> Result<(Inventory, stages::leads::SarifLeads), ScanError> {
    let s = &ctx.settings;
    let sarif = stages::leads::SarifLeads::read(&s.root, &s.leads.sarif)?;
    let scope = stages::plan::in_scope(inventory, ctx.changes.as_ref());
    let scope = match s.triage {
        true => sarif.only_their_files(scope),
        false => scope,
    };
    Ok((scope, sarif))
}

/// The tasks this run sends: its groups (or its shard's share), each with
/// the SARIF leads of its files and followed by its further samples; and
/// the leads whose file is in no group of `plan`.
pub(crate) fn tasks(
    ctx: &Context,
    plan: &Plan,
    scope: &Inventory,
    sarif: stages::leads::SarifLeads,
    inventory: &Inventory,
) -> Result<(Vec<AgentTask>, Vec<model::leads::OutsideLead>), ScanError> {
    let settings = &ctx.settings;
    let (mut tasks, outside) =
        lead_tasks(shard_tasks(settings, plan, scope)?, sarif, plan, inventory);
    if settings.leads.across {
        across_leads(&ctx.rules, inventory, &mut tasks)?;
    }
    Ok((stages::samples::expand(tasks, settings.samples), outside))
}

/// Gives each of `tasks` the rule engine's flows across files into its
/// files' sinks, as leads: a source in one file of `inventory` (the whole
/// of it: a caller need not be in the scan), a sink in another. The run's
/// judgments confirm them by their trace ([`RuleSet::across`]). A file
/// that cannot be read as UTF-8 text adds nothing (its group says why).
fn across_leads(
    rules: &RuleSet,
    inventory: &Inventory,
    tasks: &mut [AgentTask],
) -> Result<(), ScanError> {
    use rayon::prelude::*;
    let unusable = |e: &RuleError| SetupError::from(RuleError::Taint(e.to_string()));
    let taint = rules.taint().map_err(unusable)?;
    let started = std::time::Instant::now();
    // Only a language the taint rules have sinks for can hold a sink or
    // call a function that does.
    let files: Vec<(String, String)> = inventory
        .files
        .par_iter()
        .filter(|f| util::language::language_of(&f.path).is_some_and(|l| taint.covers(l)))
        .filter_map(|f| {
            // The text as the rules read it: its lines joined.
            let text = std::fs::read_to_string(inventory.root.join(&f.path)).ok()?;
            let lines: Vec<&str> = text.lines().collect();
            Some((f.path.clone(), lines.join("\n")))
        })
        .collect();
    let mut by_path: std::collections::BTreeMap<String, Vec<model::leads::Lead>> =
        std::collections::BTreeMap::new();
    let read = started.elapsed();
    let findings = rules.findings_across(&files).map_err(unusable)?;
    tracing::debug!(
        files = files.len(),
        flows = findings.len(),
        ?read,
        traced = ?started.elapsed() - read,
        "flows across files"
    );
    for finding in findings {
        by_path
            .entry(finding.path.clone())
            .or_default()
            .push(model::leads::Lead::of_rule(finding));
    }
    for task in tasks.iter_mut() {
        for file in &task.files {
            task.leads
                .extend(by_path.get(&file.path).into_iter().flatten().cloned());
        }
    }
    Ok(())
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
    let mine = stages::plan::shard::groups_of(plan, shard);
    Ok(tasks
        .into_iter()
        .filter(|t| mine.contains(&t.group))
        .collect())
}

/// `tasks` with the SARIF leads of their files, and the leads whose file
/// is in no group of `plan`.
fn lead_tasks(
    mut tasks: Vec<AgentTask>,
    sarif: stages::leads::SarifLeads,
    plan: &Plan,
    inventory: &Inventory,
) -> (Vec<AgentTask>, Vec<model::leads::OutsideLead>) {
    let planned: std::collections::BTreeSet<&str> = plan
        .groups
        .iter()
        .flat_map(|g| g.files.iter().map(String::as_str))
        .collect();
    let outside = sarif.attach(&mut tasks, &planned, inventory);
    (tasks, outside)
}

/// What a shard's partial report adds: its place in the plan and its
/// groups' full results.
pub(crate) fn shard_part(
    shard: Shard,
    quota: Option<stages::plan::shard::ShardQuota>,
    plan: &Plan,
    reports: &[GroupReport],
    ui: &Ui,
) -> ShardPart {
    ShardPart {
        quota,
        index: shard.index,
        count: shard.count,
        plan_hash: plan.hash(),
        groups: stages::plan::shard::groups_of(plan, shard),
        stopped: ui.control.reasons(),
        reports: reports.to_vec(),
    }
}

/// The tasks of the groups named `ids`, in plan order.
pub(crate) fn plan_tasks_named(
    plan: &Plan,
    inventory: &Inventory,
    ids: &[String],
) -> Vec<AgentTask> {
    plan.tasks(inventory)
        .into_iter()
        .filter(|t| ids.contains(&t.group))
        .collect()
}
