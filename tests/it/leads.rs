//! Leads: the rule engine's hits and another tool's SARIF results put to
//! the auditor inside its fenced task, each answered (confirmed, dismissed
//! with a reason) or not, and every outcome in every format; `fanscan
//! triage` of a Semgrep-style and a CodeQL-style SARIF.

use serde_json::{Value, json};
use wiremock::ResponseTemplate;

use crate::common::*;

/// Three places the rule engine flags: a query built from input, one
/// built from a constant, and a shell command.
const APP: &str = "import os\nimport sqlite3\n\ndef find(cur, name):\n    cur.execute(\"SELECT * FROM users WHERE name = '\" + name + \"'\")\n\ndef fixed(cur):\n    kind = \"admin\"\n    cur.execute(\"SELECT * FROM users WHERE kind = '\" + kind + \"'\")\n\ndef run(cmd):\n    os.system(\"convert \" + cmd)\n";

/// The user message of an audit request.
fn task_of(body: &Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// The leads block of a task: the lines between the fence that opens
/// `leads of this group` and its close, each a JSON object.
fn leads_in(task: &str) -> Vec<Value> {
    let Some(start) = task.find("<file path=\"leads of this group\" boundary=\"") else {
        return Vec::new();
    };
    task[start..]
        .lines()
        .skip(1)
        .take_while(|l| !l.starts_with("</file "))
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Runs the binary against `mock` (OpenAI-compatible, model `m`, no run
/// store, no skeptic, JSON on stdout) with `args` after the command's own.
async fn run_with_model(mock: &MockModel, args: Vec<String>) -> std::process::Output {
    let base = mock.base_url();
    tokio::task::spawn_blocking(move || {
        let mut all: Vec<&str> = args.iter().map(String::as_str).collect();
        all.extend([
            "--provider",
            "openai",
            "--base-url",
            &base,
            "--model",
            "m",
            "--api-key-env",
            "PATH",
            "--no-store",
            "--challenge",
            "never",
            "--format",
            "json",
        ]);
        fanscan(&all)
    })
    .await
    .unwrap()
}

/// An auditor that answers its leads by line: the query from input is
/// confirmed, the one from a constant dismissed, the shell command left
/// unanswered; it reports nothing else.
fn answering_auditor(body: &Value) -> Value {
    if is_reduce(body) {
        return reducer_turn();
    }
    let read = body["messages"]
        .as_array()
        .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
    if !read && body["tool_choice"] != "none" {
        return read_listed(body);
    }
    let task = task_of(body);
    let answers: Vec<Value> = leads_in(&task)
        .iter()
        .filter_map(|lead| match lead["line"].as_u64() {
            Some(5) => Some(json!({"id": lead["id"], "verdict": "confirmed",
                "reason": "name comes from the caller and is concatenated into the query"})),
            Some(9) => Some(json!({"id": lead["id"], "verdict": "dismissed",
                "reason": "kind is the constant \"admin\": no input reaches the query"})),
            _ => None,
        })
        .collect();
    text_turn(&format!(
        "Reviewed.\n```json\n{}\n```\n[TASK_COMPLETE]",
        json!({"findings": [], "leads": answers})
    ))
}

#[tokio::test(flavor = "multi_thread")]
async fn rule_leads_reach_the_model_fenced_and_every_one_has_an_outcome() {
    let repo = Repo::new(&[("app.py", APP)]);
    let mock = MockModel::openai(Box::new(|body, _| {
        ResponseTemplate::new(200).set_body_json(answering_auditor(body))
    }))
    .await;
    let dir = repo.path().to_str().unwrap().to_string();
    let out_dir = tempfile::tempdir().unwrap();
    let md = out_dir.path().join("r.md");
    let sarif = out_dir.path().join("r.sarif");
    let html = out_dir.path().join("r.html");
    let github = out_dir.path().join("r.github");
    let out = run_with_model(
        &mock,
        vec![
            "scan".into(),
            dir,
            "--output".into(),
            format!("md={}", md.display()),
            "--output".into(),
            format!("sarif={}", sarif.display()),
            "--output".into(),
            format!("html={}", html.display()),
            "--output".into(),
            format!("github={}", github.display()),
        ],
    )
    .await;
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));

    // The task showed the three leads inside the run's fence, with the
    // answer format.
    let audits: Vec<_> = mock
        .requests()
        .into_iter()
        .filter(|s| !is_reduce(&s.body))
        .collect();
    let task = task_of(&audits[0].body);
    let boundary = boundary_of(audits[0].body["messages"][0]["content"].as_str().unwrap());
    assert!(
        task.contains(&format!(
            "<file path=\"leads of this group\" boundary=\"{boundary}\">"
        )),
        "{task}"
    );
    let shown = leads_in(&task);
    let lines: Vec<u64> = shown.iter().filter_map(|l| l["line"].as_u64()).collect();
    assert_eq!(lines, vec![5, 9, 12], "{task}");
    assert_eq!(shown[0]["id"], "L1");
    assert_eq!(shown[0]["cwe"], "CWE-89");
    assert!(
        shown[0]["code"]
            .as_str()
            .unwrap()
            .starts_with("cur.execute(")
    );
    assert!(
        task.contains("\"leads\" list answering every lead"),
        "{task}"
    );

    // Every lead has an outcome: one confirmed, one dismissed, one not
    // answered; the tally counts them per rule.
    let leads = &report["leads"];
    let tally: Vec<(String, u64, u64, u64)> = leads["tally"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["rule"].as_str().unwrap().to_string(),
                t["confirmed"].as_u64().unwrap(),
                t["dismissed"].as_u64().unwrap(),
                t["unanswered"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        tally,
        vec![
            ("exec/python-os-system".to_string(), 0, 0, 1),
            ("sql/concat".to_string(), 1, 1, 0)
        ]
    );
    assert_eq!(leads["dismissed"][0]["line"], 9);
    assert!(
        leads["dismissed"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("constant")
    );

    // The confirmed lead is a finding with the model's reason; the one not
    // answered is the rule's finding and says so; the dismissed one is no
    // finding.
    let findings = report["findings"].as_array().unwrap();
    let at = |line: u64| findings.iter().find(|m| m["line"] == line);
    let confirmed = at(5).expect("the confirmed lead is a finding");
    assert!(
        confirmed["detail"]
            .as_str()
            .unwrap()
            .starts_with("name comes from the caller")
    );
    assert_eq!(confirmed["verified"], true, "{confirmed}");
    let unanswered = at(12).expect("the unanswered lead stays a finding");
    assert!(
        unanswered["detail"]
            .as_str()
            .unwrap()
            .contains("did not answer")
    );
    assert!(at(9).is_none(), "a dismissed lead is no finding");
    // It gates: the confirmed high finding fails the run; the dismissed
    // one would not.
    assert_eq!(out.status.code(), Some(4));

    // Every format carries the outcomes.
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(
        md.contains("## Leads (3): 1 confirmed, 1 dismissed, 1 not answered"),
        "{md}"
    );
    assert!(
        md.contains("- `app.py:9` [sql/concat] (fanscan rules): kind is the constant"),
        "{md}"
    );
    let html = std::fs::read_to_string(&html).unwrap();
    assert!(html.contains("<section id=\"leads\">"));
    assert!(html.contains("Dismissed leads"));
    let sarif: Value = serde_json::from_str(&std::fs::read_to_string(&sarif).unwrap()).unwrap();
    let props = &sarif["runs"][0]["properties"]["leads"];
    assert_eq!(props["dismissed"][0]["line"], 9, "{props}");
    let results: Vec<u64> = sarif["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["locations"][0]["physicalLocation"]["region"]["startLine"].as_u64())
        .collect();
    assert!(
        results.contains(&5) && results.contains(&12) && !results.contains(&9),
        "{results:?}"
    );
    let github = std::fs::read_to_string(&github).unwrap();
    assert!(
        github.contains("::notice file=app.py,line=9,title=lead dismissed"),
        "{github}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn leads_off_puts_no_lead_to_the_model() {
    let repo = Repo::new(&[("app.py", APP)]);
    let mock = MockModel::openai(Box::new(|body, _| {
        ResponseTemplate::new(200).set_body_json(answering_auditor(body))
    }))
    .await;
    let dir = repo.path().to_str().unwrap().to_string();
    let out = run_with_model(
        &mock,
        vec!["scan".into(), dir, "--leads".into(), "off".into()],
    )
    .await;
    let report = report_of(&out);
    assert!(report.leads.is_none());
    assert!(report.findings.is_empty());
    for seen in mock.requests() {
        assert!(leads_in(&task_of(&seen.body)).is_empty());
        assert!(!task_of(&seen.body).contains("Leads:"));
    }
    assert_eq!(out.status.code(), Some(0));
}

/// A Semgrep-style SARIF: rules with `CWE-…` tags, results with relative
/// URIs, one outside the repository.
fn semgrep_sarif() -> Value {
    json!({"version": "2.1.0", "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
    "runs": [{"tool": {"driver": {"name": "Semgrep OSS", "rules": [
      {"id": "python.lang.security.audit.formatted-sql-query", "name": "formatted-sql-query",
       "shortDescription": {"text": "Detected possible formatted SQL query"},
       "defaultConfiguration": {"level": "warning"},
       "properties": {"tags": ["CWE-89: Improper Neutralization of Special Elements used in an SQL Command", "OWASP-A03:2021 - Injection"]}}]}},
     "results": [
      {"ruleId": "python.lang.security.audit.formatted-sql-query", "level": "warning",
       "message": {"text": "Detected possible formatted SQL query. Use parameterized queries instead."},
       "locations": [{"physicalLocation": {"artifactLocation": {"uri": "app.py", "uriBaseId": "%SRCROOT%"},
         "region": {"startLine": 5, "endLine": 5, "snippet": {"text": "cur.execute(...)"}}}}]},
      {"ruleId": "python.lang.security.audit.formatted-sql-query", "level": "warning",
       "message": {"text": "Detected possible formatted SQL query."},
       "locations": [{"physicalLocation": {"artifactLocation": {"uri": "app.py"}, "region": {"startLine": 9}}}]},
      {"ruleId": "python.lang.security.audit.formatted-sql-query", "level": "warning",
       "message": {"text": "elsewhere"},
       "locations": [{"physicalLocation": {"artifactLocation": {"uri": "../outside/x.py"}, "region": {"startLine": 1}}}]}
     ]}]})
}

/// A CodeQL-style SARIF: rules by index with `external/cwe/cwe-078` tags
/// and a `security-severity`, results naming the rule by id and index.
fn codeql_sarif() -> Value {
    json!({"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "CodeQL", "semanticVersion": "2.19.0", "rules": [
      {"id": "py/command-line-injection", "name": "py/command-line-injection",
       "shortDescription": {"text": "Uncontrolled command line"},
       "properties": {"security-severity": "9.8", "problem.severity": "error",
         "tags": ["correctness", "security", "external/cwe/cwe-078", "external/cwe/cwe-088"]}}]}},
    "results": [
      {"ruleId": "py/command-line-injection", "ruleIndex": 0, "rule": {"id": "py/command-line-injection", "index": 0},
       "message": {"text": "This command line depends on a [user-provided value](1)."},
       "locations": [{"physicalLocation": {"artifactLocation": {"uri": "app.py", "uriBaseId": "%SRCROOT%", "index": 0},
         "region": {"startLine": 12, "startColumn": 5, "endColumn": 36}}}]},
      {"ruleId": "py/command-line-injection", "ruleIndex": 0,
       "message": {"text": "In a file the scan leaves out."},
       "locations": [{"physicalLocation": {"artifactLocation": {"uri": "vendor/lib.py"}, "region": {"startLine": 3}}}]}
    ]}]})
}

#[tokio::test(flavor = "multi_thread")]
async fn triage_judges_a_semgrep_and_a_codeql_sarif_with_a_model() {
    let repo = Repo::new(&[
        ("app.py", APP),
        ("other.py", "def untouched():\n    return 1\n"),
    ]);
    let sarifs = tempfile::tempdir().unwrap();
    let semgrep = sarifs.path().join("semgrep.sarif");
    let codeql = sarifs.path().join("codeql.sarif");
    std::fs::write(&semgrep, semgrep_sarif().to_string()).unwrap();
    std::fs::write(&codeql, codeql_sarif().to_string()).unwrap();
    let mock = MockModel::openai(Box::new(|body, _| {
        ResponseTemplate::new(200).set_body_json(answering_auditor(body))
    }))
    .await;
    let dir = repo.path().to_str().unwrap().to_string();
    let out = run_with_model(
        &mock,
        vec![
            "triage".into(),
            semgrep.display().to_string(),
            dir,
            "--leads".into(),
            codeql.display().to_string(),
            "--exclude".into(),
            "vendor/**".into(),
        ],
    )
    .await;
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    // Only the file with leads was audited; the rule engine's own hits
    // were not put as leads (a triage judges the SARIF).
    let audits: Vec<_> = mock
        .requests()
        .into_iter()
        .filter(|s| !is_reduce(&s.body))
        .collect();
    assert!(!audits.is_empty());
    for audit in &audits {
        assert_eq!(task_files(&audit.body), vec!["app.py"]);
    }
    let shown: Vec<(String, u64)> = leads_in(&task_of(&audits[0].body))
        .iter()
        .map(|l| {
            (
                l["rule"].as_str().unwrap().to_string(),
                l["line"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        shown,
        vec![
            (
                "python.lang.security.audit.formatted-sql-query".to_string(),
                5
            ),
            (
                "python.lang.security.audit.formatted-sql-query".to_string(),
                9
            ),
            ("py/command-line-injection".to_string(), 12)
        ]
    );
    let leads = &report["leads"];
    let tally: Vec<(String, String, u64, u64, u64)> = leads["tally"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["tool"].as_str().unwrap().into(),
                t["rule"].as_str().unwrap().into(),
                t["confirmed"].as_u64().unwrap(),
                t["dismissed"].as_u64().unwrap(),
                t["unanswered"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        tally,
        vec![
            ("CodeQL".into(), "py/command-line-injection".into(), 0, 0, 1),
            (
                "Semgrep OSS".into(),
                "python.lang.security.audit.formatted-sql-query".into(),
                1,
                1,
                0
            ),
        ]
    );
    // The results outside the repository or the scan are listed, never read.
    let outside: Vec<(String, String)> = leads["outside"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["location"].as_str().unwrap().into(),
                o["why"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(outside.len(), 2, "{outside:?}");
    assert!(
        outside
            .iter()
            .any(|(l, w)| l == "../outside/x.py:1" && w.contains("outside the repository"))
    );
    assert!(
        outside
            .iter()
            .any(|(l, w)| l == "vendor/lib.py:3" && w.contains("not audited"))
    );
    // The CodeQL result keeps its CWE and severity; the confirmed Semgrep
    // one is a verified finding with the model's reason.
    let findings = report["findings"].as_array().unwrap();
    let cmd = findings.iter().find(|m| m["line"] == 12).unwrap();
    assert_eq!(cmd["cwe"], "CWE-78");
    assert_eq!(cmd["severity"], "critical");
    let sql = findings.iter().find(|m| m["line"] == 5).unwrap();
    assert_eq!(
        sql["rule"],
        "python.lang.security.audit.formatted-sql-query"
    );
    assert!(sql["detail"].as_str().unwrap().contains("Semgrep OSS"));
    assert_eq!(out.status.code(), Some(4));
}

#[tokio::test(flavor = "multi_thread")]
async fn triage_with_the_offline_engine_answers_by_its_check_on_the_syntax_trees() {
    let repo = Repo::new(&[("app.py", APP)]);
    let sarifs = tempfile::tempdir().unwrap();
    let semgrep = sarifs.path().join("semgrep.sarif");
    std::fs::write(&semgrep, semgrep_sarif().to_string()).unwrap();
    let out = fanscan(&[
        "triage",
        semgrep.to_str().unwrap(),
        repo.path().to_str().unwrap(),
        "--no-store",
        "--format",
        "json",
        "--fail-on",
        "never",
    ]);
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let leads = &report["leads"];
    // The query from a constant is dismissed with the check's reason;
    // the one from a parameter it cannot tell, so it stands.
    assert_eq!(leads["tally"][0]["dismissed"], 1, "{leads}");
    assert_eq!(leads["tally"][0]["unanswered"], 1, "{leads}");
    assert_eq!(leads["dismissed"][0]["line"], 9);
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn a_malformed_sarif_is_exit_2_naming_the_file_and_the_json_path() {
    let repo = Repo::new(&[("app.py", APP)]);
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.sarif");
    let mut log = semgrep_sarif();
    log["runs"][0]["results"][1]["locations"][0]["physicalLocation"]["region"]["startLine"] =
        json!("nine");
    std::fs::write(&bad, log.to_string()).unwrap();
    let out = fanscan(&[
        "triage",
        bad.to_str().unwrap(),
        repo.path().to_str().unwrap(),
        "--no-store",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("bad.sarif"), "{stderr}");
    assert!(
        stderr.contains("$.runs[0].results[1].locations[0].physicalLocation.region.startLine"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
    std::fs::write(&bad, "{not json").unwrap();
    let out = fanscan(&[
        "scan",
        repo.path().to_str().unwrap(),
        "--leads",
        bad.to_str().unwrap(),
        "--no-store",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not JSON"));
    let out = fanscan(&[
        "scan",
        repo.path().to_str().unwrap(),
        "--leads",
        "nope.txt",
        "--no-store",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("give off, rules, or a SARIF file"));
}
