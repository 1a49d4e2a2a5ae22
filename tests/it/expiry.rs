//! Suppressions and baseline entries that expire, through the real binary
//! with the offline engine: an inline `until=` holds through its date and
//! gates after it; `fanscan baseline --expires-in` writes the last day;
//! an expired entry gates again; an entry whose file changed is void; an
//! `until=` or `--expires-in` that cannot be read is said, never ignored.
//! The run's date is set with `FANSCAN_TODAY`, so no test reads a clock.

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use fanscan::{Report, exit};

use crate::common::{Repo, fanscan_with_env, report_of};

fn code(out: &Output) -> i32 {
    out.status
        .code()
        .unwrap_or_else(|| panic!("killed: {out:?}"))
}

/// `fanscan scan ROOT --quiet --no-store ARGS` on `today`.
fn scan_on(today: &str, root: &Path, args: &[&str]) -> Output {
    let root = root.to_str().unwrap();
    let mut all = vec!["scan", root, "--quiet", "--no-store"];
    all.extend_from_slice(args);
    fanscan_with_env(&all, &[("FANSCAN_TODAY", today)])
}

/// The JSON report of a scan on `today`.
fn report_on(today: &str, root: &Path, args: &[&str]) -> (i32, Report) {
    let out = scan_on(today, root, &[&["--format", "json"], args].concat());
    (code(&out), report_of(&out))
}

/// `fanscan baseline ROOT -o FILE ARGS` on `today`.
fn baseline_on(today: &str, root: &Path, file: &Path, args: &[&str]) -> Output {
    let mut all = vec![
        "baseline",
        root.to_str().unwrap(),
        "-o",
        file.to_str().unwrap(),
        "--quiet",
        "--no-store",
    ];
    all.extend_from_slice(args);
    fanscan_with_env(&all, &[("FANSCAN_TODAY", today)])
}

const QUERY: &str = "    cur.execute(\"SELECT * FROM users WHERE name = '\" + name + \"'\")\n";

/// A SQL injection under a suppression with `until`.
fn suppressed_until(until: &str) -> Repo {
    Repo::new(&[(
        "app/db.py",
        &format!(
            "def find(cur, name):\n    # fanscan:ignore[sql/concat] until={until} name is an enum until the migration\n{QUERY}"
        ),
    )])
}

#[test]
fn an_inline_suppression_holds_through_its_date_and_gates_after_it() {
    let repo = suppressed_until("2026-03-01");
    let (status, report) = report_on("2026-03-01", repo.path(), &[]);
    assert_eq!(status, exit::OK);
    assert_eq!(report.suppressed.len(), 1);
    let s = &report.suppressed[0].suppression;
    assert_eq!(s.until, Some(jiff::civil::date(2026, 3, 1)));
    assert!(report.expired.is_empty());

    // The day after: the finding is open, gates, and is listed as expired
    // with its reason and date.
    let (status, report) = report_on("2026-03-02", repo.path(), &[]);
    assert_eq!(status, exit::GATE_FAILED);
    assert!(report.suppressed.is_empty());
    assert_eq!(report.gate.failing.len(), 1);
    assert_eq!(report.findings[0].finding.path, "app/db.py");
    assert_eq!(report.expired.len(), 1);
    let x = &report.expired[0];
    assert_eq!(x.by, fanscan::ExpiredBy::Suppression { line: 2 });
    assert_eq!(x.until.to_string(), "2026-03-01");
    assert_eq!(
        x.reason.as_deref(),
        Some("name is an enum until the migration")
    );
    assert_eq!(x.finding.fingerprint, report.findings[0].fingerprint);
    let md = String::from_utf8(scan_on("2026-03-02", repo.path(), &[]).stdout).unwrap();
    assert!(md.contains("## Expired (1)"), "{md}");
    assert!(
        md.contains(
            "fanscan:ignore at line 2 held until 2026-03-01: name is an enum until the migration"
        ),
        "{md}"
    );
}

#[test]
fn an_until_that_is_not_a_date_suppresses_nothing_and_says_where() {
    let repo = suppressed_until("2026-13-45");
    let (status, report) = report_on("2026-01-01", repo.path(), &[]);
    assert_eq!(status, exit::GATE_FAILED);
    assert!(report.suppressed.is_empty());
    let note = report
        .notes
        .iter()
        .find(|n| n.starts_with("app/db.py:2: "))
        .unwrap_or_else(|| panic!("{:#?}", report.notes));
    assert!(
        note.contains("until=2026-13-45") && note.contains("until=YYYY-MM-DD"),
        "{note}"
    );
    assert!(
        report.findings[0]
            .note
            .as_deref()
            .is_some_and(|n| n.contains("not a date")),
        "{:?}",
        report.findings[0].note
    );
}

#[test]
fn baseline_expires_in_writes_the_last_day_and_an_expired_entry_gates_again() {
    let repo = Repo::new(&[("app/db.py", &format!("def find(cur, name):\n{QUERY}"))]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("baseline.json");
    let b = file.to_str().unwrap();
    let out = baseline_on(
        "2026-01-15",
        repo.path(),
        &file,
        &["--expires-in", "90d", "--reason", "ticket 42"],
    );
    assert_eq!(
        code(&out),
        exit::OK,
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let entries = written["findings"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "{written:#}");
    assert_eq!(entries[0]["expires"], "2026-04-15");
    assert_eq!(entries[0]["file_sha256"].as_str().map(str::len), Some(64));

    let (status, report) = report_on("2026-04-15", repo.path(), &["--baseline", b]);
    assert_eq!(status, exit::OK);
    assert_eq!(report.baselined.len(), 1);
    let (status, report) = report_on("2026-04-16", repo.path(), &["--baseline", b]);
    assert_eq!(status, exit::GATE_FAILED);
    assert!(report.baselined.is_empty());
    assert_eq!(report.expired.len(), 1);
    let x = &report.expired[0];
    assert_eq!(
        (&x.by, x.until.to_string(), x.reason.as_deref()),
        (
            &fanscan::ExpiredBy::Baseline,
            "2026-04-15".into(),
            Some("ticket 42")
        )
    );
    // An expired entry is matched: never "no longer found".
    assert!(report.baseline_not_found.is_empty() && report.baseline_void.is_empty());

    // Writing the baseline again accepts the finding again, under the new
    // expiry; an entry still in force keeps its own.
    let out = baseline_on(
        "2026-04-16",
        repo.path(),
        &file,
        &["--baseline", b, "--expires-in", "2w"],
    );
    assert_eq!(code(&out), exit::OK);
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(written["findings"][0]["expires"], "2026-04-30");
    assert_eq!(written["findings"][0]["reason"], "ticket 42");

    let out = baseline_on(
        "2026-01-15",
        repo.path(),
        &file,
        &["--expires-in", "banana"],
    );
    assert_eq!(code(&out), exit::USAGE);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--expires-in \"banana\"") && err.contains("90d"),
        "{err}"
    );
}

#[test]
fn a_baseline_entry_whose_file_changed_is_void_and_old_files_still_load() {
    let repo = Repo::new(&[
        ("app/db.py", &format!("def find(cur, name):\n{QUERY}")),
        ("app/other.py", &format!("def other(cur, name):\n{QUERY}")),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("baseline.json");
    let b = file.to_str().unwrap();
    let out = baseline_on("2026-01-15", repo.path(), &file, &["--reason", "accepted"]);
    assert_eq!(code(&out), exit::OK);
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(
        !written.contains("expires"),
        "no --expires-in, no expiry: {written}"
    );

    // The flagged code of db.py is edited: its entry matches nothing and
    // its file changed, so it is void (its finding, under a new
    // fingerprint, is open). other.py is untouched and stays baselined.
    repo.write(
        "app/db.py",
        "def find(cur, name):\n    cur.execute(\"SELECT id FROM users WHERE name = '\" + name + \"'\")\n",
    );
    let (status, report) = report_on("2026-01-16", repo.path(), &["--baseline", b]);
    assert_eq!(status, exit::GATE_FAILED);
    let void: Vec<&str> = report
        .baseline_void
        .iter()
        .map(|e| e.path.as_str())
        .collect();
    assert_eq!(void, ["app/db.py"]);
    assert!(report.baseline_not_found.is_empty());
    assert_eq!(report.baselined.len(), 1, "other.py's entry still holds");
    let md =
        String::from_utf8(scan_on("2026-01-16", repo.path(), &["--baseline", b]).stdout).unwrap();
    assert!(md.contains("Baseline entries void (1)"), "{md}");

    // A baseline written before entries had dates and hashes loads as it
    // did: the same entry is "no longer found", not void.
    let old: Value = serde_json::from_str(&written).unwrap();
    let mut old = old;
    for e in old["findings"].as_array_mut().unwrap() {
        e.as_object_mut().unwrap().remove("file_sha256");
    }
    std::fs::write(&file, serde_json::to_string_pretty(&old).unwrap()).unwrap();
    let (status, report) = report_on("2026-01-16", repo.path(), &["--baseline", b]);
    assert_eq!(status, exit::GATE_FAILED);
    assert!(report.baseline_void.is_empty());
    let not_found: Vec<&str> = report
        .baseline_not_found
        .iter()
        .map(|e| e.path.as_str())
        .collect();
    assert_eq!(not_found, ["app/db.py"]);
    assert_eq!(report.baselined.len(), 1);
}
