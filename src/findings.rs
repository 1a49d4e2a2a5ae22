//! Findings and the report format agents answer in.
//!
//! Takes an agent's final text; gives the findings in its fenced JSON block
//! (lenient: line numbers as numbers or strings, severities in any case) or
//! says that it did not parse, keeping the text.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How serious a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Info,
    Low,
    Medium,
    High,
    Critical,
}

impl Severity {
    /// Parses a severity leniently; unknown words are `None`.
    pub fn parse(text: &str) -> Option<Self> {
        match text.trim().to_ascii_lowercase().as_str() {
            "info" | "informational" | "note" | "none" => Some(Self::Info),
            "low" | "minor" => Some(Self::Low),
            "medium" | "moderate" | "warning" => Some(Self::Medium),
            "high" | "major" | "error" => Some(Self::High),
            "critical" | "blocker" => Some(Self::Critical),
            _ => None,
        }
    }

    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Info => "info",
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
            Self::Critical => "critical",
        }
    }

    /// All severities, most serious first.
    pub const DESCENDING: [Severity; 5] = [
        Self::Critical,
        Self::High,
        Self::Medium,
        Self::Low,
        Self::Info,
    ];
}

/// Who produced a finding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// The agent's report.
    Agent,
    /// The tool layer itself (a redacted secret): no model saw it.
    ToolLayer,
}

/// One finding.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// Repo-relative, `/`-separated.
    pub path: String,
    /// 1-indexed first line.
    pub line: u32,
    pub end_line: Option<u32>,
    pub severity: Severity,
    pub title: String,
    pub detail: String,
    /// Text quoted from the file, checked by verification.
    pub evidence: Option<String>,
    /// A rule or category id, when the agent gave one.
    pub rule: Option<String>,
    pub origin: Origin,
}

/// The marker an agent ends its work with.
pub(crate) const TASK_COMPLETE: &str = "[TASK_COMPLETE]";

/// What the report format asks for; part of every audit task and of the
/// forced-summary turn.
pub(crate) const REPORT_FORMAT: &str = r#"Answer with a short prose summary, then ONE fenced JSON block:

```json
{"findings": [
  {"path": "src/lib.rs", "line": 42, "end_line": 44, "severity": "high",
   "title": "short title", "detail": "why it matters and how to fix it",
   "evidence": "the exact code at those lines, copied verbatim", "rule": "optional-category"}
]}
```

severity is one of critical, high, medium, low, info. path is relative to the repository root. evidence must be copied from the file as read_file showed it (without the line numbers); findings whose evidence is not in the file are dropped. Use an empty list when there is nothing to report."#;

/// The parsed final answer of an agent.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ParsedReport {
    /// The text without the marker.
    pub text: String,
    pub findings: Vec<Finding>,
    /// Whether a findings block was found and parsed.
    pub parsed: bool,
    /// Entries of the block that were not findings, with the reason.
    pub rejected: Vec<String>,
}

/// Strips the completion marker and parses the findings block.
pub(crate) fn parse_report(text: &str) -> ParsedReport {
    let clean = text.replace(TASK_COMPLETE, "").trim().to_string();
    // An object with a `findings` key wins; a bare array counts only when
    // it holds findings (a summary may quote other JSON before its block).
    let mut fallback: Option<(Vec<Finding>, Vec<String>)> = None;
    for block in json_candidates(&clean) {
        let Ok(value) = serde_json::from_str::<Value>(&block) else {
            continue;
        };
        let (list, keyed) = match &value {
            Value::Object(map) => match map.get("findings") {
                Some(Value::Array(items)) => (items.clone(), true),
                _ => continue,
            },
            Value::Array(items) => (items.clone(), false),
            _ => continue,
        };
        let mut findings = Vec::new();
        let mut rejected = Vec::new();
        for (index, item) in list.iter().enumerate() {
            match finding_from(item) {
                Ok(f) => findings.push(f),
                Err(why) => rejected.push(format!("entry {}: {why}", index + 1)),
            }
        }
        if keyed {
            return ParsedReport {
                text: clean,
                findings,
                parsed: true,
                rejected,
            };
        }
        if fallback.is_none() && (!findings.is_empty() || list.is_empty()) {
            fallback = Some((findings, rejected));
        }
    }
    match fallback {
        Some((findings, rejected)) => ParsedReport {
            text: clean,
            findings,
            parsed: true,
            rejected,
        },
        None => ParsedReport {
            text: clean,
            findings: Vec::new(),
            parsed: false,
            rejected: Vec::new(),
        },
    }
}

/// Fenced blocks first (```json or ```), then the outermost `{...}` span.
fn json_candidates(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("```") {
        let after = &rest[start + 3..];
        let body_start = after.find('\n').map_or(after.len(), |i| i + 1);
        let body = &after[body_start..];
        let Some(end) = body.find("```") else { break };
        out.push(body[..end].trim().to_string());
        rest = &body[end + 3..];
    }
    if let (Some(a), Some(b)) = (text.find('{'), text.rfind('}'))
        && a < b
    {
        out.push(text[a..=b].to_string());
    }
    out
}

fn as_line(value: Option<&Value>) -> Option<u32> {
    match value? {
        Value::Number(n) => n.as_u64().and_then(|n| u32::try_from(n).ok()),
        Value::String(s) => s.trim().trim_start_matches('L').parse().ok(),
        _ => None,
    }
}

fn as_text(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn finding_from(item: &Value) -> Result<Finding, String> {
    let get = |k: &str| item.get(k);
    let path = as_text(get("path").or(get("file")))
        .ok_or("no path")?
        .replace('\\', "/")
        .trim_start_matches("./")
        .to_string();
    let line = as_line(get("line").or(get("start_line"))).ok_or("no line number")?;
    if line == 0 {
        return Err("line 0 (lines are numbered from 1)".into());
    }
    let end_line = as_line(get("end_line")).filter(|e| *e >= line);
    let severity = as_text(get("severity"))
        .and_then(|s| Severity::parse(&s))
        .unwrap_or(Severity::Medium);
    let title = as_text(get("title").or(get("message"))).ok_or("no title")?;
    Ok(Finding {
        path,
        line,
        end_line,
        severity,
        title,
        detail: as_text(get("detail").or(get("description"))).unwrap_or_default(),
        evidence: as_text(get("evidence").or(get("snippet"))),
        rule: as_text(get("rule").or(get("category"))),
        origin: Origin::Agent,
    })
}

/// Renders findings in the report format (the offline engine answers so).
pub(crate) fn render_block(findings: &[Finding]) -> String {
    let items: Vec<Value> = findings
        .iter()
        .map(|f| {
            serde_json::json!({
                "path": f.path, "line": f.line, "end_line": f.end_line,
                "severity": f.severity.as_str(), "title": f.title, "detail": f.detail,
                "evidence": f.evidence, "rule": f.rule,
            })
        })
        .collect();
    let body = serde_json::to_string_pretty(&serde_json::json!({ "findings": items }))
        .unwrap_or_else(|_| "{\"findings\": []}".to_string());
    format!("```json\n{body}\n```")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_fenced_block_leniently_and_strips_the_marker() {
        let text = "Summary.\n```json\n{\"findings\":[{\"path\":\"./a.rs\",\"line\":\"3\",\"severity\":\"HIGH\",\"title\":\"t\",\"evidence\":\"x\"},{\"path\":\"b\"}]}\n```\n[TASK_COMPLETE]";
        let r = parse_report(text);
        assert!(r.parsed);
        assert!(!r.text.contains("TASK_COMPLETE"));
        assert_eq!(r.findings.len(), 1);
        assert_eq!(r.findings[0].path, "a.rs");
        assert_eq!(r.findings[0].line, 3);
        assert_eq!(r.findings[0].severity, Severity::High);
        assert_eq!(r.rejected, vec!["entry 2: no line number"]);
    }

    #[test]
    fn other_json_quoted_before_the_block_does_not_hide_it() {
        let text = "It reads:\n```\n[\"a\", \"b\"]\n```\nFindings:\n```json\n{\"findings\":[{\"path\":\"a.rs\",\"line\":1,\"title\":\"t\"}]}\n```";
        let r = parse_report(text);
        assert_eq!(r.findings.len(), 1);
        assert!(r.rejected.is_empty());
    }

    #[test]
    fn unparsable_summaries_keep_their_text() {
        let r = parse_report("I found nothing worth a JSON block. [TASK_COMPLETE]");
        assert!(!r.parsed);
        assert_eq!(r.text, "I found nothing worth a JSON block.");
        assert!(parse_report("```json\n[]\n```").parsed);
    }

    #[test]
    fn rendered_blocks_parse_back() {
        let f = Finding {
            path: "a.rs".into(),
            line: 2,
            end_line: None,
            severity: Severity::Low,
            title: "t".into(),
            detail: "d".into(),
            evidence: Some("x.unwrap()".into()),
            rule: Some("rust/unwrap".into()),
            origin: Origin::Agent,
        };
        let r = parse_report(&render_block(std::slice::from_ref(&f)));
        assert_eq!(r.findings, vec![f]);
    }
}
