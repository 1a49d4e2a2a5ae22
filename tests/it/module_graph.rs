//! The crate's modules form layers (docs/architecture.md): no import
//! circle between the top-level modules of `src/`, nor between the files of
//! one folder, and the leaf (`util`) imports no other module.
//! Edges come from each file's `use` trees and its `crate::…`, `super::…`
//! and `self::…` paths, read as text with comments, string and character
//! literals and `#[cfg(test)]` items left out (tests may reach anywhere).
//! `cargo test --test it module_graph -- --nocapture` prints the graph.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use regex::Regex;

use crate::common::Repo;

type Graph = BTreeMap<String, BTreeSet<String>>;

/// Who uses whom: between top-level modules (`plan -> inventory`), and
/// between the files of one folder (`plan/render -> plan/estimate`).
#[derive(Debug, Default)]
struct ModuleGraph {
    top: Graph,
    siblings: Graph,
}

impl ModuleGraph {
    /// The graph of the crate whose sources are under `src`.
    fn read(src: &Path) -> Self {
        let mut files = Vec::new();
        rust_files(src, &mut files);
        assert!(
            !files.is_empty(),
            "{}: no .rs file, so no module graph",
            src.display()
        );
        let modules: Vec<(PathBuf, Vec<String>)> = files
            .into_iter()
            .map(|f| {
                let module = module_of(src, &f);
                (f, module)
            })
            .collect();
        // Every module a path may name: files and the folders above them.
        let known: BTreeSet<Vec<String>> = modules
            .iter()
            .flat_map(|(_, m)| (1..=m.len()).map(|n| m[..n].to_vec()))
            .collect();
        let mut graph = Self::default();
        for (file, me) in &modules {
            let Some(top) = me.first() else {
                // lib.rs and main.rs sit above every module.
                continue;
            };
            let text =
                std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            for path in referenced_paths(&without_tests(&code_only(&text)), me) {
                let Some(first) = path.first() else { continue };
                if !known.contains(&path[..1]) {
                    // An item of lib.rs, or a crate outside this one.
                    continue;
                }
                if first != top {
                    graph
                        .top
                        .entry(top.clone())
                        .or_default()
                        .insert(first.clone());
                } else if me.len() == 2
                    && path.len() >= 2
                    && path[1] != me[1]
                    && known.contains(&path[..2])
                {
                    graph
                        .siblings
                        .entry(me.join("/"))
                        .or_default()
                        .insert(path[..2].join("/"));
                }
            }
        }
        graph
    }
}

impl fmt::Display for ModuleGraph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "modules (who uses whom):")?;
        for (from, to) in &self.top {
            let to: Vec<&str> = to.iter().map(String::as_str).collect();
            writeln!(f, "  {from:14} -> {}", to.join(", "))?;
        }
        writeln!(f, "files within a folder:")?;
        for (from, to) in &self.siblings {
            let to: Vec<&str> = to.iter().map(String::as_str).collect();
            writeln!(f, "  {from:24} -> {}", to.join(", "))?;
        }
        Ok(())
    }
}

/// The `.rs` files under `dir`, sorted.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// A file's module path: `src/plan/render.rs` is `[plan, render]`,
/// `src/plan/mod.rs` is `[plan]`, `src/lib.rs` is `[]`.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.last().map(String::as_str);
    if last == Some("mod") || (parts.len() == 1 && matches!(last, Some("lib" | "main"))) {
        parts.pop();
    }
    parts
}

/// The source with comments removed and string and character literals
/// emptied, so that neither a `crate::x` in a doc comment nor a `{` in a
/// string counts.
fn code_only(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let ident = |i: usize| {
        c.get(i)
            .is_some_and(|ch| ch.is_alphanumeric() || *ch == '_')
    };
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < c.len() {
        let next = c.get(i + 1).copied();
        match c[i] {
            '/' if next == Some('/') => {
                while i < c.len() && c[i] != '\n' {
                    i += 1;
                }
            }
            '/' if next == Some('*') => {
                let mut depth = 0;
                while i < c.len() {
                    if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                        depth += 1;
                        i += 2;
                    } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
                out.push(' ');
            }
            '"' => {
                i += 1;
                while i < c.len() && c[i] != '"' {
                    i += if c[i] == '\\' { 2 } else { 1 };
                }
                i += 1;
                out.push_str("\"\"");
            }
            // A raw string: r"…", r#"…"#, br"…", cr"…".
            'r' | 'b' | 'c' if i == 0 || !ident(i - 1) => {
                let start = if c[i] == 'r' { i } else { i + 1 };
                let mut j = start + 1;
                while c.get(j) == Some(&'#') {
                    j += 1;
                }
                let hashes = j - start - 1;
                if c.get(start) == Some(&'r') && c.get(j) == Some(&'"') {
                    j += 1;
                    loop {
                        match c.get(j) {
                            None => break,
                            Some('"') if (1..=hashes).all(|k| c.get(j + k) == Some(&'#')) => {
                                j += 1 + hashes;
                                break;
                            }
                            Some(_) => j += 1,
                        }
                    }
                    out.push_str("\"\"");
                    i = j;
                } else {
                    out.push(c[i]);
                    i += 1;
                }
            }
            '\'' if next == Some('\\') => {
                // '\n', '\'', '\u{1F600}'
                i += 3;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
                out.push_str("' '");
            }
            '\'' if c.get(i + 2) == Some(&'\'') => {
                i += 3;
                out.push_str("' '");
            }
            ch => {
                // A lifetime's quote, or any other character.
                out.push(ch);
                i += 1;
            }
        }
    }
    out
}

/// The code with each `#[cfg(test)]` item left out: from the attribute to
/// the `;` that ends the item or the `}` that closes its first `{`.
fn without_tests(code: &str) -> String {
    let attribute = Regex::new(r"#\[cfg\(test\)\]").unwrap();
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(m) = attribute.find(rest) {
        out.push_str(&rest[..m.start()]);
        let item = &rest[m.end()..];
        let end = match item.find(['{', ';']) {
            Some(at) if item[at..].starts_with(';') => at + 1,
            Some(at) => {
                let mut depth = 0usize;
                let mut end = item.len();
                for (k, ch) in item[at..].char_indices() {
                    match ch {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = at + k + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                end
            }
            None => item.len(),
        };
        rest = &item[end..];
    }
    out.push_str(rest);
    out
}

/// Every path the code names through `crate`, `super` or `self`, made
/// absolute (segments from the crate root) for a file of module `me`.
fn referenced_paths(code: &str, me: &[String]) -> BTreeSet<Vec<String>> {
    let uses = Regex::new(r"\buse\s+([^;]*);").unwrap();
    let inline = Regex::new(r"\b(?:crate|super|self)(?:::[A-Za-z_][A-Za-z0-9_]*)+").unwrap();
    let mut relative: Vec<Vec<String>> = Vec::new();
    for caps in uses.captures_iter(code) {
        relative.extend(use_tree_paths(&caps[1]));
    }
    for m in inline.find_iter(code) {
        relative.push(m.as_str().split("::").map(str::to_string).collect());
    }
    relative
        .into_iter()
        .filter_map(|p| absolute(&p, me))
        .collect()
}

/// `crate::a::b` → `[a, b]`; `super::x` and `self::x` from module `me`;
/// `None` for a path into another crate or a local item.
fn absolute(path: &[String], me: &[String]) -> Option<Vec<String>> {
    let (first, rest) = path.split_first()?;
    let mut abs: Vec<String> = match first.as_str() {
        "crate" => Vec::new(),
        "self" | "super" => me.to_vec(),
        _ => return None,
    };
    if first == "super" {
        abs.pop()?;
    }
    for segment in rest {
        match segment.as_str() {
            "super" => {
                abs.pop()?;
            }
            "self" => {}
            _ => abs.push(segment.clone()),
        }
    }
    (!abs.is_empty()).then_some(abs)
}

#[derive(Debug, PartialEq)]
enum Token {
    Ident(String),
    Colons,
    Open,
    Close,
    Comma,
    Star,
}

/// The paths a use tree names: `crate::{a::{self, B}, c as d}` →
/// `crate::a`, `crate::a::B`, `crate::c`.
fn use_tree_paths(tree: &str) -> Vec<Vec<String>> {
    let tokens = Regex::new(r"[A-Za-z_][A-Za-z0-9_]*|::|[{},*]")
        .unwrap()
        .find_iter(tree)
        .map(|m| match m.as_str() {
            "::" => Token::Colons,
            "{" => Token::Open,
            "}" => Token::Close,
            "," => Token::Comma,
            "*" => Token::Star,
            ident => Token::Ident(ident.to_string()),
        })
        .collect::<Vec<_>>();
    let mut out = Vec::new();
    let mut pos = 0;
    parse_tree(&tokens, &mut pos, &mut Vec::new(), &mut out);
    out
}

fn parse_tree(
    tokens: &[Token],
    pos: &mut usize,
    prefix: &mut Vec<String>,
    out: &mut Vec<Vec<String>>,
) {
    let depth = prefix.len();
    loop {
        match tokens.get(*pos) {
            Some(Token::Colons) => *pos += 1,
            Some(Token::Star) => {
                *pos += 1;
                out.push(prefix.clone());
                break;
            }
            Some(Token::Open) => {
                *pos += 1;
                while !matches!(tokens.get(*pos), None | Some(Token::Close)) {
                    parse_tree(tokens, pos, prefix, out);
                    if tokens.get(*pos) == Some(&Token::Comma) {
                        *pos += 1;
                    } else {
                        break;
                    }
                }
                if tokens.get(*pos) == Some(&Token::Close) {
                    *pos += 1;
                }
                break;
            }
            Some(Token::Ident(name)) => {
                prefix.push(name.clone());
                *pos += 1;
                if tokens.get(*pos) == Some(&Token::Colons) {
                    *pos += 1;
                    continue;
                }
                if matches!(tokens.get(*pos), Some(Token::Ident(a)) if a == "as") {
                    *pos += 2;
                }
                out.push(prefix.clone());
                break;
            }
            Some(Token::Close | Token::Comma) | None => break,
        }
    }
    prefix.truncate(depth);
}

/// The first circle found, in a deterministic order, as the path that
/// closes it: `[a, b, a]`.
fn circle(graph: &Graph) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        OnStack,
        Done,
    }
    fn visit<'g>(
        graph: &'g Graph,
        node: &'g str,
        marks: &mut BTreeMap<&'g str, Mark>,
        stack: &mut Vec<&'g str>,
    ) -> Option<Vec<String>> {
        marks.insert(node, Mark::OnStack);
        stack.push(node);
        for next in graph.get(node).into_iter().flatten() {
            match marks.get(next.as_str()) {
                Some(Mark::OnStack) => {
                    let from = stack.iter().position(|n| n == next).unwrap();
                    let mut found: Vec<String> =
                        stack[from..].iter().map(|n| n.to_string()).collect();
                    found.push(next.clone());
                    return Some(found);
                }
                Some(Mark::Done) => {}
                None => {
                    if let Some(found) = visit(graph, next, marks, stack) {
                        return Some(found);
                    }
                }
            }
        }
        marks.insert(node, Mark::Done);
        stack.pop();
        None
    }
    let mut marks = BTreeMap::new();
    for node in graph.keys() {
        if !marks.contains_key(node.as_str())
            && let Some(found) = visit(graph, node, &mut marks, &mut Vec::new())
        {
            return Some(found);
        }
    }
    None
}

fn edges_of(edges: &[(&str, &str)]) -> Graph {
    let mut g = Graph::new();
    for (from, to) in edges {
        g.entry(from.to_string())
            .or_default()
            .insert(to.to_string());
    }
    g
}

#[test]
fn module_graph_of_the_crate_has_no_import_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = ModuleGraph::read(&src);
    println!("{graph}");
    // The reading finds edges at all: the pipeline's stages use their inputs.
    assert!(
        graph.top.len() >= 10
            && graph
                .top
                .get("pipeline")
                .is_some_and(|to| to.contains("config") && to.contains("stages")),
        "the module graph looks empty, so the check would prove nothing:\n{graph}"
    );
    for (edges, what) in [
        (&graph.top, "modules"),
        (&graph.siblings, "files of a folder"),
    ] {
        if let Some(found) = circle(edges) {
            panic!(
                "import circle between {what}: {}\nbreak it by moving what both sides need into the lower module\n{graph}",
                found.join(" -> ")
            );
        }
    }
    assert!(
        !graph.top.contains_key("util"),
        "util is the leaf (docs/architecture.md) but imports {:?}",
        graph.top["util"]
    );
}

#[test]
fn module_graph_circle_detection_finds_a_planted_circle() {
    let chain = edges_of(&[("a", "b"), ("b", "c"), ("c", "d"), ("e", "a")]);
    assert_eq!(circle(&chain), None);
    let diamond = edges_of(&[("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")]);
    assert_eq!(circle(&diamond), None);

    let planted = edges_of(&[("a", "b"), ("b", "c"), ("c", "d"), ("d", "b"), ("e", "a")]);
    assert_eq!(circle(&planted).unwrap(), ["b", "c", "d", "b"]);
    let two = edges_of(&[("x", "y"), ("y", "x")]);
    assert_eq!(circle(&two).unwrap(), ["x", "y", "x"]);
    let own = edges_of(&[("s", "s")]);
    assert_eq!(circle(&own).unwrap(), ["s", "s"]);
}

#[test]
fn module_graph_reads_use_trees_and_paths_and_leaves_out_tests_and_comments() {
    let repo = Repo::new(&[
        (
            "src/lib.rs",
            "mod a;\nmod b;\nmod c;\nmod d;\nuse crate::a::Top;\n",
        ),
        ("src/a.rs", "use crate::b::Thing;\npub(crate) struct Top;\n"),
        (
            "src/b.rs",
            "pub(crate) use crate::{\n    c::{self, Other as O},\n    Root,\n};\npub(crate) struct Thing;\n",
        ),
        // c reaches back to a through an inline path: a circle a -> b -> c -> a.
        (
            "src/c/mod.rs",
            "mod x;\nmod y;\npub(crate) fn f() -> crate::a::Top { todo!() }\n",
        ),
        ("src/c/x.rs", "use super::y::Why;\npub(crate) struct Ex;\n"),
        ("src/c/y.rs", "pub(crate) struct Why(super::x::Ex);\n"),
        (
            "src/d.rs",
            "//! Uses nothing: crate::a::Top in a doc comment,\n\
             // crate::b::Thing in a comment, /* crate::c::f */ in a block,\n\
             const S: &str = \"crate::a::Top { \";\n\
             const R: &str = r#\"use crate::b::Thing;\"#;\n\
             const C: char = '{';\n\
             fn g<'a>(s: &'a str) -> &'a str { s }\n\
             #[cfg(test)]\nuse crate::c::f;\n\
             #[cfg(test)]\nmod tests {\n    use crate::a::Top;\n    fn t() { let _ = crate::b::Thing; }\n}\n",
        ),
    ]);
    let graph = ModuleGraph::read(&repo.path().join("src"));
    let expected = edges_of(&[("a", "b"), ("b", "c"), ("c", "a")]);
    assert_eq!(graph.top, expected, "{graph}");
    assert_eq!(
        graph.siblings,
        edges_of(&[("c/x", "c/y"), ("c/y", "c/x")]),
        "{graph}"
    );
    assert_eq!(circle(&graph.top).unwrap(), ["a", "b", "c", "a"]);
    assert_eq!(circle(&graph.siblings).unwrap(), ["c/x", "c/y", "c/x"]);
}

#[test]
fn module_graph_use_trees_expand_to_every_path() {
    let paths = use_tree_paths("crate::{a::{self, B}, c as d, e::*}");
    let joined: Vec<String> = paths.iter().map(|p| p.join("::")).collect();
    assert_eq!(
        joined,
        ["crate::a::self", "crate::a::B", "crate::c", "crate::e"]
    );
    let me = ["plan".to_string(), "render".to_string()];
    let abs = |p: &str| absolute(&p.split("::").map(str::to_string).collect::<Vec<_>>(), &me);
    assert_eq!(
        abs("super::estimate::Estimate").unwrap(),
        ["plan", "estimate", "Estimate"]
    );
    assert_eq!(abs("super::super::util::x").unwrap(), ["util", "x"]);
    assert_eq!(abs("self::Local").unwrap(), ["plan", "render", "Local"]);
    assert_eq!(abs("crate::a::self").unwrap(), ["a"]);
    assert_eq!(abs("std::fmt"), None);
}

/// The terminal crates the library must not use: only the CLI (`src/cli/`
/// and `src/main.rs`) parses flags and draws bars.
const TERMINAL_CRATES: &[&str] = &["clap", "indicatif"];

/// The terminal crates `text` (a source file) uses, comments and strings
/// left out: a path into the crate, or one of clap's attributes.
fn terminal_uses(text: &str, crates: &[&str]) -> BTreeSet<String> {
    let code = code_only(text);
    let mut found = BTreeSet::new();
    for name in crates {
        let path = Regex::new(&format!(r"\b{name}\s*::")).unwrap();
        if path.is_match(&code) {
            found.insert(name.to_string());
        }
    }
    if crates.contains(&"clap") {
        let attribute = Regex::new(r"#\[\s*(arg|command|value|clap)\s*\(").unwrap();
        if attribute.is_match(&code) {
            found.insert("clap".to_string());
        }
    }
    found
}

#[test]
fn the_library_uses_no_terminal_crate() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut offenders = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(&src).unwrap();
        if rel.starts_with("cli") || rel == Path::new("main.rs") {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        let used = terminal_uses(&text, TERMINAL_CRATES);
        if !used.is_empty() {
            offenders.push(format!("{}: {used:?}", rel.display()));
        }
    }
    assert!(
        offenders.is_empty(),
        "library files use a terminal crate; move the use into src/cli/:\n{}",
        offenders.join("\n")
    );
    // The check sees a use at all: the CLI's own files have them.
    let cli = std::fs::read_to_string(src.join("cli/progress.rs")).unwrap();
    assert!(terminal_uses(&cli, TERMINAL_CRATES).contains("indicatif"));
    let flags = std::fs::read_to_string(src.join("cli/run_flags.rs")).unwrap();
    assert!(terminal_uses(&flags, TERMINAL_CRATES).contains("clap"));
}

#[test]
fn terminal_uses_finds_paths_and_attributes_not_comments() {
    let text = "// clap::Parser in a comment\nlet s = \"indicatif::X\";\n#[derive(clap::ValueEnum)]\nenum A {}\n";
    assert_eq!(
        terminal_uses(text, &["clap", "indicatif"]),
        BTreeSet::from(["clap".to_string()])
    );
    let attr = "struct A {\n    #[arg(long)]\n    x: u8,\n}\n";
    assert_eq!(
        terminal_uses(attr, &["clap"]),
        BTreeSet::from(["clap".to_string()])
    );
    assert!(terminal_uses("use indicatif::ProgressBar;", &["clap"]).is_empty());
}
