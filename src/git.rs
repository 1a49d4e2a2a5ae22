//! Git, through the `git` command: the files a change touched, and files
//! as they are at a ref.
//!
//! Takes a repository root and a ref; gives a [`ChangeSet`] (from
//! `git diff --name-status -z --merge-base REF`, or from a list a CI
//! system wrote) and the text of files at the ref (`git show REF:path`).
//! No git crate: the `git` every CI runner has is enough, and its
//! behaviour (rename detection, `--merge-base`) is the one users know.

use std::path::Path;
use std::process::Command;

use serde::{Deserialize, Serialize};

/// Git could not answer.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("cannot run git ({0}); --since needs git on the PATH, or pass --changed-files FILE")]
    Spawn(#[source] std::io::Error),
    #[error("`git {args}` failed: {stderr}")]
    Failed { args: String, stderr: String },
    #[error("--changed-files {path}: {error}")]
    List { path: String, error: std::io::Error },
    #[error("{path}: cannot read: {error}")]
    Read { path: String, error: std::io::Error },
}

/// Where the repository's own fanscan configuration (fanscan.toml, rules,
/// `.fanscan/agents/`) is read from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ConfigOrigin {
    /// The working tree (no `--since`, or `--trust-worktree-config`).
    #[default]
    Worktree,
    /// The base ref of a diff scan: the change under review cannot steer it.
    BaseRef(String),
}

impl ConfigOrigin {
    /// How the manifest names it.
    pub fn describe(&self) -> String {
        match self {
            Self::Worktree => "working tree".into(),
            Self::BaseRef(r) => format!("base ref {r}"),
        }
    }

    /// The text of repository file `rel` (`/`-separated), `None` when it
    /// does not exist there.
    pub(crate) fn read(&self, root: &Path, rel: &str) -> Result<Option<String>, GitError> {
        match self {
            Self::Worktree => {
                let path = root.join(rel);
                if !path.is_file() {
                    return Ok(None);
                }
                std::fs::read_to_string(&path)
                    .map(Some)
                    .map_err(|error| GitError::Read {
                        path: path.display().to_string(),
                        error,
                    })
            }
            Self::BaseRef(r) => show(root, r, rel),
        }
    }
}

/// The files a change touched.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeSet {
    /// What the set was computed from, e.g. `git diff --merge-base origin/main`.
    pub source: String,
    /// The base ref, when there is one.
    pub base: Option<String>,
    /// Added, modified and renamed-to paths, sorted.
    pub changed: Vec<String>,
    /// Renames as (from, to).
    pub renamed: Vec<(String, String)>,
    /// Deleted paths, sorted.
    pub deleted: Vec<String>,
}

impl ChangeSet {
    /// Whether `path` was added, modified or renamed to.
    pub fn contains(&self, path: &str) -> bool {
        self.changed
            .binary_search_by(|p| p.as_str().cmp(path))
            .is_ok()
    }

    /// Every path the change touched: changed, renamed-from and deleted.
    pub fn touched(&self) -> impl Iterator<Item = &str> {
        self.changed
            .iter()
            .map(String::as_str)
            .chain(self.renamed.iter().map(|(from, _)| from.as_str()))
            .chain(self.deleted.iter().map(String::as_str))
    }
}

fn git(root: &Path, args: &[&str]) -> Result<Vec<u8>, GitError> {
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(args)
        .output()
        .map_err(GitError::Spawn)?;
    if !out.status.success() {
        return Err(GitError::Failed {
            args: args.join(" "),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(out.stdout)
}

/// The files changed between the merge base of `base` and HEAD, and the
/// working tree: a pull request's own changes, uncommitted edits included,
/// and never the base branch's newer commits. Untracked files are not
/// part of it (commit them, or list them with --changed-files).
pub(crate) fn diff(root: &Path, base: &str) -> Result<ChangeSet, GitError> {
    if base.starts_with('-') {
        return Err(GitError::Failed {
            args: format!("diff {base}"),
            stderr: "a ref may not start with '-'".into(),
        });
    }
    let args = [
        "diff",
        "--name-status",
        "-z",
        "--find-renames",
        "--no-ext-diff",
        "--relative",
        "--merge-base",
        base,
        "--",
    ];
    let out = git(root, &args)?;
    let mut set = parse_name_status(&out);
    set.source = format!("git diff --name-status --merge-base {base}");
    set.base = Some(base.to_string());
    Ok(set)
}

/// Parses `git diff --name-status -z`: `M\0path\0`, `R100\0from\0to\0`.
pub(crate) fn parse_name_status(out: &[u8]) -> ChangeSet {
    let mut fields = out
        .split(|b| *b == 0)
        .map(|f| String::from_utf8_lossy(f).into_owned());
    let mut set = ChangeSet::default();
    while let Some(status) = fields.next() {
        let Some(kind) = status.chars().next() else {
            continue;
        };
        match kind {
            'R' | 'C' => {
                let (Some(from), Some(to)) = (fields.next(), fields.next()) else {
                    break;
                };
                if kind == 'R' {
                    set.renamed.push((from, to.clone()));
                }
                set.changed.push(to);
            }
            'D' => {
                if let Some(path) = fields.next() {
                    set.deleted.push(path);
                }
            }
            _ => {
                if let Some(path) = fields.next() {
                    set.changed.push(path);
                }
            }
        }
    }
    set.changed.sort();
    set.changed.dedup();
    set.deleted.sort();
    set.renamed.sort();
    set
}

/// A list of changed files, one repository-relative path a line (blank
/// lines and `#` comments ignored), as CI systems provide it. Listed
/// files that no longer exist count as deleted.
pub(crate) fn changed_files(root: &Path, list: &Path) -> Result<ChangeSet, GitError> {
    let text = std::fs::read_to_string(list).map_err(|error| GitError::List {
        path: list.display().to_string(),
        error,
    })?;
    let mut set = ChangeSet {
        source: format!("--changed-files {}", list.display()),
        ..ChangeSet::default()
    };
    for line in text.lines() {
        let path = line.trim().trim_start_matches("./").replace('\\', "/");
        if path.is_empty() || path.starts_with('#') {
            continue;
        }
        if root.join(&path).exists() {
            set.changed.push(path);
        } else {
            set.deleted.push(path);
        }
    }
    set.changed.sort();
    set.changed.dedup();
    set.deleted.sort();
    set.deleted.dedup();
    Ok(set)
}

/// The text of `rel` at `reference`, `None` when the file is not there.
pub(crate) fn show(root: &Path, reference: &str, rel: &str) -> Result<Option<String>, GitError> {
    // `REF:./path` is relative to the scan root, as `--relative` paths are.
    let spec = format!("{reference}:./{rel}");
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["cat-file", "-e", &spec])
        .output()
        .map_err(GitError::Spawn)?;
    if !out.status.success() {
        // Tell a missing file from a missing ref: the ref must resolve.
        git(root, &["rev-parse", "--verify", "--quiet", &format!("{reference}^{{commit}}")])
            .map_err(|_| GitError::Failed {
                args: format!("rev-parse {reference}"),
                stderr: format!("{reference:?} is not a commit of this repository (fetch it, e.g. `git fetch origin main`, or use fetch-depth: 0)"),
            })?;
        return Ok(None);
    }
    let bytes = git(root, &["show", &spec])?;
    Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
}

/// The file names under `dir` at `reference` (not recursive).
pub(crate) fn list(root: &Path, reference: &str, dir: &str) -> Result<Vec<String>, GitError> {
    let out = git(
        root,
        &[
            "ls-tree",
            "--name-only",
            "-z",
            reference,
            &format!("{dir}/"),
        ],
    )?;
    let mut names: Vec<String> = out
        .split(|b| *b == 0)
        .filter(|f| !f.is_empty())
        .map(|f| String::from_utf8_lossy(f).into_owned())
        .collect();
    names.sort();
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_status_handles_renames_copies_and_deletions() {
        let out =
            b"M\0src/a.rs\0R087\0old/b.rs\0new/b.rs\0D\0gone.rs\0A\0added.rs\0C100\0x.rs\0y.rs\0";
        let set = parse_name_status(out);
        assert_eq!(set.changed, ["added.rs", "new/b.rs", "src/a.rs", "y.rs"]);
        assert_eq!(set.renamed, [("old/b.rs".into(), "new/b.rs".into())]);
        assert_eq!(set.deleted, ["gone.rs"]);
        assert!(set.contains("new/b.rs") && !set.contains("old/b.rs"));
        let touched: Vec<&str> = set.touched().collect();
        assert!(touched.contains(&"old/b.rs") && touched.contains(&"gone.rs"));
    }

    #[test]
    fn truncated_output_never_panics() {
        assert!(parse_name_status(b"R100\0only-one").changed.is_empty());
        assert!(parse_name_status(b"").changed.is_empty());
    }

    #[test]
    fn a_changed_files_list_splits_present_and_deleted() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.rs"), "").unwrap();
        let list = dir.path().join("changed.txt");
        std::fs::write(&list, "# changed\n./a.rs\n\nb.rs\n").unwrap();
        let set = changed_files(dir.path(), &list).unwrap();
        assert_eq!(set.changed, ["a.rs"]);
        assert_eq!(set.deleted, ["b.rs"]);
    }
}
