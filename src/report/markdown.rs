//! Markdown rendering: summary first, then findings by severity with
//! `path:line`, then what failed verification, coverage and cost.

use std::fmt::Write as _;

use super::Report;
use crate::findings::Severity;
use crate::reduce::Merged;
use crate::util::human_count;

/// Renders `report` as Markdown.
pub(super) fn render(report: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# fanscan report: {}\n", report.root);
    let _ = writeln!(
        out,
        "Provider `{}`, model `{}`: {}. {} groups, {} files reviewed, {} verified findings.\n",
        report.provider,
        report.model,
        report.engine,
        report.groups.len(),
        report.coverage.reviewed.len(),
        report.findings.len()
    );
    if !report.complete {
        let _ = writeln!(
            out,
            "> **Incomplete run.** {}\n",
            report.incomplete_reasons.join(" ")
        );
    }
    let _ = writeln!(out, "## Summary\n");
    if report.summary.trim().is_empty() {
        let _ = writeln!(out, "(no summary was written)\n");
    } else {
        let _ = writeln!(out, "{}\n", report.summary.trim());
    }

    let _ = writeln!(out, "## Findings\n");
    if report.findings.is_empty() {
        let _ = writeln!(out, "No verified findings.\n");
    }
    for severity in Severity::DESCENDING {
        let of: Vec<&Merged> = report
            .findings
            .iter()
            .filter(|m| m.finding.severity == severity)
            .collect();
        if of.is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "### {} ({})\n",
            title_case(severity.as_str()),
            of.len()
        );
        for m in of {
            finding(&mut out, m);
        }
        out.push('\n');
    }

    if !report.unverified.is_empty() {
        let _ = writeln!(
            out,
            "## Unverified ({}): not gated on\n\nThese cite code that could not be confirmed in the files.\n",
            report.unverified.len()
        );
        for m in &report.unverified {
            let _ = writeln!(
                out,
                "- {} `{}:{}`: {}",
                m.finding.title,
                m.finding.path,
                m.finding.line,
                m.note.as_deref().unwrap_or("unverified")
            );
        }
        out.push('\n');
    }

    if !report.unparsed.is_empty() {
        let _ = writeln!(
            out,
            "## Claims that could not be read ({}): unverified, not gated on\n\nWhat agents said that did not come as a readable finding, kept with why.\n",
            report.unparsed.len()
        );
        for u in &report.unparsed {
            let place = match (&u.path, u.line) {
                (Some(p), Some(l)) => format!(" `{p}:{l}`"),
                (Some(p), None) => format!(" `{p}`"),
                _ => String::new(),
            };
            let _ = writeln!(
                out,
                "- group `{}`{place}: {} ({})",
                u.group,
                u.text.replace('\n', " "),
                u.reason
            );
        }
        out.push('\n');
    }

    let c = &report.coverage;
    let _ = writeln!(out, "## Coverage\n");
    let _ = writeln!(
        out,
        "- reviewed: {} files{}",
        c.reviewed.len(),
        if c.unread.is_empty() {
            String::new()
        } else {
            format!(" ({} never shown to their agent)", c.unread.len())
        }
    );
    let _ = writeln!(out, "- skipped: {} files", c.skipped.len());
    let _ = writeln!(out, "- failed: {} files\n", c.failed.len());
    for s in c.skipped.iter().take(50) {
        let _ = writeln!(out, "  - skipped `{}`: {}", s.path, s.reason);
    }
    if c.skipped.len() > 50 {
        let _ = writeln!(
            out,
            "  - ... and {} more skipped (see --format json)",
            c.skipped.len() - 50
        );
    }
    for f in c.failed.iter().take(50) {
        let _ = writeln!(
            out,
            "  - failed `{}` (group {}): {}",
            f.path, f.group, f.reason
        );
    }
    if c.failed.len() > 50 {
        let _ = writeln!(
            out,
            "  - ... and {} more failed (see --format json)",
            c.failed.len() - 50
        );
    }
    for u in c.unread.iter().take(50) {
        let _ = writeln!(
            out,
            "  - unread `{u}`: its agent finished without reading it"
        );
    }
    if !c.skipped.is_empty() || !c.failed.is_empty() || !c.unread.is_empty() {
        out.push('\n');
    }

    let failed: Vec<_> = report.groups.iter().filter(|g| g.error.is_some()).collect();
    if !failed.is_empty() {
        let _ = writeln!(out, "## Failed groups\n");
        for g in failed {
            let _ = writeln!(
                out,
                "- `{}` ({}): {}",
                g.id,
                g.status.as_str(),
                g.error.as_deref().unwrap_or_default()
            );
        }
        out.push('\n');
    }

    let s = &report.stats;
    let _ = writeln!(out, "## Cost\n");
    let _ = writeln!(
        out,
        "- requests: {} ({} retries, {} rate-limited)",
        s.requests, s.retries, s.rate_limited
    );
    let _ = writeln!(
        out,
        "- tokens: {} in ({} read from the prompt cache, {} written to it), {} out",
        human_count(s.input_tokens),
        human_count(s.cached_tokens),
        human_count(s.cache_write_tokens),
        human_count(s.output_tokens)
    );
    match s.cost_usd {
        Some(cost) => {
            let _ = writeln!(out, "- cost: ${cost:.4}");
        }
        None => {
            let _ = writeln!(out, "- cost: unknown (model not in the price table)");
        }
    }
    for (agent, a) in &s.agents {
        let cost = match a.cost_usd {
            Some(c) => format!("${c:.4}"),
            None => "cost unknown".to_string(),
        };
        let _ = writeln!(
            out,
            "  - {agent}: {} in ({} cached), {} out, {cost}",
            human_count(a.usage.input_tokens),
            human_count(a.usage.cached_tokens),
            human_count(a.usage.output_tokens)
        );
    }
    let _ = writeln!(
        out,
        "- duration: {:.1} s",
        report.duration_ms as f64 / 1000.0
    );
    if !report.notes.is_empty() {
        let _ = writeln!(out, "\n## Notes\n");
        for n in &report.notes {
            let _ = writeln!(out, "- {n}");
        }
    }
    out
}

fn finding(out: &mut String, m: &Merged) {
    let f = &m.finding;
    let lines = match f.end_line {
        Some(end) if end != f.line => format!("{}-{end}", f.line),
        _ => f.line.to_string(),
    };
    let rule = f
        .rule
        .as_deref()
        .map(|r| format!(" [{r}]"))
        .unwrap_or_default();
    let _ = writeln!(out, "- **{}**{rule} `{}:{lines}`", f.title, f.path);
    if !f.detail.is_empty() {
        let _ = writeln!(out, "  {}", f.detail.replace('\n', "\n  "));
    }
    if let Some(e) = &f.evidence {
        let _ = writeln!(out, "  ```\n  {}\n  ```", e.replace('\n', "\n  "));
    }
    if let Some(note) = &m.note {
        let _ = writeln!(out, "  _{note}_");
    }
}

fn title_case(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(first) => first.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}
