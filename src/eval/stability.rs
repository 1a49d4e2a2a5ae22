//! `fanscan eval --stability`: how often a finding recurs across runs of
//! one configuration on one tree, no truth needed.
//!
//! Takes the runs' findings (as `--count` picks them); gives, per CWE and
//! overall, how many distinct findings there were and how many recurred
//! in every run, in at least half of them, and in one run only. Findings of
//! two runs are the same finding when they are in the same file, their
//! lines overlap (within two lines) and they name the same CWE, else the
//! same rule: the way the samples of one run are matched.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde::Serialize;

use super::report::{Claim, Prediction, RunView};
use super::score::Count;

/// How many lines two runs' reports of one finding may differ by.
const LINE_SLACK: u32 = 2;

/// One class's (or the overall) recurrence.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub(crate) struct Recurrence {
    /// Distinct findings over all runs.
    pub findings: usize,
    /// Of those, reported by every run.
    pub every_run: usize,
    /// By at least half of the runs (every run included).
    pub half_or_more: usize,
    /// By one run only.
    pub one_run: usize,
}

impl Recurrence {
    fn add(&mut self, runs_seen: usize, runs: usize) {
        self.findings += 1;
        if runs_seen == runs {
            self.every_run += 1;
        }
        if runs_seen * 2 >= runs {
            self.half_or_more += 1;
        }
        if runs_seen == 1 {
            self.one_run += 1;
        }
    }

    fn share(part: usize, whole: usize) -> String {
        if whole == 0 {
            "–".into()
        } else {
            format!("{:.0}%", 100.0 * part as f64 / whole as f64)
        }
    }
}

/// The stability of `runs`, per class and overall.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub(crate) struct Stability {
    pub runs: Vec<String>,
    pub counted: String,
    pub by_cwe: BTreeMap<String, Recurrence>,
    pub overall: Recurrence,
}

/// A finding as runs are matched on it.
struct Cluster<'a> {
    first: &'a Prediction,
    runs: BTreeSet<usize>,
}

fn same(a: &Prediction, b: &Prediction) -> bool {
    a.path == b.path
        && a.line <= b.end_line + LINE_SLACK
        && b.line <= a.end_line + LINE_SLACK
        && match (&a.claim, &b.claim) {
            (Claim::Cwes(x), Claim::Cwes(y)) => x.iter().any(|c| y.contains(c)),
            _ => a.rule.is_some() && a.rule == b.rule,
        }
}

/// The class a finding is counted in: its first CWE, else `none`.
fn class_of(p: &Prediction) -> String {
    match &p.claim {
        Claim::Cwes(ids) => ids
            .first()
            .map_or_else(|| "none".to_string(), ToString::to_string),
        _ => "none".to_string(),
    }
}

/// Matches the findings `count` picks of every run in `runs`.
pub(crate) fn measure(runs: &[RunView], count: Count) -> Stability {
    let mut clusters: Vec<Cluster<'_>> = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        for p in run.predictions.iter().filter(|p| count.includes(p.listed)) {
            match clusters.iter_mut().find(|c| same(c.first, p)) {
                Some(c) => {
                    c.runs.insert(i);
                }
                None => clusters.push(Cluster {
                    first: p,
                    runs: BTreeSet::from([i]),
                }),
            }
        }
    }
    let mut out = Stability {
        runs: runs.iter().map(|r| r.source.clone()).collect(),
        counted: count.describe().to_string(),
        ..Stability::default()
    };
    for c in &clusters {
        out.by_cwe
            .entry(class_of(c.first))
            .or_default()
            .add(c.runs.len(), runs.len());
        out.overall.add(c.runs.len(), runs.len());
    }
    out
}

impl Stability {
    /// The Markdown table.
    pub(crate) fn markdown(&self) -> Result<String, std::fmt::Error> {
        let mut out = String::new();
        writeln!(
            out,
            "# Stability over {} runs\n\nRuns: {}. Counted: {}. A finding recurs when another run reports the same file, overlapping lines (within {LINE_SLACK}) and the same CWE (else rule).\n",
            self.runs.len(),
            self.runs.join(", "),
            self.counted
        )?;
        writeln!(
            out,
            "| CWE | findings | in every run | in half or more | in one run only |"
        )?;
        writeln!(out, "|---|---:|---:|---:|---:|")?;
        let row = |out: &mut String, name: &str, r: &Recurrence| {
            writeln!(
                out,
                "| {name} | {} | {} ({}) | {} ({}) | {} ({}) |",
                r.findings,
                r.every_run,
                Recurrence::share(r.every_run, r.findings),
                r.half_or_more,
                Recurrence::share(r.half_or_more, r.findings),
                r.one_run,
                Recurrence::share(r.one_run, r.findings)
            )
        };
        for (cwe, r) in &self.by_cwe {
            row(&mut out, cwe, r)?;
        }
        row(&mut out, "**all**", &self.overall)?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::report::{Listed, Usage};
    use crate::model::cwe::CweId;

    fn p(path: &str, line: u32, cwe: u32) -> Prediction {
        Prediction {
            path: path.into(),
            line,
            end_line: line,
            rule: None,
            claim: Claim::Cwes(CweId::from_number(cwe).into_iter().collect()),
            listed: Listed::Open,
            severity: None,
        }
    }

    fn run(name: &str, predictions: Vec<Prediction>) -> RunView {
        RunView {
            source: name.into(),
            provider: None,
            model: None,
            engine: None,
            complete: Some(true),
            predictions,
            reviewed: None,
            usage: Usage::default(),
        }
    }

    #[test]
    fn findings_are_counted_by_how_many_runs_report_them() {
        let runs = vec![
            run("a", vec![p("x.py", 5, 89), p("x.py", 20, 78)]),
            run("b", vec![p("x.py", 6, 89), p("y.py", 1, 22)]),
            run("c", vec![p("x.py", 4, 89), p("x.py", 21, 78)]),
            run("d", vec![p("x.py", 5, 89)]),
        ];
        let s = measure(&runs, Count::Open);
        assert_eq!(
            s.overall,
            Recurrence {
                findings: 3,
                every_run: 1,
                half_or_more: 2,
                one_run: 1
            }
        );
        assert_eq!(s.by_cwe["CWE-89"].every_run, 1);
        assert_eq!(s.by_cwe["CWE-78"].half_or_more, 1);
        assert_eq!(s.by_cwe["CWE-22"].one_run, 1);
        let md = s.markdown().unwrap();
        assert!(
            md.contains("| **all** | 3 | 1 (33%) | 2 (67%) | 1 (33%) |"),
            "{md}"
        );
    }

    #[test]
    fn identical_runs_are_exactly_stable_and_no_run_has_no_share() {
        let runs = vec![
            run("a", vec![p("x.py", 5, 89)]),
            run("b", vec![p("x.py", 5, 89)]),
        ];
        let s = measure(&runs, Count::Open);
        assert_eq!(s.overall.every_run, s.overall.findings);
        let empty = measure(&[run("a", Vec::new())], Count::Open);
        assert!(empty.markdown().unwrap().contains("| **all** | 0 | 0 (–)"));
    }
}
