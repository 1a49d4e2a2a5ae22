//! Estimates: what a group and a whole scan will cost, before any model is
//! called. `fanscan plan --estimate` prints them; the budget reserves them
//! for groups in flight; a budget below the cheapest group is refused.
//!
//! Takes a group's content tokens, whether its agent preloads its files and
//! the output limit (and for a scan, the plan, the model and its price);
//! gives token ranges with their cache reads and writes, and costs.
//!
//! A preloading agent's group costs two turns when nothing needs following
//! up (the answer and the forced summary), both carrying the files; with a
//! prompt cache the second reads the first's prefix. The high end allows a
//! follow-up turn and a repair turn. An agent that reads its files itself
//! re-sends what it read every round: three calls at best, six at worst.

use std::collections::HashMap;

use rayon::prelude::*;
use serde::Serialize;

use super::Plan;
use crate::llm::budget::Cheapest;
use crate::llm::conversation::Usage;
use crate::llm::prices::Price;
use crate::llm::tokens::TokenCounter;
use crate::stages::inventory::Inventory;

/// Tokens of the system prompt, task text and tool specs sent every round.
pub(crate) const OVERHEAD: u64 = 1_500;

/// Numbered lines (`12\t`) make a file as sent larger than its source.
const NUMBERING: f64 = 1.1;

/// Output of a turn that answers at once, in the low estimate.
const TYPICAL_OUTPUT: u64 = 600;

/// One group's estimated usage.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct GroupEstimate {
    pub(crate) low: Usage,
    pub(crate) high: Usage,
}

impl GroupEstimate {
    /// What the budget reserves for the group while it runs (the low end:
    /// what it costs when nothing needs following up), so that a run stops
    /// near its budget rather than far past it.
    pub(crate) fn reserve(&self) -> u64 {
        self.low.total()
    }
}

/// The plan's group that reserves the least (the first of equals), as
/// [`crate::llm::budget::check`] weighs it; none for an empty plan.
pub(crate) fn cheapest(plan: &Plan, preload: bool, max_output_tokens: u32) -> Option<Cheapest> {
    plan.groups
        .iter()
        .map(|g| {
            let e = group(g.tokens, preload, max_output_tokens);
            (e.reserve(), e.low, g.id.as_str())
        })
        .min_by_key(|(reserve, _, _)| *reserve)
        .map(|(reserve, low, group)| Cheapest {
            group: group.to_string(),
            group_tokens: plan.group_tokens,
            reserve,
            low,
        })
}

/// The estimate for a group of `content_tokens` (estimated from bytes).
pub(crate) fn group(content_tokens: u64, preload: bool, max_output_tokens: u32) -> GroupEstimate {
    let files = (content_tokens as f64 * NUMBERING).ceil() as u64;
    let prefix = OVERHEAD + files;
    let output = u64::from(max_output_tokens);
    if preload {
        GroupEstimate {
            // The answer and the summary; the summary reads the answer's
            // prefix from the cache, which the answer wrote.
            low: Usage {
                input_tokens: 2 * prefix,
                output_tokens: 2 * TYPICAL_OUTPUT,
                cached_tokens: prefix,
                cache_write_tokens: prefix,
            },
            // A follow-up turn and a repair turn on top, each reading the
            // growing prefix.
            high: Usage {
                input_tokens: 4 * prefix + 3 * output,
                output_tokens: 2 * output,
                cached_tokens: 3 * prefix,
                cache_write_tokens: prefix,
            },
        }
    } else {
        GroupEstimate {
            // Read everything in one round, then summarise: 3 calls.
            low: Usage {
                input_tokens: 3 * OVERHEAD + 2 * files,
                output_tokens: TYPICAL_OUTPUT,
                ..Usage::default()
            },
            // Reads spread over four rounds, then summarise: 6 calls.
            high: Usage {
                input_tokens: 6 * OVERHEAD + 4 * files,
                output_tokens: 2 * output,
                ..Usage::default()
            },
        }
    }
}

/// An estimate of a scan's size.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Estimate {
    pub groups: usize,
    pub content_tokens: u64,
    pub low_tokens: u64,
    pub high_tokens: u64,
    /// Input tokens the low end reads from the prompt cache.
    pub low_cached_tokens: u64,
    pub low_cost_usd: Option<f64>,
    pub high_cost_usd: Option<f64>,
    /// `--batch`: the same range at the batch price (the costs above are
    /// the synchronous price); absent without it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch_low_cost_usd: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch_high_cost_usd: Option<f64>,
    pub model: String,
    /// Whether the agent's files are preloaded (two turns a group).
    pub preload: bool,
    /// How the files' tokens were counted: `o200k_base` or `cl100k_base`
    /// (the model's own tokenizer, over each file's text), or `bytes / 3`.
    pub counted_with: String,
    /// Files that could not be read to be counted (changed or removed
    /// since the walk): counted as bytes / 3 of their walked size.
    pub unread: Vec<String>,
    /// Audits of each group (`--samples`): the tokens and costs above
    /// count every one.
    #[serde(skip_serializing_if = "is_one")]
    pub samples: u32,
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

impl Estimate {
    /// One line for people.
    pub fn describe(&self) -> String {
        let mut cost = match (self.low_cost_usd, self.high_cost_usd) {
            (Some(l), Some(h)) => format!("${l:.2} to ${h:.2}"),
            _ => "unknown cost (model not in the price table)".to_string(),
        };
        if let (Some(l), Some(h)) = (self.batch_low_cost_usd, self.batch_high_cost_usd) {
            cost = format!("{cost} synchronously, ${l:.2} to ${h:.2} through batches (--batch)");
        }
        let counted = if self.counted_with == TokenCounter::Bytes.name() {
            "tokens counted as bytes / 3 (a scan calibrates its budgets on the server's own counts)"
                .to_string()
        } else {
            format!(
                "file tokens counted with {}, the model's own tokenizer{}",
                self.counted_with,
                match self.unread.len() {
                    0 => String::new(),
                    n => format!(
                        " ({} not readable now, counted as bytes / 3)",
                        crate::util::count(n, "file")
                    ),
                }
            )
        };
        format!(
            "estimate for model {}: {}, {} content tokens; {} to {} tokens in all ({} of the low end read from the prompt cache{}), {cost}; {counted}",
            self.model,
            crate::util::count(self.groups, "group"),
            crate::util::human_count(self.content_tokens),
            crate::util::human_count(self.low_tokens),
            crate::util::human_count(self.high_tokens),
            crate::util::human_count(self.low_cached_tokens),
            match (self.preload, self.samples) {
                (true, 1) => "; files preloaded, two turns a group".to_string(),
                (false, 1) => String::new(),
                (true, n) => format!("; files preloaded, two turns a group; {n} samples a group"),
                (false, n) => format!("; {n} samples a group"),
            }
        )
    }
}

/// What the groups' files hold in tokens, in plan order.
pub(crate) struct Content {
    pub(crate) tokens: Vec<u64>,
    pub(crate) counted_with: TokenCounter,
    pub(crate) unread: Vec<String>,
}

impl Content {
    /// The plan's own estimates (bytes / 3 of each file's size).
    pub(crate) fn walked(plan: &Plan) -> Self {
        Self {
            tokens: plan.groups.iter().map(|g| g.tokens).collect(),
            counted_with: TokenCounter::Bytes,
            unread: Vec::new(),
        }
    }

    /// Each group's files under `root` counted with `counter` (the
    /// model's own tokenizer), on every core: a file that cannot be read
    /// now is counted as bytes / 3 of its walked size and listed.
    pub(crate) fn counted(plan: &Plan, inventory: &Inventory, counter: TokenCounter) -> Self {
        let sizes: HashMap<&str, u64> = inventory
            .files
            .iter()
            .map(|f| (f.path.as_str(), f.bytes))
            .collect();
        let files: Vec<(usize, &str)> = plan
            .groups
            .iter()
            .enumerate()
            .flat_map(|(i, g)| g.files.iter().map(move |f| (i, f.as_str())))
            .collect();
        // CPU-bound over many files: rayon's pool, one task per file. A
        // file that cannot be read gives its path, counted at bytes / 3.
        let counted: Vec<(usize, Result<u64, &str>)> = files
            .par_iter()
            .map(|(group, path)| {
                let tokens = std::fs::read(inventory.root.join(path))
                    .map(|bytes| counter.count_bytes(&bytes))
                    .map_err(|_| *path);
                (*group, tokens)
            })
            .collect();
        let mut content = Self {
            tokens: vec![0; plan.groups.len()],
            counted_with: counter,
            unread: Vec::new(),
        };
        for (group, tokens) in counted {
            content.tokens[group] += match tokens {
                Ok(tokens) => tokens,
                Err(path) => {
                    let tokens =
                        crate::util::estimate_tokens(sizes.get(path).copied().unwrap_or(0));
                    content.unread.push(path.to_string());
                    tokens
                }
            };
        }
        content.unread.sort();
        content
    }
}

/// How a scan's groups are asked: the output cap of a call, whether the
/// files are preloaded, and how many samples of each group.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Asked {
    pub(crate) max_output_tokens: u32,
    pub(crate) preload: bool,
    pub(crate) samples: u32,
}

/// Estimates a scan of `plan` whose groups hold `content` tokens, with
/// `model` at `price` (unknown: `None`) and, under `--batch`, at
/// `batch_price` too.
pub(crate) fn estimate(
    plan: &Plan,
    content: Content,
    model: &str,
    (price, batch_price): (Option<Price>, Option<Price>),
    asked: Asked,
) -> Estimate {
    let Asked {
        max_output_tokens,
        preload,
        samples,
    } = asked;
    let mut low = Usage::default();
    let mut high = Usage::default();
    let mut content_tokens = 0;
    for &tokens in &content.tokens {
        content_tokens += tokens;
        let e = group(tokens, preload, max_output_tokens);
        // Each sample of a group is a conversation of its own.
        for _ in 0..samples.max(1) {
            low.add(e.low);
            high.add(e.high);
        }
    }
    Estimate {
        groups: plan.groups.len(),
        content_tokens,
        low_tokens: low.total(),
        high_tokens: high.total(),
        low_cached_tokens: low.cached_tokens,
        low_cost_usd: price.map(|p| p.cost(&low)),
        high_cost_usd: price.map(|p| p.cost(&high)),
        batch_low_cost_usd: batch_price.map(|p| p.cost(&low)),
        batch_high_cost_usd: batch_price.map(|p| p.cost(&high)),
        model: model.to_string(),
        preload,
        counted_with: content.counted_with.name().to_string(),
        unread: content.unread,
        samples: samples.max(1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_preloaded_group_costs_two_turns_of_its_prefix_at_the_low_end() {
        let e = group(10_000, true, 4096);
        let prefix = OVERHEAD + 11_000;
        assert_eq!(e.low.input_tokens, 2 * prefix);
        assert_eq!(e.low.cached_tokens, prefix, "the summary reads the cache");
        assert!(e.high.total() > e.low.total());
        let reading = group(10_000, false, 4096);
        assert!(reading.low.input_tokens < reading.high.input_tokens);
        // Caching makes the preloaded group cheaper than its raw tokens at
        // Anthropic's multipliers: at most 1.7x the files billed.
        let sonnet = Price {
            input: 3.0,
            output: 0.0,
            cached: Some(0.3),
            cache_write: Some(3.75),
            batch: None,
        };
        let billed = sonnet.cost(&Usage {
            output_tokens: 0,
            ..e.low
        }) / 3.0
            * 1e6;
        assert!(billed / (prefix as f64) < 1.4, "{billed}");
    }
}
