//! The skeptic stage against scripted models over real HTTP (confirmed,
//! refuted, uncertain, broken answers, a refutation with an invented flow
//! step, located claims), its cache in the run store, and the offline
//! engine's answers through the binary.

use std::path::Path;

use serde_json::{Value, json};
use wiremock::ResponseTemplate;

use fanscan::{Context, FailOn, Format, Report, RunArgs, Stance, Ui, exit};

use crate::common::{MockModel, Repo, fanscan, findings_turn, task_files, text_turn, tool_turn};

const DB: &str = "import sys\n\ndef find(cur):\n    name = sys.argv[1]\n    cur.execute(\"SELECT * FROM users WHERE name = '\" + name + \"'\")\n    return cur.fetchall()\n";
const SINK: &str = "cur.execute(\"SELECT * FROM users WHERE name = '\" + name + \"'\")";

fn repo() -> Repo {
    Repo::new(&[("app/db.py", DB)])
}

/// Whether a request is the skeptic's.
fn is_skeptic(body: &Value) -> bool {
    body.to_string().contains("TASK: challenge")
}

/// A model that audits like a careful auditor (reads its files, then
/// reports `finding`) and answers the skeptic's final turn with `verdict`.
fn model(finding: Value, verdict: &'static str) -> crate::common::Behaviour {
    Box::new(move |body, _| {
        ResponseTemplate::new(200).set_body_json(reply(&finding, verdict, body))
    })
}

/// What [`model`] answers to `body`.
fn reply(finding: &Value, verdict: &str, body: &Value) -> Value {
    if is_skeptic(body) {
        return if body.get("response_format").is_some() {
            text_turn(verdict)
        } else {
            text_turn("I traced the value.")
        };
    }
    let read = body["messages"]
        .as_array()
        .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
    if read || body.get("response_format").is_some() {
        return findings_turn(json!([finding.clone()]));
    }
    crate::common::read_listed(body)
}

fn sink_finding() -> Value {
    json!({"path": "app/db.py", "line": 5, "severity": "high", "title": "SQL injection",
           "detail": "the name is concatenated into the query", "evidence": SINK})
}

/// A claim whose quote is not code: it fails verification, but its line
/// exists in a file of the group.
fn located_claim() -> Value {
    json!({"path": "app/db.py", "line": 5, "severity": "high", "title": "SQL injection",
           "detail": "d", "evidence": "db.py (5): the query is built from the argument"})
}

/// The arguments of a scan whose skeptic challenges from `level` on.
fn challenge(level: FailOn) -> RunArgs {
    RunArgs {
        gate: fanscan::GateArgs {
            challenge: Some(level),
            ..fanscan::GateArgs::default()
        },
        ..RunArgs::default()
    }
}

async fn run(mock: &MockModel, repo: &Path) -> Report {
    let settings = mock.settings_with(repo, challenge(FailOn::High));
    let ctx = Context::new(settings).unwrap();
    let ui = Ui::hidden();
    fanscan::scan(&ctx, &ui).await.unwrap()
}

fn skeptic_requests(mock: &MockModel) -> usize {
    mock.requests()
        .iter()
        .filter(|r| is_skeptic(&r.body))
        .count()
}

#[tokio::test]
async fn a_confirmed_finding_stays_in_the_gate_with_its_confidence_and_flow() {
    let repo = repo();
    let mock = MockModel::openai(model(
        sink_finding(),
        r#"{"verdicts": [{"id": "f1", "verdict": "confirmed", "confidence": 8, "why": "argv reaches the query", "flow": ["app/db.py:4", "app/db.py:5"]}]}"#,
    ))
    .await;
    let report = run(&mock, repo.path()).await;
    assert_eq!(report.findings.len(), 1, "{:?}", report.refuted);
    let c = report.findings[0].challenge.as_ref().unwrap();
    assert_eq!((c.stance, c.confidence), (Stance::Confirmed, Some(8)));
    assert_eq!(c.flow, vec!["app/db.py:4", "app/db.py:5"]);
    assert_eq!(report.exit_code(), exit::GATE_FAILED);
    // One fresh context: its task shows the code around the finding.
    let skeptic: Vec<_> = mock
        .requests()
        .into_iter()
        .filter(|r| is_skeptic(&r.body))
        .collect();
    assert_eq!(skeptic.len(), 2, "a turn, then the verdicts");
    // The repository brief is in its prefix, as in the auditors'.
    let system = skeptic[0].body["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains(crate::common::BRIEF_TEXT), "{system}");
    let task = skeptic[0].body["messages"][1]["content"].as_str().unwrap();
    let b = crate::common::boundary_of(system);
    assert!(
        task.contains(&format!("<file path=\"app/db.py\" boundary=\"{b}\">")),
        "{task}"
    );
    assert!(task.contains("sys.argv[1]"), "{task}");
    let schema = &skeptic[1].body["response_format"]["json_schema"];
    assert_eq!(schema["name"], "report_verdicts");
    assert!(report.stats.agents.contains_key("skeptic"));
    let md = report.render(Format::Md).unwrap();
    assert!(md.contains("confirmed (confidence 8/10)"), "{md}");
}

#[tokio::test]
async fn a_refuted_finding_leaves_the_gate_and_is_listed_with_its_reason_in_every_format() {
    let repo = repo();
    let mock = MockModel::openai(model(
        sink_finding(),
        r#"{"verdicts": [{"id": "f1", "verdict": "refuted", "confidence": 9, "why": "the name is checked against a fixed list first", "flow": ["app/db.py:4"]}]}"#,
    ))
    .await;
    let report = run(&mock, repo.path()).await;
    assert!(report.findings.is_empty(), "{:?}", report.findings);
    assert_eq!(report.refuted.len(), 1);
    assert_eq!(report.exit_code(), exit::OK, "{:?}", report.gate);
    let reason = "the name is checked against a fixed list first";
    let json = report.render(Format::Json).unwrap();
    let v: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["refuted"][0]["challenge"]["reason"], reason);
    assert_eq!(v["refuted"][0]["challenge"]["confidence"], 9);
    let md = report.render(Format::Md).unwrap();
    assert!(md.contains("## Refuted by the skeptic (1)"), "{md}");
    assert!(md.contains(reason));
    // The SARIF for code scanning leaves it out (an uploaded result opens
    // an alert, suppressed or not) and counts it...
    let sarif_text = report.render(Format::Sarif).unwrap();
    crate::formats::assert_valid(&sarif_text);
    let sarif: Value = serde_json::from_str(&sarif_text).unwrap();
    assert_eq!(sarif["runs"][0]["results"].as_array().unwrap().len(), 0);
    assert_eq!(sarif["runs"][0]["properties"]["omitted"]["refuted"], 1);
    // ... and keeps it as a suppressed result when asked.
    let sarif_text = report
        .render_sarif(None, fanscan::SarifSuppressed::Keep)
        .unwrap();
    crate::formats::assert_valid(&sarif_text);
    let sarif: Value = serde_json::from_str(&sarif_text).unwrap();
    let result = &sarif["runs"][0]["results"][0];
    assert_eq!(result["suppressions"][0]["kind"], "external");
    let justification = result["suppressions"][0]["justification"].as_str().unwrap();
    assert!(justification.contains(reason), "{justification}");
    assert_eq!(result["properties"]["skeptic"]["verdict"], "refuted");
    let github = report.render(Format::Github).unwrap();
    assert!(
        github.contains("::notice file=app/db.py,line=5,title=refuted by the skeptic"),
        "{github}"
    );
    // Code Quality lists what gates, like the gate itself.
    let cc: Value = serde_json::from_str(&report.render(Format::Codeclimate).unwrap()).unwrap();
    assert_eq!(cc.as_array().unwrap().len(), 0);
}

/// A model's refutation of a finding whose value the rule engine traces
/// from argv to its line is not trusted: the finding stays in the gate,
/// uncertain, and says why. (A small model refuted a true finding with a
/// reason that argued it.)
#[tokio::test]
async fn a_refutation_of_a_traced_flow_is_not_trusted() {
    let repo = repo();
    let mut finding = sink_finding();
    finding["rule"] = json!("sql/concat");
    let mock = MockModel::openai(model(
        finding,
        r#"{"verdicts": [{"id": "f1", "verdict": "refuted", "confidence": 10, "why": "the name is user-controlled and goes into the query", "flow": ["app/db.py:4", "app/db.py:5"]}]}"#,
    ))
    .await;
    let report = run(&mock, repo.path()).await;
    assert!(report.refuted.is_empty(), "{:?}", report.refuted);
    let challenge = report.findings[0].challenge.as_ref().unwrap();
    assert_eq!(challenge.stance, Stance::Uncertain);
    assert_eq!(challenge.confidence, None);
    assert!(
        challenge
            .notes
            .iter()
            .any(|n| n.contains("line 4: the command line: `sys.argv`")),
        "{:?}",
        challenge.notes
    );
    assert_eq!(report.exit_code(), exit::GATE_FAILED);
    // Where the value is not traced (a parameter), the refutation stands.
    repo.write(
        "app/db.py",
        &DB.replace("def find(cur):", "def find(cur, name):")
            .replace("    name = sys.argv[1]\n", ""),
    );
    let mut finding = sink_finding();
    finding["rule"] = json!("sql/concat");
    finding["line"] = json!(4);
    let mock = MockModel::openai(model(
        finding,
        r#"{"verdicts": [{"id": "f1", "verdict": "refuted", "confidence": 8, "why": "every caller passes a fixed name"}]}"#,
    ))
    .await;
    let report = run(&mock, repo.path()).await;
    assert_eq!(report.refuted.len(), 1, "{:?}", report.findings);
}

#[tokio::test]
async fn an_uncertain_finding_stays() {
    let repo = repo();
    let mock = MockModel::openai(model(
        sink_finding(),
        r#"{"verdicts": [{"id": "f1", "verdict": "uncertain", "confidence": 4, "why": "cannot tell", "flow": []}]}"#,
    ))
    .await;
    let report = run(&mock, repo.path()).await;
    assert_eq!(report.findings.len(), 1);
    let c = report.findings[0].challenge.as_ref().unwrap();
    assert_eq!((c.stance, c.confidence), (Stance::Uncertain, Some(4)));
    assert_eq!(report.exit_code(), exit::GATE_FAILED);
}

#[tokio::test]
async fn broken_answers_are_no_verdict_never_refuted_never_lost() {
    for (verdict, says, requests) in [
        // Not JSON: the one repair turn, then no verdict.
        (
            "no json at all",
            "not a JSON object with a list of verdicts",
            3,
        ),
        // JSON, but no entry for the finding.
        (r#"{"verdicts": []}"#, "no verdict for this finding", 2),
        // An entry that is not a verdict.
        (
            r#"{"verdicts": [{"id": "f1", "verdict": "probably", "confidence": 4, "why": "x", "flow": []}]}"#,
            "none of confirmed, refuted, uncertain",
            2,
        ),
    ] {
        let repo = repo();
        let mock = MockModel::openai(model(sink_finding(), verdict)).await;
        let report = run(&mock, repo.path()).await;
        assert_eq!(report.findings.len(), 1, "{verdict}: {:?}", report.refuted);
        let c = report.findings[0].challenge.as_ref().unwrap();
        assert_eq!(
            (c.stance, c.confidence),
            (Stance::NoVerdict, None),
            "{verdict}"
        );
        assert!(c.reason.contains(says), "{verdict}: {}", c.reason);
        assert_eq!(skeptic_requests(&mock), requests, "{verdict}");
        assert_eq!(report.exit_code(), exit::GATE_FAILED);
    }
}

/// A verdict is a verdict without its confidence: an unusable one is left
/// out and noted (it was a broken entry, without a verdict).
#[tokio::test]
async fn a_verdict_with_an_unusable_confidence_stands_without_it() {
    let repo = repo();
    let mock = MockModel::openai(model(
        sink_finding(),
        r#"{"verdicts": [{"id": "f1", "verdict": "refuted", "confidence": 42, "why": "the name is checked first", "flow": []}]}"#,
    ))
    .await;
    let report = run(&mock, repo.path()).await;
    assert_eq!(report.refuted.len(), 1, "{:?}", report.findings);
    let c = report.refuted[0].challenge.as_ref().unwrap();
    assert_eq!((c.stance, c.confidence), (Stance::Refuted, None));
    assert_eq!(
        c.notes,
        vec!["its confidence 42 is not a number from 1 to 10: left out"]
    );
    assert_eq!(report.exit_code(), exit::OK);
    let md = report.render(Format::Md).unwrap();
    assert!(md.contains("refuted: the name is checked first"), "{md}");
}

/// A stored verdict rests on the files its flow names too: when one of
/// them changes, the finding is asked again.
#[tokio::test]
async fn a_stored_verdict_is_asked_again_when_a_file_of_its_flow_changes() {
    let repo = Repo::new(&[
        ("app/db.py", DB),
        (
            "app/cli.py",
            "import sys
NAME = sys.argv[1]
",
        ),
    ]);
    let mock = MockModel::openai(model(
        sink_finding(),
        r#"{"verdicts": [{"id": "f1", "verdict": "confirmed", "why": "argv reaches the query", "flow": ["app/cli.py:2", "app/db.py:5"]}]}"#,
    ))
    .await;
    let _ = run(&mock, repo.path()).await;
    assert_eq!(skeptic_requests(&mock), 2);
    let _ = run(&mock, repo.path()).await;
    assert_eq!(skeptic_requests(&mock), 2, "unchanged: reused");
    repo.write(
        "app/cli.py",
        "import sys

NAME = sys.argv[1]
",
    );
    let again = run(&mock, repo.path()).await;
    assert_eq!(skeptic_requests(&mock), 4, "its flow's file changed");
    let c = again.findings[0].challenge.as_ref().unwrap();
    assert_eq!(c.confidence, None, "a verdict without one");
}

/// An answer that is no verdict (not JSON) is the model's answer: kept,
/// so the next run asks nothing (issue 35). A call that failed is no
/// answer: nothing is kept, and the next run asks again.
#[tokio::test]
async fn an_answer_that_is_no_verdict_is_kept_and_a_failed_call_is_asked_again() {
    let repo = repo();
    let mock = MockModel::openai(model(sink_finding(), "no json at all")).await;
    let _ = run(&mock, repo.path()).await;
    assert_eq!(
        skeptic_requests(&mock),
        3,
        "a turn, the verdicts, the repair"
    );
    let again = run(&mock, repo.path()).await;
    assert_eq!(skeptic_requests(&mock), 3, "kept: not asked again");
    let c = again.findings[0].challenge.as_ref().unwrap();
    assert_eq!((c.stance, c.confidence), (Stance::NoVerdict, None));
    assert!(
        c.reason
            .contains("not a JSON object with a list of verdicts"),
        "{}",
        c.reason
    );

    // The skeptic's calls fail (a request the server refuses).
    let repo = self::repo();
    let finding = sink_finding();
    let mock = MockModel::openai(Box::new(move |body, _| {
        if is_skeptic(body) {
            ResponseTemplate::new(400)
                .set_body_json(json!({"error": {"type": "invalid_request_error", "message": "no"}}))
        } else {
            ResponseTemplate::new(200).set_body_json(reply(&finding, "", body))
        }
    }))
    .await;
    let first = run(&mock, repo.path()).await;
    let asked = skeptic_requests(&mock);
    assert!(asked >= 1);
    let c = first.findings[0].challenge.as_ref().unwrap();
    assert_eq!(c.stance, Stance::NoVerdict);
    assert!(
        c.reason.contains("the skeptic's call failed"),
        "{}",
        c.reason
    );
    let _ = run(&mock, repo.path()).await;
    assert_eq!(skeptic_requests(&mock), 2 * asked, "asked again");
}

#[tokio::test]
async fn a_refutation_citing_an_invented_flow_step_is_not_trusted() {
    let repo = repo();
    let mock = MockModel::openai(model(
        sink_finding(),
        r#"{"verdicts": [{"id": "f1", "verdict": "refuted", "confidence": 9, "why": "sanitized", "flow": ["app/db.py:4", "app/db.py:99", "app/other.py:1"]}]}"#,
    ))
    .await;
    let report = run(&mock, repo.path()).await;
    assert!(report.refuted.is_empty());
    let c = report.findings[0].challenge.as_ref().unwrap();
    assert_eq!(c.stance, Stance::Uncertain);
    assert_eq!(c.flow, vec!["app/db.py:4"], "the real step is kept");
    assert!(c.notes.iter().any(|n| n.contains("app/db.py:99")), "{c:?}");
    assert!(
        c.notes.iter().any(|n| n.contains("app/other.py:1")),
        "{c:?}"
    );
}

#[tokio::test]
async fn a_located_claim_the_skeptic_confirms_reports_with_the_files_text() {
    let repo = repo();
    let mock = MockModel::openai(model(
        located_claim(),
        r#"{"verdicts": [{"id": "f1", "verdict": "confirmed", "confidence": 7, "why": "argv reaches it", "flow": []}]}"#,
    ))
    .await;
    let report = run(&mock, repo.path()).await;
    assert_eq!(report.findings.len(), 1, "{:?}", report.unverified);
    let m = &report.findings[0];
    assert!(m.located && m.verified);
    assert_eq!(m.finding.evidence.as_deref().map(str::trim), Some(SINK));
    assert!(
        m.note.as_deref().unwrap().starts_with("located:"),
        "{:?}",
        m.note
    );
    assert_eq!(report.exit_code(), exit::GATE_FAILED);
    let md = report.render(Format::Md).unwrap();
    assert!(md.contains("Skeptic (located, confirmed"), "{md}");
}

#[tokio::test]
async fn a_located_claim_refuted_or_uncertain_stays_unverified() {
    for verdict in [
        r#"{"verdicts": [{"id": "f1", "verdict": "refuted", "confidence": 7, "why": "constant", "flow": []}]}"#,
        r#"{"verdicts": [{"id": "f1", "verdict": "uncertain", "confidence": 3, "why": "unclear", "flow": []}]}"#,
    ] {
        let repo = repo();
        let mock = MockModel::openai(model(located_claim(), verdict)).await;
        let report = run(&mock, repo.path()).await;
        assert!(report.findings.is_empty() && report.refuted.is_empty());
        assert_eq!(report.unverified.len(), 1);
        assert!(report.unverified[0].located);
        assert!(report.unverified[0].challenge.is_some());
        assert_eq!(report.exit_code(), exit::OK);
    }
}

#[tokio::test]
async fn a_claim_in_no_file_of_the_scan_or_past_the_end_is_not_located() {
    for claim in [
        json!({"path": "app/nope.py", "line": 2, "severity": "high", "title": "t", "detail": "d", "evidence": "x"}),
        json!({"path": "app/db.py", "line": 60, "severity": "high", "title": "t", "detail": "d", "evidence": "x"}),
    ] {
        let repo = repo();
        let mock = MockModel::openai(model(claim, r#"{"verdicts": []}"#)).await;
        // Without leads: the rule engine's hit in the file would be a
        // finding to challenge.
        let mut args = challenge(FailOn::High);
        args.scan.leads = vec!["off".into()];
        let ctx = Context::new(mock.settings_with(repo.path(), args)).unwrap();
        let report = fanscan::scan(&ctx, &Ui::hidden()).await.unwrap();
        assert_eq!(report.unverified.len(), 1);
        assert!(!report.unverified[0].located);
        assert_eq!(skeptic_requests(&mock), 0, "nothing to challenge");
    }
}

#[tokio::test]
async fn an_unchanged_rescan_asks_the_skeptic_nothing() {
    let repo = repo();
    let mock = MockModel::openai(model(
        sink_finding(),
        r#"{"verdicts": [{"id": "f1", "verdict": "refuted", "confidence": 8, "why": "constant", "flow": []}]}"#,
    ))
    .await;
    let first = run(&mock, repo.path()).await;
    assert_eq!(first.refuted.len(), 1);
    let asked = skeptic_requests(&mock);
    assert_eq!(asked, 2);
    let second = run(&mock, repo.path()).await;
    assert_eq!(skeptic_requests(&mock), asked, "no new skeptic call");
    assert_eq!(second.refuted.len(), 1);
    assert!(
        second
            .notes
            .iter()
            .any(|n| n.contains("1 answers from the run store")
                || n.contains("1 answer from the run store")),
        "{:?}",
        second.notes
    );
    // A changed file is asked again.
    repo.write("app/db.py", &format!("{DB}# changed\n"));
    let _ = run(&mock, repo.path()).await;
    assert_eq!(skeptic_requests(&mock), asked + 2);
}

#[tokio::test]
async fn challenge_never_skips_the_stage() {
    let repo = repo();
    let mock = MockModel::openai(model(sink_finding(), r#"{"verdicts": []}"#)).await;
    let settings = mock.settings_with(repo.path(), challenge(FailOn::Never));
    let ctx = Context::new(settings).unwrap();
    let ui = Ui::hidden();
    let report = fanscan::scan(&ctx, &ui).await.unwrap();
    assert_eq!(skeptic_requests(&mock), 0);
    assert!(report.findings[0].challenge.is_none());
}

/// The offline engine, through the binary: a query built from a constant
/// is refuted and leaves the gate; one built from argv is confirmed.
#[test]
fn the_offline_skeptic_refutes_constants_and_confirms_argv() {
    let repo = Repo::new(&[
        (
            "app/report.py",
            "def totals(cur):\n    table = \"orders\"\n    cur.execute(\"SELECT sum(total) FROM \" + table)\n",
        ),
        ("app/db.py", DB),
    ]);
    let root = repo.path().to_str().unwrap();
    let out = fanscan(&["scan", root, "--format", "json", "--quiet", "--no-store"]);
    let report: Report = serde_json::from_slice(&out.stdout).unwrap();
    let stance = |list: &[fanscan::Merged], path: &str| {
        list.iter()
            .find(|m| m.finding.path == path)
            .and_then(|m| m.challenge.as_ref())
            .map(|c| c.stance)
    };
    assert_eq!(
        stance(&report.refuted, "app/report.py"),
        Some(Stance::Refuted)
    );
    assert_eq!(
        stance(&report.findings, "app/db.py"),
        Some(Stance::Confirmed)
    );
    let flow = &report
        .findings
        .iter()
        .find(|m| m.finding.path == "app/db.py")
        .unwrap()
        .challenge
        .as_ref()
        .unwrap()
        .flow;
    assert_eq!(flow.first().map(String::as_str), Some("app/db.py:4"));
    assert_eq!(out.status.code(), Some(exit::GATE_FAILED));
    // Without the stage both fail the gate; the constant one alone passes.
    repo.write("app/db.py", "x = 1\n");
    let out = fanscan(&["scan", root, "--quiet", "--no-store"]);
    assert_eq!(
        out.status.code(),
        Some(exit::OK),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let out = fanscan(&[
        "scan",
        root,
        "--quiet",
        "--no-store",
        "--challenge",
        "never",
    ]);
    assert_eq!(out.status.code(), Some(exit::GATE_FAILED));
}

/// A servlet whose query takes `bar` after a shape that decides whether
/// the input reaches it.
fn servlet(shape: &str) -> String {
    format!(
        "class Orders extends HttpServlet {{\n  void doPost(HttpServletRequest request, HttpServletResponse response) throws IOException {{\n    String param = request.getParameter(\"v\");\n    String bar;\n{shape}\n    String sql = \"SELECT * FROM users WHERE name = '\" + bar + \"'\";\n    statement.executeQuery(sql);\n  }}\n}}\n"
    )
}

/// The offline engine, through the binary and the default gate: the
/// check on the syntax tree follows the value, so twins that differ only in a constant
/// branch, a map key or an overwrite are told apart.
#[test]
fn the_offline_skeptic_follows_the_value_not_the_shape() {
    // A read of a container under a literal key sees only what was put
    // under that key: the fixed value here, the input in its twin.
    let collection = "    java.util.Map<String, String> order = new java.util.HashMap<>();\n    order.put(\"sort\", \"name\");\n    order.put(\"filter\", param);\n    bar = order.get(\"sort\");";
    let safe = [
        "    int num = 4;\n    if ((3 * 5) - num > 10) bar = \"fixed\";\n    else bar = param;",
        "    bar = param;\n    bar = \"fixed\";",
        collection,
    ];
    let files: Vec<(String, String)> = safe
        .iter()
        .enumerate()
        .map(|(i, shape)| (format!("web/S{i}.java"), servlet(shape)))
        .collect();
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    let repo = Repo::new(&refs);
    let root = repo.path().to_str().unwrap();
    let out = fanscan(&["scan", root, "--format", "json", "--quiet", "--no-store"]);
    let report: Report = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report.refuted.len(), 3, "{:?}", report.findings);
    assert_eq!(
        out.status.code(),
        Some(exit::OK),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    repo.write(
        "web/S9.java",
        &servlet(&collection.replace("get(\"sort\")", "get(\"filter\")")),
    );
    let out = fanscan(&["scan", root, "--format", "json", "--quiet", "--no-store"]);
    let report: Report = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        report
            .findings
            .iter()
            .any(|m| m.finding.path == "web/S9.java"),
        "{:?}",
        report.refuted
    );
    assert_eq!(out.status.code(), Some(exit::GATE_FAILED));
    std::fs::remove_file(repo.path().join("web/S9.java")).unwrap();
    // The twin whose branch takes the input fails the gate.
    repo.write("web/S0.java", &servlet(&safe[0].replace("3 * 5", "3 * 2")));
    let out = fanscan(&["scan", root, "--format", "json", "--quiet", "--no-store"]);
    let report: Report = serde_json::from_slice(&out.stdout).unwrap();
    let confirmed = report
        .findings
        .iter()
        .find(|m| m.finding.path == "web/S0.java")
        .and_then(|m| m.challenge.as_ref())
        .map(|c| c.stance);
    assert_eq!(confirmed, Some(Stance::Confirmed));
    assert_eq!(out.status.code(), Some(exit::GATE_FAILED));
}

/// A helper class in another file of the repository, which a servlet's
/// value is returned by.
const HOLDER: &str = "package shop.util;\n\npublic class Holder {\n    private final HttpServletRequest request;\n\n    public Holder(HttpServletRequest request) {\n        this.request = request;\n    }\n\n    public String fromRequest(String name) {\n        return request.getParameter(name);\n    }\n\n    public String fixed(String name) {\n        return \"bar\";\n    }\n}\n";

/// The offline engine, through the binary: the skeptic searches the
/// repository for a class the value is returned by, reads its file and
/// follows the method; a class it cannot find leaves the finding standing.
#[test]
fn the_offline_skeptic_follows_a_call_into_another_files_class() {
    let uses = |method: &str| {
        format!(
            "class Orders extends HttpServlet {{\n  void doPost(HttpServletRequest request, HttpServletResponse response) throws IOException {{\n    shop.util.Holder holder = new shop.util.Holder(request);\n    String bar = holder.{method}(\"v\");\n    String sql = \"SELECT * FROM users WHERE name = '\" + bar + \"'\";\n    statement.executeQuery(sql);\n  }}\n}}\n"
        )
    };
    let repo = Repo::new(&[
        ("web/Fixed.java", uses("fixed").as_str()),
        ("web/Input.java", uses("fromRequest").as_str()),
        ("lib/shop/util/Holder.java", HOLDER),
    ]);
    let root = repo.path().to_str().unwrap();
    let out = fanscan(&["scan", root, "--format", "json", "--quiet", "--no-store"]);
    let report: Report = serde_json::from_slice(&out.stdout).unwrap();
    let refuted = report
        .refuted
        .iter()
        .find(|m| m.finding.path == "web/Fixed.java")
        .and_then(|m| m.challenge.as_ref())
        .unwrap_or_else(|| panic!("{:?}", report.findings));
    assert!(
        refuted.reason.contains("lib/shop/util/Holder.java"),
        "{}",
        refuted.reason
    );
    let confirmed = report
        .findings
        .iter()
        .find(|m| m.finding.path == "web/Input.java")
        .and_then(|m| m.challenge.as_ref())
        .unwrap();
    assert_eq!(confirmed.stance, Stance::Confirmed);
    assert!(
        confirmed
            .flow
            .contains(&"lib/shop/util/Holder.java:11".to_string()),
        "{:?}",
        confirmed.flow
    );
    assert_eq!(out.status.code(), Some(exit::GATE_FAILED));
    // Without the class's file the call cannot be followed: the finding
    // stands, and says why.
    std::fs::remove_file(repo.path().join("lib/shop/util/Holder.java")).unwrap();
    let out = fanscan(&["scan", root, "--format", "json", "--quiet", "--no-store"]);
    let report: Report = serde_json::from_slice(&out.stdout).unwrap();
    let stands = report
        .findings
        .iter()
        .find(|m| m.finding.path == "web/Fixed.java")
        .and_then(|m| m.challenge.as_ref())
        .unwrap();
    assert_eq!(stands.stance, Stance::Uncertain);
    assert!(
        stands
            .reason
            .contains("a call into `Holder`, which no file read declares"),
        "{}",
        stands.reason
    );
}

#[tokio::test]
async fn a_budget_stop_leaves_unchallenged_findings_as_they_are_and_says_so() {
    let repo = repo();
    // The audit spends nearly all of the budget: the skeptic's call does
    // not fit.
    let finding = sink_finding();
    let mock = MockModel::openai(Box::new(move |body, _| {
        let mut reply = reply(&finding, r#"{"verdicts": []}"#, body);
        reply["usage"] =
            json!({"prompt_tokens": 2100, "completion_tokens": 0, "total_tokens": 2100});
        ResponseTemplate::new(200).set_body_json(reply)
    }))
    .await;
    let settings = mock.settings_with(
        repo.path(),
        RunArgs {
            scan: fanscan::ScanArgs {
                max_tokens: Some(5200),
                // The budget is sized to the task without leads.
                leads: vec!["off".into()],
                ..fanscan::ScanArgs::default()
            },
            ..challenge(FailOn::High)
        },
    );
    let ctx = Context::new(settings).unwrap();
    let ui = Ui::hidden();
    let report = fanscan::scan(&ctx, &ui).await.unwrap();
    assert_eq!(skeptic_requests(&mock), 0);
    assert_eq!(report.findings.len(), 1, "kept as verified");
    assert!(report.findings[0].challenge.is_none());
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("1 finding was not challenged")),
        "{:?}",
        report.notes
    );
    assert!(!report.complete, "the budget stopped the run");
}

/// Shards leave the challenge to `fanscan merge`, which puts every shard's
/// findings to the skeptic once.
#[test]
fn shards_do_not_challenge_and_merge_does() {
    let repo = Repo::new(&[
        (
            "a/report.py",
            "def totals(cur):\n    table = \"orders\"\n    cur.execute(\"SELECT sum(total) FROM \" + table)\n",
        ),
        ("b/db.py", DB),
    ]);
    let root = repo.path().to_str().unwrap();
    let parts = tempfile::tempdir().unwrap();
    let mut paths = Vec::new();
    for k in 1..=2 {
        let part = parts.path().join(format!("part{k}.json"));
        let shard = format!("{k}/2");
        let out = fanscan(&[
            "scan",
            root,
            "--shard",
            &shard,
            "--format",
            "json",
            "--quiet",
            "--no-store",
            "--group-tokens",
            "100",
            "-o",
            part.to_str().unwrap(),
        ]);
        assert_eq!(
            out.status.code(),
            Some(exit::OK),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: Report =
            serde_json::from_str(&std::fs::read_to_string(&part).unwrap()).unwrap();
        assert!(report.findings.iter().all(|m| m.challenge.is_none()));
        assert!(report.refuted.is_empty());
        paths.push(part);
    }
    let out = fanscan(&[
        "merge",
        paths[0].to_str().unwrap(),
        paths[1].to_str().unwrap(),
        "--path",
        root,
        "--format",
        "json",
        "--quiet",
        "--no-store",
        "--group-tokens",
        "100",
    ]);
    let report: Report = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report.refuted.len(), 1, "{:?}", report.notes);
    assert_eq!(report.refuted[0].finding.path, "a/report.py");
    assert_eq!(
        report.findings[0].challenge.as_ref().map(|c| c.stance),
        Some(Stance::Confirmed)
    );
    assert_eq!(out.status.code(), Some(exit::GATE_FAILED));
}

/// A file of the small-model scan: two sinks, a shell command (critical)
/// and a query (high), each on its own line.
fn sinks(name: &str) -> String {
    format!(
        "import os, sys\n\ndef {name}(cur):\n    arg = sys.argv[1]\n    os.system(\"ls \" + arg)\n    cur.execute(\"SELECT \" + arg)\n    return cur\n"
    )
}

/// Three directories of two files: three groups, two findings at or
/// above high in every file.
fn small_repo() -> Repo {
    Repo::new(&[
        ("a/one.py", &sinks("one")),
        ("a/two.py", &sinks("two")),
        ("b/three.py", &sinks("three")),
        ("b/four.py", &sinks("four")),
        ("c/five.py", &sinks("five")),
        ("c/six.py", &sinks("six")),
    ])
}

/// The first user message of a request.
fn task_of(body: &Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// The stage a request belongs to: `audit`, `skeptic` or `reduce`.
fn stage_of(body: &Value) -> &'static str {
    let task = task_of(body);
    if task.starts_with("TASK: challenge") {
        "skeptic"
    } else if task.starts_with("TASK: reduce") {
        "reduce"
    } else {
        "audit"
    }
}

/// Requests from `from` on, by stage.
fn by_stage(mock: &MockModel, from: usize) -> std::collections::BTreeMap<&'static str, usize> {
    let mut counts = std::collections::BTreeMap::new();
    for seen in &mock.requests()[from..] {
        *counts.entry(stage_of(&seen.body)).or_default() += 1;
    }
    counts
}

/// The findings a small model reports of the fenced files it was shown:
/// each `os.system` line critical, each `cur.execute` line high.
fn small_findings(body: &Value) -> Value {
    let mut findings = Vec::new();
    for text in body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["content"].as_str())
    {
        let mut path: Option<String> = None;
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("<file path=\"") {
                path = rest.split('"').next().map(str::to_string);
            } else if let (Some(p), Some((n, code))) = (&path, line.split_once('\t')) {
                let Ok(n) = n.trim().parse::<u32>() else {
                    continue;
                };
                // The query's quote is prose, not code: a located claim.
                let (severity, title, evidence) = if code.contains("os.system(") {
                    ("critical", "command injection", code.trim().to_string())
                } else if code.contains("cur.execute(") {
                    (
                        "high",
                        "SQL injection",
                        format!("line {n}: the query is built from arg"),
                    )
                } else {
                    continue;
                };
                findings.push(json!({"path": p, "line": n, "severity": severity,
                    "title": title, "detail": "argv reaches it", "evidence": evidence}));
            }
        }
    }
    findings.dedup();
    json!({ "findings": findings })
}

/// A model that answers as a small real one does: it reads a path-like
/// token of its prompt that is no file (`db.py`, `config.py`), ends its
/// turns without the completion marker, and gives its verdicts without a
/// confidence (the refutations citing a flow step that is not a path of
/// the scan).
fn small_model() -> crate::common::Behaviour {
    Box::new(|body, _| {
        let task = task_of(body);
        let last = body["messages"]
            .as_array()
            .and_then(|m| m.last())
            .cloned()
            .unwrap_or_default();
        let final_turn = body.get("response_format").is_some() || body["tool_choice"] == "none";
        let reply = if task.starts_with("TASK: reduce") {
            crate::common::reducer_turn()
        } else if task.starts_with("TASK: challenge") {
            if final_turn {
                let ids: Vec<&str> = task
                    .lines()
                    .filter_map(|l| l.strip_prefix("- id "))
                    .filter_map(|l| l.split(':').next())
                    .collect();
                let verdicts: Vec<Value> = ids
                    .iter()
                    .map(|id| {
                        let line = task
                            .lines()
                            .find(|l| l.starts_with(&format!("- id {id}:")))
                            .unwrap_or_default();
                        if line.contains("command injection") {
                            json!({"id": id, "verdict": "confirmed", "why": "argv reaches the shell", "flow": []})
                        } else {
                            json!({"id": id, "verdict": "refuted", "why": "the query is parameterized", "flow": ["db.py:5"]})
                        }
                    })
                    .collect();
                text_turn(&json!({ "verdicts": verdicts }).to_string())
            } else if last["role"] == "user" {
                let path = task
                    .lines()
                    .next()
                    .and_then(|l| l.rsplit(" in ").next())
                    .unwrap_or_default()
                    .to_string();
                tool_turn(&[
                    ("r1", "read_file", &json!({"path": "db.py"}).to_string()),
                    ("r2", "read_file", &json!({"path": path}).to_string()),
                ])
            } else {
                text_turn("I traced the values to their sources.")
            }
        } else if final_turn {
            text_turn(&format!("```json\n{}\n```", small_findings(body)))
        } else if last["role"] == "user" {
            tool_turn(&[("c1", "read_file", r#"{"path": "config.py"}"#)])
        } else {
            text_turn("I looked at the files.")
        };
        ResponseTemplate::new(200).set_body_json(reply)
    })
}

async fn small_scan(mock: &MockModel, repo: &Repo) -> Report {
    let args = RunArgs {
        scan: fanscan::ScanArgs {
            group_tokens: Some(100),
            jobs: Some(2),
            ..fanscan::ScanArgs::default()
        },
        ..challenge(FailOn::High)
    };
    let ctx = Context::new(mock.settings_with(repo.path(), args)).unwrap();
    fanscan::scan(&ctx, &Ui::hidden()).await.unwrap()
}

/// Issue 26: with answers as a small model gives them, an unchanged
/// re-scan asked the skeptic again (a verdict without a confidence was
/// never kept). Now it makes no request in any stage, and a changed file
/// costs its own audit and the challenges of its findings.
#[tokio::test]
async fn an_unchanged_rescan_with_a_small_models_answers_makes_no_request() {
    let repo = small_repo();
    let mock = MockModel::openai(small_model()).await;
    let cold = small_scan(&mock, &repo).await;
    assert!(cold.complete, "{:?}", cold.incomplete_reasons);
    assert_eq!(cold.plan.groups.len(), 3, "{:?}", cold.plan.groups);
    // The shell commands confirmed; the queries, located claims, refuted
    // citing a step in no file of the scan: uncertain, so unverified.
    assert_eq!(cold.findings.len(), 6, "{:?}", cold.findings);
    assert!(
        cold.findings
            .iter()
            .all(|m| m.challenge.as_ref().unwrap().stance == Stance::Confirmed)
    );
    assert_eq!(cold.unverified.len(), 6, "{:?}", cold.unverified);
    assert!(cold.unverified.iter().all(|m| m.located));
    assert!(cold.refuted.is_empty(), "refutations citing no real step");
    assert_eq!(mock.brief_requests().len(), 1);
    let first = by_stage(&mock, 0);
    // Three groups of three turns; six files of one call of three turns.
    assert_eq!(first.get("audit"), Some(&9), "{first:?}");
    assert_eq!(first.get("skeptic"), Some(&18), "{first:?}");
    assert_eq!(first.get("reduce"), Some(&1), "{first:?}");

    let before = mock.requests().len();
    let again = small_scan(&mock, &repo).await;
    assert_eq!(
        by_stage(&mock, before),
        std::collections::BTreeMap::new(),
        "an unchanged re-scan asks nothing: {:?}",
        again.notes
    );
    assert_eq!(mock.brief_requests().len(), 1, "nor the brief");
    assert_eq!(again.findings, cold.findings);
    assert_eq!(again.unverified, cold.unverified);
    assert!(
        again
            .notes
            .iter()
            .any(|n| n.contains("12 answers from the run store")),
        "{:?}",
        again.notes
    );

    // One file changes: its own audit, and the one call on its findings.
    repo.write("b/three.py", &format!("{}# changed\n", sinks("three")));
    let before = mock.requests().len();
    let third = small_scan(&mock, &repo).await;
    assert!(third.complete, "{:?}", third.incomplete_reasons);
    // Its group (three turns), the one call on its two findings (three
    // turns), and the reducer (a group's report changed).
    let asked = by_stage(&mock, before);
    let expected: std::collections::BTreeMap<&str, usize> =
        [("audit", 3), ("reduce", 1), ("skeptic", 3)].into();
    assert_eq!(asked, expected);
    let audited: Vec<Vec<String>> = mock.requests()[before..]
        .iter()
        .filter(|s| stage_of(&s.body) == "audit")
        .map(|s| task_files(&s.body))
        .collect();
    assert_eq!(audited[0], vec!["b/three.py".to_string()], "{audited:?}");
    let challenged: Vec<String> = mock.requests()[before..]
        .iter()
        .filter(|s| stage_of(&s.body) == "skeptic")
        .map(|s| {
            task_of(&s.body)
                .lines()
                .next()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert!(
        challenged.iter().all(|t| t.ends_with("in b/three.py")),
        "{challenged:?}"
    );
    // Each run draws its own fence boundary: no stored result's key
    // covers it (else the second run would have asked again).
    let boundary = |seen: &crate::common::Seen| {
        crate::common::boundary_of(seen.body["messages"][0]["content"].as_str().unwrap())
    };
    let requests = mock.requests();
    assert_ne!(boundary(&requests[0]), boundary(&requests[before]));
    assert_eq!(mock.brief_requests().len(), 1);
    assert_eq!((third.findings.len(), third.unverified.len()), (6, 6));
}

/// The offline engine, through the binary and the default gate: a query
/// that interpolates a request value into a PHP string is confirmed on
/// the tree, with the trace from `$_REQUEST`. A Python value `%`-formatted
/// into a query is a literal set a line up: the tree proves it constant
/// and refutes it.
#[test]
fn the_offline_skeptic_sees_what_a_string_interpolates_on_the_tree() {
    let repo = Repo::new(&[
        (
            "vulnerabilities/sqli/low.php",
            "<?php\nif (isset($_REQUEST['Submit'])) {\n    $id = $_REQUEST['id'];\n    $query = \"SELECT first_name, last_name FROM users WHERE user_id = '$id';\";\n    $result = mysqli_query($GLOBALS[\"___mysqli_ston\"], $query);\n}\n",
        ),
        (
            "app/views.py",
            "def search(request, cursor):\n    term = 'all'\n    cursor.execute(\"SELECT * FROM items WHERE name = '%s'\" % term)\n",
        ),
    ]);
    let root = repo.path().to_str().unwrap();
    let out = fanscan(&["scan", root, "--format", "json", "--quiet", "--no-store"]);
    let report: Report = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let refuted: Vec<(&str, &str)> = report
        .refuted
        .iter()
        .map(|m| {
            let c = m
                .challenge
                .as_ref()
                .expect("a refutation has its challenge");
            (m.finding.path.as_str(), c.reason.as_str())
        })
        .collect();
    assert!(
        matches!(refuted.as_slice(), [("app/views.py", why)] if why.contains("on the syntax tree, every value at line 3 is a literal")),
        "{refuted:?}"
    );
    let found = report
        .findings
        .iter()
        .find(|m| m.finding.path == "vulnerabilities/sqli/low.php")
        .unwrap_or_else(|| panic!("no PHP finding: {:?}", report.findings));
    let challenge = found
        .challenge
        .as_ref()
        .expect("challenged at the default gate");
    assert_eq!(challenge.stance, Stance::Confirmed, "{challenge:?}");
    assert_eq!(
        challenge.flow,
        [
            "vulnerabilities/sqli/low.php:3",
            "vulnerabilities/sqli/low.php:4",
            "vulnerabilities/sqli/low.php:5"
        ]
    );
    // The query's taint rule, traced to its call: the line rule's finding
    // on the line that builds it gives way.
    assert_eq!(found.finding.rule.as_deref(), Some("sql/php-mysqli"));
    let php_lines: Vec<u32> = report
        .findings
        .iter()
        .chain(&report.refuted)
        .filter(|m| m.finding.path == "vulnerabilities/sqli/low.php")
        .map(|m| m.finding.line)
        .collect();
    assert_eq!(php_lines, [5], "{:?}", report.findings);
    assert!(challenge.reason.contains("`$_REQUEST`"), "{challenge:?}");
    assert_eq!(out.status.code(), Some(exit::GATE_FAILED));
}

/// The directory of a task's file: the first `<dir>/` of its first line's
/// path (`TASK: challenge 2 findings in c/five.py`) or file tag.
fn task_dir(task: &str) -> Option<char> {
    let path = task
        .lines()
        .next()
        .and_then(|l| l.rsplit(" in ").next())
        .filter(|p| p.contains('/'))
        .map(str::to_string)
        .or_else(|| {
            task.split("<file path=\"")
                .nth(1)
                .and_then(|rest| rest.split('"').next())
                .map(str::to_string)
        })?;
    path.chars().next()
}

/// A model that answers badly half the time, as small ones do: the brief
/// empty; the auditor of `b/` prose with no findings block (and the
/// repair turn too), that of `c/` its findings with lead answers that
/// are no answer; the skeptic verdicts on `a/one.py`, an empty list of
/// verdicts on `a/two.py`, a list of findings on `c/five.py`, entries
/// whose verdict is none on `c/six.py`; the reducer prose.
fn bad_model() -> crate::common::Behaviour {
    let small = small_model();
    Box::new(move |body, index| {
        let task = task_of(body);
        let final_turn = body.get("response_format").is_some() || body["tool_choice"] == "none";
        let ids: Vec<String> = task
            .lines()
            .filter_map(|l| l.strip_prefix("- id "))
            .filter_map(|l| l.split(':').next())
            .map(str::to_string)
            .collect();
        let reply = if task.starts_with("TASK: reduce") {
            text_turn("I merged the reports; the findings look serious.")
        } else if task.starts_with("TASK: challenge") && final_turn {
            let first = task.lines().next().unwrap_or_default();
            let answer = if first.ends_with("a/one.py") {
                let verdicts: Vec<Value> = ids
                    .iter()
                    .map(|id| json!({"id": id, "verdict": "confirmed", "why": "argv reaches it", "flow": []}))
                    .collect();
                json!({ "verdicts": verdicts })
            } else if first.ends_with("a/two.py") {
                json!({"verdicts": []})
            } else if first.ends_with("c/five.py") {
                json!({"findings": [{"path": "c/five.py", "line": 5, "severity": "critical",
                                     "title": "command injection"}]})
            } else {
                let verdicts: Vec<Value> = ids
                    .iter()
                    .map(|id| json!({"id": id, "verdict": "probably", "why": "hard to say", "flow": []}))
                    .collect();
                json!({ "verdicts": verdicts })
            };
            text_turn(&answer.to_string())
        } else if task.starts_with("TASK: challenge") {
            return small(body, index);
        } else if final_turn && task_dir(&task) == Some('b') {
            text_turn("I reviewed the files carefully and they look mostly fine to me.")
        } else if final_turn && task_dir(&task) == Some('c') {
            let mut answer = small_findings(body);
            answer["leads"] = json!([{"id": "nothing", "verdict": "maybe"}, "garbage"]);
            text_turn(&format!("```json\n{answer}\n```"))
        } else {
            return small(body, index);
        };
        ResponseTemplate::new(200).set_body_json(reply)
    })
}

async fn bad_scan(mock: &MockModel, repo: &Repo, full: bool) -> Report {
    let args = RunArgs {
        scan: fanscan::ScanArgs {
            group_tokens: Some(100),
            jobs: Some(2),
            no_cache: full,
            ..fanscan::ScanArgs::default()
        },
        ..challenge(FailOn::High)
    };
    let ctx = Context::new(mock.settings_with(repo.path(), args)).unwrap();
    fanscan::scan(&ctx, &Ui::hidden()).await.unwrap()
}

/// Issue 35: a model's answer that is no usable verdict (a findings list,
/// an empty list, an entry that is no verdict), an empty brief, a reducer
/// in prose and an auditor with no findings block were asked again every
/// night. Each is now kept like a verdict: an unchanged re-scan makes no
/// request in any stage, a changed file re-asks only what rests on it,
/// and `--full` asks everything again. The report says "no verdict".
#[tokio::test]
async fn answers_that_are_no_verdict_are_kept_and_an_unchanged_rescan_asks_nothing() {
    let repo = small_repo();
    let mock = MockModel::openai_with_brief(bad_model(), "").await;
    let cold = bad_scan(&mock, &repo, false).await;
    assert!(cold.complete, "{:?}", cold.incomplete_reasons);
    assert_eq!(cold.plan.groups.len(), 3, "{:?}", cold.plan.groups);
    assert!(cold.brief.is_none(), "an empty brief is no brief");
    assert!(
        cold.notes
            .iter()
            .any(|n| n.contains("no repository brief: the brief agent gave no text")),
        "{:?}",
        cold.notes
    );
    let first = by_stage(&mock, 0);
    assert_eq!(mock.brief_requests().len(), 1);
    assert_eq!(first.get("reduce"), Some(&1), "{first:?}");
    // What the skeptic said, by file: a verdict on a/one.py, none on the
    // others (their findings keep their place, and say so).
    let said = |path: &str| -> Vec<String> {
        let mut all: Vec<String> = cold
            .findings
            .iter()
            .chain(&cold.unverified)
            .filter(|m| m.finding.path == path)
            .filter_map(|m| m.challenge.as_ref())
            .map(|c| {
                serde_json::to_value(c.stance)
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        all.sort();
        all.dedup();
        all
    };
    assert_eq!(said("a/one.py"), vec!["confirmed"]);
    for path in ["a/two.py", "c/five.py", "c/six.py"] {
        assert_eq!(said(path), vec!["no_verdict"], "{path}");
    }
    let md = cold.render(Format::Md).unwrap();
    assert!(
        md.contains("no verdict: its answer was not a JSON object with a list of verdicts"),
        "{md}"
    );
    assert!(md.contains("it gave no verdict for this finding"), "{md}");
    assert!(md.contains("its entry was broken"), "{md}");
    let json: Value = serde_json::from_str(&cold.render(Format::Json).unwrap()).unwrap();
    assert!(json.to_string().contains("\"stance\":\"no_verdict\""));
    // How the Markdown shows what the skeptic said, and its note.
    let shown: Vec<&str> = md
        .lines()
        .filter(|l| l.contains("_Skeptic (") || l.contains("the skeptic challenged"))
        .collect();
    insta::assert_snapshot!("no_verdict_markdown", shown.join("\n"));

    // Nothing changed: no request in any stage, the same report.
    let before = mock.requests().len();
    let again = bad_scan(&mock, &repo, false).await;
    assert_eq!(
        by_stage(&mock, before),
        std::collections::BTreeMap::new(),
        "an unchanged re-scan asks nothing: {:?}",
        again.notes
    );
    assert_eq!(mock.brief_requests().len(), 1, "nor the brief");
    assert_eq!(again.findings, cold.findings);
    assert_eq!(again.unverified, cold.unverified);
    assert_eq!(again.summary, cold.summary);
    assert!(again.brief.is_none());
    assert!(
        again
            .notes
            .iter()
            .any(|n| n.contains("no repository brief: the brief agent gave no text")),
        "{:?}",
        again.notes
    );

    // One file changes: its own audit, the one call on its findings and
    // the reducer; nothing else, not the brief.
    repo.write("c/five.py", &format!("{}# changed\n", sinks("five")));
    let before = mock.requests().len();
    let third = bad_scan(&mock, &repo, false).await;
    assert!(third.complete, "{:?}", third.incomplete_reasons);
    let asked = by_stage(&mock, before);
    assert_eq!(asked.get("reduce"), Some(&1), "{asked:?}");
    let audited: Vec<Vec<String>> = mock.requests()[before..]
        .iter()
        .filter(|s| stage_of(&s.body) == "audit")
        .map(|s| task_files(&s.body))
        .collect();
    assert!(!audited.is_empty());
    assert!(
        audited.iter().all(|f| f == &vec!["c/five.py".to_string()]),
        "{audited:?}"
    );
    let challenged: Vec<String> = mock.requests()[before..]
        .iter()
        .filter(|s| stage_of(&s.body) == "skeptic")
        .map(|s| {
            task_of(&s.body)
                .lines()
                .next()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert!(!challenged.is_empty());
    assert!(
        challenged.iter().all(|t| t.ends_with("in c/five.py")),
        "{challenged:?}"
    );
    assert_eq!(mock.brief_requests().len(), 1, "the brief rests on no file");

    // --full asks every stage again.
    let before = mock.requests().len();
    let _ = bad_scan(&mock, &repo, true).await;
    let full = by_stage(&mock, before);
    assert_eq!(full.get("audit"), first.get("audit"), "{full:?}");
    assert_eq!(full.get("skeptic"), first.get("skeptic"), "{full:?}");
    assert_eq!(full.get("reduce"), Some(&1), "{full:?}");
    assert_eq!(mock.brief_requests().len(), 2, "--full asks the brief too");
}

/// A module that opens a report by the name it is given.
const STORAGE: &str = "import os\n\n\ndef read_report(name):\n    path = os.path.join(\"reports\", name)\n    with open(path) as f:\n        return f.read()\n";

/// A view that passes `arg` (made from the request's `wanted`) to the
/// module's function.
fn report_view(arg: &str) -> String {
    format!(
        "from flask import request\nfrom storage import read_report\n\n\ndef show():\n    wanted = request.args.get(\"report\")\n    return read_report({arg})\n"
    )
}

/// The offline engine, through the binary and the default gate: a request
/// value passed to a function of another file is traced into its sink
/// there, confirmed with the trace across both files; a caller that takes
/// only the file name passes nothing; `--leads off` turns the trace off.
#[test]
fn the_offline_engine_traces_a_value_into_another_files_function() {
    let repo = Repo::new(&[
        ("app/storage.py", STORAGE),
        ("app/views.py", &report_view("wanted")),
    ]);
    let root = repo.path().to_str().unwrap();
    let scan = |extra: &[&str]| {
        let mut args = vec!["scan", root, "--format", "json", "--quiet", "--no-store"];
        args.extend(extra);
        let out = fanscan(&args);
        let report: Report = serde_json::from_slice(&out.stdout).unwrap();
        (out.status.code(), report)
    };
    let traced = |report: &Report| {
        report
            .findings
            .iter()
            .find(|m| {
                m.finding.path == "app/storage.py"
                    && m.finding.rule.as_deref() == Some("path/python-open")
            })
            .cloned()
    };
    let (code, report) = scan(&[]);
    let found = traced(&report).unwrap_or_else(|| panic!("{:?}", report.findings));
    assert_eq!(found.finding.line, 6);
    assert!(
        found.finding.detail.contains(
            "app/views.py line 6: an HTTP request: `request.args` → line 6: `wanted` is set from it → line 7: is passed as `name` to `read_report`, defined in app/storage.py"
        ),
        "{}",
        found.finding.detail
    );
    let challenge = found.challenge.as_ref().expect("the skeptic's verdict");
    assert_eq!(challenge.stance, Stance::Confirmed);
    assert!(
        challenge.reason.contains("across files"),
        "{}",
        challenge.reason
    );
    // The flow starts in the view, where the request is read.
    assert_eq!(
        challenge.flow,
        [
            "app/views.py:6",
            "app/views.py:7",
            "app/storage.py:4",
            "app/storage.py:5",
            "app/storage.py:6"
        ]
    );
    assert_eq!(code, Some(exit::GATE_FAILED));

    let (_, off) = scan(&["--leads", "off"]);
    assert!(traced(&off).is_none(), "{:?}", off.findings);

    repo.write("app/views.py", &report_view("os.path.basename(wanted)"));
    let (_, clean) = scan(&[]);
    assert!(traced(&clean).is_none(), "{:?}", clean.findings);
}

/// A Flask view that takes `customer` from the request (after `check`),
/// a service that passes it on, and a store that splices it into SQL.
fn shop(check: &str) -> Repo {
    let views = format!(
        "from flask import Flask, request\n\nfrom .service import OrderService\n\napp = Flask(__name__)\nservice = OrderService()\n\n\n@app.route(\"/orders\")\ndef orders():\n    customer = request.args.get(\"customer\", \"\")\n{check}    return str(service.history(customer))\n"
    );
    let service = "from .store import OrderStore\n\n\nclass OrderService:\n    def __init__(self):\n        self.store = OrderStore()\n\n    def history(self, customer):\n        return self.store.orders_for(customer)\n";
    let store = "import sqlite3\n\n\nclass OrderStore:\n    def orders_for(self, customer):\n        cur = sqlite3.connect(\"shop.db\").cursor()\n        cur.execute(\"SELECT id FROM orders WHERE customer = '\" + customer + \"'\")\n        return cur.fetchall()\n";
    Repo::new(&[
        ("shop/views.py", views.as_str()),
        ("shop/service.py", service),
        ("shop/store.py", store),
    ])
}

/// The offline engine, through the binary: the skeptic follows a value
/// from a parameter to its callers with the `references` tool, two files
/// up: confirmed with the trace when the view passes the request's value,
/// refuted when the view returns on a failed check first, and confirmed
/// again when the check does not leave.
#[test]
fn the_offline_skeptic_follows_a_parameter_to_its_callers_in_other_files() {
    let judged = |check: &str| {
        let repo = shop(check);
        let root = repo.path().to_str().unwrap();
        let args = [
            "scan",
            root,
            "--format",
            "json",
            "--quiet",
            "--no-store",
            "--challenge",
            "low",
        ];
        let out = fanscan(&args);
        let report: Report = serde_json::from_slice(&out.stdout).unwrap();
        let all = report.findings.iter().chain(&report.refuted);
        let m = all
            .filter(|m| m.finding.path == "shop/store.py" && m.finding.line == 7)
            .find(|m| m.challenge.is_some())
            .cloned()
            .unwrap_or_else(|| panic!("{}", String::from_utf8_lossy(&out.stdout)));
        let c = m.challenge.unwrap();
        (c.stance, c.reason, c.flow)
    };
    let (stance, reason, flow) = judged("");
    assert_eq!(stance, Stance::Confirmed, "{reason}");
    assert!(reason.contains("references tool"), "{reason}");
    assert!(
        flow.iter().any(|s| s.starts_with("shop/views.py:11")),
        "the flow starts at the request in the view: {flow:?}"
    );
    let (stance, reason, _) =
        judged("    if not customer.isalnum():\n        return \"bad customer\", 400\n");
    assert_eq!(stance, Stance::Refuted, "{reason}");
    assert!(reason.contains("shop/views.py:14"), "{reason}");
    let (stance, reason, _) = judged("    if not customer.isalnum():\n        print(\"odd\")\n");
    assert_eq!(
        stance,
        Stance::Confirmed,
        "a check that does not leave: {reason}"
    );
}
