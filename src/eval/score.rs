//! Scoring one run against the truth: which findings match which cases,
//! each case's outcome, and the counts and rates per CWE and overall.
//!
//! A finding matches a case when it is in the case's file, its CWE is the
//! case's or a documented relative (or, with `--match location`, whatever
//! its CWE), and, for a vulnerable case with labelled lines, one of the
//! lines it cites is within the slack of a labelled line. A vulnerable case
//! with a match is a true positive, without one a false negative; a safe
//! case with a match (anywhere in its file: a safe file has no right line
//! to flag) is a false positive, without one a true negative. Findings that
//! match no case are counted apart, by why.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use super::report::{Claim, Listed, Prediction, RunView};
use super::truth::{Case, FileKey, Truth, file_name, stem};
use crate::model::cwe::{CweId, CweTable};

/// Which findings count as the run's predictions.
/// (`fanscan eval --count`; its help says each in full.)
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Count {
    /// What the gate fails on.
    #[default]
    Open,
    /// Before the suppression, baseline and skeptic filters.
    Verified,
    /// Unverified claims too.
    All,
}

impl Count {
    /// Whether a finding of that list is one of the run's predictions.
    pub(crate) fn includes(self, listed: Listed) -> bool {
        match listed {
            Listed::Open => true,
            Listed::Suppressed | Listed::Baselined | Listed::Refuted | Listed::Unstable => {
                matches!(self, Self::Verified | Self::All)
            }
            Listed::Unverified => matches!(self, Self::All),
        }
    }

    /// What is counted, for the output.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Self::Open => "open findings (verified; not suppressed, baselined or refuted)",
            Self::Verified => "verified findings, suppressed, baselined and refuted ones included",
            Self::All => "every finding, unverified ones included",
        }
    }
}

/// What a finding must share with a case to match it.
/// (`fanscan eval --match`; its help says each in full.)
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchBy {
    /// Location and CWE (or a relative).
    #[default]
    Cwe,
    /// Location only.
    Location,
}

/// How a run is scored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct Method {
    pub count: Count,
    #[serde(rename = "match")]
    pub match_by: MatchBy,
    pub line_slack: u32,
}

/// A case's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Outcome {
    Tp,
    Fp,
    Fn,
    Tn,
}

/// Confusion counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub(crate) struct Counts {
    pub tp: u64,
    pub fp: u64,
    #[serde(rename = "fn")]
    pub fn_: u64,
    pub tn: u64,
}

impl Counts {
    fn add(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Tp => self.tp += 1,
            Outcome::Fp => self.fp += 1,
            Outcome::Fn => self.fn_ += 1,
            Outcome::Tn => self.tn += 1,
        }
    }

    fn sum(&mut self, other: Counts) {
        self.tp += other.tp;
        self.fp += other.fp;
        self.fn_ += other.fn_;
        self.tn += other.tn;
    }
}

/// Rates; `None` where there is nothing to divide by (no vulnerable case
/// for TPR, no safe case for FPR, no positive for precision).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub(crate) struct Rates {
    #[serde(serialize_with = "rounded")]
    pub tpr: Option<f64>,
    #[serde(serialize_with = "rounded")]
    pub fpr: Option<f64>,
    #[serde(serialize_with = "rounded")]
    pub precision: Option<f64>,
    #[serde(serialize_with = "rounded")]
    pub recall: Option<f64>,
    #[serde(serialize_with = "rounded")]
    pub f1: Option<f64>,
    /// TPR − FPR (the OWASP Benchmark's score, Youden's J).
    #[serde(serialize_with = "rounded")]
    pub score: Option<f64>,
}

fn round_to(value: Option<f64>, places: i32) -> Option<f64> {
    let scale = 10f64.powi(places);
    value.map(|v| (v * scale).round() / scale)
}

/// A rate to 4 decimals: what a reader compares, and no float noise.
pub(crate) fn rounded<S: serde::Serializer>(value: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    round_to(*value, 4).serialize(s)
}

/// Dollars to 6 decimals (a millionth of a dollar).
pub(crate) fn rounded_money<S: serde::Serializer>(
    value: &Option<f64>,
    s: S,
) -> Result<S::Ok, S::Error> {
    round_to(*value, 6).serialize(s)
}

fn ratio(a: u64, b: u64) -> Option<f64> {
    (b > 0).then(|| a as f64 / b as f64)
}

impl Rates {
    fn of(c: Counts) -> Self {
        let tpr = ratio(c.tp, c.tp + c.fn_);
        let fpr = ratio(c.fp, c.fp + c.tn);
        Self {
            tpr,
            fpr,
            precision: ratio(c.tp, c.tp + c.fp),
            recall: tpr,
            f1: ratio(2 * c.tp, 2 * c.tp + c.fp + c.fn_),
            score: tpr.zip(fpr).map(|(t, f)| t - f),
        }
    }

    /// The mean of each rate over the classes that have it.
    fn macro_average(all: &[Rates]) -> Self {
        let mean = |pick: fn(&Rates) -> Option<f64>| {
            let values: Vec<f64> = all.iter().filter_map(pick).collect();
            (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
        };
        Self {
            tpr: mean(|r| r.tpr),
            fpr: mean(|r| r.fpr),
            precision: mean(|r| r.precision),
            recall: mean(|r| r.recall),
            f1: mean(|r| r.f1),
            score: mean(|r| r.score),
        }
    }
}

/// The findings of a run by what became of them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub(crate) struct Tally {
    /// Findings counted as predictions (see [`Count`]).
    pub scored: u64,
    /// Matched at least one case.
    pub matched: u64,
    /// In a labelled file, but their CWE fits no case of it.
    pub other_cwe: u64,
    /// In a labelled file with a fitting CWE, but not near a labelled line.
    pub off_lines: u64,
    /// In a file no case labels.
    pub unlabelled: u64,
    /// Without a CWE (on the finding or its rule).
    pub without_cwe: u64,
    /// With a `cwe` that is not a CWE id.
    pub unreadable_cwe: u64,
}

/// One case's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CaseResult {
    /// Index into the truth's cases.
    pub case: usize,
    pub outcome: Outcome,
    /// The findings that matched it (`path:line rule`).
    pub matched_by: Vec<String>,
}

/// One CWE class's score.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ClassScore {
    pub cwe: CweId,
    pub vulnerable: u64,
    pub safe: u64,
    pub counts: Counts,
    pub rates: Rates,
}

/// A run's score.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct RunScore {
    /// By CWE id.
    pub per_cwe: Vec<ClassScore>,
    /// Summed over the classes.
    pub counts: Counts,
    /// The mean of the classes' rates (the headline).
    pub macro_rates: Rates,
    /// The rates of the summed counts.
    pub micro_rates: Rates,
    pub tally: Tally,
    /// In the truth's order.
    pub cases: Vec<CaseResult>,
    /// Cases whose file the run did not review (`None`: the report does
    /// not say what it reviewed).
    pub not_reviewed: Option<u64>,
}

/// Where each file's cases are, by how the truth names files.
pub(super) struct Index {
    by_path: HashMap<String, Vec<usize>>,
    by_name: HashMap<String, Vec<usize>>,
    by_stem: HashMap<String, Vec<usize>>,
}

impl Index {
    pub(super) fn new(cases: &[Case]) -> Self {
        let mut index = Self {
            by_path: HashMap::new(),
            by_name: HashMap::new(),
            by_stem: HashMap::new(),
        };
        for (i, case) in cases.iter().enumerate() {
            let (map, key) = match &case.file {
                FileKey::Path(p) => (&mut index.by_path, p),
                FileKey::Name(n) => (&mut index.by_name, n),
                FileKey::Stem(s) => (&mut index.by_stem, s),
            };
            map.entry(key.clone()).or_default().push(i);
        }
        index
    }

    /// The cases of the file at a normalized repo-relative path.
    pub(super) fn cases_of(&self, path: &str) -> Vec<usize> {
        let name = file_name(path);
        let mut found: Vec<usize> = [
            self.by_path.get(path),
            self.by_name.get(name),
            self.by_stem.get(stem(name)),
        ]
        .into_iter()
        .flatten()
        .flatten()
        .copied()
        .collect();
        found.sort_unstable();
        found.dedup();
        found
    }
}

/// Whether a finding citing `line..=end` is within `slack` of a labelled line.
fn near(p: &Prediction, lines: &[u32], slack: u32) -> bool {
    lines
        .iter()
        .any(|&l| l.saturating_add(slack) >= p.line && l <= p.end_line.saturating_add(slack))
}

/// Scores one run.
pub(crate) fn score(truth: &Truth, run: &RunView, method: &Method, table: &CweTable) -> RunScore {
    let cases = &truth.cases;
    let (matched, tally) = match_predictions(cases, run, method, table);
    let (classes, results) = outcomes(cases, matched);
    let mut per_cwe: Vec<ClassScore> = classes.into_values().collect();
    let mut counts = Counts::default();
    for class in &mut per_cwe {
        class.rates = Rates::of(class.counts);
        counts.sum(class.counts);
    }
    let rates: Vec<Rates> = per_cwe.iter().map(|c| c.rates).collect();
    RunScore {
        macro_rates: Rates::macro_average(&rates),
        micro_rates: Rates::of(counts),
        per_cwe,
        counts,
        tally,
        cases: results,
        not_reviewed: run.reviewed.as_ref().map(|r| not_reviewed(cases, r)),
    }
}

/// Matches every counted prediction against the cases of its file: the
/// labels of the predictions that matched each case, and the tally of
/// those that matched none (and why).
fn match_predictions(
    cases: &[Case],
    run: &RunView,
    method: &Method,
    table: &CweTable,
) -> (Vec<Vec<String>>, Tally) {
    let index = Index::new(cases);
    let mut matched: Vec<Vec<String>> = vec![Vec::new(); cases.len()];
    let mut tally = Tally::default();
    for p in run
        .predictions
        .iter()
        .filter(|p| method.count.includes(p.listed))
    {
        tally.scored += 1;
        let claimed = match (method.match_by, &p.claim) {
            (MatchBy::Location, _) => None,
            (MatchBy::Cwe, Claim::Cwes(ids)) => Some(ids),
            (MatchBy::Cwe, Claim::None) => {
                tally.without_cwe += 1;
                continue;
            }
            (MatchBy::Cwe, Claim::Unreadable(_)) => {
                tally.unreadable_cwe += 1;
                continue;
            }
        };
        let in_file = index.cases_of(&p.path);
        if in_file.is_empty() {
            tally.unlabelled += 1;
            continue;
        }
        let (mut fits, mut hit) = (false, false);
        for i in in_file {
            let case = &cases[i];
            if let Some(ids) = claimed
                && !ids.iter().any(|&id| table.same_or_related(id, case.cwe))
            {
                continue;
            }
            fits = true;
            if case.vulnerable && !case.lines.is_empty() && !near(p, &case.lines, method.line_slack)
            {
                continue;
            }
            hit = true;
            matched[i].push(p.label());
        }
        match (hit, fits) {
            (true, _) => tally.matched += 1,
            (false, true) => tally.off_lines += 1,
            (false, false) => tally.other_cwe += 1,
        }
    }
    (matched, tally)
}

/// Each case's outcome, and the cases summed by CWE class (rates not yet
/// computed).
fn outcomes(
    cases: &[Case],
    matched: Vec<Vec<String>>,
) -> (BTreeMap<CweId, ClassScore>, Vec<CaseResult>) {
    let mut classes: BTreeMap<CweId, ClassScore> = BTreeMap::new();
    let mut results = Vec::with_capacity(cases.len());
    for (i, (case, by)) in cases.iter().zip(matched).enumerate() {
        let outcome = match (case.vulnerable, by.is_empty()) {
            (true, false) => Outcome::Tp,
            (true, true) => Outcome::Fn,
            (false, false) => Outcome::Fp,
            (false, true) => Outcome::Tn,
        };
        let class = classes.entry(case.cwe).or_insert_with(|| ClassScore {
            cwe: case.cwe,
            vulnerable: 0,
            safe: 0,
            counts: Counts::default(),
            rates: Rates::default(),
        });
        if case.vulnerable {
            class.vulnerable += 1;
        } else {
            class.safe += 1;
        }
        class.counts.add(outcome);
        results.push(CaseResult {
            case: i,
            outcome,
            matched_by: by,
        });
    }
    (classes, results)
}

/// How many cases name a file that is not among the reviewed ones.
fn not_reviewed(cases: &[Case], reviewed: &[String]) -> u64 {
    let paths: BTreeSet<&str> = reviewed.iter().map(String::as_str).collect();
    let names: BTreeSet<&str> = reviewed.iter().map(|p| file_name(p)).collect();
    let stems: BTreeSet<&str> = names.iter().map(|n| stem(n)).collect();
    let seen = |case: &Case| match &case.file {
        FileKey::Path(p) => paths.contains(p.as_str()),
        FileKey::Name(n) => names.contains(n.as_str()),
        FileKey::Stem(s) => stems.contains(s.as_str()),
    };
    cases.iter().filter(|c| !seen(c)).count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::report::Usage;
    use crate::eval::truth::TruthFormat;

    fn cwe(n: u32) -> CweId {
        CweId::from_number(n).unwrap()
    }

    fn case(path: &str, n: u32, vulnerable: bool, lines: &[u32]) -> Case {
        Case {
            id: path.into(),
            file: FileKey::Path(path.into()),
            cwe: cwe(n),
            vulnerable,
            lines: lines.to_vec(),
        }
    }

    fn found(path: &str, line: u32, cwes: &[u32], listed: Listed) -> Prediction {
        Prediction {
            path: path.into(),
            line,
            end_line: line,
            rule: None,
            claim: if cwes.is_empty() {
                Claim::None
            } else {
                Claim::Cwes(cwes.iter().map(|&n| cwe(n)).collect())
            },
            listed,
            severity: None,
        }
    }

    fn truth(cases: Vec<Case>) -> Truth {
        Truth {
            source: "t".into(),
            format: TruthFormat::FanscanCsv,
            cases,
        }
    }

    fn run(predictions: Vec<Prediction>) -> RunView {
        RunView {
            source: "r".into(),
            provider: None,
            model: None,
            engine: None,
            complete: None,
            predictions,
            reviewed: None,
            usage: Usage::default(),
        }
    }

    const OPEN: Method = Method {
        count: Count::Open,
        match_by: MatchBy::Cwe,
        line_slack: 3,
    };

    fn outcomes(score: &RunScore) -> Vec<Outcome> {
        score.cases.iter().map(|c| c.outcome).collect()
    }

    fn table() -> &'static CweTable {
        CweTable::builtin().unwrap()
    }

    #[test]
    fn each_case_gets_its_outcome() {
        let t = truth(vec![
            case("a.py", 89, true, &[]),
            case("b.py", 89, true, &[]),
            case("c.py", 89, false, &[]),
            case("d.py", 89, false, &[]),
        ]);
        let r = run(vec![
            found("a.py", 2, &[89], Listed::Open),
            found("c.py", 9, &[89], Listed::Open),
        ]);
        let s = score(&t, &r, &OPEN, table());
        assert_eq!(
            outcomes(&s),
            [Outcome::Tp, Outcome::Fn, Outcome::Fp, Outcome::Tn]
        );
        assert_eq!(s.cases[0].matched_by, ["a.py:2"]);
        assert_eq!(
            s.counts,
            Counts {
                tp: 1,
                fp: 1,
                fn_: 1,
                tn: 1
            }
        );
        let r = s.per_cwe[0].rates;
        assert_eq!(r.tpr, Some(0.5));
        assert_eq!(r.fpr, Some(0.5));
        assert_eq!(r.precision, Some(0.5));
        assert_eq!(r.f1, Some(0.5));
        assert_eq!(r.score, Some(0.0));
    }

    #[test]
    fn a_cwe_matches_itself_and_its_documented_relatives_only() {
        let t = truth(vec![
            case("h.py", 328, true, &[]),
            case("x.py", 89, true, &[]),
            case("y.java", 330, true, &[]),
        ]);
        let r = run(vec![
            found("h.py", 1, &[327], Listed::Open),
            found("x.py", 1, &[79], Listed::Open),
            found("y.java", 1, &[338], Listed::Open),
        ]);
        let s = score(&t, &r, &OPEN, table());
        assert_eq!(outcomes(&s), [Outcome::Tp, Outcome::Fn, Outcome::Tp]);
        assert_eq!(s.tally.other_cwe, 1);
        assert_eq!(s.tally.matched, 2);
    }

    #[test]
    fn labelled_lines_are_matched_within_the_slack() {
        let t = truth(vec![case("a.c", 787, true, &[20])]);
        let within = |line: u32, end: u32, slack: u32| {
            let mut p = found("a.c", line, &[787], Listed::Open);
            p.end_line = end;
            let method = Method {
                line_slack: slack,
                ..OPEN
            };
            score(&t, &run(vec![p]), &method, table()).cases[0].outcome == Outcome::Tp
        };
        assert!(within(20, 20, 0));
        assert!(within(17, 17, 3));
        assert!(within(23, 23, 3));
        assert!(!within(16, 16, 3));
        assert!(!within(24, 24, 3));
        assert!(!within(21, 21, 0));
        // A span covering the line, or ending within the slack before it.
        assert!(within(10, 25, 0));
        assert!(within(10, 17, 3));
        assert!(!within(10, 16, 3));
        let off = score(
            &t,
            &run(vec![found("a.c", 90, &[787], Listed::Open)]),
            &OPEN,
            table(),
        );
        assert_eq!(off.tally.off_lines, 1);
        assert_eq!(off.cases[0].outcome, Outcome::Fn);
    }

    #[test]
    fn a_safe_case_is_a_false_alarm_wherever_its_file_is_flagged() {
        let t = truth(vec![case("s.c", 787, false, &[20])]);
        let s = score(
            &t,
            &run(vec![found("s.c", 90, &[787], Listed::Open)]),
            &OPEN,
            table(),
        );
        assert_eq!(outcomes(&s), [Outcome::Fp]);
    }

    #[test]
    fn findings_that_match_nothing_are_counted_apart_by_why() {
        let t = truth(vec![case("a.py", 89, true, &[5])]);
        let r = run(vec![
            found("a.py", 5, &[89], Listed::Open),
            found("a.py", 5, &[], Listed::Open),
            Prediction {
                claim: Claim::Unreadable("sqli".into()),
                ..found("a.py", 5, &[], Listed::Open)
            },
            found("other.py", 1, &[89], Listed::Open),
            found("a.py", 5, &[78], Listed::Open),
            found("a.py", 40, &[89], Listed::Open),
        ]);
        let s = score(&t, &r, &OPEN, table());
        assert_eq!(
            s.tally,
            Tally {
                scored: 6,
                matched: 1,
                other_cwe: 1,
                off_lines: 1,
                unlabelled: 1,
                without_cwe: 1,
                unreadable_cwe: 1,
            }
        );
    }

    #[test]
    fn location_matching_ignores_the_cwe() {
        let t = truth(vec![
            case("a.py", 89, true, &[5]),
            case("b.py", 89, false, &[]),
        ]);
        let r = run(vec![
            found("a.py", 6, &[], Listed::Open),
            found("b.py", 1, &[79], Listed::Open),
        ]);
        let method = Method {
            match_by: MatchBy::Location,
            ..OPEN
        };
        let s = score(&t, &r, &method, table());
        assert_eq!(outcomes(&s), [Outcome::Tp, Outcome::Fp]);
        assert_eq!(s.tally.without_cwe, 0);
    }

    #[test]
    fn the_count_policy_picks_the_lists() {
        let t = truth(vec![
            case("o.py", 89, true, &[]),
            case("s.py", 89, true, &[]),
            case("b.py", 89, true, &[]),
            case("r.py", 89, true, &[]),
            case("u.py", 89, true, &[]),
        ]);
        let r = run(vec![
            found("o.py", 1, &[89], Listed::Open),
            found("s.py", 1, &[89], Listed::Suppressed),
            found("b.py", 1, &[89], Listed::Baselined),
            found("r.py", 1, &[89], Listed::Refuted),
            found("u.py", 1, &[89], Listed::Unverified),
        ]);
        let tp = |count| {
            let method = Method { count, ..OPEN };
            score(&t, &r, &method, table()).counts.tp
        };
        assert_eq!(tp(Count::Open), 1);
        assert_eq!(tp(Count::Verified), 4);
        assert_eq!(tp(Count::All), 5);
    }

    #[test]
    fn the_overall_rates_are_the_mean_of_the_classes() {
        // CWE-89: 2 of 2 found, 0 of 2 safe flagged. CWE-79: 0 of 2
        // found, 1 of 1 safe flagged. No safe CWE-78 case: no FPR there.
        let t = truth(vec![
            case("a", 89, true, &[]),
            case("b", 89, true, &[]),
            case("c", 89, false, &[]),
            case("d", 89, false, &[]),
            case("e", 79, true, &[]),
            case("f", 79, true, &[]),
            case("g", 79, false, &[]),
            case("h", 78, true, &[]),
        ]);
        let r = run(vec![
            found("a", 1, &[89], Listed::Open),
            found("b", 1, &[89], Listed::Open),
            found("g", 1, &[79], Listed::Open),
            found("h", 1, &[78], Listed::Open),
        ]);
        let s = score(&t, &r, &OPEN, table());
        let classes: Vec<u32> = s.per_cwe.iter().map(|c| c.cwe.number()).collect();
        assert_eq!(classes, [78, 79, 89]);
        let m = s.macro_rates;
        assert_eq!(m.tpr, Some((1.0 + 0.0 + 1.0) / 3.0));
        assert_eq!(m.fpr, Some((1.0 + 0.0) / 2.0));
        assert_eq!(m.score, Some((-1.0 + 1.0) / 2.0), "CWE-78 has no score");
        assert_eq!(m.precision, Some((1.0 + 0.0 + 1.0) / 3.0));
        assert_eq!(s.micro_rates.tpr, Some(3.0 / 5.0));
        assert_eq!(s.per_cwe[0].rates.fpr, None);
        assert_eq!(s.per_cwe[1].rates.f1, Some(0.0));
    }

    #[test]
    fn benchmark_names_match_in_any_directory() {
        let t = truth(vec![
            Case {
                id: "BenchmarkTest00001".into(),
                file: FileKey::Stem("BenchmarkTest00001".into()),
                cwe: cwe(22),
                vulnerable: true,
                lines: vec![],
            },
            Case {
                id: "CASTLE-22-1.c".into(),
                file: FileKey::Name("CASTLE-22-1.c".into()),
                cwe: cwe(22),
                vulnerable: true,
                lines: vec![19],
            },
        ]);
        let r = run(vec![
            found(
                "src/testcode/BenchmarkTest00001.java",
                50,
                &[22],
                Listed::Open,
            ),
            found(
                "datasets/CASTLE-C250/CASTLE-22-1.c",
                18,
                &[23],
                Listed::Open,
            ),
        ]);
        let s = score(&t, &r, &OPEN, table());
        assert_eq!(outcomes(&s), [Outcome::Tp, Outcome::Tp]);
    }

    #[test]
    fn cases_in_files_the_run_did_not_review_are_counted() {
        let t = truth(vec![
            case("a.py", 89, true, &[]),
            case("b.py", 89, true, &[]),
        ]);
        let mut r = run(vec![]);
        r.reviewed = Some(vec!["a.py".into()]);
        assert_eq!(score(&t, &r, &OPEN, table()).not_reviewed, Some(1));
        r.reviewed = None;
        assert_eq!(score(&t, &r, &OPEN, table()).not_reviewed, None);
    }
}
