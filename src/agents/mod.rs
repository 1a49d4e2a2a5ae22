//! Agents: the definitions in effect, the one agent loop and the agents
//! that are configurations of it.
//!
//! Takes the built-in definitions (compiled in from `configs/agents/`) and
//! a repository's `.fanscan/agents/*.md`; gives an [`AgentSet`], where a
//! repository's file overrides the built-in of the same name. Any invalid
//! file is an error that names it: none is skipped silently. [`turns`] is
//! the loop every agent runs, [`router`] its tools; [`subagent`] and
//! [`lead`] configure it.

pub(crate) mod definition;
pub(crate) mod harness;
pub(crate) mod lead;
pub(crate) mod router;
pub(crate) mod subagent;
pub(crate) mod turns;

use std::collections::BTreeMap;
use std::path::Path;

use crate::util::git::ConfigOrigin;

pub(crate) use definition::{AgentDefinition, DefinitionError};
pub(crate) use harness::{Harness, Question, model_for};
pub(crate) use subagent::{AgentRun, AgentStatus, AgentTask, GroupReport, TaskFile, run_subagent};

/// No agent has the name asked for.
#[derive(Debug, thiserror::Error)]
#[error("no agent named {name:?}; the agents are: {known} (see `fanscan agents`)")]
pub struct UnknownAgent {
    name: String,
    known: String,
}

/// The built-in agent files: (file name, text).
const BUILTIN: &[(&str, &str)] = &[
    (
        "planner.md",
        include_str!("../../configs/agents/planner.md"),
    ),
    (
        "auditor.md",
        include_str!("../../configs/agents/auditor.md"),
    ),
    (
        "reducer.md",
        include_str!("../../configs/agents/reducer.md"),
    ),
    (
        "security.md",
        include_str!("../../configs/agents/security.md"),
    ),
    ("lead.md", include_str!("../../configs/agents/lead.md")),
    ("brief.md", include_str!("../../configs/agents/brief.md")),
    (
        "skeptic.md",
        include_str!("../../configs/agents/skeptic.md"),
    ),
];

/// The definitions in effect, by name.
#[derive(Clone, Debug, Default)]
pub struct AgentSet {
    agents: BTreeMap<String, AgentDefinition>,
}

impl AgentSet {
    /// The built-ins, then `<root>/.fanscan/agents/*.md` over them.
    /// Every file that does not parse is reported, all at once.
    pub fn load(root: &Path) -> Result<Self, Vec<DefinitionError>> {
        Self::load_from(root, &ConfigOrigin::Worktree)
    }

    /// As [`AgentSet::load`], the repository's files read from `origin`
    /// (the working tree, or a diff scan's base ref).
    pub fn load_from(root: &Path, origin: &ConfigOrigin) -> Result<Self, Vec<DefinitionError>> {
        let mut set = Self::default();
        let mut errors = Vec::new();
        for (file, text) in BUILTIN {
            match AgentDefinition::parse(&format!("builtin:configs/agents/{file}"), text) {
                Ok(d) => {
                    set.agents.insert(d.name.clone(), d);
                }
                Err(e) => errors.push(e),
            }
        }
        if let ConfigOrigin::BaseRef(reference) = origin {
            set.load_at_ref(root, reference, &mut errors);
            return if errors.is_empty() {
                Ok(set)
            } else {
                Err(errors)
            };
        }
        let dir = root.join(".fanscan").join("agents");
        if dir.is_dir() {
            let mut files: Vec<_> = match std::fs::read_dir(&dir) {
                Ok(read) => read
                    .filter_map(Result::ok)
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "md"))
                    .collect(),
                Err(e) => {
                    errors.push(DefinitionError {
                        source: dir.display().to_string(),
                        line: None,
                        message: format!("cannot list the agents directory: {e}"),
                    });
                    Vec::new()
                }
            };
            files.sort();
            let mut seen: BTreeMap<String, String> = BTreeMap::new();
            for path in files {
                match definition::load_file(&path) {
                    Ok(d) => {
                        if let Some(other) = seen.insert(d.name.clone(), d.source.clone()) {
                            errors.push(DefinitionError {
                                source: d.source.clone(),
                                line: None,
                                message: format!(
                                    "agent {:?} is also defined in {other}; names must be unique",
                                    d.name
                                ),
                            });
                            continue;
                        }
                        set.agents.insert(d.name.clone(), d);
                    }
                    Err(e) => errors.push(e),
                }
            }
        }
        if errors.is_empty() {
            Ok(set)
        } else {
            Err(errors)
        }
    }

    /// The repository's agents as they are at `reference`.
    fn load_at_ref(&mut self, root: &Path, reference: &str, errors: &mut Vec<DefinitionError>) {
        let dir = ".fanscan/agents";
        let names = match crate::util::git::list(root, reference, dir) {
            Ok(names) => names,
            Err(e) => {
                errors.push(DefinitionError {
                    source: format!("{reference}:{dir}"),
                    line: None,
                    message: format!("cannot list the agents at the base ref: {e}"),
                });
                return;
            }
        };
        let mut seen: BTreeMap<String, String> = BTreeMap::new();
        for name in names.iter().filter(|n| n.ends_with(".md")) {
            let file = name.rsplit('/').next().unwrap_or(name);
            let rel = format!("{dir}/{file}");
            let source = format!("{reference}:{rel}");
            let text = match crate::util::git::show(root, reference, &rel) {
                Ok(Some(text)) => text,
                Ok(None) => continue,
                Err(e) => {
                    errors.push(DefinitionError {
                        source,
                        line: None,
                        message: format!("cannot read it at the base ref: {e}"),
                    });
                    continue;
                }
            };
            match AgentDefinition::parse(&source, &text) {
                Ok(d) => {
                    if let Some(other) = seen.insert(d.name.clone(), d.source.clone()) {
                        errors.push(DefinitionError {
                            source: d.source.clone(),
                            line: None,
                            message: format!(
                                "agent {:?} is also defined in {other}; names must be unique",
                                d.name
                            ),
                        });
                        continue;
                    }
                    self.agents.insert(d.name.clone(), d);
                }
                Err(e) => errors.push(e),
            }
        }
    }

    /// The definition named `name`, or an error listing the names.
    pub fn get(&self, name: &str) -> Result<&AgentDefinition, UnknownAgent> {
        self.agents.get(name).ok_or_else(|| UnknownAgent {
            name: name.to_string(),
            known: self.agents.keys().cloned().collect::<Vec<_>>().join(", "),
        })
    }

    /// Every definition, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = &AgentDefinition> {
        self.agents.values()
    }

    /// The agents the lead may delegate to (and the planner may pick for
    /// a group), sorted by name.
    pub(crate) fn delegable(&self) -> impl Iterator<Item = &AgentDefinition> {
        self.agents.values().filter(|a| a.delegable)
    }

    /// What `fanscan agents` prints: each definition's name, source, tools,
    /// rounds, model and description.
    pub fn describe(&self) -> String {
        let mut out = String::new();
        for a in self.iter() {
            let tools = if a.tools.is_empty() {
                "(none)".to_string()
            } else {
                a.tools.join(", ")
            };
            out.push_str(&format!(
                "{}\n  source:      {}\n  tools:       {tools}\n  delegable:   {}\n  max_rounds:  {}\n  model:       {}\n  description: {}\n\n",
                a.name,
                a.source,
                if a.delegable { "yes" } else { "no" },
                a.max_rounds,
                a.model.as_deref().unwrap_or("(the run's)"),
                a.description
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Path-like tokens: a name with `/` inside, or a name of two or more
    /// characters with an extension that starts with a letter.
    fn path_like(text: &str) -> Vec<String> {
        let re = regex::Regex::new(
            r"[A-Za-z0-9_.-]*[A-Za-z0-9_]/[A-Za-z0-9_][A-Za-z0-9_./-]*|\b[A-Za-z0-9_-]{2,}\.[A-Za-z][A-Za-z0-9]{0,7}\b",
        )
        .unwrap();
        re.find_iter(text).map(|m| m.as_str().to_string()).collect()
    }

    /// Models copy the examples of their prompt, and small ones read every
    /// file it names: no built-in prompt, report format or schema holds a
    /// token that looks like a path (the scan's own requests are checked
    /// end to end in `tests/it/prompts.rs`).
    #[test]
    fn no_builtin_prompt_holds_a_path_like_token() {
        let dir = tempfile::tempdir().unwrap();
        let set = AgentSet::load(dir.path()).unwrap();
        let mut texts: Vec<(String, String)> = set
            .iter()
            .map(|d| (format!("agent {}", d.name), d.prompt.clone()))
            .collect();
        texts.push((
            "REPORT_FORMAT".into(),
            crate::model::findings::REPORT_FORMAT.into(),
        ));
        texts.push((
            "summary_request".into(),
            crate::agents::subagent::summary_request(),
        ));
        texts.push((
            "report_schema".into(),
            crate::model::findings::report_schema().to_string(),
        ));
        for (what, text) in texts {
            assert_eq!(path_like(&text), Vec::<String>::new(), "{what}");
        }
        assert_eq!(
            path_like("path/to/file.ext or main.rs, e.g. 0.5"),
            ["path/to/file.ext", "main.rs"]
        );
    }

    #[test]
    fn builtins_parse_and_are_read_only() {
        let dir = tempfile::tempdir().unwrap();
        let set = AgentSet::load(dir.path()).unwrap();
        let names: Vec<&str> = set.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(
            names,
            vec![
                "auditor", "brief", "lead", "planner", "reducer", "security", "skeptic"
            ]
        );
        assert!(
            set.get("skeptic").unwrap().tools.iter().all(|t| [
                "read_file",
                "grep",
                "definition",
                "references"
            ]
            .contains(&t.as_str())),
            "the skeptic reads; it never delegates"
        );
        let delegable: Vec<&str> = set.delegable().map(|d| d.name.as_str()).collect();
        assert_eq!(delegable, vec!["auditor", "security"]);
        assert!(set.get("planner").unwrap().tools.is_empty());
        assert!(
            set.get("nope")
                .unwrap_err()
                .to_string()
                .contains("auditor, brief, lead, planner")
        );
    }

    #[test]
    fn repository_agents_override_and_errors_are_all_reported() {
        let dir = tempfile::tempdir().unwrap();
        let agents = dir.path().join(".fanscan/agents");
        std::fs::create_dir_all(&agents).unwrap();
        std::fs::write(
            agents.join("auditor.md"),
            "---\nname: auditor\ndescription: mine\ntools: [grep]\n---\nMine.\n",
        )
        .unwrap();
        let set = AgentSet::load(dir.path()).unwrap();
        assert_eq!(set.get("auditor").unwrap().description, "mine");
        std::fs::write(agents.join("bad1.md"), "---\nname: x\n---\nb\n").unwrap();
        std::fs::write(agents.join("bad2.md"), "no front matter").unwrap();
        let errors = AgentSet::load(dir.path()).unwrap_err();
        assert_eq!(errors.len(), 2);
        assert!(errors[0].to_string().contains("bad1.md"));
    }
}
