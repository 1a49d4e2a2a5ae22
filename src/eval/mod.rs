//! `fanscan eval`: scores one or more JSON reports against labelled truth.
//!
//! Takes the reports (read through a lenient view, [`report`]), a truth
//! file in one of the formats [`truth`] reads, and how to score
//! ([`EvalArgs`]); gives the evaluation ([`score`]) per CWE and overall,
//! with each run's tokens and cost, as Markdown or JSON ([`render`]).
//! Several reports are scored side by side against the same truth; with
//! `--score castle`, each also gets the CASTLE benchmark's score
//! ([`castle`]).

mod castle;
mod render;
mod report;
mod score;
mod stability;
mod truth;

use std::path::PathBuf;

use crate::model::cwe::{CweError, CweTable};

pub use score::Count;
pub use score::MatchBy;

/// The output format of `fanscan eval`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EvalFormat {
    /// Markdown tables.
    #[default]
    Md,
    /// The evaluation as JSON.
    Json,
}

/// A benchmark's own score, computed beside the TP/FP tables
/// (`fanscan eval --score`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Score {
    /// The CASTLE benchmark's: 5 per vulnerable case found, 2 per clean
    /// case with no finding, −1 per finding that matches nothing.
    Castle,
}

/// What `fanscan eval` scores, and how (the CLI's flags, whose help says
/// each one's meaning, are parsed into it).
#[derive(Debug, Clone)]
pub struct EvalArgs {
    /// The JSON reports to score.
    pub reports: Vec<PathBuf>,
    /// The labelled truth file (none for `--stability`).
    pub truth: Option<PathBuf>,
    /// Measure how often findings recur across the reports instead of
    /// scoring them against truth.
    pub stability: bool,
    /// Output format.
    pub format: EvalFormat,
    /// How far from a labelled line a cited line still matches.
    pub line_slack: u32,
    /// Which findings are the run's predictions.
    pub count: Count,
    /// What a finding must share with a case besides its location.
    pub match_by: MatchBy,
    /// A benchmark's own score to add; `None`: the TP/FP tables only.
    pub score: Option<Score>,
}

/// Why an evaluation could not be made.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("{path}: cannot read the truth file: {error}")]
    ReadTruth {
        path: String,
        #[source]
        error: std::io::Error,
    },
    /// A truth file that does not parse: where, and the fix.
    #[error("{place}: {problem}")]
    Truth { place: String, problem: String },
    #[error("{path}: cannot read the report: {error}")]
    ReadReport {
        path: String,
        #[source]
        error: std::io::Error,
    },
    /// A report that is not a fanscan JSON report.
    #[error("{place}: {problem}")]
    Report { place: String, problem: String },
    /// The built-in CWE table is broken: a fanscan bug.
    #[error("the built-in CWE table is broken ({0}): a fanscan bug, please report it")]
    Table(#[source] CweError),
    /// The built-in rules' `cwe` keys do not read: a fanscan bug.
    #[error("the built-in rules' CWEs do not read ({problem}): a fanscan bug, please report it")]
    BuiltinRules { problem: String },
    #[error(
        "no truth file: give --truth FILE, or --stability to compare the reports with each other"
    )]
    NoTruth,
    #[error("cannot encode the evaluation as JSON: {0}")]
    Json(#[source] serde_json::Error),
    /// Writing the Markdown failed: a `Display` of ours returned an error.
    #[error("cannot write the evaluation as Markdown: a fanscan bug, please report it")]
    Markdown(#[source] std::fmt::Error),
}

/// serde_json's message without the position it appends: the position
/// goes in front, as `file:line:column`, like every other place we name.
pub(crate) fn json_message(error: &serde_json::Error) -> String {
    let text = error.to_string();
    let suffix = format!(" at line {} column {}", error.line(), error.column());
    text.strip_suffix(&suffix).unwrap_or(&text).to_string()
}

/// Scores the reports against the truth and renders the evaluation.
pub fn evaluate(args: &EvalArgs) -> Result<String, EvalError> {
    let table = CweTable::builtin().map_err(EvalError::Table)?;
    let rules = report::builtin_rule_cwes()?;
    let runs = args
        .reports
        .iter()
        .map(|path| report::load(path, &rules))
        .collect::<Result<Vec<_>, _>>()?;
    if args.stability {
        let measured = stability::measure(&runs, args.count);
        return match args.format {
            EvalFormat::Md => measured.markdown().map_err(EvalError::Markdown),
            EvalFormat::Json => serde_json::to_string_pretty(&measured)
                .map(|t| t + "\n")
                .map_err(EvalError::Json),
        };
    }
    let truth = truth::load(args.truth.as_ref().ok_or(EvalError::NoTruth)?)?;
    let method = score::Method {
        count: args.count,
        match_by: args.match_by,
        line_slack: args.line_slack,
    };
    let evaluation = render::Evaluation::new(&truth, &runs, method, args.score, table);
    match args.format {
        EvalFormat::Md => evaluation.markdown().map_err(EvalError::Markdown),
        EvalFormat::Json => evaluation.json().map_err(EvalError::Json),
    }
}
