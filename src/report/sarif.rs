//! SARIF 2.1.0, as GitHub code scanning reads it: a pure function of the
//! [`Report`] (and an optional category).
//!
//! Takes the report; gives one run whose `tool.driver.rules` are the rules
//! that fired, one result per **verified** finding, and one invocation that
//! says whether the run was complete and, when not, why (failed groups,
//! interrupts, budgets), and each doubtful review (a group that made
//! claims and none verified, with its claims), as
//! `toolExecutionNotifications`.
//!
//! The scanned commit is `versionControlProvenance` when `origin`'s URL is
//! known (the schema requires a `repositoryUri`), and the whole checkout
//! state (commit, branch, uncommitted changes, or no git repository) is
//! always in `run.properties.checkout`.
//!
//! Unverified findings are not results. Code scanning turns every result
//! into a persistent alert, and it ranks a security rule by the rule's
//! `security-severity`, not the result's level: an unverified SQL-injection
//! finding would open a "high" alert and fail the pull request's check even
//! at `level: note`. The gate counts verified findings only, and an
//! unverified finding cites code that is not where it says, so its alert
//! would point at nothing. They are counted in a notification instead and
//! listed in the Markdown and JSON reports.
//!
//! Findings that do not gate (suppressed by a `fanscan:ignore` comment,
//! baselined, refuted by the skeptic) are left out of the results by
//! default ([`Suppressed::Omit`]): code scanning's supported SARIF subset
//! has no `result.suppressions`, and an uploaded result carrying one still
//! opens an alert (github/codeql-action#1230), while a result left out of
//! a later upload of the same tool and category closes its alert as fixed.
//! The run says how many it left out and why, in a notification and in
//! its `omitted` property. [`Suppressed::Keep`] writes them as results,
//! each with a `suppressions` entry (`inSource` for a `fanscan:ignore`
//! comment, `external` for the baseline and the skeptic) and its
//! justification, for consumers that honour suppressions.
//!
//! A log keeps code scanning's limits ([`MAX_RUNS`] runs a file,
//! [`MAX_RESULTS`] results a run): beyond them the upload is rejected, so
//! the results over the limit are cut, those that do not gate first, then
//! the lowest severity, and the run says what was cut (a warning
//! notification and its `cut` property); [`cut_note`] gives the report's
//! note of it.
//!
//! The SARIF types come from `serde-sarif` (generated from the official
//! schema, so every field code scanning reads is there: `partialFingerprints`,
//! property bags, `automationDetails`, `invocations`).
//!
//! The helpers [`rule_id`] and [`is_security`] are shared by the other CI
//! formats (`github`, `codeclimate`).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};
use serde_sarif::sarif as s;

use super::Report;
use crate::agents::AgentStatus;
use crate::model::cwe::CweId;
use crate::model::findings::{Finding, Origin, Severity};
use crate::stages::gate::Baselined;
use crate::stages::reduce::Merged;
use crate::util::count;
use crate::util::git::Checkout;

/// The schema the log names in `$schema` (the OASIS errata 01 schema).
pub(crate) const SCHEMA_URI: &str =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";

/// The `partialFingerprints` key under which fanscan's own fingerprint goes.
pub(crate) const FINGERPRINT_KEY: &str = "fanscan/v1";

/// Code scanning rejects a SARIF file with more runs than this.
pub(crate) const MAX_RUNS: usize = 20;

/// Code scanning rejects a run with more results than this.
pub(crate) const MAX_RESULTS: usize = 25_000;

/// What the SARIF does with the findings that do not gate (suppressed
/// inline, baselined, refuted by the skeptic).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Suppressed {
    /// Leave them out, counted in a notification: code scanning would open
    /// an alert for each, whatever its `suppressions` say.
    #[default]
    Omit,
    /// Write them as results with `suppressions` (for viewers that honour
    /// them; code scanning opens alerts for them).
    Keep,
}

/// The base every artifact URI is relative to: the checkout's root.
const SRCROOT: &str = "%SRCROOT%";

/// Rule families (the part of a rule id before `/`) that are about
/// security: the built-in rule set's injection, crypto, TLS,
/// deserialisation, XSS, permission, credential and CI-workflow rules, and
/// the tool layer's secrets.
const SECURITY_FAMILIES: [&str; 10] = [
    "crypto", "deser", "exec", "gha", "perms", "secret", "sql", "tls", "url", "web",
];

/// Built-in rules outside those families that are about security.
const SECURITY_RULES: [&str; 3] = ["java/runtime-exec", "python/flask-debug", "python/mktemp"];

/// Words that mark a model's free-form rule id as a security one.
const SECURITY_WORDS: [&str; 16] = [
    "secur",
    "vuln",
    "inject",
    "xss",
    "ssrf",
    "csrf",
    "secret",
    "credential",
    "password",
    "crypto",
    "tls",
    "deserial",
    "traversal",
    "authent",
    "authori",
    "cwe-",
];

/// Renders `report` as a SARIF 2.1.0 log. `category` becomes the run's
/// `automationDetails.id` (with a trailing `/`, as code scanning expects
/// for a category without a run id), so several scans of one repository
/// (nightly, pull request, per shard) keep separate alerts; without it
/// the uploader's own category applies. `suppressed` says whether the
/// findings that do not gate are results.
pub(crate) fn render(
    report: &Report,
    category: Option<&str>,
    suppressed: Suppressed,
) -> Result<String, serde_json::Error> {
    let mut text = serde_json::to_string_pretty(&log(report, category, suppressed))?;
    text.push('\n');
    Ok(text)
}

/// A finding as a SARIF result: open (it gates), or why it does not.
#[derive(Clone, Copy)]
enum Entry<'a> {
    Open(&'a Merged),
    Suppressed(&'a crate::stages::gate::Suppressed),
    Baselined(&'a Baselined),
    Refuted(&'a Merged),
    Unstable(&'a Merged),
}

impl<'a> Entry<'a> {
    fn merged(self) -> &'a Merged {
        match self {
            Self::Open(m) | Self::Refuted(m) | Self::Unstable(m) => m,
            Self::Suppressed(x) => &x.finding,
            Self::Baselined(x) => &x.finding,
        }
    }

    fn result(self, index: &BTreeMap<&str, i64>) -> s::Result {
        match self {
            Self::Open(m) => indexed_result(m, index),
            Self::Suppressed(x) => suppressed_result(x, index),
            Self::Baselined(x) => baselined_result(x, index),
            Self::Refuted(m) => refuted_result(m, index),
            Self::Unstable(m) => unstable_result(m, index),
        }
    }
}

/// The findings that do not gate, left out of the results, by why.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Omitted {
    suppressed: usize,
    baselined: usize,
    refuted: usize,
    unstable: usize,
}

impl Omitted {
    fn of(report: &Report, suppressed: Suppressed) -> Self {
        match suppressed {
            Suppressed::Keep => Self::default(),
            Suppressed::Omit => Self {
                suppressed: report.suppressed.len(),
                baselined: report.baselined.len(),
                refuted: report.refuted.len(),
                unstable: report.unstable.len(),
            },
        }
    }

    fn total(self) -> usize {
        self.suppressed + self.baselined + self.refuted + self.unstable
    }
}

/// The results the run would carry, in the report's order: the open
/// findings, then (kept) those that do not gate.
fn entries(report: &Report, suppressed: Suppressed) -> Vec<Entry<'_>> {
    let open = report.findings.iter().map(Entry::Open);
    match suppressed {
        Suppressed::Omit => open.collect(),
        Suppressed::Keep => open
            .chain(report.suppressed.iter().map(Entry::Suppressed))
            .chain(report.baselined.iter().map(Entry::Baselined))
            .chain(report.refuted.iter().map(Entry::Refuted))
            .chain(report.unstable.iter().map(Entry::Unstable))
            .collect(),
    }
}

/// The results cut to keep [`MAX_RESULTS`], by severity.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Cut {
    /// Results over the limit, by severity (lowest first).
    results: BTreeMap<Severity, usize>,
    /// Of those, results that do not gate.
    not_gating: usize,
}

impl Cut {
    fn results_total(&self) -> usize {
        self.results.values().sum()
    }

    fn is_empty(&self) -> bool {
        self.results_total() == 0
    }
}

/// Keeps at most `max` of `entries`, in their order: the ones cut are
/// those that do not gate first, then the lowest severity, then the last
/// in the report's order (its least ranked), so the cut is the same on
/// every run.
fn keep_within<'a>(entries: Vec<Entry<'a>>, max: usize) -> (Vec<Entry<'a>>, Cut) {
    let mut cut = Cut::default();
    if entries.len() <= max {
        return (entries, cut);
    }
    let mut order: Vec<usize> = (0..entries.len()).collect();
    order.sort_by_key(|&i| {
        let e = entries[i];
        (
            matches!(e, Entry::Open(_)),
            e.merged().finding.severity,
            std::cmp::Reverse(i),
        )
    });
    let dropped: BTreeSet<usize> = order[..entries.len() - max].iter().copied().collect();
    let mut kept = Vec::with_capacity(max);
    for (i, e) in entries.into_iter().enumerate() {
        if dropped.contains(&i) {
            *cut.results.entry(e.merged().finding.severity).or_default() += 1;
            if !matches!(e, Entry::Open(_)) {
                cut.not_gating += 1;
            }
        } else {
            kept.push(e);
        }
    }
    (kept, cut)
}

/// Keeps at most [`MAX_RUNS`] runs, the first ones; how many were left out.
fn keep_runs(mut runs: Vec<s::Run>) -> (Vec<s::Run>, usize) {
    let over = runs.len().saturating_sub(MAX_RUNS);
    runs.truncate(MAX_RUNS);
    (runs, over)
}

/// The report's note when its SARIF cuts results to keep code scanning's
/// limits (none when it fits).
pub(crate) fn cut_note(report: &Report, suppressed: Suppressed) -> Option<String> {
    let (_, cut) = keep_within(entries(report, suppressed), MAX_RESULTS);
    (!cut.is_empty()).then(|| cut_text(&cut))
}

/// What a cut left out, in words.
fn cut_text(cut: &Cut) -> String {
    let by: Vec<String> = cut
        .results
        .iter()
        .map(|(severity, n)| format!("{n} {}", severity.as_str()))
        .collect();
    format!(
        "The SARIF log holds at most {MAX_RESULTS} results a run (code scanning rejects more): \
         {} left out, lowest severity first ({}{}); the Markdown and JSON reports list every finding.",
        count(cut.results_total(), "result"),
        by.join(", "),
        if cut.not_gating > 0 {
            format!("; {} of them not gating", cut.not_gating)
        } else {
            String::new()
        }
    )
}

/// The SARIF log of `report`.
fn log(report: &Report, category: Option<&str>, suppressed: Suppressed) -> s::Sarif {
    let (kept, cut) = keep_within(entries(report, suppressed), MAX_RESULTS);
    let omitted = Omitted::of(report, suppressed);
    let every: Vec<Merged> = kept.iter().map(|e| e.merged().clone()).collect();
    let rules = rules(&every);
    let index: BTreeMap<&str, i64> = rules
        .iter()
        .enumerate()
        .map(|(i, r)| (r.id.as_str(), i64::try_from(i).unwrap_or(-1)))
        .collect();
    let results: Vec<s::Result> = kept.iter().map(|e| e.result(&index)).collect();

    let mut driver = s::ToolComponent::builder()
        .name(report.tool.name.clone())
        .build();
    driver.version = Some(report.tool.version.clone());
    driver.semantic_version = Some(report.tool.version.clone());
    driver.information_uri = information_uri();
    driver.rules = Some(rules);

    let mut run = s::Run::builder()
        .tool(s::Tool::builder().driver(driver).build())
        .build();
    run.results = Some(results);
    run.invocations = Some(vec![invocation(report, omitted, &cut)]);
    run.automation_details = automation_details(category);
    run.version_control_provenance = version_control(report);
    run.properties = Some(run_properties(report, omitted, &cut));

    // One run a report: within MAX_RUNS by construction, kept by the same
    // guard a log of several runs would need.
    let (runs, _) = keep_runs(vec![run]);
    s::Sarif::builder()
        .version(json!("2.1.0"))
        .schema(SCHEMA_URI)
        .runs(runs)
        .build()
}

/// The result of a finding, pointing at its rule's place in the driver's
/// rules.
fn indexed_result(m: &Merged, index: &BTreeMap<&str, i64>) -> s::Result {
    let id = rule_id(&m.finding);
    let position = index.get(id.as_str()).copied();
    result(m, id, position)
}

/// A finding suppressed by a `fanscan:ignore` comment: in source, with the
/// comment's reason.
fn suppressed_result(
    x: &crate::stages::gate::Suppressed,
    index: &BTreeMap<&str, i64>,
) -> s::Result {
    let mut r = indexed_result(&x.finding, index);
    let why = x
        .suppression
        .reason
        .clone()
        .unwrap_or_else(|| "no reason given".into());
    let mut suppression = s::Suppression::builder().kind(json!("inSource")).build();
    suppression.status = Some(json!("accepted"));
    suppression.justification = Some(if x.suppression.by_change {
        format!("{why} (suppressed by this change)")
    } else {
        why
    });
    suppression.properties = Some(bag(
        None,
        [
            ("line", json!(x.suppression.line)),
            ("rules", json!(x.suppression.rules)),
            ("byChange", json!(x.suppression.by_change)),
        ],
    ));
    r.suppressions = Some(vec![suppression]);
    r
}

/// A finding of the baseline: suppressed outside the code.
fn baselined_result(x: &Baselined, index: &BTreeMap<&str, i64>) -> s::Result {
    let mut r = indexed_result(&x.finding, index);
    let mut suppression = s::Suppression::builder().kind(json!("external")).build();
    suppression.status = Some(json!("accepted"));
    suppression.justification = Some(x.reason.clone().unwrap_or_else(|| "in the baseline".into()));
    r.suppressions = Some(vec![suppression]);
    r
}

/// Refuted by the skeptic: out of the gate, kept as a result suppressed
/// outside the code, with the skeptic's reason.
fn refuted_result(m: &Merged, index: &BTreeMap<&str, i64>) -> s::Result {
    let mut r = indexed_result(m, index);
    let mut suppression = s::Suppression::builder().kind(json!("external")).build();
    suppression.status = Some(json!("accepted"));
    suppression.justification = Some(match &m.challenge {
        Some(c) => format!("refuted by the skeptic: {}", c.describe()),
        None => "refuted by the skeptic".into(),
    });
    r.suppressions = Some(vec![suppression]);
    r
}

/// Seen in fewer samples than the quorum: out of the gate, kept as a
/// result suppressed outside the code, with its count.
fn unstable_result(m: &Merged, index: &BTreeMap<&str, i64>) -> s::Result {
    let mut r = indexed_result(m, index);
    let mut suppression = s::Suppression::builder().kind(json!("external")).build();
    suppression.status = Some(json!("accepted"));
    suppression.justification = Some(match m.finding.seen {
        Some(seen) => format!(
            "unstable: seen in {} of {} samples, fewer than the quorum",
            seen.k, seen.n
        ),
        None => "unstable: seen in fewer samples than the quorum".into(),
    });
    r.suppressions = Some(vec![suppression]);
    r
}

/// The run's category (`--sarif-category`), which code scanning keys runs
/// on, ending in `/`.
fn automation_details(category: Option<&str>) -> Option<s::RunAutomationDetails> {
    category
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(|c| s::RunAutomationDetails {
            id: Some(if c.ends_with('/') {
                c.to_string()
            } else {
                format!("{c}/")
            }),
            ..Default::default()
        })
}

/// The commit the run scanned, as `versionControlProvenance`: only for
/// a git checkout whose `origin` URL is known, because the schema
/// requires `repositoryUri` (an absolute URI) and a log must not carry an
/// invented one. Every other state (no remote, a relative remote path,
/// not a git repository, unknown) is in `run.properties.checkout` alone,
/// where it always is.
fn version_control(report: &Report) -> Option<Vec<s::VersionControlDetails>> {
    let Some(Checkout::Git(g)) = &report.manifest.checkout else {
        return None;
    };
    let uri = g
        .remote_url
        .as_deref()
        .and_then(crate::util::git::remote_uri)?;
    let mut details = s::VersionControlDetails::builder()
        .repository_uri(uri)
        .build();
    details.revision_id = g.commit.clone();
    details.branch = g.branch.clone();
    details.revision_tag = g.tags.first().cloned();
    if g.prefix.is_empty() {
        // The repository's root is the checkout root artifact URIs are
        // relative to.
        let mut root = s::ArtifactLocation::builder().build();
        root.uri_base_id = Some(SRCROOT.into());
        details.mapped_to = Some(root);
    }
    details.properties = Some(bag(
        None,
        [
            ("uncommittedChanges", json!(g.dirty())),
            ("modifiedFiles", json!(g.modified)),
            ("untrackedFiles", json!(g.untracked)),
            ("detached", json!(g.detached)),
            ("rootInRepository", json!(g.prefix)),
        ],
    ));
    Some(vec![details])
}

/// The run's provider, model, engine, gate, diff and checkout; the
/// results left out (`omitted`) and cut (`cut`), when any.
fn run_properties(report: &Report, omitted: Omitted, cut: &Cut) -> s::PropertyBag {
    let mut extra = Vec::new();
    if let Some(checkout) = &report.manifest.checkout {
        extra.push((
            "checkout",
            serde_json::to_value(checkout).unwrap_or(Value::Null),
        ));
    }
    // Every lead's outcome: the tally per rule, the dismissed ones with
    // their reasons, the results that named no file of the scan (the
    // confirmed and unanswered ones are results above).
    if let Some(leads) = &report.leads {
        extra.push(("leads", serde_json::to_value(leads).unwrap_or(Value::Null)));
    }
    if omitted.total() > 0 {
        extra.push((
            "omitted",
            json!({"suppressed": omitted.suppressed, "baselined": omitted.baselined,
                   "refuted": omitted.refuted, "total": omitted.total()}),
        ));
        if omitted.unstable > 0
            && let Some((_, Value::Object(map))) = extra.last_mut()
        {
            map.insert("unstable".into(), json!(omitted.unstable));
        }
    }
    if !cut.is_empty() {
        let by: BTreeMap<&str, usize> = cut.results.iter().map(|(s, n)| (s.as_str(), *n)).collect();
        extra.push((
            "cut",
            json!({"maxResults": MAX_RESULTS, "results": cut.results_total(),
                   "bySeverity": by, "notGating": cut.not_gating}),
        ));
    }
    bag(
        None,
        [
            ("provider", json!(report.provider)),
            ("model", json!(report.model)),
            (
                "engine",
                serde_json::to_value(report.engine).unwrap_or(Value::Null),
            ),
            (
                "gate",
                serde_json::to_value(&report.gate).unwrap_or(Value::Null),
            ),
            (
                "diff",
                serde_json::to_value(&report.diff).unwrap_or(Value::Null),
            ),
        ]
        .into_iter()
        .chain(extra),
    )
}

/// Where the tool is documented: the package's repository or homepage,
/// when Cargo.toml names one (a log must not carry an invented URL).
fn information_uri() -> Option<String> {
    [env!("CARGO_PKG_REPOSITORY"), env!("CARGO_PKG_HOMEPAGE")]
        .into_iter()
        .find(|u| !u.is_empty())
        .map(str::to_string)
}

/// The rule id of a finding: its own, or one derived from its title
/// (`fanscan/<slug>`) so that the same kind of finding keeps the same id
/// from run to run (code scanning matches alerts by rule id).
pub(crate) fn rule_id(f: &Finding) -> String {
    match f.rule.as_deref().map(str::trim) {
        Some(rule) if !rule.is_empty() => rule.to_string(),
        _ => format!("fanscan/{}", slug(&f.title)),
    }
}

/// Lowercase ASCII letters and digits, runs of anything else as one `-`,
/// at most 64 bytes; `finding` when nothing is left.
fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            if out.len() >= 64 {
                break;
            }
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    let trimmed = out.trim_end_matches('-');
    if trimmed.is_empty() {
        "finding".to_string()
    } else {
        trimmed.to_string()
    }
}

/// CWE classes of code quality rather than security (the built-in
/// rules' panics, empty and generic catches, comments, string compares):
/// a finding that names one of them is not a security finding by its CWE.
/// Every other CWE is a weakness an attacker may use.
const QUALITY_CWES: [u32; 9] = [248, 390, 396, 546, 570, 597, 617, 704, 1069];

/// Whether a CWE id names a security weakness (see [`QUALITY_CWES`]).
pub(crate) fn is_security_cwe(id: CweId) -> bool {
    !QUALITY_CWES.contains(&id.number())
}

/// Whether a finding is about security: it names a security CWE, or is a
/// security rule, a secret the tool layer redacted, or a finding of the
/// `security` agent.
pub(crate) fn is_security(m: &Merged) -> bool {
    if m.finding.origin == Origin::ToolLayer
        || m.agents.iter().any(|a| a == "security")
        || m.finding.cwe.id.is_some_and(is_security_cwe)
    {
        return true;
    }
    let id = rule_id(&m.finding).to_ascii_lowercase();
    let family = id.split('/').next().unwrap_or_default();
    SECURITY_FAMILIES.contains(&family)
        || SECURITY_RULES.contains(&id.as_str())
        || SECURITY_WORDS.iter().any(|w| id.contains(w))
}

/// The SARIF level of a severity: critical/high are errors, medium a
/// warning, low/info notes.
pub(crate) fn level(severity: Severity) -> s::ResultLevel {
    match severity {
        Severity::Critical | Severity::High => s::ResultLevel::Error,
        Severity::Medium => s::ResultLevel::Warning,
        Severity::Low | Severity::Info => s::ResultLevel::Note,
    }
}

/// The `security-severity` score of a severity, inside the band code
/// scanning maps back to the same word (over 9.0 critical, 7.0-8.9 high,
/// 4.0-6.9 medium, 0.1-3.9 low).
///
/// It is a string holding a number: code scanning's parser rejects a JSON
/// number there ("expected string"), and a word ("is not a number").
pub(crate) fn security_severity(severity: Severity) -> &'static str {
    match severity {
        Severity::Critical => "9.5",
        Severity::High => "8.0",
        Severity::Medium => "5.5",
        Severity::Low => "3.0",
        Severity::Info => "1.0",
    }
}

/// One descriptor per rule that fired, sorted by id. Descriptions come
/// from the first finding of the rule in (path, line) order: for the rule
/// engine they are the rule's own title and message.
fn rules(findings: &[Merged]) -> Vec<s::ReportingDescriptor> {
    let mut by_rule: BTreeMap<String, Vec<&Merged>> = BTreeMap::new();
    for m in findings {
        by_rule.entry(rule_id(&m.finding)).or_default().push(m);
    }
    by_rule
        .into_iter()
        .filter_map(|(id, mut of)| {
            of.sort_by(|a, b| {
                (a.finding.path.as_str(), a.finding.line)
                    .cmp(&(b.finding.path.as_str(), b.finding.line))
            });
            let severity = of
                .iter()
                .map(|m| m.finding.severity)
                .max()
                .unwrap_or(Severity::Info);
            let security = of.iter().any(|m| is_security(m));
            let first = &of.first()?.finding;
            let detail = if first.detail.trim().is_empty() {
                first.title.clone()
            } else {
                first.detail.clone()
            };
            let family = id.split('/').next().unwrap_or_default().to_string();
            let mut tags = vec![family];
            if security {
                tags.insert(0, "security".to_string());
            }
            tags.dedup();
            // Code scanning reads a CWE from `external/cwe/cwe-N` tags.
            let cwes: BTreeSet<CweId> = of.iter().filter_map(|m| m.finding.cwe.id).collect();
            tags.extend(
                cwes.iter()
                    .map(|id| format!("external/cwe/cwe-{}", id.number())),
            );
            let extra: Vec<(&str, Value)> = if security {
                vec![("security-severity", json!(security_severity(severity)))]
            } else {
                Vec::new()
            };
            let mut rule = s::ReportingDescriptor::builder().id(id.clone()).build();
            rule.short_description = Some(text(&first.title));
            rule.full_description = Some(text(&detail));
            rule.help = Some(text(&format!(
                "{detail}\n\nfanscan reports a finding only after checking that the cited \
                 code is at the cited lines."
            )));
            rule.default_configuration = Some(s::ReportingConfiguration {
                level: Some(json!(level(severity))),
                ..Default::default()
            });
            rule.properties = Some(bag(Some(tags), extra));
            Some(rule)
        })
        .collect()
}

fn result(m: &Merged, id: String, rule_index: Option<i64>) -> s::Result {
    let f = &m.finding;
    let message = if f.detail.trim().is_empty() {
        f.title.clone()
    } else {
        format!("{}: {}", f.title, f.detail)
    };
    let region = s::Region {
        start_line: Some(i64::from(f.line.max(1))),
        end_line: f.end_line.filter(|end| *end > f.line).map(i64::from),
        snippet: f.evidence.as_ref().map(|e| s::ArtifactContent {
            text: Some(e.clone()),
            ..Default::default()
        }),
        ..Default::default()
    };
    let location = s::Location {
        physical_location: Some(s::PhysicalLocation {
            artifact_location: Some(s::ArtifactLocation {
                uri: Some(uri(&f.path)),
                uri_base_id: Some(SRCROOT.to_string()),
                ..Default::default()
            }),
            region: Some(region),
            ..Default::default()
        }),
        ..Default::default()
    };
    // Code scanning matches alerts across commits by
    // `primaryLocationLineHash` only; fanscan's fingerprint (path, rule,
    // evidence, occurrence; never the line number) is the stabler hash.
    let fingerprints = BTreeMap::from([
        (FINGERPRINT_KEY.to_string(), m.fingerprint.clone()),
        (
            "primaryLocationLineHash".to_string(),
            format!("{}:1", m.fingerprint),
        ),
    ]);
    let mut properties = vec![
        ("verified", json!(m.verified)),
        ("severity", json!(f.severity.as_str())),
        ("agents", json!(m.agents)),
        ("groups", json!(m.groups)),
    ];
    if f.origin == Origin::ToolLayer {
        properties.push(("origin", json!("tool_layer")));
    }
    if let Some(id) = f.cwe.id {
        properties.push(("cwe", json!(id)));
        properties.push(("cweName", json!(f.cwe.name)));
    }
    if let Some(note) = &f.cwe.note {
        properties.push(("cweNote", json!(note)));
    }
    if let Some(note) = &m.note {
        properties.push(("note", json!(note)));
    }
    if m.located {
        properties.push(("located", json!(true)));
    }
    if let Some(seen) = f.seen {
        properties.push(("seen", json!({"samples": seen.k, "of": seen.n})));
    }
    if let Some(c) = &m.challenge {
        properties.push((
            "skeptic",
            json!({"verdict": c.stance.as_str(), "confidence": c.confidence,
                   "reason": c.reason, "flow": c.flow}),
        ));
    }

    let mut r = s::Result::builder().message(message_of(&message)).build();
    r.rule_id = Some(id);
    r.rule_index = rule_index.filter(|i| *i >= 0);
    r.level = Some(level(f.severity));
    r.locations = Some(vec![location]);
    r.partial_fingerprints = Some(fingerprints);
    r.properties = Some(bag(None, properties));
    r.code_flows = code_flows(m);
    r
}

/// The skeptic's trace of the value (from its source, through each step,
/// to the flagged line) as a code flow, when it gave one of two steps or
/// more: the taint rules' traces and the skeptic's confirmed flows.
fn code_flows(m: &Merged) -> Option<Vec<s::CodeFlow>> {
    let challenge = m.challenge.as_ref()?;
    let steps: Vec<s::ThreadFlowLocation> = challenge
        .flow
        .iter()
        .filter_map(|step| {
            let (path, line) = step.rsplit_once(':')?;
            let line: i64 = line.parse().ok().filter(|l| *l >= 1)?;
            Some(s::ThreadFlowLocation {
                location: Some(s::Location {
                    physical_location: Some(s::PhysicalLocation {
                        artifact_location: Some(s::ArtifactLocation {
                            uri: Some(uri(path)),
                            uri_base_id: Some(SRCROOT.to_string()),
                            ..Default::default()
                        }),
                        region: Some(s::Region {
                            start_line: Some(line),
                            ..Default::default()
                        }),
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            })
        })
        .collect();
    (steps.len() >= 2).then(|| {
        vec![
            s::CodeFlow::builder()
                .thread_flows(vec![s::ThreadFlow::builder().locations(steps).build()])
                .build(),
        ]
    })
}

/// The run's one invocation: successful only when every planned group ran
/// to the end, with a notification per reason, per failed group, for files
/// never shown to an agent, and for the unverified findings left out.
fn invocation(report: &Report, omitted: Omitted, cut: &Cut) -> s::Invocation {
    let mut notes = Vec::new();
    cut_notes(&mut notes, cut);
    incomplete_notes(&mut notes, report);
    failed_group_notes(&mut notes, report);
    doubtful_notes(&mut notes, report);
    contested_notes(&mut notes, report);
    unread_note(&mut notes, report);
    unverified_note(&mut notes, report);
    baseline_note(&mut notes, report);
    omitted_note(&mut notes, omitted);
    let mut invocation = s::Invocation::builder()
        .execution_successful(report.complete)
        .build();
    invocation.exit_code = Some(i64::from(report.exit_code()));
    invocation.start_time_utc = Some(report.started_at.clone()).filter(|t| !t.is_empty());
    invocation.tool_execution_notifications = Some(notes).filter(|n| !n.is_empty());
    invocation
}

/// An error per reason the run is incomplete.
fn incomplete_notes(notes: &mut Vec<s::Notification>, report: &Report) {
    for reason in &report.incomplete_reasons {
        notes.push(notification(
            "error",
            &format!("Incomplete run: {reason}"),
            [("kind", json!("incomplete"))],
        ));
    }
}

/// An error per failed group, with the files it left unaudited.
fn failed_group_notes(notes: &mut Vec<s::Notification>, report: &Report) {
    // Failed files by group, in the order the report lists them.
    let mut groups: Vec<(&str, &str, Vec<&str>)> = Vec::new();
    for f in &report.coverage.failed {
        match groups.iter_mut().find(|(g, _, _)| *g == f.group) {
            Some((_, _, files)) => files.push(&f.path),
            None => groups.push((&f.group, &f.reason, vec![&f.path])),
        }
    }
    for (group, reason, files) in groups {
        // A group the model refused is told apart: the remedy differs (a
        // fallback model, or leaving its files out), not a retry.
        let blocked = report
            .groups
            .iter()
            .any(|g| g.id == group && g.status == AgentStatus::Blocked);
        notes.push(notification(
            "error",
            &format!(
                "Group {group} was not reviewed ({reason}): {} not audited: {}",
                count(files.len(), "file"),
                listing(&files)
            ),
            [
                (
                    "kind",
                    json!(if blocked {
                        "blocked_group"
                    } else {
                        "failed_group"
                    }),
                ),
                ("group", json!(group)),
                ("files", json!(files)),
            ],
        ));
    }
}

/// A warning (an error under `--strict`) per doubtful review.
fn doubtful_notes(notes: &mut Vec<s::Notification>, report: &Report) {
    for d in &report.doubtful {
        let claims: Vec<Value> = d
            .claims
            .iter()
            .map(|c| json!({"path": c.path, "line": c.line, "text": c.text, "reason": c.reason}))
            .collect();
        notes.push(notification(
            if report.gate.strict { "error" } else { "warning" },
            &format!(
                "Doubtful review: group {} ({}) made {} and none was verified, so {} not reviewed cleanly: {}",
                d.group,
                d.agent,
                count(d.claims.len(), "claim"),
                if d.files.len() == 1 { "its file was" } else { "its files were" },
                listing(&d.files.iter().map(String::as_str).collect::<Vec<_>>())
            ),
            [
                ("kind", json!("doubtful")),
                ("group", json!(d.group)),
                ("agent", json!(d.agent)),
                ("files", json!(d.files)),
                ("claims", json!(claims)),
            ],
        ));
    }
}

/// A warning for each contested review: files that address AI agents, a
/// model that reported nothing else.
fn contested_notes(notes: &mut Vec<s::Notification>, report: &Report) {
    for c in &report.contested {
        notes.push(notification(
            "warning",
            &format!(
                "Contested review: the files of group {} ({}) address AI agents ({}) and its agent reported nothing else; it may have obeyed: {}",
                c.group,
                c.agent,
                c.injections.join(", "),
                listing(&c.files.iter().map(String::as_str).collect::<Vec<_>>())
            ),
            [
                ("kind", json!("contested")),
                ("group", json!(c.group)),
                ("agent", json!(c.agent)),
                ("files", json!(c.files)),
                ("injections", json!(c.injections)),
            ],
        ));
    }
}

/// A warning for the reviewed files no agent was shown.
fn unread_note(notes: &mut Vec<s::Notification>, report: &Report) {
    let unread = &report.coverage.unread;
    if !unread.is_empty() {
        notes.push(notification(
            "warning",
            &format!(
                "{} never shown to their agent: {}",
                count(unread.len(), "reviewed file"),
                listing(&unread.iter().map(String::as_str).collect::<Vec<_>>())
            ),
            [("kind", json!("unread")), ("files", json!(unread))],
        ));
    }
}

/// A note listing the findings that failed verification.
fn unverified_note(notes: &mut Vec<s::Notification>, report: &Report) {
    if !report.unverified.is_empty() {
        let list: Vec<Value> = report
            .unverified
            .iter()
            .map(|m| {
                json!({
                    "path": m.finding.path, "line": m.finding.line,
                    "rule": rule_id(&m.finding), "title": m.finding.title,
                    "reason": m.note.as_deref().unwrap_or("unverified"),
                })
            })
            .collect();
        notes.push(notification(
            "note",
            &format!(
                "{} failed verification (the cited code is not at the cited place) and {} \
                 not reported as results or gated on; the Markdown and JSON reports list them.",
                count(report.unverified.len(), "finding"),
                if report.unverified.len() == 1 {
                    "is"
                } else {
                    "are"
                }
            ),
            [("kind", json!("unverified")), ("findings", json!(list))],
        ));
    }
}

/// A warning when results were cut to keep code scanning's limits.
fn cut_notes(notes: &mut Vec<s::Notification>, cut: &Cut) {
    if cut.is_empty() {
        return;
    }
    let by: BTreeMap<&str, usize> = cut.results.iter().map(|(s, n)| (s.as_str(), *n)).collect();
    notes.push(notification(
        "warning",
        &cut_text(cut),
        [
            ("kind", json!("cut")),
            ("maxResults", json!(MAX_RESULTS)),
            ("results", json!(cut.results_total())),
            ("bySeverity", json!(by)),
        ],
    ));
}

/// A note counting the findings that do not gate, left out of the
/// results.
fn omitted_note(notes: &mut Vec<s::Notification>, omitted: Omitted) {
    if omitted.total() == 0 {
        return;
    }
    let mut why = Vec::new();
    for (n, what) in [
        (omitted.suppressed, "suppressed inline"),
        (omitted.baselined, "baselined"),
        (omitted.refuted, "refuted by the skeptic"),
    ] {
        if n > 0 {
            why.push(format!("{n} {what}"));
        }
    }
    notes.push(notification(
        "note",
        &format!(
            "{} that do not gate ({}) left out of the results: code scanning opens an alert for \
             every uploaded result, suppressed or not, and closes one whose result is no longer \
             uploaded. The Markdown and JSON reports list them; --sarif-suppressed keep writes \
             them as results with suppressions.",
            count(omitted.total(), "finding"),
            why.join(", ")
        ),
        [
            ("kind", json!("omitted")),
            ("suppressed", json!(omitted.suppressed)),
            ("baselined", json!(omitted.baselined)),
            ("refuted", json!(omitted.refuted)),
        ],
    ));
}

/// Notes for the suppressions and baseline entries past their date
/// (their findings are results again), the baseline entries that are
/// void, and those whose files were not reviewed.
fn baseline_note(notes: &mut Vec<s::Notification>, report: &Report) {
    if !report.expired.is_empty() {
        let items: Vec<String> = report
            .expired
            .iter()
            .map(|x| {
                let f = &x.finding.finding;
                format!("{}:{} ({})", f.path, f.line, x.describe())
            })
            .collect();
        let items: Vec<&str> = items.iter().map(String::as_str).collect();
        notes.push(notification(
            "warning",
            &format!(
                "Expired ({}): suppressions and baseline entries past their date, so their findings are results again: {}",
                items.len(),
                listing(&items)
            ),
            [("kind", json!("expired"))],
        ));
    }
    if !report.baseline_void.is_empty() {
        let paths: Vec<&str> = report
            .baseline_void
            .iter()
            .map(|e| e.path.as_str())
            .collect();
        notes.push(notification(
            "note",
            &format!(
                "Void baseline entries ({}): their files changed since they were written and they match no finding now (fixed, or the flagged code changed): {}",
                paths.len(),
                listing(&paths)
            ),
            [("kind", json!("baseline_void"))],
        ));
    }
    if !report.baseline_not_checked.is_empty() {
        let paths: Vec<&str> = report
            .baseline_not_checked
            .iter()
            .map(|e| e.path.as_str())
            .collect();
        notes.push(notification(
            "note",
            &format!(
                "{} of the baseline not checked: their files were not reviewed in this run: {}",
                count(paths.len(), "finding"),
                listing(&paths)
            ),
            [("kind", json!("baseline_not_checked"))],
        ));
    }
}

fn notification<'a>(
    level: &str,
    message: &str,
    properties: impl IntoIterator<Item = (&'a str, Value)>,
) -> s::Notification {
    let mut n = s::Notification::builder()
        .message(message_of(message))
        .build();
    n.level = Some(json!(level));
    n.properties = Some(bag(None, properties));
    n
}

/// Up to ten items, then how many more.
fn listing(items: &[&str]) -> String {
    let shown = items
        .iter()
        .take(10)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > 10 {
        format!("{shown} and {} more", items.len() - 10)
    } else {
        shown
    }
}

fn message_of(text: &str) -> s::Message {
    s::Message {
        text: Some(text.to_string()),
        ..Default::default()
    }
}

fn text(text: &str) -> s::MultiformatMessageString {
    s::MultiformatMessageString::builder()
        .text(text.to_string())
        .build()
}

fn bag<'a>(
    tags: Option<Vec<String>>,
    properties: impl IntoIterator<Item = (&'a str, Value)>,
) -> s::PropertyBag {
    s::PropertyBag {
        tags,
        additional_properties: properties
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    }
}

/// A repo-relative path as a relative URI reference: every byte but
/// unreserved characters and `/` percent-encoded, so spaces, `%`, `#`, `?`
/// and a `:` that would read as a scheme keep the path what it is.
fn uri(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.trim_start_matches("./").bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::report::{Coverage, FailedFile, Manifest, Stats, ToolInfo};

    /// A finding as the reducer gives it.
    pub(crate) fn merged(
        path: &str,
        line: u32,
        severity: Severity,
        rule: Option<&str>,
        title: &str,
    ) -> Merged {
        let finding = Finding {
            path: path.into(),
            line,
            end_line: None,
            severity,
            title: title.into(),
            detail: "why and how to fix".into(),
            evidence: Some(format!("code at line {line}")),
            rule: rule.map(str::to_string),
            cwe: crate::model::findings::FindingCwe::default(),
            origin: Origin::Agent,
            seen: None,
        };
        Merged {
            fingerprint: crate::stages::reduce::fingerprint(&finding, 0),
            finding,
            agents: vec!["auditor".into()],
            groups: vec!["g1".into()],
            verified: true,
            note: None,
            located: false,
            challenge: None,
        }
    }

    /// A complete report holding `findings`.
    pub(crate) fn report(findings: Vec<Merged>) -> Report {
        Report {
            schema_version: crate::report::SCHEMA_VERSION,
            tool: ToolInfo {
                name: "fanscan".into(),
                version: "0.1.0".into(),
            },
            provider: "offline".into(),
            engine: crate::llm::providers::EngineKind::RuleEngine,
            model: "rules".into(),
            root: "/tmp/repo".into(),
            started_at: "2026-01-01T00:00:00Z".into(),
            duration_ms: 0,
            manifest: Manifest {
                agents: BTreeMap::new(),
                rules_source: "builtin".into(),
                rules_hash: String::new(),
                plan_hash: String::new(),
                group_tokens: 0,
                jobs: 1,
                sources: crate::report::Sources::default(),
                checkout: None,
            },
            complete: true,
            incomplete_reasons: Vec::new(),
            summary: String::new(),
            plan: crate::stages::plan::Plan {
                planner: "pack".into(),
                group_tokens: 0,
                groups: Vec::new(),
                notes: Vec::new(),
            },
            groups: Vec::new(),
            findings,
            unverified: Vec::new(),
            refuted: Vec::new(),
            unparsed: vec![],
            doubtful: Vec::new(),
            contested: Vec::new(),
            coverage: Coverage::default(),
            stats: Stats::default(),
            notes: Vec::new(),
            gate: crate::stages::gate::Verdict::default(),
            suppressed: Vec::new(),
            baselined: Vec::new(),
            expired: Vec::new(),
            baseline_void: Vec::new(),
            baseline_not_checked: Vec::new(),
            baseline_not_found: Vec::new(),
            diff: None,
            run_id: None,
            since_last_run: None,
            shard: None,
            brief: None,
            leads: None,
            unstable: Vec::new(),
        }
    }

    fn sarif(report: &Report, category: Option<&str>) -> Value {
        serde_json::from_str(&render(report, category, Suppressed::Omit).unwrap()).unwrap()
    }

    #[test]
    fn a_traced_flow_is_a_code_flow_and_a_single_step_is_none() {
        let mut traced = merged(
            "web/fi.php",
            4,
            Severity::Critical,
            Some("include/php"),
            "FI",
        );
        traced.challenge = Some(crate::model::challenge::Challenge {
            stance: crate::model::challenge::Stance::Confirmed,
            confidence: Some(9),
            reason: "traced on the syntax tree".into(),
            flow: vec![
                "web/fi.php:2".into(),
                "web/fi.php:3".into(),
                "web/fi.php:4".into(),
            ],
            notes: Vec::new(),
        });
        let mut single = merged("web/b.php", 9, Severity::High, Some("xss/php-echo"), "XSS");
        single.challenge = traced.challenge.clone().map(|mut c| {
            c.flow.truncate(1);
            c
        });
        let v = sarif(&report(vec![traced, single]), None);
        let results = v["runs"][0]["results"].as_array().unwrap();
        let steps: Vec<(String, i64)> = results[0]["codeFlows"][0]["threadFlows"][0]["locations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| {
                let p = &l["location"]["physicalLocation"];
                (
                    p["artifactLocation"]["uri"].as_str().unwrap().to_string(),
                    p["region"]["startLine"].as_i64().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            steps,
            [
                ("web/fi.php".to_string(), 2),
                ("web/fi.php".to_string(), 3),
                ("web/fi.php".to_string(), 4)
            ]
        );
        assert!(results[1].get("codeFlows").is_none(), "{}", results[1]);
    }

    #[test]
    fn levels_follow_severity() {
        let r = report(
            Severity::DESCENDING
                .iter()
                .map(|s| merged("a.rs", 1, *s, Some(&format!("x/{}", s.as_str())), "t"))
                .collect(),
        );
        let v = sarif(&r, None);
        let levels: Vec<(&str, &str)> = v["runs"][0]["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["ruleId"].as_str().unwrap(), r["level"].as_str().unwrap()))
            .collect();
        assert_eq!(
            levels,
            vec![
                ("x/critical", "error"),
                ("x/high", "error"),
                ("x/medium", "warning"),
                ("x/low", "note"),
                ("x/info", "note"),
            ]
        );
    }

    #[test]
    fn security_rules_carry_a_security_severity_string_and_tag() {
        let r = report(vec![
            merged("a.py", 2, Severity::High, Some("sql/concat"), "SQL"),
            merged("a.py", 3, Severity::Critical, Some("tls/python"), "TLS"),
            merged(
                "a.py",
                4,
                Severity::Medium,
                Some("exec/python-eval"),
                "eval",
            ),
            merged(
                "a.py",
                5,
                Severity::Low,
                Some("crypto/weak-hash-python"),
                "md5",
            ),
            merged("a.rs", 6, Severity::Low, Some("rust/unwrap"), "unwrap"),
            merged(
                "a.rs",
                7,
                Severity::High,
                Some("sql-injection"),
                "model's id",
            ),
        ]);
        let v = sarif(&r, None);
        let rules: BTreeMap<&str, &Value> = v["runs"][0]["tool"]["driver"]["rules"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["id"].as_str().unwrap(), r))
            .collect();
        for (id, score) in [
            ("sql/concat", "8.0"),
            ("tls/python", "9.5"),
            ("exec/python-eval", "5.5"),
            ("crypto/weak-hash-python", "3.0"),
            ("sql-injection", "8.0"),
        ] {
            let p = &rules[id]["properties"];
            assert_eq!(p["security-severity"], score, "{id}");
            assert_eq!(p["tags"][0], "security", "{id}");
        }
        let unwrap = &rules["rust/unwrap"]["properties"];
        assert!(unwrap.get("security-severity").is_none());
        assert!(
            !unwrap["tags"]
                .as_array()
                .unwrap()
                .contains(&json!("security"))
        );
        assert_eq!(
            rules["rust/unwrap"]["defaultConfiguration"]["level"],
            "note"
        );
        // Every result points at its rule.
        for result in v["runs"][0]["results"].as_array().unwrap() {
            let i = result["ruleIndex"].as_u64().unwrap() as usize;
            assert_eq!(
                v["runs"][0]["tool"]["driver"]["rules"][i]["id"],
                result["ruleId"]
            );
        }
    }

    #[test]
    fn rules_carry_their_findings_cwe_tags_and_a_security_cwe_makes_a_security_rule() {
        let mut sql = merged("a.py", 2, Severity::High, Some("sql/concat"), "SQL");
        sql.finding.cwe = crate::model::findings::FindingCwe::number(89);
        let mut other = merged("b.py", 9, Severity::High, Some("sql/concat"), "SQL");
        other.finding.cwe = crate::model::findings::FindingCwe::number(564);
        // A model's own rule id with no security word: the CWE decides.
        let mut model = merged(
            "c.py",
            1,
            Severity::Medium,
            Some("logic"),
            "path from input",
        );
        model.finding.cwe = crate::model::findings::FindingCwe::number(22);
        let mut unwrap = merged("a.rs", 6, Severity::Low, Some("rust/unwrap"), "unwrap");
        unwrap.finding.cwe = crate::model::findings::FindingCwe::number(617);
        let v = sarif(&report(vec![sql, other, model, unwrap]), None);
        let rules: BTreeMap<&str, &Value> = v["runs"][0]["tool"]["driver"]["rules"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["id"].as_str().unwrap(), r))
            .collect();
        assert_eq!(
            rules["sql/concat"]["properties"]["tags"],
            json!([
                "security",
                "sql",
                "external/cwe/cwe-89",
                "external/cwe/cwe-564"
            ])
        );
        assert_eq!(
            rules["logic"]["properties"]["tags"],
            json!(["security", "logic", "external/cwe/cwe-22"])
        );
        assert_eq!(rules["logic"]["properties"]["security-severity"], "5.5");
        // A code-quality CWE is tagged but does not make the rule a
        // security one.
        assert_eq!(
            rules["rust/unwrap"]["properties"]["tags"],
            json!(["rust", "external/cwe/cwe-617"])
        );
        assert!(
            rules["rust/unwrap"]["properties"]
                .get("security-severity")
                .is_none()
        );
        let result = &v["runs"][0]["results"][0];
        assert_eq!(result["properties"]["cwe"], "CWE-89");
        assert!(
            result["properties"]["cweName"]
                .as_str()
                .unwrap()
                .contains("SQL Injection")
        );
    }

    #[test]
    fn secrets_and_the_security_agent_count_as_security() {
        let mut secret = merged("a.env", 1, Severity::High, Some("secret/aws"), "key");
        secret.finding.origin = Origin::ToolLayer;
        let mut by_agent = merged("a.rs", 1, Severity::Medium, Some("logic"), "t");
        assert!(!is_security(&by_agent));
        by_agent.agents.push("security".into());
        assert!(is_security(&secret) && is_security(&by_agent));
        assert!(!is_security(&merged(
            "a",
            1,
            Severity::Low,
            Some("rust/panic"),
            "t"
        )));
    }

    #[test]
    fn findings_without_a_rule_get_a_stable_derived_id() {
        let a = merged(
            "a.rs",
            1,
            Severity::Low,
            None,
            "Unchecked `index` -- may panic!",
        );
        let b = merged(
            "b.rs",
            9,
            Severity::Low,
            Some("  "),
            "Unchecked index: may panic",
        );
        assert_eq!(rule_id(&a.finding), "fanscan/unchecked-index-may-panic");
        assert_eq!(rule_id(&b.finding), "fanscan/unchecked-index-may-panic");
        assert_eq!(
            rule_id(&merged("c", 1, Severity::Low, None, "?!").finding),
            "fanscan/finding"
        );
        let long = "x".repeat(300);
        assert_eq!(
            rule_id(&merged("c", 1, Severity::Low, None, &long).finding).len(),
            "fanscan/".len() + 64
        );
    }

    #[test]
    fn results_carry_location_snippet_and_fingerprints() {
        let mut m = merged("src/my file#1.rs", 3, Severity::High, Some("r/x"), "t");
        m.finding.end_line = Some(5);
        m.note = Some("line corrected from 2 to 3".into());
        let fp = m.fingerprint.clone();
        let v = sarif(&report(vec![m]), Some("nightly"));
        let run = &v["runs"][0];
        let result = &run["results"][0];
        let loc = &result["locations"][0]["physicalLocation"];
        assert_eq!(loc["artifactLocation"]["uri"], "src/my%20file%231.rs");
        assert_eq!(loc["artifactLocation"]["uriBaseId"], "%SRCROOT%");
        assert_eq!(loc["region"]["startLine"], 3);
        assert_eq!(loc["region"]["endLine"], 5);
        assert_eq!(loc["region"]["snippet"]["text"], "code at line 3");
        assert_eq!(result["partialFingerprints"]["fanscan/v1"], fp.as_str());
        assert_eq!(
            result["partialFingerprints"]["primaryLocationLineHash"],
            format!("{fp}:1")
        );
        assert_eq!(result["properties"]["verified"], true);
        assert_eq!(result["properties"]["agents"], json!(["auditor"]));
        assert_eq!(result["properties"]["note"], "line corrected from 2 to 3");
        assert_eq!(run["automationDetails"]["id"], "nightly/");
        assert_eq!(run["invocations"][0]["executionSuccessful"], true);
        assert!(
            run["invocations"][0]
                .get("toolExecutionNotifications")
                .is_none()
        );
        assert!(
            sarif(&report(vec![]), None)["runs"][0]
                .get("automationDetails")
                .is_none()
        );
    }

    #[test]
    fn an_incomplete_run_says_why_and_unverified_findings_are_not_results() {
        let mut r = report(vec![merged("a.rs", 1, Severity::Low, Some("r"), "t")]);
        r.complete = false;
        r.incomplete_reasons = vec!["1 groups failed.".into()];
        r.coverage.failed = vec![
            FailedFile {
                path: "b/x.rs".into(),
                group: "g2".into(),
                reason: "HTTP 400".into(),
            },
            FailedFile {
                path: "b/y.rs".into(),
                group: "g2".into(),
                reason: "HTTP 400".into(),
            },
        ];
        let mut unverified = merged("a.rs", 40, Severity::Critical, Some("sql/concat"), "u");
        unverified.verified = false;
        unverified.note = Some("src/a.rs has 3 lines".into());
        r.unverified = vec![unverified];
        let v = sarif(&r, None);
        let run = &v["runs"][0];
        assert_eq!(run["results"].as_array().unwrap().len(), 1);
        let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
        assert_eq!(rules.len(), 1, "the unverified finding's rule did not fire");
        let inv = &run["invocations"][0];
        assert_eq!(inv["executionSuccessful"], false);
        assert_eq!(inv["exitCode"], 3);
        let notes = inv["toolExecutionNotifications"].as_array().unwrap();
        let kinds: Vec<&str> = notes
            .iter()
            .map(|n| n["properties"]["kind"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, vec!["incomplete", "failed_group", "unverified"]);
        assert_eq!(notes[0]["level"], "error");
        assert!(
            notes[1]["message"]["text"].as_str().unwrap().contains(
                "Group g2 was not reviewed (HTTP 400): 2 files not audited: b/x.rs, b/y.rs"
            )
        );
        assert_eq!(notes[2]["level"], "note");
        assert_eq!(notes[2]["properties"]["findings"][0]["line"], 40);
    }

    /// A report with one finding open, one suppressed inline, one
    /// baselined and one refuted.
    fn report_with_non_gating() -> Report {
        let mut r = report(vec![merged(
            "a.rs",
            1,
            Severity::High,
            Some("r/open"),
            "open",
        )]);
        r.suppressed = vec![crate::stages::gate::Suppressed {
            finding: merged("a.rs", 2, Severity::High, Some("r/ignored"), "ignored"),
            suppression: crate::model::suppress::Suppression {
                line: 1,
                rules: vec!["r/ignored".into()],
                reason: Some("fixed list".into()),
                by_change: false,
                notes: Vec::new(),
                until: None,
                bad_until: None,
            },
        }];
        r.baselined = vec![Baselined {
            finding: merged("a.rs", 3, Severity::Medium, Some("r/old"), "old"),
            reason: None,
        }];
        r.refuted = vec![merged(
            "a.rs",
            4,
            Severity::Critical,
            Some("r/refuted"),
            "no",
        )];
        r
    }

    #[test]
    fn findings_that_do_not_gate_are_left_out_by_default_and_counted() {
        let v = sarif(&report_with_non_gating(), None);
        let run = &v["runs"][0];
        let results = run["results"].as_array().unwrap();
        assert_eq!(results.len(), 1);
        assert_eq!(results[0]["ruleId"], "r/open");
        assert!(results[0].get("suppressions").is_none());
        let rules: Vec<&str> = run["tool"]["driver"]["rules"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap())
            .collect();
        assert_eq!(rules, ["r/open"], "no rule for a result left out");
        assert_eq!(
            run["properties"]["omitted"],
            json!({"suppressed": 1, "baselined": 1, "refuted": 1, "total": 3})
        );
        let notes = run["invocations"][0]["toolExecutionNotifications"]
            .as_array()
            .unwrap();
        let omitted = notes
            .iter()
            .find(|n| n["properties"]["kind"] == "omitted")
            .unwrap();
        let text = omitted["message"]["text"].as_str().unwrap();
        assert!(
            text.starts_with(
                "3 findings that do not gate (1 suppressed inline, 1 baselined, 1 refuted by the skeptic) left out"
            ),
            "{text}"
        );
        assert!(text.contains("--sarif-suppressed keep"), "{text}");
    }

    #[test]
    fn keep_writes_them_as_results_with_suppressions() {
        let text = render(&report_with_non_gating(), None, Suppressed::Keep).unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        let run = &v["runs"][0];
        let kinds: Vec<Value> = run["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["suppressions"][0]["kind"].clone())
            .collect();
        assert_eq!(
            kinds,
            [
                Value::Null,
                json!("inSource"),
                json!("external"),
                json!("external")
            ]
        );
        assert!(run["properties"].get("omitted").is_none());
        assert!(
            run["invocations"][0]
                .get("toolExecutionNotifications")
                .is_none()
        );
    }

    #[test]
    fn a_run_over_code_scannings_result_limit_cuts_the_lowest_severity_and_says_so() {
        let over = 7;
        let mut findings: Vec<Merged> = (0..MAX_RESULTS - 3)
            .map(|i| merged("big.rs", 10 + i as u32, Severity::Medium, Some("r/m"), "m"))
            .collect();
        findings.push(merged("a.rs", 1, Severity::Critical, Some("r/c"), "c"));
        findings.extend(
            (0..over).map(|i| merged("low.rs", 1 + i as u32, Severity::Low, Some("r/l"), "l")),
        );
        findings.push(merged("info.rs", 1, Severity::Info, Some("r/i"), "i"));
        findings.push(merged("info.rs", 2, Severity::Info, Some("r/i"), "i"));
        let r = report(findings);
        // 25,000 - 3 + 1 + 7 + 2 = 25,007: two info and five low go.
        let v = sarif(&r, None);
        let run = &v["runs"][0];
        let results = run["results"].as_array().unwrap();
        assert_eq!(results.len(), MAX_RESULTS);
        let count_of = |rule: &str| results.iter().filter(|r| r["ruleId"] == rule).count();
        assert_eq!(
            (
                count_of("r/c"),
                count_of("r/m"),
                count_of("r/l"),
                count_of("r/i")
            ),
            (1, MAX_RESULTS - 3, 2, 0)
        );
        // The last low findings in the report's order went first.
        let lows: Vec<i64> = results
            .iter()
            .filter(|r| r["ruleId"] == "r/l")
            .map(|r| {
                r["locations"][0]["physicalLocation"]["region"]["startLine"]
                    .as_i64()
                    .unwrap()
            })
            .collect();
        assert_eq!(lows, [1, 2]);
        assert_eq!(
            run["properties"]["cut"],
            json!({"maxResults": MAX_RESULTS, "results": 7,
                   "bySeverity": {"info": 2, "low": 5}, "notGating": 0})
        );
        let note = &run["invocations"][0]["toolExecutionNotifications"][0];
        assert_eq!(note["level"], "warning");
        assert_eq!(note["properties"]["kind"], "cut");
        let expected = "The SARIF log holds at most 25000 results a run (code scanning rejects more): \
             7 results left out, lowest severity first (2 info, 5 low); the Markdown and JSON reports list every finding.";
        assert_eq!(note["message"]["text"], expected);
        assert_eq!(cut_note(&r, Suppressed::Omit).as_deref(), Some(expected));
        // At the limit exactly nothing is cut.
        let mut at = r.clone();
        at.findings.truncate(MAX_RESULTS);
        assert_eq!(cut_note(&at, Suppressed::Omit), None);
    }

    #[test]
    fn kept_findings_that_do_not_gate_are_cut_before_open_ones() {
        let mut r = report_with_non_gating();
        r.findings = (0..MAX_RESULTS)
            .map(|i| merged("a.rs", 100 + i as u32, Severity::Info, Some("r/i"), "i"))
            .collect();
        assert_eq!(cut_note(&r, Suppressed::Omit), None);
        let note = cut_note(&r, Suppressed::Keep).unwrap();
        assert!(note.contains("3 results left out"), "{note}");
        assert!(
            note.contains("1 medium, 1 high, 1 critical; 3 of them not gating"),
            "{note}"
        );
    }

    #[test]
    fn a_log_keeps_at_most_twenty_runs() {
        let run = |i: usize| {
            s::Run::builder()
                .tool(
                    s::Tool::builder()
                        .driver(s::ToolComponent::builder().name(format!("t{i}")).build())
                        .build(),
                )
                .build()
        };
        let (runs, over) = keep_runs((0..25).map(run).collect());
        assert_eq!((runs.len(), over), (MAX_RUNS, 5));
        assert_eq!(runs[19].tool.driver.name, "t19");
        let (runs, over) = keep_runs((0..MAX_RUNS).map(run).collect());
        assert_eq!((runs.len(), over), (MAX_RUNS, 0));
        // A report is one run, however many shards it was merged from.
        assert_eq!(
            sarif(&report(vec![]), None)["runs"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
    }

    #[test]
    fn uris_are_percent_encoded_relative_references() {
        assert_eq!(uri("src/a-b_c.~d.rs"), "src/a-b_c.~d.rs");
        assert_eq!(uri("./c:d/é.rs"), "c%3Ad/%C3%A9.rs");
        assert_eq!(uri("100%?.rs"), "100%25%3F.rs");
    }
}
