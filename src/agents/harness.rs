//! The run-wide harness: what every agent of a run shares, built once.
//!
//! A run's agents all call the same provider under the same output cap and
//! `--jobs`; the one thing each works out from its own definition is the
//! model it runs on. [`Harness`] carries the shared part and answers that
//! question in one place ([`Harness::model_for`], [`model_for`]), so no
//! stage re-derives "the agent's model, else the provider's".

use std::sync::Arc;

use super::AgentDefinition;
use crate::engine::rules::RuleSet;
use crate::llm::providers::{Provider, SharedProvider};

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
}

impl Harness {
    /// The harness over `provider`, with `--max-output-tokens` and `--jobs`.
    pub(crate) fn new(provider: SharedProvider, max_output_tokens: u32, jobs: usize) -> Self {
        Self {
            provider,
            max_output_tokens,
            jobs,
            rule_leads: None,
        }
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

    #[test]
    fn an_agent_runs_on_its_own_model_else_the_providers() {
        let harness = Harness::new(Arc::new(Offline::new(Arc::new(RuleSet::builtin()))), 100, 3);
        assert_eq!(harness.model_for(&auditor(None)), "rules");
        assert_eq!(harness.model_for(&auditor(Some("gpt-x"))), "gpt-x");
        assert_eq!(harness.max_output_tokens(), 100);
        assert_eq!(harness.jobs(), 3);
    }
}
