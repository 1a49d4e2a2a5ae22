//! Baselines: findings a team has accepted, recorded by fingerprint so
//! that they stay out of the gate and are listed apart.
//!
//! Takes a baseline file (JSON, versioned, unknown keys rejected) or the
//! findings of a run; gives a [`Baseline`] or the file's text. A file
//! that does not parse is a [`BaselineError`] naming the file and the fix.
//!
//! An entry may expire (`expires`, an ISO date: it holds through that day)
//! and records the SHA-256 of its file when it was accepted
//! (`file_sha256`), so that an entry that no longer matches can be told
//! apart: its file changed (the entry is void) or the finding went away.
//! Both keys are optional: files written before them load unchanged.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::stages::reduce::Merged;

/// The baseline file format version.
pub(crate) const VERSION: u32 = 1;

/// A baseline file.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    pub version: u32,
    pub findings: Vec<BaselineEntry>,
}

/// One accepted finding.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BaselineEntry {
    /// fanscan's stable fingerprint (what is matched).
    pub fingerprint: String,
    pub rule: Option<String>,
    pub path: String,
    pub title: String,
    /// Why it was accepted.
    #[serde(default)]
    pub reason: Option<String>,
    /// The last day it holds; after it the finding gates again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires: Option<jiff::civil::Date>,
    /// SHA-256 of the file's bytes when the entry was written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_sha256: Option<String>,
}

impl BaselineEntry {
    /// Whether its expiry has passed on `today`.
    pub(crate) fn expired(&self, today: jiff::civil::Date) -> bool {
        self.expires.is_some_and(|e| e < today)
    }
}

/// What new entries of [`Baseline::of`] record.
pub struct Accept<'a> {
    /// The reason of new entries (`--reason`).
    pub reason: Option<&'a str>,
    /// The expiry of new entries, and of entries whose expiry has passed
    /// (`--expires-in`, from the run's date).
    pub expires: Option<jiff::civil::Date>,
    /// The run's date.
    pub today: jiff::civil::Date,
    /// A file's SHA-256 by its path.
    pub file_sha256: &'a dyn Fn(&str) -> Option<String>,
}

/// A baseline file that cannot be used: exit code 2.
#[derive(Debug, thiserror::Error)]
pub enum BaselineError {
    #[error(
        "--baseline {path}: cannot read the baseline: {error}; write one with `fanscan baseline -o {path}`"
    )]
    Read { path: String, error: std::io::Error },
    #[error(
        "--baseline {path}:{line}: not a fanscan baseline: {message}; write one with `fanscan baseline -o {path}`"
    )]
    Parse {
        path: String,
        line: usize,
        message: String,
    },
    #[error(
        "--baseline {path}: version {found} is not supported (this fanscan reads version {VERSION}); regenerate it with `fanscan baseline -o {path}`"
    )]
    Version { path: String, found: u32 },
}

impl Baseline {
    /// Reads and checks a baseline file.
    pub fn load(path: &Path) -> Result<Self, BaselineError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|error| BaselineError::Read {
            path: shown.clone(),
            error,
        })?;
        Self::parse(&shown, &text)
    }

    /// Parses a baseline's text; `path` names it in errors.
    pub(crate) fn parse(path: &str, text: &str) -> Result<Self, BaselineError> {
        let baseline: Self = serde_json::from_str(text).map_err(|e| BaselineError::Parse {
            path: path.to_string(),
            line: e.line(),
            message: e.to_string(),
        })?;
        if baseline.version != VERSION {
            return Err(BaselineError::Version {
                path: path.to_string(),
                found: baseline.version,
            });
        }
        Ok(baseline)
    }

    /// The entry with `fingerprint`.
    pub(crate) fn get(&self, fingerprint: &str) -> Option<&BaselineEntry> {
        self.findings.iter().find(|e| e.fingerprint == fingerprint)
    }

    /// A baseline of `findings`, sorted by path and fingerprint. An entry
    /// already in `previous` keeps its reason, and its expiry while that
    /// has not passed (writing the baseline again is accepting its
    /// findings again, under `accept`'s expiry); new ones get `accept`'s.
    pub fn of<'a>(
        findings: impl IntoIterator<Item = &'a Merged>,
        previous: Option<&Baseline>,
        accept: &Accept<'_>,
    ) -> Self {
        let mut entries: Vec<BaselineEntry> = findings
            .into_iter()
            .map(|m| {
                let earlier = previous.and_then(|p| p.get(&m.fingerprint));
                BaselineEntry {
                    fingerprint: m.fingerprint.clone(),
                    rule: m.finding.rule.clone(),
                    path: m.finding.path.clone(),
                    title: m.finding.title.clone(),
                    reason: earlier
                        .and_then(|e| e.reason.clone())
                        .or_else(|| accept.reason.map(str::to_string)),
                    expires: match earlier {
                        Some(e) if e.expires.is_some() && !e.expired(accept.today) => e.expires,
                        _ => accept.expires,
                    },
                    file_sha256: (accept.file_sha256)(&m.finding.path),
                }
            })
            .collect();
        entries.sort_by(|a, b| (&a.path, &a.fingerprint).cmp(&(&b.path, &b.fingerprint)));
        entries.dedup_by(|a, b| a.fingerprint == b.fingerprint);
        Self {
            version: VERSION,
            findings: entries,
        }
    }

    /// The file's text: pretty JSON with a trailing newline.
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string_pretty(self).map(|t| t + "\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_what_it_does_not_know() {
        let b = Baseline {
            version: VERSION,
            findings: vec![BaselineEntry {
                fingerprint: "abc".into(),
                rule: Some("rust/unwrap".into()),
                path: "src/lib.rs".into(),
                title: "unwrap".into(),
                reason: Some("accepted".into()),
                expires: Some(jiff::civil::date(2027, 3, 1)),
                file_sha256: Some("00ff".into()),
            }],
        };
        let text = b.to_json().unwrap();
        assert!(text.contains("\"expires\": \"2027-03-01\""), "{text}");
        assert_eq!(Baseline::parse("b.json", &text).unwrap(), b);
        let e = Baseline::parse("b.json", "{\"version\": 1, \"findings\": [], \"extra\": 1}")
            .unwrap_err();
        assert!(e.to_string().contains("b.json:1"), "{e}");
        assert!(e.to_string().contains("extra"), "{e}");
        let e = Baseline::parse("b.json", "{\"version\": 9, \"findings\": []}").unwrap_err();
        assert!(e.to_string().contains("version 9"), "{e}");
        assert!(Baseline::parse("b.json", "not json").is_err());
    }

    #[test]
    fn files_without_expiry_load_unchanged_and_a_bad_date_names_the_line() {
        let old = "{\n  \"version\": 1,\n  \"findings\": [\n    {\n      \"fingerprint\": \"abc\",\n      \"rule\": null,\n      \"path\": \"a.rs\",\n      \"title\": \"t\",\n      \"reason\": null\n    }\n  ]\n}\n";
        let b = Baseline::parse("b.json", old).unwrap();
        assert_eq!(
            (b.findings[0].expires, &b.findings[0].file_sha256),
            (None, &None)
        );
        assert_eq!(
            b.to_json().unwrap(),
            old,
            "an old file is written back as it was"
        );
        let bad = old.replace(
            "\"reason\": null",
            "\"reason\": null,\n      \"expires\": \"2027-13-45\"",
        );
        let e = Baseline::parse("b.json", &bad).unwrap_err().to_string();
        assert!(e.contains("b.json:10"), "{e}");
    }
}
