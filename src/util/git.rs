//! Git, through the `git` command: the files a change touched, and files
//! as they are at a ref.
//!
//! Takes a repository root and a ref; gives a [`ChangeSet`] (from
//! `git diff --name-status -z --merge-base REF`, or from a list a CI
//! system wrote), the text of files at the ref (`git show REF:path`), and
//! the scanned tree's [`Checkout`] state (commit, branch, uncommitted
//! changes, `origin` without credentials) that every report names.
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

/// The state of the scanned tree in git, read once when a run is set up:
/// which commit a report's lines belong to, so that a reader can tell a
/// finding on a line that is not there (a fabrication) from a report of
/// another checkout. A tree outside git is a state too, never an error.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Checkout {
    /// The scan root is inside a git work tree.
    Git(GitCheckout),
    /// The scan root is in no git repository, or git is not on the PATH
    /// (the note says which).
    NotARepository {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    },
    /// The root is in a repository but git could not tell its state (a
    /// `safe.directory` refusal, a broken repository): the error says why.
    Unknown { error: String },
}

/// A git work tree's state.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GitCheckout {
    /// HEAD's commit, the full SHA; none on a branch with no commit yet.
    pub commit: Option<String>,
    /// The branch HEAD is on; none when HEAD is detached.
    pub branch: Option<String>,
    /// HEAD is detached (a CI checkout of a pull request or a tag).
    #[serde(default)]
    pub detached: bool,
    /// Tags that point at HEAD, sorted: the ref of a detached checkout.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Paths under the scan root whose tracked content differs from HEAD
    /// (staged or not, deletions and renames included).
    pub modified: usize,
    /// Files under the scan root that git does not track and does not
    /// ignore.
    pub untracked: usize,
    /// The URL of the `origin` remote, credentials removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_url: Option<String>,
    /// The scan root's path in the repository (`sub/dir/`, empty at the
    /// top): report paths are relative to the root.
    #[serde(default)]
    pub prefix: String,
}

impl GitCheckout {
    /// Whether the scanned files may differ from the commit.
    pub fn dirty(&self) -> bool {
        self.modified > 0 || self.untracked > 0
    }

    /// The commit's first 12 hex digits (git's abbreviation on large
    /// repositories), for text people read.
    pub fn short_commit(&self) -> Option<&str> {
        self.commit.as_deref().map(|c| c.get(..12).unwrap_or(c))
    }
}

impl Checkout {
    /// The state in one sentence without a final stop: `commit
    /// 0123456789ab on main (uncommitted changes: 1 modified file)`,
    /// `not a git repository`.
    pub fn describe(&self) -> String {
        match self {
            Self::Git(g) => {
                let mut out = match g.short_commit() {
                    Some(c) => format!("commit {c}"),
                    None => "no commit yet".to_string(),
                };
                match (&g.branch, g.detached) {
                    (Some(b), _) => out.push_str(&format!(" on {b}")),
                    (None, true) if g.tags.is_empty() => out.push_str(" (detached HEAD)"),
                    (None, _) => {
                        out.push_str(&format!(" (detached HEAD, tag {})", g.tags.join(", ")));
                    }
                }
                out.push_str(&match (g.modified, g.untracked) {
                    (0, 0) => ", no uncommitted changes".to_string(),
                    (m, 0) => format!(" (uncommitted changes: {})", files(m, "modified")),
                    (0, u) => format!(" (uncommitted changes: {})", files(u, "untracked")),
                    (m, u) => format!(
                        " (uncommitted changes: {}, {})",
                        files(m, "modified"),
                        files(u, "untracked")
                    ),
                });
                out
            }
            Self::NotARepository { note: None } => "not a git repository".into(),
            Self::NotARepository { note: Some(n) } => format!("not a git repository ({n})"),
            Self::Unknown { error } => format!("git state unknown: {error}"),
        }
    }

    /// The commit, when there is one.
    pub fn commit(&self) -> Option<&str> {
        match self {
            Self::Git(g) => g.commit.as_deref(),
            Self::NotARepository { .. } | Self::Unknown { .. } => None,
        }
    }
}

/// `2 modified files`, `1 untracked file`.
fn files(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what} file")
    } else {
        format!("{n} {what} files")
    }
}

/// Why git could not say what the tree is: a value of the report
/// ([`Checkout::Unknown`]), never a stopped run.
#[derive(Debug, thiserror::Error)]
enum CheckoutError {
    #[error("cannot run git: {0}")]
    Spawn(#[source] std::io::Error),
    #[error("`git {args}` failed: {stderr}")]
    Failed { args: String, stderr: String },
}

/// One git command for [`checkout`]: its exit code and output, in the C
/// locale so that "not a git repository" reads the same everywhere, and
/// without optional locks so that a scan never contends with the user's
/// own git commands for the index.
fn run_quiet(root: &Path, args: &[&str]) -> std::io::Result<std::process::Output> {
    Command::new("git")
        .arg("--no-optional-locks")
        .arg("-C")
        .arg(root)
        .args(args)
        .env("LC_ALL", "C")
        .output()
}

/// The state of the tree at `root`: its commit, branch, uncommitted
/// changes under `root` and `origin`'s URL; a tree outside git, or no git
/// on the PATH, is [`Checkout::NotARepository`]; anything else git
/// refuses is [`Checkout::Unknown`] with its error.
pub(crate) fn checkout(root: &Path) -> Checkout {
    let probe = match run_quiet(
        root,
        &["rev-parse", "--is-inside-work-tree", "--show-prefix"],
    ) {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Checkout::NotARepository {
                note: Some("git is not on the PATH, so the commit could not be read".into()),
            };
        }
        Err(e) => {
            return Checkout::Unknown {
                error: CheckoutError::Spawn(e).to_string(),
            };
        }
    };
    let stderr = String::from_utf8_lossy(&probe.stderr);
    if !probe.status.success() {
        if stderr.contains("not a git repository") {
            return Checkout::NotARepository { note: None };
        }
        return Checkout::Unknown {
            error: CheckoutError::Failed {
                args: "rev-parse --is-inside-work-tree".into(),
                stderr: stderr.trim().to_string(),
            }
            .to_string(),
        };
    }
    let text = String::from_utf8_lossy(&probe.stdout);
    let mut lines = text.lines();
    if lines.next() != Some("true") {
        return Checkout::NotARepository {
            note: Some("inside a git directory, not a work tree".into()),
        };
    }
    let prefix = lines.next().unwrap_or_default().to_string();
    match read_work_tree(root, prefix) {
        Ok(state) => Checkout::Git(state),
        Err(e) => Checkout::Unknown {
            error: e.to_string(),
        },
    }
}

/// Runs `git args` in `root`: its stdout when it exits 0, none when it
/// exits with `absent` (git's "no such thing" answer), an error otherwise.
fn answer(root: &Path, args: &[&str], absent: i32) -> Result<Option<String>, CheckoutError> {
    let out = run_quiet(root, args).map_err(CheckoutError::Spawn)?;
    match out.status.code() {
        Some(0) => Ok(Some(String::from_utf8_lossy(&out.stdout).into_owned())),
        Some(code) if code == absent => Ok(None),
        _ => Err(CheckoutError::Failed {
            args: args.join(" "),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        }),
    }
}

/// The commit, branch, tags, changes and remote of the work tree at
/// `root` (whose prefix in the repository is `prefix`).
fn read_work_tree(root: &Path, prefix: String) -> Result<GitCheckout, CheckoutError> {
    let trimmed = |s: Option<String>| s.map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
    // Exit 1 with --quiet: HEAD names no commit yet (a fresh `git init`).
    let commit = trimmed(answer(
        root,
        &["rev-parse", "--verify", "--quiet", "HEAD^{commit}"],
        1,
    )?);
    // Exit 1 with --quiet: HEAD is detached.
    let branch = trimmed(answer(
        root,
        &["symbolic-ref", "--quiet", "--short", "HEAD"],
        1,
    )?);
    let detached = branch.is_none();
    let tags = match (&commit, detached) {
        (Some(_), true) => answer(root, &["tag", "--points-at", "HEAD"], -1)?
            .unwrap_or_default()
            .lines()
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    };
    // `.` is the scan root: changes elsewhere in the repository are not
    // in the scanned files. Ignored files (fanscan's own `.fanscan/`
    // store, with its `.gitignore`) are not changes.
    let status = answer(
        root,
        &[
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=all",
            "--",
            ".",
        ],
        -1,
    )?
    .unwrap_or_default();
    let (modified, untracked) = count_status(status.as_bytes());
    // Exit 1: no `origin` remote.
    let remote_url = trimmed(answer(root, &["config", "--get", "remote.origin.url"], 1)?)
        .map(|u| strip_credentials(&u));
    Ok(GitCheckout {
        commit,
        branch,
        detached,
        tags,
        modified,
        untracked,
        remote_url,
        prefix,
    })
}

/// Counts `git status --porcelain=v1 -z`: entries of tracked changes and
/// of untracked files (`??`). A rename or copy carries its source path
/// as one more field.
fn count_status(out: &[u8]) -> (usize, usize) {
    let (mut modified, mut untracked) = (0, 0);
    let mut fields = out.split(|b| *b == 0).filter(|f| !f.is_empty());
    while let Some(entry) = fields.next() {
        let code = entry.get(..2).unwrap_or(entry);
        match code {
            b"??" => untracked += 1,
            b"!!" => {}
            _ => {
                modified += 1;
                if code.contains(&b'R') || code.contains(&b'C') {
                    fields.next();
                }
            }
        }
    }
    (modified, untracked)
}

/// A remote URL without credentials: an `https://` (or any other
/// scheme's) URL loses its whole `user:token@` part (a user name alone may
/// be a token too), an `ssh://` one keeps its user and loses the password
/// (an ssh user name is not a secret). scp-like (`git@host:x`) and local paths have no
/// password and stay as they are.
pub(crate) fn strip_credentials(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    let Some((userinfo, host)) = authority.rsplit_once('@') else {
        return url.to_string();
    };
    let ssh = scheme.eq_ignore_ascii_case("ssh")
        || scheme.eq_ignore_ascii_case("git+ssh")
        || scheme.eq_ignore_ascii_case("ssh+git");
    let user = userinfo.split(':').next().unwrap_or_default();
    if ssh && !user.is_empty() {
        format!("{scheme}://{user}@{host}{path}")
    } else {
        format!("{scheme}://{host}{path}")
    }
}

/// A remote URL as an absolute URI (what SARIF's `repositoryUri` must
/// be): URLs with a scheme as they are, scp-like `user@host:path` as
/// `ssh://user@host/path`, absolute local paths as `file://` URIs; none
/// for a relative path or text that is no URI.
pub(crate) fn remote_uri(url: &str) -> Option<String> {
    let uri = if let Some((scheme, _)) = url.split_once("://") {
        let valid = scheme
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
        if !valid {
            return None;
        }
        url.to_string()
    } else if url.starts_with('/') {
        format!("file://{}", percent_encode_path(url))
    } else if let Some((host, path)) = url.split_once(':')
        && !host.contains('/')
        && host.len() > 1
    {
        // scp-like: no scheme, a host (with a user) before the first `:`.
        let path = path.trim_start_matches('/');
        format!("ssh://{host}/{path}")
    } else {
        return None;
    };
    uri.chars().all(uri_char).then_some(uri)
}

/// Characters an RFC 3986 URI may hold as they are (`%` for an escape
/// already made).
fn uri_char(c: char) -> bool {
    c.is_ascii_alphanumeric()
        || matches!(
            c,
            '-' | '.'
                | '_'
                | '~'
                | ':'
                | '/'
                | '?'
                | '#'
                | '['
                | ']'
                | '@'
                | '!'
                | '$'
                | '&'
                | '\''
                | '('
                | ')'
                | '*'
                | '+'
                | ','
                | ';'
                | '='
                | '%'
        )
}

/// A local path as a `file://` URI path: bytes outside the unreserved
/// set (and `/`) percent-encoded.
fn percent_encode_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
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

    #[test]
    fn credentials_are_stripped_from_remote_urls() {
        for (url, want) in [
            (
                // fanscan:ignore[secret/url-credentials] test fixture: the stripping must remove it
                "https://user:ghp_secret@github.com/o/r.git",
                "https://github.com/o/r.git",
            ),
            (
                // fanscan:ignore[secret/url-credentials] test fixture: the stripping must remove it
                "https://x-access-token:tok@github.com/o/r",
                "https://github.com/o/r",
            ),
            (
                "https://ghp_tokenonly@github.com/o/r.git",
                "https://github.com/o/r.git",
            ),
            ("https://a:b@c@host:8443/r?x=1", "https://host:8443/r?x=1"),
            ("ssh://git:pw@host/o/r.git", "ssh://git@host/o/r.git"),
            ("ssh://git@host/o/r.git", "ssh://git@host/o/r.git"),
            ("https://github.com/o/r.git", "https://github.com/o/r.git"),
            ("git@github.com:o/r.git", "git@github.com:o/r.git"),
            ("/srv/repos/r.git", "/srv/repos/r.git"),
        ] {
            assert_eq!(strip_credentials(url), want, "{url}");
        }
    }

    #[test]
    fn remotes_become_absolute_uris_or_none() {
        assert_eq!(
            remote_uri("git@github.com:o/r.git").as_deref(),
            Some("ssh://git@github.com/o/r.git")
        );
        assert_eq!(
            remote_uri("https://github.com/o/r").as_deref(),
            Some("https://github.com/o/r")
        );
        assert_eq!(
            remote_uri("/srv/my repo.git").as_deref(),
            Some("file:///srv/my%20repo.git")
        );
        assert_eq!(remote_uri("../sibling"), None);
        assert_eq!(remote_uri("https://host/a b"), None);
        assert_eq!(remote_uri("1x://host/a"), None);
    }

    #[test]
    fn status_counts_tracked_changes_and_untracked_files() {
        let out = b" M src/a.rs\0R  new.rs\0old.rs\0?? notes.txt\0?? b/c.txt\0D  gone.rs\0";
        assert_eq!(count_status(out), (3, 2));
        assert_eq!(count_status(b""), (0, 0));
    }

    #[test]
    fn the_state_reads_as_one_sentence() {
        let mut g = GitCheckout {
            commit: Some("0123456789abcdef0123456789abcdef01234567".into()),
            branch: Some("main".into()),
            ..GitCheckout::default()
        };
        assert_eq!(
            Checkout::Git(g.clone()).describe(),
            "commit 0123456789ab on main, no uncommitted changes"
        );
        g.modified = 2;
        g.untracked = 1;
        assert_eq!(
            Checkout::Git(g.clone()).describe(),
            "commit 0123456789ab on main (uncommitted changes: 2 modified files, 1 untracked file)"
        );
        g = GitCheckout {
            commit: g.commit,
            detached: true,
            tags: vec!["v1.0".into()],
            ..GitCheckout::default()
        };
        assert_eq!(
            Checkout::Git(g).describe(),
            "commit 0123456789ab (detached HEAD, tag v1.0), no uncommitted changes"
        );
        assert_eq!(
            Checkout::NotARepository { note: None }.describe(),
            "not a git repository"
        );
    }
}
