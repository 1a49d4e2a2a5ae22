//! Another tool's results as leads (`--leads FILE.sarif`, `fanscan
//! triage`).
//!
//! Takes SARIF 2.1.0 files (Semgrep's, CodeQL's, any tool's) and the
//! scan's root; gives one [`Lead`] per result that names a file inside the
//! repository, and each other result as an [`OutsideLead`] with why: a
//! file outside the repository is listed, never read. Then each lead goes
//! to the task of the group holding its file ([`SarifLeads::attach`]);
//! one whose file is in no group of the plan is listed too.
//!
//! A file that is not SARIF, or a result this reader cannot use, is an
//! error naming the file and the JSON path of the offending value
//! (`$.runs[0].results[3].locations[0]…`): exit 2, before anything runs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;
use serde_json::value::RawValue;

use crate::agents::AgentTask;
use crate::model::findings::{FindingCwe, Severity};
use crate::model::leads::{Lead, OutsideLead};
use crate::stages::inventory::Inventory;

/// A SARIF file that cannot be used as leads.
#[derive(Debug, thiserror::Error)]
pub enum LeadsError {
    #[error("--leads {}: cannot read it: {error}", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
    #[error("--leads {}: not JSON: {detail}; give a SARIF 2.1.0 file", .path.display())]
    Json { path: PathBuf, detail: String },
    #[error("--leads {}: {at}: {problem}", .path.display())]
    Shape {
        path: PathBuf,
        /// The JSON path of the value at fault.
        at: String,
        problem: String,
    },
}

/// The leads of the SARIF files given, by file, and the results that
/// name no file of the repository.
#[derive(Debug, Default)]
pub(crate) struct SarifLeads {
    by_path: BTreeMap<String, Vec<Lead>>,
    outside: Vec<OutsideLead>,
    /// (tool, rule, path, line) of every lead and outside result so far:
    /// a result that repeats one is the same lead, read once (a SARIF of
    /// a million results may hold a few hundred distinct ones).
    seen: std::collections::HashSet<(String, String, String, u32)>,
}

impl SarifLeads {
    /// Reads every file of `files` against the scan's `root`.
    pub(crate) fn read(root: &Path, files: &[PathBuf]) -> Result<Self, LeadsError> {
        let mut out = Self::default();
        for file in files {
            let text = std::fs::read_to_string(file).map_err(|error| LeadsError::Read {
                path: file.clone(),
                error,
            })?;
            read_log(root, file, &text, &mut out)?;
        }
        Ok(out)
    }

    /// The leads of one SARIF log's text (`file` names it in errors).
    pub(crate) fn of_text(root: &Path, file: &Path, text: &str) -> Result<Self, LeadsError> {
        let mut out = Self::default();
        read_log(root, file, text, &mut out)?;
        Ok(out)
    }

    /// Every lead inside the repository, by path.
    pub(crate) fn leads(&self) -> impl Iterator<Item = &Lead> {
        self.by_path.values().flatten()
    }

    /// `scope` cut to the files that have leads (`fanscan triage` audits
    /// only those).
    pub(crate) fn only_their_files(&self, scope: Inventory) -> Inventory {
        let has = |path: &str| self.by_path.contains_key(path);
        Inventory {
            files: scope.files.into_iter().filter(|f| has(&f.path)).collect(),
            skipped: scope.skipped.into_iter().filter(|f| has(&f.path)).collect(),
            ..scope
        }
    }

    /// Gives each of `tasks` the leads of its files. A lead whose file is
    /// in no group of `planned` (the whole plan's files; a shard runs only
    /// some of them) is listed: the inventory's skip reason when it has
    /// one, else why it is not in the scan.
    pub(crate) fn attach(
        mut self,
        tasks: &mut [AgentTask],
        planned: &BTreeSet<&str>,
        inventory: &Inventory,
    ) -> Vec<OutsideLead> {
        for task in tasks.iter_mut() {
            for file in &task.files {
                if let Some(leads) = self.by_path.remove(&file.path) {
                    task.leads.extend(leads);
                }
            }
        }
        let skipped: BTreeMap<&str, String> = inventory
            .skipped
            .iter()
            .map(|s| (s.path.as_str(), s.reason.to_string()))
            .collect();
        let in_inventory: BTreeSet<&str> =
            inventory.files.iter().map(|f| f.path.as_str()).collect();
        for (path, leads) in self.by_path {
            if planned.contains(path.as_str()) {
                // Another shard's group holds it.
                continue;
            }
            let why = match skipped.get(path.as_str()) {
                Some(reason) => format!("not audited: the scan skipped the file ({reason})"),
                None if in_inventory.contains(path.as_str()) => {
                    "not audited: the file is not in this run's plan".to_string()
                }
                None => "not audited: no such file in the scan (excluded, ignored or absent)"
                    .to_string(),
            };
            for lead in leads {
                self.outside.push(OutsideLead {
                    tool: lead.tool,
                    rule: lead.rule,
                    location: format!("{}:{}", lead.path, lead.line),
                    why: why.clone(),
                });
            }
        }
        self.outside
    }
}

/// A SARIF log as far as the leads need it: each run and each result is
/// kept as its text (a slice of the file) and read one at a time, so a
/// log of a million results costs its file's size, not a tree of JSON
/// values ten times larger.
#[derive(serde::Deserialize)]
struct RawLog<'a> {
    #[serde(default)]
    version: Option<Value>,
    #[serde(borrow, default)]
    runs: Option<&'a RawValue>,
}

/// One run: its tool (name and rules) read whole, its results as text.
#[derive(serde::Deserialize)]
struct RawRun<'a> {
    #[serde(default)]
    tool: Option<Value>,
    #[serde(borrow, default)]
    results: Option<&'a RawValue>,
}

/// One SARIF log's results into `out`.
fn read_log(root: &Path, file: &Path, text: &str, out: &mut SarifLeads) -> Result<(), LeadsError> {
    let shape = |at: &str, problem: &str| LeadsError::Shape {
        path: file.to_path_buf(),
        at: at.to_string(),
        problem: problem.to_string(),
    };
    let log: RawLog = serde_json::from_str(text).map_err(|e| match e.classify() {
        serde_json::error::Category::Data => {
            shape("$", &format!("expected a SARIF log object ({e})"))
        }
        _ => LeadsError::Json {
            path: file.to_path_buf(),
            detail: e.to_string(),
        },
    })?;
    if let Some(version) = &log.version
        && version.as_str() != Some("2.1.0")
    {
        return Err(shape(
            "$.version",
            &format!("version {version} is not SARIF 2.1.0"),
        ));
    }
    let runs: Vec<&RawValue> = log
        .runs
        .and_then(|runs| serde_json::from_str(runs.get()).ok())
        .ok_or_else(|| shape("$.runs", "expected the array of runs"))?;
    // A `file://` URI is compared with the root as the system names it.
    let canonical = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    for (r, run) in runs.iter().enumerate() {
        let at_run = format!("$.runs[{r}]");
        let run: RawRun = serde_json::from_str(run.get())
            .map_err(|e| shape(&at_run, &format!("expected a run object ({e})")))?;
        let tool = run
            .tool
            .as_ref()
            .and_then(|t| t.pointer("/driver/name"))
            .and_then(Value::as_str)
            .ok_or_else(|| {
                shape(
                    &format!("{at_run}.tool.driver.name"),
                    "expected the tool's name",
                )
            })?
            .to_string();
        let rules = run.tool.as_ref().map(rules_of).unwrap_or_default();
        let Some(results) = run.results else {
            continue;
        };
        let results: Vec<&RawValue> = serde_json::from_str(results.get())
            .map_err(|_| shape(&format!("{at_run}.results"), "expected an array"))?;
        for (i, result) in results.iter().enumerate() {
            let at = format!("{at_run}.results[{i}]");
            // Valid JSON already: the log parsed.
            let result: Value = serde_json::from_str(result.get())
                .map_err(|e| shape(&at, &format!("not a JSON value ({e})")))?;
            let lead =
                read_result(&result, &rules, &tool, &at).map_err(|(at, p)| shape(&at, &p))?;
            add_lead(&canonical, lead, out);
        }
    }
    Ok(())
}

/// `lead` (its path as the SARIF gives it) into `out`, unless it repeats
/// one already there: by its path inside the repository, or listed as
/// outside.
fn add_lead(root: &Path, lead: Lead, out: &mut SarifLeads) {
    let key = (
        lead.tool.clone(),
        lead.rule.clone(),
        lead.path.clone(),
        lead.line,
    );
    if !out.seen.insert(key) {
        return;
    }
    match repository_path(root, &lead.path) {
        Some(path) => out
            .by_path
            .entry(path.clone())
            .or_default()
            .push(Lead { path, ..lead }),
        None => out.outside.push(OutsideLead {
            tool: lead.tool,
            rule: lead.rule,
            location: format!("{}:{}", lead.path, lead.line),
            why: "outside the repository: listed, never read".into(),
        }),
    }
}

/// What a run says of its rules, by id and by index: (id, title,
/// severity, CWE).
struct RuleInfo {
    id: String,
    title: Option<String>,
    severity: Option<Severity>,
    cwe: FindingCwe,
}

fn rules_of(tool: &Value) -> Vec<RuleInfo> {
    let Some(rules) = tool.pointer("/driver/rules").and_then(Value::as_array) else {
        return Vec::new();
    };
    rules
        .iter()
        .map(|rule| {
            let text = |p: &str| rule.pointer(p).and_then(Value::as_str).map(str::to_string);
            RuleInfo {
                id: text("/id").unwrap_or_default(),
                title: text("/shortDescription/text").or_else(|| text("/name")),
                severity: security_severity(rule.pointer("/properties/security-severity"))
                    .or_else(|| level(text("/defaultConfiguration/level").as_deref())),
                cwe: cwe_of(rule.pointer("/properties/tags")),
            }
        })
        .collect()
}

/// One result as a lead (its path as the SARIF gives it); an error is
/// (JSON path, problem).
fn read_result(
    result: &Value,
    rules: &[RuleInfo],
    tool: &str,
    at: &str,
) -> Result<Lead, (String, String)> {
    let rule_index = result
        .get("ruleIndex")
        .or(result.pointer("/rule/index"))
        .and_then(Value::as_u64)
        .and_then(|i| usize::try_from(i).ok());
    let rule_id = result
        .get("ruleId")
        .or(result.pointer("/rule/id"))
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| rule_index.and_then(|i| rules.get(i)).map(|r| r.id.clone()))
        .ok_or_else(|| (format!("{at}.ruleId"), "expected the rule's id".to_string()))?;
    let info = rule_index
        .and_then(|i| rules.get(i))
        .filter(|r| r.id == rule_id)
        .or_else(|| rules.iter().find(|r| r.id == rule_id));
    let message = result
        .pointer("/message/text")
        .or(result.pointer("/message/markdown"))
        .and_then(Value::as_str)
        .ok_or_else(|| {
            (
                format!("{at}.message.text"),
                "expected the message's text".to_string(),
            )
        })?
        .trim()
        .to_string();
    let location = result
        .pointer("/locations/0/physicalLocation")
        .ok_or_else(|| {
            (
                format!("{at}.locations[0].physicalLocation"),
                "expected a physical location (a file and a region)".to_string(),
            )
        })?;
    let uri = location
        .pointer("/artifactLocation/uri")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            (
                format!("{at}.locations[0].physicalLocation.artifactLocation.uri"),
                "expected the file's uri".to_string(),
            )
        })?;
    let line_at = format!("{at}.locations[0].physicalLocation.region.startLine");
    let line = match location.pointer("/region/startLine") {
        // SARIF's default start line is 1.
        None => 1,
        Some(v) => v
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| *n >= 1)
            .ok_or_else(|| (line_at, format!("expected a line number from 1, found {v}")))?,
    };
    let end_line = location
        .pointer("/region/endLine")
        .and_then(Value::as_u64)
        .and_then(|n| u32::try_from(n).ok())
        .filter(|e| *e > line);
    let severity = security_severity(result.pointer("/properties/security-severity"))
        .or_else(|| level(result.get("level").and_then(Value::as_str)))
        .or(info.and_then(|r| r.severity))
        .unwrap_or(Severity::Medium);
    let cwe = match cwe_of(result.pointer("/properties/tags")) {
        found if found.id.is_some() => found,
        _ => info.map(|r| r.cwe.clone()).unwrap_or_default(),
    };
    Ok(Lead {
        id: String::new(),
        tool: tool.to_string(),
        path: uri.to_string(),
        line,
        end_line,
        title: info
            .and_then(|r| r.title.clone())
            .unwrap_or_else(|| rule_id.clone()),
        rule: rule_id,
        severity,
        message,
        // Read from the file when the group is prepared: the code the
        // model is shown is the file's, not the tool's snippet.
        code: None,
        cwe,
    })
}

/// SARIF's `level` as a severity.
fn level(level: Option<&str>) -> Option<Severity> {
    match level? {
        "error" => Some(Severity::High),
        "warning" => Some(Severity::Medium),
        "note" => Some(Severity::Low),
        "none" => Some(Severity::Info),
        _ => None,
    }
}

/// CodeQL's `security-severity` (a CVSS-like score, as a string or a
/// number) as a severity, by GitHub's bands.
fn security_severity(value: Option<&Value>) -> Option<Severity> {
    let score = match value? {
        Value::String(s) => s.trim().parse::<f64>().ok()?,
        Value::Number(n) => n.as_f64()?,
        _ => return None,
    };
    Some(match score {
        s if s >= 9.0 => Severity::Critical,
        s if s >= 7.0 => Severity::High,
        s if s >= 4.0 => Severity::Medium,
        s if s > 0.0 => Severity::Low,
        _ => Severity::Info,
    })
}

/// The first CWE a tag list names: CodeQL's `external/cwe/cwe-089`,
/// Semgrep's `CWE-89: Improper Neutralization…`.
fn cwe_of(tags: Option<&Value>) -> FindingCwe {
    tags.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .find_map(|tag| {
            let lower = tag.to_ascii_lowercase();
            let at = lower.find("cwe-").or_else(|| lower.find("cwe/"))?;
            let digits: String = lower[at + 4..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            digits.parse::<u32>().ok().filter(|n| *n > 0)
        })
        .map(FindingCwe::number)
        .unwrap_or_default()
}

/// `uri` as a repository path under `root` (canonical), when it is one: a relative
/// URI (percent-decoded, `./` and `\` normalised) that stays inside, or a
/// `file://` URI under `root`. `None` for anything outside.
fn repository_path(root: &Path, uri: &str) -> Option<String> {
    let decoded = percent_decode(uri)?;
    let relative = match decoded.strip_prefix("file://") {
        Some(absolute) => Path::new(absolute)
            .strip_prefix(root)
            .ok()?
            .to_string_lossy()
            .into_owned(),
        None if decoded.contains("://") || Path::new(&decoded).is_absolute() => return None,
        None => decoded,
    };
    let relative = relative.replace('\\', "/");
    let mut parts: Vec<&str> = Vec::new();
    for part in relative.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// `%XX` escapes decoded; `None` when they do not make UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = text.get(i + 1..i + 3)
            && let Ok(b) = u8::from_str_radix(hex, 16)
        {
            out.push(b);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_str(root: &Path, text: &str) -> Result<SarifLeads, LeadsError> {
        SarifLeads::of_text(root, Path::new("in.sarif"), text)
    }

    #[test]
    fn uris_inside_the_repository_become_its_paths() {
        let root = Path::new("/repo");
        assert_eq!(
            repository_path(root, "src/a%20b.py").as_deref(),
            Some("src/a b.py")
        );
        assert_eq!(
            repository_path(root, "./src/../lib/x.js").as_deref(),
            Some("lib/x.js")
        );
        assert_eq!(
            repository_path(root, "file:///repo/src/x.c").as_deref(),
            Some("src/x.c")
        );
        assert_eq!(repository_path(root, "file:///elsewhere/x.c"), None);
        assert_eq!(repository_path(root, "../x.c"), None);
        assert_eq!(repository_path(root, "/etc/passwd"), None);
        assert_eq!(repository_path(root, "https://example.com/x.c"), None);
    }

    #[test]
    fn cwe_tags_of_codeql_and_semgrep_are_read() {
        let codeql = serde_json::json!(["security", "external/cwe/cwe-089"]);
        assert_eq!(
            cwe_of(Some(&codeql)).id.map(|c| c.to_string()).as_deref(),
            Some("CWE-89")
        );
        let semgrep = serde_json::json!(["CWE-78: Improper Neutralization", "OWASP-A03"]);
        assert_eq!(
            cwe_of(Some(&semgrep)).id.map(|c| c.to_string()).as_deref(),
            Some("CWE-78")
        );
        assert_eq!(cwe_of(Some(&serde_json::json!(["security"]))).id, None);
    }

    #[test]
    fn a_result_takes_its_rules_title_severity_and_cwe() {
        let log = r#"{"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "CodeQL", "rules": [
            {"id": "py/sql-injection", "shortDescription": {"text": "SQL query built from user-controlled sources"},
             "properties": {"security-severity": "8.8", "tags": ["external/cwe/cwe-089"]}}]}},
            "results": [{"ruleId": "py/sql-injection", "ruleIndex": 0, "message": {"text": "This query depends on a user-provided value."},
              "locations": [{"physicalLocation": {"artifactLocation": {"uri": "app/db.py", "uriBaseId": "%SRCROOT%"},
                "region": {"startLine": 12, "endLine": 13}}}]},
              {"ruleId": "py/sql-injection", "message": {"text": "elsewhere"},
              "locations": [{"physicalLocation": {"artifactLocation": {"uri": "file:///other/x.py"}, "region": {"startLine": 1}}}]}]}]}"#;
        let leads = read_str(Path::new("/repo"), log).unwrap();
        let lead = &leads.by_path["app/db.py"][0];
        assert_eq!(lead.tool, "CodeQL");
        assert_eq!((lead.line, lead.end_line), (12, Some(13)));
        assert_eq!(lead.severity, Severity::High);
        assert_eq!(lead.title, "SQL query built from user-controlled sources");
        assert_eq!(
            lead.cwe.id.map(|c| c.to_string()).as_deref(),
            Some("CWE-89")
        );
        assert_eq!(leads.outside.len(), 1);
        assert!(leads.outside[0].why.contains("outside the repository"));
    }

    #[test]
    fn a_malformed_result_names_the_json_path() {
        let log = r#"{"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "t"}}, "results": [
            {"ruleId": "r", "message": {"text": "m"}, "locations": [{"physicalLocation": {"artifactLocation": {"uri": "a.py"}, "region": {"startLine": 0}}}]}]}]}"#;
        let error = read_str(Path::new("/repo"), log).unwrap_err().to_string();
        assert_eq!(
            error,
            "--leads in.sarif: $.runs[0].results[0].locations[0].physicalLocation.region.startLine: expected a line number from 1, found 0"
        );
        let error = read_str(Path::new("/repo"), r#"{"runs": {}}"#)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("$.runs: expected the array of runs"),
            "{error}"
        );
        let error = read_str(Path::new("/repo"), r#"{"version": "2.0.0", "runs": []}"#)
            .unwrap_err()
            .to_string();
        assert!(error.contains("$.version"), "{error}");
        let error = read_str(
            Path::new("/repo"),
            r#"{"runs": [{"tool": {"driver": {"name": "t"}}, "results": [{"ruleId": "r", "message": {"text": "m"}}]}]}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(
            error.contains("$.runs[0].results[0].locations[0].physicalLocation"),
            "{error}"
        );
    }
}
