//! The LLM planner: the planner agent sees the tree (paths, sizes,
//! languages; never contents) and answers a JSON plan, which is validated
//! and repaired here.
//!
//! Takes the inventory, the planner definition, a provider and the
//! [`Routing`] of files to agents; gives a [`Plan`] in which every
//! inventoried file is in exactly one group, no group is over budget (a
//! single file larger than the budget stays alone) and no group mixes
//! agents. Unknown paths are dropped, duplicates kept once, leftovers packed
//! by the default planner, oversize groups split, a group whose files go to
//! different agents (an `[agents]` glob outranks the planner's pick) split
//! by agent, a pick that is no delegable agent dropped; each repair is
//! noted. If the planner fails outright, the default plan is used and the
//! notes say so.
//! The plan is a [`Question`] to the run's harness: a language model is
//! asked; the offline rule engine gives the deterministic plan of
//! [`offline_answer`], repaired the same way.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;

use super::{Plan, Routing, pack, pack_agents, pack_plan};
use crate::agents::{AgentDefinition, Harness, Question};
use crate::llm::conversation::{ChatRequest, Message, ToolChoice, Usage};
use crate::stages::inventory::{FileEntry, Inventory};

/// Above this many files the tree is too long for one planner prompt.
pub(crate) const MAX_PLANNER_FILES: usize = 3000;

/// The planner's task message.
pub(crate) fn render_task(inventory: &Inventory, group_tokens: u64) -> String {
    let mut text = format!(
        "TASK: plan\nBudget: {group_tokens} estimated tokens per group\nFiles ({}), one per line: path<TAB>bytes<TAB>language<TAB>estimated tokens\n",
        inventory.files.len()
    );
    for f in &inventory.files {
        text.push_str(&format!(
            "{}\t{}\t{}\t{}\n",
            f.path,
            f.bytes,
            f.language.as_deref().unwrap_or("text"),
            f.tokens
        ));
    }
    text
}

#[derive(Deserialize)]
struct Answer {
    groups: Vec<AnswerGroup>,
}

#[derive(Deserialize)]
struct AnswerGroup {
    #[serde(default)]
    files: Vec<String>,
    #[serde(default)]
    focus: Option<String>,
    /// A delegable agent picked for the group, checked by the caller.
    #[serde(default)]
    agent: Option<String>,
}

/// Asks the planner agent and repairs its answer; falls back to the default
/// plan on failure. Returns the plan and the tokens the planner used.
pub(crate) async fn plan(
    inventory: &Inventory,
    group_tokens: u64,
    definition: &AgentDefinition,
    harness: &Harness,
    agents: &[(String, String)],
    routing: &Routing,
) -> (Plan, Usage) {
    if inventory.files.len() > MAX_PLANNER_FILES {
        let mut plan = pack_plan(inventory, group_tokens, routing);
        plan.notes.push(format!(
            "the LLM planner was not asked: {} files are more than the {MAX_PLANNER_FILES} one planner prompt can list; the default pack plan is used",
            inventory.files.len()
        ));
        return (plan, Usage::default());
    }
    harness
        .answer(&Planning {
            inventory,
            group_tokens,
            definition,
            harness,
            agents,
            routing,
        })
        .await
}

/// The planner's question: the tree, answered with a plan and what
/// answering it cost.
struct Planning<'a> {
    inventory: &'a Inventory,
    group_tokens: u64,
    definition: &'a AgentDefinition,
    harness: &'a Harness,
    agents: &'a [(String, String)],
    routing: &'a Routing,
}

impl Question for Planning<'_> {
    type Answer = (Plan, Usage);

    async fn counted(&self) -> (Plan, Usage) {
        (
            repair(
                self.inventory,
                self.group_tokens,
                offline_answer(self.inventory),
                self.routing,
            ),
            Usage::default(),
        )
    }

    /// Asks the planner agent; a failure or an answer without a plan
    /// gives the default plan, noted.
    async fn ask(&self) -> (Plan, Usage) {
        let (inventory, routing, harness) = (self.inventory, self.routing, self.harness);
        let (definition, group_tokens) = (self.definition, self.group_tokens);
        let request = ChatRequest {
            model: definition.model.clone(),
            system: definition.prompt.clone(),
            messages: vec![Message::User {
                text: render_task(inventory, group_tokens)
                    + &super::specialists::planner_note(self.agents),
            }],
            tools: Vec::new(),
            tool_choice: ToolChoice::None,
            max_output_tokens: harness.max_output_tokens(),
            counter: crate::llm::tokens::TokenCounter::for_model(harness.model_for(definition)),
            ..ChatRequest::default()
        };
        match harness.provider().chat(&request).await {
            Ok(response) => {
                let usage = response.usage_or_estimate(&request);
                let text = response.text.unwrap_or_default();
                match parse_answer(&text) {
                    Some(answer) => (repair(inventory, group_tokens, answer, routing), usage),
                    None => {
                        let mut plan = pack_plan(inventory, group_tokens, routing);
                        plan.notes.push(
                            "the planner's answer had no JSON plan; the default pack plan is used"
                                .to_string(),
                        );
                        (plan, usage)
                    }
                }
            }
            Err(e) => {
                let mut plan = pack_plan(inventory, group_tokens, routing);
                plan.notes.push(format!(
                    "the planner failed ({e}); the default pack plan is used"
                ));
                (plan, Usage::default())
            }
        }
    }
}

fn parse_answer(text: &str) -> Option<Answer> {
    let start = text.find('{')?;
    let end = text.rfind('}')?;
    if let Some(block) = text.split("```").nth(1) {
        let body = block.trim_start_matches("json").trim();
        if let Ok(a) = serde_json::from_str(body) {
            return Some(a);
        }
    }
    serde_json::from_str(text.get(start..=end)?).ok()
}

fn repair(inventory: &Inventory, group_tokens: u64, answer: Answer, routing: &Routing) -> Plan {
    let known: BTreeMap<&str, &FileEntry> = inventory
        .files
        .iter()
        .map(|f| (f.path.as_str(), f))
        .collect();
    let mut placed: BTreeSet<&str> = BTreeSet::new();
    let mut unknown = 0usize;
    let mut duplicates = 0usize;
    let mut split = 0usize;
    let mut mixed = 0usize;
    let mut bad_picks: BTreeMap<String, usize> = BTreeMap::new();
    let mut groups = Vec::new();
    for g in answer.groups {
        let mut members: Vec<&FileEntry> = Vec::new();
        for path in g.files {
            let path = path.trim().trim_start_matches("./").replace('\\', "/");
            match known.get_key_value(path.as_str()) {
                Some((key, entry)) => {
                    if placed.insert(key) {
                        members.push(entry);
                    } else {
                        duplicates += 1;
                    }
                }
                None => unknown += 1,
            }
        }
        if members.is_empty() {
            continue;
        }
        let focus = g.focus.filter(|f| !f.trim().is_empty());
        let pick = g
            .agent
            .map(|a| a.trim().to_string())
            .filter(|a| !a.is_empty());
        if let Some(p) = &pick
            && !routing.accepts(p)
            && !routing.delegable().is_empty()
        {
            *bad_picks.entry(p.clone()).or_default() += 1;
        }
        // Each file's own agent: a glob outranks the pick.
        let mut by_agent: BTreeMap<&str, Vec<&FileEntry>> = BTreeMap::new();
        for f in members {
            by_agent
                .entry(routing.agent_of(&f.path, pick.as_deref()))
                .or_default()
                .push(f);
        }
        if by_agent.len() > 1 {
            mixed += 1;
        }
        let over = by_agent.values().any(|part| {
            part.len() > 1 && part.iter().map(|f| f.tokens).sum::<u64>() > group_tokens
        });
        if over {
            split += 1;
        }
        groups.extend(pack_agents(by_agent, group_tokens, focus.as_deref()));
    }
    let leftovers: Vec<FileEntry> = inventory
        .files
        .iter()
        .filter(|f| !placed.contains(f.path.as_str()))
        .cloned()
        .collect();
    let mut notes = Vec::new();
    if unknown > 0 {
        notes.push(format!(
            "dropped {unknown} paths the planner named that are not in the inventory"
        ));
    }
    if duplicates > 0 {
        notes.push(format!(
            "{duplicates} files the planner put in more than one group were kept in the first"
        ));
    }
    for (agent, n) in bad_picks {
        notes.push(format!(
            "the planner named agent {agent:?} for {n} group(s), which is not one of the delegable agents ({}); their files go to the agent of their [agents] glob, else the run's agent ({})",
            routing.delegable().join(", "),
            routing.default_agent()
        ));
    }
    if mixed > 0 {
        notes.push(format!(
            "split {mixed} planner groups whose files go to different agents (an [agents] glob outranks the planner's pick), one group per agent"
        ));
    }
    if split > 0 {
        notes.push(format!(
            "split {split} planner groups that were over the {group_tokens}-token budget"
        ));
    }
    if !leftovers.is_empty() {
        notes.push(format!(
            "{} files the planner left out were packed by the default planner",
            leftovers.len()
        ));
        groups.extend(pack(&leftovers, group_tokens, routing));
    }
    Plan {
        planner: "llm".into(),
        group_tokens,
        groups,
        notes,
    }
}

/// The offline engine's answer to a planner task: one group per top-level
/// directory (root files together), with a focus note naming its
/// languages. Over-budget groups are split by the repair step, as any
/// planner's would be.
fn offline_answer(inventory: &Inventory) -> Answer {
    let mut by_top: BTreeMap<String, (Vec<String>, BTreeSet<String>)> = BTreeMap::new();
    for f in &inventory.files {
        let top = match f.path.split_once('/') {
            Some((top, _)) => top.to_string(),
            None => ".".to_string(),
        };
        let entry = by_top.entry(top).or_default();
        entry.0.push(f.path.clone());
        entry
            .1
            .insert(f.language.clone().unwrap_or_else(|| "text".to_string()));
    }
    Answer {
        groups: by_top
            .into_iter()
            .map(|(top, (files, languages))| {
                let languages: Vec<String> = languages.into_iter().collect();
                AnswerGroup {
                    files,
                    focus: Some(format!("{top}: {}", languages.join(", "))),
                    agent: None,
                }
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inventory(paths: &[(&str, u64)]) -> Inventory {
        Inventory {
            files: paths
                .iter()
                .map(|(p, t)| FileEntry {
                    path: p.to_string(),
                    bytes: t * 3,
                    language: None,
                    tokens: *t,
                })
                .collect(),
            ..Inventory::default()
        }
    }

    #[test]
    fn repair_keeps_every_file_exactly_once() {
        let inv = inventory(&[
            ("a.rs", 10),
            ("b.rs", 10),
            ("c.rs", 10),
            ("d/e.rs", 60),
            ("d/f.rs", 60),
        ]);
        let answer = parse_answer(
            r#"```json
{"groups":[{"files":["a.rs","ghost.rs","a.rs"],"focus":"x"},{"files":["b.rs","a.rs"]},{"files":["d/e.rs","d/f.rs"]}]}
```"#,
        )
        .unwrap();
        let plan = repair(&inv, 100, answer, &Routing::single("auditor"));
        let mut all: Vec<String> = plan.groups.iter().flat_map(|g| g.files.clone()).collect();
        all.sort();
        assert_eq!(all, vec!["a.rs", "b.rs", "c.rs", "d/e.rs", "d/f.rs"]);
        assert!(plan.groups.iter().all(|g| g.tokens <= 100));
        assert_eq!(plan.notes.len(), 4, "{:?}", plan.notes);
        assert_eq!(plan.groups[0].focus.as_deref(), Some("x"));
    }

    #[test]
    fn an_answer_that_mixes_agents_is_split_one_group_per_agent() {
        let inv = inventory(&[
            ("src/app/Main.java", 10),
            ("src/app/handler.go", 10),
            ("src/app/models.py", 10),
            ("src/app/views.py", 10),
            ("web/a.py", 10),
        ]);
        let routing = Routing::new(
            "auditor",
            &[("src/**/*.py".to_string(), "security".to_string())],
            vec!["auditor".into(), "security".into()],
        )
        .unwrap();
        let answer = parse_answer(
            r#"{"groups":[
              {"files":["src/app/Main.java","src/app/handler.go","src/app/models.py"],"agent":"auditor","focus":"app"},
              {"files":["src/app/views.py","web/a.py"],"agent":"reducer"}
            ]}"#,
        )
        .unwrap();
        let plan = repair(&inv, 100, answer, &routing);
        let groups: Vec<(&str, Vec<&str>, Option<&str>)> = plan
            .groups
            .iter()
            .map(|g| {
                (
                    g.agent.as_str(),
                    g.files.iter().map(String::as_str).collect(),
                    g.focus.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            groups,
            vec![
                (
                    "auditor",
                    vec!["src/app/Main.java", "src/app/handler.go"],
                    Some("app")
                ),
                ("security", vec!["src/app/models.py"], Some("app")),
                ("security", vec!["src/app/views.py"], None),
                ("auditor", vec!["web/a.py"], None),
            ]
        );
        assert!(
            plan.notes
                .iter()
                .any(|n| n.starts_with("split 2 planner groups whose files go to different agents")),
            "{:?}",
            plan.notes
        );
        assert!(
            plan.notes
                .iter()
                .any(|n| n.contains("agent \"reducer\" for 1 group(s)")),
            "{:?}",
            plan.notes
        );
    }

    #[test]
    fn the_offline_plan_is_one_group_per_top_level_directory() {
        let inv = inventory(&[("a.rs", 1), ("src/b.rs", 1), ("src/c/d.rs", 1)]);
        let answer = offline_answer(&inv);
        assert_eq!(answer.groups.len(), 2);
        assert_eq!(answer.groups[1].files, vec!["src/b.rs", "src/c/d.rs"]);
    }
}
