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
//! into a `RegexSet`) and the `linguist-vendored` / `linguist-generated`
//! attributes of the root's and nested `.gitattributes` files, which
//! override the list in both directions. `--include-vendored` audits them,
//! lock files excepted.
//!
//! Layout: `walk` runs the walker and classifies each entry, `vendor` holds
//! the built-in list and the vendored/generated decision, `gitattributes`
//! reads and matches `.gitattributes` files. This file holds the types the
//! other stages see.

mod gitattributes;
mod vendor;
mod walk;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub(crate) use vendor::VendorRulesError;
pub use walk::walk;

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

#[cfg(test)]
mod tests {
    use super::*;

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
