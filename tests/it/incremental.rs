//! Re-auditing what changed: a re-run sends only changed files to a model,
//! in groups of changed files, and carries every unchanged file's results
//! over, re-verified against today's text; an earlier finding on a changed
//! file moves with its evidence and leaves only when it is gone; `--full`
//! audits everything again; shards whose groups were carried merge. A
//! mock model over real HTTP, real stores.

use std::collections::BTreeSet;

use serde_json::{Value, json};
use wiremock::ResponseTemplate;

use fanscan::{Context, ProviderArgs, Report, RunArgs, ScanArgs, Ui};

use crate::common::{MockModel, Repo, auditor_behaviour, findings_turn, task_files};

/// Four directories of two files, one group each; every file calls
/// `risky_<dir>()` on its second line.
fn tree() -> Repo {
    let padding = "// ".to_string() + &"pad ".repeat(28);
    let files: Vec<(String, String)> = ["a", "b", "c", "d"]
        .iter()
        .flat_map(|dir| {
            let padding = padding.clone();
            (0..2).map(move |i| {
                (
                    format!("{dir}/f{i}.rs"),
                    format!("fn f{i}() {{\n    let x = risky_{dir}();\n}}\n{padding}\n"),
                )
            })
        })
        .collect();
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    Repo::new(&refs)
}

fn args(full: bool) -> ScanArgs {
    ScanArgs {
        group_tokens: Some(110),
        jobs: Some(2),
        no_cache: full,
        ..ScanArgs::default()
    }
}

async fn scan(mock: &MockModel, repo: &Repo, scan: ScanArgs) -> Report {
    let args = RunArgs {
        provider: ProviderArgs {
            model: Some("mock-model".into()),
            ..ProviderArgs::default()
        },
        scan,
        ..RunArgs::default()
    };
    let ctx = Context::new(mock.settings_with(repo.path(), args)).unwrap();
    fanscan::scan(&ctx, &Ui::hidden()).await.unwrap()
}

/// The audit tasks sent from request `from` on: group id and its files.
fn asked(mock: &MockModel, from: usize) -> BTreeSet<(String, Vec<String>)> {
    mock.requests()[from..]
        .iter()
        .filter_map(|s| {
            let task = s.body["messages"].as_array()?.iter().find_map(|m| {
                let text = m["content"].as_str()?;
                Some(
                    text.strip_prefix("TASK: audit-group ")?
                        .lines()
                        .next()?
                        .to_string(),
                )
            })?;
            Some((task, task_files(&s.body)))
        })
        .collect()
}

fn verified(report: &Report) -> BTreeSet<(String, u32)> {
    report
        .findings
        .iter()
        .map(|m| (m.finding.path.clone(), m.finding.line))
        .collect()
}

fn carried(report: &Report) -> BTreeSet<String> {
    report
        .coverage
        .carried
        .iter()
        .map(|c| c.path.clone())
        .collect()
}

#[tokio::test]
async fn a_changed_file_is_audited_alone_and_its_neighbours_are_carried_over() {
    let repo = tree();
    let mock = MockModel::openai(auditor_behaviour("risky_")).await;
    let cold = scan(&mock, &repo, args(false)).await;
    assert!(cold.complete, "{:?}", cold.incomplete_reasons);
    assert_eq!(cold.findings.len(), 8);
    assert!(cold.coverage.carried.is_empty(), "a cold run audits all");

    // a/f0.rs changes: its finding moves two lines down.
    repo.write(
        "a/f0.rs",
        "// new header\n// more\nfn f0() {\n    let x = risky_a();\n}\n",
    );
    let before = mock.requests().len();
    let again = scan(&mock, &repo, args(false)).await;
    assert!(again.complete, "{:?}", again.incomplete_reasons);
    let tasks = asked(&mock, before);
    assert_eq!(tasks.len(), 1, "{tasks:?}");
    let (group, files) = tasks.iter().next().unwrap();
    assert!(group.starts_with("changed-"), "{group}");
    assert_eq!(files, &vec!["a/f0.rs".to_string()], "only the changed file");
    // The task tells what the earlier run found beside it.
    let task_text = mock.requests()[before].body["messages"][1]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(task_text.contains("a/f1.rs:2 uses risky_"), "{task_text}");

    // Every other file was carried over from the cold run.
    let all: BTreeSet<String> = cold.coverage.reviewed.iter().cloned().collect();
    let mut expected = all.clone();
    expected.remove("a/f0.rs");
    assert_eq!(carried(&again), expected);
    assert!(
        again
            .coverage
            .carried
            .iter()
            .all(|c| Some(c.run) == cold.run_id)
    );
    assert_eq!(
        again
            .coverage
            .reviewed
            .iter()
            .cloned()
            .collect::<BTreeSet<_>>(),
        all
    );
    // The plan's groups stand: the changed one put back together.
    let ids = |r: &Report| {
        r.plan
            .groups
            .iter()
            .map(|g| g.id.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(&again), ids(&cold));
    assert_eq!(again.groups.len(), 4);
    let mut lines = verified(&cold);
    lines.remove(&("a/f0.rs".to_string(), 2));
    lines.insert(("a/f0.rs".to_string(), 4));
    assert_eq!(verified(&again), lines);
    assert_eq!(again.findings.len(), 8, "no finding twice");

    // The next unchanged run reuses every group whole, with no call.
    let before = mock.requests().len();
    let third = scan(&mock, &repo, args(false)).await;
    assert_eq!(mock.requests().len(), before);
    assert_eq!(third.stats.cached_groups, 4);
    let from_second = third
        .coverage
        .carried
        .iter()
        .find(|c| c.path == "a/f0.rs")
        .unwrap();
    assert_eq!(
        Some(from_second.run),
        again.run_id,
        "audited by the second run"
    );

    // `history` shows both counts: 8 audited first, then 1 audited and 7
    // carried, then 8 carried.
    let history = fanscan::history_text(&repo.path().join(".fanscan/store.db")).unwrap();
    let counts: Vec<(String, String)> = history
        .lines()
        .skip(1)
        .map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            let at = cols.iter().position(|c| c.contains('/')).unwrap();
            (cols[at + 1].to_string(), cols[at + 2].to_string())
        })
        .collect();
    let expected: Vec<(String, String)> = [("8", "0"), ("1", "7"), ("0", "8")]
        .iter()
        .map(|(a, c)| (a.to_string(), c.to_string()))
        .collect();
    assert_eq!(counts, expected, "{history}");
}

/// A model that reports nothing: what is found after it is what the store
/// carried over and verification kept.
fn silent() -> crate::common::Behaviour {
    Box::new(|_: &Value, _| ResponseTemplate::new(200).set_body_json(findings_turn(json!([]))))
}

#[tokio::test]
async fn carried_findings_are_reverified_and_fixed_ones_leave() {
    let repo = tree();
    let auditor = MockModel::openai(auditor_behaviour("risky_")).await;
    let cold = scan(&auditor, &repo, args(false)).await;
    assert_eq!(cold.findings.len(), 8);

    // a/f0.rs: the risky line moved; b/f0.rs: the risky line is gone.
    repo.write(
        "a/f0.rs",
        "// moved\nfn f0() {\n    let x = risky_a();\n}\n",
    );
    repo.write("b/f0.rs", "fn f0() {\n    let x = safe();\n}\n");
    // Same model name, a model that finds nothing: whatever is found is
    // the earlier run's, re-verified against today's text.
    let quiet = MockModel::openai(silent()).await;
    let again = scan(&quiet, &repo, args(false)).await;
    assert!(again.complete, "{:?}", again.incomplete_reasons);
    let mut expected = verified(&cold);
    expected.remove(&("a/f0.rs".to_string(), 2));
    expected.insert(("a/f0.rs".to_string(), 3));
    expected.remove(&("b/f0.rs".to_string(), 2));
    assert_eq!(
        verified(&again),
        expected,
        "moved with its evidence; fixed one gone"
    );
    assert!(
        again
            .notes
            .iter()
            .any(|n| n.contains("1 earlier findings on changed files left")),
        "{:?}",
        again.notes
    );
    let since = again.since_last_run.as_ref().unwrap();
    assert_eq!(since.fixed.len(), 1, "the fixed finding is reported fixed");
    assert!(again.unverified.is_empty(), "{:?}", again.unverified);
}

#[tokio::test]
async fn full_re_audits_everything() {
    let repo = tree();
    let mock = MockModel::openai(auditor_behaviour("risky_")).await;
    let cold = scan(&mock, &repo, args(false)).await;
    repo.write(
        "c/f1.rs",
        "fn f1() {\n    let x = risky_c();\n    risky_c();\n}\n",
    );
    let before = mock.requests().len();
    let full = scan(&mock, &repo, args(true)).await;
    assert!(full.complete, "{:?}", full.incomplete_reasons);
    let groups: BTreeSet<String> = asked(&mock, before).into_iter().map(|(g, _)| g).collect();
    let planned: BTreeSet<String> = cold.plan.groups.iter().map(|g| g.id.clone()).collect();
    assert_eq!(groups, planned, "every plan group asked whole");
    assert!(full.coverage.carried.is_empty());
    assert_eq!(full.stats.cached_groups, 0);
    assert_eq!(full.findings.len(), 9);
}

#[tokio::test]
async fn a_merge_accepts_parts_whose_groups_were_carried_over() {
    let repo = tree();
    let mock = MockModel::openai(auditor_behaviour("risky_")).await;
    let store = tempfile::tempdir().unwrap();
    let with_store = |shard: Option<&str>| RunArgs {
        provider: ProviderArgs {
            model: Some("mock-model".into()),
            ..ProviderArgs::default()
        },
        scan: ScanArgs {
            store: Some(store.path().join("store.db")),
            ..args(false)
        },
        shard: fanscan::ShardArgs {
            shard: shard.map(|s| fanscan::Shard::parse(s).unwrap()),
            ..fanscan::ShardArgs::default()
        },
        ..RunArgs::default()
    };
    let run = |args: RunArgs| {
        let ctx = Context::new(mock.settings_with(repo.path(), args)).unwrap();
        async move { fanscan::scan(&ctx, &Ui::hidden()).await.unwrap() }
    };
    let cold = run(with_store(None)).await;
    repo.write(
        "c/f0.rs",
        "// moved\nfn f0() {\n    let x = risky_c();\n}\n",
    );
    let out = tempfile::tempdir().unwrap();
    let mut parts = Vec::new();
    let mut carried_over = 0;
    for k in 1..=2 {
        let part = run(with_store(Some(&format!("{k}/2")))).await;
        carried_over += part.coverage.carried.len();
        let path = out.path().join(format!("part-{k}.json"));
        std::fs::write(&path, part.render(fanscan::Format::Json).unwrap()).unwrap();
        parts.push(path);
    }
    assert_eq!(
        carried_over, 7,
        "every file but the changed one carried over"
    );
    let ctx = Context::new(mock.settings_with(repo.path(), with_store(None))).unwrap();
    let merged = fanscan::merge(&ctx, &Ui::hidden(), &parts).await.unwrap();
    assert!(merged.complete, "{:?}", merged.incomplete_reasons);
    assert_eq!(merged.coverage.reviewed, cold.coverage.reviewed);
    assert_eq!(merged.coverage.carried.len(), 7);
    assert!(!carried(&merged).contains("c/f0.rs"));
    let mut lines = verified(&cold);
    lines.remove(&("c/f0.rs".to_string(), 2));
    lines.insert(("c/f0.rs".to_string(), 3));
    assert_eq!(verified(&merged), lines);
}

/// The auditor of [`auditor_behaviour`], and a reducer that answers with a
/// summary.
fn auditor_and_reducer() -> crate::common::Behaviour {
    Box::new(|body: &Value, _| {
        let task = body["messages"][1]["content"].as_str().unwrap_or_default();
        let reply = if task.starts_with("TASK: reduce") {
            crate::common::text_turn(
                "```json\n{\"summary\": \"Risky calls everywhere.\", \"ranking\": []}\n```",
            )
        } else {
            crate::common::auditor_reply("risky_", body)
        };
        ResponseTemplate::new(200).set_body_json(reply)
    })
}

#[tokio::test]
async fn a_small_change_updates_the_last_summary_with_only_the_changed_groups() {
    let repo = tree();
    let mock = MockModel::openai(auditor_and_reducer()).await;
    let cold = scan(&mock, &repo, args(false)).await;
    assert_eq!(cold.summary, "Risky calls everywhere.");
    repo.write(
        "d/f1.rs",
        "fn f1() {\n    let x = risky_d();\n    other();\n}\n",
    );
    let before = mock.requests().len();
    let again = scan(&mock, &repo, args(false)).await;
    let reduce: Vec<Value> = mock.requests()[before..]
        .iter()
        .filter_map(|s| {
            let task = s.body["messages"][1]["content"].as_str()?;
            let json = task.strip_prefix("TASK: reduce")?;
            let block = json.split("```json\n").nth(1)?.split("\n```").next()?;
            serde_json::from_str(block).ok()
        })
        .collect();
    assert_eq!(reduce.len(), 1);
    let input = &reduce[0];
    assert_eq!(input["previous_summary"], "Risky calls everywhere.");
    let groups: Vec<&str> = input["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|g| g["group"].as_str())
        .collect();
    assert_eq!(groups.len(), 1, "only the changed group: {groups:?}");
    assert!(groups[0].starts_with("d-"), "{groups:?}");
    assert_eq!(input["findings"].as_array().unwrap().len(), 2);
    // Every finding is still ranked in the report.
    assert_eq!(again.findings.len(), 8);
    assert!(
        again
            .notes
            .iter()
            .any(|n| n.contains("updated from the last run's")),
        "{:?}",
        again.notes
    );
}

#[tokio::test]
async fn the_report_says_how_token_estimates_were_calibrated_on_the_servers_counts() {
    let repo = tree();
    // The mock counts a prompt as its body's bytes / 4 (its own rule).
    let mock = MockModel::openai(Box::new(|body: &Value, _| {
        let reply = crate::common::metered(crate::common::auditor_reply("risky_", body), body);
        ResponseTemplate::new(200).set_body_json(reply)
    }))
    .await;
    let report = scan(&mock, &repo, args(true)).await;
    let estimate = report.stats.token_estimate.clone().unwrap();
    assert_eq!(estimate.method, "calibrated");
    assert!(estimate.calls >= 2, "{estimate:?}");
    // The body's JSON (tool schemas, roles) is more than the text we
    // estimate from, so the ratio is near but not exactly 3/4.
    assert!((0.5..1.5).contains(&estimate.ratio), "{estimate:?}");
    let markdown = report.render(fanscan::Format::Md).unwrap();
    assert!(
        markdown.contains("token estimates: bytes / 3, calibrated"),
        "{markdown}"
    );
    assert_eq!(estimate.counted_with, "bytes / 3");
}
