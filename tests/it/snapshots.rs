//! Snapshot tests of what people read: the Markdown and JSON reports of a
//! scan and the output of `fanscan plan`, on the small planted repository.
//! Volatile fields (the absolute root, the start time, the duration) are
//! blanked on the report value before it is rendered; fanscan's version and
//! the manifest's hashes are redacted from the rendered text
//! ([`crate::common::redactions`]).

use fanscan::{Context, Format, ProviderArgs, Report, ScanArgs, Settings, Ui};

use crate::cli::planted;
use crate::common::{fanscan, redactions};

async fn offline_report() -> Report {
    let repo = planted();
    let scan = ScanArgs {
        group_tokens: Some(100),
        ..ScanArgs::default()
    };
    let settings = Settings::resolve(repo.path(), &ProviderArgs::default(), &scan, None, &|_| {
        None
    })
    .unwrap();
    let ctx = Context::new(settings).unwrap();
    let ui = Ui::hidden();
    let mut report = fanscan::scan(&ctx, &ui).await.unwrap();
    report.root = "[root]".into();
    report.started_at = "[started_at]".into();
    report.duration_ms = 0;
    report
}

#[tokio::test]
async fn markdown_report_of_the_planted_repository() {
    let report = offline_report().await;
    redactions().bind(|| insta::assert_snapshot!(report.render(Format::Md).unwrap()));
}

#[tokio::test]
async fn json_report_of_the_planted_repository() {
    let report = offline_report().await;
    redactions().bind(|| insta::assert_snapshot!(report.render(Format::Json).unwrap()));
}

#[test]
fn plan_of_the_planted_repository() {
    let repo = planted();
    let root = repo.path().to_str().unwrap();
    let text = fanscan(&["plan", root, "--group-tokens", "100", "--estimate"]);
    assert_eq!(text.status.code(), Some(0));
    insta::assert_snapshot!(String::from_utf8(text.stdout).unwrap());
    let json = fanscan(&["plan", root, "--group-tokens", "100", "--json"]);
    assert_eq!(json.status.code(), Some(0));
    insta::assert_snapshot!(String::from_utf8(json.stdout).unwrap());
}
