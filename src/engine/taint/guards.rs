//! Checks that make a value safe for every sink, read on the tree: in the
//! arm of an `if` whose condition checks a value to be a number or
//! letters and digits only (`is_numeric($x) && …`, `x.isdigit()`,
//! `Number.isInteger(x)`), that value cannot carry a quote, a separator or
//! a `../`. The `else` of a condition that fails when any of its checks
//! fails (`!is_numeric($a) || !ctype_digit($b)`) has them too.
//!
//! Only the value checked, by its text (`$octet[0]`, `x`), and only in the
//! arm: a name set again in the arm before a read is not checked there. A
//! check against a pattern (`preg_match`, `matches`) is not read: what the
//! pattern allows would have to be.

use tree_sitter::Node;

use super::Call;
use crate::engine::syntax::Syntax;

/// A value checked in an arm: the arm's byte range, the value's text and
/// the name it is read from.
#[derive(Debug)]
pub(super) struct Guard {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) value: String,
    pub(super) name: String,
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
            push(syntax, part, arm, out);
        }
    }
    // The `else` of `!check(a) || !check(b)`: every check passed.
    if let Some(other) = choice.child_by_field_name("alternative") {
        let parts = split(syntax, condition, &["||", "or"]);
        let negated: Vec<Node<'_>> = parts
            .iter()
            .filter_map(|p| negation_of(syntax, *p))
            .collect();
        if negated.len() == parts.len() {
            for part in negated {
                push(syntax, part, other, out);
            }
        }
    }
}

/// The value `check` checks, as a guard over `arm`.
fn push(syntax: &Syntax, check: Node<'_>, arm: Node<'_>, out: &mut Vec<Guard>) {
    let Some(call) = Call::of(check, syntax) else {
        return;
    };
    let value = if METHOD_CHECKS.contains(&call.last()) && call.args.is_empty() {
        call.receiver
    } else if CHECKS.contains(&call.last()) {
        call.args.first().copied()
    } else {
        None
    };
    let Some(value) = value else {
        return;
    };
    let Some(name) = super::assigned_names(syntax, value).into_iter().next() else {
        return;
    };
    out.push(Guard {
        start: arm.start_byte(),
        end: arm.end_byte(),
        value: syntax.text_of(value).to_string(),
        name,
    });
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
