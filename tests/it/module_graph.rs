//! The crate's modules form layers (docs/architecture.md): no import
//! circle between the top-level modules of `src/`, nor between the files of
//! one folder, and the leaf (`util`) imports no other module. `lib.rs` (and
//! `main.rs`, the binary's root) sits above them all: it may import
//! anything, and no module imports an item defined in it (a re-export
//! there counts as an import of the module it names).
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
/// between the files of one folder (`plan/render -> plan/estimate`); and
/// which files import an item defined in their crate's root.
#[derive(Debug, Default)]
struct ModuleGraph {
    top: Graph,
    siblings: Graph,
    /// A file (`pipeline/steps.rs`) and the items of its crate's root
    /// (`lib.rs`, `main.rs`) it imports (`ScanError`): an import up to
    /// the top, which no layer may make.
    root_items: Graph,
}

/// A crate's root file (`lib.rs`, `main.rs`) as its modules see it.
#[derive(Debug, Default)]
struct Root {
    /// The top-level modules it declares (`mod pipeline;`).
    modules: BTreeSet<String>,
    /// The items it defines (`ScanError`, `scan`).
    items: BTreeSet<String>,
    /// What its `use` declarations bind, by name, to the absolute path of
    /// a module of the crate (`Settings` → `config::Settings`).
    bindings: BTreeMap<String, Vec<String>>,
}

impl Root {
    /// The root file `file` of a crate whose modules are `known`; an
    /// absent file is a root with nothing in it.
    fn read(file: &Path, known: &BTreeSet<Vec<String>>) -> Self {
        let Ok(text) = std::fs::read_to_string(file) else {
            return Self::default();
        };
        let code = without_tests(&code_only(&text));
        // rustfmt puts a root's own items and declarations at column 0;
        // an indented one is inside a function or a block.
        let modules =
            Regex::new(r"(?m)^(?:pub(?:\([^)]*\))?\s+)?mod\s+([A-Za-z_][A-Za-z0-9_]*)\s*;")
                .unwrap()
                .captures_iter(&code)
                .map(|c| c[1].to_string())
                .collect();
        let items = Regex::new(
            r#"(?m)^(?:pub(?:\([^)]*\))?\s+)?(?:(?:async|unsafe|const|extern(?:\s+"")?)\s+)*(?:fn|struct|enum|trait|type|const|static|union)\s+([A-Za-z_][A-Za-z0-9_]*)"#,
        )
        .unwrap()
        .captures_iter(&code)
        .map(|c| c[1].to_string())
        .collect();
        let mut bindings = BTreeMap::new();
        let uses = Regex::new(r"(?m)^(?:pub(?:\([^)]*\))?\s+)?use\s+([^;]*);").unwrap();
        for caps in uses.captures_iter(&code) {
            for (name, path) in use_tree_bindings(&caps[1]) {
                // In the root, `config::X` is `crate::config::X`, and
                // `config::{self}` is `config`.
                let path: Vec<String> = path
                    .into_iter()
                    .filter(|s| s != "crate" && s != "self")
                    .collect();
                if name != "*" && !path.is_empty() && known.contains(&path[..1]) {
                    bindings.insert(name, path);
                }
            }
        }
        Self {
            modules,
            items,
            bindings,
        }
    }
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
        let roots = [
            Root::read(&src.join("lib.rs"), &known),
            Root::read(&src.join("main.rs"), &known),
        ];
        let mut graph = Self::default();
        for (file, me) in &modules {
            let Some(top) = me.first() else {
                // lib.rs and main.rs sit above every module: they may
                // import anything.
                continue;
            };
            let root = roots.iter().find(|r| r.modules.contains(top));
            let text =
                std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            for mut path in referenced_paths(&without_tests(&code_only(&text)), me) {
                let Some(first) = path.first().cloned() else {
                    continue;
                };
                if !known.contains(&path[..1]) {
                    let Some(root) = root else { continue };
                    if root.items.contains(&first) {
                        let rel = file.strip_prefix(src).unwrap_or(file);
                        graph
                            .root_items
                            .entry(rel.display().to_string())
                            .or_default()
                            .insert(first);
                        continue;
                    }
                    // A name the root binds counts as the module it
                    // names; any other is a crate outside this one.
                    let Some(bound) = root.bindings.get(&first) else {
                        continue;
                    };
                    path = [bound.as_slice(), &path[1..]].concat();
                }
                let first = &path[0];
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
        if !self.root_items.is_empty() {
            writeln!(f, "items of a crate root imported by a module:")?;
            for (from, items) in &self.root_items {
                let items: Vec<&str> = items.iter().map(String::as_str).collect();
                writeln!(f, "  {from:24} -> {}", items.join(", "))?;
            }
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
    use_tree_bindings(tree)
        .into_iter()
        .map(|(_, path)| path)
        .collect()
}

/// What a use tree binds, each name with the path it names:
/// `crate::{a::{self, B}, c as d, e::*}` → `a` = `crate::a`, `B` =
/// `crate::a::B`, `d` = `crate::c`, `*` = `crate::e`.
fn use_tree_bindings(tree: &str) -> Vec<(String, Vec<String>)> {
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

/// Reads one use tree from `tokens` at `pos` under `prefix`, adding what
/// it binds to `out`.
fn parse_tree(
    tokens: &[Token],
    pos: &mut usize,
    prefix: &mut Vec<String>,
    out: &mut Vec<(String, Vec<String>)>,
) {
    let depth = prefix.len();
    loop {
        match tokens.get(*pos) {
            Some(Token::Colons) => *pos += 1,
            Some(Token::Star) => {
                *pos += 1;
                out.push(("*".to_string(), prefix.clone()));
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
                let mut name = match name.as_str() {
                    // `a::{self}` binds `a`.
                    "self" => prefix.iter().rev().nth(1).unwrap_or(name).clone(),
                    _ => name.clone(),
                };
                if matches!(tokens.get(*pos), Some(Token::Ident(a)) if a == "as") {
                    if let Some(Token::Ident(alias)) = tokens.get(*pos + 1) {
                        name = alias.clone();
                    }
                    *pos += 2;
                }
                out.push((name, prefix.clone()));
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
    assert!(
        graph.root_items.is_empty(),
        "modules import items defined in lib.rs, the top of every layer:\n{graph}\nmove each item down into the module of its layer and re-export it from lib.rs"
    );
}

#[test]
fn module_graph_finds_an_import_of_an_item_of_lib_rs_and_follows_its_re_exports() {
    let repo = Repo::new(&[
        (
            "src/lib.rs",
            "mod a;\nmod b;\nmod c;\nmod d;\nuse std::sync::Arc;\n\
             pub use a::{Alpha, inner::{self, Deep as Renamed}};\npub use b::*;\n\
             /// A scan that failed.\n#[derive(Debug)]\npub enum RootError { X }\n\
             pub(crate) struct Held;\n\
             pub async fn scan() -> Result<(), RootError> {\n    let local = 1;\n    Ok(())\n}\n\
             const LIMIT: u8 = 1;\n#[cfg(test)]\nstruct OnlyInTests;\n",
        ),
        ("src/a/mod.rs", "pub(crate) mod inner;\npub struct Alpha;\n"),
        ("src/a/inner.rs", "pub struct Deep;\n"),
        ("src/b.rs", "pub(crate) struct Beta;\n"),
        // c imports lib.rs's own items three ways, and a's items through
        // the root's re-exports: edges to a, never to lib.rs.
        (
            "src/c.rs",
            "use crate::{RootError, Alpha};\nuse super::Held;\n\
             pub(crate) fn f() -> crate::Renamed {\n    let _ = crate::inner::Deep;\n    let _ = crate::LIMIT;\n    todo!()\n}\n\
             // crate::scan in a comment\n#[cfg(test)]\nuse crate::OnlyInTests;\n",
        ),
        // d uses std's Arc through the root's private import and names
        // nothing of lib.rs's own.
        ("src/d.rs", "use crate::Arc;\nuse crate::b::Beta;\n"),
        // The binary's root defines its own items; lib.rs's rules do not
        // apply to its modules, main.rs's do.
        ("src/main.rs", "mod cli;\nfn run() {}\n"),
        (
            "src/cli.rs",
            "use crate::RootError;\nfn g() {\n    crate::run()\n}\n",
        ),
    ]);
    let graph = ModuleGraph::read(&repo.path().join("src"));
    assert_eq!(
        graph.root_items,
        edges_of(&[
            ("c.rs", "Held"),
            ("c.rs", "LIMIT"),
            ("c.rs", "RootError"),
            ("cli.rs", "run"),
        ]),
        "{graph}"
    );
    assert_eq!(
        graph.top,
        edges_of(&[("c", "a"), ("d", "b")]),
        "the root's re-exports count as imports of their modules: {graph}"
    );
    let bindings = use_tree_bindings("crate::{a::{self, B}, c as d, e::*}");
    let names: Vec<(&str, String)> = bindings
        .iter()
        .map(|(name, path)| (name.as_str(), path.join("::")))
        .collect();
    assert_eq!(
        names,
        [
            ("a", "crate::a::self".to_string()),
            ("B", "crate::a::B".to_string()),
            ("d", "crate::c".to_string()),
            ("*", "crate::e".to_string()),
        ]
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
