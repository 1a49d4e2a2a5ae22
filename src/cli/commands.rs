//! One function per command over resolved settings: each calls the
//! library, prints its result, and returns the exit code (or the
//! [`Failure`] that stopped it).

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;

use fanscan::{AgentTask, Context, Event, EventSink, RunControl, Settings, SetupError, Ui, exit};

use super::Failure;
use super::output::{emit, write_outputs};
use super::signals::watch_interrupts;

/// Prints `text` on stdout.
fn print(text: &str) -> Result<(), Failure> {
    emit(None, text).map_err(Failure::Output)
}

/// `scan` (and `baseline`): the pipeline, under Ctrl-C handling.
pub(crate) async fn scan(
    settings: Settings,
    ui: Ui,
    quiet: bool,
    grace: u64,
) -> Result<i32, Failure> {
    let ctx = Context::new(settings)?;
    let watcher = watch_interrupts(&ui, Duration::from_secs(grace));
    let result = fanscan::scan(&ctx, &ui).await;
    watcher.abort();
    let code = write_outputs(&ctx, &result?, quiet);
    end_without_freeing(ctx);
    Ok(code)
}

/// The process ends next: the run's memory (its syntax trees above all,
/// hundreds of MB on a large tree) goes back to the system at once, where
/// freeing it node by node took a tenth of an offline scan's time, on
/// one core. Nothing in the context writes anything when dropped: the
/// outputs are written and the run store is closed by now.
fn end_without_freeing(ctx: Context) {
    std::mem::forget(ctx);
}

/// `merge`: the parts' report as one run's, with the outputs and exit
/// codes of `scan`.
pub(crate) async fn merge(
    settings: Settings,
    ui: Ui,
    quiet: bool,
    parts: &[PathBuf],
) -> Result<i32, Failure> {
    let ctx = Context::new(settings)?;
    let report = fanscan::merge(&ctx, &ui, parts).await?;
    let code = write_outputs(&ctx, &report, quiet);
    end_without_freeing(ctx);
    Ok(code)
}

/// What `ask` prints and how.
pub(crate) struct AskOptions {
    pub(crate) json: bool,
    pub(crate) quiet: bool,
    pub(crate) grace: u64,
}

/// `ask`: the lead's answer on stdout (streamed unless `--json`), its
/// tasks on stderr.
pub(crate) async fn ask(
    settings: Settings,
    ui: Ui,
    question: &str,
    options: AskOptions,
) -> Result<i32, Failure> {
    let ctx = Context::new(settings)?;
    let watcher = watch_interrupts(&ui, Duration::from_secs(options.grace));
    let result = fanscan::ask(&ctx, &ui, question, !options.json).await;
    watcher.abort();
    let answer = result?;
    let text = if options.json {
        serde_json::to_string_pretty(&answer)
            .map(|t| t + "\n")
            .context("cannot encode the answer")
            .map_err(Failure::Output)?
    } else if answer.streamed {
        answer.render_after_answer()
    } else {
        answer.render_text()
    };
    print(&text)?;
    if !options.quiet {
        eprint!(
            "fanscan: {}\n{}",
            answer.status.as_str(),
            answer.tasks_text()
        );
        if !answer.stopped.is_empty() {
            eprintln!("fanscan: INCOMPLETE: {}", answer.stopped.join(" "));
        }
    }
    Ok(answer.exit_code())
}

/// `plan`: the plan (and the estimate) without calling a model.
pub(crate) async fn plan(settings: Settings, json: bool, estimate: bool) -> Result<i32, Failure> {
    let ctx = Context::new(settings)?;
    // A diff scan's plan holds the changed files only.
    let inventory = ctx.in_scope(&ctx.inventory()?);
    // A plan over --max-groups is shown: the cap keeps `scan` from
    // starting that many agents, and showing a plan starts none.
    let (plan, _) = ctx.plan_uncapped(&inventory).await?;
    let over_cap = plan.check_cap(ctx.settings.max_groups()).err();
    let estimate = if estimate {
        Some(ctx.estimate(&plan, &inventory)?)
    } else {
        None
    };
    if let Some(e) = over_cap {
        eprintln!("fanscan: warning: {e}. `fanscan scan` refuses this plan; `plan` only shows it");
    }
    let text = if json {
        fanscan::plan_json(&inventory, &plan, estimate.as_ref())
            .context("cannot encode the plan")
            .map_err(Failure::Output)?
    } else {
        fanscan::plan_text(&inventory, &plan, estimate.as_ref())
            .context("cannot write the plan")
            .map_err(Failure::Output)?
    };
    print(&text)?;
    Ok(exit::OK)
}

/// `history` and `diff`: the store's text.
pub(crate) fn store(text: Result<String, fanscan::StoreError>) -> Result<i32, Failure> {
    print(&text?)?;
    Ok(exit::OK)
}

/// `eval`: the scores.
pub(crate) fn eval(args: &fanscan::EvalArgs) -> Result<i32, Failure> {
    print(&fanscan::evaluate(args)?)?;
    Ok(exit::OK)
}

/// `agents`: the definitions in effect.
pub(crate) fn agents(path: &Path) -> Result<i32, Failure> {
    let set = fanscan::AgentSet::load(path).map_err(SetupError::Agents)?;
    print(&set.describe())?;
    Ok(exit::OK)
}

/// What `run-agent` runs.
pub(crate) struct AgentJob {
    pub(crate) name: String,
    pub(crate) task: String,
    pub(crate) files: Vec<String>,
    pub(crate) json: bool,
    pub(crate) quiet: bool,
}

/// `run-agent`: one agent on one task; its rounds and tools on stderr.
pub(crate) async fn run_agent(settings: Settings, job: AgentJob) -> Result<i32, Failure> {
    let ctx = Context::new(settings)?;
    let definition = ctx.agent(&job.name)?.clone();
    let files = job
        .files
        .iter()
        .map(|f| ctx.task_file(f))
        .collect::<Result<Vec<_>, _>>()?;
    let task = AgentTask {
        group: "run-agent".into(),
        files,
        focus: None,
        instructions: Some(job.task),
        leads: Vec::new(),
        sample: 0,
    };
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let quiet = job.quiet;
    let printer = tokio::spawn(async move {
        while let Some(event) = rx.recv().await {
            if !quiet {
                print_event(event);
            }
        }
    });
    let sink = EventSink::new("run-agent", Some(tx), false);
    let report = ctx
        .run_agent(&definition, &task, &sink, &RunControl::default())
        .await;
    drop(sink);
    if let Err(e) = printer.await {
        eprintln!("fanscan: warning: the progress printer failed: {e}");
    }
    let text = if job.json {
        serde_json::to_string_pretty(&report)
            .map(|t| t + "\n")
            .context("cannot encode the agent's report")
            .map_err(Failure::Output)?
    } else {
        report.render_text()
    };
    print(&text)?;
    Ok(report.exit_code())
}

/// One line of `run-agent`'s progress.
fn print_event(event: Event) {
    match event {
        Event::Round { round, .. } => eprintln!("round {round}"),
        Event::Tool { tool, target, .. } => eprintln!("  {tool} {target}"),
        Event::Finished {
            status, findings, ..
        } => {
            eprintln!("finished: {status}, {findings} claims reported");
        }
        Event::Started { .. } | Event::Usage { .. } | Event::Transcript { .. } => {}
    }
}
