//! The run's token and cost budget and its ledger: every model call's usage
//! is counted here, synchronously, by agent.
//!
//! Takes each call's usage as it happens; winds the run down (no new group,
//! running agents give their summary) the moment a budget is reached, and
//! refuses work whose estimate would cross it: a group is admitted only
//! while its estimate fits beside what was spent and what the groups in
//! flight have reserved, and otherwise waits for them (see [`Admission`]).
//! What each agent (planner, auditors, reducer) spent, in tokens and
//! dollars, is read from here for the report: usage and cost are accounted
//! where the budget lives.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard};

use crate::llm::control::RunControl;
use crate::llm::conversation::Usage;
use crate::llm::prices::Price;
use crate::llm::tokens::TokenCounter;

/// A `--max-tokens` or `--max-cost` that cannot pay for even the cheapest
/// group: such a run would start nothing and call itself stopped by its
/// budget.
#[derive(Debug, thiserror::Error)]
#[error(
    "{budget}{share} is less than the cheapest group's estimate ({need} for group {group}), so no group could start. \
     Raise it to at least {need}, or make groups smaller with --group-tokens (now {group_tokens}); `fanscan plan --estimate` shows the whole range"
)]
pub struct BudgetTooSmall {
    budget: String,
    need: String,
    group: String,
    group_tokens: u64,
    /// Under a shard: that the budget is the shard's share, and how to
    /// set it.
    share: String,
}

impl BudgetTooSmall {
    /// Says that the budget is shard `shard`'s share of the run's, 1/N
    /// unless set per shard.
    pub(crate) fn of_shard(mut self, shard: &str) -> Self {
        self.share = format!(
            " (shard {shard}'s share of the run's budget: 1/N of it unless `[shard]` or --shard-max-tokens / --shard-max-cost set it)"
        );
        self
    }
}

/// The run's budget: `--max-tokens` and `--max-cost` (none: unbounded).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Limits {
    pub(crate) max_tokens: Option<u64>,
    pub(crate) max_cost: Option<f64>,
}

/// The plan's cheapest group as the budget reserves it.
#[derive(Clone, Debug)]
pub(crate) struct Cheapest {
    pub(crate) group: String,
    /// The plan's budget per group, for the advice.
    pub(crate) group_tokens: u64,
    /// Tokens reserved while it runs.
    pub(crate) reserve: u64,
    /// Its low estimate, priced against `--max-cost`.
    pub(crate) low: Usage,
}

/// Refuses limits that cannot pay for even the cheapest group (`price`:
/// of the model that audits it, when known). A plan with no group passes.
pub(crate) fn check(
    cheapest: Option<Cheapest>,
    limits: Limits,
    price: Option<Price>,
) -> Result<(), BudgetTooSmall> {
    let Some(cheapest) = cheapest else {
        return Ok(());
    };
    let too_small = |budget: String, need: String| BudgetTooSmall {
        budget,
        need,
        group: cheapest.group.clone(),
        group_tokens: cheapest.group_tokens,
        share: String::new(),
    };
    if let Some(max) = limits.max_tokens
        && max < cheapest.reserve
    {
        return Err(too_small(
            format!("--max-tokens {max}"),
            format!("{} tokens", cheapest.reserve),
        ));
    }
    if let (Some(max), Some(price)) = (limits.max_cost, price) {
        let need = price.cost(&cheapest.low);
        if max < need {
            return Err(too_small(
                format!("--max-cost {max}"),
                format!("${need:.4}"),
            ));
        }
    }
    Ok(())
}

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
    /// How the server's counts compare with our estimates so far, for each
    /// way of counting (a run whose agents use models of two families has
    /// two).
    calibrations: BTreeMap<&'static str, Calibration>,
}

/// Calls whose usage the server reported before estimates are calibrated.
const CALIBRATE_AFTER: u32 = 2;

/// The safety margin on a calibrated estimate: budgets err on the side of
/// stopping early.
const CALIBRATION_MARGIN: f64 = 1.05;

/// The range a calibration ratio is kept in: a server that reports less
/// than half or more than four times our estimate is more likely
/// misreporting (some compatible servers leave out part of the prompt)
/// than tokenizing that differently.
const RATIO_RANGE: (f64, f64) = (0.5, 4.0);

/// Buckets of the per-call ratio histogram: log-spaced over
/// [`RATIO_RANGE`], each about 6.7% wide.
const RATIO_BUCKETS: usize = 32;

/// Token estimates against what the server counted for the same requests:
/// after the first responses, a run's estimates are scaled by its own
/// ratio instead of a guess for every language and tokenizer. With the
/// model's own tokenizer the ratio stays near 1 (the chat format's framing
/// is all it corrects); with bytes / 3 it is the language's and the
/// tokenizer's density, in either direction.
#[derive(Clone, Debug, Default)]
struct Calibration {
    estimated: u64,
    reported: u64,
    calls: u32,
    /// How many calls had each ratio (see [`RATIO_BUCKETS`]): budgets weigh
    /// a call at the 90th percentile, so that a call denser than the
    /// average does not cross them.
    histogram: [u32; RATIO_BUCKETS],
    /// Calls sent once the ratio was known: their calibrated estimates
    /// and what the server counted, the measure of how good they were.
    checked_estimated: u64,
    checked_reported: u64,
    checked_calls: u32,
}

impl Calibration {
    /// Server-counted input tokens per estimated one, once known.
    fn ratio(&self) -> Option<f64> {
        (self.calls >= CALIBRATE_AFTER && self.estimated > 0 && self.reported > 0)
            .then(|| self.reported as f64 / self.estimated as f64)
    }

    /// `tokens` (an estimate of the request's counter) as the server will
    /// count them, by the run's average ratio (kept in [`RATIO_RANGE`]);
    /// unchanged until the ratio is known. What the report checks.
    fn estimate(&self, tokens: u64) -> u64 {
        match self.ratio() {
            Some(ratio) => {
                (tokens as f64 * ratio.clamp(RATIO_RANGE.0, RATIO_RANGE.1)).ceil() as u64
            }
            None => tokens,
        }
    }

    /// `tokens` as budgets weigh them: scaled by the average ratio +5%, or
    /// by the 90th percentile of the calls' own ratios when that is more
    /// (the average alone let a call denser than most cross a budget:
    /// measured, 2.6% over a 25% budget), kept in [`RATIO_RANGE`];
    /// unchanged until the ratio is known. Spent tokens are counted as the
    /// server reports them, so this weighs only the calls still to come.
    fn apply(&self, tokens: u64) -> u64 {
        match self.ratio() {
            Some(ratio) => {
                let ratio = (ratio * CALIBRATION_MARGIN)
                    .max(self.percentile(0.9))
                    .clamp(RATIO_RANGE.0, RATIO_RANGE.1);
                (tokens as f64 * ratio).ceil() as u64
            }
            None => tokens,
        }
    }

    /// The bucket of a call's ratio.
    fn bucket(ratio: f64) -> usize {
        let (low, high) = RATIO_RANGE;
        let at = (ratio / low).ln() / (high / low).ln() * RATIO_BUCKETS as f64;
        (at.max(0.0) as usize).min(RATIO_BUCKETS - 1)
    }

    /// The upper edge of the bucket that holds the `q` quantile of the
    /// calls' ratios (0 before any call).
    fn percentile(&self, q: f64) -> f64 {
        let rank = (f64::from(self.calls) * q).ceil() as u32;
        let mut seen = 0;
        for (i, n) in self.histogram.iter().enumerate() {
            seen += n;
            if *n > 0 && seen >= rank {
                let (low, high) = RATIO_RANGE;
                let edge = (i + 1) as f64 / RATIO_BUCKETS as f64;
                return low * (high / low).powf(edge);
            }
        }
        0.0
    }

    /// Counts a call: checks the calibrated estimate it had against the
    /// server's count (once there was a ratio), then learns from it.
    fn observe(&mut self, estimated: u64, reported: u64) {
        if self.ratio().is_some() {
            self.checked_estimated = self
                .checked_estimated
                .saturating_add(self.estimate(estimated));
            self.checked_reported = self.checked_reported.saturating_add(reported);
            self.checked_calls += 1;
        }
        self.estimated = self.estimated.saturating_add(estimated);
        self.reported = self.reported.saturating_add(reported);
        self.histogram[Self::bucket(reported as f64 / estimated as f64)] += 1;
        self.calls += 1;
    }
}

/// How a run's token estimates were made, for the report.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TokenEstimate {
    /// How text was counted: `o200k_base` or `cl100k_base` (the model's
    /// own tokenizer), `bytes / 3` (no public tokenizer); several joined
    /// by `, ` when agents used models of different families. Reports
    /// written before exact counting have none: they counted bytes / 3.
    #[serde(default = "bytes_over_three")]
    pub counted_with: String,
    /// `calibrated`: after the first responses, estimates are scaled by
    /// the ratio the server's own counts gave (held in 0.5..4), and
    /// budgets weigh a call at that ratio +5% or at the 90th percentile of
    /// the calls' own ratios, whichever is more.
    pub method: String,
    /// Server-counted input tokens per estimated one.
    pub ratio: f64,
    /// The calls whose reported usage the ratio comes from.
    pub calls: u32,
    /// The calls sent with a calibrated estimate, checked against the
    /// server's counts.
    #[serde(default)]
    pub checked_calls: u32,
    /// Their calibrated estimates against what the server counted, as a
    /// fraction (`0.04`: 4% above); none before a calibrated call.
    #[serde(default)]
    pub error: Option<f64>,
}

fn bytes_over_three() -> String {
    TokenCounter::Bytes.name().to_string()
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
    /// The estimate of a call sent and not yet counted: until its usage
    /// arrives, it is owed on top of the summary.
    in_flight: u64,
}

impl Open {
    /// What it is still expected to spend: the rest of its reservation, and
    /// never less than a call in flight and the summary it still owes.
    fn outstanding(&self) -> u64 {
        self.reserved
            .saturating_sub(self.used)
            .max(self.pending.saturating_add(self.in_flight))
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

/// An estimate of tokens and how it was counted: budgets weigh it with
/// that counter's calibration. A bare number is bytes / 3.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Tokens {
    pub(crate) counter: TokenCounter,
    pub(crate) n: u64,
}

impl Tokens {
    pub(crate) fn counted(counter: TokenCounter, n: u64) -> Self {
        Self { counter, n }
    }
}

impl From<u64> for Tokens {
    fn from(n: u64) -> Self {
        Self::counted(TokenCounter::Bytes, n)
    }
}

impl Spent {
    /// `tokens` as budgets weigh them (see [`Calibration::apply`]).
    fn weigh(&self, tokens: Tokens) -> u64 {
        self.calibrations
            .get(tokens.counter.name())
            .map_or(tokens.n, |c| c.apply(tokens.n))
    }
}

/// Whether a group may start now, asked by the scheduler before it starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Admission {
    /// It fits: its estimate is reserved until [`Spend::release`].
    Admitted,
    /// It does not fit beside the reservations of the groups in flight:
    /// ask again when one of them ends and frees what it did not spend.
    Wait,
    /// It does not fit with no group in flight. Spending only grows, so it
    /// never will. The tokens it was weighed at (its estimate as budgets
    /// count it, calibrated then): what [`Spend::shortfall`] must be told,
    /// since a later calibration could weigh it differently.
    Never(u64),
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
            open.in_flight = 0;
        }
        spent.total.add(usage);
        let cost = price.map(|p| p.cost(&usage));
        spent.cost += cost.unwrap_or(0.0);
        let entry = spent.by_agent.entry(agent.to_string()).or_default();
        entry.usage.add(usage);
        entry.cost_usd = entry.cost_usd.zip(cost).map(|(a, b)| a + b);
        Some((spent.total, spent.cost))
    }

    /// Records a call whose input the server counted as `reported` tokens
    /// and we estimated at `estimated` with `counter`: later estimates use
    /// the ratio. A zero count (the offline engine bills nothing) teaches
    /// nothing.
    pub(crate) fn observe(&self, counter: TokenCounter, estimated: u64, reported: u64) {
        if estimated == 0 || reported == 0 {
            return;
        }
        if let Some(mut spent) = self.spent() {
            spent
                .calibrations
                .entry(counter.name())
                .or_default()
                .observe(estimated, reported);
        }
    }

    /// How this run's estimates were made: none before the server's counts
    /// calibrated them (no count yet, or none reported).
    pub(crate) fn token_estimate(&self) -> Option<TokenEstimate> {
        let spent = self.spent()?;
        let calibrated: Vec<(&&str, &Calibration)> = spent
            .calibrations
            .iter()
            .filter(|(_, c)| c.ratio().is_some())
            .collect();
        if calibrated.is_empty() {
            return None;
        }
        // Over every way of counting the run used (one, most often).
        let sum = |f: fn(&Calibration) -> u64| calibrated.iter().map(|(_, c)| f(c)).sum::<u64>();
        let (estimated, reported) = (sum(|c| c.estimated), sum(|c| c.reported));
        let (checked_estimated, checked_reported) =
            (sum(|c| c.checked_estimated), sum(|c| c.checked_reported));
        let round = |x: f64| (x * 1000.0).round() / 1000.0;
        Some(TokenEstimate {
            counted_with: calibrated
                .iter()
                .map(|(name, _)| **name)
                .collect::<Vec<_>>()
                .join(", "),
            method: "calibrated".into(),
            ratio: round(reported as f64 / estimated as f64),
            calls: calibrated.iter().map(|(_, c)| c.calls).sum(),
            checked_calls: calibrated.iter().map(|(_, c)| c.checked_calls).sum(),
            error: (checked_reported > 0)
                .then(|| round(checked_estimated as f64 / checked_reported as f64 - 1.0)),
        })
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
    /// large) must fit.
    ///
    /// A refused call of a group the scheduler admitted ends only that
    /// group (it gives its summary, which its reservation covers): the
    /// others keep their reservations, and the scheduler goes on admitting
    /// groups as reservations are freed. Any other refused call (the lead
    /// of `ask`, its tasks) winds the run down, with the reason.
    pub(crate) fn allows(&self, group: Option<&str>, tokens: impl Into<Tokens>) -> bool {
        let Some(mut spent) = self.spent() else {
            return false;
        };
        let tokens = spent.weigh(tokens.into());
        let (used, cost, others) = (spent.total, spent.cost, spent.outstanding(group));
        let own = match group.and_then(|g| spent.open.get(g)) {
            Some(_) => tokens.saturating_mul(2),
            None => tokens,
        };
        let limit = self.over(&used, cost, others, own);
        let admitted = match group.and_then(|g| spent.open.get_mut(g)) {
            Some(open) => {
                // The summary will carry at least this call, sent or not.
                open.pending = open.pending.max(tokens);
                if limit.is_none() {
                    open.in_flight = tokens;
                }
                true
            }
            None => false,
        };
        drop(spent);
        let Some(limit) = limit else {
            return true;
        };
        if !admitted {
            self.control.wind_down(&limit.refused_call());
        }
        false
    }

    /// Whether the final summary of `group`, estimated at `tokens`, fits
    /// beside what was spent and what the other groups in flight are still
    /// expected to spend. It is asked either way (the caller makes it
    /// smaller when it does not fit), so this never winds the run down.
    pub(crate) fn summary_fits(&self, group: &str, tokens: impl Into<Tokens>) -> bool {
        let Some(spent) = self.spent() else {
            return false;
        };
        let tokens = spent.weigh(tokens.into());
        self.over(
            &spent.total,
            spent.cost,
            spent.outstanding(Some(group)),
            tokens,
        )
        .is_none()
    }

    /// Admits `group` with `tokens` reserved if that fits beside what was
    /// spent and what the groups in flight are still expected to spend.
    /// Never winds the run down: the scheduler decides what a refusal
    /// means (see [`Admission`]).
    pub(crate) fn reserve(&self, group: &str, tokens: impl Into<Tokens>) -> Admission {
        let tokens = tokens.into();
        let Some(mut spent) = self.spent() else {
            return Admission::Never(tokens.n);
        };
        let tokens = spent.weigh(tokens);
        if self
            .over(&spent.total, spent.cost, spent.outstanding(None), tokens)
            .is_some()
        {
            return if spent.open.is_empty() {
                Admission::Never(tokens)
            } else {
                Admission::Wait
            };
        }
        spent.open.insert(
            group.to_string(),
            Open {
                reserved: tokens,
                ..Open::default()
            },
        );
        Admission::Admitted
    }

    /// Why `groups` groups were not started because none of them fit, the
    /// smallest needing `need` tokens (as [`Admission::Never`] weighed
    /// it): "reached" only when what was spent
    /// and reserved met the budget; otherwise what was spent, reserved and
    /// left, and what the smallest of them needs, all true numbers. `None`
    /// when the ledger was lost to a panic (the run was aborted, and says
    /// so).
    pub(crate) fn shortfall(&self, groups: usize, need: u64) -> Option<String> {
        let spent = self.spent()?;
        let limit = self.over(&spent.total, spent.cost, spent.outstanding(None), need);
        Some(match limit {
            Some(limit) => limit.shortfall(groups),
            // Spending only grows, so a group that did not fit still does
            // not; a ledger that says otherwise is a bug, said as one.
            None => format!(
                "{groups} groups were not started because the budget had no room for them, yet the smallest ({need} tokens) fits in what is left now: a fanscan bug, please report it"
            ),
        })
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

    /// The budget that `more` tokens (beyond `reserved` for the groups in
    /// flight) would cross, given what was `used`, with its numbers.
    fn over(&self, used: &Usage, cost: f64, reserved: u64, more: u64) -> Option<Limit> {
        let with = reserved.saturating_add(more);
        if let Some(max) = self.max_tokens
            && used.total().saturating_add(with) >= max
            && (used.total() >= max || with > 0)
        {
            return Some(Limit::Tokens {
                max,
                spent: used.total(),
                reserved,
                more,
            });
        }
        if let Some(max) = self.max_cost {
            let price = |tokens: u64| {
                self.price.map_or(0.0, |p| {
                    p.cost(&Usage {
                        input_tokens: tokens,
                        ..Usage::default()
                    })
                })
            };
            let (reserved, more) = (price(reserved), price(more));
            if cost + reserved + more >= max && (cost >= max || with > 0) {
                return Some(Limit::Cost {
                    max,
                    spent: cost,
                    reserved,
                    more,
                });
            }
        }
        None
    }

    fn exceeded(&self, used: &Usage, cost: f64, more: u64) -> Option<String> {
        self.over(used, cost, 0, more).map(|limit| limit.reached())
    }
}

/// A budget crossed, with the numbers that cross it: what was spent, what
/// the groups in flight still reserve, and what more was asked.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Limit {
    Tokens {
        max: u64,
        spent: u64,
        reserved: u64,
        more: u64,
    },
    Cost {
        max: f64,
        spent: f64,
        reserved: f64,
        more: f64,
    },
}

impl Limit {
    /// The flag, as the user gave it.
    fn flag(&self) -> String {
        match self {
            Self::Tokens { max, .. } => format!("the token budget (--max-tokens {max})"),
            Self::Cost { max, .. } => format!("the cost budget (--max-cost {max})"),
        }
    }

    /// Whether what was spent and reserved meets the budget by itself.
    fn met(&self) -> bool {
        match *self {
            Self::Tokens {
                max,
                spent,
                reserved,
                ..
            } => spent.saturating_add(reserved) >= max,
            Self::Cost {
                max,
                spent,
                reserved,
                ..
            } => spent + reserved >= max,
        }
    }

    /// What was asked against what is left, and how that came about:
    /// "needs ~N tokens, M of the budget remain (S spent, R reserved by
    /// running groups)".
    fn standing(&self) -> String {
        let reserved = |none: bool, text: String| {
            if none {
                "none reserved by running groups".to_string()
            } else {
                format!("{text} reserved by running groups")
            }
        };
        match *self {
            Self::Tokens {
                max,
                spent,
                reserved: r,
                more,
            } => format!(
                "needs ~{more} tokens, {} of the budget remain ({spent} spent, {})",
                max.saturating_sub(spent.saturating_add(r)),
                reserved(r == 0, r.to_string())
            ),
            Self::Cost {
                max,
                spent,
                reserved: r,
                more,
            } => format!(
                "needs ~${more:.4}, ${:.4} of the budget remain (${spent:.4} spent, {})",
                (max - spent - r).max(0.0),
                reserved(r <= 0.0, format!("${r:.4}"))
            ),
        }
    }

    /// A call's usage met the budget.
    fn reached(&self) -> String {
        format!(
            "{} was reached: no new group was started and running agents gave their summary.",
            self.flag()
        )
    }

    /// A call (with no reservation of its own) did not fit.
    fn refused_call(&self) -> String {
        if self.met() {
            return self.reached();
        }
        format!(
            "stopped by {} before it was reached: the next call {}; no new group was started and running agents gave their summary.",
            self.flag(),
            self.standing()
        )
    }

    /// `groups` groups did not fit; the smallest needs what was asked.
    fn shortfall(&self, groups: usize) -> String {
        if self.met() {
            return self.reached();
        }
        let which = if groups == 1 {
            "the group that did not fit".to_string()
        } else {
            format!("{groups} groups did not fit; the smallest")
        };
        format!(
            "stopped by {} before it was reached: {which} {}.",
            self.flag(),
            self.standing()
        )
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
            batch: None,
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
            batch: None,
        };
        let dear = Price {
            input: 10.0,
            output: 10.0,
            cached: None,
            cache_write: None,
            batch: None,
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
    fn estimates_are_calibrated_on_the_servers_counts_within_ten_percent() {
        // Servers whose tokenizers count bytes / 2.5 (dense code, some
        // languages) and bytes / 4 (prose, other tokenizers) where we
        // estimate bytes / 3: after two counts, estimates are within 10%
        // of theirs in both directions, and never below (the margin).
        for per_byte in [0.4, 0.25] {
            let spend = Spend::new(Some(1_000_000), None, None, RunControl::default());
            assert_eq!(spend.token_estimate(), None, "bytes / 3 before any count");
            let counted = |bytes: u64| (bytes as f64 * per_byte) as u64;
            for bytes in [3_000u64, 12_000] {
                spend.observe(TokenCounter::Bytes, bytes.div_ceil(3), counted(bytes));
            }
            for bytes in [900u64, 45_000, 300_000] {
                let calibrated = spend.spent().unwrap().weigh(bytes.div_ceil(3).into());
                let (calibrated, counted) = (calibrated as f64, counted(bytes) as f64);
                assert!(
                    (calibrated - counted).abs() / counted <= 0.10,
                    "{calibrated} against {counted}"
                );
                assert!(calibrated >= counted, "the margin errs on the safe side");
                spend.observe(TokenCounter::Bytes, bytes.div_ceil(3), counted as u64);
            }
            let estimate = spend.token_estimate().unwrap();
            assert_eq!(
                (
                    estimate.counted_with.as_str(),
                    estimate.method.as_str(),
                    estimate.calls,
                    estimate.checked_calls
                ),
                ("bytes / 3", "calibrated", 5, 3)
            );
            let error = estimate.error.unwrap();
            assert!((0.0..=0.10).contains(&error), "{estimate:?}");
        }
        // A server reporting a tenth of the estimate is held at half.
        let odd = Spend::unlimited();
        odd.observe(TokenCounter::O200k, 1000, 100);
        odd.observe(TokenCounter::O200k, 1000, 100);
        assert_eq!(odd.token_estimate().unwrap().ratio, 0.1);
        // (Budgets weigh it at the upper edge of the histogram's first
        // bucket, 6.7% above the bound.)
        assert_eq!(
            odd.spent().unwrap().calibrations["o200k_base"].estimate(1000),
            500
        );
        assert_eq!(
            odd.spent().unwrap().calibrations["o200k_base"].apply(1000),
            534
        );
        assert_eq!(odd.token_estimate().unwrap().counted_with, "o200k_base");
        // Calls that differ (two sparse ones, eight of dense file text):
        // the estimate is the average, budgets weigh a call at the 90th
        // percentile of the calls' ratios when that is more than the
        // average +5%, so that a dense call does not cross them.
        let mixed = Spend::unlimited();
        mixed.observe(TokenCounter::Bytes, 9000, 2250);
        mixed.observe(TokenCounter::Bytes, 9000, 2250);
        for _ in 0..8 {
            mixed.observe(TokenCounter::Bytes, 9000, 9000);
        }
        assert_eq!(mixed.token_estimate().unwrap().ratio, 0.85);
        let c = mixed.spent().unwrap().calibrations["bytes / 3"].clone();
        assert_eq!(c.estimate(1000), 850);
        // The average +5% would weigh 893; the dense calls' bucket (1.0
        // lies in 0.957..1.022) weighs more.
        assert_eq!(c.apply(1000), 1022);
        // One dense call of ten: the 90th percentile is the others'
        // (0.8 lies in 0.771..0.841), and the average +5% weighs more.
        let even = Spend::unlimited();
        for _ in 0..9 {
            even.observe(TokenCounter::Bytes, 9000, 7200);
        }
        even.observe(TokenCounter::Bytes, 9000, 9000);
        let c = even.spent().unwrap().calibrations["bytes / 3"].clone();
        assert_eq!((c.estimate(1000), c.apply(1000)), (820, 861));
        // The offline engine's zero counts teach nothing.
        let offline = Spend::unlimited();
        offline.observe(TokenCounter::Bytes, 1000, 0);
        offline.observe(TokenCounter::Bytes, 1000, 0);
        assert_eq!(offline.token_estimate(), None);
    }

    #[test]
    fn each_way_of_counting_is_calibrated_on_its_own() {
        // An auditor on an OpenAI model (exact counts) and a specialist on
        // another family (bytes / 3, which its server counts at half).
        let spend = Spend::unlimited();
        for _ in 0..2 {
            spend.observe(TokenCounter::O200k, 1000, 1000);
            spend.observe(TokenCounter::Bytes, 1000, 500);
        }
        let spent = spend.spent().unwrap();
        assert_eq!(
            spent.weigh(Tokens::counted(TokenCounter::O200k, 1000)),
            1050
        );
        assert_eq!(spent.weigh(Tokens::counted(TokenCounter::Bytes, 1000)), 534);
        // A counter with no counts yet is weighed as estimated.
        assert_eq!(
            spent.weigh(Tokens::counted(TokenCounter::Cl100k, 1000)),
            1000
        );
        drop(spent);
        let e = spend.token_estimate().unwrap();
        assert_eq!(
            (e.counted_with.as_str(), e.calls, e.ratio),
            ("bytes / 3, o200k_base", 4, 0.75)
        );
    }

    #[test]
    fn a_report_written_before_exact_counting_still_reads() {
        let old: TokenEstimate =
            serde_json::from_str(r#"{"method":"calibrated","ratio":0.912,"calls":7}"#).unwrap();
        assert_eq!(
            (old.counted_with.as_str(), old.checked_calls, old.error),
            ("bytes / 3", 0, None)
        );
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
            batch: None,
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
        assert_eq!(spend.reserve("g", 1), Admission::Never(1));
        assert_eq!(spend.shortfall(1, 1), None, "no numbers it cannot know");
        assert!(control.cancel.is_cancelled());
        assert!(control.reasons()[0].contains("poisoned"));
    }

    #[test]
    fn groups_in_flight_keep_their_reservation_until_they_end() {
        let control = RunControl::default();
        let spend = Spend::new(Some(1_000), None, None, control.clone());
        assert_eq!(spend.reserve("a", 400), Admission::Admitted);
        assert_eq!(spend.reserve("b", 400), Admission::Admitted);
        // 800 are expected from a and b: a third group of 400 would cross,
        // so it waits for them; nothing is stopped for it.
        assert_eq!(spend.reserve("c", 400), Admission::Wait);
        assert!(!control.stop.is_cancelled() && !control.wrap_up.is_cancelled());
        // a's own calls fit in its reservation; they are not counted twice.
        assert!(spend.allows(Some("a"), 150));
        spend.charge(Some("a"), "auditor", usage(250), "m");
        // b is still expected to spend 400; a's call of 150 and its summary
        // after it (as large): 250 + 400 + 300 < 1000.
        assert!(spend.allows(Some("a"), 150));
        // A call whose summary would not fit is refused: a gives its
        // summary, and the run goes on (b keeps its reservation).
        assert!(!spend.allows(Some("a"), 200));
        assert!(!control.stop.is_cancelled() && !control.wrap_up.is_cancelled());
        spend.release("a");
        // a spent 250; its unspent 150 is free again: 250 + 400 + 300 < 1000.
        assert_eq!(spend.reserve("c", 300), Admission::Admitted);
        spend.release("b");
        spend.release("c");
        let fresh = Spend::new(Some(1_000), None, None, RunControl::default());
        assert_eq!(fresh.reserve("a", 600), Admission::Admitted);
        fresh.release("a");
        assert_eq!(
            fresh.reserve("c", 900),
            Admission::Admitted,
            "released reservations are free"
        );
    }

    #[test]
    fn a_call_in_flight_and_the_summary_after_it_both_count_until_its_usage_arrives() {
        let spend = Spend::new(Some(1_000), None, None, RunControl::default());
        assert_eq!(spend.reserve("a", 100), Admission::Admitted);
        // a sends a call of 300: the call and its summary (600) are owed.
        assert!(spend.allows(Some("a"), 300));
        assert_eq!(
            spend.reserve("b", 400),
            Admission::Wait,
            "600 owed by a + 400 is the whole budget"
        );
        assert_eq!(spend.reserve("b", 390), Admission::Admitted);
        spend.release("b");
        // Its usage arrives: 300 spent, the summary (300) still owed.
        spend.charge(Some("a"), "auditor", usage(300), "m");
        assert_eq!(spend.reserve("b", 390), Admission::Admitted);
        spend.release("b");
        assert_eq!(spend.reserve("b", 400), Admission::Wait);
        // A refused call sends nothing, but the summary will carry it.
        assert!(!spend.allows(Some("a"), 400));
        assert!(!spend.summary_fits("a", 700), "300 + 700 is the budget");
        assert!(spend.summary_fits("a", 690));
    }

    #[test]
    fn a_group_that_does_not_fit_with_nothing_in_flight_never_will() {
        let control = RunControl::default();
        let spend = Spend::new(Some(1_000), None, None, control.clone());
        spend.add("auditor", usage(700), "m");
        assert_eq!(spend.reserve("big", 400), Admission::Never(400));
        assert_eq!(spend.reserve("small", 200), Admission::Admitted);
        assert_eq!(spend.reserve("big", 400), Admission::Wait);
        assert!(control.reasons().is_empty(), "admission never stops a run");
    }

    #[test]
    fn the_shortfall_says_reached_only_when_the_budget_was_met() {
        let spend = Spend::new(Some(30_000), None, None, RunControl::default());
        spend.add("auditor", usage(27_120), "m");
        let text = spend.shortfall(5, 4_410).unwrap();
        assert_eq!(
            text,
            "stopped by the token budget (--max-tokens 30000) before it was reached: 5 groups did not fit; the smallest needs ~4410 tokens, 2880 of the budget remain (27120 spent, none reserved by running groups)."
        );
        assert_eq!(
            spend.shortfall(1, 4_410).unwrap(),
            "stopped by the token budget (--max-tokens 30000) before it was reached: the group that did not fit needs ~4410 tokens, 2880 of the budget remain (27120 spent, none reserved by running groups)."
        );
        // Reservations of groups in flight are said when there are some.
        assert_eq!(spend.reserve("a", 1_000), Admission::Admitted);
        let text = spend.shortfall(1, 4_410).unwrap();
        assert!(
            text.contains(
                "~4410 tokens, 1880 of the budget remain (27120 spent, 1000 reserved by running groups)"
            ),
            "{text}"
        );
        spend.release("a");
        spend.add("auditor", usage(2_880), "m");
        assert_eq!(
            spend.shortfall(5, 4_410).unwrap(),
            "the token budget (--max-tokens 30000) was reached: no new group was started and running agents gave their summary."
        );
        let price = Price {
            input: 1.0,
            output: 1.0,
            cached: None,
            cache_write: None,
            batch: None,
        };
        let spend = Spend::new(None, Some(0.5), Some(price), RunControl::default());
        spend.add("auditor", usage(400_000), "m");
        assert_eq!(
            spend.shortfall(2, 150_000).unwrap(),
            "stopped by the cost budget (--max-cost 0.5) before it was reached: 2 groups did not fit; the smallest needs ~$0.1500, $0.1000 of the budget remain ($0.4000 spent, none reserved by running groups)."
        );
    }

    #[test]
    fn a_refused_call_outside_the_scheduler_says_what_it_needed() {
        let control = RunControl::default();
        let spend = Spend::new(Some(100), None, None, control.clone());
        spend.add("lead", usage(60), "m");
        assert!(!spend.allows(None, 50));
        assert_eq!(
            control.reasons(),
            vec![
                "stopped by the token budget (--max-tokens 100) before it was reached: the next call needs ~50 tokens, 40 of the budget remain (60 spent, none reserved by running groups); no new group was started and running agents gave their summary."
                    .to_string()
            ]
        );
    }
}
