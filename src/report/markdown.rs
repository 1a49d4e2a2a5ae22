//! Markdown rendering: summary first, then findings by severity with
//! `path:line`, then what failed verification, coverage and cost.

use std::fmt::Write as _;

use super::Report;
use crate::agents::AgentStatus;
use crate::model::findings::Severity;
use crate::stages::gate::{Outcome, Suppressed};
use crate::stages::reduce::Merged;
use crate::util::count;
use crate::util::git::{ChangeSet, Checkout};
use crate::util::human_count;

/// Renders `report` as Markdown.
pub(super) fn render(report: &Report) -> Result<String, std::fmt::Error> {
    let mut out = String::new();
    header(&mut out, report)?;
    gate(&mut out, report)?;
    summary(&mut out, report)?;
    findings(&mut out, report)?;
    since_last_run(&mut out, report)?;
    unverified(&mut out, report)?;
    refuted(&mut out, report)?;
    unstable(&mut out, report)?;
    leads(&mut out, report)?;
    unparsed(&mut out, report)?;
    doubtful(&mut out, report)?;
    contested(&mut out, report)?;
    suppressed_and_baselined(&mut out, report)?;
    coverage(&mut out, report)?;
    failed_groups(&mut out, report)?;
    blocked_groups(&mut out, report)?;
    fallback_groups(&mut out, report)?;
    cost(&mut out, report)?;
    brief(&mut out, report)?;
    notes(&mut out, report)?;
    Ok(out)
}

/// The title, the run in one sentence, the scanned checkout, and the incomplete-run,
/// doubtful-review and contested-review warnings.
fn header(out: &mut String, report: &Report) -> std::fmt::Result {
    writeln!(out, "# fanscan report: {}\n", report.root)?;
    writeln!(
        out,
        "Provider `{}`, model `{}`: {}. {}, {} reviewed, {}{}.\n",
        report.provider,
        report.model,
        report.engine,
        crate::util::count(report.groups.len(), "group"),
        crate::util::count(report.coverage.reviewed.len(), "file"),
        crate::util::count(report.findings.len(), "open verified finding"),
        match (report.suppressed.len(), report.baselined.len()) {
            (0, 0) => String::new(),
            (s, b) => format!(" (besides {s} suppressed and {b} baselined, listed below)"),
        }
    )?;
    if let Some(line) = checkout_line(report) {
        writeln!(out, "{line}\n")?;
    }
    if !report.complete {
        writeln!(
            out,
            "> **Incomplete run.** {}\n",
            report.incomplete_reasons.join(" ")
        )?;
    }
    if !report.doubtful.is_empty() {
        writeln!(
            out,
            "> **Doubtful reviews.** {} made claims and none was verified: {} not reviewed cleanly (see Doubtful reviews).\n",
            count(report.doubtful.len(), "group"),
            if report.doubtful.len() == 1 {
                "its files were"
            } else {
                "their files were"
            }
        )?;
    }
    if !report.contested.is_empty() {
        writeln!(
            out,
            "> **Contested reviews.** {} whose files address AI agents reported nothing else: the text may have steered the model (see Contested reviews).\n",
            count(report.contested.len(), "group"),
        )?;
    }
    Ok(())
}

/// The scanned tree in one line: `Commit 0123456789ab on main (uncommitted
/// changes: 1 modified file); origin https://…`, or `Not a git
/// repository.`; none for a report written before fanscan recorded it.
/// Branch names and URLs come from the repository: Markdown in them is
/// escaped.
fn checkout_line(report: &Report) -> Option<String> {
    let checkout = report.manifest.checkout.as_ref()?;
    let mut line = escape(&crate::util::capitalize(&checkout.describe()));
    if let Checkout::Git(g) = checkout
        && let Some(url) = &g.remote_url
    {
        line.push_str(&format!("; origin {}", escape(url)));
    }
    line.push('.');
    Some(line)
}

/// Backslash-escapes the characters that would make text Markdown.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(
            c,
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '#' | '|'
        ) {
            out.push('\\');
        }
        out.push(if c.is_control() { ' ' } else { c });
    }
    out
}

/// The reducer's summary, with a note when the gate took findings out of
/// what it covers.
fn summary(out: &mut String, report: &Report) -> std::fmt::Result {
    writeln!(out, "## Summary\n")?;
    if report.summary.trim().is_empty() {
        writeln!(out, "(no summary was written)\n")?;
    } else {
        writeln!(out, "{}\n", report.summary.trim())?;
        // The summary is made before the gate takes findings out: say so,
        // so that its counts and the gate's agree.
        let (suppressed, baselined) = (report.suppressed.len(), report.baselined.len());
        if suppressed + baselined > 0 {
            writeln!(
                out,
                "_The summary covers every finding the agents reported; {suppressed} of them are suppressed and {baselined} baselined (listed below), and are not gated on._\n"
            )?;
        }
    }
    Ok(())
}

/// The open verified findings, by severity.
fn findings(out: &mut String, report: &Report) -> std::fmt::Result {
    writeln!(out, "## Findings\n")?;
    if report.findings.is_empty() {
        writeln!(out, "No verified findings.\n")?;
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
        writeln!(
            out,
            "### {} ({})\n",
            title_case(severity.as_str()),
            of.len()
        )?;
        for m in of {
            finding(out, m)?;
        }
        out.push('\n');
    }
    Ok(())
}

/// Findings whose cited code could not be confirmed.
fn unverified(out: &mut String, report: &Report) -> std::fmt::Result {
    if !report.unverified.is_empty() {
        writeln!(
            out,
            "## Unverified ({}): not gated on\n\nThese cite code that could not be confirmed in the files.\n",
            report.unverified.len()
        )?;
        for m in &report.unverified {
            writeln!(
                out,
                "- {}{} `{}:{}`: {}",
                m.finding.title,
                m.finding
                    .cwe
                    .label()
                    .map(|c| format!(" {c}"))
                    .unwrap_or_default(),
                m.finding.path,
                m.finding.line,
                m.note.as_deref().unwrap_or("unverified")
            )?;
            skeptic_line(out, m)?;
        }
        out.push('\n');
    }
    Ok(())
}

/// Verified findings the skeptic refuted.
fn refuted(out: &mut String, report: &Report) -> std::fmt::Result {
    if !report.refuted.is_empty() {
        writeln!(
            out,
            "## Refuted by the skeptic ({}): not gated on

Verified findings the skeptic agent argued are not reachable by untrusted input, constant or made safe. Check its reason before you dismiss one.
",
            report.refuted.len()
        )?;
        for m in &report.refuted {
            let f = &m.finding;
            let rule = f
                .rule
                .as_deref()
                .map(|r| format!(" [{r}]"))
                .unwrap_or_default();
            writeln!(
                out,
                "- **{}**{rule} ({}) `{}:{}`",
                f.title,
                f.severity.as_str(),
                f.path,
                f.line
            )?;
            skeptic_line(out, m)?;
        }
        out.push('\n');
    }
    Ok(())
}

/// Findings seen in fewer samples than the quorum.
fn unstable(out: &mut String, report: &Report) -> std::fmt::Result {
    if report.unstable.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "## Unstable ({}): seen in fewer samples than the quorum, not gated on

Each group was audited in several independent samples; these findings recurred in too few of them to gate. Read them as leads, not verdicts.
",
        report.unstable.len()
    )?;
    for m in &report.unstable {
        finding(out, m)?;
    }
    out.push('\n');
    Ok(())
}

/// The leads put to the auditors: each rule's outcomes, the dismissed
/// ones with the model's reasons, and the results that named no file of
/// the scan.
fn leads(out: &mut String, report: &Report) -> std::fmt::Result {
    let Some(leads) = &report.leads else {
        return Ok(());
    };
    let (confirmed, dismissed, unanswered) = leads.totals();
    writeln!(
        out,
        "## Leads ({}): {confirmed} confirmed, {dismissed} dismissed, {unanswered} not answered
",
        confirmed + dismissed + unanswered
    )?;
    writeln!(
        out,
        "What a static analysis flagged, put to the auditors. A confirmed lead is a finding above; a dismissed one is listed below with the model's reason and does not gate; one not answered stays the analysis's finding.
"
    )?;
    if !leads.tally.is_empty() {
        writeln!(
            out,
            "| tool | rule | confirmed | dismissed | not answered |"
        )?;
        writeln!(out, "|---|---|---:|---:|---:|")?;
        for t in &leads.tally {
            writeln!(
                out,
                "| {} | `{}` | {} | {} | {} |",
                t.tool, t.rule, t.confirmed, t.dismissed, t.unanswered
            )?;
        }
        out.push('\n');
    }
    if !leads.dismissed.is_empty() {
        writeln!(out, "### Dismissed leads ({})\n", leads.dismissed.len())?;
        for r in &leads.dismissed {
            let l = &r.lead;
            writeln!(
                out,
                "- `{}:{}` [{}] ({}): {}",
                l.path,
                l.line,
                l.rule,
                l.tool,
                r.reason.as_deref().unwrap_or("(no reason)")
            )?;
        }
        out.push('\n');
    }
    if !leads.outside.is_empty() {
        writeln!(
            out,
            "### Leads not audited ({})\n",
            leads.outside.len() + leads.outside_more
        )?;
        for o in &leads.outside {
            writeln!(
                out,
                "- `{}` [{}] ({}): {}",
                o.location, o.rule, o.tool, o.why
            )?;
        }
        if leads.outside_more > 0 {
            writeln!(out, "- and {} more, not listed", leads.outside_more)?;
        }
        out.push('\n');
    }
    Ok(())
}

/// Claims that did not come as a readable finding.
fn unparsed(out: &mut String, report: &Report) -> std::fmt::Result {
    if !report.unparsed.is_empty() {
        writeln!(
            out,
            "## Claims that could not be read ({}): unverified, not gated on\n\nWhat agents said that did not come as a readable finding, kept with why.\n",
            report.unparsed.len()
        )?;
        for u in &report.unparsed {
            let place = match (&u.path, u.line) {
                (Some(p), Some(l)) => format!(" `{p}:{l}`"),
                (Some(p), None) => format!(" `{p}`"),
                _ => String::new(),
            };
            writeln!(
                out,
                "- group `{}`{place}: {} ({})",
                u.group,
                u.text.replace('\n', " "),
                u.reason
            )?;
        }
        out.push('\n');
    }
    Ok(())
}

/// What was reviewed, taken from the run store, skipped, failed or left
/// unread, after the diff scan's changes when there is one.
fn coverage(out: &mut String, report: &Report) -> std::fmt::Result {
    let c = &report.coverage;
    writeln!(out, "## Coverage\n")?;
    if let Some(d) = &report.diff {
        diff_scan(out, d)?;
    }
    writeln!(
        out,
        "- reviewed: {} files{}",
        c.reviewed.len(),
        if c.unread.is_empty() {
            String::new()
        } else {
            format!(" ({} never shown to their agent)", c.unread.len())
        }
    )?;
    if report.stats.cached_groups > 0 {
        writeln!(
            out,
            "- from the run store: {} of {} groups ({} resumed from an unfinished run); no model was asked for them",
            report.stats.cached_groups,
            report.groups.len(),
            report.stats.resumed_groups
        )?;
    }
    carried_files(out, c)?;
    writeln!(out, "- skipped: {} files", c.skipped.len())?;
    writeln!(out, "- failed: {} files\n", c.failed.len())?;
    for s in c.skipped.iter().take(50) {
        writeln!(out, "  - skipped `{}`: {}", s.path, s.reason)?;
    }
    if c.skipped.len() > 50 {
        writeln!(
            out,
            "  - ... and {} more skipped (see --format json)",
            c.skipped.len() - 50
        )?;
    }
    for f in c.failed.iter().take(50) {
        writeln!(
            out,
            "  - failed `{}` (group {}): {}",
            f.path, f.group, f.reason
        )?;
    }
    if c.failed.len() > 50 {
        writeln!(
            out,
            "  - ... and {} more failed (see --format json)",
            c.failed.len() - 50
        )?;
    }
    for u in c.unread.iter().take(50) {
        writeln!(
            out,
            "  - unread `{u}`: its agent finished without reading it"
        )?;
    }
    if !c.skipped.is_empty() || !c.failed.is_empty() || !c.unread.is_empty() {
        out.push('\n');
    }
    Ok(())
}

/// What a diff scan audited and what it left out.
fn diff_scan(out: &mut String, d: &ChangeSet) -> std::fmt::Result {
    writeln!(
        out,
        "Diff scan ({}): {} changed files, {} deleted, {} renamed; unchanged files were not audited.\n",
        d.source,
        d.changed.len(),
        d.deleted.len(),
        d.renamed.len()
    )?;
    for path in d.deleted.iter().take(50) {
        writeln!(out, "  - deleted `{path}`")?;
    }
    for (from, to) in d.renamed.iter().take(50) {
        writeln!(out, "  - renamed `{from}` to `{to}`")?;
    }
    if !d.deleted.is_empty() || !d.renamed.is_empty() {
        out.push('\n');
    }
    Ok(())
}

/// The groups that failed, with their error.
fn failed_groups(out: &mut String, report: &Report) -> std::fmt::Result {
    let failed: Vec<_> = report
        .groups
        .iter()
        .filter(|g| g.error.is_some() && g.status != AgentStatus::Blocked)
        .collect();
    if !failed.is_empty() {
        writeln!(out, "## Failed groups\n")?;
        for g in failed {
            writeln!(
                out,
                "- `{}` ({}): {}",
                g.id,
                g.status.as_str(),
                g.error.as_deref().unwrap_or_default()
            )?;
        }
        out.push('\n');
    }
    Ok(())
}

/// The groups the model refused, with the provider's words.
fn blocked_groups(out: &mut String, report: &Report) -> std::fmt::Result {
    let blocked: Vec<_> = report
        .groups
        .iter()
        .filter(|g| g.status == AgentStatus::Blocked)
        .collect();
    if blocked.is_empty() {
        return Ok(());
    }
    writeln!(out, "## Blocked groups\n")?;
    writeln!(
        out,
        "The model refused these groups, and refused again when the task was restated as a defensive review: their files were not reviewed.\n"
    )?;
    for g in blocked {
        writeln!(
            out,
            "- `{}` ({}, {}): {}",
            g.id,
            g.agent,
            count(g.files.len(), "file"),
            g.error.as_deref().unwrap_or("refused")
        )?;
    }
    out.push('\n');
    Ok(())
}

/// The groups the fallback model answered after the run's model refused
/// them.
fn fallback_groups(out: &mut String, report: &Report) -> std::fmt::Result {
    let answered: Vec<_> = report
        .groups
        .iter()
        .filter(|g| g.fallback.is_some() && g.status != AgentStatus::Blocked)
        .collect();
    if answered.is_empty() {
        return Ok(());
    }
    writeln!(out, "## Answered by the fallback model\n")?;
    writeln!(
        out,
        "The run's model refused these groups twice; the fallback model reviewed them.\n"
    )?;
    for g in answered {
        writeln!(
            out,
            "- `{}` ({}): {}, {}",
            g.id,
            g.fallback.as_deref().unwrap_or_default(),
            g.status.as_str(),
            count(g.files.len(), "file")
        )?;
    }
    out.push('\n');
    Ok(())
}

/// Requests, tokens, cost (in all and by agent) and duration.
fn cost(out: &mut String, report: &Report) -> std::fmt::Result {
    let s = &report.stats;
    writeln!(out, "## Cost\n")?;
    writeln!(
        out,
        "- requests: {} ({} retries, {} rate-limited)",
        s.requests, s.retries, s.rate_limited
    )?;
    writeln!(
        out,
        "- tokens: {} in ({} read from the prompt cache, {} written to it), {} out",
        human_count(s.input_tokens),
        human_count(s.cached_tokens),
        human_count(s.cache_write_tokens),
        human_count(s.output_tokens)
    )?;
    if let Some(e) = &s.token_estimate {
        let checked = match e.error {
            Some(error) => format!(
                "; the {} calls estimated after that were {:+.1}% off the server's counts",
                e.checked_calls,
                error * 100.0
            ),
            None => String::new(),
        };
        writeln!(
            out,
            "- token estimates: {}, calibrated on the server's counts ({} calls: {:.3} counted per estimated token, budgets weigh calls by it +5%, or by the 90th percentile of the calls' ratios when more{checked})",
            e.counted_with, e.calls, e.ratio
        )?;
    }
    if let Some(b) = &s.batch {
        batch(out, b)?;
    }
    match s.cost_usd {
        Some(cost) if s.batch.is_some() => {
            writeln!(
                out,
                "- cost: ${cost:.4} at the batch price (every request went through a batch)"
            )?;
        }
        Some(cost) => {
            writeln!(out, "- cost: ${cost:.4}")?;
        }
        None => {
            writeln!(out, "- cost: unknown (model not in the price table)")?;
        }
    }
    for (agent, a) in &s.agents {
        let cost = match a.cost_usd {
            Some(c) => format!("${c:.4}"),
            None => "cost unknown".to_string(),
        };
        writeln!(
            out,
            "  - {agent}: {} in ({} cached), {} out, {cost}",
            human_count(a.usage.input_tokens),
            human_count(a.usage.cached_tokens),
            human_count(a.usage.output_tokens)
        )?;
    }
    writeln!(
        out,
        "- duration: {:.1} s",
        report.duration_ms as f64 / 1000.0
    )?;
    Ok(())
}

/// `--batch`: the rounds, batches and what became of their requests.
fn batch(out: &mut String, b: &crate::llm::providers::batch::BatchStats) -> std::fmt::Result {
    writeln!(
        out,
        "- batches: {} requests in {} batches over {} rounds; {} answered, {} taken from the run store, {} sent again after their line failed, {} without an answer; {} batches of an earlier run polled instead of sent again; {} result lines unreadable or for no request sent",
        b.requests,
        b.batches,
        b.rounds,
        b.answered,
        b.from_store,
        b.resent,
        b.failed,
        b.picked_up,
        b.bad_lines
    )?;
    for o in &b.open {
        writeln!(
            out,
            "  - not ended when the run stopped waiting: batch `{}` (round {}): {}, {} of {} requests done; its id is in the run store for the next run",
            o.id, o.round, o.phase, o.done, o.total
        )?;
    }
    Ok(())
}

/// The repository brief every auditor was given.
fn brief(out: &mut String, report: &Report) -> std::fmt::Result {
    if let Some(brief) = &report.brief {
        writeln!(
            out,
            "\n## Repository brief\n\nGiven to every auditor, written by {}.\n",
            brief.source.describe()
        )?;
        for line in brief.text.lines() {
            writeln!(out, "{}", format!("> {line}").trim_end())?;
        }
    }
    Ok(())
}

/// The run's notes.
fn notes(out: &mut String, report: &Report) -> std::fmt::Result {
    if !report.notes.is_empty() {
        writeln!(out, "\n## Notes\n")?;
        for n in &report.notes {
            writeln!(out, "- {n}")?;
        }
    }
    Ok(())
}

/// The verdict, first thing a CI reader looks for.
fn gate(out: &mut String, report: &Report) -> std::fmt::Result {
    let g = &report.gate;
    let mark = match g.outcome {
        Outcome::Pass => "PASSED",
        Outcome::Fail => "FAILED",
        Outcome::Incomplete => "INCOMPLETE",
    };
    let rest = g
        .reason
        .split_once(": ")
        .map_or(g.reason.as_str(), |(_, r)| r);
    writeln!(
        out,
        "**Gate: {mark}** ({rest}; --fail-on {}{}{}). {} suppressed, {} baselined{}.\n",
        g.fail_on.as_str(),
        if g.gate_unverified {
            ", unverified findings count"
        } else {
            ""
        },
        if g.strict {
            ", --strict: doubtful reviews count as incomplete"
        } else {
            ""
        },
        report.suppressed.len(),
        report.baselined.len(),
        match report.expired.len() {
            0 => String::new(),
            n => format!(", {n} expired (gated again)"),
        }
    )?;
    Ok(())
}

/// Groups whose files address AI agents and whose agent reported nothing
/// else, with where the text is.
fn contested(out: &mut String, report: &Report) -> std::fmt::Result {
    if report.contested.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "## Contested reviews ({}): the files address AI agents, the model reported nothing else\n\nText in these files tells AI agents what to do, and the model reviewing them reported no finding of its own: it may have obeyed. Review the files by hand; the text itself is a finding above.\n",
        report.contested.len()
    )?;
    for c in &report.contested {
        let files: Vec<String> = c.files.iter().map(|f| format!("`{f}`")).collect();
        let at: Vec<String> = c.injections.iter().map(|i| format!("`{i}`")).collect();
        writeln!(
            out,
            "- group `{}` ({}), {}: text addressed to AI agents at {}",
            c.group,
            c.agent,
            files.join(", "),
            at.join(", ")
        )?;
    }
    out.push('\n');
    Ok(())
}

/// Groups whose agent made claims and none was verified, each with its
/// claims.
fn doubtful(out: &mut String, report: &Report) -> std::fmt::Result {
    if report.doubtful.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "## Doubtful reviews ({}): claims made, none verified\n\nThe model was shown these files and cited code that is not there, so that it reported nothing real says nothing about them. `--strict` makes such a run incomplete.\n",
        report.doubtful.len()
    )?;
    for d in &report.doubtful {
        let files: Vec<String> = d.files.iter().map(|f| format!("`{f}`")).collect();
        writeln!(
            out,
            "- group `{}` ({}), {}: {}",
            d.group,
            d.agent,
            files.join(", "),
            count(d.claims.len(), "claim")
        )?;
        for c in &d.claims {
            let place = match (&c.path, c.line) {
                (Some(p), Some(l)) => format!("`{p}:{l}` "),
                (Some(p), None) => format!("`{p}` "),
                _ => String::new(),
            };
            writeln!(
                out,
                "  - {place}{}: {}",
                c.text.replace('\n', " "),
                c.reason
            )?;
        }
    }
    out.push('\n');
    Ok(())
}

/// Findings kept out of the gate, with why: never dropped silently.
fn suppressed_and_baselined(out: &mut String, report: &Report) -> std::fmt::Result {
    let (by_change, earlier): (Vec<&Suppressed>, Vec<&Suppressed>) = report
        .suppressed
        .iter()
        .partition(|s| s.suppression.by_change);
    for (title, list) in [
        ("Suppressed by this change", by_change),
        ("Suppressed", earlier),
    ] {
        if list.is_empty() {
            continue;
        }
        writeln!(out, "## {title} ({}): not gated on\n", list.len())?;
        for x in list {
            let f = &x.finding.finding;
            let s = &x.suppression;
            writeln!(
                out,
                "- {} [{}] `{}:{}` ({}): {}{}",
                f.title,
                f.rule.as_deref().unwrap_or("-"),
                f.path,
                f.line,
                f.severity.as_str(),
                s.reason.as_deref().unwrap_or("(no reason given)"),
                if s.notes.is_empty() {
                    String::new()
                } else {
                    format!(" _{}_", s.notes.join("; "))
                }
            )?;
        }
        out.push('\n');
    }
    if !report.baselined.is_empty() {
        writeln!(
            out,
            "## Baselined ({}): not gated on\n",
            report.baselined.len()
        )?;
        for b in &report.baselined {
            let f = &b.finding.finding;
            writeln!(
                out,
                "- {} `{}:{}` ({}){}",
                f.title,
                f.path,
                f.line,
                f.severity.as_str(),
                b.reason
                    .as_deref()
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default()
            )?;
        }
        out.push('\n');
    }
    expired(out, report)?;
    if !report.baseline_void.is_empty() {
        writeln!(
            out,
            "Baseline entries void ({}): their files changed since the entries were written and they match no finding now, so they cover nothing: fixed, or the flagged code changed (its finding is then open above under a new fingerprint; accept it again with `fanscan baseline` if it still is acceptable). Drop or rewrite them.\n",
            report.baseline_void.len()
        )?;
        for e in report.baseline_void.iter().take(50) {
            writeln!(
                out,
                "  - {} `{}`{}",
                e.title,
                e.path,
                reason_suffix(e.reason.as_deref())
            )?;
        }
        out.push('\n');
    }
    if !report.baseline_not_checked.is_empty() {
        writeln!(
            out,
            "Baseline entries not checked ({}): their files were not reviewed in this run, so whether they remain is unknown.\n",
            report.baseline_not_checked.len()
        )?;
        for e in report.baseline_not_checked.iter().take(50) {
            writeln!(out, "  - {} `{}`", e.title, e.path)?;
        }
        out.push('\n');
    }
    if !report.baseline_not_found.is_empty() {
        writeln!(
            out,
            "Baseline entries no longer found ({}): their files were reviewed and no longer have them; drop them from the baseline.\n",
            report.baseline_not_found.len()
        )?;
        for e in report.baseline_not_found.iter().take(50) {
            writeln!(out, "  - {} `{}`", e.title, e.path)?;
        }
        out.push('\n');
    }
    Ok(())
}

/// Suppressions and baseline entries past their date: their findings are
/// open again (and listed with the open ones), here with why they were
/// accepted and until when.
fn expired(out: &mut String, report: &Report) -> std::fmt::Result {
    if report.expired.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "## Expired ({}): suppressions and baseline entries past their date, gated again\n",
        report.expired.len()
    )?;
    for x in &report.expired {
        let f = &x.finding.finding;
        writeln!(
            out,
            "- {} [{}] `{}:{}` ({}): {}",
            f.title,
            f.rule.as_deref().unwrap_or("-"),
            f.path,
            f.line,
            f.severity.as_str(),
            x.describe()
        )?;
    }
    out.push('\n');
    Ok(())
}

/// `: reason`, or `(no reason given)`.
fn reason_suffix(reason: Option<&str>) -> String {
    reason.map_or_else(|| " (no reason given)".to_string(), |r| format!(": {r}"))
}

/// New, fixed, unchanged and not-checked findings since the last
/// complete run in the store.
fn since_last_run(out: &mut String, report: &Report) -> std::fmt::Result {
    let Some(since) = &report.since_last_run else {
        if report.run_id.is_some() {
            writeln!(
                out,
                "## Since the last complete run

No earlier complete run in the store.
"
            )?;
        }
        return Ok(());
    };
    writeln!(
        out,
        "## Since the last complete run

Compared with run {} ({}): {} new, {} fixed, {} unchanged, {} not checked (their file was not reviewed this time).
",
        since
            .previous_run
            .map_or_else(|| "?".to_string(), |id| id.to_string()),
        since.previous_started_at,
        since.new.len(),
        since.fixed.len(),
        since.unchanged,
        since.not_checked.len()
    )?;
    if !since.by_severity.is_empty() {
        writeln!(
            out,
            "| severity | new | fixed | unchanged | not checked |\n|---|---|---|---|---|"
        )?;
        for severity in Severity::DESCENDING {
            if let Some(t) = since.by_severity.get(severity.as_str()) {
                writeln!(
                    out,
                    "| {} | {} | {} | {} | {} |",
                    severity.as_str(),
                    t.new,
                    t.fixed,
                    t.unchanged,
                    t.not_checked
                )?;
            }
        }
        out.push('\n');
    }
    for (label, list) in [("new", &since.new), ("fixed", &since.fixed)] {
        for f in list {
            writeln!(
                out,
                "- {label} [{}] {} `{}:{}`",
                f.severity.as_str(),
                f.title,
                f.path,
                f.line
            )?;
        }
    }
    if !since.new.is_empty() || !since.fixed.is_empty() {
        out.push('\n');
    }
    Ok(())
}

fn finding(out: &mut String, m: &Merged) -> std::fmt::Result {
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
    let cwe = f.cwe.label().map(|c| format!(" {c}")).unwrap_or_default();
    let seen = f
        .seen
        .map(|s| format!(" (seen in {} of {} samples)", s.k, s.n))
        .unwrap_or_default();
    writeln!(
        out,
        "- **{}**{rule}{cwe} `{}:{lines}`{seen}",
        f.title, f.path
    )?;
    if !f.detail.is_empty() {
        writeln!(out, "  {}", f.detail.replace('\n', "\n  "))?;
    }
    if let Some(e) = &f.evidence {
        writeln!(out, "  ```\n  {}\n  ```", e.replace('\n', "\n  "))?;
    }
    if let Some(note) = &m.note {
        writeln!(out, "  _{note}_")?;
    }
    if let Some(note) = &f.cwe.note {
        writeln!(out, "  _{note}_")?;
    }
    skeptic_line(out, m)?;
    Ok(())
}

/// What the skeptic said of a finding, with its confidence and flow.
fn skeptic_line(out: &mut String, m: &Merged) -> std::fmt::Result {
    if let Some(c) = &m.challenge {
        let located = if m.located { "located, " } else { "" };
        let flow = if c.flow.is_empty() {
            String::new()
        } else {
            format!(" Flow: {}.", c.flow.join(" → "))
        };
        writeln!(out, "  _Skeptic ({located}{}){flow}_", c.describe())?;
        for note in &c.notes {
            writeln!(out, "  _{note}_")?;
        }
    }
    Ok(())
}

fn title_case(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(first) => first.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// Which reviewed files this run audited and which it carried over from
/// the run store, by the run that audited them (nothing without any).
fn carried_files(out: &mut String, c: &crate::report::Coverage) -> std::fmt::Result {
    if c.carried.is_empty() {
        return Ok(());
    }
    let mut by_run: std::collections::BTreeMap<i64, usize> = std::collections::BTreeMap::new();
    for f in &c.carried {
        *by_run.entry(f.run).or_default() += 1;
    }
    let runs: Vec<String> = by_run
        .iter()
        .map(|(run, n)| format!("{n} from run {run}"))
        .collect();
    writeln!(
        out,
        "- audited in this run: {} files; carried over unchanged: {} files ({}), re-verified against today's text",
        c.reviewed.len().saturating_sub(c.carried.len()),
        c.carried.len(),
        runs.join(", ")
    )?;
    Ok(())
}
