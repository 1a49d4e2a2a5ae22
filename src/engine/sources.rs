//! The table of sources: where untrusted input comes from
//! (`configs/sources.toml`), which rules' findings depend on it, and which
//! calls build a value from their arguments alone. The syntax trees' taint
//! check ([`super::taint`]) reads it; what a check of one finding says is a
//! [`Judged`].

use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use regex::{Regex, RegexSet};
use serde::Deserialize;

/// The files the engine was shown: path → numbered lines.
pub(crate) type Files = BTreeMap<String, BTreeMap<u32, String>>;

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
/// at the end of its line is read whole; 9: the line check is gone, the
/// syntax trees judge alone).
const CHECK_VERSION: u32 = 9;

/// What stored verdicts of the check depend on: its version and its
/// table's text.
pub(crate) fn identity() -> String {
    format!(
        " sources v{CHECK_VERSION} {}",
        crate::util::sha256_hex(TABLE.as_bytes())
    )
}

/// The table as the engine uses it.
pub(crate) struct SourceTable {
    /// Each kind of source, in the table's order.
    kinds: Vec<String>,
    /// Every kind's patterns in one set (a text is read once for all).
    patterns: RegexSet,
    /// The kind (an index into `kinds`) of each pattern of the set.
    kind_of: Vec<usize>,
    sink_rules: Vec<String>,
    pure_calls: BTreeSet<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTable {
    sink_rules: Vec<String>,
    pure_calls: Vec<String>,
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
        Ok(Self {
            kinds,
            patterns,
            kind_of,
            sink_rules: raw.sink_rules,
            pure_calls: raw.pure_calls.into_iter().collect(),
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
}
