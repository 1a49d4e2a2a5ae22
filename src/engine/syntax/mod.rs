//! The engine reads code as syntax trees: each file with a grammar (see
//! [`Grammar`]) is parsed once a run by tree-sitter, and its tree tells
//! the rules what is a comment or a docstring, and the taint rules and
//! the skeptic's check what each value is made of.
//!
//! The code under review is written by whoever opened the pull request, so
//! a parse is bounded before it starts: a file over [`Limits::max_bytes`]
//! is not parsed, a parse that runs past [`Limits::budget`] is cancelled
//! (tree-sitter's progress callback), and a tree deeper than
//! [`Limits::max_depth`] is not used. Every walk over a tree goes by a
//! cursor, never by recursion, so no input can overflow the stack. A file
//! that is not parsed, for any of these reasons or because its language
//! has no grammar in this build, is read by the line rules alone and the
//! engine says which files and why ([`Unparsed`]).

mod grammar;

use std::cell::Cell;
use std::collections::{HashMap, VecDeque};
use std::hash::{Hash, Hasher};
use std::ops::{ControlFlow, Range};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub(crate) use grammar::Grammar;
use tree_sitter::{Node, ParseOptions, ParseState, Parser, Tree};

/// How far a parse may go.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    /// A larger file is not parsed.
    pub(crate) max_bytes: usize,
    /// A parse that takes longer is cancelled.
    pub(crate) budget: Duration,
    /// A deeper tree is not used.
    pub(crate) max_depth: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_bytes: 4 << 20,
            budget: Duration::from_secs(2),
            max_depth: 4_000,
        }
    }
}

/// Why a file was read by the line rules alone.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Unparsed {
    #[error("no grammar for its language")]
    NoGrammar,
    #[error("this build leaves out the {0} grammar (cargo feature {1})")]
    LeftOut(&'static str, &'static str),
    #[error("only part of it was read")]
    Partial,
    #[error("{bytes} bytes, over the parse limit of {limit}")]
    TooLarge { bytes: usize, limit: usize },
    #[error("its parse ran past the budget of {0} ms")]
    OverTime(u128),
    #[error("its syntax tree is over {0} levels deep")]
    TooDeep(usize),
    #[error("the {0} grammar could not be loaded: {1}")]
    Grammar(&'static str, String),
}

/// A parsed file: its grammar and what of it is comment.
pub(crate) struct Syntax {
    pub(crate) grammar: Grammar,
    text: String,
    /// The tree itself, for the walks of taint rules.
    tree: Tree,
    /// Comments and docstrings, as byte ranges in order.
    comments: Vec<Range<usize>>,
    /// How many nodes the parser could not read (`ERROR`, missing tokens).
    pub(crate) errors: usize,
    /// The byte where each line starts.
    line_starts: Vec<usize>,
}

impl std::fmt::Debug for Syntax {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Syntax")
            .field("grammar", &self.grammar)
            .field("bytes", &self.text.len())
            .field("comments", &self.comments.len())
            .field("errors", &self.errors)
            .finish()
    }
}

/// Node kinds that make a function, across the grammars.
pub(crate) const FUNCTION_KINDS: &[&str] = &[
    "function_definition",
    "function_declaration",
    "function_item",
    "method_declaration",
    "method_definition",
    "constructor_declaration",
    "function_expression",
    "arrow_function",
    "generator_function_declaration",
    "anonymous_function",
    "anonymous_function_creation_expression",
    "arrow_function_expression",
    "func_literal",
    "method",
    "singleton_method",
    "local_function_statement",
    "lambda_expression",
    "closure_expression",
];

/// Parses `text`, the whole of `path`, within `limits`.
pub(crate) fn parse(path: &str, text: &str, limits: &Limits) -> Result<Syntax, Unparsed> {
    let (grammar, tree) = parse_tree(path, text, limits)?;
    Syntax::read(grammar, tree, text.to_string(), limits)
}

/// The bare tree of `text` (the whole of `path`), parsed within `limits`'
/// size and time, without the walk that reads comments and functions:
/// for a query over the tree (the symbol index), which walks it by the
/// query's own cursor.
pub(crate) fn parse_tree(
    path: &str,
    text: &str,
    limits: &Limits,
) -> Result<(Grammar, Tree), Unparsed> {
    let grammar = Grammar::of_path(path).ok_or(Unparsed::NoGrammar)?;
    let language = grammar
        .language()
        .ok_or(Unparsed::LeftOut(grammar.name(), grammar.feature()))?;
    if text.len() > limits.max_bytes {
        return Err(Unparsed::TooLarge {
            bytes: text.len(),
            limit: limits.max_bytes,
        });
    }
    let mut parser = Parser::new();
    parser
        .set_language(&language)
        .map_err(|e| Unparsed::Grammar(grammar.name(), e.to_string()))?;
    let started = Instant::now();
    let over = Cell::new(false);
    let mut progress = |_: &ParseState| {
        if started.elapsed() > limits.budget {
            over.set(true);
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    };
    let bytes = text.as_bytes();
    let tree = parser.parse_with_options(
        &mut |at, _| bytes.get(at..).unwrap_or_default(),
        None,
        Some(ParseOptions::new().progress_callback(&mut progress)),
    );
    let over_time = || Unparsed::OverTime(limits.budget.as_millis());
    let tree = tree.ok_or_else(over_time)?;
    if over.get() {
        return Err(over_time());
    }
    Ok((grammar, tree))
}

impl Syntax {
    /// One walk over `tree` by its cursor: the comments and docstrings,
    /// and the depth checked on the way.
    fn read(grammar: Grammar, tree: Tree, text: String, limits: &Limits) -> Result<Self, Unparsed> {
        let line_starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        let mut out = Self {
            grammar,
            text,
            tree: tree.clone(),
            comments: Vec::new(),
            errors: 0,
            line_starts,
        };
        let mut cursor = tree.walk();
        let mut depth = 0usize;
        loop {
            let node = cursor.node();
            if depth > limits.max_depth {
                return Err(Unparsed::TooDeep(limits.max_depth));
            }
            if node.is_error() || node.is_missing() {
                out.errors += 1;
            }
            let kind = node.kind();
            if kind.ends_with("comment") || out.is_docstring(node) {
                out.comments.push(node.byte_range());
            }
            // Comments hold nothing to read further.
            if !kind.ends_with("comment") && cursor.goto_first_child() {
                depth += 1;
                continue;
            }
            loop {
                if cursor.goto_next_sibling() {
                    break;
                }
                if !cursor.goto_parent() {
                    return Ok(out);
                }
                depth -= 1;
            }
        }
    }

    /// A Python string that is a statement of its own: a docstring (or
    /// a string left as a comment), never a value.
    fn is_docstring(&self, node: Node<'_>) -> bool {
        self.grammar == Grammar::Python
            && node.kind() == "expression_statement"
            && node.named_child_count() == 1
            && node
                .named_child(0)
                .is_some_and(|c| matches!(c.kind(), "string" | "concatenated_string"))
    }

    /// The file's lines with every comment and docstring blanked (spaces
    /// in their place, so columns keep), for rules that read code.
    pub(crate) fn code_lines(&self) -> Vec<String> {
        let mut bytes = self.text.clone().into_bytes();
        for range in &self.comments {
            if let Some(span) = bytes.get_mut(range.clone()) {
                for b in span.iter_mut().filter(|b| **b != b'\n') {
                    *b = b' ';
                }
            }
        }
        // Comments start and end on character boundaries: the text stays
        // UTF-8, but it is checked rather than assumed.
        let code = String::from_utf8(bytes).unwrap_or_else(|_| self.text.clone());
        code.split('\n')
            .map(|l| l.strip_suffix('\r').unwrap_or(l).to_string())
            .collect()
    }

    /// The file's whole text, as parsed.
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// The outermost node that starts on `row` (0-based) and holds every
    /// other node starting there, found from the row's text by the tree's
    /// own index, not by a walk from the root: in a function of thousands
    /// of statements each question costs the row, not the function.
    pub(crate) fn node_on_row(&self, row: usize) -> Option<Node<'_>> {
        let start = *self.line_starts.get(row)?;
        let end = self
            .line_starts
            .get(row + 1)
            .map_or(self.text.len(), |next| next.saturating_sub(1));
        let line = self.text.get(start..end)?;
        let trimmed = line.trim_start();
        let first = start + (line.len() - trimmed.len());
        let last = start + line.trim_end().len();
        if first >= last {
            return None;
        }
        let mut node = self.root().descendant_for_byte_range(first, last)?;
        while let Some(parent) = node.parent()
            && parent.start_position().row == row
        {
            node = parent;
        }
        Some(node)
    }

    /// The tree's root node.
    pub(crate) fn root(&self) -> Node<'_> {
        self.tree.root_node()
    }

    /// The text of `node`: empty when its range does not fall on
    /// character boundaries (a node of an `ERROR` can cut one).
    pub(crate) fn text_of(&self, node: Node<'_>) -> &str {
        self.text.get(node.byte_range()).unwrap_or_default()
    }
}

/// What a walk does after a node: go into its children, pass over them,
/// or end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Visit {
    Enter,
    Skip,
    Stop,
}

/// Walks `root` and its descendants in order, by a cursor (never by
/// recursion), asking `visit` of each node (with the field it is in, in
/// its parent) whether to go into it. Returns `false` when `visit` ended
/// the walk.
pub(crate) fn walk<'t>(
    root: Node<'t>,
    mut visit: impl FnMut(Node<'t>, Option<&str>) -> Visit,
) -> bool {
    let mut cursor = root.walk();
    loop {
        let node = cursor.node();
        let field = if node == root {
            None
        } else {
            cursor.field_name()
        };
        match visit(node, field) {
            Visit::Stop => return false,
            Visit::Enter if cursor.goto_first_child() => continue,
            Visit::Enter | Visit::Skip => {}
        }
        loop {
            if cursor.node() == root {
                return true;
            }
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return true;
            }
        }
    }
}

/// Text that `lines` (numbered, in order) make when they are the whole file
/// from its first line: `None` for a part.
pub(crate) fn whole_text<'a>(lines: impl Iterator<Item = (u32, &'a str)>) -> Option<String> {
    let mut text = String::new();
    for (expected, (number, line)) in (1u32..).zip(lines) {
        if number != expected {
            return None;
        }
        if expected > 1 {
            text.push('\n');
        }
        text.push_str(line);
    }
    Some(text)
}

/// The run's parsed files: a file's text is parsed once, whatever asks for
/// it (the rules, the taint rules, the skeptic's check), and kept while what
/// is kept stays under a size (a text and its tree count
/// [`TREE_WEIGHT`] times the text's bytes), the oldest let go first. The key is the path and the
/// text, so a changed file is parsed again.
pub(crate) struct Trees {
    limits: Limits,
    /// The most bytes kept parsed, texts and trees.
    keep_bytes: usize,
    kept: Mutex<Kept>,
}

/// What a parsed file is taken to hold per byte of its text: the text and
/// its tree (tree-sitter keeps a node of tens of bytes for every few
/// bytes of code).
const TREE_WEIGHT: usize = 16;

#[derive(Default)]
struct Kept {
    parsed: HashMap<Key, Arc<Result<Syntax, Unparsed>>>,
    order: VecDeque<Key>,
    bytes: usize,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Key {
    path: String,
    len: usize,
    hash: u64,
}

impl Key {
    fn of(path: &str, text: &str) -> Self {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        text.hash(&mut hasher);
        Self {
            path: path.to_string(),
            len: text.len(),
            hash: hasher.finish(),
        }
    }
}

impl Default for Trees {
    fn default() -> Self {
        Self::new(Limits::default())
    }
}

impl std::fmt::Debug for Trees {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Trees")
            .field("limits", &self.limits)
            .finish()
    }
}

impl Trees {
    pub(crate) fn new(limits: Limits) -> Self {
        Self {
            limits,
            keep_bytes: 256 << 20,
            kept: Mutex::new(Kept::default()),
        }
    }

    /// `text`, the whole of `path`, parsed (once a run while it is kept).
    pub(crate) fn get(&self, path: &str, text: &str) -> Arc<Result<Syntax, Unparsed>> {
        let key = Key::of(path, text);
        if let Some(found) = self.lock().parsed.get(&key) {
            return Arc::clone(found);
        }
        // Parsed outside the lock: other files parse meanwhile.
        let parsed = Arc::new(parse(path, text, &self.limits));
        let mut kept = self.lock();
        if kept
            .parsed
            .insert(key.clone(), Arc::clone(&parsed))
            .is_none()
        {
            kept.order.push_back(key);
            kept.bytes += text.len().saturating_mul(TREE_WEIGHT);
        }
        while kept.bytes > self.keep_bytes && kept.order.len() > 1 {
            let Some(old) = kept.order.pop_front() else {
                break;
            };
            // A key let go before ([`Trees::forget`]) weighs nothing.
            if kept.parsed.remove(&old).is_some() {
                kept.bytes -= old.len.saturating_mul(TREE_WEIGHT);
            }
        }
        parsed
    }

    /// How many files' trees are kept.
    #[cfg(test)]
    pub(crate) fn kept(&self) -> usize {
        self.lock().parsed.len()
    }

    /// Lets go of the tree of `text` (the whole of `path`): nothing more
    /// of the run is expected to ask for it (a later ask parses again).
    pub(crate) fn forget(&self, path: &str, text: &str) {
        let key = Key::of(path, text);
        let mut kept = self.lock();
        if kept.parsed.remove(&key).is_some() {
            kept.bytes -= key.len.saturating_mul(TREE_WEIGHT);
        }
    }

    /// The lock; a thread that panicked holding it left whole entries only
    /// (each insert is one step), so the map is used as it is.
    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.kept
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests;
