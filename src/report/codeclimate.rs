//! GitLab's Code Quality report (the Code Climate issue format), a pure
//! function of the [`Report`].
//!
//! Takes the report; gives a JSON array with one issue per **verified**
//! finding: `description`, `check_name` (the rule id), `fingerprint`
//! (fanscan's stable fingerprint, unique within the report), `severity`
//! (`info|minor|major|critical|blocker`), `location.path` and
//! `location.lines`, `type: "issue"`, and `categories` when known.
//!
//! The format has no place for the run itself: an incomplete run shows in
//! the job's exit code (3), the scanned commit and its uncommitted
//! changes are the job's own (the other formats name them), and unverified findings, and those the skeptic
//! refuted, stay out, as they do of the gate (the other formats list them).
//! So do doubtful reviews (groups whose claims were all unverified: they
//! have no finding to show); under `--strict` they make the run
//! incomplete, which the exit code says. Contested reviews (files that
//! address AI agents, a model that reported nothing else) have no place
//! either; the injection finding that makes them is an issue here. What the skeptic said of a
//! finding, with its confidence, ends its body; a finding whose
//! suppression or baseline entry expired says so, with its reason, before.

use std::collections::BTreeSet;

use serde::Serialize;

use super::Report;
use super::sarif::{is_security, rule_id};
use crate::model::findings::Severity;
use crate::stages::reduce::Merged;

#[derive(Serialize)]
struct Issue<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    check_name: String,
    description: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<Content>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    categories: Vec<&'static str>,
    location: Location<'a>,
    severity: &'static str,
    fingerprint: String,
}

#[derive(Serialize)]
struct Content {
    body: String,
}

#[derive(Serialize)]
struct Location<'a> {
    path: &'a str,
    lines: Lines,
}

#[derive(Serialize)]
struct Lines {
    begin: u32,
    end: u32,
}

/// Renders `report` as a Code Quality JSON array.
pub(crate) fn render(report: &Report) -> Result<String, serde_json::Error> {
    let mut seen = BTreeSet::new();
    let issues: Vec<Issue<'_>> = report
        .findings
        .iter()
        .map(|m| issue(m, report, &mut seen))
        .collect();
    let mut text = serde_json::to_string_pretty(&issues)?;
    text.push('\n');
    Ok(text)
}

fn issue<'a>(m: &'a Merged, report: &Report, seen: &mut BTreeSet<String>) -> Issue<'a> {
    let f = &m.finding;
    // The reducer already made fingerprints unique; a report put together
    // some other way still gets unique ones, stable in report order.
    let mut fingerprint = m.fingerprint.clone();
    let mut n = 1;
    while !seen.insert(fingerprint.clone()) {
        n += 1;
        fingerprint = format!("{}-{n}", m.fingerprint);
    }
    Issue {
        kind: "issue",
        check_name: rule_id(f),
        description: &f.title,
        content: Some(Content {
            body: body(m, report),
        })
        .filter(|c| !c.body.trim().is_empty()),
        categories: categories(m),
        location: Location {
            path: &f.path,
            lines: Lines {
                begin: f.line,
                end: f.end_line.filter(|end| *end > f.line).unwrap_or(f.line),
            },
        },
        severity: severity(f.severity),
        fingerprint,
    }
}

/// The issue's body: the detail, what held the finding until its date
/// passed, and what the skeptic said.
fn body(m: &Merged, report: &Report) -> String {
    let added: Vec<String> = report
        .expired
        .iter()
        .filter(|x| x.finding.fingerprint == m.fingerprint)
        .map(|x| format!("Expired: {}", x.describe()))
        .chain(
            m.challenge
                .iter()
                .map(|c| format!("Skeptic: {}", c.describe())),
        )
        .collect();
    if added.is_empty() {
        return m.finding.detail.clone();
    }
    format!("{}\n\n{}", m.finding.detail, added.join("\n\n"))
        .trim()
        .to_string()
}

/// Ours, one step at a time: info, low, medium, high, critical.
fn severity(severity: Severity) -> &'static str {
    match severity {
        Severity::Info => "info",
        Severity::Low => "minor",
        Severity::Medium => "major",
        Severity::High => "critical",
        Severity::Critical => "blocker",
    }
}

/// Code Climate categories, when the rule says: security rules, and the
/// built-in rule families about panics and null handling (bug risk) and
/// work-in-progress markers (clarity).
fn categories(m: &Merged) -> Vec<&'static str> {
    if is_security(m) {
        return vec!["Security"];
    }
    match rule_id(&m.finding).split('/').next().unwrap_or_default() {
        "rust" | "java" => vec!["Bug Risk"],
        "comments" => vec!["Clarity"],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::sarif::tests::{merged, report};
    use serde_json::Value;

    #[test]
    fn issues_map_severity_location_and_categories() {
        let mut sql = merged("app/db.py", 2, Severity::High, Some("sql/concat"), "SQL");
        sql.finding.end_line = Some(4);
        let r = report(vec![
            sql,
            merged("src/a.rs", 3, Severity::Low, Some("rust/unwrap"), "unwrap"),
            merged("x.go", 1, Severity::Critical, None, "Free-form"),
            merged("y.rs", 1, Severity::Medium, Some("logic"), "m"),
            merged("z.rs", 1, Severity::Info, Some("comments/todo"), "todo"),
        ]);
        let v: Value = serde_json::from_str(&render(&r).unwrap()).unwrap();
        let issues = v.as_array().unwrap();
        assert_eq!(issues.len(), 5);
        assert_eq!(issues[0]["type"], "issue");
        assert_eq!(issues[0]["check_name"], "sql/concat");
        assert_eq!(issues[0]["description"], "SQL");
        assert_eq!(issues[0]["content"]["body"], "why and how to fix");
        assert_eq!(issues[0]["location"]["path"], "app/db.py");
        assert_eq!(issues[0]["location"]["lines"]["begin"], 2);
        assert_eq!(issues[0]["location"]["lines"]["end"], 4);
        assert_eq!(issues[1]["location"]["lines"]["end"], 3);
        let severities: Vec<&str> = issues
            .iter()
            .map(|i| i["severity"].as_str().unwrap())
            .collect();
        assert_eq!(
            severities,
            vec!["critical", "minor", "blocker", "major", "info"]
        );
        assert_eq!(issues[0]["categories"], serde_json::json!(["Security"]));
        assert_eq!(issues[1]["categories"], serde_json::json!(["Bug Risk"]));
        assert_eq!(issues[2]["check_name"], "fanscan/free-form");
        assert!(issues[3].get("categories").is_none());
        assert_eq!(issues[4]["categories"], serde_json::json!(["Clarity"]));
    }

    #[test]
    fn fingerprints_are_unique_even_for_repeated_findings() {
        let a = merged("a.rs", 1, Severity::Low, Some("r"), "t");
        let r = report(vec![a.clone(), a.clone(), a]);
        let v: Value = serde_json::from_str(&render(&r).unwrap()).unwrap();
        let fps: BTreeSet<&str> = v
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["fingerprint"].as_str().unwrap())
            .collect();
        assert_eq!(fps.len(), 3);
        assert_eq!(render(&report(vec![])).unwrap(), "[]\n");
    }
}
