//! Planning: splitting the inventory into file groups, one sub-agent each.
//!
//! Takes an [`Inventory`], a token budget per group and the [`Routing`]
//! that names each file's agent; gives a [`Plan`]. The default planner
//! ([`pack`]) is deterministic: files of a directory stay together where
//! they fit, neighbouring directories share a group up to the budget, and a
//! file larger than the budget gets a group of its own. Each agent's files
//! are packed apart, so no group mixes agents. The LLM planner ([`llm`])
//! asks the planner agent and then validates and repairs its answer so that
//! every file is in exactly one group, with its own agent.

pub(crate) mod estimate;
pub(crate) mod llm;
pub(crate) mod render;
pub(crate) mod shard;
pub(crate) mod specialists;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub use specialists::Routing;

use crate::agents::{AgentDefinition, AgentSet, AgentTask, Harness, TaskFile, UnknownAgent};
use crate::llm::conversation::Usage;
use crate::stages::inventory::{FileEntry, Inventory};
use crate::util::git::ChangeSet;

/// One group of files for one sub-agent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Group {
    /// Derived from the sorted member paths: the same files give the same id.
    pub id: String,
    /// Sorted repo-relative paths.
    pub files: Vec<String>,
    pub focus: Option<String>,
    /// Estimated tokens of the files.
    pub(crate) tokens: u64,
    /// The agent that audits this group: the agent of every one of its
    /// files (see [`Routing`]).
    pub(crate) agent: String,
}

/// The plan of a scan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// `pack` or `llm`.
    pub planner: String,
    /// Token budget per group.
    pub(crate) group_tokens: u64,
    pub groups: Vec<Group>,
    /// What the planner did that a reader should know (repairs, fallbacks).
    pub notes: Vec<String>,
}

impl Plan {
    /// The task of each group, with each file's size and language.
    pub fn tasks(&self, inventory: &Inventory) -> Vec<AgentTask> {
        let by_path: BTreeMap<&str, &FileEntry> = inventory
            .files
            .iter()
            .map(|f| (f.path.as_str(), f))
            .collect();
        self.groups
            .iter()
            .map(|g| AgentTask {
                group: g.id.clone(),
                files: g
                    .files
                    .iter()
                    .map(|p| {
                        let entry = by_path.get(p.as_str());
                        TaskFile {
                            path: p.clone(),
                            bytes: entry.map_or(0, |e| e.bytes),
                            language: entry.and_then(|e| e.language.clone()),
                        }
                    })
                    .collect(),
                focus: g.focus.clone(),
                instructions: None,
                leads: Vec::new(),
                sample: 0,
            })
            .collect()
    }

    /// SHA-256 of the plan's groups (ids, files, tokens, focus, agent), for
    /// the run manifest.
    pub fn hash(&self) -> String {
        let mut text = String::new();
        for g in &self.groups {
            text.push_str(&g.id);
            text.push('\0');
            for f in &g.files {
                text.push_str(f);
                text.push('\n');
            }
            text.push('\0');
            text.push_str(&g.tokens.to_string());
            text.push('\0');
            text.push_str(g.focus.as_deref().unwrap_or_default());
            text.push('\0');
            text.push_str(&g.agent);
            text.push('\n');
        }
        crate::util::sha256_hex(text.as_bytes())
    }

    /// Errors when the plan has more groups than `max_groups` (0: no cap).
    pub fn check_cap(&self, max_groups: usize) -> Result<(), PlanError> {
        if max_groups > 0 && self.groups.len() > max_groups {
            let tokens: u64 = self.groups.iter().map(|g| g.tokens).sum();
            // Groups are packed to about 80% of the budget on average.
            let fits = (tokens as f64 / max_groups as f64 / 0.8 / 1000.0).ceil() as u64 * 1000;
            return Err(PlanError::TooManyGroups {
                groups: self.groups.len(),
                max_groups,
                group_tokens: self.group_tokens,
                suggested: fits.max(self.group_tokens * 2),
            });
        }
        Ok(())
    }
}

/// A plan that cannot run.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error(
        "the plan has {groups} groups, over --max-groups {max_groups}. For a repository this large: \
         raise --group-tokens (now {group_tokens}; about {suggested} fits under the cap) to make fewer, larger groups, \
         narrow the scan with --include/--exclude (or a .fanscanignore), or raise --max-groups if you mean to run that many agents"
    )]
    TooManyGroups {
        groups: usize,
        max_groups: usize,
        group_tokens: u64,
        suggested: u64,
    },
}

/// A group id from its sorted member paths: a readable stem from their
/// common directory and a short hash.
pub(crate) fn group_id(files: &[String]) -> String {
    let joined = files.join("\n");
    let hash = crate::util::sha256_hex(joined.as_bytes());
    let common = common_dir(files);
    let slug: String = common
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let slug = slug.trim_matches('-');
    // Long paths keep their end (the most specific part), cut at a word.
    let stem = if slug.is_empty() {
        "root"
    } else if slug.len() > 40 {
        let tail = &slug[slug.len() - 40..];
        tail.split_once('-').map_or(tail, |(_, rest)| rest)
    } else {
        slug
    };
    format!("{stem}-{}", &hash[..8])
}

fn common_dir(files: &[String]) -> String {
    let mut common: Option<Vec<&str>> = None;
    for f in files {
        let parts: Vec<&str> = f.split('/').collect();
        let dir = &parts[..parts.len().saturating_sub(1)];
        common = Some(match common {
            None => dir.to_vec(),
            Some(c) => c
                .iter()
                .zip(dir)
                .take_while(|(a, b)| a == b)
                .map(|(a, _)| *a)
                .collect(),
        });
    }
    common.unwrap_or_default().join("/")
}

fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(d, _)| d)
}

/// Packs files into groups under `budget` tokens, one agent per group:
/// each agent's files (as `routing` names them) are packed apart. Groups
/// are ordered by the directory each starts in, then by agent, so a plan
/// of one agent keeps the tree's order and its group ids.
pub(crate) fn pack(files: &[FileEntry], budget: u64, routing: &Routing) -> Vec<Group> {
    let mut by_agent: BTreeMap<&str, Vec<&FileEntry>> = BTreeMap::new();
    for f in files {
        by_agent
            .entry(routing.agent_of(&f.path, None))
            .or_default()
            .push(f);
    }
    pack_agents(by_agent, budget, None)
}

/// Packs each agent's files apart into groups under `budget` (see
/// [`pack`]); every group gets `focus`.
pub(crate) fn pack_agents(
    by_agent: BTreeMap<&str, Vec<&FileEntry>>,
    budget: u64,
    focus: Option<&str>,
) -> Vec<Group> {
    let mut keyed: Vec<(&str, &str, Vec<&FileEntry>)> = Vec::new();
    for (agent, files) in by_agent {
        for members in pack_files(files, budget) {
            let start = members.first().map_or("", |f| parent(&f.path));
            keyed.push((start, agent, members));
        }
    }
    // Stable: one agent's groups keep the packing order, whose starting
    // directories never decrease.
    keyed.sort_by(|a, b| a.0.cmp(b.0).then_with(|| a.1.cmp(b.1)));
    keyed
        .into_iter()
        .map(|(_, agent, members)| {
            make_group(
                members.iter().map(|f| (f.path.clone(), f.tokens)),
                focus.map(str::to_string),
                agent,
            )
        })
        .collect()
}

/// Packs files of one agent into lists under `budget` tokens, in the
/// order of their directories.
fn pack_files(files: Vec<&FileEntry>, budget: u64) -> Vec<Vec<&FileEntry>> {
    let budget = budget.max(1);
    let mut by_dir: BTreeMap<&str, Vec<&FileEntry>> = BTreeMap::new();
    for f in files {
        by_dir.entry(parent(&f.path)).or_default().push(f);
    }
    let mut groups: Vec<Vec<&FileEntry>> = Vec::new();
    let mut current: Vec<&FileEntry> = Vec::new();
    let mut current_tokens = 0u64;
    for (_, mut dir_files) in by_dir {
        dir_files.sort_by(|a, b| a.path.cmp(&b.path));
        let dir_tokens: u64 = dir_files.iter().map(|f| f.tokens).sum();
        if current_tokens + dir_tokens <= budget {
            current.extend(dir_files);
            current_tokens += dir_tokens;
            continue;
        }
        if dir_tokens <= budget {
            // The directory fits a group of its own: keep it whole.
            close(&mut current, &mut current_tokens, &mut groups);
            current.extend(dir_files);
            current_tokens = dir_tokens;
            continue;
        }
        // Too big for one group: split it in path order.
        close(&mut current, &mut current_tokens, &mut groups);
        for f in dir_files {
            if f.tokens > budget {
                // Larger than the budget: alone; its agent pages through it.
                groups.push(vec![f]);
                continue;
            }
            if current_tokens + f.tokens > budget {
                close(&mut current, &mut current_tokens, &mut groups);
            }
            current.push(f);
            current_tokens += f.tokens;
        }
        close(&mut current, &mut current_tokens, &mut groups);
    }
    close(&mut current, &mut current_tokens, &mut groups);
    groups
}

fn close<'a>(
    current: &mut Vec<&'a FileEntry>,
    tokens: &mut u64,
    groups: &mut Vec<Vec<&'a FileEntry>>,
) {
    if !current.is_empty() {
        groups.push(std::mem::take(current));
    }
    *tokens = 0;
}

/// A group of `agent` from (path, tokens) members, ids and order settled.
pub(crate) fn make_group(
    members: impl Iterator<Item = (String, u64)>,
    focus: Option<String>,
    agent: &str,
) -> Group {
    let mut members: Vec<(String, u64)> = members.collect();
    members.sort();
    let files: Vec<String> = members.iter().map(|(p, _)| p.clone()).collect();
    Group {
        id: group_id(&files),
        tokens: members.iter().map(|(_, t)| t).sum(),
        files,
        focus,
        agent: agent.to_string(),
    }
}

/// What a scan plans: the whole inventory, or for a diff scan only its
/// changed files (a changed file the inventory skipped stays listed as
/// skipped). The agents' tools still reach the whole inventory.
pub(crate) fn in_scope(inventory: &Inventory, changes: Option<&ChangeSet>) -> Inventory {
    match changes {
        None => inventory.clone(),
        Some(changes) => Inventory {
            root: inventory.root.clone(),
            files: inventory
                .files
                .iter()
                .filter(|f| changes.contains(&f.path))
                .cloned()
                .collect(),
            skipped: inventory
                .skipped
                .iter()
                .filter(|f| changes.contains(&f.path))
                .cloned()
                .collect(),
        },
    }
}

/// How a run plans: the budget per group, the cap on groups, who audits
/// each file, and the planner agent when `--planner llm` asks one.
pub(crate) struct Planner<'a> {
    pub(crate) group_tokens: u64,
    /// `--max-groups` (0: no cap).
    pub(crate) max_groups: usize,
    pub(crate) routing: Routing,
    /// The planner agent; none packs deterministically.
    pub(crate) agent: Option<PlannerAgent<'a>>,
    /// A diff scan's changed files, noted in the plan.
    pub(crate) changes: Option<&'a ChangeSet>,
}

/// The planner agent of `--planner llm` and what it is offered.
pub(crate) struct PlannerAgent<'a> {
    pub(crate) definition: &'a AgentDefinition,
    /// The run's provider and output cap.
    pub(crate) harness: &'a Harness,
    /// The delegable agents (name, description) it may pick per group;
    /// empty when `--agent` forces one.
    pub(crate) choices: Vec<(String, String)>,
}

impl Planner<'_> {
    /// Plans `scope` within `--max-groups`; every group has one agent.
    /// Returns the plan and the tokens the planner agent used (none when
    /// packed).
    pub(crate) async fn plan(&self, scope: &Inventory) -> Result<(Plan, Option<Usage>), PlanError> {
        let (plan, usage) = self.plan_uncapped(scope).await;
        plan.check_cap(self.max_groups)?;
        Ok((plan, usage))
    }

    /// The plan without the `--max-groups` cap, for `fanscan plan`: the
    /// cap keeps a scan from starting too many agents, and showing a plan
    /// starts none. [`Plan::check_cap`] says whether a scan would refuse it.
    pub(crate) async fn plan_uncapped(&self, scope: &Inventory) -> (Plan, Option<Usage>) {
        let (mut plan, usage) = match &self.agent {
            None => (pack_plan(scope, self.group_tokens, &self.routing), None),
            Some(agent) => {
                let (plan, usage) = llm::plan(
                    scope,
                    self.group_tokens,
                    agent.definition,
                    agent.harness,
                    &agent.choices,
                    &self.routing,
                )
                .await;
                (plan, Some(usage))
            }
        };
        if let Some(c) = self.changes {
            plan.notes.push(format!(
                "diff scan ({}): {} changed files, {} in the scan, {} deleted{}",
                c.source,
                c.changed.len(),
                scope.files.len(),
                c.deleted.len(),
                if c.renamed.is_empty() {
                    String::new()
                } else {
                    format!(", {} renamed", c.renamed.len())
                }
            ));
        }
        (plan, usage)
    }
}

/// The definition of each group's agent, by group id.
pub(crate) fn group_agents(
    plan: &Plan,
    agents: &AgentSet,
) -> Result<HashMap<String, Arc<AgentDefinition>>, UnknownAgent> {
    let mut by_name: BTreeMap<&str, Arc<AgentDefinition>> = BTreeMap::new();
    let mut out = HashMap::new();
    for group in &plan.groups {
        let name = group.agent.as_str();
        let definition = match by_name.get(name) {
            Some(d) => Arc::clone(d),
            None => {
                let d = Arc::new(agents.get(name)?.clone());
                by_name.insert(name, Arc::clone(&d));
                d
            }
        };
        out.insert(group.id.clone(), definition);
    }
    Ok(out)
}

/// The default plan: [`pack`] with `routing`.
pub fn pack_plan(inventory: &Inventory, group_tokens: u64, routing: &Routing) -> Plan {
    Plan {
        planner: "pack".into(),
        group_tokens,
        groups: pack(&inventory.files, group_tokens, routing),
        notes: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, tokens: u64) -> FileEntry {
        FileEntry {
            path: path.into(),
            bytes: tokens * 3,
            language: None,
            tokens,
        }
    }

    #[test]
    fn packs_directories_together_and_big_files_alone() {
        let files = vec![
            file("a/1.rs", 10),
            file("a/2.rs", 10),
            file("b/1.rs", 30),
            file("b/2.rs", 30),
            file("c/huge.rs", 500),
            file("c/small.rs", 5),
            file("d/x.rs", 5),
        ];
        let groups = pack(&files, 100, &Routing::single("auditor"));
        let members: Vec<Vec<&str>> = groups
            .iter()
            .map(|g| g.files.iter().map(String::as_str).collect())
            .collect();
        assert_eq!(
            members,
            vec![
                vec!["a/1.rs", "a/2.rs", "b/1.rs", "b/2.rs"],
                vec!["c/huge.rs"],
                vec!["c/small.rs"],
                vec!["d/x.rs"],
            ]
        );
        assert!(groups.iter().all(|g| g.tokens <= 100 || g.files.len() == 1));
        assert!(groups.iter().all(|g| g.agent == "auditor"));
    }

    #[test]
    fn globs_that_split_a_directory_never_mix_agents_in_a_group() {
        let files = vec![
            file("src/app/Main.java", 10),
            file("src/app/handler.go", 10),
            file("src/app/models.py", 10),
            file("src/app/views.py", 10),
            file("src/lib/util.py", 10),
            file("src/lib/util.go", 10),
            file("tools/gen.py", 10),
        ];
        let routing = Routing::new(
            "auditor",
            &[("src/**/*.py".to_string(), "security".to_string())],
            vec!["auditor".into(), "security".into()],
        )
        .unwrap();
        // The budget would fit the whole tree in one group.
        let groups = pack(&files, 1000, &routing);
        let members: Vec<(&str, Vec<&str>)> = groups
            .iter()
            .map(|g| {
                (
                    g.agent.as_str(),
                    g.files.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        assert_eq!(
            members,
            vec![
                (
                    "auditor",
                    vec![
                        "src/app/Main.java",
                        "src/app/handler.go",
                        "src/lib/util.go",
                        "tools/gen.py"
                    ]
                ),
                (
                    "security",
                    vec!["src/app/models.py", "src/app/views.py", "src/lib/util.py"]
                ),
            ]
        );
        // With one agent the same files make the same groups as before.
        let one = pack(&files, 1000, &Routing::single("auditor"));
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].id, group_id(&one[0].files));
    }

    #[test]
    fn groups_of_several_agents_are_ordered_by_where_they_start() {
        let files = vec![
            file("a/x.py", 60),
            file("a/y.rs", 60),
            file("b/x.py", 60),
            file("b/y.rs", 60),
        ];
        let routing = Routing::new(
            "auditor",
            &[("**/*.py".to_string(), "security".to_string())],
            Vec::new(),
        )
        .unwrap();
        let groups = pack(&files, 100, &routing);
        let order: Vec<(&str, &str)> = groups
            .iter()
            .map(|g| (g.files[0].as_str(), g.agent.as_str()))
            .collect();
        assert_eq!(
            order,
            vec![
                ("a/y.rs", "auditor"),
                ("a/x.py", "security"),
                ("b/y.rs", "auditor"),
                ("b/x.py", "security"),
            ]
        );
    }

    #[test]
    fn ids_depend_only_on_members() {
        let a = group_id(&["src/x/a.rs".into(), "src/x/b.rs".into()]);
        assert_eq!(a, group_id(&["src/x/a.rs".into(), "src/x/b.rs".into()]));
        assert!(a.starts_with("src-x-"), "{a}");
        let long = group_id(&["aws-lc-sys-0.47.0/aws-lc/crypto/fipsmodule/bn/asm/x.pl".into()]);
        assert!(
            long.starts_with("0-47-0-aws-lc-crypto-fipsmodule-bn-asm-"),
            "{long}"
        );
        assert_ne!(a, group_id(&["src/x/a.rs".into()]));
    }

    #[test]
    fn cap_errors_say_how_to_fix() {
        let plan = Plan {
            planner: "pack".into(),
            group_tokens: 10,
            groups: pack(
                &[file("a", 10), file("b/c", 10)],
                10,
                &Routing::single("auditor"),
            ),
            notes: vec![],
        };
        let e = plan.check_cap(1).unwrap_err().to_string();
        assert!(
            e.contains("--group-tokens") && e.contains("--include"),
            "{e}"
        );
        assert!(plan.check_cap(0).is_ok());
    }
}
