//! Conditions the function decides itself, read on the tree: a condition
//! made of literals (integers, truth values) and of locals the function
//! sets once, before it, to such a value, with arithmetic, comparison and
//! logic. An `if` or a conditional expression whose condition is one of
//! these has an arm that never runs.
//!
//! Nothing else is evaluated: no call (not even on a literal), no string,
//! no field, no `switch`, no container. What it cannot evaluate is not
//! constant: both arms may run.

use tree_sitter::Node;

use super::{Assign, BRANCHES, last_named};
use crate::engine::syntax::Syntax;

/// How deep an expression (with the locals it reads) is evaluated.
const DEPTH: usize = 16;

/// A constant's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Value {
    Int(i64),
    Bool(bool),
}

/// Node kinds that choose between two arms by a condition.
pub(super) const CHOICES: &[&str] = &[
    "if_statement",
    "if",
    "ternary_expression",
    "conditional_expression",
    "conditional",
];

/// The arms that never run in `func` (the conditions of its `choices`,
/// nodes of [`CHOICES`] kinds not inside a function of its own, evaluated
/// with its `assigns`), and those that always do, as nodes.
pub(super) fn arms<'t>(
    syntax: &'t Syntax,
    func: Node<'t>,
    choices: &[Node<'t>],
    assigns: &[Assign<'t>],
    params: &[(String, Node<'t>)],
) -> (Vec<Node<'t>>, Vec<Node<'t>>) {
    // A parameter is the caller's: never a constant, even if set once.
    let consts = Consts {
        syntax,
        func,
        assigns: assigns
            .iter()
            .filter(|a| !a.names.iter().any(|n| params.iter().any(|(p, _)| p == n)))
            .collect(),
    };
    let mut dead = Vec::new();
    let mut always = Vec::new();
    for n in choices {
        if let Some((condition, yes, no)) = parts(*n)
            && let Some(Value::Bool(holds)) = consts.eval(condition, 0)
        {
            let (runs, never) = if holds { (yes, no) } else { (no, yes) };
            dead.extend(never);
            always.extend(runs);
        }
    }
    (dead, always)
}

/// The named parts of `n`, comments left out.
fn named_parts(n: Node<'_>) -> Vec<Node<'_>> {
    let mut c = n.walk();
    n.named_children(&mut c)
        .filter(|p| !p.kind().ends_with("comment"))
        .collect()
}

/// A choice's condition, the arm it takes when the condition holds, and
/// the arms it takes otherwise (an `elif`, an `else`).
fn parts(n: Node<'_>) -> Option<(Node<'_>, Vec<Node<'_>>, Vec<Node<'_>>)> {
    let field = |name: &str| n.child_by_field_name(name);
    if let Some(condition) = field("condition") {
        let yes = field("consequence").or_else(|| field("body"));
        let mut c = n.walk();
        let no: Vec<Node<'_>> = n.children_by_field_name("alternative", &mut c).collect();
        return Some((condition, yes.into_iter().collect(), no));
    }
    // Python's `a if cond else b` names no fields.
    if n.kind() == "conditional_expression"
        && let [yes, condition, no] = named_parts(n).as_slice()
    {
        return Some((*condition, vec![*yes], vec![*no]));
    }
    None
}

/// A function's conditions, evaluated: its own locals' assignments (not
/// its parameters').
struct Consts<'a, 't> {
    syntax: &'t Syntax,
    func: Node<'t>,
    assigns: Vec<&'a Assign<'t>>,
}

impl Consts<'_, '_> {
    /// The value of `n`, when it is a constant.
    fn eval(&self, n: Node<'_>, depth: usize) -> Option<Value> {
        if depth > DEPTH {
            return None;
        }
        let syntax = self.syntax;
        let text = syntax.text_of(n).trim();
        let kind = n.kind();
        match kind {
            "parenthesized_expression" | "condition_clause" | "parenthesized_statements" => {
                match named_parts(n).as_slice() {
                    [one] => self.eval(*one, depth + 1),
                    _ => None,
                }
            }
            "true" => Some(Value::Bool(true)),
            "false" => Some(Value::Bool(false)),
            "boolean" | "boolean_literal" => match text.to_ascii_lowercase().as_str() {
                "true" => Some(Value::Bool(true)),
                "false" => Some(Value::Bool(false)),
                _ => None,
            },
            "decimal_integer_literal"
            | "integer_literal"
            | "integer"
            | "int_literal"
            | "number" => {
                let digits: String = text
                    .trim_end_matches(['l', 'L', 'u', 'U'])
                    .chars()
                    .filter(|c| *c != '_')
                    .collect();
                if digits.len() > 1 && digits.starts_with('0') {
                    return None;
                }
                digits.parse().ok().map(Value::Int)
            }
            "identifier" | "variable_name" => self.local(text, n, depth),
            "unary_expression" | "not_operator" | "unary_operator" | "unary" => {
                let operand = n
                    .child_by_field_name("operand")
                    .or_else(|| n.child_by_field_name("argument"))
                    .or_else(|| last_named(n))?;
                let op = syntax
                    .text_of(n)
                    .get(..operand.start_byte().checked_sub(n.start_byte())?)?;
                match (op.trim(), self.eval(operand, depth + 1)?) {
                    ("!" | "not", Value::Bool(b)) => Some(Value::Bool(!b)),
                    ("-", Value::Int(i)) => i.checked_neg().map(Value::Int),
                    ("+", Value::Int(i)) => Some(Value::Int(i)),
                    _ => None,
                }
            }
            "binary_expression"
            | "binary_operator"
            | "comparison_operator"
            | "boolean_operator" => self.binary(n, depth),
            _ => None,
        }
    }

    /// A binary operation of two constants.
    fn binary(&self, n: Node<'_>, depth: usize) -> Option<Value> {
        let named = named_parts(n);
        let [left, right] = named.as_slice() else {
            return None;
        };
        let op = self
            .syntax
            .text_of(n)
            .get(left.end_byte() - n.start_byte()..right.start_byte() - n.start_byte())?
            .trim();
        let l = self.eval(*left, depth + 1)?;
        let r = self.eval(*right, depth + 1)?;
        Some(match (l, r) {
            (Value::Int(a), Value::Int(b)) => match op {
                "+" => Value::Int(a.checked_add(b)?),
                "-" => Value::Int(a.checked_sub(b)?),
                "*" => Value::Int(a.checked_mul(b)?),
                "/" | "//" if b != 0 && a >= 0 && b > 0 => Value::Int(a / b),
                "%" if b != 0 && a >= 0 && b > 0 => Value::Int(a % b),
                "<" => Value::Bool(a < b),
                ">" => Value::Bool(a > b),
                "<=" => Value::Bool(a <= b),
                ">=" => Value::Bool(a >= b),
                "==" | "===" => Value::Bool(a == b),
                "!=" | "!==" | "<>" => Value::Bool(a != b),
                _ => return None,
            },
            (Value::Bool(a), Value::Bool(b)) => match op {
                "&&" | "and" => Value::Bool(a && b),
                "||" | "or" => Value::Bool(a || b),
                "==" | "===" => Value::Bool(a == b),
                "!=" | "!==" => Value::Bool(a != b),
                _ => return None,
            },
            _ => return None,
        })
    }

    /// The value of the local `name` read at `at`: the function sets it once
    /// (not in a loop, not by adding to it), before `at`, to a constant.
    fn local(&self, name: &str, at: Node<'_>, depth: usize) -> Option<Value> {
        let mut sets = self
            .assigns
            .iter()
            .filter(|a| a.names.iter().any(|n| n == name));
        let one = sets.next()?;
        if sets.next().is_some() || one.adds || one.set_by > at.start_byte() {
            return None;
        }
        // Set in a branch or a loop the read is outside of: it may not be set.
        let mut up = one.node;
        while let Some(p) = up.parent() {
            if p == self.func {
                break;
            }
            if BRANCHES.contains(&p.kind())
                && !(p.start_byte() <= at.start_byte() && at.end_byte() <= p.end_byte())
            {
                return None;
            }
            up = p;
        }
        self.eval(one.value, depth + 1)
    }
}
