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
//!
//! Evidence is matched as code: what models add around a quote is taken
//! off first (a `path:line:` or `L12:` prefix, read_file's and grep's line
//! numbers, backticks and ``` fences), and `'`, `"` and backticks count as
//! the same quote. A description in prose stays unverified.
//!
//! A claim whose quote fails (prose, or code that is not there, or none)
//! but that names a file of its own group and a line that exists is
//! `located`: the file's text at the cited lines is kept with it, so that
//! the skeptic ([`crate::pipeline::skeptic`]) can judge it like a verified finding.
//! Until the skeptic confirms it, it stays unverified.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use regex::Regex;

use crate::util::builtin_regex;

use serde::Serialize;

use crate::agents::{AgentStatus, GroupReport};
use crate::model::challenge::Challenge;
use crate::model::findings::{Finding, Origin};
use crate::stages::inventory::Inventory;
use crate::tools::ToolContext;

/// How far from the cited line evidence is looked for.
const WINDOW: u32 = 3;

/// Most lines of a file a located claim takes as its evidence.
const LOCATED_LINES: u32 = 5;

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
    /// An unverified claim in a file of its group whose cited lines exist:
    /// the file's text there, the evidence it gets if the skeptic confirms
    /// it.
    pub located: Option<String>,
    /// What the skeptic said of it (none: not challenged).
    pub challenge: Option<Challenge>,
}

/// Each cited file's redacted lines as verification read them (`None`:
/// unreadable), so that later stages (inline suppressions) never read a
/// file again.
pub(crate) type FileLines = BTreeMap<String, Option<Vec<String>>>;

/// Each cited file's lines in [`canon`] form, made once per file: a file
/// with thousands of findings (generated bindings) is not canonicalized
/// again for each of them.
type CanonLines = BTreeMap<String, Vec<String>>;

/// Verifies every finding of every report.
pub(crate) fn verify(
    reports: &[GroupReport],
    inventory: &Inventory,
    tools: &ToolContext,
) -> Vec<Checked> {
    verify_keeping_lines(reports, inventory, tools).0
}

/// As [`verify`], also giving the lines it read.
pub(crate) fn verify_keeping_lines(
    reports: &[GroupReport],
    inventory: &Inventory,
    tools: &ToolContext,
) -> (Vec<Checked>, FileLines) {
    let known: BTreeSet<&str> = inventory.files.iter().map(|f| f.path.as_str()).collect();
    let mut cache: BTreeMap<String, Option<Vec<String>>> = BTreeMap::new();
    let mut canons = CanonLines::new();
    let mut out = Vec::new();
    for report in reports {
        let read_nothing = report.files_read.is_empty()
            && !report.files.is_empty()
            && report.status != AgentStatus::Failed;
        for finding in &report.findings {
            let mut finding = finding.clone();
            finding.path = finding.path.trim_start_matches("./").replace('\\', "/");
            let result = if read_nothing && finding.origin == Origin::Agent {
                Err(Unverified::ReadNothing)
            } else {
                check(&mut finding, &known, &mut cache, &mut canons, tools)
            };
            let (verified, note, occurrence) = match result {
                Ok((note, occurrence)) => (true, note, occurrence),
                Err(reason) => (false, Some(reason.to_string()), 0),
            };
            let in_group = report.files.iter().any(|f| f.path == finding.path);
            let located =
                (!verified && !read_nothing && in_group && finding.origin == Origin::Agent)
                    .then(|| located_text(&finding, &mut cache, tools))
                    .flatten();
            out.push(Checked {
                finding,
                group: report.group.clone(),
                agent: report.agent.clone(),
                verified,
                note,
                occurrence,
                located,
                challenge: None,
            });
        }
    }
    (out, cache)
}

/// The file's text at a claim's cited lines (at most [`LOCATED_LINES`]),
/// when they exist and hold more than whitespace.
fn located_text(
    finding: &Finding,
    cache: &mut BTreeMap<String, Option<Vec<String>>>,
    tools: &ToolContext,
) -> Option<String> {
    let lines = lines_of(&finding.path, cache, tools)?;
    let count = u32::try_from(lines.len()).unwrap_or(u32::MAX);
    let end = finding.end_line.unwrap_or(finding.line).max(finding.line);
    if finding.line == 0 || end > count {
        return None;
    }
    let last = end.min(finding.line + LOCATED_LINES - 1);
    let text = lines[(finding.line - 1) as usize..last as usize].join("\n");
    (!squash(&text).is_empty()).then_some(text)
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

/// Why a finding is not verified: the note the report shows beside it.
#[derive(Debug, thiserror::Error)]
enum Unverified {
    #[error("its agent read none of the group's files")]
    ReadNothing,
    #[error("{0} is not a file of the scanned repository")]
    NotInRepository(String),
    #[error("{0} could not be read")]
    Unreadable(String),
    #[error("line {line}{end} is outside {path}, which has {count} lines")]
    OutsideFile {
        /// `-14` when the finding cited a span, else empty.
        end: String,
        line: u32,
        path: String,
        count: u32,
    },
    #[error("no evidence was quoted: a finding must quote the code it cites")]
    NoEvidence,
    // The wording is the one reports and tests have used since the start.
    #[error("the quoted evidence is not at {path}:{line} (nor within {WINDOW} lines){prose}")]
    NotThere {
        path: String,
        line: u32,
        /// Why it may not match: it reads as prose; or empty.
        prose: &'static str,
    },
}

fn check(
    finding: &mut Finding,
    known: &BTreeSet<&str>,
    cache: &mut BTreeMap<String, Option<Vec<String>>>,
    canons: &mut CanonLines,
    tools: &ToolContext,
) -> Result<(Option<String>, u32), Unverified> {
    if !known.contains(finding.path.as_str()) {
        return Err(Unverified::NotInRepository(finding.path.clone()));
    }
    let Some(lines) = lines_of(&finding.path, cache, tools) else {
        return Err(Unverified::Unreadable(finding.path.clone()));
    };
    let count = u32::try_from(lines.len()).unwrap_or(u32::MAX);
    let end = finding.end_line.unwrap_or(finding.line).max(finding.line);
    if finding.line == 0 || finding.line > count.max(1) || end > count.max(1) {
        return Err(Unverified::OutsideFile {
            line: finding.line,
            end: finding
                .end_line
                .map(|e| format!("-{e}"))
                .unwrap_or_default(),
            path: finding.path.clone(),
            count,
        });
    }
    let evidence = finding.evidence.clone().unwrap_or_default();
    let variants = evidence_variants(&evidence);
    if variants.is_empty() {
        return match finding.origin {
            // The tool layer's secrets carry no evidence on purpose.
            Origin::ToolLayer => Ok((None, 0)),
            Origin::Agent => Err(Unverified::NoEvidence),
        };
    }
    let lines: &[String] = canons
        .entry(finding.path.clone())
        .or_insert_with(|| lines.iter().map(|l| canon(l)).collect());
    let span = end.saturating_sub(finding.line) + 1;
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
    for cleaned in &variants {
        let wanted = canon(cleaned);
        let evidence_lines = u32::try_from(cleaned.lines().count()).unwrap_or(1).max(1);
        let max_len = span.max(evidence_lines) + 1;
        // The shortest span that holds the evidence, nearest the cited line.
        for len in 1..=max_len {
            for &start in &starts {
                let last = start + len - 1;
                if last > count {
                    continue;
                }
                let text: String = lines[(start - 1) as usize..last as usize].concat();
                if text.contains(&wanted) {
                    let first = canon(cleaned.lines().next().unwrap_or_default());
                    let occurrence = if first.is_empty() {
                        0
                    } else {
                        lines[..(start - 1) as usize]
                            .iter()
                            .filter(|l| l.contains(&first))
                            .count()
                    };
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
    }
    let prose = if variants.iter().all(|v| reads_as_prose(v)) {
        "; it reads as a description, not as code copied from the file"
    } else {
        ""
    };
    Err(Unverified::NotThere {
        path: finding.path.clone(),
        line: finding.line,
        prose,
    })
}

/// The evidence as code, in the forms worth matching: with everything
/// models add taken off, and (when that differs) with only the wrapping
/// taken off, so that code whose lines start with `12:` still matches.
/// Empty when nothing but wrapping and a location is quoted.
fn evidence_variants(evidence: &str) -> Vec<String> {
    let unwrapped = unwrap_quote(evidence);
    let bare = unwrap_quote(&strip_line_prefixes(&unwrapped));
    if canon(&bare).is_empty() {
        return Vec::new();
    }
    let kept = unwrap_quote(&strip_line_numbers(&unwrapped));
    if kept == bare || canon(&kept).is_empty() {
        vec![bare]
    } else {
        vec![bare, kept]
    }
}

/// The quote without ``` fences (and their language tag) and without one
/// pair of surrounding backticks or quotes.
fn unwrap_quote(evidence: &str) -> String {
    let mut t = evidence.trim();
    if let Some(rest) = t.strip_prefix("```") {
        t = match rest.split_once('\n') {
            // The first line is the language tag.
            Some((_, body)) => body,
            None => rest.trim_start_matches('`'),
        };
    }
    t = t.trim_end().trim_end_matches("```").trim();
    // A line in a code span of its own; a quote mark that opens and closes
    // a line may be code (a string in a list), so only whole quotes lose it.
    let lines: Vec<&str> = t
        .lines()
        .map(|line| strip_pair(line.trim(), false).unwrap_or(line))
        .collect();
    let joined = lines.join("\n");
    let joined = joined.trim();
    strip_pair(joined, true).unwrap_or(joined).to_string()
}

/// `text` without one pair of matching backticks (or, with `quotes`,
/// quote marks) around it.
fn strip_pair(text: &str, quotes: bool) -> Option<&str> {
    let first = text.chars().next()?;
    let opens = match first {
        '`' => true,
        '"' | '\'' | '“' | '‘' => quotes,
        _ => false,
    };
    if !opens || text.chars().count() < 2 {
        return None;
    }
    let last = text.chars().last()?;
    let closes = match first {
        '`' => last == '`',
        '“' => last == '”',
        '‘' => last == '’',
        _ => last == first,
    };
    closes.then(|| {
        let inner = &text[first.len_utf8()..text.len() - last.len_utf8()];
        inner.trim_matches('`')
    })
}

/// A location at the start of a line: `app.py:12:`, `src/a.rs:3-5:`,
/// `app.py:12:7:`, `app.py:12 ` (grep's and compilers' form).
static PATH_LINE_PREFIX: LazyLock<Regex> =
    LazyLock::new(|| builtin_regex(r#"^\s*[^\s:'"`()]+:\d+(?:-\d+)?(?::\d+)?(?::\s*|\s+)"#));
/// `line 12:`, `Lines 3-5:`, `L12:` at the start of a line.
static LINE_WORD_PREFIX: LazyLock<Regex> =
    LazyLock::new(|| builtin_regex(r"(?i)^\s*(?:lines?\s*|l)\d+(?:\s*[-–]\s*l?\d+)?\s*[:|]\s?"));
/// read_file's `    12\t` and the compact `12:`, `12|`, `12 |` forms.
static LINE_NUMBER_PREFIX: LazyLock<Regex> =
    LazyLock::new(|| builtin_regex(r"^\s*\d+(?:\t|\s*[:|]\s?)"));

/// Every line without the location and line-number prefixes models copy
/// from read_file, grep or their own habits.
fn strip_line_prefixes(evidence: &str) -> String {
    evidence
        .lines()
        .map(|line| {
            let mut l = line;
            for re in [&PATH_LINE_PREFIX, &LINE_WORD_PREFIX, &LINE_NUMBER_PREFIX] {
                if let Some(m) = re.find(l) {
                    l = &l[m.end()..];
                }
            }
            strip_pair(l.trim(), true).unwrap_or(l)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Text as matched: no whitespace, and every kind of quote the same, since
/// models swap `'`, `"` and backticks (and typographic quotes) when they
/// copy code.
fn canon(text: &str) -> String {
    squash(text)
        .chars()
        .map(|c| match c {
            '\'' | '`' | '“' | '”' | '‘' | '’' => '"',
            c => c,
        })
        .collect()
}

/// Whether a quote reads as a sentence about the code rather than code: a
/// few words, mostly letters, and none of code's punctuation.
fn reads_as_prose(text: &str) -> bool {
    let words = text.split_whitespace().count();
    words >= 5
        && !text.chars().any(|c| "(){}[];=<>_$#\\/".contains(c))
        && text.chars().filter(|c| c.is_alphabetic()).count() * 10
            >= text.chars().filter(|c| !c.is_whitespace()).count() * 8
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

    /// A built-in pattern that does not compile is a bug that fails loudly
    /// on first use: force every one here, so none can ship.
    #[test]
    fn every_builtin_pattern_compiles() {
        for re in [&PATH_LINE_PREFIX, &LINE_WORD_PREFIX, &LINE_NUMBER_PREFIX] {
            std::sync::LazyLock::force(re);
        }
    }
    use crate::model::findings::Severity;
    use crate::stages::inventory::{InventoryOptions, walk};
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
            cwe: crate::model::findings::FindingCwe::default(),
            origin: Origin::Agent,
            seen: None,
        }
    }

    const SQL_LINE: &str =
        r#"    cursor.execute("SELECT * FROM users WHERE name = '" + name + "'")"#;

    /// A repository with `app.py` whose line 12 is [`SQL_LINE`], and a
    /// report of `findings` by an agent that read it.
    fn sql_repo() -> (tempfile::TempDir, Inventory, ToolContext) {
        let dir = tempfile::tempdir().unwrap();
        let mut text = String::from("import db\n\n");
        for i in 3..=10 {
            text.push_str(&format!("x{i} = {i}\n"));
        }
        text.push_str("def find(cursor, name):\n");
        text.push_str(SQL_LINE);
        text.push_str(
            "\n    return cursor.fetchall()\nCODES = {\n    1: \"one\",\n    2: \"two\",\n}\n",
        );
        std::fs::write(dir.path().join("app.py"), text).unwrap();
        let inv = walk(dir.path(), &InventoryOptions::default()).unwrap();
        let tools =
            ToolContext::new(dir.path(), ToolLimits::default(), Arc::new(Redactor::new())).unwrap();
        (dir, inv, tools)
    }

    fn report_of(findings: Vec<Finding>) -> GroupReport {
        GroupReport {
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
            files_read: vec!["app.py".into()],
            lines_cut: Default::default(),
            usage: Default::default(),
            summary: String::new(),
            summary_parsed: true,
            rejected: vec![],
            parse: crate::model::findings::HowParsed::Clean,
            repair_turn: false,
            unparsed: vec![],
            carried: Default::default(),
            findings,
            leads: Vec::new(),
            fallback: None,
        }
    }

    fn check_one(line: u32, evidence: &str) -> Checked {
        let (_dir, inv, tools) = sql_repo();
        let checked = verify(
            &[report_of(vec![finding("app.py", line, Some(evidence))])],
            &inv,
            &tools,
        );
        checked.into_iter().next().unwrap()
    }

    #[test]
    fn the_broken_sql_block_is_recovered_and_verifies() {
        let text = r#"Found a SQL injection.
```json
{"findings": [{"path": "app.py", "line": 12, "severity": "high", "title": "SQL injection", "detail": "user input in SQL", "evidence": "app.py:12: 'SELECT * FROM users WHERE name = '" + name + "'"}]}
```
[TASK_COMPLETE]"#;
        let parsed = crate::model::findings::parse_report(text);
        assert_eq!(parsed.findings.len(), 1, "{parsed:?}");
        let (_dir, inv, tools) = sql_repo();
        let checked = verify(&[report_of(parsed.findings)], &inv, &tools);
        assert!(checked[0].verified, "{:?}", checked[0].note);
        assert_eq!(checked[0].finding.line, 12);
        assert_eq!(checked[0].note, None);
    }

    #[test]
    fn prefixes_backticks_fences_and_swapped_quotes_verify() {
        for evidence in [
            r#"app.py:12: cursor.execute("SELECT * FROM users WHERE name = '" + name + "'")"#,
            r#"app.py:12:cursor.execute("SELECT * FROM users WHERE name = '" + name + "'")"#,
            r#"app.py:11-12: def find(cursor, name): cursor.execute("SELECT"#,
            r#"12: cursor.execute("SELECT * FROM users WHERE name = '" + name + "'")"#,
            r#"L12: cursor.execute("SELECT * FROM users"#,
            r#"Line 12: cursor.execute("SELECT * FROM users"#,
            r#"12| cursor.execute("SELECT * FROM users"#,
            r#"    12	cursor.execute("SELECT * FROM users"#,
            r#"`cursor.execute("SELECT * FROM users WHERE name = '" + name + "'")`"#,
            r#"cursor.execute('SELECT * FROM users WHERE name = "' + name + '"')"#,
            "```python\ncursor.execute(\"SELECT * FROM users WHERE name = '\" + name + \"'\")\n```",
            "```\n    11\tdef find(cursor, name):\n    12\t    cursor.execute(\"SELECT * FROM users\n```",
            "app.py:11: def find(cursor, name):\napp.py:12:     cursor.execute(\"SELECT",
            r#""cursor.execute("SELECT * FROM users WHERE name = '" + name + "'")""#,
            "“SELECT * FROM users WHERE name = ‘”",
        ] {
            let c = check_one(12, evidence);
            assert!(c.verified, "{evidence:?}: {:?}", c.note);
        }
    }

    #[test]
    fn cleaned_evidence_still_corrects_the_line() {
        let c = check_one(10, "app.py:10: `cursor.execute('SELECT * FROM users`");
        assert!(c.verified, "{:?}", c.note);
        assert_eq!(c.finding.line, 12);
        assert_eq!(c.note.as_deref(), Some("line corrected from 10 to 12"));
    }

    #[test]
    fn code_whose_lines_start_with_numbers_still_verifies() {
        let c = check_one(15, "1: \"one\",\n2: \"two\",");
        assert!(c.verified, "{:?}", c.note);
        assert_eq!((c.finding.line, c.note), (15, None));
    }

    #[test]
    fn prose_about_the_code_stays_unverified_with_a_reason() {
        let c = check_one(12, "The SQL query is constructed directly from user input…");
        assert!(!c.verified);
        let note = c.note.unwrap_or_default();
        assert!(
            note.starts_with("the quoted evidence is not at app.py:12 (nor within 3 lines)"),
            "{note}"
        );
        assert!(note.contains("reads as a description"), "{note}");
        // Code that is not there is not called prose.
        let c = check_one(12, "cursor.execute(query)");
        assert!(!c.verified);
        assert!(!c.note.unwrap_or_default().contains("description"));
    }

    #[test]
    fn quotes_that_hold_only_wrapping_count_as_no_evidence() {
        for evidence in ["``", "```\n```", "app.py:12:", "\"\""] {
            let c = check_one(12, evidence);
            assert!(!c.verified, "{evidence:?}");
            assert!(
                c.note
                    .unwrap_or_default()
                    .starts_with("no evidence was quoted"),
                "{evidence:?}"
            );
        }
    }

    #[test]
    fn evidence_cleaning_never_panics() {
        let mut rng = fastrand::Rng::with_seed(7);
        let alphabet: Vec<char> = "`'\"“”‘’:|\t\n 0123Ll-app.py()é…".chars().collect();
        for _ in 0..3000 {
            let len = rng.usize(0..40);
            let text: String = (0..len)
                .map(|_| alphabet[rng.usize(0..alphabet.len())])
                .collect();
            for v in evidence_variants(&text) {
                assert!(!canon(&v).is_empty());
            }
            let _ = reads_as_prose(&text);
        }
    }

    #[test]
    fn a_failed_claim_in_a_file_of_its_group_at_a_real_line_is_located() {
        let (dir, inv, tools) = sql_repo();
        std::fs::write(dir.path().join("other.py"), "x = 1\n").unwrap();
        let inv2 = walk(dir.path(), &InventoryOptions::default()).unwrap();
        let mut report = report_of(vec![
            finding(
                "app.py",
                12,
                Some("app.py (12): the query concatenates input"),
            ),
            finding("app.py", 12, None),
            finding("app.py", 99, Some("nope")),
            finding("other.py", 1, Some("nope")),
            finding("app.py", 12, Some(SQL_LINE.trim())),
        ]);
        report.files = vec![crate::agents::subagent::FileHash {
            path: "app.py".into(),
            sha256: String::new(),
        }];
        let checked = verify(&[report], &inv2, &tools);
        let located: Vec<Option<&str>> = checked.iter().map(|c| c.located.as_deref()).collect();
        assert_eq!(
            located,
            vec![Some(SQL_LINE), Some(SQL_LINE), None, None, None],
            "past the end, outside the group, or verified: not located"
        );
        assert!(checked.iter().take(2).all(|c| !c.verified));
        drop(inv);
    }

    #[test]
    fn checks_paths_lines_and_evidence() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("a.rs"),
            // fanscan:ignore[secret/aws-access-key] test fixture: the redactor must catch it
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
            lines_cut: Default::default(),
            files_read: vec!["a.rs".into()],
            usage: Default::default(),
            summary: String::new(),
            summary_parsed: true,
            rejected: vec![],
            parse: crate::model::findings::HowParsed::Clean,
            repair_turn: false,
            unparsed: vec![],
            carried: Default::default(),
            findings: vec![
                finding("a.rs", 2, Some("let x =   y.unwrap();")),
                finding("a.rs", 1, Some("     2\tlet x = y.unwrap();")),
                finding("a.rs", 2, Some("let z = q.expect(\"nope\");")),
                finding("a.rs", 9, None),
                finding("b.rs", 1, None),
                finding("a.rs", 4, Some("k = \"[REDACTED:aws-access-key]\"")),
            ],
            leads: Vec::new(),
            fallback: None,
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
