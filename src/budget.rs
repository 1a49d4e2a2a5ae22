//! The run's token and cost budget and its ledger: every model call's usage
//! is counted here, synchronously, by agent.
//!
//! Takes each call's usage as it happens; winds the run down (no new group,
//! running agents give their summary) the moment a budget is reached, and
//! refuses work whose estimate would cross it. What each agent (planner,
//! auditors, reducer) spent, in tokens and dollars, is read from here for
//! the report: usage and cost are accounted where the budget lives.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard};

use crate::control::RunControl;
use crate::conversation::Usage;
use crate::prices::Price;

/// Prices a call by the model that answered it.
pub(crate) type Pricer = Box<dyn Fn(&str) -> Option<Price> + Send + Sync>;

/// One agent's tokens and cost over the run. The cost is `None` when a
/// call was made with a model the price table does not know.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AgentUsage {
    #[serde(flatten)]
    pub usage: Usage,
    pub cost_usd: Option<f64>,
}

impl Default for AgentUsage {
    fn default() -> Self {
        Self {
            usage: Usage::default(),
            cost_usd: Some(0.0),
        }
    }
}

#[derive(Debug, Default)]
struct Spent {
    total: Usage,
    /// Dollars of the calls whose model is priced.
    cost: f64,
    by_agent: BTreeMap<String, AgentUsage>,
    /// Groups in flight: (tokens reserved when it started, tokens it has
    /// used since). What they are still expected to spend counts before
    /// more work starts, so a run stops near its budget, not past it.
    open: HashMap<String, Open>,
}

/// A group in flight.
#[derive(Debug, Default)]
struct Open {
    /// Tokens reserved when it started (its low estimate).
    reserved: u64,
    /// Tokens it has used since.
    used: u64,
    /// The size of its latest call: its final summary, still to come, will
    /// carry at least as much.
    pending: u64,
}

impl Open {
    /// What it is still expected to spend: the rest of its reservation, and
    /// never less than the summary it still owes.
    fn outstanding(&self) -> u64 {
        self.reserved.saturating_sub(self.used).max(self.pending)
    }
}

impl Spent {
    /// Tokens the groups in flight (but `except`) are still expected to
    /// spend.
    fn outstanding(&self, except: Option<&str>) -> u64 {
        self.open
            .iter()
            .filter(|(g, _)| Some(g.as_str()) != except)
            .map(|(_, open)| open.outstanding())
            .sum()
    }
}

/// Token and cost limits and what was spent.
#[derive(Default)]
pub(crate) struct Spend {
    max_tokens: Option<u64>,
    max_cost: Option<f64>,
    /// The price of the run's model, for estimates before work starts.
    price: Option<Price>,
    /// Prices each call by its own model (an agent may override the run's).
    pricer: Option<Pricer>,
    spent: Mutex<Spent>,
    control: RunControl,
}

impl Spend {
    /// A budget that winds `control` down when reached.
    pub(crate) fn new(
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
            spent: Mutex::new(Spent::default()),
            control,
        }
    }

    /// Prices each call by the model that answered it.
    pub(crate) fn with_pricer(mut self, pricer: Pricer) -> Self {
        self.pricer = Some(pricer);
        self
    }

    /// No limits (run-agent, tests).
    pub(crate) fn unlimited() -> Self {
        Self::default()
    }

    /// The ledger. A panic while it was held means the numbers can no
    /// longer be trusted: the run is stopped, never let to go on unbudgeted.
    fn spent(&self) -> Option<MutexGuard<'_, Spent>> {
        match self.spent.lock() {
            Ok(guard) => Some(guard),
            Err(_) => {
                self.control.abort(
                    "internal error: the budget's ledger was poisoned by a panic, so spending could no longer be counted: the run was stopped (a fanscan bug: please report it)",
                );
                None
            }
        }
    }

    /// Counts one call of `agent`, priced by `model`, without checking the
    /// budget (work after the fan-out: the reducer).
    pub(crate) fn account(&self, agent: &str, usage: Usage, model: &str) -> Option<(Usage, f64)> {
        self.account_for(None, agent, usage, model)
    }

    fn account_for(
        &self,
        group: Option<&str>,
        agent: &str,
        usage: Usage,
        model: &str,
    ) -> Option<(Usage, f64)> {
        let price = match &self.pricer {
            Some(pricer) => pricer(model),
            None => self.price,
        };
        let mut spent = self.spent()?;
        if let Some(open) = group.and_then(|g| spent.open.get_mut(g)) {
            open.used = open.used.saturating_add(usage.total());
        }
        spent.total.add(usage);
        let cost = price.map(|p| p.cost(&usage));
        spent.cost += cost.unwrap_or(0.0);
        let entry = spent.by_agent.entry(agent.to_string()).or_default();
        entry.usage.add(usage);
        entry.cost_usd = entry.cost_usd.zip(cost).map(|(a, b)| a + b);
        Some((spent.total, spent.cost))
    }

    /// Counts one call's usage, priced by `model`; winds the run down when
    /// a budget is reached.
    pub(crate) fn add(&self, agent: &str, usage: Usage, model: &str) {
        self.charge(None, agent, usage, model);
    }

    /// Counts one call of a group's agent (against its reservation too).
    pub(crate) fn charge(&self, group: Option<&str>, agent: &str, usage: Usage, model: &str) {
        if let Some((total, cost)) = self.account_for(group, agent, usage, model)
            && let Some(reason) = self.exceeded(&total, cost, 0)
        {
            self.control.wind_down(&reason);
        }
    }

    /// Whether a call of `group` estimated at `tokens` may be sent: what was
    /// spent, what the other groups in flight are still expected to spend,
    /// this call and the final summary that will follow it (at least as
    /// large) must fit. A refusal winds the run down, with the reason.
    pub(crate) fn allows(&self, group: Option<&str>, tokens: u64) -> bool {
        let Some(mut spent) = self.spent() else {
            return false;
        };
        let (used, cost, others) = (spent.total, spent.cost, spent.outstanding(group));
        let own = match group.and_then(|g| spent.open.get_mut(g)) {
            Some(open) => {
                open.pending = open.pending.max(tokens);
                tokens.saturating_mul(2)
            }
            None => tokens,
        };
        drop(spent);
        match self.exceeded(&used, cost, others.saturating_add(own)) {
            Some(reason) => {
                self.control.wind_down(&reason);
                false
            }
            None => true,
        }
    }

    /// Starts `group` with `tokens` reserved, if it fits beside what was
    /// spent and what the groups in flight are still expected to spend.
    /// A refusal winds the run down, with the reason.
    pub(crate) fn reserve(&self, group: &str, tokens: u64) -> bool {
        let Some(mut spent) = self.spent() else {
            return false;
        };
        let more = spent.outstanding(None).saturating_add(tokens);
        if let Some(reason) = self.exceeded(&spent.total, spent.cost, more) {
            drop(spent);
            self.control.wind_down(&reason);
            return false;
        }
        spent.open.insert(
            group.to_string(),
            Open {
                reserved: tokens,
                ..Open::default()
            },
        );
        true
    }

    /// Ends `group`'s reservation: what it spent is counted, the rest is
    /// free again.
    pub(crate) fn release(&self, group: &str) {
        if let Some(mut spent) = self.spent() {
            spent.open.remove(group);
        }
    }

    /// What each agent spent, by agent name, and the total (`None` cost
    /// when any call's model was unpriced).
    pub(crate) fn ledger(&self) -> (BTreeMap<String, AgentUsage>, Usage, Option<f64>) {
        let Some(spent) = self.spent() else {
            return (BTreeMap::new(), Usage::default(), None);
        };
        let cost = spent
            .by_agent
            .values()
            .try_fold(0.0, |sum, a| a.cost_usd.map(|c| sum + c));
        (spent.by_agent.clone(), spent.total, cost)
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
            cache_write_tokens: 0,
        }
    }

    #[test]
    fn reaching_the_token_budget_winds_down_at_once() {
        let control = RunControl::default();
        let spend = Spend::new(Some(100), None, None, control.clone());
        spend.add("a", usage(60), "m");
        assert!(!control.wrap_up.is_cancelled());
        assert!(!spend.allows(None, 50), "60 + 50 would cross 100");
        assert!(control.stop.is_cancelled());
        let control = RunControl::default();
        let spend = Spend::new(Some(100), None, None, control.clone());
        spend.add("a", usage(100), "m");
        assert!(control.wrap_up.is_cancelled());
    }

    #[test]
    fn the_cost_budget_uses_the_price() {
        let control = RunControl::default();
        let price = Price {
            input: 1.0,
            output: 1.0,
            cached: None,
            cache_write: None,
        };
        let spend = Spend::new(None, Some(0.5), Some(price), control.clone());
        assert!(spend.allows(None, 400_000));
        spend.add("a", usage(500_000), "m");
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
            cache_write: None,
        };
        let dear = Price {
            input: 10.0,
            output: 10.0,
            cached: None,
            cache_write: None,
        };
        let spend = Spend::new(None, Some(1.0), Some(cheap), control.clone()).with_pricer(
            Box::new(move |m| Some(if m == "dear" { dear } else { cheap })),
        );
        spend.add("a", usage(1_000_000), "cheap");
        assert!(!control.wrap_up.is_cancelled());
        spend.add("a", usage(100_000), "dear");
        assert!(control.wrap_up.is_cancelled(), "$0.10 + $1.00 crosses $1");
    }

    #[test]
    fn no_budget_never_stops() {
        let spend = Spend::unlimited();
        spend.add("a", usage(u64::MAX / 4), "m");
        assert!(spend.allows(None, u64::MAX / 4));
    }

    #[test]
    fn the_ledger_counts_each_agent_and_unpriced_models_make_the_cost_unknown() {
        let price = Price {
            input: 1.0,
            output: 1.0,
            cached: None,
            cache_write: None,
        };
        let spend =
            Spend::unlimited().with_pricer(Box::new(move |m| (m == "priced").then_some(price)));
        spend.add("auditor", usage(1_000_000), "priced");
        spend.add("auditor", usage(1_000_000), "priced");
        spend.account("reducer", usage(10), "priced");
        let (by_agent, total, cost) = spend.ledger();
        assert_eq!(by_agent["auditor"].usage.input_tokens, 2_000_000);
        assert_eq!(by_agent["auditor"].cost_usd, Some(2.0));
        assert_eq!(total.input_tokens, 2_000_010);
        assert!(cost.is_some());
        spend.add("planner", usage(5), "unknown-model");
        let (by_agent, _, cost) = spend.ledger();
        assert_eq!(by_agent["planner"].cost_usd, None);
        assert_eq!(
            cost, None,
            "one unpriced call makes the total unknown, not zero"
        );
    }

    #[test]
    fn a_poisoned_ledger_stops_the_run_instead_of_allowing_everything() {
        let control = RunControl::default();
        let spend = std::sync::Arc::new(Spend::new(Some(1_000), None, None, control.clone()));
        let poisoner = std::sync::Arc::clone(&spend);
        let joined = std::thread::spawn(move || {
            let _guard = poisoner.spent.lock().unwrap();
            panic!("poison the ledger");
        })
        .join();
        assert!(joined.is_err());
        assert!(!spend.allows(None, 1), "nothing more may start");
        assert!(control.cancel.is_cancelled());
        assert!(control.reasons()[0].contains("poisoned"));
    }

    #[test]
    fn groups_in_flight_keep_their_reservation_until_they_end() {
        let control = RunControl::default();
        let spend = Spend::new(Some(1_000), None, None, control.clone());
        assert!(spend.reserve("a", 400));
        assert!(spend.reserve("b", 400));
        // 800 are expected from a and b: a third group of 400 would cross.
        assert!(!spend.reserve("c", 400));
        assert!(control.stop.is_cancelled());
        // a's own calls fit in its reservation; they are not counted twice.
        let control = RunControl::default();
        let spend = Spend::new(Some(1_000), None, None, control.clone());
        assert!(spend.reserve("a", 400));
        assert!(spend.reserve("b", 400));
        assert!(spend.allows(Some("a"), 150));
        spend.charge(Some("a"), "auditor", usage(250), "m");
        // b is still expected to spend 400; a's call of 150 and its summary
        // after it (as large): 250 + 400 + 300 < 1000.
        assert!(spend.allows(Some("a"), 150));
        // A call whose summary would not fit is refused.
        assert!(!spend.allows(Some("a"), 200));
        assert!(control.stop.is_cancelled());
        spend.release("a");
        spend.release("b");
        let fresh = Spend::new(Some(1_000), None, None, RunControl::default());
        assert!(fresh.reserve("a", 600));
        fresh.release("a");
        assert!(fresh.reserve("c", 900), "released reservations are free");
    }
}
