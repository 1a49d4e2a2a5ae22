//! The offline skeptic's source check: a small heuristic, not a parser.
//!
//! Takes a finding's line and the numbered lines the engine was shown of
//! its file; gives `confirmed`, `refuted` or `uncertain` with a reason and
//! the lines of the data flow. Only findings of rules that need untrusted
//! input are judged (`sink_rules` in `configs/sources.toml`); others are
//! uncertain.
//!
//! How, per language family:
//! - the enclosing function: for brace-delimited languages (C, C++, Java,
//!   JavaScript/TypeScript, Go, Rust, C#, PHP, ...), the nearest unmatched
//!   `{` above the line whose line reads as a function header (a `(`, no
//!   control keyword); for Python, the nearest `def` above with less
//!   indentation. Without one, everything shown above the line.
//! - what a constant condition rules out is not read here: the syntax
//!   tree's check ([`super::taint::judge`]) asks the tree first, and a
//!   line in an arm that never runs, or whose every value is a constant,
//!   is refuted there before this check is asked.
//! - the value: the arguments of the first call on the flagged line, else
//!   the right side of its assignment, else the line; for a SQL rule, only
//!   the query of a call that binds parameters beside it (`execute(q,
//!   params)`); for a writing call (`fmt.Fprintf(w, …)`), not the writer.
//! - each variable in it is followed back to its assignments above the
//!   line that uses it, from the last one that always runs on the way
//!   (not in a branch, loop or `case` the use is outside of), and their
//!   variables in turn. A line matching a source of
//!   `configs/sources.toml` (a request, argv, the environment, stdin, a
//!   file) confirms; a parameter, a call the table does not know as pure,
//!   or a variable set outside the function leaves it uncertain; only
//!   literals and constants (`UPPER_CASE`, `Class.MEMBER`, also
//!   package-qualified: `org.example.Utils.DIR`) refute. A static call
//!   given only literals (`Utils.command("echo")`) is no constant: what
//!   the method returns is read in its class's file (below), or the value
//!   is uncertain.
//! - a call of a function or method that the file defines once (called
//!   without a receiver, on `this`/`self`, on a class of the file or on
//!   `new C()` of one) is followed into it, up to three calls deep: each
//!   `return` that runs is traced within the helper, a source there
//!   confirms, and the parameters its value depends on are followed into
//!   the call's arguments (the others are not the value).
//! - a call into a class of another file the engine has read (a
//!   variable's declared type, `new C(…)`, or a static `pkg.C.m(…)`) is
//!   followed the same way into that class's method, or into every class
//!   that implements or extends it, up to the same depth (see
//!   [`foreign`]); a class of the repository not read yet is named in
//!   [`Judged::wants`], for the skeptic to find and read before it answers.
//! - a path finding whose path is checked, further down its block, to
//!   stay under a base directory (`target.getCanonicalPath().startsWith(`,
//!   `realpath(p).startswith(`) is refuted.
//!
//! String literals are blanked before names are read (an f-string's or a
//! template literal's `{…}` parts are kept as code); line comments are cut.
//!
//! What it cannot see it never refutes. Blanking a literal hides what a
//! string interpolates (PHP's `"… '$id'"`), and a line-based reading of
//! formatting is a guess, so a value built on its way to the sink by an
//! interpolated or formatted string (PHP `"$x"` and `"{$x}"`, Python
//! f-strings, `%` formatting and `.format`, JavaScript template literals,
//! Ruby `#{x}`, C# `$"{x}"`) is uncertain, never refuted ([`formatted`]).
//! Outside Java and C#, whose calls into other files it follows, a call of
//! a class the file does not declare (`Input::get('id')`,
//! `Utils.command("x")`) is code of another file it cannot read: the value
//! is uncertain too.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, LazyLock, Mutex};

use regex::{Regex, RegexSet};

use crate::util::{builtin_regex, relock};
use serde::Deserialize;

use super::syntax::{Trees, whole_text};
use crate::util::language::language_of;

mod foreign;

/// The files the engine was shown: path → numbered lines.
/// How a language delimits its blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Family {
    /// Braces: C, Java, JavaScript, Go, PHP and their kin.
    Braces,
    /// Indentation: Python.
    Indent,
}

pub(crate) type Files = BTreeMap<String, BTreeMap<u32, String>>;

/// The regexes the check builds from names, each built once: it asks for
/// the same ones many times, and building one costs far more than running
/// it. One is kept for a run (the offline engine's); a pattern depends on
/// nothing but a name, so what it holds is never stale. It holds at most
/// [`Patterns::MOST`] (a regex of a Unicode class takes tens of KB), and
/// starts over when full.
#[derive(Default)]
pub(crate) struct Patterns(Mutex<HashMap<String, Option<Arc<Regex>>>>);

impl std::fmt::Debug for Patterns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Patterns")
            .field("kept", &relock(&self.0).len())
            .finish()
    }
}

impl Patterns {
    const MOST: usize = 1024;

    /// The regex of `pattern` (`None` when it does not compile). Shared,
    /// not cloned: a clone of a regex starts with empty search caches and
    /// would build its automaton's states again.
    fn get(&self, pattern: String) -> Option<Arc<Regex>> {
        if let Some(kept) = relock(&self.0).get(&pattern) {
            return kept.clone();
        }
        // Built outside the lock: another judgment may build it too.
        let built = Regex::new(&pattern).ok().map(Arc::new);
        let mut kept = relock(&self.0);
        if kept.len() >= Self::MOST {
            kept.clear();
        }
        kept.insert(pattern, built.clone());
        built
    }
}

/// The bundled table.
const TABLE: &str = include_str!("../../configs/sources.toml");

/// Bumped whenever the check would judge the same lines differently
/// (2: it read the function as it runs, on its lines; 3: it
/// follows helpers of the same file, reads package-qualified class
/// members and static calls of literals as constants, and honours a
/// path's containment check; 5: an interpolated or formatted string, or
/// outside Java and C# a call into another file's class, is uncertain; 6:
/// constant conditions are no longer read from the lines: the syntax
/// tree's check decides them first, in general; 7: a static call given
/// only literals is no constant: it is followed into its class, or
/// uncertain; a statement that goes on after an assignment or an operator
/// at the end of its line is read whole).
const CHECK_VERSION: u32 = 8;

/// What stored verdicts of the check depend on: its version and its
/// table's text.
pub(crate) fn identity() -> String {
    format!(
        " source check v{CHECK_VERSION} {}",
        crate::util::sha256_hex(TABLE.as_bytes())
    )
}

/// The table as the check uses it.
pub(crate) struct SourceTable {
    /// Each kind of source, in the table's order.
    kinds: Vec<String>,
    /// Every kind's patterns in one set (a text is read once for all).
    patterns: RegexSet,
    /// The kind (an index into `kinds`) of each pattern of the set.
    kind_of: Vec<usize>,
    sink_rules: Vec<String>,
    pure_calls: BTreeSet<String>,
    sanitizer: Option<Regex>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTable {
    sink_rules: Vec<String>,
    pure_calls: Vec<String>,
    sanitizers: Vec<String>,
    source: Vec<RawSource>,
}

/// A source table that does not read: the bundled one is a fanscan bug.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SourceTableError {
    #[error("configs/sources.toml does not parse: {0}")]
    Toml(#[source] toml::de::Error),
    #[error("configs/sources.toml: pattern {pattern:?} of {kind:?}: {error}")]
    Pattern {
        kind: String,
        pattern: String,
        #[source]
        error: regex::Error,
    },
    #[error("configs/sources.toml: sanitizers: {0}")]
    Sanitizers(#[source] regex::Error),
    #[error("configs/sources.toml: the patterns together: {0}")]
    Set(#[source] regex::Error),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSource {
    kind: String,
    patterns: Vec<String>,
}

impl SourceTable {
    /// Parses a table; the error names the file and the pattern.
    pub(crate) fn parse(text: &str) -> Result<Self, SourceTableError> {
        let raw: RawTable = toml::from_str(text).map_err(SourceTableError::Toml)?;
        let (mut kinds, mut all, mut kind_of) = (Vec::new(), Vec::new(), Vec::new());
        for s in raw.source {
            for p in &s.patterns {
                // Each pattern alone first: an error names it.
                Regex::new(p).map_err(|error| SourceTableError::Pattern {
                    kind: s.kind.clone(),
                    pattern: p.clone(),
                    error,
                })?;
                all.push(p.clone());
                kind_of.push(kinds.len());
            }
            kinds.push(s.kind);
        }
        let patterns = RegexSet::new(&all).map_err(SourceTableError::Set)?;
        let names: Vec<String> = raw.sanitizers.iter().map(|n| regex::escape(n)).collect();
        let sanitizer = if names.is_empty() {
            None
        } else {
            let pattern = format!(
                r"(?:^|[^\w$.]|\.)(?:[A-Za-z_$][\w$]*\s*\.\s*)*(?:{})\s*\(",
                names.join("|")
            );
            Some(Regex::new(&pattern).map_err(SourceTableError::Sanitizers)?)
        };
        Ok(Self {
            kinds,
            patterns,
            kind_of,
            sink_rules: raw.sink_rules,
            pure_calls: raw.pure_calls.into_iter().collect(),
            sanitizer,
        })
    }

    /// The bundled table (checked by a test; an error is reported by the
    /// engine as an uncertain answer, never a panic).
    pub(crate) fn bundled() -> Result<&'static Self, &'static SourceTableError> {
        static BUNDLED: LazyLock<Result<SourceTable, SourceTableError>> =
            LazyLock::new(|| SourceTable::parse(TABLE));
        BUNDLED.as_ref()
    }

    /// The kind of the first source whose pattern `text` matches.
    pub(crate) fn source_in(&self, text: &str) -> Option<&str> {
        if !self.patterns.is_match(text) {
            return None;
        }
        let first = self
            .patterns
            .matches(text)
            .iter()
            .filter_map(|i| self.kind_of.get(i).copied())
            .min()?;
        self.kinds.get(first).map(String::as_str)
    }

    /// Whether any source's pattern matches `text`.
    pub(crate) fn any_source(&self, text: &str) -> bool {
        self.patterns.is_match(text)
    }

    /// The code with every sanitizer call (name and arguments) blanked:
    /// what it returns is safe whatever it was given.
    fn unsanitized(&self, code: &str) -> String {
        let Some(re) = &self.sanitizer else {
            return code.to_string();
        };
        let mut out = code.to_string();
        while let Some(m) = re.find(&out) {
            let open = m.end() - 1;
            let mut depth = 0usize;
            let mut close = out.len();
            for (i, c) in out[open..].char_indices() {
                match c {
                    '(' => depth += 1,
                    ')' => {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            close = open + i + 1;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            let start = m.start()
                + m.as_str()
                    .find(|c: char| c.is_alphabetic() || c == '_' || c == '$')
                    .unwrap_or(0);
            let start = chain_start(&out, start);
            out.replace_range(start..close, " 0 ");
        }
        out
    }

    /// Whether a call of `name` (its last name) builds its value from its
    /// arguments alone (`pure_calls`).
    pub(crate) fn is_pure(&self, name: &str) -> bool {
        self.pure_calls.contains(name)
    }

    /// The kinds of source, in the table's order.
    pub(crate) fn kinds(&self) -> impl Iterator<Item = &str> {
        self.kinds.iter().map(String::as_str)
    }

    pub(crate) fn is_sink_rule(&self, rule: Option<&str>) -> bool {
        rule.is_some_and(|r| self.sink_rules.iter().any(|p| r.starts_with(p.as_str())))
    }
}

/// Where the call chain ending at byte `at` of `code` starts
/// (`ESAPI.encoder().encodeForHTML(` → at `ESAPI`): a sanitizer's
/// receivers go with it, since what it returns is the value.
fn chain_start(code: &str, at: usize) -> usize {
    let ident = |c: char| c.is_alphanumeric() || c == '_' || c == '$';
    let mut start = at;
    loop {
        let Some(before) = code.get(..start) else {
            return start;
        };
        let Some(head) = before.trim_end().strip_suffix('.') else {
            return start;
        };
        let head = head.trim_end();
        let mut end = head.len();
        if head.ends_with(')') {
            // Back over the receiver call's arguments.
            let mut depth = 0usize;
            let mut open = None;
            for (i, c) in head.char_indices().rev() {
                match c {
                    ')' => depth += 1,
                    '(' => {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            open = Some(i);
                            break;
                        }
                    }
                    _ => {}
                }
            }
            let Some(open) = open else { return start };
            end = open;
        }
        let name = head[..end].trim_end();
        let from = name
            .char_indices()
            .rev()
            .take_while(|(_, c)| ident(*c))
            .last()
            .map(|(i, _)| i);
        match from {
            Some(i) if i < start => start = i,
            _ => return start,
        }
    }
}

/// What the check says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Judged {
    /// `confirmed`, `refuted` or `uncertain`.
    pub(crate) verdict: &'static str,
    pub(crate) confidence: u8,
    pub(crate) why: String,
    /// Lines of the data flow, in order, ending at the flagged line.
    pub(crate) flow: Vec<u32>,
    /// Steps of the flow in other files (a method followed there): path
    /// and line, in the order followed.
    pub(crate) elsewhere: Vec<(String, u32)>,
    /// Classes a call goes into that no file read declares: the check
    /// could tell more with their files read.
    pub(crate) wants: BTreeSet<String>,
}

impl Judged {
    pub(crate) fn uncertain(why: String) -> Self {
        Self::new("uncertain", 3, why, Vec::new())
    }

    fn new(verdict: &'static str, confidence: u8, why: String, flow: Vec<u32>) -> Self {
        Self {
            verdict,
            confidence,
            why,
            flow,
            elsewhere: Vec::new(),
            wants: BTreeSet::new(),
        }
    }
}

fn family(path: &str) -> Option<Family> {
    match language_of(path)? {
        "python" => Some(Family::Indent),
        "c" | "cpp" | "java" | "javascript" | "typescript" | "go" | "rust" | "csharp" | "php"
        | "kotlin" | "scala" | "swift" | "dart" | "objective-c" => Some(Family::Braces),
        _ => None,
    }
}

/// Judges the finding at `line` of `path` (of rule `rule`) from the lines
/// shown of its file; the other files shown are where calls into their
/// classes are followed. `patterns` keeps the regexes it builds.
pub(crate) fn judge(
    table: &SourceTable,
    patterns: &Patterns,
    trees: &Trees,
    path: &str,
    files: &Files,
    line: u32,
    rule: Option<&str>,
) -> Judged {
    let empty = BTreeMap::new();
    let lines = files.get(path).unwrap_or(&empty);
    if !table.is_sink_rule(rule) {
        return Judged::uncertain(
            "the rule engine judges only findings that need untrusted input to reach a sink".into(),
        );
    }
    let Some(family) = family(path) else {
        return Judged::uncertain("the rule engine has no source check for this language".into());
    };
    if !lines.contains_key(&line) {
        return Judged::uncertain(format!("line {line} was not shown"));
    }
    let (start, params) =
        tree_enclosing(trees, path, lines, line).unwrap_or_else(|| enclosing(family, lines, line));
    let shown = lines;
    let flagged = lines.get(&line).map_or("", String::as_str);
    if rule.is_some_and(|r| r.starts_with("path/"))
        && let Some(checked) = contained_below(family, lines, line)
    {
        return Judged::new(
            "refuted",
            6,
            format!(
                "the path made at line {line} is checked to stay under its base directory (its canonical form's prefix) at line {checked}, before it is used"
            ),
            vec![line, checked],
        );
    }
    let mut trace = Trace {
        table,
        family,
        lines,
        shown,
        path,
        files,
        patterns,
        go: language_of(path) == Some("go"),
        start,
        end: line,
        at: line,
        params,
        visited: BTreeSet::new(),
        source: None,
        unknown: None,
        flow: BTreeSet::new(),
        helper: None,
        elsewhere: Vec::new(),
        wants: BTreeSet::new(),
    };
    let (flagged, mut code, mut interps) = joined(family, lines, line, flagged);
    let flagged = flagged.as_str();
    if family == Family::Indent {
        match in_multiline_string(lines, start, line) {
            // A line of an f-string: only its `{…}` parts are values.
            Some(true) => {
                code = String::new();
                interps = braced(flagged);
            }
            Some(false) => {
                return Judged::uncertain(format!(
                    "line {line} is inside a multi-line string: its value is used elsewhere"
                ));
            }
            None => {}
        }
    }
    // A query run with bound parameters: only the query is the value.
    let sql = rule.is_some_and(|r| r.starts_with("sql/"));
    let value = sql
        .then(|| sql_query_arg(&code))
        .flatten()
        .or_else(|| written_args(&code))
        .unwrap_or_else(|| value_of(&code));
    // A source in the value the sink takes confirms it, and so does one
    // inside a string of the line (PHP's `"…$_GET[id]…"`). One elsewhere in
    // the line's code (the sink's own call reading a file, or a value the
    // line-based reading did not take for the sink's) does not confirm,
    // and it forbids a refutation: the check may have read the wrong value.
    let in_value = std::iter::once(value.as_str())
        .chain(interps.iter().map(String::as_str))
        .find_map(|part| table.source_in(&table.unsanitized(part)));
    let in_code = table.source_in(&table.unsanitized(&code));
    let in_string = in_code
        .is_none()
        .then(|| table.source_in(&table.unsanitized(flagged)))
        .flatten();
    if let Some(kind) = in_value.or(in_string) {
        trace.source = Some((line, kind.to_string()));
    } else {
        trace.expr(&value, &interps, 0);
    }
    let judged = trace.verdict(start, line);
    match in_code {
        Some(kind) if judged.verdict == "refuted" => Judged::uncertain(format!(
            "line {line} reads {kind} outside the value the rule engine took for the sink's; it does not refute what it may have misread"
        )),
        _ => judged,
    }
}

impl Trace<'_> {
    /// The check's answer on the flagged `line` of the function starting
    /// at `start`, once the value is followed.
    fn verdict(self, start: u32, line: u32) -> Judged {
        let region = format!("lines {start}-{line}");
        let mut judged = match (&self.source, &self.unknown) {
            (Some((at, kind)), _) => {
                let mut flow: Vec<u32> = self.flow.iter().copied().filter(|l| *l >= *at).collect();
                flow.insert(0, *at);
                flow.push(line);
                flow.dedup();
                Judged::new(
                    "confirmed",
                    7,
                    format!("input from {kind} at line {at} reaches line {line}"),
                    flow,
                )
            }
            (None, Some(unknown)) => Judged::uncertain(format!(
                "the value at line {line} depends on {unknown}; the rule engine could not follow it further"
            )),
            (None, None) => match formatted(self.path, self.family, self.shown, &self.flow, line) {
                Some((at, how)) => Judged::uncertain(format!(
                    "the value at line {line} is built with {how} at line {at}: the rule engine does not read what an interpolated or formatted string takes, so it does not refute it"
                )),
                None => Judged::new(
                    "refuted",
                    6,
                    format!(
                        "within the enclosing function ({region}), the value at line {line} is built only from literals, constants and sanitized values{}",
                        foreign::followed(&self.elsewhere)
                    ),
                    Vec::new(),
                ),
            },
        };
        // Where an uncertain answer could change with more files read.
        if judged.verdict == "uncertain" {
            judged.wants = self.wants;
        }
        if judged.verdict != "uncertain" {
            judged.elsewhere = self.elsewhere;
        }
        judged
    }
}

/// Whether `line` is inside a Python triple-quoted string opened above it
/// (in the function): `Some(true)` when that string is an f-string.
fn in_multiline_string(lines: &BTreeMap<u32, String>, start: u32, line: u32) -> Option<bool> {
    let mut open: Option<bool> = None;
    for (_, text) in lines.range(start..line) {
        let mut rest = text.as_str();
        while let Some(at) = rest.find("\"\"\"").or_else(|| rest.find("'''")) {
            open = match open {
                Some(_) => None,
                None => Some(rest[..at].ends_with(['f', 'F'])),
            };
            rest = &rest[at + 3..];
        }
    }
    open
}

/// The `{…}` parts of a line (an f-string's values).
fn braced(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(a) = rest.find('{') {
        let Some(b) = rest[a..].find('}') else { break };
        out.push(rest[a + 1..a + b].to_string());
        rest = &rest[a + b + 1..];
    }
    out
}

/// The first line among `flow` and `line` (lines of the file at `path`, as
/// shown) whose statement builds a string by interpolation or formatting,
/// and how it does.
fn formatted(
    path: &str,
    family: Family,
    shown: &BTreeMap<u32, String>,
    flow: &BTreeSet<u32>,
    line: u32,
) -> Option<(u32, &'static str)> {
    let language = language_of(path)?;
    let first = shown.keys().next().copied().unwrap_or(1);
    flow.iter()
        .copied()
        .chain(std::iter::once(line))
        .collect::<BTreeSet<u32>>()
        .into_iter()
        .find_map(|n| {
            let raw = shown.get(&n)?;
            if family == Family::Indent && in_multiline_string(shown, first, n) == Some(true) {
                return Some((n, "an f-string"));
            }
            let (text, _, _) = joined(family, shown, n, raw);
            interpolation(language, &text).map(|how| (n, how))
        })
}

/// How `text`, a statement of `language`, builds a string from values by
/// interpolation or formatting, if it does: a string literal that
/// interpolates (PHP `"$x"`, f-strings, template literals, Ruby `#{}`,
/// C# `$"{x}"`), or one that Python formats (`%`, `.format`). A scan of
/// its literals, not a parse: it only has to notice, never to read them.
fn interpolation(language: &str, text: &str) -> Option<&'static str> {
    let chars: Vec<char> = text.chars().collect();
    let hash_comments = matches!(language, "python" | "ruby" | "php" | "shell");
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if (hash_comments && c == '#') || (c == '/' && chars.get(i + 1) == Some(&'/')) {
            return None;
        }
        if !matches!(c, '"' | '\'' | '`') {
            i += 1;
            continue;
        }
        let prefix: String = chars[..i]
            .iter()
            .rev()
            .take_while(|ch| ch.is_ascii_alphabetic() || matches!(ch, '$' | '@'))
            .collect();
        let mut j = i + 1;
        let mut body = String::new();
        while j < chars.len() && chars[j] != c {
            if chars[j] == '\\' {
                j += 1;
                body.push('\\');
            }
            if let Some(&ch) = chars.get(j) {
                body.push(ch);
            }
            j += 1;
        }
        let after: String = chars.get(j + 1..).unwrap_or(&[]).iter().collect();
        let after = after.trim_start();
        let how = match (language, c) {
            ("php", '"' | '`') if php_interpolates(&body) => {
                Some("a string that interpolates a variable")
            }
            ("python", _) if prefix.contains(['f', 'F']) && body.contains('{') => {
                Some("an f-string")
            }
            ("python", _) if after.starts_with('%') && !after.starts_with("%=") => {
                Some("`%` formatting")
            }
            ("python", _) if after.starts_with(".format(") => Some("`.format`"),
            ("javascript" | "typescript", '`') if body.contains("${") => Some("a template literal"),
            ("ruby", '"' | '`') if body.contains("#{") => Some("a `#{}` interpolation"),
            ("csharp", '"') if prefix.contains('$') && body.contains('{') => {
                Some("an interpolated string")
            }
            _ => None,
        };
        if how.is_some() || j >= chars.len() {
            return how;
        }
        i = j + 1;
    }
    None
}

/// Whether a PHP double-quoted string's body interpolates a variable
/// (`$id`, `{$id}`, `${id}`): a `$` not escaped, before a name or `{`.
fn php_interpolates(body: &str) -> bool {
    let chars: Vec<char> = body.chars().collect();
    chars.iter().enumerate().any(|(k, &c)| {
        c == '$'
            && (k == 0 || chars[k - 1] != '\\')
            && chars
                .get(k + 1)
                .is_some_and(|n| n.is_alphabetic() || matches!(n, '_' | '{'))
    })
}

/// The header line of the function around `line` and its parameters'
/// names, from the file's syntax tree when the whole file was shown and
/// parses: `None` when it was not, or did not.
fn tree_enclosing(
    trees: &Trees,
    path: &str,
    lines: &BTreeMap<u32, String>,
    line: u32,
) -> Option<(u32, BTreeSet<String>)> {
    let text = whole_text(lines.iter().map(|(n, l)| (*n, l.as_str())))?;
    let parsed = trees.get(path, &text);
    let syntax = parsed.as_ref().as_ref().ok()?;
    Some(match syntax.function_around(line) {
        Some(f) => (f.header, f.params.iter().cloned().collect()),
        // Code outside any function: from the top of the file.
        None => (1, BTreeSet::new()),
    })
}

/// The first line of the function around `line` and its parameters' names,
/// told from the lines alone (a part of a file, or one that does not parse).
fn enclosing(family: Family, lines: &BTreeMap<u32, String>, line: u32) -> (u32, BTreeSet<String>) {
    let first = lines.keys().next().copied().unwrap_or(1);
    let above = lines.range(..line).rev();
    match family {
        Family::Indent => {
            let indent = |t: &str| t.len() - t.trim_start().len();
            let own = lines.get(&line).map_or(0, |t| indent(t));
            for (&n, text) in above {
                let t = text.trim_start();
                if (t.starts_with("def ") || t.starts_with("async def ")) && indent(text) < own {
                    return (n, params(lines, n));
                }
            }
            (first, BTreeSet::new())
        }
        Family::Braces => {
            let mut pending = 0i64;
            for (&n, text) in above {
                let (code, _) = code_of(text, family);
                // Going up: a `}` closes a block below; a `{` beyond those
                // opens one around the line.
                for c in code.chars().rev() {
                    match c {
                        '}' => pending += 1,
                        '{' if pending > 0 => pending -= 1,
                        '{' => {
                            let header = if code.trim() == "{" {
                                lines
                                    .range(..n)
                                    .next_back()
                                    .map(|(_, t)| code_of(t, family).0)
                                    .unwrap_or_default()
                            } else {
                                code.clone()
                            };
                            if is_function_header(&header) {
                                let start = if code.trim() == "{" {
                                    lines.range(..n).next_back().map_or(n, |(k, _)| *k)
                                } else {
                                    n
                                };
                                return (start, params(lines, start));
                            }
                        }
                        _ => {}
                    }
                }
            }
            (first, BTreeSet::new())
        }
    }
}

const CONTROL: &[&str] = &[
    "if",
    "else",
    "for",
    "while",
    "switch",
    "do",
    "try",
    "catch",
    "finally",
    "synchronized",
    "using",
    "lock",
    "foreach",
    "with",
    "return",
    "match",
    "loop",
    "unsafe",
    "select",
    "defer",
];

fn is_function_header(code: &str) -> bool {
    let t = code.trim_start().trim_start_matches('}').trim_start();
    let first = t
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .next()
        .unwrap_or("");
    if CONTROL.contains(&first) {
        return false;
    }
    if t.starts_with("func ") || t.contains("fn ") || t.contains("function") || t.contains("=>") {
        return true;
    }
    match t.find('(') {
        // `x = foo(...) {` is a call with a block (a lambda), not a header.
        Some(open) => !t[..open].contains('='),
        None => false,
    }
}

/// The names in the parentheses of the header at line `n` (and the lines
/// after it, up to its `)`).
fn params(lines: &BTreeMap<u32, String>, n: u32) -> BTreeSet<String> {
    let mut header = String::new();
    for (_, text) in lines.range(n..).take(6) {
        header.push_str(text);
        header.push(' ');
        if text.contains(')') {
            break;
        }
    }
    let inner = match (header.find('('), header.rfind(')')) {
        (Some(a), Some(b)) if b > a => &header[a + 1..b],
        _ => "",
    };
    names(inner).map(str::to_string).collect()
}

static NAME: LazyLock<Regex> = LazyLock::new(|| builtin_regex(r"[A-Za-z_$][\w$]*"));

fn names(text: &str) -> impl Iterator<Item = &str> {
    NAME.find_iter(text).map(|m| m.as_str())
}

/// How many more brackets (`(`, `[`) `code` opens than it closes.
fn open_brackets(code: &str) -> i32 {
    code.chars()
        .map(|c| match c {
            '(' | '[' => 1,
            ')' | ']' => -1,
            _ => 0,
        })
        .sum()
}

/// Whether a line whose code is `code` goes on to the next: it ends in an
/// assignment or an operator that still wants its right side (`bar =`,
/// `a +`, `f(a,`), or in Python's `\\`. Not after `:`, which also ends a
/// label or a `case`.
fn continues(code: &str, family: Family) -> bool {
    let code = code.trim_end();
    if family == Family::Indent {
        return code.ends_with('\\');
    }
    let Some(last) = code.chars().next_back() else {
        return false;
    };
    match last {
        '=' | ',' | '?' | '.' | '&' | '|' => true,
        // `i++` and `i--` are whole.
        '+' | '-' => !code.ends_with("++") && !code.ends_with("--"),
        _ => false,
    }
}

/// The statement that starts at line `n` (written `raw`): the line, and
/// while its brackets stay open, or while a line ends in an operator that
/// wants its right side, the lines that finish it (at most eight more),
/// joined; as written, as code, and the interpolations in it.
fn joined(
    family: Family,
    lines: &BTreeMap<u32, String>,
    n: u32,
    raw: &str,
) -> (String, String, Vec<String>) {
    let (mut code, mut interps) = code_of(raw, family);
    let mut text = raw.to_string();
    let mut open = open_brackets(&code);
    let mut more = open > 0 || continues(&code, family);
    if more {
        for (_, next) in lines.range(n.saturating_add(1)..).take(8) {
            let (next_code, next_interps) = code_of(next, family);
            open += open_brackets(&next_code);
            more = open > 0 || continues(&next_code, family);
            code.push(' ');
            code.push_str(next_code.trim());
            interps.extend(next_interps);
            text.push(' ');
            text.push_str(next.trim());
            if !more {
                break;
            }
        }
    }
    (text, code, interps)
}

/// A line's code with string literals blanked (`""`) and its line comment
/// cut, and the code inside its f-strings' and template literals' `{…}`.
fn code_of(line: &str, family: Family) -> (String, Vec<String>) {
    let chars: Vec<char> = line.chars().collect();
    let mut code = String::new();
    let mut interps = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let comment = match family {
            Family::Indent => c == '#',
            Family::Braces => c == '/' && chars.get(i + 1) == Some(&'/'),
        };
        if comment {
            break;
        }
        if matches!(c, '"' | '\'' | '`') {
            let formatted = c == '`'
                || (i > 0
                    && matches!(chars[i - 1], 'f' | 'F')
                    && (i < 2 || !(chars[i - 2].is_alphanumeric() || chars[i - 2] == '_')));
            let mut j = i + 1;
            let mut body = String::new();
            while j < chars.len() && chars[j] != c {
                if chars[j] == '\\' {
                    j += 1;
                }
                if let Some(&ch) = chars.get(j) {
                    body.push(ch);
                }
                j += 1;
            }
            if j >= chars.len() {
                // No closing quote on the line (a Rust lifetime, a
                // multi-line string): the quote is kept as code.
                code.push(c);
                i += 1;
                continue;
            }
            // A string's prefix (`f`, `b`, `r`, `rb`...) is not a name.
            let prefix: String = code
                .chars()
                .rev()
                .take_while(|ch| ch.is_ascii_alphabetic())
                .collect();
            if !prefix.is_empty()
                && prefix.len() <= 2
                && prefix.chars().all(|ch| "fFbBrRuU".contains(ch))
            {
                code.truncate(code.len() - prefix.len());
            }
            if formatted {
                let mut depth = 0;
                let mut part = String::new();
                for ch in body.chars() {
                    match ch {
                        '{' => {
                            if depth > 0 {
                                part.push(ch);
                            }
                            depth += 1;
                        }
                        '}' if depth > 0 => {
                            depth -= 1;
                            if depth == 0 {
                                interps.push(std::mem::take(&mut part));
                            } else {
                                part.push(ch);
                            }
                        }
                        _ if depth > 0 => part.push(ch),
                        _ => {}
                    }
                }
            }
            code.push_str("\"\"");
            i = j + 1;
            continue;
        }
        code.push(c);
        i += 1;
    }
    (code, interps)
}

/// The value a line hands on: the arguments of its first call that has
/// any, else the right side of its assignment, else the line.
fn value_of(code: &str) -> String {
    // `x = a + f(b)`: the whole right side; `run(x)`: the call's arguments.
    let head = code.split('(').next().unwrap_or(code);
    if let Some(cut) = assignment_end(head) {
        let rhs = code[cut..].trim().trim_end_matches(';').trim();
        // `p = rt.exec(cmd)`: the sink is the call, its value the
        // arguments; `el.innerHTML = x`: the sink is the assignment.
        // (`java.io.File f = …` declares `f`: only the name assigned
        // counts.)
        let lhs = head[..cut.saturating_sub(1)]
            .split_whitespace()
            .next_back()
            .unwrap_or("");
        if !lhs.contains('.')
            && !lhs.contains("->")
            && let Some(args) = chain_args(rhs)
        {
            return args;
        }
        return rhs.to_string();
    }
    let chars: Vec<(usize, char)> = code.char_indices().collect();
    for (k, &(at, c)) in chars.iter().enumerate() {
        if c != '(' {
            continue;
        }
        let before = code[..at].trim_end();
        let name = before
            .rsplit(|ch: char| !(ch.is_alphanumeric() || ch == '_' || ch == '!'))
            .next()
            .unwrap_or("");
        if name.is_empty() || CONTROL.contains(&name) {
            continue;
        }
        let mut depth = 0;
        for &(end, ch) in &chars[k..] {
            match ch {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        let args = code[at + 1..end].trim();
                        if !args.is_empty() {
                            return args.to_string();
                        }
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    code.to_string()
}

/// Calls that run a query whose later arguments are bound parameters.
const SQL_RUNS: &[&str] = &[
    "execute",
    "executemany",
    "executeQuery",
    "executeUpdate",
    "query",
    "Query",
    "QueryRow",
    "Exec",
    "prepare",
    "prepareStatement",
    "raw",
    "run",
    "all",
];

/// Calls that write their later arguments to their first (a response, a
/// stream): the first is where the value goes, not the value.
const WRITES: &[&str] = &["Fprintf", "Fprint", "Fprintln", "WriteString", "fprintf"];

/// The arguments of the first call on the line named one of `names`,
/// split at its top-level commas.
fn call_args(code: &str, names: &[&str]) -> Option<Vec<String>> {
    for (at, c) in code.char_indices() {
        if c != '(' {
            continue;
        }
        let before = code[..at].trim_end();
        let name = before
            .rsplit(|ch: char| !(ch.is_alphanumeric() || ch == '_'))
            .next()
            .unwrap_or("");
        if !names.contains(&name) {
            continue;
        }
        return Some(split_args(code, at)?.0);
    }
    None
}

/// The query of the first call on the line that runs one with bound
/// parameters beside it (`cur.execute(q, (x,))`, `db.Query(q, x)`): its
/// first argument. `None` when the line has no such call or the call has
/// only its query.
fn sql_query_arg(code: &str) -> Option<String> {
    let args = call_args(code, SQL_RUNS)?;
    if args.len() < 2 {
        return None;
    }
    args.into_iter().next()
}

/// What a writing call (`fmt.Fprintf(w, f, x)`) writes: its arguments
/// after the first.
fn written_args(code: &str) -> Option<String> {
    let args = call_args(code, WRITES)?;
    (args.len() >= 2).then(|| args[1..].join(","))
}

/// When `text` is one call chain (`a.b().c(x).d()`), the arguments of its
/// last call that has any.
fn chain_args(text: &str) -> Option<String> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut last: Option<String> = None;
    let mut k = 0;
    let mut calls = 0;
    while k < chars.len() {
        let (at, c) = chars[k];
        if c.is_alphanumeric() || "_$.:! ".contains(c) {
            k += 1;
            continue;
        }
        if c != '(' {
            return None;
        }
        let mut depth = 0;
        let mut end = None;
        for &(i, ch) in &chars[k..] {
            match ch {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(i);
                        break;
                    }
                }
                _ => {}
            }
        }
        let end = end?;
        let args = text[at + 1..end].trim();
        if !args.is_empty() {
            last = Some(args.to_string());
        }
        calls += 1;
        k = chars
            .iter()
            .position(|&(i, _)| i > end)
            .unwrap_or(chars.len());
    }
    if calls == 0 { None } else { last }
}

static ASSIGN: LazyLock<Regex> =
    LazyLock::new(|| builtin_regex(r"(?:\+=|:=|\.=|[^=!<>+\-*/%&|^:.]=)(?:[^=]|$)"));

/// Where the right side of the line's first assignment starts.
fn assignment_end(code: &str) -> Option<usize> {
    let m = ASSIGN.find(code)?;
    Some(m.start() + m.as_str().find('=')? + 1)
}

const WORDS: &[&str] = &[
    "new",
    "this",
    "self",
    "None",
    "True",
    "False",
    "null",
    "true",
    "false",
    "nil",
    "var",
    "let",
    "const",
    "int",
    "char",
    "void",
    "static",
    "final",
    "public",
    "private",
    "protected",
    "def",
    "async",
    "await",
    "in",
    "not",
    "and",
    "or",
    "is",
    "lambda",
    "fn",
    "mut",
    "ref",
    "func",
    "range",
    "sizeof",
    "unsigned",
    "long",
    "short",
    "double",
    "float",
    "bool",
    "auto",
    "typeof",
    "instanceof",
    "return",
    "undefined",
    "as",
    "str",
    "size_t",
    "byte",
    "boolean",
    "string",
    "String",
    "Some",
    "Ok",
    "Err",
    "if",
    "else",
    "for",
    "while",
    "u8",
    "usize",
    "i32",
    "i64",
    "u32",
    "u64",
    "struct",
    "std",
];

struct Trace<'a> {
    table: &'a SourceTable,
    family: Family,
    /// The function's lines.
    lines: &'a BTreeMap<u32, String>,
    /// Every line shown, as written: where a helper's definition is read.
    shown: &'a BTreeMap<u32, String>,
    /// The file traced, and every file shown (where calls into other
    /// files' classes are followed).
    path: &'a str,
    files: &'a Files,
    patterns: &'a Patterns,
    /// Go names a parameter before its type.
    go: bool,
    start: u32,
    end: u32,
    /// The line whose value is being followed: a variable's assignments
    /// count only above it, from the last one that always runs.
    at: u32,
    params: BTreeSet<String>,
    /// Variables followed, with the line they were followed from.
    visited: BTreeSet<(String, u32)>,
    source: Option<(u32, String)>,
    unknown: Option<String>,
    flow: BTreeSet<u32>,
    /// Set when this traces a helper's return value (see
    /// [`Trace::helper_value`]): how many helpers deep, and the
    /// parameters the value depends on, which the caller follows into
    /// its arguments instead of leaving them uncertain.
    helper: Option<(u32, BTreeSet<String>)>,
    /// Steps followed in other files, in order.
    elsewhere: Vec<(String, u32)>,
    /// Classes called into that no file shown declares.
    wants: BTreeSet<String>,
}

/// How deep the check follows calls into helpers of the same file.
const HELPER_DEPTH: u32 = 3;

/// What a helper defined in the file returns, as the check read it.
#[derive(Default)]
struct HelperValue {
    source: Option<(u32, String)>,
    unknown: Option<String>,
    /// The positions of the parameters the value depends on.
    uses: BTreeSet<usize>,
    /// Lines of the helper's file.
    flow: BTreeSet<u32>,
    /// Steps in files other than the helper's, and classes not found.
    elsewhere: Vec<(String, u32)>,
    wants: BTreeSet<String>,
}

/// What a call in a value is to the check.
enum CallKind {
    /// A method or function defined once in the file (its header's line).
    Helper(u32),
    /// `new C()` without arguments: an object made from nothing the
    /// caller gives.
    NewOfNothing,
    /// A method of a class that this file does not declare (see
    /// [`foreign`]).
    Foreign(String),
    /// `new C(…)` of such a class with a method called on it at once
    /// (`new C(x).m(…)`): the method is followed, and what it does not
    /// return of the object does not matter.
    NewReceiver,
    /// Anything else.
    Unknown,
}

static TOKEN: LazyLock<Regex> = LazyLock::new(|| {
    builtin_regex(r"([A-Za-z_$][\w$]*(?:\s*(?:\.|::|->)\s*[A-Za-z_$][\w$]*)*)(\s*!?\s*\()?")
});
static KWARG: LazyLock<Regex> =
    LazyLock::new(|| builtin_regex(r"(^|[(,])\s*[A-Za-z_]\w*\s*=([^=]|$)"));

impl Trace<'_> {
    /// Follows the names of an expression.
    fn expr(&mut self, code: &str, interps: &[String], depth: u32) {
        if self.source.is_some() {
            return;
        }
        // Keyword arguments' names are not values; what a sanitizer
        // returns is safe.
        let code = KWARG.replace_all(code, "$1 $2").into_owned();
        let code = self.table.unsanitized(&code);
        // `new ArrayList<String>()` is a call of `ArrayList`.
        let code = TYPE_ARGS.replace_all(&code, "(").into_owned();
        let mut text = code;
        for part in interps {
            text.push(' ');
            text.push_str(part);
        }
        // Each name with whether it is called, where it starts and where
        // its call's arguments start.
        let tokens: Vec<(String, bool, usize, usize)> = TOKEN
            .captures_iter(&text)
            .filter_map(|c| {
                let name = c.get(1)?;
                let end = c.get(0)?.end();
                Some((
                    name.as_str().to_string(),
                    c.get(2).is_some(),
                    name.start(),
                    end,
                ))
            })
            .collect();
        // The arguments of a helper the check followed are followed only
        // where its value depends on them: their names are skipped here.
        let mut skip_to = 0;
        for (name, call, at, end) in tokens {
            if at < skip_to {
                continue;
            }
            let segments: Vec<&str> = name
                .split(['.', ':', '-', '>'])
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .collect();
            let (Some(&head), Some(&last)) = (segments.first(), segments.last()) else {
                continue;
            };
            // A keyword of one language is a name in another (`ref` in
            // Go, `fn` in JavaScript): a parameter or a variable the
            // function sets is never a keyword.
            if WORDS.contains(&head)
                && segments.len() == 1
                && !self.params.contains(head)
                && !self.sets(head)
            {
                continue;
            }
            if call {
                if self.other_files_class(&segments) {
                    self.unknown(format!(
                        "a call to `{name}`, code of another file that the rule engine does not follow in this language"
                    ));
                    continue;
                }
                if !self.table.pure_calls.contains(last.trim_end_matches('!')) {
                    let args = call_args_at(&text, end.saturating_sub(1));
                    let listed = args.as_ref().map(|(a, _)| a.as_slice()).unwrap_or(&[]);
                    let rest = args
                        .as_ref()
                        .and_then(|(_, close)| text.get(*close..))
                        .unwrap_or("");
                    match self.call_kind(&text, at, &segments, listed, rest) {
                        CallKind::Helper(def) => {
                            if let Some((args, close)) = args {
                                skip_to = close;
                                self.helper_call(def, &name, &args, depth);
                                continue;
                            }
                            self.unknown(format!("a call to `{name}`"));
                        }
                        CallKind::NewOfNothing => continue,
                        // What the method called on it returns decides.
                        CallKind::NewReceiver => {
                            if let Some((_, close)) = args {
                                skip_to = close;
                            }
                            continue;
                        }
                        CallKind::Foreign(class) => {
                            if let Some((args, close)) = args
                                && self.foreign_call(&class, last, &name, &args, depth)
                            {
                                skip_to = close;
                                continue;
                            }
                        }
                        CallKind::Unknown => self.unknown(format!("a call to `{name}`")),
                    }
                }
                // A method's result depends on its receiver: a source there
                // still confirms. A name the function never sets is a
                // module or package (`fmt.Sprintf`, `strings.Join`); a
                // field's (`this.name.trim()`) is kept in the object.
                if segments.len() > 2 && matches!(head, "self" | "this" | "$this") {
                    self.unknown(format!("the field `{}.{}`", head, segments[1]));
                } else if segments.len() > 1
                    && !starts_upper(head)
                    && !WORDS.contains(&head)
                    && (self.params.contains(head) || self.sets(head))
                {
                    self.variable(head, depth);
                }
            } else if is_constant(head)
                || (segments.len() > 1 && starts_upper(head))
                || self.qualified_class(&segments)
            {
                // A constant, or a class's member (`java.io.File.separator`).
            } else if matches!(head, "self" | "this" | "$this") {
                self.unknown(format!("the field `{name}`"));
            } else {
                self.variable(head, depth);
            }
        }
    }

    /// Whether `name` is a constant set above the function: a top-level
    /// assignment in Python, a `const`, `final`, `static` or `#define` in
    /// the others, made only of literals.
    fn constant_above(&mut self, name: &str, depth: u32) -> bool {
        let Some(re) = self.patterns.get(format!(
            r"(?:^|[^\w$.]){}\s*(?:\[[^\]]*\])?\s*(?::?=|\s)",
            regex::escape(name)
        )) else {
            return false;
        };
        let lines: Vec<(u32, String)> = self
            .lines
            .range(..self.start)
            .map(|(n, t)| (*n, t.clone()))
            .collect();
        for (n, raw) in lines.into_iter().rev() {
            let (code, interps) = code_of(&raw, self.family);
            let t = code.trim_start();
            let top = match self.family {
                Family::Indent => !raw.starts_with([' ', '\t']),
                Family::Braces => {
                    t.starts_with("#define")
                        || [" const ", "const ", "final ", "static "]
                            .iter()
                            .any(|k| t.starts_with(k) || code.contains(k))
                }
            };
            let Some(m) = re.find(&code) else { continue };
            if !top {
                continue;
            }
            let rest = &code[m.end()..];
            let rhs = match rest.split_once('=') {
                Some((_, r)) if !t.starts_with("#define") => r.to_string(),
                _ => rest.to_string(),
            };
            if let Some(kind) = self.table.source_in(&self.table.unsanitized(&raw)) {
                self.source.get_or_insert((n, kind.to_string()));
                return true;
            }
            let before = (self.source.is_some(), self.unknown.is_some());
            self.expr(&rhs, &interps, depth + 1);
            if (self.source.is_some(), self.unknown.is_some()) == before {
                self.flow.insert(n);
                return true;
            }
            return false;
        }
        false
    }

    /// Whether `segments` name a member of a package-qualified class
    /// (`org.example.Utils.DIR`, `java.io.File.separator`): lower-case
    /// package names, then a class, then more, where the first name is
    /// none the function has (a parameter or a local it sets).
    fn qualified_class(&self, segments: &[&str]) -> bool {
        let Some(class) = segments.iter().position(|s| starts_upper(s)) else {
            return false;
        };
        let Some(&head) = segments.first() else {
            return false;
        };
        class > 0
            && class + 1 < segments.len()
            && segments[..class].iter().all(|s| {
                s.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            })
            && !self.params.contains(head)
            && !self.sets(head)
    }

    /// What the call to `segments` whose name starts at byte `at` of
    /// `text` is: a helper of the file the check can follow, a local
    /// object, a method of another file's class, or unknown. A static
    /// call given only literals is no constant: what the method returns
    /// is read in its class's file, or the value is uncertain.
    fn call_kind(
        &self,
        text: &str,
        at: usize,
        segments: &[&str],
        args: &[String],
        rest: &str,
    ) -> CallKind {
        let Some(&last) = segments.last() else {
            return CallKind::Unknown;
        };
        let before = text.get(..at).unwrap_or("").trim_end();
        let after_new = before
            .strip_suffix("new")
            .is_some_and(|b| !b.ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == '$'));
        if after_new {
            return if args.is_empty() {
                CallKind::NewOfNothing
            } else if self.builds_receiver(segments, rest) {
                CallKind::NewReceiver
            } else {
                CallKind::Unknown
            };
        }
        // The receiver: none, `this`/`self`, a class of the file, or
        // `new C()` of one.
        let receiver_ok = match segments {
            [_] => match before.strip_suffix('.') {
                None => !before.ends_with("->") && !before.ends_with("::"),
                Some(recv) => local_object_before(recv.trim_end())
                    .is_some_and(|class| self.declares_class(class)),
            },
            [recv, _] => {
                matches!(*recv, "this" | "self")
                    || (starts_upper(recv) && self.declares_class(recv))
            }
            _ => false,
        };
        if receiver_ok {
            let defs = self.definitions(last);
            if let [def] = defs.as_slice() {
                return CallKind::Helper(*def);
            }
        }
        match self.foreign_class(before, segments) {
            Some(class) => CallKind::Foreign(class),
            None => CallKind::Unknown,
        }
    }

    /// Whether `segments` call a method of a class that this file does not
    /// declare (`Utils.command`, `Input::get`) in a language whose calls
    /// into other files the check does not follow (all but Java and C#):
    /// what that code returns, the check cannot read.
    fn other_files_class(&self, segments: &[&str]) -> bool {
        if matches!(language_of(self.path), Some("java" | "csharp")) {
            return false;
        }
        match segments {
            [class, _, ..] => {
                let class = class.trim_start_matches('$');
                starts_upper(class) && !is_constant(class) && !self.declares_class(class)
            }
            _ => false,
        }
    }

    /// Whether the lines shown declare a class (or interface, enum,
    /// record, struct) named `name`.
    fn declares_class(&self, name: &str) -> bool {
        let Some(re) = self.patterns.get(format!(
            r"\b(?:class|interface|enum|record|struct)\s+{}\b",
            regex::escape(name)
        )) else {
            return false;
        };
        self.shown
            .values()
            .any(|t| re.is_match(&code_of(t, self.family).0))
    }

    /// The lines of the shown text that define a function or method
    /// named `name` (its header, with a body).
    fn definitions(&self, name: &str) -> Vec<u32> {
        definitions_in(self.family, self.shown, name, self.patterns)
    }

    /// Where a helper of this trace's file is read.
    fn helper_in(&self) -> HelperFile<'_> {
        HelperFile {
            path: self.path,
            files: self.files,
            patterns: self.patterns,
            shown: self.shown,
            go: self.go,
        }
    }
}

/// The file a helper is defined in, as [`Trace::helper_value`] reads it.
struct HelperFile<'a> {
    path: &'a str,
    files: &'a Files,
    patterns: &'a Patterns,
    shown: &'a BTreeMap<u32, String>,
    go: bool,
}

/// The lines of `shown` that define a function or method named `name`
/// (its header, with a body).
fn definitions_in(
    family: Family,
    shown: &BTreeMap<u32, String>,
    name: &str,
    patterns: &Patterns,
) -> Vec<u32> {
    let Some(re) = patterns.get(format!(r"(?:^|[^\w$.]){}\s*\(", regex::escape(name))) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (&n, raw) in shown {
        let (code, _) = code_of(raw, family);
        let Some(m) = re.find(&code) else { continue };
        let Some(offset) = m.as_str().find(name) else {
            continue;
        };
        let before = code[..m.start() + offset].trim_end();
        let is_def = match family {
            Family::Indent => before.ends_with("def"),
            Family::Braces => {
                let word = before
                    .rsplit(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
                    .next()
                    .unwrap_or("");
                let typed = before.is_empty()
                    || before.ends_with(['>', ']', '*', '&'])
                    || (before.ends_with(|c: char| c.is_alphanumeric() || c == '_')
                        && !matches!(
                            word,
                            "new"
                                | "return"
                                | "throw"
                                | "await"
                                | "yield"
                                | "else"
                                | "case"
                                | "in"
                                | "of"
                                | "typeof"
                                | "delete"
                        ))
                    || (before.starts_with("func") && before.ends_with(')'));
                typed && is_function_header(&code) && has_body(family, shown, n)
            }
        };
        if is_def {
            out.push(n);
        }
    }
    out
}

/// Whether the header at line `n` opens a body (`{` before any `;`,
/// on its line or the next few).
fn has_body(family: Family, shown: &BTreeMap<u32, String>, n: u32) -> bool {
    for (_, t) in shown.range(n..).take(6) {
        let code = code_of(t, family).0;
        match (code.find('{'), code.find(';')) {
            (Some(_), None) => return true,
            (Some(b), Some(s)) => return b < s,
            (None, Some(_)) => return false,
            (None, None) => {}
        }
    }
    false
}

impl Trace<'_> {
    /// Follows a call of the helper defined at line `def` with `args`:
    /// what it returns decides, and the arguments it depends on are
    /// followed here, in the caller.
    fn helper_call(&mut self, def: u32, name: &str, args: &[String], depth: u32) {
        let level = self.helper.as_ref().map_or(0, |(l, _)| *l) + 1;
        if level > HELPER_DEPTH {
            self.unknown(format!("a call to `{name}` (followed too far)"));
            return;
        }
        let value = Trace::helper_value(self.table, self.family, self.helper_in(), def, level);
        self.flow.extend(value.flow.iter().copied());
        self.elsewhere.extend(value.elsewhere);
        self.wants.extend(value.wants);
        if let Some((line, kind)) = value.source {
            self.source.get_or_insert((line, kind));
            return;
        }
        if let Some(unknown) = value.unknown {
            self.unknown(format!("{unknown} in `{name}` (line {def})"));
            return;
        }
        for i in value.uses {
            match args.get(i) {
                Some(arg) => self.expr(arg, &[], depth + 1),
                None => self.unknown(format!(
                    "a call to `{name}` with fewer arguments than it reads"
                )),
            }
        }
    }

    /// What the helper defined at line `def` returns: each `return` that
    /// runs, followed within the helper, with its parameters recorded
    /// rather than left uncertain.
    fn helper_value(
        table: &SourceTable,
        family: Family,
        file: HelperFile<'_>,
        def: u32,
        level: u32,
    ) -> HelperValue {
        let HelperFile {
            path,
            files,
            patterns,
            shown,
            go,
        } = file;
        let mut out = HelperValue::default();
        let order = ordered_params(shown, def, go);
        let end = body_end(family, shown, def);
        let returns: Vec<u32> = shown
            .range(def.saturating_add(1)..=end)
            .filter(|(_, t)| {
                let code = code_of(t, family).0;
                let t = code.trim_start();
                t.strip_prefix("return")
                    .is_some_and(|r| r.starts_with([' ', '(', '"', '\'']))
            })
            .map(|(n, _)| *n)
            .collect();
        let mut read = 0;
        for r in returns {
            let Some(text) = shown.get(&r) else {
                continue;
            };
            let (text, code, interps) = joined(family, shown, r, text);
            let text = text.as_str();
            let value = code
                .trim_start()
                .trim_start_matches("return")
                .trim()
                .trim_end_matches(';')
                .to_string();
            read += 1;
            out.flow.insert(r);
            if let Some(kind) = table.source_in(&table.unsanitized(text)) {
                out.source.get_or_insert((r, kind.to_string()));
                return out;
            }
            let mut sub = Trace {
                table,
                family,
                lines: shown,
                shown,
                path,
                files,
                patterns,
                go,
                start: def,
                end: r,
                at: r,
                params: order.iter().cloned().collect(),
                visited: BTreeSet::new(),
                source: None,
                unknown: None,
                flow: BTreeSet::new(),
                helper: Some((level, BTreeSet::new())),
                elsewhere: Vec::new(),
                wants: BTreeSet::new(),
            };
            sub.expr(&value, &interps, 0);
            out.flow.extend(sub.flow.iter().copied());
            out.elsewhere.extend(std::mem::take(&mut sub.elsewhere));
            out.wants.extend(std::mem::take(&mut sub.wants));
            if let Some(source) = sub.source {
                out.source = Some(source);
                return out;
            }
            if out.unknown.is_none() {
                out.unknown = sub.unknown;
            }
            if let Some((_, uses)) = sub.helper {
                for name in uses {
                    if let Some(i) = order.iter().position(|p| *p == name) {
                        out.uses.insert(i);
                    }
                }
            }
        }
        if read == 0 {
            out.unknown
                .get_or_insert_with(|| "a value the rule engine cannot read".to_string());
        }
        out
    }

    /// Whether the function assigns `name` somewhere.
    /// (A Java `for (T name : items)` sets it too.)
    fn sets(&self, name: &str) -> bool {
        let Some(re) = self.patterns.get(format!(
            r"(?:^|[^\w$.]){0}\s*(?:\[[^\]]*\])?\s*(?:=|\+=|:=)(?:[^=]|$)|\bfor\s*\([^;]*[^\w$.]{0}\s*:[^:]",
            regex::escape(name)
        )) else {
            return false;
        };
        // A function whose header is the flagged line sets nothing above it.
        let from = self.start.saturating_add(1);
        from < self.end
            && self
                .lines
                .range(from..self.end)
                .any(|(_, t)| re.is_match(&code_of(t, self.family).0))
    }

    fn unknown(&mut self, what: String) {
        self.unknown.get_or_insert(what);
    }

    /// The function's lines `from..before` (none when that is empty).
    fn body(&self, from: u32, before: u32) -> Vec<(u32, String)> {
        if from >= before {
            return Vec::new();
        }
        self.lines
            .range(from..before)
            .map(|(n, t)| (*n, t.clone()))
            .collect()
    }

    /// Follows `code`, the value of line `n`, with the variables in it
    /// taken as they are at that line.
    fn expr_at(&mut self, n: u32, code: &str, interps: &[String], depth: u32) {
        let saved = std::mem::replace(&mut self.at, n);
        self.expr(code, interps, depth);
        self.at = saved;
    }

    /// The last line above `before` that assigns the variable `word`
    /// matches (a plain `=`, not `+=`) and always runs on the way to
    /// `before`: not in a branch, a loop or a `case` that `before` is
    /// outside of, and not the body of a one-line `if`.
    fn last_unconditional(&self, word: &Regex, before: u32) -> Option<u32> {
        let lines = self.body(self.start.saturating_add(1), before);
        for (k, (n, raw)) in lines.iter().enumerate().rev() {
            let (code, _) = code_of(raw, self.family);
            let Some(m) = word.find(&code) else { continue };
            let after = code[m.end()..].trim_start();
            let plain =
                (after.starts_with('=') && !after.starts_with("==")) || after.starts_with(":=");
            if !plain {
                continue;
            }
            let prefix = code[..m.start()].trim();
            let first = prefix
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .next()
                .unwrap_or("");
            if prefix.contains(['{', '}', '(', ')', ':', '?', ','])
                || CONTROL.contains(&first)
                || matches!(first, "case" | "default" | "elif")
            {
                continue;
            }
            // The line above: a header whose one-statement body this is.
            let header = lines[..k]
                .iter()
                .rev()
                .map(|(_, t)| code_of(t, self.family).0)
                .find(|c| !c.trim().is_empty());
            if self.family == Family::Braces
                && header.as_deref().is_some_and(|h| {
                    let h = h.trim();
                    let w = h.trim_start_matches('}').trim_start();
                    ["if", "else", "for", "while", "do"].iter().any(|c| {
                        w.starts_with(c)
                            && !w[c.len()..].starts_with(|x: char| x.is_alphanumeric() || x == '_')
                    }) && !h.ends_with(['{', ';', '}'])
                })
            {
                continue;
            }
            if self.encloses(*n, before) {
                return Some(*n);
            }
        }
        None
    }

    /// Whether the block line `n` is in is still open at line `before`
    /// (brace depth, or Python's indentation, never drops below `n`'s on
    /// the way).
    fn encloses(&self, n: u32, before: u32) -> bool {
        let between = self.body(n, before.saturating_add(1));
        match self.family {
            Family::Indent => {
                let indent = |t: &str| t.len() - t.trim_start().len();
                let own = self.lines.get(&n).map_or(0, |t| indent(t));
                between
                    .iter()
                    .filter(|(_, t)| !t.trim().is_empty())
                    .all(|(_, t)| indent(t) >= own)
            }
            Family::Braces => {
                let mut depth = 0i64;
                for (m, t) in &between {
                    if *m != n && depth < 0 {
                        return false;
                    }
                    for c in code_of(t, self.family).0.chars() {
                        match c {
                            '{' => depth += 1,
                            '}' => depth -= 1,
                            _ => {}
                        }
                        // A block closed below `n`'s own depth.
                        if depth < 0 && *m != before {
                            return false;
                        }
                    }
                }
                true
            }
        }
    }

    /// Follows a variable back to where the function sets it.
    fn variable(&mut self, name: &str, depth: u32) {
        if self.source.is_some() || !self.visited.insert((name.to_string(), self.at)) {
            return;
        }
        if depth > 8 {
            self.unknown(format!("`{name}` (followed too far)"));
            return;
        }
        let Some(word) = self
            .patterns
            .get(format!(r"(?:^|[^\w$.]){}\b", regex::escape(name)))
        else {
            return;
        };
        let mut set = false;
        let mut declared = false;
        // A value written into it by a call: `strcat(v, x)`, `v.append(x)`.
        let filled = self.patterns.get(format!(
            r"(?:\b[A-Za-z_]\w*\s*\(\s*&?\s*{0}\s*,(.*)\)|(?:^|[^\w$.]){0}\s*\.\s*(?:append|push|extend|add|insert|concat|write|put|update|push_str)\s*\((.*)\))",
            regex::escape(name)
        ));
        // The header (its parameters) is not where the body sets values;
        // above the line followed from, the last assignment that always
        // runs hides those before it.
        let before = self.at;
        let from = self
            .last_unconditional(&word, before)
            .unwrap_or(self.start.saturating_add(1));
        let lines = self.body(from, before);
        for (n, raw) in lines {
            let (raw, code, interps) = joined(self.family, self.lines, n, &raw);
            let Some(at) = word.find(&code) else { continue };
            let after = code[at.end()..].trim_start();
            let after = after
                .strip_prefix('[')
                .and_then(|r| r.split_once(']').map(|(_, rest)| rest.trim_start()))
                .unwrap_or(after);
            let assigned = ["=", "+=", ":=", ".="]
                .iter()
                .any(|op| after.starts_with(op) && !after[op.len()..].starts_with('='));
            // Java's `for (Cookie c : cookies)` takes each of `cookies`.
            let each = self.family == Family::Braces
                && code.trim_start().starts_with("for")
                && after.starts_with(':')
                && !after.starts_with("::");
            let looped = each
                || (code.trim_start().starts_with("for ")
                    && (code.contains(" in ") || code.contains("range")));
            if assigned || looped {
                set = true;
                self.flow.insert(n);
                if let Some(kind) = self.table.source_in(&self.table.unsanitized(&raw)) {
                    self.source.get_or_insert((n, kind.to_string()));
                    return;
                }
                let rhs = right_side(&code, after, each, looped);
                self.expr_at(n, &rhs, &interps, depth + 1);
            } else if let Some(args) = filled
                .as_ref()
                .and_then(|re| re.captures(&code))
                .and_then(|c| c.get(1).or_else(|| c.get(2)))
            {
                set = true;
                self.flow.insert(n);
                if let Some(kind) = self.table.source_in(&raw) {
                    self.source.get_or_insert((n, kind.to_string()));
                    return;
                }
                let args = args.as_str().to_string();
                self.expr_at(n, &args, &interps, depth + 1);
            } else if code.contains('(')
                && !after.starts_with('.')
                && self.table.source_in(&raw).is_some()
            {
                // (Not `java` of `java.util.List<String> v = source()`:
                // a package's name is not what the call fills.)
                // Filled by a source call: `fgets(buf, n, stdin)`.
                self.flow.insert(n);
                let kind = self.table.source_in(&raw).unwrap_or_default().to_string();
                self.source.get_or_insert((n, kind));
                return;
            } else if after.starts_with(';') && is_declaration(&code[..at.end() - name.len()]) {
                declared = true;
            }
        }
        if set || declared {
            return;
        }
        if !self.params.contains(name) && self.constant_above(name, depth) {
            return;
        }
        if self.params.contains(name) {
            match &mut self.helper {
                Some((_, uses)) => {
                    uses.insert(name.to_string());
                }
                None => self.unknown(format!("the parameter `{name}`")),
            }
        } else {
            self.unknown(format!("`{name}`, which the function does not set"));
        }
    }
}

/// What an assignment or loop header `code` gives its variable, from
/// `after` (the text after the variable's name): a Java for-each's items,
/// a `for … in`'s iterable, else the assignment's right side.
fn right_side(code: &str, after: &str, each: bool, looped: bool) -> String {
    if each {
        after
            .get(1..)
            .unwrap_or("")
            .trim_end()
            .trim_end_matches('{')
            .trim_end()
            .trim_end_matches(')')
            .to_string()
    } else if looped {
        code.split_once(" in ")
            .map(|(_, r)| r)
            .or_else(|| code.split_once("range").map(|(_, r)| r))
            .unwrap_or("")
            .to_string()
    } else {
        let op = ["+=", ":=", ".=", "="]
            .iter()
            .find(|op| after.starts_with(**op))
            .map_or(1, |op| op.len());
        after.get(op..).unwrap_or("").to_string()
    }
}

/// The arguments of the call whose `(` is at byte `open` of `text`, split
/// at its top-level commas (none for `()`), and the byte after its `)`.
fn call_args_at(text: &str, open: usize) -> Option<(Vec<String>, usize)> {
    let (args, close) = split_args(text, open)?;
    let args = if args.len() == 1 && args[0].trim().is_empty() {
        Vec::new()
    } else {
        args
    };
    Some((args, close?))
}

/// The arguments of the call whose `(` is at byte `open` of `text`, split
/// at its top-level commas (`()` gives one empty argument), and the byte
/// after its `)`, `None` when the text ends before the call closes (the
/// arguments are then those written so far).
fn split_args(text: &str, open: usize) -> Option<(Vec<String>, Option<usize>)> {
    if text.get(open..open + 1) != Some("(") {
        return None;
    }
    let mut depth = 0i32;
    let mut args = vec![String::new()];
    for (i, ch) in text.get(open..)?.char_indices() {
        match ch {
            '(' | '[' | '{' => {
                depth += 1;
                if depth == 1 {
                    continue;
                }
            }
            ')' | ']' | '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some((args, Some(open + i + 1)));
                }
            }
            ',' if depth == 1 => {
                args.push(String::new());
                continue;
            }
            _ => {}
        }
        if let Some(last) = args.last_mut() {
            last.push(ch);
        }
    }
    Some((args, None))
}

/// The class `C` when `recv` (the text before a `.`) ends with `new C()`.
fn local_object_before(recv: &str) -> Option<&str> {
    let inner = recv.strip_suffix(')')?.trim_end().strip_suffix('(')?;
    let inner = inner.trim_end();
    let class_at = inner
        .char_indices()
        .rev()
        .take_while(|(_, c)| c.is_alphanumeric() || *c == '_' || *c == '$')
        .last()
        .map(|(i, _)| i)?;
    let class = &inner[class_at..];
    let before = inner[..class_at].trim_end();
    let is_new = before
        .strip_suffix("new")
        .is_some_and(|b| !b.ends_with(|c: char| c.is_alphanumeric() || c == '_'));
    is_new.then_some(class)
}

/// The names of the parameters of the function whose header is at line
/// `def`, in order: `Type name` (C, Java, C#) gives the last name of each,
/// `name: Type`, `name = default`, an untyped name and Go's `name Type`
/// the first; a leading `self`, `cls` or `this` is not an argument.
fn ordered_params(lines: &BTreeMap<u32, String>, def: u32, go: bool) -> Vec<String> {
    let mut header = String::new();
    for (_, text) in lines.range(def..).take(6) {
        header.push_str(text);
        header.push(' ');
        if text.contains('{') || text.trim_end().ends_with(':') {
            break;
        }
    }
    // Go's receiver comes before the name: its list is the second.
    let from = if go && header.trim_start().starts_with("func (") {
        header
            .find(')')
            .and_then(|r| header[r..].find('(').map(|o| r + o))
    } else {
        header.find('(')
    };
    let Some((params, _)) = from.and_then(|o| call_args_at(&header, o)) else {
        return Vec::new();
    };
    let mut out: Vec<String> = params
        .iter()
        .filter_map(|p| {
            let p = ANNOTATION.replace_all(p, " ");
            let p = p.split('=').next().unwrap_or("");
            let typed = p.contains(':') && !p.contains("::");
            let part = if typed {
                p.split(':').next().unwrap_or("")
            } else {
                p
            };
            let found: Vec<&str> = names(part)
                .filter(|n| !matches!(*n, "final" | "mut" | "const" | "var" | "val"))
                .collect();
            if typed || go || found.len() == 1 {
                found.first().map(|n| n.to_string())
            } else {
                found.last().map(|n| n.to_string())
            }
        })
        .collect();
    if out
        .first()
        .is_some_and(|p| matches!(p.as_str(), "self" | "cls" | "this"))
    {
        out.remove(0);
    }
    out
}

/// The last line of the body of the function whose header is at `def`.
fn body_end(family: Family, lines: &BTreeMap<u32, String>, def: u32) -> u32 {
    match family {
        Family::Indent => {
            let indent = |t: &str| t.len() - t.trim_start().len();
            let own = lines.get(&def).map_or(0, |t| indent(t));
            let mut end = def;
            for (&n, t) in lines.range(def.saturating_add(1)..) {
                if t.trim().is_empty() {
                    continue;
                }
                if indent(t) <= own {
                    break;
                }
                end = n;
            }
            end
        }
        Family::Braces => {
            let mut depth = 0i64;
            let mut opened = false;
            for (&n, t) in lines.range(def..) {
                for c in code_of(t, family).0.chars() {
                    match c {
                        '{' => {
                            depth += 1;
                            opened = true;
                        }
                        '}' => depth -= 1,
                        _ => {}
                    }
                    if opened && depth <= 0 {
                        return n;
                    }
                }
            }
            lines.keys().next_back().copied().unwrap_or(def)
        }
    }
}

/// The line below `line`, in the same block, that checks the path
/// assigned at `line` stays under a base directory (its canonical or
/// real form's `startsWith`), if there is one.
fn contained_below(family: Family, lines: &BTreeMap<u32, String>, line: u32) -> Option<u32> {
    let (code, _) = code_of(lines.get(&line)?, family);
    let head = code.split('(').next().unwrap_or(&code);
    let cut = assignment_end(head)?;
    let lhs = head[..cut.saturating_sub(1)].trim_end_matches([':', '+', '.']);
    let var = names(lhs).last()?;
    let check = Regex::new(&format!(
        r"(?:\b{0}\s*\.\s*(?:getCanonicalPath|getCanonicalFile|toRealPath|normalize|toAbsolutePath)\s*\([^)]*\)(?:\s*\.\s*\w+\s*\([^)]*\))*\s*\.\s*startsWith|\b(?:realpath|abspath|normpath)\s*\(\s*{0}\s*\)\s*\)?\s*\.\s*startswith)\s*\(",
        regex::escape(var)
    ))
    .ok()?;
    let mut depth = 0i64;
    for (&n, t) in lines.range(line.saturating_add(1)..) {
        let (code, _) = code_of(t, family);
        if check.is_match(&code) {
            return Some(n);
        }
        if family == Family::Braces {
            for c in code.chars() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            if depth < 0 {
                return None;
            }
        }
    }
    None
}

/// Type arguments right before a call's `(` (one level of nesting).
static TYPE_ARGS: LazyLock<Regex> =
    LazyLock::new(|| builtin_regex(r"\s*<[\w\s,.?\[\]]*(?:<[\w\s,.?\[\]]*>[\w\s,.?\[\]]*)*>\s*\("));

static ANNOTATION: LazyLock<Regex> = LazyLock::new(|| builtin_regex(r#"@[\w.]+(?:\([^)]*\))?"#));

/// Whether the code before a name reads as its type in a declaration
/// without a value (`char buf[64];`, `int n;`), not a use (`return n;`,
/// `x = a + n;`).
fn is_declaration(before: &str) -> bool {
    let t = before.trim();
    let last = t
        .rsplit(|c: char| !(c.is_alphanumeric() || c == '_'))
        .next()
        .unwrap_or("");
    !t.is_empty()
        && !t.contains(['=', '(', '+', ','])
        && t.ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == '*' || c == '>')
        && !matches!(
            last,
            "return" | "delete" | "throw" | "yield" | "case" | "goto"
        )
}

fn starts_upper(name: &str) -> bool {
    name.chars().next().is_some_and(char::is_uppercase)
}

/// `text` as the only file shown, and its line that holds `SINK`: a test's
/// finding to judge.
#[cfg(test)]
pub(crate) fn marked(path: &str, text: &str) -> (Files, u32) {
    let line = text
        .lines()
        .position(|l| l.contains("SINK"))
        .and_then(|i| u32::try_from(i + 1).ok())
        .unwrap_or_else(|| panic!("no SINK in {text}"));
    let files = Files::from([(path.to_string(), crate::util::numbered(text))]);
    (files, line)
}

pub(crate) fn is_constant(name: &str) -> bool {
    name.chars().any(char::is_alphabetic)
        && name
            .chars()
            .all(|c| c.is_uppercase() || c.is_ascii_digit() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A built-in pattern that does not compile is a bug that fails loudly
    /// on first use: force every one here, so none can ship.
    #[test]
    fn every_builtin_pattern_compiles() {
        for re in [&NAME, &ASSIGN, &TOKEN, &KWARG, &ANNOTATION, &TYPE_ARGS] {
            std::sync::LazyLock::force(re);
        }
    }

    fn judge_text(path: &str, text: &str, rule: &str) -> Judged {
        let table = SourceTable::bundled().unwrap();
        let (files, line) = marked(path, text);
        judge(
            table,
            &Patterns::default(),
            &Trees::default(),
            path,
            &files,
            line,
            Some(rule),
        )
    }

    #[test]
    fn the_bundled_table_parses() {
        assert!(SourceTable::bundled().is_ok());
        assert!(
            SourceTable::parse(
                "sink_rules = []\npure_calls = []\n[[source]]\nkind = \"x\"\npatterns = [\"(\"]\n"
            )
            .is_err()
        );
    }

    #[test]
    fn a_source_confirms_only_in_the_value_the_sink_takes() {
        // The sink's own call reads a file: that is what it does, not where
        // its path comes from.
        let j = judge_text(
            "Env.java",
            "class Env {\n    static String read(String name) throws Exception {\n        byte[] b = Files.readAllBytes(Paths.get(name)); // SINK\n        return new String(b);\n    }\n}\n",
            "path/jvm-file-from-input",
        );
        assert_eq!(j.verdict, "uncertain", "{j:?}");
        assert!(j.why.contains("parameter `name`"), "{j:?}");
        // A source in the value still confirms, and so does one inside a
        // string of the line (PHP interpolates it); a source on the line
        // outside the value read (here the sink is the source) never lets
        // the check refute.
        for (path, text, rule, verdict) in [
            (
                "Env.java",
                "class Env {\n    void get(HttpServletRequest request) throws Exception {\n        byte[] b = Files.readAllBytes(Paths.get(request.getParameter(\"f\"))); // SINK\n    }\n}\n",
                "path/jvm-file-from-input",
                "confirmed",
            ),
            (
                "q.php",
                "<?php\nfunction q($db) {\n    $r = mysqli_query($db, \"SELECT * FROM t WHERE id = '$_GET[id]'\"); // SINK\n}\n",
                "sql/interpolation",
                "confirmed",
            ),
            (
                "main.c",
                "#include <stdio.h>\nint main(void) {\n    char line[80];\n    gets(line); // SINK\n    return 0;\n}\n",
                "c/gets",
                "uncertain",
            ),
        ] {
            let j = judge_text(path, text, rule);
            assert_eq!(j.verdict, verdict, "{path}: {j:?}");
        }
    }

    #[test]
    fn a_parameter_named_like_another_languages_keyword_is_a_parameter() {
        // `ref` is a keyword of Rust and C#, `fn` a name in JavaScript:
        // here each is what the caller passed, never a constant.
        for (path, text, rule, param) in [
            (
                "git.go",
                "package deploy\n\nimport \"os/exec\"\n\nfunc Checkout(ref string) error {\n\treturn exec.Command(\"sh\", \"-c\", \"git checkout \"+ref).Run() // SINK\n}\n",
                "exec/shell-dash-c",
                "ref",
            ),
            (
                "run.js",
                "const { exec } = require(\"child_process\");\nfunction run(fn) {\n  exec(\"convert \" + fn); // SINK\n}\n",
                "exec/node-child-process",
                "fn",
            ),
        ] {
            let j = judge_text(path, text, rule);
            assert_eq!(j.verdict, "uncertain", "{path}: {j:?}");
            assert!(
                j.why.contains(&format!("parameter `{param}`")),
                "{path}: {j:?}"
            );
        }
    }

    #[test]
    fn python_argv_confirms() {
        let j = judge_text(
            "app.py",
            "import sys, os\n\ndef run():\n    name = sys.argv[1]\n    cmd = \"ls \" + name\n    os.system(cmd)  # SINK\n",
            "exec/python-os-system",
        );
        assert_eq!(j.verdict, "confirmed", "{j:?}");
        assert_eq!(j.flow, vec![4, 5, 6]);
    }

    #[test]
    fn python_constants_refute_and_fstrings_are_read() {
        // An f-string of constants is not refuted (see
        // `an_interpolated_or_formatted_value_is_uncertain_never_refuted`);
        // the same constants concatenated are.
        let j = judge_text(
            "app.py",
            "TABLE = 'users'\n\ndef count(cursor):\n    limit = 10\n    q = \"SELECT * FROM \" + TABLE + \" LIMIT \" + str(limit)\n    cursor.execute(q)  # SINK\n",
            "sql/python-format",
        );
        assert_eq!(j.verdict, "refuted", "{j:?}");
        let j = judge_text(
            "app.py",
            "def find(cursor):\n    name = input('who? ')\n    q = f\"SELECT * FROM t WHERE n = '{name}'\"\n    cursor.execute(q)  # SINK\n",
            "sql/python-format",
        );
        assert_eq!(j.verdict, "confirmed", "{j:?}");
    }

    #[test]
    fn python_parameters_and_the_enclosing_function_bound_the_search() {
        let j = judge_text(
            "app.py",
            "def find(cursor, name):\n    q = \"SELECT * FROM t WHERE n = '\" + name + \"'\"\n    cursor.execute(q)  # SINK\n",
            "sql/concat",
        );
        assert_eq!(j.verdict, "uncertain");
        assert!(j.why.contains("parameter `name`"), "{j:?}");
        // An argv read in another function does not reach this one.
        let j = judge_text(
            "app.py",
            "def other():\n    q = sys.argv[1]\n\ndef run(cursor):\n    q = 'SELECT 1'\n    cursor.execute(q)  # SINK\n",
            "sql/concat",
        );
        assert_eq!(j.verdict, "refuted", "{j:?}");
    }

    #[test]
    fn c_like_request_confirms_and_literals_refute() {
        let java = "class A {\n  void doGet(HttpServletRequest request, Statement st) throws Exception {\n    String id = request.getParameter(\"id\");\n    if (id != null) {\n      String sql = \"SELECT * FROM t WHERE id = '\" + id + \"'\";\n      st.executeQuery(sql); // SINK\n    }\n  }\n}\n";
        let j = judge_text("A.java", java, "sql/concat");
        assert_eq!(j.verdict, "confirmed", "{j:?}");
        assert_eq!(j.flow, vec![3, 5, 6]);
        let safe = "class A {\n  void run(Statement st) throws Exception {\n    String id = \"42\";\n    String sql = \"SELECT * FROM t WHERE id = '\" + id + \"'\";\n    st.executeQuery(sql); // SINK\n  }\n}\n";
        assert_eq!(judge_text("A.java", safe, "sql/concat").verdict, "refuted");
    }

    #[test]
    fn c_sources_fill_buffers_and_other_functions_do_not_count() {
        let c = "#include <stdio.h>\nvoid f(void) {\n  char buf[64];\n  char dst[16];\n  fgets(buf, sizeof buf, stdin);\n  strcpy(dst, buf); // SINK\n}\n";
        assert_eq!(
            judge_text("a.c", c, "c/unbounded-copy").verdict,
            "confirmed"
        );
        let c = "int g(void) {\n  char *s = getenv(\"X\");\n  return 0;\n}\nvoid f(void) {\n  char dst[16];\n  strcpy(dst, \"hello\"); // SINK\n}\n";
        let j = judge_text("a.c", c, "c/unbounded-copy");
        assert_eq!(j.verdict, "refuted", "{j:?}");
    }

    #[test]
    fn go_and_js_unknown_calls_stay_uncertain() {
        let go = "func h(w http.ResponseWriter, r *http.Request) {\n\tid := lookup()\n\tdb.Query(\"SELECT \" + id) // SINK\n}\n";
        let j = judge_text("a.go", go, "sql/concat");
        assert_eq!(j.verdict, "uncertain");
        assert!(j.why.contains("lookup"), "{j:?}");
        let js = "function h(req, res) {\n  const q = `SELECT * FROM t WHERE id = ${req.query.id}`;\n  db.query(q); // SINK\n}\n";
        assert_eq!(
            judge_text("a.js", js, "sql/js-template").verdict,
            "confirmed"
        );
    }

    #[test]
    fn a_sink_calls_receiver_is_not_its_value_and_constants_above_the_function_count() {
        let java = "class A {\n  String run(String host) throws Exception {\n    Process p = Runtime.getRuntime().exec(\"ping \" + host); // SINK\n    return \"\";\n  }\n}\n";
        let j = judge_text("A.java", java, "java/runtime-exec");
        assert!(j.why.contains("parameter `host`"), "{j:?}");
        let java = "class A {\n  String run() throws Exception {\n    Process p = Runtime.getRuntime().exec(\"uptime\"); // SINK\n    return \"\";\n  }\n}\n";
        assert_eq!(
            judge_text("A.java", java, "java/runtime-exec").verdict,
            "refuted"
        );
        // A property written is the sink: its whole right side is the value.
        let js = "function show() {\n  const params = new URLSearchParams(window.location.search);\n  box.innerHTML = params.get('msg'); // SINK\n}\n";
        assert_eq!(
            judge_text("a.js", js, "web/inner-html").verdict,
            "confirmed"
        );
        let c = "static const char *cmd = \"sync\";\n\nint f(void)\n{\n    return system(cmd); // SINK\n}\n";
        assert_eq!(judge_text("a.c", c, "exec/c-system").verdict, "refuted");
        let c = "static char *cmd;\n\nint f(void)\n{\n    return system(cmd); // SINK\n}\n";
        assert_eq!(judge_text("a.c", c, "exec/c-system").verdict, "uncertain");
        let py = "import os\nCMD = os.environ['CMD']\n\ndef f():\n    os.system(CMD)  # SINK\n";
        // An UPPER_CASE name is taken for a constant without looking: a
        // documented limit of the heuristic.
        assert_eq!(
            judge_text("a.py", py, "exec/python-os-system").verdict,
            "refuted"
        );
        let py = "import os\ncmd = os.environ['CMD']\n\ndef f():\n    os.system(cmd)  # SINK\n";
        assert_eq!(
            judge_text("a.py", py, "exec/python-os-system").verdict,
            "confirmed"
        );
    }

    #[test]
    fn sanitizers_make_a_value_safe() {
        let py = "def f(request):\n    q = html.escape(request.args['q'])\n    return '<b>' + q  # SINK\n";
        assert_eq!(
            judge_text("a.py", py, "xss/python-html-response").verdict,
            "refuted"
        );
        let py =
            "def f(request):\n    q = request.args['q'].strip()\n    return '<b>' + q  # SINK\n";
        assert_eq!(
            judge_text("a.py", py, "xss/python-html-response").verdict,
            "confirmed"
        );
    }

    /// Each shape of `eval/shapes` as a twin: the first text is refuted,
    /// the second (the same but for the shape) confirmed.
    fn twins(path: &str, rule: &str, refuted: &str, confirmed: &str) {
        let j = judge_text(path, refuted, rule);
        assert_eq!(j.verdict, "refuted", "{refuted}\n{j:?}");
        let j = judge_text(path, confirmed, rule);
        assert_eq!(j.verdict, "confirmed", "{confirmed}\n{j:?}");
    }

    const SERVLET: &str = "class A {\n  void doPost(HttpServletRequest request) throws Exception {\n    String param = request.getParameter(\"v\");\n    String bar;\nBODY\n    String sql = \"SELECT * FROM t WHERE n = '\" + bar + \"'\"; // SINK\n  }\n}\n";

    fn servlet(body: &str) -> String {
        SERVLET.replace("BODY", body)
    }

    #[test]
    fn the_last_assignment_that_always_runs_wins() {
        twins(
            "A.java",
            "sql/concat",
            &servlet("    bar = param;\n    bar = \"fixed\";"),
            &servlet("    bar = param;\n    bar = bar.trim();"),
        );
        // An overwrite in a branch does not hide the input.
        let j = judge_text(
            "A.java",
            &servlet("    bar = param;\n    if (bar.isEmpty()) {\n      bar = \"fixed\";\n    }"),
            "sql/concat",
        );
        assert_eq!(j.verdict, "confirmed", "{j:?}");
        let j = judge_text(
            "A.java",
            &servlet("    bar = param;\n    if (bar.isEmpty()) bar = \"fixed\";"),
            "sql/concat",
        );
        assert_eq!(j.verdict, "confirmed", "{j:?}");
        let py = "def f():\n    bar = input()\n    for x in range(3):\n        bar = 'fixed'\n    os.system('ping ' + bar)  # SINK\n";
        assert_eq!(
            judge_text("a.py", py, "exec/python-os-system").verdict,
            "confirmed"
        );
    }

    #[test]
    fn bound_parameters_are_not_the_query() {
        twins(
            "a.py",
            "sql/concat",
            "def f(cur):\n    bar = input()\n    cur.execute('SELECT * FROM t WHERE n = ?', (bar,))  # SINK\n",
            "def f(cur):\n    bar = input()\n    cur.execute('SELECT * FROM t WHERE n = ' + bar, ())  # SINK\n",
        );
        twins(
            "a.go",
            "sql/concat",
            "func f(r *http.Request) {\n\tbar := r.FormValue(\"v\")\n\tdb.Query(\"SELECT * FROM t WHERE n = $1\", bar) // SINK\n}\n",
            "func f(r *http.Request) {\n\tbar := r.FormValue(\"v\")\n\tdb.Query(\"SELECT * FROM t WHERE n = '\" + bar + \"'\") // SINK\n}\n",
        );
    }

    #[test]
    fn a_sanitizer_on_every_path_refutes_and_a_writer_is_not_the_value() {
        let body = "    if (param.length() > 3) {\n      bar = org.owasp.esapi.ESAPI.encoder().encodeForHTML(param);\n    } else {\n      bar = org.springframework.web.util.HtmlUtils.htmlEscape(param);\n    }";
        twins(
            "A.java",
            "sql/concat",
            &servlet(body),
            &servlet(&body.replace(
                "org.springframework.web.util.HtmlUtils.htmlEscape(param)",
                "param",
            )),
        );
        let go = "func f(w http.ResponseWriter, r *http.Request) {\n\tbar := html.EscapeString(r.FormValue(\"v\"))\n\tfmt.Fprintf(w, \"<p>%s</p>\", bar) // SINK\n}\n";
        twins(
            "a.go",
            "xss/go-response-html",
            go,
            &go.replace(
                "html.EscapeString(r.FormValue(\"v\"))",
                "r.FormValue(\"v\")",
            ),
        );
    }

    /// A servlet whose `bar` comes from a helper of the same file.
    fn with_helper(call: &str, helper: &str) -> String {
        format!(
            "class A {{\n  void doPost(HttpServletRequest request) throws Exception {{\n    String param = request.getParameter(\"v\");\n    String bar = {call};\n    String sql = \"SELECT * FROM t WHERE n = '\" + bar + \"'\"; // SINK\n  }}\n\n{helper}\n}}\n"
        )
    }

    #[test]
    fn a_helper_of_the_same_file_is_followed_into_its_return_value() {
        let inner = "  private class Test {\n    public String doSomething(HttpServletRequest request, String param) throws Exception {\n      String bar = \"safe!\";\n      bar = \"fixed\";\n      return bar;\n    }\n  }";
        twins(
            "A.java",
            "sql/concat",
            &with_helper("new Test().doSomething(request, param)", inner),
            &with_helper(
                "new Test().doSomething(request, param)",
                &inner.replace("bar = \"fixed\";", "bar = param;"),
            ),
        );
        // A static helper, called without a receiver.
        let helper = "  private static String clean(String value, int n) {\n    if (n > 100) {\n      return \"none\";\n    }\n    return value.trim();\n  }";
        let j = judge_text(
            "A.java",
            &with_helper("clean(param, 3)", helper),
            "sql/concat",
        );
        assert_eq!(j.verdict, "confirmed", "{j:?}");
        assert_eq!(
            judge_text(
                "A.java",
                &with_helper("clean(\"fixed\", 3)", helper),
                "sql/concat"
            )
            .verdict,
            "refuted"
        );
        // A helper that reads the request itself confirms whatever it is
        // given; one that returns a field stays uncertain.
        let reads = "  private String fetch(HttpServletRequest r) {\n    return r.getHeader(\"X-Name\");\n  }";
        assert_eq!(
            judge_text(
                "A.java",
                &with_helper("fetch(request)", reads),
                "sql/concat"
            )
            .verdict,
            "confirmed"
        );
        let field = "  private String name;\n  private String current(String ignored) {\n    return this.name;\n  }";
        let j = judge_text(
            "A.java",
            &with_helper("current(param)", field),
            "sql/concat",
        );
        assert_eq!(j.verdict, "uncertain", "{j:?}");
        assert!(j.why.contains("in `current`"), "{j:?}");
        // A method the file does not define, or defines twice, is not
        // followed.
        let j = judge_text(
            "A.java",
            &with_helper("thing.doSomething(\"fixed\")", ""),
            "sql/concat",
        );
        assert_eq!(j.verdict, "uncertain", "{j:?}");
        let twice = "  String pick(String a) {\n    return \"x\";\n  }\n  String pick(int a) {\n    return \"y\";\n  }";
        assert_eq!(
            judge_text("A.java", &with_helper("pick(\"k\")", twice), "sql/concat").verdict,
            "uncertain"
        );
        // A helper that calls itself is followed only so far.
        let recursive = "  String loop(String a) {\n    return loop(a);\n  }";
        let j = judge_text(
            "A.java",
            &with_helper("loop(\"k\")", recursive),
            "sql/concat",
        );
        assert_eq!(j.verdict, "uncertain", "{j:?}");
        assert!(j.why.contains("followed too far"), "{j:?}");
    }

    #[test]
    fn python_and_go_helpers_map_their_parameters_to_the_arguments() {
        let py = "import os\n\ndef pick(self_value, other):\n    return other\n\ndef run(request):\n    name = request.args['n']\n    os.system('ls ' + pick(name, 'x'))  # SINK\n";
        assert_eq!(
            judge_text("a.py", py, "exec/python-os-system").verdict,
            "refuted"
        );
        assert_eq!(
            judge_text(
                "a.py",
                &py.replace("pick(name, 'x')", "pick('x', name)"),
                "exec/python-os-system"
            )
            .verdict,
            "confirmed"
        );
        let go = "func (s *Server) clean(ctx context.Context, v string) string {\n\treturn v\n}\n\nfunc h(w http.ResponseWriter, r *http.Request) {\n\tbar := r.FormValue(\"v\")\n\tdb.Query(\"SELECT * FROM t WHERE n = '\" + s.clean(nil, bar) + \"'\") // SINK\n}\n";
        // `s` is no class of the file: the call is not followed.
        assert_eq!(judge_text("a.go", go, "sql/concat").verdict, "confirmed");
        let go = "func clean(ctx context.Context, v string) string {\n\treturn \"fixed\"\n}\n\nfunc h(w http.ResponseWriter, r *http.Request) {\n\tbar := r.FormValue(\"v\")\n\tdb.Query(\"SELECT * FROM t WHERE n = '\" + clean(nil, bar) + \"'\") // SINK\n}\n";
        assert_eq!(judge_text("a.go", go, "sql/concat").verdict, "refuted");
    }

    #[test]
    fn qualified_class_members_are_constants_and_a_static_call_is_not() {
        let body = "    bar = \"fixed\";\n    String cmd = org.example.helpers.Utils.osCommand(\"echo\");\n    String dir = org.example.helpers.Utils.TEST_DIR + java.io.File.separator;";
        let sink = "    Runtime.getRuntime().exec(cmd + dir + bar); // SINK";
        let text = servlet(body).replace(
            "    String sql = \"SELECT * FROM t WHERE n = '\" + bar + \"'\"; // SINK",
            sink,
        );
        // What the static call returns is in its class's file, not read
        // here: uncertain, whatever it was given.
        let j = judge_text("A.java", &text, "java/runtime-exec");
        assert_eq!(j.verdict, "uncertain", "{j:?}");
        let members = text.replace(
            "String cmd = org.example.helpers.Utils.osCommand(\"echo\");",
            "String cmd = org.example.helpers.Utils.OS_COMMAND;",
        );
        let j = judge_text("A.java", &members, "java/runtime-exec");
        assert_eq!(j.verdict, "refuted", "{j:?}");
        let j = judge_text(
            "A.java",
            &text.replace("bar = \"fixed\";", "bar = param;"),
            "java/runtime-exec",
        );
        assert_eq!(j.verdict, "confirmed", "{j:?}");
        // A static call given a variable, or none, is unknown too.
        let j = judge_text(
            "A.java",
            &text.replace("osCommand(\"echo\")", "osCommand(bar)"),
            "java/runtime-exec",
        );
        assert_eq!(j.verdict, "uncertain", "{j:?}");
        let j = judge_text(
            "A.java",
            &text.replace("osCommand(\"echo\")", "osCommand()"),
            "java/runtime-exec",
        );
        assert_eq!(j.verdict, "uncertain", "{j:?}");
    }

    #[test]
    fn a_path_checked_against_its_base_directory_is_refuted() {
        let java = "class A {\n  byte[] read(File base, String name) throws IOException {\n    File target = new File(base, name); // SINK\n    String root = base.getCanonicalPath() + File.separator;\n    if (!target.getCanonicalPath().startsWith(root)) {\n      throw new SecurityException(\"outside\");\n    }\n    return Files.readAllBytes(target.toPath());\n  }\n}\n";
        let j = judge_text("A.java", java, "path/jvm-file-from-input");
        assert_eq!(j.verdict, "refuted", "{j:?}");
        assert_eq!(j.flow, vec![3, 5]);
        // Without the check, or checking another path, it is not.
        let unchecked = java.replace("target.getCanonicalPath()", "base.getCanonicalPath()");
        assert_eq!(
            judge_text("A.java", &unchecked, "path/jvm-file-from-input").verdict,
            "uncertain"
        );
        // Only for path findings.
        assert_eq!(
            judge_text("A.java", java, "sql/concat").verdict,
            "uncertain"
        );
    }

    #[test]
    fn java_loops_fresh_objects_and_file_constructors_are_read() {
        // Each cookie of the request's cookies is input.
        let body = "    javax.servlet.http.Cookie[] cookies = request.getCookies();\n    for (javax.servlet.http.Cookie c : cookies) {\n      if (c.getName().equals(\"v\")) {\n        bar = java.net.URLDecoder.decode(c.getValue(), \"UTF-8\");\n      }\n    }";
        let j = judge_text("A.java", &servlet(body), "sql/concat");
        assert_eq!(j.verdict, "confirmed", "{j:?}");
        // An object made with no arguments carries no input; a file made
        // of a constant path is constant.
        let body = "    bar = new String(new org.apache.commons.codec.binary.Base64().encode(\"x\".getBytes()));";
        assert_eq!(
            judge_text("A.java", &servlet(body), "sql/concat").verdict,
            "refuted"
        );
        let text = "class A {\n  void f() throws Exception {\n    String fileName = org.example.Utils.DIR + \"a.txt\";\n    java.io.FileInputStream fis = new java.io.FileInputStream(new java.io.File(fileName)); // SINK\n  }\n}\n";
        let j = judge_text("A.java", text, "path/jvm-file-from-input");
        assert_eq!(j.verdict, "refuted", "{j:?}");
        let j = judge_text(
            "A.java",
            &text
                .replace("void f()", "void f(HttpServletRequest request)")
                .replace("+ \"a.txt\"", "+ request.getHeader(\"f\")"),
            "path/jvm-file-from-input",
        );
        assert_eq!(j.verdict, "confirmed", "{j:?}");
        // A generic constructor is a call; a line that reads input and
        // starts with a package's name does not fill a name `java`.
        let body = "    java.util.Enumeration<String> names = request.getHeaderNames();\n    java.util.List<String> args = new java.util.ArrayList<String>();\n    args.add(\"echo\");\n    bar = String.join(\" \", args);";
        let j = judge_text("A.java", &servlet(body), "sql/concat");
        assert_eq!(j.verdict, "refuted", "{j:?}");
        // A length is a number, whatever it measures.
        let body = "    bar = \"n=\" + param.length();";
        let j = judge_text("A.java", &servlet(body), "sql/concat");
        assert_eq!(j.verdict, "refuted", "{j:?}");
    }

    #[test]
    fn odd_input_is_judged_without_panicking() {
        let table = SourceTable::bundled().unwrap();
        let odd = [
            "",
            "{",
            "}",
            "}}}}",
            "((((",
            "if (",
            "switch (x) {",
            "case 'A':",
            "x = ? :",
            "\"",
            "`${",
            "m.get(\"k\")",
            "v[0]",
            "v = v[1:]",
            "é = ü;",
            "def f(:",
            "bar = (3 * 5) - num > 10 ? \"x\" : param;",
            "else bar = param;",
            "map.put(\"k\", request.getParameter(\"v\"));",
            "SELECT * FROM t WHERE n = '\" + x",
            "String f(String a) {",
            "return a;",
            "return",
            "bar = new T().f(\"k\", x);",
            "bar = f(g(h(x)));",
            "func (s *T) f(",
            "def f(self, a):",
            "File t = new File(b, n);",
            "t.getCanonicalPath().startsWith(r)",
            "x = a.b.C.d(\"k\");",
        ];
        for path in ["a.java", "a.py", "a.go", "a.php", "a.c", "a.js"] {
            for a in odd {
                for b in odd {
                    let text = format!("{a}\n{b}\n{a}{b}\n{b}\n");
                    let lines = crate::util::numbered(&text);
                    let files = Files::from([(path.to_string(), lines)]);
                    let patterns = Patterns::default();
                    let trees = Trees::default();
                    for line in 0..=5 {
                        let _ = judge(
                            table,
                            &patterns,
                            &trees,
                            path,
                            &files,
                            line,
                            Some("sql/concat"),
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn patterns_are_built_once_and_kept_within_their_bound() {
        let patterns = Patterns::default();
        let a = patterns.get("x+".into()).unwrap();
        assert!(a.is_match("xx"));
        assert!(patterns.get("(".into()).is_none(), "a bad pattern is None");
        for i in 0..Patterns::MOST + 10 {
            patterns.get(format!("n{i}"));
        }
        assert!(relock(&patterns.0).len() <= Patterns::MOST);
        assert!(patterns.get("x+".into()).unwrap().is_match("x"));
    }

    #[test]
    fn a_line_goes_on_only_after_what_wants_a_right_side() {
        for code in [
            "bar =", "x = a +", "f(a,", "c ?", "s = a .", "ok &&", "x ||",
        ] {
            assert!(continues(code, Family::Braces), "{code}");
        }
        // A label or a `case` ends in `:` too: a ternary split after its
        // `:` is not read on.
        for code in [
            "i++", "i--", "x = 1;", "}", "", "if (a) {", "x == y", "case 1:",
        ] {
            assert!(!continues(code, Family::Braces), "{code}");
        }
        // Python goes on only after a backslash (open brackets aside).
        assert!(continues("x = a + \\", Family::Indent));
        assert!(!continues("x =", Family::Indent));
    }

    #[test]
    fn a_statement_over_several_lines_is_read_whole() {
        let text = "class A {\n  void f(HttpServletRequest request) {\n    String p = request.getParameter(\"v\");\n    String bar = new String(java.util.Base64.getDecoder().decode(\n        java.util.Base64.getEncoder().encode(p.getBytes())));\n    String sql = \"SELECT * FROM t WHERE a = '\" + bar + \"'\";\n    st.executeQuery(sql); // SINK\n  }\n}\n";
        let j = judge_text("A.java", text, "sql/concat");
        assert_eq!(j.verdict, "confirmed", "{j:?}");
        assert!(j.flow.contains(&4), "{j:?}");
        // The same, returned by a helper over two lines.
        let text = "class A {\n  void f(HttpServletRequest request) {\n    String bar = wrap(request.getParameter(\"v\"));\n    st.executeQuery(\"SELECT * FROM t WHERE a = '\" + bar + \"'\"); // SINK\n  }\n  private static String wrap(String p) {\n    return new String(java.util.Base64.getDecoder().decode(\n        p.getBytes()));\n  }\n}\n";
        let j = judge_text("A.java", text, "sql/concat");
        assert_eq!(j.verdict, "confirmed", "{j:?}");
        // An assignment whose right side starts on the next line.
        let text = "class A {\n  void f(HttpServletRequest request) {\n    String p = request.getParameter(\"v\");\n    String bar = \"\";\n    if (p != null) {\n      bar =\n          new String(p.getBytes());\n    }\n    st.executeQuery(\"SELECT * FROM t WHERE a = '\" + bar + \"'\"); // SINK\n  }\n}\n";
        let j = judge_text("A.java", text, "sql/concat");
        assert_eq!(j.verdict, "confirmed", "{j:?}");
        assert!(j.flow.contains(&6), "{j:?}");
        // And one split after an operator.
        let split = text.replace("new String(p.getBytes());", "\"x\" +\n          p;");
        let j = judge_text("A.java", &split, "sql/concat");
        assert_eq!(j.verdict, "confirmed", "{j:?}");
        // A query whose value closes on the next line.
        let text = "def f(cur, argv):\n    name = argv[1]\n    cur.execute(\"SELECT * FROM t WHERE a = '%s'\" % (  # SINK\n        name,))\n";
        let j = judge_text("a.py", text, "sql/python-format");
        assert_ne!(j.verdict, "refuted", "{j:?}");
    }

    #[test]
    fn findings_that_are_not_about_input_are_not_judged() {
        let j = judge_text(
            "a.py",
            "import hashlib\nhashlib.md5(b'x')  # SINK\n",
            "crypto/weak-hash-python",
        );
        assert_eq!(j.verdict, "uncertain");
        let j = judge_text("a.rb", "x = 1 # SINK\n", "sql/concat");
        assert!(j.why.contains("language"));
    }

    /// What the check cannot see it never refutes: a value built by an
    /// interpolated or formatted string, whatever the values look like.
    #[test]
    fn an_interpolated_or_formatted_value_is_uncertain_never_refuted() {
        let cases = [
            // PHP: the interpolated `$id` is inside a literal the check blanks.
            (
                "app.php",
                "sql/php-query-concat",
                "<?php\nfunction show($conn) {\n    $id = $_REQUEST['id'];\n    $query = \"SELECT first_name FROM users WHERE user_id = '$id';\"; // SINK\n    mysqli_query($conn, $query);\n}\n",
            ),
            (
                "app.php",
                "sql/php-query-concat",
                "<?php\nfunction show($conn) {\n    $id = LIMIT;\n    $query = \"SELECT * FROM users WHERE id = {$id}\"; // SINK\n    mysqli_query($conn, $query);\n}\n",
            ),
            // Python: an f-string, `%` and `.format` of constants.
            (
                "app.py",
                "sql/python-format",
                "TABLE = 'users'\n\ndef count(cursor):\n    limit = 10\n    q = f\"SELECT * FROM {TABLE} LIMIT {limit}\"\n    cursor.execute(q)  # SINK\n",
            ),
            (
                "app.py",
                "sql/python-format",
                "def find(cursor):\n    name = 'x'\n    q = \"SELECT * FROM t WHERE n = '%s'\" % name\n    cursor.execute(q)  # SINK\n",
            ),
            (
                "app.py",
                "exec/python-shell-true",
                "import subprocess\n\ndef ping():\n    host = 'localhost'\n    subprocess.call(\"ping -c 1 {}\".format(host), shell=True)  # SINK\n",
            ),
            // JavaScript: a template literal.
            (
                "a.js",
                "sql/js-template",
                "function h(db) {\n  const id = 7;\n  const q = `SELECT * FROM t WHERE id = ${id}`;\n  db.query(q); // SINK\n}\n",
            ),
        ];
        for (path, rule, text) in cases {
            let j = judge_text(path, text, rule);
            assert_eq!(j.verdict, "uncertain", "{text}\n{j:?}");
            assert!(j.why.contains("interpolated or formatted"), "{j:?}");
        }
        // Concatenation of the same constants is still refuted.
        let py = "def find(cursor):\n    name = 'x'\n    q = \"SELECT * FROM t WHERE n = '\" + name + \"'\"\n    cursor.execute(q)  # SINK\n";
        assert_eq!(judge_text("app.py", py, "sql/concat").verdict, "refuted");
        // A `%` inside a literal, or a `$` in a PHP single-quoted one, formats nothing.
        assert_eq!(interpolation("python", "q = \"LIKE 'a%'\" + b"), None);
        assert_eq!(interpolation("php", "$q = 'SELECT $id' . $x;"), None);
        assert_eq!(
            interpolation("php", "$q = \"SELECT \\$id\";"),
            None,
            "an escaped dollar"
        );
        assert_eq!(
            interpolation("ruby", "q = \"SELECT #{id}\""),
            Some("a `#{}` interpolation")
        );
        assert_eq!(
            interpolation("csharp", "var q = $\"SELECT {id}\";"),
            Some("an interpolated string")
        );
    }

    /// Outside Java and C#, a value returned by another file's class is
    /// not followed: uncertain, never refuted; Java still follows it.
    #[test]
    fn a_call_into_another_files_class_is_uncertain_outside_java_and_csharp() {
        let cases = [
            (
                "app.py",
                "sql/concat",
                "def find(cursor):\n    name = Helpers.lookup('id')\n    cursor.execute(\"SELECT * FROM t WHERE n = '\" + name + \"'\")  # SINK\n",
            ),
            (
                "app.php",
                "sql/php-query-concat",
                "<?php\nfunction show($conn) {\n    $id = Input::get('id');\n    $query = \"SELECT * FROM users WHERE id = \" . $id; // SINK\n}\n",
            ),
            (
                "app.php",
                "sql/php-query-concat",
                "<?php\nclass C {\n  function show($conn) {\n    $id = $this->input->get('id');\n    $query = \"SELECT * FROM users WHERE id = \" . $id; // SINK\n  }\n}\n",
            ),
            (
                "a.js",
                "exec/node-child-process",
                "function run() {\n  const cmd = Config.command('ls');\n  exec(cmd); // SINK\n}\n",
            ),
        ];
        for (path, rule, text) in cases {
            let j = judge_text(path, text, rule);
            assert_eq!(j.verdict, "uncertain", "{text}\n{j:?}");
        }
        // A class the file declares is still read as the file's own.
        let py = "class Helpers:\n    @staticmethod\n    def lookup(k):\n        return 'x'\n\ndef find(cursor):\n    name = Helpers.lookup('id')\n    cursor.execute(\"SELECT * FROM t WHERE n = '\" + name + \"'\")  # SINK\n";
        assert_eq!(judge_text("app.py", py, "sql/concat").verdict, "refuted");
    }
}
