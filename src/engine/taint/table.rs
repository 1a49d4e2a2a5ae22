//! The taint rules' table (`configs/taint.toml`): classes of weakness with
//! their sanitizers, and the sinks of each language. Read and checked once:
//! every sink's examples must be reported and its counterexamples not.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;

use crate::model::findings::Severity;

/// The bundled table's text.
pub(super) const TABLE: &str = include_str!("../../../configs/taint.toml");

/// A table that cannot be used: names the file, the entry and the fix.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TaintTableError {
    #[error("{source_name}: invalid taint table: {detail}")]
    Toml { source_name: String, detail: String },
    #[error("{source_name}: {entry}: {problem}")]
    Entry {
        source_name: String,
        entry: String,
        problem: String,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTable {
    all: RawAll,
    class: BTreeMap<String, RawClass>,
    #[serde(default)]
    sink: Vec<RawSink>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAll {
    sanitizers: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawClass {
    cwe: u32,
    severity: String,
    title: String,
    message: String,
    sources: Vec<String>,
    #[serde(default)]
    sanitizers: Vec<String>,
    #[serde(default)]
    fixed_prefix: bool,
    #[serde(default)]
    source_calls: Vec<String>,
    #[serde(default = "yes")]
    common_sanitizers: bool,
}

fn yes() -> bool {
    true
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSink {
    id: String,
    languages: Vec<String>,
    #[serde(default)]
    calls: Vec<String>,
    #[serde(default)]
    html_strings: bool,
    #[serde(default)]
    properties: Vec<String>,
    #[serde(default)]
    args: Option<Vec<usize>>,
    #[serde(default)]
    keywords: Vec<String>,
    #[serde(default)]
    contains: Option<String>,
    #[serde(default)]
    only_read_by: Vec<String>,
    #[serde(default)]
    not_lists: bool,
    #[serde(default)]
    built: bool,
    #[serde(default)]
    examples: Vec<Sample>,
    #[serde(default)]
    counterexamples: Vec<Sample>,
}

/// A sample of code a sink must report, or must not.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Sample {
    pub(super) file: String,
    pub(super) code: String,
}

/// A class of weakness.
#[derive(Debug)]
pub(crate) struct Class {
    pub(crate) name: String,
    pub(crate) cwe: u32,
    pub(crate) severity: Severity,
    pub(crate) title: String,
    pub(crate) message: String,
    /// Source kinds of `configs/sources.toml` that make it a risk.
    pub(super) sources: Vec<String>,
    /// Its own sanitizers and those of every class.
    pub(super) sanitizers: BTreeSet<String>,
    pub(super) fixed_prefix: bool,
    /// Calls that are this class's source themselves (a predictable random
    /// generator), named as a sink's calls are; the source's kind is the
    /// class's first `sources` entry.
    pub(super) source_calls: Vec<String>,
    /// A number made of the value (a cast, `[all].sanitizers`) is safe.
    pub(super) numbers_clean: bool,
}

/// One sink.
#[derive(Debug)]
pub(crate) struct Sink {
    pub(crate) id: String,
    /// Index into [`Table::classes`].
    pub(super) class: usize,
    pub(super) languages: Vec<String>,
    pub(super) calls: Vec<String>,
    /// Strings built with HTML markup (`"<p>" . $x`, f-strings, template
    /// literals) are this sink.
    pub(super) html_strings: bool,
    /// Members whose assignment is this sink (`el.innerHTML = …`): the
    /// value is the right side.
    pub(super) properties: Vec<String>,
    pub(super) args: Option<Vec<usize>>,
    pub(super) keywords: Vec<String>,
    /// Lower case.
    pub(super) contains: Option<String>,
    /// Methods that, called right away on what the sink's call made
    /// (`new URL(u).getHost()`), only read a part of it: no sink then.
    pub(super) only_read_by: Vec<String>,
    /// An argument written as a list or an array is not the sink: a query
    /// with its bound values, a command's argument vector.
    pub(super) not_lists: bool,
    /// The argument is the sink only when it is text built in the function
    /// (a literal spliced with other parts, a format), not a value passed
    /// on alone (a prepared statement's bound values).
    pub(super) built: bool,
}

impl Sink {
    /// Whether a callee named `dotted` (`requests.get`, `res.redirect`,
    /// `include`) is one of this sink's calls.
    pub(super) fn calls(&self, dotted: &str) -> bool {
        names_call(&self.calls, dotted)
    }
}

/// Whether a callee named `dotted` is one of `calls`: `name` matches a
/// callee whose last name it is, `a.b` one whose dotted name ends with it,
/// `name()` a callee that is that name alone (a function imported by name,
/// not a method of any object).
pub(super) fn names_call(calls: &[String], dotted: &str) -> bool {
    let last = dotted.rsplit('.').next().unwrap_or(dotted);
    calls.iter().any(|c| {
        if let Some(bare) = c.strip_suffix("()") {
            dotted == bare
        } else if c.contains('.') {
            dotted == c
                || dotted
                    .strip_suffix(c.as_str())
                    .is_some_and(|before| before.ends_with('.'))
        } else {
            last == c
        }
    })
}

/// The table, checked.
#[derive(Debug)]
pub(crate) struct Table {
    pub(crate) classes: Vec<Class>,
    pub(crate) sinks: Vec<Sink>,
    /// Each sink's samples, checked by [`super::Taint::parse`] once the
    /// analysis can run.
    pub(super) samples: Vec<(Vec<Sample>, Vec<Sample>)>,
}

impl Table {
    pub(super) fn parse(source_name: &str, text: &str) -> Result<Self, TaintTableError> {
        let raw: RawTable = toml::from_str(text).map_err(|e| TaintTableError::Toml {
            source_name: source_name.to_string(),
            detail: crate::util::toml_error(text, &e),
        })?;
        let at = |entry: &str, problem: String| TaintTableError::Entry {
            source_name: source_name.to_string(),
            entry: entry.to_string(),
            problem,
        };
        let mut classes = Vec::new();
        for (name, c) in raw.class {
            let severity = Severity::parse(&c.severity).ok_or_else(|| {
                at(
                    &format!("class {name}"),
                    format!(
                        "severity {:?} is not one of critical, high, medium, low, info",
                        c.severity
                    ),
                )
            })?;
            if c.cwe == 0 {
                return Err(at(
                    &format!("class {name}"),
                    "`cwe` must be the number of CWE-N, e.g. `cwe = 79`".into(),
                ));
            }
            if c.sources.is_empty() {
                return Err(at(
                    &format!("class {name}"),
                    "names no `sources`: list the source kinds of configs/sources.toml that make it a risk".into(),
                ));
            }
            let common: &[String] = if c.common_sanitizers {
                &raw.all.sanitizers
            } else {
                &[]
            };
            let sanitizers = c.sanitizers.iter().chain(common).cloned().collect();
            classes.push(Class {
                name,
                cwe: c.cwe,
                severity,
                title: c.title,
                message: c.message,
                sources: c.sources,
                sanitizers,
                fixed_prefix: c.fixed_prefix,
                source_calls: c.source_calls,
                numbers_clean: c.common_sanitizers,
            });
        }
        let mut sinks = Vec::new();
        let mut samples = Vec::new();
        let mut ids = BTreeSet::new();
        for s in raw.sink {
            let entry = format!("sink {}", s.id);
            if !ids.insert(s.id.clone()) {
                return Err(at(&entry, "the id is used twice".into()));
            }
            let class_name = s.id.split('/').next().unwrap_or_default();
            let class = classes
                .iter()
                .position(|c| c.name == class_name)
                .ok_or_else(|| {
                    at(
                        &entry,
                        format!(
                            "its class {class_name:?} (the id's part before `/`) has no [class.{class_name}]"
                        ),
                    )
                })?;
            if (s.calls.is_empty() && s.properties.is_empty() && !s.html_strings)
                || s.languages.is_empty()
            {
                return Err(at(
                    &entry,
                    "needs `languages`, and `calls`, `properties` or `html_strings = true`".into(),
                ));
            }
            if s.examples.is_empty() {
                return Err(at(
                    &entry,
                    "has no `examples`: add code the sink must report".into(),
                ));
            }
            sinks.push(Sink {
                id: s.id,
                class,
                languages: s.languages,
                calls: s.calls,
                html_strings: s.html_strings,
                properties: s.properties,
                args: s.args,
                keywords: s.keywords,
                contains: s.contains.map(|c| c.to_lowercase()),
                only_read_by: s.only_read_by,
                not_lists: s.not_lists,
                built: s.built,
            });
            samples.push((s.examples, s.counterexamples));
        }
        Ok(Self {
            classes,
            sinks,
            samples,
        })
    }

    /// The class of `sink`.
    pub(crate) fn class_of(&self, sink: &Sink) -> &Class {
        &self.classes[sink.class]
    }

    /// The sink named `id`.
    pub(crate) fn sink(&self, id: &str) -> Option<&Sink> {
        self.sinks.iter().find(|s| s.id == id)
    }
}
