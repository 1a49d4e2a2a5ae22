//! The `fanscan` command: parses the command line, resolves each
//! command's settings once, and runs the command over the library. The
//! flags, the output writing and Ctrl-C live in [`cli`]; exit codes come
//! from the outcome and error types themselves (`fanscan::exit`).

mod cli;

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Parser;

use fanscan::{Ui, exit};

use cli::Failure;
use cli::commands::{self, AgentJob, AskOptions};
use cli::flags::{Cli, Job};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // Printing --help or a usage error to a closed terminal can
            // fail; the exit code still says what happened.
            let _ = e.print();
            return exit_code(if e.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            });
        }
    };
    let bars = cli::progress::Bars::new(!cli.quiet && std::io::stderr().is_terminal());
    init_logging(cli.verbose, &bars);
    let ui = Ui::new(std::sync::Arc::new(bars));
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("fanscan: cannot start the runtime: {e}");
            return exit_code(exit::ERROR);
        }
    };
    let env = |name: &str| std::env::var(name).ok();
    let result = match cli.command.resolve(&env) {
        Ok(job) => runtime.block_on(run(job, ui, cli.quiet)),
        Err(e) => Err(Failure::Setup(e)),
    };
    exit_code(result.unwrap_or_else(|e| {
        eprintln!("fanscan: {e}");
        e.exit_code()
    }))
}

/// Runs a resolved command; its exit code.
async fn run(job: Job, ui: Ui, quiet: bool) -> Result<i32, Failure> {
    match job {
        Job::Scan {
            settings,
            transcripts,
            grace,
        } => commands::scan(settings, ui.with_transcripts(transcripts), quiet, grace).await,
        Job::Merge { settings, parts } => commands::merge(settings, ui, quiet, &parts).await,
        Job::Ask {
            settings,
            question,
            json,
            transcripts,
            grace,
        } => {
            let options = AskOptions { json, quiet, grace };
            let ui = ui.with_transcripts(transcripts);
            commands::ask(settings, ui, &question, options).await
        }
        Job::Plan {
            settings,
            json,
            estimate,
        } => commands::plan(settings, json, estimate).await,
        Job::History { store } => commands::store(fanscan::history_text(&store)),
        Job::Diff { a, b, store } => commands::store(fanscan::diff_text(&a, &b, &store)),
        Job::Eval(args) => commands::eval(&args),
        Job::Agents { path } => commands::agents(&path),
        Job::RunAgent {
            settings,
            name,
            task,
            files,
            json,
        } => {
            let job = AgentJob {
                name,
                task,
                files,
                json,
                quiet,
            };
            commands::run_agent(settings, job).await
        }
    }
}

/// Logs on stderr through the progress display: warnings by default,
/// more with -v and -vv, or what `FANSCAN_LOG` says.
fn init_logging(verbose: u8, bars: &cli::progress::Bars) {
    let level = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("FANSCAN_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(format!("fanscan={level}")));
    if let Err(e) = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(bars.log_writer())
        .with_target(false)
        .try_init()
    {
        eprintln!("fanscan: warning: logging is off: {e}");
    }
}

fn exit_code(code: i32) -> ExitCode {
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}
