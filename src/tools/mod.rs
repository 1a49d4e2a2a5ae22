//! The read-only tools a sub-agent may call: `list_dir`, `read_file`,
//! `grep`, and `definition` and `references` ([`navigate`]).
//!
//! Takes a tool name and the model's raw JSON arguments; gives a
//! [`ToolOutput`] (text for the model, files read, secrets redacted) or a
//! [`ToolError`] the model is told about. Every path is confined to the scan
//! root ([`paths`]), binary files are refused, output is capped, and every
//! result is redacted ([`secrets`]) before it can reach a provider. No tool
//! writes, executes or reaches the network; there is no other registry.

pub(crate) mod fence;
pub(crate) mod injection;
pub(crate) mod navigate;
pub(crate) mod paths;
pub(crate) mod secrets;

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use serde::Deserialize;
use serde_json::{Value, json};

use crate::llm::conversation::{FileRead, ToolSpec};
use crate::model::findings::Finding;
use crate::util::relock;
use fence::{Fence, FenceError};
use injection::{BuiltinTable, Detector, InjectionRuleError};
use navigate::{DefinitionTool, ReferencesTool, SymbolIndex, SymbolSource};
use paths::{Resolved, resolve};
use secrets::{Redaction, Redactor};

/// Limits of the tools.
#[derive(Clone, Debug)]
pub(crate) struct ToolLimits {
    /// Largest file `read_file` and `grep` will open.
    pub max_file_bytes: u64,
    /// Most bytes of one tool result.
    pub max_output_bytes: usize,
    /// Default and largest `limit` of `read_file`.
    pub default_read_lines: usize,
    pub max_read_lines: usize,
    /// Most hits of one `grep`.
    pub max_grep_hits: usize,
    /// Most entries of one `list_dir`.
    pub max_list_entries: usize,
}

impl Default for ToolLimits {
    fn default() -> Self {
        Self {
            max_file_bytes: 4 * 1024 * 1024,
            max_output_bytes: 32 * 1024,
            default_read_lines: 400,
            max_read_lines: 2000,
            max_grep_hits: 100,
            max_list_entries: 400,
        }
    }
}

/// What every tool call needs: the canonical root, limits, the redactor
/// and, in a scan, the scope (the inventoried files).
#[derive(Clone)]
pub(crate) struct ToolContext {
    root: PathBuf,
    limits: ToolLimits,
    redactor: Arc<Redactor>,
    /// Files a scan covers; `None` (run-agent) means every file under the
    /// root. What `--exclude`, `.gitignore` or `.fanscanignore` left out,
    /// no agent reads either.
    scope: Option<Arc<std::collections::HashSet<String>>>,
    /// The run's fence around file text (one boundary per run).
    fence: Fence,
    /// The prompt-injection and deceptive-text rules, for the sweep.
    injection: Arc<BuiltinTable>,
    /// `grep` answers of this run by their arguments: the files do not
    /// change while it runs (no tool writes), so the same search gives the
    /// same hits, and agents that search for the same class or name walk
    /// the tree once.
    greps: Arc<Mutex<HashMap<String, GrepAnswer>>>,
    /// What builds the symbol index (`definition`, `references`); none
    /// where the run has no parser.
    symbol_source: Option<SymbolSource>,
    /// The index, built on the first call that needs it, once a run.
    symbols: Arc<OnceLock<Arc<SymbolIndex>>>,
    /// The files of the task the tools serve (a group's, the skeptic's
    /// file): `references` lists its hits there first.
    group: Option<Arc<std::collections::HashSet<String>>>,
}

/// A `grep` answer kept for the run: its text and its redactions.
#[derive(Clone)]
struct GrepAnswer {
    text: String,
    redactions: Vec<(String, Redaction)>,
}

/// A tool context that cannot be built.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ToolSetupError {
    /// The scan root cannot be canonicalized (missing, unreadable).
    #[error(transparent)]
    Root(#[from] std::io::Error),
    #[error(transparent)]
    Fence(#[from] FenceError),
}

/// What the sweep of one file found, before any model reads it.
#[derive(Debug, Default)]
pub(crate) struct Swept {
    /// SHA-256 of the file's bytes (empty when it cannot be read).
    pub(crate) hash: String,
    /// The secrets in it.
    pub(crate) redactions: Vec<Redaction>,
    /// Text addressed to AI agents and deceptive characters in it, as
    /// findings of the tool layer.
    pub(crate) injections: Vec<Finding>,
    /// The redacted text, for the rule engine's leads (none when the file
    /// is unreadable, binary or over the size limit).
    pub(crate) text: Option<String>,
    /// Why the file could not be read (gone since the inventory, or no
    /// longer a file): none when it was read.
    pub(crate) unreadable: Option<String>,
}

/// A tool's answer.
#[derive(Debug, Default)]
pub(crate) struct ToolOutput {
    /// What the model sees (already redacted).
    pub text: String,
    /// Repo-relative files whose content the model saw.
    pub files_read: Vec<String>,
    /// Secrets redacted from this output, with their file.
    pub redactions: Vec<(String, Redaction)>,
    /// The lines of a file this output showed (`read_file`).
    pub read: Option<FileRead>,
}

/// A tool failure.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ToolError {
    /// The model's mistake or a refusal (a bad path, a binary file, bad
    /// arguments): told to the model as an error result; the loop goes on.
    #[error("{0}")]
    Model(String),
    /// Not the model's doing and not its to fix (the disk failed under a
    /// file the scan covers): the group fails with this reason.
    #[error("{0}")]
    Internal(String),
}

/// Writing a tool's output into its text failed: a `Display` of ours
/// returned an error (a fanscan bug), which fails the group, never the
/// model's turn.
impl From<std::fmt::Error> for ToolError {
    fn from(_: std::fmt::Error) -> Self {
        Self::Internal("writing the tool's output failed: a fanscan bug, please report it".into())
    }
}

impl ToolContext {
    /// A context for `root`, which is canonicalized here, with a fresh
    /// random fence and the bundled injection rules.
    pub(crate) fn new(
        root: &Path,
        limits: ToolLimits,
        redactor: Arc<Redactor>,
    ) -> Result<Self, ToolSetupError> {
        Ok(Self {
            root: root.canonicalize()?,
            limits,
            redactor,
            scope: None,
            fence: Fence::random()?,
            injection: Arc::new(BuiltinTable::new()),
            greps: Arc::default(),
            symbol_source: None,
            symbols: Arc::default(),
            group: None,
        })
    }

    /// The same context, whose `definition` and `references` answer from
    /// the index `source` builds.
    pub(crate) fn with_symbols(self, source: SymbolSource) -> Self {
        Self {
            symbol_source: Some(source),
            symbols: Arc::default(),
            ..self
        }
    }

    /// The names `files` use that are defined only in other files, with
    /// where (none without a symbol index).
    pub(crate) fn defined_elsewhere(&self, files: &[String]) -> Vec<(String, Vec<String>)> {
        self.symbols()
            .map(|index| index.defined_elsewhere(files))
            .unwrap_or_default()
    }

    /// The run's symbol index, built on first use.
    fn symbols(&self) -> Result<Arc<SymbolIndex>, ToolError> {
        let Some(source) = &self.symbol_source else {
            return Err(ToolError::Model(
                "definition and references are not available in this run; use grep".into(),
            ));
        };
        Ok(Arc::clone(
            self.symbols.get_or_init(|| Arc::new(source(self))),
        ))
    }

    /// The run's fence around file text.
    pub(crate) fn fence(&self) -> &Fence {
        &self.fence
    }

    /// SHA-256 of the injection rule table the sweep applies.
    pub(crate) fn injection_hash(&self) -> &str {
        self.injection.hash()
    }

    /// The compiled injection rule table (compiled on first use).
    pub(crate) fn injection_detector(&self) -> Result<&Detector, &InjectionRuleError> {
        self.injection.detector()
    }

    /// The same context (its scope and caches shared) serving a task on
    /// `files`: answers that rank hits put those files first.
    pub(crate) fn for_task(&self, files: impl IntoIterator<Item = String>) -> Self {
        Self {
            group: Some(Arc::new(files.into_iter().collect())),
            ..self.clone()
        }
    }

    /// Whether `rel` is a file of the task the tools serve.
    pub(crate) fn in_task(&self, rel: &str) -> bool {
        self.group.as_ref().is_some_and(|g| g.contains(rel))
    }

    /// The same context, limited to `files` (repo-relative paths).
    pub(crate) fn scoped(&self, files: impl IntoIterator<Item = String>) -> Self {
        Self {
            scope: Some(Arc::new(files.into_iter().collect())),
            // Another scope finds other hits.
            greps: Arc::default(),
            symbols: Arc::default(),
            ..self.clone()
        }
    }

    fn in_scope(&self, rel: &str) -> bool {
        self.scope.as_ref().is_none_or(|s| s.contains(rel))
    }

    /// The canonical scan root.
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// The redactor shared by the run.
    pub(crate) fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    /// Each path with the SHA-256 of its bytes (empty when it cannot be
    /// read): what pins the inputs of a stored result.
    pub(crate) fn hashes(&self, paths: impl IntoIterator<Item = String>) -> Vec<(String, String)> {
        paths
            .into_iter()
            .map(|path| {
                let hash = self
                    .resolve(&path)
                    .ok()
                    .and_then(|file| std::fs::read(&file.real).ok())
                    .map(|bytes| crate::util::sha256_hex(&bytes))
                    .unwrap_or_default();
                (path, hash)
            })
            .collect()
    }

    /// The specs of the named tools, in the order given; unknown names are
    /// left out (definitions are validated before they get here).
    pub(crate) fn specs(names: &[String]) -> Vec<ToolSpec> {
        names
            .iter()
            .filter_map(|n| find(n))
            .map(|t| t.spec())
            .collect()
    }

    /// Runs tool `name` with the model's raw `arguments`. Synchronous:
    /// callers run it on a blocking thread.
    pub(crate) fn call(&self, name: &str, arguments: &str) -> Result<ToolOutput, ToolError> {
        let args: Value = if arguments.trim().is_empty() {
            json!({})
        } else {
            serde_json::from_str(arguments).map_err(|e| {
                ToolError::Model(format!(
                    "invalid JSON arguments for {name}: {e}; send a JSON object matching the tool's schema"
                ))
            })?
        };
        if !args.is_object() {
            return Err(ToolError::Model(format!(
                "arguments for {name} must be a JSON object, got {args}"
            )));
        }
        match find(name) {
            Some(tool) => tool.run(self, args),
            None => Err(ToolError::Model(format!(
                "unknown tool {name:?}; the tools are: {}",
                names().collect::<Vec<_>>().join(", ")
            ))),
        }
    }

    /// Every file of the scan: what the symbol index reads.
    pub(crate) fn files(&self) -> Result<Vec<String>, ToolError> {
        Ok(self.files_under(&self.resolve("")?, None))
    }

    /// The text of `path` as the tools show it (secrets redacted).
    pub(crate) fn text(&self, path: &str) -> Result<String, ToolError> {
        Ok(self.load_text(&self.resolve(path)?)?.0)
    }

    /// The files of the scan under the directory `base` whose path or name
    /// matches `glob`, in name order.
    fn files_under(&self, base: &Resolved, glob: Option<&globset::GlobMatcher>) -> Vec<String> {
        let walker = ignore::WalkBuilder::new(&base.real)
            .hidden(false)
            .follow_links(false)
            // As the inventory: no ignore file above the scan root and
            // no global excludes, or a search would miss files in scope.
            .parents(false)
            .git_global(false)
            .sort_by_file_name(std::cmp::Ord::cmp)
            .filter_entry(|e| e.file_name() != ".git")
            .add_custom_ignore_filename(".fanscanignore")
            .build();
        let mut files = Vec::new();
        for entry in walker.filter_map(Result::ok) {
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let Ok(rel) = entry.path().strip_prefix(&self.root) else {
                continue;
            };
            let rel = rel.to_string_lossy().replace('\\', "/");
            let name_matches = glob.is_none_or(|g| {
                g.is_match(&rel) || entry.file_name().to_str().is_some_and(|n| g.is_match(n))
            });
            if name_matches && self.in_scope(&rel) {
                files.push(rel);
            }
        }
        files
    }

    /// The text of `path`, a file of the scan, as the tools show it
    /// (secrets redacted), its lines numbered from 1: what the rule
    /// engine's check on the syntax trees reads.
    pub(crate) fn numbered_lines(
        &self,
        path: &str,
    ) -> Result<std::collections::BTreeMap<u32, String>, ToolError> {
        let file = self.resolve(path)?;
        if !self.in_scope(&file.rel) {
            return Err(ToolError::Model(format!(
                "{path:?} is outside this scan (excluded, ignored, binary or too large)"
            )));
        }
        let (text, _, _) = self.load_text(&file)?;
        Ok(crate::util::numbered(&text))
    }

    /// What `read_file` returns for `path` from the top, with default
    /// limits: the text a preloading agent is shown up front.
    pub(crate) fn read_from_top(&self, path: &str) -> Result<ToolOutput, ToolError> {
        ReadFile.run(self, json!({ "path": path }))
    }

    /// For each path: the SHA-256 of its bytes (empty when unreadable),
    /// the secrets in it, and text in it addressed to AI agents or hidden
    /// by deceptive characters. Used to pin what a group audited and to
    /// report every secret and injection attempt whatever the model reads.
    /// Fails only when the injection table cannot be compiled (a fanscan
    /// bug a unit test guards): the group then fails, it is not swept as
    /// clean.
    pub(crate) fn hash_and_sweep(
        &self,
        paths: &[String],
    ) -> Result<Vec<Swept>, InjectionRuleError> {
        let detector = self.injection.detector().map_err(Clone::clone)?;
        Ok(paths
            .iter()
            .map(|path| self.sweep(detector, path))
            .collect())
    }

    fn sweep(&self, detector: &Detector, path: &str) -> Swept {
        let unreadable = |why: String| Swept {
            unreadable: Some(why),
            ..Swept::default()
        };
        let file = match self.resolve(path) {
            Ok(file) => file,
            Err(e) => return unreadable(e.to_string()),
        };
        if !file.real.is_file() {
            return unreadable(format!("{path} is no longer a file"));
        }
        let bytes = match std::fs::read(&file.real) {
            Ok(bytes) => bytes,
            Err(e) => return unreadable(format!("cannot read {path}: {e}")),
        };
        let hash = crate::util::sha256_hex(&bytes);
        if is_binary(&bytes) || bytes.len() as u64 > self.limits.max_file_bytes {
            return Swept {
                hash,
                ..Swept::default()
            };
        }
        let text = String::from_utf8_lossy(&bytes);
        let (redacted, redactions) = self.redactor.redact(&text);
        // On the redacted text: a hit's description never carries a secret.
        let injections = detector
            .scan(&file.rel, &redacted)
            .iter()
            .map(|hit| hit.finding(&file.rel))
            .collect();
        Swept {
            hash,
            redactions,
            injections,
            text: Some(redacted),
            unreadable: None,
        }
    }

    fn resolve(&self, path: &str) -> Result<Resolved, ToolError> {
        resolve(&self.root, path).map_err(|e| ToolError::Model(e.to_string()))
    }

    /// Reads a whole (capped) text file and redacts it.
    fn load_text(&self, file: &Resolved) -> Result<(String, Vec<Redaction>, bool), ToolError> {
        let meta = std::fs::metadata(&file.real).map_err(|e| read_error(&file.rel, &e))?;
        if meta.is_dir() {
            return Err(ToolError::Model(format!(
                "{:?} is a directory; use list_dir",
                file.rel
            )));
        }
        if !meta.is_file() {
            // A FIFO or device would block the read forever.
            return Err(ToolError::Model(format!(
                "{:?} is not a regular file (a pipe, socket or device)",
                file.rel
            )));
        }
        if meta.len() > self.limits.max_file_bytes {
            return Err(ToolError::Model(format!(
                "{:?} is {} bytes, over the {} byte read limit",
                file.rel,
                meta.len(),
                self.limits.max_file_bytes
            )));
        }
        let bytes = std::fs::read(&file.real).map_err(|e| read_error(&file.rel, &e))?;
        if is_binary(&bytes) {
            return Err(ToolError::Model(format!(
                "{:?} is a binary file (NUL bytes); only text files can be read",
                file.rel
            )));
        }
        let (text, lossy) = match String::from_utf8(bytes) {
            Ok(t) => (t, false),
            Err(e) => (String::from_utf8_lossy(e.as_bytes()).into_owned(), true),
        };
        let (text, redactions) = self.redactor.redact(&text);
        Ok((text, redactions, lossy))
    }
}

/// A failed read: a missing or forbidden file is the model's to hear about;
/// any other I/O failure is the machine's, and fails the group.
fn read_error(rel: &str, error: &std::io::Error) -> ToolError {
    let text = format!("cannot read {rel:?}: {error}");
    match error.kind() {
        std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied => {
            ToolError::Model(text)
        }
        _ => ToolError::Internal(text),
    }
}

fn parse<T: serde::de::DeserializeOwned>(tool: &str, args: Value) -> Result<T, ToolError> {
    serde_json::from_value(args)
        .map_err(|e| ToolError::Model(format!("invalid arguments for {tool}: {e}")))
}

/// A file is binary when its first 8 KiB hold a NUL byte.
pub(crate) fn is_binary(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(8192)].contains(&0)
}

/// The most bytes of a line `read_file` shows among others (a minified
/// bundle's line would fill the page); a read of that line alone shows
/// up to the tool's output limit.
pub(crate) const LINE_SHOWN: usize = 500;

/// `line` cut to at most `max` bytes, on a character boundary.
fn truncate_line(line: &str, max: usize) -> &str {
    if line.len() <= max {
        return line;
    }
    let mut end = max;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    &line[..end]
}

fn cap(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str("\n[cut: output limit reached]\n");
    }
    text
}

/// A read-only tool: its name, description, argument schema and handler,
/// defined together. The registry is [`REGISTRY`]; there is no other.
pub(crate) trait Tool: Sync {
    /// The name the model calls it by.
    fn name(&self) -> &'static str;
    /// What the model is told it does.
    fn description(&self) -> &'static str;
    /// JSON schema of the arguments object.
    fn schema(&self) -> Value;
    /// Runs it with arguments already checked to be a JSON object.
    fn run(&self, ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError>;

    /// The spec offered to the model.
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name().to_string(),
            description: self.description().to_string(),
            parameters: self.schema(),
        }
    }
}

/// Every tool that exists. None of them can write, execute or reach the
/// network; agent definitions may only name these.
pub(crate) const REGISTRY: &[&dyn Tool] =
    &[&ListDir, &ReadFile, &Grep, &DefinitionTool, &ReferencesTool];

/// The tool named `name`, if it exists.
pub(crate) fn find(name: &str) -> Option<&'static dyn Tool> {
    REGISTRY.iter().copied().find(|t| t.name() == name)
}

/// The names of every tool, in registry order.
pub(crate) fn names() -> impl Iterator<Item = &'static str> {
    REGISTRY.iter().map(|t| t.name())
}

/// `list_dir`: a directory's entries, sorted, `.git` hidden.
struct ListDir;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListDirArgs {
    #[serde(default)]
    path: Option<String>,
}

impl Tool for ListDir {
    fn name(&self) -> &'static str {
        "list_dir"
    }

    fn description(&self) -> &'static str {
        "List a directory of the repository (names, sizes; directories end with /)."
    }

    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {
            "path": {"type": "string", "description": "Directory relative to the repository root; empty for the root."}
        }, "additionalProperties": false})
    }

    fn run(&self, ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        let args: ListDirArgs = parse(self.name(), args)?;
        let dir = ctx.resolve(args.path.as_deref().unwrap_or(""))?;
        if !dir.real.is_dir() {
            return Err(ToolError::Model(format!(
                "{:?} is not a directory; use read_file for files",
                dir.rel
            )));
        }
        let read = std::fs::read_dir(&dir.real)
            .map_err(|e| ToolError::Model(format!("cannot list {:?}: {e}", dir.rel)))?;
        let mut entries: Vec<(String, String)> = read
            .filter_map(Result::ok)
            .filter(|e| e.file_name() != ".git")
            .map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let meta = e.path().symlink_metadata();
                let label = match meta {
                    Ok(m) if m.file_type().is_symlink() => format!("{name} -> (symlink)"),
                    Ok(m) if m.is_dir() => format!("{name}/"),
                    Ok(m) => format!("{name} ({} bytes)", m.len()),
                    Err(_) => name.clone(),
                };
                (name, label)
            })
            .collect();
        entries.sort();
        let total = entries.len();
        let shown = total.min(ctx.limits.max_list_entries);
        let shown_dir = if dir.rel.is_empty() { "." } else { &dir.rel };
        let mut text = format!("{shown_dir}/ ({total} entries)\n");
        for (_, label) in &entries[..shown] {
            writeln!(text, "{label}")?;
        }
        if shown < total {
            writeln!(text, "[cut: {shown} of {total} entries shown]")?;
        }
        Ok(ToolOutput {
            text: cap(text, ctx.limits.max_output_bytes),
            ..ToolOutput::default()
        })
    }
}

/// `read_file`: numbered lines of a text file, paged, redacted.
struct ReadFile;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadFileArgs {
    path: String,
    #[serde(default)]
    offset: Option<usize>,
    #[serde(default)]
    limit: Option<usize>,
}

impl Tool for ReadFile {
    fn name(&self) -> &'static str {
        "read_file"
    }

    fn description(&self) -> &'static str {
        "Read a text file of the repository. Lines are numbered from 1. Long files are cut; the output says which offset to continue from."
    }

    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {
            "path": {"type": "string", "description": "File path relative to the repository root."},
            "offset": {"type": "integer", "minimum": 1, "description": "First line to show (1-based)."},
            "limit": {"type": "integer", "minimum": 1, "description": "Most lines to show."}
        }, "required": ["path"], "additionalProperties": false})
    }

    fn run(&self, ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        let args: ReadFileArgs = parse(self.name(), args)?;
        let file = ctx.resolve(&args.path)?;
        if !ctx.in_scope(&file.rel) {
            return Err(ToolError::Model(format!(
                "{:?} is outside this scan (excluded, ignored, binary or too large); it cannot be read",
                file.rel
            )));
        }
        let (text, redactions, lossy) = ctx.load_text(&file)?;
        let lines: Vec<&str> = text.lines().collect();
        let total = lines.len();
        let offset = args.offset.unwrap_or(1).max(1);
        let limit = args
            .limit
            .unwrap_or(ctx.limits.default_read_lines)
            .clamp(1, ctx.limits.max_read_lines);
        let mut out = format!("{} ({total} lines)\n", file.rel);
        if lossy {
            out.push_str("[note: not valid UTF-8; invalid bytes are shown as U+FFFD]\n");
        }
        if offset > total.max(1) {
            return Err(ToolError::Model(format!(
                "offset {offset} is past the end of {:?}, which has {total} lines",
                file.rel
            )));
        }
        let start = offset - 1;
        let mut end = start;
        let budget = ctx.limits.max_output_bytes.saturating_sub(400);
        // A line asked for alone is shown up to the output limit; among
        // others, up to LINE_SHOWN bytes. A line cut is said under it, so a
        // reader knows what it was not shown and how to see more.
        let per_line = if limit == 1 {
            budget.saturating_sub(out.len() + 16)
        } else {
            LINE_SHOWN
        };
        let mut cut = Vec::new();
        let mut notices = String::new();
        while end < total && end - start < limit {
            let whole = lines[end];
            let line = truncate_line(whole, per_line);
            if out.len() + line.len() + notices.len() + 8 > budget && end > start {
                break;
            }
            writeln!(out, "{}\t{line}", end + 1)?;
            end += 1;
            if line.len() < whole.len() {
                cut.push(end as u64);
                writeln!(
                    notices,
                    "[cut: line {end} has {} bytes, {} shown; {}]",
                    whole.len(),
                    line.len(),
                    if limit == 1 {
                        "no read shows more of it".to_string()
                    } else {
                        format!("call read_file with offset={end} and limit=1 to see more of it")
                    }
                )?;
            }
        }
        out.push_str(&notices);
        if end < total {
            writeln!(
                out,
                "[cut: showing lines {offset}-{end} of {total}; call read_file with offset={} to continue]",
                end + 1
            )?;
        }
        // Only redactions on the lines shown count as seen here; the sweep
        // of the whole group reports the rest.
        let redactions = redactions
            .into_iter()
            .filter(|r| (r.line as usize) >= offset && (r.line as usize) <= end)
            .map(|r| (file.rel.clone(), r))
            .collect();
        Ok(ToolOutput {
            // File text is data: fenced with the run's boundary, which the
            // file could not know when it was written.
            text: ctx.fence.wrap(&file.rel, &out),
            read: Some(FileRead {
                path: file.rel.clone(),
                first: offset as u64,
                last: end as u64,
                total: total as u64,
                cut,
            }),
            files_read: vec![file.rel],
            redactions,
        })
    }
}

/// `grep`: regex hits across the scan's files, capped, redacted.
struct Grep;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GrepArgs {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    glob: Option<String>,
}

impl Tool for Grep {
    fn name(&self) -> &'static str {
        "grep"
    }

    fn description(&self) -> &'static str {
        "Search file contents with a regular expression (Rust regex syntax). Returns path:line:text hits, capped."
    }

    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {
            "pattern": {"type": "string", "description": "Regular expression."},
            "path": {"type": "string", "description": "File or directory to search; default the whole repository."},
            "glob": {"type": "string", "description": "Only files whose path or name matches this glob, e.g. *.rs."}
        }, "required": ["pattern"], "additionalProperties": false})
    }

    fn run(&self, ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        // Object keys are sorted: the same arguments are the same key.
        let key = args.to_string();
        if let Some(kept) = relock(&ctx.greps).get(&key).cloned() {
            return Ok(ToolOutput {
                text: kept.text,
                redactions: kept.redactions,
                ..ToolOutput::default()
            });
        }
        let output = Self::search(ctx, parse(self.name(), args)?)?;
        relock(&ctx.greps).insert(
            key,
            GrepAnswer {
                text: output.text.clone(),
                redactions: output.redactions.clone(),
            },
        );
        Ok(output)
    }
}

impl Grep {
    /// The search itself: every file in scope under the path, in name
    /// order, each line the pattern matches, capped.
    fn search(ctx: &ToolContext, args: GrepArgs) -> Result<ToolOutput, ToolError> {
        let regex = regex::RegexBuilder::new(&args.pattern)
            .size_limit(1 << 20)
            .build()
            .map_err(|e| ToolError::Model(format!("invalid regex {:?}: {e}", args.pattern)))?;
        let base = ctx.resolve(args.path.as_deref().unwrap_or(""))?;
        let glob = match &args.glob {
            Some(g) => Some(
                globset::Glob::new(g)
                    .map_err(|e| ToolError::Model(format!("invalid glob {g:?}: {e}")))?
                    .compile_matcher(),
            ),
            None => None,
        };
        let files = match base.real.is_file() {
            true if !ctx.in_scope(&base.rel) => {
                return Err(ToolError::Model(format!(
                    "{:?} is outside this scan (excluded, ignored, binary or too large)",
                    base.rel
                )));
            }
            true => vec![base.rel.clone()],
            false => ctx.files_under(&base, glob.as_ref()),
        };
        let mut out = String::new();
        let mut hits = 0usize;
        let mut redactions = Vec::new();
        let mut cut = false;
        'files: for rel in &files {
            let Ok(file) = ctx.resolve(rel) else {
                continue;
            };
            let Ok((text, found, _)) = ctx.load_text(&file) else {
                continue;
            };
            let mut hit_lines = Vec::new();
            for (index, line) in text.lines().enumerate() {
                if !regex.is_match(line) {
                    continue;
                }
                if hits >= ctx.limits.max_grep_hits || out.len() > ctx.limits.max_output_bytes {
                    cut = true;
                    break 'files;
                }
                hits += 1;
                hit_lines.push(index + 1);
                writeln!(
                    out,
                    "{rel}:{}:{}",
                    index + 1,
                    truncate_line(line, LINE_SHOWN)
                )?;
            }
            redactions.extend(
                found
                    .into_iter()
                    .filter(|r| hit_lines.contains(&(r.line as usize)))
                    .map(|r| (rel.clone(), r)),
            );
        }
        if hits == 0 {
            out = format!("no matches for {:?}\n", args.pattern);
        } else if cut {
            writeln!(
                out,
                "[cut: first {hits} hits shown; narrow the pattern, path or glob]"
            )?;
        }
        Ok(ToolOutput {
            text: cap(out, ctx.limits.max_output_bytes),
            redactions,
            ..ToolOutput::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context(files: &[(&str, &[u8])]) -> (tempfile::TempDir, ToolContext) {
        let dir = tempfile::tempdir().unwrap();
        for (path, content) in files {
            let full = dir.path().join(path);
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(full, content).unwrap();
        }
        let ctx =
            ToolContext::new(dir.path(), ToolLimits::default(), Arc::new(Redactor::new())).unwrap();
        (dir, ctx)
    }

    #[test]
    fn read_file_numbers_lines_and_pages() {
        let body: String = (1..=10).map(|i| format!("line {i}\n")).collect();
        let (_d, ctx) = context(&[("a.txt", body.as_bytes())]);
        let out = ctx
            .call("read_file", r#"{"path":"a.txt","offset":3,"limit":2}"#)
            .unwrap();
        assert!(
            out.text.contains("\n3\tline 3\n4\tline 4\n"),
            "{}",
            out.text
        );
        assert!(out.text.contains("call read_file with offset=5"));
        assert_eq!(out.files_read, vec!["a.txt"]);
        let page = |first, last, total| FileRead {
            path: "a.txt".into(),
            first,
            last,
            total,
            cut: Vec::new(),
        };
        assert_eq!(out.read, Some(page(3, 4, 10)));
        let out = ctx.call("read_file", r#"{"path":"a.txt"}"#).unwrap();
        assert!(!out.text.contains("[cut"));
        assert_eq!(out.read, Some(page(1, 10, 10)));
    }

    #[test]
    fn a_long_line_is_cut_with_a_word_and_shown_whole_when_read_alone() {
        let long = format!("x = \"{}\"; system($_GET['c']);", "a".repeat(1_500));
        let body = format!("<?php\n{long}\n?>\n");
        let (_d, ctx) = context(&[("p.php", body.as_bytes())]);
        let out = ctx.call("read_file", r#"{"path":"p.php"}"#).unwrap();
        assert!(!out.text.contains("system("), "{}", out.text);
        assert!(
            out.text.contains(&format!(
                "[cut: line 2 has {} bytes, {LINE_SHOWN} shown; call read_file with offset=2 and limit=1 to see more of it]",
                long.len()
            )),
            "{}",
            out.text
        );
        assert_eq!(out.read.as_ref().map(|r| r.cut.clone()), Some(vec![2]));
        let alone = ctx
            .call("read_file", r#"{"path":"p.php","offset":2,"limit":1}"#)
            .unwrap();
        assert!(
            alone.text.contains(&format!("2\t{long}\n")),
            "{}",
            alone.text
        );
        assert_eq!(alone.read.as_ref().map(|r| r.cut.len()), Some(0));
        // Longer than one result holds: cut even alone, and said so.
        let huge = "y".repeat(100_000);
        let (_d, ctx) = context(&[("h.js", huge.as_bytes())]);
        let alone = ctx
            .call("read_file", r#"{"path":"h.js","offset":1,"limit":1}"#)
            .unwrap();
        assert!(alone.text.len() <= ctx.limits.max_output_bytes + 512);
        assert!(
            alone.text.contains("no read shows more of it"),
            "{}",
            alone.text
        );
        assert_eq!(alone.read.map(|r| r.cut), Some(vec![1]));
    }

    #[test]
    fn malformed_arguments_and_binary_files_are_model_errors() {
        let (_d, ctx) = context(&[("b.bin", b"ab\0cd"), ("a.txt", b"x")]);
        assert!(
            ctx.call("read_file", r#"{"path": ""#)
                .unwrap_err()
                .to_string()
                .contains("invalid JSON")
        );
        assert!(
            ctx.call("read_file", "[1]")
                .unwrap_err()
                .to_string()
                .contains("object")
        );
        assert!(
            ctx.call("read_file", r#"{"path":"b.bin"}"#)
                .unwrap_err()
                .to_string()
                .contains("binary")
        );
        assert!(
            ctx.call("read_file", r#"{"file":"a.txt"}"#)
                .unwrap_err()
                .to_string()
                .contains("invalid arguments")
        );
        assert!(
            ctx.call("write_file", r#"{}"#)
                .unwrap_err()
                .to_string()
                .contains("unknown tool")
        );
    }

    #[test]
    fn non_utf8_files_are_read_lossily_with_a_note() {
        let (_d, ctx) = context(&[("l.txt", b"caf\xe9\n")]);
        let out = ctx.call("read_file", r#"{"path":"l.txt"}"#).unwrap();
        assert!(out.text.contains("not valid UTF-8"));
        assert!(out.text.contains("caf\u{fffd}"));
    }

    #[test]
    fn the_same_search_is_answered_once_a_run_and_anew_in_another_scope() {
        let (dir, ctx) = context(&[("a.rs", b"fn main() {}\n")]);
        let args = r#"{"pattern":"main"}"#;
        let first = ctx.call("grep", args).unwrap().text;
        assert!(first.contains("a.rs:1:"), "{first}");
        // A file written during the run is not searched again: the answer
        // is the run's (no tool writes; this test does, to show the cache).
        std::fs::write(dir.path().join("b.rs"), "fn main() {}\n").unwrap();
        assert_eq!(ctx.call("grep", args).unwrap().text, first);
        assert_eq!(ctx.clone().call("grep", args).unwrap().text, first);
        // Arguments in another order are the same search.
        let reordered = ctx
            .call("grep", r#"{"glob":"*.rs","pattern":"main"}"#)
            .unwrap()
            .text;
        assert_eq!(
            reordered,
            ctx.call("grep", r#"{"pattern":"main","glob":"*.rs"}"#)
                .unwrap()
                .text
        );
        let scoped = ctx.scoped(["a.rs".to_string(), "b.rs".to_string()]);
        let again = scoped.call("grep", args).unwrap().text;
        assert!(again.contains("b.rs:1:"), "{again}");
    }

    #[test]
    fn grep_finds_hits_with_glob_and_redacts() {
        let (_d, ctx) = context(&[
            (
                "src/a.rs",
                // fanscan:ignore[secret/aws-access-key] test fixture: the redactor must catch it
                b"fn main() {}\nlet k = \"AKIAIOSFODNN7EXAMPLQ\";\n",
            ),
            ("src/b.py", b"def main(): pass\n"),
        ]);
        let out = ctx
            .call("grep", r#"{"pattern":"main","glob":"*.rs"}"#)
            .unwrap();
        assert_eq!(out.text, "src/a.rs:1:fn main() {}\n");
        let out = ctx.call("grep", r#"{"pattern":"let k"}"#).unwrap();
        assert!(out.text.contains("[REDACTED:aws-access-key]"));
        assert!(!out.text.contains("AKIA"));
        assert_eq!(out.redactions.len(), 1);
        assert!(ctx.call("grep", r#"{"pattern":"("}"#).is_err());
    }

    #[test]
    fn grep_ignores_no_ignore_file_above_the_root() {
        let outer = tempfile::tempdir().unwrap();
        std::fs::write(outer.path().join(".gitignore"), "*.toml\n").unwrap();
        let root = outer.path().join("repo");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("app.toml"), "key = 1\n").unwrap();
        let ctx =
            ToolContext::new(&root, ToolLimits::default(), Arc::new(Redactor::new())).unwrap();
        let out = ctx.call("grep", r#"{"pattern":"key"}"#).unwrap();
        assert_eq!(out.text, "app.toml:1:key = 1\n");
    }

    #[test]
    fn a_scoped_context_reads_only_its_files() {
        let (_d, ctx) = context(&[("a.rs", b"fn a() {}\n"), ("secret/b.rs", b"fn b() {}\n")]);
        let ctx = ctx.scoped(["a.rs".to_string()]);
        assert!(ctx.call("read_file", r#"{"path":"a.rs"}"#).is_ok());
        let e = ctx
            .call("read_file", r#"{"path":"secret/b.rs"}"#)
            .unwrap_err();
        assert!(e.to_string().contains("outside this scan"));
        let out = ctx.call("grep", r#"{"pattern":"fn"}"#).unwrap();
        assert_eq!(out.text, "a.rs:1:fn a() {}\n");
    }

    #[test]
    fn list_dir_lists_sorted_without_git() {
        let (_d, ctx) = context(&[("src/a.rs", b"x"), (".git/HEAD", b"x"), ("b.txt", b"xy")]);
        let out = ctx.call("list_dir", "{}").unwrap();
        assert_eq!(out.text, "./ (2 entries)\nb.txt (2 bytes)\nsrc/\n");
    }
}
