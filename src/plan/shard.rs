//! Shards: a deterministic, token-balanced share of a plan's groups.
//!
//! Takes a [`Plan`] and a shard count N; gives each group's shard (1..=N).
//! Groups go, largest first (ties by id), to the shard with the fewest
//! estimated tokens so far (ties to the lowest number): every machine that
//! plans the same repository assigns the same groups, with no coordination.
//! Pure: no I/O.
//!
//! Not wired to `fanscan scan --shard` / `fanscan merge` yet (issue 11,
//! what is left): the assignment and its parsing are here and tested.
#![allow(dead_code)]

use serde::{Deserialize, Serialize};

use super::Plan;

/// Shard K of N, 1-based.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Shard {
    pub(crate) index: usize,
    pub(crate) count: usize,
}

/// The most shards a plan is split into.
const MAX_SHARDS: usize = 10_000;

impl Shard {
    /// Parses `K/N` (1-based).
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "--shard {text:?} is not K/N: write e.g. --shard 2/4 (shard 2 of 4, counted from 1)"
            )
        };
        let (k, n) = text.trim().split_once('/').ok_or_else(bad)?;
        let index: usize = k.trim().parse().map_err(|_| bad())?;
        let count: usize = n.trim().parse().map_err(|_| bad())?;
        Self::new(index, count)
    }

    /// From a 0-based completion index (`$JOB_COMPLETION_INDEX`) and N.
    pub(crate) fn from_index(index: &str, count: usize) -> Result<Self, String> {
        let zero_based: usize = index.trim().parse().map_err(|_| {
            format!("$JOB_COMPLETION_INDEX {index:?} is not a number (it is 0-based, set by a Kubernetes Indexed Job)")
        })?;
        Self::new(zero_based + 1, count)
            .map_err(|e| format!("$JOB_COMPLETION_INDEX {index} with --shard-count {count}: {e}"))
    }

    fn new(index: usize, count: usize) -> Result<Self, String> {
        if count == 0 || count > MAX_SHARDS {
            return Err(format!(
                "the shard count must be from 1 to {MAX_SHARDS}, not {count}"
            ));
        }
        if index == 0 || index > count {
            return Err(format!(
                "shard {index} of {count} does not exist: shards are counted from 1 to {count}"
            ));
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
                    agent: None,
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
        assert!(Shard::parse("0/4").unwrap_err().contains("counted from 1"));
        assert!(Shard::parse("5/4").is_err());
        assert!(Shard::parse("two").unwrap_err().contains("K/N"));
        assert!(Shard::from_index("3", 3).is_err());
        assert!(Shard::from_index("x", 3).is_err());
    }
}
