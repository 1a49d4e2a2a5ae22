//! The offline engine's rule set: regex rules kept in `configs/rules.toml`
//! (compiled into the binary) or a file given with `--rules`.
//!
//! Takes a file's lines (as a tool showed them, already redacted); gives
//! findings with exact paths and lines. Rules may skip test code and
//! comments, and exclude lines matching a `not_pattern`. Every rule names
//! the CWE weaknesses it finds, and may carry sample lines it must and must
//! not report: a sample that disagrees with the rule is a load error, so a
//! pattern edit cannot silently stop matching what it was written for.

use std::cell::OnceCell;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, OnceLock};

use regex::Regex;
use serde::Deserialize;

use super::sources;
use super::syntax::{Grammar, Syntax, Trees, Unparsed};
use super::taint::{Across, Flow, LineStatus, Scopes, Taint};
use crate::model::findings::{Finding, FindingCwe, Origin, Severity};
use crate::util::language::language_of;

/// The built-in rule set.
pub(crate) const BUILTIN_RULES: &str = include_str!("../../configs/rules.toml");

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
    languages: Vec<String>,
    severity: String,
    title: String,
    message: String,
    pattern: String,
    #[serde(default)]
    not_pattern: Option<String>,
    #[serde(default)]
    skip_tests: bool,
    #[serde(default)]
    skip_comments: bool,
    #[serde(default)]
    cwe: Vec<u32>,
    #[serde(default)]
    examples: Vec<String>,
    #[serde(default)]
    counterexamples: Vec<String>,
}

/// One compiled rule.
#[derive(Debug)]
pub(crate) struct Rule {
    pub id: String,
    pub languages: Vec<String>,
    pub severity: Severity,
    pub title: String,
    pub message: String,
    pattern: Regex,
    not_pattern: Option<Regex>,
    skip_tests: bool,
    skip_comments: bool,
    /// Never empty; the most specific weakness first.
    cwe: Vec<u32>,
}

impl Rule {
    /// The CWE ids of the weakness this rule finds (`[89]` for CWE-89),
    /// never empty, the most specific first: a finding that carries one
    /// CWE takes the first.
    pub(crate) fn cwe(&self) -> &[u32] {
        &self.cwe
    }

    /// Whether this rule reports `line` in non-test code: the pattern
    /// matches (outside a comment when the rule skips comments) and the
    /// `not_pattern` does not.
    ///
    /// `code` is the line with its comments and docstrings blanked, from
    /// the file's syntax tree; without a tree, a comment is told by its
    /// marker (`//`, `#`, …) outside quotes.
    fn reports(&self, line: &str, code: Option<&str>) -> bool {
        let code = match (self.skip_comments, code) {
            (false, _) => line,
            (true, Some(code)) => code,
            (true, None) => strip_comment(line),
        };
        self.pattern.is_match(code) && !self.not_pattern.as_ref().is_some_and(|n| n.is_match(line))
    }
}

/// How a file was read: as a syntax tree of its grammar, or why by its
/// lines alone.
pub(crate) type Read = Result<Parsed, Unparsed>;

/// A file read as its syntax tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Parsed {
    pub(crate) grammar: Grammar,
    /// How many of its taint traces were cut at their bound (a file of
    /// thousands of sinks): what they would have found is not known.
    pub(crate) traces_cut: usize,
}

/// A rule file that cannot be used: names the file, the rule and the fix.
#[derive(Debug, thiserror::Error)]
pub enum RuleError {
    #[error("{source_name}: cannot read the rule file: {error}")]
    Read {
        source_name: String,
        error: std::io::Error,
    },
    #[error("{source_name}: invalid rule file: {detail}")]
    Toml { source_name: String, detail: String },
    #[error("{source_name}: rule {id:?}: {problem}")]
    Rule {
        source_name: String,
        id: String,
        problem: String,
    },
    /// The bundled taint table does not read: a fanscan bug.
    #[error("the taint rules cannot run: {0}")]
    Taint(String),
}

/// A rule set: where it came from, its hash and its compiled rules.
///
/// A file the user gives is compiled when it is loaded, so that its
/// mistakes are setup errors. The built-in set is compiled on first use:
/// `plan` and scans with a model never apply it (compiling its 105
/// patterns and checking their samples was most of `fanscan plan`'s time),
/// and a unit test compiles it on every change.
#[derive(Debug)]
pub(crate) struct RuleSet {
    /// Where it came from (`builtin` or a path), for the run manifest.
    pub source: String,
    /// SHA-256 of the rule text and of what the taint rules depend on, for
    /// the run manifest and the keys of stored answers.
    pub hash: String,
    /// The rule text, kept for a set compiled on first use.
    text: &'static str,
    compiled: OnceLock<Result<Compiled, RuleError>>,
    /// The taint rules (built in, whatever the rule file), checked on
    /// first use.
    taint: OnceLock<Result<&'static Taint, RuleError>>,
    /// The run's syntax trees: every file these rules read is parsed once
    /// a run, and the skeptic's check reads the same trees.
    pub(crate) trees: Trees,
    /// What the rules found in each file read this run.
    applied: Applied,
    /// The severity from which the skeptic is asked about a finding
    /// (`--challenge`): a file's tree is kept for it only when the rules
    /// found something there at or above it; none without a skeptic.
    keep_trees_at: Option<Severity>,
    /// The run's flows across files ([`RuleSet::trace_across`]).
    across: OnceLock<Across>,
}

/// The rules' findings in each file (path and numbered lines) read this
/// run, and how it was read.
#[derive(Debug, Default)]
struct Applied(std::sync::Mutex<HashMap<(String, u64), Found>>);

/// The findings in a file, and how it was read.
type Found = (Vec<Finding>, Option<Read>);

impl Applied {
    /// A file's key: its path and a hash of its numbered lines.
    fn key(path: &str, lines: &[(u32, String)]) -> (String, u64) {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        lines.hash(&mut hasher);
        (path.to_string(), hasher.finish())
    }

    fn get(&self, key: &(String, u64)) -> Option<Found> {
        self.lock().get(key).cloned()
    }

    fn put(&self, key: (String, u64), found: &Found) {
        self.lock().insert(key, found.clone());
    }

    /// The lock; each insert is one step, so a thread that panicked
    /// holding it left whole entries only.
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, u64), Found>> {
        crate::util::relock(&self.0)
    }
}

impl RuleSet {
    /// Parses and compiles a rule file; errors name the source and the rule.
    pub(crate) fn parse(source: &str, text: &str) -> Result<Self, RuleError> {
        let rules = compile(source, text)?;
        Ok(Self {
            source: source.to_string(),
            hash: hash(text),
            text: "",
            compiled: OnceLock::from(Ok(rules)),
            taint: OnceLock::new(),
            trees: Trees::default(),
            applied: Applied::default(),
            keep_trees_at: Some(Severity::High),
            across: OnceLock::new(),
        })
    }

    /// The compiled rules, compiled now if this is their first use; the
    /// error names the source and the rule.
    pub(crate) fn rules(&self) -> Result<&[Rule], &RuleError> {
        self.compiled().map(|c| c.rules.as_slice())
    }

    fn compiled(&self) -> Result<&Compiled, &RuleError> {
        self.compiled
            .get_or_init(|| compile(&self.source, self.text))
            .as_ref()
    }

    /// The taint rules, checked on their first use.
    pub(crate) fn taint(&self) -> Result<&'static Taint, &RuleError> {
        self.taint
            .get_or_init(|| Taint::bundled().map_err(|e| RuleError::Taint(e.to_string())))
            .as_ref()
            .map(|t| *t)
    }

    /// Traces the flows from a source in one of `files` (path and text as
    /// the rules read it: its lines joined by `\n`, the run's files) into a
    /// sink of another ([`crate::engine::taint::across`]),
    /// once a run: the run's judgments confirm them ([`RuleSet::across`]).
    fn trace_across(&self, files: &[(String, String)]) -> Result<&Across, &RuleError> {
        let taint = self.taint()?;
        // Each file parsed once, its tree kept for the rules.
        let parse = |path: &str, text: &str| self.trees.get(path, text);
        Ok(self
            .across
            .get_or_init(|| crate::engine::taint::across(taint, &parse, files)))
    }

    /// [`RuleSet::trace_across`], each flow as the finding at its sink
    /// (without the sink's line: the file read fills it in).
    pub(crate) fn findings_across(
        &self,
        files: &[(String, String)],
    ) -> Result<Vec<Finding>, &RuleError> {
        let taint = self.taint()?;
        let across = self.trace_across(files)?;
        Ok(across
            .flows()
            .iter()
            .filter_map(|f| {
                let traced = format!("Traced on the syntax trees across files: {}.", f.trace());
                sink_finding(taint, &f.path, f.line, &f.sink, &traced)
            })
            .collect())
    }

    /// The run's flows across files, once traced.
    pub(crate) fn across(&self) -> Option<&Across> {
        self.across.get()
    }

    /// The CWE ids of rule `id` (see [`Rule::cwe`]), if the set has it: a
    /// finding names its rule, so this is how it gets its CWE.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn cwe_of(&self, id: &str) -> Option<&[u32]> {
        self.rules()
            .ok()?
            .iter()
            .find(|r| r.id == id)
            .map(Rule::cwe)
    }

    /// The built-in rule set, compiled on first use.
    pub(crate) fn builtin() -> Self {
        Self::compiled_on_first_use("builtin:configs/rules.toml", BUILTIN_RULES)
    }

    /// A set of text that ships with the binary, compiled when first
    /// applied: its errors surface there (see [`RuleSet::rules`]).
    pub(crate) fn compiled_on_first_use(source: &str, text: &'static str) -> Self {
        Self {
            source: source.to_string(),
            hash: hash(text),
            text,
            compiled: OnceLock::new(),
            taint: OnceLock::new(),
            trees: Trees::default(),
            applied: Applied::default(),
            keep_trees_at: Some(Severity::High),
            across: OnceLock::new(),
        }
    }

    /// Keeps a file's tree only for a finding at or above `threshold`,
    /// the skeptic's (none: no skeptic runs). High unless set.
    pub(crate) fn keeping_trees_at(self, threshold: Option<Severity>) -> Self {
        Self {
            keep_trees_at: threshold,
            ..self
        }
    }

    /// The rule file at `path`.
    pub(crate) fn load(path: &std::path::Path) -> Result<Self, RuleError> {
        let source_name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|error| RuleError::Read {
            source_name: source_name.clone(),
            error,
        })?;
        Self::parse(&source_name, &text)
    }

    /// Applies every rule to the numbered lines of one file. `lines` must be
    /// in ascending order; they need not be the whole file. The whole file
    /// of a language with a grammar is read as its syntax tree (comments
    /// and docstrings are not code); a part, or a file without one, by its
    /// lines alone.
    pub(crate) fn apply(
        &self,
        path: &str,
        lines: &[(u32, String)],
    ) -> Result<Vec<Finding>, &RuleError> {
        self.apply_read(path, lines).map(|(findings, _)| findings)
    }

    /// [`RuleSet::apply`], and how the file was read: `None` when no rule
    /// needed its tree (no rule that skips comments matched a line), else
    /// `Ok` as a syntax tree or why by its lines alone.
    ///
    /// A file is parsed only when a rule that skips comments matches one
    /// of its lines as written: most files of a clean tree match none, and
    /// parsing them would tell nothing (a comment only ever takes a match
    /// away).
    ///
    /// The same lines of the same path are read once a run: an agent's
    /// report and its final summary ask for the same files.
    pub(crate) fn apply_read(
        &self,
        path: &str,
        lines: &[(u32, String)],
    ) -> Result<(Vec<Finding>, Option<Read>), &RuleError> {
        let key = Applied::key(path, lines);
        if let Some(found) = self.applied.get(&key) {
            return Ok(found);
        }
        let fresh = self.apply_afresh(path, lines)?;
        self.applied.put(key, &fresh);
        Ok(fresh)
    }

    fn apply_afresh(
        &self,
        path: &str,
        lines: &[(u32, String)],
    ) -> Result<(Vec<Finding>, Option<Read>), &RuleError> {
        let compiled = self.compiled()?;
        let rules = &compiled.rules;
        // The lines joined: the file's text when they are all of it.
        let joined = lines
            .iter()
            .map(|(_, l)| l.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        let whole = (1u32..).zip(lines).all(|(expected, (n, _))| *n == expected);
        // A rule is asked of the joined lines first, line by line only if
        // it matches there. Not on text beyond ASCII: there a `\b` of
        // Unicode words sends the regex to its slow engine, over the whole
        // file for every rule, where line by line it goes only over the
        // lines that have such text.
        let ascii = joined.is_ascii();
        let parsed: OnceCell<Arc<Result<Syntax, Unparsed>>> = OnceCell::new();
        let parse = || {
            parsed.get_or_init(|| {
                if whole {
                    self.trees.get(path, &joined)
                } else {
                    Arc::new(Err(Unparsed::Partial))
                }
            })
        };
        let code_lines: OnceCell<Option<Vec<String>>> = OnceCell::new();
        let language = language_of(path);
        let test_file = is_test_path(path);
        // In Rust, code after `#[cfg(test)]` is test code.
        let test_from = lines
            .iter()
            .find(|(_, l)| l.trim_start().starts_with("#[cfg(test)]"))
            .map(|(n, _)| *n);
        let mut out = Vec::new();
        for (index, rule) in rules.iter().enumerate() {
            if !rule.languages.is_empty()
                && !language.is_some_and(|l| rule.languages.iter().any(|r| r == l))
            {
                continue;
            }
            if rule.skip_tests && test_file {
                continue;
            }
            if ascii && !compiled.may_match(index, &joined) {
                continue;
            }
            for (i, (number, line)) in lines.iter().enumerate() {
                if rule.skip_tests && test_from.is_some_and(|t| *number >= t) {
                    break;
                }
                let code = if rule.skip_comments {
                    // A line the pattern misses as written has no match
                    // once its comments are blanked either.
                    if !rule.pattern.is_match(line) {
                        continue;
                    }
                    code_lines
                        .get_or_init(|| parse().as_ref().as_ref().ok().map(Syntax::code_lines))
                        .as_ref()
                        .and_then(|c| c.get(i))
                        .map(String::as_str)
                } else {
                    None
                };
                if !rule.reports(line, code) {
                    continue;
                }
                out.push(Finding {
                    path: path.to_string(),
                    line: *number,
                    end_line: None,
                    severity: rule.severity,
                    title: rule.title.clone(),
                    detail: rule.message.clone(),
                    evidence: Some(line.trim().to_string()),
                    rule: Some(rule.id.clone()),
                    // The most specific weakness is listed first.
                    cwe: rule
                        .cwe()
                        .first()
                        .map_or_else(FindingCwe::default, |n| FindingCwe::number(*n)),
                    origin: Origin::Agent,
                    seen: None,
                });
            }
        }
        // The taint rules, on the tree of a file with a line that names
        // one of its language's sinks.
        let mut traces_cut = 0;
        if !test_file && let Some(language) = language {
            let taint = self.taint()?;
            // The scopes of the file's functions, made once for the
            // questions below.
            let mut scopes = Scopes::default();
            // A sink rule's finding whose values only the caller chooses
            // (the function's parameters, the object's state) is no
            // proven risk: below the default gate.
            let sources = sources::SourceTable::bundled().ok();
            let demotable = |f: &Finding| {
                f.severity >= Severity::High
                    && sources.is_some_and(|s| s.is_sink_rule(f.rule.as_deref()))
            };
            if out.iter().any(demotable)
                && let Ok(syntax) = parse().as_ref()
            {
                for f in out.iter_mut().filter(|f| demotable(f)) {
                    let cwe = f.cwe.id.map(|c| c.number());
                    let status = taint.line_status_in(syntax, &mut scopes, f.line, cwe);
                    if let LineStatus::FromCaller(names) = status {
                        f.severity = Severity::Medium;
                        f.detail.push_str(&format!(
                            " No source of untrusted input reaches this line within its function: its values come from {}, which the caller chooses, so fanscan reports it at medium (check the callers).",
                            names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
                        ));
                    }
                }
            }
            if taint.covers(language)
                && lines.iter().any(|(_, l)| taint.may_hold(language, l))
                && let Ok(syntax) = parse().as_ref()
            {
                // The pass across files found them already, in the same text.
                let flows = match self.across().and_then(|a| a.flows_in_file(path, &joined)) {
                    Some((flows, cut)) => {
                        traces_cut += cut;
                        flows.to_vec()
                    }
                    None => taint.flows_in(path, syntax, &mut scopes),
                };
                // A line rule's finding of the same weakness on a line of
                // a trace (the query built, the sink called) gives way to
                // the finding with the trace.
                let traced: Vec<(Finding, Vec<u32>)> = flows
                    .iter()
                    .filter_map(|f| {
                        let finding = traced_finding(taint, path, lines, f)?;
                        Some((finding, f.steps.iter().map(|s| s.line).collect()))
                    })
                    .collect();
                out.retain(|f| {
                    !traced
                        .iter()
                        .any(|(t, on)| t.cwe.id == f.cwe.id && on.contains(&f.line))
                });
                out.extend(traced.into_iter().map(|(t, _)| t));
            }
            traces_cut += scopes.cut_short();
        }
        out.sort_by(|a, b| (a.line, &a.rule).cmp(&(b.line, &b.rule)));
        // The tree of a file with no finding the skeptic is asked about is
        // not kept for it (a skeptic that asks all the same parses it
        // again).
        if whole
            && parsed.get().is_some()
            && !self
                .keep_trees_at
                .is_some_and(|t| out.iter().any(|f| f.severity >= t))
        {
            self.trees.forget(path, &joined);
        }
        let read = parsed.get().map(|p| {
            p.as_ref()
                .as_ref()
                .map(|s| Parsed {
                    grammar: s.grammar,
                    traces_cut,
                })
                .map_err(Clone::clone)
        });
        Ok((out, read))
    }
}

/// A set's hash: its rule text and what the taint rules depend on.
fn hash(text: &str) -> String {
    crate::util::sha256_hex(format!("{text}{}", super::taint::identity()).as_bytes())
}

/// The finding of a traced flow: its class's title and message, and the
/// trace.
fn traced_finding(
    taint: &Taint,
    path: &str,
    lines: &[(u32, String)],
    flow: &Flow,
) -> Option<Finding> {
    let evidence = lines
        .iter()
        .find(|(n, _)| *n == flow.line)
        .map(|(_, l)| l.trim().to_string())?;
    let traced = format!("Traced on the syntax tree: {}.", flow.trace());
    let mut finding = sink_finding(taint, path, flow.line, &flow.sink, &traced)?;
    finding.evidence = Some(evidence);
    Some(finding)
}

/// The finding of sink `sink` at `line` of `path`: its class's title,
/// severity and message, then `traced` (the trace as a sentence). Its
/// evidence is the caller's to fill.
fn sink_finding(taint: &Taint, path: &str, line: u32, sink: &str, traced: &str) -> Option<Finding> {
    let class = taint.table().class_of(taint.table().sink(sink)?);
    Some(Finding {
        path: path.to_string(),
        line,
        end_line: None,
        severity: class.severity,
        title: class.title.clone(),
        detail: format!("{} {traced}", class.message),
        evidence: None,
        rule: Some(sink.to_string()),
        cwe: FindingCwe::number(class.cwe),
        origin: Origin::Agent,
        seen: None,
    })
}

/// Compiled rules, each with a pattern that reads a whole file at once.
#[derive(Debug)]
struct Compiled {
    rules: Vec<Rule>,
    /// Each rule's pattern with `^` and `$` at every line, to ask a whole
    /// file (its lines joined by newlines) once: a rule it does not match
    /// is not asked line by line. `None` where a line's match could be
    /// missed on the whole file.
    whole: Vec<Option<Regex>>,
}

impl Compiled {
    fn new(rules: Vec<Rule>) -> Self {
        let whole = rules
            .iter()
            .map(|rule| {
                let pattern = rule.pattern.as_str();
                // A match on a line is one on the whole file, unless the
                // pattern anchors the text itself, turns multi-line off or
                // reads verbosely, or anchors a line's end (a line judged
                // with its comment stripped has a new end).
                let whole = !(pattern.contains("\\A")
                    || pattern.contains("\\z")
                    || turns_off_lines_or_verbose(pattern)
                    || anchors_an_end(pattern));
                // The same pattern in a group compiles; were it not to, the
                // rule is asked line by line.
                whole
                    .then(|| Regex::new(&format!("(?m:{pattern})")).ok())
                    .flatten()
            })
            .collect();
        Self { rules, whole }
    }

    /// Whether rule `i` may match a line of `text` (lines joined by
    /// newlines): false only when it surely matches none.
    fn may_match(&self, i: usize, text: &str) -> bool {
        match self.whole.get(i) {
            Some(Some(whole)) => whole.is_match(text),
            _ => true,
        }
    }
}

/// Whether `pattern` sets flags that change what a pass over the whole
/// file means: `(?-m)` (the file is one line) or `(?x)` (a comment would
/// run to the end of the wrapped pattern).
fn turns_off_lines_or_verbose(pattern: &str) -> bool {
    pattern.match_indices("(?").any(|(i, _)| {
        let flags: String = pattern
            .get(i + 2..)
            .unwrap_or_default()
            .chars()
            .take_while(|c| c.is_ascii_alphabetic() || *c == '-')
            .collect();
        let (on, off) = flags.split_once('-').unwrap_or((flags.as_str(), ""));
        on.contains('x') || off.contains('m')
    })
}

/// Whether `pattern` has a `$` that anchors (not escaped, not in a class).
fn anchors_an_end(pattern: &str) -> bool {
    let (mut escaped, mut class) = (false, 0usize);
    for c in pattern.chars() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '[' => class += 1,
            ']' if class > 0 => class -= 1,
            '$' if class == 0 => return true,
            _ => {}
        }
    }
    false
}

/// Parses and compiles rule text: every rule's pattern, CWE and samples.
fn compile(source: &str, text: &str) -> Result<Compiled, RuleError> {
    let file: RuleFile = toml::from_str(text).map_err(|e| RuleError::Toml {
        source_name: source.to_string(),
        detail: crate::util::toml_error(text, &e),
    })?;
    let mut rules = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for raw in file.rule {
        let at = |problem: String| RuleError::Rule {
            source_name: source.to_string(),
            id: raw.id.clone(),
            problem,
        };
        if !seen.insert(raw.id.clone()) {
            return Err(at("the id is used twice".into()));
        }
        let severity = Severity::parse(&raw.severity).ok_or_else(|| {
            at(format!(
                "severity {:?} is not one of critical, high, medium, low, info",
                raw.severity
            ))
        })?;
        let pattern = Regex::new(&raw.pattern).map_err(|e| at(format!("invalid pattern: {e}")))?;
        let not_pattern = raw
            .not_pattern
            .as_deref()
            .map(Regex::new)
            .transpose()
            .map_err(|e| at(format!("invalid not_pattern: {e}")))?;
        if raw.cwe.is_empty() {
            return Err(at(
                    "names no CWE: add `cwe = [N]` with the CWE id(s) of the weakness it finds, most specific first (e.g. `cwe = [89]` for SQL injection)".into(),
                ));
        }
        if let Some(zero) = raw.cwe.iter().find(|c| **c == 0) {
            return Err(at(format!(
                "`cwe` holds {zero}, which is no CWE id: write the number of CWE-N, e.g. `cwe = [89]`"
            )));
        }
        let mut distinct = std::collections::BTreeSet::new();
        if let Some(twice) = raw.cwe.iter().find(|c| !distinct.insert(**c)) {
            return Err(at(format!("`cwe` names {twice} twice: keep one")));
        }
        let rule = Rule {
            id: raw.id.clone(),
            languages: raw.languages,
            severity,
            title: raw.title,
            message: raw.message,
            pattern,
            not_pattern,
            skip_tests: raw.skip_tests,
            skip_comments: raw.skip_comments,
            cwe: raw.cwe,
        };
        if let Some(line) = raw.examples.iter().find(|l| !rule.reports(l, None)) {
            return Err(at(format!(
                "example {line:?} is not reported: fix the pattern/not_pattern or the example"
            )));
        }
        if let Some(line) = raw.counterexamples.iter().find(|l| rule.reports(l, None)) {
            return Err(at(format!(
                "counterexample {line:?} is reported: fix the pattern/not_pattern or the counterexample"
            )));
        }
        rules.push(rule);
    }
    Ok(Compiled::new(rules))
}

/// Paths that hold tests by convention.
pub(crate) fn is_test_path(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    let name = lower.rsplit('/').next().unwrap_or(&lower);
    lower.split('/').any(|part| {
        matches!(
            part,
            "test"
                | "tests"
                | "testing"
                | "spec"
                | "specs"
                | "__tests__"
                | "benches"
                | "testdata"
                | "fixtures"
        )
    }) || name.starts_with("test_")
        || name.contains("_test.")
        || name.contains(".test.")
        || name.contains(".spec.")
        || name.ends_with("tests.rs")
        || name.ends_with("test.java")
}

/// The code part of a line: whole-line comments become empty, and a
/// trailing `//` or `#` comment outside a string ('…', "…" or `…`) is cut.
fn strip_comment(line: &str) -> &str {
    let trimmed = line.trim_start();
    if ["//", "#", "/*", "*", "--", "<!--"]
        .iter()
        .any(|p| trimmed.starts_with(p))
        && !trimmed.starts_with("#[")
        && !trimmed.starts_with("#!")
        && !trimmed.starts_with("#include")
        && !trimmed.starts_with("#define")
    {
        return "";
    }
    let bytes = line.as_bytes();
    let mut in_string: Option<u8> = None;
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        match in_string {
            Some(_) if c == b'\\' => i += 1,
            Some(q) if c == q => in_string = None,
            Some(_) => {}
            // Backticks quote in JavaScript/TypeScript (template literals)
            // and Go (raw strings), where `//` inside is no comment.
            None if c == b'"' || c == b'\'' || c == b'`' => in_string = Some(c),
            None if c == b'/' && bytes.get(i + 1) == Some(&b'/') => return &line[..i],
            None if c == b'#' && i > 0 && bytes[i - 1] == b' ' => return &line[..i],
            None => {}
        }
        i += 1;
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbered(text: &str) -> Vec<(u32, String)> {
        text.lines()
            .enumerate()
            .map(|(i, l)| (i as u32 + 1, l.to_string()))
            .collect()
    }

    #[test]
    fn a_file_is_parsed_only_when_a_rule_that_skips_comments_matches_it() {
        let rules = RuleSet::builtin();
        // No rule matches: the tree would tell nothing, so none is made.
        let clean = "def add(a, b):\n    return a + b\n";
        let (found, read) = rules.apply_read("m.py", &numbered(clean)).unwrap();
        assert!(found.is_empty(), "{found:?}");
        assert!(read.is_none(), "{read:?}");
        // A match in a block comment sends the file to the parser, which
        // takes the match away; the same call in code stays.
        let code = "/*\n  Runtime.getRuntime().exec(cmd);\n*/\nclass A { void r(String cmd) throws Exception { Runtime.getRuntime().exec(cmd); } }\n";
        let (found, read) = rules.apply_read("A.java", &numbered(code)).unwrap();
        assert!(matches!(read, Some(Ok(_))), "{read:?}");
        let lines: Vec<u32> = found.iter().map(|f| f.line).collect();
        assert!(!lines.contains(&2), "{found:?}");
        assert!(lines.contains(&4), "{found:?}");
    }

    #[test]
    fn builtin_rules_compile() {
        let rules = RuleSet::builtin();
        assert!(
            rules.rules().unwrap().len() >= 20,
            "{}",
            rules.rules().unwrap().len()
        );
    }

    #[test]
    fn the_builtin_set_is_compiled_on_first_use_and_a_bad_one_fails_there() {
        let rules = RuleSet::builtin();
        assert!(rules.compiled.get().is_none(), "not compiled by builtin()");
        // The hash covers the rules and what the taint rules depend on.
        assert_eq!(rules.hash, hash(BUILTIN_RULES));
        assert_ne!(
            rules.hash,
            crate::util::sha256_hex(BUILTIN_RULES.as_bytes())
        );
        assert!(rules.rules().is_ok());
        assert!(rules.compiled.get().is_some());
        let bad = RuleSet::compiled_on_first_use(
            "builtin:bad.toml",
            "[[rule]]\nid = \"x\"\nseverity = \"high\"\ntitle = \"t\"\nmessage = \"m\"\npattern = \"(\"\ncwe = [1]\n",
        );
        let e = bad.apply("a.rs", &numbered("x")).unwrap_err().to_string();
        assert!(
            e.contains("builtin:bad.toml: rule \"x\": invalid pattern"),
            "{e}"
        );
        // The error stays: every later use fails the same way.
        assert!(bad.rules().is_err());
    }

    #[test]
    fn rust_unwrap_outside_tests_only() {
        let rules = RuleSet::builtin();
        let code = "fn a() {\n    let x = y.unwrap();\n    let z = y.unwrap_or(1);\n    // c.unwrap()\n}\n#[cfg(test)]\nmod tests { fn t() { y.unwrap(); } }\n";
        let found = rules.apply("src/a.rs", &numbered(code)).unwrap();
        let unwraps: Vec<u32> = found
            .iter()
            .filter(|f| f.rule.as_deref() == Some("rust/unwrap"))
            .map(|f| f.line)
            .collect();
        assert_eq!(unwraps, vec![2]);
        assert!(
            rules
                .apply("tests/a.rs", &numbered(code))
                .unwrap()
                .iter()
                .all(|f| f.rule.as_deref() != Some("rust/unwrap"))
        );
    }

    #[test]
    fn the_pass_over_the_whole_file_keeps_every_rule_that_a_line_matches() {
        let file: RuleFile = toml::from_str(BUILTIN_RULES).unwrap();
        let rules = RuleSet::builtin();
        let compiled = rules.compiled().unwrap();
        // Most rules are asked of the whole file.
        let within = compiled.whole.iter().flatten().count();
        assert!(within * 10 >= compiled.rules.len() * 9, "{within}");
        for (i, raw) in file.rule.iter().enumerate() {
            for example in &raw.examples {
                let text = format!("first line\n  second {{\n{example}\n}}\n");
                assert!(compiled.may_match(i, &text), "{}: {example:?}", raw.id);
            }
        }
    }

    #[test]
    fn anchors_and_flags_keep_their_meaning_in_the_one_pass() {
        let text = "[[rule]]\nid='a'\nseverity='high'\ncwe=[1]\ntitle='t'\nmessage='m'\npattern='^\\s*danger\\('\n\
                    [[rule]]\nid='b'\nseverity='high'\ncwe=[1]\ntitle='t'\nmessage='m'\npattern='(?-m)^\\s*risky\\('\n\
                    [[rule]]\nid='c'\nseverity='high'\ncwe=[1]\ntitle='t'\nmessage='m'\npattern='(?i)unsafe_CALL$'\n\
                    [[rule]]\nid='d'\nseverity='high'\ncwe=[1]\ntitle='t'\nmessage='m'\npattern='(?x) boom \\( # a comment'\n";
        let rules = RuleSet::parse("builtin:t.toml", text).unwrap();
        let compiled = rules.compiled().unwrap();
        // Line anchors and `(?i)` read in the pass; `(?-m)`, `$` and
        // `(?x)` line by line.
        let whole: Vec<bool> = compiled.whole.iter().map(Option::is_some).collect();
        assert_eq!(whole, vec![true, false, false, false]);
        assert!(compiled.may_match(0, "x\n danger(\n"));
        assert!(!compiled.may_match(0, "x danger(\n"));
        let code = "x = 1\n  danger(1)\n  risky(2)\nUNSAFE_call\nboom(3)\n";
        let found: Vec<String> = rules
            .apply("a.txt", &numbered(code))
            .unwrap()
            .into_iter()
            .filter_map(|f| f.rule)
            .collect();
        assert_eq!(found, vec!["a", "b", "c", "d"]);
    }

    #[test]
    fn a_file_read_again_unchanged_gives_the_same_findings_and_a_changed_one_its_own() {
        let rules = RuleSet::builtin();
        let code = "import subprocess\ndef f(cmd):\n    subprocess.call(cmd, shell=True)\n";
        let first = rules.apply_read("app.py", &numbered(code)).unwrap();
        let again = rules.apply_read("app.py", &numbered(code)).unwrap();
        assert!(!first.0.is_empty());
        assert_eq!(first, again);
        assert_eq!(rules.applied.lock().len(), 1);
        let changed = rules
            .apply_read("app.py", &numbered("def f(cmd):\n    return cmd\n"))
            .unwrap();
        assert!(changed.0.is_empty());
        assert_eq!(rules.applied.lock().len(), 2);
    }

    #[test]
    fn a_tree_is_kept_only_for_a_finding_the_skeptic_will_be_asked_about() {
        // A shell run of a request value is high.
        let high = "import subprocess\nfrom flask import request\n\ndef f():\n    subprocess.call(request.args['c'], shell=True)\n";
        // One of a parameter alone is medium: its tree is read, not kept.
        let medium = "import subprocess\ndef f(cmd):\n    subprocess.call(cmd, shell=True)\n";
        let count = |threshold: Option<Severity>, code: &str| {
            let rules = RuleSet::builtin().keeping_trees_at(threshold);
            let (found, read) = rules.apply_read("app.py", &numbered(code)).unwrap();
            (
                found.iter().any(|f| f.severity >= Severity::High),
                read.is_some(),
                rules.trees.kept(),
            )
        };
        assert_eq!(count(Some(Severity::High), high), (true, true, 1));
        assert_eq!(count(None, high), (true, true, 0));
        assert_eq!(count(Some(Severity::High), medium), (false, true, 0));
        assert_eq!(count(Some(Severity::Medium), medium), (false, true, 1));
    }

    #[test]
    fn strip_comment_keeps_strings() {
        assert_eq!(
            strip_comment("let u = \"http://x\"; // c"),
            "let u = \"http://x\"; "
        );
        assert_eq!(strip_comment("   // all comment"), "");
        assert_eq!(strip_comment("#[derive(Debug)]"), "#[derive(Debug)]");
        assert_eq!(
            strip_comment("const u = `//host/${p}`; // c"),
            "const u = `//host/${p}`; "
        );
    }

    #[test]
    fn every_builtin_rule_names_a_cwe_and_carries_samples() {
        let file: RuleFile = toml::from_str(BUILTIN_RULES).unwrap();
        for raw in &file.rule {
            assert!(!raw.cwe.is_empty(), "{} names no CWE", raw.id);
            assert!(
                !raw.examples.is_empty() && !raw.counterexamples.is_empty(),
                "{} needs examples and counterexamples",
                raw.id
            );
        }
        let rules = RuleSet::builtin();
        assert_eq!(rules.cwe_of("sql/concat"), Some(&[89][..]));
        assert_eq!(rules.cwe_of("crypto/weak-hash-go"), Some(&[328, 327][..]));
        assert_eq!(rules.cwe_of("no/such-rule"), None);
        assert!(rules.rules().unwrap().iter().all(|r| !r.cwe().is_empty()));
    }

    #[test]
    fn findings_carry_their_rules_first_cwe_named_from_the_table() {
        let rules = RuleSet::builtin();
        let table = crate::model::cwe::CweTable::builtin().unwrap();
        // Every CWE a built-in rule declares is one the table names: a
        // rule's finding is never flagged as unknown.
        for rule in rules.rules().unwrap() {
            for &n in rule.cwe() {
                let id = crate::model::cwe::CweId::from_number(n).unwrap();
                assert!(
                    table.is_known(id),
                    "rule {}: CWE-{n} is not in configs/cwe.toml",
                    rule.id
                );
            }
        }
        let found = rules
            .apply("a.go", &[(3, "h := md5.New()".to_string())])
            .unwrap();
        let f = found
            .iter()
            .find(|f| f.rule.as_deref() == Some("crypto/weak-hash-go"))
            .unwrap();
        assert_eq!(f.cwe.id.map(|id| id.number()), Some(328));
        assert_eq!(f.cwe.name.as_deref(), Some("Use of Weak Hash"));
        assert_eq!(f.cwe.note, None);
    }

    #[test]
    fn a_rule_without_a_cwe_is_a_load_error_naming_it() {
        let e = RuleSet::parse(
            "r.toml",
            "[[rule]]\nid='x/y'\nseverity='low'\ntitle='t'\nmessage='m'\npattern='a'\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("r.toml: rule \"x/y\": names no CWE"), "{e}");
        assert!(e.contains("cwe = [89]"), "{e}");
        for (cwe, problem) in [("[0]", "no CWE id"), ("[89, 89]", "twice")] {
            let e = RuleSet::parse(
                "r.toml",
                &format!("[[rule]]\nid='x'\nseverity='low'\ncwe={cwe}\ntitle='t'\nmessage='m'\npattern='a'\n"),
            )
            .unwrap_err()
            .to_string();
            assert!(e.contains(problem), "{e}");
        }
        let ok = RuleSet::parse(
            "r.toml",
            "[[rule]]\nid='x'\nseverity='low'\ncwe=[89]\ntitle='t'\nmessage='m'\npattern='a'\n",
        )
        .unwrap();
        assert_eq!(ok.rules().unwrap()[0].cwe(), &[89]);
    }

    #[test]
    fn samples_that_disagree_with_the_rule_are_load_errors() {
        let rule = |samples: &str| {
            RuleSet::parse(
                "r.toml",
                &format!(
                    "[[rule]]\nid='x'\nseverity='low'\ncwe=[78]\ntitle='t'\nmessage='m'\npattern='system\\('\nnot_pattern='\"clear\"'\nskip_comments=true\n{samples}"
                ),
            )
        };
        assert!(
            rule(
                "examples=['system(cmd)']\ncounterexamples=['system(\"clear\")', '// system(cmd)']"
            )
            .is_ok()
        );
        let e = rule("examples=['exec(cmd)']").unwrap_err().to_string();
        assert!(
            e.contains("rule \"x\": example \"exec(cmd)\" is not reported"),
            "{e}"
        );
        let e = rule("counterexamples=['system(cmd)']")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("counterexample \"system(cmd)\" is reported"),
            "{e}"
        );
    }

    fn rules_at(rules: &RuleSet, path: &str, code: &str, id: &str) -> Vec<u32> {
        rules
            .apply(path, &numbered(code))
            .unwrap()
            .iter()
            .filter(|f| f.rule.as_deref() == Some(id))
            .map(|f| f.line)
            .collect()
    }

    #[test]
    fn sql_concat_skips_constants_and_numeric_values_but_not_strings() {
        let rules = RuleSet::builtin();
        let code = "class Q {\n\
            String a = \"SELECT id FROM \" + Tables.USERS + \" WHERE id = ?\";\n\
            String b = \"SELECT id FROM users WHERE id = \" + Integer.parseInt(raw);\n\
            String c = \"SELECT id FROM users WHERE name = '\" + name + \"'\";\n\
            String d = \"SELECT \" + COLUMNS + \" FROM users WHERE id = ?\";\n\
            String e = \"SELECT id FROM users WHERE name = '\" + user.getName() + \"'\";\n\
            }\n";
        assert_eq!(
            rules_at(&rules, "src/Q.java", code, "sql/concat"),
            vec![4, 6]
        );
    }

    #[test]
    fn runtime_exec_reports_built_commands_not_constant_ones() {
        let rules = RuleSet::builtin();
        let code = "class R {\n\
            void a() throws Exception { Runtime.getRuntime().exec(\"uptime\"); }\n\
            void b() throws Exception { Runtime.getRuntime().exec(new String[] {\"git\", \"status\"}); }\n\
            void c(String h) throws Exception { Runtime.getRuntime().exec(\"ping \" + h); }\n\
            void d(String cmd) throws Exception { rt.exec(cmd); }\n\
            }\n";
        assert_eq!(
            rules_at(&rules, "src/R.java", code, "java/runtime-exec"),
            vec![4, 5]
        );
    }

    #[test]
    fn bad_rule_files_name_the_rule() {
        let e = RuleSet::parse(
            "r.toml",
            "[[rule]]\nid='x'\nseverity='bad'\ntitle='t'\nmessage='m'\npattern='a'\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("r.toml: rule \"x\": severity"), "{e}");
        let e = RuleSet::parse(
            "r.toml",
            "[[rule]]\nid='x'\nseverity='low'\ntitle='t'\nmessage='m'\npattern='('\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("invalid pattern"), "{e}");
    }
}
