//! Samples (`--samples N`): each group audited N times in independent
//! conversations, and how often each finding recurs.
//!
//! Takes the plan's tasks; gives N tasks a group ([`expand`]): the first
//! as it is, the others with the group id `ID~K` and `sample` K−1, so the
//! run store keeps (and a re-run reuses) each sample apart and a further
//! sample's requests ask the provider for a draw of their own. After the
//! fan-out, [`combine`] folds a group's samples back into one report whose
//! findings each carry [`Seen`]: in how many of the N samples a finding
//! matching it was reported (the same file, overlapping lines, the same
//! CWE, else the same rule, else the same title; a finding of the tool
//! layer, which no model writes, only by its file, line and rule). A
//! sample's findings are matched one to one: two findings one sample
//! reports apart stay apart (two secrets on adjacent lines of one file
//! are two findings in every sample), and each is matched to the same
//! finding of the others first. With one sample nothing changes: no
//! finding carries a count.

use std::collections::BTreeMap;

use crate::agents::{AgentTask, GroupReport};
use crate::model::findings::{Finding, Origin, Seen};

/// What separates a group's id from its sample number in a further
/// sample's id.
const SAMPLE_MARK: char = '~';

/// The largest `--samples`.
pub(crate) const MAX_SAMPLES: u32 = 9;

/// How many lines two reports of one finding may differ by.
const LINE_SLACK: u32 = 2;

/// `tasks`, each followed by its further samples when `n` > 1.
pub(crate) fn expand(tasks: Vec<AgentTask>, n: u32) -> Vec<AgentTask> {
    if n <= 1 {
        return tasks;
    }
    let mut out = Vec::with_capacity(tasks.len() * n as usize);
    for task in tasks {
        for k in 1..n {
            out.push(AgentTask {
                group: format!("{}{SAMPLE_MARK}{}", task.group, k + 1),
                sample: k,
                ..task.clone()
            });
        }
        out.insert(out.len() - (n as usize - 1), task);
    }
    out
}

/// The group id a sample's id belongs to.
pub(crate) fn group_of(id: &str) -> &str {
    match id.rsplit_once(SAMPLE_MARK) {
        Some((group, k)) if !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()) => group,
        _ => id,
    }
}

/// The ids of `group`'s further samples (`ID~2` … `ID~N`).
pub(crate) fn further_ids(group: &str, n: u32) -> impl Iterator<Item = String> + '_ {
    (2..=n).map(move |k| format!("{group}{SAMPLE_MARK}{k}"))
}

/// The agents by group, with each group's further samples run by its
/// agent.
pub(crate) fn with_samples<D: Clone>(
    mut by_group: std::collections::HashMap<String, D>,
    n: u32,
) -> std::collections::HashMap<String, D> {
    let firsts: Vec<(String, D)> = by_group
        .iter()
        .map(|(g, d)| (g.clone(), d.clone()))
        .collect();
    for (group, d) in firsts {
        for id in further_ids(&group, n) {
            by_group.insert(id, d.clone());
        }
    }
    by_group
}

/// [`combine`], and the marks of reused groups kept for the groups whose
/// every sample came from the run store.
pub(crate) fn combined<M>(
    reports: Vec<GroupReport>,
    mut reused: BTreeMap<String, M>,
    n: u32,
) -> (Vec<GroupReport>, BTreeMap<String, M>) {
    if n <= 1 {
        return (reports, reused);
    }
    let groups: Vec<String> = reused
        .keys()
        .filter(|g| group_of(g) == g.as_str())
        .cloned()
        .collect();
    let all_reused: std::collections::BTreeSet<String> = groups
        .into_iter()
        .filter(|g| further_ids(g, n).all(|id| reused.contains_key(&id)))
        .collect();
    reused.retain(|g, _| all_reused.contains(g));
    (combine(reports, n), reused)
}

/// Whether two reports of a finding are the same finding.
pub(crate) fn same(a: &Finding, b: &Finding) -> bool {
    if a.path != b.path {
        return false;
    }
    // The tool layer reports the same line of the same rule every time:
    // nothing near it of another rule is the same finding.
    if a.origin == Origin::ToolLayer || b.origin == Origin::ToolLayer {
        return a.origin == b.origin && a.line == b.line && a.rule == b.rule;
    }
    let (a_end, b_end) = (a.end_line.unwrap_or(a.line), b.end_line.unwrap_or(b.line));
    let overlap = a.line <= b_end + LINE_SLACK && b.line <= a_end + LINE_SLACK;
    overlap
        && match (a.cwe.id, b.cwe.id, &a.rule, &b.rule) {
            (Some(x), Some(y), _, _) => x == y,
            (_, _, Some(x), Some(y)) => x == y,
            _ => normalize(&a.title) == normalize(&b.title),
        }
}

fn normalize(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// Folds each group's `n` samples in `reports` into one report, in the
/// order of the groups' first samples: usage, rounds and calls summed,
/// the worst status (a sample that did not finish leaves its group not
/// fully sampled), files read and claims joined, and every finding once,
/// with how many samples reported it. Unchanged when `n` is 1.
pub(crate) fn combine(reports: Vec<GroupReport>, n: u32) -> Vec<GroupReport> {
    if n <= 1 {
        return reports;
    }
    let mut order: Vec<String> = Vec::new();
    let mut by_group: BTreeMap<String, Vec<GroupReport>> = BTreeMap::new();
    for report in reports {
        let group = group_of(&report.group).to_string();
        if !by_group.contains_key(&group) {
            order.push(group.clone());
        }
        by_group.entry(group).or_default().push(report);
    }
    order
        .into_iter()
        .filter_map(|group| {
            let mut samples = by_group.remove(&group)?;
            // The first sample first, whatever order they finished in.
            samples.sort_by_key(|r| r.group != group);
            fold(group, samples, n)
        })
        .collect()
}

/// Whether `a` and `b` are one finding reported word for word: the same
/// place, rule, title and evidence.
fn identical(a: &Finding, b: &Finding) -> bool {
    a.path == b.path
        && a.line == b.line
        && a.end_line == b.end_line
        && a.rule == b.rule
        && a.origin == b.origin
        && normalize(&a.title) == normalize(&b.title)
        && a.evidence == b.evidence
}

/// Counts `findings`, one sample's, into `seen`. A finding the sample
/// repeats word for word counts once. The others are matched one to one:
/// each to a finding seen before that no other finding of this sample
/// took, the identical one first, else one [`same`] as it; two findings
/// of one sample never count as one, however near each other they are.
/// A finding matching none starts from 0.
fn count(findings: &[Finding], seen: &mut Vec<(Finding, u32)>) {
    let mut distinct: Vec<&Finding> = Vec::new();
    for f in findings {
        if !distinct.iter().any(|d| identical(d, f)) {
            distinct.push(f);
        }
    }
    let mut hit = std::collections::BTreeSet::new();
    let mut rest = Vec::new();
    for f in distinct {
        match (0..seen.len()).find(|i| !hit.contains(i) && identical(&seen[*i].0, f)) {
            Some(i) => {
                hit.insert(i);
            }
            None => rest.push(f),
        }
    }
    for f in rest {
        match (0..seen.len()).find(|i| !hit.contains(i) && same(&seen[*i].0, f)) {
            Some(i) => {
                hit.insert(i);
            }
            None => {
                seen.push((f.clone(), 0));
                hit.insert(seen.len() - 1);
            }
        }
    }
    for i in hit {
        seen[i].1 += 1;
    }
}

/// One group's samples as one report (none for no sample).
fn fold(group: String, samples: Vec<GroupReport>, n: u32) -> Option<GroupReport> {
    let mut samples = samples.into_iter();
    let mut out = samples.next()?;
    let mut seen: Vec<(Finding, u32)> = Vec::new();
    count(&out.findings, &mut seen);
    out.group = group;
    for s in samples {
        count(&s.findings, &mut seen);
        out.status = out.status.worse(s.status);
        if out.error.is_none() {
            out.error = s.error;
        }
        out.rounds += s.rounds;
        out.tool_calls += s.tool_calls;
        out.tool_errors += s.tool_errors;
        out.usage.add(s.usage);
        out.repair_turn |= s.repair_turn;
        out.unparsed.extend(s.unparsed);
        out.rejected.extend(s.rejected);
        for f in s.files_read {
            if !out.files_read.contains(&f) {
                out.files_read.push(f);
            }
        }
    }
    out.files_read.sort();
    out.findings = seen
        .into_iter()
        .map(|(f, k)| Finding {
            seen: Some(Seen { k, n }),
            ..f
        })
        .collect();
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::findings::{FindingCwe, Severity};

    fn task(group: &str) -> AgentTask {
        AgentTask {
            group: group.into(),
            files: Vec::new(),
            focus: None,
            instructions: None,
            leads: Vec::new(),
            sample: 0,
        }
    }

    fn finding(line: u32, cwe: u32) -> Finding {
        Finding {
            path: "a.py".into(),
            line,
            end_line: None,
            severity: Severity::High,
            title: "SQL injection".into(),
            detail: String::new(),
            evidence: None,
            rule: None,
            cwe: FindingCwe::number(cwe),
            origin: Origin::Agent,
            seen: None,
        }
    }

    #[test]
    fn each_task_is_followed_by_its_further_samples() {
        let tasks = expand(vec![task("a"), task("b")], 3);
        let ids: Vec<(&str, u32)> = tasks.iter().map(|t| (t.group.as_str(), t.sample)).collect();
        assert_eq!(
            ids,
            vec![
                ("a", 0),
                ("a~2", 1),
                ("a~3", 2),
                ("b", 0),
                ("b~2", 1),
                ("b~3", 2)
            ]
        );
        assert_eq!(expand(vec![task("a")], 1).len(), 1);
        assert_eq!(group_of("a~3"), "a");
        assert_eq!(group_of("src-1f~x"), "src-1f~x");
        assert_eq!(group_of("plain"), "plain");
    }

    #[test]
    fn findings_of_the_samples_are_counted_once_per_sample() {
        let report = |group: &str, findings: Vec<Finding>| GroupReport {
            findings,
            ..GroupReport::for_test(group)
        };
        let reports = vec![
            report("g", vec![finding(5, 89), finding(9, 78)]),
            report("g~2", vec![finding(6, 89), finding(6, 89)]),
            report("g~3", vec![finding(5, 89), finding(30, 22)]),
        ];
        let combined = combine(reports, 3);
        assert_eq!(combined.len(), 1);
        let got: Vec<(u32, u32)> = combined[0]
            .findings
            .iter()
            .map(|f| (f.line, f.seen.map_or(0, |s| s.k)))
            .collect();
        assert_eq!(got, vec![(5, 3), (9, 1), (30, 1)]);
        assert!(
            combined[0]
                .findings
                .iter()
                .all(|f| f.seen.is_some_and(|s| s.n == 3))
        );
        assert_eq!(combined[0].group, "g");
    }

    #[test]
    fn findings_one_sample_reports_apart_stay_apart_in_every_sample() {
        // Two secrets on adjacent lines of one file (both CWE-798) and two
        // rules' findings on adjacent lines with one CWE: what one sample
        // reports apart is two findings, each seen in every sample.
        let secret = |line: u32, kind: &str| {
            crate::agents::subagent::secret_finding(".env".into(), line, kind)
        };
        let ruled = |line: u32, rule: &str| Finding {
            rule: Some(rule.into()),
            evidence: Some(format!("line {line}")),
            ..finding(line, 89)
        };
        let findings = vec![
            secret(1, "aws-access-key"),
            secret(2, "aws-secret-key"),
            secret(3, "password"),
            ruled(5, "sql/concat"),
            ruled(6, "sql/python-format"),
        ];
        let report = |group: &str| GroupReport {
            findings: findings.clone(),
            ..GroupReport::for_test(group)
        };
        let combined = combine(vec![report("g"), report("g~2"), report("g~3")], 3);
        let got: Vec<(u32, Option<&str>, u32)> = combined[0]
            .findings
            .iter()
            .map(|f| (f.line, f.rule.as_deref(), f.seen.map_or(0, |s| s.k)))
            .collect();
        assert_eq!(
            got,
            vec![
                (1, Some("secret/aws-access-key"), 3),
                (2, Some("secret/aws-secret-key"), 3),
                (3, Some("secret/password"), 3),
                (5, Some("sql/concat"), 3),
                (6, Some("sql/python-format"), 3),
            ]
        );
        // A model's finding a line away in a further sample is still the
        // same one; a tool-layer finding is only ever its own line.
        let moved = vec![
            GroupReport {
                findings: vec![ruled(5, "sql/concat")],
                ..GroupReport::for_test("g")
            },
            GroupReport {
                findings: vec![ruled(6, "sql/concat")],
                ..GroupReport::for_test("g~2")
            },
        ];
        let combined = combine(moved, 2);
        assert_eq!(combined[0].findings.len(), 1);
        assert!(!same(&secret(1, "password"), &secret(2, "password")));
        assert!(same(&secret(2, "password"), &secret(2, "password")));
    }

    #[test]
    fn the_same_finding_needs_the_same_file_near_lines_and_the_same_weakness() {
        assert!(same(&finding(5, 89), &finding(7, 89)));
        assert!(!same(&finding(5, 89), &finding(8, 89)));
        assert!(!same(&finding(5, 89), &finding(5, 78)));
        let mut other = finding(5, 89);
        other.path = "b.py".into();
        assert!(!same(&finding(5, 89), &other));
    }
}
