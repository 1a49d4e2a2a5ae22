//! "Since the last complete run": which findings are new, fixed,
//! unchanged, or not checked this time, by comparing two runs' verified
//! findings by fingerprint.
//!
//! Takes the findings and reviewed files of two runs ([`RunFindings`]);
//! gives a [`SinceLastRun`]. A finding that is gone counts as fixed only
//! when its file was reviewed this time; otherwise it is "not checked".
//! `fanscan diff` and the report's section share this one function.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::model::findings::Severity;

/// A finding as a comparison needs it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FindingRef {
    pub fingerprint: String,
    pub severity: Severity,
    pub path: String,
    pub line: u32,
    pub title: String,
}

/// One run's side of a comparison.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct RunFindings {
    pub(crate) findings: Vec<FindingRef>,
    /// Files reviewed by the run.
    pub(crate) reviewed: BTreeSet<String>,
}

impl RunFindings {
    /// The verified findings and reviewed files of a report.
    pub(crate) fn of(report: &super::Report) -> Self {
        Self {
            findings: report
                .findings
                .iter()
                .map(|m| FindingRef {
                    fingerprint: m.fingerprint.clone(),
                    severity: m.finding.severity,
                    path: m.finding.path.clone(),
                    line: m.finding.line,
                    title: m.finding.title.clone(),
                })
                .collect(),
            reviewed: report.coverage.reviewed.iter().cloned().collect(),
        }
    }
}

/// Counts of one severity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tally {
    pub new: usize,
    pub fixed: usize,
    pub unchanged: usize,
    pub not_checked: usize,
}

/// What changed since an earlier run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SinceLastRun {
    /// The earlier run's id in the store (none when compared with a file).
    pub previous_run: Option<i64>,
    pub previous_started_at: String,
    /// In this run, not in the earlier one.
    pub new: Vec<FindingRef>,
    /// In the earlier run, gone now, and their file was reviewed now.
    pub fixed: Vec<FindingRef>,
    /// In the earlier run, and their file was not reviewed now.
    pub not_checked: Vec<FindingRef>,
    /// In both runs.
    pub unchanged: usize,
    /// The four counts per severity (lowercase name).
    pub by_severity: BTreeMap<String, Tally>,
}

/// Compares `current` with `previous` by fingerprint.
pub(crate) fn compare(previous: &RunFindings, current: &RunFindings) -> SinceLastRun {
    let before: BTreeSet<&str> = previous
        .findings
        .iter()
        .map(|f| f.fingerprint.as_str())
        .collect();
    let now: BTreeSet<&str> = current
        .findings
        .iter()
        .map(|f| f.fingerprint.as_str())
        .collect();
    let mut out = SinceLastRun::default();
    for f in &current.findings {
        let tally = out
            .by_severity
            .entry(f.severity.as_str().to_string())
            .or_default();
        if before.contains(f.fingerprint.as_str()) {
            tally.unchanged += 1;
            out.unchanged += 1;
        } else {
            tally.new += 1;
            out.new.push(f.clone());
        }
    }
    for f in &previous.findings {
        if now.contains(f.fingerprint.as_str()) {
            continue;
        }
        let tally = out
            .by_severity
            .entry(f.severity.as_str().to_string())
            .or_default();
        if current.reviewed.contains(&f.path) {
            tally.fixed += 1;
            out.fixed.push(f.clone());
        } else {
            tally.not_checked += 1;
            out.not_checked.push(f.clone());
        }
    }
    for list in [&mut out.new, &mut out.fixed, &mut out.not_checked] {
        list.sort_by(|a, b| {
            (b.severity, &a.path, a.line, &a.fingerprint).cmp(&(
                a.severity,
                &b.path,
                b.line,
                &b.fingerprint,
            ))
        });
    }
    out
}

/// The comparison as text (`fanscan diff`).
pub(crate) fn render_text(diff: &SinceLastRun, from: &str, to: &str) -> String {
    let mut out = format!(
        "{from} -> {to}: {} new, {} fixed, {} unchanged, {} not checked\n",
        diff.new.len(),
        diff.fixed.len(),
        diff.unchanged,
        diff.not_checked.len()
    );
    for (title, list) in [
        ("new", &diff.new),
        ("fixed", &diff.fixed),
        ("not checked", &diff.not_checked),
    ] {
        if list.is_empty() {
            continue;
        }
        out.push_str(&format!("\n{title}:\n"));
        for f in list {
            out.push_str(&format!(
                "  [{}] {}:{} {} ({})\n",
                f.severity.as_str(),
                f.path,
                f.line,
                f.title,
                f.fingerprint
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(fp: &str, path: &str, severity: Severity) -> FindingRef {
        FindingRef {
            fingerprint: fp.into(),
            severity,
            path: path.into(),
            line: 1,
            title: format!("t {fp}"),
        }
    }

    #[test]
    fn new_fixed_unchanged_and_not_checked_by_fingerprint() {
        let previous = RunFindings {
            findings: vec![
                f("a", "x.rs", Severity::High),
                f("b", "y.rs", Severity::Low),
                f("c", "z.rs", Severity::Medium),
            ],
            reviewed: ["x.rs", "y.rs", "z.rs"].map(String::from).into(),
        };
        let current = RunFindings {
            findings: vec![
                f("a", "x.rs", Severity::High),
                f("d", "x.rs", Severity::Critical),
            ],
            reviewed: ["x.rs", "y.rs"].map(String::from).into(),
        };
        let d = compare(&previous, &current);
        assert_eq!(d.unchanged, 1);
        assert_eq!(
            d.new
                .iter()
                .map(|f| f.fingerprint.as_str())
                .collect::<Vec<_>>(),
            ["d"]
        );
        assert_eq!(
            d.fixed
                .iter()
                .map(|f| f.fingerprint.as_str())
                .collect::<Vec<_>>(),
            ["b"]
        );
        assert_eq!(
            d.not_checked
                .iter()
                .map(|f| f.fingerprint.as_str())
                .collect::<Vec<_>>(),
            ["c"]
        );
        assert_eq!(d.by_severity["critical"].new, 1);
        assert_eq!(d.by_severity["high"].unchanged, 1);
        assert_eq!(d.by_severity["low"].fixed, 1);
        assert_eq!(d.by_severity["medium"].not_checked, 1);
    }
}
