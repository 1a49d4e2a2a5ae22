//! `fanscan plan --estimate`: a token and cost range for a scan, before any
//! model is called.
//!
//! Takes the plan, the model's name and price and the output limit; gives
//! low and high estimates. Each
//! sub-agent re-sends its conversation every round, so input grows with the
//! rounds its reads are spread over: the low end assumes every file is read
//! in one round, the high end over four, plus the forced summary turn.

use serde::Serialize;

use super::Plan;
use crate::conversation::Usage;
use crate::prices::Price;

/// Tokens of the system prompt, task and tool specs sent every round.
const OVERHEAD: u64 = 1_500;

/// An estimate of a scan's size.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Estimate {
    pub groups: usize,
    pub content_tokens: u64,
    pub low_tokens: u64,
    pub high_tokens: u64,
    pub low_cost_usd: Option<f64>,
    pub high_cost_usd: Option<f64>,
    pub model: String,
}

impl Estimate {
    /// One line for people.
    pub fn describe(&self) -> String {
        let cost = match (self.low_cost_usd, self.high_cost_usd) {
            (Some(l), Some(h)) => format!("${l:.2} to ${h:.2}"),
            _ => "unknown cost (model not in the price table)".to_string(),
        };
        format!(
            "estimate for model {}: {} groups, {} content tokens; {} to {} tokens in all, {cost}",
            self.model,
            self.groups,
            crate::util::human_count(self.content_tokens),
            crate::util::human_count(self.low_tokens),
            crate::util::human_count(self.high_tokens)
        )
    }
}

/// Estimates a scan of `plan` with `model` at `price` (unknown: `None`).
pub(crate) fn estimate(
    plan: &Plan,
    model: &str,
    price: Option<Price>,
    max_output_tokens: u32,
) -> Estimate {
    let output = u64::from(max_output_tokens);
    let mut low = Usage::default();
    let mut high = Usage::default();
    let mut content_tokens = 0;
    for g in &plan.groups {
        content_tokens += g.tokens;
        // Low: read everything in one round, then summarise (3 calls).
        low.input_tokens += 3 * OVERHEAD + 2 * g.tokens;
        low.output_tokens += 600;
        // High: reads spread over four rounds, then summarise (6 calls).
        high.input_tokens += 6 * OVERHEAD + 4 * g.tokens;
        high.output_tokens += 2 * output;
    }
    Estimate {
        groups: plan.groups.len(),
        content_tokens,
        low_tokens: low.total(),
        high_tokens: high.total(),
        low_cost_usd: price.map(|p| p.cost(&low)),
        high_cost_usd: price.map(|p| p.cost(&high)),
        model: model.to_string(),
    }
}
