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

use std::collections::BTreeSet;
use std::fmt;
use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::conversation::OutputSchema;
use crate::cwe::{CweId, CweTable};

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
    /// The weakness as a CWE id (`cwe`, `cwe_name`, `cwe_note` in JSON);
    /// all absent in reports of fanscans that had none.
    #[serde(flatten)]
    pub cwe: FindingCwe,
    pub origin: Origin,
}

/// The CWE a finding names, checked against fanscan's table
/// (`configs/cwe.toml`): the offline rules' own, CWE-798 for a redacted
/// secret, or what the model wrote, normalized (`89`, `cwe-89` are
/// `CWE-89`). An id the table does not know is kept and flagged in
/// `note`; a value that is no CWE id at all is quoted in `note` instead.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FindingCwe {
    /// `"CWE-89"`; `null` when nothing named one (or what was named is
    /// not an id).
    #[serde(rename = "cwe", default)]
    pub id: Option<CweId>,
    /// MITRE's name for `id`, from the table; `null` when the table does
    /// not know it.
    #[serde(rename = "cwe_name", default)]
    pub name: Option<String>,
    /// Why the CWE was flagged, when it was.
    #[serde(rename = "cwe_note", default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl FindingCwe {
    /// The CWE `id`, named from the table, flagged when the table does not
    /// know it.
    pub(crate) fn of(id: CweId) -> Self {
        match CweTable::builtin() {
            Ok(table) => match table.name(id) {
                Some(name) => Self {
                    id: Some(id),
                    name: Some(name.to_string()),
                    note: None,
                },
                None => Self {
                    id: Some(id),
                    name: None,
                    note: Some(format!(
                        "{id} is not in fanscan's CWE table (configs/cwe.toml): kept as given, unchecked"
                    )),
                },
            },
            // A unit test keeps the built-in table valid: say so rather
            // than pass the id off as unknown.
            Err(error) => Self {
                id: Some(id),
                name: None,
                note: Some(format!(
                    "fanscan's CWE table did not load ({error}): a fanscan bug"
                )),
            },
        }
    }

    /// The CWE of number `number` (see [`FindingCwe::of`]); none for 0.
    pub(crate) fn number(number: u32) -> Self {
        CweId::from_number(number).map(Self::of).unwrap_or_default()
    }

    /// What a model wrote as `cwe`: `"CWE-89"`, `"89"`, `89`, or a list
    /// whose first entry is taken; `null` or blank is none. Text that is
    /// no CWE id leaves the id empty and is quoted in the note.
    pub(crate) fn from_model(value: Option<&Value>) -> Self {
        let text = match value {
            Some(Value::Array(items)) => return Self::from_model(items.first()),
            Some(Value::String(s)) if s.trim().is_empty() => return Self::default(),
            Some(Value::String(s)) => s.trim().to_string(),
            Some(Value::Number(n)) => n.to_string(),
            Some(Value::Null) | None => return Self::default(),
            // An object or a boolean: not an id, and said so.
            Some(other @ (Value::Bool(_) | Value::Object(_))) => other.to_string(),
        };
        match CweId::parse(&text) {
            Ok(id) => Self::of(id),
            Err(error) => Self {
                id: None,
                name: None,
                note: Some(format!("the cwe given was dropped: {error}")),
            },
        }
    }

    /// `CWE-89 (SQL Injection)`: the id with the common part of its name,
    /// or the id alone when the table does not know it; `None` without an
    /// id.
    pub(crate) fn label(&self) -> Option<String> {
        let id = self.id?;
        Some(match &self.name {
            Some(name) => format!("{id} ({})", crate::cwe::short_name(name)),
            None => id.to_string(),
        })
    }
}

/// The marker an agent ends its work with.
pub(crate) const TASK_COMPLETE: &str = "[TASK_COMPLETE]";

/// What the report format asks for; part of every audit task and of the
/// forced-summary turn.
pub(crate) const REPORT_FORMAT: &str = r#"Answer with a short prose summary, then ONE fenced JSON block:

```json
{"findings": [
  {"path": "path/to/file.ext", "line": 42, "end_line": 44, "severity": "high",
   "title": "short title", "detail": "why it matters and how to fix it",
   "evidence": "the exact code at those lines, copied verbatim", "rule": "optional-category",
   "cwe": "CWE-<number> or null"}
]}
```

severity is one of critical, high, medium, low, info. cwe is the CWE id of the weakness (CWE-89 for SQL injection, CWE-79 for cross-site scripting), or null when none fits. path is relative to the repository root. evidence must be copied from the file as read_file showed it (without the line numbers); findings whose evidence is not in the file are dropped. Use an empty list when there is nothing to report."#;

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
pub(crate) fn report_output(paths: &[String]) -> OutputSchema {
    let mut schema = report_schema();
    let item = &mut schema["properties"]["findings"]["items"]["properties"];
    if !paths.is_empty() {
        item["path"]["enum"] = Value::from(paths.to_vec());
    }
    item["line"]["minimum"] = Value::from(1);
    OutputSchema {
        name: REPORT_TOOL.to_string(),
        description: "Report the audit's summary and every finding. Call it exactly once."
            .to_string(),
        schema,
        relaxed: Some(report_schema()),
    }
}

/// A structured final report (the offline engine answers the same schema
/// as a model asked through structured output).
pub(crate) fn render_structured(summary: &str, findings: &[Finding]) -> String {
    serde_json::json!({"summary": summary, "findings": items(findings, true)}).to_string()
}

/// The name of a structured report's output schema (the forced tool that
/// carries it where a wire format has no response schema). No real tool
/// has it.
pub(crate) const REPORT_TOOL: &str = "report_findings";

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
    /// How the findings block was read: as written, after repairs (which),
    /// or not at all (and the parser's error).
    pub how: HowParsed,
    /// Every claim of the model that did not become a finding, with why:
    /// the entries `rejected` counts (with their text), and, when no block
    /// parsed, the block's entries and the claim-like lines of the text.
    pub unparsed: Vec<Unparsed>,
}

/// How a findings block was read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum HowParsed {
    /// Parsed as written.
    Clean,
    /// Parsed only after these repairs.
    Repaired { repairs: Vec<Repair> },
    /// The text holds no JSON block that could be the findings.
    NoBlock,
    /// A block was there but did not parse, even repaired. `error` is
    /// serde_json's message for it, positioned within the block
    /// ("line 3 column 40: expected `,` or `}`"): a repair turn can quote it.
    BadJson { error: String },
}

impl HowParsed {
    /// The parser's error when the block did not parse.
    pub fn error(&self) -> Option<&str> {
        match self {
            Self::BadJson { error } => Some(error),
            Self::Clean | Self::Repaired { .. } | Self::NoBlock => None,
        }
    }
}

impl fmt::Display for HowParsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Clean => f.write_str("parsed as written"),
            Self::Repaired { repairs } => {
                f.write_str("repaired:")?;
                for (i, r) in repairs.iter().enumerate() {
                    let sep = if i == 0 { " " } else { ", " };
                    write!(f, "{sep}{r}")?;
                }
                Ok(())
            }
            Self::NoBlock => f.write_str("no findings block"),
            Self::BadJson { error } => write!(f, "bad JSON: {error}"),
        }
    }
}

/// One repair [`repair_json`] made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Repair {
    /// `"` inside a string (quoted code) escaped: a quote not followed by
    /// what can follow the end of a value is content.
    UnescapedQuotes,
    /// Raw newlines, tabs and other control characters in strings escaped.
    ControlCharacters,
    /// Backslashes that start no JSON escape (`\d` of a regex) doubled.
    InvalidEscapes,
    /// `'…'` keys and strings turned into `"…"`.
    SingleQuotes,
    /// Keys without quotes quoted.
    BareKeys,
    /// Values without quotes that are no number, `true`, `false` or `null`
    /// quoted as strings.
    BareValues,
    /// `//` and `/* */` comments dropped.
    Comments,
    /// Commas before `}` or `]`, or doubled, dropped.
    TrailingCommas,
    /// A comma added between two members or entries.
    MissingCommas,
    /// A closing bracket that did not match: the open ones closed first, or
    /// a stray one dropped.
    MismatchedBrackets,
    /// The block ended early (a truncated answer): the open string and
    /// brackets closed, a key left without a value given `null`.
    Truncated,
    /// Text after the block's closing bracket ignored.
    TrailingText,
}

impl Repair {
    /// Whether it mends the block's structure rather than a string's
    /// spelling.
    fn is_structural(self) -> bool {
        match self {
            Self::MissingCommas
            | Self::MismatchedBrackets
            | Self::Truncated
            | Self::TrailingText
            | Self::BareKeys
            | Self::BareValues => true,
            Self::UnescapedQuotes
            | Self::ControlCharacters
            | Self::InvalidEscapes
            | Self::SingleQuotes
            | Self::Comments
            | Self::TrailingCommas => false,
        }
    }
}

impl fmt::Display for Repair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::UnescapedQuotes => "escaped quotes inside strings",
            Self::ControlCharacters => "escaped control characters inside strings",
            Self::InvalidEscapes => "doubled backslashes that were no escape",
            Self::SingleQuotes => "single quotes made double",
            Self::BareKeys => "quoted bare keys",
            Self::BareValues => "quoted bare values",
            Self::Comments => "dropped comments",
            Self::TrailingCommas => "dropped trailing commas",
            Self::MissingCommas => "added missing commas",
            Self::MismatchedBrackets => "fixed mismatched brackets",
            Self::Truncated => "closed a truncated block",
            Self::TrailingText => "ignored text after the block",
        })
    }
}

/// A claim of the model that did not become a finding, kept with why, so
/// that it can be reported as unverified rather than lost.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unparsed {
    /// Why it is not a finding: `entry 2: no line number`, `no findings
    /// block`, `bad JSON: line 1 column 160: expected ...`.
    pub reason: String,
    /// The claim as the model wrote it (an entry re-serialized, or the
    /// line of text), clipped to [`CLAIM_CLIP`] characters.
    pub text: String,
    /// The path it names, when one could be read.
    pub path: Option<String>,
    /// The line it names, when one could be read.
    pub line: Option<u32>,
}

/// How many characters of a claim [`Unparsed::text`] keeps.
pub(crate) const CLAIM_CLIP: usize = 300;

/// Whether `text` holds the completion marker in a form models write it:
/// `[TASK_COMPLETE]` (any case, also bold or in a code span, e.g.
/// `**[TASK_COMPLETE]**`, `` `[TASK_COMPLETE]` ``), or a bare upper-case
/// `TASK_COMPLETE` as a whole word outside fenced code. Identifiers that
/// contain it (`TASK_COMPLETED_FLAG`, `MY_TASK_COMPLETE`, `x.TASK_COMPLETE`,
/// `states[TASK_COMPLETE]`) are not the marker; neither is a bare or
/// lower-case form inside a ``` fence, where it is quoted code.
pub(crate) fn says_complete(text: &str) -> bool {
    !marker_spans(text).is_empty()
}

/// `text` with every occurrence of the marker (as [`says_complete`] finds
/// it) removed with its bold/backtick/bracket wrapping, and the spaces
/// before it when it ended its line. Not trimmed.
pub(crate) fn strip_marker(text: &str) -> String {
    let spans = marker_spans(text);
    if spans.is_empty() {
        return text.to_string();
    }
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut kept = 0;
    for (start, end) in spans {
        let rest_blank = text[end..]
            .split('\n')
            .next()
            .is_some_and(|rest| rest.trim().is_empty());
        let mut cut = start;
        if rest_blank {
            while cut > kept && matches!(bytes.get(cut - 1), Some(b' ' | b'\t')) {
                cut -= 1;
            }
        }
        out.push_str(&text[kept..cut]);
        kept = end;
    }
    out.push_str(&text[kept..]);
    out
}

/// The marker's word.
const MARKER_WORD: &str = "TASK_COMPLETE";

/// Byte spans `[start, end)` of the markers in `text`, wrapping included,
/// in order and disjoint.
fn marker_spans(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    // ASCII upper-casing keeps every byte offset.
    let upper = text.to_ascii_uppercase();
    let fences = fenced_ranges(text);
    let in_fence = |at: usize| fences.iter().any(|&(a, b)| a <= at && at < b);
    let byte = |i: usize| bytes.get(i).copied();
    let mut out: Vec<(usize, usize)> = Vec::new();
    let mut from = 0;
    while let Some(found) = upper.get(from..).and_then(|rest| rest.find(MARKER_WORD)) {
        let start = from + found;
        let end = start + MARKER_WORD.len();
        from = end;
        let exact = text.get(start..end) == Some(MARKER_WORD);
        let (mut l, mut r) = (start, end);
        let mut bracketed = false;
        while l > 0 {
            match (byte(l - 1), byte(r)) {
                (Some(b'['), Some(b']')) => bracketed = true,
                (Some(a), Some(b)) if a == b && matches!(a, b'*' | b'_' | b'`' | b'~') => {}
                _ => break,
            }
            l -= 1;
            r += 1;
        }
        let before = l.checked_sub(1).and_then(byte);
        let after = byte(r);
        let ok = if bracketed {
            !before.is_some_and(is_ident_byte)
                && !after.is_some_and(is_ident_byte)
                && (exact || !in_fence(start))
        } else {
            // A bare word is the marker only where it cannot be code.
            let code_before = before.is_some_and(|b| {
                is_ident_byte(b) || matches!(b, b'.' | b'$' | b':' | b'"' | b'\'' | b'\\' | b'/')
            });
            let code_after = after.is_some_and(|b| {
                is_ident_byte(b) || matches!(b, b'(' | b'"' | b'\'' | b'=' | b'[')
            }) || (matches!(after, Some(b'.' | b':'))
                && byte(r + 1).is_some_and(|b| is_ident_byte(b) || b == b':'));
            exact && !in_fence(start) && !code_before && !code_after
        };
        if ok && out.last().is_none_or(|&(_, e)| e <= l) {
            out.push((l, r));
        }
    }
    out
}

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Byte ranges of the contents of ``` / ~~~ fenced blocks (an unclosed one
/// runs to the end). The fence lines themselves are outside.
fn fenced_ranges(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut open: Option<usize> = None;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            match open.take() {
                Some(start) => out.push((start, at)),
                None => open = Some(at + line.len()),
            }
        }
        at += line.len();
    }
    if let Some(start) = open {
        out.push((start, text.len()));
    }
    out
}

/// Strips the completion marker and parses the findings block; when no
/// block parses as written, repairs it ([`repair_json`]); keeps every claim
/// that did not become a finding in [`ParsedReport::unparsed`].
pub(crate) fn parse_report(text: &str) -> ParsedReport {
    let clean = strip_marker(text).trim().to_string();
    let candidates = json_candidates(&clean);
    // An object with a `findings` key wins; a bare array counts only when
    // it holds findings (a summary may quote other JSON before its block).
    let mut fallback: Option<Entries> = None;
    for block in &candidates {
        let Ok(value) = serde_json::from_str::<Value>(block) else {
            continue;
        };
        match entries_of(&value) {
            Some((entries, true)) => {
                // A structured answer is the JSON alone: its `summary` is
                // the prose.
                let text = match value.get("summary").and_then(Value::as_str) {
                    Some(summary) if block.trim() == clean => summary.trim().to_string(),
                    _ => clean,
                };
                return report(text, entries, HowParsed::Clean);
            }
            Some((entries, false))
                if fallback.is_none() && (!entries.findings.is_empty() || entries.total == 0) =>
            {
                fallback = Some(entries);
            }
            Some((_, false)) | None => {}
        }
    }
    // The block asked for, repaired, beats a bare array quoted as written.
    let repairable = repair_candidates(&clean);
    let mut repaired_fallback: Option<(Entries, Vec<Repair>)> = None;
    for block in &repairable {
        let Some((value, repairs)) = repair_json(block) else {
            continue;
        };
        match entries_of(&value) {
            Some((entries, true)) => {
                return report(clean, entries, HowParsed::Repaired { repairs });
            }
            Some((entries, false))
                if repaired_fallback.is_none() && !entries.findings.is_empty() =>
            {
                repaired_fallback = Some((entries, repairs));
            }
            Some((_, false)) | None => {}
        }
    }
    if let Some(entries) = fallback {
        return report(clean, entries, HowParsed::Clean);
    }
    if let Some((entries, repairs)) = repaired_fallback {
        return report(clean, entries, HowParsed::Repaired { repairs });
    }
    // Nothing parsed: say why, and keep what the model claimed.
    // The block to blame: the first that looks like JSON and fails,
    // preferring one that names `findings`.
    let broken: Vec<(&String, serde_json::Error)> = candidates
        .iter()
        .chain(&repairable)
        .filter(|b| b.trim_start().starts_with(['{', '[']))
        .filter_map(|b| serde_json::from_str::<Value>(b).err().map(|e| (b, e)))
        .collect();
    let keyed = broken.iter().position(|(b, _)| b.contains("findings"));
    let broken = broken.into_iter().nth(keyed.unwrap_or(0));
    let (how, reason) = match &broken {
        Some((_, error)) => {
            let error = json_error(error);
            let reason = format!("bad JSON: {error}");
            (HowParsed::BadJson { error }, reason)
        }
        None => (HowParsed::NoBlock, "no findings block".to_string()),
    };
    let mut unparsed = Vec::new();
    if let Some((block, _)) = &broken {
        unparsed.extend(salvage_entries(block, &reason));
    }
    unparsed.extend(claim_lines(&clean, &reason));
    ParsedReport {
        text: clean,
        findings: Vec::new(),
        parsed: false,
        rejected: Vec::new(),
        how,
        unparsed,
    }
}

/// The entries of a findings list, sorted into findings and the rest.
struct Entries {
    findings: Vec<Finding>,
    rejected: Vec<String>,
    unparsed: Vec<Unparsed>,
    total: usize,
}

/// The findings list of a block and whether it was keyed (`{"findings":
/// [...]}`) rather than a bare array; `None` for any other JSON.
fn entries_of(value: &Value) -> Option<(Entries, bool)> {
    let (list, keyed) = match value {
        Value::Object(map) => match map.get("findings") {
            Some(Value::Array(items)) => (items, true),
            _ => return None,
        },
        Value::Array(items) => (items, false),
        _ => return None,
    };
    let mut entries = Entries {
        findings: Vec::new(),
        rejected: Vec::new(),
        unparsed: Vec::new(),
        total: list.len(),
    };
    for (index, item) in list.iter().enumerate() {
        match finding_from(item) {
            Ok(f) => entries.findings.push(f),
            Err(why) => {
                let reason = format!("entry {}: {why}", index + 1);
                entries.unparsed.push(Unparsed {
                    reason: reason.clone(),
                    text: clip(&item.to_string()),
                    path: as_text(item.get("path").or(item.get("file"))),
                    line: as_line(item.get("line").or(item.get("start_line"))),
                });
                entries.rejected.push(reason);
            }
        }
    }
    Some((entries, keyed))
}

fn report(text: String, entries: Entries, how: HowParsed) -> ParsedReport {
    ParsedReport {
        text,
        findings: entries.findings,
        parsed: true,
        rejected: entries.rejected,
        how,
        unparsed: entries.unparsed,
    }
}

/// serde_json's message with its position first: `line 3 column 40:
/// expected `,` or `}``.
fn json_error(error: &serde_json::Error) -> String {
    let (line, column) = (error.line(), error.column());
    let full = error.to_string();
    let message = full
        .strip_suffix(&format!(" at line {line} column {column}"))
        .unwrap_or(&full);
    format!("line {line} column {column}: {message}")
}

/// `text` cut to [`CLAIM_CLIP`] characters, with `…` when cut.
fn clip(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(CLAIM_CLIP) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// Fenced blocks first (```json or ```, an unclosed last one to the end),
/// then the outermost `{...}` span.
fn json_candidates(text: &str) -> Vec<String> {
    let mut out = fenced_candidates(text);
    out.extend(brace_span(text));
    out
}

/// The bodies of the fenced blocks; an unclosed last one runs to the end.
fn fenced_candidates(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("```") {
        let after = &rest[start + 3..];
        let body_start = after.find('\n').map_or(after.len(), |i| i + 1);
        let body = &after[body_start..];
        let Some(end) = body.find("```") else {
            // A truncated answer leaves its fence open.
            if !body.trim().is_empty() {
                out.push(body.trim().to_string());
            }
            break;
        };
        out.push(body[..end].trim().to_string());
        rest = &body[end + 3..];
    }
    out
}

/// From the first `{` to the last `}`.
fn brace_span(text: &str) -> Option<String> {
    match (text.find('{'), text.rfind('}')) {
        (Some(a), Some(b)) if a < b => Some(text[a..=b].to_string()),
        _ => None,
    }
}

/// What to repair: the fenced blocks, then the text from the `{` that opens
/// the findings object (or the first `{`) to the end, which keeps the tail
/// of a truncated answer that has no fence (the repair stops where the
/// block closes), then the outermost `{...}` span.
fn repair_candidates(text: &str) -> Vec<String> {
    let keyed = text.find("findings").and_then(|at| text[..at].rfind('{'));
    // A tail ends where a fence closes.
    let tails = [keyed, text.find('{')].into_iter().flatten().map(|start| {
        let tail = &text[start..];
        let end = tail.find("\n```").unwrap_or(tail.len());
        tail[..end].trim().to_string()
    });
    let mut out: Vec<String> = Vec::new();
    for block in fenced_candidates(text)
        .into_iter()
        .chain(tails)
        .chain(brace_span(text))
    {
        if block.trim_start().starts_with(['{', '[']) && !out.contains(&block) {
            out.push(block);
        }
    }
    out
}

/// When a block did not parse, the entries in it that name a path, kept as
/// claims: from each `path`/`file` key back to its `{` and on to the next
/// `}` (clipped).
fn salvage_entries(block: &str, reason: &str) -> Vec<Unparsed> {
    let (Some(key), Some(line_key)) = (&*ENTRY_PATH, &*ENTRY_LINE) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for caps in key.captures_iter(block) {
        let (Some(whole), Some(path)) = (caps.get(0), caps.get(1)) else {
            continue;
        };
        let start = block[..whole.start()].rfind('{').unwrap_or(whole.start());
        let end = block[whole.end()..]
            .find('}')
            .map_or(block.len(), |i| whole.end() + i + 1);
        let entry = &block[start..end];
        let line = line_key
            .captures(entry)
            .and_then(|c| c.get(1))
            .and_then(|m| m.as_str().parse().ok());
        out.push(Unparsed {
            reason: reason.to_string(),
            text: clip(entry),
            path: Some(path.as_str().to_string()),
            line,
        });
    }
    out
}

/// `"path": "app.py"` (or `file`, single quotes, bare key) in a broken block.
static ENTRY_PATH: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r#"["']?\b(?:path|file)["']?\s*:\s*["']([^"'\n]{1,300})["']"#).ok()
});
/// `"line": 12` (or `"12"`, `start_line`) in a broken entry.
static ENTRY_LINE: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r#"["']?\b(?:line|start_line)["']?\s*:\s*["']?L?(\d{1,9})"#).ok());
/// `app.py:12`, `src/a.rs:12:3` anywhere in a line.
static CLAIM_PATH_LINE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(?:^|[\s(\[`*])([\w./\\-]*\w\.[A-Za-z0-9]{1,10}):(\d{1,9})\b").ok()
});
/// `app.py line 12`, `app.py (line 12)`, `app.py, L12` anywhere in a line.
static CLAIM_PATH_WORD_LINE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(?i)(?:^|[\s(\[`*])([\w./\\-]*\w\.[A-Za-z0-9]{1,10})[`*]*,?\s*\(?\s*(?:on\s+|at\s+)?(?:line\s+|L)(\d{1,9})\b").ok()
});
/// `line 19: ...`, `L19 - ...`, `lines 3-5: ...`, `42: short title` at
/// the start of a line (list markers and emphasis removed).
static CLAIM_LINE_FIRST: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(?i)^(?:lines?\s*|l)?(\d{1,9})(?:\s*[-–]\s*\d{1,9})?\s*[:)\-–—]\s*[A-Za-z`'\x22]")
        .ok()
});

/// Lines of the text outside fenced code that read like a claim about a
/// place in the code: they name a path and line, or start with a line.
fn claim_lines(text: &str, reason: &str) -> Vec<Unparsed> {
    let fences = fenced_ranges(text);
    let mut out = Vec::new();
    let mut at = 0;
    for raw in text.split_inclusive('\n') {
        let start = at;
        at += raw.len();
        let line = raw.trim();
        let fenced = fences.iter().any(|&(a, b)| a <= start && start < b);
        if line.is_empty() || fenced || line.starts_with("```") || line.starts_with("~~~") {
            continue;
        }
        let body = strip_list_marker(line);
        let place = |re: &Option<Regex>| {
            re.as_ref()?.captures(body).and_then(|c| {
                let path = c.get(1)?.as_str().replace('\\', "/");
                let line = c.get(2)?.as_str().parse().ok()?;
                Some((path.trim_start_matches("./").to_string(), line))
            })
        };
        let found = place(&CLAIM_PATH_LINE)
            .or_else(|| place(&CLAIM_PATH_WORD_LINE))
            .map(|(p, l)| (Some(p), Some(l)))
            .or_else(|| {
                let re = CLAIM_LINE_FIRST.as_ref()?;
                let n = re.captures(body)?.get(1)?.as_str().parse().ok()?;
                Some((None, Some(n)))
            });
        if let Some((path, line_no)) = found {
            out.push(Unparsed {
                reason: reason.to_string(),
                text: clip(line),
                path,
                line: line_no,
            });
        }
    }
    out
}

/// A line without its list marker (`-`, `*`, `1.`) and leading emphasis.
fn strip_list_marker(line: &str) -> &str {
    let mut t = line.trim_start();
    for marker in ["- ", "* ", "+ ", "• "] {
        if let Some(rest) = t.strip_prefix(marker) {
            t = rest.trim_start();
            break;
        }
    }
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    if digits > 0
        && let Some(rest) = t[digits..]
            .strip_prefix(". ")
            .or_else(|| t[digits..].strip_prefix(") "))
    {
        t = rest.trim_start();
    }
    t.trim_start_matches(['*', '_', '`', '#', '>', ' '])
}

/// Repairs JSON the way small models break it and parses it; `None` unless
/// the repaired text parses. Repairs: `"` inside strings that cannot end
/// them (a quote ends a string only when what follows can follow a value:
/// `,` and a key or value, `}`/`]` and what can follow them, the end),
/// raw control characters and bad escapes in strings, single quotes, bare
/// keys and values, comments, trailing and missing commas, mismatched
/// brackets, and a truncated end (open string and brackets closed). Never
/// adds content beyond a `null` for a key cut off without its value. A
/// first pass lets any identifier-like key end a string; when that does
/// not parse, a second lets only the report format's keys do so (quoted
/// JSON in evidence, `{"a": "b", "c": 1}`, then stays one string).
pub(crate) fn repair_json(text: &str) -> Option<(Value, Vec<Repair>)> {
    let chars: Vec<char> = text.chars().collect();
    let pass = |keys| {
        let (fixed, repairs) = Repairer {
            s: &chars,
            i: 0,
            out: String::with_capacity(text.len() + 16),
            stack: Vec::new(),
            done: BTreeSet::new(),
            keys,
            swallowed: false,
        }
        .run()?;
        let value = serde_json::from_str::<Value>(&fixed).ok()?;
        Some((value, repairs.into_iter().collect::<Vec<_>>()))
    };
    let any = pass(Keys::Any);
    // A quote taken for the end of a string too early leaves structure to
    // mend (commas, brackets, a "truncated" end); the reading that needs
    // less of it is the right one.
    let cost = |r: &Option<(Value, Vec<Repair>)>| {
        r.as_ref().map_or(usize::MAX, |(_, repairs)| {
            repairs.iter().filter(|r| r.is_structural()).count()
        })
    };
    if cost(&any) == 0 {
        return any;
    }
    let known = pass(Keys::Known);
    if cost(&known) < cost(&any) {
        known
    } else {
        any
    }
}

/// What an open container expects next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    Key,
    Colon,
    Value,
    Next,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Frame {
    Object(Expect),
    Array(Expect),
}

impl Frame {
    fn closer(self) -> char {
        match self {
            Self::Object(_) => '}',
            Self::Array(_) => ']',
        }
    }
}

/// Which keys, seen after a quote, make that quote the end of a string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Keys {
    /// Any identifier-like key.
    Any,
    /// Only the report format's keys.
    Known,
}

/// The keys the report format uses, and their aliases in [`finding_from`].
const KNOWN_KEYS: [&str; 16] = [
    "findings",
    "path",
    "file",
    "line",
    "start_line",
    "end_line",
    "severity",
    "title",
    "message",
    "detail",
    "description",
    "evidence",
    "snippet",
    "rule",
    "category",
    "cwe",
];

/// How far a look-ahead skips whitespace.
const LOOK: usize = 4096;
/// How long a key a look-ahead reads.
const KEY_MAX: usize = 64;

/// One pass of [`repair_json`] over the characters of a block.
struct Repairer<'a> {
    s: &'a [char],
    i: usize,
    out: String,
    stack: Vec<Frame>,
    done: BTreeSet<Repair>,
    keys: Keys,
    /// A string ran to the end over the block's own closing brackets: its
    /// quotes were misread, and this pass fails.
    swallowed: bool,
}

impl Repairer<'_> {
    fn at(&self, i: usize) -> Option<char> {
        self.s.get(i).copied()
    }

    /// The repaired text, or `None` when there is no `{` or `[` at all.
    fn run(mut self) -> Option<(String, BTreeSet<Repair>)> {
        while let Some(c) = self.at(self.i) {
            if c == '{' || c == '[' {
                break;
            }
            self.i += 1;
        }
        self.at(self.i)?;
        while let Some(c) = self.at(self.i) {
            match c {
                c if c.is_whitespace() => {
                    self.out.push(c);
                    self.i += 1;
                }
                '/' if self.at(self.i + 1) == Some('/') => {
                    while self.at(self.i).is_some_and(|c| c != '\n') {
                        self.i += 1;
                    }
                    self.done.insert(Repair::Comments);
                }
                '/' if self.at(self.i + 1) == Some('*') => {
                    self.i += 2;
                    while self.at(self.i).is_some()
                        && !(self.at(self.i) == Some('*') && self.at(self.i + 1) == Some('/'))
                    {
                        self.i += 1;
                    }
                    self.i = (self.i + 2).min(self.s.len());
                    self.done.insert(Repair::Comments);
                }
                '{' | '[' => {
                    self.begin_value();
                    self.value_done();
                    self.stack.push(if c == '{' {
                        Frame::Object(Expect::Key)
                    } else {
                        Frame::Array(Expect::Value)
                    });
                    self.out.push(c);
                    self.i += 1;
                }
                '}' | ']' => {
                    self.i += 1;
                    self.close(c);
                    if self.stack.is_empty() {
                        break;
                    }
                }
                ',' => {
                    self.i += 1;
                    self.comma();
                }
                ':' => {
                    self.i += 1;
                    self.out.push(':');
                    self.set_top(Expect::Value);
                }
                '"' | '\'' => self.string(c),
                _ => self.bare(),
            }
        }
        if self.stack.is_empty() {
            if self.s[self.i.min(self.s.len())..]
                .iter()
                .any(|c| !c.is_whitespace())
            {
                self.done.insert(Repair::TrailingText);
            }
        } else {
            self.finish();
        }
        if self.swallowed {
            return None;
        }
        Some((self.out, self.done))
    }

    fn set_top(&mut self, expect: Expect) {
        if let Some(top) = self.stack.last_mut() {
            *top = match top {
                Frame::Object(_) => Frame::Object(expect),
                Frame::Array(_) => Frame::Array(expect),
            };
        }
    }

    /// A key or value starts: a comma goes first when one was missing.
    fn begin_value(&mut self) {
        if let Some(Frame::Object(Expect::Next) | Frame::Array(Expect::Next)) = self.stack.last() {
            self.out.push(',');
            self.done.insert(Repair::MissingCommas);
            match self.stack.last() {
                Some(Frame::Object(_)) => self.set_top(Expect::Key),
                _ => self.set_top(Expect::Value),
            }
        }
    }

    fn value_done(&mut self) {
        self.set_top(Expect::Next);
    }

    fn in_key_position(&self) -> bool {
        self.stack.last() == Some(&Frame::Object(Expect::Key))
    }

    fn comma(&mut self) {
        let last = self.out.trim_end().chars().last();
        if matches!(last, Some(',' | '{' | '[')) {
            self.done.insert(Repair::TrailingCommas);
        } else {
            self.out.push(',');
        }
        match self.stack.last() {
            Some(Frame::Object(_)) => self.set_top(Expect::Key),
            _ => self.set_top(Expect::Value),
        }
    }

    fn drop_trailing_comma(&mut self) {
        let trimmed = self.out.trim_end().len();
        if self.out[..trimmed].ends_with(',') {
            self.out.truncate(trimmed - 1);
            self.done.insert(Repair::TrailingCommas);
        }
    }

    fn close(&mut self, c: char) {
        if !self.stack.iter().any(|f| f.closer() == c) {
            self.done.insert(Repair::MismatchedBrackets);
            return;
        }
        self.drop_trailing_comma();
        while let Some(top) = self.stack.pop() {
            self.out.push(top.closer());
            if top.closer() == c {
                break;
            }
            self.done.insert(Repair::MismatchedBrackets);
        }
    }

    /// The end of the text with containers open: close them.
    fn finish(&mut self) {
        self.done.insert(Repair::Truncated);
        self.drop_trailing_comma();
        match self.stack.last() {
            Some(Frame::Object(Expect::Colon)) => self.out.push_str(": null"),
            Some(Frame::Object(Expect::Value)) => self.out.push_str(" null"),
            _ => {}
        }
        while let Some(top) = self.stack.pop() {
            self.out.push(top.closer());
        }
    }

    fn string(&mut self, quote: char) {
        self.begin_value();
        let key = self.in_key_position();
        if quote == '\'' {
            self.done.insert(Repair::SingleQuotes);
        }
        self.out.push('"');
        self.i += 1;
        let content = self.i;
        loop {
            let Some(c) = self.at(self.i) else {
                let raw: String = self.s[content.min(self.s.len())..].iter().collect();
                let raw = raw.trim_end();
                self.swallowed |= raw.ends_with(['}', ']']) || raw.contains("```");
                self.out.push('"');
                self.done.insert(Repair::Truncated);
                break;
            };
            match c {
                '\\' => self.escape(quote),
                c if c == quote => {
                    self.i += 1;
                    // Keys never hold quotes; a value's quote ends it only
                    // where a value can end.
                    if key || self.value_ends(self.i) {
                        self.out.push('"');
                        break;
                    }
                    self.out.push_str(if quote == '"' { "\\\"" } else { "'" });
                    self.done.insert(Repair::UnescapedQuotes);
                }
                '"' => {
                    self.out.push_str("\\\"");
                    self.i += 1;
                }
                c if u32::from(c) < 0x20 => {
                    match c {
                        '\n' => self.out.push_str("\\n"),
                        '\r' => self.out.push_str("\\r"),
                        '\t' => self.out.push_str("\\t"),
                        c => self.out.push_str(&format!("\\u{:04x}", u32::from(c))),
                    }
                    self.done.insert(Repair::ControlCharacters);
                    self.i += 1;
                }
                c => {
                    self.out.push(c);
                    self.i += 1;
                }
            }
        }
        if key {
            self.set_top(Expect::Colon);
        } else {
            self.value_done();
        }
    }

    fn escape(&mut self, quote: char) {
        match self.at(self.i + 1) {
            Some('"') => {
                self.out.push_str("\\\"");
                self.i += 2;
            }
            Some('\'') => {
                // JSON has no `\'`.
                self.out.push('\'');
                self.i += 2;
                if quote == '"' {
                    self.done.insert(Repair::InvalidEscapes);
                }
            }
            Some(c @ ('\\' | '/' | 'b' | 'f' | 'n' | 'r' | 't')) => {
                self.out.push('\\');
                self.out.push(c);
                self.i += 2;
            }
            Some('u')
                if (2..6).all(|k| self.at(self.i + k).is_some_and(|c| c.is_ascii_hexdigit())) =>
            {
                for k in 0..6 {
                    if let Some(c) = self.at(self.i + k) {
                        self.out.push(c);
                    }
                }
                self.i += 6;
            }
            _ => {
                self.out.push_str("\\\\");
                self.i += 1;
                self.done.insert(Repair::InvalidEscapes);
            }
        }
    }

    /// A bare word: a key to quote, or a value kept when it is a JSON
    /// number or literal and quoted otherwise.
    fn bare(&mut self) {
        self.begin_value();
        if self.in_key_position() {
            let start = self.i;
            while self.at(self.i).is_some_and(is_key_char) {
                self.i += 1;
            }
            if self.i == start {
                if let Some(c) = self.at(self.i) {
                    self.out.push(c);
                }
                self.i += 1;
                return;
            }
            let word: String = self.s[start..self.i].iter().collect();
            self.out.push('"');
            self.out.push_str(&word);
            self.out.push('"');
            self.done.insert(Repair::BareKeys);
            self.set_top(Expect::Colon);
            return;
        }
        let start = self.i;
        while self
            .at(self.i)
            .is_some_and(|c| !matches!(c, ',' | '}' | ']' | '\n'))
        {
            self.i += 1;
        }
        let word: String = self.s[start..self.i].iter().collect();
        let word = word.trim_end();
        let scalar = serde_json::from_str::<Value>(word)
            .is_ok_and(|v| matches!(v, Value::Number(_) | Value::Bool(_) | Value::Null));
        if scalar {
            self.out.push_str(word);
        } else {
            self.out
                .push_str(&Value::String(word.to_string()).to_string());
            self.done.insert(Repair::BareValues);
        }
        // Keep the whitespace after the word.
        let kept = word.chars().count();
        self.i = start + kept.max(1);
        self.value_done();
    }

    fn skip_ws(&self, mut j: usize) -> usize {
        let limit = j + LOOK;
        while j < limit && self.at(j).is_some_and(char::is_whitespace) {
            j += 1;
        }
        j
    }

    /// Whether a value string whose quote is at `j - 1` ends there.
    fn value_ends(&self, j: usize) -> bool {
        let k = self.skip_ws(j);
        match self.at(k) {
            None => true,
            Some(',') => self.after_comma(k + 1, self.stack.len()),
            Some(c @ ('}' | ']')) => self.after_close(k + 1, c),
            // A member that lost its comma: `"x"\n"detail": ...`.
            Some('"' | '\'') => {
                matches!(self.stack.last(), Some(Frame::Object(_))) && self.key_at(k)
            }
            Some('/') => matches!(self.at(k + 1), Some('/' | '*')),
            Some(_) => false,
        }
    }

    /// Whether what follows a comma at `j - 1` can follow it in the frame
    /// at `depth` (1: the innermost).
    fn after_comma(&self, j: usize, depth: usize) -> bool {
        let m = self.skip_ws(j);
        let frame = depth.checked_sub(1).and_then(|d| self.stack.get(d));
        match (frame, self.at(m)) {
            (_, None) => true,
            (Some(Frame::Object(_)), Some('}')) => true,
            (Some(Frame::Object(_)), Some('"' | '\'')) => self.key_at(m),
            (Some(Frame::Object(_)), Some(c)) if is_key_char(c) => self.bare_key_at(m),
            (Some(Frame::Array(_)), Some(c)) => {
                matches!(c, '{' | '[' | '"' | '\'' | ']' | '-') || c.is_ascii_digit()
            }
            _ => false,
        }
    }

    /// Whether a closer `c` at `j - 1` closes the innermost frame and what
    /// follows it can follow that.
    fn after_close(&self, j: usize, c: char) -> bool {
        if self.stack.last().map(|f| f.closer()) != Some(c) {
            return false;
        }
        let m = self.skip_ws(j);
        match self.at(m) {
            None | Some('}' | ']') => true,
            Some(',') => self.after_comma(m + 1, self.stack.len().saturating_sub(1)),
            Some('/') => matches!(self.at(m + 1), Some('/' | '*')),
            Some(_) => false,
        }
    }

    /// Whether a quoted key and its colon start at `m`.
    fn key_at(&self, m: usize) -> bool {
        let Some(quote) = self.at(m) else {
            return false;
        };
        let mut j = m + 1;
        let mut key = String::new();
        while let Some(c) = self.at(j) {
            if c == quote {
                break;
            }
            if c == '\n' || key.len() >= KEY_MAX {
                return false;
            }
            key.push(c);
            j += 1;
        }
        // A key cut off by the end of a truncated answer counts.
        self.key_ok(&key)
            && (self.at(j).is_none() || matches!(self.at(self.skip_ws(j + 1)), None | Some(':')))
    }

    /// Whether a bare key and its colon start at `m`.
    fn bare_key_at(&self, m: usize) -> bool {
        let mut j = m;
        let mut key = String::new();
        while let Some(c) = self.at(j).filter(|&c| is_key_char(c)) {
            if key.len() >= KEY_MAX {
                return false;
            }
            key.push(c);
            j += 1;
        }
        self.key_ok(&key) && matches!(self.at(self.skip_ws(j)), None | Some(':'))
    }

    fn key_ok(&self, key: &str) -> bool {
        let mut chars = key.chars();
        let starts_well = chars.next().is_some_and(|c| c.is_alphabetic() || c == '_');
        starts_well
            && key
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | ' '))
            && match self.keys {
                Keys::Any => true,
                Keys::Known => KNOWN_KEYS.contains(&key.to_ascii_lowercase().as_str()),
            }
    }
}

fn is_key_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '$')
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

fn finding_from(item: &Value) -> Result<Finding, &'static str> {
    let get = |k: &str| item.get(k);
    let path = as_text(get("path").or(get("file")))
        .ok_or("no path")?
        .replace('\\', "/")
        .trim_start_matches("./")
        .to_string();
    let line = as_line(get("line").or(get("start_line"))).ok_or("no line number")?;
    if line == 0 {
        return Err("line 0 (lines are numbered from 1)");
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
        evidence: as_text(get("code").or(get("evidence")).or(get("snippet"))),
        rule: as_text(get("rule").or(get("category"))),
        cwe: FindingCwe::from_model(get("cwe")),
        origin: Origin::Agent,
    })
}

/// Renders findings in the report format (the offline engine answers so).
pub(crate) fn render_block(findings: &[Finding]) -> String {
    let body =
        serde_json::to_string_pretty(&serde_json::json!({ "findings": items(findings, false) }))
            .unwrap_or_else(|_| "{\"findings\": []}".to_string());
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

    /// The exact block Qwen2.5-Coder 1.5B wrote: code quoted with its
    /// double quotes unescaped.
    const BROKEN_SQL_BLOCK: &str = r#"Found a SQL injection.
```json
{"findings": [{"path": "app.py", "line": 12, "severity": "high", "title": "SQL injection", "detail": "user input in SQL", "evidence": "app.py:12: 'SELECT * FROM users WHERE name = '" + name + "'"}]}
```
[TASK_COMPLETE]"#;

    #[test]
    fn unescaped_quotes_in_quoted_code_are_recovered() {
        let r = parse_report(BROKEN_SQL_BLOCK);
        assert!(r.parsed);
        assert_eq!(
            r.how,
            HowParsed::Repaired {
                repairs: vec![Repair::UnescapedQuotes]
            }
        );
        assert_eq!(r.findings.len(), 1);
        assert_eq!(
            r.findings[0].evidence.as_deref(),
            Some(r#"app.py:12: 'SELECT * FROM users WHERE name = '" + name + "'"#)
        );
        assert_eq!(r.findings[0].severity, Severity::High);
        assert!(r.unparsed.is_empty());
    }

    #[test]
    fn whole_code_lines_with_unescaped_quotes_are_recovered() {
        let block = r#"{"findings": [{"path": "app.py", "line": 12, "title": "t", "evidence": "cursor.execute("SELECT * FROM users WHERE name = '" + name + "'")"}, {"path": "b.py", "line": 3, "title": "call "f" with ", commas", "evidence": "f("a", "b")"}]}"#;
        let r = parse_report(block);
        assert_eq!(r.findings.len(), 2, "{r:?}");
        assert_eq!(
            r.findings[0].evidence.as_deref(),
            Some(r#"cursor.execute("SELECT * FROM users WHERE name = '" + name + "'")"#)
        );
        assert_eq!(r.findings[1].title, r#"call "f" with ", commas"#);
        assert_eq!(r.findings[1].evidence.as_deref(), Some(r#"f("a", "b")"#));
    }

    #[test]
    fn quoted_json_in_evidence_stays_one_string() {
        // `"v", "b":` looks like the next member; only the second pass,
        // which ends strings at the format's keys, reads it right.
        let block = r#"{"findings": [{"path": "a.js", "line": 1, "title": "t", "evidence": "const o = {"a": "v", "b": 2}"}]}"#;
        let r = parse_report(block);
        assert_eq!(r.findings.len(), 1, "{r:?}");
        assert_eq!(
            r.findings[0].evidence.as_deref(),
            Some(r#"const o = {"a": "v", "b": 2}"#)
        );
    }

    #[test]
    fn trailing_commas_comments_and_single_quotes_are_repaired() {
        let text = "```json\n{'findings': [\n  // the first\n  {'path': 'a.py', line: 3, \"title\": 'it''s', \"evidence\": 'x = \"1\"',},\n],}\n```";
        let r = parse_report(text);
        assert_eq!(r.findings.len(), 1, "{r:?}");
        assert_eq!(r.findings[0].evidence.as_deref(), Some("x = \"1\""));
        let HowParsed::Repaired { repairs } = &r.how else {
            panic!("{:?}", r.how)
        };
        for want in [
            Repair::TrailingCommas,
            Repair::Comments,
            Repair::SingleQuotes,
            Repair::BareKeys,
        ] {
            assert!(repairs.contains(&want), "{want:?} in {repairs:?}");
        }
    }

    #[test]
    fn a_truncated_block_keeps_its_complete_entries_and_the_cut_one() {
        let text = "Summary.\n```json\n{\"findings\": [\n {\"path\": \"a.py\", \"line\": 3, \"title\": \"first\", \"evidence\": \"x\"},\n {\"path\": \"b.py\", \"line\": 4, \"title\": \"second\", \"evidence\": \"eval(req";
        let r = parse_report(text);
        assert!(r.parsed);
        assert_eq!(r.findings.len(), 2, "{r:?}");
        assert_eq!(r.findings[1].evidence.as_deref(), Some("eval(req"));
        assert!(
            matches!(&r.how, HowParsed::Repaired { repairs } if repairs.contains(&Repair::Truncated))
        );
        // Cut after a key: the entry has no line and is kept as a claim.
        let r = parse_report("{\"findings\": [{\"path\": \"a.py\", \"line\"");
        assert!(r.parsed);
        assert!(r.findings.is_empty());
        assert_eq!(r.rejected, vec!["entry 1: no line number"]);
        assert_eq!(r.unparsed[0].path.as_deref(), Some("a.py"));
    }

    #[test]
    fn a_truncated_block_without_a_fence_is_read_to_its_end() {
        let text = "Here: {\"findings\": [{\"path\": \"a.py\", \"line\": 3, \"title\": \"a\"}, {\"path\": \"b.py\", \"line\": 9, \"title\": \"b\"";
        let r = parse_report(text);
        assert_eq!(r.findings.len(), 2, "{r:?}");
    }

    #[test]
    fn a_clean_block_is_marked_clean() {
        let r = parse_report("```json\n{\"findings\": []}\n```");
        assert_eq!(r.how, HowParsed::Clean);
        assert_eq!(r.how.to_string(), "parsed as written");
    }

    #[test]
    fn unrepairable_json_reports_the_parser_error_and_keeps_the_entries() {
        let text = "Two problems.\n```json\n{\"findings\": [{\"path\": \"app.py\", \"line\": 12, \"title\": \"SQL\" ;; \"evidence\": 1}]}\n```";
        let r = parse_report(text);
        assert!(!r.parsed);
        let error = r.how.error().unwrap_or_default().to_string();
        assert!(error.starts_with("line 1 column "), "{error}");
        assert!(error.contains("expected"), "{error}");
        assert_eq!(r.unparsed.len(), 1, "{:?}", r.unparsed);
        assert_eq!(r.unparsed[0].reason, format!("bad JSON: {error}"));
        assert_eq!(r.unparsed[0].path.as_deref(), Some("app.py"));
        assert_eq!(r.unparsed[0].line, Some(12));
        assert!(r.unparsed[0].text.contains("\"title\": \"SQL\""));
    }

    #[test]
    fn rejected_entries_keep_their_text_and_reason() {
        let text = "```json\n{\"findings\":[{\"path\":\"a.rs\",\"title\":\"no line here\",\"evidence\":\"x\"},{\"line\":4,\"title\":\"no path\"}]}\n```";
        let r = parse_report(text);
        assert_eq!(
            r.rejected,
            vec!["entry 1: no line number", "entry 2: no path"]
        );
        assert_eq!(r.unparsed.len(), 2);
        assert_eq!(r.unparsed[0].reason, "entry 1: no line number");
        assert!(r.unparsed[0].text.contains("no line here"));
        assert_eq!(r.unparsed[0].path.as_deref(), Some("a.rs"));
        assert_eq!(r.unparsed[1].line, Some(4));
        // Long entries are clipped.
        let long = format!(
            "{{\"findings\":[{{\"path\":\"a\",\"title\":\"t\",\"detail\":\"{}\"}}]}}",
            "d".repeat(1000)
        );
        let r = parse_report(&long);
        assert_eq!(r.unparsed[0].text.chars().count(), CLAIM_CLIP + 1);
        assert!(r.unparsed[0].text.ends_with('…'));
    }

    #[test]
    fn claim_lines_without_a_block_are_kept_as_unparsed() {
        let text = "I reviewed the files.\n\n- line 19: eval of request input\n42: short title\n**app.py:12** - SQL built from user input\n1. The query in `db/users.py` (line 7) is unsafe\nNothing else.\n```python\n12: not a claim\n```\n[TASK_COMPLETE]";
        let r = parse_report(text);
        assert!(!r.parsed);
        assert_eq!(r.how, HowParsed::NoBlock);
        let got: Vec<(Option<&str>, Option<u32>, &str)> = r
            .unparsed
            .iter()
            .map(|u| (u.path.as_deref(), u.line, u.reason.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                (None, Some(19), "no findings block"),
                (None, Some(42), "no findings block"),
                (Some("app.py"), Some(12), "no findings block"),
                (Some("db/users.py"), Some(7), "no findings block"),
            ]
        );
        assert_eq!(r.unparsed[0].text, "- line 19: eval of request input");
    }

    #[test]
    fn marker_variants_are_recognised() {
        for text in [
            "done [TASK_COMPLETE]",
            "done\nTASK_COMPLETE",
            "done. TASK_COMPLETE.",
            "**[TASK_COMPLETE]**",
            "**TASK_COMPLETE**",
            "`[TASK_COMPLETE]`",
            "`TASK_COMPLETE`",
            "[task_complete]",
            "__TASK_COMPLETE__",
            "```json\n{}\n[TASK_COMPLETE]\n```",
        ] {
            assert!(says_complete(text), "{text:?}");
        }
    }

    #[test]
    fn identifiers_and_quoted_code_are_not_the_marker() {
        for text in [
            "TASK_COMPLETED_FLAG is never reset",
            "MY_TASK_COMPLETE",
            "set TASK_COMPLETE_AT",
            "status.TASK_COMPLETE",
            "Status::TASK_COMPLETE",
            "states[TASK_COMPLETE]",
            "TASK_COMPLETE(x)",
            "TASK_COMPLETE=1",
            "\"TASK_COMPLETE\"",
            "the task_complete flag",
            "Task Complete",
            "```python\nif s == TASK_COMPLETE:\n    pass\n```",
            "```\nx = [task_complete]\n```",
        ] {
            assert!(!says_complete(text), "{text:?}");
        }
    }

    #[test]
    fn stripping_removes_every_marker_with_its_wrapping() {
        assert_eq!(strip_marker("Done. **[TASK_COMPLETE]**"), "Done.");
        assert_eq!(strip_marker("a `TASK_COMPLETE` b"), "a  b");
        assert_eq!(
            strip_marker("[TASK_COMPLETE]\nsummary\nTASK_COMPLETE\n"),
            "\nsummary\n\n"
        );
        assert_eq!(
            strip_marker("keep TASK_COMPLETED_FLAG [TASK_COMPLETE]"),
            "keep TASK_COMPLETED_FLAG"
        );
        let fenced = "```\nif s == TASK_COMPLETE:\n```\nTASK_COMPLETE";
        assert_eq!(strip_marker(fenced), "```\nif s == TASK_COMPLETE:\n```\n");
        assert_eq!(strip_marker("naïve – ünïcode"), "naïve – ünïcode");
        let r = parse_report("Summary.\n```json\n{\"findings\":[]}\n```\n**TASK_COMPLETE**");
        assert_eq!(r.text, "Summary.\n```json\n{\"findings\":[]}\n```");
    }

    #[test]
    fn the_claim_patterns_compile() {
        for re in [
            &ENTRY_PATH,
            &ENTRY_LINE,
            &CLAIM_PATH_LINE,
            &CLAIM_PATH_WORD_LINE,
            &CLAIM_LINE_FIRST,
        ] {
            assert!(re.is_some());
        }
    }

    #[test]
    fn repair_never_panics_and_only_returns_json() {
        let mut rng = fastrand::Rng::with_seed(0x5eed);
        let alphabet: Vec<char> = "{}[]\"':,\\/*\n\t abc1-.eEtrufnl_é…".chars().collect();
        for _ in 0..3000 {
            let len = rng.usize(0..60);
            let text: String = (0..len)
                .map(|_| alphabet[rng.usize(0..alphabet.len())])
                .collect();
            if let Some((value, _)) = repair_json(&text) {
                assert!(serde_json::to_string(&value).is_ok());
            }
            let _ = parse_report(&text);
            let _ = strip_marker(&text);
        }
        // Every cut of a real answer: no panic, and a cut inside the
        // second entry still yields the first.
        let full = BROKEN_SQL_BLOCK.replace(
            "]}\n```\n[TASK_COMPLETE]",
            ", {\"path\": \"b.py\", \"line\": 2, \"title\": \"x\"}]}",
        );
        let first_end = full.find("\"'\"}").map_or(0, |i| i + 4);
        for (cut, _) in full.char_indices() {
            let r = parse_report(&full[..cut]);
            if cut > first_end + 3 {
                assert!(!r.findings.is_empty(), "cut at {cut}: {:?}", &full[..cut]);
            }
        }
    }

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
    fn a_models_cwe_is_normalized_named_and_flagged() {
        let text = r#"```json
{"findings": [
 {"path": "a.py", "line": 1, "title": "a", "cwe": "cwe-89"},
 {"path": "a.py", "line": 2, "title": "b", "cwe": 79},
 {"path": "a.py", "line": 3, "title": "c", "cwe": "CWE 22"},
 {"path": "a.py", "line": 4, "title": "d", "cwe": "CWE-99999"},
 {"path": "a.py", "line": 5, "title": "e", "cwe": "SQL injection"},
 {"path": "a.py", "line": 6, "title": "f", "cwe": null},
 {"path": "a.py", "line": 7, "title": "g"},
 {"path": "a.py", "line": 8, "title": "h", "cwe": ["CWE-328", "CWE-327"]},
 {"path": "a.py", "line": 9, "title": "i", "cwe": {"id": 89}}
]}
```"#;
        let r = parse_report(text);
        let got: Vec<(Option<String>, Option<&str>, Option<&str>)> = r
            .findings
            .iter()
            .map(|f| {
                (
                    f.cwe.id.map(|id| id.to_string()),
                    f.cwe.name.as_deref(),
                    f.cwe.note.as_deref(),
                )
            })
            .collect();
        let sql =
            "Improper Neutralization of Special Elements used in an SQL Command ('SQL Injection')";
        assert_eq!(got[0], (Some("CWE-89".into()), Some(sql), None));
        assert_eq!(got[1].0.as_deref(), Some("CWE-79"));
        assert!(got[1].1.is_some_and(|n| n.contains("Cross-site Scripting")));
        assert_eq!(got[2].0.as_deref(), Some("CWE-22"));
        // Unknown to the table: kept, unnamed, flagged.
        assert_eq!(got[3].0.as_deref(), Some("CWE-99999"));
        assert_eq!(got[3].1, None);
        assert!(
            got[3]
                .2
                .is_some_and(|n| n.contains("CWE-99999 is not in fanscan's CWE table")),
            "{:?}",
            got[3]
        );
        // Not an id: no id, the text quoted in the note.
        assert_eq!(got[4].0, None);
        assert!(
            got[4]
                .2
                .is_some_and(|n| n.contains("\"SQL injection\" is not a CWE id")),
            "{:?}",
            got[4]
        );
        assert_eq!(got[5], (None, None, None));
        assert_eq!(got[6], (None, None, None));
        assert_eq!(got[7].0.as_deref(), Some("CWE-328"));
        assert_eq!(got[8].0, None);
        assert!(
            got[8].2.is_some_and(|n| n.contains("is not a CWE id")),
            "{:?}",
            got[8]
        );
        assert_eq!(
            r.findings[0].cwe.label().as_deref(),
            Some("CWE-89 (SQL Injection)")
        );
        assert_eq!(r.findings[3].cwe.label().as_deref(), Some("CWE-99999"));
    }

    #[test]
    fn findings_stored_without_a_cwe_still_read_and_new_ones_round_trip() {
        // A finding as fanscans before CWEs stored it.
        let old = r#"{"path":"a.rs","line":2,"end_line":null,"severity":"low","title":"t","detail":"d","evidence":"x","rule":"r","origin":"agent"}"#;
        let f: Finding = serde_json::from_str(old).unwrap();
        assert_eq!(f.cwe, FindingCwe::default());
        let mut with = f.clone();
        with.cwe = FindingCwe::number(89);
        let json = serde_json::to_value(&with).unwrap();
        assert_eq!(json["cwe"], "CWE-89");
        assert!(json["cwe_name"].as_str().unwrap().contains("SQL"));
        assert!(json.get("cwe_note").is_none());
        let back: Finding = serde_json::from_value(json).unwrap();
        assert_eq!(back, with);
    }

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
        };
        let r = parse_report(&render_block(std::slice::from_ref(&f)));
        assert_eq!(r.findings, vec![f.clone()]);
        let structured = parse_report(&render_structured("s", std::slice::from_ref(&f)));
        assert_eq!(structured.findings, vec![f]);
    }
}
