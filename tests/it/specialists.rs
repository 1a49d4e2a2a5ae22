//! Specialists in the scan: the plan names an agent per group (the
//! `[agents]` globs of fanscan.toml, the LLM planner's picks), `--agent`
//! forces one, and the plan output, the JSON report and the cost per agent
//! show which agent audited which group. A file's agent is decided per file
//! and no group mixes agents.

use serde_json::{Value, json};
use wiremock::ResponseTemplate;

use fanscan::{Context, PlannerKind, RunControl, ScanArgs};

use crate::common::{MockModel, Repo, fanscan, findings_turn, task_files, text_turn};

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
    assert!(!text.contains("agent security"), "{text}");
    assert_eq!(text.matches(", agent auditor)").count(), 3, "{text}");
}

/// One directory of Go, Java and Python files (and one more of Python and
/// Go), with `src/**/*.py` routed to the security specialist.
fn split_repo() -> Repo {
    Repo::new(&[
        (
            "src/app/Main.java",
            "class Main {\n  void run(String q) throws Exception { Runtime.getRuntime().exec(q); }\n}\n",
        ),
        (
            "src/app/handler.go",
            "package app\n\nimport \"os/exec\"\n\nfunc Run(q string) { exec.Command(\"sh\", \"-c\", q).Run() }\n",
        ),
        (
            "src/app/models.py",
            "import os\n\ndef purge(name):\n    os.system(\"rm \" + name)\n",
        ),
        ("src/app/views.py", "def view(q):\n    return eval(q)\n"),
        ("src/lib/util.py", "def f():\n    return input()\n"),
        (
            "src/lib/util.go",
            "package lib\n\nfunc F() int { return 1 }\n",
        ),
        ("fanscan.toml", "[agents]\n\"src/**/*.py\" = \"security\"\n"),
    ])
}

fn is_routed(path: &str) -> bool {
    path.starts_with("src/") && path.ends_with(".py")
}

/// (path, agent) for every file of `groups` (JSON with `files` and
/// `agent`), sorted.
fn file_agents(groups: &Value) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = groups
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| {
            let agent = g["agent"].as_str().unwrap().to_string();
            g["files"]
                .as_array()
                .unwrap()
                .iter()
                .map(move |f| (f.as_str().unwrap().to_string(), agent.clone()))
        })
        .collect();
    out.sort();
    out
}

fn expected_agents(files: &[(String, String)]) -> Vec<(String, String)> {
    files
        .iter()
        .map(|(f, _)| {
            let agent = if is_routed(f) { "security" } else { "auditor" };
            (f.clone(), agent.to_string())
        })
        .collect()
}

#[test]
fn agents_globs_that_split_a_directory_route_every_file_to_its_own_agent() {
    let repo = split_repo();
    let root = repo.path().to_str().unwrap();
    // The default budget fits the whole tree in one group; 100 tokens
    // makes several.
    for budget in [None, Some("100")] {
        let mut args = vec!["plan", root, "--json"];
        if let Some(b) = budget {
            args.extend(["--group-tokens", b]);
        }
        let out = fanscan(&args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
        let files = file_agents(&plan["plan"]["groups"]);
        assert_eq!(files.len(), 7, "{files:?}");
        assert_eq!(files, expected_agents(&files), "budget {budget:?}");
        assert!(files.iter().any(|(_, a)| a == "security"));

        // The text shows each group's agent, and its files are that agent's.
        args.retain(|a| *a != "--json");
        let out = fanscan(&args);
        let text = String::from_utf8_lossy(&out.stdout);
        let mut agent = None;
        let mut listed = 0;
        for line in text.lines() {
            if let Some(rest) = line.strip_suffix(')')
                && let Some((_, a)) = rest.rsplit_once(", agent ")
            {
                agent = Some(a.to_string());
            } else if let Some(path) = line.strip_prefix("  ") {
                let want = if is_routed(path) {
                    "security"
                } else {
                    "auditor"
                };
                assert_eq!(agent.as_deref(), Some(want), "{path} in\n{text}");
                listed += 1;
            }
        }
        assert_eq!(listed, 7, "{text}");
    }

    // The scan audits each group with its agent: the reports say so.
    let out = fanscan(&["scan", root, "--format", "json", "--quiet"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let audited = file_agents(&report["groups"]);
    assert_eq!(audited.len(), 7, "{audited:?}");
    assert_eq!(audited, expected_agents(&audited));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_llm_plan_that_mixes_agents_is_split_and_each_agent_sees_only_its_files() {
    let repo = split_repo();
    let mock = MockModel::openai(Box::new(|body, _| {
        let task = body["messages"][1]["content"].as_str().unwrap_or_default();
        if task.starts_with("TASK: plan") {
            // One group of the whole app directory, for the auditor.
            let plan = json!({"groups": [
                {"files": ["src/app/Main.java", "src/app/handler.go", "src/app/models.py", "src/app/views.py"],
                 "agent": "auditor", "focus": "the app"},
                {"files": ["src/lib/util.py", "src/lib/util.go", "fanscan.toml"]}
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
    let ui = crate::common::hidden_ui(RunControl::default());
    let report = fanscan::scan(&ctx, &ui).await.unwrap();
    assert!(report.complete, "{:?}", report.incomplete_reasons);
    let plan = serde_json::to_value(&report.plan).unwrap();
    let files = file_agents(&plan["groups"]);
    assert_eq!(files.len(), 7, "{files:?}");
    assert_eq!(files, expected_agents(&files));
    assert!(
        report
            .plan
            .notes
            .iter()
            .any(|n| n.starts_with("split 2 planner groups whose files go to different agents")),
        "{:?}",
        report.plan.notes
    );
    // The planner's focus stays with both halves of its group.
    for g in &report.plan.groups {
        if g.files.iter().any(|f| f.starts_with("src/app/")) {
            assert_eq!(g.focus.as_deref(), Some("the app"), "{g:?}");
        }
    }
    // What each agent was sent: the security specialist only the routed
    // files, the auditor none of them.
    let mut sent: Vec<(bool, String)> = Vec::new();
    for seen in mock.requests() {
        let system = seen.body["messages"][0]["content"]
            .as_str()
            .unwrap_or_default();
        let security = system.starts_with("You are an application security reviewer");
        let audit = seen.body["messages"].as_array().is_some_and(|m| {
            m.iter().any(|m| {
                m["content"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("TASK: audit-group "))
            })
        });
        if !audit {
            continue;
        }
        for f in task_files(&seen.body) {
            sent.push((security, f));
        }
    }
    assert!(sent.iter().any(|(security, _)| *security), "{sent:?}");
    for (security, f) in &sent {
        assert_eq!(*security, is_routed(f), "{f} sent to the wrong agent");
    }
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
    let ui = crate::common::hidden_ui(RunControl::default());
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

#[tokio::test(flavor = "multi_thread")]
async fn a_group_routed_to_another_agent_is_not_taken_from_the_first_agents_cache() {
    let padded = |code: &str| format!("{code}\n{}", PAD.repeat(2));
    let repo = Repo::new(&[
        ("py/a.py", &padded("import os\nos.system(input())")),
        ("go/b.go", &padded("package b\nfunc B() {}")),
    ]);
    let mock = MockModel::openai(Box::new(|_, _| {
        ResponseTemplate::new(200).set_body_json(findings_turn(json!([])))
    }))
    .await;
    let scan = ScanArgs {
        group_tokens: Some(100),
        ..ScanArgs::default()
    };
    let ui = || crate::common::hidden_ui(RunControl::default());
    let py_group = |report: &fanscan::Report| {
        report
            .groups
            .iter()
            .find(|g| g.files.iter().any(|f| f == "py/a.py"))
            .map(|g| (g.id.clone(), g.files.len(), g.agent.clone(), g.cached))
            .unwrap()
    };
    let ctx = Context::new(mock.settings(repo.path(), &scan)).unwrap();
    let first = fanscan::scan(&ctx, &ui()).await.unwrap();
    let (id, files, agent, cached) = py_group(&first);
    assert_eq!((files, agent.as_str(), cached), (1, "auditor", false));

    // The same group, now routed to the security specialist: its key is
    // that agent's, so the auditor's stored result does not stand in.
    repo.write("fanscan.toml", "[agents]\n\"py/**\" = \"security\"\n");
    let ctx = Context::new(mock.settings(repo.path(), &scan)).unwrap();
    let second = fanscan::scan(&ctx, &ui()).await.unwrap();
    assert_eq!(
        py_group(&second),
        (id, 1, "security".to_string(), false),
        "the security group came from the auditor's cache"
    );
}
