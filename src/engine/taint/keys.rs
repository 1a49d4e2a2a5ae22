//! A container's parts under literal keys, read on the tree: a read of
//! `m.get("k")`, `m["k"]`, `$a['k']` or `h[:k]` sees only what was put
//! under that key (`m.put("k", v)`, `m["k"] = v`, a map literal's `"k":
//! v`) and what was put under a key that is not a literal. Everything else
//! (a list's positions, a field, a map passed to a call) is the whole
//! container, as before.

use tree_sitter::Node;

use super::{Call, MEMBER_KINDS, METHOD_CALLS, PART_KINDS, container_of};
use crate::engine::syntax::{Syntax, Visit, walk};

/// Whether a read under the literal key `read` (none: the whole
/// container, or a key that is not a literal) may see what a write under
/// `put` (none: the whole, or a key that is not a literal) put in.
pub(super) fn reaches(put: Option<&str>, read: Option<&str>) -> bool {
    match (put, read) {
        (Some(put), Some(read)) => put == read,
        _ => true,
    }
}

/// Methods that put a value under a key: the key is their first argument.
const PUTTERS: &[&str] = &["put", "putIfAbsent", "setdefault", "Add", "TryAdd", "store"];

/// Methods that read the value under a key: the key is their first
/// argument.
const GETTERS: &[&str] = &["get", "getOrDefault", "fetch"];

/// The key a literal `node` names, without its quotes (`"k"`, `'k'` and
/// Ruby's `:k` are one key): a string with no interpolation, an integer, a
/// symbol.
pub(super) fn literal_key(syntax: &Syntax, node: Node<'_>) -> Option<String> {
    let mut node = node;
    // A single argument in a wrapper: C#'s `["k"]`, PHP's `argument`.
    for _ in 0..4 {
        if matches!(
            node.kind(),
            "bracketed_argument_list" | "argument" | "argument_list"
        ) && node.named_child_count() == 1
        {
            node = node.named_child(0)?;
        } else {
            break;
        }
    }
    let kind = node.kind();
    let string = kind.contains("string");
    if !(string || kind.contains("integer") || kind == "number" || kind.ends_with("symbol")) {
        return None;
    }
    let mut plain = true;
    walk(node, |n, _| {
        let k = n.kind();
        if n != node
            && n.is_named()
            && (k.contains("interpolation")
                || k.contains("substitution")
                || k.contains("variable")
                || k.contains("identifier")
                || k.contains("expression"))
        {
            plain = false;
            return Visit::Stop;
        }
        Visit::Enter
    });
    if !plain {
        return None;
    }
    let text = syntax.text_of(node);
    // A prefix (`b"…"`, `@"…"`, `:k`) and the quotes are not the key.
    let quoted = text.find(['"', '\'', '`']).map(|at| &text[at..]);
    let text = match quoted {
        Some(q) => q.trim_matches(['"', '\'', '`']),
        None => text.trim_start_matches(':'),
    };
    Some(text.to_string())
}

/// The container and the index of `part`, a node of [`PART_KINDS`] with
/// one index.
fn container_and_index(part: Node<'_>) -> Option<(Node<'_>, Node<'_>)> {
    let container = container_of(part)?;
    let mut c = part.walk();
    let rest: Vec<Node<'_>> = part
        .named_children(&mut c)
        .filter(|n| *n != container && !n.kind().ends_with("comment"))
        .collect();
    match rest[..] {
        [index] => Some((container, index)),
        _ => None,
    }
}

/// The key a read of the name `n` is under: `n` is the container of a
/// part with a literal index (`n["k"]`), or the receiver of a getter with
/// a literal key (`n.get("k")`).
pub(super) fn read_key(syntax: &Syntax, n: Node<'_>) -> Option<String> {
    let parent = n.parent()?;
    if PART_KINDS.contains(&parent.kind()) {
        let (container, index) = container_and_index(parent)?;
        return (container == n)
            .then(|| literal_key(syntax, index))
            .flatten();
    }
    let call = if METHOD_CALLS.contains(&parent.kind()) {
        parent
    } else if MEMBER_KINDS.contains(&parent.kind()) {
        parent.parent()?
    } else {
        return None;
    };
    let call = Call::of(call, syntax)?;
    if call.receiver != Some(n) || !GETTERS.contains(&call.last()) {
        return None;
    }
    literal_key(syntax, *call.args.first()?)
}

/// The literal key `call` puts a value under in its receiver
/// (`m.put("k", v)`; none for `list.add(v)` or a key that is not a
/// literal).
pub(super) fn put_key(syntax: &Syntax, call: &Call<'_>) -> Option<String> {
    if !PUTTERS.contains(&call.last()) || call.args.len() < 2 {
        return None;
    }
    literal_key(syntax, call.args[0])
}

/// The literal key an assignment to `left` sets: `m["k"] = v` sets `"k"`
/// of `m` (none for `$a[] = v`, which appends, and `a[i][j] = v`, which
/// sets a part of a part).
pub(super) fn assigned_key(syntax: &Syntax, left: Node<'_>) -> Option<String> {
    if !PART_KINDS.contains(&left.kind()) {
        return None;
    }
    let (container, index) = container_and_index(left)?;
    if !matches!(container.kind(), "identifier" | "variable_name") {
        return None;
    }
    literal_key(syntax, index)
}

/// The values a map literal `value` holds under `key`, when every entry
/// of it has a literal key (none when `value` is no map literal, or one
/// with a computed key or a spread).
pub(super) fn keyed_values<'t>(
    syntax: &Syntax,
    value: Node<'t>,
    key: &str,
) -> Option<Vec<Node<'t>>> {
    if !matches!(
        value.kind(),
        "dictionary" | "object" | "hash" | "array_creation_expression"
    ) {
        return None;
    }
    let mut out = Vec::new();
    let mut c = value.walk();
    for entry in value.named_children(&mut c) {
        if entry.kind().ends_with("comment") {
            continue;
        }
        let (k, v) = match entry.kind() {
            "pair" => (
                entry.child_by_field_name("key")?,
                entry.child_by_field_name("value")?,
            ),
            // PHP: `'k' => v`; a value alone has a position for its key.
            "array_element_initializer" if entry.named_child_count() == 2 => {
                (entry.named_child(0)?, entry.named_child(1)?)
            }
            _ => return None,
        };
        // JavaScript's `{k: v}` and Ruby's `{k: v}` name the key bare.
        let named = match k.kind() {
            "property_identifier" => Some(syntax.text_of(k).to_string()),
            "hash_key_symbol" => Some(syntax.text_of(k).to_string()),
            _ => literal_key(syntax, k),
        };
        if named? == key {
            out.push(v);
        }
    }
    Some(out)
}
