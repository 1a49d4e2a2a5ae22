//! The `fanscan` command: parses the command line and dispatches to the
//! library. Exit codes: 0 ran completely, 1 internal or I/O error, 2 usage
//! or configuration error, 3 incomplete run.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand};
use indicatif::{MultiProgress, ProgressDrawTarget};
use tokio_util::sync::CancellationToken;

use fanscan::agents::{AgentRun, AgentTask, TaskFile, run_subagent};
use fanscan::config::{ProviderArgs, ScanArgs, Settings};
use fanscan::events::{Event, EventSink};
use fanscan::fanout::RunControl;
use fanscan::report::{Format, exit};
use fanscan::{Context, SetupError, Ui};

const EXIT_CODES: &str = "Exit codes:
  0  the run completed
  1  internal or I/O error (e.g. the report could not be written)
  2  usage or configuration error: nothing was scanned
  3  incomplete run: failed groups, interrupted, or a budget reached";

/// Audit a code repository with fanned-out, read-only LLM sub-agents.
#[derive(Parser, Debug)]
#[command(name = "fanscan", version, about, after_help = EXIT_CODES)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// No progress display.
    #[arg(long, short, global = true)]
    quiet: bool,
    /// More log output on stderr (-v, -vv).
    #[arg(long, short, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Scan a repository and print the report.
    #[command(after_help = EXIT_CODES)]
    Scan {
        /// The repository's root.
        #[arg(default_value = ".")]
        path: PathBuf,
        #[command(flatten)]
        provider: ProviderArgs,
        #[command(flatten)]
        scan: ScanArgs,
        /// Report format.
        #[arg(long, value_enum)]
        format: Option<Format>,
        /// Write the report here instead of stdout.
        #[arg(long, short, value_name = "FILE")]
        output: Option<PathBuf>,
        /// Write each agent's conversation to DIR/<group>.jsonl.
        #[arg(long, value_name = "DIR")]
        transcripts: Option<PathBuf>,
        /// Seconds running agents get to finish after Ctrl-C before they are cancelled.
        #[arg(long, value_name = "SECS", default_value_t = 30)]
        grace: u64,
    },
    /// Print the plan (groups of files) without calling any model.
    Plan {
        #[arg(default_value = ".")]
        path: PathBuf,
        #[command(flatten)]
        provider: ProviderArgs,
        #[command(flatten)]
        scan: ScanArgs,
        /// Print the plan as JSON.
        #[arg(long)]
        json: bool,
        /// Print an estimated token and cost range for a scan.
        #[arg(long)]
        estimate: bool,
    },
    /// List the agent definitions in effect.
    Agents {
        #[arg(default_value = ".")]
        path: PathBuf,
    },
    /// Run one agent on one task and print its report.
    RunAgent {
        /// The agent's name (see `fanscan agents`).
        name: String,
        /// What to do.
        #[arg(long)]
        task: String,
        /// A file the task is about (repeatable); without, the agent explores.
        #[arg(long = "file", value_name = "PATH")]
        files: Vec<String>,
        #[arg(default_value = ".")]
        path: PathBuf,
        #[command(flatten)]
        provider: ProviderArgs,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { exit::USAGE as u8 } else { 0 });
        }
    };
    let multi = MultiProgress::with_draw_target(if cli.quiet || !std::io::stderr().is_terminal() {
        ProgressDrawTarget::hidden()
    } else {
        ProgressDrawTarget::stderr()
    });
    let level = match cli.verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("FANSCAN_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(format!("fanscan={level}")));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(fanscan::progress::LogWriter(multi.clone()))
        .with_target(false)
        .try_init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("fanscan: cannot start the runtime: {e}");
            return ExitCode::from(exit::ERROR as u8);
        }
    };
    let code = runtime.block_on(run(cli, multi));
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

fn setup_failed(e: &SetupError) -> i32 {
    eprintln!("fanscan: {e}");
    exit::USAGE
}

async fn run(cli: Cli, multi: MultiProgress) -> i32 {
    match cli.command {
        Command::Scan {
            path,
            provider,
            scan,
            format,
            output,
            transcripts,
            grace,
        } => {
            let settings = match Settings::resolve(&path, &provider, &scan, format, &env_var) {
                Ok(s) => s,
                Err(e) => return setup_failed(&e.into()),
            };
            let format = settings.format;
            let ctx = match Context::new(settings) {
                Ok(c) => c,
                Err(e) => return setup_failed(&e),
            };
            let control = RunControl::default();
            let watcher = tokio::spawn(watch_interrupts(
                control.clone(),
                Duration::from_secs(grace),
                multi.clone(),
            ));
            let ui = Ui {
                multi,
                transcripts,
                control,
            };
            let result = fanscan::scan(&ctx, &ui).await;
            watcher.abort();
            let report = match result {
                Ok(r) => r,
                Err(e) => return setup_failed(&e),
            };
            let text = report.render(format);
            let mut code = report.exit_code();
            if let Err(e) = emit(output.as_deref(), &text) {
                code = exit::ERROR;
                eprintln!("fanscan: {e}; the report follows on stdout so that nothing is lost");
                let _ = std::io::stdout().write_all(text.as_bytes());
            }
            if !cli.quiet {
                eprintln!(
                    "fanscan: {} groups, {} verified findings, {} unverified; {}",
                    report.groups.len(),
                    report.findings.len(),
                    report.unverified.len(),
                    if report.complete {
                        "complete".to_string()
                    } else {
                        format!("INCOMPLETE: {}", report.incomplete_reasons.join(" "))
                    }
                );
            }
            code
        }
        Command::Plan {
            path,
            provider,
            scan,
            json,
            estimate,
        } => plan_command(&path, &provider, &scan, json, estimate).await,
        Command::Agents { path } => agents_command(&path),
        Command::RunAgent {
            name,
            task,
            files,
            path,
            provider,
            json,
        } => run_agent_command(&name, &task, &files, &path, &provider, json, cli.quiet).await,
    }
}

fn emit(output: Option<&Path>, text: &str) -> Result<(), String> {
    match output {
        Some(path) => std::fs::write(path, text)
            .map_err(|e| format!("{}: cannot write the report: {e}", path.display())),
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())
                .and_then(|()| out.flush())
                .map_err(|e| format!("cannot write the report to stdout: {e}"))
        }
    }
}

/// First Ctrl-C: stop scheduling and let agents wrap up; after `grace` or a
/// second Ctrl-C: cancel them. The report is still written.
async fn watch_interrupts(control: RunControl, grace: Duration, multi: MultiProgress) {
    if tokio::signal::ctrl_c().await.is_err() {
        return;
    }
    multi.suspend(|| {
        eprintln!(
            "fanscan: interrupted: no new groups; running agents give their summary (Ctrl-C again, or {} s, cancels them)",
            grace.as_secs()
        );
    });
    control.wind_down("interrupted (Ctrl-C): no new group was started.");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = tokio::time::sleep(grace) => {}
    }
    control.abort("interrupted (Ctrl-C): running agents were cancelled.");
}

async fn plan_command(
    path: &Path,
    provider: &ProviderArgs,
    scan: &ScanArgs,
    json: bool,
    estimate: bool,
) -> i32 {
    // `plan` never calls a model: the LLM planner is not asked here.
    let mut scan = scan.clone();
    if scan.planner == Some(fanscan::config::PlannerKind::Llm) {
        eprintln!("fanscan: note: `plan` calls no model, so it shows the default pack plan");
        scan.planner = Some(fanscan::config::PlannerKind::Pack);
    }
    let settings = match Settings::resolve(path, provider, &scan, None, &env_var) {
        Ok(s) => s,
        Err(e) => return setup_failed(&e.into()),
    };
    let ctx = match Context::new(settings) {
        Ok(c) => c,
        Err(e) => return setup_failed(&e),
    };
    let inventory = match fanscan::take_inventory(&ctx.settings) {
        Ok(i) => i,
        Err(e) => return setup_failed(&e),
    };
    let plan = match fanscan::make_plan(&ctx, &inventory).await {
        Ok((p, _)) => p,
        Err(e) => return setup_failed(&e),
    };
    let estimate = estimate.then(|| fanscan::plan::estimate::estimate(&plan, &ctx));
    let text = if json {
        let mut value = serde_json::json!({
            "files": inventory.files.len(),
            "skipped": inventory.skipped,
            "plan": plan,
        });
        if let Some(e) = &estimate {
            value["estimate"] = serde_json::to_value(e).unwrap_or_default();
        }
        serde_json::to_string_pretty(&value).unwrap_or_default() + "\n"
    } else {
        let mut out = format!(
            "{} files ({} estimated tokens), {} skipped; {} groups of at most {} tokens (planner: {})\n",
            inventory.files.len(),
            inventory.total_tokens(),
            inventory.skipped.len(),
            plan.groups.len(),
            plan.group_tokens,
            plan.planner
        );
        for g in &plan.groups {
            out.push_str(&format!(
                "\n{} ({} files, {} tokens)\n",
                g.id,
                g.files.len(),
                g.tokens
            ));
            for f in &g.files {
                out.push_str(&format!("  {f}\n"));
            }
        }
        for n in &plan.notes {
            out.push_str(&format!("\nnote: {n}\n"));
        }
        if let Some(e) = &estimate {
            out.push_str(&format!("\n{}\n", e.describe()));
        }
        out
    };
    match emit(None, &text) {
        Ok(()) => exit::OK,
        Err(e) => {
            eprintln!("fanscan: {e}");
            exit::ERROR
        }
    }
}

fn agents_command(path: &Path) -> i32 {
    match fanscan::agents::AgentSet::load(path) {
        Ok(set) => {
            let mut out = String::new();
            for a in set.iter() {
                out.push_str(&format!(
                    "{}\n  source:      {}\n  tools:       {}\n  max_rounds:  {}\n  model:       {}\n  description: {}\n\n",
                    a.name,
                    a.source,
                    if a.tools.is_empty() { "(none)".to_string() } else { a.tools.join(", ") },
                    a.max_rounds,
                    a.model.as_deref().unwrap_or("(the run's)"),
                    a.description
                ));
            }
            match emit(None, &out) {
                Ok(()) => exit::OK,
                Err(e) => {
                    eprintln!("fanscan: {e}");
                    exit::ERROR
                }
            }
        }
        Err(errors) => setup_failed(&SetupError::Agents(errors)),
    }
}

async fn run_agent_command(
    name: &str,
    task_text: &str,
    files: &[String],
    path: &Path,
    provider: &ProviderArgs,
    json: bool,
    quiet: bool,
) -> i32 {
    let settings = match Settings::resolve(path, provider, &ScanArgs::default(), None, &env_var) {
        Ok(s) => s,
        Err(e) => return setup_failed(&e.into()),
    };
    let ctx = match Context::new(settings) {
        Ok(c) => c,
        Err(e) => return setup_failed(&e),
    };
    let definition = match ctx.agents.get(name) {
        Ok(d) => d.clone(),
        Err(e) => return setup_failed(&SetupError::Other(e)),
    };
    let mut task_files = Vec::new();
    for f in files {
        match fanscan::tools::paths::resolve(ctx.tools.root(), f) {
            Ok(r) if r.real.is_file() => task_files.push(TaskFile {
                bytes: std::fs::metadata(&r.real).map(|m| m.len()).unwrap_or(0),
                language: fanscan::inventory::language_of(&r.rel).map(str::to_string),
                path: r.rel,
            }),
            Ok(r) => {
                return setup_failed(&SetupError::Other(format!(
                    "--file {:?} is not a file",
                    r.rel
                )));
            }
            Err(e) => return setup_failed(&SetupError::Other(format!("--file {f:?}: {e}"))),
        }
    }
    let task = AgentTask {
        group: "run-agent".into(),
        files: task_files,
        focus: None,
        instructions: Some(task_text.to_string()),
    };
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let printer = tokio::spawn(async move {
        while let Some(event) = rx.recv().await {
            if quiet {
                continue;
            }
            match event {
                Event::Round { round, .. } => eprintln!("round {round}"),
                Event::Tool { tool, target, .. } => eprintln!("  {tool} {target}"),
                Event::Finished {
                    status, findings, ..
                } => {
                    eprintln!("finished: {status}, {findings} findings");
                }
                Event::Started { .. } | Event::Usage { .. } | Event::Transcript { .. } => {}
            }
        }
    });
    let sink = EventSink::new("run-agent", Some(tx), false);
    let never = CancellationToken::new();
    let report = run_subagent(
        AgentRun {
            definition: &definition,
            provider: ctx.provider.as_ref(),
            tools: &Arc::clone(&ctx.tools),
            events: &sink,
            wrap_up: &never,
            cancel: &never,
            spend: &fanscan::budget::Spend::unlimited(),
            max_output_tokens: ctx.settings.max_output_tokens,
        },
        &task,
    )
    .await;
    drop(sink);
    let _ = printer.await;
    let text = if json {
        serde_json::to_string_pretty(&report).unwrap_or_default() + "\n"
    } else {
        let mut out = format!(
            "agent {} ({}, {}): {}{}\nrounds {}, tool calls {} ({} errors), files read {}, tokens {} in / {} out\n\n",
            report.agent,
            report.provider,
            report.model,
            report.status.as_str(),
            report
                .error
                .as_deref()
                .map(|e| format!(": {e}"))
                .unwrap_or_default(),
            report.rounds,
            report.tool_calls,
            report.tool_errors,
            report.files_read.len(),
            report.usage.input_tokens,
            report.usage.output_tokens
        );
        for f in &report.findings {
            out.push_str(&format!(
                "- [{}] {} {}:{}\n",
                f.severity.as_str(),
                f.title,
                f.path,
                f.line
            ));
        }
        if !report.summary_parsed && !report.summary.is_empty() {
            out.push_str("\n(the summary had no findings block; its text follows)\n");
        }
        out.push_str(&format!("\n{}\n", report.summary));
        out
    };
    if let Err(e) = emit(None, &text) {
        eprintln!("fanscan: {e}");
        return exit::ERROR;
    }
    if report.status.reviewed() {
        exit::OK
    } else {
        exit::INCOMPLETE
    }
}
