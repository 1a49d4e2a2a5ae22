//! Inventory: walking the repository.
//!
//! Takes the root and [`InventoryOptions`]; gives an [`Inventory`]: every
//! file to audit (repo-relative `/` path, bytes, language, estimated tokens)
//! and every file skipped with its reason, both sorted by path. Uses the
//! `ignore` crate's parallel walker: `.gitignore`, `.ignore`, git's global
//! excludes and `.fanscanignore` are honoured; hidden files are included
//! (CI workflows and `.env` files are prime audit targets) but `.git` never
//! is; symlinks are never followed.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use ignore::overrides::OverrideBuilder;
use ignore::{WalkBuilder, WalkState};
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
}

impl Default for InventoryOptions {
    fn default() -> Self {
        Self {
            hidden: true,
            max_file_bytes: 1024 * 1024,
            include: Vec::new(),
            exclude: Vec::new(),
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
    /// A lock file or minified bundle: generated, not written by people.
    Generated,
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
            Self::Generated => f.write_str("generated (lock file or minified bundle)"),
            Self::Symlink => f.write_str("symlink (not followed)"),
            Self::Unreadable { error } => write!(f, "unreadable: {error}"),
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
    pub root: PathBuf,
    pub files: Vec<FileEntry>,
    pub skipped: Vec<Skipped>,
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
    #[error("invalid --include/--exclude glob {glob:?}: {error}")]
    Glob { glob: String, error: String },
}

enum Item {
    File(FileEntry),
    Skip(Skipped),
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
    let walker = WalkBuilder::new(&root)
        .hidden(!options.hidden)
        .follow_links(false)
        .require_git(false)
        .add_custom_ignore_filename(".fanscanignore")
        .overrides(overrides)
        .filter_entry(|e| e.file_name() != ".git")
        .build_parallel();
    let (tx, rx) = mpsc::channel::<Item>();
    let max = options.max_file_bytes;
    walker.run(|| {
        let tx = tx.clone();
        let root = root.clone();
        Box::new(move |entry| {
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if entry.depth() == 0 {
                return WalkState::Continue;
            }
            let Some(kind) = entry.file_type() else {
                return WalkState::Continue;
            };
            let Ok(rel) = entry.path().strip_prefix(&root) else {
                return WalkState::Continue;
            };
            let path = rel.to_string_lossy().replace('\\', "/");
            let item = if kind.is_symlink() {
                Item::Skip(Skipped {
                    path,
                    reason: SkipReason::Symlink,
                })
            } else if kind.is_file() {
                classify(entry.path(), path, entry.metadata().map(|m| m.len()), max)
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
    for item in rx {
        match item {
            Item::File(f) => inventory.files.push(f),
            Item::Skip(s) => inventory.skipped.push(s),
        }
    }
    inventory.files.sort_by(|a, b| a.path.cmp(&b.path));
    inventory.skipped.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(inventory)
}

fn classify(real: &Path, path: String, len: Result<u64, ignore::Error>, max: u64) -> Item {
    let bytes = match len {
        Ok(b) => b,
        Err(e) => {
            return Item::Skip(Skipped {
                path,
                reason: SkipReason::Unreadable {
                    error: e.to_string(),
                },
            });
        }
    };
    if bytes > max {
        return Item::Skip(Skipped {
            path,
            reason: SkipReason::TooLarge { bytes, limit: max },
        });
    }
    let language = language_of(&path);
    let extension = extension(&path);
    let name = path.rsplit('/').next().unwrap_or(&path);
    if GENERATED_NAMES.contains(&name) || name.ends_with(".min.js") || name.ends_with(".min.css") {
        return Item::Skip(Skipped {
            path,
            reason: SkipReason::Generated,
        });
    }
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

/// Generated files: auditing them costs tokens and finds nothing a person
/// wrote.
const GENERATED_NAMES: &[&str] = &[
    "Cargo.lock",
    "package-lock.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "poetry.lock",
    "Pipfile.lock",
    "composer.lock",
    "Gemfile.lock",
    "go.sum",
    "uv.lock",
    "bun.lockb",
    "flake.lock",
    "mix.lock",
    "pubspec.lock",
    "Podfile.lock",
    "packages.lock.json",
];

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
                ("Cargo.lock", &SkipReason::Generated),
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
}
