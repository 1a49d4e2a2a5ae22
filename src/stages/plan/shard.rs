//! Shards: a deterministic, token-balanced share of a plan's groups.
//!
//! Takes a [`Plan`] and a shard count N; gives each group's shard (1..=N).
//! Groups go, largest first (ties by id), to the shard with the fewest
//! estimated tokens so far (ties to the lowest number): every machine that
//! plans the same repository assigns the same groups, with no coordination.
//! Pure: no I/O.
//!
//! `fanscan scan --shard K/N` runs the groups whose shard is K;
//! `fanscan merge` checks that the parts cover the plan exactly once.
//!
//! The shards of one run share one quota: [`ShardQuota::of`] gives each
//! shard 1/N of the run's requests and tokens a minute and of its cost
//! and token budgets, unless the configuration sets a per-shard value.

use serde::{Deserialize, Serialize};

use super::Plan;

/// Shard K of N, 1-based.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// K, from 1.
    pub index: usize,
    /// N.
    pub count: usize,
}

/// The most shards a plan is split into.
pub(crate) const MAX_SHARDS: usize = 10_000;

/// A shard that cannot be: names it and the fix (a usage error).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    #[error("--shard {text:?} is not K/N: write e.g. --shard 2/4 (shard 2 of 4, counted from 1)")]
    NotKOverN { text: String },
    #[error(
        "the shard count must be from 1 to {MAX_SHARDS}, not {count}: pass e.g. --shard 1/4 or --shard-count 4"
    )]
    Count { count: usize },
    #[error(
        "shard {index} of {count} does not exist: shards are counted from 1 to {count} (e.g. --shard 1/{count})"
    )]
    Index { index: usize, count: usize },
    #[error(
        "$JOB_COMPLETION_INDEX {value:?} is not a number: it is the 0-based index a Kubernetes Indexed Job sets"
    )]
    EnvIndex { value: String },
    #[error(
        "$JOB_COMPLETION_INDEX {value} is not below --shard-count {count}: give the Job's `completions` as --shard-count"
    )]
    EnvIndexTooLarge { value: usize, count: usize },
    #[error(
        "--shard-from-env needs $JOB_COMPLETION_INDEX, which a Kubernetes Indexed Job sets; elsewhere pass --shard K/N"
    )]
    EnvMissing,
}

impl Shard {
    /// Parses `K/N` (1-based).
    pub fn parse(text: &str) -> Result<Self, ShardError> {
        let bad = || ShardError::NotKOverN {
            text: text.to_string(),
        };
        let (k, n) = text.trim().split_once('/').ok_or_else(bad)?;
        let index: usize = k.trim().parse().map_err(|_| bad())?;
        let count: usize = n.trim().parse().map_err(|_| bad())?;
        Self::new(index, count)
    }

    /// From a 0-based completion index (`$JOB_COMPLETION_INDEX`) and N.
    pub fn from_index(index: &str, count: usize) -> Result<Self, ShardError> {
        let zero_based: usize = index.trim().parse().map_err(|_| ShardError::EnvIndex {
            value: index.to_string(),
        })?;
        Self::new(1, count)?;
        if zero_based >= count {
            return Err(ShardError::EnvIndexTooLarge {
                value: zero_based,
                count,
            });
        }
        Self::new(zero_based + 1, count)
    }

    pub(crate) fn new(index: usize, count: usize) -> Result<Self, ShardError> {
        if count == 0 || count > MAX_SHARDS {
            return Err(ShardError::Count { count });
        }
        if index == 0 || index > count {
            return Err(ShardError::Index { index, count });
        }
        Ok(Self { index, count })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// The shard (1..=count) of each group of `plan`, in plan order.
pub(crate) fn assign(plan: &Plan, count: usize) -> Vec<usize> {
    let count = count.max(1);
    let mut order: Vec<usize> = (0..plan.groups.len()).collect();
    order.sort_by(|&a, &b| {
        let (ga, gb) = (&plan.groups[a], &plan.groups[b]);
        gb.tokens.cmp(&ga.tokens).then_with(|| ga.id.cmp(&gb.id))
    });
    let mut load = vec![0u64; count];
    let mut shard_of = vec![1; plan.groups.len()];
    for group in order {
        let (lightest, _) = load
            .iter()
            .enumerate()
            .min_by_key(|(i, l)| (**l, *i))
            .unwrap_or((0, &0));
        load[lightest] += plan.groups[group].tokens.max(1);
        shard_of[group] = lightest + 1;
    }
    shard_of
}

/// How a shard's value of a limit was decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShareKind {
    /// The run's value divided by N, rounded down, so the shards together
    /// never exceed it.
    Split,
    /// The run's value divided by N is below 1, which would mean no limit
    /// (`rpm`, `tpm`) or that nothing can run (`max_tokens`): each shard
    /// takes 1, so the N shards together may use up to N.
    AtLeastOne,
    /// Set per shard in the configuration (`[shard]` in fanscan.toml or
    /// `--shard-rpm` and the like), used as it is.
    Configured,
    /// Neither the run nor the shard has this limit.
    Unlimited,
}

/// One limit of a shard: the run's value, the shard's, and how the one
/// came from the other. `None` is no limit.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Share<T> {
    /// The whole run's value, for all shards together.
    pub whole: Option<T>,
    /// The value this shard ran with.
    pub per_shard: Option<T>,
    pub how: ShareKind,
}

/// What a shard of N may use: requests and tokens a minute, the cost and
/// token budgets, each with the run's value and how it was shared.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShardQuota {
    /// N, the shards the run's values are shared by.
    pub shards: usize,
    pub rpm: Share<u64>,
    pub tpm: Share<u64>,
    pub max_cost: Share<f64>,
    pub max_tokens: Share<u64>,
}

/// The run's limits and budgets, or a shard's configured ones (`None`:
/// no limit, or not configured).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Quota {
    pub(crate) rpm: Option<u64>,
    pub(crate) tpm: Option<u64>,
    pub(crate) max_cost: Option<f64>,
    pub(crate) max_tokens: Option<u64>,
}

impl ShardQuota {
    /// Each of `whole`'s values shared by `shards`, except where
    /// `configured` sets the shard's own.
    pub(crate) fn of(whole: Quota, configured: Quota, shards: usize) -> Self {
        let n = shards.max(1);
        Self {
            shards: n,
            rpm: share_count(whole.rpm, configured.rpm, n),
            tpm: share_count(whole.tpm, configured.tpm, n),
            max_cost: share_cost(whole.max_cost, configured.max_cost, n),
            max_tokens: share_count(whole.max_tokens, configured.max_tokens, n),
        }
    }

    /// In words, for the report: `rpm 150 (600 split 4 ways), ...`.
    pub(crate) fn describe(&self) -> String {
        let n = self.shards;
        let count = |name: &str, s: &Share<u64>| describe(name, s, n, |v| v.to_string());
        let cost = describe("max cost", &self.max_cost, n, |v| format!("${v:.4}"));
        format!(
            "{}, {}, {}, {}",
            count("rpm", &self.rpm),
            count("tpm", &self.tpm),
            cost,
            count("max tokens", &self.max_tokens)
        )
    }
}

/// One share in words.
fn describe<T: Copy>(name: &str, s: &Share<T>, n: usize, show: impl Fn(T) -> String) -> String {
    let whole = || s.whole.map_or("unlimited".to_string(), &show);
    match (s.how, s.per_shard) {
        (ShareKind::Unlimited, _) | (_, None) => format!("{name} unlimited"),
        (ShareKind::Split, Some(v)) => format!("{name} {} ({} split {n} ways)", show(v), whole()),
        (ShareKind::AtLeastOne, Some(v)) => format!(
            "{name} {} ({} split {n} ways is below 1, so each shard takes 1 and the {n} shards together may use {n}; set a per-shard value or run fewer shards)",
            show(v),
            whole()
        ),
        (ShareKind::Configured, Some(v)) => format!(
            "{name} {} (configured per shard; the run's is {})",
            show(v),
            whole()
        ),
    }
}

/// A count shared by `n`: rounded down, at least 1.
fn share_count(whole: Option<u64>, configured: Option<u64>, n: usize) -> Share<u64> {
    let n = u64::try_from(n).unwrap_or(u64::MAX);
    let (per_shard, how) = match (configured, whole) {
        (Some(v), _) => (Some(v), ShareKind::Configured),
        (None, None) => (None, ShareKind::Unlimited),
        (None, Some(w)) if w / n == 0 => (Some(1), ShareKind::AtLeastOne),
        (None, Some(w)) => (Some(w / n), ShareKind::Split),
    };
    Share {
        whole,
        per_shard,
        how,
    }
}

/// A dollar amount shared by `n`: the largest value whose `n` times does
/// not exceed the whole (a plain division may round up by a bit).
fn share_cost(whole: Option<f64>, configured: Option<f64>, n: usize) -> Share<f64> {
    let (per_shard, how) = match (configured, whole) {
        (Some(v), _) => (Some(v), ShareKind::Configured),
        (None, None) => (None, ShareKind::Unlimited),
        (None, Some(w)) => {
            // Exact for any count a shard may have (at most MAX_SHARDS).
            let n = n as f64;
            let mut share = w / n;
            while share > 0.0 && share * n > w {
                share = share.next_down();
            }
            (Some(share), ShareKind::Split)
        }
    };
    Share {
        whole,
        per_shard,
        how,
    }
}

/// The ids of the groups of `plan` that `shard` runs, in plan order.
pub(crate) fn groups_of(plan: &Plan, shard: Shard) -> Vec<String> {
    plan.groups
        .iter()
        .zip(assign(plan, shard.count))
        .filter(|(_, s)| *s == shard.index)
        .map(|(g, _)| g.id.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stages::plan::Group;

    fn plan(tokens: &[u64]) -> Plan {
        Plan {
            planner: "pack".into(),
            group_tokens: 1000,
            groups: tokens
                .iter()
                .enumerate()
                .map(|(i, t)| Group {
                    id: format!("g{i:02}"),
                    files: vec![format!("f{i}")],
                    focus: None,
                    agent: "auditor".into(),
                    tokens: *t,
                })
                .collect(),
            notes: Vec::new(),
        }
    }

    #[test]
    fn every_group_is_in_exactly_one_shard_and_shards_are_balanced() {
        let p = plan(&[900, 100, 500, 500, 300, 700, 200, 800]);
        let shards = assign(&p, 3);
        assert_eq!(shards.len(), 8);
        assert!(shards.iter().all(|s| (1..=3).contains(s)));
        let mut load = [0u64; 3];
        for (g, s) in p.groups.iter().zip(&shards) {
            load[s - 1] += g.tokens;
        }
        // 4000 tokens over 3: greedy largest-first keeps within one group.
        assert!(
            load.iter().max().unwrap() - load.iter().min().unwrap() <= 300,
            "{load:?}"
        );
        // Deterministic.
        assert_eq!(assign(&p, 3), shards);
    }

    #[test]
    fn more_shards_than_groups_leaves_some_empty() {
        let shards = assign(&plan(&[10, 10]), 4);
        assert_eq!(shards, vec![1, 2]);
    }

    #[test]
    fn shards_share_the_run_s_limits_unless_configured_per_shard() {
        let whole = Quota {
            rpm: Some(600),
            tpm: Some(1_000_001),
            max_cost: Some(20.0),
            max_tokens: Some(3),
        };
        let q = ShardQuota::of(whole, Quota::default(), 4);
        assert_eq!(q.shards, 4);
        assert_eq!(
            q.rpm,
            Share {
                whole: Some(600),
                per_shard: Some(150),
                how: ShareKind::Split
            }
        );
        // Rounded down: 4 shards never exceed the whole.
        assert_eq!(q.tpm.per_shard, Some(250_000));
        assert_eq!(q.max_cost.per_shard, Some(5.0));
        assert_eq!(q.max_cost.how, ShareKind::Split);
        // 3 tokens over 4 shards: 0 would let nothing run.
        assert_eq!(
            q.max_tokens,
            Share {
                whole: Some(3),
                per_shard: Some(1),
                how: ShareKind::AtLeastOne
            }
        );
        let text = q.describe();
        assert!(text.starts_with("rpm 150 (600 split 4 ways), tpm 250000 (1000001 split 4 ways), max cost $5.0000 ($20.0000 split 4 ways), max tokens 1 (3 split 4 ways is below 1"), "{text}");

        let configured = Quota {
            rpm: Some(500),
            max_cost: Some(7.5),
            ..Quota::default()
        };
        let q = ShardQuota::of(Quota { rpm: None, ..whole }, configured, 4);
        assert_eq!(
            q.rpm,
            Share {
                whole: None,
                per_shard: Some(500),
                how: ShareKind::Configured
            }
        );
        assert_eq!(q.max_cost.per_shard, Some(7.5));
        assert_eq!(q.max_cost.how, ShareKind::Configured);
        assert_eq!(q.tpm.how, ShareKind::Split);
        let none = ShardQuota::of(Quota::default(), Quota::default(), 3);
        assert_eq!(none.rpm.how, ShareKind::Unlimited);
        assert_eq!(none.max_cost.per_shard, None);
        assert!(none.describe().starts_with("rpm unlimited, tpm unlimited"));
    }

    #[test]
    fn a_split_cost_never_adds_up_to_more_than_the_whole() {
        for n in [3usize, 7, 9, 10, 11, 13, 97, 9_999, MAX_SHARDS] {
            for whole in [0.1, 1.0, 2.3, 20.0, 33.33, 1e-9] {
                let share = share_cost(Some(whole), None, n).per_shard.unwrap();
                assert!(
                    share > 0.0 && share * n as f64 <= whole,
                    "{whole} / {n} = {share}"
                );
            }
        }
    }

    #[test]
    fn parse_and_from_index() {
        assert_eq!(Shard::parse("2/4").unwrap(), Shard { index: 2, count: 4 });
        assert_eq!(
            Shard::from_index("0", 3).unwrap(),
            Shard { index: 1, count: 3 }
        );
        assert!(
            Shard::parse("0/4")
                .unwrap_err()
                .to_string()
                .contains("counted from 1")
        );
        assert!(Shard::parse("5/4").is_err());
        assert!(Shard::parse("1/0").is_err());
        assert!(Shard::parse("two").unwrap_err().to_string().contains("K/N"));
        assert!(Shard::from_index("3", 3).is_err());
        assert!(Shard::from_index("x", 3).is_err());
    }
}
