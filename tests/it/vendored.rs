//! Vendored and generated code: the real `fanscan plan --json` and
//! `fanscan scan` skip it with a reason, `.gitattributes` overrides the
//! built-in list both ways, `--include-vendored` brings it back.

use serde_json::Value;

use crate::common::{Repo, fanscan};

/// `fanscan plan --json` on `repo` with `extra` arguments: (planned files,
/// skipped path → reason object).
fn plan(repo: &Repo, extra: &[&str]) -> (Vec<String>, Vec<(String, Value)>) {
    let mut args = vec!["plan", repo.path().to_str().unwrap(), "--json"];
    args.extend_from_slice(extra);
    let out = fanscan(&args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut files: Vec<String> = v["plan"]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["files"].as_array().unwrap().clone())
        .map(|f| f.as_str().unwrap().to_string())
        .collect();
    files.sort();
    let skipped = v["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["path"].as_str().unwrap().to_string(), s.clone()))
        .collect();
    (files, skipped)
}

fn reason<'a>(skipped: &'a [(String, Value)], path: &str) -> &'a Value {
    &skipped
        .iter()
        .find(|(p, _)| p == path)
        .unwrap_or_else(|| panic!("{path} not skipped: {skipped:?}"))
        .1
}

const LIBS: &str = "src/main/resources/webgoat/static/js/libs";

/// The shape of WebGoat: Java lessons, the app's own JavaScript, and
/// vendored JavaScript libraries next to it.
fn webgoat_like() -> Repo {
    let big_js = "function f(a) { return a + 1; }\n".repeat(200);
    Repo::new(&[
        (
            "src/main/java/org/owasp/webgoat/lessons/SqlInjection.java",
            "class SqlInjection {\n  String q(String n) { return \"SELECT * FROM users WHERE name = '\" + n + \"'\"; }\n}\n",
        ),
        (
            "src/main/resources/webgoat/static/js/goatApp/view/MenuView.js",
            "define(['jquery'], function ($) { return {}; });\n",
        ),
        (
            "src/main/resources/webgoat/static/js/main.js",
            "require(['goatApp/view/MenuView']);\n",
        ),
        (&format!("{LIBS}/jquery-ui-1.10.4.js"), &big_js),
        (&format!("{LIBS}/ace.js"), &big_js),
        (&format!("{LIBS}/jquery-base.js"), &big_js),
        (&format!("{LIBS}/bootstrap.min.js"), &big_js),
        (&format!("{LIBS}/underscore-min.js"), &big_js),
        (
            "src/main/resources/webgoat/static/plugins/bootstrap-wysihtml5/js/wysihtml5-0.3.0.js",
            &big_js,
        ),
        ("pom.xml", "<project/>\n"),
    ])
}

#[test]
fn webgoat_like_tree_loses_its_vendored_javascript_from_the_plan() {
    let repo = webgoat_like();
    let (files, skipped) = plan(&repo, &[]);
    assert_eq!(
        files,
        vec![
            "pom.xml",
            "src/main/java/org/owasp/webgoat/lessons/SqlInjection.java",
            "src/main/resources/webgoat/static/js/goatApp/view/MenuView.js",
            "src/main/resources/webgoat/static/js/main.js",
        ]
    );
    let jquery_ui = reason(&skipped, &format!("{LIBS}/jquery-ui-1.10.4.js"));
    assert_eq!(jquery_ui["reason"], "vendored");
    assert_eq!(jquery_ui["source"], "linguist");
    assert_eq!(
        jquery_ui["rule"],
        r"(^|/)jquery\-ui(\-\d\.\d+(\.\d+)?)?(\.\w+)?\.(js|css)$"
    );
    assert_eq!(
        reason(&skipped, &format!("{LIBS}/ace.js"))["reason"],
        "vendored"
    );
    assert_eq!(
        reason(&skipped, &format!("{LIBS}/jquery-base.js"))["reason"],
        "vendored"
    );
    assert_eq!(
        reason(
            &skipped,
            "src/main/resources/webgoat/static/plugins/bootstrap-wysihtml5/js/wysihtml5-0.3.0.js"
        )["reason"],
        "vendored"
    );
    for min in ["bootstrap.min.js", "underscore-min.js"] {
        let r = reason(&skipped, &format!("{LIBS}/{min}"));
        assert_eq!(r["reason"], "generated", "{min}");
        assert_eq!(r["rule"], r"(\.|-)min\.(js|css)$", "{min}");
    }

    // --include-vendored audits all of them.
    let (files, skipped) = plan(&repo, &["--include-vendored"]);
    assert!(skipped.is_empty(), "{skipped:?}");
    assert_eq!(files.len(), 10, "{files:?}");
}

#[test]
fn gitattributes_bring_back_and_skip_files_in_the_plan() {
    let repo = Repo::new(&[
        (
            ".gitattributes",
            "vendor/ours.js -linguist-vendored\nsrc/gen/** linguist-vendored\n",
        ),
        ("vendor/ours.js", "export const ours = 1;\n"),
        ("vendor/theirs.js", "export const theirs = 1;\n"),
        ("src/gen/api.rs", "pub fn generated() {}\n"),
        ("src/main.rs", "fn main() {}\n"),
        // Nested: relative to web/, later lines win.
        (
            "web/.gitattributes",
            "*.js linguist-generated\nmain.js -linguist-generated\n",
        ),
        ("web/main.js", "main();\n"),
        ("web/parts/bundle.js", "bundle();\n"),
        ("other/bundle.js", "other();\n"),
    ]);
    let (files, skipped) = plan(&repo, &[]);
    assert_eq!(
        files,
        vec![
            ".gitattributes",
            "other/bundle.js",
            "src/main.rs",
            "vendor/ours.js",
            "web/.gitattributes",
            "web/main.js",
        ]
    );
    let gen_api = reason(&skipped, "src/gen/api.rs");
    assert_eq!(gen_api["reason"], "vendored");
    assert_eq!(gen_api["rule"], "src/gen/**");
    assert_eq!(gen_api["source"], ".gitattributes:2");
    let bundle = reason(&skipped, "web/parts/bundle.js");
    assert_eq!(bundle["reason"], "generated");
    assert_eq!(bundle["source"], "web/.gitattributes:1");
    assert_eq!(reason(&skipped, "vendor/theirs.js")["source"], "linguist");

    let (files, skipped) = plan(&repo, &["--include-vendored"]);
    assert!(skipped.is_empty(), "{skipped:?}");
    assert_eq!(files.len(), 9);
}

#[test]
fn include_vendored_in_fanscan_toml_keeps_lock_files_skipped() {
    let repo = Repo::new(&[
        ("fanscan.toml", "include_vendored = true\n"),
        ("node_modules/x/index.js", "module.exports = 1;\n"),
        ("package-lock.json", "{}\n"),
        ("index.js", "require('x');\n"),
    ]);
    let (files, skipped) = plan(&repo, &[]);
    assert_eq!(
        files,
        vec!["fanscan.toml", "index.js", "node_modules/x/index.js"]
    );
    let lock = reason(&skipped, "package-lock.json");
    assert_eq!(lock["reason"], "generated");
    assert_eq!(lock["source"], "lock_file");
    assert_eq!(lock["rule"], "package-lock.json");
}

#[test]
fn scan_reports_why_a_vendored_file_was_skipped() {
    let repo = Repo::new(&[
        ("app/run.py", "import subprocess\n"),
        ("third_party/lib.py", "import os\n"),
    ]);
    let out = fanscan(&["scan", repo.path().to_str().unwrap(), "--quiet"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "skipped `third_party/lib.py`: vendored (Linguist rule `(^|/)third[-_]?party/`; --include-vendored audits it)"
        ),
        "{text}"
    );
}
