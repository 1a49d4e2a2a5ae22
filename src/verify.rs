//! Verification: every finding is checked against the files before it is
//! reported.
//!
//! Takes the [`GroupReport`]s, the inventory and the tool context; gives
//! each finding marked verified or not, with the reason. A finding passes
//! when its path is an inventoried file, its lines exist, and its quoted
//! evidence (if any) matches the text there, whitespace-insensitively,
//! within a few lines of the cited one (the line is corrected when the
//! model was off by a little). A group whose agent read none of its files
//! is flagged, and its agent's findings count as unverified.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::agents::{AgentStatus, GroupReport};
use crate::findings::{Finding, Origin};
use crate::inventory::Inventory;
use crate::tools::ToolContext;

/// How far from the cited line evidence is looked for.
const WINDOW: u32 = 3;

/// A finding after verification.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct Checked {
    pub finding: Finding,
    pub group: String,
    pub agent: String,
    pub verified: bool,
    /// Why it failed, or what was corrected.
    pub note: Option<String>,
    /// Which occurrence of the same evidence text in the file this is (0:
    /// the first), so that two identical lines stay two findings.
    pub occurrence: u32,
}

/// Verifies every finding of every report.
pub(crate) fn verify(
    reports: &[GroupReport],
    inventory: &Inventory,
    tools: &ToolContext,
) -> Vec<Checked> {
    let known: BTreeSet<&str> = inventory.files.iter().map(|f| f.path.as_str()).collect();
    let mut cache: BTreeMap<String, Option<Vec<String>>> = BTreeMap::new();
    let mut out = Vec::new();
    for report in reports {
        let read_nothing = report.files_read.is_empty()
            && !report.files.is_empty()
            && report.status != AgentStatus::Failed;
        for finding in &report.findings {
            let mut finding = finding.clone();
            finding.path = finding.path.trim_start_matches("./").replace('\\', "/");
            let result = if read_nothing && finding.origin == Origin::Agent {
                Err("its agent read none of the group's files".to_string())
            } else {
                check(&mut finding, &known, &mut cache, tools)
            };
            let (verified, note, occurrence) = match result {
                Ok((note, occurrence)) => (true, note, occurrence),
                Err(reason) => (false, Some(reason), 0),
            };
            out.push(Checked {
                finding,
                group: report.group.clone(),
                agent: report.agent.clone(),
                verified,
                note,
                occurrence,
            });
        }
    }
    out
}

/// The redacted lines of a file, read once per run.
fn lines_of<'a>(
    path: &str,
    cache: &'a mut BTreeMap<String, Option<Vec<String>>>,
    tools: &ToolContext,
) -> Option<&'a Vec<String>> {
    cache
        .entry(path.to_string())
        .or_insert_with(|| {
            let full = tools.root().join(path);
            if !full.is_file() {
                return None;
            }
            let bytes = std::fs::read(full).ok()?;
            let text = String::from_utf8_lossy(&bytes);
            // Compare against what the model saw: secrets redacted.
            let (redacted, _) = tools.redactor().redact(&text);
            Some(redacted.lines().map(str::to_string).collect())
        })
        .as_ref()
}

fn check(
    finding: &mut Finding,
    known: &BTreeSet<&str>,
    cache: &mut BTreeMap<String, Option<Vec<String>>>,
    tools: &ToolContext,
) -> Result<(Option<String>, u32), String> {
    if !known.contains(finding.path.as_str()) {
        return Err(format!(
            "{} is not a file of the scanned repository",
            finding.path
        ));
    }
    let Some(lines) = lines_of(&finding.path, cache, tools) else {
        return Err(format!("{} could not be read", finding.path));
    };
    let count = u32::try_from(lines.len()).unwrap_or(u32::MAX);
    let end = finding.end_line.unwrap_or(finding.line).max(finding.line);
    if finding.line == 0 || finding.line > count.max(1) || end > count.max(1) {
        return Err(format!(
            "line {}{} is outside {}, which has {count} lines",
            finding.line,
            finding
                .end_line
                .map(|e| format!("-{e}"))
                .unwrap_or_default(),
            finding.path
        ));
    }
    let evidence = finding.evidence.clone().unwrap_or_default();
    let wanted = squash(&strip_line_numbers(&evidence));
    if wanted.is_empty() {
        return match finding.origin {
            // The tool layer's secrets carry no evidence on purpose.
            Origin::ToolLayer => Ok((None, 0)),
            Origin::Agent => {
                Err("no evidence was quoted: a finding must quote the code it cites".to_string())
            }
        };
    }
    let span = end.saturating_sub(finding.line) + 1;
    let evidence_lines = u32::try_from(evidence.lines().count()).unwrap_or(1).max(1);
    let max_len = span.max(evidence_lines) + 1;
    // The cited line first, then outward.
    let mut starts = vec![finding.line];
    for d in 1..=WINDOW {
        if finding.line > d {
            starts.push(finding.line - d);
        }
        if finding.line + d <= count {
            starts.push(finding.line + d);
        }
    }
    // The shortest span that holds the evidence, nearest the cited line.
    for len in 1..=max_len {
        for &start in &starts {
            let last = start + len - 1;
            if last > count {
                continue;
            }
            let text: String = lines[(start - 1) as usize..last as usize]
                .iter()
                .map(|l| squash(l))
                .collect();
            if text.contains(&wanted) {
                let first = squash(
                    strip_line_numbers(&evidence)
                        .lines()
                        .next()
                        .unwrap_or_default(),
                );
                let occurrence = lines[..(start - 1) as usize]
                    .iter()
                    .filter(|l| !first.is_empty() && squash(l).contains(&first))
                    .count();
                let occurrence = u32::try_from(occurrence).unwrap_or(u32::MAX);
                if start == finding.line {
                    return Ok((None, occurrence));
                }
                let note = format!("line corrected from {} to {start}", finding.line);
                finding.line = start;
                finding.end_line = finding.end_line.map(|_| start + span - 1);
                return Ok((Some(note), occurrence));
            }
        }
    }
    Err(format!(
        "the quoted evidence is not at {}:{} (nor within {WINDOW} lines)",
        finding.path, finding.line
    ))
}

/// Text without any whitespace.
fn squash(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

/// Models sometimes copy read_file's line numbers into evidence.
fn strip_line_numbers(evidence: &str) -> String {
    evidence
        .lines()
        .map(|l| {
            let t = l.trim_start();
            match t.split_once('\t') {
                Some((n, rest)) if !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()) => rest,
                _ => l,
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::Severity;
    use crate::inventory::{InventoryOptions, walk};
    use crate::tools::ToolLimits;
    use crate::tools::secrets::Redactor;
    use std::sync::Arc;

    fn finding(path: &str, line: u32, evidence: Option<&str>) -> Finding {
        Finding {
            path: path.into(),
            line,
            end_line: None,
            severity: Severity::Low,
            title: "t".into(),
            detail: String::new(),
            evidence: evidence.map(str::to_string),
            rule: None,
            origin: Origin::Agent,
        }
    }

    #[test]
    fn checks_paths_lines_and_evidence() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("a.rs"),
            "fn a() {\n    let x = y.unwrap();\n}\n// k = \"AKIAIOSFODNN7EXAMPLQ\"\n",
        )
        .unwrap();
        let inv = walk(dir.path(), &InventoryOptions::default()).unwrap();
        let tools =
            ToolContext::new(dir.path(), ToolLimits::default(), Arc::new(Redactor::new())).unwrap();
        let report = GroupReport {
            group: "g".into(),
            files: vec![],
            agent: "auditor".into(),
            agent_hash: String::new(),
            provider: "p".into(),
            model: "m".into(),
            status: AgentStatus::Complete,
            error: None,
            rounds: 1,
            tool_calls: 1,
            tool_errors: 0,
            files_read: vec!["a.rs".into()],
            usage: Default::default(),
            summary: String::new(),
            summary_parsed: true,
            rejected: vec![],
            findings: vec![
                finding("a.rs", 2, Some("let x =   y.unwrap();")),
                finding("a.rs", 1, Some("     2\tlet x = y.unwrap();")),
                finding("a.rs", 2, Some("let z = q.expect(\"nope\");")),
                finding("a.rs", 9, None),
                finding("b.rs", 1, None),
                finding("a.rs", 4, Some("k = \"[REDACTED:aws-access-key]\"")),
            ],
        };
        let checked = verify(&[report], &inv, &tools);
        let verdicts: Vec<(bool, u32)> = checked
            .iter()
            .map(|c| (c.verified, c.finding.line))
            .collect();
        assert_eq!(
            verdicts,
            vec![
                (true, 2),
                (true, 2),
                (false, 2),
                (false, 9),
                (false, 1),
                (true, 4)
            ]
        );
        assert_eq!(
            checked[1].note.as_deref(),
            Some("line corrected from 1 to 2")
        );
        assert!(checked[3].note.as_deref().unwrap().contains("has 4 lines"));
    }
}
