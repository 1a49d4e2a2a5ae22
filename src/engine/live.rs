//! What of a function runs, for the skeptic's source check: a small
//! evaluator over the numbered lines, not a parser.
//!
//! Takes a function's lines (as [`super::source_check`] found them) and
//! gives them back as they run: the arm of an `if`, a conditional
//! expression, a `switch` or a Python `match` that a constant condition
//! rules out is blanked, and a read of a map or a list under a literal key
//! or index is replaced by the value put there (the line of the put is
//! kept, for the data flow). A condition is constant when it is made of
//! integer and string literals and of locals the function sets exactly
//! once, to such a value (`int limit = 4;`, `mode = "b"`). Calls and
//! methods (even on a literal) are not evaluated. Anything it cannot
//! evaluate, or a
//! collection used in a way it does not know, leaves the lines as they
//! were: the check then judges them as before.
//!
//! Every step works on tokens of one line with their byte spans, so the
//! rewritten lines keep their columns; nothing here can panic on odd
//! input (indices are checked, arithmetic is checked).

use std::collections::BTreeMap;

/// How a language delimits its blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Family {
    /// Braces: C, Java, JavaScript, Go, PHP and their kin.
    Braces,
    /// Indentation: Python.
    Indent,
}

/// One token of a line.
#[derive(Clone, Debug, PartialEq)]
enum Kind {
    /// A name (`$` and `_` included).
    Ident(String),
    /// A decimal integer; `None` for other numbers.
    Num(Option<i64>),
    /// A string or character literal; `None` when it is formatted
    /// (`f"…{x}"`, a template with `${`, PHP's `"…$x"`).
    Str(Option<String>),
    /// An operator or a bracket.
    Punct(&'static str),
}

#[derive(Clone, Debug)]
struct Tok {
    kind: Kind,
    line: u32,
    start: usize,
    end: usize,
}

impl Tok {
    fn is(&self, p: &str) -> bool {
        matches!(&self.kind, Kind::Punct(q) if *q == p)
    }

    fn ident(&self) -> Option<&str> {
        match &self.kind {
            Kind::Ident(s) => Some(s),
            _ => None,
        }
    }

    fn is_word(&self, w: &str) -> bool {
        self.ident() == Some(w)
    }
}

/// Operators, longest first.
const PUNCT: &[&str] = &[
    "===", "!==", "**=", "<<=", ">>=", "...", "==", "!=", "<=", ">=", "&&", "||", ":=", "+=", "-=",
    "*=", "/=", "%=", ".=", "++", "--", "->", "=>", "::", "**", "??", "?.", "<<", ">>", "{", "}",
    "(", ")", "[", "]", ";", ",", ".", ":", "?", "=", "+", "-", "*", "/", "%", "<", ">", "!", "&",
    "|", "^", "~", "@", "#", "\\",
];

/// The tokens of one line; a line comment ends it.
fn lex(text: &str, line: u32, family: Family) -> Vec<Tok> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let comment = match family {
            Family::Indent => c == b'#',
            Family::Braces => c == b'/' && bytes.get(i + 1) == Some(&b'/'),
        };
        if comment {
            break;
        }
        if family == Family::Braces && c == b'/' && bytes.get(i + 1) == Some(&b'*') {
            let close = text[i + 2..]
                .find("*/")
                .map_or(bytes.len(), |k| i + 2 + k + 2);
            i = close;
            continue;
        }
        let start = i;
        if c == b'"' || c == b'\'' || c == b'`' {
            let mut j = i + 1;
            let mut body = String::new();
            let mut closed = false;
            while j < bytes.len() {
                if bytes[j] == b'\\' {
                    j += 2;
                    continue;
                }
                if bytes[j] == c {
                    closed = true;
                    break;
                }
                j += 1;
            }
            let end = if closed { j + 1 } else { bytes.len() };
            if closed {
                body.push_str(text.get(i + 1..j).unwrap_or_default());
            }
            let prefixed = out.last().is_some_and(|t: &Tok| {
                t.end == start
                    && t.ident()
                        .is_some_and(|p| p.len() <= 2 && p.chars().any(|ch| ch == 'f' || ch == 'F'))
            });
            // PHP interpolates `$x` in double quotes; Java and C do not, and
            // then such a literal is only taken for not constant.
            let formatted = !closed
                || prefixed
                || (c == b'`' && body.contains("${"))
                || (c == b'"' && body.contains('$'));
            out.push(Tok {
                kind: Kind::Str(if formatted { None } else { Some(body) }),
                line,
                start,
                end,
            });
            i = end;
            continue;
        }
        if c.is_ascii_digit() {
            let mut j = i;
            while j < bytes.len() && (bytes[j].is_ascii_alphanumeric() || bytes[j] == b'_') {
                j += 1;
            }
            let digits = text.get(i..j).unwrap_or_default();
            out.push(Tok {
                kind: Kind::Num(digits.parse().ok()),
                line,
                start,
                end: j,
            });
            i = j;
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' || c == b'$' {
            let mut j = i + 1;
            while j < bytes.len()
                && (bytes[j].is_ascii_alphanumeric() || bytes[j] == b'_' || bytes[j] == b'$')
            {
                j += 1;
            }
            out.push(Tok {
                kind: Kind::Ident(text.get(i..j).unwrap_or_default().to_string()),
                line,
                start,
                end: j,
            });
            i = j;
            continue;
        }
        let rest = text.get(i..).unwrap_or_default();
        match PUNCT.iter().find(|p| rest.starts_with(**p)) {
            Some(p) => {
                out.push(Tok {
                    kind: Kind::Punct(p),
                    line,
                    start,
                    end: i + p.len(),
                });
                i += p.len();
            }
            // A character of no token (non-ASCII, a stray byte): skipped
            // to the next character boundary.
            None => {
                i += rest.chars().next().map_or(1, char::len_utf8);
            }
        }
    }
    out
}

/// A constant value.
#[derive(Clone, Debug, PartialEq)]
enum Val {
    Int(i64),
    Str(String),
    Bool(bool),
}

impl Val {
    /// The key a map is filled and read under.
    fn key(&self) -> String {
        match self {
            Val::Int(n) => format!("#{n}"),
            Val::Str(s) => format!("'{s}"),
            Val::Bool(b) => format!("?{b}"),
        }
    }
}

/// Evaluates `toks` (all of them) with the constants known; `None` when
/// any part is not constant or not understood.
fn eval(toks: &[Tok], consts: &BTreeMap<String, Val>) -> Option<Val> {
    let mut p = Eval {
        toks,
        at: 0,
        consts,
    };
    let v = p.or()?;
    (p.at == toks.len()).then_some(v)
}

struct Eval<'a> {
    toks: &'a [Tok],
    at: usize,
    consts: &'a BTreeMap<String, Val>,
}

impl Eval<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.at)
    }

    fn eat(&mut self, p: &str) -> bool {
        if self.peek().is_some_and(|t| t.is(p) || t.is_word(p)) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn or(&mut self) -> Option<Val> {
        let mut v = self.and()?;
        while self.eat("||") || self.eat("or") {
            let r = self.and()?;
            v = Val::Bool(truth(&v)? || truth(&r)?);
        }
        Some(v)
    }

    fn and(&mut self) -> Option<Val> {
        let mut v = self.not()?;
        while self.eat("&&") || self.eat("and") {
            let r = self.not()?;
            v = Val::Bool(truth(&v)? && truth(&r)?);
        }
        Some(v)
    }

    fn not(&mut self) -> Option<Val> {
        if self.eat("!") || self.eat("not") {
            let v = self.not()?;
            return Some(Val::Bool(!truth(&v)?));
        }
        self.cmp()
    }

    fn cmp(&mut self) -> Option<Val> {
        let l = self.sum()?;
        for op in ["===", "!==", "==", "!=", "<=", ">=", "<", ">"] {
            if self.eat(op) {
                let r = self.sum()?;
                let b = match (&l, &r) {
                    (Val::Int(a), Val::Int(b)) => match op {
                        "===" | "==" => a == b,
                        "!==" | "!=" => a != b,
                        "<=" => a <= b,
                        ">=" => a >= b,
                        "<" => a < b,
                        _ => a > b,
                    },
                    (a, b) => match op {
                        "===" | "==" => a == b,
                        "!==" | "!=" => a != b,
                        _ => return None,
                    },
                };
                return Some(Val::Bool(b));
            }
        }
        Some(l)
    }

    fn sum(&mut self) -> Option<Val> {
        let mut v = self.product()?;
        loop {
            if self.eat("+") {
                let r = self.product()?;
                v = match (v, r) {
                    (Val::Int(a), Val::Int(b)) => Val::Int(a.checked_add(b)?),
                    (Val::Str(a), Val::Str(b)) => Val::Str(a + &b),
                    _ => return None,
                };
            } else if self.eat("-") {
                let r = self.product()?;
                v = Val::Int(int(&v)?.checked_sub(int(&r)?)?);
            } else {
                return Some(v);
            }
        }
    }

    fn product(&mut self) -> Option<Val> {
        let mut v = self.unary()?;
        loop {
            let op = if self.eat("*") {
                '*'
            } else if self.eat("/") {
                '/'
            } else if self.eat("%") {
                '%'
            } else {
                return Some(v);
            };
            let (a, b) = (int(&v)?, int(&self.unary()?)?);
            v = Val::Int(match op {
                '*' => a.checked_mul(b)?,
                // Integer division as Java, C, Go and PHP's `intdiv` do.
                '/' => a.checked_div(b)?,
                _ => a.checked_rem(b)?,
            });
        }
    }

    fn unary(&mut self) -> Option<Val> {
        if self.eat("-") {
            return Some(Val::Int(int(&self.unary()?)?.checked_neg()?));
        }
        self.primary()
    }

    fn primary(&mut self) -> Option<Val> {
        let t = self.peek()?.clone();
        self.at += 1;
        match &t.kind {
            Kind::Num(n) => n.map(Val::Int),
            Kind::Str(s) => s.clone().map(Val::Str),
            Kind::Punct("(") => {
                // A cast (`(int)`) or a parenthesised expression.
                if let (Some(a), Some(b)) = (self.toks.get(self.at), self.toks.get(self.at + 1))
                    && a.ident().is_some_and(|w| CASTS.contains(&w))
                    && b.is(")")
                {
                    self.at += 2;
                    return self.unary();
                }
                let v = self.or()?;
                self.eat(")").then_some(v)
            }
            Kind::Ident(w) => match w.as_str() {
                "true" | "True" => Some(Val::Bool(true)),
                "false" | "False" => Some(Val::Bool(false)),
                _ => self.consts.get(w).cloned(),
            },
            Kind::Punct(_) => None,
        }
    }
}

const CASTS: &[&str] = &["int", "long", "short", "byte"];

fn truth(v: &Val) -> Option<bool> {
    match v {
        Val::Bool(b) => Some(*b),
        Val::Int(n) => Some(*n != 0),
        Val::Str(_) => None,
    }
}

fn int(v: &Val) -> Option<i64> {
    match v {
        Val::Int(n) => Some(*n),
        _ => None,
    }
}

/// The function's lines as they run, and where a rewritten read's value
/// was put.
pub(crate) struct Live {
    /// Every line given, with dead arms blanked and collection reads
    /// replaced.
    pub(crate) lines: BTreeMap<u32, String>,
    /// A line whose collection read was replaced → the line of the put.
    pub(crate) via: BTreeMap<u32, u32>,
}

/// The lines from `start` (the function's first) on as they run, for the
/// line `end` being judged (see the module's header): constants are those
/// the function sets up to `end`; lines above `start` are unchanged.
pub(crate) fn live(family: Family, lines: &BTreeMap<u32, String>, start: u32, end: u32) -> Live {
    let mut out = lines.clone();
    if start > end {
        return Live {
            lines: out,
            via: BTreeMap::new(),
        };
    }
    // The lines below the one judged are read too: a block opened above
    // it closes there.
    let body: Vec<(u32, Vec<Tok>)> = lines
        .range(start..)
        .map(|(n, t)| (*n, lex(t, *n, family)))
        .collect();
    let upto = body.iter().take_while(|(n, _)| *n <= end).count();
    let consts = constants(&body[..upto]);
    let mut dead: Vec<(usize, usize)> = Vec::new();
    let flat: Vec<Tok> = body.iter().flat_map(|(_, t)| t.iter().cloned()).collect();
    match family {
        Family::Braces => {
            braces_branches(&flat, &consts, &mut dead);
            switches(&flat, &consts, &mut dead);
        }
        Family::Indent => python_branches(lines, &body, &consts, &mut dead),
    }
    ternaries(family, &body, &consts, &mut dead);
    blank(&mut out, &flat, &dead);
    let mut via = BTreeMap::new();
    collections(family, &mut out, start, end, &mut via);
    Live { lines: out, via }
}

/// Blanks the token ranges `dead` (inclusive indices into `flat`).
fn blank(out: &mut BTreeMap<u32, String>, flat: &[Tok], dead: &[(usize, usize)]) {
    for &(a, b) in dead {
        let (Some(first), Some(last)) = (flat.get(a), flat.get(b)) else {
            continue;
        };
        for (n, text) in out.range_mut(first.line..=last.line) {
            let from = if *n == first.line { first.start } else { 0 };
            let to = if *n == last.line {
                last.end
            } else {
                text.len()
            };
            blank_span(text, from, to);
        }
    }
}

/// Replaces the bytes `from..to` of `text` with spaces (on character
/// boundaries; an impossible span is left alone).
fn blank_span(text: &mut String, from: usize, to: usize) {
    let to = to.min(text.len());
    if from >= to || !text.is_char_boundary(from) || !text.is_char_boundary(to) {
        return;
    }
    let spaces = " ".repeat(text[from..to].chars().count());
    text.replace_range(from..to, &spaces);
}

/// The locals set exactly once in the function, to a constant value, in
/// the order they are set.
fn constants(body: &[(u32, Vec<Tok>)]) -> BTreeMap<String, Val> {
    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    let mut sets: Vec<(String, Vec<Tok>)> = Vec::new();
    for (_, toks) in body {
        for (i, t) in toks.iter().enumerate() {
            let Some(name) = t.ident() else { continue };
            let prev = i.checked_sub(1).and_then(|k| toks.get(k));
            if prev.is_some_and(|p| p.is(".") || p.is("->") || p.is("::")) {
                continue;
            }
            let Some(next) = toks.get(i + 1) else {
                continue;
            };
            let changed = ["+=", "-=", "*=", "/=", "%=", ".=", "++", "--", "**="]
                .iter()
                .any(|op| next.is(op))
                || prev.is_some_and(|p| p.is("++") || p.is("--") || p.is_word("for"));
            if changed {
                *count.entry(name.to_string()).or_default() += 2;
                continue;
            }
            // `x = …` as a statement or a declaration, not a keyword
            // argument (`f(x=1)`).
            let declared = prev.is_none_or(|p| {
                p.ident().is_some() || p.is("*") || p.is(">") || p.is(";") || p.is("{") || p.is("}")
            });
            if (next.is("=") || next.is(":=")) && declared {
                *count.entry(name.to_string()).or_default() += 1;
                let rhs: Vec<Tok> = toks[i + 2..]
                    .iter()
                    .take_while(|t| !t.is(";"))
                    .cloned()
                    .collect();
                sets.push((name.to_string(), rhs));
            }
        }
    }
    let mut consts = BTreeMap::new();
    for (name, rhs) in sets {
        if count.get(&name) != Some(&1) {
            continue;
        }
        if let Some(v) = eval(&rhs, &consts) {
            consts.insert(name, v);
        }
    }
    consts
}

/// The index of the bracket closing the one at `open`.
fn closing(flat: &[Tok], open: usize) -> Option<usize> {
    let (o, c) = match &flat.get(open)?.kind {
        Kind::Punct("(") => ("(", ")"),
        Kind::Punct("[") => ("[", "]"),
        Kind::Punct("{") => ("{", "}"),
        _ => return None,
    };
    let mut depth = 0usize;
    for (k, t) in flat.iter().enumerate().skip(open) {
        if t.is(o) {
            depth += 1;
        } else if t.is(c) {
            depth = depth.checked_sub(1)?;
            if depth == 0 {
                return Some(k);
            }
        }
    }
    None
}

/// The last token of the statement starting at `at`: a block, an `if`
/// with its arms, or up to its `;` (Go: its line).
fn statement_end(flat: &[Tok], at: usize) -> Option<usize> {
    let t = flat.get(at)?;
    if t.is("{") {
        return closing(flat, at);
    }
    if t.is_word("if") {
        let (_, then_at) = condition(flat, at)?;
        let then_end = statement_end(flat, then_at)?;
        if flat.get(then_end + 1).is_some_and(|e| e.is_word("else")) {
            return statement_end(flat, then_end + 2);
        }
        return Some(then_end);
    }
    let mut k = at;
    while let Some(t) = flat.get(k) {
        if t.is("(") || t.is("[") || t.is("{") {
            k = closing(flat, k)?;
        } else if t.is(";") {
            return Some(k);
        } else if t.is("}") {
            return k.checked_sub(1);
        }
        if flat.get(k + 1).is_some_and(|n| n.line != t.line) && !t.is(",") && !t.is("+") {
            // A statement without `;` (Go, JavaScript) ends with its line.
            return Some(k);
        }
        k += 1;
    }
    None
}

/// The condition's tokens of the `if` at `at`, and where its arm starts:
/// `if (c) …` or Go's `if c {`.
fn condition(flat: &[Tok], at: usize) -> Option<(std::ops::Range<usize>, usize)> {
    let line = flat.get(at)?.line;
    let open = at + 1;
    if flat.get(open)?.is("(") {
        let close = closing(flat, open)?;
        // Go's `if (a) - b > c {`: an operator after the parentheses
        // continues the condition; anything else starts the arm.
        let next = flat.get(close + 1);
        let continues = next.is_some_and(|t| {
            t.line == line && matches!(t.kind, Kind::Punct(p) if p != "{" && p != "(" && p != ";")
        });
        if !continues {
            return Some((open + 1..close, close + 1));
        }
    }
    // Go: up to the `{` at depth 0 on the same line.
    let mut k = open;
    while let Some(t) = flat.get(k) {
        if t.line != line {
            return None;
        }
        if t.is("(") || t.is("[") {
            k = closing(flat, k)? + 1;
            continue;
        }
        if t.is("{") {
            return Some((open..k, k));
        }
        k += 1;
    }
    None
}

/// `if` statements of brace languages whose condition is constant: the
/// arm that never runs is dead.
fn braces_branches(flat: &[Tok], consts: &BTreeMap<String, Val>, dead: &mut Vec<(usize, usize)>) {
    for (i, t) in flat.iter().enumerate() {
        if !t.is_word("if")
            || i.checked_sub(1)
                .and_then(|k| flat.get(k))
                .is_some_and(|p| p.is("."))
        {
            continue;
        }
        let Some((cond, then_at)) = condition(flat, i) else {
            continue;
        };
        // `if (x) {` with `(x)` the whole condition, or Go's.
        let cond_toks = flat.get(cond.clone()).unwrap_or_default();
        let Some(value) = eval(cond_toks, consts).and_then(|v| truth(&v)) else {
            continue;
        };
        let Some(then_end) = statement_end(flat, then_at) else {
            continue;
        };
        let has_else = flat.get(then_end + 1).is_some_and(|e| e.is_word("else"));
        if value {
            if has_else && let Some(else_end) = statement_end(flat, then_end + 2) {
                dead.push((then_end + 1, else_end));
            }
        } else {
            dead.push((then_at, then_end));
        }
    }
}

/// `switch` statements on a constant: the arms that do not run are dead
/// (C-like languages fall through to the next `break`; Go's arms end at
/// the next `case` unless one says `fallthrough`, which is left alone).
fn switches(flat: &[Tok], consts: &BTreeMap<String, Val>, dead: &mut Vec<(usize, usize)>) {
    for (i, t) in flat.iter().enumerate() {
        if !t.is_word("switch") {
            continue;
        }
        // The target: `(x)` or Go's `x` up to the `{`.
        let Some(open) = flat[i + 1..]
            .iter()
            .position(|t| t.is("{"))
            .map(|k| i + 1 + k)
        else {
            continue;
        };
        let mut target = flat.get(i + 1..open).unwrap_or_default();
        if target.first().is_some_and(|t| t.is("(")) && closing(flat, i + 1) == Some(open - 1) {
            target = flat.get(i + 2..open - 1).unwrap_or_default();
        }
        let Some(value) = eval(target, consts) else {
            continue;
        };
        let Some(close) = closing(flat, open) else {
            continue;
        };
        // Go's `switch x {` has no parentheses and no fall-through
        // (unless it says so, which is left alone).
        let go = flat[i + 1..open].iter().all(|t| !t.is("("));
        if flat[open..close]
            .iter()
            .any(|t| t.is_word("fallthrough") || t.is("->"))
        {
            continue;
        }
        // Arms: (labels' values or default, body start, body end).
        let mut arms: Vec<(Option<Vec<Val>>, usize, usize)> = Vec::new();
        let mut k = open + 1;
        let mut ok = true;
        while k < close {
            let tk = &flat[k];
            if tk.is("{") || tk.is("(") || tk.is("[") {
                k = closing(flat, k).unwrap_or(close) + 1;
                continue;
            }
            if tk.is_word("case") || tk.is_word("default") {
                let Some(colon) = flat[k..close].iter().position(|t| t.is(":")).map(|p| k + p)
                else {
                    ok = false;
                    break;
                };
                let labels = if tk.is_word("default") {
                    None
                } else {
                    let mut vals = Vec::new();
                    for part in flat[k + 1..colon].split(|t| t.is(",")) {
                        match eval(part, consts) {
                            Some(v) => vals.push(v),
                            None => ok = false,
                        }
                    }
                    Some(vals)
                };
                if let Some(last) = arms.last_mut() {
                    last.2 = k;
                }
                arms.push((labels, colon + 1, close));
                k = colon + 1;
                continue;
            }
            k += 1;
        }
        if !ok || arms.is_empty() {
            continue;
        }
        let chosen = arms
            .iter()
            .position(|(l, _, _)| l.as_ref().is_some_and(|vals| vals.contains(&value)))
            .or_else(|| arms.iter().position(|(l, _, _)| l.is_none()));
        // The tokens that run: from the chosen arm's body to its `break`.
        let (run_from, run_to) = match chosen {
            None => (close, close),
            Some(c) => {
                let from = arms[c].1;
                if go {
                    (from, arms[c].2)
                } else {
                    let mut to = close;
                    let mut k = from;
                    while k < close {
                        if flat[k].is("{") || flat[k].is("(") || flat[k].is("[") {
                            k = closing(flat, k).unwrap_or(close) + 1;
                            continue;
                        }
                        if flat[k].is_word("break") {
                            to = k;
                            break;
                        }
                        k += 1;
                    }
                    (from, to)
                }
            }
        };
        for (_, from, to) in &arms {
            // Each arm's body minus what runs.
            let (a, b) = (*from, *to);
            if b <= a {
                continue;
            }
            if b <= run_from || a >= run_to {
                dead.push((a, b - 1));
            } else {
                if a < run_from {
                    dead.push((a, run_from - 1));
                }
                if run_to < b {
                    dead.push((run_to, b - 1));
                }
            }
        }
    }
}

/// Conditional expressions with a constant condition: `c ? a : b`
/// (Python: `a if c else b`) keeps only the arm taken.
fn ternaries(
    family: Family,
    body: &[(u32, Vec<Tok>)],
    consts: &BTreeMap<String, Val>,
    dead: &mut Vec<(usize, usize)>,
) {
    let mut base = 0;
    for (_, toks) in body {
        let offset = base;
        base += toks.len();
        // The right side of the line's assignment.
        let Some(eq) = toks.iter().position(|t| t.is("=") || t.is(":=")) else {
            continue;
        };
        let rhs_end = toks.iter().rposition(|t| !t.is(";")).unwrap_or(0);
        if rhs_end <= eq {
            continue;
        }
        let depth0 = |from: usize, what: &str| -> Option<usize> {
            let mut depth = 0i32;
            for (k, t) in toks.iter().enumerate().skip(from) {
                if t.is("(") || t.is("[") || t.is("{") {
                    depth += 1;
                } else if t.is(")") || t.is("]") || t.is("}") {
                    depth -= 1;
                } else if depth == 0 && (t.is(what) || t.is_word(what)) {
                    return Some(k);
                }
            }
            None
        };
        match family {
            Family::Braces => {
                let Some(q) = depth0(eq + 1, "?") else {
                    continue;
                };
                let Some(colon) = depth0(q + 1, ":") else {
                    continue;
                };
                let Some(value) = eval(&toks[eq + 1..q], consts).and_then(|v| truth(&v)) else {
                    continue;
                };
                if value {
                    dead.push((offset + eq + 1, offset + q));
                    dead.push((offset + colon, offset + rhs_end));
                } else {
                    dead.push((offset + eq + 1, offset + colon));
                }
            }
            Family::Indent => {
                let Some(i) = depth0(eq + 1, "if") else {
                    continue;
                };
                let Some(e) = depth0(i + 1, "else") else {
                    continue;
                };
                let Some(value) = eval(&toks[i + 1..e], consts).and_then(|v| truth(&v)) else {
                    continue;
                };
                if value {
                    dead.push((offset + i, offset + rhs_end));
                } else {
                    dead.push((offset + eq + 1, offset + e));
                }
            }
        }
    }
}

/// Python's `if`/`elif`/`else` chains and `match` statements on
/// constants, by indentation.
fn python_branches(
    lines: &BTreeMap<u32, String>,
    body: &[(u32, Vec<Tok>)],
    consts: &BTreeMap<String, Val>,
    dead: &mut Vec<(usize, usize)>,
) {
    let indent = |n: u32| -> Option<usize> {
        let t = lines.get(&n)?;
        (!t.trim().is_empty() && !t.trim_start().starts_with('#'))
            .then(|| t.len() - t.trim_start().len())
    };
    // The index in `flat` of a line's first and last tokens.
    let mut spans: BTreeMap<u32, (usize, usize)> = BTreeMap::new();
    let mut base = 0;
    for (n, toks) in body {
        if !toks.is_empty() {
            spans.insert(*n, (base, base + toks.len() - 1));
        }
        base += toks.len();
    }
    let numbers: Vec<u32> = body.iter().map(|(n, _)| *n).collect();
    // The lines of the block under the header at `numbers[h]`.
    let block = |h: usize| -> Vec<u32> {
        let Some(own) = numbers.get(h).and_then(|n| indent(*n)) else {
            return Vec::new();
        };
        numbers[h + 1..]
            .iter()
            .copied()
            .take_while(|n| indent(*n).is_none_or(|i| i > own))
            .filter(|n| indent(*n).is_some())
            .collect()
    };
    let kill = |lines_: &[u32], dead: &mut Vec<(usize, usize)>| {
        for n in lines_ {
            if let Some(&(a, b)) = spans.get(n) {
                dead.push((a, b));
            }
        }
    };
    for (h, (n, toks)) in body.iter().enumerate() {
        let Some(first) = toks.first() else { continue };
        let Some(own) = indent(*n) else { continue };
        if first.is_word("if") {
            // The chain: this `if`, then `elif`s and an `else` at its
            // indentation.
            let mut arms: Vec<(usize, Option<&[Tok]>)> = vec![(h, cond_of(toks))];
            let mut k = h + 1;
            while k < body.len() {
                let Some(i) = indent(numbers[k]) else {
                    k += 1;
                    continue;
                };
                if i < own {
                    break;
                }
                if i == own {
                    let t = &body[k].1;
                    match t.first() {
                        Some(w) if w.is_word("elif") => arms.push((k, cond_of(t))),
                        Some(w) if w.is_word("else") => {
                            arms.push((k, None));
                            break;
                        }
                        _ => break,
                    }
                }
                k += 1;
            }
            let Some(taken) = taken_arm(&arms, consts) else {
                continue;
            };
            for (a, (line_at, _)) in arms.iter().enumerate() {
                if Some(a) != taken {
                    kill(&block(*line_at), dead);
                }
            }
        } else if first.is_word("match") && toks.last().is_some_and(|t| t.is(":")) {
            let Some(value) = eval(&toks[1..toks.len() - 1], consts) else {
                continue;
            };
            let under: Vec<(usize, &[Tok])> = (h + 1..body.len())
                .filter_map(|k| Some((k, indent(numbers[k])?)))
                .take_while(|(_, i)| *i > own)
                .map(|(k, _)| (k, body[k].1.as_slice()))
                .collect();
            let Some(cases) = match_cases(&under, consts) else {
                continue;
            };
            let taken = cases
                .iter()
                .position(|(_, v)| v.as_ref().is_none_or(|vals| vals.contains(&value)));
            for (c, (line_at, _)) in cases.iter().enumerate() {
                if Some(c) != taken {
                    kill(&block(*line_at), dead);
                }
            }
        }
    }
}

/// Which arm of an `if` chain (each arm's line index and condition, `None`
/// for `else`) runs: `Some(Some(a))`, `Some(None)` when none does, `None`
/// when a condition before the one taken is not constant.
fn taken_arm(
    arms: &[(usize, Option<&[Tok]>)],
    consts: &BTreeMap<String, Val>,
) -> Option<Option<usize>> {
    for (a, (_, cond)) in arms.iter().enumerate() {
        match cond {
            None => return Some(Some(a)),
            Some(c) => match eval(c, consts).and_then(|v| truth(&v)) {
                Some(true) => return Some(Some(a)),
                Some(false) => {}
                None => return None,
            },
        }
    }
    Some(None)
}

/// The `case` lines among the lines `under` a `match` (line index and
/// tokens), each with the constant values it matches (`None` for `_`);
/// `None` when a pattern is not constant.
fn match_cases(
    under: &[(usize, &[Tok])],
    consts: &BTreeMap<String, Val>,
) -> Option<Vec<(usize, Option<Vec<Val>>)>> {
    let mut cases = Vec::new();
    for &(k, t) in under {
        if !(t.first().is_some_and(|w| w.is_word("case")) && t.last().is_some_and(|c| c.is(":"))) {
            continue;
        }
        let pat = &t[1..t.len() - 1];
        if pat.len() == 1 && pat[0].is_word("_") {
            cases.push((k, None));
        } else {
            let vals = pat
                .split(|t| t.is("|"))
                .map(|part| eval(part, consts))
                .collect::<Option<Vec<Val>>>()?;
            cases.push((k, Some(vals)));
        }
    }
    Some(cases)
}

/// `if c:` / `elif c:` → the tokens of `c` (a one-line body after the
/// colon is not handled: `None` stands for "not a plain header").
fn cond_of(toks: &[Tok]) -> Option<&[Tok]> {
    if toks.last().is_some_and(|t| t.is(":")) && toks.len() > 2 {
        Some(&toks[1..toks.len() - 1])
    } else {
        // A header this does not read (a one-liner): never constant.
        Some(&[])
    }
}

/// A collection's contents as put, in order.
#[derive(Default)]
struct Contents {
    map: BTreeMap<String, (u32, String)>,
    list: Vec<(u32, String)>,
}

/// Replaces reads of a local map or list under a literal key or index
/// (`m.get("k")`, `m["k"]`, `values.get(1)`, `values[0]`) by the value put
/// there, when every use of the collection before the read is one this
/// knows.
fn collections(
    family: Family,
    out: &mut BTreeMap<u32, String>,
    start: u32,
    end: u32,
    via: &mut BTreeMap<u32, u32>,
) {
    let Some(first) = start.checked_add(1).filter(|f| *f <= end) else {
        return;
    };
    let numbers: Vec<u32> = out.range(first..=end).map(|(n, _)| *n).collect();
    for &n in &numbers {
        let Some(text) = out.get(&n).cloned() else {
            continue;
        };
        let toks = lex(&text, n, family);
        let Some((name, key, from, to)) = read_in(&toks) else {
            continue;
        };
        let Some(contents) = simulate(family, out, start, n, &name) else {
            continue;
        };
        let found = match &key {
            Val::Int(i) if contents.map.is_empty() => usize::try_from(*i)
                .ok()
                .and_then(|i| contents.list.get(i).cloned()),
            k if contents.list.is_empty() => contents.map.get(&k.key()).cloned(),
            _ => None,
        };
        let Some((at, value)) = found else { continue };
        let (Some(a), Some(b)) = (toks.get(from), toks.get(to)) else {
            continue;
        };
        let mut rewritten = text.clone();
        if rewritten.is_char_boundary(a.start)
            && rewritten.is_char_boundary(b.end)
            && b.end <= rewritten.len()
        {
            rewritten.replace_range(a.start..b.end, &format!("({value})"));
            out.insert(n, rewritten);
            via.insert(n, at);
        }
    }
}

/// The first read of a collection under a literal in `toks`: its name,
/// the key and the token span to replace (a cast before it included).
fn read_in(toks: &[Tok]) -> Option<(String, Val, usize, usize)> {
    for (i, t) in toks.iter().enumerate() {
        let Some(name) = t.ident() else { continue };
        if i > 0 && (toks[i - 1].is(".") || toks[i - 1].is("->")) {
            continue;
        }
        let lit = |k: usize| -> Option<Val> {
            match &toks.get(k)?.kind {
                Kind::Num(Some(n)) => Some(Val::Int(*n)),
                Kind::Str(Some(s)) => Some(Val::Str(s.clone())),
                _ => None,
            }
        };
        // name.get(LIT)
        let dotted = toks.get(i + 1).is_some_and(|t| t.is("."))
            && toks.get(i + 2).is_some_and(|t| t.is_word("get"))
            && toks.get(i + 3).is_some_and(|t| t.is("("))
            && toks.get(i + 5).is_some_and(|t| t.is(")"));
        let (key, last) = if dotted {
            (lit(i + 4), i + 5)
        } else if toks.get(i + 1).is_some_and(|t| t.is("["))
            && toks.get(i + 3).is_some_and(|t| t.is("]"))
        {
            (lit(i + 2), i + 3)
        } else {
            continue;
        };
        let Some(key) = key else { continue };
        // A write (`m["k"] = v`) is not a read.
        if toks
            .get(last + 1)
            .is_some_and(|t| t.is("=") || t.is(":=") || t.is("+="))
        {
            continue;
        }
        // `(String) map.get(...)`: the cast goes with it.
        let mut from = i;
        if i >= 3 && toks[i - 1].is(")") && toks[i - 2].ident().is_some() && toks[i - 3].is("(") {
            from = i - 3;
        }
        return Some((name.to_string(), key, from, last));
    }
    None
}

/// What `name` holds before line `before`, from its uses in the function;
/// `None` at the first use this does not know.
fn simulate(
    family: Family,
    lines: &BTreeMap<u32, String>,
    start: u32,
    before: u32,
    name: &str,
) -> Option<Contents> {
    let mut c = Contents::default();
    let mut initialised = false;
    let first = start.checked_add(1).filter(|f| *f < before)?;
    for (&n, text) in lines.range(first..before) {
        let toks = lex(text, n, family);
        let uses: Vec<usize> = toks
            .iter()
            .enumerate()
            .filter(|(i, t)| {
                t.is_word(name) && !(*i > 0 && (toks[i - 1].is(".") || toks[i - 1].is("->")))
            })
            .map(|(i, _)| i)
            .collect();
        let Some(&i) = uses.first() else { continue };
        let step = Step {
            n,
            text,
            toks: &toks,
            i,
            uses: uses.len(),
            name,
        };
        if toks.get(i + 1).is_some_and(|t| t.is("=") || t.is(":=")) {
            step.assigned(&mut c, &mut initialised)?;
            continue;
        }
        if uses.len() != 1 || !initialised {
            return None;
        }
        step.changed(&mut c)?;
    }
    initialised.then_some(c)
}

/// One line of a collection's simulation: its tokens and the first use
/// of the collection's name (`i`), of `uses` on the line.
struct Step<'a> {
    n: u32,
    text: &'a str,
    toks: &'a [Tok],
    i: usize,
    uses: usize,
    name: &'a str,
}

impl Step<'_> {
    /// The source text of tokens `a..=b`.
    fn src(&self, a: usize, b: usize) -> Option<String> {
        let (x, y) = (self.toks.get(a)?, self.toks.get(b)?);
        self.text.get(x.start..y.end).map(str::to_string)
    }

    fn close_of(&self, open: usize) -> Option<usize> {
        closing(self.toks, open)
    }

    /// Whether the use is a call of its method `m`: `v.m(`.
    fn call(&self, m: &str) -> bool {
        let (toks, i) = (self.toks, self.i);
        toks.get(i + 1).is_some_and(|t| t.is("."))
            && toks.get(i + 2).is_some_and(|t| t.is_word(m))
            && toks.get(i + 3).is_some_and(|t| t.is("("))
    }

    /// An assignment to the collection: Go's `append` and re-slice, or a
    /// fresh, empty collection; `None` for any other value.
    fn assigned(&self, c: &mut Contents, initialised: &mut bool) -> Option<()> {
        let (toks, i, n, name) = (self.toks, self.i, self.n, self.name);
        let rhs = &toks[i + 2..];
        let rhs: Vec<&Tok> = rhs.iter().filter(|t| !t.is(";")).collect();
        // Go: `v = append(v, x)` and `v = v[1:]`.
        if rhs.first().is_some_and(|t| t.is_word("append"))
            && rhs.get(1).is_some_and(|t| t.is("("))
            && rhs.get(2).is_some_and(|t| t.is_word(name))
            && rhs.get(3).is_some_and(|t| t.is(","))
            && self.uses == 2
        {
            let close = self.close_of(i + 3)?;
            if toks[i + 6..close].iter().any(|t| t.is(",")) {
                return None;
            }
            c.list.push((n, self.src(i + 6, close - 1)?));
            return Some(());
        }
        if rhs.len() == 5
            && rhs[0].is_word(name)
            && rhs[1].is("[")
            && rhs[3].is(":")
            && rhs[4].is("]")
        {
            let Kind::Num(Some(k)) = rhs[2].kind else {
                return None;
            };
            let k = usize::try_from(k).ok()?.min(c.list.len());
            c.list.drain(..k);
            return Some(());
        }
        // A fresh, empty collection.
        let empty = self.uses == 1
            && !rhs
                .iter()
                .any(|t| matches!(t.kind, Kind::Str(_) | Kind::Num(_)))
            && rhs.len() >= 2
            && ((rhs[rhs.len() - 2].is("(") && rhs[rhs.len() - 1].is(")"))
                || (rhs[rhs.len() - 2].is("[") && rhs[rhs.len() - 1].is("]"))
                || (rhs[rhs.len() - 2].is("{") && rhs[rhs.len() - 1].is("}")));
        if !empty {
            return None;
        }
        *c = Contents::default();
        *initialised = true;
        Some(())
    }

    /// A change of the collection by a method, an index or a function;
    /// `None` for one the simulation does not follow.
    fn changed(&self, c: &mut Contents) -> Option<()> {
        let (toks, i, n) = (self.toks, self.i, self.n);
        if self.call("put") || self.call("set") {
            let close = self.close_of(i + 3)?;
            let key = match &toks.get(i + 4)?.kind {
                Kind::Num(Some(k)) => Val::Int(*k),
                Kind::Str(Some(s)) => Val::Str(s.clone()),
                _ => return None,
            };
            if !toks.get(i + 5)?.is(",") {
                return None;
            }
            c.map.insert(key.key(), (n, self.src(i + 6, close - 1)?));
            return Some(());
        }
        if self.call("add") || self.call("append") || self.call("push") || self.call("addLast") {
            let close = self.close_of(i + 3)?;
            if close == i + 4 || toks[i + 4..close].iter().any(|t| t.is(",")) {
                return None;
            }
            c.list.push((n, self.src(i + 4, close - 1)?));
            return Some(());
        }
        if self.call("remove")
            || self.call("pop")
            || self.call("shift")
            || self.call("removeFirst")
            || self.call("poll")
        {
            let close = self.close_of(i + 3)?;
            let m = toks.get(i + 2)?.ident()?;
            let at = match (close - (i + 4), toks.get(i + 4).map(|t| &t.kind)) {
                (0, _) if m == "pop" => c.list.len().checked_sub(1)?,
                (0, _) => 0,
                (1, Some(Kind::Num(Some(k)))) => usize::try_from(*k).ok()?,
                _ => return None,
            };
            // `remove(k)` on a map removes a key; only lists are followed.
            if !c.map.is_empty() || at >= c.list.len() {
                return None;
            }
            c.list.remove(at);
            return Some(());
        }
        if i >= 1 && toks[i - 1].is_word("del") && toks.get(i + 1).is_some_and(|t| t.is("[")) {
            let Kind::Num(Some(k)) = toks.get(i + 2)?.kind else {
                return None;
            };
            let k = usize::try_from(k).ok()?;
            if k >= c.list.len() {
                return None;
            }
            c.list.remove(k);
            return Some(());
        }
        if toks.get(i + 1).is_some_and(|t| t.is("[")) {
            return self.indexed(c);
        }
        // PHP: `array_shift($v)`, `array_push($v, x)`, Python's `del v[k]`.
        if i >= 2 && toks[i - 1].is("(") {
            let f = toks[i - 2].ident()?;
            let close = self.close_of(i - 1)?;
            match f {
                "array_shift" if close == i + 1 => {
                    if c.list.is_empty() {
                        return None;
                    }
                    c.list.remove(0);
                    return Some(());
                }
                "array_pop" if close == i + 1 => {
                    c.list.pop()?;
                    return Some(());
                }
                "array_push" if toks.get(i + 1).is_some_and(|t| t.is(",")) => {
                    if toks[i + 2..close].iter().any(|t| t.is(",")) {
                        return None;
                    }
                    c.list.push((n, self.src(i + 2, close - 1)?));
                    return Some(());
                }
                _ => return None,
            }
        }
        None
    }

    /// `m["k"] = v`, `l[0] = v`, PHP's `$v[] = x`.
    fn indexed(&self, c: &mut Contents) -> Option<()> {
        let (toks, i, n) = (self.toks, self.i, self.n);
        let close = self.close_of(i + 1)?;
        if !toks.get(close + 1).is_some_and(|t| t.is("=")) {
            return None;
        }
        let end = toks.iter().rposition(|t| !t.is(";"))?;
        if end <= close + 1 {
            return None;
        }
        let value = self.src(close + 2, end)?;
        if close == i + 2 {
            c.list.push((n, value));
            return Some(());
        }
        if close != i + 3 {
            return None;
        }
        match &toks[i + 2].kind {
            Kind::Str(Some(s)) => {
                c.map.insert(Val::Str(s.clone()).key(), (n, value));
            }
            Kind::Num(Some(k)) => {
                let k = usize::try_from(*k).ok()?;
                if k < c.list.len() && c.map.is_empty() {
                    c.list[k] = (n, value);
                } else {
                    c.map
                        .insert(Val::Int(i64::try_from(k).ok()?).key(), (n, value));
                }
            }
            _ => return None,
        }
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::numbered;

    fn run(family: Family, text: &str) -> Live {
        let lines = numbered(text);
        let end = lines.keys().last().copied().unwrap_or(1);
        live(family, &lines, 1, end)
    }

    fn constant(text: &str) -> Option<Val> {
        eval(&lex(text, 1, Family::Braces), &BTreeMap::new())
    }

    #[test]
    fn arithmetic_comparisons_and_strings_evaluate() {
        assert_eq!(constant("(6 * 2) - 5 > 6"), Some(Val::Bool(true)));
        assert_eq!(constant("(6 * 1) - 5 > 6"), Some(Val::Bool(false)));
        assert_eq!(constant("(70 / 6) + 1 > 11"), Some(Val::Bool(true)));
        assert_eq!(constant("\"b\" == \"b\""), Some(Val::Bool(true)));
        // Methods and subscripts are not evaluated, even on a literal.
        assert_eq!(constant("\"north\".toUpperCase()"), None);
        assert_eq!(constant("'o' == \"north\"[1]"), None);
        assert_eq!(constant("len(\"ab\") > 1"), None);
        assert_eq!(constant("!(1 < 2) || 3 == 3"), Some(Val::Bool(true)));
        assert_eq!(constant("x > 2"), None);
        assert_eq!(constant("1 / 0"), None);
        assert_eq!(constant("9223372036854775807 + 1"), None);
        assert_eq!(constant("f(2)"), None);
        assert_eq!(constant(""), None);
    }

    #[test]
    fn a_constant_if_blanks_the_arm_that_never_runs() {
        let java = "void f() {\n  int limit = 4;\n  if (limit * 2 > 5) out = \"x\";\n  else out = input;\n  use(out);\n}\n";
        let l = run(Family::Braces, java);
        assert!(l.lines[&3].contains("out = \"x\""), "{:?}", l.lines);
        assert!(!l.lines[&4].contains("input"), "{:?}", l.lines);
        let flipped = java.replace("limit * 2", "limit / 2");
        let l = run(Family::Braces, &flipped);
        assert!(!l.lines[&3].contains("out"), "{:?}", l.lines);
        assert!(l.lines[&4].contains("input"), "{:?}", l.lines);
        // A condition on a value set twice is not constant.
        let twice = java.replace(
            "  int limit = 4;\n",
            "  int limit = 4;\n  limit = read();\n",
        );
        let l = run(Family::Braces, &twice);
        assert!(l.lines.values().any(|t| t.contains("input")));
        assert!(l.lines.values().any(|t| t.contains("\"x\"")));
    }

    #[test]
    fn braced_arms_and_go_conditions_are_blanked() {
        let go = "func f() {\n\tlimit := 4\n\tif limit*2 > 5 {\n\t	out = \"x\"\n\t} else {\n\t	out = input\n\t}\n}\n";
        let l = run(Family::Braces, go);
        assert!(l.lines[&4].contains("\"x\""));
        assert!(!l.lines[&6].contains("input"), "{:?}", l.lines);
    }

    #[test]
    fn a_switch_on_a_constant_keeps_the_arm_it_runs_through_fall_through() {
        let java = "void f() {\n  String unused = \"\";\n  char level = 'm';\n  switch (level) {\n    case 'l':\n      out = input;\n      break;\n    case 'h':\n      out = \"b\";\n      break;\n    case 'm':\n    case 'x':\n      out = input;\n      break;\n    default:\n      out = \"d\";\n  }\n}\n";
        let l = run(Family::Braces, java);
        assert!(!l.lines[&6].contains("input"), "{:?}", l.lines);
        assert!(!l.lines[&9].contains("\"b\""), "{:?}", l.lines);
        assert!(l.lines[&13].contains("input"), "{:?}", l.lines);
        assert!(!l.lines[&16].contains("\"d\""), "{:?}", l.lines);
        let b = java.replace("level = 'm'", "level = 'h'");
        let l = run(Family::Braces, &b);
        assert!(l.lines[&9].contains("\"b\""), "{:?}", l.lines);
        assert!(!l.lines[&13].contains("input"), "{:?}", l.lines);
    }

    #[test]
    fn go_switch_arms_end_at_the_next_case() {
        let go = "func f() {\n\tunused := 0\n	level := 'h'\n\tswitch level {\n\tcase 'l':\n\t	out = input\n\tcase 'h':\n\t	out = \"b\"\n\tcase 'm', 'x':\n\t	out = input\n\tdefault:\n\t	out = \"d\"\n\t}\n}\n";
        let l = run(Family::Braces, go);
        assert!(!l.lines[&6].contains("input"));
        assert!(l.lines[&8].contains("\"b\""));
        assert!(!l.lines[&10].contains("input"), "{:?}", l.lines);
    }

    #[test]
    fn ternaries_keep_the_arm_taken() {
        let l = run(
            Family::Braces,
            "void f() {\n  int limit = 4;\n  out = limit * 2 > 5 ? \"x\" : input;\n}\n",
        );
        assert!(!l.lines[&3].contains("input") && l.lines[&3].contains("\"x\""));
        let l = run(
            Family::Indent,
            "def f():\n    limit = 4\n    out = \"x\" if limit / 2 > 5 else input\n",
        );
        assert!(
            l.lines[&3].contains("input") && !l.lines[&3].contains("\"x\""),
            "{:?}",
            l.lines
        );
    }

    #[test]
    fn python_if_chains_and_match_statements() {
        let py = "def f():\n    limit = 4\n    if limit * 2 > 5:\n        out = \"x\"\n    else:\n        out = input\n    use(out)\n";
        let l = run(Family::Indent, py);
        assert!(l.lines[&4].contains("\"x\""));
        assert!(!l.lines[&6].contains("input"));
        let py = "def f():\n    unused = 0\n    level = \"mid\"\n    match level:\n        case \"low\":\n            out = input\n        case \"high\":\n            out = \"b\"\n        case \"mid\" | \"max\":\n            out = input\n        case _:\n            out = \"d\"\n";
        let l = run(Family::Indent, py);
        assert!(!l.lines[&6].contains("input"));
        assert!(!l.lines[&8].contains("\"b\""));
        assert!(l.lines[&10].contains("input"));
        assert!(!l.lines[&12].contains("\"d\""));
    }

    #[test]
    fn map_reads_under_a_literal_key_become_the_value_put() {
        let java = "void f() {\n  java.util.HashMap<String, Object> map = new java.util.HashMap<String, Object>();\n  map.put(\"fixed\", \"constant\");\n  map.put(\"given\", input);\n  out = (String) map.get(\"fixed\");\n}\n";
        let l = run(Family::Braces, java);
        assert!(l.lines[&5].contains("(\"constant\")"), "{:?}", l.lines);
        assert_eq!(l.via.get(&5), Some(&3));
        let l = run(
            Family::Braces,
            &java.replace("get(\"fixed\")", "get(\"given\")"),
        );
        assert!(l.lines[&5].contains("(input)"), "{:?}", l.lines);
        // A map handed to a call may be changed there: left alone.
        let passed = java.replace("  out =", "  fill(map);\n  out =");
        let l = run(Family::Braces, &passed);
        assert!(l.lines[&6].contains("map.get"), "{:?}", l.lines);
    }

    #[test]
    fn list_reads_at_a_literal_index_follow_adds_and_removes() {
        let java = "void f() {\n  List<String> values = new ArrayList<String>();\n  values.add(\"alpha\");\n  values.add(input);\n  values.add(\"omega\");\n  values.remove(0);\n  out = values.get(1);\n}\n";
        let l = run(Family::Braces, java);
        assert!(l.lines[&7].contains("(\"omega\")"), "{:?}", l.lines);
        let l = run(Family::Braces, &java.replace("get(1)", "get(0)"));
        assert!(l.lines[&7].contains("(input)"), "{:?}", l.lines);
        let py = "def f():\n    values = []\n    values.append(\"alpha\")\n    values.append(input)\n    values.pop(0)\n    out = values[0]\n";
        assert!(run(Family::Indent, py).lines[&6].contains("(input)"));
        let go = "func f() {\n\tvalues := []string{}\n\tvalues = append(values, \"alpha\")\n\tvalues = append(values, input)\n\tvalues = values[1:]\n	out = values[0]\n}\n";
        assert!(run(Family::Braces, go).lines[&6].contains("(input)"));
        let php = "function f() {\n  $values = [];\n  $values[] = 'alpha';\n  $values[] = $input;\n  array_shift($values);\n  $out = $values[0];\n}\n";
        assert!(run(Family::Braces, php).lines[&6].contains("($input)"));
        // Out of range or an unknown use: unchanged.
        let l = run(Family::Braces, &java.replace("get(1)", "get(7)"));
        assert!(l.lines[&7].contains("values.get(7)"));
    }

    #[test]
    fn odd_input_never_panics() {
        let odd = [
            "",
            "{",
            "}",
            "if",
            "if (",
            "if ()",
            "switch",
            "switch (x) {",
            "case",
            "? :",
            "= ? :",
            "\"",
            "'",
            "`",
            "é if é else",
            "x = ü ? 1 : 2;",
            "m.get(",
            "m[",
            "m[\"k\"] =",
            "values.remove(",
            "a = append(",
            "v = v[1:",
            "match x:",
            "  case :",
            "del v[",
            "array_shift(",
            "/* unterminated",
            "if (1) else",
            "switch (1) { case 1: default: }",
            "x = 1 if else",
            "if (9999999999999999999999 > 1) a = 1;",
            "\u{202e}if (1) {",
        ];
        for family in [Family::Braces, Family::Indent] {
            for a in odd {
                for b in odd {
                    let text = format!("f() {{\n{a}\n{b}\n{a} {b}\n}}\n");
                    let lines = numbered(&text);
                    let _ = live(family, &lines, 1, 5);
                    let _ = live(family, &lines, 3, 2);
                }
            }
        }
    }
}
