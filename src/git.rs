//! Git, through the `git` command: the files a change touched, and files
//! as they are at a ref.
//!
//! Takes a repository root and a ref; gives a [`ChangeSet`] (from
//! `git diff --name-status -z --merge-base REF`, or from a list a CI
//! system wrote) and the text of files at the ref (`git show REF:path`).
//! No git crate: the `git` every CI runner has is enough, and its
//! behaviour (rename detection, `--merge-base`) is the one users know.

use std::collections::BTreeMap;
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

/// The lines of one file that a diff shows on its new side: where a
/// review may comment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct FileHunks {
    /// The file's path before the change (its own path unless renamed).
    pub(crate) old_path: String,
    /// Each hunk's new-side lines, first to last (inclusive).
    pub(crate) hunks: Vec<(u32, u32)>,
    /// Every new-side line the hunks show: its old line when it is
    /// context, none when the change added it.
    pub(crate) lines: BTreeMap<u32, Option<u32>>,
}

/// The hunks of a diff by new path (repository-relative): parsed from
/// `git diff --unified=3`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Hunks {
    pub(crate) files: BTreeMap<String, FileHunks>,
}

impl Hunks {
    /// The hunk that holds every line from `start` to `end` of `path`.
    pub(crate) fn hunk_of(&self, path: &str, start: u32, end: u32) -> Option<(u32, u32)> {
        self.files
            .get(path)?
            .hunks
            .iter()
            .copied()
            .find(|(first, last)| *first <= start && end <= *last)
    }
}

/// Parses a unified diff (`git diff` with `a/` and `b/` prefixes, paths
/// quoted or not): the new side of every hunk. Deleted files have none; a
/// hunk that only removes lines shows no new line.
pub(crate) fn parse_hunks(diff: &str) -> Hunks {
    let mut out = Hunks::default();
    let mut old: Option<String> = None;
    let mut current: Option<String> = None;
    // The next old and new line numbers inside a hunk, and what is left.
    let (mut old_line, mut new_line, mut old_left, mut new_left) = (0u32, 0u32, 0u32, 0u32);
    for line in diff.lines() {
        if old_left > 0 || new_left > 0 {
            match line.as_bytes().first() {
                Some(b'+') => {
                    if let Some(file) = current.as_ref().and_then(|c| out.files.get_mut(c)) {
                        file.lines.insert(new_line, None);
                    }
                    new_line += 1;
                    new_left = new_left.saturating_sub(1);
                    continue;
                }
                Some(b'-') => {
                    old_line += 1;
                    old_left = old_left.saturating_sub(1);
                    continue;
                }
                Some(b' ') | None => {
                    if let Some(file) = current.as_ref().and_then(|c| out.files.get_mut(c)) {
                        file.lines.insert(new_line, Some(old_line));
                    }
                    old_line += 1;
                    new_line += 1;
                    old_left = old_left.saturating_sub(1);
                    new_left = new_left.saturating_sub(1);
                    continue;
                }
                // `\ No newline at end of file`
                Some(b'\\') => continue,
                Some(_) => {
                    old_left = 0;
                    new_left = 0;
                }
            }
        }
        if line.starts_with("diff --git ") {
            old = None;
            current = None;
        } else if let Some(path) = line.strip_prefix("--- ") {
            old = side_path(path, "a/");
        } else if let Some(path) = line.strip_prefix("+++ ") {
            current = side_path(path, "b/");
            if let Some(new) = &current {
                out.files.entry(new.clone()).or_insert_with(|| FileHunks {
                    old_path: old.clone().unwrap_or_else(|| new.clone()),
                    ..FileHunks::default()
                });
            }
        } else if line.starts_with("\\") {
            continue;
        } else if let Some(rest) = line.strip_prefix("@@ -") {
            let Some((old_range, rest)) = rest.split_once(" +") else {
                continue;
            };
            let Some((new_range, _)) = rest.split_once(" @@") else {
                continue;
            };
            let (o_start, o_len) = range(old_range);
            let (n_start, n_len) = range(new_range);
            (old_line, new_line, old_left, new_left) = (o_start, n_start, o_len, n_len);
            if n_len > 0
                && let Some(file) = current.as_ref().and_then(|c| out.files.get_mut(c))
            {
                file.hunks.push((n_start, n_start + n_len - 1));
            }
        }
    }
    out
}

/// `12,3` → (12, 3); `12` → (12, 1).
fn range(text: &str) -> (u32, u32) {
    let (start, len) = text.split_once(',').unwrap_or((text, "1"));
    (start.parse().unwrap_or(0), len.parse().unwrap_or(0))
}

/// The path of a `---`/`+++` line without its prefix; none for
/// `/dev/null`. Git quotes a path with unusual bytes in C style.
fn side_path(text: &str, prefix: &str) -> Option<String> {
    let text = text.trim_end_matches('\t');
    let path = if text.starts_with('"') {
        unquote(text)
    } else {
        text.to_string()
    };
    if path == "/dev/null" {
        return None;
    }
    Some(path.strip_prefix(prefix).unwrap_or(&path).to_string())
}

/// Undoes git's C-style quoting: `"a\tb\303\251"`.
fn unquote(text: &str) -> String {
    let inner = text
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(text);
    let mut bytes = Vec::with_capacity(inner.len());
    let mut chars = inner.bytes().peekable();
    while let Some(b) = chars.next() {
        if b != b'\\' {
            bytes.push(b);
            continue;
        }
        match chars.next() {
            Some(b'n') => bytes.push(b'\n'),
            Some(b't') => bytes.push(b'\t'),
            Some(b'r') => bytes.push(b'\r'),
            Some(b'a') => bytes.push(7),
            Some(b'b') => bytes.push(8),
            Some(b'f') => bytes.push(12),
            Some(b'v') => bytes.push(11),
            Some(d @ b'0'..=b'7') => {
                let mut value = u32::from(d - b'0');
                for _ in 0..2 {
                    match chars.peek() {
                        Some(n @ b'0'..=b'7') => {
                            value = value * 8 + u32::from(n - b'0');
                            chars.next();
                        }
                        _ => break,
                    }
                }
                bytes.push(u8::try_from(value).unwrap_or(b'?'));
            }
            Some(other) => bytes.push(other),
            None => bytes.push(b'\\'),
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// What a review of a change needs from git: the commits it is anchored
/// to, where the scan root sits in the repository, and the diff's hunks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ReviewDiff {
    /// The base ref as given (`origin/main`).
    pub(crate) base_ref: String,
    /// `HEAD`'s commit: the review's `commit_id`.
    pub(crate) head_sha: String,
    /// The merge base of the base ref and `HEAD`.
    pub(crate) merge_base_sha: String,
    /// The base ref's commit.
    pub(crate) base_sha: String,
    /// The scan root's path in the repository (`sub/dir/`, empty at the
    /// top): report paths are relative to the root, a review's to the
    /// repository.
    pub(crate) prefix: String,
    /// `git diff --unified=3 BASE...HEAD`, parsed.
    pub(crate) hunks: Hunks,
}

/// The commits and hunks of `base...HEAD` in the repository at `root`.
pub(crate) fn review_diff(root: &Path, base: &str) -> Result<ReviewDiff, GitError> {
    if base.starts_with('-') {
        return Err(GitError::Failed {
            args: format!("diff {base}"),
            stderr: "a ref may not start with '-'".into(),
        });
    }
    let text = |args: &[&str]| -> Result<String, GitError> {
        Ok(String::from_utf8_lossy(&git(root, args)?)
            .trim()
            .to_string())
    };
    let head_sha = text(&["rev-parse", "--verify", "HEAD^{commit}"])?;
    let base_sha = text(&["rev-parse", "--verify", &format!("{base}^{{commit}}")])?;
    let merge_base_sha = text(&["merge-base", base, "HEAD"])?;
    let prefix = text(&["rev-parse", "--show-prefix"])?;
    let range = format!("{base}...HEAD");
    let out = git(
        root,
        &[
            "-c",
            "core.quotePath=false",
            "diff",
            "--unified=3",
            "--no-color",
            "--no-ext-diff",
            "--find-renames",
            "--src-prefix=a/",
            "--dst-prefix=b/",
            &range,
            "--",
        ],
    )?;
    Ok(ReviewDiff {
        base_ref: base.to_string(),
        head_sha,
        merge_base_sha,
        base_sha,
        prefix,
        hunks: parse_hunks(&String::from_utf8_lossy(&out)),
    })
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

    #[test]
    fn hunks_give_the_new_side_with_context_and_added_lines() {
        let diff = "diff --git a/src/a.rs b/src/a.rs\nindex 1..2 100644\n--- a/src/a.rs\n+++ b/src/a.rs\n@@ -1,4 +1,5 @@\n fn a() {\n-    old();\n+    new();\n+    more();\n }\n \n@@ -20,3 +21,0 @@ fn b()\n-x\n-y\n-z\ndiff --git a/old.py b/new.py\nsimilarity index 90%\nrename from old.py\nrename to new.py\n--- a/old.py\n+++ b/new.py\n@@ -3 +3 @@\n-a\n+b\n\\ No newline at end of file\ndiff --git a/gone.rs b/gone.rs\ndeleted file mode 100644\n--- a/gone.rs\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a\n-b\ndiff --git a/added.rs b/added.rs\nnew file mode 100644\n--- /dev/null\n+++ b/added.rs\n@@ -0,0 +1,2 @@\n+x\n+y\n";
        let hunks = parse_hunks(diff);
        let a = &hunks.files["src/a.rs"];
        assert_eq!(a.hunks, [(1, 5)], "a hunk removing only lines shows none");
        assert_eq!(a.lines[&1], Some(1));
        assert_eq!(a.lines[&2], None);
        assert_eq!(a.lines[&3], None);
        assert_eq!(a.lines[&4], Some(3));
        assert_eq!(a.lines[&5], Some(4));
        assert_eq!(hunks.files["new.py"].old_path, "old.py");
        assert_eq!(hunks.files["new.py"].hunks, [(3, 3)]);
        assert!(!hunks.files.contains_key("gone.rs"));
        assert_eq!(hunks.files["added.rs"].old_path, "added.rs");
        assert_eq!(hunks.hunk_of("added.rs", 1, 2), Some((1, 2)));
        assert_eq!(hunks.hunk_of("src/a.rs", 4, 6), None, "past the hunk");
        assert_eq!(hunks.hunk_of("src/b.rs", 1, 1), None);
    }

    #[test]
    fn quoted_paths_are_unquoted() {
        let diff = "diff --git \"a/t\\303\\251st \\\"q\\\".rs\" \"b/t\\303\\251st \\\"q\\\".rs\"\n--- \"a/t\\303\\251st \\\"q\\\".rs\"\n+++ \"b/t\\303\\251st \\\"q\\\".rs\"\n@@ -1 +1,2 @@\n a\n+b\n";
        let hunks = parse_hunks(diff);
        assert_eq!(
            hunks.files.keys().collect::<Vec<_>>(),
            ["té\u{73}t \"q\".rs"]
        );
    }

    #[test]
    fn a_hunk_header_inside_a_hunk_body_is_content() {
        // A removed line that reads like a header belongs to the hunk.
        let diff = "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n---- a/y\n++++ b/y\n context\n";
        let hunks = parse_hunks(diff);
        assert_eq!(hunks.files.keys().collect::<Vec<_>>(), ["x"]);
        assert_eq!(hunks.files["x"].lines.len(), 2);
    }
}
