//! Every report names the tree it scanned (issue 26, item 4): the commit,
//! the branch or ref, and whether the tree had uncommitted changes, or
//! that it is no git repository. The real binary with the offline engine
//! on temporary repositories: clean, a modified file, an untracked file,
//! a detached HEAD, no repository, no git on the PATH, a remote with
//! credentials; each format carries it (SARIF checked against the schema);
//! the scope is the scanned root; fanscan's own store is no change; shards
//! of different commits are named in the merged report; a report written
//! before this loads.

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use fanscan::{Checkout, GitCheckout, Report};

use crate::common::{Repo, commit_all, fanscan, git, report_of};
use crate::formats::assert_valid;

/// Two directories of Rust without findings at the gate's level, each
/// about 70 estimated tokens (one group each with `--group-tokens 100`).
fn files() -> Vec<(&'static str, String)> {
    let padding = "// ".to_string() + &"pad ".repeat(50);
    vec![
        (
            "a/lib.rs",
            format!("fn a(s: &str) -> u32 {{\n    s.len() as u32\n}}\n{padding}\n"),
        ),
        (
            "b/lib.rs",
            format!("fn b() -> u32 {{\n    2\n}}\n{padding}\n"),
        ),
    ]
}

fn new_repo() -> Repo {
    let files = files();
    let files: Vec<(&str, &str)> = files.iter().map(|(p, c)| (*p, c.as_str())).collect();
    Repo::new(&files)
}

/// A repository with everything committed on `main`.
fn committed() -> Repo {
    let repo = new_repo();
    git(repo.path(), &["init", "-q"]);
    commit_all(repo.path(), "first");
    repo
}

fn head(repo: &Repo) -> String {
    git(repo.path(), &["rev-parse", "HEAD"]).trim().to_string()
}

/// `fanscan scan ROOT --format FORMAT` with `extra` flags; asserts exit 0.
fn scan(root: &Path, format: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "scan",
        root.to_str().unwrap(),
        "--format",
        format,
        "--quiet",
    ];
    args.extend(extra);
    let out = fanscan(&args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn text(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn checkout(root: &Path) -> Checkout {
    report_of(&scan(root, "json", &["--no-store"]))
        .manifest
        .checkout
        .expect("every new report records its checkout")
}

fn git_state(checkout: Checkout) -> GitCheckout {
    match checkout {
        Checkout::Git(g) => g,
        other => panic!("not a git checkout: {other:?}"),
    }
}

#[test]
fn a_clean_repository_names_its_commit_and_branch_and_its_own_store_is_no_change() {
    let repo = committed();
    // The first scan writes `.fanscan/store.db` (with its own
    // `.gitignore`) into the root; the second must still see a clean tree.
    scan(repo.path(), "json", &[]);
    assert!(repo.path().join(".fanscan/store.db").is_file());
    let report = report_of(&scan(repo.path(), "json", &[]));
    let g = git_state(report.manifest.checkout.unwrap());
    assert_eq!(g.commit.as_deref(), Some(head(&repo).as_str()));
    assert_eq!(g.branch.as_deref(), Some("main"));
    assert!(!g.detached && g.tags.is_empty());
    assert_eq!((g.modified, g.untracked), (0, 0), "{g:?}");
    assert_eq!(g.remote_url, None);
    assert_eq!(g.prefix, "");

    let md = text(&scan(repo.path(), "md", &["--no-store"]));
    let line = format!(
        "Commit {} on main, no uncommitted changes.",
        &head(&repo)[..12]
    );
    assert!(md.lines().take(6).any(|l| l == line), "{line}\n{md}");
    // A clean checkout adds no annotation.
    let annotations = text(&scan(repo.path(), "github", &["--no-store"]));
    assert!(!annotations.contains("uncommitted"), "{annotations}");
}

#[test]
fn a_modified_tracked_file_is_an_uncommitted_change() {
    let repo = committed();
    repo.write("a/lib.rs", "fn a() -> u32 {\n    1\n}\n");
    let g = git_state(checkout(repo.path()));
    assert_eq!((g.modified, g.untracked), (1, 0));
    assert_eq!(g.commit.as_deref(), Some(head(&repo).as_str()));

    let md = text(&scan(repo.path(), "md", &["--no-store"]));
    assert!(
        md.contains(&format!(
            "Commit {} on main (uncommitted changes: 1 modified file).",
            &head(&repo)[..12]
        )),
        "{md}"
    );
    // The annotations point at lines the commit may not have: say so.
    let annotations = text(&scan(repo.path(), "github", &["--no-store"]));
    assert!(
        annotations.contains("::warning title=fanscan%3A uncommitted changes::Scanned commit"),
        "{annotations}"
    );
}

#[test]
fn an_untracked_file_is_an_uncommitted_change_and_an_ignored_one_is_not() {
    let repo = committed();
    repo.write(".gitignore", "*.log\n");
    commit_all(repo.path(), "ignore logs");
    repo.write("build.log", "ignored\n");
    assert_eq!(git_state(checkout(repo.path())).untracked, 0);

    repo.write("b/new.rs", "fn n() {}\n");
    let g = git_state(checkout(repo.path()));
    assert_eq!((g.modified, g.untracked), (0, 1));
    let md = text(&scan(repo.path(), "md", &["--no-store"]));
    assert!(
        md.contains("(uncommitted changes: 1 untracked file)."),
        "{md}"
    );
}

#[test]
fn a_detached_head_names_its_commit_and_tag() {
    let repo = committed();
    git(repo.path(), &["tag", "v1.0"]);
    git(repo.path(), &["checkout", "-q", "--detach"]);
    let g = git_state(checkout(repo.path()));
    assert!(g.detached);
    assert_eq!(g.branch, None);
    assert_eq!(g.tags, ["v1.0"]);
    assert_eq!(g.commit.as_deref(), Some(head(&repo).as_str()));
    let md = text(&scan(repo.path(), "md", &["--no-store"]));
    assert!(
        md.contains(&format!(
            "Commit {} (detached HEAD, tag v1.0), no uncommitted changes.",
            &head(&repo)[..12]
        )),
        "{md}"
    );
}

#[test]
fn a_tree_outside_git_says_so_in_every_format() {
    let repo = new_repo();
    assert_eq!(
        checkout(repo.path()),
        Checkout::NotARepository { note: None }
    );
    let md = text(&scan(repo.path(), "md", &["--no-store"]));
    assert!(md.lines().any(|l| l == "Not a git repository."), "{md}");
    let html = text(&scan(repo.path(), "html", &["--no-store"]));
    assert!(
        html.contains("<dt>Checkout</dt><dd>Not a git repository</dd>"),
        "{html}"
    );
    let sarif = text(&scan(repo.path(), "sarif", &["--no-store"]));
    assert_valid(&sarif);
    let v: Value = serde_json::from_str(&sarif).unwrap();
    let run = &v["runs"][0];
    assert!(run.get("versionControlProvenance").is_none());
    assert_eq!(run["properties"]["checkout"]["kind"], "not_a_repository");
}

#[test]
fn no_git_on_the_path_is_no_repository_with_a_note() {
    let repo = committed();
    let empty = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fanscan"))
        .args(["scan", repo.path().to_str().unwrap(), "--no-store"])
        .args(["--format", "json", "--quiet"])
        .env("PATH", empty.path())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let Checkout::NotARepository { note: Some(note) } = report_of(&out).manifest.checkout.unwrap()
    else {
        panic!("not a note of git missing");
    };
    assert!(note.contains("git is not on the PATH"), "{note}");
}

#[test]
fn credentials_are_stripped_from_the_remote_and_every_format_names_the_commit() {
    let repo = committed();
    git(
        repo.path(),
        &[
            "remote",
            "add",
            "origin",
            // fanscan:ignore[secret/url-credentials] test fixture: no report may print it
            "https://ci-user:s3cret-token@example.com/team/app.git",
        ],
    );
    let head = head(&repo);
    let g = git_state(checkout(repo.path()));
    assert_eq!(
        g.remote_url.as_deref(),
        Some("https://example.com/team/app.git")
    );

    for format in ["json", "md", "sarif", "html", "github", "codeclimate"] {
        let out = text(&scan(repo.path(), format, &["--no-store"]));
        assert!(!out.contains("s3cret"), "{format} prints the token:\n{out}");
        assert!(!out.contains("ci-user"), "{format} prints the user:\n{out}");
        match format {
            "json" => assert!(out.contains(&format!("\"commit\": \"{head}\"")), "{out}"),
            "md" => assert!(
                out.contains(&format!(
                    "Commit {} on main, no uncommitted changes; origin https://example.com/team/app.git.",
                    &head[..12]
                )),
                "{out}"
            ),
            "html" => {
                assert!(out.contains(&format!("<span class=\"mono\">{head}</span>")));
                assert!(out.contains("https://example.com/team/app.git"));
            }
            _ => {}
        }
    }

    let sarif = text(&scan(repo.path(), "sarif", &["--no-store"]));
    assert_valid(&sarif);
    let v: Value = serde_json::from_str(&sarif).unwrap();
    let vcs = &v["runs"][0]["versionControlProvenance"][0];
    assert_eq!(vcs["repositoryUri"], "https://example.com/team/app.git");
    assert_eq!(vcs["revisionId"], head.as_str());
    assert_eq!(vcs["branch"], "main");
    assert_eq!(vcs["mappedTo"]["uriBaseId"], "%SRCROOT%");
    assert_eq!(vcs["properties"]["uncommittedChanges"], false);
}

#[test]
fn sarif_without_a_usable_remote_keeps_the_state_in_the_run_properties() {
    let repo = committed();
    let head = head(&repo);
    // No remote: no repositoryUri to give, so no versionControlProvenance.
    let sarif = text(&scan(repo.path(), "sarif", &["--no-store"]));
    assert_valid(&sarif);
    let v: Value = serde_json::from_str(&sarif).unwrap();
    let run = &v["runs"][0];
    assert!(run.get("versionControlProvenance").is_none(), "{sarif}");
    assert_eq!(run["properties"]["checkout"]["commit"], head.as_str());
    assert_eq!(run["properties"]["checkout"]["branch"], "main");

    // An scp-like remote becomes an ssh:// URI the schema accepts.
    git(
        repo.path(),
        &["remote", "add", "origin", "git@example.com:team/app.git"],
    );
    let sarif = text(&scan(repo.path(), "sarif", &["--no-store"]));
    assert_valid(&sarif);
    let v: Value = serde_json::from_str(&sarif).unwrap();
    assert_eq!(
        v["runs"][0]["versionControlProvenance"][0]["repositoryUri"],
        "ssh://git@example.com/team/app.git"
    );
}

#[test]
fn changes_outside_the_scanned_root_are_not_its_changes() {
    let repo = committed();
    repo.write("b/lib.rs", "fn b() -> u32 {\n    3\n}\n");
    repo.write("b/new.rs", "fn n() {}\n");
    let g = git_state(checkout(&repo.path().join("a")));
    assert_eq!((g.modified, g.untracked), (0, 0), "{g:?}");
    assert_eq!(g.prefix, "a/");
    let g = git_state(checkout(&repo.path().join("b")));
    assert_eq!((g.modified, g.untracked), (1, 1), "{g:?}");
}

/// `scan --shard K/2 --format json --output DIR/part-K.json`.
fn shard(repo: &Repo, k: usize, dir: &Path) -> std::path::PathBuf {
    let part = dir.join(format!("part-{k}.json"));
    let shard = format!("{k}/2");
    scan(
        repo.path(),
        "json",
        &[
            "--no-store",
            "--group-tokens",
            "100",
            "--shard",
            &shard,
            "--output",
            part.to_str().unwrap(),
        ],
    );
    part
}

fn merge(repo: &Repo, parts: &[&Path]) -> Report {
    let mut args = vec![
        "merge",
        "--path",
        repo.path().to_str().unwrap(),
        "--no-store",
        "--group-tokens",
        "100",
        "--format",
        "json",
        "--quiet",
    ];
    args.extend(parts.iter().map(|p| p.to_str().unwrap()));
    let out = fanscan(&args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    report_of(&out)
}

#[test]
fn shards_of_different_commits_are_named_in_the_merged_report() {
    let repo = committed();
    let out = tempfile::tempdir().unwrap();
    let first = head(&repo);
    let one = shard(&repo, 1, out.path());
    let two = shard(&repo, 2, out.path());
    let same = merge(&repo, &[&one, &two]);
    assert_eq!(same.plan.groups.len(), 2, "one group a shard");
    assert!(
        !same.notes.iter().any(|n| n.contains("commit")),
        "{:?}",
        same.notes
    );

    // A commit that touches no scanned file: the shards' files are the
    // same, so the merge goes on and says which commits they were.
    git(
        repo.path(),
        &["commit", "-q", "--allow-empty", "-m", "empty"],
    );
    let second = head(&repo);
    let two = shard(&repo, 2, out.path());
    let merged = merge(&repo, &[&one, &two]);
    let note = merged
        .notes
        .iter()
        .find(|n| n.contains("did not all scan the commit"))
        .unwrap_or_else(|| panic!("no note: {:?}", merged.notes));
    assert!(
        note.contains(&format!("1/2 commit {}", &first[..12])),
        "{note}"
    );
    assert!(
        note.contains(&format!("2/2 commit {}", &second[..12])),
        "{note}"
    );
    assert_eq!(
        merged.manifest.checkout.as_ref().and_then(|c| c.commit()),
        Some(second.as_str()),
        "the merged report names the checkout whose files it verified"
    );
    assert!(merged.complete);
}

#[test]
fn a_report_written_before_checkouts_were_recorded_still_loads() {
    let repo = committed();
    let mut json: Value =
        serde_json::from_slice(&scan(repo.path(), "json", &["--no-store"]).stdout).unwrap();
    json["manifest"]
        .as_object_mut()
        .unwrap()
        .remove("checkout")
        .unwrap();
    let report: Report = serde_json::from_value(json).unwrap();
    assert_eq!(report.manifest.checkout, None);
    let md = report.render(fanscan::Format::Md).unwrap();
    assert!(!md.contains("Commit ") && !md.contains("Not a git repository"));
    let sarif = report.render(fanscan::Format::Sarif).unwrap();
    assert_valid(&sarif);
    assert!(!sarif.contains("\"checkout\""));
}
