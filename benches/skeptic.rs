//! What the offline skeptic costs on a Java tree whose values come from
//! classes in other files: the `fanscan` binary (offline engine) over a
//! synthetic repository of servlets (each builds a SQL query from a value
//! a helper class in another directory returns: half from the request,
//! half a constant) and the helper classes, once with `--challenge never`
//! and once with `--challenge high` (the default gate: the skeptic greps
//! for each helper class, reads its file and follows the method), side by
//! side, best of three each. Prints both wall times and their ratio, and
//! asserts what the skeptic must find: every constant-fed query refuted,
//! every request-fed one confirmed.
//!
//! `cargo bench --bench skeptic` runs 2,000 servlets; `cargo test --bench
//! skeptic` (or `-- --test`) 40 as a smoke test. The lines after
//! `== results ==` go into docs/benchmarks.md, with the date they were
//! measured.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use fanscan::Report;

/// Helper classes: a request wrapper and an interface with two
/// implementations, in their own package.
const HELPERS: &[(&str, &str)] = &[
    (
        "src/main/java/shop/util/Wrapper.java",
        "package shop.util;\n\npublic class Wrapper {\n    private final HttpServletRequest request;\n\n    public Wrapper(HttpServletRequest request) {\n        this.request = request;\n    }\n\n    public String named(String p) {\n        return request.getParameter(p);\n    }\n\n    public String fixed(String p) {\n        return \"bar\";\n    }\n}\n",
    ),
    (
        "src/main/java/shop/util/Shape.java",
        "package shop.util;\n\npublic interface Shape {\n    String pass(String s);\n}\n",
    ),
    (
        "src/main/java/shop/util/Plain.java",
        "package shop.util;\n\npublic class Plain implements Shape {\n    public String pass(String s) {\n        String r = s;\n        return r;\n    }\n}\n",
    ),
    (
        "src/main/java/shop/util/Built.java",
        "package shop.util;\n\npublic class Built implements Shape {\n    public String pass(String s) {\n        if (s == null) return \"\";\n        return new StringBuilder(s).toString();\n    }\n}\n",
    ),
];

/// Servlet `i`: its value from the request (even `i`) or a constant (odd),
/// through the wrapper or the interface by turns.
fn servlet(i: usize) -> String {
    let tainted = i.is_multiple_of(2);
    let value = match ((i / 2).is_multiple_of(2), tainted) {
        (true, true) => "new shop.util.Wrapper(request).named(\"id\")".to_string(),
        (true, false) => "new shop.util.Wrapper(request).fixed(\"id\")".to_string(),
        (false, true) => "shape.pass(request.getParameter(\"id\"))".to_string(),
        (false, false) => "shape.pass(\"constant\")".to_string(),
    };
    format!(
        "package shop.web;\n\npublic class Orders{i} extends HttpServlet {{\n    public void doPost(HttpServletRequest request, HttpServletResponse response) throws IOException {{\n        shop.util.Shape shape = shop.util.Factory.make();\n        String bar = {value};\n        String sql = \"SELECT * FROM orders WHERE id = '\" + bar + \"'\";\n        statement.executeQuery(sql);\n    }}\n}}\n"
    )
}

fn write(root: &Path, servlets: usize) {
    for (path, text) in HELPERS {
        let full = root.join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, text).unwrap();
    }
    for i in 0..servlets {
        // 50 servlets a directory.
        let dir = root.join(format!("src/main/java/shop/web/d{}", i / 50));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("Orders{i}.java")), servlet(i)).unwrap();
    }
}

/// One scan: its wall time and report.
fn scan(root: &Path, challenge: &str) -> (Duration, Report) {
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_fanscan"))
        .arg("scan")
        .arg(root)
        .args(["--no-store", "--quiet", "--format", "json"])
        .args(["--fail-on", "never", "--challenge", challenge])
        .output()
        .unwrap();
    let took = started.elapsed();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (took, serde_json::from_slice(&out.stdout).unwrap())
}

fn best_of(runs: usize, root: &Path, challenge: &str) -> (Duration, Report) {
    let mut best = scan(root, challenge);
    for _ in 1..runs {
        let next = scan(root, challenge);
        if next.0 < best.0 {
            best = next;
        }
    }
    best
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let bench = args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--test");
    let servlets = if bench { 2000 } else { 40 };
    let runs = if bench { 3 } else { 1 };
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), servlets);

    let (without, _) = best_of(runs, dir.path(), "never");
    let (with, report) = best_of(runs, dir.path(), "high");

    let servlet_of = |path: &str| path.contains("/shop/web/");
    let refuted = report
        .refuted
        .iter()
        .filter(|m| servlet_of(&m.finding.path))
        .count();
    let confirmed = report
        .findings
        .iter()
        .filter(|m| servlet_of(&m.finding.path))
        .filter(|m| {
            m.challenge
                .as_ref()
                .is_some_and(|c| c.stance == fanscan::Stance::Confirmed)
        })
        .count();
    assert_eq!(refuted, servlets / 2, "every constant-fed query is refuted");
    assert_eq!(
        confirmed,
        servlets / 2,
        "every request-fed query is confirmed"
    );

    println!("\n== results ==");
    println!(
        "{servlets} servlets and {} helper classes, best of {runs}: --challenge never {:.2} s, --challenge high {:.2} s ({:.1}x); {refuted} refuted, {confirmed} confirmed",
        HELPERS.len(),
        without.as_secs_f64(),
        with.as_secs_f64(),
        with.as_secs_f64() / without.as_secs_f64().max(1e-9),
    );
}
