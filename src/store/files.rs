//! Results per file: what lets a re-run pay for the change, not for the
//! repository.
//!
//! Takes each finished [`GroupReport`] and keeps, per file, its findings,
//! its unverified claims and whether it was reviewed ([`FileRecord`]),
//! keyed by the file's path and content hash plus what determines the
//! result (agent and its definition's hash, which holds the brief,
//! provider, model, rules, [`FILE_FORMAT_VERSION`]). On a re-run a group
//! whose key misses but some of whose files are unchanged becomes a
//! [`Partial`]: its unchanged files are carried over (not preloaded
//! again), its changed files are packed with the other groups' changed
//! files into new groups ([`changed_tasks`], by directory as the packer
//! does), and after the fan-out [`fold`] puts each plan group back
//! together from what was carried and what was audited, so the plan,
//! shards, coverage and the group cache keep working on plan groups.
//!
//! A stored finding on a changed file is not dropped silently: its
//! evidence is looked for in the new text and the finding moved to where it
//! now is; only when the evidence is gone does it leave (fixed).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use rusqlite::{OptionalExtension, params};
use serde::{Deserialize, Serialize};

use super::{KeyBase, Store, StoreError, now_ms, reusable};
use crate::agents::subagent::FileHash;
use crate::agents::{AgentStatus, AgentTask, GroupReport, TaskFile};
use crate::model::findings::{Finding, HowParsed, Unparsed};
use crate::model::leads::LeadResult;

/// Bumped whenever a stored [`FileRecord`] would mean something else.
/// 2: a record lists the lines no read showed whole.
pub(crate) const FILE_FORMAT_VERSION: u32 = 2;

/// The prefix of the ids of groups of changed files.
pub(crate) const CHANGED_PREFIX: &str = "changed-";

/// At most this many earlier findings go into a changed group's note.
const NOTE_FINDINGS: usize = 20;

/// What one file's audit left, independent of the run that made it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct FileRecord {
    /// The group it was audited in.
    pub(crate) group: String,
    pub(crate) status: AgentStatus,
    /// Whether a model was shown it.
    pub(crate) read: bool,
    /// Findings citing it (and, in its group's first file's record, the
    /// group's findings citing files outside the group).
    pub(crate) findings: Vec<Finding>,
    /// Claims about it that did not become findings.
    pub(crate) unparsed: Vec<Unparsed>,
    /// The leads in it and what became of each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) leads: Vec<LeadResult>,
    /// Its lines no read showed whole.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) lines_cut: Vec<u64>,
}

/// Where a file's records live whatever its content: the key without the
/// content hash.
pub(crate) fn slot(base: &KeyBase, path: &str) -> String {
    crate::util::sha256_hex(
        format!(
            "fanscan file v{FILE_FORMAT_VERSION}\nagent {} {}\nprovider {}\nmodel {}\nrules {}\npath {path}\n",
            base.agent, base.agent_hash, base.provider, base.model, base.rules_hash
        )
        .as_bytes(),
    )
}

/// The key of a file's record: its slot and its content hash.
pub(crate) fn file_key(slot: &str, hash: &str) -> String {
    crate::util::sha256_hex(format!("{slot}\n{hash}").as_bytes())
}

/// The record of each file of `report` (whose files carry their hashes),
/// by path, with the file's key.
pub(crate) fn records_of(report: &GroupReport) -> Vec<(String, String, FileRecord)> {
    let read: BTreeSet<&str> = report.files_read.iter().map(String::as_str).collect();
    let own: BTreeSet<&str> = report.files.iter().map(|f| f.path.as_str()).collect();
    let mut out: Vec<(String, String, FileRecord)> = report
        .files
        .iter()
        .map(|f| {
            let record = FileRecord {
                group: report.group.clone(),
                status: report.status,
                read: read.contains(f.path.as_str()),
                findings: Vec::new(),
                unparsed: Vec::new(),
                leads: Vec::new(),
                lines_cut: report.lines_cut.get(&f.path).cloned().unwrap_or_default(),
            };
            (f.path.clone(), f.sha256.clone(), record)
        })
        .collect();
    let index_of = |path: Option<&str>| {
        path.and_then(|p| report.files.iter().position(|f| f.path == p))
            .unwrap_or(0)
    };
    if out.is_empty() {
        return out;
    }
    for finding in &report.findings {
        let at = index_of(Some(finding.path.as_str()).filter(|p| own.contains(p)));
        out[at].2.findings.push(finding.clone());
    }
    for claim in &report.unparsed {
        let at = index_of(claim.path.as_deref().filter(|p| own.contains(p)));
        out[at].2.unparsed.push(claim.clone());
    }
    for lead in &report.leads {
        let at = index_of(Some(lead.lead.path.as_str()).filter(|p| own.contains(p)));
        out[at].2.leads.push(lead.clone());
    }
    out
}

/// A stored record: its body and the run that audited the file.
pub(crate) struct Stored {
    pub(crate) record: FileRecord,
    pub(crate) run: i64,
}

/// The record of exactly this content (`key`), marked used now.
pub(crate) fn lookup(store: &Store, key: &str) -> Result<Option<Stored>, StoreError> {
    let row: Option<(String, Option<i64>)> = store.with(|conn| {
        let row = conn
            .query_row(
                "SELECT body, run_id FROM group_results WHERE key = ?1 AND kind = 'file'",
                params![key],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        if row.is_some() {
            conn.execute(
                "UPDATE group_results SET used_at = ?2 WHERE key = ?1",
                params![key, now_ms()],
            )?;
        }
        Ok(row)
    })?;
    Ok(decode(row))
}

/// The newest record of the file at `slot`, whatever its content: what
/// an earlier run found in a file that changed since.
pub(crate) fn latest(store: &Store, slot: &str) -> Result<Option<Stored>, StoreError> {
    let row: Option<(String, Option<i64>)> = store.with(|conn| {
        conn.query_row(
            "SELECT body, run_id FROM group_results WHERE kind = 'file' AND group_id = ?1
             ORDER BY used_at DESC LIMIT 1",
            params![slot],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()
    })?;
    Ok(decode(row))
}

/// A row's record; none when its body no longer reads (another
/// version's): the file is audited anew.
fn decode(row: Option<(String, Option<i64>)>) -> Option<Stored> {
    let (body, run) = row?;
    let record = serde_json::from_str::<FileRecord>(&body).ok()?;
    Some(Stored {
        record,
        run: run.unwrap_or(0),
    })
}

/// An unchanged file of a partly changed group, with its stored result.
#[derive(Debug)]
pub(crate) struct CarriedFile {
    pub(crate) file: FileHash,
    pub(crate) record: FileRecord,
    pub(crate) run: i64,
}

/// A plan group some of whose files changed: what is carried, what is
/// audited again, and what an earlier run found in the changed files.
#[derive(Debug)]
pub(crate) struct Partial {
    /// The plan group's task.
    pub(crate) task: AgentTask,
    /// The group's key with today's hashes, under which the folded report
    /// is kept (so the next unchanged run reuses it whole).
    pub(crate) key: String,
    pub(crate) hashes: Vec<String>,
    pub(crate) base: KeyBase,
    pub(crate) carried: Vec<CarriedFile>,
    /// The changed (or new) files, with their hashes.
    pub(crate) changed: Vec<(TaskFile, String)>,
    /// Earlier findings on the changed files whose evidence is still
    /// there, moved to where it now is.
    pub(crate) moved: Vec<Finding>,
    /// Earlier findings on the changed files whose evidence is gone.
    pub(crate) fixed: usize,
}

/// Decides whether `task` (a group whose key missed, files hashed
/// `hashes`) is a [`Partial`]: some file has a record of its content.
/// With none, the group is audited whole, as before (a cold run).
pub(crate) fn partial(
    store: &Store,
    root: &Path,
    base: &KeyBase,
    task: &AgentTask,
    hashes: &[String],
    key: &str,
) -> Result<Option<Partial>, StoreError> {
    let mut carried = Vec::new();
    let mut changed = Vec::new();
    let mut earlier: Vec<Finding> = Vec::new();
    for (file, hash) in task.files.iter().zip(hashes) {
        let slot = slot(base, &file.path);
        match lookup(store, &file_key(&slot, hash))? {
            Some(stored) if reusable(stored.record.status) => {
                carried.push(CarriedFile {
                    file: FileHash {
                        path: file.path.clone(),
                        sha256: hash.clone(),
                    },
                    record: stored.record,
                    run: stored.run,
                });
            }
            _ => {
                if let Some(old) = latest(store, &slot)? {
                    earlier.extend(old.record.findings);
                }
                changed.push((file.clone(), hash.clone()));
            }
        }
    }
    // None carried: audited whole, as a cold run. None changed: a group
    // the packer made anew of unchanged files (a directory that grew
    // split) is carried whole and costs nothing.
    if carried.is_empty() {
        return Ok(None);
    }
    let changed_paths: BTreeSet<&str> = changed.iter().map(|(f, _)| f.path.as_str()).collect();
    let mut moved = Vec::new();
    let mut fixed = 0;
    let mut texts: BTreeMap<String, Option<String>> = BTreeMap::new();
    for finding in earlier {
        if !changed_paths.contains(finding.path.as_str()) {
            // It cites an unchanged file: verification checks it as today.
            moved.push(finding);
            continue;
        }
        let text = texts
            .entry(finding.path.clone())
            .or_insert_with(|| read_text(root, &finding.path));
        match text.as_deref().and_then(|t| relocate(&finding, t)) {
            Some(found) => moved.push(found),
            None => fixed += 1,
        }
    }
    Ok(Some(Partial {
        task: task.clone(),
        key: key.to_string(),
        hashes: hashes.to_vec(),
        base: base.clone(),
        carried,
        changed,
        moved,
        fixed,
    }))
}

fn read_text(root: &Path, path: &str) -> Option<String> {
    crate::tools::paths::resolve(root, path)
        .ok()
        .and_then(|r| std::fs::read_to_string(&r.real).ok())
}

/// `finding` moved to where its evidence now is in `text` (the nearest
/// occurrence of its first quoted line); none when the evidence is gone
/// or it quotes nothing (the file is audited again anyway).
pub(crate) fn relocate(finding: &Finding, text: &str) -> Option<Finding> {
    let evidence = finding.evidence.as_deref()?;
    let needle = evidence
        .lines()
        .map(|l| {
            l.split_once('\t').map_or(l, |(n, rest)| {
                if n.trim().parse::<u32>().is_ok() {
                    rest
                } else {
                    l
                }
            })
        })
        .map(squash)
        .find(|l| !l.is_empty())?;
    let old = i64::from(finding.line);
    let best = text
        .lines()
        .enumerate()
        .filter(|(_, l)| squash(l).contains(&needle))
        .map(|(i, _)| i as i64 + 1)
        .min_by_key(|n| (n - old).abs())?;
    let mut moved = finding.clone();
    let shift = best - old;
    moved.line = u32::try_from(best).ok()?;
    moved.end_line = finding
        .end_line
        .and_then(|e| u32::try_from(i64::from(e) + shift).ok());
    Some(moved)
}

fn squash(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A group of changed files to audit: its task, its files' hashes, the
/// key base of its agent, and a plan group its files come from (whose
/// agent it runs with).
pub(crate) struct ChangedTask {
    pub(crate) task: AgentTask,
    pub(crate) hashes: Vec<String>,
    pub(crate) base: KeyBase,
    pub(crate) origin: String,
}

/// The tasks of the changed files of `partials`: each agent's packed by
/// directory under `budget` tokens, as the packer packs a plan, each with
/// a short note of what the earlier run found in the groups its files
/// come from (the unchanged files are not preloaded; the tools still
/// reach them).
pub(crate) fn changed_tasks(partials: &[Partial], budget: u64) -> Vec<ChangedTask> {
    let entries: Vec<(usize, crate::stages::inventory::FileEntry, &str)> = partials
        .iter()
        .enumerate()
        .flat_map(|(i, p)| p.changed.iter().map(move |c| (i, c)))
        .map(|(i, (f, h))| {
            let entry = crate::stages::inventory::FileEntry {
                path: f.path.clone(),
                bytes: f.bytes,
                language: f.language.clone(),
                tokens: crate::util::estimate_tokens(f.bytes),
            };
            (i, entry, h.as_str())
        })
        .collect();
    let mut by_agent: BTreeMap<&str, Vec<&crate::stages::inventory::FileEntry>> = BTreeMap::new();
    for (i, entry, _) in &entries {
        by_agent
            .entry(partials[*i].base.agent.as_str())
            .or_default()
            .push(entry);
    }
    let of_path: BTreeMap<&str, (usize, &str, &crate::stages::inventory::FileEntry)> = entries
        .iter()
        .map(|(i, e, h)| (e.path.as_str(), (*i, *h, e)))
        .collect();
    crate::stages::plan::pack_agents(by_agent, budget, None)
        .into_iter()
        .filter_map(|g| {
            let members: Vec<(usize, &str, &crate::stages::inventory::FileEntry)> = g
                .files
                .iter()
                .filter_map(|p| of_path.get(p.as_str()).copied())
                .collect();
            let &(first, _, _) = members.first()?;
            let origins: BTreeSet<usize> = members.iter().map(|(i, _, _)| *i).collect();
            let origins: Vec<&Partial> = origins.iter().map(|&i| &partials[i]).collect();
            let task = AgentTask {
                group: format!("{CHANGED_PREFIX}{}", g.id),
                files: members
                    .iter()
                    .map(|(_, _, e)| TaskFile {
                        path: e.path.clone(),
                        bytes: e.bytes,
                        language: e.language.clone(),
                    })
                    .collect(),
                focus: Some(note(&origins)),
                instructions: None,
                leads: Vec::new(),
                sample: 0,
            };
            Some(ChangedTask {
                task,
                hashes: members.iter().map(|(_, h, _)| h.to_string()).collect(),
                base: partials[first].base.clone(),
                origin: partials[first].task.group.clone(),
            })
        })
        .collect()
}

/// The note a group of changed files gets: which groups its files come
/// from, their unchanged files, and what was found there before.
fn note(origins: &[&Partial]) -> String {
    let mut text = String::from(
        "these files changed since the last audit. Their unchanged neighbours are not shown \
         (their results are kept); read them with read_file when a reference leads there.",
    );
    let mut listed = 0;
    for p in origins {
        let unchanged: Vec<&str> = p.carried.iter().map(|c| c.file.path.as_str()).collect();
        text.push_str(&format!(
            "\nGroup {} before: unchanged {}.",
            p.task.group,
            unchanged.join(", ")
        ));
        let found: Vec<&Finding> = p
            .carried
            .iter()
            .flat_map(|c| &c.record.findings)
            .chain(&p.moved)
            .collect();
        for f in found {
            if listed == NOTE_FINDINGS {
                text.push_str(" (more not listed)");
                break;
            }
            text.push_str(&format!(" Found: {}:{} {}.", f.path, f.line, f.title));
            listed += 1;
        }
    }
    text
}

/// Each partial's plan group put back together from its carried files and
/// what the groups of changed files reported; the other fresh reports as
/// they are. A finding of a changed group goes to the partial holding the
/// file it cites (else to the first its files come from); its counters
/// and usage go to the first partial it served.
pub(crate) fn fold(
    partials: Vec<Partial>,
    fresh: Vec<GroupReport>,
) -> Vec<(GroupReport, Option<Partial>)> {
    let (changed, mut out): (Vec<GroupReport>, Vec<GroupReport>) = fresh
        .into_iter()
        .partition(|r| r.group.starts_with(CHANGED_PREFIX));
    let mut out: Vec<(GroupReport, Option<Partial>)> = out.drain(..).map(|r| (r, None)).collect();
    let owner = |path: &str| {
        partials
            .iter()
            .position(|p| p.task.files.iter().any(|f| f.path == path))
    };
    let mut folded: Vec<GroupReport> = partials.iter().map(carried_report).collect();
    let mut served_first: BTreeSet<usize> = BTreeSet::new();
    for report in changed {
        let served: Vec<usize> = report
            .files
            .iter()
            .filter_map(|f| owner(&f.path))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let Some(&first) = served.first() else {
            out.push((report, None));
            continue;
        };
        for &i in &served {
            let target = &mut folded[i];
            let mine = |path: &str| partials[i].task.files.iter().any(|f| f.path == path);
            target
                .files
                .extend(report.files.iter().filter(|f| mine(&f.path)).cloned());
            target
                .files_read
                .extend(report.files_read.iter().filter(|p| mine(p)).cloned());
            target.status = target.status.worse(report.status);
            if target.error.is_none() {
                target.error.clone_from(&report.error);
            }
            target.summary_parsed &= report.summary_parsed;
            if !matches!(report.parse, HowParsed::Clean) {
                target.parse = report.parse.clone();
            }
            target.repair_turn |= report.repair_turn;
        }
        if served_first.insert(first) {
            let target = &mut folded[first];
            target.rounds += report.rounds;
            target.tool_calls += report.tool_calls;
            target.tool_errors += report.tool_errors;
            target.usage.add(report.usage);
            target.summary = report.summary.clone();
            target.rejected.extend(report.rejected.iter().cloned());
        }
        for finding in report.findings {
            let at = owner(&finding.path)
                .filter(|i| served.contains(i))
                .unwrap_or(first);
            folded[at].findings.push(finding);
        }
        for claim in report.unparsed {
            let at = claim
                .path
                .as_deref()
                .and_then(owner)
                .filter(|i| served.contains(i))
                .unwrap_or(first);
            folded[at].unparsed.push(claim);
        }
    }
    for (mut report, partial) in folded.into_iter().zip(partials) {
        // An earlier finding the new audit reported again at the same
        // place is kept once, as the new audit wrote it.
        let fresh: BTreeSet<(String, u32)> = report
            .findings
            .iter()
            .map(|f| (f.path.clone(), f.line))
            .collect();
        report.findings.extend(
            partial
                .moved
                .iter()
                .filter(|f| !fresh.contains(&(f.path.clone(), f.line)))
                .cloned(),
        );
        let order: BTreeMap<&str, usize> = partial
            .task
            .files
            .iter()
            .enumerate()
            .map(|(i, f)| (f.path.as_str(), i))
            .collect();
        report
            .files
            .sort_by_key(|f| order.get(f.path.as_str()).copied().unwrap_or(usize::MAX));
        report.files_read.sort();
        report.files_read.dedup();
        out.push((report, Some(partial)));
    }
    out
}

/// The part of a partial's report that was carried: its unchanged files,
/// their findings and claims, no usage (nothing was asked for them).
fn carried_report(p: &Partial) -> GroupReport {
    let status = p
        .carried
        .iter()
        .map(|c| c.record.status)
        .fold(AgentStatus::Complete, AgentStatus::worse);
    GroupReport {
        group: p.task.group.clone(),
        files: p.carried.iter().map(|c| c.file.clone()).collect(),
        agent: p.base.agent.clone(),
        agent_hash: p.base.agent_hash.clone(),
        provider: p.base.provider.clone(),
        model: p.base.model.clone(),
        status,
        error: None,
        rounds: 0,
        tool_calls: 0,
        tool_errors: 0,
        files_read: p
            .carried
            .iter()
            .filter(|c| c.record.read)
            .map(|c| c.file.path.clone())
            .collect(),
        lines_cut: p
            .carried
            .iter()
            .filter(|c| !c.record.lines_cut.is_empty())
            .map(|c| (c.file.path.clone(), c.record.lines_cut.clone()))
            .collect(),
        usage: Default::default(),
        summary: String::new(),
        summary_parsed: true,
        rejected: Vec::new(),
        parse: HowParsed::Clean,
        repair_turn: false,
        unparsed: p
            .carried
            .iter()
            .flat_map(|c| c.record.unparsed.iter().cloned())
            .collect(),
        findings: p
            .carried
            .iter()
            .flat_map(|c| c.record.findings.iter().cloned())
            .collect(),
        carried: p
            .carried
            .iter()
            .map(|c| (c.file.path.clone(), c.run))
            .collect(),
        leads: p
            .carried
            .iter()
            .flat_map(|c| c.record.leads.iter().cloned())
            .collect(),
        fallback: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::findings::{FindingCwe, Origin, Severity};

    fn finding(line: u32, evidence: &str) -> Finding {
        Finding {
            path: "a.rs".into(),
            line,
            end_line: Some(line + 1),
            severity: Severity::Medium,
            title: "t".into(),
            detail: "d".into(),
            evidence: Some(evidence.into()),
            rule: None,
            cwe: FindingCwe::default(),
            origin: Origin::Agent,
            seen: None,
        }
    }

    #[test]
    fn a_finding_moves_with_its_evidence_and_leaves_when_the_evidence_is_gone() {
        let text = "fn a() {}\n\nfn b() {\n    risky_call(x);\n}\n";
        let moved = relocate(&finding(2, "risky_call(x);"), text).unwrap();
        assert_eq!((moved.line, moved.end_line), (4, Some(5)));
        let numbered = relocate(&finding(9, "2\t    risky_call(x);"), text).unwrap();
        assert_eq!(numbered.line, 4);
        assert!(relocate(&finding(4, "risky_call(y);"), text).is_none());
    }
}
