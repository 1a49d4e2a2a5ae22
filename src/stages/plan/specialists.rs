//! Which agent audits each file: the routing that the planners pack by.
//!
//! Takes the run's agent, the `[agents]` globs of `fanscan.toml` and the
//! delegable agents; gives a [`Routing`] that names each file's agent: the
//! agent of the `[agents]` glob that matches it first, else the LLM
//! planner's pick for the group it put the file in (when that pick is a
//! delegable agent), else the run's agent. `--agent` forces one agent for
//! every file ([`Routing::single`]). The planners never put files of two
//! agents in one group, so a group's agent is its every file's agent.
//!
//! When globs naming different agents match one file, the longest glob
//! wins (it is the more specific one: `src/auth/**` over `src/**`); a tie
//! goes to the glob first in byte order, as `fanscan.toml`'s table is read.

use globset::{Glob, GlobMatcher};

/// An `[agents]` glob that does not compile.
#[derive(Debug, thiserror::Error)]
#[error(
    "fanscan.toml [agents]: {glob:?} is not a valid glob ({source}); write e.g. \"src/auth/**\" = \"security\""
)]
pub(crate) struct RoutingError {
    glob: String,
    source: globset::Error,
}

/// Who audits each file of a plan.
#[derive(Clone, Debug)]
pub struct Routing {
    /// The run's agent: a file no glob and no pick names goes to it.
    default: String,
    /// The `[agents]` globs and their agent, the one that wins first.
    globs: Vec<(GlobMatcher, String)>,
    /// The names a planner's pick may be; empty when picks are ignored.
    delegable: Vec<String>,
}

impl Routing {
    /// Every file to `agent` (`--agent` forced, or a run with no map).
    pub fn single(agent: &str) -> Self {
        Self {
            default: agent.to_string(),
            globs: Vec::new(),
            delegable: Vec::new(),
        }
    }

    /// The `[agents]` globs (glob, agent) first, then the planner's picks
    /// among `delegable`, then `default`.
    pub(crate) fn new(
        default: &str,
        globs: &[(String, String)],
        delegable: Vec<String>,
    ) -> Result<Self, RoutingError> {
        let mut compiled = Vec::with_capacity(globs.len());
        for (glob, agent) in globs {
            let matcher = Glob::new(glob).map_err(|source| RoutingError {
                glob: glob.clone(),
                source,
            })?;
            compiled.push((glob.as_str(), matcher.compile_matcher(), agent.clone()));
        }
        // Longest glob first; ties in byte order of the glob.
        compiled.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(b.0)));
        Ok(Self {
            default: default.to_string(),
            globs: compiled.into_iter().map(|(_, m, a)| (m, a)).collect(),
            delegable,
        })
    }

    /// The run's agent.
    pub(crate) fn default_agent(&self) -> &str {
        &self.default
    }

    /// Whether a planner's pick of `agent` counts (it is delegable).
    pub(crate) fn accepts(&self, agent: &str) -> bool {
        self.delegable.iter().any(|a| a == agent)
    }

    /// The delegable agents, for a note about a pick that is not one.
    pub(crate) fn delegable(&self) -> &[String] {
        &self.delegable
    }

    /// The agent of `path`: its glob's, else `pick` when delegable, else
    /// the run's.
    pub(crate) fn agent_of<'a>(&'a self, path: &str, pick: Option<&'a str>) -> &'a str {
        if let Some((_, agent)) = self.globs.iter().find(|(m, _)| m.is_match(path)) {
            return agent;
        }
        match pick {
            Some(p) if self.accepts(p) => p,
            Some(_) | None => &self.default,
        }
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    fn globs(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(g, a)| (g.to_string(), a.to_string()))
            .collect()
    }

    #[test]
    fn a_files_agent_is_its_glob_then_the_pick_then_the_runs() {
        let routing = Routing::new(
            "auditor",
            &globs(&[("src/**/*.py", "security"), ("web/**", "auditor")]),
            vec!["auditor".into(), "security".into()],
        )
        .unwrap();
        assert_eq!(routing.agent_of("src/a/app.py", None), "security");
        assert_eq!(
            routing.agent_of("src/a/app.py", Some("auditor")),
            "security"
        );
        assert_eq!(routing.agent_of("web/x.py", Some("security")), "auditor");
        assert_eq!(routing.agent_of("src/a/Main.java", None), "auditor");
        assert_eq!(
            routing.agent_of("src/a/Main.java", Some("security")),
            "security"
        );
        // A pick that is not delegable does not count.
        assert_eq!(
            routing.agent_of("src/a/main.go", Some("reducer")),
            "auditor"
        );
    }

    #[test]
    fn the_longest_matching_glob_wins() {
        let routing = Routing::new(
            "auditor",
            &globs(&[("src/**", "auditor"), ("src/auth/**", "security")]),
            vec!["auditor".into(), "security".into()],
        )
        .unwrap();
        assert_eq!(routing.agent_of("src/auth/login.rs", None), "security");
        assert_eq!(routing.agent_of("src/db.rs", Some("security")), "auditor");
    }

    #[test]
    fn single_routes_every_file_to_one_agent() {
        let routing = Routing::single("security");
        assert_eq!(routing.agent_of("a.rs", Some("auditor")), "security");
        assert_eq!(routing.default_agent(), "security");
    }

    #[test]
    fn a_glob_that_does_not_compile_names_itself_and_the_fix() {
        let e = Routing::new("auditor", &globs(&[("src/[**", "security")]), Vec::new())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("\"src/[**\" is not a valid glob") && e.contains("src/auth/**"),
            "{e}"
        );
    }
}
