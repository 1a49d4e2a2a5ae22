//! Inline suppressions: a comment `fanscan:ignore[rule-id] reason` on a
//! finding's line or the line above it, as teams already write
//! `nosemgrep` and `gitleaks:allow`.
//!
//! Takes a file's lines (the ones verification read) and a finding's line
//! and rule; gives the [`Suppression`] that covers it, if any. A bare
//! `fanscan:ignore` (no rule) covers every rule on that line, like a bare
//! `nosemgrep`; the report says so, and says when no reason was given.

use serde::{Deserialize, Serialize};

/// The marker a suppression comment starts with.
pub(crate) const MARKER: &str = "fanscan:ignore";

/// One suppression comment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Suppression {
    /// The 1-indexed line of the comment.
    pub line: u32,
    /// The rules it names; empty for a bare `fanscan:ignore` (every rule).
    pub rules: Vec<String>,
    /// Why, as written after the marker.
    pub reason: Option<String>,
    /// The change under review added this comment (a `--since` scan).
    #[serde(default)]
    pub by_change: bool,
    /// What a reviewer should know (no reason, every rule).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The last day it holds (`until=YYYY-MM-DD`); none: no expiry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<jiff::civil::Date>,
    /// An `until=` value that is not a date, as written: the comment
    /// suppresses nothing until it is fixed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bad_until: Option<String>,
}

impl Suppression {
    /// Whether its expiry has passed on `today` (it holds through `until`).
    pub(crate) fn expired(&self, today: jiff::civil::Date) -> bool {
        self.until.is_some_and(|until| until < today)
    }
}

/// The key that gives a suppression an expiry.
const UNTIL: &str = "until=";

/// Splits a leading `until=VALUE` off the text after the marker's rules:
/// the value (a date, or the text that is not one) and the rest.
fn split_until(rest: &str) -> (Option<Result<jiff::civil::Date, String>>, &str) {
    let trimmed = rest.trim_start_matches([':', '-', ' ', '\t']);
    let Some(value) = trimmed.strip_prefix(UNTIL) else {
        return (None, rest);
    };
    let end = value.find(char::is_whitespace).unwrap_or(value.len());
    let (word, after) = value.split_at(end);
    // A comment closer right after the date (`until=2027-03-01*/`) is not
    // part of it.
    let mut date = word;
    for closer in ["*/", "-->", "--%>", "%>", "#}"] {
        date = date.strip_suffix(closer).unwrap_or(date);
    }
    let date = date.trim_end_matches([':', ',', ';']);
    let parsed = date
        .parse::<jiff::civil::Date>()
        .ok()
        // Only the plain ISO form: `2027-3-1` or `20270301` read differently
        // to different people.
        .filter(|d| d.to_string() == date)
        .ok_or_else(|| date.to_string());
    (Some(parsed), after)
}

/// The marker and everything after it on `line`, the part a suppression
/// is recognised by (the code before it may change, or be redacted).
pub(crate) fn marker_text(line: &str) -> Option<&str> {
    let at = line.find(MARKER)?;
    line.get(at..).map(str::trim_end)
}

/// Parses the suppression comment on `line`, if there is one.
pub(crate) fn parse(line: &str, number: u32) -> Option<Suppression> {
    let text = marker_text(line)?;
    let rest = text.get(MARKER.len()..).unwrap_or_default();
    // `fanscan:ignored` or `fanscan:ignore_me` is not the marker.
    if rest
        .chars()
        .next()
        .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '-')
    {
        return None;
    }
    let (rules, rest) = match rest.strip_prefix('[') {
        Some(inner) => match inner.find(']') {
            Some(end) => (
                inner
                    .get(..end)
                    .unwrap_or_default()
                    .split(',')
                    .map(str::trim)
                    .filter(|r| !r.is_empty())
                    .map(str::to_string)
                    .collect(),
                inner.get(end + 1..).unwrap_or_default(),
            ),
            // An unclosed bracket names no rule: it covers nothing, so a
            // typo never silences more than was meant.
            None => return None,
        },
        None => (Vec::new(), rest),
    };
    let (until, rest) = split_until(rest);
    let mut reason = rest.trim();
    for closer in ["*/", "-->", "--%>", "%>", "#}"] {
        reason = reason.strip_suffix(closer).unwrap_or(reason).trim();
    }
    let reason = reason.trim_start_matches([':', '-', ' ']).trim();
    let reason = (!reason.is_empty()).then(|| reason.to_string());
    let mut notes = Vec::new();
    if reason.is_none() {
        notes.push("no reason was given; write one after the marker".to_string());
    }
    if rules.is_empty() {
        notes.push(
            "a bare fanscan:ignore covers every rule on its line; name the rule, e.g. fanscan:ignore[rule-id]"
                .to_string(),
        );
    }
    let (until, bad_until) = match until {
        Some(Ok(date)) => (Some(date), None),
        Some(Err(text)) => (None, Some(text)),
        None => (None, None),
    };
    Some(Suppression {
        line: number,
        rules,
        reason,
        by_change: false,
        notes,
        until,
        bad_until,
    })
}

/// The suppression covering a finding at `line` (1-indexed) with `rule`:
/// a comment on that line, else on the line above, that names the rule
/// or names none.
pub(crate) fn find(lines: &[String], line: u32, rule: Option<&str>) -> Option<Suppression> {
    let candidates = [Some(line), line.checked_sub(1)];
    candidates.into_iter().flatten().find_map(|n| {
        let text = lines.get(usize::try_from(n).ok()?.checked_sub(1)?)?;
        let s = parse(text, n)?;
        let covers = s.rules.is_empty() || rule.is_some_and(|r| s.rules.iter().any(|x| x == r));
        covers.then_some(s)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_string).collect()
    }

    #[test]
    fn on_the_line_or_the_line_above_naming_the_rule() {
        let file = lines(
            "a\n// fanscan:ignore[rust/unwrap] parsing a literal\nx.unwrap()\ny.unwrap() // fanscan:ignore[rust/unwrap]: checked above\nz.unwrap()\n",
        );
        let s = find(&file, 3, Some("rust/unwrap")).unwrap();
        assert_eq!(
            (s.line, s.reason.as_deref()),
            (2, Some("parsing a literal"))
        );
        assert!(s.notes.is_empty());
        let s = find(&file, 4, Some("rust/unwrap")).unwrap();
        assert_eq!((s.line, s.reason.as_deref()), (4, Some("checked above")));
        // Line 5 is under line 4's comment, which is on the line above.
        assert!(find(&file, 5, Some("rust/unwrap")).is_some());
        assert!(find(&file, 3, Some("sql/concat")).is_none());
        assert!(find(&file, 1, Some("rust/unwrap")).is_none());
    }

    #[test]
    fn bare_markers_cover_every_rule_and_say_so() {
        let file = lines("x = 1 # fanscan:ignore\n");
        let s = find(&file, 1, None).unwrap();
        assert!(s.rules.is_empty() && s.reason.is_none());
        assert_eq!(s.notes.len(), 2, "{:?}", s.notes);
    }

    #[test]
    fn comment_closers_are_not_part_of_the_reason_and_lookalikes_do_not_count() {
        let s = parse("/* fanscan:ignore[a, b] fixture */", 7).unwrap();
        assert_eq!(s.rules, ["a", "b"]);
        assert_eq!(s.reason.as_deref(), Some("fixture"));
        assert!(parse("fanscan:ignored", 1).is_none());
        assert!(parse("fanscan:ignore[unclosed reason", 1).is_none());
        assert!(find(&[], 0, None).is_none());
        assert!(find(&lines("x"), 99, None).is_none());
    }

    #[test]
    fn until_is_an_iso_date_and_holds_through_that_day() {
        let s = parse("// fanscan:ignore[a] until=2027-03-01 migrating in Q1", 3).unwrap();
        let until = jiff::civil::date(2027, 3, 1);
        assert_eq!(s.until, Some(until));
        assert_eq!(s.bad_until, None);
        assert_eq!(s.reason.as_deref(), Some("migrating in Q1"));
        assert!(!s.expired(until));
        assert!(s.expired(jiff::civil::date(2027, 3, 2)));
        let s = parse("/* fanscan:ignore[a]: until=2027-03-01*/", 1).unwrap();
        assert_eq!((s.until, s.reason.as_deref()), (Some(until), None));
        // No `until=`: never expires; `until` later in the reason is prose.
        let s = parse("# fanscan:ignore[a] kept until=later", 1).unwrap();
        assert_eq!((s.until, s.bad_until.as_deref()), (None, None));
        assert!(!s.expired(jiff::civil::date(2999, 1, 1)));
    }

    #[test]
    fn an_until_that_is_not_a_date_is_kept_as_written() {
        for (line, bad) in [
            ("// fanscan:ignore[a] until=2027-13-45 reason", "2027-13-45"),
            ("// fanscan:ignore[a] until=soon", "soon"),
            ("// fanscan:ignore[a] until=2027-3-1 reason", "2027-3-1"),
            ("// fanscan:ignore[a] until= reason", ""),
        ] {
            let s = parse(line, 1).unwrap();
            assert_eq!(
                (s.until, s.bad_until.as_deref()),
                (None, Some(bad)),
                "{line}"
            );
        }
    }
}
