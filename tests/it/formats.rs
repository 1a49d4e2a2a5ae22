//! The CI formats (SARIF, GitHub annotations, GitLab Code Quality) on the
//! reports of real offline scans: SARIF checked against the official
//! 2.1.0 schema for a run with findings, one without and an incomplete
//! one; the mappings code scanning and GitLab read; snapshots of all three.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;
use sha2::Digest;

use fanscan::{Context, Format, ProviderArgs, Report, ScanArgs, Settings, Ui, exit};

use crate::cli::planted;
use crate::common::{Repo, fanscan};

/// The official schema, kept in the repository (its source and licence:
/// `tests/fixtures/README.md`).
const SCHEMA: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/sarif-schema-2.1.0.json"
);

async fn scan(repo: &Path, args: &ScanArgs) -> Report {
    let settings =
        Settings::resolve(repo, &ProviderArgs::default(), args, None, &|_| None).unwrap();
    let ctx = Context::new(settings).unwrap();
    let ui = Ui::hidden();
    fanscan::scan(&ctx, &ui).await.unwrap()
}

/// The report with what changes from run to run (clock, temporary root,
/// version) made fixed, for snapshots.
fn stable(mut report: Report) -> Report {
    report.started_at = "2026-01-01T00:00:00Z".into();
    report.duration_ms = 0;
    report.root = "<root>".into();
    report.tool.version = "0.0.0".into();
    report
}

/// A repository whose scan stops early with findings: jobs 1, the first
/// and third groups fit the token budget, the second (one big file) does
/// not even alone, so it never starts while the third still runs.
fn budget_repo() -> (Repo, ScanArgs) {
    let big = "# padding line for a big file\n".repeat(200);
    let repo = Repo::new(&[
        (
            "a/run.py",
            "import subprocess\n\ndef run(cmd):\n    subprocess.run(cmd, shell=True)\n",
        ),
        ("b/big.py", &big),
        (
            "c/hash.py",
            "import hashlib\nh = hashlib.md5(b'x').hexdigest()\n",
        ),
    ]);
    let args = ScanArgs {
        jobs: Some(1),
        group_tokens: Some(100),
        max_tokens: Some(5_100),
        ..ScanArgs::default()
    };
    (repo, args)
}

pub fn schema_errors(log: &str) -> Vec<String> {
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(SCHEMA).unwrap_or_else(|e| panic!("{SCHEMA}: {e}")),
    )
    .unwrap();
    let validator = jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .unwrap();
    let instance: Value = serde_json::from_str(log).unwrap();
    validator
        .iter_errors(&instance)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

pub fn assert_valid(log: &str) {
    let errors = schema_errors(log);
    assert!(errors.is_empty(), "{errors:#?}\n{log}");
}

fn rule<'a>(run: &'a Value, id: &str) -> &'a Value {
    run["tool"]["driver"]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("no rule {id}"))
}

#[tokio::test]
async fn sarif_of_a_scan_with_findings_is_valid_and_ranks_security_rules() {
    let repo = planted();
    let report = scan(repo.path(), &ScanArgs::default()).await;
    assert!(report.complete && !report.findings.is_empty());
    let log = report
        .render_sarif(Some("fanscan-nightly"), fanscan::SarifSuppressed::Omit)
        .unwrap();
    assert_valid(&log);

    let v: Value = serde_json::from_str(&log).unwrap();
    assert_eq!(v["version"], "2.1.0");
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    assert_eq!(run["tool"]["driver"]["name"], "fanscan");
    assert_eq!(run["automationDetails"]["id"], "fanscan-nightly/");
    assert_eq!(run["invocations"][0]["executionSuccessful"], true);
    let results = run["results"].as_array().unwrap();
    assert_eq!(results.len(), report.findings.len());

    // SQL built from strings: high, so an error, ranked high by code scanning.
    let sql = rule(run, "sql/concat");
    assert_eq!(sql["properties"]["security-severity"], "8.0");
    assert_eq!(sql["properties"]["tags"][0], "security");
    assert_eq!(sql["defaultConfiguration"]["level"], "error");
    assert!(!sql["shortDescription"]["text"].as_str().unwrap().is_empty());
    // unwrap() is low and not about security: a note, unranked.
    let unwrap = rule(run, "rust/unwrap");
    assert!(unwrap["properties"].get("security-severity").is_none());
    assert_eq!(unwrap["defaultConfiguration"]["level"], "note");
    // The redacted secret is a security result without a snippet: the log
    // must not repeat it.
    assert_eq!(
        rule(run, "secret/password")["properties"]["tags"][0],
        "security"
    );
    assert!(!log.contains("hunter2-prod"));

    for (result, m) in results.iter().zip(&report.findings) {
        assert_eq!(
            result["partialFingerprints"]["fanscan/v1"],
            m.fingerprint.as_str()
        );
        assert!(result["partialFingerprints"]["primaryLocationLineHash"].is_string());
        let location = &result["locations"][0]["physicalLocation"];
        assert_eq!(location["artifactLocation"]["uri"], m.finding.path.as_str());
        assert_eq!(location["artifactLocation"]["uriBaseId"], "%SRCROOT%");
        assert_eq!(location["region"]["startLine"], m.finding.line);
        assert_eq!(
            location["region"]["snippet"]["text"].as_str(),
            m.finding.evidence.as_deref()
        );
    }
    let level_of = |path: &str| {
        results
            .iter()
            .find(|r| r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == path)
            .map(|r| r["level"].as_str().unwrap().to_string())
            .unwrap()
    };
    assert_eq!(level_of("app/db.py"), "error");
    assert_eq!(level_of("src/lib.rs"), "note");
}

#[tokio::test]
async fn sarif_of_a_clean_scan_is_valid_and_empty() {
    let repo = Repo::new(&[(
        "src/lib.rs",
        "pub fn add(a: u32, b: u32) -> u32 {\n    a + b\n}\n",
    )]);
    let report = scan(repo.path(), &ScanArgs::default()).await;
    assert!(report.complete && report.findings.is_empty());
    let log = report
        .render_sarif(None, fanscan::SarifSuppressed::Omit)
        .unwrap();
    assert_valid(&log);
    let v: Value = serde_json::from_str(&log).unwrap();
    assert_eq!(v["runs"][0]["results"], serde_json::json!([]));
    assert_eq!(
        v["runs"][0]["tool"]["driver"]["rules"],
        serde_json::json!([])
    );
    assert!(v["runs"][0].get("automationDetails").is_none());
    assert_eq!(report.render(Format::Github).unwrap(), "");
    assert_eq!(report.render(Format::Codeclimate).unwrap(), "[]\n");
}

#[tokio::test]
async fn sarif_of_an_incomplete_scan_is_valid_and_says_why() {
    let (repo, args) = budget_repo();
    let report = scan(repo.path(), &args).await;
    assert!(!report.complete, "the budget should stop the scan");
    assert!(!report.findings.is_empty(), "the first group ran");
    let log = report
        .render_sarif(None, fanscan::SarifSuppressed::Omit)
        .unwrap();
    assert_valid(&log);
    let v: Value = serde_json::from_str(&log).unwrap();
    let invocation = &v["runs"][0]["invocations"][0];
    assert_eq!(invocation["executionSuccessful"], false);
    // The first group's `shell=True` finding runs its function's parameter
    // (medium: the caller chooses the command), so nothing gates: the run
    // is incomplete (3), as the exit code says.
    assert_eq!(invocation["exitCode"], 3);
    let notes = invocation["toolExecutionNotifications"].as_array().unwrap();
    let texts: Vec<&str> = notes
        .iter()
        .map(|n| n["message"]["text"].as_str().unwrap())
        .collect();
    assert!(
        texts.iter().any(|t| t.contains("token budget")),
        "{texts:#?}"
    );
    let failed: BTreeSet<&str> = notes
        .iter()
        .filter(|n| n["properties"]["kind"] == "failed_group")
        .flat_map(|n| n["properties"]["files"].as_array().unwrap())
        .map(|f| f.as_str().unwrap())
        .collect();
    assert_eq!(failed, BTreeSet::from(["b/big.py"]));
    assert!(notes.iter().all(|n| n["level"] == "error"));
}

/// The fixture is the published SARIF 2.1.0 schema (Errata 01), unedited:
/// its id and the SHA-256 the fixtures' README records.
#[test]
fn the_schema_is_the_official_sarif_2_1_0() {
    let bytes = std::fs::read(SCHEMA).unwrap_or_else(|e| panic!("{SCHEMA}: {e}"));
    let schema: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(
        schema["id"],
        "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
    );
    let sha: String = sha2::Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(
        sha, "c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e",
        "{SCHEMA} was edited: restore the published file (tests/fixtures/README.md)"
    );
}

/// Rules that the published schema has and looser copies (such as the
/// draft in the serde-sarif crate) lack: a region names where it starts.
#[test]
fn the_schema_rejects_what_only_the_published_version_forbids() {
    let no_start = r#"{"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}},
        "results": [{"message": {"text": "m"},
        "locations": [{"physicalLocation": {"region": {"startColumn": 3}}}]}]}]}"#;
    let errors = schema_errors(no_start);
    assert!(
        errors.iter().any(|e| e.contains("/region")),
        "a region without startLine, charOffset or byteOffset passed: {errors:#?}"
    );
}

#[test]
fn the_schema_check_is_not_vacuous() {
    let broken = r#"{"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}},
        "results": [{"message": {"text": "m"}, "level": "fatal",
        "locations": [{"physicalLocation": {"region": {"startLine": 0}}}]}]}]}"#;
    let errors = schema_errors(broken);
    assert!(errors.len() >= 2, "{errors:#?}");
}

#[tokio::test]
async fn github_annotations_cover_verified_findings_and_an_incomplete_run() {
    let repo = planted();
    let report = scan(repo.path(), &ScanArgs::default()).await;
    let text = report.render(Format::Github).unwrap();
    // One line per finding, then the failed gate (its high findings).
    assert_eq!(text.lines().count(), report.findings.len() + 1);
    assert!(
        text.lines()
            .last()
            .unwrap()
            .starts_with("::error title=fanscan%3A gate failed::"),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("::error file=app/db.py,line=2,title="))
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("::notice file=src/lib.rs,line=3,title="))
    );
    assert!(
        text.lines()
            .all(|l| l.starts_with("::") && l.matches("::").count() >= 2)
    );

    let (repo, args) = budget_repo();
    let report = scan(repo.path(), &args).await;
    let text = report.render(Format::Github).unwrap();
    let last = text.lines().last().unwrap();
    assert!(
        last.starts_with("::error title=fanscan%3A incomplete run::")
            && last.contains("token budget"),
        "{text}"
    );
}

#[tokio::test]
async fn codeclimate_is_a_json_array_with_unique_fingerprints() {
    let repo = planted();
    let report = scan(repo.path(), &ScanArgs::default()).await;
    let v: Value = serde_json::from_str(&report.render(Format::Codeclimate).unwrap()).unwrap();
    let issues = v.as_array().unwrap();
    assert_eq!(issues.len(), report.findings.len());
    let fingerprints: BTreeSet<&str> = issues
        .iter()
        .map(|i| i["fingerprint"].as_str().unwrap())
        .collect();
    assert_eq!(fingerprints.len(), issues.len());
    for issue in issues {
        assert_eq!(issue["type"], "issue");
        assert!(
            ["info", "minor", "major", "critical", "blocker"]
                .contains(&issue["severity"].as_str().unwrap())
        );
        assert!(issue["location"]["path"].is_string());
        assert!(issue["location"]["lines"]["begin"].as_u64().unwrap() >= 1);
        assert!(issue["check_name"].is_string() && issue["description"].is_string());
    }
    let sql = issues
        .iter()
        .find(|i| i["check_name"] == "sql/concat")
        .unwrap();
    assert_eq!(sql["severity"], "critical");
    assert_eq!(sql["categories"], serde_json::json!(["Security"]));
}

#[tokio::test]
async fn snapshots_of_the_three_formats() {
    let repo = planted();
    let report = stable(scan(repo.path(), &ScanArgs::default()).await);
    insta::assert_snapshot!(
        "sarif",
        report
            .render_sarif(Some("fanscan"), fanscan::SarifSuppressed::Omit)
            .unwrap()
    );
    insta::assert_snapshot!("github", report.render(Format::Github).unwrap());
    insta::assert_snapshot!("codeclimate", report.render(Format::Codeclimate).unwrap());

    let (repo, args) = budget_repo();
    let report = stable(scan(repo.path(), &args).await);
    insta::assert_snapshot!(
        "sarif_incomplete",
        report
            .render_sarif(None, fanscan::SarifSuppressed::Omit)
            .unwrap()
    );
    insta::assert_snapshot!("github_incomplete", report.render(Format::Github).unwrap());
}

#[test]
fn the_cli_spells_the_formats_sarif_github_and_codeclimate() {
    let repo = planted();
    let root = repo.path().to_str().unwrap();
    for format in ["sarif", "github", "codeclimate"] {
        let out = fanscan(&["scan", root, "--format", format, "--quiet"]);
        assert_eq!(
            out.status.code(),
            Some(exit::GATE_FAILED),
            "{format}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        match format {
            "github" => assert!(text.starts_with("::"), "{text}"),
            "sarif" => assert_valid(&text),
            _ => assert!(serde_json::from_str::<Value>(&text).unwrap().is_array()),
        }
    }
    // The same spelling in fanscan.toml.
    repo.write("fanscan.toml", "format = \"codeclimate\"\n");
    let out = fanscan(&["scan", root, "--quiet"]);
    assert!(
        serde_json::from_slice::<Value>(&out.stdout)
            .unwrap()
            .is_array()
    );
}
