//! The CASTLE benchmark's own score (`fanscan eval --score castle`), beside
//! the TP/FP tables, so a run can be put next to the published table.
//!
//! Takes the truth, one run and which findings count; gives a
//! [`CastleScore`]: 5 points per vulnerable case found, 2 per clean case
//! whose file has no finding at all, −1 per finding in a labelled file that
//! matches no vulnerable case, and the maximum the truth allows. A finding
//! matches a vulnerable case in its file when it cites one of the labelled
//! lines (its span covers it; no slack) or its CWE is the case's, a parent
//! or a child in MITRE's research view (`parents` in `configs/cwe.toml`).
//! Low and info findings are dropped for this score only.
//!
//! Where this differs from the CASTLE paper (arXiv 2503.09433): the paper
//! adds a bonus for finding the more common (CWE Top 25) weaknesses, which
//! puts its maximum for the 250 C tests at 1,250; its formula could not be
//! confirmed from a source we can cite, so it is left out and said so in
//! the output, never guessed. Findings in
//! files no case labels are outside the benchmark: counted apart, not
//! scored.

use serde::Serialize;

use super::report::{Claim, Prediction, RunView};
use super::score::{Count, Index};
use super::truth::{Case, Truth};
use crate::model::cwe::CweTable;
use crate::model::findings::Severity;

/// Points for a vulnerable case found.
pub(crate) const FOUND_POINTS: i64 = 5;
/// Points for a clean case whose file has no finding.
pub(crate) const CLEAN_POINTS: i64 = 2;
/// Points for each finding that matches nothing.
pub(crate) const UNMATCHED_POINTS: i64 = -1;

/// A run's CASTLE score and its parts.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub(crate) struct CastleScore {
    /// The sum of the parts.
    pub score: i64,
    /// What a run that finds every vulnerable case and flags nothing else
    /// would score on this truth.
    pub maximum: i64,
    /// Vulnerable cases in the truth.
    pub vulnerable: u64,
    /// Of them, found (×5).
    pub vulnerable_found: u64,
    pub found_points: i64,
    /// Clean (not vulnerable) cases in the truth.
    pub clean: u64,
    /// Of them, with no finding in their file (×2).
    pub clean_without_finding: u64,
    pub clean_points: i64,
    /// Findings in a labelled file that match no vulnerable case (×−1).
    pub unmatched_findings: u64,
    pub unmatched_points: i64,
    /// Findings `--count` selects, before the severity filter.
    pub counted: u64,
    /// Of them, dropped as low or info.
    pub dropped_low_or_info: u64,
    /// Of them, in files no case labels: not scored.
    pub outside_truth: u64,
    /// The unmatched findings (`path:line rule`), sorted.
    pub unmatched: Vec<String>,
}

/// Whether the CASTLE score drops a finding of this severity.
fn dropped(severity: Option<Severity>) -> bool {
    match severity {
        Some(Severity::Low | Severity::Info) => true,
        Some(Severity::Medium | Severity::High | Severity::Critical) | None => false,
    }
}

/// Whether the finding's span covers one of the case's labelled lines.
fn on_labelled_line(p: &Prediction, case: &Case) -> bool {
    case.lines.iter().any(|&l| p.line <= l && l <= p.end_line)
}

/// Whether one of the finding's CWEs is the case's, a parent or a child.
fn cwe_fits(p: &Prediction, case: &Case, table: &CweTable) -> bool {
    match &p.claim {
        Claim::Cwes(ids) => ids
            .iter()
            .any(|&id| table.same_parent_or_child(id, case.cwe)),
        Claim::None | Claim::Unreadable(_) => false,
    }
}

/// Scores one run the CASTLE benchmark's way.
pub(crate) fn score(truth: &Truth, run: &RunView, count: Count, table: &CweTable) -> CastleScore {
    let cases = &truth.cases;
    let index = Index::new(cases);
    let mut found = vec![false; cases.len()];
    let mut flagged = vec![false; cases.len()];
    let mut out = CastleScore::default();
    for p in run.predictions.iter().filter(|p| count.includes(p.listed)) {
        out.counted += 1;
        if dropped(p.severity) {
            out.dropped_low_or_info += 1;
            continue;
        }
        let in_file = index.cases_of(&p.path);
        if in_file.is_empty() {
            out.outside_truth += 1;
            continue;
        }
        let mut hit = false;
        for i in in_file {
            // Any finding in a file costs its clean cases their points.
            flagged[i] = true;
            let case = &cases[i];
            if case.vulnerable && (on_labelled_line(p, case) || cwe_fits(p, case, table)) {
                found[i] = true;
                hit = true;
            }
        }
        if !hit {
            out.unmatched.push(p.label());
        }
    }
    for (i, case) in cases.iter().enumerate() {
        match (case.vulnerable, found[i], flagged[i]) {
            (true, true, _) => {
                out.vulnerable += 1;
                out.vulnerable_found += 1;
            }
            (true, false, _) => out.vulnerable += 1,
            (false, _, false) => {
                out.clean += 1;
                out.clean_without_finding += 1;
            }
            (false, _, true) => out.clean += 1,
        }
    }
    out.unmatched.sort();
    out.unmatched_findings = out.unmatched.len() as u64;
    out.found_points = FOUND_POINTS * out.vulnerable_found as i64;
    out.clean_points = CLEAN_POINTS * out.clean_without_finding as i64;
    out.unmatched_points = UNMATCHED_POINTS * out.unmatched_findings as i64;
    out.score = out.found_points + out.clean_points + out.unmatched_points;
    out.maximum = FOUND_POINTS * out.vulnerable as i64 + CLEAN_POINTS * out.clean as i64;
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::report::{Listed, Usage};
    use crate::eval::truth::{FileKey, TruthFormat};
    use crate::model::cwe::CweId;

    fn cwe(n: u32) -> CweId {
        CweId::from_number(n).unwrap()
    }

    fn case(name: &str, n: u32, vulnerable: bool, lines: &[u32]) -> Case {
        Case {
            id: name.into(),
            file: FileKey::Name(name.into()),
            cwe: cwe(n),
            vulnerable,
            lines: lines.to_vec(),
        }
    }

    fn found(path: &str, line: u32, cwes: &[u32], severity: Option<Severity>) -> Prediction {
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
            listed: Listed::Open,
            severity,
        }
    }

    fn high(path: &str, line: u32, cwes: &[u32]) -> Prediction {
        found(path, line, cwes, Some(Severity::High))
    }

    fn truth(cases: Vec<Case>) -> Truth {
        Truth {
            source: "t".into(),
            format: TruthFormat::Castle,
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

    fn castle(t: &Truth, predictions: Vec<Prediction>) -> CastleScore {
        score(
            t,
            &run(predictions),
            Count::Open,
            CweTable::builtin().unwrap(),
        )
    }

    #[test]
    fn a_labelled_line_finds_the_case_whatever_the_cwe() {
        let t = truth(vec![case("v.c", 787, true, &[12])]);
        let s = castle(&t, vec![high("src/v.c", 12, &[]), high("v.c", 12, &[89])]);
        assert_eq!((s.vulnerable_found, s.unmatched_findings), (1, 0));
        assert_eq!((s.score, s.maximum), (5, 5));
        // A span that covers the line counts; one line off does not.
        let mut span = high("v.c", 10, &[]);
        span.end_line = 13;
        assert_eq!(castle(&t, vec![span]).vulnerable_found, 1);
        let off = castle(&t, vec![high("v.c", 13, &[])]);
        assert_eq!((off.vulnerable_found, off.unmatched_findings), (0, 1));
        assert_eq!(off.score, -1);
    }

    #[test]
    fn the_cases_cwe_a_parent_or_a_child_finds_it_anywhere_in_the_file() {
        let t = truth(vec![case("v.c", 787, true, &[12])]);
        for n in [787, 119, 121] {
            let s = castle(&t, vec![high("v.c", 40, &[n])]);
            assert_eq!(s.vulnerable_found, 1, "CWE-{n}");
        }
        // A sibling (125 is 119's child too) and an unrelated class miss.
        for n in [125, 89] {
            let s = castle(&t, vec![high("v.c", 40, &[n])]);
            assert_eq!(
                (s.vulnerable_found, s.unmatched_findings),
                (0, 1),
                "CWE-{n}"
            );
        }
    }

    #[test]
    fn a_case_scores_once_and_each_unmatched_finding_costs_one() {
        let t = truth(vec![
            case("v.c", 78, true, &[5]),
            case("s.c", 78, false, &[]),
        ]);
        let s = castle(
            &t,
            vec![
                high("v.c", 5, &[78]),
                high("v.c", 5, &[77]),
                high("v.c", 30, &[476]),
                high("s.c", 3, &[78]),
                high("s.c", 4, &[]),
            ],
        );
        // 1 found × 5, the clean file flagged (0), 3 unmatched × −1.
        assert_eq!(s.vulnerable_found, 1);
        assert_eq!(s.clean_without_finding, 0);
        assert_eq!(s.unmatched, ["s.c:3", "s.c:4", "v.c:30"]);
        assert_eq!((s.score, s.maximum), (5 - 3, 5 + 2));
    }

    #[test]
    fn a_clean_case_scores_only_when_its_file_has_no_finding_at_all() {
        let t = truth(vec![
            case("a.c", 22, false, &[]),
            case("b.c", 22, false, &[]),
        ]);
        // Another class entirely, in b.c: b.c loses its 2 points.
        let s = castle(&t, vec![high("b.c", 9, &[401])]);
        assert_eq!((s.clean, s.clean_without_finding), (2, 1));
        assert_eq!((s.score, s.maximum), (2 - 1, 4));
    }

    #[test]
    fn low_and_info_findings_are_dropped_and_others_kept() {
        let t = truth(vec![
            case("v.c", 416, true, &[8]),
            case("s.c", 416, false, &[]),
        ]);
        let s = castle(
            &t,
            vec![
                found("v.c", 8, &[416], Some(Severity::Low)),
                found("s.c", 2, &[416], Some(Severity::Info)),
                found("s.c", 3, &[416], Some(Severity::Medium)),
                found("v.c", 20, &[], None),
            ],
        );
        assert_eq!(s.counted, 4);
        assert_eq!(s.dropped_low_or_info, 2);
        assert_eq!(
            s.vulnerable_found, 0,
            "the low finding on the line is dropped"
        );
        assert_eq!(s.clean_without_finding, 0, "the medium one flags s.c");
        assert_eq!(
            s.unmatched_findings, 2,
            "a finding without a severity counts"
        );
        assert_eq!(s.score, -2);
    }

    #[test]
    fn findings_outside_the_truths_files_are_not_scored() {
        let t = truth(vec![case("v.c", 89, true, &[3])]);
        let s = castle(&t, vec![high("Makefile", 1, &[89]), high("x.c", 3, &[89])]);
        assert_eq!((s.outside_truth, s.unmatched_findings, s.score), (2, 0, 0));
    }

    #[test]
    fn the_count_policy_picks_the_findings() {
        let t = truth(vec![case("v.c", 89, true, &[3])]);
        let mut refuted = high("v.c", 3, &[89]);
        refuted.listed = Listed::Refuted;
        let r = run(vec![refuted]);
        let table = CweTable::builtin().unwrap();
        assert_eq!(score(&t, &r, Count::Open, table).score, 0);
        assert_eq!(score(&t, &r, Count::Verified, table).score, 5);
    }

    #[test]
    fn no_vulnerable_case_or_no_finding_still_scores() {
        let clean = truth(vec![case("s.c", 22, false, &[])]);
        let s = castle(&clean, vec![]);
        assert_eq!((s.score, s.maximum, s.vulnerable), (2, 2, 0));
        let vulnerable = truth(vec![case("v.c", 22, true, &[])]);
        let s = castle(&vulnerable, vec![]);
        assert_eq!((s.score, s.maximum, s.counted), (0, 5, 0));
        // Without labelled lines only the CWE can find a case.
        let s = castle(&vulnerable, vec![high("v.c", 1, &[23])]);
        assert_eq!(s.score, 5);
    }
}
