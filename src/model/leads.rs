//! Leads: what a static analysis found in a group's files, put to the
//! group's auditor to confirm or dismiss.
//!
//! Takes the rule engine's findings or another tool's SARIF results for a
//! group; gives the leads of its task (numbered `L1`, `L2`, … in file and
//! line order), the block that shows them to the model (data, inside the
//! run's fence), and, from the model's answers, each lead's outcome:
//! confirmed (a finding, with the model's explanation), dismissed (listed
//! with the model's reason, never gated on) or not answered (the lead stays
//! the analysis's finding and says so). A lead is never dropped.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::findings::{Finding, FindingCwe, Origin, Severity};

/// Where a lead came from: fanscan's own rule engine, or a SARIF file.
pub(crate) const RULE_ENGINE: &str = "fanscan rules";

/// One candidate finding of a static analysis.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lead {
    /// `L1`, `L2`, … within its group, in path and line order.
    pub id: String,
    /// Who found it: `fanscan rules`, or the SARIF tool's name.
    pub tool: String,
    /// Repo-relative, `/`-separated.
    pub path: String,
    pub line: u32,
    pub end_line: Option<u32>,
    /// The rule that fired.
    pub rule: String,
    pub severity: Severity,
    pub title: String,
    /// Why the rule fired: its message.
    pub message: String,
    /// The flagged code as the file has it (absent when the line is not
    /// in the file).
    pub code: Option<String>,
    #[serde(flatten)]
    pub cwe: FindingCwe,
}

impl Lead {
    /// The lead of a rule engine's finding (its id set later).
    pub(crate) fn of_rule(finding: Finding) -> Self {
        Self {
            id: String::new(),
            tool: RULE_ENGINE.to_string(),
            rule: finding.rule.unwrap_or_default(),
            path: finding.path,
            line: finding.line,
            end_line: finding.end_line,
            severity: finding.severity,
            title: finding.title,
            message: finding.detail,
            code: finding.evidence,
            cwe: finding.cwe,
        }
    }

    /// The finding the lead becomes: `detail` is the model's explanation
    /// for a confirmed lead, the analysis's message (and why it stands)
    /// for one not answered.
    fn finding(&self, detail: String) -> Finding {
        Finding {
            path: self.path.clone(),
            line: self.line,
            end_line: self.end_line,
            severity: self.severity,
            title: self.title.clone(),
            detail,
            evidence: self.code.clone(),
            rule: Some(self.rule.clone()),
            cwe: self.cwe.clone(),
            origin: Origin::Agent,
            seen: None,
        }
    }
}

/// Numbers `leads` `L1`, `L2`, … in path, line and rule order, dropping
/// exact repeats (the same tool, rule and line twice).
pub(crate) fn number(mut leads: Vec<Lead>) -> Vec<Lead> {
    leads.sort_by(|a, b| {
        (&a.path, a.line, &a.tool, &a.rule).cmp(&(&b.path, b.line, &b.tool, &b.rule))
    });
    leads.dedup_by(|a, b| {
        (&a.path, a.line, &a.tool, &a.rule) == (&b.path, b.line, &b.tool, &b.rule)
    });
    for (i, lead) in leads.iter_mut().enumerate() {
        lead.id = format!("L{}", i + 1);
    }
    leads
}

/// The most leads one task puts to its agent. A lead line costs some 70
/// tokens: 200 of them fit beside the group's files in any model's
/// context, where a SARIF of thousands of results on one file, or a file
/// of thousands of sinks, would not.
pub(crate) const MOST_PER_TASK: usize = 200;

/// Numbered `leads` split into those the task shows (the most severe
/// first, at most [`MOST_PER_TASK`], in their numbered order) and those it
/// holds back: a held lead is never dropped, it stays the analysis's
/// finding ([`held`]).
pub(crate) fn shown_and_held(leads: Vec<Lead>) -> (Vec<Lead>, Vec<Lead>) {
    if leads.len() <= MOST_PER_TASK {
        return (leads, Vec::new());
    }
    let mut order: Vec<usize> = (0..leads.len()).collect();
    // Stable: among equals, the numbered (path and line) order.
    order.sort_by_key(|&i| std::cmp::Reverse(leads[i].severity));
    let mut show = vec![false; leads.len()];
    for &i in &order[..MOST_PER_TASK] {
        show[i] = true;
    }
    let (mut shown, mut held) = (Vec::new(), Vec::new());
    for (lead, show) in leads.into_iter().zip(show) {
        match show {
            true => shown.push(lead),
            false => held.push(lead),
        }
    }
    (shown, held)
}

/// The outcomes of leads a task held back (over [`MOST_PER_TASK`]): not
/// answered, each the analysis's finding, saying why.
pub(crate) fn held(leads: &[Lead], of: usize) -> (Vec<LeadResult>, Vec<Finding>) {
    let why = format!(
        "not put to the auditor: its group had {of} leads and a task shows at most {MOST_PER_TASK}, the most severe first"
    );
    leads
        .iter()
        .map(|lead| {
            let finding = lead.finding(format!(
                "{} (a lead of {} {why}: the analysis's finding stands unreviewed)",
                lead.message, lead.tool
            ));
            let result = LeadResult {
                lead: lead.clone(),
                outcome: LeadOutcome::Unanswered,
                reason: Some(why.clone()),
                held: true,
            };
            (result, finding)
        })
        .unzip()
}

/// What the model said of a lead.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LeadOutcome {
    /// A real problem: the lead became a finding.
    Confirmed,
    /// Not a problem, with the model's reason: listed, never gated on.
    Dismissed,
    /// The model did not say: the lead stays the analysis's finding.
    Unanswered,
}

impl LeadOutcome {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Confirmed => "confirmed",
            Self::Dismissed => "dismissed",
            Self::Unanswered => "not answered",
        }
    }

    /// A verdict as models write it; `None` for anything else.
    fn parse(text: &str) -> Option<Self> {
        match text
            .trim()
            .to_ascii_lowercase()
            .replace([' ', '-'], "_")
            .as_str()
        {
            "confirmed" | "confirm" | "true_positive" | "true" | "valid" | "real" | "yes"
            | "vulnerable" => Some(Self::Confirmed),
            "dismissed" | "dismiss" | "false_positive" | "false" | "invalid" | "not_a_problem"
            | "no" | "safe" | "refuted" | "rejected" => Some(Self::Dismissed),
            _ => None,
        }
    }
}

/// One answer of the model's `leads` list, as read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LeadAnswer {
    pub(crate) id: String,
    pub(crate) outcome: LeadOutcome,
    pub(crate) reason: String,
}

/// The `leads` list of a report object: each entry with an id and a
/// verdict it can read (`"L3"`, `3` and `"l3"` are the same id); others
/// are skipped (their lead stays unanswered).
pub(crate) fn answers_of(value: &Value) -> Vec<LeadAnswer> {
    let Some(items) = value.get("leads").and_then(Value::as_array) else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|item| {
            let id = match item.get("id")? {
                Value::String(s) => s.trim().trim_start_matches(['L', 'l']).to_string(),
                Value::Number(n) => n.to_string(),
                _ => return None,
            };
            let verdict = item.get("verdict").or(item.get("outcome"))?.as_str()?;
            Some(LeadAnswer {
                id: format!("L{}", id.parse::<u32>().ok()?),
                outcome: LeadOutcome::parse(verdict)?,
                reason: item
                    .get("reason")
                    .or(item.get("why"))
                    .and_then(Value::as_str)
                    .map(|s| s.trim().to_string())
                    .unwrap_or_default(),
            })
        })
        .collect()
}

/// A lead and what became of it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeadResult {
    #[serde(flatten)]
    pub lead: Lead,
    pub outcome: LeadOutcome,
    /// The model's reason (confirmed or dismissed); absent when it gave
    /// none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Held back from the auditor: its task had more leads than it shows.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub held: bool,
}

/// Each lead's outcome from `answers` (the first answer of an id counts;
/// a dismissal without a reason is not an answer, since a dismissed lead
/// must say why), and the findings the confirmed and unanswered ones
/// become. A lead the model did not answer but reported as a finding of
/// its own (`reported`: the same file, a line it spans) is confirmed by
/// that finding and adds none: models list findings more readily than
/// they fill in a second list.
pub(crate) fn resolve(
    leads: &[Lead],
    answers: &[LeadAnswer],
    reported: &[Finding],
) -> (Vec<LeadResult>, Vec<Finding>) {
    let mut by_id: BTreeMap<&str, &LeadAnswer> = BTreeMap::new();
    for answer in answers {
        by_id.entry(answer.id.as_str()).or_insert(answer);
    }
    let mut results = Vec::with_capacity(leads.len());
    let mut findings = Vec::new();
    for lead in leads {
        let answer = by_id
            .get(lead.id.as_str())
            .filter(|a| a.outcome == LeadOutcome::Confirmed || !a.reason.is_empty());
        let own = reported.iter().find(|f| {
            f.path == lead.path && (f.line..=f.end_line.unwrap_or(f.line)).contains(&lead.line)
        });
        let (outcome, reason) = match (answer, own) {
            (Some(a), _) => (a.outcome, (!a.reason.is_empty()).then(|| a.reason.clone())),
            (None, Some(f)) => {
                results.push(LeadResult {
                    lead: lead.clone(),
                    outcome: LeadOutcome::Confirmed,
                    reason: Some(format!("reported as a finding: {}", f.title)),
                    held: false,
                });
                continue;
            }
            (None, None) => (LeadOutcome::Unanswered, None),
        };
        match outcome {
            LeadOutcome::Confirmed => findings.push(lead.finding(format!(
                "{} (a lead of {} the auditor confirmed)",
                reason.as_deref().unwrap_or(&lead.message),
                lead.tool,
            ))),
            LeadOutcome::Unanswered => findings.push(lead.finding(format!(
                "{} (a lead of {} the auditor did not answer: the analysis's finding stands unreviewed)",
                lead.message, lead.tool
            ))),
            LeadOutcome::Dismissed => {}
        }
        results.push(LeadResult {
            lead: lead.clone(),
            outcome,
            reason,
            held: false,
        });
    }
    (results, findings)
}

/// The leads as the task shows them: one JSON object a line, to go
/// inside the run's fence (their code and messages are repository and
/// tool data, not instructions).
pub(crate) fn block(leads: &[Lead]) -> String {
    let mut out = String::new();
    for lead in leads {
        let line = serde_json::json!({
            "id": lead.id,
            "path": lead.path,
            "line": lead.line,
            "rule": lead.rule,
            "cwe": lead.cwe.id,
            "why": lead.message,
            "code": lead.code,
        });
        out.push_str(&line.to_string());
        out.push('\n');
    }
    out
}

/// What the task asks of its leads (after the block's label).
pub(crate) const LEADS_FORMAT: &str = "Leads: a static analysis flagged the places listed in the leads block below. \
Read the code around each one and decide whether it is a real problem. Your report's JSON object must also have \
a \"leads\" list answering every lead: {\"id\": \"<the lead's id>\", \"verdict\": \"<confirmed|dismissed>\", \
\"reason\": \"<why, citing the code>\"}. A confirmed lead becomes a finding with your reason; do not repeat it \
in \"findings\". Dismiss a lead only with a reason from the code (a constant value, a sanitizer, a bound \
parameter, unreachable code).";

/// How many leads of each rule came to each outcome, per tool.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeadTally {
    pub tool: String,
    pub rule: String,
    pub confirmed: usize,
    pub dismissed: usize,
    pub unanswered: usize,
}

/// The tally of `results`, by tool and rule.
pub(crate) fn tally<'a>(results: impl IntoIterator<Item = &'a LeadResult>) -> Vec<LeadTally> {
    let mut by: BTreeMap<(String, String), LeadTally> = BTreeMap::new();
    for r in results {
        let t = by
            .entry((r.lead.tool.clone(), r.lead.rule.clone()))
            .or_insert_with(|| LeadTally {
                tool: r.lead.tool.clone(),
                rule: r.lead.rule.clone(),
                ..LeadTally::default()
            });
        match r.outcome {
            LeadOutcome::Confirmed => t.confirmed += 1,
            LeadOutcome::Dismissed => t.dismissed += 1,
            LeadOutcome::Unanswered => t.unanswered += 1,
        }
    }
    by.into_values().collect()
}

/// A result of another tool's SARIF that names no file of the scan: listed
/// with why, never read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutsideLead {
    pub tool: String,
    pub rule: String,
    /// The location as the SARIF gives it.
    pub location: String,
    pub why: String,
}

/// The leads of a run: how many of each rule came to each outcome, the
/// dismissed ones with the model's reasons, and the results of other
/// tools that named no file of the scan.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeadsReport {
    pub tally: Vec<LeadTally>,
    /// Dismissed leads: out of the gate, never out of the report.
    pub dismissed: Vec<LeadResult>,
    /// Up to [`OUTSIDE_LISTED`] of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outside: Vec<OutsideLead>,
    /// How many more there were than are listed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub outside_more: usize,
    /// Leads no auditor was shown (their task had more than
    /// [`MOST_PER_TASK`]): each stands as the analysis's finding.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub held: usize,
}

/// Most results naming no file of the scan that a report lists; the rest
/// are counted ([`LeadsReport::outside_more`]).
pub(crate) const OUTSIDE_LISTED: usize = 1_000;

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl LeadsReport {
    /// The report of `results` (every group's) and `outside`; none when a
    /// run had no leads at all.
    pub(crate) fn of(results: &[&LeadResult], mut outside: Vec<OutsideLead>) -> Option<Self> {
        if results.is_empty() && outside.is_empty() {
            return None;
        }
        let mut dismissed: Vec<LeadResult> = results
            .iter()
            .filter(|r| r.outcome == LeadOutcome::Dismissed)
            .map(|r| (*r).clone())
            .collect();
        dismissed.sort_by(|a, b| (&a.lead.path, a.lead.line).cmp(&(&b.lead.path, b.lead.line)));
        let outside_more = outside.len().saturating_sub(OUTSIDE_LISTED);
        outside.truncate(OUTSIDE_LISTED);
        Some(Self {
            tally: tally(results.iter().copied()),
            dismissed,
            outside,
            outside_more,
            held: results.iter().filter(|r| r.held).count(),
        })
    }

    /// What to say of the leads no auditor was shown, if any.
    pub(crate) fn held_note(&self) -> Option<String> {
        (self.held > 0).then(|| {
            format!(
                "{} leads were not put to an auditor (a task shows at most {MOST_PER_TASK}, the most severe first): \
                 each stands as the analysis's finding, unreviewed",
                self.held
            )
        })
    }

    /// The total of each outcome: (confirmed, dismissed, not answered).
    pub fn totals(&self) -> (usize, usize, usize) {
        self.tally.iter().fold((0, 0, 0), |(c, d, u), t| {
            (c + t.confirmed, d + t.dismissed, u + t.unanswered)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lead(path: &str, line: u32, rule: &str) -> Lead {
        Lead {
            id: String::new(),
            tool: RULE_ENGINE.into(),
            path: path.into(),
            line,
            end_line: None,
            rule: rule.into(),
            severity: Severity::High,
            title: "SQL built from input".into(),
            message: "a query is concatenated".into(),
            code: Some("q = \"SELECT \" + x".into()),
            cwe: FindingCwe::number(89),
        }
    }

    #[test]
    fn a_task_shows_its_most_severe_leads_and_holds_the_rest_as_findings() {
        let few = number((1..=3).map(|n| lead("a.py", n, "r")).collect());
        assert_eq!(shown_and_held(few.clone()), (few, Vec::new()));
        // 250 leads, every fifth critical: the 50 critical ones are shown
        // first, then the first 150 high ones in line order.
        let many = number(
            (1..=250)
                .map(|n| Lead {
                    severity: match n % 5 {
                        0 => Severity::Critical,
                        _ => Severity::High,
                    },
                    ..lead("a.py", n, "r")
                })
                .collect(),
        );
        let (shown, held_back) = shown_and_held(many);
        assert_eq!((shown.len(), held_back.len()), (MOST_PER_TASK, 50));
        assert!(shown.windows(2).all(|w| w[0].line < w[1].line));
        assert_eq!(
            shown
                .iter()
                .filter(|l| l.severity == Severity::Critical)
                .count(),
            50
        );
        assert!(
            held_back
                .iter()
                .all(|l| l.severity == Severity::High && l.line > 187)
        );
        let (results, findings) = held(&held_back, 250);
        assert_eq!((results.len(), findings.len()), (50, 50));
        assert!(results.iter().all(|r| r.outcome == LeadOutcome::Unanswered));
        assert!(
            findings[0]
                .detail
                .contains("its group had 250 leads and a task shows at most 200"),
            "{}",
            findings[0].detail
        );
        assert_eq!((findings[0].path.as_str(), findings[0].line), ("a.py", 188));
    }

    #[test]
    fn leads_are_numbered_in_path_and_line_order_without_repeats() {
        let leads = number(vec![
            lead("b.py", 3, "r1"),
            lead("a.py", 9, "r1"),
            lead("a.py", 2, "r2"),
            lead("a.py", 9, "r1"),
        ]);
        let ids: Vec<(&str, &str, u32)> = leads
            .iter()
            .map(|l| (l.id.as_str(), l.path.as_str(), l.line))
            .collect();
        assert_eq!(
            ids,
            vec![("L1", "a.py", 2), ("L2", "a.py", 9), ("L3", "b.py", 3)]
        );
    }

    #[test]
    fn answers_are_read_leniently_and_junk_is_skipped() {
        let value: Value = serde_json::from_str(
            r#"{"findings": [], "leads": [
                {"id": "L1", "verdict": "Confirmed", "reason": "input reaches the query"},
                {"id": 2, "verdict": "false positive", "reason": "constant"},
                {"id": "l3", "outcome": "dismissed"},
                {"id": "L4", "verdict": "maybe"},
                {"verdict": "confirmed"},
                "L5 confirmed"
            ]}"#,
        )
        .unwrap();
        let answers = answers_of(&value);
        let got: Vec<(&str, LeadOutcome)> =
            answers.iter().map(|a| (a.id.as_str(), a.outcome)).collect();
        assert_eq!(
            got,
            vec![
                ("L1", LeadOutcome::Confirmed),
                ("L2", LeadOutcome::Dismissed),
                ("L3", LeadOutcome::Dismissed)
            ]
        );
        assert!(answers_of(&serde_json::json!({"findings": []})).is_empty());
        assert!(answers_of(&serde_json::json!({"leads": "none"})).is_empty());
    }

    #[test]
    fn every_lead_gets_an_outcome_and_none_is_dropped() {
        let leads = number(vec![
            lead("a.py", 1, "r"),
            lead("a.py", 2, "r"),
            lead("a.py", 3, "r"),
            lead("a.py", 4, "r"),
        ]);
        let answers = vec![
            LeadAnswer {
                id: "L1".into(),
                outcome: LeadOutcome::Confirmed,
                reason: "the id comes from the request".into(),
            },
            LeadAnswer {
                id: "L2".into(),
                outcome: LeadOutcome::Dismissed,
                reason: "the value is a constant".into(),
            },
            // A dismissal without a reason is no answer.
            LeadAnswer {
                id: "L3".into(),
                outcome: LeadOutcome::Dismissed,
                reason: String::new(),
            },
            // The second answer of an id does not count.
            LeadAnswer {
                id: "L1".into(),
                outcome: LeadOutcome::Dismissed,
                reason: "changed my mind".into(),
            },
        ];
        let (results, findings) = resolve(&leads, &answers, &[]);
        let outcomes: Vec<LeadOutcome> = results.iter().map(|r| r.outcome).collect();
        assert_eq!(
            outcomes,
            vec![
                LeadOutcome::Confirmed,
                LeadOutcome::Dismissed,
                LeadOutcome::Unanswered,
                LeadOutcome::Unanswered
            ]
        );
        assert_eq!(
            results[1].reason.as_deref(),
            Some("the value is a constant")
        );
        // Confirmed and unanswered leads are findings; the dismissed is not.
        let lines: Vec<u32> = findings.iter().map(|f| f.line).collect();
        assert_eq!(lines, vec![1, 3, 4]);
        assert!(
            findings[0]
                .detail
                .starts_with("the id comes from the request")
        );
        assert!(
            findings[1].detail.contains("did not answer"),
            "{}",
            findings[1].detail
        );
        assert_eq!(findings[0].evidence.as_deref(), Some("q = \"SELECT \" + x"));
        let tally = tally(&results);
        assert_eq!(
            tally,
            vec![LeadTally {
                tool: RULE_ENGINE.into(),
                rule: "r".into(),
                confirmed: 1,
                dismissed: 1,
                unanswered: 2
            }]
        );
    }

    #[test]
    fn a_lead_the_model_reported_as_its_own_finding_is_confirmed_without_a_copy() {
        let leads = number(vec![lead("a.py", 5, "r"), lead("a.py", 9, "r")]);
        let own = lead("a.py", 4, "model").finding("the name is concatenated".into());
        let own = Finding {
            end_line: Some(6),
            title: "SQL injection".into(),
            ..own
        };
        let (results, findings) = resolve(&leads, &[], std::slice::from_ref(&own));
        assert_eq!(results[0].outcome, LeadOutcome::Confirmed);
        assert_eq!(
            results[0].reason.as_deref(),
            Some("reported as a finding: SQL injection")
        );
        assert_eq!(results[1].outcome, LeadOutcome::Unanswered);
        // Only the unanswered lead adds a finding.
        assert_eq!(findings.iter().map(|f| f.line).collect::<Vec<_>>(), vec![9]);
    }

    #[test]
    fn the_block_is_one_json_object_a_line() {
        let leads = number(vec![lead("a.py", 7, "py-sql")]);
        let block = block(&leads);
        let value: Value = serde_json::from_str(block.trim()).unwrap();
        assert_eq!(value["id"], "L1");
        assert_eq!(value["line"], 7);
        assert_eq!(value["cwe"], "CWE-89");
    }
}
