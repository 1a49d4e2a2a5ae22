//! The `fanscan` command: parses the command line and dispatches to the
//! library. Exit codes: 0 the gate passed, 1 internal or I/O error, 2
//! usage or configuration error, 3 incomplete run, 4 the gate failed.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand};
use indicatif::{MultiProgress, ProgressDrawTarget};

use fanscan::{
    AgentTask, AskError, Baseline, Context, Event, EventSink, FailOn, Format, GateArgs,
    ProviderArgs, Report, RunControl, ScanArgs, ScanError, Settings, SetupError, Shard, ShardArgs,
    Ui, exit,
};

const EXIT_CODES: &str = "Exit codes:
  0  passed: every planned file reviewed, no open finding at or above --fail-on
  1  internal or I/O error (e.g. the report could not be written)
  2  usage or configuration error (a bad flag, fanscan.toml, agent file or
     baseline, an unknown --since ref): nothing was scanned
  3  incomplete run (failed groups, interrupted, a budget reached, a doubtful
     review under --strict) and no open finding at or above --fail-on: never
     a pass
  4  the gate failed: a verified finding at or above --fail-on (default
     high) that is neither baselined nor suppressed remains";

const LARGE_REPOSITORIES: &str =
    "Large repositories: a scan refuses a plan of more than --max-groups
groups (default 2000); `fanscan plan` shows such a plan with the same
advice as a warning. For a repository of tens of thousands of files, raise
--group-tokens (fewer, larger groups), narrow the scan with --include,
--exclude or a .fanscanignore, and see the estimate first with
`fanscan plan --estimate`.";

/// Where and in which formats a report goes (`scan` and `merge`).
#[derive(Args, Debug)]
struct OutputArgs {
    /// Report format (of stdout, or of a plain --output FILE).
    #[arg(long, value_enum)]
    format: Option<Format>,
    /// Write the report to FILE instead of stdout, or (FORMAT=FILE, repeatable)
    /// also write it in FORMAT: md, json, sarif, github, codeclimate, html,
    /// github-review, gitlab-discussions.
    /// E.g. --output sarif=fanscan.sarif --output md=report.md.
    #[arg(long, short, value_name = "[FORMAT=]FILE")]
    output: Vec<String>,
    /// The SARIF `automationDetails.id`, so several scans of one
    /// repository (nightly, pull request) keep separate alerts.
    #[arg(long, value_name = "CATEGORY")]
    category: Option<String>,
    /// Do not append the Markdown report to $GITHUB_STEP_SUMMARY.
    #[arg(long)]
    no_step_summary: bool,
}

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
        gate: GateArgs,
        #[command(flatten)]
        shard: ShardArgs,
        #[command(flatten)]
        out: OutputArgs,
        /// Write each agent's conversation to DIR/<group>.jsonl.
        #[arg(long, value_name = "DIR")]
        transcripts: Option<PathBuf>,
        /// Seconds running agents get to finish after Ctrl-C before they are cancelled.
        #[arg(long, value_name = "SECS", default_value_t = 30)]
        grace: u64,
    },
    /// Merge the partial reports of `scan --shard K/N` into one run's report:
    /// checks they come from one plan and cover it exactly once, then
    /// verifies, reduces and reports them in the checkout at --path.
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
        #[command(flatten)]
        gate: GateArgs,
        #[command(flatten)]
        out: OutputArgs,
    },
    /// Ask one question about a repository: a lead agent answers it,
    /// delegating the reading to sub-agents (the `task` tool), several at
    /// once. The answer goes to stdout, with its path:line citations
    /// checked against the files; progress (one line per running
    /// sub-agent) to stderr.
    #[command(after_help = EXIT_CODES)]
    Ask {
        /// The question, in quotes.
        question: String,
        /// The repository's root.
        #[arg(default_value = ".")]
        path: PathBuf,
        #[command(flatten)]
        provider: ProviderArgs,
        #[command(flatten)]
        scan: ScanArgs,
        /// Print one JSON object at the end (answer, tasks, citations, totals).
        #[arg(long)]
        json: bool,
        /// Write each agent's conversation to DIR/<lead|task-N>.jsonl.
        #[arg(long, value_name = "DIR")]
        transcripts: Option<PathBuf>,
        /// Seconds running agents get to finish after Ctrl-C before they are cancelled.
        #[arg(long, value_name = "SECS", default_value_t = 30)]
        grace: u64,
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
    /// Scan and record the findings as a baseline: a later
    /// `scan --baseline FILE` keeps them out of the gate and lists them apart.
    #[command(after_help = EXIT_CODES)]
    Baseline {
        #[arg(default_value = ".")]
        path: PathBuf,
        #[command(flatten)]
        provider: ProviderArgs,
        #[command(flatten)]
        scan: ScanArgs,
        /// Where to write the baseline.
        #[arg(long, short, value_name = "FILE")]
        output: PathBuf,
        /// Why these findings are accepted (recorded on each new entry).
        #[arg(long, value_name = "TEXT")]
        reason: Option<String>,
        /// An earlier baseline whose entries keep their reasons.
        #[arg(long, value_name = "FILE")]
        baseline: Option<PathBuf>,
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
    /// Score JSON reports against labelled truth: per CWE and overall
    /// TP, FP, FN, TN, precision, recall, F1 and TPR−FPR, with each run's
    /// tokens and cost. Two or more reports are shown side by side.
    #[command(
        after_help = "Exit codes: 0 scored, 1 internal or I/O error, 2 a truth file or report\nthat cannot be read (the message names the file, the line and the fix)."
    )]
    Eval(fanscan::EvalArgs),
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
                gate,
                shard,
                out,
                transcripts,
                grace,
            } => {
                let env = |name: &str| std::env::var(name).ok();
                let shard = match shard.resolve(&env) {
                    Ok(s) => s,
                    Err(e) => {
                        eprintln!("fanscan: {e}");
                        return exit::USAGE;
                    }
                };
                let format = out.format;
                let outputs = match outputs(out) {
                    Ok(o) => o,
                    Err(code) => return code,
                };
                scan_command(
                    &path,
                    &provider,
                    (&scan, shard),
                    &gate,
                    format,
                    outputs,
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
                gate,
                out,
            } => {
                let format = out.format;
                let outputs = match outputs(out) {
                    Ok(o) => o,
                    Err(code) => return code,
                };
                merge_command(
                    &parts, &path, &provider, &scan, &gate, format, outputs, multi, quiet,
                )
                .await
            }
            Command::Ask {
                question,
                path,
                provider,
                scan,
                json,
                transcripts,
                grace,
            } => {
                ask_command(
                    &question,
                    &path,
                    &provider,
                    &scan,
                    json,
                    transcripts,
                    grace,
                    multi,
                    quiet,
                )
                .await
            }
            Command::Baseline {
                path,
                provider,
                scan,
                output,
                reason,
                baseline,
            } => {
                let gate = GateArgs {
                    fail_on: Some(FailOn::Never),
                    baseline,
                    write_baseline: Some(output),
                    baseline_reason: reason,
                    ..GateArgs::default()
                };
                let outputs = Outputs {
                    stdout: false,
                    ..Outputs::default()
                };
                scan_command(
                    &path,
                    &provider,
                    (&scan, None),
                    &gate,
                    Some(Format::Md),
                    outputs,
                    None,
                    30,
                    multi,
                    quiet,
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
            Command::Eval(args) => eval_command(&args),
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

/// Where a scan's report goes: stdout (or one file) in `--format`, and
/// more files each in their own format.
#[derive(Debug)]
struct Outputs {
    /// The `--format` report goes to stdout (or `plain`).
    stdout: bool,
    /// A plain `--output FILE`.
    plain: Option<PathBuf>,
    /// `--output FORMAT=FILE`, in the order given.
    extra: Vec<(Format, PathBuf)>,
    category: Option<String>,
    /// $GITHUB_STEP_SUMMARY, unless --no-step-summary.
    step_summary: Option<PathBuf>,
}

impl Default for Outputs {
    fn default() -> Self {
        Self {
            stdout: true,
            plain: None,
            extra: Vec::new(),
            category: None,
            step_summary: None,
        }
    }
}

impl Outputs {
    /// `FORMAT=FILE` when the part before the first `=` names a format,
    /// else a plain file for `--format`.
    fn parse(
        outputs: &[String],
        category: Option<String>,
        step_summary: Option<PathBuf>,
    ) -> anyhow::Result<Self> {
        use clap::ValueEnum as _;
        let mut parsed = Self {
            category,
            step_summary,
            ..Self::default()
        };
        for o in outputs {
            let split = o
                .split_once('=')
                .and_then(|(name, file)| Some((Format::from_str(name, true).ok()?, file)));
            match split {
                Some((_, "")) => {
                    anyhow::bail!("--output {o}: no file after '='; write FORMAT=FILE");
                }
                Some((format, file)) => parsed.extra.push((format, PathBuf::from(file))),
                None if parsed.plain.is_some() => {
                    anyhow::bail!(
                        "--output {o}: only one --output may omit its format; write FORMAT=FILE (md, json, sarif, github, codeclimate, html, github-review, gitlab-discussions)"
                    );
                }
                None => parsed.plain = Some(PathBuf::from(o)),
            }
        }
        Ok(parsed)
    }
}

/// GitHub keeps at most 1 MiB of a step's summary and drops a larger one
/// whole: a long report is cut at a line, with a note where the rest is.
const STEP_SUMMARY_MAX: usize = 1_000_000;

fn step_summary_text(markdown: &str) -> String {
    const NOTE: &str = "\n\n_The report is longer than a job summary may be (1 MiB): the rest is in the report fanscan wrote (`--output`)._\n";
    if markdown.len() < STEP_SUMMARY_MAX {
        return format!("{markdown}\n");
    }
    let mut end = STEP_SUMMARY_MAX - NOTE.len();
    while !markdown.is_char_boundary(end) {
        end -= 1;
    }
    let cut = markdown[..end].rfind('\n').unwrap_or(end);
    format!("{}{NOTE}", &markdown[..cut])
}

/// The report in `format`; SARIF with the category.
fn render_as(
    ctx: &Context,
    report: &Report,
    format: Format,
    category: Option<&str>,
) -> anyhow::Result<String> {
    match format {
        Format::Sarif => report.render_sarif(category),
        Format::Md
        | Format::Json
        | Format::Github
        | Format::Codeclimate
        | Format::Html
        | Format::GithubReview
        | Format::GitlabDiscussions => fanscan::render(&ctx.settings, report, format),
    }
    .map_err(anyhow::Error::new)
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
    (scan, shard): (&ScanArgs, Option<Shard>),
    gate: &GateArgs,
    format: Option<Format>,
    outputs: Outputs,
    transcripts: Option<PathBuf>,
    grace: u64,
    multi: MultiProgress,
    quiet: bool,
) -> i32 {
    let env = |name: &str| std::env::var(name).ok();
    // A shard's partial report is JSON: `fanscan merge` reads it.
    let format = match (&shard, format) {
        (Some(_), None | Some(Format::Json)) => Some(Format::Json),
        (Some(_), Some(other)) => {
            eprintln!(
                "fanscan: --format {} with --shard: a shard writes its partial report as JSON for `fanscan merge`; drop --format (or add --output md=FILE for a readable copy)",
                format!("{other:?}").to_lowercase()
            );
            return exit::USAGE;
        }
        (None, format) => format,
    };
    let ctx = match Settings::resolve(path, provider, scan, format, &env)
        .map_err(SetupError::from)
        .and_then(|mut s| {
            s.shard = shard;
            Context::new(s.with_gate(gate))
        }) {
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
        Ok(report) => write_outputs(&ctx, &report, &outputs, quiet),
        Err(e) => scan_failed(e),
    }
}

/// The report's outputs: `--output` (plain or FORMAT=FILE), the SARIF
/// category and $GITHUB_STEP_SUMMARY; a bad one is exit code 2.
fn outputs(out: OutputArgs) -> Result<Outputs, i32> {
    let OutputArgs {
        output,
        category,
        no_step_summary,
        ..
    } = out;
    // The one environment variable of the outputs, read here.
    let step_summary = if no_step_summary {
        None
    } else {
        std::env::var_os("GITHUB_STEP_SUMMARY")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    Outputs::parse(&output, category, step_summary).map_err(|e| {
        eprintln!("fanscan: {e}");
        exit::USAGE
    })
}

/// `fanscan merge`: the parts' report as one run's, with the outputs and
/// exit codes of `scan`.
#[allow(clippy::too_many_arguments)]
async fn merge_command(
    parts: &[PathBuf],
    path: &Path,
    provider: &ProviderArgs,
    scan: &ScanArgs,
    gate: &GateArgs,
    format: Option<Format>,
    outputs: Outputs,
    multi: MultiProgress,
    quiet: bool,
) -> i32 {
    let env = |name: &str| std::env::var(name).ok();
    let ctx = match Settings::resolve(path, provider, scan, format, &env)
        .map_err(SetupError::from)
        .and_then(|s| Context::new(s.with_gate(gate)))
    {
        Ok(c) => c,
        Err(e) => return setup_failed(&e),
    };
    let ui = Ui {
        multi,
        transcripts: None,
        control: RunControl::default(),
    };
    match fanscan::merge(&ctx, &ui, parts).await {
        Ok(report) => write_outputs(&ctx, &report, &outputs, quiet),
        Err(e) => scan_failed(e),
    }
}

/// Prints why a scan or merge made no report; its exit code.
fn scan_failed(error: ScanError) -> i32 {
    match error {
        ScanError::Setup(e) => setup_failed(&e),
        ScanError::Store(e) if e.is_bug() => {
            eprintln!("fanscan: {e}");
            exit::ERROR
        }
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

/// Writes the report to every output, the baseline when asked, and a
/// one-line summary to stderr; the exit code.
fn write_outputs(ctx: &Context, report: &Report, outputs: &Outputs, quiet: bool) -> i32 {
    let mut code = report.exit_code();
    let category = outputs.category.as_deref();
    if outputs.stdout || outputs.plain.is_some() {
        match render_as(ctx, report, ctx.settings.format, category) {
            Ok(text) => {
                if let Err(e) = emit(outputs.plain.as_deref(), &text) {
                    code = output_failed(&e);
                    eprintln!("fanscan: the report follows on stdout so that nothing is lost");
                    if let Err(e) = emit(None, &text) {
                        output_failed(&e);
                    }
                }
            }
            Err(e) => code = output_failed(&e),
        }
    }
    for (format, file) in &outputs.extra {
        if let Err(e) = render_as(ctx, report, *format, category).and_then(|t| emit(Some(file), &t))
        {
            code = output_failed(&e);
        }
    }
    if let Some(summary) = &outputs.step_summary {
        // The job summary is a convenience: a failure to append is a
        // warning, never a changed verdict.
        let appended = render_as(ctx, report, Format::Md, None).and_then(|text| {
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(summary)
                .with_context(|| {
                    format!("{}: cannot open $GITHUB_STEP_SUMMARY", summary.display())
                })?;
            file.write_all(step_summary_text(&text).as_bytes())
                .with_context(|| {
                    format!(
                        "{}: cannot append to $GITHUB_STEP_SUMMARY",
                        summary.display()
                    )
                })
        });
        if let Err(e) = appended {
            eprintln!("fanscan: warning: {e:#}");
        }
    }
    if let Some(file) = &ctx.settings.write_baseline {
        let accepted = report
            .findings
            .iter()
            .chain(report.baselined.iter().map(|b| &b.finding));
        let baseline = Baseline::of(
            accepted,
            ctx.baseline.as_ref(),
            ctx.settings.baseline_reason.as_deref(),
        );
        let written = baseline
            .to_json()
            .context("cannot encode the baseline")
            .and_then(|text| {
                if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir).with_context(|| {
                        format!("{}: cannot create the baseline's directory", dir.display())
                    })?;
                }
                std::fs::write(file, text)
                    .with_context(|| format!("{}: cannot write the baseline", file.display()))
            });
        match written {
            Ok(()) => {
                if !report.complete {
                    eprintln!(
                        "fanscan: warning: the run is incomplete, so {} holds only the findings of the files that were reviewed",
                        file.display()
                    );
                }
                if !quiet {
                    eprintln!(
                        "fanscan: wrote {} findings to the baseline {}",
                        baseline.findings.len(),
                        file.display()
                    );
                }
            }
            Err(e) => code = output_failed(&e),
        }
    }
    if !quiet {
        eprintln!(
            "fanscan: {} groups, {} open verified findings, {} unverified, {} suppressed, {} baselined; {}; gate {}",
            report.groups.len(),
            report.findings.len(),
            report.unverified.len(),
            report.suppressed.len(),
            report.baselined.len(),
            if report.complete {
                "complete".to_string()
            } else {
                format!("INCOMPLETE: {}", report.incomplete_reasons.join(" "))
            },
            report.gate.reason
        );
    }
    code
}

#[allow(clippy::too_many_arguments)]
async fn ask_command(
    question: &str,
    path: &Path,
    provider: &ProviderArgs,
    scan: &ScanArgs,
    json: bool,
    transcripts: Option<PathBuf>,
    grace: u64,
    multi: MultiProgress,
    quiet: bool,
) -> i32 {
    let ctx = match context(path, provider, scan, None) {
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
    let result = fanscan::ask(&ctx, &ui, question, !json).await;
    watcher.abort();
    let answer = match result {
        Ok(a) => a,
        Err(AskError::Setup(e)) => return setup_failed(&e),
        Err(e @ AskError::Verify(_)) => {
            eprintln!("fanscan: {e}");
            return exit::ERROR;
        }
    };
    let text = if json {
        serde_json::to_string_pretty(&answer)
            .map(|t| t + "\n")
            .context("cannot encode the answer")
    } else if answer.streamed {
        Ok(answer.render_after_answer())
    } else {
        Ok(answer.render_text())
    };
    if let Err(e) = text.and_then(|t| emit(None, &t)) {
        return output_failed(&e);
    }
    if !quiet {
        eprint!(
            "fanscan: {}\n{}",
            answer.status.as_str(),
            answer.tasks_text()
        );
        if !answer.stopped.is_empty() {
            eprintln!("fanscan: INCOMPLETE: {}", answer.stopped.join(" "));
        }
    }
    answer.exit_code()
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
        // A diff scan's plan holds the changed files only.
        let inventory = ctx.in_scope(&ctx.inventory()?);
        // A plan over --max-groups is shown: the cap keeps `scan` from
        // starting that many agents, and showing a plan starts none.
        let (plan, _) = ctx.plan_uncapped(&inventory).await?;
        let over_cap = plan.check_cap(ctx.settings.max_groups).err();
        let estimate = if estimate {
            Some(ctx.estimate(&plan)?)
        } else {
            None
        };
        Ok::<_, SetupError>((inventory, plan, estimate, over_cap))
    };
    let (inventory, plan, estimate, over_cap) = match planned.await {
        Ok(p) => p,
        Err(e) => return setup_failed(&e),
    };
    if let Some(e) = over_cap {
        eprintln!("fanscan: warning: {e}. `fanscan scan` refuses this plan; `plan` only shows it");
    }
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

fn eval_command(args: &fanscan::EvalArgs) -> i32 {
    match fanscan::evaluate(args) {
        Ok(text) => match emit(None, &text) {
            Ok(()) => exit::OK,
            Err(e) => output_failed(&e),
        },
        Err(e) => {
            eprintln!("fanscan: {e}");
            e.exit_code()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_step_summary_is_cut_at_a_line_under_githubs_limit() {
        let short = step_summary_text("# report\n");
        assert_eq!(short, "# report\n\n");
        let long: String = (0..200_000).map(|i| format!("line {i} é\n")).collect();
        let text = step_summary_text(&long);
        assert!(text.len() < STEP_SUMMARY_MAX);
        assert!(text.ends_with("(`--output`)._\n"));
        let body = text.split("\n\n_The report").next().unwrap();
        assert!(long.starts_with(body));
        assert!(body.ends_with(" é"), "cut at a line end");
    }
}
