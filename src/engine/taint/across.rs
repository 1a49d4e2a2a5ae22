//! Flows across files.
//!
//! A sink's value that comes from a parameter of a function no call in its
//! file passes a source to is an [`Open`] end: the function's callers in
//! the repository's other files decide it. [`across`] follows each into
//! those calls, in two passes over the files on rayon's pool:
//!
//! 1. the files that may hold a sink are parsed, and their open ends
//!    noted;
//! 2. the files whose text names one of those functions are parsed, the
//!    function's definitions counted, and each call's argument for the
//!    parameter traced back to a source, as a taint rule's value is in its
//!    own file (through the caller's own callers there too).
//!
//! Without types, a name is taken for the one function only when it is:
//! defined once in the files read, or called on the name of its class
//! (`Student.create(…)`) that defines it once. A call that passes more
//! arguments than the function takes is not followed. A call in the
//! function's own file was followed by the file's own trace. One file
//! away: a flow through two functions in two other files is not followed.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use rayon::prelude::*;

use crate::engine::syntax::Unparsed;

use super::{
    CLASS_KINDS, Call, End, FUNCTION_KINDS, Flow, Grammar, Scopes, Step, Syntax, Taint, Tracer,
    Visit, callee_name, filled_params, function_name, is_rest, language_of, line_of, shown, table,
    walk,
};

/// A sink's value that comes from a parameter of a function that no call
/// in its file passes a source to.
#[derive(Clone, Debug)]
pub(crate) struct Open {
    /// The sink's id and line.
    pub(crate) sink: String,
    pub(crate) line: u32,
    /// The sink's own step, the last of a trace.
    pub(super) last: Step,
    pub(crate) end: End,
}

impl Open {
    /// Pushes onto `opens` the open end of each of `ends` into `sink` at
    /// `line`, whose own step says `what`.
    pub(super) fn push(
        opens: &mut Vec<Open>,
        sink: &table::Sink,
        line: u32,
        what: String,
        ends: Vec<End>,
    ) {
        opens.extend(ends.into_iter().map(|end| Open {
            sink: sink.id.clone(),
            line,
            last: Step {
                line,
                what: what.clone(),
            },
            end,
        }));
    }
}

/// A value traced from a source in one file to a sink in another.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CrossFlow {
    /// The sink's file, line and id.
    pub(crate) path: String,
    pub(crate) line: u32,
    pub(crate) sink: String,
    /// From the source to the sink, each step with its file.
    pub(crate) steps: Vec<(String, Step)>,
}

impl CrossFlow {
    /// The skeptic's confirmation of this flow, found `how`: its steps in
    /// the sink's file are the flow, the callers' steps in the other files
    /// come first, elsewhere.
    pub(crate) fn confirmed(&self, confidence: u8, how: &str) -> super::Judged {
        let (here, elsewhere): (Vec<_>, Vec<_>) =
            self.steps.iter().partition(|(p, _)| *p == self.path);
        super::Judged {
            verdict: "confirmed",
            confidence,
            why: format!("{how}: {}", self.trace()),
            flow: here.iter().map(|(_, s)| s.line).collect(),
            elsewhere: elsewhere.iter().map(|(p, s)| (p.clone(), s.line)).collect(),
            wants: std::collections::BTreeSet::new(),
        }
    }

    /// The trace as one sentence, each file named where it starts:
    /// `a.py line 3: … → line 4: … → b.py line 9: …`.
    pub(crate) fn trace(&self) -> String {
        let mut file = None;
        self.steps
            .iter()
            .map(|(path, s)| {
                let named = if file == Some(path) {
                    String::new()
                } else {
                    format!("{path} ")
                };
                file = Some(path);
                format!("{named}line {}: {}", s.line, s.what)
            })
            .collect::<Vec<_>>()
            .join(" → ")
    }
}

/// The flows across files of one run, by sink.
#[derive(Debug, Default)]
pub(crate) struct Across {
    flows: Vec<CrossFlow>,
    /// Each file's own flows, found on the way, by path: with a hash of
    /// the text they were found in.
    /// And how many of their traces were cut at their bound.
    in_file: HashMap<String, (u64, Vec<Flow>, usize)>,
}

/// A hash of a file's text, to tell the text a pass read from another.
pub(crate) fn text_key(text: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut hasher);
    hasher.finish()
}

impl Across {
    /// The flows within `path` found on the way ([`Taint::flows_in`] of
    /// its tree), when `text` is the text they were found in.
    /// And how many of their traces were cut at their bound.
    pub(crate) fn flows_in_file(&self, path: &str, text: &str) -> Option<(&[Flow], usize)> {
        let (key, flows, cut) = self.in_file.get(path)?;
        (*key == text_key(text)).then_some((flows.as_slice(), *cut))
    }

    /// Every flow, in path, line and sink order.
    pub(crate) fn flows(&self) -> &[CrossFlow] {
        &self.flows
    }

    /// The flow into the sink `rule` at `line` of `path`, if one was
    /// traced.
    pub(crate) fn at(&self, path: &str, line: u32, rule: Option<&str>) -> Option<&CrossFlow> {
        let rule = rule?;
        self.flows
            .iter()
            .find(|f| f.path == path && f.line == line && f.sink == rule)
    }
}

/// The name of the class `func` is declared in, if any.
pub(super) fn class_of<'t>(syntax: &'t Syntax, func: tree_sitter::Node<'_>) -> Option<&'t str> {
    let mut node = func.parent();
    while let Some(n) = node {
        if CLASS_KINDS.contains(&n.kind()) {
            return n
                .child_by_field_name("name")
                .map(|name| syntax.text_of(name));
        }
        node = n.parent();
    }
    None
}

/// The keys a definition of `func` (named `name`) is counted under: its
/// name, and its class's name with it (`Student.create`).
fn defined_as(syntax: &Syntax, func: tree_sitter::Node<'_>, name: &str) -> Vec<String> {
    let mut keys = vec![name.to_string()];
    if let Some(class) = class_of(syntax, func) {
        keys.push(format!("{class}.{name}"));
    }
    keys
}

/// How many arguments a call of `func` may pass: the parameters a caller
/// fills, any number after a rest parameter.
pub(super) fn arity(syntax: &Syntax, func: tree_sitter::Node<'_>) -> usize {
    let Some(params) = filled_params(syntax, func) else {
        return 1;
    };
    let mut count = 0usize;
    for p in params {
        if is_rest(syntax, p) {
            return usize::MAX;
        }
        count += if syntax.grammar == Grammar::Go {
            let mut names = p.walk();
            p.children_by_field_name("name", &mut names).count().max(1)
        } else {
            1
        };
    }
    count
}

/// What one file of the second pass says: how often it defines each
/// wanted name, and the flows from its calls of them (by open end).
#[derive(Default)]
struct Entered {
    defined: HashMap<String, usize>,
    /// Each flow's open end, and whether the call names the function's
    /// class (`Student.create(…)`).
    flows: Vec<(usize, bool, CrossFlow)>,
}

/// The name of an end's function with its class's (`Student.create`).
fn qualified(end: &End) -> Option<String> {
    Some(format!("{}.{}", end.class.as_deref()?, end.function))
}

/// How a pass gets a file's tree: the run's parse of a path and its text,
/// shared with the rest of the run.
pub(crate) type Parse<'a> = dyn Fn(&str, &str) -> Arc<Result<Syntax, Unparsed>> + Sync + 'a;

/// Every flow from a source in one of `files` (path and text) to a sink in
/// another, through a call of a function of the sink's file (see the
/// module's documentation). A file `parse` gives no tree for adds nothing.
pub(crate) fn across(taint: &Taint, parse: &Parse<'_>, files: &[(String, String)]) -> Across {
    // 1. The open ends of every file that may hold a sink, and the names
    // its functions have.
    let first: Vec<(usize, First)> = files
        .par_iter()
        .enumerate()
        .filter_map(|(i, (path, text))| Some((i, opens_of(taint, parse, path, text)?)))
        .collect();
    let mut defined: HashMap<&str, usize> = HashMap::new();
    for (_, f) in &first {
        for (name, n) in &f.defined {
            *defined.entry(name.as_str()).or_default() += n;
        }
    }
    // A function defined twice already, even in its class, is not followed.
    let opens: Vec<(usize, Open)> = first
        .iter()
        .flat_map(|(i, f)| f.opens.iter().map(move |o| (*i, o.clone())))
        .filter(|(_, o)| {
            defined.get(o.end.function.as_str()) == Some(&1)
                || defined.get(qualified(&o.end).as_deref().unwrap_or_default()) == Some(&1)
        })
        .collect();
    let in_file = first
        .iter()
        .map(|(i, f)| {
            let (path, text) = &files[*i];
            (path.clone(), (text_key(text), f.flows.clone(), f.cut))
        })
        .collect();
    if opens.is_empty() {
        return Across {
            flows: Vec::new(),
            in_file,
        };
    }
    let read: std::collections::HashSet<usize> = first.iter().map(|(i, _)| *i).collect();
    let mut wanted: HashMap<&str, Vec<usize>> = HashMap::new();
    // What a file that calls an open end's function holds: the name, or,
    // for a name defined more than once, its class's name.
    let mut needles: std::collections::BTreeSet<&str> = std::collections::BTreeSet::new();
    for (o, (_, open)) in opens.iter().enumerate() {
        let name = open.end.function.as_str();
        wanted.entry(name).or_default().push(o);
        match open.end.class.as_deref() {
            Some(class) if defined.get(name) != Some(&1) => needles.insert(class),
            _ => needles.insert(name),
        };
    }
    // 2. The calls of their functions in every file that names one.
    let entered: Vec<Entered> = files
        .par_iter()
        .enumerate()
        .filter(|(_, (_, text))| needles.iter().any(|w| text.contains(w)))
        .map(|(i, (path, text))| {
            enter(
                taint,
                parse,
                path,
                text,
                i,
                files,
                &opens,
                &wanted,
                read.contains(&i),
            )
        })
        .collect();
    for e in &entered {
        for (name, n) in &e.defined {
            *defined.entry(name.as_str()).or_default() += n;
        }
    }
    // One flow a sink's line and class, the first of its callers in path
    // and line order.
    let mut by_sink: BTreeMap<(String, u32, String), CrossFlow> = BTreeMap::new();
    let mut found: Vec<CrossFlow> = entered
        .iter()
        .flat_map(|e| &e.flows)
        .filter(|(o, by_class, _)| {
            let end = &opens[*o].1.end;
            defined.get(end.function.as_str()) == Some(&1)
                || (*by_class
                    && defined.get(qualified(end).as_deref().unwrap_or_default()) == Some(&1))
        })
        .map(|(_, _, f)| f.clone())
        .collect();
    // By where each flow starts: its source's file and line.
    let start = |f: &CrossFlow| f.steps.first().map(|(p, s)| (p.clone(), s.line));
    found.sort_by_key(start);
    for flow in found {
        let class = flow.sink.split('/').next().unwrap_or_default().to_string();
        by_sink
            .entry((flow.path.clone(), flow.line, class))
            .or_insert(flow);
    }
    tracing::debug!(
        read = first.len(),
        opens = opens.len(),
        entered = entered.len(),
        "flows across files: the two passes"
    );
    let mut flows: Vec<CrossFlow> = by_sink.into_values().collect();
    flows.sort_by(|a, b| (&a.path, a.line, &a.sink).cmp(&(&b.path, b.line, &b.sink)));
    Across { flows, in_file }
}

/// What the first pass finds in a file: the open ends of its sinks, how
/// often it defines each name, and its own flows.
struct First {
    opens: Vec<Open>,
    defined: HashMap<String, usize>,
    flows: Vec<Flow>,
    /// Traces cut at their bound.
    cut: usize,
}

/// The open ends of `path`'s sinks and how often it defines each name,
/// when its language has sinks, a line may hold one and it parses.
fn opens_of(taint: &Taint, parse: &Parse<'_>, path: &str, text: &str) -> Option<First> {
    let language = language_of(path)?;
    if !taint.covers(language) || !text.lines().any(|l| taint.may_hold(language, l)) {
        return None;
    }
    let parsed = parse(path, text);
    let syntax = parsed.as_ref().as_ref().ok()?;
    let mut opens = Vec::new();
    let mut scopes = Scopes::default();
    let flows = taint.sinks_in(path, syntax, &mut scopes, &mut opens);
    let cut = scopes.cut_short();
    let mut defined: HashMap<String, usize> = HashMap::new();
    walk(syntax.root(), |n, _| {
        if !n.is_named() {
            return Visit::Skip;
        }
        if FUNCTION_KINDS.contains(&n.kind())
            && let Some(name) = function_name(syntax, n)
        {
            for key in defined_as(syntax, n, name) {
                *defined.entry(key).or_default() += 1;
            }
        }
        Visit::Enter
    });
    Some(First {
        opens,
        defined,
        flows,
        cut,
    })
}

/// The second pass over `path` (file `me` of `files`): its definitions of
/// the `wanted` names, and the flows from a source in it through its calls
/// of them into the `opens` of other files (`wanted` gives each name's).
/// A file the first pass read (`counted`) had its definitions counted there.
#[allow(clippy::too_many_arguments)]
fn enter(
    taint: &Taint,
    parse: &Parse<'_>,
    path: &str,
    text: &str,
    me: usize,
    files: &[(String, String)],
    opens: &[(usize, Open)],
    wanted: &HashMap<&str, Vec<usize>>,
    counted: bool,
) -> Entered {
    let mut out = Entered::default();
    let parsed = parse(path, text);
    let Ok(syntax) = parsed.as_ref() else {
        return out;
    };
    let mut calls = Vec::new();
    walk(syntax.root(), |n, _| {
        if !n.is_named() {
            return Visit::Skip;
        }
        if !counted
            && FUNCTION_KINDS.contains(&n.kind())
            && let Some(name) = function_name(syntax, n).filter(|f| wanted.contains_key(f))
        {
            for key in defined_as(syntax, n, name) {
                *out.defined.entry(key).or_default() += 1;
            }
        }
        if let Some(name) = callee_name(syntax, n).filter(|f| wanted.contains_key(f))
            && let Some(call) = Call::of(n, syntax)
        {
            calls.push((name, call));
        }
        Visit::Enter
    });
    let mut scopes = Scopes::default();
    for (name, call) in calls {
        for &o in wanted.get(name).into_iter().flatten() {
            let (file, open) = &opens[o];
            if *file == me {
                continue;
            }
            let given = call.args.len() + call.keywords.len();
            if given > open.end.arity {
                continue;
            }
            let Some(arg) = call.argument_for(&open.end.param, Some(open.end.position)) else {
                continue;
            };
            let Some(sink) = taint.table.sink(&open.sink) else {
                continue;
            };
            let class = taint.table.class_of(sink);
            let scope = scopes.around(syntax, call.node);
            if scope.is_dead(call.node) {
                continue;
            }
            let mut tracer = Tracer::new(syntax, taint.sources, class, scope, &mut scopes);
            let Some(steps) = tracer.trace(arg) else {
                continue;
            };
            let sink_path = &files[*file].0;
            let mut all: Vec<(String, Step)> =
                steps.into_iter().map(|s| (path.to_string(), s)).collect();
            all.push((
                path.to_string(),
                Step {
                    line: line_of(call.node),
                    what: format!(
                        "is passed as `{}` to `{}`, defined in {sink_path}",
                        open.end.param,
                        shown(&call.dotted)
                    ),
                },
            ));
            all.extend(
                open.end
                    .steps
                    .iter()
                    .chain(std::iter::once(&open.last))
                    .map(|s| (sink_path.clone(), s.clone())),
            );
            let by_class = call
                .receiver
                .is_some_and(|r| open.end.class.as_deref() == Some(syntax.text_of(r)));
            out.flows.push((
                o,
                by_class,
                CrossFlow {
                    path: sink_path.clone(),
                    line: open.line,
                    sink: open.sink.clone(),
                    steps: all,
                },
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::syntax::{Limits, parse};

    fn traced(files: &[(&str, &str)]) -> Vec<(String, u32, String, String)> {
        let taint = Taint::bundled().unwrap_or_else(|e| panic!("the bundled taint table: {e}"));
        let files: Vec<(String, String)> = files
            .iter()
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect();
        let parse = |p: &str, t: &str| Arc::new(parse(p, t, &Limits::default()));
        across(taint, &parse, &files)
            .flows()
            .iter()
            .map(|f| (f.path.clone(), f.line, f.sink.clone(), f.trace()))
            .collect()
    }

    const STORAGE: &str = "import os\n\n\ndef read_report(name):\n    path = os.path.join(\"reports\", name)\n    with open(path) as f:\n        return f.read()\n";

    fn view(arg: &str) -> String {
        format!(
            "from flask import request\nfrom storage import read_report\n\n\ndef show():\n    wanted = request.args.get(\"report\")\n    return read_report({arg})\n"
        )
    }

    #[test]
    fn a_request_value_passed_to_a_function_of_another_file_reaches_its_sink() {
        let found = traced(&[
            ("app/storage.py", STORAGE),
            ("app/views.py", &view("wanted")),
        ]);
        assert_eq!(found.len(), 1, "{found:?}");
        let (path, line, sink, trace) = &found[0];
        assert_eq!(
            (path.as_str(), *line, sink.as_str()),
            ("app/storage.py", 6, "path/python-open")
        );
        assert_eq!(
            trace,
            "app/views.py line 6: an HTTP request: `request.args` \
             → line 6: `wanted` is set from it → line 7: is passed as `name` to `read_report`, defined in app/storage.py \
             → app/storage.py line 4: is `name`, a parameter of `read_report` \
             → line 5: `path` is set from it → line 6: reaches `open` (file path from a request value)"
        );
    }

    #[test]
    fn a_caller_that_cleans_or_fixes_the_value_passes_nothing() {
        for arg in ["os.path.basename(wanted)", "\"monthly\""] {
            let found = traced(&[("app/storage.py", STORAGE), ("app/views.py", &view(arg))]);
            assert!(found.is_empty(), "{arg}: {found:?}");
        }
    }

    #[test]
    fn a_name_defined_twice_or_called_with_more_arguments_is_not_followed() {
        let other = "def read_report(name):\n    return name\n";
        let twice = traced(&[
            ("app/storage.py", STORAGE),
            ("app/views.py", &view("wanted")),
            ("app/other.py", other),
        ]);
        assert!(twice.is_empty(), "{twice:?}");
        let more = traced(&[
            ("app/storage.py", STORAGE),
            ("app/views.py", &view("wanted, 2")),
        ]);
        assert!(more.is_empty(), "{more:?}");
    }

    #[test]
    fn a_method_defined_in_two_classes_is_entered_only_through_its_class_name() {
        let students = "class Student:\n    @staticmethod\n    def create(conn, name):\n        return open(\"/srv/students/\" + name)\n";
        let courses = "class Course:\n    @staticmethod\n    def create(conn, title):\n        return title\n";
        let view = |call: &str| {
            format!(
                "from flask import request\n\n\ndef add(conn):\n    name = request.form[\"name\"]\n    return {call}(conn, name)\n"
            )
        };
        let by_class = traced(&[
            ("app/student.py", students),
            ("app/course.py", courses),
            ("app/views.py", &view("Student.create")),
        ]);
        assert_eq!(by_class.len(), 1, "{by_class:?}");
        assert_eq!(
            (by_class[0].0.as_str(), by_class[0].1),
            ("app/student.py", 4)
        );
        let by_object = traced(&[
            ("app/student.py", students),
            ("app/course.py", courses),
            ("app/views.py", &view("model.create")),
        ]);
        assert!(by_object.is_empty(), "{by_object:?}");
    }

    #[test]
    fn a_java_method_of_another_class_is_entered_through_its_object() {
        let files = "package app;\n\nimport java.io.File;\n\npublic class Files {\n    public byte[] load(String name) throws Exception {\n        File file = new File(\"/srv/docs\", name);\n        return java.nio.file.Files.readAllBytes(file.toPath());\n    }\n}\n";
        let servlet = "package app;\n\nimport javax.servlet.http.*;\n\npublic class Docs extends HttpServlet {\n    private final Files files = new Files();\n\n    protected void doGet(HttpServletRequest request, HttpServletResponse response) throws Exception {\n        String name = request.getParameter(\"doc\");\n        response.getOutputStream().write(files.load(name));\n    }\n}\n";
        let found = traced(&[
            ("src/app/Files.java", files),
            ("src/app/Docs.java", servlet),
        ]);
        // The file's two sinks: the `File` made of the name, and its read.
        let lines: Vec<(&str, u32)> = found.iter().map(|f| (f.0.as_str(), f.1)).collect();
        assert_eq!(
            lines,
            [("src/app/Files.java", 7), ("src/app/Files.java", 8)]
        );
        for f in &found {
            assert!(f.3.starts_with("src/app/Docs.java line 9: "), "{}", f.3);
            assert!(
                f.3.contains("line 10: is passed as `name` to `files.load`"),
                "{}",
                f.3
            );
        }
    }
}
