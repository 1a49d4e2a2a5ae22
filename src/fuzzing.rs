//! The input surfaces a hostile repository, SARIF file or model can
//! reach, one function each, for the fuzz targets (`fuzz/`) and the
//! property tests (`tests/it/fuzzed.rs`). Each takes arbitrary bytes and
//! panics only when a property fails: what goes in is accounted for (a
//! finding cites a line that exists and a path that was written; a claim
//! that is no finding is kept with why). An error on bad input is the
//! right answer, never a panic.
//!
//! Not part of fanscan's interface: it is public only so that the fuzz
//! crate, which cannot see inside this one, can call it.

use std::path::{Path, PathBuf};

use crate::engine::rules::RuleSet;
use crate::model::findings::parse_report;
use crate::util::language::language_of;

/// Extensions of the languages the engine parses, a fuzz input's first
/// byte choosing one.
pub const EXTENSIONS: &[&str] = &[
    "java", "py", "js", "ts", "tsx", "go", "php", "c", "cpp", "cs", "rb", "rs", "kt", "swift",
    "sh", "html", "erb",
];

/// The text of `bytes` as every reader of files takes it: invalid UTF-8
/// as U+FFFD.
fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A model's final answer: the findings block (repaired when broken), the lead
/// answers, the skeptic's verdicts. Every finding names a path the answer
/// wrote and a line from 1.
pub fn model_answer(bytes: &[u8]) {
    let answer = text(bytes);
    let parsed = parse_report(&answer);
    for f in &parsed.findings {
        assert!(f.line >= 1, "a finding on line 0: {f:?}");
        assert!(
            !f.path.is_empty() && answer.contains(f.path.trim_start_matches("./")),
            "a finding on a path the answer did not write: {:?}",
            f.path
        );
    }
    if !parsed.parsed {
        assert!(
            parsed.findings.is_empty(),
            "findings from a block that did not parse"
        );
    }
    let ids = ["F1".to_string(), "F2".to_string()];
    let read = crate::model::challenge::read_answer(&answer, &ids);
    for id in read.by_id.keys() {
        assert!(ids.contains(id), "a verdict for {id}, which was not asked");
    }
}

/// A SARIF file given as leads, against a repository at `root` (only its
/// paths are read, never its files). A bad file is an error naming it.
pub fn sarif(root: &Path, bytes: &[u8]) {
    let file = PathBuf::from("fuzz.sarif");
    match crate::stages::leads::SarifLeads::of_text(root, &file, &text(bytes)) {
        Ok(leads) => {
            for lead in leads.leads() {
                assert!(lead.line >= 1, "a lead on line 0: {lead:?}");
                assert!(
                    !lead.path.starts_with('/') && !lead.path.split('/').any(|p| p == ".."),
                    "a lead outside the repository: {:?}",
                    lead.path
                );
            }
        }
        Err(e) => assert!(e.to_string().contains("fuzz.sarif"), "{e}"),
    }
}

/// An agent file (front matter and prompt). A bad one is an error naming
/// it.
pub fn agent_file(bytes: &[u8]) {
    if let Err(e) = crate::agents::AgentDefinition::parse("fuzz.md", &text(bytes)) {
        assert!(e.to_string().contains("fuzz.md"), "{e}");
    }
}

/// A baseline file. A bad one is an error naming it.
pub fn baseline(bytes: &[u8]) {
    if let Err(e) = crate::stages::baseline::Baseline::parse("fuzz.json", &text(bytes)) {
        assert!(e.to_string().contains("fuzz.json"), "{e}");
    }
}

/// Inline suppression comments, one per line.
pub fn suppressions(bytes: &[u8]) {
    for (n, line) in (1u32..).zip(text(bytes).lines()) {
        if let Some(s) = crate::model::suppress::parse(line, n) {
            assert_eq!(s.line, n);
            assert!(line.contains(crate::model::suppress::MARKER));
        }
    }
}

/// What the run store keeps and reads back: a group's report, a file's
/// record, a reduction. A body that does not read is not used; it never
/// panics.
pub fn stored_answer(bytes: &[u8]) {
    let body = text(bytes);
    let _ = serde_json::from_str::<crate::agents::subagent::GroupReport>(&body);
    let _ = serde_json::from_str::<crate::store::files::FileRecord>(&body);
    let _ = serde_json::from_str::<crate::stages::reduce::Reduced>(&body);
}

/// `fanscan.toml`, resolved with every other setting at its default. A
/// bad one is an error naming the file; `dir` is a directory the
/// function may write `fanscan.toml` into.
pub fn config(dir: &Path, bytes: &[u8]) {
    let path = dir.join("fanscan.toml");
    if std::fs::write(&path, bytes).is_err() {
        return;
    }
    let provider = crate::ProviderArgs {
        config: Some(path),
        ..crate::ProviderArgs::default()
    };
    let scan = crate::ScanArgs::default();
    if let Err(e) = crate::Settings::resolve(dir, &provider, &scan, None, &|_| None) {
        let said = e.to_string();
        assert!(!said.is_empty());
    }
}

/// The rule engine over one file of arbitrary bytes.
pub struct Engine {
    rules: RuleSet,
}

impl Default for Engine {
    fn default() -> Self {
        Self {
            rules: RuleSet::builtin(),
        }
    }
}

impl Engine {
    /// Every rule, the syntax tree and the taint rules applied to `bytes`
    /// as a file of the language `bytes[0]` picks: every finding is on a
    /// line the file has.
    pub fn check(&self, bytes: &[u8]) {
        let Some((&pick, body)) = bytes.split_first() else {
            return;
        };
        let ext = EXTENSIONS[usize::from(pick) % EXTENSIONS.len()];
        let path = format!("src/fuzz.{ext}");
        assert!(language_of(&path).is_some(), "{path} has no language");
        let text = text(body);
        let lines: Vec<(u32, String)> = (1u32..).zip(text.lines().map(str::to_string)).collect();
        let findings = match self.rules.apply(&path, &lines) {
            Ok(findings) => findings,
            Err(e) => panic!("the built-in rules do not load: {e}"),
        };
        for f in findings {
            assert!(
                f.line >= 1 && (f.line as usize) <= lines.len(),
                "{path}: a finding on line {} of {}",
                f.line,
                lines.len()
            );
            assert_eq!(f.path, path);
        }
    }
}
