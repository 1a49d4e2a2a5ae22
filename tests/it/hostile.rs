//! Hostile repositories, built by code: nesting deeper than any parser's
//! stack in every language with a grammar, lines longer than a read
//! shows, NUL bytes and invalid UTF-8 around real code, names with a
//! newline and control characters, symlink loops and links out of the
//! repository, a directory that cannot be read, and a hundred thousand
//! empty files. The real binary, offline, must end each run with a
//! report in which every file is accounted for, every finding cites a
//! line that exists, and the exit code tells the truth.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// How long a run may take before the test calls it hung (a guard, not a
/// measure: the figures are in `docs/trust.md`).
const HUNG: Duration = Duration::from_secs(240);

/// Runs `fanscan scan DIR --no-store --format json` with `extra`; fails
/// the test if it has not ended after [`HUNG`].
fn scan(dir: &Path, extra: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fanscan"))
        .args([
            "scan",
            dir.to_str().unwrap(),
            "--no-store",
            "--format",
            "json",
        ])
        .args(extra)
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("GITHUB_STEP_SUMMARY")
        .env("GIT_CEILING_DIRECTORIES", std::env::temp_dir())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Drained on threads: a report larger than a pipe's buffer must not
    // stall the run.
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut b = Vec::new();
        std::io::Read::read_to_end(&mut stdout, &mut b).map(|_| b)
    });
    let err = std::thread::spawn(move || {
        let mut b = Vec::new();
        std::io::Read::read_to_end(&mut stderr, &mut b).map(|_| b)
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > HUNG {
            child.kill().unwrap();
            panic!("fanscan scan {} ran past {HUNG:?}", dir.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Output {
        status,
        stdout: out.join().unwrap().unwrap(),
        stderr: err.join().unwrap().unwrap(),
    }
}

/// A temporary directory in memory where the machine has one: a hundred
/// thousand files are made there in a second or two, on some disks in a
/// minute.
fn scratch() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    match shm.is_dir() {
        true => tempfile::tempdir_in(shm).or_else(|_| tempfile::tempdir()),
        false => tempfile::tempdir(),
    }
    .unwrap()
}

fn write(root: &Path, path: &str, bytes: &[u8]) {
    let full = root.join(path);
    std::fs::create_dir_all(full.parent().unwrap()).unwrap();
    std::fs::write(full, bytes).unwrap();
}

/// A file of `language`'s extension nested `depth` brackets deep, with a
/// command built from a request value on the line below.
fn nested(ext: &str, depth: usize) -> (String, String) {
    let open = "(".repeat(depth);
    let close = ")".repeat(depth);
    let text = match ext {
        "java" => format!(
            "class Deep {{\n  void f(javax.servlet.http.HttpServletRequest r) throws Exception {{\n    int x = {open}1{close};\n    Runtime.getRuntime().exec(r.getParameter(\"c\"));\n  }}\n}}\n"
        ),
        "py" => format!(
            "import os\nfrom flask import request\nx = {}{}\nos.system(request.args['c'])\n",
            "[".repeat(depth),
            "]".repeat(depth)
        ),
        "js" | "ts" => {
            format!("const x = {open}1{close};\nrequire('child_process').exec(req.query.c);\n")
        }
        "go" => format!("package main\n\nfunc f() int {{\n\treturn {open}1{close}\n}}\n"),
        "php" => format!("<?php\n$x = {open}1{close};\nsystem($_GET['c']);\n"),
        "c" | "cpp" => format!("int f(void) {{\n  return {open}1{close};\n}}\n"),
        "cs" => format!("class Deep {{\n  int F() {{\n    return {open}1{close};\n  }}\n}}\n"),
        "rb" => format!(
            "x = {}{}\nsystem(params[:c])\n",
            "[".repeat(depth),
            "]".repeat(depth)
        ),
        other => panic!("no nesting for {other}"),
    };
    (format!("deep/nested.{ext}"), text)
}

/// Builds the corpus in `root`; gives the regular files written.
fn corpus(root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    let mut add = |path: &str, bytes: &[u8]| {
        write(root, path, bytes);
        files.push(path.to_string());
    };
    for ext in [
        "java", "py", "js", "ts", "go", "php", "c", "cpp", "cs", "rb",
    ] {
        let (path, text) = nested(ext, 100_000);
        add(&path, text.as_bytes());
    }
    // A line no read shows whole, its sink past every cut.
    add(
        "long/bundle.js",
        format!(
            "var a = \"{}\"; require('child_process').exec(req.query.c);\n",
            "x".repeat(600_000)
        )
        .as_bytes(),
    );
    // A line longer than a page shows, its sink past the first cut.
    add(
        "long/padded.php",
        format!(
            "<?php $pad = \"{}\"; system($_GET['c']);\n",
            "a".repeat(1_500)
        )
        .as_bytes(),
    );
    add(
        "bytes/nul.php",
        b"\0\0\xff\xfe<?php\nsystem($_GET['c']);\n\0\x80\n",
    );
    add(
        "bytes/latin1.py",
        b"import os\n# caf\xe9\nos.system(input())\n\xff\xfe\n",
    );
    add("names/new\nline.py", b"import os\nos.system(input())\n");
    add(
        "names/ctl\x01\x1b[31m.py",
        b"import os\nos.system(input())\n",
    );
    add("locked/inside.py", b"import os\nos.system(input())\n");
    files
}

/// Symlinks: a loop, a link to a file outside the repository and one to
/// a directory outside it. Each is listed, none is followed.
fn links(root: &Path, outside: &Path) -> Vec<String> {
    std::fs::create_dir_all(root.join("links")).unwrap();
    std::os::unix::fs::symlink("..", root.join("links/up")).unwrap();
    std::os::unix::fs::symlink("loop-b", root.join("links/loop-a")).unwrap();
    std::os::unix::fs::symlink("loop-a", root.join("links/loop-b")).unwrap();
    write(outside, "secret.py", b"import os\nos.system(input())\n");
    std::os::unix::fs::symlink(outside.join("secret.py"), root.join("links/out.py")).unwrap();
    std::os::unix::fs::symlink(outside, root.join("links/outdir")).unwrap();
    vec![
        "links/up".into(),
        "links/loop-a".into(),
        "links/loop-b".into(),
        "links/out.py".into(),
        "links/outdir".into(),
    ]
}

fn report(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON report ({e}); stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn paths(v: &Value) -> BTreeSet<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|p| match p {
            Value::String(s) => s.clone(),
            other => other["path"].as_str().unwrap().to_string(),
        })
        .collect()
}

/// Every file in exactly one of the coverage lists; every finding on a
/// line its file has.
fn accounted_for(root: &Path, report: &Value, expected: &[String]) {
    let coverage = &report["coverage"];
    let lists = ["reviewed", "unread", "skipped", "failed"].map(|k| paths(&coverage[k]));
    for path in expected {
        let homes: Vec<&str> = ["reviewed", "unread", "skipped", "failed"]
            .into_iter()
            .zip(&lists)
            .filter(|(_, list)| list.contains(path))
            .map(|(k, _)| k)
            .collect();
        assert_eq!(homes.len(), 1, "{path:?} is in {homes:?}: {coverage:#}");
    }
    for finding in report["findings"].as_array().unwrap() {
        let path = finding["path"].as_str().unwrap();
        let line = finding["line"].as_u64().unwrap();
        let bytes = std::fs::read(root.join(path)).unwrap();
        let lines = bytes.split(|b| *b == b'\n').count() as u64;
        assert!(
            line >= 1 && line <= lines,
            "{path}:{line} cites a line its {lines} lines do not have"
        );
    }
}

fn finding_at(report: &Value, path: &str) -> Option<u64> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == path)
        .and_then(|f| f["line"].as_u64())
}

#[test]
fn a_hostile_tree_ends_with_a_report_that_accounts_for_every_file_and_an_honest_exit() {
    let repo = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let root: PathBuf = repo.path().to_path_buf();
    let mut expected = corpus(&root);
    expected.extend(links(&root, outside.path()));
    // A directory without read permission (root reads it anyway: then it
    // is reviewed, and still accounted for).
    let locked = root.join("locked");
    std::fs::set_permissions(&locked, std::os::unix::fs::PermissionsExt::from_mode(0o000)).unwrap();
    let out = scan(&root, &[]);
    std::fs::set_permissions(&locked, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let report = report(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    accounted_for(&root, &report, &expected);

    // Nothing outside the repository was read: no finding cites it.
    for f in report["findings"].as_array().unwrap() {
        let path = f["path"].as_str().unwrap();
        assert!(!path.starts_with('/') && !path.contains("secret"), "{path}");
    }
    let skipped = paths(&report["coverage"]["skipped"]);
    for link in ["links/up", "links/loop-a", "links/out.py", "links/outdir"] {
        assert!(skipped.contains(link), "{link} not skipped: {skipped:?}");
    }

    // Code past a page's cut is read: the engine asks for the line alone.
    assert_eq!(
        finding_at(&report, "long/padded.php"),
        Some(1),
        "{report:#}"
    );
    // A line no read shows whole is listed, with the line.
    let partly: Vec<&Value> = report["coverage"]["partly_read"]
        .as_array()
        .unwrap_or_else(|| panic!("no partly_read: {:#}", report["coverage"]))
        .iter()
        .collect();
    assert!(
        partly
            .iter()
            .any(|p| p["path"] == "long/bundle.js" && p["lines"] == serde_json::json!([1])),
        "{partly:?}"
    );
    assert!(
        report["notes"].as_array().unwrap().iter().any(|n| n
            .as_str()
            .unwrap()
            .contains("lines too long for any read to show whole")),
        "{:#}",
        report["notes"]
    );
    // Sinks below nesting no parser could hold are still found by lines.
    for path in [
        "deep/nested.java",
        "deep/nested.py",
        "deep/nested.js",
        "deep/nested.php",
        "deep/nested.rb",
    ] {
        assert!(finding_at(&report, path).is_some(), "{path}: {report:#}");
    }
    // Names with a newline and control characters are reported as named.
    assert_eq!(finding_at(&report, "names/new\nline.py"), Some(2));
    assert_eq!(finding_at(&report, "names/ctl\u{1}\u{1b}[31m.py"), Some(2));
    // Invalid UTF-8 around real code: read, the code found.
    assert_eq!(finding_at(&report, "bytes/latin1.py"), Some(3));
    // A file with NUL bytes was shown to no model: the run says so.
    assert!(paths(&report["coverage"]["unread"]).contains("bytes/nul.php"));
    assert_eq!(report["complete"], false);
    // Open high findings: the gate failed, and the code says so.
    assert_eq!(out.status.code(), Some(4), "{stderr}");
}

#[test]
fn a_hundred_thousand_empty_files_are_each_accounted_for() {
    let repo = scratch();
    let mut expected = Vec::with_capacity(100_000);
    for d in 0..100 {
        let dir = repo.path().join(format!("d{d:03}"));
        std::fs::create_dir(&dir).unwrap();
        for f in 0..1_000 {
            std::fs::File::create(dir.join(format!("f{f:04}.py"))).unwrap();
            expected.push(format!("d{d:03}/f{f:04}.py"));
        }
    }
    let out = scan(repo.path(), &[]);
    let report = report(&out);
    accounted_for(repo.path(), &report, &expected);
    assert_eq!(report["findings"].as_array().unwrap().len(), 0);
    assert_eq!(
        report["complete"], true,
        "{:#}",
        report["incomplete_reasons"]
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A model whose final answer is 10 MB: prose, a stray `{` in every
/// line, then its findings block. The answer is read, its finding is
/// verified against the file, and the run ends complete.
#[tokio::test]
async fn a_ten_megabyte_model_answer_is_read_and_its_finding_verified() {
    use crate::common::{MockModel, Repo, is_reduce, read_listed, text_turn};
    use wiremock::ResponseTemplate;

    let repo = Repo::new(&[("app.py", "import os\nos.system(input())\n")]);
    let mut answer = String::with_capacity(10 << 20);
    while answer.len() < 10 << 20 {
        answer.push_str("The auditor reads { the code [ and \"thinks\" at length: ");
        answer.push_str(&"x".repeat(200));
        answer.push('\n');
    }
    answer.push_str(
        "```json\n{\"findings\": [{\"path\": \"app.py\", \"line\": 2, \"severity\": \"high\", \
         \"title\": \"shell from input\", \"detail\": \"d\", \"evidence\": \"os.system(input())\"}]}\n```\n[TASK_COMPLETE]",
    );
    let mock = MockModel::openai(Box::new(move |body: &Value, _| {
        let reply = if is_reduce(body) {
            text_turn("Merged.\n[TASK_COMPLETE]")
        } else if body["messages"]
            .as_array()
            .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"))
            || body["tool_choice"] == "none"
        {
            text_turn(&answer)
        } else {
            read_listed(body)
        };
        ResponseTemplate::new(200).set_body_json(reply)
    }))
    .await;
    let settings = mock.settings(repo.path(), &fanscan::ScanArgs::default());
    let ctx = fanscan::Context::new(settings).unwrap();
    let report = fanscan::scan(&ctx, &fanscan::Ui::hidden()).await.unwrap();
    assert!(report.complete, "{:?}", report.incomplete_reasons);
    assert_eq!(report.coverage.reviewed, vec!["app.py"]);
    let found: Vec<(&str, u32)> = report
        .findings
        .iter()
        .map(|f| (f.finding.path.as_str(), f.finding.line))
        .collect();
    assert!(found.contains(&("app.py", 2)), "{found:?}");
}

/// A SARIF of a million results given as leads: three in four name the
/// file of the repository (500 distinct rules and lines among them, so
/// more than a task shows), one in four a distinct file outside it. Every
/// lead of the repository has an outcome (shown to the auditor, or held
/// back and standing as the analysis's finding, saying so), the outside
/// ones are listed up to a thousand and counted, and nothing else is
/// lost.
#[test]
fn a_sarif_of_a_million_results_is_read_and_every_lead_accounted_for() {
    use std::io::Write;

    let repo = scratch();
    let lines: String = (1..=250).map(|n| format!("value_{n} = {n}\n")).collect();
    write(repo.path(), "app/a.py", lines.as_bytes());
    let sarif = repo.path().join("leads.sarif");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&sarif).unwrap());
    out.write_all(
        br#"{"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "Hostile", "rules": [{"id": "r0"}, {"id": "r1"}]}}, "results": ["#,
    )
    .unwrap();
    let mut inside = BTreeSet::new();
    for i in 0..1_000_000u32 {
        let (uri, line) = match i % 4 {
            0 => (format!("../elsewhere/x{i}.py"), 1),
            _ => ("app/a.py".to_string(), i % 250 + 1),
        };
        let rule = format!("r{}", (i / 7) % 2);
        if i % 4 != 0 {
            inside.insert((rule.clone(), line));
        }
        let level = if i % 10 == 0 { "error" } else { "warning" };
        let comma = if i == 0 { "" } else { "," };
        write!(
            out,
            r#"{comma}{{"ruleId":"{rule}","level":"{level}","message":{{"text":"m{i}"}},"locations":[{{"physicalLocation":{{"artifactLocation":{{"uri":"{uri}"}},"region":{{"startLine":{line}}}}}}}]}}"#
        )
        .unwrap();
    }
    out.write_all(b"]}]}").unwrap();
    out.flush().unwrap();
    drop(out);
    assert!(inside.len() > 200, "{}", inside.len());

    let out = scan(
        repo.path(),
        &[
            "--leads",
            sarif.to_str().unwrap(),
            "--exclude",
            "leads.sarif",
        ],
    );
    let report = report(&out);
    accounted_for(repo.path(), &report, &["app/a.py".to_string()]);
    let leads = &report["leads"];
    let answered: u64 = leads["tally"]
        .as_array()
        .unwrap_or_else(|| panic!("{leads:#}"))
        .iter()
        .filter(|t| t["tool"] == "Hostile")
        .map(|t| {
            ["confirmed", "dismissed", "unanswered"]
                .map(|k| t[k].as_u64().unwrap())
                .iter()
                .sum::<u64>()
        })
        .sum();
    assert_eq!(
        answered,
        inside.len() as u64,
        "every lead of the repository has an outcome: {leads:#}"
    );
    let held = leads["held"].as_u64().unwrap_or(0);
    assert!(
        held > 0 && held < answered,
        "{held} of {answered} held back"
    );
    assert!(
        report["notes"].as_array().unwrap().iter().any(|n| n
            .as_str()
            .unwrap()
            .starts_with(&format!("{held} leads were not put to an auditor"))),
        "{:#}",
        report["notes"]
    );
    let outside = leads["outside"].as_array().unwrap();
    assert_eq!(outside.len(), 1_000);
    assert_eq!(leads["outside_more"], 250_000 - 1_000);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// Files that change while the scan runs: one is deleted before its
/// group reads it, another is rewritten (shorter, the flagged line gone)
/// just after the model read it. The report accounts for both; no
/// verified finding cites code the file no longer has; the finding on the
/// rewritten file is listed as unverified, not lost.
#[tokio::test]
async fn files_deleted_or_rewritten_during_the_scan_are_accounted_for() {
    use crate::common::{MockModel, Repo, scan_reply};
    use std::sync::atomic::{AtomicBool, Ordering};
    use wiremock::ResponseTemplate;

    // Each file over the group size: a group each, run one after another.
    let risky = format!(
        "import subprocess\n\ndef run(cmd):\n    subprocess.run(cmd, shell=True)\n{}",
        "# a comment that makes the file longer than a group holds\n".repeat(20)
    );
    let repo = Repo::new(&[
        ("a/one.py", &risky),
        ("b/gone.py", &risky),
        ("b/changed.py", &risky),
    ]);
    let root = repo.path().to_path_buf();
    let (deleted, rewritten) = (AtomicBool::new(false), AtomicBool::new(false));
    let mock = MockModel::openai(Box::new(move |body: &Value, _| {
        if !deleted.swap(true, Ordering::SeqCst) {
            std::fs::remove_file(root.join("b/gone.py")).unwrap();
        }
        let read_changed = body["messages"].as_array().is_some_and(|m| {
            m.iter().any(|m| {
                m["role"] == "tool"
                    && m["content"]
                        .as_str()
                        .is_some_and(|c| c.contains("b/changed.py ("))
            })
        });
        if read_changed && !rewritten.swap(true, Ordering::SeqCst) {
            std::fs::write(root.join("b/changed.py"), "x = 1\n").unwrap();
        }
        ResponseTemplate::new(200).set_body_json(scan_reply("shell=True", body))
    }))
    .await;
    let args = fanscan::ScanArgs {
        jobs: Some(1),
        group_tokens: Some(100),
        no_store: true,
        ..fanscan::ScanArgs::default()
    };
    let settings = mock.settings(repo.path(), &args);
    let ctx = fanscan::Context::new(settings).unwrap();
    let report = fanscan::scan(&ctx, &fanscan::Ui::hidden()).await.unwrap();

    let c = &report.coverage;
    for path in ["a/one.py", "b/gone.py", "b/changed.py"] {
        let homes = [
            c.reviewed.iter().any(|p| p == path),
            c.unread.iter().any(|p| p == path),
            c.skipped.iter().any(|s| s.path == path),
            c.failed.iter().any(|f| f.path == path),
        ];
        assert_eq!(
            homes.iter().filter(|h| **h).count(),
            1,
            "{path}: {homes:?} {c:?}"
        );
    }
    // Verified findings cite lines the files have now.
    for m in &report.findings {
        let f = &m.finding;
        let text = std::fs::read_to_string(repo.path().join(&f.path))
            .unwrap_or_else(|e| panic!("a verified finding on {}, which is gone: {e}", f.path));
        let line = text.lines().nth(f.line as usize - 1);
        assert!(
            line.is_some_and(|l| f.evidence.as_deref().is_none_or(|e| l.contains(e.trim()))),
            "{}:{} is not in the file now: {line:?}",
            f.path,
            f.line
        );
    }
    let verified: Vec<&str> = report
        .findings
        .iter()
        .map(|m| m.finding.path.as_str())
        .collect();
    assert!(verified.contains(&"a/one.py"), "{verified:?}");
    assert!(
        report
            .unverified
            .iter()
            .any(|m| m.finding.path == "b/changed.py"),
        "the rewritten file's finding is listed as unverified: {:?}",
        report.unverified
    );
}
