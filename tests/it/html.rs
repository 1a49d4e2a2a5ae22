//! `--format html` on the reports of real offline scans: a run with
//! findings (and the store's history), an empty run and an incomplete
//! one. The page is self-contained (its policy allows only its own style
//! and script, by hash), escapes every hostile path, title and evidence,
//! holds every string of the JSON report, and works in a real browser:
//! headless Chromium renders each page, the page's own test drives the
//! filters, the sort and a row, and no console message appears. Without
//! Chromium the browser test skips loudly, except under CI=true, where it
//! fails.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use regex::Regex;
use serde_json::Value;
use sha2::Digest;

use fanscan::{Context, Format, ProviderArgs, Report, ScanArgs, Settings, Ui};

use crate::cli::planted;
use crate::common::{Repo, fanscan};

async fn scan(repo: &Path, args: &ScanArgs) -> (Settings, Report) {
    let settings =
        Settings::resolve(repo, &ProviderArgs::default(), args, None, &|_| None).unwrap();
    let ctx = Context::new(settings.clone()).unwrap();
    (settings, fanscan::scan(&ctx, &Ui::hidden()).await.unwrap())
}

fn page(settings: &Settings, report: &Report) -> String {
    fanscan::render(settings, report, Format::Html).unwrap()
}

/// A scan that stops early: the second group (one big file) does not fit
/// the token budget, so it never starts.
fn incomplete_repo() -> (Repo, ScanArgs) {
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
        no_store: true,
        ..ScanArgs::default()
    };
    (repo, args)
}

fn no_store() -> ScanArgs {
    ScanArgs {
        no_store: true,
        ..ScanArgs::default()
    }
}

/// Hostile strings: markup, quotes, a right-to-left override, RTL text.
const HOSTILE: &str =
    "<script>alert(1)</script>\"'><img src=x onerror=alert(2)> \u{202E}txt.exe שלום";

/// A repository whose file names are hostile, and a report whose titles,
/// details, evidence and summary are too.
async fn hostile_page() -> (String, Report) {
    let name = "app/<b>\"x\" \u{202E}gnp.py";
    let repo = Repo::new(&[(
        name,
        "import subprocess\n\ndef run(cmd):\n    subprocess.run(cmd, shell=True)  # </script><script>alert(3)</script>\n",
    )]);
    let (settings, mut report) = scan(repo.path(), &no_store()).await;
    assert!(
        report.findings.iter().any(|m| m.finding.path == name),
        "the hostile path has a finding"
    );
    for m in &mut report.findings {
        m.finding.title = format!("title {HOSTILE}");
        m.finding.detail = format!("detail {HOSTILE}\nsecond line");
        if let Some(e) = &mut m.finding.evidence {
            e.push_str(HOSTILE);
        }
        m.agents.push(HOSTILE.into());
    }
    report.summary = format!("summary {HOSTILE}");
    report.model = HOSTILE.into();
    report.notes.push(HOSTILE.into());
    (page(&settings, &report), report)
}

/// The page without its own style and script.
fn markup(html: &str) -> String {
    let style = Regex::new(r"(?s)<style>.*?</style>").unwrap();
    let script = Regex::new(r"(?s)<script>.*?</script>").unwrap();
    script
        .replace_all(
            &style.replace_all(html, "<style></style>"),
            "<script></script>",
        )
        .into_owned()
}

#[tokio::test]
async fn hostile_paths_titles_and_evidence_are_text_never_markup() {
    let (html, report) = hostile_page().await;
    let rest = markup(&html);
    // Exactly one script element (the page's own) and no element or
    // attribute the page does not write itself.
    assert_eq!(html.matches("<script").count(), 1);
    let tags: BTreeSet<String> = Regex::new(r"<(/?[a-zA-Z][a-zA-Z0-9]*)")
        .unwrap()
        .captures_iter(&rest)
        .map(|c| c[1].trim_start_matches('/').to_ascii_lowercase())
        .collect();
    let allowed: BTreeSet<&str> = [
        "html", "head", "meta", "title", "style", "body", "main", "header", "h1", "h2", "h3", "p",
        "span", "ul", "ol", "li", "dl", "dt", "dd", "div", "b", "nav", "a", "section", "svg", "g",
        "text", "rect", "line", "polyline", "circle", "table", "thead", "tbody", "tr", "th", "td",
        "button", "form", "fieldset", "legend", "label", "input", "select", "option", "pre",
        "details", "summary", "br", "small", "footer", "script",
    ]
    .into();
    for tag in &tags {
        assert!(allowed.contains(tag.as_str()), "unexpected element <{tag}>");
    }
    let handler = Regex::new(r"<[a-zA-Z][^>]*\son[a-z]+=").unwrap();
    // Attribute values hold the hostile text escaped (no `"` can end
    // one early); outside them no element carries an event handler.
    let values = Regex::new(r#"="[^"]*""#).unwrap();
    let bare = values.replace_all(&rest, "=\"\"");
    assert!(!handler.is_match(&bare), "an event handler attribute");
    assert!(!rest.contains("<img"));
    assert!(
        !rest.contains('\u{202E}'),
        "a bidi override is shown, not applied"
    );
    assert!(rest.contains("<span class=\"ctl\">U+202E</span>"));
    assert!(rest.contains("&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&gt;&lt;img"));
    assert!(rest.contains("&lt;/script&gt;&lt;script&gt;alert(3)"));
    assert!(rest.contains("שלום"), "RTL text itself is kept");
    let m = &report.findings[0];
    assert!(rest.contains(&format!("data-fingerprint=\"{}\"", m.fingerprint)));
}

#[tokio::test]
async fn the_page_loads_nothing_and_its_policy_names_its_own_style_and_script() {
    let repo = planted();
    let (settings, report) = scan(repo.path(), &no_store()).await;
    let html = page(&settings, &report);
    let csp = Regex::new(r#"<meta http-equiv="Content-Security-Policy" content="([^"]+)">"#)
        .unwrap()
        .captures(&html)
        .expect("a CSP meta tag")[1]
        .to_string();
    let head_end = html.find("</head>").unwrap();
    assert!(html.find("Content-Security-Policy").unwrap() < html.find("<style>").unwrap());
    assert!(html.find("<style>").unwrap() < head_end);
    assert!(csp.starts_with("default-src 'none';"), "{csp}");
    let hash = |body: &str| {
        let digest = sha2::Sha256::digest(body.as_bytes());
        format!("'sha256-{}'", base64(&digest))
    };
    let style = Regex::new(r"(?s)<style>(.*?)</style>")
        .unwrap()
        .captures(&html)
        .unwrap()[1]
        .to_string();
    let script = Regex::new(r"(?s)<script>(.*?)</script>")
        .unwrap()
        .captures(&html)
        .unwrap()[1]
        .to_string();
    assert!(
        csp.contains(&format!("style-src {}", hash(&style))),
        "{csp}"
    );
    assert!(
        csp.contains(&format!("script-src {}", hash(&script))),
        "{csp}"
    );
    for needle in [
        "http://",
        "https://",
        "src=",
        "href=\"http",
        "@import",
        "url(",
    ] {
        assert!(!html.contains(needle), "the page reaches out: {needle}");
    }
    assert!(
        !markup(&html).contains(" style="),
        "inline styles are blocked by the policy"
    );
}

fn base64(bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..4 {
            out.push(if i <= chunk.len() {
                char::from(ABC[((n >> (18 - 6 * i)) & 63) as usize])
            } else {
                '='
            });
        }
    }
    out
}

/// What the page writes for a string: HTML-escaped, controls as marks.
fn escaped(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\r' => {}
            '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' => out.push_str(&format!(
                "<span class=\"ctl\">U+{:04X}</span>",
                u32::from(c)
            )),
            c => out.push(c),
        }
    }
    out
}

/// Every string value of the JSON report, with its JSON path.
fn strings(v: &Value, path: &str, out: &mut Vec<(String, String)>) {
    match v {
        Value::String(s) if !s.trim().is_empty() => out.push((path.to_string(), s.clone())),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                strings(item, &format!("{path}[{i}]"), out);
            }
        }
        Value::Object(map) => {
            for (k, item) in map {
                strings(item, &format!("{path}.{k}"), out);
            }
        }
        _ => {}
    }
}

/// Nothing the JSON report holds is missing: every string value of it is
/// on the page (the reduced ones: a severity, status or kind is shown in
/// words; numbers are formatted).
async fn assert_complete(settings: &Settings, report: &Report) {
    let html = page(settings, report);
    let json: Value = serde_json::from_str(&report.render(Format::Json).unwrap()).unwrap();
    let mut all = Vec::new();
    strings(&json, "", &mut all);
    assert!(all.len() > 20, "{all:?}");
    let mut missing = Vec::new();
    for (path, s) in &all {
        if !html.contains(&escaped(s)) {
            missing.push(format!("{path} = {s:?}"));
        }
    }
    assert!(
        missing.is_empty(),
        "not on the page:\n{}",
        missing.join("\n")
    );
}

#[tokio::test]
async fn every_string_of_the_json_report_is_on_the_page() {
    let repo = planted();
    let (settings, report) = scan(repo.path(), &ScanArgs::default()).await;
    assert!(!report.findings.is_empty());
    assert_complete(&settings, &report).await;
    let (repo, args) = incomplete_repo();
    let (settings, report) = scan(repo.path(), &args).await;
    assert!(!report.complete);
    assert_complete(&settings, &report).await;
}

/// The page with what changes from run to run blanked: the clock, the
/// temporary root, the version; the inlined style and script (their
/// hashes are checked above) are left out of the snapshot.
fn stable_page(html: &str) -> String {
    let html = markup(html);
    let csp = Regex::new(r"'sha256-[A-Za-z0-9+/=]+'").unwrap();
    csp.replace_all(&html, "'sha256-[hash]'").into_owned()
}

fn stable(mut report: Report) -> Report {
    report.started_at = "2026-01-01T00:00:00Z".into();
    report.duration_ms = 1_250;
    report.root = "<root>".into();
    report.tool.version = "0.0.0".into();
    report
}

#[tokio::test]
async fn html_snapshots() {
    let repo = planted();
    let (settings, report) = scan(repo.path(), &no_store()).await;
    insta::assert_snapshot!(
        "html_findings",
        stable_page(&page(&settings, &stable(report)))
    );
    let (repo, args) = incomplete_repo();
    let (settings, report) = scan(repo.path(), &args).await;
    insta::assert_snapshot!(
        "html_incomplete",
        stable_page(&page(&settings, &stable(report)))
    );
}

#[test]
fn the_binary_writes_the_page_with_the_store_trend() {
    let repo = planted();
    let root = repo.path().to_str().unwrap();
    let first = fanscan(&["scan", root, "--quiet", "--format", "json"]);
    assert_eq!(first.status.code(), Some(4));
    repo.write(
        "app/load.py",
        "import pickle\ndef load(b):\n    return pickle.loads(b)\n",
    );
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report.html");
    let second = fanscan(&[
        "scan",
        root,
        "--quiet",
        "--output",
        &format!("html={}", out.display()),
    ]);
    assert_eq!(second.status.code(), Some(4));
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(
        html.contains("<polyline class=\"line-high\""),
        "a trend of two runs"
    );
    assert!(
        html.contains("<span class=\"new\">new</span>"),
        "the new finding is marked"
    );
    assert!(html.contains("Since run #1"));
}

// ---- the browser ----

/// Headless Chromium, if installed: `FANSCAN_CHROMIUM`, else the Debian
/// package's `chromium`, else `chromium-browser` / `google-chrome`.
fn chromium() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("FANSCAN_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .flat_map(|name| std::env::split_paths(&path).map(move |d| d.join(name)))
        .find(|p| p.is_file())
}

/// What the browser did with one page.
struct Rendered {
    dom: String,
    /// Console messages and uncaught errors (Chromium's log on stderr).
    console: Vec<String>,
}

/// Renders `file` at `hash` in a fresh headless Chromium; `extra` picks
/// the output (`--dump-dom`, `--screenshot=FILE`).
fn render_in_browser(browser: &Path, file: &Path, hash: &str, extra: &[&str]) -> Rendered {
    let profile = tempfile::tempdir().unwrap();
    let url = format!("file://{}#{hash}", file.display());
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--enable-logging=stderr",
            "--v=0",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(&url)
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", browser.display()));
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let console = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught"))
        .map(str::to_string)
        .collect();
    Rendered {
        dom: String::from_utf8_lossy(&out.stdout).into_owned(),
        console,
    }
}

/// A path as the page's data attributes hold it: controls spelled out.
fn shown_in_attribute(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' => format!("U+{:04X}", u32::from(c)),
            c => c.to_string(),
        })
        .collect()
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&nbsp;", "\u{a0}")
        .replace("&amp;", "&")
}

/// Every finding of the report as the table lists it: (severity, status,
/// CWE, path).
fn rows(report: &Report) -> Vec<(String, String, String, String)> {
    let row = |m: &fanscan::Merged, status: &str| {
        (
            m.finding.severity.as_str().to_string(),
            status.to_string(),
            m.finding
                .cwe
                .id
                .map_or_else(|| "none".to_string(), |id| id.to_string()),
            shown_in_attribute(&m.finding.path),
        )
    };
    let mut out: Vec<_> = report.findings.iter().map(|m| row(m, "open")).collect();
    out.extend(report.unverified.iter().map(|m| row(m, "unverified")));
    out.extend(report.refuted.iter().map(|m| row(m, "refuted")));
    out.extend(
        report
            .suppressed
            .iter()
            .map(|s| row(&s.finding, "suppressed")),
    );
    out.extend(
        report
            .baselined
            .iter()
            .map(|b| row(&b.finding, "baselined")),
    );
    out
}

/// Renders the page, checks the console stayed quiet and the page's own
/// test saw what the report holds; the DOM.
fn check_in_browser(browser: &Path, dir: &Path, name: &str, html: &str, report: &Report) {
    let file = dir.join(format!("{name}.html"));
    std::fs::write(&file, html).unwrap();
    let r = render_in_browser(browser, &file, "selftest=1", &["--dump-dom"]);
    assert!(r.console.is_empty(), "{name}: console: {:#?}", r.console);
    assert!(
        r.dom.contains("data-ready=\"ok\""),
        "{name}: the script did not run:\n{}",
        r.dom
    );
    assert!(
        r.dom.contains("data-errors=\"0\""),
        "{name}: errors in the page"
    );
    let json = Regex::new(r#"(?s)<pre id="selftest" hidden="">(.*?)</pre>"#)
        .unwrap()
        .captures(&r.dom)
        .unwrap_or_else(|| panic!("{name}: no self-test output"))[1]
        .to_string();
    let seen: Value = serde_json::from_str(&unescape(&json)).unwrap();
    let rows = rows(report);
    assert_eq!(seen["errors"], serde_json::json!([]), "{name}");
    assert_eq!(seen["total"], rows.len(), "{name}");
    assert_eq!(seen["initial"], rows.len(), "{name}: all shown at first");
    for sev in ["critical", "high", "medium", "low", "info"] {
        let n = rows.iter().filter(|r| r.0 == sev).count();
        assert_eq!(seen["sev"][sev], n, "{name}: severity filter {sev}");
    }
    for status in ["open", "unverified", "refuted", "suppressed", "baselined"] {
        let n = rows.iter().filter(|r| r.1 == status).count();
        assert_eq!(seen["status"][status], n, "{name}: status filter {status}");
    }
    let cwes: BTreeSet<&str> = rows.iter().map(|r| r.2.as_str()).collect();
    for cwe in &cwes {
        let n = rows.iter().filter(|r| r.2 == *cwe).count();
        assert_eq!(seen["cwe"][cwe], n, "{name}: CWE filter {cwe}");
    }
    if let Some(first) = rows.first() {
        let n = rows
            .iter()
            .filter(|r| r.3.to_lowercase().contains(&first.3.to_lowercase()))
            .count();
        assert_eq!(seen["path"]["path"], first.3.as_str());
        assert_eq!(seen["path"]["shown"], n, "{name}: path filter");
        assert_eq!(seen["typed"], 0, "{name}: typing in the path box filters");
        assert_eq!(seen["sorted_ascending"], true, "{name}: sort");
        let worst = rows
            .iter()
            .map(|r| fanscan::Severity::parse(&r.0).unwrap())
            .max()
            .unwrap();
        assert_eq!(
            seen["first_rank"],
            worst as u64 + 1,
            "{name}: most severe first"
        );
        assert_eq!(seen["opened"], true, "{name}: a row opens");
        assert_eq!(seen["closed"], true, "{name}: and closes");
    } else {
        assert!(r.dom.contains("No findings."));
    }
    // A filter in the URL: open high findings only.
    let r = render_in_browser(browser, &file, "sev=high&status=open", &["--dump-dom"]);
    assert!(r.console.is_empty(), "{name}: console: {:#?}", r.console);
    let n = rows
        .iter()
        .filter(|r| r.0 == "high" && r.1 == "open")
        .count();
    assert!(
        r.dom.contains(&format!("data-visible=\"{n}\"")),
        "{name}: {n} rows after the URL's filter"
    );
    let hidden = Regex::new(r#"<tbody class="finding"[^>]*\shidden="""#)
        .unwrap()
        .find_iter(&r.dom)
        .count();
    assert_eq!(hidden, rows.len() - n, "{name}: the others are hidden");
}

#[tokio::test]
async fn headless_chromium_renders_the_pages_and_the_filters_work() {
    let Some(browser) = chromium() else {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!(
                "CI=true and no Chromium: install it (apt-get install -y chromium) or set FANSCAN_CHROMIUM"
            );
        }
        eprintln!(
            "\n\n!!!!!!!! SKIPPED: headless_chromium_renders_the_pages_and_the_filters_work: no Chromium on PATH (apt-get install -y chromium, or set FANSCAN_CHROMIUM) !!!!!!!!\n\n"
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();

    let repo = planted();
    let (settings, report) = scan(repo.path(), &ScanArgs::default()).await;
    repo.write(
        "app/load.py",
        "import pickle\ndef load(b):\n    return pickle.loads(b)\n",
    );
    let (settings2, report2) = scan(repo.path(), &ScanArgs::default()).await;
    drop((settings, report));
    assert!(report2.findings.len() > 3);
    let html = page(&settings2, &report2);
    check_in_browser(&browser, dir.path(), "findings", &html, &report2);

    let (hostile, report) = hostile_page().await;
    check_in_browser(&browser, dir.path(), "hostile", &hostile, &report);

    let clean = Repo::new(&[(
        "src/lib.rs",
        "/// Adds.\npub fn add(a: u32, b: u32) -> u32 {\n    a + b\n}\n",
    )]);
    let (settings, report) = scan(clean.path(), &no_store()).await;
    assert!(report.findings.is_empty() && report.complete);
    check_in_browser(
        &browser,
        dir.path(),
        "empty",
        &page(&settings, &report),
        &report,
    );

    let (repo, args) = incomplete_repo();
    let (settings, report) = scan(repo.path(), &args).await;
    assert!(!report.complete);
    let html = page(&settings, &report);
    assert!(html.contains("v-incomplete") || html.contains("v-fail"));
    check_in_browser(&browser, dir.path(), "incomplete", &html, &report);

    // A screenshot of the page with findings (the README's, when
    // FANSCAN_SCREENSHOT names where to keep it).
    let shot = std::env::var("FANSCAN_SCREENSHOT")
        .map(PathBuf::from)
        .unwrap_or_else(|_| dir.path().join("findings.png"));
    let file = dir.path().join("findings.html");
    let r = render_in_browser(
        &browser,
        &file,
        "",
        &[
            "--window-size=1280,1500",
            &format!("--screenshot={}", shot.display()),
        ],
    );
    assert!(r.console.is_empty(), "{:#?}", r.console);
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 20_000,
        "a real screenshot"
    );
}
