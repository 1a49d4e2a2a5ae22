//! What a check lets through. A value that an anchored pattern matched
//! (`^[a-z0-9.-]{1,253}$`) holds only the characters the pattern can
//! match: read with regex-syntax (the regex crate's own parser), never by
//! matching the pattern's text. A value found in a list of literals is one
//! of them.
//!
//! The kinds a pattern's value is clean for follow from those characters:
//! a quote, a backslash, `;`, `|`, `$`, `<` or any other character that
//! means something to a query, a shell or a page cleans nothing; a space
//! or a newline still splits a shell's words; a dot or a slash still walks
//! a path (`..`).

use regex_syntax::hir::{Class, Hir, HirKind, Look};

/// Sink classes (by CWE) a checked value is clean for; `None` in a
/// [`super::guards::Guard`] means every class.
pub(super) type Cleans = Option<&'static [u32]>;

/// A value of only letters, digits and `_-@+,:=` (and letters of other
/// scripts): SQL, HTML, a shell, a path.
const ALL_BUT_URLS: &[u32] = &[89, 79, 78, 22, 98, 434];
/// With a dot or a slash too: not a path.
const NOT_A_PATH: &[u32] = &[89, 79, 78];
/// With a space or a newline too: not a shell.
const NOT_A_SHELL: &[u32] = &[89, 79, 22, 98, 434];
/// With both.
const QUOTED_TEXT: &[u32] = &[89, 79];

/// How a pattern is applied to the value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Applied {
    /// To the whole value (Java's `matches`, Python's `fullmatch`).
    Whole,
    /// Anywhere in it: only anchors at both ends make it whole.
    Search,
}

/// How the code's language reads a pattern's anchors.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Dialect {
    /// `$` also matches before a final newline (Python, PHP, Java's
    /// `find`): the value may end with one.
    pub(super) dollar_newline: bool,
    /// `^` and `$` match at every line (Ruby): they anchor nothing.
    pub(super) line_anchors: bool,
}

/// The classes a value that `pattern` (with `flags`, as a language's
/// regex literal has them) matched is clean for; `None` when it lets
/// through a character that matters to every kind, is not anchored at
/// both ends, or does not parse.
pub(super) fn of_pattern(
    pattern: &str,
    flags: &str,
    applied: Applied,
    dialect: Dialect,
) -> Option<&'static [u32]> {
    // Python's `\Z` is the very end (Rust's `\z`).
    let (pattern, exact_end) = match pattern.strip_suffix(r"\Z") {
        Some(rest) if !rest.ends_with('\\') => (format!(r"{rest}\z"), true),
        _ => (pattern.to_string(), pattern.ends_with(r"\z")),
    };
    let hir = regex_syntax::ParserBuilder::new()
        .unicode(false)
        .utf8(false)
        .case_insensitive(flags.contains('i'))
        .multi_line(flags.contains('m') || dialect.line_anchors)
        .dot_matches_new_line(flags.contains('s'))
        .ignore_whitespace(flags.contains('x'))
        .build()
        .parse(&pattern)
        .ok()?;
    if applied == Applied::Search && !anchored(&hir) {
        return None;
    }
    let mut allowed = [false; 256];
    characters(&hir, &mut allowed, 0)?;
    if applied == Applied::Search && dialect.dollar_newline && !exact_end {
        allowed[usize::from(b'\n')] = true;
    }
    classify(&allowed)
}

/// Whether `hir` starts at the value's start and ends at its end.
fn anchored(hir: &Hir) -> bool {
    let HirKind::Concat(parts) = hir.kind() else {
        return false;
    };
    let is = |h: Option<&Hir>, look: Look| matches!(h.map(Hir::kind), Some(HirKind::Look(l)) if *l == look);
    is(parts.first(), Look::Start) && is(parts.last(), Look::End)
}

/// Marks in `allowed` every byte `hir` can match; `None` past a depth no
/// real pattern has.
fn characters(hir: &Hir, allowed: &mut [bool; 256], depth: usize) -> Option<()> {
    if depth > 64 {
        return None;
    }
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => {}
        HirKind::Literal(literal) => {
            for b in literal.0.iter() {
                allowed[usize::from(*b)] = true;
            }
        }
        HirKind::Class(Class::Bytes(class)) => {
            for range in class.iter() {
                for b in range.start()..=range.end() {
                    allowed[usize::from(b)] = true;
                }
            }
        }
        HirKind::Class(Class::Unicode(class)) => {
            for range in class.iter() {
                let (start, end) = (u32::from(range.start()), u32::from(range.end()));
                for c in start..=end.min(255) {
                    allowed[c as usize] = true;
                }
                // Any character beyond ASCII is written with bytes of 0x80
                // and above: a letter of another script, not a separator.
                if end > 127 {
                    allowed[0x80] = true;
                }
            }
        }
        HirKind::Repetition(r) => characters(&r.sub, allowed, depth + 1)?,
        HirKind::Capture(c) => characters(&c.sub, allowed, depth + 1)?,
        HirKind::Concat(parts) | HirKind::Alternation(parts) => {
            for part in parts {
                characters(part, allowed, depth + 1)?;
            }
        }
    }
    Some(())
}

/// The classes a value of the `allowed` bytes is clean for.
fn classify(allowed: &[bool; 256]) -> Option<&'static [u32]> {
    let mut dots = false;
    let mut spaces = false;
    for (byte, _) in allowed.iter().enumerate().filter(|(_, a)| **a) {
        let b = u8::try_from(byte).ok()?;
        match b {
            b'a'..=b'z'
            | b'A'..=b'Z'
            | b'0'..=b'9'
            | b'_'
            | b'-'
            | b'@'
            | b'+'
            | b','
            | b':'
            | b'='
            | 0x80..=0xff => {}
            b'.' | b'/' => dots = true,
            b' ' | b'\t' | b'\n' => spaces = true,
            _ => return None,
        }
    }
    Some(match (dots, spaces) {
        (false, false) => ALL_BUT_URLS,
        (true, false) => NOT_A_PATH,
        (false, true) => NOT_A_SHELL,
        (true, true) => QUOTED_TEXT,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn search(pattern: &str) -> Option<&'static [u32]> {
        of_pattern(pattern, "", Applied::Search, Dialect::default())
    }

    #[test]
    fn an_anchored_pattern_of_safe_characters_cleans_by_what_it_allows() {
        assert_eq!(search(r"^[0-9a-f]{7,40}$"), Some(ALL_BUT_URLS));
        assert_eq!(search(r"^\w+$"), Some(ALL_BUT_URLS));
        assert_eq!(search(r"^[a-z0-9.-]{1,253}$"), Some(NOT_A_PATH));
        assert_eq!(search(r"^[\w ]{1,64}$"), Some(NOT_A_SHELL));
        assert_eq!(search(r"^[\w.-]+\.(docx|odt)$"), Some(NOT_A_PATH));
        assert_eq!(search(r"\A[a-z]+\z"), Some(ALL_BUT_URLS));
        assert_eq!(
            of_pattern("[a-z0-9.-]{1,253}", "", Applied::Whole, Dialect::default()),
            Some(NOT_A_PATH)
        );
    }

    #[test]
    fn an_unanchored_or_permissive_pattern_cleans_nothing() {
        // Not anchored at both ends: the rest of the value is anything.
        assert_eq!(search(r"[a-z]+"), None);
        assert_eq!(search(r"^[a-z]+"), None);
        assert_eq!(search(r"[a-z]+$"), None);
        // An alternation at the top anchors only one side of each branch.
        assert_eq!(search(r"^a|b$"), None);
        // Any character, a negated class, a quote, a backslash.
        assert_eq!(search(r"^.+$"), None);
        assert_eq!(search(r"^[^<>]+$"), None);
        assert_eq!(search(r"^[\w']+$"), None);
        assert_eq!(search(r"^[\w\\]+$"), None);
        assert_eq!(search(r"^\S+$"), None);
        // A line anchor in multi-line mode, or in Ruby.
        assert_eq!(
            of_pattern(r"^\w+$", "m", Applied::Search, Dialect::default()),
            None
        );
        let ruby = Dialect {
            line_anchors: true,
            ..Dialect::default()
        };
        assert_eq!(of_pattern(r"^\w+$", "", Applied::Search, ruby), None);
        // What the parser does not read (a lookahead) proves nothing.
        assert_eq!(search(r"^(?=a)\w+$"), None);
    }

    #[test]
    fn a_dollar_that_allows_a_final_newline_does_not_clean_a_shell() {
        let python = Dialect {
            dollar_newline: true,
            ..Dialect::default()
        };
        assert_eq!(
            of_pattern(r"^[a-z]+$", "", Applied::Search, python),
            Some(NOT_A_SHELL)
        );
        assert_eq!(
            of_pattern(r"^[a-z]+\Z", "", Applied::Search, python),
            Some(ALL_BUT_URLS)
        );
        assert_eq!(
            of_pattern(r"[a-z]+", "", Applied::Whole, python),
            Some(ALL_BUT_URLS)
        );
    }
}
