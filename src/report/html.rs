//! `--format html`: the report as one self-contained page.
//!
//! Takes the [`Report`] and what the report value does not hold
//! ([`HtmlExtras`]: the run store's history, the files' line counts);
//! gives one HTML file with its CSS, script and hand-written SVG charts
//! inlined and nothing fetched (a Content-Security-Policy meta tag allows
//! only the page's own style and script, by hash). On top the verdict,
//! the counts by severity, cost and duration; then charts by severity and
//! CWE, a heat map of findings per KLOC by directory, the trend over the
//! store's runs, a filterable and sortable table of every finding (open,
//! unverified, refuted, suppressed, baselined) that opens on its evidence,
//! coverage by directory, and everything else the JSON report holds.
//!
//! Every string from the repository or a model goes through [`text`] or
//! [`attr`]: markup is escaped and bidirectional controls are shown as
//! visible marks, never applied.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::model::findings::Severity;
use crate::stages::gate::Outcome;
use crate::stages::reduce::Merged;
use crate::util::git::Checkout;

use super::Report;

const CSS: &str = include_str!("html_page.css");
const SCRIPT: &str = include_str!("html_page.js");

/// How many of the store's runs the trend shows.
const TREND_RUNS: usize = 20;

/// What the page shows beside the report.
#[derive(Clone, Debug, Default)]
pub(crate) struct HtmlExtras {
    /// The store's runs, oldest first (this one included when stored).
    pub(crate) history: Vec<TrendRun>,
    /// Why there is no history, when the store could not be read.
    pub(crate) history_note: Option<String>,
    /// Lines of each planned file, for findings per KLOC.
    pub(crate) lines: BTreeMap<String, u64>,
}

/// One run of the store's history.
#[derive(Clone, Debug, Default)]
pub(crate) struct TrendRun {
    pub(crate) id: i64,
    pub(crate) started_at: String,
    pub(crate) finished: bool,
    pub(crate) complete: bool,
    /// Open verified findings by severity (lowercase name).
    pub(crate) findings: BTreeMap<String, i64>,
}

/// Where a finding stands, as the table's status filter names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    Open,
    Unverified,
    Refuted,
    Suppressed,
    Baselined,
    /// Seen in fewer samples than the quorum (`--samples`).
    Unstable,
}

impl Status {
    /// The statuses a page shows: every one, and `unstable` when a run
    /// has such findings (a run of one sample never does).
    fn shown(rows: &[Row<'_>]) -> Vec<Status> {
        let mut all = Self::ALL.to_vec();
        if rows.iter().any(|r| r.status == Self::Unstable) {
            all.push(Self::Unstable);
        }
        all
    }

    const ALL: [Status; 5] = [
        Self::Open,
        Self::Unverified,
        Self::Refuted,
        Self::Suppressed,
        Self::Baselined,
    ];

    fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Unverified => "unverified",
            Self::Refuted => "refuted",
            Self::Suppressed => "suppressed",
            Self::Baselined => "baselined",
            Self::Unstable => "unstable",
        }
    }
}

/// One row of the findings table.
struct Row<'a> {
    merged: &'a Merged,
    status: Status,
    /// Why it is out of the gate (suppression or baseline reason).
    why: Vec<(&'static str, String)>,
}

/// The page.
pub(crate) fn render(report: &Report, extras: &HtmlExtras) -> Result<String, std::fmt::Error> {
    let rows = rows(report);
    let new: BTreeSet<&str> = report
        .since_last_run
        .iter()
        .flat_map(|s| s.new.iter().map(|f| f.fingerprint.as_str()))
        .collect();
    let mut body = String::new();
    body.push_str("<main>\n");
    verdict(&mut body, report, &rows)?;
    toc(&mut body)?;
    summary(&mut body, report)?;
    charts(&mut body, report);
    trend(&mut body, report, extras)?;
    heat(&mut body, report, extras)?;
    findings(&mut body, report, &rows, &new)?;
    coverage(&mut body, report)?;
    groups(&mut body, report)?;
    claims(&mut body, report)?;
    leads(&mut body, report)?;
    run_details(&mut body, report)?;
    write!(
        body,
        "<footer>{} {} · report schema {} · this page loads nothing from the network</footer>\n<pre id=\"selftest\" hidden></pre>\n</main>\n",
        text(&report.tool.name),
        text(&report.tool.version),
        report.schema_version
    )?;
    let csp = format!(
        "default-src 'none'; style-src '{}'; script-src '{}'; img-src data:; base-uri 'none'; form-action 'none'",
        sha256_source(CSS),
        sha256_source(SCRIPT)
    );
    Ok(format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta http-equiv=\"Content-Security-Policy\" content=\"{csp}\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<meta name=\"referrer\" content=\"no-referrer\">\n<title>fanscan: {} · {}</title>\n<style>{CSS}</style>\n</head>\n<body>\n{body}<script>{SCRIPT}</script>\n</body>\n</html>\n",
        text(outcome_word(report.gate.outcome)),
        text(&report.root)
    ))
}

/// Every finding of the report with its status: open, unverified,
/// refuted, suppressed, baselined, in that order.
fn rows(report: &Report) -> Vec<Row<'_>> {
    let mut rows: Vec<Row<'_>> = Vec::new();
    for (list, status) in [
        (&report.findings, Status::Open),
        (&report.unverified, Status::Unverified),
        (&report.refuted, Status::Refuted),
        (&report.unstable, Status::Unstable),
    ] {
        rows.extend(list.iter().map(|m| Row {
            merged: m,
            status,
            why: expired_why(report, &m.fingerprint),
        }));
    }
    rows.extend(report.suppressed.iter().map(|s| {
        let mut why = vec![(
            "Suppressed",
            format!(
                "fanscan:ignore on line {}{}",
                s.suppression.line,
                if s.suppression.rules.is_empty() {
                    " (every rule)".to_string()
                } else {
                    format!(" [{}]", s.suppression.rules.join(", "))
                }
            ),
        )];
        why.push((
            "Reason",
            s.suppression
                .reason
                .clone()
                .unwrap_or_else(|| "(none given)".into()),
        ));
        if s.suppression.by_change {
            why.push(("Added by", "the change under review".into()));
        }
        for note in &s.suppression.notes {
            why.push(("Note", note.clone()));
        }
        Row {
            merged: &s.finding,
            status: Status::Suppressed,
            why,
        }
    }));
    rows.extend(report.baselined.iter().map(|b| Row {
        merged: &b.finding,
        status: Status::Baselined,
        why: vec![(
            "Baseline reason",
            b.reason.clone().unwrap_or_else(|| "(none given)".into()),
        )],
    }));
    rows
}

/// Why an open finding was accepted until its date passed: its expired
/// suppressions and baseline entries, if any.
fn expired_why(report: &Report, fingerprint: &str) -> Vec<(&'static str, String)> {
    let mut why = Vec::new();
    for x in report
        .expired
        .iter()
        .filter(|x| x.finding.fingerprint == fingerprint)
    {
        why.push(("Expired", x.describe()));
    }
    why
}

fn outcome_word(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Pass => "passed",
        Outcome::Fail => "failed",
        Outcome::Incomplete => "incomplete",
    }
}

fn verdict(out: &mut String, report: &Report, rows: &[Row<'_>]) -> std::fmt::Result {
    let (class, word) = match report.gate.outcome {
        Outcome::Pass if report.complete => ("v-pass", "Gate passed"),
        Outcome::Pass => ("v-incomplete", "Incomplete"),
        Outcome::Fail => ("v-fail", "Gate failed"),
        Outcome::Incomplete => ("v-incomplete", "Incomplete"),
    };
    write!(
        out,
        "<header class=\"verdict {class}\">\n<h1><span class=\"word\">{word}</span>fanscan report of <span class=\"mono\">{}</span></h1>\n<p class=\"reason\">{}</p>\n",
        text(&report.root),
        text(&report.gate.reason)
    )?;
    if report.complete {
        out.push_str("<p>Complete: every planned group ran to the end.</p>\n");
    } else {
        out.push_str("<p><b>Incomplete run.</b> Why:</p>\n<ul>\n");
        for r in &report.incomplete_reasons {
            writeln!(out, "<li>{}</li>", text(r))?;
        }
        out.push_str("</ul>\n");
    }
    out.push_str("<dl class=\"facts\">\n");
    for (k, v) in facts(report) {
        writeln!(out, "<div><dt>{k}</dt><dd>{v}</dd></div>")?;
    }
    out.push_str("</dl>\n<div class=\"cards\">\n");
    for sev in Severity::DESCENDING {
        let n = report
            .findings
            .iter()
            .filter(|m| m.finding.severity == sev)
            .count();
        writeln!(
            out,
            "<div class=\"card sev-{0}\"><b>{n}</b><span>open {0}</span></div>",
            sev.as_str()
        )?;
    }
    for status in &Status::shown(rows)[1..] {
        let n = rows.iter().filter(|r| r.status == *status).count();
        writeln!(
            out,
            "<div class=\"card other\"><b>{n}</b><span>{}</span></div>",
            status.as_str()
        )?;
    }
    out.push_str("</div>\n</header>\n");
    Ok(())
}

/// The run's facts for the verdict's header: checkout, start, duration,
/// cost, engine, gate, coverage, groups, tokens, requests, the store's run.
fn facts(report: &Report) -> Vec<(&'static str, String)> {
    let gate = &report.gate;
    let cost = report
        .stats
        .cost_usd
        .map_or_else(|| "n/a".to_string(), |c| format!("${c:.4}"));
    let planned: usize = report.plan.groups.iter().map(|g| g.files.len()).sum();
    let mut facts: Vec<(&'static str, String)> = Vec::new();
    if let Some(checkout) = &report.manifest.checkout {
        facts.push(("Checkout", checkout_html(checkout)));
    }
    facts.extend([
        ("Started", text(&report.started_at)),
        ("Duration", duration(report.duration_ms)),
        ("Cost", cost),
        (
            "Engine",
            format!(
                "{} · {} · <span title=\"{}\">{}</span>",
                text(&report.provider),
                text(&report.model),
                attr(
                    serde_json::to_value(report.engine)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string))
                        .as_deref()
                        .unwrap_or_default()
                ),
                text(&report.engine.to_string())
            ),
        ),
        (
            "Gate",
            format!(
                "fail on {}{}{}",
                text(gate.fail_on.as_str()),
                if gate.gate_unverified {
                    ", unverified gated"
                } else {
                    ""
                },
                if gate.strict { ", strict" } else { "" }
            ),
        ),
        (
            "Reviewed",
            format!(
                "{} of {planned} planned files",
                report.coverage.reviewed.len()
            ),
        ),
        (
            "Groups",
            format!(
                "{} ({} cached, {} resumed)",
                report.groups.len(),
                report.stats.cached_groups,
                report.stats.resumed_groups
            ),
        ),
        (
            "Tokens",
            format!(
                "{} in ({} cached, {} cache writes) · {} out",
                report.stats.input_tokens,
                report.stats.cached_tokens,
                report.stats.cache_write_tokens,
                report.stats.output_tokens
            ),
        ),
        (
            "Requests",
            format!(
                "{} ({} retries, {} rate-limited, lowest concurrency {})",
                report.stats.requests,
                report.stats.retries,
                report.stats.rate_limited,
                report.stats.lowest_concurrency
            ),
        ),
        (
            "Run",
            report.run_id.map_or_else(
                || "not stored".to_string(),
                |id| format!("#{id} in the store"),
            ),
        ),
    ]);
    facts
}

/// The scanned tree: the state in words, then the full commit and
/// `origin`'s URL (credentials already removed) in monospace.
fn checkout_html(checkout: &Checkout) -> String {
    let mut out = text(&crate::util::capitalize(&checkout.describe()));
    if let Checkout::Git(g) = checkout {
        if let Some(commit) = &g.commit {
            out.push_str(&format!("<br><span class=\"mono\">{}</span>", text(commit)));
        }
        if let Some(url) = &g.remote_url {
            out.push_str(&format!(
                "<br>origin <span class=\"mono\">{}</span>",
                text(url)
            ));
        }
    }
    out
}

fn toc(out: &mut String) -> std::fmt::Result {
    out.push_str("<nav class=\"toc\">");
    for (id, name) in [
        ("summary", "Summary"),
        ("charts", "Charts"),
        ("trend", "Trend"),
        ("heat", "Heat map"),
        ("findings", "Findings"),
        ("coverage", "Coverage"),
        ("groups", "Groups"),
        ("claims", "Claims"),
        ("details", "Run details"),
    ] {
        write!(out, "<a href=\"#{id}\">{name}</a>")?;
    }
    out.push_str("</nav>\n");
    Ok(())
}

fn summary(out: &mut String, report: &Report) -> std::fmt::Result {
    out.push_str("<section id=\"summary\">\n<h2>Summary</h2>\n");
    if report.summary.trim().is_empty() {
        out.push_str("<p class=\"empty\">No summary.</p>\n");
    } else {
        writeln!(out, "<p class=\"text\">{}</p>", text(&report.summary))?;
    }
    if !report.notes.is_empty() {
        out.push_str("<h3>Notes</h3>\n<ul>\n");
        for n in &report.notes {
            writeln!(out, "<li>{}</li>", text(n))?;
        }
        out.push_str("</ul>\n");
    }
    out.push_str("</section>\n");
    Ok(())
}

/// A horizontal bar chart: one bar per (label, count, class).
fn bars(title: &str, items: &[(String, usize, String)]) -> String {
    let max = items.iter().map(|i| i.1).max().unwrap_or(0).max(1);
    let row = 22;
    let label_w = 250;
    let bar_w = 300;
    let height = row * items.len().max(1) + 24;
    let mut svg = format!(
        "<svg viewBox=\"0 0 {} {height}\" role=\"img\" aria-label=\"{}\" width=\"{}\" height=\"{height}\">\n<title>{}</title>\n",
        label_w + bar_w + 50,
        attr(title),
        label_w + bar_w + 50,
        text(title)
    );
    for (i, (label, n, class)) in items.iter().enumerate() {
        let y = 8 + i * row;
        let w = (n * bar_w).div_ceil(max);
        let shown: String = if label.chars().count() > 38 {
            label.chars().take(37).collect::<String>() + "…"
        } else {
            label.clone()
        };
        svg.push_str(&format!("<g><title>{}: {n}</title><text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text><rect class=\"{class}\" x=\"{label_w}\" y=\"{y}\" width=\"{w}\" height=\"15\" rx=\"2\"></rect><text x=\"{}\" y=\"{}\">{n}</text></g>\n",
            text(label),
            label_w - 8,
            y + 12,
            text(&shown),
            label_w + w + 6,
            y + 12));
    }
    svg.push_str(&format!("<line class=\"axis\" x1=\"{label_w}\" y1=\"4\" x2=\"{label_w}\" y2=\"{}\"></line>\n</svg>\n",
        height - 14));
    svg
}

fn charts(out: &mut String, report: &Report) {
    out.push_str("<section id=\"charts\">\n<div class=\"grid2\">\n<div>\n<h2>Open findings by severity</h2>\n");
    let by_sev: Vec<(String, usize, String)> = Severity::DESCENDING
        .iter()
        .map(|s| {
            (
                s.as_str().to_string(),
                report
                    .findings
                    .iter()
                    .filter(|m| m.finding.severity == *s)
                    .count(),
                format!("fill-{}", s.as_str()),
            )
        })
        .collect();
    out.push_str(&bars("Open findings by severity", &by_sev));
    out.push_str("</div>\n<div>\n<h2>Open findings by CWE</h2>\n");
    let mut by_cwe: BTreeMap<(u32, String), usize> = BTreeMap::new();
    for m in &report.findings {
        let c = &m.finding.cwe;
        let key = match (&c.id, &c.name) {
            (Some(id), Some(name)) => (id.number(), format!("{id} {name}")),
            (Some(id), None) => (id.number(), id.to_string()),
            (None, _) => (u32::MAX, "no CWE".to_string()),
        };
        *by_cwe.entry(key).or_default() += 1;
    }
    if by_cwe.is_empty() {
        out.push_str("<p class=\"empty\">No open findings.</p>\n");
    } else {
        let mut items: Vec<(String, usize, String)> = by_cwe
            .into_iter()
            .map(|((_, label), n)| (label, n, "fill-cwe".to_string()))
            .collect();
        items.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        if items.len() > 12 {
            let rest: usize = items[11..].iter().map(|i| i.1).sum();
            let others = items.len() - 11;
            items.truncate(11);
            items.push((
                format!("{others} other CWEs"),
                rest,
                "fill-info".to_string(),
            ));
        }
        out.push_str(&bars("Open findings by CWE", &items));
    }
    out.push_str("</div>\n</div>\n</section>\n");
}

fn trend(out: &mut String, report: &Report, extras: &HtmlExtras) -> std::fmt::Result {
    out.push_str("<section id=\"trend\">\n<h2>Trend</h2>\n");
    let runs: Vec<&TrendRun> = extras.history.iter().filter(|r| r.finished).collect();
    let runs = &runs[runs.len().saturating_sub(TREND_RUNS)..];
    if let Some(note) = &extras.history_note {
        writeln!(out, "<p class=\"muted\">{}</p>", text(note))?;
    }
    trend_chart(out, runs)?;
    since_last_run(out, report)?;
    out.push_str("</section>\n");
    Ok(())
}

/// The SVG of open findings per severity over the store's last runs (two
/// at least), or a line saying when it appears.
fn trend_chart(out: &mut String, runs: &[&TrendRun]) -> std::fmt::Result {
    if runs.len() < 2 {
        out.push_str("<p class=\"empty\">The trend appears once the run store holds two finished runs.</p>\n");
    } else {
        let (w, h, left, top, bottom) = (760usize, 220usize, 44usize, 14usize, 36usize);
        let total = |r: &TrendRun, s: Severity| r.findings.get(s.as_str()).copied().unwrap_or(0);
        let max = runs
            .iter()
            .flat_map(|r| Severity::DESCENDING.map(|s| total(r, s)))
            .max()
            .unwrap_or(0)
            .max(1);
        let plot_h = h - top - bottom;
        let step = (w - left - 110) / (runs.len() - 1).max(1);
        let x = |i: usize| left + i * step;
        let y = |n: i64| {
            top + plot_h
                - (usize::try_from(n).unwrap_or(0) * plot_h) / usize::try_from(max).unwrap_or(1)
        };
        writeln!(
            out,
            "<svg viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\" role=\"img\" aria-label=\"Open findings per severity over the last {} runs\">",
            runs.len()
        )?;
        writeln!(
            out,
            "<line class=\"axis\" x1=\"{left}\" y1=\"{top}\" x2=\"{left}\" y2=\"{}\"></line><line class=\"axis\" x1=\"{left}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"></line>",
            top + plot_h,
            top + plot_h,
            x(runs.len() - 1),
            top + plot_h
        )?;
        writeln!(
            out,
            "<text class=\"lbl\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{max}</text><text class=\"lbl\" x=\"{}\" y=\"{}\" text-anchor=\"end\">0</text>",
            left - 6,
            top + 4,
            left - 6,
            top + plot_h + 4
        )?;
        for (i, r) in runs.iter().enumerate() {
            writeln!(
                out,
                "<text class=\"lbl\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">#{}</text>",
                x(i),
                top + plot_h + 16,
                r.id
            )?;
        }
        for (k, s) in Severity::DESCENDING.iter().enumerate() {
            let points: Vec<String> = runs
                .iter()
                .enumerate()
                .map(|(i, r)| format!("{},{}", x(i), y(total(r, *s))))
                .collect();
            writeln!(
                out,
                "<polyline class=\"line-{0}\" points=\"{1}\"></polyline>",
                s.as_str(),
                points.join(" ")
            )?;
            for (i, r) in runs.iter().enumerate() {
                let n = total(r, *s);
                writeln!(
                    out,
                    "<circle class=\"{} line-{}\" cx=\"{}\" cy=\"{}\" r=\"3.5\"><title>run #{} ({}{}): {n} {}</title></circle>",
                    if r.complete {
                        "fill-".to_string() + s.as_str()
                    } else {
                        "open".to_string()
                    },
                    s.as_str(),
                    x(i),
                    y(n),
                    r.id,
                    text(&r.started_at),
                    if r.complete { "" } else { ", incomplete" },
                    s.as_str()
                )?;
            }
            let ly = top + 6 + k * 18;
            let lx = w - 96;
            writeln!(
                out,
                "<rect class=\"fill-{0}\" x=\"{lx}\" y=\"{1}\" width=\"12\" height=\"4\"></rect><text x=\"{2}\" y=\"{3}\">{0}</text>",
                s.as_str(),
                ly,
                lx + 18,
                ly + 5
            )?;
        }
        out.push_str("</svg>\n<p class=\"muted\">Open verified findings per severity, one point a finished run of the store (hollow: incomplete).</p>\n");
    }
    Ok(())
}

/// What changed since the last complete run: counts by severity and the
/// new, fixed and unchecked findings.
fn since_last_run(out: &mut String, report: &Report) -> std::fmt::Result {
    match &report.since_last_run {
        Some(since) => {
            writeln!(
                out,
                "<h3>Since run {} ({})</h3>\n<p>{} new, {} fixed, {} unchanged, {} not checked this time.</p>",
                since
                    .previous_run
                    .map_or_else(|| "?".to_string(), |id| format!("#{id}")),
                text(&since.previous_started_at),
                since.new.len(),
                since.fixed.len(),
                since.unchanged,
                since.not_checked.len()
            )?;
            if !since.by_severity.is_empty() {
                out.push_str("<table><thead><tr><th>Severity</th><th class=\"num\">new</th><th class=\"num\">fixed</th><th class=\"num\">unchanged</th><th class=\"num\">not checked</th></tr></thead><tbody>\n");
                for (sev, t) in &since.by_severity {
                    writeln!(
                        out,
                        "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
                        text(sev),
                        t.new,
                        t.fixed,
                        t.unchanged,
                        t.not_checked
                    )?;
                }
                out.push_str("</tbody></table>\n");
            }
            for (title, list) in [
                ("New", &since.new),
                ("Fixed", &since.fixed),
                ("Not checked", &since.not_checked),
            ] {
                if list.is_empty() {
                    continue;
                }
                writeln!(
                    out,
                    "<details><summary>{title} ({})</summary><ul>",
                    list.len()
                )?;
                for f in list {
                    writeln!(
                        out,
                        "<li><span class=\"sev sev-{0}\">{0}</span> <span class=\"mono\">{1}:{2}</span> {3} <span class=\"muted mono\">{4}</span></li>",
                        f.severity.as_str(),
                        text(&f.path),
                        f.line,
                        text(&f.title),
                        text(&f.fingerprint)
                    )?;
                }
                out.push_str("</ul></details>\n");
            }
        }
        None => out.push_str(
            "<p class=\"muted\">No earlier complete run in the store to compare with.</p>\n",
        ),
    }
    Ok(())
}

/// A file's directory: `a/b/c.rs` is `a/b`, `c.rs` is `.`.
fn dir_of(path: &str) -> &str {
    path.rsplit_once('/').map_or(".", |(d, _)| d)
}

fn heat(out: &mut String, report: &Report, extras: &HtmlExtras) -> std::fmt::Result {
    out.push_str("<section id=\"heat\">\n<h2>Heat map: open findings per KLOC by directory</h2>\n");
    let mut dirs: BTreeMap<&str, (usize, u64, [usize; 5])> = BTreeMap::new();
    let mut lines_known = true;
    for g in &report.plan.groups {
        for f in &g.files {
            let entry = dirs.entry(dir_of(f)).or_default();
            entry.0 += 1;
            match extras.lines.get(f) {
                Some(n) => entry.1 += n,
                None => lines_known = false,
            }
        }
    }
    for m in &report.findings {
        let entry = dirs.entry(dir_of(&m.finding.path)).or_default();
        let idx = Severity::DESCENDING
            .iter()
            .position(|s| *s == m.finding.severity)
            .unwrap_or(4);
        entry.2[idx] += 1;
    }
    if dirs.is_empty() {
        out.push_str("<p class=\"empty\">No planned files.</p>\n</section>\n");
        return Ok(());
    }
    let density = |n: usize, lines: u64| -> Option<f64> {
        (lines > 0).then(|| n as f64 * 1000.0 / lines as f64)
    };
    let max = dirs
        .values()
        .flat_map(|(_, lines, counts)| counts.iter().filter_map(|n| density(*n, *lines)))
        .fold(0.0_f64, f64::max);
    out.push_str("<table class=\"heat\"><thead><tr><th>Directory</th><th class=\"num\">files</th><th class=\"num\">lines</th>");
    for s in Severity::DESCENDING {
        write!(out, "<th class=\"num\">{}</th>", s.as_str())?;
    }
    out.push_str("<th class=\"num\">all per KLOC</th></tr></thead><tbody>\n");
    for (dir, (files, lines, counts)) in &dirs {
        write!(
            out,
            "<tr><td class=\"mono\">{}</td><td class=\"num\">{files}</td><td class=\"num\">{}</td>",
            text(dir),
            if *lines > 0 {
                lines.to_string()
            } else {
                "?".into()
            }
        )?;
        for n in counts {
            let (class, shown) = match density(*n, *lines) {
                Some(d) if *n > 0 => {
                    let level = if max > 0.0 {
                        1 + ((d / max) * 4.0).floor().min(4.0) as usize
                    } else {
                        1
                    };
                    (format!("h{level}"), format!("{n}<br><small>{d:.1}</small>"))
                }
                _ if *n > 0 => ("h3".to_string(), n.to_string()),
                _ => ("h0".to_string(), "·".to_string()),
            };
            write!(out, "<td class=\"cell {class}\">{shown}</td>")?;
        }
        let all: usize = counts.iter().sum();
        writeln!(
            out,
            "<td class=\"num\">{}</td></tr>",
            density(all, *lines).map_or_else(|| "?".to_string(), |d| format!("{d:.2}"))
        )?;
    }
    out.push_str("</tbody></table>\n<p class=\"muted\">Each cell: open findings, and below them findings per 1000 lines; the darker, the denser.");
    if !lines_known {
        out.push_str(" Some files could not be read for their line count (?).");
    }
    out.push_str("</p>\n</section>\n");
    Ok(())
}

fn findings(
    out: &mut String,
    report: &Report,
    rows: &[Row<'_>],
    new: &BTreeSet<&str>,
) -> std::fmt::Result {
    writeln!(
        out,
        "<section id=\"findings\">\n<h2>Findings ({})</h2>",
        rows.len()
    )?;
    out.push_str("<form id=\"filters\" class=\"filters\">\n<fieldset><legend>Severity</legend>");
    for s in Severity::DESCENDING {
        write!(
            out,
            "<label><input type=\"checkbox\" name=\"sev\" value=\"{0}\" checked> {0}</label>",
            s.as_str()
        )?;
    }
    out.push_str("</fieldset>\n<fieldset><legend>Status</legend>");
    for s in Status::shown(rows) {
        let n = rows.iter().filter(|r| r.status == s).count();
        write!(
            out,
            "<label><input type=\"checkbox\" name=\"status\" value=\"{0}\" checked> {0} ({n})</label>",
            s.as_str()
        )?;
    }
    out.push_str("</fieldset>\n<fieldset><legend>CWE</legend><select name=\"cwe\"><option value=\"\">any</option>");
    let cwes: BTreeMap<u32, String> = rows
        .iter()
        .filter_map(|r| {
            let c = &r.merged.finding.cwe;
            c.id.map(|id| {
                (
                    id.number(),
                    match &c.name {
                        Some(n) => format!("{id} {n}"),
                        None => id.to_string(),
                    },
                )
            })
        })
        .collect();
    for (n, label) in &cwes {
        write!(out, "<option value=\"CWE-{n}\">{}</option>", text(label))?;
    }
    if rows.iter().any(|r| r.merged.finding.cwe.id.is_none()) {
        out.push_str("<option value=\"none\">no CWE</option>");
    }
    out.push_str("</select></fieldset>\n<fieldset><legend>Path</legend><input type=\"search\" name=\"path\" placeholder=\"part of a path\" aria-label=\"path filter\"></fieldset>\n<span id=\"shown\"></span>\n</form>\n");
    if rows.is_empty() {
        out.push_str("<p class=\"empty\">No findings.</p>\n");
    }
    out.push_str("<table id=\"findings-table\"><thead><tr><th></th><th class=\"sortable\" data-key=\"severity\">Severity</th><th class=\"sortable\" data-key=\"status\">Status</th><th class=\"sortable\" data-key=\"cwe\">CWE</th><th class=\"sortable\" data-key=\"location\">Location</th><th class=\"sortable\" data-key=\"title\">Title</th><th>Agent</th><th class=\"sortable num\" data-key=\"confidence\">Conf.</th></tr></thead>\n");
    for (order, row) in rows.iter().enumerate() {
        finding_row(out, report, row, order, new)?;
    }
    out.push_str("</table>\n</section>\n");
    Ok(())
}

fn finding_row(
    out: &mut String,
    report: &Report,
    row: &Row<'_>,
    order: usize,
    new: &BTreeSet<&str>,
) -> std::fmt::Result {
    let m = row.merged;
    let f = &m.finding;
    let rank = Severity::DESCENDING.len()
        - Severity::DESCENDING
            .iter()
            .position(|s| *s == f.severity)
            .unwrap_or(4);
    let cwe = f
        .cwe
        .id
        .map_or_else(|| "none".to_string(), |id| id.to_string());
    let conf = m.challenge.as_ref().and_then(|c| c.confidence);
    let location = match f.end_line {
        Some(end) if end > f.line => format!("{}:{}-{end}", f.path, f.line),
        _ => format!("{}:{}", f.path, f.line),
    };
    let is_new = row.status == Status::Open && new.contains(m.fingerprint.as_str());
    writeln!(
        out,
        "<tbody class=\"finding\" data-order=\"{order}\" data-rank=\"{rank}\" data-sev=\"{sev}\" data-status=\"{status}\" data-cwe=\"{cwe}\" data-cwen=\"{cwen}\" data-path=\"{path}\" data-line=\"{line}\" data-title=\"{title}\" data-conf=\"{conf}\" data-fingerprint=\"{fp}\">\n<tr class=\"row\"><td><button type=\"button\" class=\"toggle\" aria-expanded=\"false\" aria-label=\"details\">&#9656;</button></td><td><span class=\"sev sev-{sev}\">{sev}</span></td><td><span class=\"st st-{status}\">{status}</span>{newmark}</td><td class=\"mono\">{cwe_shown}</td><td class=\"mono\">{loc}</td><td>{title_text}</td><td>{agents}</td><td class=\"num\">{conf_shown}</td></tr>",
        sev = f.severity.as_str(),
        status = row.status.as_str(),
        cwen = f
            .cwe
            .id
            .map(|id| id.number().to_string())
            .unwrap_or_default(),
        path = attr(&f.path),
        line = f.line,
        title = attr(&f.title),
        conf = conf.map(|c| c.to_string()).unwrap_or_default(),
        fp = attr(&m.fingerprint),
        newmark = if is_new {
            "<span class=\"new\">new</span>"
        } else {
            ""
        },
        cwe_shown = f
            .cwe
            .id
            .map_or_else(|| "—".to_string(), |id| id.to_string()),
        loc = text(&location),
        title_text = text(&f.title),
        agents = text(&m.agents.join(", ")),
        conf_shown = conf.map_or_else(|| "—".to_string(), |c| format!("{c}/10")),
    )?;
    write!(
        out,
        "<tr class=\"detail\" hidden><td colspan=\"8\">\n<p class=\"title\">{}</p>\n",
        text(&f.title)
    )?;
    if !f.detail.trim().is_empty() {
        writeln!(out, "<p class=\"text\">{}</p>", text(&f.detail))?;
    }
    match &f.evidence {
        Some(evidence) if !evidence.is_empty() => {
            out.push_str(&code(evidence, f.line, f.end_line.unwrap_or(f.line)));
        }
        _ => out.push_str("<p class=\"muted\">No evidence quoted.</p>\n"),
    }
    finding_facts(out, report, row, &location)?;
    Ok(())
}

/// The facts of a finding's detail row: fingerprint, location, CWE, rule,
/// origin, agents, verification, the skeptic's verdict, why it does or
/// does not gate.
fn finding_facts(
    out: &mut String,
    report: &Report,
    row: &Row<'_>,
    location: &str,
) -> std::fmt::Result {
    let m = row.merged;
    let f = &m.finding;
    out.push_str("<dl class=\"kv\">\n");
    let mut kv = |k: &str, v: String| {
        out.push_str(&format!("<dt>{k}</dt><dd>{v}</dd>\n"));
    };
    kv(
        "Fingerprint",
        format!("<span class=\"mono\">{}</span>", text(&m.fingerprint)),
    );
    kv(
        "Location",
        format!("<span class=\"mono\">{}</span>", text(location)),
    );
    if let Some(id) = f.cwe.id {
        kv(
            "CWE",
            format!(
                "{id}{}",
                f.cwe
                    .name
                    .as_ref()
                    .map(|n| format!(" {}", text(n)))
                    .unwrap_or_default()
            ),
        );
    }
    if let Some(note) = &f.cwe.note {
        kv("CWE note", text(note));
    }
    if let Some(rule) = &f.rule {
        kv(
            "Rule",
            format!("<span class=\"mono\">{}</span>", text(rule)),
        );
    }
    kv(
        "Origin",
        text(match f.origin {
            crate::model::findings::Origin::Agent => "agent",
            crate::model::findings::Origin::ToolLayer => "tool_layer",
        }),
    );
    if let Some(seen) = f.seen {
        kv(
            "Samples",
            format!("seen in {} of {} samples", seen.k, seen.n),
        );
    }
    kv("Agents", text(&m.agents.join(", ")));
    kv("Groups", text(&m.groups.join(", ")));
    kv(
        "Verified",
        format!(
            "{}{}{}",
            if m.verified { "yes" } else { "no" },
            if m.located {
                " (located: its lines exist, its quote did not match)"
            } else {
                ""
            },
            m.note
                .as_ref()
                .map(|n| format!(" — {}", text(n)))
                .unwrap_or_default()
        ),
    );
    if let Some(c) = &m.challenge {
        let stance = c.stance.label();
        kv(
            "Skeptic",
            format!(
                "{}{} — {}",
                text(stance),
                c.confidence
                    .map(|n| format!(", confidence {n}/10"))
                    .unwrap_or_default(),
                text(&c.reason)
            ),
        );
        if !c.flow.is_empty() {
            kv(
                "Data flow",
                format!("<span class=\"mono\">{}</span>", text(&c.flow.join(" → "))),
            );
        }
        for n in &c.notes {
            kv("Skeptic note", text(n));
        }
    }
    for (k, v) in &row.why {
        kv(k, text(v));
    }
    if report.gate.failing.contains(&m.fingerprint) {
        kv("Gate", "fails the gate".to_string());
    }
    out.push_str("</dl>\n</td></tr>\n</tbody>\n");
    Ok(())
}

/// The evidence with line numbers from `first`, lines `first..=last`
/// highlighted.
fn code(evidence: &str, first: u32, last: u32) -> String {
    let mut out = String::from("<pre class=\"code\">");
    for (i, line) in evidence.lines().enumerate() {
        let n = first.saturating_add(u32::try_from(i).unwrap_or(u32::MAX));
        out.push_str(&format!(
            "<span class=\"l{}\"><span class=\"n\">{n}</span>{}</span>",
            if n <= last { " hl" } else { "" },
            text(line)
        ));
    }
    out.push_str("</pre>\n");
    out
}

fn coverage(out: &mut String, report: &Report) -> std::fmt::Result {
    let c = &report.coverage;
    out.push_str("<section id=\"coverage\">\n<h2>Coverage</h2>\n");
    writeln!(
        out,
        "<p>{} reviewed, {} never shown to a model, {} failed, {} skipped.</p>",
        c.reviewed.len(),
        c.unread.len(),
        c.failed.len(),
        c.skipped.len()
    )?;
    let mut dirs: BTreeMap<&str, [usize; 4]> = BTreeMap::new();
    for p in &c.reviewed {
        dirs.entry(dir_of(p)).or_default()[0] += 1;
    }
    for p in &c.unread {
        dirs.entry(dir_of(p)).or_default()[1] += 1;
    }
    for f in &c.failed {
        dirs.entry(dir_of(&f.path)).or_default()[2] += 1;
    }
    for s in &c.skipped {
        dirs.entry(dir_of(&s.path)).or_default()[3] += 1;
    }
    if dirs.is_empty() {
        out.push_str("<p class=\"empty\">No files.</p>\n");
    } else {
        out.push_str("<table><thead><tr><th>Directory</th><th class=\"num\">reviewed</th><th class=\"num\">unreviewed</th><th class=\"num\">failed</th><th class=\"num\">skipped</th></tr></thead><tbody>\n");
        for (dir, [r, u, f, s]) in &dirs {
            writeln!(
                out,
                "<tr><td class=\"mono\">{}</td><td class=\"num\">{r}</td><td class=\"num\">{u}</td><td class=\"num\">{f}</td><td class=\"num\">{s}</td></tr>",
                text(dir)
            )?;
        }
        out.push_str("</tbody></table>\n");
    }
    let list = |out: &mut String, title: &str, items: Vec<String>| -> std::fmt::Result {
        if items.is_empty() {
            return Ok(());
        }
        writeln!(
            out,
            "<details class=\"files\"><summary>{title} ({})</summary><ul>",
            items.len()
        )?;
        for i in items {
            writeln!(out, "<li>{i}</li>")?;
        }
        out.push_str("</ul></details>\n");
        Ok(())
    };
    let mono = |p: &str| format!("<span class=\"mono\">{}</span>", text(p));
    list(
        out,
        "Reviewed",
        c.reviewed.iter().map(|p| mono(p)).collect(),
    )?;
    list(
        out,
        "Never shown to a model (not reviewed)",
        c.unread.iter().map(|p| mono(p)).collect(),
    )?;
    list(
        out,
        "Failed",
        c.failed
            .iter()
            .map(|f| {
                format!(
                    "{} — group {}: {}",
                    mono(&f.path),
                    text(&f.group),
                    text(&f.reason)
                )
            })
            .collect(),
    )?;
    list(
        out,
        "Skipped",
        c.skipped
            .iter()
            .map(|s| {
                let raw = serde_json::to_value(s).unwrap_or(Value::Null);
                format!(
                    "{} — {} <span class=\"muted\">{}</span>",
                    mono(&s.path),
                    text(&s.reason.to_string()),
                    text(&skip_fields(&raw))
                )
            })
            .collect(),
    )?;
    out.push_str("</section>\n");
    Ok(())
}

/// A skipped file's reason fields as written in the JSON (`kind=binary`).
fn skip_fields(raw: &Value) -> String {
    let mut parts = Vec::new();
    if let Some(map) = raw.as_object() {
        for (k, v) in map {
            if k == "path" {
                continue;
            }
            parts.push(format!("{k}={}", scalar(v)));
        }
    }
    parts.join(" ")
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "null".into(),
        other => other.to_string(),
    }
}

fn groups(out: &mut String, report: &Report) -> std::fmt::Result {
    out.push_str("<section id=\"groups\">\n<h2>Groups</h2>\n");
    writeln!(
        out,
        "<p>Planner <b>{}</b>, {} tokens per group, {} groups planned.</p>",
        text(&report.plan.planner),
        report.plan.group_tokens,
        report.plan.groups.len()
    )?;
    if !report.plan.notes.is_empty() {
        out.push_str("<ul>\n");
        for n in &report.plan.notes {
            writeln!(out, "<li>{}</li>", text(n))?;
        }
        out.push_str("</ul>\n");
    }
    out.push_str("<table><thead><tr><th>Group</th><th>Agent</th><th>Status</th><th class=\"num\">rounds</th><th class=\"num\">tool calls (errors)</th><th class=\"num\">files read</th><th class=\"num\">tokens in/out</th><th>Notes</th></tr></thead><tbody>\n");
    for g in &report.groups {
        let mut notes = Vec::new();
        if g.cached {
            notes.push("cached".to_string());
        }
        if g.resumed {
            notes.push("resumed".to_string());
        }
        if g.doubtful {
            notes.push("doubtful".to_string());
        }
        if !g.summary_parsed {
            notes.push("summary not parsed".to_string());
        }
        if let Some(e) = &g.error {
            notes.push(text(e));
        }
        let planned = report.plan.groups.iter().find(|p| p.id == g.id);
        writeln!(
            out,
            "<tr><td><details><summary class=\"mono\">{}</summary>{}{}</details></td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{} ({})</td><td class=\"num\">{} of {}</td><td class=\"num\">{}/{} ({} cached, {} written)</td><td>{}</td></tr>",
            text(&g.id),
            planned
                .and_then(|p| p.focus.as_ref())
                .map(|f| format!("<p>Focus: {}</p>", text(f)))
                .unwrap_or_default(),
            file_list(&g.files),
            text(&g.agent),
            text(g.status.as_str()),
            g.rounds,
            g.tool_calls,
            g.tool_errors,
            g.files_read,
            g.files.len(),
            g.usage.input_tokens,
            g.usage.output_tokens,
            g.usage.cached_tokens,
            g.usage.cache_write_tokens,
            notes.join(", ")
        )?;
    }
    // Planned groups with no outcome never started.
    for p in &report.plan.groups {
        if report.groups.iter().any(|g| g.id == p.id) {
            continue;
        }
        writeln!(
            out,
            "<tr><td><details><summary class=\"mono\">{}</summary>{}{}</details></td><td>{}</td><td>not run</td><td class=\"num\">—</td><td class=\"num\">—</td><td class=\"num\">—</td><td class=\"num\">~{} planned</td><td></td></tr>",
            text(&p.id),
            p.focus
                .as_ref()
                .map(|f| format!("<p>Focus: {}</p>", text(f)))
                .unwrap_or_default(),
            file_list(&p.files),
            text(&p.agent),
            p.tokens
        )?;
    }
    out.push_str("</tbody></table>\n</section>\n");
    Ok(())
}

fn file_list(files: &[String]) -> String {
    let mut out = String::from("<ul>");
    for f in files {
        out.push_str(&format!("<li class=\"mono\">{}</li>", text(f)));
    }
    out.push_str("</ul>");
    out
}

/// The leads put to the auditors (a run with none has no section): the
/// outcomes per rule, the dismissed ones with their reasons, and the
/// results that named no file of the scan.
fn leads(out: &mut String, report: &Report) -> std::fmt::Result {
    let Some(leads) = &report.leads else {
        return Ok(());
    };
    let (confirmed, dismissed, unanswered) = leads.totals();
    writeln!(
        out,
        "<section id=\"leads\">\n<h2>Leads</h2>\n<p>{confirmed} confirmed (findings above), {dismissed} dismissed (not gated on), {unanswered} not answered (they stay the analysis's findings).</p>"
    )?;
    if !leads.tally.is_empty() {
        out.push_str("<table><thead><tr><th>Tool</th><th>Rule</th><th>Confirmed</th><th>Dismissed</th><th>Not answered</th></tr></thead><tbody>\n");
        for t in &leads.tally {
            writeln!(
                out,
                "<tr><td>{}</td><td class=\"mono\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                text(&t.tool),
                text(&t.rule),
                t.confirmed,
                t.dismissed,
                t.unanswered
            )?;
        }
        out.push_str("</tbody></table>\n");
    }
    if !leads.dismissed.is_empty() {
        out.push_str("<h3>Dismissed leads</h3>\n<table><thead><tr><th>Where</th><th>Rule</th><th>Tool</th><th>Why dismissed</th></tr></thead><tbody>\n");
        for r in &leads.dismissed {
            writeln!(
                out,
                "<tr><td>{}</td><td class=\"mono\">{}</td><td>{}</td><td class=\"text\">{}</td></tr>",
                where_of(Some(&r.lead.path), Some(r.lead.line)),
                text(&r.lead.rule),
                text(&r.lead.tool),
                text(r.reason.as_deref().unwrap_or("(no reason)"))
            )?;
        }
        out.push_str("</tbody></table>\n");
    }
    if !leads.outside.is_empty() {
        out.push_str("<h3>Leads not audited</h3>\n<ul>\n");
        for o in &leads.outside {
            writeln!(
                out,
                "<li><span class=\"mono\">{}</span> {} ({}): {}</li>",
                text(&o.location),
                text(&o.rule),
                text(&o.tool),
                text(&o.why)
            )?;
        }
        if leads.outside_more > 0 {
            writeln!(out, "<li>and {} more, not listed</li>", leads.outside_more)?;
        }
        out.push_str("</ul>\n");
    }
    out.push_str("</section>\n");
    Ok(())
}

fn claims(out: &mut String, report: &Report) -> std::fmt::Result {
    out.push_str("<section id=\"claims\">\n<h2>Claims that are not findings</h2>\n");
    if report.doubtful.is_empty() && report.unparsed.is_empty() {
        out.push_str("<p class=\"empty\">None: every claim of the agents was read as a finding, and no review was doubtful.</p>\n");
    }
    if !report.doubtful.is_empty() {
        out.push_str("<h3>Doubtful reviews (claims made, none verified)</h3>\n");
        for d in &report.doubtful {
            writeln!(
                out,
                "<details><summary><span class=\"mono\">{}</span> · {} · {} claims</summary>{}<ul>",
                text(&d.group),
                text(&d.agent),
                d.claims.len(),
                file_list(&d.files)
            )?;
            for c in &d.claims {
                writeln!(
                    out,
                    "<li>{} {} — <span class=\"muted\">{}</span></li>",
                    where_of(c.path.as_deref(), c.line),
                    text(&c.text),
                    text(&c.reason)
                )?;
            }
            out.push_str("</ul></details>\n");
        }
    }
    if !report.unparsed.is_empty() {
        out.push_str("<h3>Unreadable claims</h3>\n<table><thead><tr><th>Group</th><th>Agent</th><th>Where</th><th>Claim</th><th>Why not a finding</th></tr></thead><tbody>\n");
        for u in &report.unparsed {
            writeln!(
                out,
                "<tr><td class=\"mono\">{}</td><td>{}</td><td>{}</td><td class=\"text\">{}</td><td>{}</td></tr>",
                text(&u.group),
                text(&u.agent),
                where_of(u.path.as_deref(), u.line),
                text(&u.text),
                text(&u.reason)
            )?;
        }
        out.push_str("</tbody></table>\n");
    }
    for (title, list) in [
        (
            "Baseline entries void (their file changed and they match no finding now: fixed, or the flagged code changed)",
            &report.baseline_void,
        ),
        (
            "Baseline entries not checked (their file was not reviewed)",
            &report.baseline_not_checked,
        ),
        (
            "Baseline entries not found (fixed, or moved)",
            &report.baseline_not_found,
        ),
    ] {
        if list.is_empty() {
            continue;
        }
        writeln!(out, "<h3>{title}</h3>\n<ul>")?;
        for e in list {
            writeln!(
                out,
                "<li><span class=\"mono\">{}</span> {}{}{} <span class=\"muted mono\">{}</span></li>",
                text(&e.path),
                text(&e.title),
                e.rule
                    .as_ref()
                    .map(|r| format!(" [{}]", text(r)))
                    .unwrap_or_default(),
                e.reason
                    .as_ref()
                    .map(|r| format!(" — {}", text(r)))
                    .unwrap_or_default(),
                text(&e.fingerprint)
            )?;
        }
        out.push_str("</ul>\n");
    }
    out.push_str("</section>\n");
    Ok(())
}

fn where_of(path: Option<&str>, line: Option<u32>) -> String {
    match (path, line) {
        (Some(p), Some(l)) => format!("<span class=\"mono\">{}:{l}</span>", text(p)),
        (Some(p), None) => format!("<span class=\"mono\">{}</span>", text(p)),
        (None, Some(l)) => format!("<span class=\"mono\">line {l}</span>"),
        (None, None) => String::new(),
    }
}

fn run_details(out: &mut String, report: &Report) -> std::fmt::Result {
    out.push_str("<section id=\"details\">\n<h2>Run details</h2>\n");
    if let Some(brief) = &report.brief {
        let source = serde_json::to_value(&brief.source).unwrap_or(Value::Null);
        writeln!(
            out,
            "<h3>Repository brief</h3>\n<p class=\"muted\">{}</p>\n<p class=\"text\">{}</p>",
            text(&skip_fields(&source)),
            text(&brief.text)
        )?;
        if !brief.files_read.is_empty() {
            out.push_str("<details class=\"files\"><summary>Files the brief read</summary><ul>");
            for (path, hash) in &brief.files_read {
                write!(
                    out,
                    "<li><span class=\"mono\">{}</span> <span class=\"muted mono\">{}</span></li>",
                    text(path),
                    text(hash)
                )?;
            }
            out.push_str("</ul></details>\n");
        }
    }
    if let Some(diff) = &report.diff {
        out.push_str("<h3>The change</h3>\n");
        out.push_str(&value_html(
            &serde_json::to_value(diff).unwrap_or(Value::Null),
        ));
    }
    out.push_str("<h3>Manifest</h3>\n");
    out.push_str(&value_html(
        &serde_json::to_value(&report.manifest).unwrap_or(Value::Null),
    ));
    out.push_str("<h3>Spend by agent</h3>\n<table><thead><tr><th>Agent</th><th class=\"num\">input</th><th class=\"num\">cached</th><th class=\"num\">cache writes</th><th class=\"num\">output</th><th class=\"num\">cost</th></tr></thead><tbody>\n");
    for (name, a) in &report.stats.agents {
        writeln!(
            out,
            "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            text(name),
            a.usage.input_tokens,
            a.usage.cached_tokens,
            a.usage.cache_write_tokens,
            a.usage.output_tokens,
            a.cost_usd
                .map_or_else(|| "n/a".to_string(), |c| format!("${c:.4}"))
        )?;
    }
    out.push_str("</tbody></table>\n");
    if let Some(shard) = &report.shard {
        out.push_str("<h3>Shard</h3>\n");
        out.push_str(&value_html(
            &serde_json::to_value(shard).unwrap_or(Value::Null),
        ));
    }
    out.push_str("</section>\n");
    Ok(())
}

/// A JSON value as nested definition lists.
fn value_html(v: &Value) -> String {
    match v {
        Value::Object(map) if map.is_empty() => "<span class=\"muted\">—</span>".into(),
        Value::Object(map) => {
            let mut out = String::from("<dl class=\"kv\">");
            for (k, v) in map {
                out.push_str(&format!("<dt>{}</dt><dd>{}</dd>", text(k), value_html(v)));
            }
            out.push_str("</dl>");
            out
        }
        Value::Array(items) if items.is_empty() => "<span class=\"muted\">—</span>".into(),
        Value::Array(items) if items.iter().all(|i| !i.is_object() && !i.is_array()) => items
            .iter()
            .map(|i| format!("<span class=\"mono\">{}</span>", text(&scalar(i))))
            .collect::<Vec<_>>()
            .join(", "),
        Value::Array(items) => {
            let mut out = String::from("<ol>");
            for i in items {
                out.push_str(&format!("<li>{}</li>", value_html(i)));
            }
            out.push_str("</ol>");
            out
        }
        Value::Null => "<span class=\"muted\">—</span>".into(),
        other => format!("<span class=\"mono\">{}</span>", text(&scalar(other))),
    }
}

fn duration(ms: u64) -> String {
    match ms {
        0..1000 => format!("{ms} ms"),
        1000..60_000 => format!("{:.1} s", ms as f64 / 1000.0),
        _ => format!("{} min {} s", ms / 60_000, (ms % 60_000) / 1000),
    }
}

/// A bidirectional control or another invisible formatting character: a
/// title that holds one can read differently from what it is.
fn invisible(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200B}'..='\u{200F}' | '\u{061C}' | '\u{FEFF}')
}

/// Repository or model text as HTML content: markup escaped, control and
/// bidirectional characters shown as visible marks (`U+202E`).
pub(crate) fn text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\n' | '\t' => out.push(c),
            c if invisible(c) || (c.is_control() && c != '\r') => {
                out.push_str(&format!(
                    "<span class=\"ctl\">U+{:04X}</span>",
                    u32::from(c)
                ));
            }
            '\r' => {}
            c => out.push(c),
        }
    }
    out
}

/// Repository or model text as an attribute value (in double quotes).
pub(crate) fn attr(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if invisible(c) || c.is_control() => {
                out.push_str(&format!("U+{:04X}", u32::from(c)));
            }
            c => out.push(c),
        }
    }
    out
}

/// `sha256-…` of an inline script or style, as CSP wants it.
fn sha256_source(body: &str) -> String {
    format!("sha256-{}", base64(&Sha256::digest(body.as_bytes())))
}

/// Standard base64 with padding.
fn base64(bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ABC[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
#[path = "html_tests.rs"]
mod tests;
