//! The run store: cache hits and misses, resume after SIGKILL, concurrent
//! runs, refused store files, and new/fixed/not-checked across runs. Real
//! SQLite files in temporary repositories, a mock model over real HTTP.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::Value;

use fanscan::{Context, ProviderArgs, Report, RunArgs, ScanArgs, Ui};

use crate::common::{MockModel, Repo, auditor_behaviour, fanscan, risky_file, task_files};

/// Four directories, one group each; every file calls `risky_<dir>()`.
fn tree() -> Repo {
    Repo::tree(&["a", "b", "c", "d"], 2, risky_file)
}

fn one_group_per_dir() -> ScanArgs {
    ScanArgs {
        group_tokens: Some(110),
        jobs: Some(2),
        ..ScanArgs::default()
    }
}

async fn scan_with(mock: &MockModel, repo: &Repo, scan: &ScanArgs, model: &str) -> Report {
    let args = RunArgs {
        provider: ProviderArgs {
            model: Some(model.to_string()),
            ..ProviderArgs::default()
        },
        scan: scan.clone(),
        ..RunArgs::default()
    };
    let settings = mock.settings_with(repo.path(), args);
    let ctx = Context::new(settings).unwrap();
    let ui = Ui::hidden();
    fanscan::scan(&ctx, &ui).await.unwrap()
}

/// The groups whose audit task the model was sent, from request `from` on.
fn asked_groups(mock: &MockModel, from: usize) -> BTreeSet<String> {
    mock.requests()[from..]
        .iter()
        .filter_map(|s| {
            s.body["messages"].as_array()?.iter().find_map(|m| {
                let text = m["content"].as_str()?;
                let rest = text.strip_prefix("TASK: audit-group ")?;
                Some(rest.lines().next()?.to_string())
            })
        })
        .collect()
}

fn fingerprints(report: &Report) -> Vec<String> {
    report
        .findings
        .iter()
        .map(|m| m.fingerprint.clone())
        .collect()
}

#[tokio::test]
async fn an_unchanged_rescan_asks_no_model_and_reproduces_the_findings() {
    let repo = tree();
    let mock = MockModel::openai(auditor_behaviour("risky_")).await;
    let args = one_group_per_dir();
    let first = scan_with(&mock, &repo, &args, "mock-model").await;
    assert!(first.complete, "{:?}", first.incomplete_reasons);
    assert_eq!(first.groups.len(), 4);
    assert_eq!(first.findings.len(), 8);
    assert_eq!(first.stats.cached_groups, 0);
    assert!(repo.path().join(".fanscan/store.db").is_file());
    assert!(repo.path().join(".fanscan/.gitignore").is_file());
    let after_first = mock.requests().len();
    assert!(after_first > 0);

    let second = scan_with(&mock, &repo, &args, "mock-model").await;
    assert_eq!(
        mock.requests().len(),
        after_first,
        "an unchanged re-scan called the model"
    );
    assert!(second.complete);
    assert_eq!(second.stats.cached_groups, 4);
    assert_eq!(second.stats.resumed_groups, 0);
    assert!(second.groups.iter().all(|g| g.cached && !g.resumed));
    assert_eq!(fingerprints(&second), fingerprints(&first));
    assert_eq!(second.summary, first.summary);
    // The store's own files never enter the inventory.
    assert_eq!(second.plan, first.plan);
    let since = second.since_last_run.as_ref().unwrap();
    assert_eq!(since.previous_run, first.run_id);
    assert_eq!(
        (since.new.len(), since.fixed.len(), since.unchanged),
        (0, 0, 8)
    );

    // One file changed: only it is asked again, in a group of changed
    // files (its unchanged neighbour is carried over; tests/it/incremental.rs).
    repo.write("b/f0.rs", "fn f0() {\n    let y = risky_b();\n}\n");
    let before = mock.requests().len();
    let third = scan_with(&mock, &repo, &args, "mock-model").await;
    let b_group = &third
        .groups
        .iter()
        .find(|g| g.files.contains(&"b/f0.rs".to_string()))
        .unwrap()
        .id;
    let asked = asked_groups(&mock, before);
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(
        asked.iter().all(|g| g.starts_with("changed-b-")),
        "{asked:?}"
    );
    assert_eq!(third.stats.cached_groups, 3);
    assert!(
        !third
            .groups
            .iter()
            .find(|g| &g.id == b_group)
            .unwrap()
            .cached
    );

    // Another model: everything is asked again.
    let before = mock.requests().len();
    let other = scan_with(&mock, &repo, &args, "other-model").await;
    assert_eq!(asked_groups(&mock, before).len(), 4);
    assert_eq!(other.stats.cached_groups, 0);

    // --no-cache: everything is asked again.
    let before = mock.requests().len();
    let fresh = scan_with(
        &mock,
        &repo,
        &ScanArgs {
            no_cache: true,
            ..one_group_per_dir()
        },
        "mock-model",
    )
    .await;
    assert_eq!(asked_groups(&mock, before).len(), 4);
    assert_eq!(fresh.stats.cached_groups, 0);
}

#[tokio::test]
async fn changing_the_agent_definition_reruns_every_group() {
    let repo = tree();
    let mock = MockModel::openai(auditor_behaviour("risky_")).await;
    let args = one_group_per_dir();
    scan_with(&mock, &repo, &args, "mock-model").await;
    repo.write(
        ".fanscan/agents/auditor.md",
        "---\nname: auditor\ndescription: Reviews one group.\ntools: [list_dir, read_file, grep]\nmax_rounds: 5\n---\nYou are a stricter auditor.\n",
    );
    let before = mock.requests().len();
    let report = scan_with(&mock, &repo, &args, "mock-model").await;
    // The agent file is audited too, so the plan may grow: every group of
    // it is asked, none reused.
    assert_eq!(asked_groups(&mock, before).len(), report.groups.len());
    assert_eq!(report.stats.cached_groups, 0);
}

#[tokio::test]
async fn new_fixed_and_not_checked_since_the_last_complete_run() {
    let repo = tree();
    let mock = MockModel::openai(auditor_behaviour("risky_")).await;
    let args = one_group_per_dir();
    let first = scan_with(&mock, &repo, &args, "mock-model").await;
    assert!(first.complete);
    // a/f0.rs fixed; c/f1.rs gets a second finding; d/ is not scanned.
    repo.write("a/f0.rs", "fn f0() {\n    let x = safe();\n}\n");
    repo.write(
        "c/f1.rs",
        "fn f1() {\n    let x = risky_c();\n    risky_c2();\n}\n",
    );
    let second = scan_with(
        &mock,
        &repo,
        &ScanArgs {
            exclude: vec!["d/**".into()],
            ..one_group_per_dir()
        },
        "mock-model",
    )
    .await;
    let since = second.since_last_run.as_ref().unwrap();
    let paths = |list: &[fanscan::FindingRef]| -> Vec<String> {
        list.iter().map(|f| f.path.clone()).collect()
    };
    assert_eq!(paths(&since.fixed), ["a/f0.rs"]);
    assert_eq!(paths(&since.new), ["c/f1.rs"]);
    assert_eq!(paths(&since.not_checked), ["d/f0.rs", "d/f1.rs"]);
    // c/f1.rs keeps its first finding (same evidence) and gains one.
    assert_eq!(since.unchanged, 5);
    assert_eq!(since.by_severity["medium"].fixed, 1);
    let md = second.render(fanscan::Format::Md).unwrap();
    assert!(md.contains("## Since the last complete run"), "{md}");
    assert!(
        md.contains("1 new, 1 fixed, 5 unchanged, 2 not checked"),
        "{md}"
    );
}

/// A slow model: each answer takes `delay`.
fn slow_auditor(delay: Duration) -> crate::common::Behaviour {
    let inner = auditor_behaviour("risky_");
    Box::new(move |body: &Value, i| inner(body, i).set_delay(delay))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_killed_mid_scan_resumes_with_only_the_unfinished_groups() {
    let repo = tree();
    let mock = MockModel::openai(slow_auditor(Duration::from_millis(300))).await;
    let root = repo.path().to_str().unwrap().to_string();
    let base = mock.base_url();
    let args = [
        "scan",
        root.as_str(),
        "--provider",
        "openai",
        "--model",
        "mock-model",
        "--base-url",
        base.as_str(),
        "--group-tokens",
        "110",
        "--jobs",
        "1",
        "--format",
        "json",
        "--quiet",
    ];
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_fanscan"))
        .args(args)
        .env_remove("OPENAI_API_KEY")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Each group is three calls (read, answer, forced summary); with one
    // job a group starts only after the one before was committed. Wait
    // for the third group's first call: two groups are done and committed,
    // the third is in flight.
    mock.wait_for_requests(7).await;
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let first_asked = asked_groups(&mock, 0);

    let db = rusqlite::Connection::open(repo.path().join(".fanscan/store.db")).unwrap();
    let mut stmt = db
        .prepare("SELECT group_id FROM group_results WHERE kind = 'group'")
        .unwrap();
    let finished: BTreeSet<String> = stmt
        .query_map([], |r| r.get::<_, String>(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(finished.len() >= 2, "committed: {finished:?}");
    assert!(finished.len() < 4);
    assert!(finished.is_subset(&first_asked));

    let before = mock.requests().len();
    let owned: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let out = tokio::task::spawn_blocking(move || {
        fanscan(&owned.iter().map(String::as_str).collect::<Vec<_>>())
    })
    .await
    .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Report = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report.complete);
    let second_asked = asked_groups(&mock, before);
    assert!(
        second_asked.is_disjoint(&finished),
        "re-asked finished groups: {second_asked:?} of {finished:?}"
    );
    assert_eq!(second_asked.len() + finished.len(), 4);
    assert_eq!(report.stats.resumed_groups, finished.len());
    assert_eq!(report.stats.cached_groups, finished.len());
    assert_eq!(report.findings.len(), 8);
    // Every request of the second run was for an unfinished group.
    for seen in &mock.requests()[before..] {
        let files = task_files(&seen.body);
        assert!(
            files
                .iter()
                .all(|f| !finished.iter().any(|g| f.contains(g.as_str())))
        );
    }
    drop(stmt);
}

#[test]
fn two_concurrent_runs_share_one_store() {
    let repo = tree();
    let root = repo.path().to_str().unwrap().to_string();
    let run = || {
        let root = root.clone();
        std::thread::spawn(move || {
            fanscan(&[
                "scan",
                &root,
                "--quiet",
                "--format",
                "json",
                "--group-tokens",
                "100",
                "-j",
                "4",
            ])
        })
    };
    let (a, b) = (run(), run());
    for out in [a.join().unwrap(), b.join().unwrap()] {
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let db = rusqlite::Connection::open(repo.path().join(".fanscan/store.db")).unwrap();
    let check: String = db
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    let runs: i64 = db
        .query_row("SELECT count(*) FROM runs WHERE complete = 1", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(runs, 2);
    let history = fanscan(&["history", &root]);
    assert_eq!(history.status.code(), Some(0));
    let text = String::from_utf8(history.stdout).unwrap();
    assert_eq!(
        text.lines().filter(|l| l.contains("complete")).count(),
        2,
        "{text}"
    );
}

#[test]
fn a_corrupted_or_foreign_store_is_a_clear_error() {
    let repo = tree();
    let root = repo.path().to_str().unwrap().to_string();
    repo.write(".fanscan/store.db", &"not a database ".repeat(1000));
    let out = fanscan(&["scan", &root, "--quiet"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("store.db: not a fanscan run store") && err.contains("--no-store"),
        "{err}"
    );
    assert!(!err.contains("panicked"));
    // --no-store runs without it.
    assert_eq!(
        fanscan(&["scan", &root, "--quiet", "--no-store"])
            .status
            .code(),
        Some(0)
    );

    let other = repo.path().join("other.db");
    let conn = rusqlite::Connection::open(&other).unwrap();
    conn.execute_batch("CREATE TABLE accounts (id INTEGER);")
        .unwrap();
    drop(conn);
    let out = fanscan(&["scan", &root, "--quiet", "--store", other.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("application_id"));
}

#[test]
fn history_and_diff_of_two_runs() {
    let repo = tree();
    let root = repo.path().to_str().unwrap().to_string();
    let out_dir = tempfile::tempdir().unwrap();
    let json = |name: &str| {
        let path = out_dir.path().join(name);
        let out = fanscan(&[
            "scan",
            &root,
            "--quiet",
            "--format",
            "json",
            "-o",
            path.to_str().unwrap(),
        ]);
        assert!(
            out.status.code() == Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        path
    };
    let a = json("a.json");
    let b = json("b.json");
    let store = repo.path().join(".fanscan/store.db");
    let by_id = fanscan(&["diff", "1", "2", "--store", store.to_str().unwrap()]);
    assert_eq!(
        by_id.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&by_id.stderr)
    );
    let text = String::from_utf8(by_id.stdout).unwrap();
    assert!(text.starts_with("1 -> 2: 0 new, 0 fixed"), "{text}");
    let by_file = fanscan(&["diff", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert!(
        String::from_utf8(by_file.stdout)
            .unwrap()
            .contains(": 0 new, 0 fixed")
    );
    let missing = fanscan(&["diff", "1", "9", "--store", store.to_str().unwrap()]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no run 9"));
}

#[test]
fn a_scan_of_a_relative_root_is_cached_like_any_other() {
    let repo = tree();
    let run = || {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_fanscan"))
            .current_dir(repo.path())
            .args([
                "scan",
                ".",
                "--quiet",
                "--format",
                "json",
                "--fail-on",
                "never",
            ])
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<fanscan::Report>(&out.stdout).unwrap()
    };
    let cold = run();
    assert_eq!(cold.stats.cached_groups, 0);
    let warm = run();
    assert_eq!(
        warm.stats.cached_groups,
        warm.groups.len(),
        "every group from the store"
    );
    assert!(!warm.groups.is_empty());
}

#[tokio::test]
async fn a_store_outside_the_repository_changes_nothing_a_rescan_sees() {
    // `fanscan scan --store /srv/audits/app.db /srv/audits/repo`: the store
    // writes no `.gitignore` beside a path the user chose, so the next scan
    // of the repository under it still plans its `.gitignore` files and
    // asks no model.
    let audits = tempfile::tempdir().unwrap();
    let root = audits.path().join("repo");
    let padding = "// ".to_string() + &"pad ".repeat(28);
    for dir in ["a", "b"] {
        for i in 0..2 {
            let path = root.join(format!("{dir}/f{i}.rs"));
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(
                path,
                format!("fn f{i}() {{\n    let x = risky_{dir}();\n}}\n{padding}\n"),
            )
            .unwrap();
        }
    }
    std::fs::write(root.join(".gitignore"), "*.log\n").unwrap();
    std::fs::write(root.join("a/.gitignore"), "*.tmp\n").unwrap();
    let store = audits.path().join("app.db");
    let args = ScanArgs {
        store: Some(store.clone()),
        ..one_group_per_dir()
    };
    let mock = MockModel::openai(auditor_behaviour("risky_")).await;
    let scan = || async {
        let ctx = Context::new(mock.settings(&root, &args)).unwrap();
        let ui = Ui::hidden();
        fanscan::scan(&ctx, &ui).await.unwrap()
    };
    let planned = |report: &Report| -> BTreeSet<String> {
        report
            .plan
            .groups
            .iter()
            .flat_map(|g| g.files.iter().cloned())
            .collect()
    };

    let first = scan().await;
    assert!(first.complete, "{:?}", first.incomplete_reasons);
    assert!(store.is_file());
    let mut beside: Vec<String> = std::fs::read_dir(audits.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| !name.starts_with("app.db"))
        .collect();
    beside.sort();
    assert_eq!(beside, vec!["repo"], "nothing but the store beside it");
    assert!(!root.join(".fanscan").exists());
    let files = planned(&first);
    assert!(
        files.contains(".gitignore") && files.contains("a/.gitignore"),
        "{files:?}"
    );

    let asked = mock.requests().len();
    let second = scan().await;
    assert_eq!(planned(&second), files);
    assert_eq!(second.plan, first.plan);
    assert_eq!(
        mock.requests().len(),
        asked,
        "an unchanged re-scan called the model"
    );
    assert_eq!(second.stats.cached_groups, second.groups.len());
}
