//! The run-wide harness: what every agent of a run shares, built once.
//!
//! A run's agents all call the same provider under the same output cap and
//! `--jobs`; the one thing each works out from its own definition is the
//! model it runs on. [`Harness`] carries the shared part and answers that
//! question in one place ([`Harness::model_for`], [`model_for`]), so no
//! stage re-derives "the agent's model, else the provider's".

use std::future::Future;
use std::sync::Arc;

use super::AgentDefinition;
use crate::engine::rules::RuleSet;
use crate::llm::prices::{Price, Prices};
use crate::llm::providers::{EngineKind, Provider, SharedProvider};

/// The model `definition` runs on: its own `model`, else the provider's.
///
/// The one place this rule lives; runners that hold only a
/// `&dyn Provider` call it directly, the rest ask [`Harness::model_for`].
pub(crate) fn model_for<'a>(
    definition: &'a AgentDefinition,
    provider: &'a dyn Provider,
) -> &'a str {
    definition
        .model
        .as_deref()
        .unwrap_or_else(|| provider.model())
}

/// What every agent stage of one run shares: the provider, the output cap
/// per call and how many agents run at once. Built once by the pipeline's
/// setup; stages ask it rather than re-listing the fields.
#[derive(Clone)]
pub(crate) struct Harness {
    provider: SharedProvider,
    max_output_tokens: u32,
    jobs: usize,
    /// The rules whose hits are put to the auditors as leads (`--leads`).
    rule_leads: Option<Arc<RuleSet>>,
    /// The model a blocked group is sent to once (`fallback_model`).
    fallback_model: Option<String>,
}

impl Harness {
    /// The harness over `provider`, with `--max-output-tokens` and `--jobs`.
    pub(crate) fn new(provider: SharedProvider, max_output_tokens: u32, jobs: usize) -> Self {
        Self {
            provider,
            max_output_tokens,
            jobs,
            rule_leads: None,
            fallback_model: None,
        }
    }

    /// The harness that sends a group the run's model refused to `model`
    /// once.
    pub(crate) fn with_fallback_model(mut self, model: Option<String>) -> Self {
        self.fallback_model = model;
        self
    }

    /// The model a blocked group is sent to once, if any.
    pub(crate) fn fallback_model(&self) -> Option<&str> {
        self.fallback_model.as_deref()
    }

    /// The harness whose auditors are given `rules`' hits as leads.
    pub(crate) fn with_rule_leads(mut self, rules: Option<Arc<RuleSet>>) -> Self {
        self.rule_leads = rules;
        self
    }

    /// The rules whose hits are leads, when leads are on.
    pub(crate) fn rule_leads(&self) -> Option<&Arc<RuleSet>> {
        self.rule_leads.as_ref()
    }

    /// The run's provider.
    pub(crate) fn provider(&self) -> &dyn Provider {
        self.provider.as_ref()
    }

    /// The output cap of every model call (`--max-output-tokens`).
    pub(crate) fn max_output_tokens(&self) -> u32 {
        self.max_output_tokens
    }

    /// Agents in flight at once (`--jobs`).
    pub(crate) fn jobs(&self) -> usize {
        self.jobs
    }

    /// The model `definition` runs on: its own, else the run's.
    pub(crate) fn model_for<'a>(&'a self, definition: &'a AgentDefinition) -> &'a str {
        model_for(definition, self.provider())
    }

    /// What answers the run, as reports and answers name it: the one
    /// place it is read for them.
    pub(crate) fn engine(&self) -> EngineKind {
        self.provider.engine()
    }

    /// Prices a call on any model of the run as the provider bills it
    /// (the offline engine bills nothing).
    pub(crate) fn pricer(
        &self,
        prices: Prices,
    ) -> impl Fn(&str) -> Option<Price> + Send + Sync + 'static {
        let provider = Arc::clone(&self.provider);
        move |model: &str| provider.price(&prices, model)
    }

    /// Answers a stage's question the way the run's provider answers: a
    /// language model is asked ([`Question::ask`]); the offline rule
    /// engine, which reads no prose, gives the answer counted from the
    /// question's data ([`Question::counted`]). The one place the choice is
    /// made: a stage states both answers and reads whichever comes back
    /// the same way.
    pub(crate) async fn answer<Q: Question>(&self, question: &Q) -> Q::Answer {
        match self.provider.engine() {
            EngineKind::Llm => question.ask().await,
            EngineKind::RuleEngine => question.counted().await,
        }
    }
}

/// A stage's question to whatever answers the run (see
/// [`Harness::answer`]): the plan of the files, the repository's brief,
/// the reducer's summary, `ask`'s lead.
pub(crate) trait Question: Sync {
    /// What the stage gets back, whoever answered.
    type Answer;
    /// The answer of a language model: the stage's prompt sent through
    /// the run's provider and its reply read (with its own fallbacks).
    fn ask(&self) -> impl Future<Output = Self::Answer> + Send;
    /// The deterministic answer counted from the question's data, with no
    /// model reading prose: the offline rule engine's (`ask`'s runs its
    /// sub-agents through the engine first).
    fn counted(&self) -> impl Future<Output = Self::Answer> + Send;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::offline::Offline;

    /// The built-in auditor with its model set to `model`.
    fn auditor(model: Option<&str>) -> AgentDefinition {
        let (file, text) = super::super::BUILTIN
            .iter()
            .find(|(f, _)| *f == "auditor.md")
            .copied()
            .unwrap_or_else(|| panic!("the auditor is built in"));
        let mut d = AgentDefinition::parse(file, text)
            .unwrap_or_else(|e| panic!("the built-in auditor parses: {e}"));
        d.model = model.map(str::to_string);
        d
    }

    /// A question whose two answers say which was given.
    struct Which;

    impl Question for Which {
        type Answer = &'static str;
        async fn ask(&self) -> &'static str {
            "asked"
        }
        async fn counted(&self) -> &'static str {
            "counted"
        }
    }

    #[tokio::test]
    async fn a_model_is_asked_and_the_rule_engine_counts() {
        let offline = Harness::new(Arc::new(Offline::new(Arc::new(RuleSet::builtin()))), 100, 1);
        assert_eq!(offline.answer(&Which).await, "counted");
        let model = Harness::new(
            Arc::new(crate::agents::turns::script::Script::new(Vec::new())),
            100,
            1,
        );
        assert_eq!(model.answer(&Which).await, "asked");
    }

    #[test]
    fn the_rule_engine_bills_nothing_and_a_model_its_table_price() {
        let prices = Prices::builtin().unwrap();
        let offline = Harness::new(Arc::new(Offline::new(Arc::new(RuleSet::builtin()))), 100, 1);
        assert_eq!(
            offline.pricer(prices.clone())("gpt-unknown-x"),
            Some(Price::default())
        );
        let model = Harness::new(
            Arc::new(crate::agents::turns::script::Script::new(Vec::new())),
            100,
            1,
        );
        assert_eq!(model.pricer(prices)("gpt-unknown-x"), None);
    }

    #[test]
    fn an_agent_runs_on_its_own_model_else_the_providers() {
        let harness = Harness::new(Arc::new(Offline::new(Arc::new(RuleSet::builtin()))), 100, 3);
        assert_eq!(harness.model_for(&auditor(None)), "rules");
        assert_eq!(harness.model_for(&auditor(Some("gpt-x"))), "gpt-x");
        assert_eq!(harness.max_output_tokens(), 100);
        assert_eq!(harness.jobs(), 3);
    }
}
