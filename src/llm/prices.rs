//! The price table: US dollars per million tokens per model, kept in
//! `configs/prices.toml` (compiled in) or a file given with `--prices`.
//!
//! Takes a model name; gives its [`Price`], matched exactly or by the
//! longest listed prefix (dated model names).

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::llm::conversation::Usage;

/// The built-in table.
pub(crate) const BUILTIN_PRICES: &str = include_str!("../../configs/prices.toml");

/// One model's prices, per million tokens.
#[derive(Clone, Copy, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Price {
    pub input: f64,
    pub output: f64,
    /// Input tokens read from the prompt cache.
    #[serde(default)]
    pub cached: Option<f64>,
    /// Input tokens written to the prompt cache (absent: the input price).
    #[serde(default)]
    pub cache_write: Option<f64>,
    /// The share of every price above that a request sent through the
    /// provider's batch API pays (`--batch`); absent: 0.5, what OpenAI's
    /// Batch API and Anthropic's Message Batches charge.
    #[serde(default)]
    pub batch: Option<f64>,
}

/// The share of the price a batched request pays when the table says
/// nothing: half, at both OpenAI and Anthropic.
pub(crate) const BATCH_SHARE: f64 = 0.5;

impl Price {
    /// The prices of a request sent through a batch: each price times
    /// the model's batch share (cache reads and writes included: both
    /// providers apply the batch discount on top of caching's).
    pub(crate) fn batched(&self) -> Price {
        let share = self.batch.unwrap_or(BATCH_SHARE);
        Price {
            input: self.input * share,
            output: self.output * share,
            cached: self.cached.map(|p| p * share),
            cache_write: self.cache_write.map(|p| p * share),
            batch: Some(1.0),
        }
    }

    /// The cost of `usage` in US dollars: fresh input, cache reads and
    /// cache writes each at their own price.
    pub(crate) fn cost(&self, usage: &Usage) -> f64 {
        let cached = usage.cached_tokens.min(usage.input_tokens);
        let written = usage.cache_write_tokens.min(usage.input_tokens - cached);
        let fresh = usage.input_tokens - cached - written;
        (fresh as f64 * self.input
            + cached as f64 * self.cached.unwrap_or(self.input)
            + written as f64 * self.cache_write.unwrap_or(self.input)
            + usage.output_tokens as f64 * self.output)
            / 1_000_000.0
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    models: BTreeMap<String, Price>,
}

/// A price table that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PriceError {
    #[error("{source_name}: cannot read the price table: {error}")]
    Read {
        source_name: String,
        error: std::io::Error,
    },
    #[error("{source_name}: invalid price table: {detail}")]
    Toml { source_name: String, detail: String },
    #[error("{source_name}: model {model:?}: prices must be non-negative numbers")]
    Negative { source_name: String, model: String },
}

/// A parsed price table.
#[derive(Clone, Debug, Default)]
pub(crate) struct Prices {
    models: BTreeMap<String, Price>,
}

impl Prices {
    /// Parses a table; errors name the source.
    pub(crate) fn parse(source: &str, text: &str) -> Result<Self, PriceError> {
        let table: Table = toml::from_str(text).map_err(|e| PriceError::Toml {
            source_name: source.to_string(),
            detail: crate::util::toml_error(text, &e),
        })?;
        for (name, p) in &table.models {
            if [
                p.input,
                p.output,
                p.cached.unwrap_or(0.0),
                p.cache_write.unwrap_or(0.0),
                p.batch.unwrap_or(0.0),
            ]
            .iter()
            .any(|v| !v.is_finite() || *v < 0.0)
            {
                return Err(PriceError::Negative {
                    source_name: source.to_string(),
                    model: name.clone(),
                });
            }
        }
        Ok(Self {
            models: table.models,
        })
    }

    /// The built-in table.
    pub(crate) fn builtin() -> Result<Self, PriceError> {
        Self::parse("builtin:configs/prices.toml", BUILTIN_PRICES)
    }

    /// The price table at `path`.
    pub(crate) fn load(path: &std::path::Path) -> Result<Self, PriceError> {
        let source_name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|error| PriceError::Read {
            source_name: source_name.clone(),
            error,
        })?;
        Self::parse(&source_name, &text)
    }

    /// The price of `model`: exact, else the longest listed prefix.
    pub(crate) fn get(&self, model: &str) -> Option<Price> {
        if let Some(p) = self.models.get(model) {
            return Some(*p);
        }
        self.models
            .iter()
            .filter(|(name, _)| model.starts_with(name.as_str()))
            .max_by_key(|(name, _)| name.len())
            .map(|(_, p)| *p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_table_prices_by_exact_name_or_prefix() {
        let prices = Prices::builtin().unwrap();
        let mini = prices.get("gpt-4o-mini").unwrap();
        assert_eq!(prices.get("gpt-4o-mini-2024-07-18"), Some(mini));
        assert_ne!(prices.get("gpt-4o-2024-08-06"), Some(mini));
        assert_eq!(prices.get("llama3"), None);
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 1_000_000,
            cached_tokens: 0,
            cache_write_tokens: 0,
        };
        assert!((mini.cost(&usage) - 0.75).abs() < 1e-9);
    }

    #[test]
    fn cached_tokens_are_priced_as_cached() {
        let p = Price {
            input: 1.0,
            output: 0.0,
            cached: Some(0.1),
            cache_write: None,
            batch: None,
        };
        let u = Usage {
            input_tokens: 1_000_000,
            output_tokens: 0,
            cached_tokens: 500_000,
            cache_write_tokens: 0,
        };
        assert!((p.cost(&u) - 0.55).abs() < 1e-9);
    }

    #[test]
    fn anthropic_cache_writes_and_reads_are_priced_at_their_multipliers() {
        let prices = Prices::builtin().unwrap();
        let sonnet = prices.get("claude-sonnet-4-6").unwrap();
        assert_eq!(sonnet.cache_write, Some(3.75), "1.25x the input price");
        assert_eq!(sonnet.cached, Some(0.30), "0.1x the input price");
        // 1M input of which 400k written and 500k read, no output.
        let u = Usage {
            input_tokens: 1_000_000,
            output_tokens: 0,
            cached_tokens: 500_000,
            cache_write_tokens: 400_000,
        };
        let expected = (100_000.0 * 3.0 + 500_000.0 * 0.30 + 400_000.0 * 3.75) / 1e6;
        assert!((sonnet.cost(&u) - expected).abs() < 1e-9);
    }

    #[test]
    fn a_batched_request_pays_the_models_batch_share_of_every_price() {
        let table = Prices::parse(
            "t",
            "[models.a]\ninput = 2.0\noutput = 8.0\ncached = 0.5\n[models.b]\ninput = 1.0\noutput = 1.0\nbatch = 0.25\n",
        )
        .unwrap();
        let a = table.get("a").unwrap().batched();
        assert_eq!(
            (a.input, a.output, a.cached, a.cache_write),
            (1.0, 4.0, Some(0.25), None)
        );
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 1_000_000,
            ..Usage::default()
        };
        assert_eq!(table.get("b").unwrap().batched().cost(&usage), 0.5);
        assert!(
            Prices::parse("t", "[models.c]\ninput = 1.0\noutput = 1.0\nbatch = -1.0\n").is_err()
        );
    }
}
