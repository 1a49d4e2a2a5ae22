//! Small helpers every layer shares: token estimates, content hashes, the
//! human forms of counts and durations, built-in patterns and locks; the
//! languages of files; and the repository's git (its checkout, a change's
//! files and hunks). A leaf: it imports nothing else of the crate.

pub(crate) mod git;
pub(crate) mod language;

use sha2::{Digest, Sha256};

/// The state behind a lock, poisoned or not: fanscan's one way with a
/// poisoned lock. A poisoned lock means a panic, a fanscan bug, which its
/// task's join reports; the mutexes this is used for guard state that each
/// critical section leaves whole (a counter set, an entry inserted, a line
/// appended), so the state is the real one and is used, never dropped. A
/// lock whose state a panic could leave half-updated does not use this: the
/// budget's ledger stops the run (`Spend::spent`), and the store's
/// connection fails with `StoreError::Poisoned`.
pub(crate) fn relock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// `pattern` with its word boundaries (`\b`, `\B`) made ASCII
/// (`(?-u:\b)`). A Unicode word boundary makes the regex crate's fast
/// engines give up on any non-ASCII text and fall back to its slowest one:
/// the secret patterns took 84 s over the pages of one 776 KB Unicode test
/// table. Secrets and tokens are ASCII, so the boundaries mean the same
/// there. An escaped backslash (`\\b`) is left as it is.
pub(crate) fn ascii_word_boundaries(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some(b @ ('b' | 'B')) => {
                out.push_str("(?-u:\\");
                out.push(b);
                out.push(')');
            }
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// A built-in regular expression, compiled on first use. Its pattern is a
/// constant of fanscan's source, never input: one that does not compile is
/// a fanscan bug, and it fails loudly (a panic naming the pattern) instead
/// of switching a feature off. Each module forces its built-in statics in
/// a test (`every_builtin_pattern_compiles`), so such a bug cannot ship.
pub(crate) fn builtin_regex(pattern: &str) -> regex::Regex {
    regex::Regex::new(pattern).unwrap_or_else(|e| {
        panic!("built-in pattern {pattern:?} does not compile (a fanscan bug): {e}")
    })
}

/// Estimated tokens of `bytes` bytes of text (bytes / 3, rounded up): a
/// deliberately high estimate for code, so budgets err on the safe side.
/// The lines of `text` numbered from 1, as `read_file` numbers them.
pub(crate) fn numbered(text: &str) -> std::collections::BTreeMap<u32, String> {
    (1..).zip(text.lines().map(str::to_string)).collect()
}

pub(crate) fn estimate_tokens(bytes: u64) -> u64 {
    bytes.div_ceil(3)
}

/// Lowercase hex SHA-256.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// A count as people read it: `950`, `12.3k`, `5.2M`, `1.1B`.
pub fn human_count(n: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1_000_000_000, "B"), (1_000_000, "M"), (1_000, "k")];
    for (size, unit) in UNITS {
        if n >= size {
            let value = n as f64 / size as f64;
            let text = if value < 100.0 {
                format!("{value:.1}")
            } else {
                format!("{value:.0}")
            };
            return format!("{}{unit}", text.strip_suffix(".0").unwrap_or(&text));
        }
    }
    n.to_string()
}

/// A duration as written on the command line: `2h`, `20m` or `90s`.
/// `1 group`, `2 groups`: a count with its noun, as people write it.
pub(crate) fn count(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// `text` with its first letter upper-case: a phrase as a sentence.
pub(crate) fn capitalize(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

pub(crate) fn human_duration(d: std::time::Duration) -> String {
    let secs = d.as_secs();
    if secs.is_multiple_of(3600) && secs > 0 {
        format!("{}h", secs / 3600)
    } else if secs.is_multiple_of(60) && secs > 0 {
        format!("{}m", secs / 60)
    } else {
        format!("{secs}s")
    }
}

/// A TOML error as `line N: message`, without echoing the source line
/// (which could hold anything the file holds).
pub(crate) fn toml_error(text: &str, error: &toml::de::Error) -> String {
    match error.span() {
        Some(span) => format!(
            "line {}: {}",
            text.get(..span.start).unwrap_or(text).matches('\n').count() + 1,
            error.message()
        ),
        None => error.message().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_read_as_people_write_them() {
        assert_eq!(human_count(0), "0");
        assert_eq!(human_count(999), "999");
        assert_eq!(human_count(1_000), "1k");
        assert_eq!(human_count(24_000), "24k");
        assert_eq!(human_count(12_345), "12.3k");
        assert_eq!(human_count(5_201_880), "5.2M");
        assert_eq!(human_count(250_000_000), "250M");
        assert_eq!(human_count(u64::MAX), "18446744074B");
    }

    #[test]
    fn durations_use_the_largest_whole_unit() {
        use std::time::Duration;
        assert_eq!(human_duration(Duration::from_secs(7200)), "2h");
        assert_eq!(human_duration(Duration::from_secs(1200)), "20m");
        assert_eq!(human_duration(Duration::from_secs(90)), "90s");
        assert_eq!(human_duration(Duration::ZERO), "0s");
    }

    #[test]
    fn estimates_round_up() {
        assert_eq!(estimate_tokens(0), 0);
        assert_eq!(estimate_tokens(1), 1);
        assert_eq!(estimate_tokens(4), 2);
    }

    #[test]
    fn word_boundaries_become_ascii_and_escaped_backslashes_stay() {
        assert_eq!(
            ascii_word_boundaries(r"\beval\(|\\b|\Bx\d"),
            r"(?-u:\b)eval\(|\\b|(?-u:\B)x\d"
        );
        let re = regex::Regex::new(&ascii_word_boundaries(r"\beval\b")).unwrap();
        assert!(re.is_match("x = eval(y)"));
        assert!(!re.is_match("evaluate"));
    }
}
