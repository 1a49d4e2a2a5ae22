//! A plan over `--max-groups`: `fanscan plan` shows it in full with the
//! advice as a warning (exit 0, a plan starts no agent); `fanscan scan`
//! refuses it (exit 2) before anything runs.

use serde_json::Value;

use crate::common::{Repo, fanscan};

/// A generated repository of `dirs` directories, each with one Python file
/// too big to share a group of 100 tokens: one group per file.
fn generated(dirs: usize) -> (Repo, Vec<String>) {
    let body = "def handler(request):\n    return request.args.get('name')\n".repeat(4);
    let paths: Vec<String> = (0..dirs).map(|i| format!("svc{i:02}/handler.py")).collect();
    let files: Vec<(&str, &str)> = paths.iter().map(|p| (p.as_str(), body.as_str())).collect();
    (Repo::new(&files), paths)
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn plan_over_max_groups_is_shown_with_a_warning() {
    let (repo, paths) = generated(12);
    let root = repo.path().to_str().unwrap();
    let cap = ["--group-tokens", "100", "--max-groups", "3"];

    let json = fanscan(&[&["plan", root, "--json"][..], &cap[..]].concat());
    let err = stderr(&json);
    assert_eq!(json.status.code(), Some(0), "{err}");
    let v: Value = serde_json::from_slice(&json.stdout).unwrap();
    let groups = v["plan"]["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 12, "{v:#}");
    let mut planned: Vec<&str> = groups
        .iter()
        .flat_map(|g| g["files"].as_array().unwrap())
        .map(|f| f.as_str().unwrap())
        .collect();
    planned.sort();
    assert_eq!(planned, paths);
    // The same advice a scan gives, as a warning, and once.
    assert_eq!(err.matches("fanscan: warning:").count(), 1, "{err}");
    assert!(
        err.contains("warning: the plan has 12 groups, over --max-groups 3")
            && err.contains("raise --group-tokens (now 100;")
            && err.contains("`fanscan scan` refuses this plan"),
        "{err}"
    );

    // The text form shows every group too.
    let text = fanscan(&[&["plan", root][..], &cap[..]].concat());
    assert_eq!(text.status.code(), Some(0), "{}", stderr(&text));
    let shown = String::from_utf8_lossy(&text.stdout);
    for path in &paths {
        assert!(shown.contains(path.as_str()), "{path} missing in\n{shown}");
    }
    assert!(stderr(&text).contains("over --max-groups 3"));

    // Within the cap, no warning.
    let fits = fanscan(&["plan", root, "--group-tokens", "100", "--max-groups", "12"]);
    assert_eq!(fits.status.code(), Some(0));
    assert!(!stderr(&fits).contains("warning"), "{}", stderr(&fits));
}

#[test]
fn scan_over_max_groups_refuses_before_anything_runs() {
    let (repo, _) = generated(12);
    let root = repo.path().to_str().unwrap();
    let out = fanscan(&[
        "scan",
        root,
        "--group-tokens",
        "100",
        "--max-groups",
        "3",
        "--format",
        "json",
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(out.stdout.is_empty(), "a refused scan printed a report");
    assert!(
        err.contains("the plan has 12 groups, over --max-groups 3")
            && err.contains("raise --group-tokens (now 100;"),
        "{err}"
    );
    assert!(!err.contains("warning: the plan"), "{err}");
    // Nothing ran, so no store was made.
    assert!(!repo.path().join(".fanscan").exists());
}
