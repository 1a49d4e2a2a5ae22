//! CWE on every finding, end to end: what a model writes as `cwe` over
//! real HTTP is normalized, named from the table or flagged, and shown in
//! every format; SARIF with the CWE tags still validates against the
//! official schema.

use serde_json::{Value, json};

use fanscan::{Context, Format, Report, ScanArgs, Ui};

use crate::common::{MockModel, Repo, findings_turn};
use crate::formats::schema_errors;

async fn scan(ctx: &Context) -> Report {
    let ui = Ui::hidden();
    fanscan::scan(ctx, &ui).await.unwrap()
}

const APP: &str = "def find(cur, name):\n    cur.execute(\"SELECT * FROM users WHERE name = '\" + name + \"'\")\n";
const QUOTE: &str = "cur.execute(\"SELECT * FROM users WHERE name = '\" + name + \"'\")";

#[tokio::test]
async fn a_models_cwe_is_normalized_named_or_flagged_in_every_format() {
    let repo = Repo::new(&[("app/db.py", APP)]);
    let entry = |rule: &str, cwe: Value| {
        json!({"path": "app/db.py", "line": 2, "severity": "high", "title": format!("query {rule}"),
               "detail": "input in SQL", "evidence": QUOTE, "rule": rule, "cwe": cwe})
    };
    let answer = findings_turn(json!([
        entry("logic-a", json!("cwe-89")),
        entry("logic-b", json!(99_999)),
        entry("logic-c", json!("SQL injection")),
    ]));
    // The review's last turn, then the summary turn that gives the report.
    let mock = MockModel::scripted(vec![answer.clone(), answer]).await;
    let args = ScanArgs {
        no_store: true,
        ..ScanArgs::default()
    };
    let ctx = Context::new(mock.settings(repo.path(), &args)).unwrap();
    let report = scan(&ctx).await;

    // The task asked for it.
    let asked = mock.requests()[0].raw.clone();
    assert!(
        asked.contains("cwe is the CWE id of the weakness"),
        "{asked}"
    );

    let by_rule = |rule: &str| {
        report
            .findings
            .iter()
            .find(|m| m.finding.rule.as_deref() == Some(rule))
            .unwrap_or_else(|| panic!("no {rule} in {:#?}", report))
    };
    let sql = &by_rule("logic-a").finding.cwe;
    assert_eq!(sql.id.map(|id| id.to_string()).as_deref(), Some("CWE-89"));
    assert!(sql.name.as_deref().unwrap().contains("SQL Injection"));
    assert_eq!(sql.note, None);
    let unknown = &by_rule("logic-b").finding.cwe;
    assert_eq!(unknown.id.map(|id| id.number()), Some(99_999));
    assert_eq!(unknown.name, None);
    assert!(
        unknown
            .note
            .as_deref()
            .unwrap()
            .contains("not in fanscan's CWE table")
    );
    let prose = &by_rule("logic-c").finding.cwe;
    assert_eq!(prose.id, None);
    assert!(
        prose
            .note
            .as_deref()
            .unwrap()
            .contains("\"SQL injection\" is not a CWE id")
    );

    let json: Value = serde_json::from_str(&report.render(Format::Json).unwrap()).unwrap();
    let cwes: Vec<(&str, &Value, &Value)> = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["rule"].as_str().unwrap(), &f["cwe"], &f["cwe_name"]))
        .collect();
    assert!(cwes.contains(&(
        "logic-a",
        &json!("CWE-89"),
        &json!(
            "Improper Neutralization of Special Elements used in an SQL Command ('SQL Injection')"
        )
    )));
    assert!(cwes.contains(&("logic-b", &json!("CWE-99999"), &Value::Null)));

    let md = report.render(Format::Md).unwrap();
    assert!(
        md.contains("[logic-a] CWE-89 (SQL Injection) `app/db.py:2`"),
        "{md}"
    );
    assert!(md.contains("[logic-b] CWE-99999 `app/db.py:2`"), "{md}");
    assert!(
        md.contains("CWE-99999 is not in fanscan's CWE table"),
        "{md}"
    );

    let log = report
        .render_sarif(None, fanscan::SarifSuppressed::Omit)
        .unwrap();
    let errors = schema_errors(&log);
    assert!(errors.is_empty(), "{errors:#?}");
    let sarif: Value = serde_json::from_str(&log).unwrap();
    let rules = sarif["runs"][0]["tool"]["driver"]["rules"]
        .as_array()
        .unwrap();
    let tags =
        |id: &str| rules.iter().find(|r| r["id"] == id).unwrap()["properties"]["tags"].clone();
    assert_eq!(
        tags("logic-a"),
        json!(["security", "logic-a", "external/cwe/cwe-89"])
    );
    assert_eq!(
        tags("logic-b"),
        json!(["security", "logic-b", "external/cwe/cwe-99999"])
    );
    assert_eq!(
        tags("logic-c"),
        json!(["logic-c"]),
        "no CWE, no security word"
    );

    let climate: Value =
        serde_json::from_str(&report.render(Format::Codeclimate).unwrap()).unwrap();
    let categories = |rule: &str| {
        climate
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["check_name"] == rule)
            .unwrap()
            .get("categories")
            .cloned()
    };
    assert_eq!(categories("logic-a"), Some(json!(["Security"])));
    assert_eq!(categories("logic-c"), None);
}
