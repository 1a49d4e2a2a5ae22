//! The `fanscan` command: parses the command line and dispatches to the
//! library. Exit codes: 0 ran completely, 1 internal or I/O error, 2 usage
//! or configuration error, 3 incomplete run.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use indicatif::{MultiProgress, ProgressDrawTarget};

use fanscan::{
    AgentTask, Context, Event, EventSink, Format, ProviderArgs, Report, RunControl, ScanArgs,
    ScanError, Settings, SetupError, ShardArgs, Ui, exit,
};

const EXIT_CODES: &str = "Exit codes:
  0  the run completed
  1  internal or I/O error (e.g. the report could not be written)
  2  usage or configuration error: nothing was scanned
  3  incomplete run: failed groups, interrupted, or a budget reached";

const LARGE_REPOSITORIES: &str = "Large repositories: a plan may have at most --max-groups groups
(default 2000). For a repository of tens of thousands of files, raise
--group-tokens (fewer, larger groups), narrow the scan with --include,
--exclude or a .fanscanignore, and see the estimate first with
`fanscan plan --estimate`.";

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
    #[command(after_help = format!("{LARGE_REPOSITORIES}\n\n{EXIT_CODES}"))]
    Scan {
        /// The repository's root.
        #[arg(default_value = ".")]
        path: PathBuf,
        #[command(flatten)]
        provider: ProviderArgs,
        #[command(flatten)]
        scan: ScanArgs,
        #[command(flatten)]
        shard: ShardArgs,
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
    /// Merge the partial reports of `scan --shard K/N` into one run's report:
    /// checks they come from one plan and cover it exactly once, then
    /// verifies, reduces and reports them in the checkout at PATH.
    #[command(after_help = format!("Run it in a checkout of the commit the shards scanned, with the same\nscan options (--include, --exclude, --group-tokens, ...) and provider:\nthe files are read again to verify the findings, and the reducer runs here.\n\n{EXIT_CODES}"))]
    Merge {
        /// The partial reports (JSON), one per shard.
        #[arg(required = true, value_name = "PART")]
        parts: Vec<PathBuf>,
        /// The repository's root (a checkout of the commit the shards scanned).
        #[arg(long, default_value = ".")]
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
    },
    /// Print the plan (groups of files) without calling any model.
    #[command(after_help = LARGE_REPOSITORIES)]
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
    /// List the runs in the run store: date, model, coverage, findings by
    /// severity, cost.
    History {
        /// The repository's root (its store is .fanscan/store.db).
        #[arg(default_value = ".")]
        path: PathBuf,
        /// The run store, instead of PATH/.fanscan/store.db.
        #[arg(long, value_name = "PATH")]
        store: Option<PathBuf>,
    },
    /// Print the findings new and fixed from run A to run B: run ids of
    /// the store (see `fanscan history`) or two JSON report files.
    Diff {
        a: String,
        b: String,
        /// The run store for run ids (default .fanscan/store.db).
        #[arg(long, value_name = "PATH")]
        store: Option<PathBuf>,
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
            // Printing --help or a usage error to a closed terminal can
            // fail; the exit code still says what happened.
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
    if let Err(e) = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(fanscan::LogWriter(multi.clone()))
        .with_target(false)
        .try_init()
    {
        eprintln!("fanscan: warning: logging is off: {e}");
    }
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
    let quiet = cli.quiet;
    let code = runtime.block_on(async move {
        match cli.command {
            Command::Scan {
                path,
                provider,
                scan,
                shard,
                format,
                output,
                transcripts,
                grace,
            } => {
                scan_command(
                    &path,
                    &provider,
                    (&scan, &shard),
                    format,
                    output,
                    transcripts,
                    grace,
                    multi,
                    quiet,
                )
                .await
            }
            Command::Merge {
                parts,
                path,
                provider,
                scan,
                format,
                output,
            } => {
                merge_command(
                    &parts, &path, &provider, &scan, format, output, multi, quiet,
                )
                .await
            }
            Command::Plan {
                path,
                provider,
                scan,
                json,
                estimate,
            } => plan_command(&path, &provider, &scan, json, estimate).await,
            Command::Agents { path } => agents_command(&path),
            Command::History { path, store } => {
                let store = store.unwrap_or_else(|| path.join(".fanscan").join("store.db"));
                store_command(fanscan::history_text(&store))
            }
            Command::Diff { a, b, store } => {
                let store = store.unwrap_or_else(|| PathBuf::from(".fanscan/store.db"));
                store_command(fanscan::diff_text(&a, &b, &store))
            }
            Command::RunAgent {
                name,
                task,
                files,
                path,
                provider,
                json,
            } => run_agent_command(&name, &task, &files, &path, &provider, json, quiet).await,
        }
    });
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

/// Settings resolved once (command line over fanscan.toml over defaults,
/// with the process environment for the key), then the run's context.
fn context(
    path: &Path,
    provider: &ProviderArgs,
    scan: &ScanArgs,
    format: Option<Format>,
) -> Result<Context, SetupError> {
    let env = |name: &str| std::env::var(name).ok();
    Context::new(Settings::resolve(path, provider, scan, format, &env)?)
}

/// Prints a setup error; exit code 2.
fn setup_failed(e: &SetupError) -> i32 {
    eprintln!("fanscan: {e}");
    exit::USAGE
}

/// Prints a failure to write output; exit code 1.
fn output_failed(e: &anyhow::Error) -> i32 {
    eprintln!("fanscan: {e:#}");
    exit::ERROR
}

#[allow(clippy::too_many_arguments)]
async fn scan_command(
    path: &Path,
    provider: &ProviderArgs,
    (scan, shard): (&ScanArgs, &ShardArgs),
    format: Option<Format>,
    output: Option<PathBuf>,
    transcripts: Option<PathBuf>,
    grace: u64,
    multi: MultiProgress,
    quiet: bool,
) -> i32 {
    let env = |name: &str| std::env::var(name).ok();
    let shard = match shard.resolve(&env) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("fanscan: {e}");
            return exit::USAGE;
        }
    };
    let settings = Settings::resolve(path, provider, scan, format, &env).map(|mut s| {
        s.shard = shard;
        s
    });
    let ctx = match settings.map_err(SetupError::from).and_then(Context::new) {
        Ok(c) => c,
        Err(e) => return setup_failed(&e),
    };
    let control = RunControl::default();
    let watcher = watch_interrupts(control.clone(), Duration::from_secs(grace), multi.clone());
    let ui = Ui {
        multi,
        transcripts,
        control,
    };
    let result = fanscan::scan(&ctx, &ui).await;
    watcher.abort();
    match result {
        Ok(report) => write_report(&report, ctx.settings.format, output.as_deref(), quiet),
        Err(e) => scan_failed(e),
    }
}

/// `fanscan merge`: the parts' report as one run's, in the same formats
/// and with the same exit codes as `scan`.
#[allow(clippy::too_many_arguments)]
async fn merge_command(
    parts: &[PathBuf],
    path: &Path,
    provider: &ProviderArgs,
    scan: &ScanArgs,
    format: Option<Format>,
    output: Option<PathBuf>,
    multi: MultiProgress,
    quiet: bool,
) -> i32 {
    let ctx = match context(path, provider, scan, format) {
        Ok(c) => c,
        Err(e) => return setup_failed(&e),
    };
    let ui = Ui {
        multi,
        transcripts: None,
        control: RunControl::default(),
    };
    match fanscan::merge(&ctx, &ui, parts).await {
        Ok(report) => write_report(&report, ctx.settings.format, output.as_deref(), quiet),
        Err(e) => scan_failed(e),
    }
}

/// Prints why a scan or merge made no report; its exit code.
fn scan_failed(error: ScanError) -> i32 {
    match error {
        ScanError::Setup(e) => setup_failed(&e),
        e @ (ScanError::Store(_) | ScanError::Merge(_)) => {
            eprintln!("fanscan: {e}");
            exit::USAGE
        }
        e @ ScanError::Verify(_) => {
            eprintln!("fanscan: {e}");
            exit::ERROR
        }
    }
}

/// Writes the report in `format` to `output` (or stdout) and a one-line
/// summary to stderr; the exit code.
fn write_report(report: &Report, format: Format, output: Option<&Path>, quiet: bool) -> i32 {
    let mut code = report.exit_code();
    match report.render(format) {
        Ok(text) => {
            if let Err(e) = emit(output, &text) {
                code = output_failed(&e);
                eprintln!("fanscan: the report follows on stdout so that nothing is lost");
                if let Err(e) = emit(None, &text) {
                    output_failed(&e);
                }
            }
        }
        Err(e) => code = output_failed(&anyhow::Error::new(e)),
    }
    if !quiet {
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

/// Writes `text` to `output`, or to stdout.
fn emit(output: Option<&Path>, text: &str) -> anyhow::Result<()> {
    match output {
        Some(path) => std::fs::write(path, text)
            .with_context(|| format!("{}: cannot write the report", path.display())),
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())
                .and_then(|()| out.flush())
                .context("cannot write to stdout")
        }
    }
}

/// First Ctrl-C: stop scheduling and let agents wrap up; after `grace` or a
/// second Ctrl-C: cancel them. The report is still written. The handler is
/// installed before this returns, so a Ctrl-C is never missed.
fn watch_interrupts(
    control: RunControl,
    grace: Duration,
    multi: MultiProgress,
) -> tokio::task::JoinHandle<()> {
    let mut interrupts = match Interrupts::install() {
        Ok(i) => i,
        Err(e) => {
            eprintln!(
                "fanscan: warning: Ctrl-C cannot be caught ({e}); it will end the run without a report"
            );
            return tokio::spawn(async {});
        }
    };
    tokio::spawn(async move {
        if !interrupts.next().await {
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
            _ = interrupts.next() => {}
            _ = tokio::time::sleep(grace) => {}
        }
        control.abort("interrupted (Ctrl-C): running agents were cancelled.");
    })
}

/// Ctrl-C, registered at once (on Unix a SIGINT stream; elsewhere tokio's
/// `ctrl_c`, registered on first poll).
struct Interrupts {
    #[cfg(unix)]
    signal: tokio::signal::unix::Signal,
}

impl Interrupts {
    fn install() -> std::io::Result<Self> {
        Ok(Self {
            #[cfg(unix)]
            signal: tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?,
        })
    }

    /// The next Ctrl-C; false when none can come any more.
    async fn next(&mut self) -> bool {
        #[cfg(unix)]
        {
            self.signal.recv().await.is_some()
        }
        #[cfg(not(unix))]
        {
            tokio::signal::ctrl_c().await.is_ok()
        }
    }
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
    if scan.planner == Some(fanscan::PlannerKind::Llm) {
        eprintln!("fanscan: note: `plan` calls no model, so it shows the default pack plan");
        scan.planner = Some(fanscan::PlannerKind::Pack);
    }
    let planned = async {
        // Planning calls no model, so no API key is needed.
        let env = |name: &str| std::env::var(name).ok();
        let ctx = Context::new(Settings::resolve_without_key(path, provider, &scan, &env)?)?;
        let inventory = ctx.inventory()?;
        let (plan, _) = ctx.plan(&inventory).await?;
        let estimate = if estimate {
            Some(ctx.estimate(&plan)?)
        } else {
            None
        };
        Ok::<_, SetupError>((inventory, plan, estimate))
    };
    let (inventory, plan, estimate) = match planned.await {
        Ok(p) => p,
        Err(e) => return setup_failed(&e),
    };
    let text = if json {
        fanscan::plan_json(&inventory, &plan, estimate.as_ref()).context("cannot encode the plan")
    } else {
        Ok(fanscan::plan_text(&inventory, &plan, estimate.as_ref()))
    };
    match text.and_then(|t| emit(None, &t)) {
        Ok(()) => exit::OK,
        Err(e) => output_failed(&e),
    }
}

/// Prints a store command's text; its errors are usage errors (exit 2).
fn store_command(text: Result<String, fanscan::StoreError>) -> i32 {
    match text {
        Ok(text) => match emit(None, &text) {
            Ok(()) => exit::OK,
            Err(e) => output_failed(&e),
        },
        Err(e) => {
            eprintln!("fanscan: {e}");
            exit::USAGE
        }
    }
}

fn agents_command(path: &Path) -> i32 {
    match fanscan::AgentSet::load(path) {
        Ok(set) => match emit(None, &set.describe()) {
            Ok(()) => exit::OK,
            Err(e) => output_failed(&e),
        },
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
    let prepared = (|| {
        let ctx = context(path, provider, &ScanArgs::default(), None)?;
        let definition = ctx.agent(name)?.clone();
        let files = files
            .iter()
            .map(|f| ctx.task_file(f))
            .collect::<Result<Vec<_>, _>>()?;
        Ok::<_, SetupError>((ctx, definition, files))
    })();
    let (ctx, definition, files) = match prepared {
        Ok(p) => p,
        Err(e) => return setup_failed(&e),
    };
    let task = AgentTask {
        group: "run-agent".into(),
        files,
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
                    eprintln!("finished: {status}, {findings} claims reported");
                }
                Event::Started { .. } | Event::Usage { .. } | Event::Transcript { .. } => {}
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
    let text = if json {
        serde_json::to_string_pretty(&report)
            .map(|t| t + "\n")
            .context("cannot encode the agent's report")
    } else {
        Ok(report.render_text())
    };
    if let Err(e) = text.and_then(|t| emit(None, &t)) {
        return output_failed(&e);
    }
    if report.status.reviewed() {
        exit::OK
    } else {
        exit::INCOMPLETE
    }
}
