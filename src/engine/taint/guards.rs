//! Checks that make a value safe, read on the tree:
//!
//! - a check that the value is a number or letters and digits only
//!   (`is_numeric($x)`, `x.isdigit()`, `Number.isInteger(x)`), or one of a
//!   list of literals (`Set.of("a", "b").contains(x)`, `x in ("a", "b")`,
//!   `in_array($x, ['a', 'b'], true)`): safe for every sink;
//! - a match against an anchored pattern (`x.matches("[a-z0-9.-]+")`,
//!   `/^\w+$/.test(x)`, `SAFE.fullmatch(x)` with `SAFE` compiled once from
//!   a literal): safe for the sinks its characters cannot harm
//!   ([`super::allowed`]);
//! - Go's `if _, err := strconv.Atoi(x); err != nil { return }`: a number.
//!
//! A check holds in the arm of an `if` whose condition requires it; in the
//! `else` of a condition that fails when it fails (`!is_numeric($a) ||
//! !ctype_digit($b)`); and after an `if` that leaves when it fails (`if
//! (!ok(x)) { return; }`): the rest of the block around that `if`. Only
//! the value checked, by its text (`$octet[0]`, `x`), and only there: a
//! name set again before a read is not checked there.

use tree_sitter::Node;

use super::allowed::{self, Applied, Cleans, Dialect};
use super::keys::literal_key;
use super::{Call, assigned_value, walk};
use crate::engine::syntax::{Grammar, Syntax, Visit};

/// A value checked over a range: the range's bytes, the value's text, the
/// name it is read from and the sinks it is clean for.
#[derive(Debug)]
pub(super) struct Guard {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) value: String,
    pub(super) name: String,
    pub(super) cleans: Cleans,
}

impl Guard {
    /// The guard of `value` (read from a name) over `range`.
    fn over(
        syntax: &Syntax,
        value: Node<'_>,
        range: (usize, usize),
        cleans: Cleans,
    ) -> Option<Self> {
        let name = super::assigned_names(syntax, value).into_iter().next()?;
        Some(Self {
            start: range.0,
            end: range.1,
            value: syntax.text_of(value).to_string(),
            name,
            cleans,
        })
    }

    /// Whether the check cleans a value for a sink of `cwe` (0: a line
    /// rule's class, whose kind is not known: only a check that cleans
    /// every kind).
    pub(super) fn cleans(&self, cwe: u32) -> bool {
        self.cleans.is_none_or(|kinds| kinds.contains(&cwe))
    }
}

/// Calls that answer whether their first argument is a number or letters
/// and digits only.
const CHECKS: &[&str] = &[
    "is_numeric",
    "is_int",
    "is_integer",
    "is_float",
    "ctype_digit",
    "ctype_alnum",
    "ctype_alpha",
    "isInteger",
    "isSafeInteger",
];

/// Methods that answer whether the value they are called on is one.
const METHOD_CHECKS: &[&str] = &["isdigit", "isnumeric", "isdecimal", "isalnum", "isalpha"];

/// Go's parses of a number, whose error says the value is none.
const NUMBER_PARSES: &[&str] = &["Atoi", "ParseInt", "ParseUint", "ParseFloat"];

/// Calls that end the program or the request where they stand.
const EXITS: &[&str] = &[
    "exit", "die", "abort", "panic", "Exit", "Fatal", "Fatalf", "Fatalln",
];

/// The guards of `choice`, a node of [`super::constant::CHOICES`], pushed
/// onto `out`.
pub(super) fn of_choice(syntax: &Syntax, choice: Node<'_>, out: &mut Vec<Guard>) {
    if !matches!(choice.kind(), "if_statement" | "if") {
        return;
    }
    let Some(condition) = choice.child_by_field_name("condition") else {
        return;
    };
    let arm = choice
        .child_by_field_name("consequence")
        .or_else(|| choice.child_by_field_name("body"));
    if let Some(arm) = arm {
        for part in split(syntax, condition, &["&&", "and"]) {
            push(syntax, part, true, (arm.start_byte(), arm.end_byte()), out);
        }
    }
    // Where the condition is false: the `else`, or, when the arm always
    // leaves, the rest of the block around the `if`. Each part of `a ||
    // b` is false there.
    let alternative = choice.child_by_field_name("alternative");
    let after = match (alternative, arm) {
        (Some(other), _) => Some((other.start_byte(), other.end_byte())),
        (None, Some(arm)) if leaves(syntax, arm) => choice
            .parent()
            .map(|block| (choice.end_byte(), block.end_byte())),
        _ => None,
    };
    let Some(range) = after else {
        return;
    };
    for part in split(syntax, condition, &["||", "or"]) {
        push(syntax, part, false, range, out);
    }
    if alternative.is_none() {
        number_parsed(syntax, choice, condition, range, out);
    }
}

/// The guard of `check` over `range`, where `check` is true (`holds`) or
/// false.
fn push(
    syntax: &Syntax,
    check: Node<'_>,
    holds: bool,
    range: (usize, usize),
    out: &mut Vec<Guard>,
) {
    let positive = if holds {
        Some(check)
    } else {
        negation_of(syntax, check)
    };
    let found = match positive {
        Some(positive) => checked(syntax, positive),
        // `x not in ("a", "b")` is false: `x` is one of them.
        None if !holds => not_in(syntax, check).map(|value| (value, None)),
        None => None,
    };
    if let Some((value, cleans)) = found {
        out.extend(Guard::over(syntax, value, range, cleans));
    }
}

/// The value a true `check` checks, and what it cleans.
fn checked<'t>(syntax: &'t Syntax, check: Node<'t>) -> Option<(Node<'t>, Cleans)> {
    if check.kind() == "comparison_operator" {
        // Python's `x in ("a", "b")`.
        let (value, collection) = membership(syntax, check, "in")?;
        return literal_list(syntax, collection).then_some((value, None));
    }
    let call = Call::of(check, syntax)?;
    let last = call.last();
    if METHOD_CHECKS.contains(&last) && call.args.is_empty() {
        return Some((call.receiver?, None));
    }
    if CHECKS.contains(&last) {
        return Some((*call.args.first()?, None));
    }
    match last {
        // `Set.of("a", "b").contains(x)`, `["a", "b"].includes(x)`.
        "contains" | "includes" | "has" if call.args.len() == 1 => {
            literal_list(syntax, call.receiver?).then_some((call.args[0], None))
        }
        "in_array" if call.args.len() >= 2 => {
            literal_list(syntax, call.args[1]).then_some((call.args[0], None))
        }
        "Contains" if call.args.len() == 2 && call.dotted.starts_with("slices.") => {
            literal_list(syntax, call.args[0]).then_some((call.args[1], None))
        }
        _ => matched(syntax, &call),
    }
}

/// The value a pattern match checks, and what the pattern lets through.
fn matched<'t>(syntax: &'t Syntax, call: &Call<'t>) -> Option<(Node<'t>, Cleans)> {
    let dialect = Dialect {
        dollar_newline: matches!(syntax.grammar, Grammar::Python | Grammar::Php),
        line_anchors: syntax.grammar == Grammar::Ruby,
    };
    let last = call.last();
    let (pattern, value, applied) = match last {
        // Java's `String.matches` matches the whole value.
        "matches" if syntax.grammar == Grammar::Java && call.args.len() == 1 => {
            (call.args[0], call.receiver?, Applied::Whole)
        }
        "fullmatch" | "match" | "search" if syntax.grammar == Grammar::Python => {
            let applied = if last == "fullmatch" {
                Applied::Whole
            } else {
                Applied::Search
            };
            match (call.args.len(), call.receiver) {
                // `re.fullmatch(pattern, x)`.
                (2, Some(r)) if syntax.text_of(r) == "re" => (call.args[0], call.args[1], applied),
                // `SAFE.fullmatch(x)`, `SAFE` compiled once.
                (1, Some(r)) => (compiled(syntax, r)?, call.args[0], applied),
                _ => return None,
            }
        }
        // `/^\w+$/.test(x)`, `PATTERN.test(x)`.
        "test" if call.args.len() == 1 => (call.receiver?, call.args[0], Applied::Search),
        "MatchString" if call.args.len() == 1 => (
            compiled(syntax, call.receiver?)?,
            call.args[0],
            Applied::Search,
        ),
        "preg_match" if call.args.len() == 2 => (call.args[0], call.args[1], Applied::Search),
        _ => return None,
    };
    let pattern = resolved(syntax, pattern)?;
    let (text, flags) = pattern_text(syntax, pattern)?;
    let cleans = allowed::of_pattern(&text, &flags, applied, dialect)?;
    Some((value, Some(cleans)))
}

/// `node`, or the value a name of the file is set to once (a pattern or
/// a list kept in a constant).
fn resolved<'t>(syntax: &'t Syntax, node: Node<'t>) -> Option<Node<'t>> {
    if !matches!(node.kind(), "identifier" | "name" | "constant") {
        return Some(node);
    }
    let name = syntax.text_of(node);
    let mut values = Vec::new();
    walk(syntax.root(), |n, _| {
        if values.len() > 1 {
            return Visit::Stop;
        }
        if let Some(value) = assigned_value(n) {
            let left = n
                .child_by_field_name("left")
                .or_else(|| n.child_by_field_name("name"));
            if left.is_some_and(|l| super::assigned_names(syntax, l).iter().any(|a| a == name)) {
                values.push(value);
            }
        }
        Visit::Enter
    });
    // Set more than once (or never): not known. Go sets a list of one.
    match values.as_slice() {
        [value] if value.kind() == "expression_list" && value.named_child_count() == 1 => {
            value.named_child(0)
        }
        [value] => Some(*value),
        _ => None,
    }
}

/// The pattern a name of the file is compiled from once
/// (`regexp.MustCompile(`...`)`, `re.compile(r"...")`).
fn compiled<'t>(syntax: &'t Syntax, receiver: Node<'t>) -> Option<Node<'t>> {
    let value = resolved(syntax, receiver)?;
    if value == receiver {
        return None;
    }
    let call = Call::of(value, syntax)?;
    matches!(call.last(), "MustCompile" | "Compile" | "compile")
        .then(|| call.args.first().copied())
        .flatten()
}

/// A pattern's text and flags: a regex literal's (`/…/i`), a string's
/// (PHP's `'/…/i'` with its delimiters), unescaped as the language reads
/// the string.
fn pattern_text(syntax: &Syntax, node: Node<'_>) -> Option<(String, String)> {
    if node.kind() == "regex" {
        let pattern = node.child_by_field_name("pattern")?;
        let flags = node
            .child_by_field_name("flags")
            .map(|f| syntax.text_of(f).to_string())
            .unwrap_or_default();
        return Some((syntax.text_of(pattern).to_string(), flags));
    }
    let literal = literal_key(syntax, node)?;
    let raw = syntax.text_of(node);
    let raw = raw.starts_with(['r', 'R', '`']) || raw.starts_with("@\"");
    // In a string that is not raw, `\\` is one backslash of the pattern.
    let text = if raw || syntax.grammar == Grammar::Php && syntax.text_of(node).starts_with('\'') {
        literal
    } else {
        literal.replace("\\\\", "\\")
    };
    if syntax.grammar != Grammar::Php {
        return Some((text, String::new()));
    }
    // PHP: a delimiter, the pattern, the same delimiter, the flags.
    let delimiter = text.chars().next()?;
    let close = match delimiter {
        '(' => ')',
        '{' => '}',
        '[' => ']',
        '<' => '>',
        c if c.is_alphanumeric() || c == '\\' || c.is_whitespace() => return None,
        c => c,
    };
    let body = &text[delimiter.len_utf8()..];
    let end = body.rfind(close)?;
    let flags = &body[end + close.len_utf8()..];
    // `D`: `$` is the very end. Without it `$` allows a final newline,
    // which [`Dialect`] says for PHP already.
    Some((body[..end].to_string(), flags.replace('D', "")))
}

/// Whether `node` is a list of literals (inline, or built by a call of
/// literals only: `Set.of("a", "b")`, `frozenset({"a"})`), or a name set
/// once to one.
fn literal_list(syntax: &Syntax, node: Node<'_>) -> bool {
    resolved(syntax, node).is_some_and(|n| literals(syntax, n, 0))
}

fn literals(syntax: &Syntax, node: Node<'_>, depth: usize) -> bool {
    if depth > 4 {
        return false;
    }
    let elements: Vec<Node<'_>> = match node.kind() {
        "list"
        | "tuple"
        | "set"
        | "array"
        | "array_creation_expression"
        | "parenthesized_expression"
        | "literal_value"
        | "composite_literal" => {
            let mut c = node.walk();
            node.named_children(&mut c)
                .filter(|n| !n.kind().ends_with("comment") && !n.kind().ends_with("type"))
                .collect()
        }
        "array_element_initializer" | "literal_element" | "element" => {
            let mut c = node.walk();
            let all: Vec<Node<'_>> = node.named_children(&mut c).collect();
            // A keyed element (`'k' => 'v'`) is a map, not a list.
            return all.len() == 1 && literals(syntax, all[0], depth + 1);
        }
        _ => match Call::of(node, syntax) {
            Some(call)
                if matches!(
                    call.last(),
                    "of" | "asList" | "Set" | "frozenset" | "set" | "tuple" | "list" | "copyOf"
                ) && call.keywords.is_empty() =>
            {
                call.args
            }
            _ => return literal_key(syntax, node).is_some(),
        },
    };
    !elements.is_empty() && elements.iter().all(|e| literals(syntax, *e, depth + 1))
}

/// `x` and the list of Python's `x <operator> list`.
fn membership<'t>(syntax: &Syntax, n: Node<'t>, operator: &str) -> Option<(Node<'t>, Node<'t>)> {
    if n.named_child_count() != 2 {
        return None;
    }
    let (left, right) = (n.named_child(0)?, n.named_child(1)?);
    let between = syntax
        .text_of(n)
        .get(left.end_byte() - n.start_byte()..right.start_byte() - n.start_byte())?;
    let words: Vec<&str> = between.split_whitespace().collect();
    (words == operator.split(' ').collect::<Vec<_>>()).then_some((left, right))
}

/// `x` of a false `x not in (literals)`: `x` is one of them.
fn not_in<'t>(syntax: &Syntax, n: Node<'t>) -> Option<Node<'t>> {
    if n.kind() != "comparison_operator" {
        return None;
    }
    let (value, list) = membership(syntax, n, "not in")?;
    literal_list(syntax, list).then_some(value)
}

/// Go: `if _, err := strconv.Atoi(x); err != nil { return }`, or the parse
/// in the statement just before the `if`: `x` is a number past the `if`.
fn number_parsed(
    syntax: &Syntax,
    choice: Node<'_>,
    condition: Node<'_>,
    range: (usize, usize),
    out: &mut Vec<Guard>,
) {
    if syntax.grammar != Grammar::Go {
        return;
    }
    let text: String = syntax
        .text_of(condition)
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    let Some(err) = text.strip_suffix("!=nil") else {
        return;
    };
    let before = choice
        .child_by_field_name("initializer")
        .or_else(|| choice.prev_named_sibling());
    let Some(statement) = before else {
        return;
    };
    let Some(left) = statement.child_by_field_name("left") else {
        return;
    };
    if !super::names_in(syntax, left).iter().any(|n| n == err) {
        return;
    }
    let Some(call) = statement
        .child_by_field_name("right")
        .and_then(|r| r.named_child(0))
        .and_then(|c| Call::of(c, syntax))
    else {
        return;
    };
    if !NUMBER_PARSES.contains(&call.last()) {
        return;
    }
    if let Some(value) = call.args.first().copied() {
        out.extend(Guard::over(syntax, value, range, None));
    }
}

/// Whether `arm` always leaves the block around its `if`: its last
/// statement returns, throws, breaks or ends the program.
fn leaves(syntax: &Syntax, arm: Node<'_>) -> bool {
    let mut last = arm;
    for _ in 0..4 {
        let count = last.named_child_count();
        let statement_kinds = last.kind().ends_with("block")
            || matches!(
                last.kind(),
                "compound_statement"
                    | "then"
                    | "statement_block"
                    | "statement_list"
                    | "expression_statement"
            );
        if !statement_kinds || count == 0 {
            break;
        }
        let mut c = last.walk();
        let Some(inner) = last
            .named_children(&mut c)
            .filter(|n| !n.kind().ends_with("comment"))
            .last()
        else {
            return false;
        };
        last = inner;
    }
    match last.kind() {
        "return_statement" | "throw_statement" | "raise_statement" | "break_statement"
        | "continue_statement" | "exit_statement" | "return" | "raise" => true,
        _ => Call::of(last, syntax).is_some_and(|c| EXITS.contains(&c.last())),
    }
}

/// The parts of `condition` joined by one of `operators` (through
/// parentheses), or the condition itself.
fn split<'t>(syntax: &Syntax, condition: Node<'t>, operators: &[&str]) -> Vec<Node<'t>> {
    let mut out = Vec::new();
    let mut stack = vec![condition];
    while let Some(n) = stack.pop() {
        if out.len() + stack.len() > 64 {
            return Vec::new();
        }
        if let Some(inner) = unwrap(n) {
            stack.push(inner);
            continue;
        }
        let joined = matches!(
            n.kind(),
            "binary_expression" | "boolean_operator" | "binary"
        ) && n
            .child_by_field_name("operator")
            .is_some_and(|o| operators.contains(&syntax.text_of(o)));
        match (
            joined,
            n.child_by_field_name("left"),
            n.child_by_field_name("right"),
        ) {
            (true, Some(l), Some(r)) => {
                stack.push(r);
                stack.push(l);
            }
            _ => out.push(n),
        }
    }
    out
}

/// The inside of parentheses around one expression.
fn unwrap(n: Node<'_>) -> Option<Node<'_>> {
    (matches!(
        n.kind(),
        "parenthesized_expression" | "parenthesized_statements"
    ) && n.named_child_count() == 1)
        .then(|| n.named_child(0))
        .flatten()
}

/// `x` of `!x` or `not x`.
fn negation_of<'t>(syntax: &Syntax, n: Node<'t>) -> Option<Node<'t>> {
    let mut n = n;
    while let Some(inner) = unwrap(n) {
        n = inner;
    }
    let negated = match n.kind() {
        "not_operator" => true,
        "unary_expression" | "unary_op_expression" | "unary" | "prefix_unary_expression" => n
            .child(0)
            .is_some_and(|o| matches!(syntax.text_of(o), "!" | "not")),
        _ => false,
    };
    if !negated {
        return None;
    }
    let mut inner = n
        .child_by_field_name("argument")
        .or_else(|| n.child_by_field_name("operand"))
        .or_else(|| n.named_child(u32::try_from(n.named_child_count().checked_sub(1)?).ok()?))?;
    while let Some(i) = unwrap(inner) {
        inner = i;
    }
    Some(inner)
}
