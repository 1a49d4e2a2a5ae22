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
    use crate::plan::Group;

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
