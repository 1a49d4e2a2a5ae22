//! `--format github-review` and `gitlab-discussions` on a real change: a
//! repository whose scan root is a subfolder, a base commit and a branch
//! that adds a file and appends to another. Comments land only on lines
//! inside the hunks of `git diff --unified=3 BASE...HEAD` (checked against
//! the diff's own `@@` headers), most severe first up to --max-comments;
//! the rest is in the body. The shipped workflow step
//! (`configs/ci/github/review.yml`) posts the payload with `gh api` to a
//! scripted endpoint that, like GitHub, refuses a comment outside the diff.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use regex::Regex;
use serde_json::Value;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

use crate::common::git;
use crate::common::{Repo, fanscan};

/// A repository with the scan root `svc/`: on `main` a file with a weak
/// hash at its top; the branch appends a shell call far below it and adds
/// a file with SQL built from strings. `origin/main` is the base.
fn change() -> Repo {
    let padding: String = (3..=20).map(|i| format!("x{i} = {i}\n")).collect();
    let repo = Repo::new(&[
        (
            "svc/app/big.py",
            &format!("import hashlib\nh = hashlib.md5(b'x').hexdigest()\n{padding}"),
        ),
        ("README.md", "# a service\n"),
    ]);
    let dir = repo.path();
    git(dir, &["init", "-q"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", "base"]);
    git(dir, &["update-ref", "refs/remotes/origin/main", "HEAD"]);
    git(dir, &["checkout", "-qb", "feature"]);
    repo.write(
        "svc/app/big.py",
        &format!(
            "import hashlib\nh = hashlib.md5(b'x').hexdigest()\n{padding}import subprocess\n\ndef run(cmd):\n    subprocess.run(cmd, shell=True)\n"
        ),
    );
    repo.write(
        "svc/app/db.py",
        "def find(cur, name):\n    cur.execute(\"SELECT * FROM users WHERE name = '\" + name + \"'\")\n",
    );
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", "change"]);
    repo
}

/// The new-side lines of every hunk, by repository path, read straight
/// from the `@@` headers.
fn hunk_lines(repo: &Path) -> BTreeMap<String, BTreeSet<u32>> {
    let diff = git(repo, &["diff", "--unified=3", "origin/main...HEAD"]);
    let file = Regex::new(r"^\+\+\+ b/(.*)$").unwrap();
    let hunk = Regex::new(r"^@@ -\S+ \+(\d+)(?:,(\d+))? @@").unwrap();
    let mut out: BTreeMap<String, BTreeSet<u32>> = BTreeMap::new();
    let mut current = String::new();
    for line in diff.lines() {
        if let Some(c) = file.captures(line) {
            current = c[1].to_string();
        } else if let Some(c) = hunk.captures(line) {
            let start: u32 = c[1].parse().unwrap();
            let len: u32 = c.get(2).map_or(1, |m| m.as_str().parse().unwrap());
            out.entry(current.clone())
                .or_default()
                .extend(start..start + len);
        }
    }
    out
}

fn review(repo: &Repo, format: &str, extra: &[&str]) -> (Option<i32>, Value) {
    let root = repo.path().join("svc");
    let mut args = vec![
        "scan",
        root.to_str().unwrap(),
        "--since",
        "origin/main",
        "--no-store",
        "--quiet",
        "--format",
        format,
    ];
    args.extend(extra);
    let out = fanscan(&args);
    let text = String::from_utf8_lossy(&out.stdout);
    let payload = serde_json::from_str(&text).unwrap_or_else(|e| {
        panic!(
            "{e}: {text}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code(), payload)
}

#[test]
fn github_review_comments_only_inside_the_hunks_and_lists_the_rest() {
    let repo = change();
    let hunks = hunk_lines(repo.path());
    let (code, payload) = review(&repo, "github-review", &[]);
    assert_eq!(code, Some(4), "a high finding fails the gate");
    assert_eq!(
        payload["commit_id"],
        git(repo.path(), &["rev-parse", "HEAD"]).trim()
    );
    assert_eq!(payload["event"], "REQUEST_CHANGES");
    let comments = payload["comments"].as_array().unwrap();
    assert!(comments.len() >= 2, "{payload:#}");
    let mut paths = BTreeSet::new();
    for c in comments {
        let path = c["path"].as_str().unwrap();
        let line = u32::try_from(c["line"].as_u64().unwrap()).unwrap();
        assert_eq!(c["side"], "RIGHT");
        assert!(
            hunks.get(path).is_some_and(|l| l.contains(&line)),
            "{path}:{line} is outside the diff's hunks {hunks:?}"
        );
        if let Some(start) = c["start_line"].as_u64() {
            assert!(hunks[path].contains(&u32::try_from(start).unwrap()));
        }
        let body = c["body"].as_str().unwrap();
        assert!(body.contains("fingerprint"), "{body}");
        assert!(body.contains("CWE-"), "{body}");
        paths.insert(path.to_string());
    }
    assert_eq!(
        paths,
        ["svc/app/big.py", "svc/app/db.py"].map(String::from).into(),
        "paths are the repository's, not the scan root's"
    );
    // Most severe first: the SQL (high) before the shell call (medium).
    assert!(
        comments[0]["body"]
            .as_str()
            .unwrap()
            .starts_with("**HIGH**")
    );
    // The weak hash on line 2 is not in the diff: in the body, with its
    // fingerprint, never a comment.
    let body = payload["body"].as_str().unwrap();
    assert!(body.contains("Outside the diff"), "{body}");
    assert!(body.contains("svc/app/big.py:2"), "{body}");
    assert!(
        !comments
            .iter()
            .any(|c| c["line"] == 2 && c["path"] == "svc/app/big.py")
    );

    let head = git(repo.path(), &["rev-parse", "HEAD"]);
    let text = serde_json::to_string_pretty(&payload)
        .unwrap()
        .replace(head.trim(), "[head]")
        .replace(env!("CARGO_PKG_VERSION"), "[version]");
    // The footer names the commit too, abbreviated: redacted.
    crate::common::redactions().bind(|| insta::assert_snapshot!("github_review", text));
}

#[test]
fn max_comments_moves_the_rest_into_the_body() {
    let repo = change();
    let (_, payload) = review(&repo, "github-review", &["--max-comments", "1"]);
    let comments = payload["comments"].as_array().unwrap();
    assert_eq!(comments.len(), 1);
    assert!(
        comments[0]["body"]
            .as_str()
            .unwrap()
            .starts_with("**HIGH**")
    );
    let body = payload["body"].as_str().unwrap();
    assert!(body.contains("past the comment limit"), "{body}");
    // The high SQL finding takes the one comment; the shell command run
    // from a parameter (medium: its caller chooses the command) goes into
    // the body.
    assert!(
        comments[0]["path"] == "svc/app/db.py" && comments[0]["line"] == 2,
        "{comments:?}"
    );
    assert!(body.contains("svc/app/big.py:24"), "{body}");
}

#[test]
fn gitlab_discussions_are_anchored_on_the_diff_positions() {
    let repo = change();
    let (_, payload) = review(&repo, "gitlab-discussions", &[]);
    let head = git(repo.path(), &["rev-parse", "HEAD"]);
    let base = git(repo.path(), &["merge-base", "origin/main", "HEAD"]);
    let discussions = payload["discussions"].as_array().unwrap();
    assert!(discussions.len() >= 2);
    for d in discussions {
        let p = &d["position"];
        assert_eq!(p["position_type"], "text");
        assert_eq!(p["head_sha"], head.trim());
        assert_eq!(p["base_sha"], base.trim());
        assert_eq!(p["new_path"], p["old_path"]);
        // Both findings are on added lines: no old line.
        assert!(p.get("old_line").is_none(), "{p}");
        assert!(p["new_line"].as_u64().unwrap() > 0);
    }
    assert!(payload["body"].as_str().unwrap().contains("fanscan"));
}

#[test]
fn a_review_without_since_is_a_usage_error() {
    let repo = change();
    let out = fanscan(&[
        "scan",
        repo.path().to_str().unwrap(),
        "--no-store",
        "--format",
        "github-review",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--since REF"));
}

fn workflow() -> Value {
    let full = Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/ci/github/review.yml");
    serde_saphyr::from_str(&std::fs::read_to_string(full).unwrap()).unwrap()
}

/// A `gh` that does what `gh api --method M PATH --input FILE` does, sent
/// to `$FAKE_GITHUB_API` with curl: fails on an HTTP error, as gh does.
const FAKE_GH: &str = r#"#!/bin/sh
set -eu
[ "$1" = api ] || { echo "fake gh: only 'api'" >&2; exit 2; }
shift
method=GET; input=; target=
while [ $# -gt 0 ]; do
  case "$1" in
    --method|-X) method=$2; shift 2 ;;
    --input) input=$2; shift 2 ;;
    -*) echo "fake gh: unknown flag $1" >&2; exit 2 ;;
    *) target=$1; shift ;;
  esac
done
[ -n "${GH_TOKEN:-}" ] || { echo "fake gh: no GH_TOKEN" >&2; exit 4; }
exec curl -sS --fail-with-body -X "$method" -H "Authorization: token $GH_TOKEN" \
  -H "Content-Type: application/json" --data-binary "@$input" "$FAKE_GITHUB_API/$target"
"#;

/// Runs a step's script as GitHub Actions does (`bash -e -o pipefail`).
fn bash(script: &str, cwd: &Path, env: &[(&str, String)], path: &str) -> (i32, String, String) {
    let out = Command::new("bash")
        .args(["--noprofile", "--norc", "-eo", "pipefail", "-c"])
        .arg(script)
        .current_dir(cwd)
        .env("PATH", path)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("GITHUB_ENV")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_workflow_posts_the_review_with_gh_api_to_a_scripted_endpoint() {
    let wf = workflow();
    let job = &wf["jobs"]["review"];
    assert_eq!(wf["permissions"]["pull-requests"], "write");
    let steps = job["steps"].as_array().unwrap();
    let run_of = |needle: &str| -> (String, Value) {
        let s = steps
            .iter()
            .find(|s| s["run"].as_str().is_some_and(|r| r.contains(needle)))
            .unwrap_or_else(|| panic!("no step running {needle}"));
        (s["run"].as_str().unwrap().to_string(), s["env"].clone())
    };
    let checkout = steps
        .iter()
        .find(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("actions/checkout"))
        })
        .unwrap();
    assert_eq!(
        checkout["with"]["ref"], "${{ github.event.pull_request.head.sha }}",
        "the review is anchored to the head commit"
    );
    let (scan, scan_env) = run_of("fanscan scan");
    assert!(scan.contains("--format github-review"), "{scan}");
    let (post, post_env) = run_of("gh api");
    assert_eq!(post_env["GH_TOKEN"], "${{ github.token }}");
    assert!(!scan_env["BASE"].is_null());

    // The scripted endpoint: like GitHub, a comment outside the diff is a
    // 422 and nothing is posted.
    let repo = change();
    let root = repo.path().to_path_buf();
    let hunks = hunk_lines(&root);
    let head = git(&root, &["rev-parse", "HEAD"]).trim().to_string();
    let server = MockServer::start().await;
    let (expected_head, allowed) = (head.clone(), hunks.clone());
    Mock::given(method("POST"))
        .and(path("/repos/octo/app/pulls/7/reviews"))
        .respond_with(move |req: &Request| {
            let body: Value = match serde_json::from_slice(&req.body) {
                Ok(v) => v,
                Err(e) => return ResponseTemplate::new(400).set_body_string(e.to_string()),
            };
            let ok_auth = req
                .headers
                .get("authorization")
                .is_some_and(|v| v == "token test-token");
            let inside = body["comments"].as_array().is_some_and(|cs| {
                cs.iter().all(|c| {
                    c["path"]
                        .as_str()
                        .and_then(|p| allowed.get(p))
                        .is_some_and(|lines| {
                            lines.contains(
                                &u32::try_from(c["line"].as_u64().unwrap_or(0)).unwrap_or(0),
                            )
                        })
                })
            });
            if !ok_auth {
                ResponseTemplate::new(401)
            } else if body["commit_id"] != expected_head.as_str() || !inside {
                ResponseTemplate::new(422).set_body_json(serde_json::json!({
                    "message": "Unprocessable Entity",
                    "errors": ["Line could not be resolved"]
                }))
            } else {
                ResponseTemplate::new(200).set_body_json(serde_json::json!({"id": 4242}))
            }
        })
        .mount(&server)
        .await;

    let bin = tempfile::tempdir().unwrap();
    let gh = bin.path().join("gh");
    std::fs::write(&gh, FAKE_GH).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&gh, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let fanscan_dir = PathBuf::from(env!("CARGO_BIN_EXE_fanscan"))
        .parent()
        .unwrap()
        .to_path_buf();
    let path = format!(
        "{}:{}:{}",
        bin.path().display(),
        fanscan_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let temp = tempfile::tempdir().unwrap();
    let env = vec![
        ("BASE", "main".to_string()),
        ("RUNNER_TEMP", temp.path().display().to_string()),
        ("GITHUB_REPOSITORY", "octo/app".to_string()),
        ("PR", "7".to_string()),
        ("GH_TOKEN", "test-token".to_string()),
        ("FAKE_GITHUB_API", server.uri()),
    ];
    // The scan root is the checkout; here the repository's `svc` folder
    // stands for it.
    let svc = root.join("svc");
    let (code, _, err) = tokio::task::spawn_blocking({
        let (scan, svc, env, path) = (scan.clone(), svc.clone(), env.clone(), path.clone());
        move || bash(&scan, &svc, &env, &path)
    })
    .await
    .unwrap();
    assert_eq!(
        code, 0,
        "the scan step (gate failures are the Gate step's): {err}"
    );
    let (code, out, err) = tokio::task::spawn_blocking({
        let (post, svc, env, path) = (post.clone(), svc.clone(), env.clone(), path.clone());
        move || bash(&post, &svc, &env, &path)
    })
    .await
    .unwrap();
    assert_eq!(code, 0, "post: {out}{err}");
    let received = server.received_requests().await.unwrap();
    assert_eq!(received.len(), 1);
    let sent: Value = serde_json::from_slice(&received[0].body).unwrap();
    assert_eq!(sent["commit_id"], head.as_str());
    assert!(!sent["comments"].as_array().unwrap().is_empty());
    let answer = std::fs::read_to_string(temp.path().join("review-answer.json")).unwrap();
    assert!(answer.contains("4242"));

    // A comment outside the diff (as a careless tool would send) is
    // refused, and the step fails instead of losing it silently.
    let mut bad = sent.clone();
    bad["comments"][0]["line"] = serde_json::json!(2);
    bad["comments"][0]["path"] = serde_json::json!("svc/app/big.py");
    std::fs::write(temp.path().join("review.json"), bad.to_string()).unwrap();
    let (code, _, _) = tokio::task::spawn_blocking({
        let (post, svc, env, path) = (post.clone(), svc.clone(), env.clone(), path.clone());
        move || bash(&post, &svc, &env, &path)
    })
    .await
    .unwrap();
    assert_ne!(code, 0, "a 422 fails the step");
}
