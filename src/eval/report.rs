//! A lenient view of a fanscan JSON report, as `fanscan eval` needs it:
//! each finding's path, lines, rule, CWE and severity, which list it is in (open,
//! suppressed, baselined, refuted by the skeptic, unverified), what the run
//! reviewed, and its tokens and cost.
//!
//! Lenient on purpose: reports of older and newer fanscans are scored
//! alike, a finding's `cwe` may be `"CWE-89"`, `89` or a list, and keys this
//! view does not know are ignored. Only what scoring cannot do without
//! (`findings` with path and line) is required.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::EvalError;
use super::truth::normalize;
use crate::model::cwe::CweId;
use crate::model::findings::Severity;

/// Which of the report's lists a finding came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Listed {
    /// `findings`: verified and open; what the gate fails on.
    Open,
    /// `suppressed`: verified, kept out of the gate by `fanscan:ignore`.
    Suppressed,
    /// `baselined`: verified, kept out of the gate by the baseline.
    Baselined,
    /// `refuted`: verified, refuted by the skeptic.
    Refuted,
    /// `unverified`: failed verification (the quote was not in the file...).
    Unverified,
    /// `unstable`: verified, seen in fewer samples than the quorum.
    Unstable,
}

/// What a finding says its weakness is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Claim {
    /// One or more CWE ids (a rule may declare several).
    Cwes(Vec<CweId>),
    /// No CWE on the finding, nor on its rule.
    None,
    /// A `cwe` that is not an id (the text, for the output).
    Unreadable(String),
}

/// One finding as eval sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Prediction {
    /// Repo-relative, normalized.
    pub path: String,
    pub line: u32,
    /// `line` when the finding gives no end.
    pub end_line: u32,
    pub rule: Option<String>,
    pub claim: Claim,
    pub listed: Listed,
    /// `None` when the finding gives none, or a word fanscan does not
    /// read as one (such a finding is kept by `--score castle`, which
    /// drops only low and info).
    pub severity: Option<Severity>,
}

impl Prediction {
    /// `path:line` (`path:line-end` for a span) and the rule, for listings.
    pub(crate) fn label(&self) -> String {
        let place = if self.end_line > self.line {
            format!("{}:{}-{}", self.path, self.line, self.end_line)
        } else {
            format!("{}:{}", self.path, self.line)
        };
        match &self.rule {
            Some(rule) => format!("{place} {rule}"),
            None => place,
        }
    }
}

/// The run's counters eval reports.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub(crate) struct Usage {
    pub requests: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cached_tokens: u64,
    /// `None` when the model is not in the price table.
    pub cost_usd: Option<f64>,
}

/// A report as eval reads it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct RunView {
    /// The file as named on the command line.
    pub source: String,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub engine: Option<String>,
    pub complete: Option<bool>,
    /// Every finding of every list.
    pub predictions: Vec<Prediction>,
    /// The files the run reviewed, normalized; `None` when the report does
    /// not say.
    pub reviewed: Option<Vec<String>>,
    pub usage: Usage,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawId {
    Number(u64),
    Text(String),
}

impl RawId {
    fn text(&self) -> String {
        match self {
            Self::Number(n) => n.to_string(),
            Self::Text(t) => t.clone(),
        }
    }
}

/// `"CWE-89"`, `89`, `["CWE-327", 328]` or `null`.
#[derive(Deserialize)]
#[serde(untagged)]
enum RawCwe {
    One(RawId),
    Many(Vec<RawId>),
}

impl RawCwe {
    fn claim(&self) -> Claim {
        let texts: Vec<String> = match self {
            Self::One(id) => vec![id.text()],
            Self::Many(ids) => ids.iter().map(RawId::text).collect(),
        };
        let mut ids = Vec::new();
        for text in &texts {
            match CweId::parse(text) {
                Ok(id) => ids.push(id),
                Err(_) => return Claim::Unreadable(text.clone()),
            }
        }
        ids.sort_unstable();
        ids.dedup();
        if ids.is_empty() {
            Claim::None
        } else {
            Claim::Cwes(ids)
        }
    }
}

#[derive(Deserialize)]
struct RawFinding {
    path: String,
    line: u32,
    #[serde(default)]
    end_line: Option<u32>,
    #[serde(default)]
    rule: Option<String>,
    #[serde(default)]
    rule_id: Option<String>,
    #[serde(default)]
    cwe: Option<RawCwe>,
    #[serde(default)]
    severity: Option<String>,
}

/// A list entry: the finding itself (`findings`, `unverified`) or wrapped
/// with why it left the gate (`suppressed`, `baselined`, `refuted`).
#[derive(Deserialize)]
#[serde(untagged)]
enum RawEntry {
    Wrapped { finding: RawFinding },
    Plain(RawFinding),
}

impl RawEntry {
    fn finding(self) -> RawFinding {
        match self {
            Self::Wrapped { finding } | Self::Plain(finding) => finding,
        }
    }
}

#[derive(Deserialize, Default)]
struct RawStats {
    #[serde(default)]
    requests: u64,
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    cached_tokens: u64,
    #[serde(default)]
    cost_usd: Option<f64>,
}

#[derive(Deserialize)]
struct RawCoverage {
    #[serde(default)]
    reviewed: Option<Vec<String>>,
}

#[derive(Deserialize)]
struct RawManifest {
    #[serde(default)]
    rules_source: Option<String>,
}

#[derive(Deserialize)]
struct RawReport {
    #[serde(default)]
    provider: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    engine: Option<String>,
    #[serde(default)]
    complete: Option<bool>,
    #[serde(default)]
    manifest: Option<RawManifest>,
    findings: Vec<RawEntry>,
    #[serde(default)]
    unverified: Vec<RawEntry>,
    #[serde(default)]
    suppressed: Vec<RawEntry>,
    #[serde(default)]
    baselined: Vec<RawEntry>,
    #[serde(default)]
    refuted: Vec<RawEntry>,
    #[serde(default)]
    unstable: Vec<RawEntry>,
    #[serde(default)]
    coverage: Option<RawCoverage>,
    #[serde(default)]
    stats: Option<RawStats>,
}

/// The CWEs the built-in rules declare (`cwe = [89]` on a rule in
/// `configs/rules.toml`), by rule id: what a finding without its own `cwe`
/// is taken to claim, when the run used the built-in rules. A finding's
/// own `cwe` (every finding of a current report has one when its rule or
/// model named it) always wins; this scores reports written before
/// findings carried a CWE.
pub(crate) type RuleCwes = BTreeMap<String, Vec<CweId>>;

/// Reads the `cwe` of each built-in rule that has one.
pub(crate) fn builtin_rule_cwes() -> Result<RuleCwes, EvalError> {
    #[derive(Deserialize)]
    struct Rules {
        #[serde(default)]
        rule: Vec<Rule>,
    }
    #[derive(Deserialize)]
    struct Rule {
        id: String,
        #[serde(default)]
        cwe: Option<RawCwe>,
    }
    let text = crate::engine::rules::BUILTIN_RULES;
    let bug = |problem: String| EvalError::BuiltinRules { problem };
    let rules: Rules = toml::from_str(text).map_err(|e| bug(crate::util::toml_error(text, &e)))?;
    let mut map = RuleCwes::new();
    for rule in rules.rule {
        let Some(cwe) = rule.cwe else { continue };
        match cwe.claim() {
            Claim::Cwes(ids) => {
                map.insert(rule.id, ids);
            }
            Claim::None => {}
            Claim::Unreadable(text) => {
                return Err(bug(format!(
                    "rule {:?}: cwe {text:?} is not a CWE id",
                    rule.id
                )));
            }
        }
    }
    Ok(map)
}

/// Reads the report at `path`.
pub(crate) fn load(path: &std::path::Path, rules: &RuleCwes) -> Result<RunView, EvalError> {
    let source = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|error| EvalError::ReadReport {
        path: source.clone(),
        error,
    })?;
    parse(&source, &text, rules)
}

/// Parses a report's text.
pub(crate) fn parse(source: &str, text: &str, rules: &RuleCwes) -> Result<RunView, EvalError> {
    let raw: RawReport = serde_json::from_str(text).map_err(|e| EvalError::Report {
        place: format!("{source}:{}:{}", e.line(), e.column()),
        problem: format!(
            "not a fanscan JSON report ({}): give the report `fanscan scan --format json` writes",
            super::json_message(&e)
        ),
    })?;
    // A custom rule file may reuse a built-in id for something else: the
    // built-in CWEs are trusted only for a run of the built-in rules.
    let builtin_rules = raw
        .manifest
        .as_ref()
        .and_then(|m| m.rules_source.as_deref())
        .is_none_or(|s| s.starts_with("builtin"));
    let lists = [
        (Listed::Open, raw.findings),
        (Listed::Suppressed, raw.suppressed),
        (Listed::Baselined, raw.baselined),
        (Listed::Refuted, raw.refuted),
        (Listed::Unverified, raw.unverified),
        (Listed::Unstable, raw.unstable),
    ];
    let mut predictions = Vec::new();
    for (listed, entries) in lists {
        for entry in entries {
            let f = entry.finding();
            let rule = f.rule.or(f.rule_id);
            let claim = match &f.cwe {
                Some(cwe) => cwe.claim(),
                None => Claim::None,
            };
            let claim = match (claim, &rule) {
                (Claim::None, Some(rule)) if builtin_rules => rules
                    .get(rule)
                    .map_or(Claim::None, |ids| Claim::Cwes(ids.clone())),
                (claim, _) => claim,
            };
            predictions.push(Prediction {
                path: normalize(&f.path),
                line: f.line,
                end_line: f.end_line.unwrap_or(f.line).max(f.line),
                rule,
                claim,
                listed,
                severity: f.severity.as_deref().and_then(Severity::parse),
            });
        }
    }
    let stats = raw.stats.unwrap_or_default();
    Ok(RunView {
        source: source.to_string(),
        provider: raw.provider,
        model: raw.model,
        engine: raw.engine,
        complete: raw.complete,
        predictions,
        reviewed: raw
            .coverage
            .and_then(|c| c.reviewed)
            .map(|r| r.iter().map(|p| normalize(p)).collect()),
        usage: Usage {
            requests: stats.requests,
            input_tokens: stats.input_tokens,
            output_tokens: stats.output_tokens,
            cached_tokens: stats.cached_tokens,
            cost_usd: stats.cost_usd,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cwe(n: u32) -> CweId {
        CweId::from_number(n).unwrap()
    }

    #[test]
    fn every_list_is_read_with_its_cwe_in_any_form() {
        let text = r#"{
          "provider": "offline", "model": "rules", "engine": "rule_engine", "complete": true,
          "findings": [
            {"path": "./a.py", "line": 3, "end_line": 5, "rule": "py/sql", "cwe": "CWE-89", "severity": "Low", "extra": 1},
            {"path": "b.py", "line": 1, "cwe": 79},
            {"path": "c.py", "line": 2, "cwe": ["CWE-327", 328, "CWE-327"]},
            {"path": "d.py", "line": 2, "cwe": null},
            {"path": "e.py", "line": 2, "cwe": "SQL injection"}
          ],
          "suppressed": [{"finding": {"path": "f.py", "line": 1}, "suppression": {}}],
          "baselined": [{"finding": {"path": "g.py", "line": 1}, "reason": null}],
          "refuted": [{"finding": {"path": "h.py", "line": 1}, "reason": "constant"}],
          "unverified": [{"path": "i.py", "line": 9, "rule_id": "x"}],
          "coverage": {"reviewed": ["a.py", "./b.py"]},
          "stats": {"requests": 4, "input_tokens": 100, "output_tokens": 20, "cached_tokens": 50, "cost_usd": 0.5}
        }"#;
        let view = parse("r.json", text, &RuleCwes::new()).unwrap();
        let claims: Vec<(&str, &Claim, Listed)> = view
            .predictions
            .iter()
            .map(|p| (p.path.as_str(), &p.claim, p.listed))
            .collect();
        assert_eq!(
            claims,
            vec![
                ("a.py", &Claim::Cwes(vec![cwe(89)]), Listed::Open),
                ("b.py", &Claim::Cwes(vec![cwe(79)]), Listed::Open),
                ("c.py", &Claim::Cwes(vec![cwe(327), cwe(328)]), Listed::Open),
                ("d.py", &Claim::None, Listed::Open),
                (
                    "e.py",
                    &Claim::Unreadable("SQL injection".into()),
                    Listed::Open
                ),
                ("f.py", &Claim::None, Listed::Suppressed),
                ("g.py", &Claim::None, Listed::Baselined),
                ("h.py", &Claim::None, Listed::Refuted),
                ("i.py", &Claim::None, Listed::Unverified),
            ]
        );
        assert_eq!(view.predictions[0].end_line, 5);
        assert_eq!(view.predictions[0].severity, Some(Severity::Low));
        assert_eq!(view.predictions[1].severity, None);
        assert_eq!(view.predictions[0].label(), "a.py:3-5 py/sql");
        assert_eq!(view.predictions[1].end_line, 1);
        assert_eq!(view.predictions[8].rule.as_deref(), Some("x"));
        assert_eq!(view.reviewed, Some(vec!["a.py".into(), "b.py".into()]));
        assert_eq!(view.usage.cost_usd, Some(0.5));
        assert_eq!(view.usage.input_tokens, 100);
        assert_eq!(view.model.as_deref(), Some("rules"));
    }

    #[test]
    fn a_finding_without_a_cwe_takes_its_builtin_rules() {
        let rules = RuleCwes::from([("py/sql".to_string(), vec![cwe(89)])]);
        let text = |source: &str| {
            format!(
                r#"{{"manifest": {{"rules_source": "{source}"}},
                  "findings": [{{"path": "a.py", "line": 1, "rule": "py/sql"}},
                               {{"path": "a.py", "line": 2, "rule": "py/sql", "cwe": "CWE-564"}}]}}"#
            )
        };
        let view = parse("r", &text("builtin:configs/rules.toml"), &rules).unwrap();
        assert_eq!(view.predictions[0].claim, Claim::Cwes(vec![cwe(89)]));
        assert_eq!(
            view.predictions[1].claim,
            Claim::Cwes(vec![cwe(564)]),
            "its own first"
        );
        let view = parse("r", &text("my-rules.toml"), &rules).unwrap();
        assert_eq!(
            view.predictions[0].claim,
            Claim::None,
            "not for custom rules"
        );
    }

    #[test]
    fn a_file_that_is_not_a_report_is_an_error_with_the_position() {
        for (text, expected) in [
            (
                "{\"runs\": []}",
                "r.json:1:12: not a fanscan JSON report (missing field `findings`",
            ),
            ("{\"findings\": [{\"path\": \"a\"}]}", "r.json:1:"),
            (
                "not json",
                "r.json:1:2: not a fanscan JSON report (expected ident)",
            ),
        ] {
            let error = parse("r.json", text, &RuleCwes::new())
                .unwrap_err()
                .to_string();
            assert!(error.starts_with(expected), "{error}");
            assert!(error.ends_with("give the report `fanscan scan --format json` writes"));
        }
    }

    #[test]
    fn the_builtin_rules_cwes_read() {
        // Whatever the rule file declares today must read: a rule whose
        // `cwe` is not an id fails here, not in a user's eval.
        let map = builtin_rule_cwes().unwrap();
        assert!(map.values().all(|ids| !ids.is_empty()));
    }
}
