//! The walk itself: the `ignore` crate's parallel walker over the root,
//! git's ignore rules above it, size and binary checks, and the vendored
//! decision applied once every `.gitattributes` file is read.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use ignore::overrides::OverrideBuilder;
use ignore::{WalkBuilder, WalkState};

use super::gitattributes::{AttrFile, Attributes, read_gitattributes};
use super::vendor::{BuiltinMatch, Decide, VendorRules};
use super::{FileEntry, Inventory, InventoryError, InventoryOptions, SkipReason, Skipped};
use crate::util::language::{extension, language_of};

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
    let root = canonical_root(root)?;
    let rules = VendorRules::builtin()?;
    let mut builder = walk_builder(&root, options)?;
    if let Some(tree) = WorkTree::find(&root) {
        tree.add_rules_above(&mut builder, &root);
    }
    let visit = Visit {
        rules,
        max: options.max_file_bytes,
        include_vendored: options.include_vendored,
    };
    let (items, attribute_files) = collect(&root, visit.run(&root, builder))?;
    let decide = Decide {
        rules,
        attributes: Attributes::build(attribute_files),
        include_vendored: options.include_vendored,
    };
    let mut inventory = Inventory {
        root,
        ..Inventory::default()
    };
    let mut scratch = Vec::new();
    for item in items {
        match settle(&decide, item, &inventory.root, visit.max, &mut scratch) {
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

/// The root, canonical, or why it cannot be walked.
fn canonical_root(root: &Path) -> Result<PathBuf, InventoryError> {
    let shown = root.display().to_string();
    let meta = std::fs::metadata(root).map_err(|_| InventoryError::Missing {
        path: shown.clone(),
    })?;
    if !meta.is_dir() {
        return Err(InventoryError::NotADirectory { path: shown });
    }
    root.canonicalize()
        .map_err(|_| InventoryError::Missing { path: shown })
}

/// The walker over `root` with the options' globs and git's rules in the
/// root and below.
fn walk_builder(root: &Path, options: &InventoryOptions) -> Result<WalkBuilder, InventoryError> {
    let mut overrides = OverrideBuilder::new(root);
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
    let mut builder = WalkBuilder::new(root);
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
    Ok(builder)
}

/// What each walker thread does with an entry.
#[derive(Clone, Copy)]
struct Visit {
    rules: &'static VendorRules,
    max: u64,
    include_vendored: bool,
}

impl Visit {
    /// Runs the parallel walk; every entry's item arrives on the channel.
    fn run(self, root: &Path, builder: WalkBuilder) -> mpsc::Receiver<Item> {
        let (tx, rx) = mpsc::channel::<Item>();
        builder.build_parallel().run(|| {
            let tx = tx.clone();
            let root = root.to_path_buf();
            Box::new(move |entry| {
                if let Some(item) = self.entry(&root, entry) {
                    let _ = tx.send(item);
                }
                WalkState::Continue
            })
        });
        rx
    }

    /// The item of one walked entry, if it makes one.
    fn entry(self, root: &Path, entry: Result<ignore::DirEntry, ignore::Error>) -> Option<Item> {
        let entry = match entry {
            Ok(entry) => entry,
            Err(error) => return walk_error(root, &error),
        };
        let kind = entry.file_type()?;
        let rel = entry.path().strip_prefix(root).ok()?;
        let path = rel.to_string_lossy().replace('\\', "/");
        // Every walked directory's `.gitattributes` is read here, not
        // when the walk yields it: hidden-file, --include and ignore
        // filters must not switch its rules off.
        if kind.is_dir() {
            return read_gitattributes(entry.path(), &path).map(Item::Attributes);
        }
        if entry.depth() == 0 {
            return None;
        }
        if kind.is_symlink() {
            return Some(Item::Skip(Skipped {
                path,
                reason: SkipReason::Symlink,
            }));
        }
        if !kind.is_file() {
            return None;
        }
        Some(match entry.metadata() {
            Ok(meta) => {
                let bytes = meta.len();
                let matched = self.rules.matches(&path);
                if matched.skips(self.include_vendored) {
                    Item::Listed {
                        path,
                        bytes,
                        matched,
                    }
                } else {
                    classify(entry.path(), path, bytes, self.max)
                }
            }
            Err(e) => Item::Skip(Skipped {
                path,
                reason: SkipReason::Unreadable {
                    error: e.to_string(),
                },
            }),
        })
    }
}

/// The walk's items, with the `.gitattributes` files apart; an error if
/// the root itself could not be listed.
fn collect(
    root: &Path,
    rx: mpsc::Receiver<Item>,
) -> Result<(Vec<Item>, Vec<AttrFile>), InventoryError> {
    let mut items = Vec::new();
    let mut attribute_files = Vec::new();
    for item in rx {
        match item {
            Item::Attributes(file) => attribute_files.push(file),
            Item::RootUnreadable(error) => {
                return Err(InventoryError::Unreadable {
                    path: root.display().to_string(),
                    error,
                });
            }
            other => items.push(other),
        }
    }
    Ok((items, attribute_files))
}

/// An item once every `.gitattributes` line is known: a file or a listed
/// one is skipped or audited.
fn settle(
    decide: &Decide<'_>,
    item: Item,
    root: &Path,
    max: u64,
    scratch: &mut Vec<usize>,
) -> Item {
    match item {
        // Not on the built-in list (or --include-vendored): only a
        // `.gitattributes` line can still skip it.
        Item::File(file) if !decide.attributes.is_empty() => {
            let attrs = decide.attributes.lookup(&file.path, scratch);
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
            let attrs = decide.attributes.lookup(&path, scratch);
            match decide.reason(matched, attrs) {
                Some(reason) => Item::Skip(Skipped { path, reason }),
                None => classify(&root.join(&path), path, bytes, max),
            }
        }
        other => other,
    }
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
    if language.is_none() && !known_text(&path, &extension) {
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

const BINARY_EXTENSIONS: &[&str] = &[
    "png", "jpg", "jpeg", "gif", "bmp", "ico", "webp", "tiff", "psd", "pdf", "zip", "gz", "tgz",
    "bz2", "xz", "zst", "7z", "rar", "tar", "jar", "war", "class", "so", "dylib", "dll", "exe",
    "o", "a", "lib", "obj", "bin", "wasm", "pyc", "pyo", "woff", "woff2", "ttf", "otf", "eot",
    "mp3", "mp4", "wav", "ogg", "flac", "mov", "avi", "mkv", "webm", "sqlite", "db", "rlib",
    "rmeta", "pack", "idx", "crate", "whl", "deb", "rpm", "dmg", "iso", "img", "parquet", "npy",
    "npz", "pt", "onnx", "h5",
];

/// Whether a file of no known language is text by convention, by its
/// extension (`notes.txt`), as a dotfile (`.gitignore`), or by a name
/// projects give their text files (`LICENSE-MIT`, `COPYING`, `AUTHORS`).
/// Such a file is not opened to be sniffed: on a tree of crates, licence
/// files and the like were most of the files the walk opened.
fn known_text(path: &str, extension: &str) -> bool {
    if TEXT_EXTENSIONS.contains(&extension) {
        return true;
    }
    let name = path.rsplit('/').next().unwrap_or(path);
    if let Some(rest) = name.strip_prefix('.')
        && TEXT_EXTENSIONS.contains(&rest.to_ascii_lowercase().as_str())
    {
        return true;
    }
    let upper = name.to_ascii_uppercase();
    TEXT_NAMES.iter().any(|known| {
        upper.strip_prefix(known).is_some_and(|rest| {
            rest.is_empty() || (rest.starts_with(['-', '_']) && !rest.contains('.'))
        })
    })
}

/// Names of text files by convention (upper case; a suffix such as `-MIT`
/// or `_APACHE` may follow, but no extension: `HISTORY.dat` is sniffed).
const TEXT_NAMES: &[&str] = &[
    "LICENSE",
    "LICENCE",
    "UNLICENSE",
    "COPYING",
    "COPYRIGHT",
    "NOTICE",
    "AUTHORS",
    "CONTRIBUTORS",
    "PATENTS",
    "README",
    "CHANGELOG",
    "CHANGES",
    "HISTORY",
    "NEWS",
    "TODO",
    "INSTALL",
    "CODEOWNERS",
    "OWNERS",
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
    "orig",
    "rej",
    "stderr",
    "stdout",
    "gitmodules",
    "npmignore",
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stages::inventory::RuleSource;

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
    fn text_by_convention_is_not_opened_and_anything_else_unknown_is_sniffed() {
        for (path, text) in [
            ("notes.txt", true),
            (".gitignore", true),
            ("a/.gitmodules", true),
            ("LICENSE", true),
            ("crate/LICENSE-MIT", true),
            ("license_apache", true),
            ("COPYING.LIB", false),
            ("HISTORY.dat", false),
            ("tests/ui/x.stderr", true),
            // An Ubuntu snap package is binary.
            ("src/snapshots/a.snap", false),
            ("Cargo.toml.orig", true),
            ("LICENSED_DATA", false),
            ("data.weird", false),
            ("blob", false),
            (".cargo-ok", false),
        ] {
            assert_eq!(known_text(path, &extension(path)), text, "{path}");
        }
        // A licence file that is binary after all goes in (the tools
        // refuse it when read); an unknown name is sniffed and skipped.
        let dir = tree(&[
            ("LICENSE", b"a\0b"),
            ("blob", b"a\0b"),
            ("x.s", b"mov r0, r1"),
        ]);
        let inv = walk(dir.path(), &InventoryOptions::default()).unwrap();
        let files: Vec<(&str, Option<&str>)> = inv
            .files
            .iter()
            .map(|f| (f.path.as_str(), f.language.as_deref()))
            .collect();
        assert_eq!(files, [("LICENSE", None), ("x.s", Some("assembly"))]);
        assert_eq!(inv.skipped[0].path, "blob");
        assert_eq!(inv.skipped[0].reason, SkipReason::Binary);
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
}
