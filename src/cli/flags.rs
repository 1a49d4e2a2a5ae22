//! The command line: one struct per command, the flag groups shared by
//! the commands that run agents (`RunFlags`) flattened once in each, and
//! the step from flags to what a command runs with ([`Command::resolve`]):
//! its [`Settings`], resolved once and whole.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use fanscan::{
    Count, EvalArgs, EvalFormat, FailOn, GateArgs, MatchBy, PlannerKind, RunArgs, Score, Settings,
    SetupError,
};

use super::run_flags::{GateFlags, OutputFlags, ProviderFlags, ScanFlags, ShardFlags};

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

/// Audit a code repository with fanned-out, read-only LLM sub-agents.
#[derive(Parser, Debug)]
#[command(name = "fanscan", version, about, after_help = EXIT_CODES)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
    /// No progress display.
    #[arg(long, short, global = true)]
    pub(crate) quiet: bool,
    /// More log output on stderr (-v, -vv).
    #[arg(long, short, global = true, action = clap::ArgAction::Count)]
    pub(crate) verbose: u8,
}

#[derive(Subcommand, Debug)]
pub(crate) enum Command {
    /// Scan a repository and print the report.
    #[command(after_help = format!("{LARGE_REPOSITORIES}\n\n{EXIT_CODES}"))]
    Scan(Scan),
    /// Merge the partial reports of `scan --shard K/N` into one run's report:
    /// checks they come from one plan and cover it exactly once, then
    /// verifies, reduces and reports them in the checkout at --path.
    #[command(after_help = format!("Run it in a checkout of the commit the shards scanned, with the same\nscan options (--include, --exclude, --group-tokens, ...) and provider:\nthe files are read again to verify the findings, and the reducer runs here.\n\n{EXIT_CODES}"))]
    Merge(Merge),
    /// Triage another tool's findings: each result of FILE.sarif (Semgrep,
    /// CodeQL, any SARIF 2.1.0) is put to the auditor of the group holding
    /// its file, which confirms or dismisses it with a reason; only those
    /// files are audited. The report (every --format) lists each result's
    /// outcome; confirmed ones are verified, challenged and gated like any
    /// finding, dismissed ones never gate.
    #[command(after_help = EXIT_CODES)]
    Triage(Triage),
    /// Ask one question about a repository: a lead agent answers it,
    /// delegating the reading to sub-agents (the `task` tool), several at
    /// once. The answer goes to stdout, with its path:line citations
    /// checked against the files; progress (one line per running
    /// sub-agent) to stderr.
    #[command(after_help = EXIT_CODES)]
    Ask(Ask),
    /// Print the plan (groups of files) without calling any model.
    #[command(after_help = LARGE_REPOSITORIES)]
    Plan(Plan),
    /// Scan and record the findings as a baseline: a later
    /// `scan --baseline FILE` keeps them out of the gate and lists them apart.
    #[command(after_help = EXIT_CODES)]
    Baseline(Baseline),
    /// List the runs in the run store: date, model, coverage, findings by
    /// severity, cost.
    History(History),
    /// Print the findings new and fixed from run A to run B: run ids of
    /// the store (see `fanscan history`) or two JSON report files.
    Diff(Diff),
    /// Score JSON reports against labelled truth: per CWE and overall
    /// TP, FP, FN, TN, precision, recall, F1 and TPR−FPR, with each run's
    /// tokens and cost. Two or more reports are shown side by side.
    #[command(
        after_help = "Exit codes: 0 scored, 1 internal or I/O error, 2 a truth file or report\nthat cannot be read (the message names the file, the line and the fix)."
    )]
    Eval(Eval),
    /// List the agent definitions in effect.
    Agents(Agents),
    /// Run one agent on one task and print its report.
    RunAgent(RunAgent),
}

/// The flag groups of every command that runs agents over a repository.
#[derive(Args, Debug)]
pub(crate) struct RunFlags {
    #[command(flatten)]
    provider: ProviderFlags,
    #[command(flatten)]
    scan: ScanFlags,
}

impl RunFlags {
    /// The raw arguments of a run with these groups and no gate, shard or
    /// report outputs.
    fn into_args(self) -> RunArgs {
        RunArgs {
            provider: self.provider.into(),
            scan: self.scan.into(),
            ..RunArgs::default()
        }
    }
}

/// `fanscan scan`.
#[derive(Args, Debug)]
pub(crate) struct Scan {
    /// The repository's root.
    #[arg(default_value = ".")]
    path: PathBuf,
    #[command(flatten)]
    run: RunFlags,
    #[command(flatten)]
    gate: GateFlags,
    #[command(flatten)]
    shard: ShardFlags,
    #[command(flatten)]
    out: OutputFlags,
    /// Write each agent's conversation to DIR/<group>.jsonl.
    #[arg(long, value_name = "DIR")]
    transcripts: Option<PathBuf>,
    /// Seconds running agents get to finish after Ctrl-C before they are cancelled.
    #[arg(long, value_name = "SECS", default_value_t = 30)]
    grace: u64,
}

/// `fanscan triage`.
#[derive(Args, Debug)]
pub(crate) struct Triage {
    /// The SARIF 2.1.0 file whose results are triaged (more with --leads).
    #[arg(value_name = "FILE.sarif")]
    sarif: PathBuf,
    /// The repository's root.
    #[arg(default_value = ".")]
    path: PathBuf,
    #[command(flatten)]
    run: RunFlags,
    #[command(flatten)]
    gate: GateFlags,
    #[command(flatten)]
    out: OutputFlags,
    /// Write each agent's conversation to DIR/<group>.jsonl.
    #[arg(long, value_name = "DIR")]
    transcripts: Option<PathBuf>,
    /// Seconds running agents get to finish after Ctrl-C before they are cancelled.
    #[arg(long, value_name = "SECS", default_value_t = 30)]
    grace: u64,
}

/// `fanscan eval`.
#[derive(Args, Debug)]
pub(crate) struct Eval {
    /// The reports to score (`fanscan scan --format json`); two or more are
    /// shown side by side.
    #[arg(required = true, value_name = "REPORT")]
    reports: Vec<PathBuf>,
    /// The labelled truth: fanscan's CSV (path,cwe,vulnerable,lines) or
    /// JSON, the OWASP Benchmark's expectedresults-*.csv, or the CASTLE
    /// dataset JSON; the format is told by the content.
    #[arg(long, value_name = "FILE", required_unless_present = "stability")]
    truth: Option<PathBuf>,
    /// No truth: how often each finding recurs across the reports (runs of
    /// one configuration on one tree), per CWE: in every run, in at least
    /// half, in one only.
    #[arg(long, conflicts_with = "truth")]
    stability: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = EvalFormatFlag::Md)]
    format: EvalFormatFlag,
    /// How many lines from a labelled line a finding may cite and still
    /// match it.
    #[arg(long, value_name = "N", default_value_t = 3)]
    line_slack: u32,
    /// Which findings are the run's predictions.
    #[arg(long, value_enum, default_value_t = CountFlag::Open)]
    count: CountFlag,
    /// What a finding must share with a case besides its file (and line).
    #[arg(long = "match", value_name = "WHAT", value_enum, default_value_t = MatchFlag::Cwe)]
    match_by: MatchFlag,
    /// Add a benchmark's own score beside the TP/FP tables.
    #[arg(long, value_name = "BENCHMARK", value_enum)]
    score: Option<ScoreFlag>,
}

impl From<Eval> for EvalArgs {
    fn from(c: Eval) -> Self {
        Self {
            reports: c.reports,
            truth: c.truth,
            stability: c.stability,
            format: match c.format {
                EvalFormatFlag::Md => EvalFormat::Md,
                EvalFormatFlag::Json => EvalFormat::Json,
            },
            line_slack: c.line_slack,
            count: match c.count {
                CountFlag::Open => Count::Open,
                CountFlag::Verified => Count::Verified,
                CountFlag::All => Count::All,
            },
            match_by: match c.match_by {
                MatchFlag::Cwe => MatchBy::Cwe,
                MatchFlag::Location => MatchBy::Location,
            },
            score: c.score.map(|s| match s {
                ScoreFlag::Castle => Score::Castle,
            }),
        }
    }
}

/// `eval --score`: [`Score`] on the command line; the variants' docs are
/// the help.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum ScoreFlag {
    /// The CASTLE benchmark's score: 5 per vulnerable case found (a finding
    /// on a labelled line, or with the case's CWE, a parent or a child), 2
    /// per clean case whose file has no finding, -1 per finding in a
    /// labelled file that matches nothing; low and info findings dropped;
    /// printed with the maximum the truth allows.
    Castle,
}

/// `eval --format`: [`EvalFormat`] on the command line.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum EvalFormatFlag {
    Md,
    Json,
}

/// `eval --count`: [`Count`] on the command line; the variants' docs are
/// the help.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum CountFlag {
    /// The open findings: verified, and not suppressed, baselined or
    /// refuted: what the gate fails on.
    Open,
    /// Every verified finding, also those suppressed, baselined or refuted
    /// by the skeptic (the run before those filters).
    Verified,
    /// Every located claim, also those that failed verification.
    All,
}

/// `eval --match`: [`MatchBy`] on the command line; the variants' docs
/// are the help.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum MatchFlag {
    /// The file, the CWE (or a documented relative) and, where lines are
    /// labelled, the line.
    Cwe,
    /// The file and, where lines are labelled, the line; the CWE is not
    /// looked at (for runs whose findings carry none).
    Location,
}

/// `fanscan merge`.
#[derive(Args, Debug)]
pub(crate) struct Merge {
    /// The partial reports (JSON), one per shard.
    #[arg(required = true, value_name = "PART")]
    parts: Vec<PathBuf>,
    /// The repository's root (a checkout of the commit the shards scanned).
    #[arg(long, default_value = ".")]
    path: PathBuf,
    #[command(flatten)]
    run: RunFlags,
    #[command(flatten)]
    gate: GateFlags,
    #[command(flatten)]
    out: OutputFlags,
}

/// `fanscan ask`.
#[derive(Args, Debug)]
pub(crate) struct Ask {
    /// The question, in quotes.
    question: String,
    /// The repository's root.
    #[arg(default_value = ".")]
    path: PathBuf,
    #[command(flatten)]
    run: RunFlags,
    /// Print one JSON object at the end (answer, tasks, citations, totals).
    #[arg(long)]
    json: bool,
    /// Write each agent's conversation to DIR/<lead|task-N>.jsonl.
    #[arg(long, value_name = "DIR")]
    transcripts: Option<PathBuf>,
    /// Seconds running agents get to finish after Ctrl-C before they are cancelled.
    #[arg(long, value_name = "SECS", default_value_t = 30)]
    grace: u64,
}

/// `fanscan plan`.
#[derive(Args, Debug)]
pub(crate) struct Plan {
    #[arg(default_value = ".")]
    path: PathBuf,
    #[command(flatten)]
    run: RunFlags,
    /// Print the plan as JSON.
    #[arg(long)]
    json: bool,
    /// Print an estimated token and cost range for a scan.
    #[arg(long)]
    estimate: bool,
}

/// `fanscan baseline`.
#[derive(Args, Debug)]
pub(crate) struct Baseline {
    #[arg(default_value = ".")]
    path: PathBuf,
    #[command(flatten)]
    run: RunFlags,
    /// Where to write the baseline.
    #[arg(long, short, value_name = "FILE")]
    output: PathBuf,
    /// Why these findings are accepted (recorded on each new entry).
    #[arg(long, value_name = "TEXT")]
    reason: Option<String>,
    /// An earlier baseline whose entries keep their reasons (and their
    /// expiry, while it has not passed).
    #[arg(long, value_name = "FILE")]
    baseline: Option<PathBuf>,
    /// New entries hold this long from today, then gate again: days,
    /// weeks, months or years (90d, 12w, 6mo, 1y). The file records the
    /// last day as `expires`.
    #[arg(long, value_name = "SPAN")]
    expires_in: Option<String>,
}

/// `fanscan history`.
#[derive(Args, Debug)]
pub(crate) struct History {
    /// The repository's root (its store is .fanscan/store.db).
    #[arg(default_value = ".")]
    path: PathBuf,
    /// The run store, instead of PATH/.fanscan/store.db.
    #[arg(long, value_name = "PATH")]
    store: Option<PathBuf>,
}

/// `fanscan diff`.
#[derive(Args, Debug)]
pub(crate) struct Diff {
    a: String,
    b: String,
    /// The run store for run ids (default .fanscan/store.db).
    #[arg(long, value_name = "PATH")]
    store: Option<PathBuf>,
}

/// `fanscan agents`.
#[derive(Args, Debug)]
pub(crate) struct Agents {
    #[arg(default_value = ".")]
    path: PathBuf,
}

/// `fanscan run-agent`.
#[derive(Args, Debug)]
pub(crate) struct RunAgent {
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
    provider: ProviderFlags,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

/// A command with its settings resolved: what [`crate::run`] runs.
pub(crate) enum Job {
    /// `scan`, and `baseline` (a scan that writes only its baseline).
    Scan {
        settings: Settings,
        transcripts: Option<PathBuf>,
        grace: u64,
    },
    Merge {
        settings: Settings,
        parts: Vec<PathBuf>,
    },
    Ask {
        settings: Settings,
        question: String,
        json: bool,
        transcripts: Option<PathBuf>,
        grace: u64,
    },
    Plan {
        settings: Settings,
        json: bool,
        estimate: bool,
    },
    History {
        store: PathBuf,
    },
    Diff {
        a: String,
        b: String,
        store: PathBuf,
    },
    Eval(EvalArgs),
    Agents {
        path: PathBuf,
    },
    RunAgent {
        settings: Settings,
        name: String,
        task: String,
        files: Vec<String>,
        json: bool,
    },
}

impl Command {
    /// The command's settings: its flags over fanscan.toml over the
    /// defaults, with `env` for the API key, `$GITHUB_STEP_SUMMARY` and
    /// `$JOB_COMPLETION_INDEX`.
    pub(crate) fn resolve(self, env: &dyn Fn(&str) -> Option<String>) -> Result<Job, SetupError> {
        let settings = |path: &PathBuf, args: RunArgs| Settings::from_args(path, &args, env);
        Ok(match self {
            Self::Scan(c) => Job::Scan {
                settings: settings(
                    &c.path,
                    RunArgs {
                        gate: c.gate.into(),
                        shard: c.shard.into(),
                        output: Some(c.out.into()),
                        ..c.run.into_args()
                    },
                )?,
                transcripts: c.transcripts,
                grace: c.grace,
            },
            Self::Triage(c) => {
                let mut args = RunArgs {
                    gate: c.gate.into(),
                    output: Some(c.out.into()),
                    ..c.run.into_args()
                };
                args.scan
                    .leads
                    .insert(0, c.sarif.to_string_lossy().into_owned());
                args.scan.triage = true;
                Job::Scan {
                    settings: settings(&c.path, args)?,
                    transcripts: c.transcripts,
                    grace: c.grace,
                }
            }
            Self::Merge(c) => Job::Merge {
                settings: settings(
                    &c.path,
                    RunArgs {
                        gate: c.gate.into(),
                        output: Some(c.out.into()),
                        ..c.run.into_args()
                    },
                )?,
                parts: c.parts,
            },
            Self::Ask(c) => Job::Ask {
                settings: settings(&c.path, c.run.into_args())?,
                question: c.question,
                json: c.json,
                transcripts: c.transcripts,
                grace: c.grace,
            },
            Self::Plan(c) => Job::Plan {
                settings: settings(&c.path, plan_args(c.run))?,
                json: c.json,
                estimate: c.estimate,
            },
            Self::Baseline(c) => {
                let gate = GateArgs {
                    fail_on: Some(FailOn::Never),
                    baseline: c.baseline,
                    write_baseline: Some(c.output),
                    baseline_reason: c.reason,
                    expires_in: c.expires_in,
                    ..GateArgs::default()
                };
                let args = RunArgs {
                    gate,
                    ..c.run.into_args()
                };
                Job::Scan {
                    settings: settings(&c.path, args)?,
                    transcripts: None,
                    grace: 30,
                }
            }
            Self::History(c) => Job::History {
                store: c
                    .store
                    .unwrap_or_else(|| c.path.join(".fanscan").join("store.db")),
            },
            Self::Diff(c) => Job::Diff {
                a: c.a,
                b: c.b,
                store: c
                    .store
                    .unwrap_or_else(|| PathBuf::from(".fanscan/store.db")),
            },
            Self::Eval(c) => Job::Eval(c.into()),
            Self::Agents(c) => Job::Agents { path: c.path },
            Self::RunAgent(c) => Job::RunAgent {
                settings: settings(
                    &c.path,
                    RunArgs {
                        provider: c.provider.into(),
                        ..RunArgs::default()
                    },
                )?,
                name: c.name,
                task: c.task,
                files: c.files,
                json: c.json,
            },
        })
    }
}

/// `plan` calls no model: no API key is needed, and the LLM planner is
/// not asked (the default pack plan is shown, with a note).
fn plan_args(run: RunFlags) -> RunArgs {
    let mut args = RunArgs {
        no_key_needed: true,
        ..run.into_args()
    };
    if args.scan.planner == Some(PlannerKind::Llm) {
        eprintln!("fanscan: note: `plan` calls no model, so it shows the default pack plan");
        args.scan.planner = Some(PlannerKind::Pack);
    }
    args
}
