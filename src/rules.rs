//! The offline engine's rule set: regex rules kept in `configs/rules.toml`
//! (compiled into the binary) or a file given with `--rules`.
//!
//! Takes a file's lines (as a tool showed them, already redacted); gives
//! findings with exact paths and lines. Rules may skip test code and
//! comments, and exclude lines matching a `not_pattern`.

use regex::Regex;
use serde::Deserialize;

use crate::findings::{Finding, Origin, Severity};
use crate::language::language_of;

/// The built-in rule set.
pub(crate) const BUILTIN_RULES: &str = include_str!("../configs/rules.toml");

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
}

/// A compiled rule set.
#[derive(Debug)]
pub(crate) struct RuleSet {
    pub rules: Vec<Rule>,
    /// Where it came from (`builtin` or a path), for the run manifest.
    pub source: String,
    /// SHA-256 of the rule text, for the run manifest.
    pub hash: String,
}

impl RuleSet {
    /// Parses and compiles a rule file; errors name the source and the rule.
    pub(crate) fn parse(source: &str, text: &str) -> Result<Self, RuleError> {
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
            let pattern =
                Regex::new(&raw.pattern).map_err(|e| at(format!("invalid pattern: {e}")))?;
            let not_pattern = raw
                .not_pattern
                .as_deref()
                .map(Regex::new)
                .transpose()
                .map_err(|e| at(format!("invalid not_pattern: {e}")))?;
            rules.push(Rule {
                id: raw.id,
                languages: raw.languages,
                severity,
                title: raw.title,
                message: raw.message,
                pattern,
                not_pattern,
                skip_tests: raw.skip_tests,
                skip_comments: raw.skip_comments,
            });
        }
        Ok(Self {
            rules,
            source: source.to_string(),
            hash: crate::util::sha256_hex(text.as_bytes()),
        })
    }

    /// The built-in rule set.
    pub(crate) fn builtin() -> Result<Self, RuleError> {
        Self::parse("builtin:configs/rules.toml", BUILTIN_RULES)
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
    /// in ascending order; they need not be the whole file.
    pub(crate) fn apply(&self, path: &str, lines: &[(u32, String)]) -> Vec<Finding> {
        let language = language_of(path);
        let test_file = is_test_path(path);
        // In Rust, code after `#[cfg(test)]` is test code.
        let test_from = lines
            .iter()
            .find(|(_, l)| l.trim_start().starts_with("#[cfg(test)]"))
            .map(|(n, _)| *n);
        let mut out = Vec::new();
        for rule in &self.rules {
            if !rule.languages.is_empty()
                && !language.is_some_and(|l| rule.languages.iter().any(|r| r == l))
            {
                continue;
            }
            if rule.skip_tests && test_file {
                continue;
            }
            for (number, line) in lines {
                if rule.skip_tests && test_from.is_some_and(|t| *number >= t) {
                    break;
                }
                let code = if rule.skip_comments {
                    strip_comment(line)
                } else {
                    line.as_str()
                };
                if !rule.pattern.is_match(code) {
                    continue;
                }
                if rule.not_pattern.as_ref().is_some_and(|n| n.is_match(line)) {
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
                    origin: Origin::Agent,
                });
            }
        }
        out.sort_by(|a, b| (a.line, &a.rule).cmp(&(b.line, &b.rule)));
        out
    }
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
/// trailing `//` or `#` comment outside a string is cut.
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
            None if c == b'"' || c == b'\'' => in_string = Some(c),
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
    fn builtin_rules_compile() {
        let rules = RuleSet::builtin().unwrap();
        assert!(rules.rules.len() >= 20, "{}", rules.rules.len());
    }

    #[test]
    fn rust_unwrap_outside_tests_only() {
        let rules = RuleSet::builtin().unwrap();
        let code = "fn a() {\n    let x = y.unwrap();\n    let z = y.unwrap_or(1);\n    // c.unwrap()\n}\n#[cfg(test)]\nmod tests { fn t() { y.unwrap(); } }\n";
        let found = rules.apply("src/a.rs", &numbered(code));
        let unwraps: Vec<u32> = found
            .iter()
            .filter(|f| f.rule.as_deref() == Some("rust/unwrap"))
            .map(|f| f.line)
            .collect();
        assert_eq!(unwraps, vec![2]);
        assert!(
            rules
                .apply("tests/a.rs", &numbered(code))
                .iter()
                .all(|f| f.rule.as_deref() != Some("rust/unwrap"))
        );
    }

    #[test]
    fn strip_comment_keeps_strings() {
        assert_eq!(
            strip_comment("let u = \"http://x\"; // c"),
            "let u = \"http://x\"; "
        );
        assert_eq!(strip_comment("   // all comment"), "");
        assert_eq!(strip_comment("#[derive(Debug)]"), "#[derive(Debug)]");
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
