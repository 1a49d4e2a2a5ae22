//! Mending the JSON small models write: unescaped quotes in quoted code,
//! control characters, bad escapes, single quotes, bare keys and values,
//! comments, stray or missing commas and brackets, a truncated end.

use std::collections::BTreeSet;

use serde_json::Value;

use super::model::Repair;

/// Repairs JSON the way small models break it and parses it; `None` unless
/// the repaired text parses. Repairs: `"` inside strings that cannot end
/// them (a quote ends a string only when what follows can follow a value:
/// `,` and a key or value, `}`/`]` and what can follow them, the end),
/// raw control characters and bad escapes in strings, single quotes, bare
/// keys and values, comments, trailing and missing commas, mismatched
/// brackets, and a truncated end (open string and brackets closed). Never
/// adds content beyond a `null` for a key cut off without its value. A
/// first pass lets any identifier-like key end a string; when that does
/// not parse, a second lets only the report format's keys do so (quoted
/// JSON in evidence, `{"a": "b", "c": 1}`, then stays one string).
pub(crate) fn repair_json(text: &str) -> Option<(Value, Vec<Repair>)> {
    let chars: Vec<char> = text.chars().collect();
    let pass = |keys| {
        let (fixed, repairs) = Repairer {
            s: &chars,
            i: 0,
            out: String::with_capacity(text.len() + 16),
            stack: Vec::new(),
            done: BTreeSet::new(),
            keys,
            swallowed: false,
        }
        .run()?;
        let value = serde_json::from_str::<Value>(&fixed).ok()?;
        Some((value, repairs.into_iter().collect::<Vec<_>>()))
    };
    let any = pass(Keys::Any);
    // A quote taken for the end of a string too early leaves structure to
    // mend (commas, brackets, a "truncated" end); the reading that needs
    // less of it is the right one.
    let cost = |r: &Option<(Value, Vec<Repair>)>| {
        r.as_ref().map_or(usize::MAX, |(_, repairs)| {
            repairs.iter().filter(|r| r.is_structural()).count()
        })
    };
    if cost(&any) == 0 {
        return any;
    }
    let known = pass(Keys::Known);
    if cost(&known) < cost(&any) {
        known
    } else {
        any
    }
}

/// What an open container expects next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    Key,
    Colon,
    Value,
    Next,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Frame {
    Object(Expect),
    Array(Expect),
}

impl Frame {
    fn closer(self) -> char {
        match self {
            Self::Object(_) => '}',
            Self::Array(_) => ']',
        }
    }
}

/// Which keys, seen after a quote, make that quote the end of a string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Keys {
    /// Any identifier-like key.
    Any,
    /// Only the report format's keys.
    Known,
}

/// The keys the report format uses, and their aliases in `finding_from` (in `parse`).
const KNOWN_KEYS: [&str; 16] = [
    "findings",
    "path",
    "file",
    "line",
    "start_line",
    "end_line",
    "severity",
    "title",
    "message",
    "detail",
    "description",
    "evidence",
    "snippet",
    "rule",
    "category",
    "cwe",
];

/// How far a look-ahead skips whitespace.
const LOOK: usize = 4096;
/// How long a key a look-ahead reads.
const KEY_MAX: usize = 64;

/// One pass of [`repair_json`] over the characters of a block.
struct Repairer<'a> {
    s: &'a [char],
    i: usize,
    out: String,
    stack: Vec<Frame>,
    done: BTreeSet<Repair>,
    keys: Keys,
    /// A string ran to the end over the block's own closing brackets: its
    /// quotes were misread, and this pass fails.
    swallowed: bool,
}

impl Repairer<'_> {
    fn at(&self, i: usize) -> Option<char> {
        self.s.get(i).copied()
    }

    /// The repaired text, or `None` when there is no `{` or `[` at all.
    fn run(mut self) -> Option<(String, BTreeSet<Repair>)> {
        while let Some(c) = self.at(self.i) {
            if c == '{' || c == '[' {
                break;
            }
            self.i += 1;
        }
        self.at(self.i)?;
        while let Some(c) = self.at(self.i) {
            match c {
                c if c.is_whitespace() => {
                    self.out.push(c);
                    self.i += 1;
                }
                '/' if self.at(self.i + 1) == Some('/') => {
                    while self.at(self.i).is_some_and(|c| c != '\n') {
                        self.i += 1;
                    }
                    self.done.insert(Repair::Comments);
                }
                '/' if self.at(self.i + 1) == Some('*') => {
                    self.i += 2;
                    while self.at(self.i).is_some()
                        && !(self.at(self.i) == Some('*') && self.at(self.i + 1) == Some('/'))
                    {
                        self.i += 1;
                    }
                    self.i = (self.i + 2).min(self.s.len());
                    self.done.insert(Repair::Comments);
                }
                '{' | '[' => {
                    self.begin_value();
                    self.value_done();
                    self.stack.push(if c == '{' {
                        Frame::Object(Expect::Key)
                    } else {
                        Frame::Array(Expect::Value)
                    });
                    self.out.push(c);
                    self.i += 1;
                }
                '}' | ']' => {
                    self.i += 1;
                    self.close(c);
                    if self.stack.is_empty() {
                        break;
                    }
                }
                ',' => {
                    self.i += 1;
                    self.comma();
                }
                ':' => {
                    self.i += 1;
                    self.out.push(':');
                    self.set_top(Expect::Value);
                }
                '"' | '\'' => self.string(c),
                _ => self.bare(),
            }
        }
        if self.stack.is_empty() {
            if self.s[self.i.min(self.s.len())..]
                .iter()
                .any(|c| !c.is_whitespace())
            {
                self.done.insert(Repair::TrailingText);
            }
        } else {
            self.finish();
        }
        if self.swallowed {
            return None;
        }
        Some((self.out, self.done))
    }

    fn set_top(&mut self, expect: Expect) {
        if let Some(top) = self.stack.last_mut() {
            *top = match top {
                Frame::Object(_) => Frame::Object(expect),
                Frame::Array(_) => Frame::Array(expect),
            };
        }
    }

    /// A key or value starts: a comma goes first when one was missing.
    fn begin_value(&mut self) {
        if let Some(Frame::Object(Expect::Next) | Frame::Array(Expect::Next)) = self.stack.last() {
            self.out.push(',');
            self.done.insert(Repair::MissingCommas);
            match self.stack.last() {
                Some(Frame::Object(_)) => self.set_top(Expect::Key),
                _ => self.set_top(Expect::Value),
            }
        }
    }

    fn value_done(&mut self) {
        self.set_top(Expect::Next);
    }

    fn in_key_position(&self) -> bool {
        self.stack.last() == Some(&Frame::Object(Expect::Key))
    }

    fn comma(&mut self) {
        let last = self.out.trim_end().chars().last();
        if matches!(last, Some(',' | '{' | '[')) {
            self.done.insert(Repair::TrailingCommas);
        } else {
            self.out.push(',');
        }
        match self.stack.last() {
            Some(Frame::Object(_)) => self.set_top(Expect::Key),
            _ => self.set_top(Expect::Value),
        }
    }

    fn drop_trailing_comma(&mut self) {
        let trimmed = self.out.trim_end().len();
        if self.out[..trimmed].ends_with(',') {
            self.out.truncate(trimmed - 1);
            self.done.insert(Repair::TrailingCommas);
        }
    }

    fn close(&mut self, c: char) {
        if !self.stack.iter().any(|f| f.closer() == c) {
            self.done.insert(Repair::MismatchedBrackets);
            return;
        }
        self.drop_trailing_comma();
        while let Some(top) = self.stack.pop() {
            self.out.push(top.closer());
            if top.closer() == c {
                break;
            }
            self.done.insert(Repair::MismatchedBrackets);
        }
    }

    /// The end of the text with containers open: close them.
    fn finish(&mut self) {
        self.done.insert(Repair::Truncated);
        self.drop_trailing_comma();
        match self.stack.last() {
            Some(Frame::Object(Expect::Colon)) => self.out.push_str(": null"),
            Some(Frame::Object(Expect::Value)) => self.out.push_str(" null"),
            _ => {}
        }
        while let Some(top) = self.stack.pop() {
            self.out.push(top.closer());
        }
    }

    fn string(&mut self, quote: char) {
        self.begin_value();
        let key = self.in_key_position();
        if quote == '\'' {
            self.done.insert(Repair::SingleQuotes);
        }
        self.out.push('"');
        self.i += 1;
        let content = self.i;
        loop {
            let Some(c) = self.at(self.i) else {
                let raw: String = self.s[content.min(self.s.len())..].iter().collect();
                let raw = raw.trim_end();
                self.swallowed |= raw.ends_with(['}', ']']) || raw.contains("```");
                self.out.push('"');
                self.done.insert(Repair::Truncated);
                break;
            };
            match c {
                '\\' => self.escape(quote),
                c if c == quote => {
                    self.i += 1;
                    // Keys never hold quotes; a value's quote ends it only
                    // where a value can end.
                    if key || self.value_ends(self.i) {
                        self.out.push('"');
                        break;
                    }
                    self.out.push_str(if quote == '"' { "\\\"" } else { "'" });
                    self.done.insert(Repair::UnescapedQuotes);
                }
                '"' => {
                    self.out.push_str("\\\"");
                    self.i += 1;
                }
                c if u32::from(c) < 0x20 => {
                    match c {
                        '\n' => self.out.push_str("\\n"),
                        '\r' => self.out.push_str("\\r"),
                        '\t' => self.out.push_str("\\t"),
                        c => self.out.push_str(&format!("\\u{:04x}", u32::from(c))),
                    }
                    self.done.insert(Repair::ControlCharacters);
                    self.i += 1;
                }
                c => {
                    self.out.push(c);
                    self.i += 1;
                }
            }
        }
        if key {
            self.set_top(Expect::Colon);
        } else {
            self.value_done();
        }
    }

    fn escape(&mut self, quote: char) {
        match self.at(self.i + 1) {
            Some('"') => {
                self.out.push_str("\\\"");
                self.i += 2;
            }
            Some('\'') => {
                // JSON has no `\'`.
                self.out.push('\'');
                self.i += 2;
                if quote == '"' {
                    self.done.insert(Repair::InvalidEscapes);
                }
            }
            Some(c @ ('\\' | '/' | 'b' | 'f' | 'n' | 'r' | 't')) => {
                self.out.push('\\');
                self.out.push(c);
                self.i += 2;
            }
            Some('u')
                if (2..6).all(|k| self.at(self.i + k).is_some_and(|c| c.is_ascii_hexdigit())) =>
            {
                for k in 0..6 {
                    if let Some(c) = self.at(self.i + k) {
                        self.out.push(c);
                    }
                }
                self.i += 6;
            }
            _ => {
                self.out.push_str("\\\\");
                self.i += 1;
                self.done.insert(Repair::InvalidEscapes);
            }
        }
    }

    /// A bare word: a key to quote, or a value kept when it is a JSON
    /// number or literal and quoted otherwise.
    fn bare(&mut self) {
        self.begin_value();
        if self.in_key_position() {
            let start = self.i;
            while self.at(self.i).is_some_and(is_key_char) {
                self.i += 1;
            }
            if self.i == start {
                if let Some(c) = self.at(self.i) {
                    self.out.push(c);
                }
                self.i += 1;
                return;
            }
            let word: String = self.s[start..self.i].iter().collect();
            self.out.push('"');
            self.out.push_str(&word);
            self.out.push('"');
            self.done.insert(Repair::BareKeys);
            self.set_top(Expect::Colon);
            return;
        }
        let start = self.i;
        while self
            .at(self.i)
            .is_some_and(|c| !matches!(c, ',' | '}' | ']' | '\n'))
        {
            self.i += 1;
        }
        let word: String = self.s[start..self.i].iter().collect();
        let word = word.trim_end();
        let scalar = serde_json::from_str::<Value>(word)
            .is_ok_and(|v| matches!(v, Value::Number(_) | Value::Bool(_) | Value::Null));
        if scalar {
            self.out.push_str(word);
        } else {
            self.out
                .push_str(&Value::String(word.to_string()).to_string());
            self.done.insert(Repair::BareValues);
        }
        // Keep the whitespace after the word.
        let kept = word.chars().count();
        self.i = start + kept.max(1);
        self.value_done();
    }

    fn skip_ws(&self, mut j: usize) -> usize {
        let limit = j + LOOK;
        while j < limit && self.at(j).is_some_and(char::is_whitespace) {
            j += 1;
        }
        j
    }

    /// Whether a value string whose quote is at `j - 1` ends there.
    fn value_ends(&self, j: usize) -> bool {
        let k = self.skip_ws(j);
        match self.at(k) {
            None => true,
            Some(',') => self.after_comma(k + 1, self.stack.len()),
            Some(c @ ('}' | ']')) => self.after_close(k + 1, c),
            // A member that lost its comma: `"x"\n"detail": ...`.
            Some('"' | '\'') => {
                matches!(self.stack.last(), Some(Frame::Object(_))) && self.key_at(k)
            }
            Some('/') => matches!(self.at(k + 1), Some('/' | '*')),
            Some(_) => false,
        }
    }

    /// Whether what follows a comma at `j - 1` can follow it in the frame
    /// at `depth` (1: the innermost).
    fn after_comma(&self, j: usize, depth: usize) -> bool {
        let m = self.skip_ws(j);
        let frame = depth.checked_sub(1).and_then(|d| self.stack.get(d));
        match (frame, self.at(m)) {
            (_, None) => true,
            (Some(Frame::Object(_)), Some('}')) => true,
            (Some(Frame::Object(_)), Some('"' | '\'')) => self.key_at(m),
            (Some(Frame::Object(_)), Some(c)) if is_key_char(c) => self.bare_key_at(m),
            (Some(Frame::Array(_)), Some(c)) => {
                matches!(c, '{' | '[' | '"' | '\'' | ']' | '-') || c.is_ascii_digit()
            }
            _ => false,
        }
    }

    /// Whether a closer `c` at `j - 1` closes the innermost frame and what
    /// follows it can follow that.
    fn after_close(&self, j: usize, c: char) -> bool {
        if self.stack.last().map(|f| f.closer()) != Some(c) {
            return false;
        }
        let m = self.skip_ws(j);
        match self.at(m) {
            None | Some('}' | ']') => true,
            Some(',') => self.after_comma(m + 1, self.stack.len().saturating_sub(1)),
            Some('/') => matches!(self.at(m + 1), Some('/' | '*')),
            Some(_) => false,
        }
    }

    /// Whether a quoted key and its colon start at `m`.
    fn key_at(&self, m: usize) -> bool {
        let Some(quote) = self.at(m) else {
            return false;
        };
        let mut j = m + 1;
        let mut key = String::new();
        while let Some(c) = self.at(j) {
            if c == quote {
                break;
            }
            if c == '\n' || key.len() >= KEY_MAX {
                return false;
            }
            key.push(c);
            j += 1;
        }
        // A key cut off by the end of a truncated answer counts.
        self.key_ok(&key)
            && (self.at(j).is_none() || matches!(self.at(self.skip_ws(j + 1)), None | Some(':')))
    }

    /// Whether a bare key and its colon start at `m`.
    fn bare_key_at(&self, m: usize) -> bool {
        let mut j = m;
        let mut key = String::new();
        while let Some(c) = self.at(j).filter(|&c| is_key_char(c)) {
            if key.len() >= KEY_MAX {
                return false;
            }
            key.push(c);
            j += 1;
        }
        self.key_ok(&key) && matches!(self.at(self.skip_ws(j)), None | Some(':'))
    }

    fn key_ok(&self, key: &str) -> bool {
        let mut chars = key.chars();
        let starts_well = chars.next().is_some_and(|c| c.is_alphabetic() || c == '_');
        starts_well
            && key
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | ' '))
            && match self.keys {
                Keys::Any => true,
                Keys::Known => KNOWN_KEYS.contains(&key.to_ascii_lowercase().as_str()),
            }
    }
}

fn is_key_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '$')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::findings::{HowParsed, Severity, parse_report, strip_marker};

    /// The exact block Qwen2.5-Coder 1.5B wrote: code quoted with its
    /// double quotes unescaped.
    const BROKEN_SQL_BLOCK: &str = r#"Found a SQL injection.
```json
{"findings": [{"path": "app.py", "line": 12, "severity": "high", "title": "SQL injection", "detail": "user input in SQL", "evidence": "app.py:12: 'SELECT * FROM users WHERE name = '" + name + "'"}]}
```
[TASK_COMPLETE]"#;

    #[test]
    fn unescaped_quotes_in_quoted_code_are_recovered() {
        let r = parse_report(BROKEN_SQL_BLOCK);
        assert!(r.parsed);
        assert_eq!(
            r.how,
            HowParsed::Repaired {
                repairs: vec![Repair::UnescapedQuotes]
            }
        );
        assert_eq!(r.findings.len(), 1);
        assert_eq!(
            r.findings[0].evidence.as_deref(),
            Some(r#"app.py:12: 'SELECT * FROM users WHERE name = '" + name + "'"#)
        );
        assert_eq!(r.findings[0].severity, Severity::High);
        assert!(r.unparsed.is_empty());
    }

    #[test]
    fn whole_code_lines_with_unescaped_quotes_are_recovered() {
        let block = r#"{"findings": [{"path": "app.py", "line": 12, "title": "t", "evidence": "cursor.execute("SELECT * FROM users WHERE name = '" + name + "'")"}, {"path": "b.py", "line": 3, "title": "call "f" with ", commas", "evidence": "f("a", "b")"}]}"#;
        let r = parse_report(block);
        assert_eq!(r.findings.len(), 2, "{r:?}");
        assert_eq!(
            r.findings[0].evidence.as_deref(),
            Some(r#"cursor.execute("SELECT * FROM users WHERE name = '" + name + "'")"#)
        );
        assert_eq!(r.findings[1].title, r#"call "f" with ", commas"#);
        assert_eq!(r.findings[1].evidence.as_deref(), Some(r#"f("a", "b")"#));
    }

    #[test]
    fn quoted_json_in_evidence_stays_one_string() {
        // `"v", "b":` looks like the next member; only the second pass,
        // which ends strings at the format's keys, reads it right.
        let block = r#"{"findings": [{"path": "a.js", "line": 1, "title": "t", "evidence": "const o = {"a": "v", "b": 2}"}]}"#;
        let r = parse_report(block);
        assert_eq!(r.findings.len(), 1, "{r:?}");
        assert_eq!(
            r.findings[0].evidence.as_deref(),
            Some(r#"const o = {"a": "v", "b": 2}"#)
        );
    }

    #[test]
    fn trailing_commas_comments_and_single_quotes_are_repaired() {
        let text = "```json\n{'findings': [\n  // the first\n  {'path': 'a.py', line: 3, \"title\": 'it''s', \"evidence\": 'x = \"1\"',},\n],}\n```";
        let r = parse_report(text);
        assert_eq!(r.findings.len(), 1, "{r:?}");
        assert_eq!(r.findings[0].evidence.as_deref(), Some("x = \"1\""));
        let HowParsed::Repaired { repairs } = &r.how else {
            panic!("{:?}", r.how)
        };
        for want in [
            Repair::TrailingCommas,
            Repair::Comments,
            Repair::SingleQuotes,
            Repair::BareKeys,
        ] {
            assert!(repairs.contains(&want), "{want:?} in {repairs:?}");
        }
    }

    #[test]
    fn a_truncated_block_keeps_its_complete_entries_and_the_cut_one() {
        let text = "Summary.\n```json\n{\"findings\": [\n {\"path\": \"a.py\", \"line\": 3, \"title\": \"first\", \"evidence\": \"x\"},\n {\"path\": \"b.py\", \"line\": 4, \"title\": \"second\", \"evidence\": \"eval(req";
        let r = parse_report(text);
        assert!(r.parsed);
        assert_eq!(r.findings.len(), 2, "{r:?}");
        assert_eq!(r.findings[1].evidence.as_deref(), Some("eval(req"));
        assert!(
            matches!(&r.how, HowParsed::Repaired { repairs } if repairs.contains(&Repair::Truncated))
        );
        // Cut after a key: the entry has no line and is kept as a claim.
        let r = parse_report("{\"findings\": [{\"path\": \"a.py\", \"line\"");
        assert!(r.parsed);
        assert!(r.findings.is_empty());
        assert_eq!(r.rejected, vec!["entry 1: no line number"]);
        assert_eq!(r.unparsed[0].path.as_deref(), Some("a.py"));
    }

    #[test]
    fn a_truncated_block_without_a_fence_is_read_to_its_end() {
        let text = "Here: {\"findings\": [{\"path\": \"a.py\", \"line\": 3, \"title\": \"a\"}, {\"path\": \"b.py\", \"line\": 9, \"title\": \"b\"";
        let r = parse_report(text);
        assert_eq!(r.findings.len(), 2, "{r:?}");
    }

    #[test]
    fn repair_never_panics_and_only_returns_json() {
        let mut rng = fastrand::Rng::with_seed(0x5eed);
        let alphabet: Vec<char> = "{}[]\"':,\\/*\n\t abc1-.eEtrufnl_é…".chars().collect();
        for _ in 0..3000 {
            let len = rng.usize(0..60);
            let text: String = (0..len)
                .map(|_| alphabet[rng.usize(0..alphabet.len())])
                .collect();
            if let Some((value, _)) = repair_json(&text) {
                assert!(serde_json::to_string(&value).is_ok());
            }
            let _ = parse_report(&text);
            let _ = strip_marker(&text);
        }
        // Every cut of a real answer: no panic, and a cut inside the
        // second entry still yields the first.
        let full = BROKEN_SQL_BLOCK.replace(
            "]}\n```\n[TASK_COMPLETE]",
            ", {\"path\": \"b.py\", \"line\": 2, \"title\": \"x\"}]}",
        );
        let first_end = full.find("\"'\"}").map_or(0, |i| i + 4);
        for (cut, _) in full.char_indices() {
            let r = parse_report(&full[..cut]);
            if cut > first_end + 3 {
                assert!(!r.findings.is_empty(), "cut at {cut}: {:?}", &full[..cut]);
            }
        }
    }
}
