//! What a finding is: its severity, origin, place and CWE, and what is kept
//! about how an agent's report was read (how it parsed, which repairs it
//! took, the claims that did not become findings).

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::cwe::{CweId, CweTable};

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
    /// With `--samples N` > 1: in how many of its group's N samples it
    /// was reported; absent with one sample.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen: Option<Seen>,
}

/// How often a finding recurred across a group's samples: in `k` of `n`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seen {
    pub k: u32,
    pub n: u32,
}

impl Seen {
    /// Whether it was seen in at least `quorum` samples.
    pub fn reaches(self, quorum: u32) -> bool {
        self.k >= quorum
    }
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
            Some(name) => format!("{id} ({})", crate::model::cwe::short_name(name)),
            None => id.to_string(),
        })
    }
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

/// One repair [`repair_json`](super::repair::repair_json) made.
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
    pub(super) fn is_structural(self) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::findings::parse_report;

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
}
