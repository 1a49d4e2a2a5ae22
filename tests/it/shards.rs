//! Shards and merge: `scan --shard K/N` parts merged equal one run (the
//! real binary with the offline engine, and the library against the mock
//! model); merge refuses parts of another plan, a missing and a doubled
//! shard, and a changed checkout; bad `--shard` values are usage errors.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use fanscan::{Context, Report, RunArgs, ScanArgs, Shard, ShardArgs, Ui};

use crate::common::{MockModel, Repo, auditor_behaviour, fanscan};

/// Six directories, one group each with `--group-tokens 250`; every file
/// has an `.unwrap()` and a TODO the offline rules report.
fn tree() -> Repo {
    let padding = "// ".to_string() + &"pad ".repeat(28);
    Repo::tree(&["a", "b", "c", "d", "e", "f"], 2, |dir, i| {
        (
            format!("{dir}/f{i}.rs"),
            format!(
                "fn f{i}(s: &str) -> u32 {{\n    // TODO: handle errors in {dir}\n    s.parse().unwrap()\n}}\n{padding}\n"
            ),
        )
    })
}

const GROUP_TOKENS: &str = "250";

fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Runs `scan --shard K/N` for every K, parts written to `out`.
fn scan_parts(repo: &Repo, count: usize, out: &Path) -> Vec<PathBuf> {
    (1..=count)
        .map(|k| {
            let part = out.join(format!("part-{k}.json"));
            let shard = format!("{k}/{count}");
            let run = fanscan(&[
                "scan",
                path_str(repo.path()),
                "--no-store",
                "--group-tokens",
                GROUP_TOKENS,
                "--shard",
                &shard,
                "--format",
                "json",
                "--output",
                path_str(&part),
                "--quiet",
            ]);
            assert_eq!(
                run.status.code(),
                Some(0),
                "{}",
                String::from_utf8_lossy(&run.stderr)
            );
            part
        })
        .collect()
}

fn merge(repo: &Repo, parts: &[&Path], format: &str) -> std::process::Output {
    let mut args = vec![
        "merge",
        "--path",
        path_str(repo.path()),
        "--no-store",
        "--group-tokens",
        GROUP_TOKENS,
        "--format",
        format,
        "--quiet",
    ];
    args.extend(parts.iter().map(|p| path_str(p)));
    fanscan(&args)
}

fn read_report(path: &Path) -> Report {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn fingerprints(report: &Report) -> Vec<String> {
    report
        .findings
        .iter()
        .map(|m| m.fingerprint.clone())
        .collect()
}

fn unsharded(repo: &Repo, format: &str) -> std::process::Output {
    fanscan(&[
        "scan",
        path_str(repo.path()),
        "--no-store",
        "--group-tokens",
        GROUP_TOKENS,
        "--format",
        format,
        "--quiet",
    ])
}

#[test]
fn three_shards_merged_are_one_run() {
    let repo = tree();
    let out = tempfile::tempdir().unwrap();
    let parts = scan_parts(&repo, 3, out.path());

    // Each part names its shard and plan; together they hold every group once.
    let loaded: Vec<Report> = parts.iter().map(|p| read_report(p)).collect();
    let plan_hash = &loaded[0].manifest.plan_hash;
    assert_eq!(loaded[0].plan.groups.len(), 6);
    let mut ran = Vec::new();
    for (k, part) in loaded.iter().enumerate() {
        let shard = part
            .shard
            .as_ref()
            .expect("a partial report names its shard");
        assert_eq!((shard.index, shard.count), (k + 1, 3));
        assert_eq!(&shard.plan_hash, plan_hash);
        assert!(!shard.groups.is_empty(), "6 groups over 3 shards");
        assert_eq!(
            shard.reports.iter().map(|r| &r.group).collect::<Vec<_>>(),
            shard.groups.iter().collect::<Vec<_>>()
        );
        ran.extend(shard.groups.clone());
    }
    let all: BTreeSet<String> = loaded[0].plan.groups.iter().map(|g| g.id.clone()).collect();
    assert_eq!(ran.len(), all.len());
    assert_eq!(ran.into_iter().collect::<BTreeSet<_>>(), all);

    let merged = merge(&repo, &[&parts[0], &parts[1], &parts[2]], "json");
    let one = unsharded(&repo, "json");
    assert_eq!(
        merged.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&merged.stderr)
    );
    assert_eq!(merged.status.code(), one.status.code());
    let merged: Report = serde_json::from_slice(&merged.stdout).unwrap();
    let one: Report = serde_json::from_slice(&one.stdout).unwrap();
    assert!(merged.shard.is_none(), "the merged report is a whole run");
    assert!(!fingerprints(&one).is_empty(), "the tree has findings");
    assert_eq!(fingerprints(&merged), fingerprints(&one));
    assert_eq!(merged.findings, one.findings);
    assert_eq!(merged.unverified, one.unverified);
    assert_eq!(merged.coverage, one.coverage);
    assert_eq!(merged.manifest.plan_hash, one.manifest.plan_hash);
    assert_eq!(merged.complete, one.complete);
    assert_eq!(merged.groups.len(), one.groups.len());
    assert_eq!(merged.stats.input_tokens, one.stats.input_tokens);

    // Another format: the same SARIF results.
    let sarif = |o: std::process::Output| -> serde_json::Value {
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["runs"][0]["results"].clone()
    };
    assert_eq!(
        sarif(merge(&repo, &[&parts[2], &parts[0], &parts[1]], "sarif")),
        sarif(unsharded(&repo, "sarif"))
    );
}

#[test]
fn merge_refuses_a_missing_a_doubled_shard_and_another_plan() {
    let repo = tree();
    let out = tempfile::tempdir().unwrap();
    let parts = scan_parts(&repo, 3, out.path());

    let missing = merge(&repo, &[&parts[0], &parts[2]], "json");
    assert_eq!(missing.status.code(), Some(2));
    let text = String::from_utf8_lossy(&missing.stderr);
    assert!(text.contains("shard 2 of 3 is missing"), "{text}");

    let doubled = merge(&repo, &[&parts[0], &parts[1], &parts[1], &parts[2]], "json");
    assert_eq!(doubled.status.code(), Some(2));
    let text = String::from_utf8_lossy(&doubled.stderr);
    assert!(
        text.contains("shard 2/3 is given twice") && text.contains("part-2.json"),
        "{text}"
    );

    // A part of another plan: the repository grew a file before shard 3 ran.
    let other = Repo::new(&[("x/new.rs", "fn x() {}\n")]);
    copy_tree(repo.path(), other.path());
    let other_dir = tempfile::tempdir().unwrap();
    let other_parts = scan_parts(&other, 3, other_dir.path());
    let mixed = merge(&repo, &[&parts[0], &parts[1], &other_parts[2]], "json");
    assert_eq!(mixed.status.code(), Some(2));
    let text = String::from_utf8_lossy(&mixed.stderr);
    assert!(
        text.contains("another plan") && text.contains(path_str(&other_parts[2])),
        "{text}"
    );

    // A whole run's report is not a part.
    let whole = out.path().join("whole.json");
    std::fs::write(&whole, unsharded(&repo, "json").stdout).unwrap();
    let not_part = merge(&repo, &[&whole], "json");
    assert_eq!(not_part.status.code(), Some(2));
    let text = String::from_utf8_lossy(&not_part.stderr);
    assert!(text.contains("not of a shard"), "{text}");

    // A checkout whose files differ from what the shards audited.
    repo.write(
        "a/f0.rs",
        "fn f0() {}\n// changed after the shards ran, same plan? no\n",
    );
    let changed = merge(&repo, &[&parts[0], &parts[1], &parts[2]], "json");
    assert_eq!(changed.status.code(), Some(2));
    let text = String::from_utf8_lossy(&changed.stderr);
    assert!(text.contains("checkout"), "{text}");
}

fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[test]
fn a_same_sized_edit_is_caught_by_the_file_hashes() {
    let repo = tree();
    let out = tempfile::tempdir().unwrap();
    let parts = scan_parts(&repo, 2, out.path());
    // Same length, so the same plan: only the content hash tells.
    let before = std::fs::read_to_string(repo.path().join("c/f1.rs")).unwrap();
    repo.write("c/f1.rs", &before.replacen("TODO", "DONE", 1));
    let merged = merge(&repo, &[&parts[0], &parts[1]], "json");
    assert_eq!(merged.status.code(), Some(2));
    let text = String::from_utf8_lossy(&merged.stderr);
    assert!(
        text.contains("c/f1.rs") && text.contains("not the file shard"),
        "{text}"
    );
}

#[test]
fn bad_shards_are_usage_errors_with_the_fix() {
    let repo = tree();
    let root = path_str(repo.path());
    for (value, says) in [
        ("0/3", "counted from 1"),
        ("4/3", "shard 4 of 3 does not exist"),
        ("x", "not K/N"),
        ("1/0", "shard count must be from 1"),
    ] {
        let run = fanscan(&["scan", root, "--no-store", "--shard", value]);
        assert_eq!(run.status.code(), Some(2), "--shard {value}");
        let text = String::from_utf8_lossy(&run.stderr);
        assert!(
            text.contains(says) && text.contains("--shard"),
            "{value}: {text}"
        );
    }
    // --shard-count without --shard-from-env, and the reverse.
    let run = fanscan(&["scan", root, "--shard-count", "3"]);
    assert_eq!(run.status.code(), Some(2));
    let run = fanscan(&["scan", root, "--shard-from-env"]);
    assert_eq!(run.status.code(), Some(2));
}

#[test]
fn shard_from_env_takes_the_completion_index() {
    let repo = tree();
    let out = tempfile::tempdir().unwrap();
    let part = out.path().join("part.json");
    let run = |index: Option<&str>| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_fanscan"));
        cmd.args([
            "scan",
            path_str(repo.path()),
            "--no-store",
            "--group-tokens",
            GROUP_TOKENS,
            "--shard-from-env",
            "--shard-count",
            "3",
            "--format",
            "json",
            "--output",
            path_str(&part),
            "--quiet",
        ]);
        cmd.env_remove("JOB_COMPLETION_INDEX");
        if let Some(i) = index {
            cmd.env("JOB_COMPLETION_INDEX", i);
        }
        cmd.output().unwrap()
    };
    let ok = run(Some("1"));
    assert_eq!(
        ok.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let shard = read_report(&part).shard.unwrap();
    assert_eq!((shard.index, shard.count), (2, 3));
    for (index, says) in [
        (None, "needs $JOB_COMPLETION_INDEX"),
        (Some("3"), "not below --shard-count 3"),
        (Some("one"), "not a number"),
    ] {
        let bad = run(index);
        assert_eq!(bad.status.code(), Some(2), "{index:?}");
        let text = String::from_utf8_lossy(&bad.stderr);
        assert!(text.contains(says), "{index:?}: {text}");
    }
}

/// The groups whose audit task the model was sent, from request `from` on.
fn asked_groups(mock: &MockModel, from: usize) -> Vec<String> {
    mock.requests()[from..]
        .iter()
        .filter_map(|s| {
            s.body["messages"].as_array()?.iter().find_map(|m| {
                let text = m["content"].as_str()?;
                let rest = text.strip_prefix("TASK: audit-group ")?;
                Some(rest.lines().next()?.to_string())
            })
        })
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

#[tokio::test]
async fn shards_against_a_model_ask_each_group_once_share_one_quota_and_merge_to_one_run() {
    let repo = tree();
    let mock = MockModel::openai(auditor_behaviour("unwrap")).await;
    let args = ScanArgs {
        group_tokens: Some(250),
        no_store: true,
        max_cost: Some(10.0),
        max_tokens: Some(50_000_001),
        ..ScanArgs::default()
    };
    // A priced model, so that cost is counted, and a rate high enough not
    // to slow the test.
    let provider = fanscan::ProviderArgs {
        model: Some("gpt-4o-mini".into()),
        rpm: Some(60_000),
        ..fanscan::ProviderArgs::default()
    };
    let out = tempfile::tempdir().unwrap();
    let mut parts = Vec::new();
    let mut asked = Vec::new();
    for k in 1..=2 {
        let from = mock.requests().len();
        let shard = ShardArgs {
            shard: Some(Shard::parse(&format!("{k}/2")).unwrap()),
            ..ShardArgs::default()
        };
        let settings = mock.settings_with(
            repo.path(),
            RunArgs {
                provider: provider.clone(),
                scan: args.clone(),
                shard,
                ..RunArgs::default()
            },
        );
        let ctx = Context::new(settings).unwrap();
        let part = fanscan::scan(&ctx, &Ui::hidden()).await.unwrap();
        let shard = part.shard.clone().unwrap();
        // Each shard took half of each limit and budget, and says so.
        let quota = shard.quota.clone().unwrap();
        assert_eq!(quota.shards, 2);
        assert_eq!(
            (quota.rpm.whole, quota.rpm.per_shard, quota.rpm.how),
            (Some(60_000), Some(30_000), fanscan::ShareKind::Split)
        );
        assert_eq!(quota.max_cost.per_shard, Some(5.0));
        assert_eq!(quota.max_tokens.per_shard, Some(25_000_000));
        assert_eq!(quota.tpm.how, fanscan::ShareKind::Unlimited);
        let json: serde_json::Value =
            serde_json::from_str(&part.render(fanscan::Format::Json).unwrap()).unwrap();
        assert_eq!(
            json["shard"]["quota"]["rpm"],
            serde_json::json!({"whole": 60000, "per_shard": 30000, "how": "split"})
        );
        let md = part.render(fanscan::Format::Md).unwrap();
        assert!(
            md.contains("This shard's limits: rpm 30000 (60000 split 2 ways), tpm unlimited, max cost $5.0000 ($10.0000 split 2 ways), max tokens 25000000 (50000001 split 2 ways)."),
            "{md}"
        );
        // The shard asked the model for its own groups only, and no reducer.
        assert_eq!(asked_groups(&mock, from), {
            let mut g = shard.groups.clone();
            g.sort();
            g
        });
        asked.extend(shard.groups.clone());
        let path = out.path().join(format!("part-{k}.json"));
        std::fs::write(&path, part.render(fanscan::Format::Json).unwrap()).unwrap();
        parts.push(path);
    }
    asked.sort();
    asked.dedup();
    assert_eq!(asked.len(), 6, "every group asked once across the shards");

    let unsharded = || RunArgs {
        provider: provider.clone(),
        scan: args.clone(),
        ..RunArgs::default()
    };
    let ctx = Context::new(mock.settings_with(repo.path(), unsharded())).unwrap();
    let from = mock.requests().len();
    let merged = fanscan::merge(&ctx, &Ui::hidden(), &parts).await.unwrap();
    assert!(
        asked_groups(&mock, from).is_empty(),
        "merge audits nothing again"
    );

    let one_ctx = Context::new(mock.settings_with(repo.path(), unsharded())).unwrap();
    let one = fanscan::scan(&one_ctx, &Ui::hidden()).await.unwrap();
    assert!(!one.findings.is_empty());
    let set = |r: &Report| {
        r.findings
            .iter()
            .map(|m| m.fingerprint.clone())
            .collect::<BTreeSet<_>>()
    };
    assert_eq!(set(&merged), set(&one));
    assert_eq!(merged.coverage, one.coverage);
    assert_eq!(merged.complete, one.complete);
    // The merged tokens are the shards' and the merge's reducer call.
    let shard_tokens: u64 = parts
        .iter()
        .map(|p| read_report(p).stats.input_tokens)
        .sum();
    assert!(
        merged.stats.input_tokens > shard_tokens,
        "the reducer's call is counted too"
    );
    assert!(merged.stats.agents.contains_key("reducer"));
    // The merge sums what the shards spent, agent by agent; only the
    // merge's own stages (reducer, skeptic) add to it.
    let parts: Vec<Report> = parts.iter().map(|p| read_report(p)).collect();
    assert!(
        parts
            .iter()
            .all(|p| p.stats.agents["auditor"].usage.input_tokens > 0)
    );
    let mut own_cost = 0.0;
    for (name, used) in &merged.stats.agents {
        let of_parts = || parts.iter().filter_map(|p| p.stats.agents.get(name));
        let tokens: u64 = of_parts().map(|u| u.usage.input_tokens).sum();
        let cost: f64 = of_parts().map(|u| u.cost_usd.unwrap()).sum();
        let merged_cost = used.cost_usd.unwrap();
        if name == "reducer" || name == "skeptic" {
            own_cost += merged_cost - cost;
        } else {
            assert_eq!(used.usage.input_tokens, tokens, "{name}");
            assert!((merged_cost - cost).abs() < 1e-12, "{name}");
        }
    }
    let total: f64 = parts.iter().map(|p| p.stats.cost_usd.unwrap()).sum();
    assert!(total > 0.0);
    assert!((merged.stats.cost_usd.unwrap() - (total + own_cost)).abs() < 1e-12);
    // The merged report keeps each shard's note of its limits.
    for k in 1..=2 {
        assert!(
            merged.notes.iter().any(|n| n.starts_with(&format!(
                "shard {k}/2: This shard's limits: rpm 30000 (60000 split 2 ways)"
            ))),
            "{:?}",
            merged.notes
        );
    }
}

/// A shard with high findings: its part is JSON without `--format`, and it
/// exits 0 (it ran its share): the gate belongs to the merge, not to each
/// pod of an Indexed Job, which a failing exit code would retry.
#[test]
fn a_shard_writes_json_and_leaves_the_gate_to_the_merge() {
    let repo = Repo::new(&[
        (
            "a/db.py",
            "def find(cur, name):\n    cur.execute(\"SELECT * FROM users WHERE name = '\" + name + \"'\")\n",
        ),
        ("b/ok.py", "print('x')\n"),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let part = dir.path().join("part-1.json");
    let run = fanscan(&[
        "scan",
        path_str(repo.path()),
        "--no-store",
        "--shard",
        "1/1",
        "--output",
        path_str(&part),
        "--quiet",
    ]);
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let report = read_report(&part);
    assert!(
        report
            .findings
            .iter()
            .any(|f| f.finding.severity == fanscan::Severity::High)
    );
    // The merge gates the whole run: the high finding fails it.
    let merged = merge(&repo, &[part.as_path()], "json");
    assert_eq!(
        merged.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&merged.stderr)
    );
    // A shard asked for another format is told why not.
    let run = fanscan(&[
        "scan",
        path_str(repo.path()),
        "--no-store",
        "--shard",
        "1/1",
        "--format",
        "md",
    ]);
    assert_eq!(run.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&run.stderr).contains("partial report as JSON"));
}

/// A shard's budget is its share of the run's: one the whole run could
/// start with may be too small for a quarter of it, and the error says it
/// is the shard's share and how to set it; a per-shard value replaces it.
#[test]
fn a_shard_s_budget_is_its_share_of_the_run_s_unless_set_per_shard() {
    let repo = Repo::new(&[(
        "a/x.rs",
        "fn f(s: &str) -> u32 {\n    s.parse().unwrap()\n}\n",
    )]);
    let root = path_str(repo.path());
    let scan = |extra: &[&str]| {
        let mut args = vec![
            "scan",
            root,
            "--no-store",
            "--quiet",
            "--max-tokens",
            "8000",
        ];
        args.extend_from_slice(extra);
        fanscan(&args)
    };
    assert_eq!(scan(&["--format", "json"]).status.code(), Some(0));
    let out = scan(&["--shard", "1/4"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--max-tokens 2000 (shard 1/4's share of the run's budget: 1/N of it unless `[shard]` or --shard-max-tokens / --shard-max-cost set it) is less than"),
        "{err}"
    );
    let out = scan(&["--shard", "1/4", "--shard-max-tokens", "8000"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let part: Report = serde_json::from_slice(&out.stdout).unwrap();
    let quota = part.shard.unwrap().quota.unwrap();
    assert_eq!(
        (
            quota.max_tokens.whole,
            quota.max_tokens.per_shard,
            quota.max_tokens.how
        ),
        (Some(8000), Some(8000), fanscan::ShareKind::Configured)
    );
    assert!(
        part.notes
            .iter()
            .any(|n| n.contains("max tokens 8000 (configured per shard; the run's is 8000)")),
        "{:?}",
        part.notes
    );
}
