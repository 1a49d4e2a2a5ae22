//! Agent definitions: Markdown files with YAML front matter.
//!
//! Takes the text of an agent file and where it came from; gives an
//! [`AgentDefinition`] or an error naming the file, the line and the key.
//! Validation is strict: an unknown key, a missing name, a tool that does
//! not exist or a non-positive `max_rounds` is an error, never a silent
//! skip (a misspelt key must not hand an agent every tool).

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The keys a front matter may have.
const KEYS: &[&str] = &[
    "name",
    "description",
    "tools",
    "max_rounds",
    "model",
    "context_tokens",
    "delegable",
    "preload",
];

/// The lead's delegation tool. It is not in the read-only registry: the
/// lead is given it in code, and no agent file may list it (a sub-agent
/// that could delegate would nest).
pub(crate) const TASK_TOOL: &str = "task";

/// Default rounds when a definition sets none.
pub(crate) const DEFAULT_MAX_ROUNDS: u32 = 20;

/// One agent, ready to run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AgentDefinition {
    pub name: String,
    pub description: String,
    /// Allowed tools, each one of the read-only registry's.
    pub tools: Vec<String>,
    pub max_rounds: u32,
    /// A model that overrides the run's model for this agent.
    pub model: Option<String>,
    /// The context window of this agent's model, in tokens, when it differs
    /// from the run's `--context-tokens` (the reducer batches its input to
    /// fit it).
    pub context_tokens: Option<u64>,
    /// Whether the lead of `fanscan ask` may delegate to this agent, and
    /// the scan's planner may pick it for a group.
    pub delegable: bool,
    /// Whether the task message carries the group's files (each as
    /// `read_file` returns it from the top), so that a group costs two
    /// turns when nothing needs following up. Off: the agent reads them.
    pub preload: bool,
    /// The system prompt (the Markdown body).
    pub prompt: String,
    /// Where it came from: `builtin:auditor.md` or a file path.
    pub source: String,
    /// SHA-256 of the file's text, for the run manifest.
    pub hash: String,
}

/// An invalid agent file.
#[derive(Debug, PartialEq, Eq)]
pub struct DefinitionError {
    pub source: String,
    pub line: Option<usize>,
    pub message: String,
}

impl fmt::Display for DefinitionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.source, self.message),
            None => write!(f, "{}: {}", self.source, self.message),
        }
    }
}

impl std::error::Error for DefinitionError {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FrontMatter {
    name: Option<String>,
    description: Option<String>,
    #[serde(default)]
    tools: Option<Vec<String>>,
    #[serde(default)]
    max_rounds: Option<i64>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    context_tokens: Option<i64>,
    #[serde(default)]
    delegable: Option<bool>,
    preload: Option<bool>,
}

impl AgentDefinition {
    /// Parses an agent file. `source` names it in errors.
    pub fn parse(source: &str, text: &str) -> Result<Self, DefinitionError> {
        let err = |line: Option<usize>, message: String| DefinitionError {
            source: source.to_string(),
            line,
            message,
        };
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let (front, body) = split_front_matter(text).map_err(|(line, m)| err(line, m))?;
        // Check keys first, with their lines, so a misspelt key is named
        // with a suggestion rather than a generic parse error.
        let key_lines = top_level_keys(&front);
        check_keys(&key_lines).map_err(|(line, m)| err(Some(line), m))?;
        let line_of = |key: &str| key_lines.get(key).map(|l| l + 1);
        let fail = |key: &str, message: String| err(line_of(key), message);
        if front.trim().is_empty() {
            return Err(err(
                Some(2),
                "the front matter is empty: `name` and `description` are required".into(),
            ));
        }
        let parsed: FrontMatter = serde_saphyr::from_str(&front).map_err(|e| {
            let line = e.location().map(|l| l.line() as usize + 1);
            let message = e.to_string();
            let first = message.lines().next().unwrap_or("invalid YAML").to_string();
            err(line, format!("invalid front matter: {first}"))
        })?;
        let required = |value: Option<String>, key: &str| {
            value
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
                .ok_or_else(|| err(line_of(key).or(Some(2)), format!("`{key}` is required")))
        };
        let name = required(parsed.name, "name")?;
        check_name(&name).map_err(|m| fail("name", m.to_string()))?;
        let description = required(parsed.description, "description")?;
        let tools = check_tools(parsed.tools.unwrap_or_default())
            .map_err(|m| fail("tools", m.to_string()))?;
        let max_rounds =
            check_max_rounds(parsed.max_rounds).map_err(|m| fail("max_rounds", m.to_string()))?;
        let context_tokens = check_context_tokens(parsed.context_tokens)
            .map_err(|m| fail("context_tokens", m.to_string()))?;
        let delegable = parsed.delegable.unwrap_or(false);
        if delegable && ["lead", "planner", "reducer", "skeptic"].contains(&name.as_str()) {
            return Err(fail(
                "delegable",
                format!(
                    "agent {name:?} may not be delegable: only agents that audit files can be given a task; remove `delegable: true`"
                ),
            ));
        }
        let prompt = body.trim().to_string();
        if prompt.is_empty() {
            return Err(err(
                None,
                "the body (the system prompt) is empty: write it after the front matter".into(),
            ));
        }
        Ok(Self {
            name,
            description,
            tools,
            max_rounds,
            model: parsed.model.filter(|m| !m.trim().is_empty()),
            context_tokens,
            delegable,
            preload: parsed.preload.unwrap_or(false),
            prompt,
            source: source.to_string(),
            hash: crate::util::sha256_hex(text.as_bytes()),
        })
    }
}

/// The front matter and the body of an agent file, or where and why it
/// has none.
fn split_front_matter(text: &str) -> Result<(String, String), (Option<usize>, String)> {
    let mut lines = text.split_inclusive('\n');
    if lines.next().map(str::trim_end) != Some("---") {
        return Err((
            Some(1),
            "an agent file must start with a `---` line opening its YAML front matter".into(),
        ));
    }
    let mut front = String::new();
    for line in lines.by_ref() {
        if line.trim_end() == "---" {
            return Ok((front, lines.collect()));
        }
        front.push_str(line);
    }
    Err((
        None,
        "the front matter is never closed: add a `---` line after it".into(),
    ))
}

/// Every top-level key must be known; the first that is not is named, with
/// its 1-based line and the closest known key.
fn check_keys(key_lines: &BTreeMap<String, usize>) -> Result<(), (usize, String)> {
    for (key, line) in key_lines {
        if !KEYS.contains(&key.as_str()) {
            let hint = suggest(key, KEYS)
                .map(|s| format!(" (did you mean {s:?}?)"))
                .unwrap_or_default();
            return Err((
                line + 1,
                format!(
                    "unknown key {key:?}{hint}; the keys are {}",
                    KEYS.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// What is wrong with one key's value; [`AgentDefinition::parse`] puts the
/// file and the key's line in front of it.
#[derive(Debug, thiserror::Error)]
enum FieldError {
    #[error("name {0:?} may only use letters, digits, - and _")]
    Name(String),
    #[error(
        "tool {TASK_TOOL:?} may not be listed: only the lead of `fanscan ask` delegates, and it is given {TASK_TOOL:?} in code; sub-agents never start agents. Remove it; the tools are {known} (all read-only)"
    )]
    Task { known: String },
    #[error("unknown tool {tool:?}{hint}; the tools are {known} (all read-only)")]
    UnknownTool {
        tool: String,
        /// ` (did you mean "grep"?)`, or empty.
        hint: String,
        known: String,
    },
    #[error("max_rounds must be between 1 and 1000, got {0}")]
    MaxRounds(i64),
    #[error(
        "context_tokens must be between 1000 and 100000000 (the model's context window), got {0}"
    )]
    ContextTokens(i64),
}

fn check_name(name: &str) -> Result<(), FieldError> {
    if name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        Ok(())
    } else {
        Err(FieldError::Name(name.to_string()))
    }
}

/// The tools, deduplicated; each must be a read-only tool, never `task`.
fn check_tools(listed: Vec<String>) -> Result<Vec<String>, FieldError> {
    let mut tools: Vec<String> = Vec::new();
    for tool in listed {
        if !tools.contains(&tool) {
            tools.push(tool);
        }
    }
    let known: Vec<&str> = crate::tools::names().collect();
    for tool in &tools {
        if tool == TASK_TOOL {
            return Err(FieldError::Task {
                known: known.join(", "),
            });
        }
        if !known.contains(&tool.as_str()) {
            let hint = suggest(tool, &known)
                .map(|s| format!(" (did you mean {s:?}?)"))
                .unwrap_or_default();
            return Err(FieldError::UnknownTool {
                tool: tool.clone(),
                hint,
                known: known.join(", "),
            });
        }
    }
    Ok(tools)
}

fn check_max_rounds(value: Option<i64>) -> Result<u32, FieldError> {
    match value {
        None => Ok(DEFAULT_MAX_ROUNDS),
        Some(n) if (1..=1000).contains(&n) => Ok(n as u32),
        Some(n) => Err(FieldError::MaxRounds(n)),
    }
}

fn check_context_tokens(value: Option<i64>) -> Result<Option<u64>, FieldError> {
    match value {
        None => Ok(None),
        Some(n) if (1_000..=100_000_000).contains(&n) => Ok(Some(n as u64)),
        Some(n) => Err(FieldError::ContextTokens(n)),
    }
}

/// Top-level keys of a YAML mapping with their 0-based line in the front
/// matter (a light scan: lines that start at column 0 with `key:`).
fn top_level_keys(front: &str) -> BTreeMap<String, usize> {
    let mut keys = BTreeMap::new();
    for (index, line) in front.lines().enumerate() {
        if line.starts_with([' ', '\t', '#', '-']) || line.trim().is_empty() {
            continue;
        }
        if let Some((key, _)) = line.split_once(':') {
            let key = key.trim().trim_matches(['"', '\'']);
            if !key.is_empty() {
                keys.entry(key.to_string()).or_insert(index + 1);
            }
        }
    }
    keys
}

/// The closest known word, if it is close enough to be a likely typo.
fn suggest<'a>(word: &str, known: &[&'a str]) -> Option<&'a str> {
    let normalized = word.to_ascii_lowercase().replace('-', "_");
    known
        .iter()
        .map(|k| {
            let d = if normalized.contains(k) || k.contains(normalized.as_str()) {
                1
            } else {
                strsim::levenshtein(&normalized, k)
            };
            (d, *k)
        })
        .filter(|(d, k)| *d <= (k.len() / 2).max(2))
        .min()
        .map(|(_, k)| k)
}

/// Reads and parses an agent file from disk.
pub(crate) fn load_file(path: &Path) -> Result<AgentDefinition, DefinitionError> {
    let source = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| DefinitionError {
        source: source.clone(),
        line: None,
        message: format!("cannot read the agent file: {e}"),
    })?;
    AgentDefinition::parse(&source, &text)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "---\nname: auditor\ndescription: Reviews files.\ntools: [list_dir, read_file]\nmax_rounds: 5\n---\nYou audit.\n";

    #[test]
    fn parses_a_good_definition() {
        let d = AgentDefinition::parse("a.md", GOOD).unwrap();
        assert_eq!(d.name, "auditor");
        assert_eq!(d.tools, vec!["list_dir", "read_file"]);
        assert_eq!(d.max_rounds, 5);
        assert_eq!(d.prompt, "You audit.");
        assert_eq!(d.model, None);
    }

    #[test]
    fn unknown_key_is_named_with_line_and_suggestion() {
        let text = "---\nname: a\ndescription: d\nallowed-tools: [grep]\n---\nbody\n";
        let e = AgentDefinition::parse("agents/a.md", text).unwrap_err();
        assert_eq!(e.line, Some(4));
        assert!(
            e.to_string().starts_with(
                "agents/a.md:4: unknown key \"allowed-tools\" (did you mean \"tools\"?)"
            ),
            "{e}"
        );
    }

    #[test]
    fn rejects_bad_definitions() {
        let cases = [
            ("---\ndescription: d\n---\nb\n", "`name` is required"),
            ("---\nname: a\n---\nb\n", "`description` is required"),
            (
                "---\nname: a\ndescription: d\ntools: [read_file, write_file]\n---\nb\n",
                "unknown tool \"write_file\"",
            ),
            (
                "---\nname: a\ndescription: d\nmax_rounds: 0\n---\nb\n",
                "max_rounds must be between 1",
            ),
            (
                "---\nname: a\ndescription: d\nmax_rounds: -3\n---\nb\n",
                "max_rounds must be between 1",
            ),
            ("---\nname: a\ndescription: d\n---\n\n", "body"),
            ("name: a\n", "must start with"),
            ("---\nname: a\ndescription: d\n", "never closed"),
            (
                "---\nname: [a\ndescription: d\n---\nb\n",
                "invalid front matter",
            ),
            ("---\nname: a b\ndescription: d\n---\nb\n", "may only use"),
            (
                "---\nname: a\ndescription: d\ndelegable: maybe\n---\nb\n",
                "invalid front matter",
            ),
            (
                "---\nname: lead\ndescription: d\ndelegable: true\n---\nb\n",
                "may not be delegable",
            ),
        ];
        for (text, expected) in cases {
            let e = AgentDefinition::parse("x.md", text)
                .unwrap_err()
                .to_string();
            assert!(e.contains(expected), "{text:?} gave {e}");
        }
    }

    #[test]
    fn listing_the_task_tool_is_rejected_with_file_and_line() {
        let text = "---\nname: nester\ndescription: d\ntools: [read_file, task]\n---\nb\n";
        let e = AgentDefinition::parse(".fanscan/agents/nester.md", text).unwrap_err();
        assert_eq!(e.line, Some(4));
        let shown = e.to_string();
        assert!(
            shown.starts_with(".fanscan/agents/nester.md:4: tool \"task\" may not be listed"),
            "{shown}"
        );
        assert!(!crate::tools::names().any(|n| n == TASK_TOOL));
    }

    #[test]
    fn delegable_is_read_and_defaults_to_false() {
        let d = AgentDefinition::parse("a.md", GOOD).unwrap();
        assert!(!d.delegable);
        let text = "---\nname: a\ndescription: d\ndelegable: true\n---\nb\n";
        assert!(AgentDefinition::parse("a.md", text).unwrap().delegable);
    }

    #[test]
    fn suggestions_are_close_words_only() {
        assert_eq!(suggest("tool", KEYS), Some("tools"));
        assert_eq!(suggest("max-rounds", KEYS), Some("max_rounds"));
        assert_eq!(
            suggest("read", &crate::tools::names().collect::<Vec<_>>()),
            Some("read_file")
        );
        assert_eq!(suggest("zzzzzzzz", KEYS), None);
    }
}
