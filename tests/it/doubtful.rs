//! Reviews that did not happen: a group whose model made claims and none
//! was verified is marked `doubtful` in every format, with its claims; the
//! run passes as before unless `--strict`, which makes it incomplete
//! (exit 3). The model is a mock over real HTTP that invents a finding
//! at a line the file does not have.

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};
use wiremock::ResponseTemplate;

use fanscan::{Context, Format, GateArgs, Report, RunArgs, ScanArgs, Ui, exit};

use crate::common::{MockModel, Repo, fanscan, findings_turn};
use crate::formats::schema_errors;

const APP: &str =
    "def handler(request):\n    name = request.args['name']\n    return greet(name)\n";

/// A finding on a line app/views.py does not have (a claim at a real
/// line of the group's file whose quote is not there is located, not
/// invented: the skeptic judges it).
fn invented() -> Value {
    json!({"path": "app/views.py", "line": 9, "severity": "critical", "title": "eval of request input",
           "detail": "d", "evidence": "eval(request.args['code'])"})
}

/// A finding quoting the real line 2.
fn real() -> Value {
    json!({"path": "app/views.py", "line": 2, "severity": "low", "title": "unvalidated name",
           "detail": "d", "evidence": "name = request.args['name']"})
}

/// A model that answers every turn with `findings`.
async fn model(findings: Value) -> MockModel {
    MockModel::openai(Box::new(move |_, _| {
        ResponseTemplate::new(200).set_body_json(findings_turn(findings.clone()))
    }))
    .await
}

async fn scan(mock: &MockModel, repo: &Repo, strict: bool) -> Report {
    let args = ScanArgs {
        no_store: true,
        ..ScanArgs::default()
    };
    let settings = mock.settings_with(
        repo.path(),
        RunArgs {
            scan: args,
            gate: GateArgs {
                strict,
                ..GateArgs::default()
            },
            ..RunArgs::default()
        },
    );
    let ctx = Context::new(settings).unwrap();
    let ui = Ui::hidden();
    fanscan::scan(&ctx, &ui).await.unwrap()
}

fn repo() -> Repo {
    Repo::new(&[("app/views.py", APP)])
}

#[tokio::test]
async fn a_group_whose_only_claim_is_invented_is_doubtful_in_every_format() {
    let repo = repo();
    let mock = model(json!([invented()])).await;
    let report = scan(&mock, &repo, false).await;

    // Passes as before: complete, the gate passes (the claim is unverified).
    assert!(report.complete, "{:?}", report.incomplete_reasons);
    assert_eq!(report.exit_code(), exit::OK);
    assert!(report.findings.is_empty());
    assert_eq!(report.unverified.len(), 1);

    assert_eq!(report.doubtful.len(), 1, "{report:#?}");
    let d = &report.doubtful[0];
    assert_eq!(d.group, report.groups[0].id);
    assert_eq!(d.agent, "auditor");
    assert_eq!(d.files, vec!["app/views.py"]);
    assert_eq!(d.claims.len(), 1);
    assert_eq!(d.claims[0].path.as_deref(), Some("app/views.py"));
    assert_eq!(d.claims[0].line, Some(9));
    assert_eq!(d.claims[0].text, "eval of request input");
    assert!(
        d.claims[0]
            .reason
            .contains("line 9 is outside app/views.py"),
        "{}",
        d.claims[0].reason
    );
    assert!(report.groups[0].doubtful);
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("1 group made claims and none was verified")
                && n.contains("--strict makes such a run incomplete")),
        "{:?}",
        report.notes
    );

    let json: Value = serde_json::from_str(&report.render(Format::Json).unwrap()).unwrap();
    assert_eq!(json["groups"][0]["doubtful"], true);
    assert_eq!(
        json["doubtful"][0]["claims"][0]["text"],
        "eval of request input"
    );

    let md = report.render(Format::Md).unwrap();
    assert!(
        md.contains("> **Doubtful reviews.** 1 group made claims"),
        "{md}"
    );
    assert!(
        md.contains("## Doubtful reviews (1): claims made, none verified"),
        "{md}"
    );
    assert!(
        md.contains("  - `app/views.py:9` eval of request input: line 9 is outside"),
        "{md}"
    );

    let log = report
        .render_sarif(None, fanscan::SarifSuppressed::Omit)
        .unwrap();
    let errors = schema_errors(&log);
    assert!(errors.is_empty(), "{errors:#?}");
    let sarif: Value = serde_json::from_str(&log).unwrap();
    let notes = sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"]
        .as_array()
        .unwrap();
    let note = notes
        .iter()
        .find(|n| n["properties"]["kind"] == "doubtful")
        .unwrap_or_else(|| panic!("{notes:#?}"));
    assert_eq!(note["level"], "warning");
    assert_eq!(note["properties"]["files"], json!(["app/views.py"]));
    assert_eq!(note["properties"]["claims"][0]["line"], 9);
    assert_eq!(
        sarif["runs"][0]["invocations"][0]["executionSuccessful"],
        true
    );

    let github = report.render(Format::Github).unwrap();
    let line = github
        .lines()
        .find(|l| l.starts_with("::warning title=fanscan%3A doubtful review::"))
        .unwrap_or_else(|| panic!("{github}"));
    assert!(
        line.contains("made 1 claim and none was verified"),
        "{line}"
    );
    assert!(
        line.contains("app/views.py:9 eval of request input"),
        "{line}"
    );
}

#[tokio::test]
async fn strict_makes_a_doubtful_review_an_incomplete_run() {
    let repo = repo();
    let mock = model(json!([invented()])).await;
    let report = scan(&mock, &repo, true).await;
    assert!(!report.complete);
    assert_eq!(report.exit_code(), exit::INCOMPLETE);
    assert!(report.gate.strict);
    assert!(
        report.incomplete_reasons.iter().any(|r| r.starts_with(
            "--strict: 1 group made claims and none was verified, so it was not reviewed cleanly (doubtful)"
        )),
        "{:?}",
        report.incomplete_reasons
    );
    let md = report.render(Format::Md).unwrap();
    assert!(md.contains("**Gate: INCOMPLETE**"), "{md}");
    let sarif: Value = serde_json::from_str(
        &report
            .render_sarif(None, fanscan::SarifSuppressed::Omit)
            .unwrap(),
    )
    .unwrap();
    let invocation = &sarif["runs"][0]["invocations"][0];
    assert_eq!(invocation["executionSuccessful"], false);
    assert_eq!(invocation["exitCode"], 3);
}

#[tokio::test]
async fn a_group_with_one_verified_claim_or_none_at_all_is_not_doubtful() {
    let repo = repo();
    let mock = model(json!([invented(), real()])).await;
    let report = scan(&mock, &repo, true).await;
    assert_eq!(report.findings.len(), 1);
    assert_eq!(report.unverified.len(), 1);
    assert!(report.doubtful.is_empty(), "{:?}", report.doubtful);
    assert!(report.complete && !report.groups[0].doubtful);

    // A claim at a real line whose quote is not there is located (the
    // skeptic judges it), not invented: not a doubtful review either.
    let located = json!({"path": "app/views.py", "line": 2, "severity": "critical",
        "title": "eval of request input", "detail": "d", "evidence": "eval(request.args['code'])"});
    let mock = model(json!([located])).await;
    let report = scan(&mock, &repo, true).await;
    assert_eq!(report.unverified.len(), 1);
    assert!(report.unverified[0].located);
    assert!(report.doubtful.is_empty(), "{:?}", report.doubtful);
    assert!(report.complete);

    // Nothing claimed is a review that found nothing, not a doubtful one.
    let mock = model(json!([])).await;
    let report = scan(&mock, &repo, true).await;
    assert!(report.doubtful.is_empty() && report.complete);
    assert_eq!(report.exit_code(), exit::OK);
}

fn scan_cli(root: &Path, base: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "scan",
        root.to_str().unwrap(),
        "--format",
        "json",
        "--quiet",
        "--no-store",
        "--provider",
        "openai",
        "--base-url",
        base,
        "--model",
        "m",
    ];
    args.extend_from_slice(extra);
    fanscan(&args)
}

#[test]
fn the_cli_exits_0_with_a_doubtful_review_and_3_with_strict() {
    let repo = repo();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mock = rt.block_on(model(json!([invented()])));
    let base = mock.base_url();
    let out = scan_cli(repo.path(), &base, &[]);
    assert_eq!(
        out.status.code(),
        Some(exit::OK),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["doubtful"].as_array().unwrap().len(), 1);
    assert_eq!(report["complete"], true);

    let out = scan_cli(repo.path(), &base, &["--strict"]);
    assert_eq!(
        out.status.code(),
        Some(exit::INCOMPLETE),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["complete"], false);
    assert_eq!(report["gate"]["outcome"], "incomplete");
}
