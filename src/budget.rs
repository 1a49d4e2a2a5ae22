//! The run's token and cost budget, checked synchronously on every model
//! call and before every group starts.
//!
//! Takes each call's usage as it happens; winds the run down (no new group,
//! running agents give their summary) the moment a budget is reached, and
//! refuses to start a group whose estimate would cross it.

use std::sync::Mutex;

use crate::fanout::RunControl;
use crate::prices::Price;
use crate::providers::Usage;

/// Prices a call by the model that answered it.
pub type Pricer = Box<dyn Fn(&str) -> Option<Price> + Send + Sync>;

/// Token and cost limits and what was spent.
#[derive(Default)]
pub struct Spend {
    max_tokens: Option<u64>,
    max_cost: Option<f64>,
    /// The price of the run's model, for estimates before a group starts.
    price: Option<Price>,
    /// Prices each call by its own model (an agent may override the run's).
    pricer: Option<Pricer>,
    used: Mutex<(Usage, f64)>,
    control: RunControl,
}

impl Spend {
    /// A budget that winds `control` down when reached.
    pub fn new(
        max_tokens: Option<u64>,
        max_cost: Option<f64>,
        price: Option<Price>,
        control: RunControl,
    ) -> Self {
        Self {
            max_tokens,
            max_cost,
            price,
            pricer: None,
            used: Mutex::new((Usage::default(), 0.0)),
            control,
        }
    }

    /// Prices each call by the model that answered it.
    pub fn with_pricer(mut self, pricer: Pricer) -> Self {
        self.pricer = Some(pricer);
        self
    }

    /// No limits (run-agent, tests).
    pub fn unlimited() -> Self {
        Self::default()
    }

    /// What was spent so far.
    pub fn used(&self) -> Usage {
        self.used.lock().map(|u| u.0).unwrap_or_default()
    }

    /// Counts one call's usage, priced by `model`; winds the run down when
    /// a budget is reached.
    pub fn add(&self, usage: Usage, model: &str) {
        let price = match &self.pricer {
            Some(pricer) => pricer(model),
            None => self.price,
        };
        let (total, cost) = match self.used.lock() {
            Ok(mut used) => {
                used.0.add(usage);
                used.1 += price.map_or(0.0, |p| p.cost(&usage));
                *used
            }
            Err(_) => return,
        };
        if let Some(reason) = self.exceeded(&total, cost, 0) {
            self.control.wind_down(&reason);
        }
    }

    /// Whether work estimated at `tokens` more may start. A refusal winds
    /// the run down too, with the reason.
    pub fn allows(&self, tokens: u64) -> bool {
        let (used, cost) = self.used.lock().map(|u| *u).unwrap_or_default();
        match self.exceeded(&used, cost, tokens) {
            Some(reason) => {
                self.control.wind_down(&reason);
                false
            }
            None => true,
        }
    }

    fn exceeded(&self, used: &Usage, cost: f64, more: u64) -> Option<String> {
        if let Some(max) = self.max_tokens
            && used.total() + more >= max
            && (used.total() >= max || more > 0)
        {
            return Some(format!(
                "the token budget (--max-tokens {max}) was reached: no new group was started and running agents gave their summary."
            ));
        }
        if let Some(max) = self.max_cost {
            let next = self.price.map_or(0.0, |p| {
                p.cost(&Usage {
                    input_tokens: more,
                    ..Usage::default()
                })
            });
            if cost + next >= max && (cost >= max || more > 0) {
                return Some(format!(
                    "the cost budget (--max-cost {max}) was reached: no new group was started and running agents gave their summary."
                ));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(n: u64) -> Usage {
        Usage {
            input_tokens: n,
            output_tokens: 0,
            cached_tokens: 0,
        }
    }

    #[test]
    fn reaching_the_token_budget_winds_down_at_once() {
        let control = RunControl::default();
        let spend = Spend::new(Some(100), None, None, control.clone());
        spend.add(usage(60), "m");
        assert!(!control.wrap_up.is_cancelled());
        assert!(!spend.allows(50), "60 + 50 would cross 100");
        assert!(control.stop.is_cancelled());
        let control = RunControl::default();
        let spend = Spend::new(Some(100), None, None, control.clone());
        spend.add(usage(100), "m");
        assert!(control.wrap_up.is_cancelled());
    }

    #[test]
    fn the_cost_budget_uses_the_price() {
        let control = RunControl::default();
        let price = Price {
            input: 1.0,
            output: 1.0,
            cached: None,
        };
        let spend = Spend::new(None, Some(0.5), Some(price), control.clone());
        assert!(spend.allows(400_000));
        spend.add(usage(500_000), "m");
        assert!(control.wrap_up.is_cancelled());
        assert!(control.reasons()[0].contains("--max-cost 0.5"));
    }

    #[test]
    fn each_call_is_priced_by_its_own_model() {
        let control = RunControl::default();
        let cheap = Price {
            input: 0.1,
            output: 0.1,
            cached: None,
        };
        let dear = Price {
            input: 10.0,
            output: 10.0,
            cached: None,
        };
        let spend = Spend::new(None, Some(1.0), Some(cheap), control.clone()).with_pricer(
            Box::new(move |m| Some(if m == "dear" { dear } else { cheap })),
        );
        spend.add(usage(1_000_000), "cheap");
        assert!(!control.wrap_up.is_cancelled());
        spend.add(usage(100_000), "dear");
        assert!(control.wrap_up.is_cancelled(), "$0.10 + $1.00 crosses $1");
    }

    #[test]
    fn no_budget_never_stops() {
        let spend = Spend::unlimited();
        spend.add(usage(u64::MAX / 4), "m");
        assert!(spend.allows(u64::MAX / 4));
    }
}
