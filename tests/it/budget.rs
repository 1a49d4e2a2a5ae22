//! Token budgets against the mock model server, with `--jobs 8` and groups
//! of mixed sizes: a budget is spent, not shut out by the reservations of
//! groups that have not started, never crossed, and the report says
//! truly why the run stopped.

use wiremock::ResponseTemplate;

use fanscan::{AgentStatus, Context, Report, RunControl, ScanArgs};

use crate::common::{MockModel, Repo, auditor_reply, metered};

/// The shares of a full run's tokens tried as budgets, in percent.
const SHARES: [u64; 4] = [5, 10, 25, 50];

/// A repository whose groups differ in size: the first group of the plan
/// is one big file (about 7,000 estimated tokens, more than a 5% budget
/// can pay for), then 40 directories from a few lines to a few hundred,
/// some packed together, some alone.
fn mixed_repo() -> Repo {
    let repo = Repo::new(&[]);
    let line = "# padding line of the file\n";
    repo.write(
        "a0/big.py",
        &format!("import os\nos.system(cmd)\n{}", line.repeat(750)),
    );
    for d in 0..40 {
        let lines = [4, 30, 160, 12, 260, 60, 8, 110][d % 8] + d;
        repo.write(
            &format!("d{d:02}/f.py"),
            &format!("import os\nos.system(cmd)\n{}", line.repeat(lines)),
        );
    }
    repo
}

/// A careful auditor over real HTTP, billed by the size of what it is
/// sent; answers take 0 to 40 ms so groups finish in a scrambled order.
async fn model() -> MockModel {
    MockModel::openai(Box::new(|body, i| {
        ResponseTemplate::new(200)
            .set_body_json(metered(auditor_reply("os.system", body), body))
            .set_delay(std::time::Duration::from_millis((i as u64 * 17) % 41))
    }))
    .await
}

fn args() -> ScanArgs {
    ScanArgs {
        group_tokens: Some(2_000),
        jobs: Some(8),
        ..ScanArgs::default()
    }
}

async fn scan(ctx: &Context) -> Report {
    let ui = crate::common::hidden_ui(RunControl::default());
    fanscan::scan(ctx, &ui).await.unwrap()
}

fn spent(report: &Report) -> u64 {
    report.stats.input_tokens + report.stats.output_tokens
}

/// A full run, then one run per share of its tokens: (budget, report).
async fn budgeted_runs() -> (Report, Vec<(u64, Report)>) {
    let repo = mixed_repo();
    let mock = model().await;
    let full = scan(&Context::new(mock.settings(repo.path(), &args())).unwrap()).await;
    assert!(full.complete, "{:?}", full.incomplete_reasons);
    let whole = spent(&full);
    let mut runs = Vec::new();
    for share in SHARES {
        let budget = whole * share / 100;
        let mut settings = mock.settings(repo.path(), &args());
        settings.max_tokens = Some(budget);
        // Fresh calls, not the full run's results from the run store.
        settings.cache = false;
        runs.push((budget, scan(&Context::new(settings).unwrap()).await));
    }
    (full, runs)
}

#[tokio::test]
async fn a_budget_with_room_for_groups_is_spent_and_never_crossed() {
    let (full, runs) = budgeted_runs().await;
    let groups = full.plan.groups.len();
    assert!(groups >= 20, "a plan of mixed groups: {groups}");
    let big = &full.plan.groups[0];
    assert_eq!(big.files, vec!["a0/big.py".to_string()]);
    for (share, (budget, report)) in SHARES.iter().zip(&runs) {
        let spent = spent(report);
        let ran = report.groups.len();
        eprintln!(
            "budget {share}% ({budget} tokens): spent {spent} ({:.3} of it), {ran} of {groups} groups, {} requests",
            spent as f64 / *budget as f64,
            report.stats.requests,
        );
        assert!(spent <= *budget, "{share}%: spent {spent} of {budget}");
        assert!(
            spent * 2 >= *budget,
            "{share}%: stopped far too early, {spent} of {budget}: {:?}",
            report.incomplete_reasons
        );
        assert!(!report.complete, "{share}% of a run cannot finish it");
        // Every group that started made its calls: none was shut out by
        // the reservations of groups beside it.
        assert!(ran >= 1, "{share}%: a group fits, so one runs");
        for group in &report.groups {
            assert!(
                group.rounds >= 2 && group.status.reviewed(),
                "{share}%: {} {:?} after {} rounds: {:?}",
                group.id,
                group.status,
                group.rounds,
                group.error
            );
            assert_ne!(group.status, AgentStatus::Interrupted);
        }
    }
    // A budget too small for the first (biggest) group of the plan still
    // runs the smaller ones after it.
    let (_, five) = &runs[0];
    assert!(
        five.groups.iter().all(|g| g.id != big.id),
        "the big group does not fit 5%"
    );
    // More budget, more groups.
    let ran: Vec<usize> = runs.iter().map(|(_, r)| r.groups.len()).collect();
    assert!(ran.windows(2).all(|w| w[0] <= w[1]), "{ran:?}");
}

/// `stopped by the token budget (--max-tokens B) before it was reached:
/// G groups did not fit; the smallest needs ~N tokens, M of the budget
/// remain (S spent, none reserved by running groups).`: the numbers.
fn shortfall_numbers(reason: &str) -> (u64, u64, u64) {
    let number = |after: &str| -> u64 {
        let at = reason
            .find(after)
            .unwrap_or_else(|| panic!("{after:?} in {reason}"))
            + after.len();
        reason[at..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect::<String>()
            .parse()
            .unwrap_or_else(|e| panic!("{after:?} in {reason}: {e}"))
    };
    (number("needs ~"), number(" tokens, "), number(" remain ("))
}

#[tokio::test]
async fn the_report_says_truly_why_a_budgeted_run_stopped() {
    let (_, runs) = budgeted_runs().await;
    for (budget, report) in &runs {
        let spent = spent(report);
        let flag = format!("--max-tokens {budget}");
        let reasons = &report.incomplete_reasons;
        let budget_reasons: Vec<&String> = reasons.iter().filter(|r| r.contains(&flag)).collect();
        assert_eq!(budget_reasons.len(), 1, "{reasons:?}");
        let reason = budget_reasons[0];
        // "Reached" only when the spend met the budget, which these runs
        // never do.
        assert!(spent < *budget);
        assert!(
            !reason.contains(&format!("({flag}) was reached")),
            "{reason}"
        );
        assert!(
            reason.starts_with(&format!(
                "stopped by the token budget ({flag}) before it was reached: "
            )),
            "{reason}"
        );
        let (need, remain, said_spent) = shortfall_numbers(reason);
        assert_eq!(said_spent, spent, "{reason}");
        assert_eq!(remain, budget - spent, "{reason}");
        assert!(
            need >= remain,
            "what did not fit needs more than is left: {reason}"
        );
        assert!(
            reason.ends_with("none reserved by running groups)."),
            "{reason}"
        );
        // Every group that did not run is counted, and none failed.
        let not_started = report.plan.groups.len() - report.groups.len();
        assert!(
            reasons.contains(&if not_started == 1 {
                "1 group never started.".to_string()
            } else {
                format!("{not_started} groups never started.")
            }),
            "{reasons:?}"
        );
        let did_not_fit = if not_started == 1 {
            "the group that did not fit needs".to_string()
        } else {
            format!("{not_started} groups did not fit; the smallest needs")
        };
        assert!(reason.contains(&did_not_fit), "{reason}");
        assert!(
            !reasons.iter().any(|r| r.contains("groups failed")),
            "{reasons:?}"
        );
    }
}

#[tokio::test]
async fn a_group_is_admitted_by_what_its_first_call_needs_not_by_the_plans_estimate() {
    // The plan's estimate counts a usual prompt; this repository's auditor
    // has a 30 kB one, so its first call (with the summary after it) needs
    // about 20,000 tokens where the plan estimates about 4,300. Admitted by
    // the estimate, the group was stopped before its first call and the
    // budget called "reached" with nothing spent.
    let repo = Repo::new(&[("a/x.py", "import os\nos.system(cmd)\n")]);
    repo.write(
        ".fanscan/agents/auditor.md",
        &format!(
            "---\nname: auditor\ndescription: Reviews a group.\ntools: [read_file]\npreload: true\n---\n{}",
            "Check every line of every file with great care.\n".repeat(600)
        ),
    );
    let mock = model().await;
    let mut settings = mock.settings(repo.path(), &args());
    settings.max_tokens = Some(15_000);
    let report = scan(&Context::new(settings).unwrap()).await;
    assert_eq!(mock.requests().len(), 0, "no group fits");
    assert!(report.groups.is_empty(), "{:?}", report.groups);
    assert!(!report.complete);
    let reasons = &report.incomplete_reasons;
    assert!(
        !reasons
            .iter()
            .any(|r| r.contains("(--max-tokens 15000) was reached")),
        "nothing was spent: {reasons:?}"
    );
    let reason = reasons
        .iter()
        .find(|r| r.contains("--max-tokens 15000"))
        .unwrap_or_else(|| panic!("{reasons:?}"));
    // Both groups (the file, and the agent file itself) did not fit.
    assert!(
        reason.starts_with(
            "stopped by the token budget (--max-tokens 15000) before it was reached: 2 groups did not fit; the smallest needs ~"
        ),
        "{reason}"
    );
    // Only the brief was asked (100 tokens in, 10 out, as the mock says).
    assert_eq!(mock.brief_requests().len(), 1);
    let (need, remain, spent) = shortfall_numbers(reason);
    assert_eq!((remain, spent), (14_890, 110), "{reason}");
    assert!(need > 19_000, "its first call, twice: {reason}");
}

#[tokio::test]
async fn a_summary_with_no_room_for_unseen_tool_results_leaves_them_out_and_stays_inside() {
    // Group a is small; its model then reads b/big.py (another group's
    // file: 400 lines, about 7,000 tokens). The call carrying it does not
    // fit in 9,000 tokens, and the summary after it would not either: the
    // result is left out of the summary, so the run stays inside its
    // budget.
    let big = "# a long padding line of the big file, to be read\n".repeat(650);
    let repo = Repo::new(&[
        ("a/x.py", "import os\nos.system(cmd)\n"),
        ("b/big.py", &big),
    ]);
    let mock = MockModel::openai(Box::new(|body, _| {
        let seen_results = body["messages"]
            .as_array()
            .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
        let turn = if body["tool_choice"] == "none" || seen_results {
            crate::common::findings_turn(serde_json::json!([]))
        } else {
            crate::common::tool_turn(&[("c1", "read_file", r#"{"path":"b/big.py"}"#)])
        };
        ResponseTemplate::new(200).set_body_json(metered(turn, body))
    }))
    .await;
    let mut settings = mock.settings(repo.path(), &args());
    settings.max_tokens = Some(9_000);
    settings.jobs = 1;
    let report = scan(&Context::new(settings).unwrap()).await;
    let requests = mock.requests();
    assert_eq!(requests.len(), 2, "the first call, then the summary");
    let summary = &requests[1];
    assert_eq!(summary.body["tool_choice"], "none");
    assert!(
        summary
            .raw
            .contains("(result left out: the token budget had no room to send it)"),
        "the summary carries the read's result"
    );
    assert!(!summary.raw.contains("padding line of the big file"));
    assert_eq!(report.groups.len(), 1, "b does not fit");
    let a = &report.groups[0];
    assert_eq!(a.status, AgentStatus::WrappedUp);
    assert_eq!(a.files_read, 1, "b/big.py was never shown to the model");
    let spent = spent(&report);
    assert!(spent <= 9_000, "spent {spent}");
}
