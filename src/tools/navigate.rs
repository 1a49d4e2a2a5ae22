//! `definition` and `references`: the code's structure for an agent that
//! follows a value across files.
//!
//! Takes a name (and a path to narrow it); gives each definition of that
//! name with its source, numbered and fenced like `read_file`, or each
//! line that calls or names it with the function it is in. The answers
//! come from the run's [`SymbolIndex`], which the engine builds once, on
//! the first call, from the syntax trees of the scan's files
//! (tree-sitter's tags queries); a file whose language has no grammar is
//! searched by its text, and the answer says which hits came that way.
//! Read-only and confined to the scan like every tool.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};

use super::{LINE_SHOWN, Tool, ToolContext, ToolError, ToolOutput, cap, parse, truncate_line};
use crate::llm::conversation::FileRead;

/// A definition of a name: a function, method, class, interface, module
/// or constant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Definition {
    pub(crate) path: String,
    /// Its first and last lines (1-based).
    pub(crate) line: u32,
    pub(crate) last: u32,
    /// `function`, `method`, `class`, …: the tags query's word.
    pub(crate) kind: String,
}

/// A line that calls or names a symbol.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Reference {
    pub(crate) path: String,
    pub(crate) line: u32,
    /// `call`, `class`, `type`, …; `text` for a text match in a file no
    /// grammar reads.
    pub(crate) kind: String,
    /// The name of the function or method the line is in, if any.
    pub(crate) within: Option<String>,
}

/// Every definition and reference of the scan's files, by name.
#[derive(Debug, Default)]
pub(crate) struct SymbolIndex {
    pub(crate) definitions: HashMap<String, Vec<Definition>>,
    pub(crate) references: HashMap<String, Vec<Reference>>,
    /// The names each file calls or uses, by path.
    pub(crate) used_in: HashMap<String, BTreeSet<String>>,
    /// Files of the scan no grammar read (no grammar for the language,
    /// or the parse was refused): searched by text.
    pub(crate) unparsed: Vec<String>,
}

/// Most names a task lists as defined in other files.
const MOST_ELSEWHERE: usize = 40;

impl SymbolIndex {
    /// The names `files` call or use that are defined only outside them,
    /// each with the files that define it (at most three): what a task
    /// tells its auditor it can ask `definition` about. Paths without
    /// lines, so an edit elsewhere that moves a line changes no task.
    pub(crate) fn defined_elsewhere(&self, files: &[String]) -> Vec<(String, Vec<String>)> {
        let mine: BTreeSet<&str> = files.iter().map(String::as_str).collect();
        let used: BTreeSet<&String> = files
            .iter()
            .filter_map(|f| self.used_in.get(f))
            .flatten()
            .collect();
        let mut out = Vec::new();
        for name in used {
            let Some(defs) = self.definitions.get(name) else {
                continue;
            };
            if defs.iter().any(|d| mine.contains(d.path.as_str())) {
                continue;
            }
            let paths: BTreeSet<&str> = defs.iter().map(|d| d.path.as_str()).collect();
            out.push((
                name.clone(),
                paths.into_iter().take(3).map(str::to_string).collect(),
            ));
            if out.len() == MOST_ELSEWHERE {
                break;
            }
        }
        out
    }
}

/// What builds the run's index from the tools' view of the repository
/// (the engine's parser: the tools layer has none of its own).
pub(crate) type SymbolSource = Arc<dyn Fn(&ToolContext) -> SymbolIndex + Send + Sync>;

/// Most definitions one `definition` answer shows.
const MOST_DEFINITIONS: usize = 5;
/// Most lines of one definition shown; a longer one is cut with the
/// offset to page on.
const DEFINITION_LINES: u32 = 120;
/// Most references one `references` answer lists.
const MOST_REFERENCES: usize = 60;
/// Most definitions a `references` answer names.
const MOST_DEFINED: usize = 10;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SymbolArgs {
    name: String,
    #[serde(default)]
    path: Option<String>,
}

impl SymbolArgs {
    /// The bare name asked for (`Class.method`, `Class::method` and
    /// `obj->method` ask for `method`) and the path prefix that narrows it.
    fn read(self, ctx: &ToolContext) -> Result<(String, Option<String>), ToolError> {
        let name = self
            .name
            .rsplit(['.', ':', '>'])
            .next()
            .unwrap_or_default()
            .trim()
            .trim_end_matches("()")
            .to_string();
        if name.is_empty() || name.chars().any(char::is_whitespace) {
            return Err(ToolError::Model(format!(
                "{:?} is not a name: give a function, method, class or constant name",
                self.name
            )));
        }
        let path = match self.path.as_deref().map(str::trim) {
            None | Some("" | ".") => None,
            Some(p) => Some(ctx.resolve(p)?.rel),
        };
        Ok((name, path))
    }
}

fn schema(what: &str) -> Value {
    json!({"type": "object", "properties": {
        "name": {"type": "string", "description": format!("The name of the function, method, class or constant {what}.")},
        "path": {"type": "string", "description": "Only in this file or directory (relative to the repository root)."}
    }, "required": ["name"], "additionalProperties": false})
}

/// Whether `path` is `prefix` or under it.
fn under(path: &str, prefix: Option<&str>) -> bool {
    prefix.is_none_or(|p| path == p || path.strip_prefix(p).is_some_and(|r| r.starts_with('/')))
}

/// `definition`: each definition of a name, with its source.
pub(crate) struct DefinitionTool;

impl Tool for DefinitionTool {
    fn name(&self) -> &'static str {
        "definition"
    }

    fn description(&self) -> &'static str {
        "Find where a function, method, class or constant is defined, from the code's syntax trees. \
         Returns each definition's file, lines and source with numbered lines."
    }

    fn schema(&self) -> Value {
        schema("to find")
    }

    fn run(&self, ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        let (name, path) = parse::<SymbolArgs>(self.name(), args)?.read(ctx)?;
        let index = ctx.symbols()?;
        let found: Vec<&Definition> = index
            .definitions
            .get(&name)
            .into_iter()
            .flatten()
            .filter(|d| under(&d.path, path.as_deref()))
            .collect();
        let texts = text_matches(ctx, &index.unparsed, &name, path.as_deref(), 10)?;
        let mut out = ToolOutput::default();
        if found.is_empty() {
            out.text = format!(
                "no definition of {name:?}{} in the syntax trees of the scan's files\n",
                path.map(|p| format!(" under {p:?}")).unwrap_or_default()
            );
        } else {
            out.text = format!(
                "{} definition{} of {name:?}{}\n",
                found.len(),
                if found.len() == 1 { "" } else { "s" },
                match found.len() > MOST_DEFINITIONS {
                    true => format!(", the first {MOST_DEFINITIONS} shown; narrow with path"),
                    false => String::new(),
                }
            );
        }
        let budget = ctx.limits.max_output_bytes.saturating_sub(1_000);
        for def in found.iter().take(MOST_DEFINITIONS) {
            if out.text.len() >= budget {
                writeln!(out.text, "[cut: output limit reached; narrow with path]")?;
                break;
            }
            show_definition(ctx, def, &mut out, budget)?;
        }
        texts.write(&mut out.text, &name)?;
        out.text = cap(out.text, ctx.limits.max_output_bytes);
        Ok(out)
    }
}

/// Appends `def`'s source, fenced as file text, to `out`, and records the
/// lines shown.
fn show_definition(
    ctx: &ToolContext,
    def: &Definition,
    out: &mut ToolOutput,
    budget: usize,
) -> Result<(), ToolError> {
    let file = ctx.resolve(&def.path)?;
    let (text, redactions, _) = ctx.load_text(&file)?;
    let lines: Vec<&str> = text.lines().collect();
    let total = lines.len() as u32;
    let first = def.line.clamp(1, total.max(1));
    let last = def.last.clamp(first, total.max(1));
    let shown_last = last.min(first + DEFINITION_LINES - 1);
    let mut body = format!(
        "{} ({total} lines): {} {} at lines {first}-{last}\n",
        file.rel, def.kind, "definition"
    );
    let mut end = first - 1;
    for n in first..=shown_last {
        let line = truncate_line(lines[(n - 1) as usize], LINE_SHOWN);
        if out.text.len() + body.len() + line.len() > budget && n > first {
            break;
        }
        writeln!(body, "{n}\t{line}")?;
        end = n;
    }
    if end < last {
        writeln!(
            body,
            "[cut: lines {first}-{end} of the definition's {first}-{last} shown; call read_file with offset={} to continue]",
            end + 1
        )?;
    }
    out.text.push_str(&ctx.fence.wrap(&file.rel, &body));
    out.redactions.extend(
        redactions
            .into_iter()
            .filter(|r| r.line >= first && r.line <= end)
            .map(|r| (file.rel.clone(), r)),
    );
    if !out.files_read.contains(&file.rel) {
        out.files_read.push(file.rel.clone());
    }
    // One read is recorded per answer: the first definition's.
    if out.read.is_none() {
        out.read = Some(FileRead {
            path: file.rel,
            first: u64::from(first),
            last: u64::from(end),
            total: u64::from(total),
            cut: Vec::new(),
        });
    }
    Ok(())
}

/// `references`: each line that calls or names a symbol.
pub(crate) struct ReferencesTool;

impl Tool for ReferencesTool {
    fn name(&self) -> &'static str {
        "references"
    }

    fn description(&self) -> &'static str {
        "Find the lines that call or use a function, method, class or constant, from the code's syntax trees. \
         Returns path:line: text hits, each with the function it is in, and the total count."
    }

    fn schema(&self) -> Value {
        schema("whose uses to find")
    }

    fn run(&self, ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        let (name, path) = parse::<SymbolArgs>(self.name(), args)?.read(ctx)?;
        let index = ctx.symbols()?;
        let mut found: Vec<&Reference> = index
            .references
            .get(&name)
            .into_iter()
            .flatten()
            .filter(|r| under(&r.path, path.as_deref()))
            .collect();
        // The task's own files first, each part in path and line order.
        found.sort_by_key(|r| !ctx.in_task(&r.path));
        let texts = text_matches(
            ctx,
            &index.unparsed,
            &name,
            path.as_deref(),
            MOST_REFERENCES,
        )?;
        let mut text = match found.len() {
            0 => format!("no references to {name:?} in the syntax trees of the scan's files\n"),
            n => format!(
                "{n} reference{} to {name:?}{}\n",
                if n == 1 { "" } else { "s" },
                match n > MOST_REFERENCES {
                    true => format!(", the first {MOST_REFERENCES} listed; narrow with path"),
                    false => String::new(),
                }
            ),
        };
        // Where the name is defined: a name defined in more than one file
        // is not one function, and a reader must tell which a call runs.
        let defined: Vec<&Definition> =
            index.definitions.get(&name).into_iter().flatten().collect();
        if !defined.is_empty() {
            let shown: Vec<String> = defined
                .iter()
                .take(MOST_DEFINED)
                .map(|d| format!("{}:{}", d.path, d.line))
                .collect();
            write!(text, "defined at: {}", shown.join(", "))?;
            match defined.len().saturating_sub(MOST_DEFINED) {
                0 => writeln!(text)?,
                more => writeln!(text, ", and {more} more")?,
            }
        }
        let mut redactions = Vec::new();
        let mut texts_of: HashMap<&str, (String, Vec<super::secrets::Redaction>)> = HashMap::new();
        for r in found.iter().take(MOST_REFERENCES) {
            if !texts_of.contains_key(r.path.as_str()) {
                let file = ctx.resolve(&r.path)?;
                let (t, red, _) = ctx.load_text(&file)?;
                texts_of.insert(&r.path, (t, red));
            }
            let (t, red) = &texts_of[r.path.as_str()];
            let line = t.lines().nth((r.line - 1) as usize).unwrap_or_default();
            write!(
                text,
                "{}:{}: {}",
                r.path,
                r.line,
                truncate_line(line.trim(), LINE_SHOWN)
            )?;
            match &r.within {
                Some(f) => writeln!(text, "    [{} in {f}]", r.kind)?,
                None => writeln!(text, "    [{}]", r.kind)?,
            }
            redactions.extend(
                red.iter()
                    .filter(|x| x.line == r.line)
                    .map(|x| (r.path.clone(), x.clone())),
            );
        }
        texts.write(&mut text, &name)?;
        Ok(ToolOutput {
            text: cap(text, ctx.limits.max_output_bytes),
            redactions,
            ..ToolOutput::default()
        })
    }
}

/// Lines naming a symbol in files no grammar read.
struct TextMatches {
    hits: Vec<String>,
    more: usize,
    files: usize,
}

impl TextMatches {
    fn write(&self, out: &mut String, name: &str) -> std::fmt::Result {
        if self.files == 0 {
            return Ok(());
        }
        if self.hits.is_empty() {
            return writeln!(
                out,
                "({} files of the scan have no syntax tree; none of them names {name:?})",
                self.files
            );
        }
        writeln!(
            out,
            "Text matches of {name:?} in {} files of the scan that have no syntax tree (by text, not by syntax):",
            self.files
        )?;
        for hit in &self.hits {
            writeln!(out, "{hit}")?;
        }
        if self.more > 0 {
            writeln!(out, "[and {} more]", self.more)?;
        }
        Ok(())
    }
}

/// The lines of `files` (those no grammar read) under `path` where `name`
/// stands as a word, at most `most`.
fn text_matches(
    ctx: &ToolContext,
    files: &[String],
    name: &str,
    path: Option<&str>,
    most: usize,
) -> Result<TextMatches, ToolError> {
    let word = regex::Regex::new(&format!(r"\b{}\b", regex::escape(name)))
        .map_err(|e| ToolError::Internal(format!("the word search for {name:?} failed: {e}")))?;
    let mut found = TextMatches {
        hits: Vec::new(),
        more: 0,
        files: 0,
    };
    for rel in files.iter().filter(|f| under(f, path)) {
        found.files += 1;
        let Ok(file) = ctx.resolve(rel) else {
            continue;
        };
        let Ok((text, _, _)) = ctx.load_text(&file) else {
            continue;
        };
        for (n, line) in (1u32..).zip(text.lines()) {
            if !word.is_match(line) {
                continue;
            }
            match found.hits.len() < most {
                true => found.hits.push(format!(
                    "{rel}:{n}: {}",
                    truncate_line(line.trim(), LINE_SHOWN)
                )),
                false => found.more += 1,
            }
        }
    }
    Ok(found)
}
