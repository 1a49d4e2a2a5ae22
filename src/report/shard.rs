//! Partial reports of shards, and joining them for `fanscan merge`.
//!
//! Takes the partial reports (JSON files written by `fanscan scan --shard
//! K/N --format json`); gives, once they are checked to come from one plan
//! and to cover each of its groups exactly once, every group's result in
//! plan order with what the shards spent ([`Joined`]). The caller verifies
//! and reduces them as one run. Checking is pure; [`load`] and
//! [`check_checkout`] read files.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{CallCounts, Report, Reused};
use crate::agents::GroupReport;
use crate::llm::budget::AgentUsage;
use crate::llm::conversation::Usage;
use crate::stages::plan::Plan;
use crate::util::git::Checkout;

/// What makes a report partial: which shard of which plan it ran, and
/// every finished group's full result (what `fanscan merge` verifies and
/// reduces).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShardPart {
    /// K, counted from 1.
    pub index: usize,
    /// N.
    pub count: usize,
    /// The hash of the whole plan the shard was cut from.
    pub plan_hash: String,
    /// The groups assigned to this shard, in plan order (finished or not).
    pub groups: Vec<String>,
    /// Why the shard was stopped early (a budget, Ctrl-C), if it was.
    #[serde(default)]
    pub stopped: Vec<String>,
    /// The result of each group that finished (reviewed or failed).
    pub reports: Vec<GroupReport>,
    /// The limits and budgets the shard ran with: its share of the run's
    /// (1/N) or its configured own. Absent in parts of older versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quota: Option<crate::stages::plan::shard::ShardQuota>,
}

/// Parts that cannot be merged. Exit code 2; each names the part and the
/// fix.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("fanscan merge needs the partial reports: give one JSON file per shard")]
    NoParts,
    #[error(
        "{path}: not a partial report ({reason}); give the files written by `fanscan scan --shard K/N --format json`"
    )]
    NotAPart { path: String, reason: String },
    #[error(
        "{path}: a report of a whole run, not of a shard; give the files written by `fanscan scan --shard K/N --format json`"
    )]
    NotSharded { path: String },
    #[error(
        "{path}: shard {index}/{count} comes from another plan ({theirs}) than {first} ({ours}); run every shard on the same commit with the same scan options"
    )]
    DifferentPlan {
        path: String,
        index: usize,
        count: usize,
        theirs: String,
        first: String,
        ours: String,
    },
    #[error(
        "{path}: shard {index}/{count} splits the plan in {count}, but {first} in {expected}; give every shard the same N"
    )]
    DifferentCount {
        path: String,
        index: usize,
        count: usize,
        first: String,
        expected: usize,
    },
    #[error("shard {index}/{count} is given twice: {first} and {second}; give each shard once")]
    Duplicate {
        index: usize,
        count: usize,
        first: String,
        second: String,
    },
    #[error(
        "shard {} of {count} is missing (no part for it among the {given} given); run it, or give its file",
        missing.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")
    )]
    Missing {
        missing: Vec<usize>,
        count: usize,
        given: usize,
    },
    #[error(
        "{path}: shard {index}/{count} has a result for group {group}, which is not its own; the part was altered, run the shard again"
    )]
    ForeignGroup {
        path: String,
        index: usize,
        count: usize,
        group: String,
    },
    #[error(
        "group {group} of the plan is {times} times among the parts' groups, not once; run the shards again with one fanscan version"
    )]
    Coverage { group: String, times: usize },
    #[error(
        "the checkout at {root} plans {ours}, the parts {theirs}: merge in a checkout of the commit the shards scanned, with the same scan options (--include, --exclude, --group-tokens, ...)"
    )]
    CheckoutPlan {
        root: String,
        ours: String,
        theirs: String,
    },
    #[error(
        "{file} in the checkout at {root} is not the file shard {shard} audited (its content differs); merge in a checkout of the commit the shards scanned"
    )]
    CheckoutFile {
        root: String,
        file: String,
        shard: String,
    },
    #[error(
        "--shard needs the pack planner: an LLM planner may plan differently on each machine, so the shards would not cover one plan"
    )]
    LlmPlanner,
}

/// Reads a partial report.
pub(crate) fn load(path: &Path) -> Result<Report, MergeError> {
    let shown = path.display().to_string();
    let not_part = |reason: String| MergeError::NotAPart {
        path: shown.clone(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| not_part(e.to_string()))?;
    let report: Report = serde_json::from_str(&text).map_err(|e| not_part(e.to_string()))?;
    if report.shard.is_none() {
        return Err(MergeError::NotSharded { path: shown });
    }
    Ok(report)
}

/// The parts, joined as one run's stages would have given them.
#[derive(Debug)]
pub(crate) struct Joined {
    pub(crate) plan: Plan,
    /// Every finished group's result, in plan order.
    pub(crate) reports: Vec<GroupReport>,
    /// Groups that were assigned but never started.
    pub(crate) not_started: Vec<String>,
    pub(crate) reused: BTreeMap<String, Reused>,
    /// Why shards stopped early, each with its shard.
    pub(crate) stopped: Vec<String>,
    /// The shards' own notes (not the plan's), each with its shard.
    pub(crate) notes: Vec<String>,
    pub(crate) calls: CallCounts,
    /// What the shards spent, per agent, in total, and its cost.
    pub(crate) spent: Spent,
    /// The shard (K/N) that audited each file, for the checkout check.
    pub(crate) audited_by: BTreeMap<String, (String, String)>,
    /// Each shard (K/N, in order) with the tree it scanned (none in a part
    /// written before fanscan recorded it).
    pub(crate) checkouts: Vec<(String, Option<Checkout>)>,
}

/// Checks that `parts` (file name, report) are of one plan and cover each
/// of its groups exactly once, and joins them.
pub(crate) fn join(parts: Vec<(PathBuf, Report)>) -> Result<Joined, MergeError> {
    let mut parts: Vec<(String, Report, ShardPart)> = parts
        .into_iter()
        .map(|(path, mut report)| {
            let path = path.display().to_string();
            match report.shard.take() {
                Some(part) => Ok((path, report, part)),
                None => Err(MergeError::NotSharded { path }),
            }
        })
        .collect::<Result<_, _>>()?;
    let Some((first, first_report, first_part)) = parts.first() else {
        return Err(MergeError::NoParts);
    };
    let (first, plan_hash, count) = (
        first.clone(),
        first_part.plan_hash.clone(),
        first_part.count,
    );
    let plan = first_report.plan.clone();
    let mut seen: BTreeMap<usize, String> = BTreeMap::new();
    for (path, report, part) in &parts {
        if part.plan_hash != plan_hash || report.plan.hash() != plan_hash {
            return Err(MergeError::DifferentPlan {
                path: path.clone(),
                index: part.index,
                count: part.count,
                theirs: short(&part.plan_hash),
                first: first.clone(),
                ours: short(&plan_hash),
            });
        }
        if part.count != count {
            return Err(MergeError::DifferentCount {
                path: path.clone(),
                index: part.index,
                count: part.count,
                first: first.clone(),
                expected: count,
            });
        }
        if let Some(earlier) = seen.insert(part.index, path.clone()) {
            return Err(MergeError::Duplicate {
                index: part.index,
                count,
                first: earlier,
                second: path.clone(),
            });
        }
        if let Some(foreign) = part
            .reports
            .iter()
            .find(|r| !part.groups.contains(&r.group))
        {
            return Err(MergeError::ForeignGroup {
                path: path.clone(),
                index: part.index,
                count,
                group: foreign.group.clone(),
            });
        }
    }
    let missing: Vec<usize> = (1..=count).filter(|k| !seen.contains_key(k)).collect();
    if !missing.is_empty() {
        return Err(MergeError::Missing {
            missing,
            count,
            given: parts.len(),
        });
    }
    let mut times: HashMap<&str, usize> = HashMap::new();
    for (_, _, part) in &parts {
        for group in &part.groups {
            *times.entry(group.as_str()).or_default() += 1;
        }
    }
    for g in &plan.groups {
        let n = times.remove(g.id.as_str()).unwrap_or(0);
        if n != 1 {
            return Err(MergeError::Coverage {
                group: g.id.clone(),
                times: n,
            });
        }
    }
    if let Some((group, n)) = times.into_iter().next() {
        return Err(MergeError::Coverage {
            group: group.to_string(),
            times: n,
        });
    }
    parts.sort_by_key(|(_, _, part)| part.index);
    Ok(gather(plan, parts))
}

/// Everything of the checked parts, in plan order.
fn gather(plan: Plan, parts: Vec<(String, Report, ShardPart)>) -> Joined {
    let order: HashMap<String, usize> = plan
        .groups
        .iter()
        .enumerate()
        .map(|(i, g)| (g.id.clone(), i))
        .collect();
    let mut joined = Joined {
        plan,
        reports: Vec::new(),
        not_started: Vec::new(),
        reused: BTreeMap::new(),
        stopped: Vec::new(),
        notes: Vec::new(),
        calls: CallCounts::default(),
        spent: (BTreeMap::new(), Usage::default(), Some(0.0)),
        audited_by: BTreeMap::new(),
        checkouts: Vec::new(),
    };
    for (_, report, part) in parts {
        let shard = format!("{}/{}", part.index, part.count);
        joined
            .checkouts
            .push((shard.clone(), report.manifest.checkout.clone()));
        for outcome in &report.groups {
            let how = match (outcome.cached, outcome.resumed) {
                (_, true) => Some(Reused::Resumed),
                (true, false) => Some(Reused::Cached),
                (false, false) => None,
            };
            if let Some(how) = how {
                joined.reused.insert(outcome.id.clone(), how);
            }
        }
        let finished: Vec<&str> = part.reports.iter().map(|r| r.group.as_str()).collect();
        joined.not_started.extend(
            part.groups
                .iter()
                .filter(|g| !finished.contains(&g.as_str()))
                .cloned(),
        );
        for r in &part.reports {
            for f in &r.files {
                joined
                    .audited_by
                    .insert(f.path.clone(), (f.sha256.clone(), shard.clone()));
            }
        }
        joined.reports.extend(part.reports);
        joined
            .stopped
            .extend(part.stopped.iter().map(|s| format!("shard {shard}: {s}")));
        joined.notes.extend(
            report
                .notes
                .iter()
                .filter(|n| !joined.plan.notes.contains(n))
                .map(|n| format!("shard {shard}: {n}")),
        );
        add_stats(&mut joined, &report);
    }
    joined
        .reports
        .sort_by_key(|r| order.get(&r.group).copied().unwrap_or(usize::MAX));
    joined
}

/// What an agent spent, per agent, in total, and its cost.
pub(crate) type Spent = (BTreeMap<String, AgentUsage>, Usage, Option<f64>);

/// What the shards counted and spent, carried into the merged report.
pub(crate) struct Carried {
    pub(crate) calls: CallCounts,
    pub(crate) spent: Spent,
}

impl Joined {
    /// The shards' counters and spending.
    pub(crate) fn carried(&self) -> Carried {
        Carried {
            calls: self.calls,
            spent: self.spent.clone(),
        }
    }
}

impl Carried {
    /// The shards' counters and spending plus the merge's own (`own`,
    /// `own_calls`: the skeptic's and the reducer's calls).
    pub(crate) fn with_merge(self, own: Spent, own_calls: CallCounts) -> (CallCounts, Spent) {
        let (mut agents, mut usage, mut cost) = self.spent;
        for (name, used) in own.0 {
            let entry = agents.entry(name).or_default();
            entry.usage.add(used.usage);
            entry.cost_usd = entry.cost_usd.zip(used.cost_usd).map(|(a, b)| a + b);
        }
        usage.add(own.1);
        cost = cost.zip(own.2).map(|(a, b)| a + b);
        let mut calls = self.calls;
        calls.requests += own_calls.requests;
        calls.retries += own_calls.retries;
        calls.rate_limited += own_calls.rate_limited;
        calls.lowest_concurrency = lowest(calls.lowest_concurrency, own_calls.lowest_concurrency);
        (calls, (agents, usage, cost))
    }
}

/// Adds a part's counters and spending to the joined ones.
fn add_stats(joined: &mut Joined, report: &Report) {
    let s = &report.stats;
    let calls = &mut joined.calls;
    calls.requests += s.requests;
    calls.retries += s.retries;
    calls.rate_limited += s.rate_limited;
    calls.lowest_concurrency = lowest(calls.lowest_concurrency, s.lowest_concurrency);
    let (agents, total, cost) = &mut joined.spent;
    for (name, used) in &s.agents {
        let entry = agents.entry(name.clone()).or_default();
        entry.usage.add(used.usage);
        entry.cost_usd = entry.cost_usd.zip(used.cost_usd).map(|(a, b)| a + b);
    }
    total.add(Usage {
        input_tokens: s.input_tokens,
        output_tokens: s.output_tokens,
        cached_tokens: s.cached_tokens,
        cache_write_tokens: s.cache_write_tokens,
    });
    *cost = cost.zip(s.cost_usd).map(|(a, b)| a + b);
}

/// The lower of two "lowest concurrency" counters, where 0 means never cut.
fn lowest(a: u64, b: u64) -> u64 {
    match (a, b) {
        (0, x) | (x, 0) => x,
        (a, b) => a.min(b),
    }
}

/// Errors when a file in the checkout at `root` is not the one a shard
/// audited: verification reads the files, so they must be the same.
pub(crate) fn check_checkout(root: &Path, joined: &Joined) -> Result<(), MergeError> {
    for (file, (sha256, shard)) in &joined.audited_by {
        if sha256.is_empty() {
            continue;
        }
        let here = crate::tools::paths::resolve(root, file)
            .ok()
            .and_then(|r| std::fs::read(&r.real).ok())
            .map(|bytes| crate::util::sha256_hex(&bytes));
        if here.as_deref() != Some(sha256.as_str()) {
            return Err(MergeError::CheckoutFile {
                root: root.display().to_string(),
                file: file.clone(),
                shard: shard.clone(),
            });
        }
    }
    Ok(())
}

/// What to say when the shards, and the checkout merging them, are not
/// all of one commit; none when they are.
///
/// Not an error: what a merge must refuse is findings checked against
/// other files than the ones audited, and [`check_checkout`] already
/// refuses that (exit 2) file by file, by content. Commits can differ
/// while every audited file is the same (a CI matrix whose jobs check
/// out a pull request's merge commit while the base moves on, a re-run
/// shard after a commit that touched no scanned file), and failing those
/// runs would be wrong; staying silent would hide which commit a finding
/// belongs to. So the merged report names the merge's own checkout (its
/// files are what verification read) and this note names the shards'.
pub(crate) fn checkout_note(
    checkouts: &[(String, Option<Checkout>)],
    here: &Checkout,
) -> Option<String> {
    let key = |c: Option<&Checkout>| match c {
        Some(Checkout::Git(g)) => g.commit.clone().unwrap_or_else(|| "no commit".into()),
        Some(Checkout::NotARepository { .. }) => "not a git repository".into(),
        Some(Checkout::Unknown { .. }) => "unknown".into(),
        None => "not recorded".into(),
    };
    let here_key = key(Some(here));
    if checkouts.iter().all(|(_, c)| key(c.as_ref()) == here_key) {
        return None;
    }
    let shards: Vec<String> = checkouts
        .iter()
        .map(|(shard, c)| match c {
            Some(c) => format!("{shard} {}", c.describe()),
            None => format!("{shard} not recorded (a part of an older fanscan)"),
        })
        .collect();
    Some(format!(
        "The shards did not all scan the commit this merge ran in: {}; this checkout is {}. Every audited file matched this checkout's content, so the findings hold for it.",
        shards.join("; "),
        here.describe()
    ))
}

fn short(hash: &str) -> String {
    hash.chars().take(12).collect()
}
