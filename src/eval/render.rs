//! The evaluation as people and programs read it: one [`Evaluation`] value
//! (the truth, how it was scored, and each run's score, usage and case
//! outcomes), rendered as Markdown or JSON by pure functions.

use std::fmt::Write as _;

use serde::Serialize;

use super::Score;
use super::castle::{self, CastleScore};
use super::report::RunView;
use super::score::{self, Counts, MatchBy, Method, Outcome, Rates, RunScore, Tally};
use super::truth::{Truth, TruthFormat};
use crate::model::cwe::{CweId, CweTable};

/// How many missed cases and false alarms the Markdown lists per run (the
/// JSON has them all).
const LISTED: usize = 20;

/// The truth, in brief.
#[derive(Clone, Debug, PartialEq, Serialize)]
struct TruthSummary {
    path: String,
    format: TruthFormat,
    cases: u64,
    vulnerable: u64,
    safe: u64,
    cwe_classes: u64,
}

/// One CWE class's score in the output.
#[derive(Clone, Debug, PartialEq, Serialize)]
struct ClassEval {
    cwe: String,
    /// MITRE's name; `None` for an id not in fanscan's table.
    name: Option<String>,
    vulnerable: u64,
    safe: u64,
    #[serde(flatten)]
    counts: Counts,
    #[serde(flatten)]
    rates: Rates,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
struct Overall {
    #[serde(flatten)]
    counts: Counts,
    /// The mean of the classes' rates: the headline.
    #[serde(rename = "macro")]
    macro_rates: Rates,
    /// The rates of the summed counts.
    #[serde(rename = "micro")]
    micro_rates: Rates,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
struct UsageEval {
    requests: u64,
    input_tokens: u64,
    output_tokens: u64,
    cached_tokens: u64,
    #[serde(serialize_with = "score::rounded_money")]
    cost_usd: Option<f64>,
    #[serde(serialize_with = "score::rounded_money")]
    cost_per_true_positive: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
struct CaseEval {
    id: String,
    file: String,
    cwe: String,
    vulnerable: bool,
    lines: Vec<u32>,
    outcome: Outcome,
    matched_by: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
struct RunEval {
    /// The report file as named on the command line.
    report: String,
    provider: Option<String>,
    model: Option<String>,
    engine: Option<String>,
    complete: Option<bool>,
    overall: Overall,
    per_cwe: Vec<ClassEval>,
    findings: Tally,
    usage: UsageEval,
    /// Cases whose file the run did not review.
    not_reviewed: Option<u64>,
    /// The CASTLE benchmark's score, with `--score castle`.
    #[serde(skip_serializing_if = "Option::is_none")]
    castle: Option<CastleScore>,
    notes: Vec<String>,
    cases: Vec<CaseEval>,
}

/// An evaluation of one or more runs against one truth.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct Evaluation {
    truth: TruthSummary,
    method: Method,
    /// About the truth (CWE ids fanscan does not know).
    notes: Vec<String>,
    runs: Vec<RunEval>,
}

fn class_label(table: &CweTable, id: CweId) -> (String, Option<String>) {
    (id.to_string(), table.name(id).map(str::to_string))
}

impl Evaluation {
    /// Scores every run against the truth.
    pub(crate) fn new(
        truth: &Truth,
        runs: &[RunView],
        method: Method,
        extra: Option<Score>,
        table: &CweTable,
    ) -> Self {
        let vulnerable = truth.cases.iter().filter(|c| c.vulnerable).count() as u64;
        let mut classes: Vec<CweId> = truth.cases.iter().map(|c| c.cwe).collect();
        classes.sort_unstable();
        classes.dedup();
        let notes = classes
            .iter()
            .filter(|&&id| !table.is_known(id))
            .map(|id| {
                format!("{id} is not in fanscan's CWE table: findings match it by equal id only")
            })
            .collect();
        Self {
            truth: TruthSummary {
                path: truth.source.clone(),
                format: truth.format,
                cases: truth.cases.len() as u64,
                vulnerable,
                safe: truth.cases.len() as u64 - vulnerable,
                cwe_classes: classes.len() as u64,
            },
            method,
            notes,
            runs: runs
                .iter()
                .map(|run| {
                    let mut eval = run_eval(
                        truth,
                        run,
                        &score::score(truth, run, &method, table),
                        &method,
                        table,
                    );
                    eval.castle = extra.map(|kind| match kind {
                        Score::Castle => castle::score(truth, run, method.count, table),
                    });
                    eval
                })
                .collect(),
        }
    }

    /// The evaluation as JSON (pretty, with a final newline).
    pub(crate) fn json(&self) -> Result<String, serde_json::Error> {
        let mut text = serde_json::to_string_pretty(self)?;
        text.push('\n');
        Ok(text)
    }

    /// The evaluation as Markdown (a `fmt::Error` is a `Display` of ours
    /// that failed: a bug, reported, never an empty page).
    pub(crate) fn markdown(&self) -> Result<String, std::fmt::Error> {
        let mut out = String::new();
        md_header(&mut out, self)?;
        md_overall(&mut out, self)?;
        md_castle(&mut out, self)?;
        md_cost(&mut out, self)?;
        md_per_cwe(&mut out, self)?;
        md_unmatched(&mut out, self)?;
        md_missed(&mut out, self)?;
        md_notes(&mut out, self)?;
        Ok(out)
    }
}

/// The title, the truth set and how findings were counted.
fn md_header(out: &mut String, eval: &Evaluation) -> std::fmt::Result {
    let t = &eval.truth;
    writeln!(out, "# fanscan eval\n")?;
    writeln!(
        out,
        "Truth: {} ({}): {} cases, {} vulnerable and {} safe, in {} CWE classes.\n",
        code(&t.path),
        t.format,
        t.cases,
        t.vulnerable,
        t.safe,
        t.cwe_classes
    )?;
    let matching = match eval.method.match_by {
        MatchBy::Cwe => "the same CWE or a documented relative",
        MatchBy::Location => "any CWE (--match location)",
    };
    writeln!(
        out,
        "Counted: {}. A finding matches a case in its file with {matching} and, where the case labels lines, cites a line within {} of one.\n",
        eval.method.count.describe(),
        eval.method.line_slack
    )?;
    Ok(())
}

/// Counts and rates over all CWE classes, one row per run.
fn md_overall(out: &mut String, eval: &Evaluation) -> std::fmt::Result {
    writeln!(out, "## Overall\n")?;
    writeln!(
        out,
        "Counts are summed over the CWE classes; rates are the mean of the classes' rates (a rate with nothing to divide by shows as – and is left out of the mean).\n"
    )?;
    writeln!(out, "| run {RATE_HEADER}")?;
    writeln!(out, "|---{RATE_RULE}")?;
    for run in &eval.runs {
        writeln!(
            out,
            "| {} {}",
            code(&run.report),
            rate_cells(&run.overall.counts, &run.overall.macro_rates)
        )?;
    }
    Ok(())
}

/// The CASTLE benchmark's score, one row per run (when asked for).
fn md_castle(out: &mut String, eval: &Evaluation) -> std::fmt::Result {
    let rows: Vec<(&RunEval, &CastleScore)> = eval
        .runs
        .iter()
        .filter_map(|run| run.castle.as_ref().map(|c| (run, c)))
        .collect();
    if rows.is_empty() {
        return Ok(());
    }
    writeln!(out, "\n## CASTLE score\n")?;
    writeln!(
        out,
        "{} per vulnerable case found (a finding in its file on a labelled line, or with its CWE, a parent or a child), {} per clean case whose file has no finding, {} per finding in a labelled file that matches no vulnerable case; low and info findings are dropped, findings in files no case labels are not scored. Not included: the CASTLE paper's bonus for finding the more common (CWE Top 25) weaknesses, which puts its maximum for CASTLE-C250 at 1,250.\n",
        castle::FOUND_POINTS,
        castle::CLEAN_POINTS,
        castle::UNMATCHED_POINTS
    )?;
    writeln!(
        out,
        "| run | score | found ×{} | clean, no finding ×{} | unmatched ×{} | low/info dropped | outside the truth |",
        castle::FOUND_POINTS,
        castle::CLEAN_POINTS,
        castle::UNMATCHED_POINTS
    )?;
    writeln!(out, "|---|---:|---:|---:|---:|---:|---:|")?;
    for (run, c) in rows {
        writeln!(
            out,
            "| {} | {} of {} | {} of {} ({:+}) | {} of {} ({:+}) | {} ({:+}) | {} | {} |",
            code(&run.report),
            c.score,
            c.maximum,
            c.vulnerable_found,
            c.vulnerable,
            c.found_points,
            c.clean_without_finding,
            c.clean,
            c.clean_points,
            c.unmatched_findings,
            c.unmatched_points,
            c.dropped_low_or_info,
            c.outside_truth,
        )?;
    }
    Ok(())
}

/// Usage and cost, one row per run.
fn md_cost(out: &mut String, eval: &Evaluation) -> std::fmt::Result {
    writeln!(out, "\n## Cost\n")?;
    writeln!(
        out,
        "| run | provider | model | requests | input tokens | output tokens | cached tokens | cost | cost per TP |"
    )?;
    writeln!(out, "|---|---|---|---:|---:|---:|---:|---:|---:|")?;
    for run in &eval.runs {
        let u = &run.usage;
        writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            code(&run.report),
            cell(run.provider.as_deref().unwrap_or("–")),
            cell(run.model.as_deref().unwrap_or("–")),
            u.requests,
            u.input_tokens,
            u.output_tokens,
            u.cached_tokens,
            money(u.cost_usd, "unknown"),
            money(u.cost_per_true_positive, "–"),
        )?;
    }
    Ok(())
}

/// Counts and rates per CWE class, the runs side by side.
fn md_per_cwe(out: &mut String, eval: &Evaluation) -> std::fmt::Result {
    writeln!(out, "\n## Per CWE\n")?;
    writeln!(out, "| CWE | cases (vulnerable/safe) | run {RATE_HEADER}")?;
    writeln!(out, "|---|---|---{RATE_RULE}")?;
    let class_count = eval.runs.first().map_or(0, |r| r.per_cwe.len());
    for i in 0..class_count {
        for (r, run) in eval.runs.iter().enumerate() {
            let Some(class) = run.per_cwe.get(i) else {
                continue;
            };
            let (label, cases) = if r == 0 {
                let name = class
                    .name
                    .as_deref()
                    .map(|n| format!(" {}", cell(crate::model::cwe::short_name(n))))
                    .unwrap_or_else(|| " (not in fanscan's table)".into());
                (
                    format!("{}{name}", class.cwe),
                    format!(
                        "{} ({}/{})",
                        class.vulnerable + class.safe,
                        class.vulnerable,
                        class.safe
                    ),
                )
            } else {
                (String::new(), String::new())
            };
            writeln!(
                out,
                "| {label} | {cases} | {} {}",
                code(&run.report),
                rate_cells(&class.counts, &class.rates)
            )?;
        }
    }
    Ok(())
}

/// Why findings matched no case, one row per run.
fn md_unmatched(out: &mut String, eval: &Evaluation) -> std::fmt::Result {
    writeln!(out, "\n## Findings that matched no case\n")?;
    writeln!(
        out,
        "| run | findings counted | matched a case | other CWE | off the labelled lines | in an unlabelled file | without a CWE | unreadable CWE |"
    )?;
    writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|")?;
    for run in &eval.runs {
        let f = &run.findings;
        writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            code(&run.report),
            f.scored,
            f.matched,
            f.other_cwe,
            f.off_lines,
            f.unlabelled,
            f.without_cwe,
            f.unreadable_cwe
        )?;
    }
    Ok(())
}

/// Each run's missed cases and false alarms.
fn md_missed(out: &mut String, eval: &Evaluation) -> std::fmt::Result {
    writeln!(out, "\n## Missed and false alarms\n")?;
    for run in &eval.runs {
        writeln!(out, "### {}\n", code(&run.report))?;
        list_cases(out, run, Outcome::Fn, "Missed (FN)")?;
        list_cases(out, run, Outcome::Fp, "False alarms (FP)")?;
    }
    Ok(())
}

/// The evaluation's and the runs' notes.
fn md_notes(out: &mut String, eval: &Evaluation) -> std::fmt::Result {
    let notes: Vec<String> = eval
        .notes
        .iter()
        .cloned()
        .chain(eval.runs.iter().flat_map(|run| {
            run.notes
                .iter()
                .map(|n| format!("{}: {n}", code(&run.report)))
        }))
        .collect();
    if !notes.is_empty() {
        writeln!(out, "## Notes\n")?;
        for note in notes {
            writeln!(out, "- {note}")?;
        }
    }
    Ok(())
}

const RATE_HEADER: &str = "| TP | FP | FN | TN | TPR | FPR | precision | recall | F1 | TPR−FPR |";
const RATE_RULE: &str = "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|";

fn rate_cells(c: &Counts, r: &Rates) -> String {
    let rate = |x: Option<f64>| x.map_or_else(|| "–".to_string(), |x| format!("{x:.2}"));
    format!(
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
        c.tp,
        c.fp,
        c.fn_,
        c.tn,
        rate(r.tpr),
        rate(r.fpr),
        rate(r.precision),
        rate(r.recall),
        rate(r.f1),
        r.score
            .map_or_else(|| "–".to_string(), |x| format!("{x:+.2}")),
    )
}

fn money(value: Option<f64>, none: &str) -> String {
    value.map_or_else(|| none.to_string(), |v| format!("${v:.4}"))
}

/// Text safe in a Markdown table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// Text as inline code in a table cell.
fn code(text: &str) -> String {
    format!("`{}`", cell(&text.replace('`', "'")))
}

fn list_cases(out: &mut String, run: &RunEval, outcome: Outcome, title: &str) -> std::fmt::Result {
    let cases: Vec<&CaseEval> = run.cases.iter().filter(|c| c.outcome == outcome).collect();
    if cases.is_empty() {
        writeln!(out, "{title}: none.\n")?;
        return Ok(());
    }
    writeln!(out, "{title}: {}\n", cases.len())?;
    for case in cases.iter().take(LISTED) {
        let lines = if case.lines.is_empty() {
            String::new()
        } else {
            let list: Vec<String> = case.lines.iter().map(u32::to_string).collect();
            format!(", line {}", list.join(", "))
        };
        let by = if case.matched_by.is_empty() {
            String::new()
        } else {
            let list: Vec<String> = case.matched_by.iter().map(|m| code(m)).collect();
            format!(": {}", list.join(", "))
        };
        writeln!(out, "- {} {}{lines}{by}", code(&case.file), case.cwe)?;
    }
    if cases.len() > LISTED {
        writeln!(
            out,
            "- … and {} more (all of them in --format json)",
            cases.len() - LISTED
        )?;
    }
    out.push('\n');
    Ok(())
}

fn run_eval(
    truth: &Truth,
    run: &RunView,
    score: &RunScore,
    method: &Method,
    table: &CweTable,
) -> RunEval {
    let notes = run_notes(truth, run, score, method);
    let cost_per_tp = run
        .usage
        .cost_usd
        .filter(|_| score.counts.tp > 0)
        .map(|cost| cost / score.counts.tp as f64);
    RunEval {
        report: run.source.clone(),
        provider: run.provider.clone(),
        model: run.model.clone(),
        engine: run.engine.clone(),
        complete: run.complete,
        overall: Overall {
            counts: score.counts,
            macro_rates: score.macro_rates,
            micro_rates: score.micro_rates,
        },
        per_cwe: score
            .per_cwe
            .iter()
            .map(|class| {
                let (cwe, name) = class_label(table, class.cwe);
                ClassEval {
                    cwe,
                    name,
                    vulnerable: class.vulnerable,
                    safe: class.safe,
                    counts: class.counts,
                    rates: class.rates,
                }
            })
            .collect(),
        findings: score.tally,
        usage: UsageEval {
            requests: run.usage.requests,
            input_tokens: run.usage.input_tokens,
            output_tokens: run.usage.output_tokens,
            cached_tokens: run.usage.cached_tokens,
            cost_usd: run.usage.cost_usd,
            cost_per_true_positive: cost_per_tp,
        },
        not_reviewed: score.not_reviewed,
        castle: None,
        notes,
        cases: score
            .cases
            .iter()
            .filter_map(|result| {
                let case = truth.cases.get(result.case)?;
                Some(CaseEval {
                    id: case.id.clone(),
                    file: case.file.to_string(),
                    cwe: case.cwe.to_string(),
                    vulnerable: case.vulnerable,
                    lines: case.lines.clone(),
                    outcome: result.outcome,
                    matched_by: result.matched_by.clone(),
                })
            })
            .collect(),
    }
}

/// What a reader of one run's scores should know: an incomplete run, cases
/// in files it did not review, findings without a CWE to match on.
fn run_notes(truth: &Truth, run: &RunView, score: &RunScore, method: &Method) -> Vec<String> {
    let mut notes = Vec::new();
    if run.complete == Some(false) {
        notes.push(
            "the run is incomplete: cases in files it did not finish reviewing count as missed"
                .to_string(),
        );
    }
    match score.not_reviewed {
        Some(n) if n > 0 && n == truth.cases.len() as u64 => notes.push(
            "none of the labelled files is among the files this run reviewed: write the truth's paths relative to the scanned root, as the report does"
                .to_string(),
        ),
        Some(n) if n > 0 => notes.push(format!(
            "{n} labelled cases are in files this run did not review: their vulnerable ones count as missed"
        )),
        Some(_) | None => {}
    }
    if method.match_by == MatchBy::Cwe
        && score.tally.scored > 0
        && score.tally.without_cwe + score.tally.unreadable_cwe == score.tally.scored
    {
        notes.push(
            "no finding of this run carries a readable CWE, so none can match: score it by location with --match location"
                .to_string(),
        );
    }
    notes
}
