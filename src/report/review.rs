//! Review comments where the change is: the payload of GitHub's "create a
//! review for a pull request" endpoint (`--format github-review`) and of
//! GitLab's merge-request discussions (`--format gitlab-discussions`).
//!
//! Takes the report and the change's [`ReviewDiff`] (commits and hunks
//! from `git diff --unified=3 BASE...HEAD`); gives JSON. A comment goes
//! only on lines inside a hunk (GitHub rejects the whole review with 422
//! for one line outside); the other open findings, and those past the
//! comment limit, are listed in the review's body, so nothing is lost and
//! the review is never refused. Every string from the repository or a
//! model is escaped for Markdown and HTML (no markup, no @-mentions).

use serde::Serialize;

use crate::model::findings::Severity;
use crate::stages::gate::Outcome;
use crate::stages::reduce::Merged;
use crate::util::git::ReviewDiff;

use super::Report;

/// Comments of one review by default: more are noise to reviewers.
pub(crate) const DEFAULT_MAX_COMMENTS: usize = 25;

/// Where a comment goes: repository path and new-side lines.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Anchor {
    path: String,
    /// First line, when the comment covers a range.
    start_line: Option<u32>,
    line: u32,
}

/// The open findings split by where they go.
struct Selection<'a> {
    commented: Vec<(&'a Merged, Anchor)>,
    /// In no hunk of the diff.
    outside: Vec<&'a Merged>,
    /// In a hunk, past the limit.
    over: Vec<&'a Merged>,
}

/// The open findings, most severe first (then by path, line and
/// fingerprint), the first `max` inside a hunk as comments.
fn select<'a>(report: &'a Report, diff: &ReviewDiff, max: usize) -> Selection<'a> {
    let mut open: Vec<&Merged> = report.findings.iter().collect();
    open.sort_by(|a, b| {
        (
            b.finding.severity,
            &a.finding.path,
            a.finding.line,
            &a.fingerprint,
        )
            .cmp(&(
                a.finding.severity,
                &b.finding.path,
                b.finding.line,
                &b.fingerprint,
            ))
    });
    let mut out = Selection {
        commented: Vec::new(),
        outside: Vec::new(),
        over: Vec::new(),
    };
    for m in open {
        let path = format!("{}{}", diff.prefix, m.finding.path);
        let start = m.finding.line;
        let end = m.finding.end_line.unwrap_or(start).max(start);
        let anchor = if diff.hunks.hunk_of(&path, start, end).is_some() {
            Some(Anchor {
                path,
                start_line: (end > start).then_some(start),
                line: end,
            })
        } else if diff.hunks.hunk_of(&path, start, start).is_some() {
            // The range leaves the hunk: the first line still can be shown.
            Some(Anchor {
                path,
                start_line: None,
                line: start,
            })
        } else {
            None
        };
        match anchor {
            Some(_) if out.commented.len() >= max => out.over.push(m),
            Some(anchor) => out.commented.push((m, anchor)),
            None => out.outside.push(m),
        }
    }
    out
}

/// GitHub's create-review request body.
#[derive(Debug, Serialize)]
struct GithubReview {
    commit_id: String,
    event: &'static str,
    body: String,
    comments: Vec<GithubComment>,
}

#[derive(Debug, Serialize)]
struct GithubComment {
    path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    start_line: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    start_side: Option<&'static str>,
    line: u32,
    side: &'static str,
    body: String,
}

/// `--format github-review`: the JSON for `POST
/// /repos/{owner}/{repo}/pulls/{number}/reviews`.
pub(crate) fn github(
    report: &Report,
    diff: &ReviewDiff,
    max: usize,
) -> Result<String, serde_json::Error> {
    let selection = select(report, diff, max);
    let review = GithubReview {
        commit_id: diff.head_sha.clone(),
        event: match report.gate.outcome {
            Outcome::Fail => "REQUEST_CHANGES",
            Outcome::Pass | Outcome::Incomplete => "COMMENT",
        },
        body: summary(report, diff, &selection, max),
        comments: selection
            .commented
            .iter()
            .map(|(m, a)| GithubComment {
                path: a.path.clone(),
                start_line: a.start_line,
                start_side: a.start_line.map(|_| "RIGHT"),
                line: a.line,
                side: "RIGHT",
                body: comment(m, report),
            })
            .collect(),
    };
    let mut text = serde_json::to_string_pretty(&review)?;
    text.push('\n');
    Ok(text)
}

/// GitLab's discussions on a merge request: the summary note and one
/// discussion per comment, each the body of `POST
/// /projects/:id/merge_requests/:iid/discussions`.
#[derive(Debug, Serialize)]
struct GitlabDiscussions {
    body: String,
    discussions: Vec<GitlabDiscussion>,
}

#[derive(Debug, Serialize)]
struct GitlabDiscussion {
    body: String,
    position: GitlabPosition,
}

#[derive(Debug, Serialize)]
struct GitlabPosition {
    position_type: &'static str,
    base_sha: String,
    start_sha: String,
    head_sha: String,
    old_path: String,
    new_path: String,
    new_line: u32,
    /// Set for a context line (GitLab wants both sides of an unchanged
    /// line), absent for an added one.
    #[serde(skip_serializing_if = "Option::is_none")]
    old_line: Option<u32>,
}

/// `--format gitlab-discussions`: the summary and the discussions on the
/// changed lines.
pub(crate) fn gitlab(
    report: &Report,
    diff: &ReviewDiff,
    max: usize,
) -> Result<String, serde_json::Error> {
    let selection = select(report, diff, max);
    let payload = GitlabDiscussions {
        body: summary(report, diff, &selection, max),
        discussions: selection
            .commented
            .iter()
            .map(|(m, a)| {
                let file = diff.hunks.files.get(&a.path);
                GitlabDiscussion {
                    body: comment(m, report),
                    position: GitlabPosition {
                        position_type: "text",
                        base_sha: diff.merge_base_sha.clone(),
                        start_sha: diff.base_sha.clone(),
                        head_sha: diff.head_sha.clone(),
                        old_path: file.map_or_else(|| a.path.clone(), |f| f.old_path.clone()),
                        new_path: a.path.clone(),
                        new_line: a.line,
                        old_line: file.and_then(|f| f.lines.get(&a.line).copied().flatten()),
                    },
                }
            })
            .collect(),
    };
    let mut text = serde_json::to_string_pretty(&payload)?;
    text.push('\n');
    Ok(text)
}

/// One comment: severity, CWE, title, detail, what held it until its
/// date passed, and the fingerprint (also as a hidden marker, for
/// de-duplication by a later run).
fn comment(m: &Merged, report: &Report) -> String {
    let f = &m.finding;
    let cwe = match (&f.cwe.id, &f.cwe.name) {
        (Some(id), Some(name)) => format!(" · {id} {}", inline(name)),
        (Some(id), None) => format!(" · {id}"),
        (None, _) => String::new(),
    };
    let mut out = format!(
        "**{}**{cwe} · {}\n",
        f.severity.as_str().to_uppercase(),
        inline(&f.title)
    );
    if !f.detail.trim().is_empty() {
        out.push('\n');
        out.push_str(&block(&f.detail));
        out.push('\n');
    }
    for x in report
        .expired
        .iter()
        .filter(|x| x.finding.fingerprint == m.fingerprint)
    {
        out.push_str(&format!("\nExpired: {}\n", inline(&x.describe())));
    }
    out.push_str(&format!(
        "\n<sub>fanscan · fingerprint {}</sub>\n<!-- fanscan:fingerprint={} -->",
        inline(&m.fingerprint),
        marker(&m.fingerprint)
    ));
    out
}

/// The review's body: the verdict, the counts, and every open finding
/// that is not a comment.
fn summary(report: &Report, diff: &ReviewDiff, s: &Selection<'_>, max: usize) -> String {
    let mut out = format!("### fanscan: {}\n\n", inline(&report.gate.reason));
    if !report.complete {
        out.push_str(&format!(
            "**Incomplete run:** {}\n\n",
            inline(&report.incomplete_reasons.join(" "))
        ));
    }
    let counts: Vec<String> = Severity::DESCENDING
        .iter()
        .map(|sev| {
            let n = report
                .findings
                .iter()
                .filter(|m| m.finding.severity == *sev)
                .count();
            format!("{n} {}", sev.as_str())
        })
        .collect();
    out.push_str(&format!(
        "Open findings: {} (changes since {}).\n",
        counts.join(", "),
        inline(&diff.base_ref)
    ));
    out.push_str(&format!(
        "{} on the changed lines (at most {max}); {} outside the diff; {} unverified, {} suppressed, {} baselined, {} refuted{}.\n",
        match s.commented.len() {
            1 => "1 comment".to_string(),
            n => format!("{n} comments"),
        },
        s.outside.len(),
        report.unverified.len(),
        report.suppressed.len(),
        report.baselined.len(),
        report.refuted.len(),
        match report.expired.len() {
            0 => String::new(),
            n => format!("; {n} expired (open again)"),
        }
    ));
    for (title, list) in [
        ("Outside the diff's hunks", &s.outside),
        ("On changed lines, past the comment limit", &s.over),
    ] {
        if list.is_empty() {
            continue;
        }
        out.push_str(&format!("\n#### {title}\n\n"));
        for m in list.iter() {
            let f = &m.finding;
            let cwe = f.cwe.id.map(|id| format!(" ({id})")).unwrap_or_default();
            out.push_str(&format!(
                "- **{}**{cwe} {}{}:{} {} · {}\n",
                f.severity.as_str(),
                inline(&diff.prefix),
                inline(&f.path),
                f.line,
                inline(&f.title),
                inline(&m.fingerprint)
            ));
        }
    }
    let checkout = report
        .manifest
        .checkout
        .as_ref()
        .map(|c| format!(" · {}", inline(&c.describe())))
        .unwrap_or_default();
    out.push_str(&format!(
        "\n<sub>fanscan {} · {} · {}{checkout}</sub>\n",
        inline(&report.tool.version),
        inline(&report.provider),
        inline(&report.model)
    ));
    out
}

/// Text for one Markdown line: no line breaks, no markup, no HTML, no
/// @-mention (a zero-width space after `@`), no reference to an issue.
fn inline(text: &str) -> String {
    let one: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    escape(one.trim())
}

/// Text for a Markdown paragraph: lines kept (as hard breaks), the rest
/// as [`inline`].
fn block(text: &str) -> String {
    text.trim()
        .lines()
        .map(|l| {
            let clean: String = l
                .chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .collect();
            escape(&clean)
        })
        .collect::<Vec<_>>()
        .join("  \n")
}

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '@' => out.push_str("@&#8203;"),
            '#' => out.push_str("&#35;"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '~' | '!' => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

/// A fingerprint inside an HTML comment: only what cannot end it.
fn marker(fingerprint: &str) -> String {
    fingerprint
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, ':' | '.' | '_'))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_text_cannot_add_markup_mentions_or_end_the_marker() {
        assert_eq!(
            inline("<img src=x> @octocat *bold* #12\nnext"),
            "&lt;img src=x&gt; @&#8203;octocat \\*bold\\* &#35;12 next"
        );
        assert_eq!(block("a\n\n<b>"), "a  \n  \n&lt;b&gt;");
        assert_eq!(marker("ab12--><script>"), "ab12script");
    }
}
