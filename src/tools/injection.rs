//! Prompt-injection and deceptive-text detection, applied by the tool layer
//! to a file's text before any model sees it.
//!
//! Takes a file's path and text; gives the [`Hit`]s of the rule table in
//! `configs/injection.toml` (compiled into the binary, validated when the
//! [`Detector`] is built): text written to steer the model that reads the
//! file (`injection/ai-directed`, CWE-1427), bidirectional controls that
//! make a line display in another order than it is read
//! (`unicode/bidi-control`, the Trojan Source attack), invisible characters
//! in identifiers and strings (`unicode/invisible`) and tag characters that
//! hide ASCII (`unicode/tag-characters`). Deterministic and independent of
//! any model: a hit becomes a finding of origin `tool_layer` ([`Hit::finding`]).
//!
//! Phrases are matched over a normalised copy of the whole text (invisible
//! characters removed, tag characters decoded, comment leaders blanked) so
//! that a phrase hidden by a zero width space or wrapped over comment lines
//! still reads as one; positions are mapped back to the file's own line
//! and column. Descriptions never carry the raw invisible characters: they
//! are shown as `U+202E`.

use std::collections::BTreeSet;

use regex::Regex;
use regex::bytes::{Regex as BytesRegex, RegexBuilder, RegexSet, RegexSetBuilder};
use serde::Deserialize;

use crate::model::findings::{Finding, FindingCwe, Origin, Severity};

/// The built-in rule table.
pub(crate) const BUILTIN_RULES: &str = include_str!("../../configs/injection.toml");

/// The built-in table's name in error messages.
const BUILTIN_NAME: &str = "configs/injection.toml";

/// A rule table that cannot be used: names the table, the rule and the fix.
#[derive(Clone, Debug, thiserror::Error)]
pub(crate) enum InjectionRuleError {
    #[error("{source_name}: invalid injection rule table: {detail}")]
    Toml { source_name: String, detail: String },
    #[error("{source_name}: rule {id:?}: {problem}")]
    Rule {
        source_name: String,
        id: String,
        problem: String,
    },
    #[error("{source_name}: the phrase patterns do not compile together: {error}")]
    Set { source_name: String, error: String },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleFile {
    #[serde(default)]
    rule: Vec<RawRule>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    id: String,
    #[serde(default)]
    kind: Option<String>,
    severity: String,
    cwe: u32,
    title: String,
    message: String,
    patterns: Vec<String>,
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    negated_by: Option<String>,
    #[serde(default)]
    only_in: Option<String>,
    #[serde(default)]
    legitimate: Option<String>,
    #[serde(default)]
    legitimate_severity: Option<String>,
    #[serde(default)]
    string_severity: Option<String>,
}

/// Where a character rule reports a character at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OnlyIn {
    /// Next to an identifier's letter, digit or `_`, inside a quoted
    /// string, or in a run of four or more.
    IdentifiersAndStrings,
}

/// A context in which a character rule's characters are expected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Legitimate {
    /// Inside a quoted string (a line of a prose file) holding
    /// right-to-left letters, every embedding and isolate closed there; for
    /// a mark, which opens nothing, any line holding right-to-left letters.
    RightToLeftText,
    /// Next to a letter of a script that needs joiners or has no spaces,
    /// or (the zero width joiner) between two emoji.
    JoiningScriptOrEmoji,
    /// The tags of a subdivision flag: U+1F3F4, tag letters, U+E007F.
    EmojiTagSequence,
}

enum Matcher {
    /// The patterns live in the detector's phrase set and list.
    Phrases {
        allow: Vec<BytesRegex>,
        /// Matches a negation that ends where a hit starts.
        negated_by: Option<BytesRegex>,
    },
    Characters {
        class: Regex,
        only_in: Option<OnlyIn>,
        legitimate: Option<Legitimate>,
        legitimate_severity: Option<Severity>,
        /// The severity inside a string, when not the rule's.
        string_severity: Option<Severity>,
    },
}

struct Rule {
    id: String,
    severity: Severity,
    cwe: u32,
    title: String,
    message: String,
    matcher: Matcher,
}

/// The built-in rule table as a run holds it: its hash at once (store keys
/// and the run manifest need it), the compiled [`Detector`] when a sweep
/// first needs it. `plan` never does, and compiling the table was a large
/// share of its time; a unit test compiles the table on every change, and
/// should it ever fail at run time the group that needed it fails, naming
/// the table (a sweep is never skipped).
pub(crate) struct BuiltinTable {
    hash: String,
    compiled: std::sync::OnceLock<Result<Detector, InjectionRuleError>>,
}

impl BuiltinTable {
    /// `configs/injection.toml`, not compiled yet.
    pub(crate) fn new() -> Self {
        Self {
            hash: crate::util::sha256_hex(BUILTIN_RULES.as_bytes()),
            compiled: std::sync::OnceLock::new(),
        }
    }

    /// SHA-256 of the table's text.
    pub(crate) fn hash(&self) -> &str {
        &self.hash
    }

    /// The compiled table, compiled now on first use.
    pub(crate) fn detector(&self) -> Result<&Detector, &InjectionRuleError> {
        self.compiled.get_or_init(Detector::new).as_ref()
    }
}

/// The compiled rule table. Build once per run and share.
pub(crate) struct Detector {
    rules: Vec<Rule>,
    /// Every phrase pattern of every rule, in rule order: one pass over a
    /// file tells which patterns to run at all (most files match none).
    phrase_set: RegexSet,
    /// The same patterns one by one, with the index of their rule.
    phrases: Vec<(usize, BytesRegex)>,
}

/// One hit of one rule on one line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Hit {
    /// The rule's id, what `fanscan:ignore[...]` names.
    pub rule: String,
    pub severity: Severity,
    /// The CWE number (`1427` for CWE-1427).
    pub cwe: u32,
    /// 1-indexed line.
    pub line: u32,
    /// 1-indexed column, in characters.
    pub column: u32,
    /// The rule's title.
    pub title: String,
    /// What was found on this line; safe to print: control and invisible
    /// characters are written `U+XXXX`.
    pub description: String,
    /// The rule's message: the risk and the fix.
    pub advice: String,
}

impl Hit {
    /// The finding of the tool layer for this hit in the file at `path`.
    pub(crate) fn finding(&self, path: &str) -> Finding {
        Finding {
            path: path.to_string(),
            line: self.line,
            end_line: None,
            severity: self.severity,
            title: self.title.clone(),
            detail: format!(
                "Column {}: {}. {} (CWE-{})",
                self.column, self.description, self.advice, self.cwe
            ),
            evidence: None,
            rule: Some(self.rule.clone()),
            cwe: FindingCwe::number(self.cwe),
            origin: Origin::ToolLayer,
            seen: None,
        }
    }
}

impl Detector {
    /// The built-in rule table, `configs/injection.toml`.
    pub(crate) fn new() -> Result<Self, InjectionRuleError> {
        Self::parse(BUILTIN_NAME, BUILTIN_RULES)
    }

    /// Parses, validates and compiles a rule table in the format of
    /// `configs/injection.toml`; `source_name` names it in errors.
    pub(crate) fn parse(source_name: &str, text: &str) -> Result<Self, InjectionRuleError> {
        let file: RuleFile = toml::from_str(text).map_err(|e| InjectionRuleError::Toml {
            source_name: source_name.to_string(),
            detail: crate::util::toml_error(text, &e),
        })?;
        let mut rules = Vec::new();
        let mut phrases: Vec<(usize, BytesRegex)> = Vec::new();
        let mut sources: Vec<String> = Vec::new();
        let mut seen = BTreeSet::new();
        for raw in file.rule {
            let at = |problem: String| InjectionRuleError::Rule {
                source_name: source_name.to_string(),
                id: raw.id.clone(),
                problem,
            };
            check_id(&raw.id, &at)?;
            if !seen.insert(raw.id.clone()) {
                return Err(at("the id is used twice".into()));
            }
            let severity = check_fields(&raw, &at)?;
            let matcher = match raw.kind.as_deref().unwrap_or("phrases") {
                "phrases" => {
                    let (matcher, compiled) = phrase_matcher(&raw, &at)?;
                    for (pattern, regex) in compiled {
                        phrases.push((rules.len(), regex));
                        sources.push(pattern);
                    }
                    matcher
                }
                "characters" => character_matcher(&raw, &at)?,
                other => {
                    return Err(at(format!(
                        "kind {other:?} is not one of phrases, characters"
                    )));
                }
            };
            rules.push(Rule {
                id: raw.id,
                severity,
                cwe: raw.cwe,
                title: raw.title,
                message: raw.message,
                matcher,
            });
        }
        let phrase_set = RegexSetBuilder::new(&sources)
            .unicode(false)
            .case_insensitive(true)
            .multi_line(true)
            .build()
            .map_err(|e| InjectionRuleError::Set {
                source_name: source_name.to_string(),
                error: e.to_string(),
            })?;
        Ok(Self {
            rules,
            phrase_set,
            phrases,
        })
    }

    /// The hits in `text`, the content of the file at repo-relative
    /// `path`: at most one per rule and line (the first), sorted by line,
    /// column and rule.
    pub(crate) fn scan(&self, path: &str, text: &str) -> Vec<Hit> {
        let lines = LineIndex::new(text);
        let mut hits = Vec::new();
        self.scan_phrases(text, &lines, &mut hits);
        if !text.is_ascii() {
            let kind = FileKind::of(path);
            for rule in &self.rules {
                if let Matcher::Characters { .. } = rule.matcher {
                    scan_characters(rule, text, &lines, kind, &mut hits);
                }
            }
        }
        hits.sort_by(|a, b| (a.line, a.column, &a.rule).cmp(&(b.line, b.column, &b.rule)));
        let mut seen = BTreeSet::new();
        hits.retain(|h| seen.insert((h.rule.clone(), h.line)));
        hits
    }

    fn scan_phrases(&self, text: &str, lines: &LineIndex, hits: &mut Vec<Hit>) {
        let norm = Normalized::new(text);
        let matched = self.phrase_set.matches(&norm.text);
        for index in matched.iter() {
            let Some((rule_index, regex)) = self.phrases.get(index) else {
                continue;
            };
            let Some(rule) = self.rules.get(*rule_index) else {
                continue;
            };
            let Matcher::Phrases { allow, negated_by } = &rule.matcher else {
                continue;
            };
            for caps in regex.captures_iter(&norm.text) {
                let Some(span) = caps.name("hit").or_else(|| caps.get(0)) else {
                    continue;
                };
                if allowed(allow, &norm.text, span.start(), span.end())
                    || negated(negated_by.as_ref(), &norm.text, span.start())
                {
                    continue;
                }
                let at = norm.original(span.start());
                let (line, column) = lines.position(text, at);
                let excerpt = excerpt(&String::from_utf8_lossy(span.as_bytes()), 80);
                hits.push(Hit {
                    rule: rule.id.clone(),
                    severity: rule.severity,
                    cwe: rule.cwe,
                    line,
                    column,
                    title: rule.title.clone(),
                    description: format!("\"{excerpt}\" speaks to the model reading the file"),
                    advice: rule.message.clone(),
                });
            }
        }
    }
}

impl std::fmt::Debug for Detector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Detector")
            .field(
                "rules",
                &self.rules.iter().map(|r| &r.id).collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// Names the rule at fault in an error.
type At<'a> = &'a dyn Fn(String) -> InjectionRuleError;

/// A rule id is `<family>/<name>` in lowercase letters, digits and `-`.
fn check_id(id: &str, at: At<'_>) -> Result<(), InjectionRuleError> {
    let (family, name) = id.split_once('/').unwrap_or_default();
    let well_formed = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    };
    if !well_formed(family) || !well_formed(name) {
        return Err(at(
            "the id must be \"<family>/<name>\" in lowercase letters, digits and -".into(),
        ));
    }
    Ok(())
}

/// The fields every rule has: its severity, CWE, title, message, patterns.
fn check_fields(raw: &RawRule, at: At<'_>) -> Result<Severity, InjectionRuleError> {
    let severity = parse_severity(&raw.severity).map_err(|p| at(format!("severity {p}")))?;
    if raw.cwe == 0 {
        return Err(at("cwe must be a CWE number, e.g. 1427".into()));
    }
    if raw.title.trim().is_empty() || raw.message.trim().is_empty() {
        return Err(at("title and message must not be empty".into()));
    }
    if raw.patterns.is_empty() {
        return Err(at("patterns is empty: give at least one".into()));
    }
    Ok(severity)
}

/// A phrase rule's matcher, and its patterns compiled (each with its
/// source) for the table's phrase set.
fn phrase_matcher(
    raw: &RawRule,
    at: At<'_>,
) -> Result<(Matcher, Vec<(String, BytesRegex)>), InjectionRuleError> {
    let mut compiled = Vec::new();
    for (key, given) in [
        ("only_in", raw.only_in.is_some()),
        ("legitimate", raw.legitimate.is_some()),
        ("legitimate_severity", raw.legitimate_severity.is_some()),
        ("string_severity", raw.string_severity.is_some()),
    ] {
        if given {
            return Err(at(format!(
                "{key} is for kind = \"characters\"; a phrase rule has allow"
            )));
        }
    }
    for pattern in &raw.patterns {
        let regex =
            phrase_regex(pattern).map_err(|e| at(format!("invalid pattern {pattern:?}: {e}")))?;
        if regex.is_match(b"") || regex.is_match(b" \n") {
            return Err(at(format!(
                "pattern {pattern:?} matches empty text: it would hit every file"
            )));
        }
        compiled.push((pattern.clone(), regex));
    }
    let allow = raw
        .allow
        .iter()
        .map(|p| phrase_regex(p).map_err(|e| at(format!("invalid allow {p:?}: {e}"))))
        .collect::<Result<Vec<_>, _>>()?;
    let negated_by = raw
        .negated_by
        .as_deref()
        .map(|p| {
            phrase_regex(&format!("(?:{p})[ \\t]*\\z"))
                .map_err(|e| at(format!("invalid negated_by {p:?}: {e}")))
        })
        .transpose()?;
    Ok((Matcher::Phrases { allow, negated_by }, compiled))
}

/// A character rule's matcher: its class and the contexts it knows.
fn character_matcher(raw: &RawRule, at: At<'_>) -> Result<Matcher, InjectionRuleError> {
    if !raw.allow.is_empty() || raw.negated_by.is_some() {
        return Err(at(
            "allow and negated_by are for phrase rules; a character rule has legitimate".into(),
        ));
    }
    let joined = raw
        .patterns
        .iter()
        .map(|p| format!("(?:{p})"))
        .collect::<Vec<_>>()
        .join("|");
    let class = Regex::new(&joined).map_err(|e| at(format!("invalid patterns: {e}")))?;
    let ordinary = (0x20u8..=0x7e).chain([b'\t', b'\n', b'\r']).map(char::from);
    for c in ordinary.chain(std::iter::once('é')) {
        if class.is_match(c.encode_utf8(&mut [0; 4])) {
            return Err(at(format!(
                "the patterns match the ordinary character {c:?}: a character rule names only unusual characters"
            )));
        }
    }
    let only_in = match raw.only_in.as_deref() {
        None => None,
        Some("identifiers-and-strings") => Some(OnlyIn::IdentifiersAndStrings),
        Some(other) => {
            return Err(at(format!(
                "only_in {other:?} is not \"identifiers-and-strings\""
            )));
        }
    };
    let legitimate = match raw.legitimate.as_deref() {
        None => None,
        Some("right-to-left-text") => Some(Legitimate::RightToLeftText),
        Some("joining-script-or-emoji") => Some(Legitimate::JoiningScriptOrEmoji),
        Some("emoji-tag-sequence") => Some(Legitimate::EmojiTagSequence),
        Some(other) => {
            return Err(at(format!(
                "legitimate {other:?} is not one of right-to-left-text, joining-script-or-emoji, emoji-tag-sequence"
            )));
        }
    };
    let legitimate_severity = match raw.legitimate_severity.as_deref() {
        None => None,
        Some(_) if legitimate.is_none() => {
            return Err(at(
                "legitimate_severity needs legitimate (the context it applies to)".into(),
            ));
        }
        Some(s) => Some(parse_severity(s).map_err(|p| at(format!("legitimate_severity {p}")))?),
    };
    let string_severity = match raw.string_severity.as_deref() {
        None => None,
        Some(_) if only_in.is_none() => {
            return Err(at(
                "string_severity needs only_in (it tells strings apart)".into()
            ));
        }
        Some(s) => Some(parse_severity(s).map_err(|p| at(format!("string_severity {p}")))?),
    };
    Ok(Matcher::Characters {
        class,
        only_in,
        legitimate,
        legitimate_severity,
        string_severity,
    })
}

/// A phrase pattern compiled as the table's header says: ASCII-only,
/// case-insensitive, multi-line. ASCII `\b` and `\w` also keep the search
/// on the fast automaton for files that hold any non-ASCII text.
fn phrase_regex(pattern: &str) -> Result<BytesRegex, regex::Error> {
    RegexBuilder::new(pattern)
        .unicode(false)
        .case_insensitive(true)
        .multi_line(true)
        .build()
}

/// A severity in the table that is none of the five.
#[derive(Debug, thiserror::Error)]
#[error("{0:?} is not one of critical, high, medium, low, info")]
struct UnknownSeverity(String);

fn parse_severity(text: &str) -> Result<Severity, UnknownSeverity> {
    Severity::parse(text).ok_or_else(|| UnknownSeverity(text.to_string()))
}

/// Whether the hit `start..end` lies inside a match of an `allow` pattern
/// on its own line.
fn allowed(allow: &[BytesRegex], text: &[u8], start: usize, end: usize) -> bool {
    if allow.is_empty() {
        return false;
    }
    let line_start = text
        .get(..start)
        .and_then(|t| t.iter().rposition(|&b| b == b'\n'))
        .map_or(0, |p| p + 1);
    let line_end = text
        .get(start..)
        .and_then(|t| t.iter().position(|&b| b == b'\n'))
        .map_or(text.len(), |p| start + p);
    let Some(line) = text.get(line_start..line_end) else {
        return false;
    };
    allow.iter().any(|a| {
        a.find_iter(line)
            .any(|m| line_start + m.start() <= start && end <= line_start + m.end())
    })
}

/// Whether the hit starting at `start` follows a negation on its line.
fn negated(negated_by: Option<&BytesRegex>, text: &[u8], start: usize) -> bool {
    let Some(negation) = negated_by else {
        return false;
    };
    let before = text.get(..start).unwrap_or_default();
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |p| p + 1);
    before
        .get(line_start..)
        .is_some_and(|line| negation.is_match(line))
}

/// Byte offsets of line starts, for 1-indexed lines and columns.
struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    fn new(text: &str) -> Self {
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Self { starts }
    }

    /// The 0-indexed line holding byte `at`, and its start.
    fn line_of(&self, at: usize) -> (usize, usize) {
        let index = self.starts.partition_point(|&s| s <= at).saturating_sub(1);
        (index, self.starts.get(index).copied().unwrap_or(0))
    }

    /// The text of the 0-indexed line `index`, without its line break.
    fn line<'t>(&self, text: &'t str, index: usize) -> &'t str {
        let start = self.starts.get(index).copied().unwrap_or(text.len());
        let end = self.starts.get(index + 1).map_or(text.len(), |e| e - 1);
        let line = text.get(start..end.max(start)).unwrap_or_default();
        line.strip_suffix('\r').unwrap_or(line)
    }

    /// The 1-indexed line and column (in characters) of byte `at`.
    fn position(&self, text: &str, at: usize) -> (u32, u32) {
        let (index, start) = self.line_of(at);
        let column = text.get(start..at).map_or(0, |t| t.chars().count()) + 1;
        (to_u32(index + 1), to_u32(column))
    }
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The text the phrase patterns see, and the way back to the file's bytes.
struct Normalized {
    text: Vec<u8>,
    /// `(normalised offset, original offset)` where the distance between
    /// the two changes; a byte maps through the last segment at or before it.
    segments: Vec<(usize, usize)>,
}

impl Normalized {
    fn new(original: &str) -> Self {
        let mut n = Self {
            text: Vec::with_capacity(original.len()),
            segments: vec![(0, 0)],
        };
        // Text between the characters that change is copied in one piece.
        let mut copied = 0;
        if !original.is_ascii() {
            for (at, c) in original.char_indices() {
                if u32::from(c) < 0xA0 {
                    continue;
                }
                let code = u32::from(c);
                let mut tag = [0u8];
                let replacement: &[u8] = if (0xE0020..=0xE007E).contains(&code) {
                    // A tag character reads as the ASCII it mirrors.
                    tag[0] = u8::try_from(code - 0xE0000).unwrap_or(b'?');
                    &tag
                } else if is_unicode_space(c) {
                    b" "
                } else if is_hidden(c) {
                    b""
                } else {
                    continue;
                };
                let unchanged = original.as_bytes().get(copied..at).unwrap_or_default();
                n.push(unchanged, copied);
                n.push(replacement, at);
                copied = at + c.len_utf8();
            }
        }
        n.push(
            original.as_bytes().get(copied..).unwrap_or_default(),
            copied,
        );
        blank_comment_leaders(&mut n.text);
        n
    }

    /// Appends `bytes`, the text at original byte `at` or what the
    /// character there became.
    fn push(&mut self, bytes: &[u8], at: usize) {
        if bytes.is_empty() {
            return;
        }
        let here = self.text.len();
        let (norm, orig) = self.segments.last().copied().unwrap_or((0, 0));
        if orig + (here - norm) != at {
            self.segments.push((here, at));
        }
        self.text.extend_from_slice(bytes);
    }

    /// The original byte offset of normalised byte `at`.
    fn original(&self, at: usize) -> usize {
        let index = self
            .segments
            .partition_point(|&(n, _)| n <= at)
            .saturating_sub(1);
        let (norm, orig) = self.segments.get(index).copied().unwrap_or((0, 0));
        orig + (at - norm)
    }
}

/// Blanks, with spaces of the same length, the comment leaders a line
/// starts with (`//`, `///`, `//!`, `#`, `--`, `;`, `%`, `*`, `/*`,
/// `<!--`, `>`), so a phrase wrapped over comment lines reads as one and
/// `^` finds a turn header inside a comment.
fn blank_comment_leaders(text: &mut [u8]) {
    let mut line_start = 0;
    while line_start < text.len() {
        let line_end = text
            .get(line_start..)
            .and_then(|t| t.iter().position(|&b| b == b'\n'))
            .map_or(text.len(), |p| line_start + p);
        let mut i = line_start;
        loop {
            while text.get(i).is_some_and(|b| *b == b' ' || *b == b'\t') {
                i += 1;
            }
            let rest = text.get(i..line_end).unwrap_or_default();
            let leader = if rest.starts_with(b"<!--") {
                4
            } else if rest.starts_with(b"--") {
                rest.iter().take_while(|&&b| b == b'-').count()
            } else if rest
                .first()
                .is_some_and(|b| matches!(b, b'/' | b'#' | b';' | b'%' | b'*' | b'>'))
            {
                rest.iter()
                    .take_while(|&&b| matches!(b, b'/' | b'#' | b';' | b'%' | b'*' | b'>' | b'!'))
                    .count()
            } else {
                0
            };
            if leader == 0 {
                break;
            }
            for b in text.iter_mut().skip(i).take(leader) {
                *b = b' ';
            }
            i += leader;
        }
        line_start = line_end + 1;
    }
}

/// What one character of a character rule comes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    Anywhere,
    Identifier,
    String,
    /// In a run of this many characters of the rule (hidden data).
    Run(usize),
    Legitimate(Legitimate),
}

fn scan_characters(
    rule: &Rule,
    text: &str,
    lines: &LineIndex,
    kind: FileKind,
    hits: &mut Vec<Hit>,
) {
    let Matcher::Characters {
        class,
        only_in,
        legitimate,
        legitimate_severity,
        string_severity,
    } = &rule.matcher
    else {
        return;
    };
    let found: Vec<(usize, char)> = class
        .find_iter(text)
        .flat_map(|m| {
            m.as_str()
                .char_indices()
                .map(move |(i, c)| (m.start() + i, c))
        })
        .collect();
    let run_of = runs(&found);
    // Per line: (severity, column, place, characters) of what is reported.
    let mut per_line: Vec<LineHit> = Vec::new();
    for (k, &(at, c)) in found.iter().enumerate() {
        if c == '\u{FEFF}' && at == 0 {
            continue; // A byte order mark.
        }
        let (index, start) = lines.line_of(at);
        let line = lines.line(text, index);
        let offset = at - start;
        let (run_start, run_len) = run_of.get(k).copied().unwrap_or((k, 1));
        let seen = Seen {
            c,
            line,
            offset,
            before: line.get(..offset).and_then(|l| l.chars().next_back()),
            after: line.get(offset..).and_then(|l| l.chars().nth(1)),
            run: found
                .iter()
                .skip(run_start)
                .take(run_len)
                .map(|&(_, c)| c)
                .collect(),
            run_before: found
                .get(run_start)
                .and_then(|&(a, _)| text.get(..a))
                .and_then(|t| t.chars().next_back()),
        };
        let Some(place) = seen.place(*only_in, *legitimate, kind) else {
            continue;
        };
        let severity = match place {
            Place::Legitimate(_) => match legitimate_severity {
                Some(s) => *s,
                None => continue,
            },
            Place::String => string_severity.unwrap_or(rule.severity),
            Place::Anywhere | Place::Identifier | Place::Run(_) => rule.severity,
        };
        let column = to_u32(line.get(..offset).map_or(0, |l| l.chars().count()) + 1);
        add_to_line(&mut per_line, (index, severity, column, place, c));
    }
    for (index, severity, column, place, chars) in per_line {
        let line = lines.line(text, index);
        hits.push(Hit {
            rule: rule.id.clone(),
            severity,
            cwe: rule.cwe,
            line: to_u32(index + 1),
            column,
            title: rule.title.clone(),
            description: describe(&chars, place, line),
            advice: rule.message.clone(),
        });
    }
}

/// Adds a character to its line's hit: the most severe place on a line is
/// the one reported, with every character of that severity.
fn add_to_line(
    per_line: &mut Vec<LineHit>,
    (index, severity, column, place, c): (usize, Severity, u32, Place, char),
) {
    match per_line.last_mut() {
        Some((i, s, col, p, chars)) if *i == index => {
            if severity > *s {
                (*s, *col, *p) = (severity, column, place);
                chars.clear();
            }
            if severity == *s && !chars.contains(&c) {
                chars.push(c);
            }
        }
        _ => per_line.push((index, severity, column, place, vec![c])),
    }
}

/// What a line reports of a character rule: its line index, severity,
/// column, place and characters.
type LineHit = (usize, Severity, u32, Place, Vec<char>);

/// Runs of consecutive characters of the rule, for each one found: the
/// run's first index and its length.
fn runs(found: &[(usize, char)]) -> Vec<(usize, usize)> {
    let mut run_of = vec![(0usize, 0usize); found.len()];
    let mut i = 0;
    while i < found.len() {
        let mut j = i + 1;
        while let (Some(&(a, ca)), Some(&(b, _))) = (found.get(j - 1), found.get(j)) {
            if a + ca.len_utf8() != b {
                break;
            }
            j += 1;
        }
        for slot in run_of.iter_mut().take(j).skip(i) {
            *slot = (i, j - i);
        }
        i = j;
    }
    run_of
}

/// One character of a character rule where it was found.
struct Seen<'a> {
    c: char,
    /// Its line, and its byte offset there.
    line: &'a str,
    offset: usize,
    before: Option<char>,
    after: Option<char>,
    /// The run of the rule's characters it is in.
    run: Vec<char>,
    /// The character before that run.
    run_before: Option<char>,
}

impl Seen<'_> {
    /// What it comes to; `None` when it is not reported at all.
    fn place(
        &self,
        only_in: Option<OnlyIn>,
        legitimate: Option<Legitimate>,
        kind: FileKind,
    ) -> Option<Place> {
        let (c, line, offset, before, after) =
            (self.c, self.line, self.offset, self.before, self.after);
        let legit = legitimate.filter(|l| match l {
            Legitimate::RightToLeftText => right_to_left_text(c, line, offset, kind),
            Legitimate::JoiningScriptOrEmoji => joined(c, before, after),
            Legitimate::EmojiTagSequence => flag_tags(&self.run, self.run_before),
        });
        if self.run.len() >= 4 && only_in.is_some() {
            return Some(Place::Run(self.run.len()));
        }
        if let Some(l) = legit {
            return Some(Place::Legitimate(l));
        }
        match only_in {
            None => Some(Place::Anywhere),
            Some(OnlyIn::IdentifiersAndStrings) => {
                // A Hangul filler is a letter: it is the identifier, and in
                // a string it shows as a blank, not nothing.
                let filler = c.is_alphabetic();
                let word = filler || before.is_some_and(is_ident) || after.is_some_and(is_ident);
                if string_around(line, offset, kind).is_some() {
                    (!filler).then_some(Place::String)
                } else if !kind.prose && word {
                    Some(Place::Identifier)
                } else {
                    None
                }
            }
        }
    }
}

/// The description of a character hit: the characters by code point and
/// name, where they are, and for tag characters the text they hide.
fn describe(chars: &[char], place: Place, line: &str) -> String {
    let mut named: Vec<String> = chars
        .iter()
        .filter(|c| !is_tag(**c))
        .take(4)
        .map(|&c| match char_name(c) {
            Some(name) => format!("U+{:04X} {name}", u32::from(c)),
            None => format!("U+{:04X}", u32::from(c)),
        })
        .collect();
    if chars.iter().filter(|c| !is_tag(**c)).count() > 4 {
        named.push("and more".into());
    }
    let tags: String = line
        .chars()
        .filter(|c| (0xE0020..=0xE007E).contains(&u32::from(*c)))
        .filter_map(|c| char::from_u32(u32::from(c) - 0xE0000))
        .collect();
    let mut text = named.join(", ");
    if chars.iter().any(|c| is_tag(*c)) {
        if !text.is_empty() {
            text.push_str("; ");
        }
        text.push_str(&format!(
            "tag characters hiding the text \"{}\"",
            excerpt(&tags, 80)
        ));
    }
    let place = match place {
        Place::Anywhere => String::new(),
        Place::Identifier => " inside an identifier".into(),
        Place::String => " inside a string".into(),
        Place::Run(n) => format!(" in a run of {n} invisible characters (hidden data)"),
        Place::Legitimate(Legitimate::RightToLeftText) => {
            " in right-to-left text with every embedding and isolate closed: likely legitimate"
                .into()
        }
        Place::Legitimate(Legitimate::JoiningScriptOrEmoji) => {
            " in a joining script or an emoji sequence: likely legitimate".into()
        }
        Place::Legitimate(Legitimate::EmojiTagSequence) => {
            " in a subdivision flag emoji: likely legitimate".into()
        }
    };
    format!("{text}{place}")
}

fn char_name(c: char) -> Option<&'static str> {
    Some(match c {
        '\u{061C}' => "ARABIC LETTER MARK",
        '\u{115F}' => "HANGUL CHOSEONG FILLER",
        '\u{1160}' => "HANGUL JUNGSEONG FILLER",
        '\u{180E}' => "MONGOLIAN VOWEL SEPARATOR",
        '\u{200B}' => "ZERO WIDTH SPACE",
        '\u{200C}' => "ZERO WIDTH NON-JOINER",
        '\u{200D}' => "ZERO WIDTH JOINER",
        '\u{200E}' => "LEFT-TO-RIGHT MARK",
        '\u{200F}' => "RIGHT-TO-LEFT MARK",
        '\u{202A}' => "LEFT-TO-RIGHT EMBEDDING",
        '\u{202B}' => "RIGHT-TO-LEFT EMBEDDING",
        '\u{202C}' => "POP DIRECTIONAL FORMATTING",
        '\u{202D}' => "LEFT-TO-RIGHT OVERRIDE",
        '\u{202E}' => "RIGHT-TO-LEFT OVERRIDE",
        '\u{2060}' => "WORD JOINER",
        '\u{2061}' => "FUNCTION APPLICATION",
        '\u{2062}' => "INVISIBLE TIMES",
        '\u{2063}' => "INVISIBLE SEPARATOR",
        '\u{2064}' => "INVISIBLE PLUS",
        '\u{2066}' => "LEFT-TO-RIGHT ISOLATE",
        '\u{2067}' => "RIGHT-TO-LEFT ISOLATE",
        '\u{2068}' => "FIRST STRONG ISOLATE",
        '\u{2069}' => "POP DIRECTIONAL ISOLATE",
        '\u{3164}' => "HANGUL FILLER",
        '\u{FEFF}' => "ZERO WIDTH NO-BREAK SPACE (byte order mark)",
        '\u{FFA0}' => "HALFWIDTH HANGUL FILLER",
        _ => return None,
    })
}

/// `text` with whitespace runs as one space, control and invisible
/// characters written `U+XXXX`, cut at `max` characters.
fn excerpt(text: &str, max: usize) -> String {
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out = String::new();
    for (n, c) in words.chars().enumerate() {
        if n == max {
            out.push('…');
            break;
        }
        if c.is_control() || is_hidden(c) || is_tag(c) {
            out.push_str(&format!("U+{:04X}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

fn is_tag(c: char) -> bool {
    (0xE0000..=0xE007F).contains(&u32::from(c))
}

/// Characters that render as nothing (format characters, joiners, marks,
/// variation selectors, fillers, tags): dropped from the text phrases are
/// matched in, escaped in descriptions.
fn is_hidden(c: char) -> bool {
    matches!(
        u32::from(c),
        0xAD | 0x34F
            | 0x61C
            | 0x115F
            | 0x1160
            | 0x17B4
            | 0x17B5
            | 0x180B..=0x180F
            | 0x200B..=0x200F
            | 0x202A..=0x202E
            | 0x2060..=0x206F
            | 0x3164
            | 0xFE00..=0xFE0F
            | 0xFEFF
            | 0xFFA0
            | 0xFFF9..=0xFFFB
            | 0x1D173..=0x1D17A
            | 0xE0000..=0xE0FFF
    )
}

/// Spaces other than ASCII ones: a phrase may be spaced with them.
fn is_unicode_space(c: char) -> bool {
    matches!(
        u32::from(c),
        0xA0 | 0x1680 | 0x2000..=0x200A | 0x2028 | 0x2029 | 0x202F | 0x205F | 0x3000
    )
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

/// What the character rules need to know of a file's language.
#[derive(Clone, Copy, Debug)]
struct FileKind {
    /// Documentation or translations: a line of right-to-left text needs
    /// no string around it, and a character next to a word is not in an
    /// identifier.
    prose: bool,
    /// `'` quotes one character (`'x'`, `'\n'`), as in Rust, C or Java,
    /// and is otherwise a lifetime or an apostrophe, not a string.
    char_quotes: bool,
}

impl FileKind {
    fn of(path: &str) -> Self {
        let language = crate::util::language::language_of(path);
        Self {
            prose: is_prose(path),
            char_quotes: matches!(
                language,
                Some(
                    "rust"
                        | "c"
                        | "cpp"
                        | "csharp"
                        | "java"
                        | "kotlin"
                        | "go"
                        | "scala"
                        | "haskell"
                        | "ocaml"
                        | "zig"
                        | "objective-c"
                )
            ),
        }
    }
}

/// Documentation and translations, and files without a language or an
/// extension (`LICENSE`, `README`).
fn is_prose(path: &str) -> bool {
    let ext = crate::util::language::extension(path);
    matches!(
        ext.as_str(),
        "md" | "markdown"
            | "mdx"
            | "txt"
            | "text"
            | "rst"
            | "adoc"
            | "asciidoc"
            | "po"
            | "pot"
            | "xliff"
            | "xlf"
            | "strings"
            | "tex"
    ) || (crate::util::language::language_of(path).is_none() && ext.is_empty())
}

/// The quoted string on `line` around byte `at`, as `start..end` of its
/// content (to the end of the line if it is not closed there). Quotes are
/// `"`, `'` and `` ` ``, with backslash escapes; where `'` quotes one
/// character, only a character literal opens with it.
fn string_around(line: &str, at: usize, kind: FileKind) -> Option<(usize, usize)> {
    let mut open: Option<(char, usize)> = None;
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        match open {
            Some((quote, start)) => {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == quote {
                    if (start..i).contains(&at) {
                        return Some((start, i));
                    }
                    open = None;
                }
            }
            None => {
                if i > at {
                    return None;
                }
                let opens = match c {
                    '"' | '`' => true,
                    '\'' => {
                        !kind.char_quotes || char_literal(line.get(i + 1..).unwrap_or_default())
                    }
                    _ => false,
                };
                if opens {
                    open = Some((c, i + c.len_utf8()));
                }
            }
        }
    }
    open.filter(|&(_, start)| at >= start)
        .map(|(_, start)| (start, line.len()))
}

/// Whether `rest`, what follows a `'`, is the rest of a character
/// literal: one character and the closing quote, or an escape.
fn char_literal(rest: &str) -> bool {
    let mut chars = rest.chars();
    match chars.next() {
        Some('\\') => chars.take(12).any(|c| c == '\''),
        Some(_) => chars.next() == Some('\''),
        None => false,
    }
}

/// Whether the bidi control `c` at byte `at` of `line` sits in
/// right-to-left text whose embeddings, overrides and isolates all close
/// there: its string, or its line in prose. A mark (LRM, RLM, ALM) opens
/// nothing: in code, right-to-left letters anywhere on its line will do.
fn right_to_left_text(c: char, line: &str, at: usize, kind: FileKind) -> bool {
    let mark = matches!(c, '\u{200E}' | '\u{200F}' | '\u{061C}');
    let container = match string_around(line, at, kind) {
        Some((start, end)) => line.get(start..end),
        None if kind.prose || mark => Some(line),
        None => None,
    };
    container.is_some_and(|t| t.chars().any(is_rtl_letter) && balanced(t))
}

fn is_rtl_letter(c: char) -> bool {
    c.is_alphabetic()
        && matches!(
            u32::from(c),
            0x0590..=0x08FF | 0xFB1D..=0xFDFF | 0xFE70..=0xFEFC | 0x10800..=0x10FFF | 0x1E800..=0x1EFFF
        )
}

/// Every embedding and override closed by a PDF, every isolate by a PDI,
/// in order, and nothing closed that was not opened.
fn balanced(text: &str) -> bool {
    let mut stack = Vec::new();
    for c in text.chars() {
        match c {
            '\u{202A}' | '\u{202B}' | '\u{202D}' | '\u{202E}' => stack.push('e'),
            '\u{2066}'..='\u{2068}' => stack.push('i'),
            '\u{202C}' if stack.pop() != Some('e') => return false,
            '\u{2069}' if stack.pop() != Some('i') => return false,
            _ => {}
        }
    }
    stack.is_empty()
}

/// Whether the invisible character `c` between `before` and `after` does
/// the job it exists for: a joiner or non-joiner in a joining script, a
/// zero width space in a script without spaces, a joiner inside an emoji
/// sequence, a Hangul filler in Hangul, a vowel separator in Mongolian.
fn joined(c: char, before: Option<char>, after: Option<char>) -> bool {
    let either = |f: fn(char) -> bool| before.is_some_and(f) || after.is_some_and(f);
    match c {
        '\u{200B}' | '\u{200C}' => either(is_complex_script),
        '\u{200D}' => {
            either(is_complex_script)
                || (before.is_some_and(is_emoji) && after.is_some_and(is_emoji))
        }
        '\u{115F}' | '\u{1160}' | '\u{3164}' | '\u{FFA0}' => either(is_hangul),
        '\u{180E}' => either(|c| ('\u{1800}'..='\u{18AF}').contains(&c)),
        _ => false,
    }
}

/// Scripts that join letters (Arabic, Syriac, N'Ko, the Indic scripts,
/// Mongolian, Old Turkic, Adlam) or write without spaces (Thai, Lao, Khmer,
/// Myanmar, Tibetan, CJK), and the other right-to-left scripts and Hangul.
fn is_complex_script(c: char) -> bool {
    matches!(
        u32::from(c),
        0x0590..=0x08FF
            | 0x0900..=0x0DFF
            | 0x0E00..=0x0FFF
            | 0x1000..=0x109F
            | 0x1780..=0x18AF
            | 0x1900..=0x1BFF
            | 0x2E80..=0x2FFF
            | 0x3000..=0x9FFF
            | 0xA960..=0xA97F
            | 0xA980..=0xA9FF
            | 0xAA60..=0xAA7F
            | 0xAC00..=0xD7FF
            | 0xF900..=0xFAFF
            | 0xFB1D..=0xFDFF
            | 0xFE70..=0xFEFC
            | 0xFF00..=0xFFEF
            | 0x10800..=0x10FFF
            | 0x11000..=0x11FFF
            | 0x1E800..=0x1EFFF
            | 0x20000..=0x3FFFF
    ) || is_hangul(c)
}

fn is_hangul(c: char) -> bool {
    matches!(
        u32::from(c),
        0x1100..=0x11FF | 0x3130..=0x318F | 0xA960..=0xA97F | 0xAC00..=0xD7FF
    )
}

/// Pictographs and what emoji sequences join to them: variation selector
/// 16, skin tones, the keycap, gender and profession signs.
fn is_emoji(c: char) -> bool {
    matches!(
        u32::from(c),
        0xA9 | 0xAE
            | 0x203C
            | 0x2049
            | 0x20E3
            | 0x2122
            | 0x2139
            | 0x2190..=0x21FF
            | 0x2300..=0x23FF
            | 0x24C2
            | 0x25A0..=0x27BF
            | 0x2934
            | 0x2935
            | 0x2B00..=0x2BFF
            | 0x3030
            | 0x303D
            | 0x3297
            | 0x3299
            | 0xFE0F
            | 0x1F000..=0x1FAFF
    )
}

/// Whether a run of tag characters is a subdivision flag's: right after
/// U+1F3F4 WAVING BLACK FLAG, lowercase tag letters or digits, closed by
/// U+E007F CANCEL TAG.
fn flag_tags(run: &[char], before: Option<char>) -> bool {
    let Some((last, tags)) = run.split_last() else {
        return false;
    };
    before == Some('\u{1F3F4}')
        && *last == '\u{E007F}'
        && !tags.is_empty()
        && tags
            .iter()
            .all(|c| matches!(u32::from(*c), 0xE0030..=0xE0039 | 0xE0061..=0xE007A))
}

#[cfg(test)]
#[path = "injection_tests.rs"]
mod tests;
