//! `fanscan eval` as a user runs it: a real offline scan scored against
//! labelled truth in each format the command reads, reports side by side,
//! and clear errors (exit 2) for truth files and reports it cannot read.
//!
//! The truth files are the fixtures in tests/fixtures/eval/. Reports come
//! from real scans; where a test needs findings the rules do not make (a
//! CWE on each finding, a benchmark's file names), it sets them on a real
//! report's JSON, so what is scored does not move with the rule set.

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};

use crate::common::Repo;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/eval");

/// Runs `fanscan` in `dir`, so that the file names it prints are relative.
fn fanscan_in(dir: &Path, args: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_fanscan"))
        .args(args)
        .current_dir(dir)
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .unwrap()
}

fn stdout(output: &Output) -> String {
    assert!(
        output.status.success(),
        "exit {:?}: {}",
        output.status.code(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone()).unwrap()
}

/// The repository the fixture truth.csv labels: a vulnerable and a safe
/// file for each of three CWE classes.
fn labelled() -> Repo {
    Repo::new(&[
        (
            "app/db.py",
            "def find(cur, name):\n    cur.execute(\"SELECT * FROM users WHERE name = '\" + name + \"'\")\n",
        ),
        (
            "app/db_safe.py",
            "def find(cur, name):\n    cur.execute(\"SELECT * FROM users WHERE name = %s\", (name,))\n",
        ),
        (
            "app/run.py",
            "import subprocess\n\ndef run(cmd):\n    subprocess.run(cmd, shell=True)\n",
        ),
        (
            "app/run_safe.py",
            "import subprocess\n\ndef listing():\n    subprocess.run([\"ls\", \"-l\"])\n",
        ),
        (
            "app/hash.py",
            "import hashlib\nh = hashlib.md5(b'x').hexdigest()\n",
        ),
        (
            "app/hash_safe.py",
            "import hashlib\nh = hashlib.sha256(b'x').hexdigest()\n",
        ),
    ])
}

/// A real offline scan of `repo` as JSON.
fn scan(repo: &Repo) -> Value {
    let out = fanscan_in(
        repo.path(),
        &[
            "scan",
            ".",
            "--format",
            "json",
            "--no-store",
            "--fail-on",
            "never",
        ],
    );
    serde_json::from_str(&stdout(&out)).unwrap()
}

/// A real report of `repo` with its findings and counters replaced: the
/// same shape as any report, with what the test scores.
fn report_with(repo: &Repo, findings: Value, unverified: Value, stats: Value) -> Value {
    let mut report = scan(repo);
    report["findings"] = findings;
    report["unverified"] = unverified;
    for (key, value) in stats.as_object().unwrap() {
        report["stats"][key] = value.clone();
    }
    report
}

/// A finding as reports write them.
fn finding(path: &str, line: u32, rule: &str, cwe: Option<&str>) -> Value {
    let mut f = json!({
        "fingerprint": format!("{path}:{line}:{rule}"),
        "path": path, "line": line, "end_line": null, "severity": "high",
        "title": rule, "detail": "", "evidence": null, "rule": rule, "origin": "agent",
        "agents": ["auditor"], "groups": ["g"], "verified": true, "note": null
    });
    if let Some(cwe) = cwe {
        f["cwe"] = json!(cwe);
    }
    f
}

/// A work directory with the fixture truth files and the given reports.
fn workdir(reports: &[(&str, &Value)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for name in [
        "truth.csv",
        "truth.json",
        "expectedresults-1.2.csv",
        "castle.json",
    ] {
        std::fs::copy(Path::new(FIXTURES).join(name), dir.path().join(name)).unwrap();
    }
    for (name, report) in reports {
        std::fs::write(
            dir.path().join(name),
            serde_json::to_string_pretty(report).unwrap(),
        )
        .unwrap();
    }
    dir
}

fn eval_json(dir: &Path, args: &[&str]) -> Value {
    let mut all = vec!["eval"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--format", "json"]);
    serde_json::from_str(&stdout(&fanscan_in(dir, &all))).unwrap()
}

fn outcomes(run: &Value) -> Vec<(String, String)> {
    run["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["id"].as_str().unwrap().to_string(),
                c["outcome"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[test]
fn an_offline_scan_is_scored_by_location_against_fanscans_csv() {
    let repo = labelled();
    let report = scan(&repo);
    let dir = workdir(&[("report.json", &report)]);
    let eval = eval_json(
        dir.path(),
        &["report.json", "--truth", "truth.csv", "--match", "location"],
    );
    let run = &eval["runs"][0];

    // Each case's outcome is what the report's findings say: matched when a
    // finding is in its file (and within 3 lines of a labelled line).
    let findings = report["findings"].as_array().unwrap();
    let flagged = |path: &str, lines: &[u64]| {
        findings.iter().any(|f| {
            let line = f["line"].as_u64().unwrap();
            f["path"] == path && (lines.is_empty() || lines.iter().any(|&l| l.abs_diff(line) <= 3))
        })
    };
    for case in run["cases"].as_array().unwrap() {
        let lines: Vec<u64> = case["lines"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l.as_u64().unwrap())
            .collect();
        let expected = match (
            case["vulnerable"].as_bool().unwrap(),
            flagged(case["file"].as_str().unwrap(), &lines),
        ) {
            (true, true) => "tp",
            (true, false) => "fn",
            (false, true) => "fp",
            (false, false) => "tn",
        };
        assert_eq!(case["outcome"], expected, "{case}");
    }
    // The offline rules see these three.
    let outcome = |id: &str| {
        run["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id)
            .unwrap()["outcome"]
            .clone()
    };
    assert_eq!(outcome("app/db.py"), "tp");
    assert_eq!(outcome("app/run.py"), "tp");
    assert_eq!(outcome("app/hash.py"), "tp");
    assert_eq!(outcome("app/hash_safe.py"), "tn");
    assert_eq!(eval["truth"]["format"], "fanscan_csv");
    assert_eq!(eval["truth"]["cases"], 6);
    assert_eq!(run["report"], "report.json");
    assert_eq!(run["not_reviewed"], 0, "every labelled file was reviewed");
    assert_eq!(
        run["usage"]["input_tokens"],
        report["stats"]["input_tokens"]
    );

    // Scored against truth for another tree, nothing was reviewed: said.
    let other = eval_json(
        dir.path(),
        &["report.json", "--truth", "expectedresults-1.2.csv"],
    );
    assert_eq!(other["runs"][0]["not_reviewed"], 8);
    let note = other["runs"][0]["notes"][0].as_str().unwrap();
    assert!(
        note.contains("none of the labelled files is among the files this run reviewed"),
        "{note}"
    );
}

#[test]
fn a_scan_with_its_own_rule_file_is_scored_by_each_findings_cwe() {
    // A team's rule file: its ids are not the built-in ones, so eval
    // cannot take a CWE from the rule id; the finding's own `cwe` is what
    // makes the match.
    let repo = labelled();
    repo.write(
        "team-rules.toml",
        r#"[[rule]]
id = "team/sql-concat"
languages = ["python"]
severity = "high"
cwe = [89]
title = "SQL by concatenation"
message = "Use bind parameters."
pattern = '''execute\(.*" \+'''
"#,
    );
    let out = fanscan_in(
        repo.path(),
        &[
            "scan",
            ".",
            "--format",
            "json",
            "--no-store",
            "--fail-on",
            "never",
            "--rules",
            "team-rules.toml",
        ],
    );
    let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let db = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "app/db.py")
        .unwrap_or_else(|| panic!("no finding on app/db.py: {report}"));
    assert_eq!(db["rule"], "team/sql-concat");
    assert_eq!(db["cwe"], "CWE-89");
    assert!(db["cwe_name"].as_str().unwrap().contains("SQL Injection"));

    let dir = workdir(&[("report.json", &report)]);
    let eval = eval_json(dir.path(), &["report.json", "--truth", "truth.csv"]);
    let run = &eval["runs"][0];
    let db_case = run["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "app/db.py")
        .unwrap();
    assert_eq!(db_case["outcome"], "tp", "{run}");
    assert_eq!(run["findings"]["without_cwe"], 0, "{}", run["findings"]);
}

#[test]
fn findings_match_by_cwe_and_documented_relatives() {
    let report = report_with(
        &labelled(),
        json!([
            finding("app/db.py", 2, "sql/concat", Some("CWE-89")),
            finding("app/run.py", 4, "exec/python-shell-true", Some("CWE-78")),
            // 327 is a documented relative of the labelled 328.
            finding("app/hash.py", 2, "crypto/weak-hash-python", Some("CWE-327")),
            finding(
                "app/run_safe.py",
                4,
                "exec/python-shell-true",
                Some("cwe-78")
            ),
            // The right file, another weakness: no match.
            finding("app/db_safe.py", 2, "web/xss", Some("CWE-79")),
            // No CWE, and a file nobody labelled.
            finding("app/db.py", 2, "review/naming", None),
            finding("lib/util.py", 9, "sql/concat", Some("CWE-89")),
        ]),
        json!([finding(
            "app/hash_safe.py",
            2,
            "crypto/weak-hash-python",
            Some("CWE-328")
        )]),
        json!({"requests": 12, "input_tokens": 48000, "output_tokens": 3200, "cached_tokens": 30000, "cost_usd": 0.0924}),
    );
    let dir = workdir(&[("report.json", &report)]);
    let eval = eval_json(dir.path(), &["report.json", "--truth", "truth.csv"]);
    let run = &eval["runs"][0];
    assert_eq!(
        outcomes(run),
        pairs(&[
            ("app/db.py", "tp"),
            ("app/db_safe.py", "tn"),
            ("app/run.py", "tp"),
            ("app/run_safe.py", "fp"),
            ("app/hash.py", "tp"),
            ("app/hash_safe.py", "tn"),
        ])
    );
    assert_eq!(
        run["findings"],
        json!({"scored": 7, "matched": 4, "other_cwe": 1, "off_lines": 0, "unlabelled": 1, "without_cwe": 1, "unreadable_cwe": 0})
    );
    assert_eq!(run["overall"]["tp"], 3);
    assert_eq!(run["overall"]["fp"], 1);
    // CWE-78: TPR 1, FPR 1 (score 0); 89 and 328: TPR 1, FPR 0 (score 1).
    assert_eq!(run["overall"]["macro"]["score"], json!(0.6667));
    assert_eq!(run["usage"]["cost_per_true_positive"], json!(0.0308));

    // The unverified claim on the safe hash file counts only with --count all.
    let all = eval_json(
        dir.path(),
        &["report.json", "--truth", "truth.csv", "--count", "all"],
    );
    assert_eq!(
        outcomes(&all["runs"][0])[5],
        pairs(&[("app/hash_safe.py", "fp")])[0]
    );

    let md = stdout(&fanscan_in(
        dir.path(),
        &["eval", "report.json", "--truth", "truth.csv"],
    ));
    insta::assert_snapshot!("eval_markdown", md);
    let json_text = stdout(&fanscan_in(
        dir.path(),
        &[
            "eval",
            "report.json",
            "--truth",
            "truth.csv",
            "--format",
            "json",
        ],
    ));
    assert_eq!(serde_json::from_str::<Value>(&json_text).unwrap(), eval);
    insta::assert_snapshot!("eval_json", json_text);
}

#[test]
fn two_reports_are_scored_side_by_side() {
    let repo = labelled();
    let a = report_with(
        &repo,
        json!([
            finding("app/db.py", 2, "sql/concat", Some("CWE-89")),
            finding("app/run.py", 5, "exec/python-shell-true", Some("CWE-78")),
        ]),
        json!([]),
        json!({"requests": 6, "input_tokens": 20000, "output_tokens": 1500, "cached_tokens": 0, "cost_usd": 0.031}),
    );
    // A model whose findings carry no CWE: nothing can match by CWE.
    let b = report_with(
        &repo,
        json!([
            finding("app/db.py", 2, "sql-injection", None),
            finding("app/hash.py", 40, "weak-hash", None),
        ]),
        json!([]),
        json!({"requests": 4, "input_tokens": 9000, "output_tokens": 800, "cached_tokens": 0, "cost_usd": null}),
    );
    let dir = workdir(&[("a.json", &a), ("b.json", &b)]);
    let eval = eval_json(dir.path(), &["a.json", "b.json", "--truth", "truth.json"]);
    let runs = eval["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["report"], "a.json");
    assert_eq!(runs[1]["report"], "b.json");
    assert_eq!(runs[0]["overall"]["tp"], 2);
    assert_eq!(runs[1]["overall"]["tp"], 0);
    assert_eq!(runs[1]["findings"]["without_cwe"], 2);
    assert!(
        runs[1]["notes"][0]
            .as_str()
            .unwrap()
            .contains("--match location")
    );
    assert_eq!(runs[1]["usage"]["cost_per_true_positive"], Value::Null);

    // By location, b's db.py finding counts; its hash.py one is in no
    // labelled file of truth.json.
    let by_location = eval_json(
        dir.path(),
        &[
            "a.json",
            "b.json",
            "--truth",
            "truth.json",
            "--match",
            "location",
        ],
    );
    assert_eq!(by_location["runs"][1]["overall"]["tp"], 1);
    assert_eq!(by_location["runs"][1]["findings"]["unlabelled"], 1);

    let md = stdout(&fanscan_in(
        dir.path(),
        &["eval", "a.json", "b.json", "--truth", "truth.json"],
    ));
    insta::assert_snapshot!("eval_side_by_side", md);
}

#[test]
fn the_owasp_benchmarks_expected_results_score_files_by_test_name() {
    let dir_of = "src/main/java/org/owasp/benchmark/testcode";
    let at = |n: u32| format!("{dir_of}/BenchmarkTest0000{n}.java");
    let repo = Repo::new(&[]);
    for n in 1..=8 {
        repo.write(&at(n), &format!("public class BenchmarkTest0000{n} {{}}\n"));
    }
    repo.write(
        "src/main/java/org/owasp/benchmark/helpers/Utils.java",
        "class Utils {}\n",
    );
    let report = report_with(
        &repo,
        json!([
            finding(&at(3), 48, "crypto/weak-hash-jvm", Some("CWE-328")),
            finding(&at(5), 51, "java/runtime-exec", Some("CWE-78")),
            finding(&at(6), 51, "java/runtime-exec", Some("CWE-78")),
            // 564 (Hibernate) is a documented child of 89.
            finding(&at(7), 60, "sql/concat", Some("CWE-564")),
            // A helper file of the benchmark: no test case.
            finding(
                "src/main/java/org/owasp/benchmark/helpers/Utils.java",
                12,
                "crypto/weak-hash-jvm",
                Some("CWE-328")
            ),
        ]),
        json!([]),
        json!({}),
    );
    let dir = workdir(&[("report.json", &report)]);
    let eval = eval_json(
        dir.path(),
        &["report.json", "--truth", "expectedresults-1.2.csv"],
    );
    assert_eq!(eval["truth"]["format"], "owasp_benchmark");
    let run = &eval["runs"][0];
    assert_eq!(
        outcomes(run),
        pairs(&[
            ("BenchmarkTest00001", "fn"),
            ("BenchmarkTest00002", "tn"),
            ("BenchmarkTest00003", "tp"),
            ("BenchmarkTest00004", "tn"),
            ("BenchmarkTest00005", "tp"),
            ("BenchmarkTest00006", "fp"),
            ("BenchmarkTest00007", "tp"),
            ("BenchmarkTest00008", "tn"),
        ])
    );
    assert_eq!(run["findings"]["unlabelled"], 1);
    let classes: Vec<&str> = run["per_cwe"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["cwe"].as_str().unwrap())
        .collect();
    assert_eq!(classes, ["CWE-22", "CWE-78", "CWE-89", "CWE-328"]);
    assert_eq!(
        run["per_cwe"][0]["name"],
        "Improper Limitation of a Pathname to a Restricted Directory ('Path Traversal')"
    );
    assert_eq!(run["not_reviewed"], 0);
    assert_eq!(run["notes"], json!([]));
}

#[test]
fn the_castle_dataset_scores_by_file_name_and_labelled_line() {
    // Two of the dataset's four files in the scanned tree.
    let repo = Repo::new(&[
        (
            "datasets/CASTLE-C250/CASTLE-22-1.c",
            "int main(void) { return 0; }\n",
        ),
        (
            "datasets/CASTLE-C250/CASTLE-787-1.c",
            "int main(void) { return 0; }\n",
        ),
    ]);
    let report = report_with(
        &repo,
        json!([
            // Two lines off the labelled 19, and a relative (23 of 22).
            finding(
                "datasets/CASTLE-C250/CASTLE-22-1.c",
                21,
                "c/path",
                Some("CWE-23")
            ),
            // The right weakness far from the labelled line 12: missed.
            finding(
                "datasets/CASTLE-C250/CASTLE-787-1.c",
                30,
                "c/strcpy",
                Some("CWE-787")
            ),
            // Any CWE-787 finding in a safe file is a false alarm.
            finding(
                "datasets/CASTLE-C250/CASTLE-787-9.c",
                7,
                "c/strcpy",
                Some("CWE-121")
            ),
        ]),
        json!([]),
        json!({}),
    );
    let dir = workdir(&[("report.json", &report)]);
    let strict = eval_json(dir.path(), &["report.json", "--truth", "castle.json"]);
    assert_eq!(strict["truth"]["format"], "castle");
    assert_eq!(
        outcomes(&strict["runs"][0]),
        pairs(&[
            ("CASTLE-22-1.c", "tp"),
            ("CASTLE-22-7.c", "tn"),
            ("CASTLE-787-1.c", "fn"),
            ("CASTLE-787-9.c", "fp"),
        ])
    );
    assert_eq!(strict["runs"][0]["findings"]["off_lines"], 1);
    assert_eq!(strict["runs"][0]["not_reviewed"], 2);
    assert_eq!(
        strict["runs"][0]["notes"],
        json!([
            "2 labelled cases are in files this run did not review: their vulnerable ones count as missed"
        ])
    );
    // A wider slack reaches line 30 from 12; none reaches 21 from 19.
    let loose = eval_json(
        dir.path(),
        &[
            "report.json",
            "--truth",
            "castle.json",
            "--line-slack",
            "18",
        ],
    );
    assert_eq!(
        outcomes(&loose["runs"][0])[2],
        pairs(&[("CASTLE-787-1.c", "tp")])[0]
    );
    let tight = eval_json(
        dir.path(),
        &["report.json", "--truth", "castle.json", "--line-slack", "1"],
    );
    assert_eq!(
        outcomes(&tight["runs"][0])[0],
        pairs(&[("CASTLE-22-1.c", "fn")])[0]
    );
}

/// Runs eval expecting exit 2; gives stderr.
fn fails(dir: &Path, args: &[&str]) -> String {
    let mut all = vec!["eval"];
    all.extend_from_slice(args);
    let out = fanscan_in(dir, &all);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.is_empty());
    String::from_utf8(out.stderr).unwrap()
}

#[test]
fn unreadable_truth_and_reports_exit_2_naming_the_file_line_and_fix() {
    let report = report_with(&labelled(), json!([]), json!([]), json!({}));
    let dir = workdir(&[("report.json", &report)]);
    let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
    write(
        "bad.csv",
        "path,cwe,vulnerable,lines\napp/db.py,CWE-89,true,2\napp/x.py,sql,true,\n",
    );
    write(
        "bad-owasp.csv",
        "# test name, category, real vulnerability, cwe\nBenchmarkTest00001,sqli,perhaps,89\n",
    );
    write(
        "bad-castle.json",
        "{\"tests\": [{\"name\": \"CASTLE-1-1.c\", \"cwe\": 22,\n \"lines\": [3]}]}",
    );
    write("sarif.json", "{\"version\": \"2.1.0\", \"runs\": []}");

    let e = fails(dir.path(), &["report.json", "--truth", "bad.csv"]);
    assert_eq!(
        e,
        "fanscan: bad.csv:3: cwe: \"sql\" is not a CWE id: write it as CWE-89 or 89\n"
    );
    let e = fails(dir.path(), &["report.json", "--truth", "bad-owasp.csv"]);
    assert_eq!(
        e,
        "fanscan: bad-owasp.csv:2: real vulnerability is \"perhaps\": write true or false\n"
    );
    let e = fails(dir.path(), &["report.json", "--truth", "bad-castle.json"]);
    assert!(e.starts_with("fanscan: bad-castle.json:2:"), "{e}");
    assert!(e.contains("missing field `vulnerable`"), "{e}");
    let e = fails(dir.path(), &["report.json", "--truth", "missing.csv"]);
    assert!(
        e.starts_with("fanscan: missing.csv: cannot read the truth file:"),
        "{e}"
    );
    let e = fails(dir.path(), &["sarif.json", "--truth", "truth.csv"]);
    assert!(e.starts_with("fanscan: sarif.json:1:"), "{e}");
    assert!(
        e.contains("not a fanscan JSON report (missing field `findings`"),
        "{e}"
    );
    assert!(
        e.contains("give the report `fanscan scan --format json` writes"),
        "{e}"
    );
    let e = fails(dir.path(), &["nope.json", "--truth", "truth.csv"]);
    assert!(
        e.starts_with("fanscan: nope.json: cannot read the report:"),
        "{e}"
    );
    // A missing --truth is a usage error too.
    let e = fails(dir.path(), &["report.json"]);
    assert!(e.contains("--truth"), "{e}");
}

/// Six CASTLE-style tests: a vulnerable and a clean file for each of
/// three classes, the labelled line of each vulnerable one marked.
const CASTLE_FILES: [(&str, &str); 6] = [
    (
        "CASTLE-787-1.c",
        "#include <string.h>\n\nint main(int argc, char **argv) {\n    char buf[8];\n    (void)argc;\n    strcpy(buf, argv[1]); /* line 6 */\n    return 0;\n}\n",
    ),
    (
        "CASTLE-787-9.c",
        "#include <string.h>\n\nint main(void) {\n    char buf[8];\n    strncpy(buf, \"hi\", sizeof buf - 1);\n    return 0;\n}\n",
    ),
    (
        "CASTLE-78-1.c",
        "#include <stdlib.h>\n\nint main(int argc, char **argv) {\n    (void)argc;\n    return system(argv[1]); /* line 5 */\n}\n",
    ),
    (
        "CASTLE-78-9.c",
        "#include <stdlib.h>\n\nint main(void) {\n    return system(\"ls\");\n}\n",
    ),
    (
        "CASTLE-416-1.c",
        "#include <stdlib.h>\n\nint main(void) {\n    int *p = malloc(sizeof *p);\n    if (!p) return 1;\n    free(p);\n    return *p; /* line 7 */\n}\n",
    ),
    (
        "CASTLE-416-9.c",
        "#include <stdlib.h>\n\nint main(void) {\n    int *p = malloc(sizeof *p);\n    free(p);\n    return 0;\n}\n",
    ),
];

/// Their truth in the CASTLE dataset's JSON.
fn castle_truth() -> Value {
    let test = |name: &str, cwe: u32, vulnerable: bool, lines: &[u32]| {
        json!({"name": name, "dataset": "CASTLE-Benchmark", "version": "1.1", "cwe": cwe,
               "vulnerable": vulnerable, "lines": lines, "description": "", "code": ""})
    };
    json!({"name": "fanscan's CASTLE-score fixture", "version": "1.2", "tests": [
        test("CASTLE-787-1.c", 787, true, &[6]),
        test("CASTLE-787-9.c", 787, false, &[]),
        test("CASTLE-78-1.c", 78, true, &[5]),
        test("CASTLE-78-9.c", 78, false, &[]),
        test("CASTLE-416-1.c", 416, true, &[7]),
        test("CASTLE-416-9.c", 416, false, &[]),
    ]})
}

/// A finding of the given severity.
fn finding_at(path: &str, line: u32, rule: &str, cwe: &str, severity: &str) -> Value {
    let mut f = finding(path, line, rule, Some(cwe));
    f["severity"] = json!(severity);
    f
}

#[test]
fn the_castle_score_agrees_with_a_hand_count() {
    let mut files: Vec<(String, &str)> = CASTLE_FILES
        .iter()
        .map(|(name, text)| (format!("castle/{name}"), *text))
        .collect();
    files.push(("castle/Makefile".into(), "all:\n\tcc -o t *.c\n"));
    let refs: Vec<(&str, &str)> = files.iter().map(|(p, t)| (p.as_str(), *t)).collect();
    let repo = Repo::new(&refs);
    let c = |name: &str| format!("castle/{name}");
    let report = report_with(
        &repo,
        json!([
            // 1. On 787-1's labelled line 6, CWE-120: found by its line.
            finding_at(&c("CASTLE-787-1.c"), 6, "c/strcpy", "CWE-120", "high"),
            // 2. 787-1 again by its CWE, off the line: no second 5, no −1.
            finding_at(&c("CASTLE-787-1.c"), 3, "llm", "CWE-787", "high"),
            // 3. 78-1 off its line 5, with CWE-77, the parent of 78: found.
            finding_at(&c("CASTLE-78-1.c"), 3, "llm", "CWE-77", "critical"),
            // 4. 416-1 off its line 7, CWE-476: matches nothing.
            finding_at(&c("CASTLE-416-1.c"), 4, "llm", "CWE-476", "medium"),
            // 5. 416-1 on its line 7 with its CWE, but info: dropped.
            finding_at(&c("CASTLE-416-1.c"), 7, "llm", "CWE-416", "info"),
            // 6. A clean file flagged: matches nothing, and costs its +2.
            finding_at(&c("CASTLE-787-9.c"), 5, "c/strncpy", "CWE-787", "medium"),
            // 7. A clean file flagged low: dropped, it keeps its +2.
            finding_at(&c("CASTLE-78-9.c"), 4, "c/system", "CWE-78", "low"),
            // 8. A file no test labels: outside the benchmark, not scored.
            finding_at(&c("Makefile"), 2, "llm", "CWE-78", "high"),
        ]),
        json!([]),
        json!({"requests": 0, "input_tokens": 0, "output_tokens": 0, "cached_tokens": 0, "cost_usd": 0.0}),
    );
    let empty = report_with(&repo, json!([]), json!([]), json!({}));
    let dir = workdir(&[("report.json", &report), ("empty.json", &empty)]);
    std::fs::write(
        dir.path().join("castle-6.json"),
        serde_json::to_string_pretty(&castle_truth()).unwrap(),
    )
    .unwrap();

    let eval = eval_json(
        dir.path(),
        &[
            "report.json",
            "--truth",
            "castle-6.json",
            "--score",
            "castle",
        ],
    );
    // By hand: found 787-1 (1, 2) and 78-1 (3): 2 × 5 = 10. Clean with no
    // counted finding: 78-9 (7 is low) and 416-9: 2 × 2 = 4. Unmatched:
    // 4 and 6: 2 × −1 = −2. Score 10 + 4 − 2 = 12. Maximum: 3 vulnerable
    // × 5 + 3 clean × 2 = 21. Dropped: 5 and 7; outside the truth: 8.
    assert_eq!(
        eval["runs"][0]["castle"],
        json!({
            "score": 12, "maximum": 21,
            "vulnerable": 3, "vulnerable_found": 2, "found_points": 10,
            "clean": 3, "clean_without_finding": 2, "clean_points": 4,
            "unmatched_findings": 2, "unmatched_points": -2,
            "counted": 8, "dropped_low_or_info": 2, "outside_truth": 1,
            "unmatched": ["castle/CASTLE-416-1.c:4 llm", "castle/CASTLE-787-9.c:5 c/strncpy"]
        })
    );
    // Without --score the output is today's.
    let plain = eval_json(dir.path(), &["report.json", "--truth", "castle-6.json"]);
    assert!(plain["runs"][0].get("castle").is_none());

    // No finding at all: only the clean cases score, 3 × 2 = 6 of 21.
    let none = eval_json(
        dir.path(),
        &[
            "empty.json",
            "--truth",
            "castle-6.json",
            "--score",
            "castle",
        ],
    );
    assert_eq!(none["runs"][0]["castle"]["score"], 6);
    assert_eq!(none["runs"][0]["castle"]["maximum"], 21);

    let md = stdout(&fanscan_in(
        dir.path(),
        &[
            "eval",
            "report.json",
            "--truth",
            "castle-6.json",
            "--score",
            "castle",
        ],
    ));
    insta::assert_snapshot!("eval_castle_score", md);
}
