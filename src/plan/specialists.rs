//! Which agent audits each group: the specialists of a plan.
//!
//! Takes a [`Plan`] and what may name agents for its groups (the
//! `[agents]` globs of `fanscan.toml`, the LLM planner's picks); gives the
//! plan with [`super::Group::agent`] set, or notes saying why a pick was
//! not kept. `--agent` forces one agent for every group and clears the
//! picks. A group gets the agent whose globs match the most of its files
//! (a tie goes to the name first in order); a group no glob matches keeps
//! the run's agent. Once any group names an agent, every group does, so
//! the plan shows who audits what.

use std::collections::BTreeMap;

use globset::{Glob, GlobMatcher};

use super::Plan;

/// The planner's instructions for picking an agent per group, from the
/// delegable agents' (name, description); empty when there is no choice.
pub(crate) fn planner_note(agents: &[(String, String)]) -> String {
    if agents.len() < 2 {
        return String::new();
    }
    let mut text = String::from(
        "\nAgents: give each group an \"agent\", the one of these whose description fits the group's files best:\n",
    );
    for (name, description) in agents {
        text.push_str(&format!("- {name}: {description}\n"));
    }
    text
}

/// The `[agents]` globs compiled, with their agent. The globs were checked
/// when the settings were resolved; one that no longer compiles is skipped.
fn compile(globs: &[(String, String)]) -> Vec<(GlobMatcher, &str)> {
    globs
        .iter()
        .filter_map(|(g, a)| Glob::new(g).ok().map(|g| (g.compile_matcher(), a.as_str())))
        .collect()
}

/// Names each group's agent from the globs, where they match.
pub(crate) fn assign_by_globs(plan: &mut Plan, globs: &[(String, String)]) {
    let matchers = compile(globs);
    if matchers.is_empty() {
        return;
    }
    for group in &mut plan.groups {
        let mut votes: BTreeMap<&str, usize> = BTreeMap::new();
        for file in &group.files {
            let mut agents: Vec<&str> = matchers
                .iter()
                .filter(|(m, _)| m.is_match(file))
                .map(|(_, a)| *a)
                .collect();
            agents.sort_unstable();
            agents.dedup();
            for agent in agents {
                *votes.entry(agent).or_default() += 1;
            }
        }
        // Most files first; a tie goes to the first name (BTreeMap order,
        // and max_by_key keeps the last maximum, so compare reversed).
        let best = votes
            .iter()
            .max_by(|a, b| a.1.cmp(b.1).then_with(|| b.0.cmp(a.0)))
            .map(|(a, _)| (*a).to_string());
        if best.is_some() {
            group.agent = best;
        }
    }
}

/// Drops picks that are not delegable agents, with a note; `valid` are the
/// delegable names.
pub(crate) fn keep_valid(plan: &mut Plan, valid: &[&str]) {
    let mut dropped: BTreeMap<String, usize> = BTreeMap::new();
    for group in &mut plan.groups {
        if let Some(agent) = &group.agent
            && !valid.contains(&agent.as_str())
        {
            *dropped.entry(agent.clone()).or_default() += 1;
            group.agent = None;
        }
    }
    for (agent, n) in dropped {
        plan.notes.push(format!(
            "the planner named agent {agent:?} for {n} group(s), which is not one of the delegable agents ({}); the run's agent audits them",
            valid.join(", ")
        ));
    }
}

/// Once any group names an agent, the others name the run's `default`.
pub(crate) fn fill(plan: &mut Plan, default: &str) {
    if plan.groups.iter().any(|g| g.agent.is_some()) {
        for group in &mut plan.groups {
            group.agent.get_or_insert_with(|| default.to_string());
        }
    }
}

/// `--agent` was given: no group names its own.
pub(crate) fn clear(plan: &mut Plan) {
    for group in &mut plan.groups {
        group.agent = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::make_group;

    fn plan(groups: &[&[&str]]) -> Plan {
        Plan {
            planner: "pack".into(),
            group_tokens: 1000,
            groups: groups
                .iter()
                .map(|files| make_group(files.iter().map(|f| (f.to_string(), 10)), None))
                .collect(),
            notes: Vec::new(),
        }
    }

    #[test]
    fn globs_name_the_agent_of_the_most_files_and_the_rest_keep_the_default() {
        let mut p = plan(&[
            &["src/auth/login.rs", "src/auth/token.rs", "src/lib.rs"],
            &["src/db.rs"],
            &["web/handlers/a.py", "web/models.py"],
        ]);
        let globs = vec![
            ("src/auth/**".to_string(), "security".to_string()),
            ("web/handlers/**".to_string(), "security".to_string()),
            ("web/models.py".to_string(), "auditor".to_string()),
        ];
        assign_by_globs(&mut p, &globs);
        let agents: Vec<Option<&str>> = p.groups.iter().map(|g| g.agent.as_deref()).collect();
        // The third group is a tie (one file each): the first name wins.
        assert_eq!(agents, vec![Some("security"), None, Some("auditor")]);
        fill(&mut p, "auditor");
        assert_eq!(p.groups[1].agent.as_deref(), Some("auditor"));
        clear(&mut p);
        assert!(p.groups.iter().all(|g| g.agent.is_none()));
    }

    #[test]
    fn invalid_picks_are_dropped_with_a_note() {
        let mut p = plan(&[&["a.rs"], &["b.rs"]]);
        p.groups[0].agent = Some("reducer".into());
        p.groups[1].agent = Some("security".into());
        keep_valid(&mut p, &["auditor", "security"]);
        assert_eq!(p.groups[0].agent, None);
        assert_eq!(p.groups[1].agent.as_deref(), Some("security"));
        assert!(p.notes[0].contains("agent \"reducer\" for 1 group(s)"));
    }

    #[test]
    fn a_plan_without_specialists_keeps_its_hash() {
        let mut p = plan(&[&["a.rs"]]);
        let before = p.hash();
        fill(&mut p, "auditor");
        assert_eq!(p.hash(), before);
        p.groups[0].agent = Some("security".into());
        assert_ne!(p.hash(), before);
    }
}
