//! Specialists in the scan: the plan names an agent per group (the
//! `[agents]` globs of fanscan.toml, the LLM planner's picks), `--agent`
//! forces one, and the plan output, the JSON report and the cost per agent
//! show which agent audited which group.

use serde_json::{Value, json};
use wiremock::ResponseTemplate;

use fanscan::{Context, PlannerKind, RunControl, ScanArgs, Ui};

use crate::common::{MockModel, Repo, fanscan, findings_turn, text_turn};

/// A comment long enough that each file is over a 100-token group alone.
const PAD: &str =
    "# padding padding padding padding padding padding padding padding padding padding padding\n";

fn repo() -> Repo {
    let login = format!(
        "import os\nos.system(\"login \" + input())\n{}",
        PAD.repeat(4)
    );
    let util = format!("def f():\n    return eval(input())\n{}", PAD.repeat(4));
    Repo::new(&[
        ("src/auth/login.py", &login),
        ("lib/util.py", &util),
        ("fanscan.toml", "[agents]\n\"src/auth/**\" = \"security\"\n"),
    ])
}

#[test]
fn agents_globs_name_the_agent_of_each_group_in_plan_and_report() {
    let repo = repo();
    let root = repo.path().to_str().unwrap();
    let out = fanscan(&["plan", root, "--group-tokens", "100"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("tokens, agent security)\n  src/auth/login.py"),
        "{text}"
    );
    assert!(
        text.contains("tokens, agent auditor)\n  lib/util.py"),
        "{text}"
    );

    let out = fanscan(&[
        "scan",
        root,
        "--group-tokens",
        "100",
        "--format",
        "json",
        "--quiet",
    ]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let agents: Vec<(String, String)> = report["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["files"][0].as_str().unwrap().to_string(),
                g["agent"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        agents,
        vec![
            ("fanscan.toml".to_string(), "auditor".to_string()),
            ("lib/util.py".to_string(), "auditor".to_string()),
            ("src/auth/login.py".to_string(), "security".to_string()),
        ]
    );
    let plan_agents: Vec<&str> = report["plan"]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["agent"].as_str().unwrap())
        .collect();
    assert_eq!(plan_agents, vec!["auditor", "auditor", "security"]);
    let by_agent = report["stats"]["agents"].as_object().unwrap();
    assert!(
        by_agent.contains_key("security") && by_agent.contains_key("auditor"),
        "{by_agent:?}"
    );

    // --agent forces one agent for every group.
    let out = fanscan(&["plan", root, "--group-tokens", "100", "--agent", "auditor"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !text.contains("agent security") && !text.contains("agent auditor"),
        "{text}"
    );
}

#[test]
fn an_agents_glob_naming_no_delegable_agent_is_a_config_error() {
    let repo = repo();
    repo.write("fanscan.toml", "[agents]\n\"src/**\" = \"reducer\"\n");
    let out = fanscan(&["plan", repo.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("fanscan.toml [agents]: \"src/**\" = \"reducer\" names no delegable agent; the agents a group can have are: auditor, security"),
        "{stderr}"
    );
    repo.write("fanscan.toml", "[agents]\n\"src/[**\" = \"security\"\n");
    let out = fanscan(&["plan", repo.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a valid glob"));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_llm_planner_picks_delegable_agents_validated() {
    let repo = repo();
    repo.write("fanscan.toml", "");
    let mock = MockModel::openai(Box::new(|body, _| {
        let task = body["messages"][1]["content"].as_str().unwrap_or_default();
        if task.starts_with("TASK: plan") {
            assert!(task.contains("- security: Security specialist"), "{task}");
            let plan = json!({"groups": [
                {"files": ["src/auth/login.py"], "agent": "security"},
                {"files": ["lib/util.py"], "agent": "reducer"}
            ]});
            return ResponseTemplate::new(200)
                .set_body_json(text_turn(&format!("```json\n{plan}\n```")));
        }
        ResponseTemplate::new(200).set_body_json(findings_turn(json!([])))
    }))
    .await;
    let scan = ScanArgs {
        planner: Some(PlannerKind::Llm),
        ..ScanArgs::default()
    };
    let ctx = Context::new(mock.settings(repo.path(), &scan)).unwrap();
    let ui = Ui {
        multi: indicatif::MultiProgress::with_draw_target(indicatif::ProgressDrawTarget::hidden()),
        transcripts: None,
        control: RunControl::default(),
    };
    let report = fanscan::scan(&ctx, &ui).await.unwrap();
    let agents: Vec<(&str, &str)> = report
        .groups
        .iter()
        .map(|g| (g.files[0].as_str(), g.agent.as_str()))
        .collect();
    assert_eq!(
        agents,
        vec![
            ("src/auth/login.py", "security"),
            ("lib/util.py", "auditor"),
            ("fanscan.toml", "auditor")
        ]
    );
    assert!(
        report
            .plan
            .notes
            .iter()
            .any(|n| n.contains("agent \"reducer\" for 1 group(s)")),
        "{:?}",
        report.plan.notes
    );
    // The security group's agent really was the security specialist.
    let security_prompts = mock
        .requests()
        .iter()
        .filter(|s| {
            s.body["messages"][0]["content"]
                .as_str()
                .unwrap_or_default()
                .starts_with("You are an application security reviewer")
        })
        .count();
    assert!(security_prompts >= 1);
}
