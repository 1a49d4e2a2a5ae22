//! The binary as a user runs it: offline scans, agents, run-agent over HTTP,
//! and clear errors for bad input.

use fanscan::Report;
use serde_json::Value;

use crate::common::{MockModel, Repo, auditor_behaviour, fanscan};

/// A small repository with planted issues at known lines.
pub fn planted() -> Repo {
    Repo::new(&[
        (
            "src/lib.rs",
            "pub fn parse(s: &str) -> u32 {\n    // a comment\n    s.parse().unwrap()\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn t() { super::parse(\"1\").to_string().parse::<u32>().unwrap(); }\n}\n",
        ),
        (
            "app/run.py",
            "import subprocess\n\ndef run(cmd):\n    subprocess.run(cmd, shell=True)\n",
        ),
        (
            "app/db.py",
            "def find(cur, name):\n    cur.execute(\"SELECT * FROM users WHERE name = '\" + name + \"'\")\n",
        ),
        (
            "app/hash.py",
            "import hashlib\nh = hashlib.md5(b'x').hexdigest()\n",
        ),
        (
            "config/settings.py",
            "DEBUG = True\npassword = \"hunter2-prod\"\n",
        ),
        (
            "web/Fetch.java",
            "class Fetch {\n  void f(String dir) throws Exception {\n    Runtime.getRuntime().exec(\"ls \" + dir);\n  }\n}\n",
        ),
        ("notes/todo.rs", "// TODO: handle errors\nfn x() {}\n"),
        ("logo.png", "\u{0}PNG"),
    ])
}

/// The JSON report, read back into the report type: a field that is
/// missing or misnamed fails here, not in a hand-written index.
fn json_report(stdout: &[u8]) -> Report {
    serde_json::from_slice(stdout).unwrap_or_else(|e| {
        panic!(
            "not a JSON report ({e}): {}",
            String::from_utf8_lossy(stdout)
        )
    })
}

fn has(report: &Report, path: &str, line: u32, rule: &str) -> bool {
    report.findings.iter().any(|f| {
        f.finding.path == path
            && f.finding.line == line
            && f.finding.rule.as_deref() == Some(rule)
            && f.verified
    })
}

#[test]
fn offline_scan_finds_planted_issues_at_exact_lines() {
    let repo = planted();
    let out = fanscan(&[
        "scan",
        repo.path().to_str().unwrap(),
        "--format",
        "json",
        "--quiet",
    ]);
    // Its high findings fail the default gate (--fail-on high).
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = json_report(&out.stdout);
    assert_eq!(report.engine, fanscan::EngineKind::RuleEngine);
    assert_eq!(report.provider, "offline");
    for (path, line, rule) in [
        ("src/lib.rs", 3, "rust/unwrap"),
        ("app/run.py", 4, "exec/python-shell-true"),
        ("app/db.py", 2, "sql/concat"),
        ("app/hash.py", 2, "crypto/weak-hash-python"),
        ("config/settings.py", 2, "secret/password"),
        ("web/Fetch.java", 3, "java/runtime-exec"),
        ("notes/todo.rs", 1, "comments/todo"),
    ] {
        assert!(
            has(&report, path, line, rule),
            "missing {path}:{line} {rule}:\n{:#?}",
            report.findings
        );
    }
    // The unwrap inside #[cfg(test)] is not reported.
    assert!(!has(&report, "src/lib.rs", 9, "rust/unwrap"));
    // The secret itself is in no report.
    assert!(!String::from_utf8_lossy(&out.stdout).contains("hunter2-prod"));
    // Every file is accounted for.
    let coverage = &report.coverage;
    assert_eq!(coverage.reviewed.len(), 7);
    assert_eq!(coverage.skipped.len(), 1);
    assert_eq!(coverage.skipped[0].path, "logo.png");
    assert_eq!(coverage.skipped[0].reason.to_string(), "binary");
    assert!(coverage.failed.is_empty());
}

#[test]
fn offline_scan_is_deterministic() {
    let repo = planted();
    let run = || {
        let out = fanscan(&[
            "scan",
            repo.path().to_str().unwrap(),
            "--format",
            "json",
            "--quiet",
            "--group-tokens",
            "100",
            // The engine itself, not the run store's cache (tests/it/store.rs).
            "--no-store",
        ]);
        let mut report = json_report(&out.stdout);
        report.duration_ms = 0;
        report.started_at = String::new();
        report
    };
    let first = run();
    assert!(first.groups.len() > 1);
    assert_eq!(first, run());
}

#[test]
fn markdown_report_reads_summary_first_then_findings_and_coverage() {
    let repo = planted();
    let out = fanscan(&["scan", repo.path().to_str().unwrap(), "--quiet"]);
    let text = String::from_utf8(out.stdout).unwrap();
    let summary = text.find("## Summary").unwrap();
    let findings = text.find("## Findings").unwrap();
    let coverage = text.find("## Coverage").unwrap();
    assert!(summary < findings && findings < coverage);
    assert!(text.contains("offline rule engine (not a language model)"));
    assert!(text.contains("`app/run.py:4`"));
}

#[test]
fn bad_input_gets_a_clear_error_and_exit_2() {
    let out = fanscan(&["scan", "/no/such/repo"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/no/such/repo: no such directory"));

    let repo = Repo::new(&[
        ("a.rs", "fn a() {}\n"),
        (
            ".fanscan/agents/bad.md",
            "---\nname: bad\ndescription: d\nallowed-tools: [grep]\n---\nx\n",
        ),
    ]);
    let out = fanscan(&["scan", repo.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.md:4: unknown key \"allowed-tools\" (did you mean \"tools\"?)"),
        "{err}"
    );

    let repo = Repo::new(&[("a.rs", "x"), ("fanscan.toml", "jobs = \"many\"\n")]);
    let out = fanscan(&["scan", repo.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("fanscan.toml:1:"));

    // A bad value is named where it was given: the file's key, or the flag.
    for (toml, file_says, flag, flag_says) in [
        (
            "jobs = 0\n",
            "`jobs = 0` in fanscan.toml must be at least 1",
            "--jobs",
            "--jobs 0 must be",
        ),
        (
            "group_tokens = 40\n",
            "`group_tokens = 40` in fanscan.toml is too small",
            "--group-tokens",
            "--group-tokens 40 is too small",
        ),
        (
            "max_duration = \"soon\"\n",
            "`max_duration = \"soon\"` in fanscan.toml is not a duration",
            "--max-duration",
            "--max-duration \"soon\" is not",
        ),
    ] {
        let repo = Repo::new(&[("a.rs", "x"), ("fanscan.toml", toml)]);
        let root = repo.path().to_str().unwrap();
        let out = fanscan(&["scan", root]);
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(file_says), "{err}");
        let value = flag_says
            .split(' ')
            .nth(1)
            .unwrap_or_default()
            .trim_matches('"');
        let repo = Repo::new(&[("a.rs", "x")]);
        let out = fanscan(&["scan", repo.path().to_str().unwrap(), flag, value]);
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(flag_says), "{err}");
    }

    let out = fanscan(&["scan", ".", "--provider", "openai"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("$OPENAI_API_KEY"));

    let out = fanscan(&["scan", "--jobs", "lots"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn output_and_shard_flags_that_conflict_are_usage_errors_before_any_scan() {
    let repo = Repo::new(&[(
        "a.rs",
        "fn a() {}
",
    )]);
    let root = repo.path().to_str().unwrap();
    for (args, says) in [
        (
            &["--shard", "1/2", "--format", "sarif"][..],
            "fanscan: --format sarif with --shard: a shard writes its partial report as JSON",
        ),
        (
            &["--output", "a.md", "--output", "b.md"][..],
            "fanscan: --output b.md: only one --output may omit its format",
        ),
        (
            &["--output", "sarif="][..],
            "fanscan: --output sarif=: no file after '='; write FORMAT=FILE",
        ),
    ] {
        let out = fanscan(&[&["scan", root, "--no-store"][..], args].concat());
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty(), "nothing was scanned: {args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.starts_with(says), "{args:?}: {err}");
    }
}

#[test]
fn agents_lists_definitions_in_effect() {
    let repo = Repo::new(&[(
        ".fanscan/agents/mine.md",
        "---\nname: mine\ndescription: My agent.\ntools: [grep]\nmax_rounds: 3\n---\nPrompt.\n",
    )]);
    let out = fanscan(&["agents", repo.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    for expected in [
        "auditor\n",
        "planner\n",
        "reducer\n",
        "security\n",
        "mine\n",
        "tools:       grep",
        "max_rounds:  3",
        "builtin:configs/agents/auditor.md",
    ] {
        assert!(text.contains(expected), "{expected} missing in\n{text}");
    }
}

#[test]
fn plan_prints_groups_without_calling_a_model() {
    let repo = planted();
    let out = fanscan(&[
        "plan",
        repo.path().to_str().unwrap(),
        "--json",
        "--group-tokens",
        "100",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut files: Vec<String> = v["plan"]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| {
            g["files"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f.as_str().unwrap().to_string())
        })
        .collect();
    let total = files.len();
    files.sort();
    files.dedup();
    assert_eq!(files.len(), total, "a file is in two groups");
    assert_eq!(total, 7);
}

#[tokio::test(flavor = "multi_thread")]
async fn run_agent_works_against_a_local_openai_compatible_server() {
    let repo = planted();
    let mock = MockModel::openai(auditor_behaviour("shell=True")).await;
    let base = mock.base_url();
    let root = repo.path().to_str().unwrap().to_string();
    let out = tokio::task::spawn_blocking(move || {
        fanscan(&[
            "run-agent",
            "auditor",
            "--task",
            "Check the runner",
            "--file",
            "app/run.py",
            &root,
            "--provider",
            "openai",
            "--base-url",
            &base,
            "--model",
            "local",
            "--json",
            "--quiet",
        ])
    })
    .await
    .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: fanscan::GroupReport = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report.status, fanscan::AgentStatus::Complete);
    assert_eq!(report.files_read, vec!["app/run.py"]);
    assert_eq!(report.findings[0].line, 4);
    assert_eq!(report.model, "local");
    let first = &mock.requests()[0].body;
    assert!(
        first["messages"][1]["content"]
            .as_str()
            .unwrap()
            .contains("Check the runner")
    );
}

// SIGINT sent with `kill`: there is no such signal to send on Windows.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_stops_the_scan_and_still_writes_the_report() {
    let mut files = Vec::new();
    for d in 0..6 {
        files.push((
            format!("d{d}/a.rs"),
            format!("fn a() {{ x.unwrap(); }}\n// {}\n", "pad ".repeat(40)),
        ));
    }
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    let repo = Repo::new(&refs);
    let inner = auditor_behaviour("unwrap");
    let mock = MockModel::openai(Box::new(move |body, i| {
        inner(body, i).set_delay(std::time::Duration::from_millis(300))
    }))
    .await;
    let base = mock.base_url();
    let root = repo.path().to_str().unwrap().to_string();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_fanscan"))
        .args([
            "scan",
            &root,
            "--provider",
            "openai",
            "--base-url",
            &base,
            "--group-tokens",
            "100",
            "--jobs",
            "1",
            "--format",
            "json",
            "--quiet",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The first model request is the sign that the scan is running: the
    // Ctrl-C handler is installed before any group starts.
    mock.wait_for_requests(1).await;
    let killed = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = json_report(&out.stdout);
    assert!(!report.complete);
    assert!(
        report.incomplete_reasons[0].contains("interrupted (Ctrl-C)"),
        "{:?}",
        report.incomplete_reasons
    );
    // A language model ran: the counted summary must not call itself the
    // offline rule engine's.
    assert!(
        report
            .summary
            .starts_with("Counted summary: the run stopped early"),
        "{}",
        report.summary
    );
    assert!(
        !report.summary.contains("rule engine"),
        "{}",
        report.summary
    );
    let reviewed = report.coverage.reviewed.len();
    let failed = report.coverage.failed.len();
    assert!((1..6).contains(&reviewed), "{reviewed}");
    assert_eq!(reviewed + failed, 6);
}
