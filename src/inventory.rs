//! Inventory: walking the repository.
//!
//! Takes the root and [`InventoryOptions`]; gives an [`Inventory`]: every
//! file to audit (repo-relative `/` path, bytes, language, estimated tokens)
//! and every file skipped with its reason, both sorted by path. Uses the
//! `ignore` crate's parallel walker; hidden files are included (CI workflows
//! and `.env` files are prime audit targets) but `.git` never is; symlinks
//! are never followed; an entry the walker cannot read is listed as
//! `unreadable` with the OS error, never dropped.
//!
//! Ignore rules are git's, from the root down: `.gitignore`, `.ignore` and
//! `.fanscanignore` files in the root and below. When the root is in a git
//! work tree, git's other sources count too, as git reads them: the
//! `.gitignore` files from the work tree's top down to the root (when the
//! root is a subdirectory), `info/exclude` and `core.excludesFile`. Nothing
//! above the work tree's top (or above the root, outside a work tree)
//! counts: a checkout nested in another one, or in a directory that holds
//! some other program's `.gitignore`, keeps every file git keeps.
//!
//! Vendored and generated files are skipped the way GitHub Linguist decides:
//! the built-in Linguist-style list in `configs/vendor.toml` (compiled once
//! into a [`RegexSet`]) and the `linguist-vendored` / `linguist-generated`
//! attributes of the root's and nested `.gitattributes` files, which
//! override the list in both directions. `--include-vendored` audits them,
//! lock files excepted.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, mpsc};

use globset::{Candidate, GlobBuilder, GlobSet, GlobSetBuilder};
use ignore::overrides::OverrideBuilder;
use ignore::{WalkBuilder, WalkState};
use regex::RegexSet;
use serde::{Deserialize, Serialize};

use crate::language::{extension, language_of};

/// What to walk and what to leave out.
#[derive(Clone, Debug)]
pub struct InventoryOptions {
    /// Include hidden files and directories (not `.git`).
    pub hidden: bool,
    /// Files larger than this are skipped.
    pub max_file_bytes: u64,
    /// Only files matching one of these globs (all when empty).
    pub include: Vec<String>,
    /// Files matching one of these globs are left out.
    pub exclude: Vec<String>,
    /// Audit vendored and generated files (lock files stay skipped).
    pub include_vendored: bool,
}

impl Default for InventoryOptions {
    fn default() -> Self {
        Self {
            hidden: true,
            max_file_bytes: 1024 * 1024,
            include: Vec::new(),
            exclude: Vec::new(),
            include_vendored: false,
        }
    }
}

/// One file to audit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    /// Repo-relative, `/`-separated.
    pub path: String,
    pub bytes: u64,
    pub language: Option<String>,
    pub tokens: u64,
}

/// Why a file is not audited.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum SkipReason {
    TooLarge {
        bytes: u64,
        limit: u64,
    },
    Binary,
    /// Generated, not written by people: a lock file, a minified bundle, a
    /// code generator's output.
    Generated {
        /// The pattern that matched: a regex or lock-file name of the
        /// built-in list, or a `.gitattributes` pattern.
        rule: String,
        source: RuleSource,
    },
    /// Third-party code copied into the repository (`vendor/`,
    /// `node_modules/`, `jquery-ui.js`, ...).
    Vendored {
        /// The pattern that matched: a regex of the built-in list or a
        /// `.gitattributes` pattern.
        rule: String,
        source: RuleSource,
    },
    Symlink,
    Unreadable {
        error: String,
    },
}

impl std::fmt::Display for SkipReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::TooLarge { bytes, limit } => {
                write!(
                    f,
                    "too large ({bytes} bytes > {limit}; raise --max-file-bytes)"
                )
            }
            Self::Binary => f.write_str("binary"),
            Self::Generated { rule, source } => match source {
                RuleSource::Linguist => write!(
                    f,
                    "generated (Linguist rule `{rule}`; --include-vendored audits it)"
                ),
                RuleSource::LockFile => write!(
                    f,
                    "generated (lock file `{rule}`; a `{rule} -linguist-generated` line in .gitattributes audits it)"
                ),
                RuleSource::Gitattributes { file, line } => write!(
                    f,
                    "generated ({file}:{line} `{rule}`; --include-vendored audits it)"
                ),
            },
            Self::Vendored { rule, source } => match source {
                RuleSource::Linguist | RuleSource::LockFile => write!(
                    f,
                    "vendored (Linguist rule `{rule}`; --include-vendored audits it)"
                ),
                RuleSource::Gitattributes { file, line } => write!(
                    f,
                    "vendored ({file}:{line} `{rule}`; --include-vendored audits it)"
                ),
            },
            Self::Symlink => f.write_str("symlink (not followed)"),
            Self::Unreadable { error } => write!(f, "unreadable: {error}"),
        }
    }
}

/// What decided that a file is vendored or generated. Serialized as one
/// string: `"linguist"`, `"lock_file"` or `"DIR/.gitattributes:LINE"`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum RuleSource {
    /// A pattern of the built-in list (`configs/vendor.toml`, after
    /// Linguist).
    Linguist,
    /// A lock-file name of the built-in list: skipped even with
    /// `--include-vendored`.
    LockFile,
    /// A line of a `.gitattributes` file (repo-relative path, 1-based).
    Gitattributes { file: String, line: usize },
}

impl From<RuleSource> for String {
    fn from(source: RuleSource) -> Self {
        match source {
            RuleSource::Linguist => "linguist".into(),
            RuleSource::LockFile => "lock_file".into(),
            RuleSource::Gitattributes { file, line } => format!("{file}:{line}"),
        }
    }
}

impl TryFrom<String> for RuleSource {
    type Error = String;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        match text.as_str() {
            "linguist" => Ok(Self::Linguist),
            "lock_file" => Ok(Self::LockFile),
            _ => text
                .rsplit_once(':')
                .and_then(|(file, line)| {
                    let line = line.parse().ok()?;
                    (file == ".gitattributes" || file.ends_with("/.gitattributes")).then(|| {
                        Self::Gitattributes {
                            file: file.to_string(),
                            line,
                        }
                    })
                })
                .ok_or_else(|| {
                    format!(
                        "unknown rule source {text:?}: expected \"linguist\", \"lock_file\" or \".gitattributes:LINE\""
                    )
                }),
        }
    }
}

/// A skipped file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    pub path: String,
    #[serde(flatten)]
    pub reason: SkipReason,
}

/// The walk's result.
#[derive(Clone, Debug, Default)]
pub struct Inventory {
    /// The canonical root.
    pub(crate) root: PathBuf,
    pub files: Vec<FileEntry>,
    pub(crate) skipped: Vec<Skipped>,
}

impl Inventory {
    /// Estimated tokens of all files.
    pub fn total_tokens(&self) -> u64 {
        self.files.iter().map(|f| f.tokens).sum()
    }
}

/// An inventory that cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum InventoryError {
    #[error("{path}: no such directory; give the repository to scan, e.g. `fanscan scan .`")]
    Missing { path: String },
    #[error("{path}: not a directory; give the repository's root directory")]
    NotADirectory { path: String },
    #[error("{path}: cannot read the directory ({error}); check its permissions")]
    Unreadable { path: String, error: String },
    #[error("invalid --include/--exclude glob {glob:?}: {error}")]
    Glob { glob: String, error: String },
    #[error(transparent)]
    VendorRules(#[from] VendorRulesError),
}

enum Item {
    File(FileEntry),
    Skip(Skipped),
    /// Skipped by the built-in list unless a `.gitattributes` line brings
    /// it back; its content is not looked at until then.
    Listed {
        path: String,
        bytes: u64,
        matched: BuiltinMatch,
    },
    /// The Linguist lines of one `.gitattributes` file.
    Attributes(AttrFile),
    /// The root itself could not be listed.
    RootUnreadable(String),
}

/// Walks `root`.
pub fn walk(root: &Path, options: &InventoryOptions) -> Result<Inventory, InventoryError> {
    let shown = root.display().to_string();
    let meta = std::fs::metadata(root).map_err(|_| InventoryError::Missing {
        path: shown.clone(),
    })?;
    if !meta.is_dir() {
        return Err(InventoryError::NotADirectory { path: shown });
    }
    let root = root
        .canonicalize()
        .map_err(|_| InventoryError::Missing { path: shown })?;
    let rules = VendorRules::builtin()?;
    let mut overrides = OverrideBuilder::new(&root);
    for glob in &options.include {
        overrides.add(glob).map_err(|e| InventoryError::Glob {
            glob: glob.clone(),
            error: e.to_string(),
        })?;
    }
    for glob in &options.exclude {
        overrides
            .add(&format!("!{glob}"))
            .map_err(|e| InventoryError::Glob {
                glob: glob.clone(),
                error: e.to_string(),
            })?;
    }
    let overrides = overrides.build().map_err(|e| InventoryError::Glob {
        glob: options
            .include
            .iter()
            .chain(&options.exclude)
            .cloned()
            .collect::<Vec<_>>()
            .join(", "),
        error: e.to_string(),
    })?;
    let mut builder = WalkBuilder::new(&root);
    builder
        .hidden(!options.hidden)
        .follow_links(false)
        // Ignore files above the root are not the crate's to read: git
        // reads none above the work tree's top, and those between the top
        // and the root are added below, rooted where git roots them.
        .parents(false)
        // `.gitignore` files count outside a git work tree too (an export
        // or a tarball keeps its author's intent)...
        .require_git(false)
        // ...but git's own excludes only inside one, rooted at its top.
        .git_global(false)
        .add_custom_ignore_filename(".fanscanignore")
        .overrides(overrides)
        .filter_entry(|e| e.file_name() != ".git");
    if let Some(tree) = WorkTree::find(&root) {
        tree.add_rules_above(&mut builder, &root);
    }
    let walker = builder.build_parallel();
    let (tx, rx) = mpsc::channel::<Item>();
    let max = options.max_file_bytes;
    let include_vendored = options.include_vendored;
    walker.run(|| {
        let tx = tx.clone();
        let root = root.clone();
        Box::new(move |entry| {
            let entry = match entry {
                Ok(entry) => entry,
                Err(error) => {
                    if let Some(item) = walk_error(&root, &error) {
                        let _ = tx.send(item);
                    }
                    return WalkState::Continue;
                }
            };
            let Some(kind) = entry.file_type() else {
                return WalkState::Continue;
            };
            let Ok(rel) = entry.path().strip_prefix(&root) else {
                return WalkState::Continue;
            };
            let path = rel.to_string_lossy().replace('\\', "/");
            // Every walked directory's `.gitattributes` is read here, not
            // when the walk yields it: hidden-file, --include and ignore
            // filters must not switch its rules off.
            if kind.is_dir() {
                if let Some(file) = read_gitattributes(entry.path(), &path) {
                    let _ = tx.send(Item::Attributes(file));
                }
                return WalkState::Continue;
            }
            if entry.depth() == 0 {
                return WalkState::Continue;
            }
            let item = if kind.is_symlink() {
                Item::Skip(Skipped {
                    path,
                    reason: SkipReason::Symlink,
                })
            } else if kind.is_file() {
                match entry.metadata() {
                    Ok(meta) => {
                        let bytes = meta.len();
                        let matched = rules.matches(&path);
                        if matched.skips(include_vendored) {
                            Item::Listed {
                                path,
                                bytes,
                                matched,
                            }
                        } else {
                            classify(entry.path(), path, bytes, max)
                        }
                    }
                    Err(e) => Item::Skip(Skipped {
                        path,
                        reason: SkipReason::Unreadable {
                            error: e.to_string(),
                        },
                    }),
                }
            } else {
                return WalkState::Continue;
            };
            let _ = tx.send(item);
            WalkState::Continue
        })
    });
    drop(tx);
    let mut inventory = Inventory {
        root,
        ..Inventory::default()
    };
    let mut items = Vec::new();
    let mut attribute_files = Vec::new();
    for item in rx {
        match item {
            Item::Attributes(file) => attribute_files.push(file),
            Item::RootUnreadable(error) => {
                return Err(InventoryError::Unreadable {
                    path: inventory.root.display().to_string(),
                    error,
                });
            }
            other => items.push(other),
        }
    }
    let decide = Decide {
        rules,
        attributes: Attributes::build(attribute_files),
        include_vendored,
    };
    let mut scratch = Vec::new();
    for item in items {
        let item = match item {
            // Not on the built-in list (or --include-vendored): only a
            // `.gitattributes` line can still skip it.
            Item::File(file) if !decide.attributes.is_empty() => {
                let attrs = decide.attributes.lookup(&file.path, &mut scratch);
                match decide.reason(BuiltinMatch::default(), attrs) {
                    Some(reason) => Item::Skip(Skipped {
                        path: file.path,
                        reason,
                    }),
                    None => Item::File(file),
                }
            }
            Item::Listed {
                path,
                bytes,
                matched,
            } => {
                let attrs = decide.attributes.lookup(&path, &mut scratch);
                match decide.reason(matched, attrs) {
                    Some(reason) => Item::Skip(Skipped { path, reason }),
                    None => classify(&inventory.root.join(&path), path, bytes, max),
                }
            }
            other => other,
        };
        match item {
            Item::File(f) => inventory.files.push(f),
            Item::Skip(s) => inventory.skipped.push(s),
            Item::Listed { .. } | Item::Attributes(_) | Item::RootUnreadable(_) => {}
        }
    }
    inventory.files.sort_by(|a, b| a.path.cmp(&b.path));
    inventory.skipped.sort_by(|a, b| a.path.cmp(&b.path));
    // A directory whose listing failed twice the same way is listed once.
    inventory.skipped.dedup();
    Ok(inventory)
}

/// What a walker error means for the inventory: an entry under the root
/// that the OS would not read is a skipped, `unreadable` entry (coverage
/// stays whole: it is never silently dropped); the root itself unreadable
/// ends the walk with an error. Errors that name no entry under the root
/// (an ignore file above the root that the walk does not use) are logged.
fn walk_error(root: &Path, error: &ignore::Error) -> Option<Item> {
    /// The innermost path and I/O error of a nested walker error.
    fn parts(error: &ignore::Error) -> (Option<&Path>, Option<&std::io::Error>) {
        match error {
            ignore::Error::WithPath { path, err } => {
                let (inner, io) = parts(err);
                (inner.or(Some(path)), io)
            }
            ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
                parts(err)
            }
            ignore::Error::Io(io) => (None, Some(io)),
            ignore::Error::Partial(_)
            | ignore::Error::Loop { .. }
            | ignore::Error::Glob { .. }
            | ignore::Error::UnrecognizedFileType(_)
            | ignore::Error::InvalidDefinition => (None, None),
        }
    }
    let (path, io) = parts(error);
    let (Some(path), Some(io)) = (path, io) else {
        tracing::debug!("walk: {error}");
        return None;
    };
    let Ok(rel) = path.strip_prefix(root) else {
        tracing::debug!("walk: {error}");
        return None;
    };
    if rel.as_os_str().is_empty() {
        return Some(Item::RootUnreadable(io.to_string()));
    }
    Some(Item::Skip(Skipped {
        path: rel.to_string_lossy().replace('\\', "/"),
        reason: SkipReason::Unreadable {
            error: io.to_string(),
        },
    }))
}

/// The git work tree a root is in: where git's ignore rules above the root
/// come from.
#[derive(Debug, PartialEq, Eq)]
struct WorkTree {
    /// The work tree's top (the directory holding `.git`), canonical.
    top: PathBuf,
    /// The repository's common git directory, which holds `info/exclude`
    /// (for a linked worktree, the main repository's; for a submodule, its
    /// own under the superproject's `.git/modules`).
    common_dir: PathBuf,
}

impl WorkTree {
    /// The work tree whose top is `root` or its nearest ancestor with a
    /// `.git` directory (one with a `HEAD`) or a `.git` file (`gitdir:
    /// PATH`, as linked worktrees and submodules have), as git discovers
    /// it. `None` outside a work tree.
    fn find(root: &Path) -> Option<Self> {
        root.ancestors().find_map(|dir| {
            let dot_git = dir.join(".git");
            let meta = std::fs::metadata(&dot_git).ok()?;
            let git_dir = if meta.is_dir() {
                dot_git.join("HEAD").is_file().then_some(dot_git)?
            } else if meta.is_file() {
                let text = std::fs::read_to_string(&dot_git).ok()?;
                let target = text.lines().next()?.strip_prefix("gitdir:")?.trim();
                dir.join(target)
            } else {
                return None;
            };
            // A linked worktree's git directory names the shared one.
            let common_dir = match std::fs::read_to_string(git_dir.join("commondir")) {
                Ok(text) => git_dir.join(text.trim_end_matches(['\n', '\r'])),
                Err(_) => git_dir,
            };
            Some(Self {
                top: dir.to_path_buf(),
                common_dir,
            })
        })
    }

    /// Adds git's rules that live outside the root's tree to the walk, in
    /// git's order of precedence. The walker's explicit ignore files lose
    /// to every ignore file in the root and below, and among themselves the
    /// last added wins: `core.excludesFile` first, then `info/exclude`,
    /// then the `.gitignore` files from the top down to the root's parent.
    /// Each is rooted where git roots it: the excludes at the top, a
    /// `.gitignore` at its own directory.
    fn add_rules_above(&self, builder: &mut WalkBuilder, root: &Path) {
        let mut sources = Vec::new();
        if let Some(global) = ignore::gitignore::gitconfig_excludes_path() {
            sources.push((self.top.clone(), global));
        }
        sources.push((
            self.top.clone(),
            self.common_dir.join("info").join("exclude"),
        ));
        if let Ok(below) = root.strip_prefix(&self.top) {
            // The top's and those of the directories down to the root's
            // parent: the root's own is the walker's to read.
            let mut dir = self.top.clone();
            for step in below.components() {
                sources.push((dir.clone(), dir.join(".gitignore")));
                dir.push(step);
            }
        }
        for (base, file) in sources {
            if !file.is_file() {
                continue;
            }
            builder.current_dir(base);
            if let Some(error) = builder.add_ignore(&file) {
                tracing::warn!("{}: some ignore rules not used: {error}", file.display());
            }
        }
    }
}

/// Size and content checks of a file the vendored rules let through.
fn classify(real: &Path, path: String, bytes: u64, max: u64) -> Item {
    if bytes > max {
        return Item::Skip(Skipped {
            path,
            reason: SkipReason::TooLarge { bytes, limit: max },
        });
    }
    let language = language_of(&path);
    let extension = extension(&path);
    if BINARY_EXTENSIONS.contains(&extension.as_str()) {
        return Item::Skip(Skipped {
            path,
            reason: SkipReason::Binary,
        });
    }
    // Files of a known text kind are not opened here (the walk stays as
    // fast as listing); the tools still refuse a NUL byte when read.
    if language.is_none() && !TEXT_EXTENSIONS.contains(&extension.as_str()) {
        match sniff_binary(real) {
            Ok(true) => {
                return Item::Skip(Skipped {
                    path,
                    reason: SkipReason::Binary,
                });
            }
            Ok(false) => {}
            Err(e) => {
                return Item::Skip(Skipped {
                    path,
                    reason: SkipReason::Unreadable {
                        error: e.to_string(),
                    },
                });
            }
        }
    }
    Item::File(FileEntry {
        path,
        bytes,
        language: language.map(str::to_string),
        tokens: crate::util::estimate_tokens(bytes),
    })
}

fn sniff_binary(path: &Path) -> std::io::Result<bool> {
    let mut file = std::fs::File::open(path)?;
    let mut buffer = [0u8; 8192];
    let mut filled = 0;
    while filled < buffer.len() {
        let n = file.read(&mut buffer[filled..])?;
        if n == 0 {
            break;
        }
        filled += n;
    }
    Ok(crate::tools::is_binary(&buffer[..filled]))
}

/// The built-in list's name in error messages.
const BUILTIN_RULES_FILE: &str = "configs/vendor.toml";

/// The built-in list, compiled once per process.
static BUILTIN_RULES: LazyLock<Result<VendorRules, VendorRulesError>> = LazyLock::new(|| {
    VendorRules::parse(BUILTIN_RULES_FILE, include_str!("../configs/vendor.toml"))
});

/// A list of vendored and generated path rules that cannot be used.
#[derive(Clone, Debug, thiserror::Error)]
pub enum VendorRulesError {
    #[error("{location}: {message}")]
    Syntax { location: String, message: String },
    #[error("{file}: [{section}] {pattern:?} is not a valid regex: {error}")]
    Pattern {
        file: String,
        section: &'static str,
        pattern: String,
        error: String,
    },
    #[error("{file}: [lock_files] {name:?} is not a file name (it must be non-empty, without `/`)")]
    LockName { file: String, name: String },
    #[error("{file}: the patterns do not compile together: {error}")]
    Set { file: String, error: String },
}

/// What a list entry marks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RuleKind {
    Vendored,
    Generated,
    Lock,
}

#[derive(Debug)]
struct BuiltinRule {
    kind: RuleKind,
    /// As written in the list: a regex, or a lock file's name.
    shown: String,
}

/// Linguist-style rules for vendored and generated paths: regexes matched
/// against the repo-relative `/` path, all compiled into one [`RegexSet`].
#[derive(Debug)]
pub(crate) struct VendorRules {
    set: RegexSet,
    /// By set index, in the order vendored, generated, lock files.
    rules: Vec<BuiltinRule>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct VendorFile {
    vendored: PatternList,
    generated: PatternList,
    lock_files: NameList,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PatternList {
    patterns: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NameList {
    names: Vec<String>,
}

impl VendorRules {
    /// The built-in list, `configs/vendor.toml`, compiled on first use.
    pub(crate) fn builtin() -> Result<&'static Self, VendorRulesError> {
        BUILTIN_RULES.as_ref().map_err(Clone::clone)
    }

    /// Parses and compiles a list in the format of `configs/vendor.toml`;
    /// `file` names it in errors.
    pub(crate) fn parse(file: &str, text: &str) -> Result<Self, VendorRulesError> {
        let parsed: VendorFile = toml::from_str(text).map_err(|e| {
            let line = e
                .span()
                .map(|s| text.get(..s.start).unwrap_or(text).matches('\n').count() + 1);
            VendorRulesError::Syntax {
                location: match line {
                    Some(l) => format!("{file}:{l}"),
                    None => file.to_string(),
                },
                message: e.message().to_string(),
            }
        })?;
        let mut rules = Vec::new();
        let mut regexes = Vec::new();
        for (kind, patterns) in [
            (RuleKind::Vendored, parsed.vendored.patterns),
            (RuleKind::Generated, parsed.generated.patterns),
        ] {
            for pattern in patterns {
                regexes.push(pattern.clone());
                rules.push(BuiltinRule {
                    kind,
                    shown: pattern,
                });
            }
        }
        for name in parsed.lock_files.names {
            if name.is_empty() || name.contains('/') {
                return Err(VendorRulesError::LockName {
                    file: file.to_string(),
                    name,
                });
            }
            regexes.push(format!("(^|/){}$", regex::escape(&name)));
            rules.push(BuiltinRule {
                kind: RuleKind::Lock,
                shown: name,
            });
        }
        let set = RegexSet::new(&regexes).map_err(|set_error| {
            // Name the pattern at fault when one alone does not compile.
            rules
                .iter()
                .zip(&regexes)
                .find_map(|(rule, regex)| {
                    regex::Regex::new(regex)
                        .err()
                        .map(|e| VendorRulesError::Pattern {
                            file: file.to_string(),
                            section: match rule.kind {
                                RuleKind::Vendored => "vendored",
                                RuleKind::Generated => "generated",
                                RuleKind::Lock => "lock_files",
                            },
                            pattern: rule.shown.clone(),
                            error: e.to_string(),
                        })
                })
                .unwrap_or_else(|| VendorRulesError::Set {
                    file: file.to_string(),
                    error: set_error.to_string(),
                })
        })?;
        Ok(Self { set, rules })
    }

    /// The number of patterns and names.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.rules.len()
    }

    /// The first rule of each kind that matches `path`. One pass of the set
    /// over the path; the rare match is then resolved to its rules.
    fn matches(&self, path: &str) -> BuiltinMatch {
        let mut matched = BuiltinMatch::default();
        if !self.set.is_match(path) {
            return matched;
        }
        for index in self.set.matches(path).iter() {
            let Some(rule) = self.rules.get(index) else {
                continue;
            };
            let slot = match rule.kind {
                RuleKind::Vendored => &mut matched.vendored,
                RuleKind::Generated => &mut matched.generated,
                RuleKind::Lock => &mut matched.lock,
            };
            slot.get_or_insert(index);
        }
        matched
    }

    fn shown(&self, index: usize) -> String {
        self.rules
            .get(index)
            .map(|r| r.shown.clone())
            .unwrap_or_default()
    }
}

/// Which built-in rules matched one path (indices into [`VendorRules`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct BuiltinMatch {
    vendored: Option<usize>,
    generated: Option<usize>,
    lock: Option<usize>,
}

impl BuiltinMatch {
    /// Whether the built-in list alone skips the file.
    fn skips(&self, include_vendored: bool) -> bool {
        self.lock.is_some()
            || (!include_vendored && (self.vendored.is_some() || self.generated.is_some()))
    }
}

/// A Linguist attribute's state on one `.gitattributes` line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AttrState {
    /// `linguist-vendored`, or any value but `false`.
    Set,
    /// `-linguist-vendored` or `linguist-vendored=false`: overrides the
    /// built-in list.
    Unset,
    /// `!linguist-vendored`: back to what the built-in list says.
    Unspecified,
}

/// One `.gitattributes` line that mentions a Linguist attribute.
#[derive(Clone, Debug, PartialEq, Eq)]
struct AttrLine {
    /// 1-based.
    line: usize,
    /// As written (unquoted), relative to the file's directory.
    pattern: String,
    vendored: Option<AttrState>,
    generated: Option<AttrState>,
}

/// The Linguist lines of one `.gitattributes` file.
#[derive(Clone, Debug)]
struct AttrFile {
    /// Repo-relative directory of the file, `""` at the root.
    dir: String,
    lines: Vec<AttrLine>,
}

/// Git ignores attribute files from this size on, and longer lines.
const ATTR_MAX_FILE_BYTES: u64 = 100 * 1024 * 1024;
const ATTR_MAX_LINE_BYTES: usize = 2048;

/// Reads `dir/.gitattributes` if there is one with Linguist lines. Like
/// git, a symlinked `.gitattributes` is not followed; invalid UTF-8 is read
/// lossily.
fn read_gitattributes(dir: &Path, rel_dir: &str) -> Option<AttrFile> {
    let path = dir.join(".gitattributes");
    let meta = std::fs::symlink_metadata(&path).ok()?;
    if !meta.is_file() || meta.len() >= ATTR_MAX_FILE_BYTES {
        return None;
    }
    let bytes = std::fs::read(&path).ok()?;
    let lines = parse_gitattributes(&String::from_utf8_lossy(&bytes));
    (!lines.is_empty()).then(|| AttrFile {
        dir: rel_dir.to_string(),
        lines,
    })
}

/// The lines of a `.gitattributes` file that set, unset or unspecify
/// `linguist-vendored` or `linguist-generated`. A line git would ignore
/// (a `!pattern`, an invalid attribute name, a macro definition, one over
/// 2048 bytes) is ignored here too.
fn parse_gitattributes(text: &str) -> Vec<AttrLine> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut out = Vec::new();
    for (index, raw) in text.split('\n').enumerate() {
        if raw.len() >= ATTR_MAX_LINE_BYTES {
            tracing::debug!(
                ".gitattributes:{}: line over {ATTR_MAX_LINE_BYTES} bytes ignored",
                index + 1
            );
            continue;
        }
        if let Some(line) = parse_attr_line(raw, index + 1) {
            out.push(line);
        }
    }
    out
}

fn is_blank(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

fn parse_attr_line(raw: &str, line: usize) -> Option<AttrLine> {
    let text = raw.trim_start_matches(is_blank);
    if text.is_empty() || text.starts_with('#') {
        return None;
    }
    let (pattern, rest) = match text.strip_prefix('"').and_then(unquote_c_style) {
        Some(quoted) => quoted,
        None => {
            let end = text.find(is_blank).unwrap_or(text.len());
            (text[..end].to_string(), &text[end..])
        }
    };
    // `[attr]name ...` defines a macro; `!pattern` is refused by git.
    if pattern.is_empty() || pattern.starts_with("[attr]") || pattern.starts_with('!') {
        return None;
    }
    let mut vendored = None;
    let mut generated = None;
    for token in rest.split(is_blank).filter(|t| !t.is_empty()) {
        let (name, state) = if let Some(name) = token.strip_prefix('-') {
            (name, AttrState::Unset)
        } else if let Some(name) = token.strip_prefix('!') {
            (name, AttrState::Unspecified)
        } else if let Some((name, value)) = token.split_once('=') {
            // Linguist: any value but "false" counts as set.
            let state = if value == "false" {
                AttrState::Unset
            } else {
                AttrState::Set
            };
            (name, state)
        } else {
            (token, AttrState::Set)
        };
        let valid = !name.is_empty()
            && !name.starts_with('-')
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
        if !valid {
            // Git drops the whole line over one bad attribute name.
            tracing::debug!(".gitattributes:{line}: invalid attribute {name:?}; line ignored");
            return None;
        }
        // Later on the line wins, as in git.
        match name {
            "linguist-vendored" => vendored = Some(state),
            "linguist-generated" => generated = Some(state),
            _ => {}
        }
    }
    (vendored.is_some() || generated.is_some()).then_some(AttrLine {
        line,
        pattern,
        vendored,
        generated,
    })
}

/// Git's C-style quoting of a pattern, after the opening quote: the
/// unquoted pattern and the rest of the line, or `None` if malformed (git
/// then reads the pattern unquoted).
fn unquote_c_style(text: &str) -> Option<(String, &str)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => return Some((String::from_utf8_lossy(&out).into_owned(), &text[i + 1..])),
            b'\\' => {
                let escaped = *bytes.get(i + 1)?;
                i += 2;
                out.push(match escaped {
                    b'a' => 0x07,
                    b'b' => 0x08,
                    b'f' => 0x0c,
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    b'v' => 0x0b,
                    b'\\' | b'"' => escaped,
                    b'0'..=b'3' => {
                        let digits = bytes.get(i..i + 2)?;
                        if !digits.iter().all(|d| (b'0'..=b'7').contains(d)) {
                            return None;
                        }
                        i += 2;
                        ((escaped - b'0') << 6) | ((digits[0] - b'0') << 3) | (digits[1] - b'0')
                    }
                    _ => return None,
                });
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    None
}

/// The glob (for `globset`, with `literal_separator`) that matches the
/// repo-relative paths a `.gitattributes` pattern in `dir` matches, by
/// git's rules: a pattern without `/` matches a name at any depth below
/// `dir`, one with a `/` is relative to `dir`; `**` is special only as a
/// whole path component; a pattern ending in `/` matches directories only,
/// so never a file (`None`), as does a malformed one.
fn attr_glob(dir: &str, pattern: &str) -> Option<String> {
    if pattern.ends_with('/') {
        return None;
    }
    let anywhere = !pattern.contains('/');
    let pattern = pattern.strip_prefix('/').unwrap_or(pattern);
    let mut glob = String::with_capacity(dir.len() + pattern.len() + 8);
    for c in dir.chars() {
        match c {
            '?' | '*' | '[' | ']' | '{' | '}' => {
                glob.push('[');
                glob.push(c);
                glob.push(']');
            }
            '\\' => glob.push_str("\\\\"),
            c => glob.push(c),
        }
    }
    if !dir.is_empty() {
        glob.push('/');
    }
    if anywhere {
        glob.push_str("**/");
    }
    let chars: Vec<char> = pattern.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => {
                // An escape at the end matches nothing in git.
                let next = *chars.get(i + 1)?;
                glob.push('\\');
                glob.push(next);
                i += 2;
            }
            '[' => {
                let mut end = i + 1;
                if matches!(chars.get(end), Some('!' | '^')) {
                    end += 1;
                }
                if chars.get(end) == Some(&']') {
                    end += 1;
                }
                while end < chars.len() && chars[end] != ']' {
                    end += if chars[end] == '\\' { 2 } else { 1 };
                }
                // An unclosed class matches nothing in git.
                if end >= chars.len() {
                    return None;
                }
                glob.push('[');
                for (k, &c) in chars.iter().enumerate().take(end + 1).skip(i + 1) {
                    glob.push(if k == i + 1 && c == '^' { '!' } else { c });
                }
                i = end + 1;
            }
            '*' => {
                let start = i;
                while chars.get(i) == Some(&'*') {
                    i += 1;
                }
                let whole = (start == 0 || chars[start - 1] == '/')
                    && (i == chars.len() || chars[i] == '/');
                glob.push_str(if i - start >= 2 && whole { "**" } else { "*" });
            }
            c @ ('{' | '}') => {
                glob.push('[');
                glob.push(c);
                glob.push(']');
                i += 1;
            }
            c => {
                glob.push(c);
                i += 1;
            }
        }
    }
    Some(glob)
}

/// One compiled `.gitattributes` line.
#[derive(Debug)]
struct AttrRule {
    /// The `.gitattributes` file, repo-relative.
    file: String,
    line: usize,
    pattern: String,
    vendored: Option<AttrState>,
    generated: Option<AttrState>,
}

/// Every `.gitattributes` line of the walk in one [`GlobSet`], in
/// precedence order: shallower files first, then by line, so the highest
/// matching index wins (deeper files and later lines override, as in git).
#[derive(Debug, Default)]
struct Attributes {
    set: GlobSet,
    rules: Vec<AttrRule>,
}

/// The deciding `.gitattributes` line of each attribute for one path
/// (index into [`Attributes`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct AttrMatch {
    vendored: Option<(AttrState, usize)>,
    generated: Option<(AttrState, usize)>,
}

impl Attributes {
    fn build(mut files: Vec<AttrFile>) -> Self {
        files.sort_by(|a, b| {
            let depth = |d: &str| {
                if d.is_empty() {
                    0
                } else {
                    d.matches('/').count() + 1
                }
            };
            depth(&a.dir)
                .cmp(&depth(&b.dir))
                .then_with(|| a.dir.cmp(&b.dir))
        });
        let mut builder = GlobSetBuilder::new();
        let mut rules = Vec::new();
        for file in files {
            let name = if file.dir.is_empty() {
                ".gitattributes".to_string()
            } else {
                format!("{}/.gitattributes", file.dir)
            };
            for line in file.lines {
                let Some(glob) = attr_glob(&file.dir, &line.pattern) else {
                    tracing::debug!("{name}:{}: pattern matches no file", line.line);
                    continue;
                };
                match GlobBuilder::new(&glob)
                    .literal_separator(true)
                    .backslash_escape(true)
                    .build()
                {
                    Ok(compiled) => {
                        builder.add(compiled);
                        rules.push(AttrRule {
                            file: name.clone(),
                            line: line.line,
                            pattern: line.pattern,
                            vendored: line.vendored,
                            generated: line.generated,
                        });
                    }
                    Err(e) => tracing::debug!("{name}:{}: pattern ignored: {e}", line.line),
                }
            }
        }
        match builder.build() {
            Ok(set) => Self { set, rules },
            Err(e) => {
                tracing::warn!(".gitattributes: Linguist attributes ignored: {e}");
                Self::default()
            }
        }
    }

    fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The last line that sets each attribute for `path`.
    fn lookup(&self, path: &str, scratch: &mut Vec<usize>) -> AttrMatch {
        let mut found = AttrMatch::default();
        if self.rules.is_empty() {
            return found;
        }
        self.set
            .matches_candidate_into(&Candidate::new(path), scratch);
        for &index in scratch.iter().rev() {
            let Some(rule) = self.rules.get(index) else {
                continue;
            };
            if found.vendored.is_none() {
                found.vendored = rule.vendored.map(|s| (s, index));
            }
            if found.generated.is_none() {
                found.generated = rule.generated.map(|s| (s, index));
            }
            if found.vendored.is_some() && found.generated.is_some() {
                break;
            }
        }
        found
    }
}

/// Decides, from the built-in list and `.gitattributes`, whether a file is
/// skipped as vendored or generated.
struct Decide<'a> {
    rules: &'a VendorRules,
    attributes: Attributes,
    include_vendored: bool,
}

/// Which rule marked a file.
#[derive(Clone, Copy)]
enum Mark {
    Builtin(usize),
    Attr(usize),
}

impl Decide<'_> {
    fn reason(&self, builtin: BuiltinMatch, attrs: AttrMatch) -> Option<SkipReason> {
        // A set attribute marks the file, an unset one clears the built-in
        // mark, an unspecified one (or none) leaves the built-in list's.
        let pick = |attr: Option<(AttrState, usize)>, builtin: Option<usize>| match attr {
            Some((AttrState::Set, index)) => Some(Mark::Attr(index)),
            Some((AttrState::Unset, _)) => None,
            Some((AttrState::Unspecified, _)) | None => builtin.map(Mark::Builtin),
        };
        let vendored = pick(attrs.vendored, builtin.vendored);
        let generated = pick(attrs.generated, builtin.generated);
        let lock = match attrs.generated {
            Some((AttrState::Unset, _)) => None,
            _ => builtin.lock,
        };
        if !self.include_vendored
            && let Some(mark) = vendored
        {
            let (rule, source) = self.describe(mark);
            return Some(SkipReason::Vendored { rule, source });
        }
        if let Some(index) = lock {
            return Some(SkipReason::Generated {
                rule: self.rules.shown(index),
                source: RuleSource::LockFile,
            });
        }
        if !self.include_vendored
            && let Some(mark) = generated
        {
            let (rule, source) = self.describe(mark);
            return Some(SkipReason::Generated { rule, source });
        }
        None
    }

    fn describe(&self, mark: Mark) -> (String, RuleSource) {
        match mark {
            Mark::Builtin(index) => (self.rules.shown(index), RuleSource::Linguist),
            Mark::Attr(index) => match self.attributes.rules.get(index) {
                Some(rule) => (
                    rule.pattern.clone(),
                    RuleSource::Gitattributes {
                        file: rule.file.clone(),
                        line: rule.line,
                    },
                ),
                None => (String::new(), RuleSource::Linguist),
            },
        }
    }
}

const BINARY_EXTENSIONS: &[&str] = &[
    "png", "jpg", "jpeg", "gif", "bmp", "ico", "webp", "tiff", "psd", "pdf", "zip", "gz", "tgz",
    "bz2", "xz", "zst", "7z", "rar", "tar", "jar", "war", "class", "so", "dylib", "dll", "exe",
    "o", "a", "lib", "obj", "bin", "wasm", "pyc", "pyo", "woff", "woff2", "ttf", "otf", "eot",
    "mp3", "mp4", "wav", "ogg", "flac", "mov", "avi", "mkv", "webm", "sqlite", "db", "rlib",
    "rmeta", "pack", "idx", "crate", "whl", "deb", "rpm", "dmg", "iso", "img", "parquet", "npy",
    "npz", "pt", "onnx", "h5",
];

const TEXT_EXTENSIONS: &[&str] = &[
    "md",
    "markdown",
    "txt",
    "rst",
    "adoc",
    "cfg",
    "ini",
    "conf",
    "properties",
    "lock",
    "csv",
    "tsv",
    "xml",
    "svg",
    "gradle",
    "cmake",
    "mk",
    "env",
    "gitignore",
    "editorconfig",
    "proto",
    "graphql",
    "tf",
    "hcl",
    "bazel",
    "bzl",
    "nix",
    "diff",
    "patch",
    "log",
    "in",
    "am",
    "ac",
    "license",
    "gitattributes",
    "dockerignore",
    "example",
    "sample",
    "template",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &[u8])]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, content) in files {
            let full = dir.path().join(path);
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(full, content).unwrap();
        }
        dir
    }

    #[test]
    fn walks_sorted_with_hidden_files_but_never_git_and_records_skips() {
        let dir = tree(&[
            ("src/b.rs", b"fn b() {}"),
            ("src/a.rs", b"fn a() {}"),
            (".github/workflows/ci.yml", b"on: push"),
            (".env", b"X=1"),
            (".git/config", b"[core]"),
            ("logo.png", b"\x89PNG"),
            ("data.weird", b"ab\0cd"),
            ("big.txt", &[b'a'; 2000]),
            ("ignored.log", b"x"),
            (".gitignore", b"*.log\n"),
            (".fanscanignore", b"vendor/\n"),
            ("vendor/x.rs", b"x"),
            ("Cargo.lock", b"x"),
        ]);
        let options = InventoryOptions {
            max_file_bytes: 1000,
            ..InventoryOptions::default()
        };
        let inv = walk(dir.path(), &options).unwrap();
        let paths: Vec<&str> = inv.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            paths,
            vec![
                ".env",
                ".fanscanignore",
                ".github/workflows/ci.yml",
                ".gitignore",
                "src/a.rs",
                "src/b.rs"
            ]
        );
        let skipped: Vec<(&str, &SkipReason)> = inv
            .skipped
            .iter()
            .map(|s| (s.path.as_str(), &s.reason))
            .collect();
        assert_eq!(
            skipped,
            vec![
                (
                    "Cargo.lock",
                    &SkipReason::Generated {
                        rule: "Cargo.lock".into(),
                        source: RuleSource::LockFile
                    }
                ),
                (
                    "big.txt",
                    &SkipReason::TooLarge {
                        bytes: 2000,
                        limit: 1000
                    }
                ),
                ("data.weird", &SkipReason::Binary),
                ("logo.png", &SkipReason::Binary),
            ]
        );
        assert_eq!(inv.files[4].language.as_deref(), Some("rust"));
        assert_eq!(inv.files[4].tokens, 3);
    }

    #[test]
    fn include_exclude_and_no_hidden() {
        let dir = tree(&[
            ("src/a.rs", b"x"),
            ("src/b.py", b"x"),
            (".hidden/d.rs", b"x"),
            ("gen/c.rs", b"x"),
        ]);
        let options = InventoryOptions {
            hidden: false,
            include: vec!["*.rs".into()],
            exclude: vec!["gen/**".into()],
            ..InventoryOptions::default()
        };
        let inv = walk(dir.path(), &options).unwrap();
        let paths: Vec<&str> = inv.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, vec!["src/a.rs"]);
    }

    #[test]
    fn missing_root_is_a_clear_error() {
        let e = walk(Path::new("/no/such/dir"), &InventoryOptions::default()).unwrap_err();
        assert!(e.to_string().contains("no such directory"));
    }

    /// `git init` in `dir` (the walk never runs git; the tests make real
    /// work trees with it).
    fn git_init(dir: &Path) {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["init", "-q"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    }

    #[test]
    fn ignore_files_above_the_root_do_not_drop_its_files() {
        // `outer/` is a CI workspace or a store's directory: its ignore
        // files are not the scanned repository's.
        for repo_is_git in [false, true] {
            let dir = tree(&[
                (".gitignore", b"*.toml\n.gitignore\n"),
                (".ignore", b"*.md\n"),
                (".fanscanignore", b"*.rs\n"),
                ("repo/app.toml", b"x"),
                ("repo/README.md", b"x"),
                ("repo/src/main.rs", b"x"),
                ("repo/.gitignore", b"*.log\n"),
                ("repo/debug.log", b"x"),
                ("repo/sub/.gitignore", b"*.tmp\n"),
                ("repo/sub/x.tmp", b"x"),
            ]);
            let repo = dir.path().join("repo");
            if repo_is_git {
                git_init(&repo);
            }
            let inv = walk(&repo, &InventoryOptions::default()).unwrap();
            assert_eq!(
                files(&inv),
                vec![
                    ".gitignore",
                    "README.md",
                    "app.toml",
                    "src/main.rs",
                    "sub/.gitignore"
                ],
                "repo is a git work tree: {repo_is_git}"
            );
            assert!(inv.skipped.is_empty(), "{:?}", inv.skipped);
        }
    }

    #[test]
    fn a_subdirectory_of_a_work_tree_gets_gits_rules_from_the_top_down() {
        let dir = tree(&[
            // Above the work tree's top: never.
            ("outer.toml", b"x"),
            (".gitignore", b"*.toml\n"),
            // The top's rules, relative to the top.
            (
                "top/.gitignore",
                b"*.log\n/sub/anchored.txt\ndeep/x.txt\n/top-only.rs\n",
            ),
            ("top/sub/a.log", b"x"),
            ("top/sub/anchored.txt", b"x"),
            ("top/sub/deep/x.txt", b"x"),
            ("top/sub/top-only.rs", b"x"),
            ("top/sub/app.toml", b"x"),
            ("top/sub/secret.key", b"x"),
            ("top/sub/main.rs", b"x"),
            // The root's own rules win over the top's, as deeper ones do.
            ("top/sub/.gitignore", b"!b.log\n"),
            ("top/sub/b.log", b"x"),
        ]);
        let top = dir.path().join("top");
        git_init(&top);
        std::fs::write(top.join(".git/info/exclude"), "secret.key\n").unwrap();
        let inv = walk(&top.join("sub"), &InventoryOptions::default()).unwrap();
        assert_eq!(
            files(&inv),
            vec![
                ".gitignore",
                "app.toml",
                "b.log",
                "deep/x.txt",
                "main.rs",
                "top-only.rs"
            ]
        );
        // Without the work tree, only the root and below count.
        std::fs::remove_dir_all(top.join(".git")).unwrap();
        let inv = walk(&top.join("sub"), &InventoryOptions::default()).unwrap();
        assert_eq!(
            files(&inv),
            vec![
                ".gitignore",
                "a.log",
                "anchored.txt",
                "app.toml",
                "b.log",
                "deep/x.txt",
                "main.rs",
                "secret.key",
                "top-only.rs"
            ]
        );
    }

    #[test]
    fn a_linked_worktree_and_a_submodule_find_their_top_and_excludes() {
        let dir = tree(&[
            ("main/.git/HEAD", b"ref: refs/heads/main\n"),
            ("main/.git/info/exclude", b"*.key\n"),
            ("main/.git/worktrees/wt/HEAD", b"ref: refs/heads/wt\n"),
            ("main/.git/worktrees/wt/commondir", b"../..\n"),
            ("main/.git/modules/m/HEAD", b"ref: refs/heads/main\n"),
            ("main/.git/modules/m/info/exclude", b"*.pem\n"),
        ]);
        let main = dir.path().join("main").canonicalize().unwrap();
        let wt = dir.path().join("wt");
        std::fs::create_dir_all(wt.join("src")).unwrap();
        std::fs::write(wt.join(".git"), "gitdir: ../main/.git/worktrees/wt\n").unwrap();
        let found = WorkTree::find(&wt.join("src").canonicalize().unwrap()).unwrap();
        assert_eq!(found.top, wt.canonicalize().unwrap());
        assert_eq!(found.common_dir.canonicalize().unwrap(), main.join(".git"));
        let sub = main.join("m");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(sub.join(".git"), "gitdir: ../.git/modules/m\n").unwrap();
        std::fs::write(sub.join("a.pem"), "x").unwrap();
        std::fs::write(sub.join("a.key"), "x").unwrap();
        let found = WorkTree::find(&sub).unwrap();
        assert_eq!(found.top, sub);
        assert_eq!(
            found.common_dir.canonicalize().unwrap(),
            main.join(".git/modules/m")
        );
        // The submodule's own excludes, not its superproject's.
        let inv = walk(&sub, &InventoryOptions::default()).unwrap();
        assert_eq!(files(&inv), vec!["a.key"]);
        assert_eq!(WorkTree::find(dir.path()), None);
    }

    #[cfg(unix)]
    #[test]
    fn a_directory_the_os_cannot_read_is_listed_unreadable() {
        // A directory whose path is longer than PATH_MAX (4096 bytes on
        // Linux): listing it fails with ENAMETOOLONG, for root too (which
        // a chmod 000 directory does not stop). Built in two halves, each
        // short enough to create, then one moved into the other.
        let dir = tree(&[("a.rs", b"x")]);
        let name = "d".repeat(250);
        let mut near = dir.path().join("deep");
        for _ in 0..14 {
            near.push(&name);
        }
        std::fs::create_dir_all(&near).unwrap();
        let side = dir.path().join("side");
        let mut far = side.join(&name);
        for _ in 0..3 {
            far.push(&name);
        }
        std::fs::create_dir_all(&far).unwrap();
        std::fs::write(far.join("lost.rs"), "x").unwrap();
        std::fs::rename(&side, near.join("side")).unwrap();
        let inv = walk(dir.path(), &InventoryOptions::default()).unwrap();
        assert_eq!(files(&inv), vec!["a.rs"]);
        assert_eq!(inv.skipped.len(), 1, "{:?}", inv.skipped);
        let skipped = &inv.skipped[0];
        assert!(skipped.path.starts_with("deep/ddd"), "{}", skipped.path);
        assert!(dir.path().join(&skipped.path).as_os_str().len() > 4096);
        assert_eq!(
            skipped.reason,
            SkipReason::Unreadable {
                error: std::io::Error::from_raw_os_error(36).to_string()
            }
        );
        assert!(
            skipped
                .reason
                .to_string()
                .starts_with("unreadable: File name too long"),
            "{}",
            skipped.reason
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_chmod_000_directory_is_listed_unreadable_unless_the_os_lets_us_read_it() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tree(&[("a.rs", b"x"), ("locked/b.rs", b"x")]);
        let locked = dir.path().join("locked");
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
        let privileged = std::fs::read_dir(&locked).is_ok();
        let inv = walk(dir.path(), &InventoryOptions::default()).unwrap();
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
        if privileged {
            // Root (as in CI containers) reads it regardless.
            assert_eq!(files(&inv), vec!["a.rs", "locked/b.rs"]);
        } else {
            assert_eq!(files(&inv), vec!["a.rs"]);
            assert_eq!(
                inv.skipped,
                vec![Skipped {
                    path: "locked".into(),
                    reason: SkipReason::Unreadable {
                        error: std::io::Error::from_raw_os_error(13).to_string()
                    }
                }]
            );
        }
    }

    #[test]
    fn walker_errors_become_unreadable_entries_or_a_root_error() {
        let root = Path::new("/repo");
        let denied = || std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        // What the walker gives for a directory it cannot list.
        let listing = ignore::Error::WithDepth {
            depth: 2,
            err: Box::new(ignore::Error::WithPath {
                path: root.join("src/locked"),
                err: Box::new(ignore::Error::Io(denied())),
            }),
        };
        match walk_error(root, &listing) {
            Some(Item::Skip(skipped)) => assert_eq!(
                skipped,
                Skipped {
                    path: "src/locked".into(),
                    reason: SkipReason::Unreadable {
                        error: denied().to_string()
                    }
                }
            ),
            _ => panic!("not a skipped entry"),
        }
        let at_root = ignore::Error::WithPath {
            path: root.to_path_buf(),
            err: Box::new(ignore::Error::Io(denied())),
        };
        assert!(matches!(
            walk_error(root, &at_root),
            Some(Item::RootUnreadable(e)) if e == denied().to_string()
        ));
        // An ignore file above the root, or a bad glob: not an entry.
        let above = ignore::Error::WithPath {
            path: PathBuf::from("/elsewhere/.gitignore"),
            err: Box::new(ignore::Error::Io(denied())),
        };
        assert!(walk_error(root, &above).is_none());
        let glob = ignore::Error::WithPath {
            path: root.join(".gitignore"),
            err: Box::new(ignore::Error::Glob {
                glob: Some("[".into()),
                err: "unclosed".into(),
            }),
        };
        assert!(walk_error(root, &glob).is_none());
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_are_recorded_not_followed() {
        let dir = tree(&[("a.rs", b"x")]);
        std::os::unix::fs::symlink("/etc", dir.path().join("etc")).unwrap();
        let inv = walk(dir.path(), &InventoryOptions::default()).unwrap();
        assert_eq!(
            inv.skipped,
            vec![Skipped {
                path: "etc".into(),
                reason: SkipReason::Symlink
            }]
        );
    }

    fn reasons(inv: &Inventory) -> Vec<(&str, String)> {
        inv.skipped
            .iter()
            .map(|s| (s.path.as_str(), s.reason.to_string()))
            .collect()
    }

    fn files(inv: &Inventory) -> Vec<&str> {
        inv.files.iter().map(|f| f.path.as_str()).collect()
    }

    fn builtin_kind(path: &str) -> Option<(RuleKind, String)> {
        let rules = VendorRules::builtin().unwrap();
        let m = rules.matches(path);
        let (kind, index) = match (m.vendored, m.lock, m.generated) {
            (Some(i), _, _) => (RuleKind::Vendored, i),
            (None, Some(i), _) => (RuleKind::Lock, i),
            (None, None, Some(i)) => (RuleKind::Generated, i),
            (None, None, None) => return None,
        };
        Some((kind, rules.shown(index)))
    }

    #[test]
    fn the_builtin_list_compiles_and_follows_linguist() {
        let rules = VendorRules::builtin().unwrap();
        assert!(rules.len() > 100, "{}", rules.len());
        let vendored = [
            "vendor/github.com/x/y.go",
            "lib/Vendor/a.php",
            "third_party/zlib/zlib.c",
            "src/3rd-party/x.c",
            "web/node_modules/left-pad/index.js",
            "bower_components/a/b.js",
            "src/main/resources/webgoat/static/js/libs/jquery-ui-1.10.4.js",
            "static/js/libs/jquery-base.js",
            "static/js/jquery.js",
            "static/js/libs/ace.js",
            "static/css/bootstrap.css",
            "static/js/bootstrap-tooltip.js",
            "static/js/wysihtml5-0.3.0.js",
            "static/js/underscore.js",
            "static/js/backbone-1.4.0.js",
            "types/index.d.ts",
            "gradlew",
            "docs/_build/html/x.js",
        ];
        for path in vendored {
            let kind = builtin_kind(path).map(|(k, _)| k);
            assert_eq!(kind, Some(RuleKind::Vendored), "{path}");
        }
        let generated = [
            "web/app.min.js",
            "web/backbone-min.js",
            "web/site.min.css",
            "web/app.js.map",
            "api/v1/service.pb.go",
            "py/service_pb2.py",
            "py/service_pb2_grpc.py",
            "App/Form1.Designer.cs",
            "pkg/apis/zz_generated.deepcopy.go",
            "src/__generated__/Query.graphql.ts",
        ];
        for path in generated {
            let kind = builtin_kind(path).map(|(k, _)| k);
            assert_eq!(kind, Some(RuleKind::Generated), "{path}");
        }
        for path in [
            "Cargo.lock",
            "web/package-lock.json",
            "go.sum",
            "infra/.terraform.lock.hcl",
        ] {
            let kind = builtin_kind(path).map(|(k, _)| k);
            assert_eq!(kind, Some(RuleKind::Lock), "{path}");
        }
        let own = [
            "src/main.rs",
            "src/bootstrap/app.js",
            "src/angular/app/main.js",
            "src/vendoring.rs",
            "app/controllers/vendor_controller.rb",
            "static/js/webgoat.js",
            "static/js/goatApp/view/MenuView.js",
            "Jenkinsfile",
            ".github/workflows/ci.yml",
            "src/Cargo.lock.rs",
            "tools/release.sh",
        ];
        for path in own {
            assert_eq!(builtin_kind(path), None, "{path}");
        }
        assert_eq!(
            builtin_kind("vendor/a.js").map(|(_, r)| r).as_deref(),
            Some("(^|/)[Vv]endors?/")
        );
    }

    #[test]
    fn a_malformed_list_is_a_typed_error_naming_the_place() {
        let e = VendorRules::parse(
            "v.toml",
            "[vendored]\npatterns = ['(']\n[generated]\npatterns = []\n[lock_files]\nnames = []\n",
        )
        .unwrap_err();
        assert!(
            matches!(&e, VendorRulesError::Pattern { section: "vendored", pattern, .. } if pattern == "("),
            "{e}"
        );
        assert!(
            e.to_string()
                .starts_with("v.toml: [vendored] \"(\" is not a valid regex"),
            "{e}"
        );
        let e = VendorRules::parse(
            "v.toml",
            "[vendored]\npatterns = []\n[generated]\npattern = []\n",
        )
        .unwrap_err();
        assert!(matches!(e, VendorRulesError::Syntax { .. }), "{e}");
        assert!(e.to_string().starts_with("v.toml:4:"), "{e}");
        let e = VendorRules::parse("v.toml", "[vendored]\npatterns = []\n[generated]\npatterns = []\n[lock_files]\nnames = ['a/b.lock']\n").unwrap_err();
        assert!(matches!(e, VendorRulesError::LockName { .. }), "{e}");
        let ok = VendorRules::parse("v.toml", "[vendored]\npatterns = ['x/']\n[generated]\npatterns = []\n[lock_files]\nnames = ['a.lock']\n").unwrap();
        assert_eq!(ok.len(), 2);
        assert_eq!(ok.matches("b/a.lock").lock, Some(1));
        assert_eq!(ok.matches("ba.lock"), BuiltinMatch::default());
    }

    #[test]
    fn gitattributes_lines_parse_as_git_reads_them() {
        let text = "\u{feff}# comment\n\
            vendor/ours.js -linguist-vendored\r\n\
            \tsrc/gen/** linguist-vendored\n\
            *.gen.ts linguist-generated=true text\n\
            a.js linguist-vendored=false linguist-generated\n\
            b.js !linguist-vendored\n\
            c.js linguist-vendored -linguist-vendored\n\
            \"with space/*.js\" linguist-vendored\n\
            \"q\\\\\\101.js\" linguist-vendored\n\
            !neg.js linguist-vendored\n\
            bad.js linguist-vendored in/valid\n\
            [attr]third linguist-vendored\n\
            *.sh text eol=lf\n\
            \n";
        let lines = parse_gitattributes(text);
        let got: Vec<(usize, &str, Option<AttrState>, Option<AttrState>)> = lines
            .iter()
            .map(|l| (l.line, l.pattern.as_str(), l.vendored, l.generated))
            .collect();
        use AttrState::{Set, Unset, Unspecified};
        assert_eq!(
            got,
            vec![
                (2, "vendor/ours.js", Some(Unset), None),
                (3, "src/gen/**", Some(Set), None),
                (4, "*.gen.ts", None, Some(Set)),
                (5, "a.js", Some(Unset), Some(Set)),
                (6, "b.js", Some(Unspecified), None),
                (7, "c.js", Some(Unset), None),
                (8, "with space/*.js", Some(Set), None),
                (9, "q\\A.js", Some(Set), None),
            ]
        );
        let long = format!(
            "{} linguist-vendored\nok.js linguist-vendored\n",
            "x".repeat(3000)
        );
        assert_eq!(parse_gitattributes(&long).len(), 1);
        assert_eq!(parse_gitattributes(&long)[0].line, 2);
        // An unterminated quote: git reads the pattern unquoted.
        assert_eq!(
            parse_gitattributes("\"a.js linguist-vendored")[0].pattern,
            "\"a.js"
        );
    }

    #[test]
    fn gitattributes_patterns_become_globs_by_gits_rules() {
        let cases = [
            ("", "*.js", Some("**/*.js")),
            ("", "/vendor/*.js", Some("vendor/*.js")),
            ("", "src/gen/**", Some("src/gen/**")),
            ("web", "*.js", Some("web/**/*.js")),
            ("web", "lib/*.js", Some("web/lib/*.js")),
            ("web", "/lib/**/x.js", Some("web/lib/**/x.js")),
            ("", "a**b/c", Some("a*b/c")),
            ("", "**/gen/**", Some("**/gen/**")),
            ("", "{a,b}.js", Some("**/[{]a,b[}].js")),
            ("", "[^a]x.js", Some("**/[!a]x.js")),
            ("", "vendor/", None),
            ("", "[ab.js", None),
            ("", "a\\", None),
            ("d[1]", "x.js", Some("d[[]1[]]/**/x.js")),
        ];
        for (dir, pattern, glob) in cases {
            assert_eq!(
                attr_glob(dir, pattern).as_deref(),
                glob,
                "{dir:?} {pattern:?}"
            );
        }
    }

    #[test]
    fn vendored_and_generated_files_are_skipped_with_their_rule() {
        let dir = tree(&[
            ("src/app.js", b"x"),
            ("vendor/lib.js", b"x"),
            ("static/js/libs/jquery-ui-1.10.4.js", b"x"),
            ("web/app.min.js", b"x"),
            ("api/x.pb.go", b"x"),
            ("Cargo.lock", b"x"),
            ("vendor/logo.png", b"\x89PNG"),
        ]);
        let inv = walk(dir.path(), &InventoryOptions::default()).unwrap();
        assert_eq!(files(&inv), vec!["src/app.js"]);
        assert_eq!(
            reasons(&inv),
            vec![
                ("Cargo.lock", "generated (lock file `Cargo.lock`; a `Cargo.lock -linguist-generated` line in .gitattributes audits it)".to_string()),
                ("api/x.pb.go", "generated (Linguist rule `\\.pb\\.(go|cc|h|swift)$`; --include-vendored audits it)".to_string()),
                ("static/js/libs/jquery-ui-1.10.4.js", "vendored (Linguist rule `(^|/)jquery\\-ui(\\-\\d\\.\\d+(\\.\\d+)?)?(\\.\\w+)?\\.(js|css)$`; --include-vendored audits it)".to_string()),
                ("vendor/lib.js", "vendored (Linguist rule `(^|/)[Vv]endors?/`; --include-vendored audits it)".to_string()),
                ("vendor/logo.png", "vendored (Linguist rule `(^|/)[Vv]endors?/`; --include-vendored audits it)".to_string()),
                ("web/app.min.js", "generated (Linguist rule `(\\.|-)min\\.(js|css)$`; --include-vendored audits it)".to_string()),
            ]
        );
        // --include-vendored: vendored and generated come back (the image
        // is still binary), the lock file stays.
        let options = InventoryOptions {
            include_vendored: true,
            ..InventoryOptions::default()
        };
        let inv = walk(dir.path(), &options).unwrap();
        assert_eq!(
            files(&inv),
            vec![
                "api/x.pb.go",
                "src/app.js",
                "static/js/libs/jquery-ui-1.10.4.js",
                "vendor/lib.js",
                "web/app.min.js"
            ]
        );
        let skipped: Vec<(&str, &SkipReason)> = inv
            .skipped
            .iter()
            .map(|s| (s.path.as_str(), &s.reason))
            .collect();
        assert_eq!(
            skipped,
            vec![
                (
                    "Cargo.lock",
                    &SkipReason::Generated {
                        rule: "Cargo.lock".into(),
                        source: RuleSource::LockFile
                    }
                ),
                ("vendor/logo.png", &SkipReason::Binary),
            ]
        );
    }

    #[test]
    fn gitattributes_override_the_list_both_ways_nested_and_later_lines_win() {
        let dir = tree(&[
            (
                ".gitattributes",
                b"# ours\nvendor/ours.js -linguist-vendored\nsrc/gen/** linguist-vendored\n*.snap linguist-generated\nkeep.snap linguist-generated=false\nCargo.lock -linguist-generated\n",
            ),
            ("vendor/ours.js", b"x"),
            ("vendor/theirs.js", b"x"),
            ("src/gen/api.rs", b"x"),
            ("src/gen/deep/more.rs", b"x"),
            ("src/main.rs", b"x"),
            ("a/b/x.snap", b"x"),
            ("a/keep.snap", b"x"),
            ("Cargo.lock", b"x"),
            ("web/.gitattributes", b"lib/*.js linguist-vendored\nlib/mine.js !linguist-vendored\nnode_modules/** linguist-vendored=false\n"),
            ("web/lib/theirs.js", b"x"),
            ("web/lib/mine.js", b"x"),
            ("web/lib/deeper/x.js", b"x"),
            ("web/node_modules/ours/index.js", b"x"),
            ("lib/theirs.js", b"x"),
        ]);
        let inv = walk(dir.path(), &InventoryOptions::default()).unwrap();
        assert_eq!(
            files(&inv),
            vec![
                ".gitattributes",
                "Cargo.lock",
                "a/keep.snap",
                "lib/theirs.js",
                "src/main.rs",
                "vendor/ours.js",
                "web/.gitattributes",
                "web/lib/deeper/x.js",
                "web/lib/mine.js",
                "web/node_modules/ours/index.js",
            ]
        );
        assert_eq!(
            reasons(&inv),
            vec![
                (
                    "a/b/x.snap",
                    "generated (.gitattributes:4 `*.snap`; --include-vendored audits it)"
                        .to_string()
                ),
                (
                    "src/gen/api.rs",
                    "vendored (.gitattributes:3 `src/gen/**`; --include-vendored audits it)"
                        .to_string()
                ),
                (
                    "src/gen/deep/more.rs",
                    "vendored (.gitattributes:3 `src/gen/**`; --include-vendored audits it)"
                        .to_string()
                ),
                (
                    "vendor/theirs.js",
                    "vendored (Linguist rule `(^|/)[Vv]endors?/`; --include-vendored audits it)"
                        .to_string()
                ),
                (
                    "web/lib/theirs.js",
                    "vendored (web/.gitattributes:1 `lib/*.js`; --include-vendored audits it)"
                        .to_string()
                ),
            ]
        );
        let options = InventoryOptions {
            include_vendored: true,
            ..InventoryOptions::default()
        };
        let inv = walk(dir.path(), &options).unwrap();
        assert!(inv.skipped.is_empty(), "{:?}", inv.skipped);
    }

    #[test]
    fn gitattributes_count_even_when_the_walk_leaves_them_out() {
        let dir = tree(&[
            (".gitattributes", b"src/gen/** linguist-vendored\n"),
            ("src/gen/api.rs", b"x"),
            ("src/main.rs", b"x"),
        ]);
        for options in [
            InventoryOptions {
                hidden: false,
                ..InventoryOptions::default()
            },
            InventoryOptions {
                include: vec!["src/**".into()],
                ..InventoryOptions::default()
            },
        ] {
            let inv = walk(dir.path(), &options).unwrap();
            assert_eq!(files(&inv), vec!["src/main.rs"]);
            assert_eq!(inv.skipped[0].path, "src/gen/api.rs");
        }
    }

    #[test]
    fn a_malformed_or_non_utf8_gitattributes_is_read_as_git_would() {
        let dir = tree(&[
            (".gitattributes", b"\xff\xfe garbage\n[unclosed linguist-vendored\n!x linguist-vendored\ngen/\xe9*.rs linguist-generated\n\"bad\\q\" linguist-vendored\nsrc/** linguist-vendored bad/name\nx linguist-vendored\n"),
            ("gen/été.rs", b"x"),
            ("src/a.rs", b"x"),
            ("x", b"x"),
        ]);
        let inv = walk(dir.path(), &InventoryOptions::default()).unwrap();
        assert_eq!(
            files(&inv),
            vec![".gitattributes", "gen/été.rs", "src/a.rs"]
        );
        assert_eq!(
            reasons(&inv),
            vec![(
                "x",
                "vendored (.gitattributes:7 `x`; --include-vendored audits it)".to_string()
            )]
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_symlinked_gitattributes_is_not_followed() {
        let dir = tree(&[("attrs", b"*.rs linguist-vendored\n"), ("a.rs", b"x")]);
        std::os::unix::fs::symlink(dir.path().join("attrs"), dir.path().join(".gitattributes"))
            .unwrap();
        let inv = walk(dir.path(), &InventoryOptions::default()).unwrap();
        assert_eq!(files(&inv), vec!["a.rs", "attrs"]);
    }

    #[test]
    fn new_skip_reasons_serialize_flat_and_round_trip() {
        let cases = [
            (
                Skipped {
                    path: "vendor/a.js".into(),
                    reason: SkipReason::Vendored {
                        rule: "(^|/)[Vv]endors?/".into(),
                        source: RuleSource::Linguist,
                    },
                },
                r#"{"path":"vendor/a.js","reason":"vendored","rule":"(^|/)[Vv]endors?/","source":"linguist"}"#,
            ),
            (
                Skipped {
                    path: "src/gen/x.rs".into(),
                    reason: SkipReason::Vendored {
                        rule: "gen/**".into(),
                        source: RuleSource::Gitattributes {
                            file: "src/.gitattributes".into(),
                            line: 3,
                        },
                    },
                },
                r#"{"path":"src/gen/x.rs","reason":"vendored","rule":"gen/**","source":"src/.gitattributes:3"}"#,
            ),
            (
                Skipped {
                    path: "Cargo.lock".into(),
                    reason: SkipReason::Generated {
                        rule: "Cargo.lock".into(),
                        source: RuleSource::LockFile,
                    },
                },
                r#"{"path":"Cargo.lock","reason":"generated","rule":"Cargo.lock","source":"lock_file"}"#,
            ),
        ];
        for (skipped, json) in cases {
            assert_eq!(serde_json::to_string(&skipped).unwrap(), json);
            assert_eq!(serde_json::from_str::<Skipped>(json).unwrap(), skipped);
        }
        assert!(
            serde_json::from_str::<Skipped>(
                r#"{"path":"a","reason":"vendored","rule":"x","source":"nowhere"}"#
            )
            .is_err()
        );
        assert_eq!(
            SkipReason::Vendored {
                rule: "src/gen/**".into(),
                source: RuleSource::Gitattributes {
                    file: ".gitattributes".into(),
                    line: 3
                }
            }
            .to_string(),
            "vendored (.gitattributes:3 `src/gen/**`; --include-vendored audits it)"
        );
    }
}
