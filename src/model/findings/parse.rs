//! Reading an agent's final answer: the completion marker in the forms
//! models write it, the findings block (as written, else repaired), and
//! every claim that did not become a finding, with why.

use std::sync::LazyLock;

use regex::Regex;

use crate::util::builtin_regex;
use serde_json::Value;

use super::model::{
    CLAIM_CLIP, Finding, FindingCwe, HowParsed, Origin, Repair, Severity, Unparsed,
};
use super::repair::repair_json;
use crate::model::leads::{LeadAnswer, answers_of};

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
    /// The report's answers to its task's leads (see
    /// [`crate::model::leads`]), as read; empty without a `leads` list.
    pub leads: Vec<LeadAnswer>,
}

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
        leads: Vec::new(),
    }
}

/// The entries of a findings list, sorted into findings and the rest.
struct Entries {
    findings: Vec<Finding>,
    rejected: Vec<String>,
    unparsed: Vec<Unparsed>,
    total: usize,
    leads: Vec<LeadAnswer>,
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
        leads: answers_of(value),
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
        leads: entries.leads,
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
    let (key, line_key) = (&*ENTRY_PATH, &*ENTRY_LINE);
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
static ENTRY_PATH: LazyLock<Regex> =
    LazyLock::new(|| builtin_regex(r#"["']?\b(?:path|file)["']?\s*:\s*["']([^"'\n]{1,300})["']"#));
/// `"line": 12` (or `"12"`, `start_line`) in a broken entry.
static ENTRY_LINE: LazyLock<Regex> =
    LazyLock::new(|| builtin_regex(r#"["']?\b(?:line|start_line)["']?\s*:\s*["']?L?(\d{1,9})"#));
/// `app.py:12`, `src/a.rs:12:3` anywhere in a line.
static CLAIM_PATH_LINE: LazyLock<Regex> = LazyLock::new(|| {
    builtin_regex(r"(?:^|[\s(\[`*])([\w./\\-]*\w\.[A-Za-z0-9]{1,10}):(\d{1,9})\b")
});
/// `app.py line 12`, `app.py (line 12)`, `app.py, L12` anywhere in a line.
static CLAIM_PATH_WORD_LINE: LazyLock<Regex> = LazyLock::new(|| {
    builtin_regex(
        r"(?i)(?:^|[\s(\[`*])([\w./\\-]*\w\.[A-Za-z0-9]{1,10})[`*]*,?\s*\(?\s*(?:on\s+|at\s+)?(?:line\s+|L)(\d{1,9})\b",
    )
});
/// `line 19: ...`, `L19 - ...`, `lines 3-5: ...`, `42: short title` at
/// the start of a line (list markers and emphasis removed).
static CLAIM_LINE_FIRST: LazyLock<Regex> = LazyLock::new(|| {
    builtin_regex(
        r"(?i)^(?:lines?\s*|l)?(\d{1,9})(?:\s*[-–]\s*\d{1,9})?\s*[:)\-–—]\s*[A-Za-z`'\x22]",
    )
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
        let place = |re: &Regex| {
            re.captures(body).and_then(|c| {
                let path = c.get(1)?.as_str().replace('\\', "/");
                let line = c.get(2)?.as_str().parse().ok()?;
                Some((path.trim_start_matches("./").to_string(), line))
            })
        };
        let found = place(&CLAIM_PATH_LINE)
            .or_else(|| place(&CLAIM_PATH_WORD_LINE))
            .map(|(p, l)| (Some(p), Some(l)))
            .or_else(|| {
                let n = CLAIM_LINE_FIRST
                    .captures(body)?
                    .get(1)?
                    .as_str()
                    .parse()
                    .ok()?;
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
        seen: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A built-in pattern that does not compile is a bug that fails loudly
    /// on first use: force every one here, so none can ship.
    #[test]
    fn every_builtin_pattern_compiles() {
        for re in [
            &ENTRY_PATH,
            &ENTRY_LINE,
            &CLAIM_PATH_LINE,
            &CLAIM_PATH_WORD_LINE,
            &CLAIM_LINE_FIRST,
        ] {
            std::sync::LazyLock::force(re);
        }
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
}
