//! GitHub Actions workflow commands: pull-request annotations, a pure
//! function of the [`Report`].
//!
//! Takes the report; gives one line per verified finding,
//! `::error file=PATH,line=N,endLine=M,title=TITLE::MESSAGE` (`error` for
//! critical/high, `warning` for medium, `notice` for low/info), then closing
//! lines about the run itself: `::error` when it is incomplete (naming why),
//! `::warning` for files no agent was shown, `::warning` for each doubtful
//! review (a group that made claims and none verified, with its claims),
//! `::notice` for findings that failed verification (never annotated: they
//! are not gated on), and `::warning` when the scanned tree had uncommitted
//! changes (the annotations point at lines of files that are not the
//! commit's; a clean checkout, the usual CI case, adds no line).
//!
//! Titles and messages come from the scanned repository and from models,
//! so everything is escaped as the workflow-command syntax requires: a raw
//! newline would let a finding start a command of its own.

use super::Report;
use super::sarif::rule_id;
use crate::agents::AgentStatus;
use crate::model::findings::Severity;
use crate::util::count;
use crate::util::git::Checkout;

/// Renders `report` as workflow commands, one per line.
pub(crate) fn render(report: &Report) -> String {
    let mut out = String::new();
    findings(&mut out, report);
    refuted(&mut out, report);
    dismissed_leads(&mut out, report);
    unstable(&mut out, report);
    suppressed_by_change(&mut out, report);
    gate_failed(&mut out, report);
    incomplete(&mut out, report);
    blocked(&mut out, report);
    doubtful(&mut out, report);
    contested(&mut out, report);
    unread(&mut out, report);
    unverified(&mut out, report);
    uncommitted(&mut out, report);
    out
}

/// One annotation per open verified finding, at its severity's level.
fn findings(out: &mut String, report: &Report) {
    for m in &report.findings {
        let f = &m.finding;
        let command = match f.severity {
            Severity::Critical | Severity::High => "error",
            Severity::Medium => "warning",
            Severity::Low | Severity::Info => "notice",
        };
        let mut properties = vec![("file", f.path.clone()), ("line", f.line.to_string())];
        if let Some(end) = f.end_line.filter(|end| *end > f.line) {
            properties.push(("endLine", end.to_string()));
        }
        let cwe = f.cwe.id.map(|id| format!(" {id}")).unwrap_or_default();
        properties.push(("title", format!("{} [{}]{cwe}", f.title, rule_id(f))));
        let mut message = if f.detail.trim().is_empty() {
            f.title.clone()
        } else {
            f.detail.clone()
        };
        if let Some(note) = &m.note {
            message.push_str(&format!("\n({note})"));
        }
        if let Some(c) = &m.challenge {
            message.push_str(&format!("\n(skeptic: {})", c.describe()));
        }
        if let Some(seen) = m.finding.seen {
            message.push_str(&format!("\n(seen in {} of {} samples)", seen.k, seen.n));
        }
        line(out, command, &properties, &message);
    }
}

/// A notice per finding the skeptic refuted.
fn refuted(out: &mut String, report: &Report) {
    for m in &report.refuted {
        let f = &m.finding;
        line(
            out,
            "notice",
            &[
                ("file", f.path.clone()),
                ("line", f.line.to_string()),
                (
                    "title",
                    format!("refuted by the skeptic: {} [{}]", f.title, rule_id(f)),
                ),
            ],
            &m.challenge.as_ref().map_or_else(
                || "refuted by the skeptic; not gated on".to_string(),
                |c| format!("{}; not gated on", c.describe()),
            ),
        );
    }
}

/// A notice per finding seen in fewer samples than the quorum.
fn unstable(out: &mut String, report: &Report) {
    for m in &report.unstable {
        let f = &m.finding;
        let seen = f
            .seen
            .map(|s| format!("seen in {} of {} samples", s.k, s.n))
            .unwrap_or_else(|| "seen in too few samples".into());
        line(
            out,
            "notice",
            &[
                ("file", f.path.clone()),
                ("line", f.line.to_string()),
                ("title", format!("unstable: {} [{}]", f.title, rule_id(f))),
            ],
            &format!("{seen}, fewer than the quorum; not gated on"),
        );
    }
}

/// A notice per lead an auditor dismissed, with its reason.
fn dismissed_leads(out: &mut String, report: &Report) {
    for r in report.leads.iter().flat_map(|l| &l.dismissed) {
        let l = &r.lead;
        line(
            out,
            "notice",
            &[
                ("file", l.path.clone()),
                ("line", l.line.to_string()),
                (
                    "title",
                    format!("lead dismissed: {} [{}] ({})", l.title, l.rule, l.tool),
                ),
            ],
            &format!(
                "{}; not gated on",
                r.reason.as_deref().unwrap_or("dismissed by the auditor")
            ),
        );
    }
}

/// A notice per finding that a `fanscan:ignore` comment added by this
/// change suppresses.
fn suppressed_by_change(out: &mut String, report: &Report) {
    for x in report.suppressed.iter().filter(|x| x.suppression.by_change) {
        let f = &x.finding.finding;
        line(
            out,
            "notice",
            &[
                ("file", f.path.clone()),
                ("line", f.line.to_string()),
                (
                    "title",
                    format!("suppressed by this change: {} [{}]", f.title, rule_id(f)),
                ),
            ],
            &format!(
                "This change adds a fanscan:ignore comment (line {}) that suppresses a {} finding: {}",
                x.suppression.line,
                f.severity.as_str(),
                x.suppression.reason.as_deref().unwrap_or("no reason given")
            ),
        );
    }
}

/// An error when the gate failed.
fn gate_failed(out: &mut String, report: &Report) {
    if report.gate.outcome == crate::stages::gate::Outcome::Fail {
        line(
            out,
            "error",
            &[("title", "fanscan: gate failed".into())],
            &format!(
                "{} (--fail-on {}); {} suppressed, {} baselined{}.",
                report.gate.reason,
                report.gate.fail_on.as_str(),
                report.suppressed.len(),
                report.baselined.len(),
                match report.expired.len() {
                    0 => String::new(),
                    n => format!(", {n} expired (gated again)"),
                }
            ),
        );
    }
}

/// An error naming why the run is incomplete.
fn incomplete(out: &mut String, report: &Report) {
    if !report.complete {
        let mut why = report.incomplete_reasons.join(" ");
        let failed = &report.coverage.failed;
        if !failed.is_empty() {
            let mut groups: Vec<&str> = Vec::new();
            for f in failed {
                if !groups.contains(&f.group.as_str()) {
                    groups.push(&f.group);
                }
            }
            why.push_str(&format!(
                "{}{} not audited (groups {}).",
                if why.is_empty() { "" } else { " " },
                count(failed.len(), "file"),
                groups.join(", ")
            ));
        }
        if why.is_empty() {
            why = "not every planned group ran to the end.".into();
        }
        line(
            out,
            "error",
            &[("title", "fanscan: incomplete run".into())],
            &why,
        );
    }
}

/// An error per group the model refused, with the provider's words.
fn blocked(out: &mut String, report: &Report) {
    for g in report
        .groups
        .iter()
        .filter(|g| g.status == AgentStatus::Blocked)
    {
        line(
            out,
            "error",
            &[("title", "fanscan: blocked group".into())],
            &format!(
                "Group {} ({} not reviewed): {}",
                g.id,
                count(g.files.len(), "file"),
                g.error.as_deref().unwrap_or("the model refused")
            ),
        );
    }
}

/// A warning per doubtful review, with its claims.
fn doubtful(out: &mut String, report: &Report) {
    for d in &report.doubtful {
        let claims: Vec<String> = d
            .claims
            .iter()
            .map(|c| match (&c.path, c.line) {
                (Some(p), Some(l)) => format!("{p}:{l} {} ({})", c.text, c.reason),
                (Some(p), None) => format!("{p} {} ({})", c.text, c.reason),
                _ => format!("{} ({})", c.text, c.reason),
            })
            .collect();
        line(
            out,
            "warning",
            &[("title", "fanscan: doubtful review".into())],
            &format!(
                "Group {} ({}) made {} and none was verified, so its files were not reviewed cleanly: {}. Claims: {}",
                d.group,
                d.agent,
                count(d.claims.len(), "claim"),
                first_ten(d.files.iter().map(String::as_str)),
                claims.join("; ")
            ),
        );
    }
}

/// A warning for each contested review: files that address AI agents, a
/// model that reported nothing else.
fn contested(out: &mut String, report: &Report) {
    for c in &report.contested {
        line(
            out,
            "warning",
            &[("title", "fanscan: contested review".into())],
            &format!(
                "The files of group {} ({}) address AI agents ({}) and its agent reported nothing else: it may have obeyed. Review by hand: {}",
                c.group,
                c.agent,
                c.injections.join(", "),
                first_ten(c.files.iter().map(String::as_str))
            ),
        );
    }
}

/// A warning for the reviewed files no agent was shown.
fn unread(out: &mut String, report: &Report) {
    let unread = &report.coverage.unread;
    if !unread.is_empty() {
        line(
            out,
            "warning",
            &[("title", "fanscan: files not read".into())],
            &format!(
                "{} never shown to their agent: {}",
                count(unread.len(), "reviewed file"),
                first_ten(unread.iter().map(String::as_str))
            ),
        );
    }
}

/// A notice for the findings that failed verification.
fn unverified(out: &mut String, report: &Report) {
    if !report.unverified.is_empty() {
        line(
            out,
            "notice",
            &[("title", "fanscan: unverified findings".into())],
            &format!(
                "{} failed verification and {} not gated on: {}",
                count(report.unverified.len(), "finding"),
                if report.unverified.len() == 1 {
                    "is"
                } else {
                    "are"
                },
                first_ten(report.unverified.iter().map(|m| m.finding.title.as_str()))
            ),
        );
    }
}

/// A warning when the scanned tree was not its commit: the annotations'
/// lines are those of the files as they were, which a reader of the
/// commit may not find.
fn uncommitted(out: &mut String, report: &Report) {
    if let Some(checkout @ Checkout::Git(g)) = &report.manifest.checkout
        && g.dirty()
    {
        line(
            out,
            "warning",
            &[("title", "fanscan: uncommitted changes".into())],
            &format!(
                "Scanned {}: findings may point at lines that are not in the commit.",
                checkout.describe()
            ),
        );
    }
}

/// Appends `::command k=v,k=v::message`.
fn line(out: &mut String, command: &str, properties: &[(&str, String)], message: &str) {
    out.push_str("::");
    out.push_str(command);
    for (i, (key, value)) in properties.iter().enumerate() {
        out.push(if i == 0 { ' ' } else { ',' });
        out.push_str(key);
        out.push('=');
        out.push_str(&escape_property(value));
    }
    out.push_str("::");
    out.push_str(&escape_data(message));
    out.push('\n');
}

/// Escapes a command's message: `%`, `\r`, `\n`.
fn escape_data(text: &str) -> String {
    escape(text, false)
}

/// Escapes a property value: as a message, plus `:` and `,`.
fn escape_property(text: &str) -> String {
    escape(text, true)
}

fn escape(text: &str, property: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '%' => out.push_str("%25"),
            '\r' => out.push_str("%0D"),
            '\n' => out.push_str("%0A"),
            ':' if property => out.push_str("%3A"),
            ',' if property => out.push_str("%2C"),
            _ => out.push(c),
        }
    }
    out
}

fn first_ten<'a>(items: impl ExactSizeIterator<Item = &'a str>) -> String {
    let total = items.len();
    let shown: Vec<&str> = items.take(10).collect();
    if total > 10 {
        format!("{} and {} more", shown.join(", "), total - 10)
    } else {
        shown.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::FailedFile;
    use crate::report::sarif::tests::{merged, report};

    #[test]
    fn one_line_per_verified_finding_with_the_level_of_its_severity() {
        let mut high = merged("src/a.rs", 3, Severity::High, Some("r/h"), "High one");
        high.finding.end_line = Some(5);
        let r = report(vec![
            high,
            merged("src/b.rs", 1, Severity::Medium, Some("r/m"), "Medium one"),
            merged("src/c.rs", 2, Severity::Info, None, "Info one"),
        ]);
        assert_eq!(
            render(&r),
            "::error file=src/a.rs,line=3,endLine=5,title=High one [r/h]::why and how to fix\n\
             ::warning file=src/b.rs,line=1,title=Medium one [r/m]::why and how to fix\n\
             ::notice file=src/c.rs,line=2,title=Info one [fanscan/info-one]::why and how to fix\n"
        );
    }

    #[test]
    fn titles_and_messages_are_escaped_as_workflow_commands_require() {
        let mut m = merged("dir,x/a:b%.rs", 7, Severity::Critical, Some("r"), "a,b:c%");
        m.finding.detail = "first line\r\nsecond: 100%, done\n::add-mask::x".into();
        let text = render(&report(vec![m]));
        assert_eq!(
            text,
            "::error file=dir%2Cx/a%3Ab%25.rs,line=7,title=a%2Cb%3Ac%25 [r]::\
             first line%0D%0Asecond: 100%25, done%0A::add-mask::x\n"
        );
        assert_eq!(text.lines().count(), 1, "no finding can start a command");
    }

    #[test]
    fn an_incomplete_run_closes_with_an_error_naming_why() {
        let mut r = report(vec![]);
        r.complete = false;
        r.incomplete_reasons = vec!["interrupted.".into(), "2 groups failed.".into()];
        r.coverage.failed = ["g1", "g1", "g2"]
            .iter()
            .enumerate()
            .map(|(i, g)| FailedFile {
                path: format!("f{i}.rs"),
                group: (*g).into(),
                reason: "HTTP 500".into(),
            })
            .collect();
        r.coverage.unread = vec!["u.rs".into()];
        let mut unverified = merged("a.rs", 40, Severity::High, None, "ghost");
        unverified.verified = false;
        r.unverified = vec![unverified];
        assert_eq!(
            render(&r),
            "::error title=fanscan%3A incomplete run::interrupted. 2 groups failed. 3 files not audited (groups g1, g2).\n\
             ::warning title=fanscan%3A files not read::1 reviewed file never shown to their agent: u.rs\n\
             ::notice title=fanscan%3A unverified findings::1 finding failed verification and is not gated on: ghost\n"
        );
        assert_eq!(render(&report(vec![])), "");
    }
}
