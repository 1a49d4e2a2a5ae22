//! Labelled truth for `fanscan eval`, in the formats labelled sets come in,
//! told apart by content:
//!
//! - fanscan's own CSV (`path,cwe,vulnerable[,lines]`, a header line first)
//!   or JSON (`{"cases": [{"path", "cwe", "vulnerable", "lines"}]}` or the
//!   bare array);
//! - the OWASP Benchmark's `expectedresults-*.csv` (first line
//!   `# test name, category, real vulnerability, cwe, ...`; a test
//!   `BenchmarkTest00001` is the file `…/BenchmarkTest00001.java`);
//! - the CASTLE benchmark's dataset JSON (`{"tests": [{"name":
//!   "CASTLE-22-1.c", "cwe": 22, "vulnerable": true, "lines": [26]}]}`; a
//!   test is the file of that name).
//!
//! Takes the file's text; gives the [`Truth`]: one [`Case`] per file and
//! CWE. Every problem names the file, the line and the fix.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;

use super::EvalError;
use crate::model::cwe::CweId;

/// The longest line range (`12-14`) a case may label.
const MAX_RANGE: u32 = 10_000;

/// Which format a truth file was in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum TruthFormat {
    FanscanCsv,
    FanscanJson,
    OwaspBenchmark,
    Castle,
}

impl fmt::Display for TruthFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::FanscanCsv => "fanscan CSV",
            Self::FanscanJson => "fanscan JSON",
            Self::OwaspBenchmark => "OWASP Benchmark expected results",
            Self::Castle => "CASTLE dataset",
        })
    }
}

/// How a case names its file.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum FileKey {
    /// A repo-relative path, compared whole (fanscan's formats).
    Path(String),
    /// A file name without its extension, in any directory (the OWASP
    /// Benchmark's test names).
    Stem(String),
    /// A file name, in any directory (CASTLE's test names).
    Name(String),
}

impl FileKey {
    /// Whether a finding's repo-relative path is this file (scoring looks
    /// cases up by the same rules through an index).
    #[cfg(test)]
    pub(crate) fn matches(&self, path: &str) -> bool {
        let path = normalize(path);
        match self {
            Self::Path(p) => *p == path,
            Self::Stem(s) => stem(file_name(&path)) == s,
            Self::Name(n) => file_name(&path) == n,
        }
    }
}

impl fmt::Display for FileKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Path(p) | Self::Name(p) => f.write_str(p),
            Self::Stem(s) => write!(f, "{s}.*"),
        }
    }
}

/// One labelled case: a file, a CWE, and whether the file has that weakness.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Case {
    /// How the truth names it (a path, a test name).
    pub id: String,
    pub file: FileKey,
    pub cwe: CweId,
    pub vulnerable: bool,
    /// The labelled lines (1-based, sorted, unique); empty: the whole file.
    pub lines: Vec<u32>,
}

/// A parsed truth file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Truth {
    /// The file as named on the command line.
    pub source: String,
    pub format: TruthFormat,
    /// In the file's order.
    pub cases: Vec<Case>,
}

/// Reads and parses the truth file at `path`.
pub(crate) fn load(path: &std::path::Path) -> Result<Truth, EvalError> {
    let source = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|error| EvalError::ReadTruth {
        path: source.clone(),
        error,
    })?;
    parse(&source, &text)
}

/// Parses a truth file's text, its format told by its content.
pub(crate) fn parse(source: &str, text: &str) -> Result<Truth, EvalError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let start = text.trim_start();
    let (format, cases) = if start.starts_with('{') || start.starts_with('[') {
        parse_json(source, text)?
    } else {
        let first = text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or_default();
        if first.starts_with('#') && first.to_ascii_lowercase().contains("test name") {
            (TruthFormat::OwaspBenchmark, parse_owasp(source, text)?)
        } else {
            (TruthFormat::FanscanCsv, parse_fanscan_csv(source, text)?)
        }
    };
    if cases.is_empty() {
        return Err(EvalError::Truth {
            place: source.to_string(),
            problem: format!("no cases in this {format} file: label at least one file"),
        });
    }
    Ok(Truth {
        source: source.to_string(),
        format,
        cases,
    })
}

/// `./a\b.rs` → `a/b.rs`: paths as the report writes them.
pub(crate) fn normalize(path: &str) -> String {
    let mut path = path.trim().replace('\\', "/");
    while let Some(rest) = path.strip_prefix("./") {
        path = rest.to_string();
    }
    path
}

/// The last component of a `/`-separated path.
pub(crate) fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// A file name without its extension (`a.tar.gz` → `a.tar`).
pub(crate) fn stem(name: &str) -> &str {
    match name.rfind('.') {
        Some(dot) if dot > 0 => &name[..dot],
        _ => name,
    }
}

/// Cases checked for duplicates as they are added: one case per file and
/// CWE, or the second would silently win.
struct Cases {
    source: String,
    cases: Vec<Case>,
    seen: BTreeMap<(FileKey, CweId), String>,
}

impl Cases {
    fn new(source: &str) -> Self {
        Self {
            source: source.to_string(),
            cases: Vec::new(),
            seen: BTreeMap::new(),
        }
    }

    fn push(&mut self, case: Case, place: String) -> Result<(), EvalError> {
        let key = (case.file.clone(), case.cwe);
        if let Some(first) = self.seen.get(&key) {
            return Err(EvalError::Truth {
                place,
                problem: format!(
                    "a second case for {} and {} (the first is at {first}): keep one case per file and CWE",
                    case.file, case.cwe
                ),
            });
        }
        self.seen.insert(key, place);
        self.cases.push(case);
        Ok(())
    }

    fn at(&self, line: usize) -> String {
        format!("{}:{line}", self.source)
    }
}

fn bad(place: String, problem: impl fmt::Display) -> EvalError {
    EvalError::Truth {
        place,
        problem: problem.to_string(),
    }
}

/// What is wrong with one field or line of a truth file; [`bad`] puts
/// where in front of it.
#[derive(Debug, thiserror::Error)]
enum Problem {
    #[error("line {0:?} is not a line number: write 12, 12;14 or 12-14")]
    NotALine(String),
    #[error("line range {0:?} must go upwards and span at most {MAX_RANGE} lines")]
    Range(String),
    #[error("line 0 is not a line: lines start at 1")]
    LineZero,
    #[error("the path is empty: give the file's path relative to the scanned root")]
    EmptyPath,
    #[error(
        "path {0:?} is not relative to the scanned root: write it as the report does (src/app.py)"
    )]
    NotRelative(String),
    #[error("a quoted field is not closed on this line: close it with \"")]
    OpenQuote,
    #[error("unknown column {0:?}: the header is path,cwe,vulnerable,lines (lines optional)")]
    UnknownColumn(String),
    #[error("column {0:?} appears twice in the header")]
    TwiceColumn(&'static str),
    #[error(
        "the header has no {0:?} column: the first line must be path,cwe,vulnerable,lines (lines optional)"
    )]
    MissingColumn(&'static str),
    #[error("cwe: {0}")]
    Cwe(#[from] crate::model::cwe::CweError),
}

fn parse_bool(text: &str) -> Option<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "true" | "yes" | "1" => Some(true),
        "false" | "no" | "0" => Some(false),
        _ => None,
    }
}

/// `12`, `12 14`, `12;14`, `12-14` (a range), separated by blanks, `;`,
/// `|` or `,`.
fn parse_lines(text: &str) -> Result<Vec<u32>, Problem> {
    let mut lines = Vec::new();
    for item in text
        .split([' ', ';', '|', ',', '\t'])
        .filter(|s| !s.is_empty())
    {
        let number = |s: &str| {
            s.parse::<u32>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| Problem::NotALine(s.to_string()))
        };
        match item.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (number(a)?, number(b)?);
                if a > b || b - a > MAX_RANGE {
                    return Err(Problem::Range(item.to_string()));
                }
                lines.extend(a..=b);
            }
            None => lines.push(number(item)?),
        }
    }
    lines.sort_unstable();
    lines.dedup();
    Ok(lines)
}

fn checked_lines(lines: Vec<u32>) -> Result<Vec<u32>, Problem> {
    if lines.contains(&0) {
        return Err(Problem::LineZero);
    }
    let mut lines = lines;
    lines.sort_unstable();
    lines.dedup();
    Ok(lines)
}

fn checked_path(path: &str) -> Result<String, Problem> {
    let path = normalize(path);
    if path.is_empty() {
        return Err(Problem::EmptyPath);
    }
    if path.starts_with('/') || path.split('/').any(|part| part == "..") {
        return Err(Problem::NotRelative(path));
    }
    Ok(path)
}

/// Splits one CSV line; fields may be quoted (`"a,b"`, `""` for a quote).
fn split_csv(line: &str) -> Result<Vec<String>, Problem> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if quoted {
            if c == '"' {
                if chars.peek() == Some(&'"') {
                    field.push('"');
                    chars.next();
                } else {
                    quoted = false;
                }
            } else {
                field.push(c);
            }
        } else if c == ',' {
            fields.push(field.trim().to_string());
            field.clear();
        } else if c == '"' && field.trim().is_empty() {
            field.clear();
            quoted = true;
        } else {
            field.push(c);
        }
    }
    if quoted {
        return Err(Problem::OpenQuote);
    }
    fields.push(field.trim().to_string());
    Ok(fields)
}

/// Which columns of fanscan's CSV are where.
struct Columns {
    path: usize,
    cwe: usize,
    vulnerable: usize,
    lines: Option<usize>,
    count: usize,
}

fn columns(fields: &[String]) -> Result<Columns, Problem> {
    let mut found: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, name) in fields.iter().enumerate() {
        let name = name.to_ascii_lowercase();
        let known = match name.as_str() {
            "path" | "file" => "path",
            "cwe" => "cwe",
            "vulnerable" => "vulnerable",
            "lines" | "line" => "lines",
            other => {
                return Err(Problem::UnknownColumn(other.to_string()));
            }
        };
        if found.insert(known, i).is_some() {
            return Err(Problem::TwiceColumn(known));
        }
    }
    let need = |name: &'static str| found.get(name).copied().ok_or(Problem::MissingColumn(name));
    Ok(Columns {
        path: need("path")?,
        cwe: need("cwe")?,
        vulnerable: need("vulnerable")?,
        lines: found.get("lines").copied(),
        count: fields.len(),
    })
}

fn parse_fanscan_csv(source: &str, text: &str) -> Result<Vec<Case>, EvalError> {
    let mut cases = Cases::new(source);
    let mut header: Option<Columns> = None;
    for (index, raw) in text.lines().enumerate() {
        let number = index + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields = split_csv(line).map_err(|p| bad(cases.at(number), p))?;
        let Some(cols) = &header else {
            header = Some(columns(&fields).map_err(|p| bad(cases.at(number), p))?);
            continue;
        };
        if fields.len() != cols.count {
            return Err(bad(
                cases.at(number),
                format!(
                    "{} fields where the header has {}: quote a field that holds a comma",
                    fields.len(),
                    cols.count
                ),
            ));
        }
        let at = |p: String| bad(cases.at(number), p);
        let path = checked_path(&fields[cols.path]).map_err(|p| at(p.to_string()))?;
        let cwe = CweId::parse(&fields[cols.cwe]).map_err(|e| at(format!("cwe: {e}")))?;
        let vulnerable = parse_bool(&fields[cols.vulnerable]).ok_or_else(|| {
            at(format!(
                "vulnerable is {:?}: write true or false",
                fields[cols.vulnerable]
            ))
        })?;
        let lines = match cols.lines {
            Some(i) => parse_lines(&fields[i]).map_err(|p| at(p.to_string()))?,
            None => Vec::new(),
        };
        let place = cases.at(number);
        cases.push(
            Case {
                id: path.clone(),
                file: FileKey::Path(path),
                cwe,
                vulnerable,
                lines,
            },
            place,
        )?;
    }
    Ok(cases.cases)
}

fn parse_owasp(source: &str, text: &str) -> Result<Vec<Case>, EvalError> {
    let mut cases = Cases::new(source);
    for (index, raw) in text.lines().enumerate() {
        let number = index + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = |p: String| bad(cases.at(number), p);
        let fields = split_csv(line).map_err(|p| at(p.to_string()))?;
        if fields.len() < 4 {
            return Err(at(format!(
                "{} fields where the OWASP Benchmark has 4 (test name, category, real vulnerability, cwe)",
                fields.len()
            )));
        }
        let name = fields[0].as_str();
        if name.is_empty() || name.contains(['/', '\\']) {
            return Err(at(format!(
                "test name {name:?} is not a file name such as BenchmarkTest00001"
            )));
        }
        let vulnerable = parse_bool(&fields[2]).ok_or_else(|| {
            at(format!(
                "real vulnerability is {:?}: write true or false",
                fields[2]
            ))
        })?;
        let cwe = CweId::parse(&fields[3]).map_err(|e| at(format!("cwe: {e}")))?;
        let place = cases.at(number);
        cases.push(
            Case {
                id: name.to_string(),
                file: FileKey::Stem(name.to_string()),
                cwe,
                vulnerable,
                lines: Vec::new(),
            },
            place,
        )?;
    }
    Ok(cases.cases)
}

/// A CWE in JSON: `89`, `"89"` or `"CWE-89"`.
#[derive(Deserialize)]
#[serde(untagged)]
enum JsonCwe {
    Number(u64),
    Text(String),
}

impl JsonCwe {
    fn id(&self) -> Result<CweId, Problem> {
        let text = match self {
            Self::Number(n) => n.to_string(),
            Self::Text(t) => t.clone(),
        };
        Ok(CweId::parse(&text)?)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonCase {
    path: String,
    cwe: JsonCwe,
    vulnerable: bool,
    #[serde(default)]
    lines: Vec<u32>,
}

/// One CASTLE test; the dataset's other keys (code, description, metrics)
/// are not needed.
#[derive(Deserialize)]
struct CastleTest {
    name: String,
    cwe: JsonCwe,
    vulnerable: bool,
    #[serde(default)]
    lines: Vec<u32>,
}

#[derive(Deserialize)]
struct CastleFile {
    tests: Vec<CastleTest>,
}

fn json_error(source: &str, error: &serde_json::Error, fix: &str) -> EvalError {
    bad(
        format!("{source}:{}:{}", error.line(), error.column()),
        format!("{}: {fix}", super::json_message(error)),
    )
}

fn parse_json(source: &str, text: &str) -> Result<(TruthFormat, Vec<Case>), EvalError> {
    // Told apart by their top-level shape, then read strictly (fanscan's
    // own) or leniently (CASTLE's, which carries much else).
    let value: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| json_error(source, &e, "the file is not valid JSON"))?;
    let mut cases = Cases::new(source);
    if value.get("tests").is_some() {
        let file: CastleFile = serde_json::from_str(text).map_err(|e| {
            json_error(
                source,
                &e,
                "each CASTLE test needs name, cwe, vulnerable and lines",
            )
        })?;
        for (i, test) in file.tests.into_iter().enumerate() {
            let place = format!("{source}: tests[{i}] ({})", test.name);
            let at = |p: String| bad(place.clone(), p);
            let name = test.name.trim();
            if name.is_empty() || name.contains(['/', '\\']) {
                return Err(at(format!(
                    "name {name:?} is not a file name such as CASTLE-22-1.c"
                )));
            }
            let cwe = test.cwe.id().map_err(|p| at(p.to_string()))?;
            let lines = checked_lines(test.lines).map_err(|p| at(p.to_string()))?;
            cases.push(
                Case {
                    id: name.to_string(),
                    file: FileKey::Name(name.to_string()),
                    cwe,
                    vulnerable: test.vulnerable,
                    lines,
                },
                place.clone(),
            )?;
        }
        return Ok((TruthFormat::Castle, cases.cases));
    }
    if !(value.is_array() || value.get("cases").is_some()) {
        return Err(bad(
            source.to_string(),
            "a JSON truth file is fanscan's ({\"cases\": [{\"path\", \"cwe\", \"vulnerable\", \"lines\"}]} or the bare array) or CASTLE's dataset ({\"tests\": [...]})",
        ));
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Wrapped {
        cases: Vec<JsonCase>,
    }
    let fix = "each case is {\"path\", \"cwe\", \"vulnerable\", \"lines\"} (lines optional)";
    let list = if value.is_array() {
        serde_json::from_str::<Vec<JsonCase>>(text)
    } else {
        serde_json::from_str::<Wrapped>(text).map(|w| w.cases)
    }
    .map_err(|e| json_error(source, &e, fix))?;
    for (i, case) in list.into_iter().enumerate() {
        let place = format!("{source}: cases[{i}]");
        let at = |p: String| bad(place.clone(), p);
        let path = checked_path(&case.path).map_err(|p| at(p.to_string()))?;
        let cwe = case.cwe.id().map_err(|p| at(p.to_string()))?;
        let lines = checked_lines(case.lines).map_err(|p| at(p.to_string()))?;
        cases.push(
            Case {
                id: path.clone(),
                file: FileKey::Path(path),
                cwe,
                vulnerable: case.vulnerable,
                lines,
            },
            place.clone(),
        )?;
    }
    Ok((TruthFormat::FanscanJson, cases.cases))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> (String, String) {
        let path = format!("{}/tests/fixtures/eval/{name}", env!("CARGO_MANIFEST_DIR"));
        (name.to_string(), std::fs::read_to_string(path).unwrap())
    }

    fn cwe(n: u32) -> CweId {
        CweId::from_number(n).unwrap()
    }

    fn error(text: &str) -> String {
        parse("t", text).unwrap_err().to_string()
    }

    #[test]
    fn fanscans_csv_is_read_with_its_lines() {
        let (name, text) = fixture("truth.csv");
        let truth = parse(&name, &text).unwrap();
        assert_eq!(truth.format, TruthFormat::FanscanCsv);
        assert_eq!(truth.cases.len(), 6);
        let first = &truth.cases[0];
        assert_eq!(first.file, FileKey::Path("app/db.py".into()));
        assert_eq!(first.cwe, cwe(89));
        assert!(first.vulnerable);
        assert_eq!(first.lines, vec![2]);
        let safe = truth.cases.iter().find(|c| !c.vulnerable).unwrap();
        assert!(safe.lines.is_empty());
        let ranged = truth.cases.iter().find(|c| c.lines.len() > 1).unwrap();
        assert_eq!(ranged.lines, vec![4, 5, 6]);
    }

    #[test]
    fn fanscans_json_is_read_wrapped_or_bare() {
        let (name, text) = fixture("truth.json");
        let truth = parse(&name, &text).unwrap();
        assert_eq!(truth.format, TruthFormat::FanscanJson);
        assert_eq!(truth.cases.len(), 4);
        assert_eq!(truth.cases[0].cwe, cwe(78));
        assert_eq!(
            truth.cases[1].cwe,
            cwe(89),
            "\"89\" and \"CWE-89\" both read"
        );
        let bare = r#"[{"path": "./a/b.py", "cwe": 89, "vulnerable": false}]"#;
        let truth = parse("t", bare).unwrap();
        assert_eq!(truth.cases[0].file, FileKey::Path("a/b.py".into()));
    }

    #[test]
    fn the_owasp_benchmarks_expected_results_are_read_by_test_name() {
        let (name, text) = fixture("expectedresults-1.2.csv");
        let truth = parse(&name, &text).unwrap();
        assert_eq!(truth.format, TruthFormat::OwaspBenchmark);
        assert_eq!(truth.cases.len(), 8);
        let first = &truth.cases[0];
        assert_eq!(first.id, "BenchmarkTest00001");
        assert_eq!(first.cwe, cwe(22));
        assert!(first.vulnerable);
        assert!(
            first
                .file
                .matches("src/main/java/org/owasp/benchmark/testcode/BenchmarkTest00001.java")
        );
        assert!(!first.file.matches("src/BenchmarkTest000010.java"));
        assert!(!first.file.matches("src/BenchmarkTest00002.java"));
    }

    #[test]
    fn the_castle_dataset_is_read_by_file_name_with_its_lines() {
        let (name, text) = fixture("castle.json");
        let truth = parse(&name, &text).unwrap();
        assert_eq!(truth.format, TruthFormat::Castle);
        assert_eq!(truth.cases.len(), 4);
        let first = &truth.cases[0];
        assert_eq!(first.id, "CASTLE-22-1.c");
        assert_eq!(first.cwe, cwe(22));
        assert_eq!(first.lines, vec![19]);
        assert!(first.file.matches("datasets/CASTLE-C250/CASTLE-22-1.c"));
        assert!(first.file.matches("CASTLE-22-1.c"));
        assert!(!first.file.matches("x/CASTLE-22-10.c"));
    }

    #[test]
    fn paths_match_whole_and_normalized() {
        let key = FileKey::Path("src/a.py".into());
        assert!(key.matches("src/a.py"));
        assert!(key.matches("./src/a.py"));
        assert!(key.matches("src\\a.py"));
        assert!(!key.matches("lib/src/a.py"));
        assert!(!key.matches("src/a.pyc"));
    }

    #[test]
    fn csv_errors_name_the_line_and_the_fix() {
        let header = "path,cwe,vulnerable,lines\n";
        let cases = [
            (
                format!("{header}a.py,SQL,true,3\n"),
                "t:2: cwe: \"SQL\" is not a CWE id: write it as CWE-89 or 89",
            ),
            (
                format!("{header}a.py,89,maybe,3\n"),
                "t:2: vulnerable is \"maybe\": write true or false",
            ),
            (
                format!("{header}a.py,89,true,x\n"),
                "t:2: line \"x\" is not a line number",
            ),
            (
                format!("{header}a.py,89,true,9-3\n"),
                "t:2: line range \"9-3\" must go upwards",
            ),
            (
                format!("{header}a.py,89,true\n"),
                "t:2: 3 fields where the header has 4",
            ),
            (
                format!("{header}/etc/a.py,89,true,\n"),
                "t:2: path \"/etc/a.py\" is not relative",
            ),
            (
                format!("{header}../a.py,89,true,\n"),
                "t:2: path \"../a.py\" is not relative to the scanned root",
            ),
            (
                format!("{header}a.py,89,true,1\n\na.py,CWE-89,false,\n"),
                "t:4: a second case for a.py and CWE-89 (the first is at t:2)",
            ),
            (
                format!("{header}\"a.py,89,true,1\n"),
                "t:2: a quoted field is not closed",
            ),
            (
                "path,cwe,vuln\na.py,89,true\n".into(),
                "t:1: unknown column \"vuln\"",
            ),
            (
                "path,cwe\na.py,89\n".into(),
                "t:1: the header has no \"vulnerable\" column",
            ),
            (header.into(), "t: no cases in this fanscan CSV file"),
        ];
        for (text, expected) in cases {
            let error = error(&text);
            assert!(
                error.starts_with(expected),
                "{error:?} does not start with {expected:?}"
            );
        }
    }

    #[test]
    fn csv_fields_may_be_quoted_and_comments_skipped() {
        let text =
            "# my set\npath,vulnerable,cwe,lines\n\"dir, with comma/a.py\",yes,CWE-79,\"3,4\"\n";
        let truth = parse("t", text).unwrap();
        let case = &truth.cases[0];
        assert_eq!(case.file, FileKey::Path("dir, with comma/a.py".into()));
        assert_eq!(case.lines, vec![3, 4]);
        assert!(case.vulnerable);
    }

    #[test]
    fn owasp_errors_name_the_line() {
        let head = "# test name, category, real vulnerability, cwe, Benchmark version: 1.2\n";
        let cases = [
            (
                format!("{head}BenchmarkTest00001,sqli,true\n"),
                "t:2: 3 fields where the OWASP Benchmark has 4",
            ),
            (
                format!("{head}BenchmarkTest00001,sqli,sure,89\n"),
                "t:2: real vulnerability is \"sure\"",
            ),
            (
                format!("{head}BenchmarkTest00001,sqli,true,sqli\n"),
                "t:2: cwe: \"sqli\" is not a CWE id",
            ),
            (
                format!("{head}a/b,sqli,true,89\n"),
                "t:2: test name \"a/b\" is not a file name",
            ),
        ];
        for (text, expected) in cases {
            let error = error(&text);
            assert!(
                error.starts_with(expected),
                "{error:?} does not start with {expected:?}"
            );
        }
    }

    #[test]
    fn json_errors_name_the_position_or_the_entry() {
        let cases = [
            (
                "{\"cases\": [{\"path\": \"a.py\", \"cwe\": 89}]}",
                "t:1:",
                "missing field `vulnerable`",
            ),
            (
                "{\"cases\": [{\"path\": \"a.py\", \"cwe\": 89, \"vulnerable\": true, \"line\": 3}]}",
                "t:1:",
                "unknown field `line`",
            ),
            (
                "{\"cases\": [{\"path\": \"a.py\", \"cwe\": \"SQL\", \"vulnerable\": true}]}",
                "t: cases[0]:",
                "cwe: \"SQL\" is not a CWE id",
            ),
            (
                "{\"cases\": [{\"path\": \"a.py\", \"cwe\": 89, \"vulnerable\": true, \"lines\": [0]}]}",
                "t: cases[0]:",
                "line 0 is not a line",
            ),
            (
                "{\"tests\": [{\"name\": \"CASTLE-1-1.c\", \"cwe\": 22}]}",
                "t:1:",
                "missing field `vulnerable`",
            ),
            (
                "{\"tests\": [{\"name\": \"CASTLE-1-1.c\", \"cwe\": 0, \"vulnerable\": true}]}",
                "t: tests[0] (CASTLE-1-1.c):",
                "\"0\" is not a CWE id",
            ),
            ("{\"findings\": []}", "t:", "a JSON truth file is fanscan's"),
            (
                "{\"cases\": [\n  {\"path\": \"a.py\",}\n]}",
                "t:2:",
                "the file is not valid JSON",
            ),
            (
                "{\"cases\": []}",
                "t:",
                "no cases in this fanscan JSON file",
            ),
        ];
        for (text, place, problem) in cases {
            let error = error(text);
            assert!(
                error.starts_with(place),
                "{error:?} does not start with {place:?}"
            );
            assert!(error.contains(problem), "{error:?} lacks {problem:?}");
        }
    }

    #[test]
    fn line_lists_take_the_forms_people_write() {
        assert_eq!(parse_lines("").unwrap(), Vec::<u32>::new());
        assert_eq!(parse_lines("12").unwrap(), vec![12]);
        assert_eq!(parse_lines("14;12 12|13").unwrap(), vec![12, 13, 14]);
        assert_eq!(parse_lines("3-5,9").unwrap(), vec![3, 4, 5, 9]);
        assert!(parse_lines("0").is_err());
        assert!(parse_lines("1-20000").is_err());
    }
}
