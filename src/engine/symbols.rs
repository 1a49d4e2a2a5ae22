//! The run's symbol index: where each name is defined and where it is
//! used, from the syntax trees of the scan's files.
//!
//! Takes the tools' view of the repository (its files in scope, their
//! text with secrets redacted); gives a [`SymbolIndex`] for the
//! `definition` and `references` tools. Each file with a grammar is parsed
//! within the engine's limits and read with its grammar's tags query
//! (tree-sitter's `tags.scm`, the queries code-navigation tools use); a
//! file without one is listed for the tools to search by text. Built once
//! a run, on the first call that needs it, on every core.

use std::collections::HashMap;

use rayon::prelude::*;
use tree_sitter::{Query, QueryCursor, StreamingIterator};

use super::syntax::{self, Grammar, Limits};
use crate::tools::ToolContext;
use crate::tools::navigate::{Definition, Reference, SymbolIndex};
use crate::util::language::language_of;

/// The kinds of definition a reference's enclosing function can be.
const FUNCTION_KINDS: &[&str] = &["function", "method"];

/// What one file defines and references.
#[derive(Default)]
struct FileSymbols {
    definitions: Vec<(String, Definition)>,
    references: Vec<(String, Reference)>,
    unparsed: Option<String>,
}

/// The index of every file of `ctx`'s scan. A grammar whose tags query
/// does not compile indexes nothing (its files are searched by text).
pub(crate) fn index(ctx: &ToolContext) -> SymbolIndex {
    let started = std::time::Instant::now();
    let files = ctx.files().unwrap_or_default();
    let queries: HashMap<Grammar, Query> = files
        .iter()
        .filter_map(|f| Grammar::of_path(f))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .filter_map(|g| {
            let language = g.language()?;
            let query = Query::new(&language, &g.tags_query()?).ok()?;
            Some((g, query))
        })
        .collect();
    let limits = Limits::default();
    let per_file: Vec<FileSymbols> = files
        .par_iter()
        .map(|path| of_file(ctx, path, &queries, &limits))
        .collect();
    let mut index = SymbolIndex::default();
    for file in per_file {
        for (name, def) in file.definitions {
            index.definitions.entry(name).or_default().push(def);
        }
        for (name, r) in file.references {
            index
                .used_in
                .entry(r.path.clone())
                .or_default()
                .insert(name.clone());
            index.references.entry(name).or_default().push(r);
        }
        index.unparsed.extend(file.unparsed);
    }
    tracing::debug!(
        files = files.len(),
        names = index.definitions.len(),
        unparsed = index.unparsed.len(),
        took = ?started.elapsed(),
        "symbol index"
    );
    index
}

/// Languages of data, configuration and prose, by [`language_of`]'s names.
const NOT_CODE: &[&str] = &[
    "yaml", "toml", "json", "css", "dotenv", "markdown", "xml", "ini", "protobuf",
];

/// The symbols of one file; a file that cannot be read adds nothing.
fn of_file(
    ctx: &ToolContext,
    path: &str,
    queries: &HashMap<Grammar, Query>,
    limits: &Limits,
) -> FileSymbols {
    // Data, configuration and prose define and call nothing: not searched
    // (what has no language at all neither).
    if language_of(path).is_none_or(|l| NOT_CODE.contains(&l)) {
        return FileSymbols::default();
    }
    let Ok(text) = ctx.text(path) else {
        return FileSymbols::default();
    };
    let unparsed = || FileSymbols {
        unparsed: Some(path.to_string()),
        ..FileSymbols::default()
    };
    let Some(query) = Grammar::of_path(path).and_then(|g| queries.get(&g)) else {
        return unparsed();
    };
    let parse_started = std::time::Instant::now();
    let Ok((_, tree)) = syntax::parse_tree(path, &text, limits) else {
        return unparsed();
    };
    let parsed = parse_started.elapsed();
    let out = tags(path, &text, &tree, query);
    tracing::trace!(path, ?parsed, tags = ?(parse_started.elapsed() - parsed), "indexed");
    out
}

/// The definitions and references `query` finds in `tree` (of `text`).
fn tags(path: &str, text: &str, tree: &tree_sitter::Tree, query: &Query) -> FileSymbols {
    let names = query.capture_names();
    let Some(name_index) = names.iter().position(|n| *n == "name") else {
        return FileSymbols::default();
    };
    let mut out = FileSymbols::default();
    let mut uses: Vec<(String, u32, String)> = Vec::new();
    let mut cursor = QueryCursor::new();
    let mut matches = cursor.matches(query, tree.root_node(), text.as_bytes());
    while let Some(m) = matches.next() {
        let Some(name) = m.captures().iter().find(|c| c.index as usize == name_index) else {
            continue;
        };
        let Some(role) = m.captures().iter().find_map(|c| {
            let capture = names[c.index as usize];
            let (side, kind) = capture.split_once('.')?;
            matches!(side, "definition" | "reference").then_some((side, kind, c.node))
        }) else {
            continue;
        };
        let Ok(word) = name.node.utf8_text(text.as_bytes()) else {
            continue;
        };
        let word = word.trim().to_string();
        if word.is_empty() {
            continue;
        }
        let (side, kind, node) = role;
        let line = node.start_position().row as u32 + 1;
        match side {
            "definition" => out.definitions.push((
                word,
                Definition {
                    path: path.to_string(),
                    line,
                    last: node.end_position().row as u32 + 1,
                    kind: kind.to_string(),
                },
            )),
            _ => uses.push((word, line, kind.to_string())),
        }
    }
    // A reference is said to be in the innermost function or method
    // around it.
    let functions: Vec<(&str, u32, u32)> = out
        .definitions
        .iter()
        .filter(|(_, d)| FUNCTION_KINDS.contains(&d.kind.as_str()))
        .map(|(n, d)| (n.as_str(), d.line, d.last))
        .collect();
    let mut seen = std::collections::HashSet::new();
    for (word, line, kind) in uses {
        if !seen.insert((word.clone(), line)) {
            continue;
        }
        let within = functions
            .iter()
            .filter(|(_, first, last)| (*first..=*last).contains(&line))
            .min_by_key(|(_, first, last)| last - first)
            .map(|(n, _, _)| n.to_string());
        out.references.push((
            word,
            Reference {
                path: path.to_string(),
                line,
                kind,
                within,
            },
        ));
    }
    out.definitions
        .sort_by(|a, b| (a.1.line, &a.0).cmp(&(b.1.line, &b.0)));
    out.references
        .sort_by(|a, b| (a.1.line, &a.0).cmp(&(b.1.line, &b.0)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(feature = "all-languages")]
    fn every_grammars_tags_query_compiles() {
        for grammar in Grammar::ALL {
            let language = grammar.language().unwrap();
            let query = grammar.tags_query().unwrap();
            if let Err(e) = Query::new(&language, &query) {
                panic!("{}: {e}", grammar.name());
            }
        }
    }
}

#[cfg(test)]
mod tool_tests {
    use std::sync::Arc;

    use crate::tools::ToolContext;
    use crate::tools::ToolLimits;
    use crate::tools::secrets::Redactor;

    fn repo(files: &[(&str, &str)]) -> (tempfile::TempDir, ToolContext) {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let full = dir.path().join(path);
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(full, text).unwrap();
        }
        let ctx = ToolContext::new(dir.path(), ToolLimits::default(), Arc::new(Redactor::new()))
            .unwrap()
            .with_symbols(Arc::new(super::index));
        (dir, ctx)
    }

    const FILES: &[(&str, &str)] = &[
        (
            "app/db.py",
            "import sqlite3\n\nclass Db:\n    def run_query(self, sql):\n        return self.cursor.execute(sql)\n",
        ),
        (
            "app/views.py",
            "from app.db import Db\n\ndef handle(request):\n    q = request.args[\"q\"]\n    return Db().run_query(\"SELECT \" + q)\n",
        ),
        (
            "src/Repo.java",
            "class Repo {\n  String find(String id) {\n    return jdbc.query(\"SELECT \" + id);\n  }\n}\n",
        ),
        (
            "src/Web.java",
            "class Web {\n  void get(Request r) {\n    new Repo().find(r.param(\"id\"));\n  }\n}\n",
        ),
        (
            "web/util.js",
            "function render(html) {\n  document.body.innerHTML = html;\n}\nmodule.exports = { render };\n",
        ),
        (
            "web/page.js",
            "const { render } = require('./util');\nfunction show(q) {\n  render(q);\n}\n",
        ),
        (
            "cmd/run.go",
            "package main\n\nfunc Exec(c string) {\n\texec.Command(\"sh\", \"-c\", c).Run()\n}\n\nfunc main() {\n\tExec(os.Args[1])\n}\n",
        ),
        (
            "app/Main.kt",
            "fun main() {\n    Db().run_query(readLine())\n}\n",
        ),
    ];

    fn call(ctx: &ToolContext, tool: &str, args: &str) -> String {
        ctx.call(tool, args)
            .unwrap_or_else(|e| panic!("{tool} {args}: {e}"))
            .text
    }

    #[test]
    fn definition_gives_the_source_of_each_definition_fenced_and_numbered() {
        let (_dir, ctx) = repo(FILES);
        let out = ctx
            .call("definition", r#"{"name": "Db.run_query"}"#)
            .unwrap();
        assert!(
            out.text.starts_with("1 definition of \"run_query\""),
            "{}",
            out.text
        );
        assert!(
            out.text
                .contains("app/db.py (5 lines): function definition at lines 4-5"),
            "{}",
            out.text
        );
        assert!(
            out.text
                .contains("5\t        return self.cursor.execute(sql)"),
            "{}",
            out.text
        );
        assert!(
            out.text.contains(&ctx.fence().open("app/db.py")),
            "{}",
            out.text
        );
        assert_eq!(out.files_read, vec!["app/db.py"]);
        assert_eq!(out.read.map(|r| (r.first, r.last)), Some((4, 5)));
        // Java, JavaScript, Go.
        assert!(
            call(&ctx, "definition", r#"{"name": "find"}"#)
                .contains("src/Repo.java (5 lines): method definition at lines 2-4")
        );
        assert!(
            call(&ctx, "definition", r#"{"name": "render"}"#)
                .contains("web/util.js (4 lines): function definition at lines 1-3")
        );
        assert!(
            call(&ctx, "definition", r#"{"name": "Exec"}"#)
                .contains("cmd/run.go (9 lines): function definition at lines 3-5")
        );
        // A class.
        assert!(
            call(&ctx, "definition", r#"{"name": "Repo"}"#)
                .contains("class definition at lines 1-5")
        );
    }

    #[test]
    fn references_list_each_use_with_the_function_it_is_in() {
        let (_dir, ctx) = repo(FILES);
        let out = call(&ctx, "references", r#"{"name": "run_query"}"#);
        assert!(out.starts_with("1 reference to \"run_query\""), "{out}");
        assert!(
            out.contains(
                "app/views.py:5: return Db().run_query(\"SELECT \" + q)    [call in handle]"
            ),
            "{out}"
        );
        // The Kotlin file has no grammar: found by its text, and said so.
        assert!(
            out.contains("in 1 files of the scan that have no syntax tree"),
            "{out}"
        );
        assert!(
            out.contains("app/Main.kt:2: Db().run_query(readLine())"),
            "{out}"
        );
        assert!(call(&ctx, "references", r#"{"name": "find"}"#).contains("src/Web.java:3:"));
        assert!(
            call(&ctx, "references", r#"{"name": "render"}"#)
                .contains("web/page.js:3: render(q);    [call in show]")
        );
        assert!(
            call(&ctx, "references", r#"{"name": "Exec"}"#)
                .contains("cmd/run.go:8: Exec(os.Args[1])    [call in main]")
        );
    }

    #[test]
    fn references_say_where_a_name_is_defined_and_put_the_tasks_files_first() {
        let mut files = FILES.to_vec();
        files.push((
            "lib/other.js",
            "function show(q) {\n  render(q);\n}\nfunction render(x) {}\n",
        ));
        // Prose and data naming it are not code: never listed.
        files.push(("docs/notes.md", "call render(q) to draw\n"));
        files.push(("conf/app.yaml", "render: true\n"));
        let (_dir, ctx) = repo(&files);
        let out = call(&ctx, "references", r#"{"name": "render"}"#);
        assert!(
            out.contains("defined at: lib/other.js:4, web/util.js:1\n"),
            "{out}"
        );
        let order = |out: &str| -> Vec<String> {
            out.lines()
                .filter(|l| l.ends_with(']'))
                .filter_map(|l| l.split(':').next().map(str::to_string))
                .collect()
        };
        assert_eq!(order(&out), ["lib/other.js", "web/page.js"], "{out}");
        let task = ctx.for_task(["web/page.js".to_string()]);
        let out = call(&task, "references", r#"{"name": "render"}"#);
        assert_eq!(order(&out), ["web/page.js", "lib/other.js"], "{out}");
        assert!(
            !out.contains("notes.md") && !out.contains("app.yaml"),
            "{out}"
        );
    }

    #[test]
    fn a_name_not_there_a_path_that_narrows_and_a_file_outside_the_scan() {
        let (_dir, ctx) = repo(FILES);
        let none = call(&ctx, "definition", r#"{"name": "nowhere"}"#);
        assert!(none.starts_with("no definition of \"nowhere\""), "{none}");
        let narrowed = call(
            &ctx,
            "references",
            r#"{"name": "run_query", "path": "web"}"#,
        );
        assert!(narrowed.starts_with("no references"), "{narrowed}");
        // A scope without app/db.py: its definition is not there to find.
        let scoped = ctx.scoped(["app/views.py".to_string()]);
        let out = call(&scoped, "definition", r#"{"name": "run_query"}"#);
        assert!(out.starts_with("no definition"), "{out}");
        assert!(
            ctx.call("definition", r#"{"name": "a b"}"#)
                .unwrap_err()
                .to_string()
                .contains("is not a name"),
        );
        assert!(
            ctx.call("definition", r#"{"name": "x", "path": "../etc"}"#)
                .is_err()
        );
        // Without a parser, the tools say so.
        let bare = ToolContext::new(
            _dir.path(),
            ToolLimits::default(),
            Arc::new(Redactor::new()),
        )
        .unwrap();
        assert!(
            bare.call("references", r#"{"name": "x"}"#)
                .unwrap_err()
                .to_string()
                .contains("use grep")
        );
    }

    #[test]
    fn an_answer_stays_within_the_output_limit() {
        let body: String = (0..3_000).map(|i| format!("    x{i} = {i}\n")).collect();
        let many: String = (0..500)
            .map(|i| format!("def f{i}():\n    big()\n"))
            .collect();
        let (_dir, ctx) = repo(&[
            ("big.py", &format!("def big():\n{body}")),
            ("calls.py", &many),
        ]);
        let out = call(&ctx, "definition", r#"{"name": "big"}"#);
        assert!(
            out.len() <= ToolLimits::default().max_output_bytes + 64,
            "{}",
            out.len()
        );
        assert!(out.contains("call read_file with offset="), "{out}");
        let refs = call(&ctx, "references", r#"{"name": "big"}"#);
        assert!(
            refs.starts_with("500 references to \"big\", the first 60 listed"),
            "{refs}"
        );
        assert!(refs.len() <= ToolLimits::default().max_output_bytes + 64);
    }
}
