//! Property tests of every input surface a hostile repository, SARIF file
//! or model reaches (`fanscan::fuzzing`, the same functions the fuzz
//! targets in `fuzz/` call): inputs made of the pieces each format is
//! built from, in any order, then every input the fuzzers ever found at
//! fault (`fuzz/regressions/<target>/`). A property that fails panics
//! with the input, which proptest shrinks first.

use std::path::Path;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRng, TestRunner};

use fanscan::fuzzing;

/// Cases per surface: enough to meet every piece in many orders, few
/// enough for the suite's time.
const CASES: u32 = 256;

/// The same inputs every run (a fixed seed): a failure here is one a
/// rerun shows again.
fn runner() -> TestRunner {
    let config = Config {
        cases: CASES,
        failure_persistence: None,
        ..Config::default()
    };
    let rng = TestRng::deterministic_rng(config.rng_algorithm);
    TestRunner::new_with_rng(config, rng)
}

/// Text made of `pieces` and arbitrary characters, up to `len` of them.
fn soup(pieces: &'static [&'static str], len: usize) -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        4 => proptest::sample::select(pieces).prop_map(|p| p.as_bytes().to_vec()),
        1 => any::<char>().prop_map(|c| c.to_string().into_bytes()),
        1 => any::<u8>().prop_map(|b| vec![b]),
    ];
    proptest::collection::vec(piece, 0..len).prop_map(|parts| parts.concat())
}

const JSON: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    "\"",
    ":",
    ",",
    " ",
    "\n",
    "\\",
    "null",
    "true",
    "0",
    "-1",
    "1e999",
    "4294967296",
    "\"findings\"",
    "\"path\"",
    "\"line\"",
    "\"severity\"",
    "\"high\"",
    "\"title\"",
    "\"evidence\"",
    "\"rule\"",
    "\"cwe\"",
    "\"leads\"",
    "\"id\"",
    "\"verdict\"",
    "\"verdicts\"",
    "\"refuted\"",
    "\"confirmed\"",
    "\"src/a.py\"",
    "\"../x\"",
    "\"/etc/passwd\"",
    "```json\n",
    "```\n",
    "[TASK_COMPLETE]",
    "\u{feff}",
    "\u{0}",
    "é",
    "L1",
];

const SARIF: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    "\"",
    ":",
    ",",
    "\"version\"",
    "\"2.1.0\"",
    "\"runs\"",
    "\"tool\"",
    "\"driver\"",
    "\"name\"",
    "\"results\"",
    "\"ruleId\"",
    "\"message\"",
    "\"text\"",
    "\"locations\"",
    "\"physicalLocation\"",
    "\"artifactLocation\"",
    "\"uri\"",
    "\"uriBaseId\"",
    "\"region\"",
    "\"startLine\"",
    "\"endLine\"",
    "\"level\"",
    "\"error\"",
    "0",
    "-3",
    "7",
    "18446744073709551616",
    "\"a.py\"",
    "\"../../etc/passwd\"",
    "\"file:///etc/passwd\"",
    "\"%2e%2e/x\"",
    "\"a/./b/../c.py\"",
    "\"http://x/a.py\"",
    "null",
    "\"\"",
];

const URIS: &[&str] = &[
    "a.py",
    "../../etc/passwd",
    "file:///etc/passwd",
    "%2e%2e/x",
    "a/./b/../c.py",
    "http://x/a.py",
    "",
    "/",
    "C:\\x.py",
    "a.py#L3",
    "a%00.py",
    "~/x",
    "a//b.py",
];

const AGENT: &[&str] = &[
    "---\n",
    "name: ",
    "description: ",
    "tools: ",
    "[read_file, grep]",
    "[write_file]",
    "model: ",
    "max_rounds: ",
    "0",
    "1001",
    "-1",
    "max_tokens: ",
    "\n",
    "  ",
    "\"",
    "'",
    ":",
    "- ",
    "#",
    "\u{feff}",
    "\r\n",
    "{",
    "}",
    "auditor",
    "skeptic",
];

const TOML: &[&str] = &[
    "[",
    "]",
    "[[",
    "]]",
    "=",
    "\"",
    "'''",
    "\n",
    "#",
    "rpm = ",
    "concurrency = ",
    "0",
    "-1",
    "99999999999999999999",
    "model = ",
    "provider = ",
    "\"openai\"",
    "base_url = ",
    "\"http://\"",
    "[budget]",
    "[gate]",
    "fail_on = ",
    "\"high\"",
    "\"never\"",
    "exclude = ",
    "[\"**\"]",
    "timeout = ",
    "\"90s\"",
    "\"1h30m\"",
    "\"-5s\"",
    "inf",
    "nan",
    "true",
    "{",
    "}",
    ",",
    "[agents]",
    "[rules]",
    "1979-05-27",
];

const BASELINE: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    "\"",
    ":",
    ",",
    "\"version\"",
    "1",
    "2",
    "\"entries\"",
    "\"findings\"",
    "\"fingerprint\"",
    "\"path\"",
    "\"line\"",
    "\"reason\"",
    "\"expires\"",
    "\"2027-03-01\"",
    "\"2026-13-45\"",
    "null",
    "\"a.py\"",
];

const SUPPRESS: &[&str] = &[
    "fanscan:ignore",
    "fanscan:ignored",
    "[",
    "]",
    ",",
    "sql/",
    "exec/*",
    " ",
    "until=",
    "2027-03-01",
    "2027-3-1",
    "99999-01-01",
    "reason",
    ":",
    "--",
    "*/",
    "-->",
    "#}",
    "\n",
    "//",
    "#",
    "é",
    "\u{0}",
];

const STORED: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    "\"",
    ":",
    ",",
    "\"group\"",
    "\"files\"",
    "\"status\"",
    "\"complete\"",
    "\"findings\"",
    "\"lines_cut\"",
    "\"summary\"",
    "\"usage\"",
    "\"read\"",
    "true",
    "0",
    "\"notes\"",
    "null",
    "18446744073709551616",
];

/// Code of every language, the pieces rules and taint look for among them.
const CODE: &[&str] = &[
    "(",
    ")",
    "{",
    "}",
    "[",
    "]",
    ";",
    "\n",
    " ",
    "\"",
    "'",
    "`",
    "${",
    "#{",
    "\\",
    "/*",
    "*/",
    "//",
    "#",
    "<?php",
    "?>",
    "$_GET['c']",
    "request.args['c']",
    "req.query.c",
    "r.getParameter(\"c\")",
    "system(",
    "exec(",
    "os.system(",
    "eval(",
    "Runtime.getRuntime().exec(",
    "query(",
    "\"SELECT * FROM t WHERE id = \" + ",
    "f\"{x}\"",
    "def f(x):",
    "function f(x)",
    "void f(String x)",
    "func f(x string)",
    "x = ",
    "return ",
    "if (",
    "else",
    "class A",
    "import os",
    "<script>",
    "<%=",
    "%>",
    "{{",
    "}}",
    "|safe",
    "\u{0}",
    "\u{feff}",
    "\r",
];

fn check(name: &str, strategy: impl Strategy<Value = Vec<u8>>, f: impl Fn(&[u8])) {
    runner()
        .run(&strategy, |input| {
            f(&input);
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    replay(name, &f);
}

/// Every input kept under `fuzz/regressions/NAME/` (each a crash or hang
/// a fuzzer found, fixed since).
fn replay(name: &str, f: &impl Fn(&[u8])) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/regressions")
        .join(name);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        f(&std::fs::read(&path).unwrap());
    }
}

#[test]
fn model_answers() {
    check("model_answer", soup(JSON, 120), fuzzing::model_answer);
}

#[test]
fn sarif_files() {
    let root = tempfile::tempdir().unwrap();
    check("sarif", soup(SARIF, 150), |b| {
        fuzzing::sarif(root.path(), b)
    });
}

/// Well-formed SARIF whose locations are anything: no lead leaves the
/// repository, none is on line 0.
#[test]
fn sarif_locations() {
    let root = tempfile::tempdir().unwrap();
    let uri = prop_oneof![
        proptest::sample::select(URIS).prop_map(str::to_string),
        "[a-z./%:]{0,24}",
    ];
    let line = prop_oneof![
        Just(serde_json::json!(null)),
        any::<i64>().prop_map(|n| serde_json::json!(n))
    ];
    let strategy = proptest::collection::vec((uri, line), 0..8).prop_map(|locs| {
        let results: Vec<serde_json::Value> = locs
            .into_iter()
            .map(|(uri, line)| {
                serde_json::json!({
                    "ruleId": "r", "message": {"text": "m"},
                    "locations": [{"physicalLocation": {
                        "artifactLocation": {"uri": uri},
                        "region": {"startLine": line}
                    }}]
                })
            })
            .collect();
        serde_json::to_vec(&serde_json::json!({
            "version": "2.1.0",
            "runs": [{"tool": {"driver": {"name": "t"}}, "results": results}]
        }))
        .unwrap()
    });
    runner()
        .run(&strategy, |input| {
            fuzzing::sarif(root.path(), &input);
            Ok(())
        })
        .unwrap();
}

#[test]
fn agent_files() {
    check("agent_file", soup(AGENT, 80), fuzzing::agent_file);
}

#[test]
fn config_files() {
    let dir = tempfile::tempdir().unwrap();
    check("config", soup(TOML, 60), |b| fuzzing::config(dir.path(), b));
}

#[test]
fn baselines() {
    check("baseline", soup(BASELINE, 80), fuzzing::baseline);
}

#[test]
fn suppression_comments() {
    check("suppressions", soup(SUPPRESS, 60), fuzzing::suppressions);
}

#[test]
fn stored_answers() {
    check("stored_answer", soup(STORED, 80), fuzzing::stored_answer);
}

#[test]
fn the_engine_on_any_bytes_in_every_language() {
    let engine = fuzzing::Engine::default();
    let strategy = (any::<u8>(), soup(CODE, 120)).prop_map(|(pick, mut body)| {
        body.insert(0, pick);
        body
    });
    check("engine", strategy, |b| engine.check(b));
}
