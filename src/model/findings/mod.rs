//! Findings and the report format agents answer in.
//!
//! Takes an agent's final text; gives the findings in its fenced JSON block
//! (lenient: line numbers as numbers or strings, severities in any case),
//! repairing the block when a small model broke it (unescaped quotes in
//! quoted code, trailing commas, comments, a truncated answer), and keeps
//! every claim that could not become a finding with the reason
//! ([`Unparsed`]). Each finding names its weakness as a CWE id, read
//! leniently and checked against the bundled table ([`FindingCwe`]). Also
//! recognises the completion marker in the forms models write it
//! ([`says_complete`], [`strip_marker`]).
//!
//! Layout: `model` holds what a finding is; `parse` reads an agent's
//! answer into findings; `repair` mends a broken JSON block first. This
//! file holds the report format itself: the text and schema agents are
//! asked to answer in, and the renderings of findings in it.

mod model;
mod parse;
mod repair;

use serde_json::Value;

use crate::llm::conversation::OutputSchema;

pub use model::Severity;
pub(crate) use model::{Finding, FindingCwe, HowParsed, Origin, Seen, Unparsed};
pub(crate) use parse::{ParsedReport, parse_report, says_complete, strip_marker};

/// The marker an agent ends its work with.
pub(crate) const TASK_COMPLETE: &str = "[TASK_COMPLETE]";

/// What the report format asks for; part of every audit task and of the
/// forced-summary turn.
///
/// The shape names each field's content instead of giving an example:
/// models copy examples, and small ones read every file an example names.
/// No token in it looks like a path (`tests/it/prompts.rs` checks every
/// stage's requests).
pub(crate) const REPORT_FORMAT: &str = r#"Answer with a short prose summary, then ONE fenced JSON block of this shape, each <...> filled in:

```json
{"findings": [
  {"path": "<the file's path as listed>", "line": <first line>, "end_line": <last line or null>,
   "severity": "<critical|high|medium|low|info>", "title": "<short title>", "detail": "<why it matters, how to fix it>",
   "evidence": "<the code at those lines, copied verbatim>", "rule": "<short category>" or null, "cwe": "<CWE id>" or null}
]}
```

cwe is the CWE id of the weakness, written CWE-<number> (CWE-89 for SQL injection, CWE-79 for cross-site scripting). evidence must be copied from the file as read_file showed it (without the line numbers); findings whose evidence is not in the file are dropped. Use an empty list when there is nothing to report."#;

/// The JSON schema of a final report, for structured output (OpenAI's
/// `response_format`, Anthropic's forced report tool). Strict: every key is
/// required, optional ones are nullable, and the quote is `code`, described
/// so that it leaves no room for prose.
pub(crate) fn report_schema() -> Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "summary": {"type": "string", "description": "A short prose summary of what you reviewed and found."},
            "findings": {
                "type": "array",
                "description": "Every finding from every file you read; an empty list when there is nothing to report.",
                "items": {
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "description": "The file's path relative to the repository root, exactly as listed."},
                        "line": {"type": "integer", "description": "The first line of the code the finding is about (1-based)."},
                        "end_line": {"type": ["integer", "null"], "description": "The last line, when it spans several; else null."},
                        "severity": {"type": "string", "enum": ["critical", "high", "medium", "low", "info"]},
                        "title": {"type": "string", "description": "A short title."},
                        "detail": {"type": "string", "description": "Why it matters and how to fix it."},
                        "code": {"type": "string", "description": "The exact source line(s) at `line`, copied character for character from the file, without line numbers. Code only, never a description."},
                        "rule": {"type": ["string", "null"], "description": "An optional category such as sql-injection; else null."},
                        "cwe": {"type": ["string", "null"], "description": "The CWE id of the weakness, written CWE-<number> (CWE-89 for SQL injection), when one fits; else null."}
                    },
                    "required": ["path", "line", "end_line", "severity", "title", "detail", "code", "rule", "cwe"],
                    "additionalProperties": false
                }
            }
        },
        "required": ["summary", "findings"],
        "additionalProperties": false
    })
}

/// The output schema of a structured final report that may cite only
/// `paths` (a group's files and the files its agent read): `path` is one of
/// them and `line` at least 1, so that a model under strict structured
/// output cannot name a file it was not given. Its relaxed form is
/// [`report_schema`] as it is, for a server that rejects the constraints.
/// With no paths, `path` stays any string.
///
/// With `leads` (their ids), the report also answers each lead: a `leads`
/// list of `{id, verdict, reason}`, the ids one of `leads` in the strict
/// form.
pub(crate) fn report_output(paths: &[String], leads: &[String]) -> OutputSchema {
    let mut schema = report_schema();
    let item = &mut schema["properties"]["findings"]["items"]["properties"];
    if !paths.is_empty() {
        item["path"]["enum"] = Value::from(paths.to_vec());
    }
    item["line"]["minimum"] = Value::from(1);
    let mut relaxed = report_schema();
    if !leads.is_empty() {
        with_leads(&mut schema, Some(leads));
        with_leads(&mut relaxed, None);
    }
    OutputSchema {
        name: REPORT_TOOL.to_string(),
        description: "Report the audit's summary and every finding. Call it exactly once."
            .to_string(),
        schema,
        relaxed: Some(relaxed),
    }
}

/// Adds the required `leads` list to a report schema; `ids` pins each
/// answer's id to one of them.
fn with_leads(schema: &mut Value, ids: Option<&[String]>) {
    let mut id = serde_json::json!({"type": "string", "description": "The lead's id as listed."});
    if let Some(ids) = ids {
        id["enum"] = Value::from(ids.to_vec());
    }
    schema["properties"]["leads"] = serde_json::json!({
        "type": "array",
        "description": "One answer for every lead of the task.",
        "items": {
            "type": "object",
            "properties": {
                "id": id,
                "verdict": {"type": "string", "enum": ["confirmed", "dismissed"]},
                "reason": {"type": "string", "description": "Why, citing the code."}
            },
            "required": ["id", "verdict", "reason"],
            "additionalProperties": false
        }
    });
    if let Some(required) = schema["required"].as_array_mut() {
        required.push(Value::from("leads"));
    }
}

/// A structured final report (the offline engine answers the same schema
/// as a model asked through structured output), with `leads`, the answers
/// to its task's leads, when there are any.
pub(crate) fn render_structured(summary: &str, findings: &[Finding], leads: &[Value]) -> String {
    let mut report = serde_json::json!({"summary": summary, "findings": items(findings, true)});
    with_leads_answered(&mut report, leads);
    report.to_string()
}

/// `report` with a `leads` list of `answers` (as it is without any).
fn with_leads_answered(report: &mut Value, answers: &[Value]) {
    if !answers.is_empty() {
        report["leads"] = Value::from(answers.to_vec());
    }
}

/// The name of a structured report's output schema (the forced tool that
/// carries it where a wire format has no response schema). No real tool
/// has it.
pub(crate) const REPORT_TOOL: &str = "report_findings";

/// Renders findings in the report format (the offline engine answers so),
/// with `leads`, the answers to its task's leads, when there are any.
pub(crate) fn render_block(findings: &[Finding], leads: &[Value]) -> String {
    let mut report = serde_json::json!({ "findings": items(findings, false) });
    with_leads_answered(&mut report, leads);
    let body =
        serde_json::to_string_pretty(&report).unwrap_or_else(|_| "{\"findings\": []}".to_string());
    format!("```json\n{body}\n```")
}

/// Findings as report entries; `structured` names the quote `code` (the
/// schema's field) rather than `evidence` (the text block's).
fn items(findings: &[Finding], structured: bool) -> Vec<Value> {
    findings
        .iter()
        .map(|f| {
            let mut item = serde_json::json!({
                "path": f.path, "line": f.line, "end_line": f.end_line,
                "severity": f.severity.as_str(), "title": f.title, "detail": f.detail,
                "rule": f.rule, "cwe": f.cwe.id,
            });
            if structured {
                item["code"] = serde_json::json!(f.evidence.clone().unwrap_or_default());
            } else {
                item["evidence"] = serde_json::json!(f.evidence);
            }
            item
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_schema_asks_for_a_cwe_in_strict_form() {
        let schema = report_schema();
        let items = &schema["properties"]["findings"]["items"];
        assert_eq!(
            items["properties"]["cwe"]["type"],
            serde_json::json!(["string", "null"])
        );
        let required: Vec<&str> = items["required"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(required.contains(&"cwe"), "{required:?}");
        assert!(REPORT_FORMAT.contains("\"cwe\""));
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
            cwe: FindingCwe::number(617),
            origin: Origin::Agent,
            seen: None,
        };
        let r = parse_report(&render_block(std::slice::from_ref(&f), &[]));
        assert_eq!(r.findings, vec![f.clone()]);
        let structured = parse_report(&render_structured("s", std::slice::from_ref(&f), &[]));
        assert_eq!(structured.findings, vec![f]);
    }
}
